#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What the builder's lease costs (docs/dfm.md, "A builder taken for dead in
# error costs nothing"): one builder under a DFM, forwarding every event to
# one farm node that speaks the control protocol (credits), one source
# process; the DFM at a fixed --rate (LEASE_RATE, 20000 events/s, 10 events
# an ASSIGN), push and pull. The builder is this tree's xevb or, A/B in the
# same run (alternating), LEASE_BASE (an xevb built from a tree before the
# lease; DFM, source and farm node are this tree's in both). The figure:
# the builder's CPU per event delivered (its threads' run time from /proc
# schedstat, from the first trigger until the DFM exits), and whether every
# event arrived once.
#
# usage: LEASE_BASE=OLD_TREE/build/xevb scripts/bench/bench-lease.sh [OUT]
#        env: BENCH_RUNS (5), LEASE_SECS (4), LEASE_RATE (20000), LEASE_MODES ("push pull")
# Writes OUT/bench/lease.json.
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start lease "${1:-}" xevb
if [[ ! -x ${LEASE_BASE:-} ]]; then
	echo "bench-lease: skipped: set LEASE_BASE to the xevb of a tree before the lease (git worktree add OLD 41e9383; make -C OLD)" >&2
	exit 0
fi
bench_runs_secs 5 4 LEASE_SECS
RATE=${LEASE_RATE:-20000}
MODES=${LEASE_MODES:-push pull}
TB_PREFIX="xle$$"
bench_testbed
tb_up --sources 1 --builders 1 --sinks 1 --dfm 1 || exit 1

cpu_ns() {
	local t s n=0
	for t in /proc/"$1"/task/*/schedstat; do
		{ read -r s _ <"$t"; } 2>/dev/null && n=$((n + s))
	done
	echo "$n"
}

point() {  # WHICH(base|lease) MODE RUN -> one JSON line
	local which=$1 mode=$2 run=$3 bx=$X tmo=$((SECS + 30)) sp bp dp b d b0 b1=0 i
	[[ $which == base ]] && bx=$LEASE_BASE
	BG_PIDS=()
	ip netns exec "$(tb_ns sink 0)" timeout "$tmo" "$X" sink --listen "$(tb_addr sink 0):5000" --ctl-port 23904 \
		--credits 4096 --json --stats-interval 0 --ready-file "$W/ready" >"$W/sink.json" 2>"$W/sink.err" &
	sp=$!
	BG_PIDS+=("$sp")
	rm -f "$W/ready"
	wait_for "$W/ready" . "$sp" || { echo "farm node did not start: $(tail -2 "$W/sink.err")" >&2; stop_bg; return 1; }
	ip netns exec "$(tb_ns builder 0)" timeout "$tmo" "$bx" build --dev eth0 --mode socket --udp --sources 0-15 \
		--dfm "$DFM_ADDR" --sink "$(tb_addr sink 0):5000" --exit-on-eor --quiet --interval 0 --json \
		--duration $((SECS + 25)) >"$W/b.json" 2>"$W/b.err" &
	bp=$!
	BG_PIDS+=("$bp")
	ip netns exec "$(tb_ns source 0)" timeout "$tmo" "$X" source --dfm "$DFM_ADDR" --dev eth0 --udp --source-ids 0-15 \
		--frag-size 64 --quiet --duration $((SECS + 25)) >/dev/null 2>"$W/s.err" &
	BG_PIDS+=($!)
	ip netns exec "$(tb_ns dfm 0)" timeout "$tmo" "$X" dfm --listen "$DFM_ADDR" --mode "$mode" --rate "$RATE" \
		--pack 10 --duration "$SECS" --wait-builders 1 --wait-sources 1 --json --interval 0 \
		>"$W/dfm.json" 2>"$W/dfm.err" &
	dp=$!
	b=$(child_xevb "$bp")
	d=$(child_xevb "$dp")
	wait_for "$W/dfm.err" triggering "$dp"
	b0=$(cpu_ns "$b")
	for ((i = 0; i < (SECS + 30) * 100; i++)); do
		kill -0 "$d" 2>/dev/null || break
		sleep 0.01
	done
	b1=$(cpu_ns "$b")
	wait "$dp"
	# The farm node's count once the builder has gone (it exits at the DFM's BYE).
	for ((i = 0; i < 500; i++)); do kill -0 "$b" 2>/dev/null || break; sleep 0.01; done
	stop_bg
	python3 - "$W/dfm.json" "$W/sink.json" "$which" "$mode" "$run" $((b1 - b0)) "$W/b.json" <<'PY'
import json, sys
def last(f):
    try:
        return json.loads([l for l in open(f) if l.startswith("{")][-1])
    except Exception:
        return {}
d, s = last(sys.argv[1]), last(sys.argv[2])
try:
    c = [json.loads(l) for l in open(sys.argv[7]) if l.startswith('{"dfm_ctl"')][-1]["dfm_ctl"]
except Exception:
    c = {}
which, mode, run, bns = sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
ev = d.get("complete", 0)
got = s.get("events", s.get("received", 0))
print(json.dumps({"builder": which, "mode": mode, "run": run, "events": ev, "farm_node_events": got,
                  "duplicates": s.get("duplicates", 0), "lost": d.get("lost_total", 0),
                  "builder_cpu_ns_per_event": round(bns / ev, 1) if ev and bns > 0 else None,
                  "built_before_assign": c.get("built_early", 0), "held_before_assign": c.get("pre_held", 0),
                  "lease_expired": c.get("fence", {}).get("lease_expired", 0)}))
PY
}

: >"$W/points"
for ((r = 0; r < RUNS; r++)); do
	for m in $MODES; do
		point base "$m" "$r" >>"$W/points"
		point lease "$m" "$r" >>"$W/points"
	done
done
python3 - "$W/points" "$OUT/bench/lease.json" "$RATE" <<'PY'
import json, statistics, sys
sys.path.insert(0, "scripts/bench")
import benchlib
pts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = {"bench": "lease", "meta": benchlib.meta(), "rate": int(sys.argv[3]), "results": pts, "summary": {}}
print("builder CPU per event delivered, ns (median of runs; min); lease / base")
for m in sorted({p["mode"] for p in pts}):
    v = {w: [p["builder_cpu_ns_per_event"] for p in pts if p["mode"] == m and p["builder"] == w
             and p["builder_cpu_ns_per_event"]] for w in ("base", "lease")}
    pairs = [(a["builder_cpu_ns_per_event"], b["builder_cpu_ns_per_event"]) for a in pts for b in pts
             if a["mode"] == m == b["mode"] and a["run"] == b["run"] and a["builder"] == "base"
             and b["builder"] == "lease" and a["builder_cpu_ns_per_event"] and b["builder_cpu_ns_per_event"]]
    if not v["base"] or not v["lease"]:
        continue
    s = {"base_median": statistics.median(v["base"]), "lease_median": statistics.median(v["lease"]),
         "base_min": min(v["base"]), "lease_min": min(v["lease"]),
         "run_ratios": [round(b / a, 3) for a, b in pairs],
         "whole": all(p["events"] and p["farm_node_events"] == p["events"] and not p["duplicates"]
                      and not p["lost"] for p in pts if p["mode"] == m)}
    s["ratio_of_medians"] = round(s["lease_median"] / s["base_median"], 3)
    s["median_run_ratio"] = statistics.median(s["run_ratios"]) if s["run_ratios"] else None
    out["summary"][m] = s
    print("  %s: base %.0f (%.0f), lease %.0f (%.0f): x%.3f by the medians, run by run %s; every event once: %s" %
          (m, s["base_median"], s["base_min"], s["lease_median"], s["lease_min"], s["ratio_of_medians"],
           s["run_ratios"], s["whole"]))
json.dump(out, open(sys.argv[2], "w"), indent=1)
print("wrote", sys.argv[2])
PY

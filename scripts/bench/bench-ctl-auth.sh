#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What authenticated control messages cost (docs/control-protocol.md,
# "Authentication"): the per-message figures of build/bench/ctl_auth_cost,
# and the DFM's assignment rate end to end with and without --key-file,
# back to back in one run (A/B, alternating): one event per ASSIGN (--pack
# 1) so the control plane is the load, as fast as credits allow, builders in
# socket mode without forwarding, one source process.
#
# Then end to end, the same small run with and without the key, alternating
# (A/B in one run): the DFM at a fixed --rate CA_RATE (20000 events/s, 10
# events per ASSIGN), NB builders, one source process; the CPU the DFM and
# the builders spend per event (their threads' run time from /proc
# schedstat, from the first trigger until the DFM exits), and events/s.
#
# usage: scripts/bench/bench-ctl-auth.sh [OUT]   env: BENCH_QUICK=1 (1 run
#        of 2 s), BENCH_RUNS (3), CA_SECS (3), CA_BUILDERS (2), CA_RATE (20000)
# Writes OUT/bench/ctl_auth.json.
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start ctl-auth "${1:-}" xevb
COST=$OUT/bench/ctl_auth_cost
[[ -x $COST ]] || bench_make "$COST"
bench_runs_secs 2 3 CA_SECS
NB=${CA_BUILDERS:-2}
TB_PREFIX="xca$$"
bench_testbed
tb_up --sources 1 --builders "$NB" --sinks 0 --dfm 1 || exit 1
(umask 077; head -c 32 /dev/urandom >"$W/run.key")

point() {  # KEYED RUN -> one JSON line on stdout
	local keyed=$1 run=$2
	local -a key=()
	[[ $keyed == 1 ]] && key=(--key-file "$W/run.key")
	DFM_BUILD_ARGS=(--mode socket --udp "${key[@]}") DFM_SOURCE_ARGS=("${key[@]}") DFM_ARGS=("${key[@]}")
	dfm_round "$NB" 1 push 16
	python3 - "$W/dfm.json" "$keyed" "$run" <<'PY'
import json, sys
f, keyed, run = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
try:
    d = json.loads([l for l in open(f) if l.startswith("{")][-1])
except Exception:
    d = {"complete": 0, "elapsed_s": 0, "triggered": 0, "ctl": {"sent": 0, "received": 0, "refused": 0}}
el = d["elapsed_s"] or 1
print(json.dumps({"keyed": keyed, "run": run, "events_per_s": round(d["complete"] / el, 1),
                  "ctl_sent_per_s": round(d["ctl"]["sent"] / el, 1),
                  "ctl_received_per_s": round(d["ctl"]["received"] / el, 1),
                  "refused": d["ctl"]["refused"], "triggered": d["triggered"], "complete": d["complete"],
                  "lost": d.get("lost_total", 0)}))
PY
}

# One source process sends ids 0-3; one event per ASSIGN makes the control
# plane the load: credits enough that builders never hold the DFM back.
DFM_IDS=0-3 DFM_CREDITS=1024
: >"$W/points"
for ((r = 0; r < RUNS; r++)); do
	point 0 "$r" >>"$W/points"
	point 1 "$r" >>"$W/points"
done
# The run time of every thread of process PID so far, ns (0 once it is gone).
cpu_ns() {
	local t s n=0
	for t in /proc/"$1"/task/*/schedstat; do
		{ read -r s _ <"$t"; } 2>/dev/null && n=$((n + s))
	done
	echo "$n"
}

e2e_point() {  # KEYED RUN -> one JSON line on stdout
	local keyed=$1 run=$2 k p n dp d0 d1=0 d b0=0 b1=0 i
	local -a key=() bp=()
	BG_PIDS=()
	local tmo=$((SECS + 30))
	[[ $keyed == 1 ]] && key=(--key-file "$W/run.key")
	for ((k = 0; k < NB; k++)); do
		ip netns exec "$(tb_ns builder "$k")" timeout "$tmo" "$X" build --dev eth0 --mode socket --udp "${key[@]}" \
			--sources 0-3 --dfm "$DFM_ADDR" --credits 1024 --no-forward --exit-on-eor --quiet --interval 0 \
			--json --duration $((SECS + 25)) >"$W/e2e_b$k.json" 2>"$W/e2e_b$k.err" &
		BG_PIDS+=($!)
	done
	ip netns exec "$(tb_ns source 0)" timeout "$tmo" "$X" source --dfm "$DFM_ADDR" --dev eth0 --udp --source-ids 0-3 \
		--frag-size 16 --quiet --duration $((SECS + 25)) "${key[@]}" >/dev/null 2>"$W/e2e_s.err" &
	BG_PIDS+=($!)
	ip netns exec "$(tb_ns dfm 0)" timeout "$tmo" "$X" dfm --listen "$DFM_ADDR" --mode push --rate "$RATE" --pack 10 \
		--duration "$SECS" --wait-builders "$NB" --wait-sources 1 --json --interval 0 "${key[@]}" \
		>"$W/e2e_dfm.json" 2>"$W/e2e_dfm.err" &
	dp=$!
	for ((k = 0; k < NB; k++)); do bp+=("$(child_xevb "${BG_PIDS[k]}")"); done
	d=$(child_xevb "$dp")
	wait_for "$W/e2e_dfm.err" triggering "$dp"
	d0=$(cpu_ns "$d")
	for p in "${bp[@]}"; do b0=$((b0 + $(cpu_ns "$p"))); done
	# Until the DFM is gone (bounded): its last reading, then the builders'.
	for ((i = 0; i < (SECS + 30) * 100; i++)); do
		n=$(cpu_ns "$d")
		((n > 0)) && d1=$n
		kill -0 "$d" 2>/dev/null || break
		sleep 0.01
	done
	for p in "${bp[@]}"; do b1=$((b1 + $(cpu_ns "$p"))); done
	# A builder not found (it had not started its xevb yet): no builder figure for this point.
	for p in "${bp[@]}"; do [[ -n $p ]] || b1=-1; done
	wait "$dp"
	stop_bg
	BG_PIDS=()
	python3 - "$W/e2e_dfm.json" "$keyed" "$run" $((d1 - d0)) $((b1 - b0)) <<'PY'
import json, sys
f, keyed, run, dns, bns = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
try:
    d = json.loads([l for l in open(f) if l.startswith("{")][-1])
except Exception:
    d = {"complete": 0, "elapsed_s": 0, "ctl": {"refused": 0}}
ev, el = d["complete"], d["elapsed_s"] or 1
print(json.dumps({"keyed": keyed, "run": run, "events": ev, "events_per_s": round(ev / el, 1),
                  "dfm_cpu_ns_per_event": round(dns / ev, 1) if ev else None,
                  "builders_cpu_ns_per_event": round(bns / ev, 1) if ev and bns > 0 else None,
                  "refused": d["ctl"]["refused"], "lost": d.get("lost_total", 0)}))
PY
}

RATE=${CA_RATE:-20000}
: >"$W/e2e_points"
for ((r = 0; r < RUNS; r++)); do
	e2e_point 0 "$r" >>"$W/e2e_points"
	e2e_point 1 "$r" >>"$W/e2e_points"
done

"$COST" >"$W/cost.json" || echo '{}' >"$W/cost.json"
python3 - "$W/points" "$W/cost.json" "$OUT/bench/ctl_auth.json" "$NB" "$W/e2e_points" "$RATE" <<'PY'
import json, statistics, sys
sys.path.insert(0, "scripts/bench")
import benchlib
pts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cost = json.load(open(sys.argv[2]))
med = lambda k, key: statistics.median([p[key] for p in pts if p["keyed"] == k] or [0])
plain, keyed = med(False, "events_per_s"), med(True, "events_per_s")
summary = {"builders": int(sys.argv[4]), "plain_events_per_s": plain, "keyed_events_per_s": keyed,
           "keyed_over_plain": round(keyed / plain, 3) if plain else None,
           "plain_ctl_msgs_per_s": med(False, "ctl_sent_per_s") + med(False, "ctl_received_per_s"),
           "keyed_ctl_msgs_per_s": med(True, "ctl_sent_per_s") + med(True, "ctl_received_per_s")}
e2e = [json.loads(l) for l in open(sys.argv[5]) if l.strip()]
emed = lambda k, key: statistics.median([p[key] for p in e2e if p["keyed"] == k and p[key] is not None] or [0])
ratio = lambda key: round(emed(True, key) / emed(False, key), 3) if emed(False, key) else None
end_to_end = {"rate": int(sys.argv[6]), "builders": int(sys.argv[4])}
emin = lambda k, key: min([p[key] for p in e2e if p["keyed"] == k and p[key] is not None] or [0])
for key in ("events_per_s", "dfm_cpu_ns_per_event", "builders_cpu_ns_per_event"):
    end_to_end.update({"plain_" + key: emed(False, key), "keyed_" + key: emed(True, key),
                       "keyed_over_plain_" + key: ratio(key)})
# On a shared host the least a run took is the figure least disturbed by the others.
for key in ("dfm_cpu_ns_per_event", "builders_cpu_ns_per_event"):
    lo = (emin(False, key), emin(True, key))
    end_to_end.update({"plain_min_" + key: lo[0], "keyed_min_" + key: lo[1],
                       "keyed_over_plain_min_" + key: round(lo[1] / lo[0], 3) if lo[0] else None})
json.dump({"bench": "ctl_auth", "meta": benchlib.meta(), "per_message": cost, "summary": summary,
           "end_to_end": end_to_end, "results": pts, "end_to_end_results": e2e}, open(sys.argv[3], "w"), indent=1)
print("DFM, push, one event per ASSIGN, %d builders (median of runs):" % summary["builders"])
print("  without a key: %.0f events/s, %.0f control messages/s at the DFM" % (plain, summary["plain_ctl_msgs_per_s"]))
print("  with a key:    %.0f events/s, %.0f control messages/s at the DFM (x%s)" %
      (keyed, summary["keyed_ctl_msgs_per_s"], summary["keyed_over_plain"]))
for k, v in cost.items():
    if isinstance(v, dict):
        print("  %-10s %5d B: plain %6.0f ns, sealed + opened %6.0f ns" % (k, v["bytes"], v["plain_ns"], v["keyed_ns"]))
print("end to end, --rate %d, 10 events per ASSIGN, %d builders (median of runs, CPU per event completed):" %
      (end_to_end["rate"], end_to_end["builders"]))
for k in ("plain", "keyed"):
    print("  %-14s %8.0f events/s, DFM %7.0f ns/event, builders %7.0f ns/event" %
          ("without a key:" if k == "plain" else "with a key:", end_to_end[k + "_events_per_s"],
           end_to_end[k + "_dfm_cpu_ns_per_event"], end_to_end[k + "_builders_cpu_ns_per_event"]))
print("  keyed / plain:  events/s x%s, DFM CPU/event x%s, builders CPU/event x%s" %
      (end_to_end["keyed_over_plain_events_per_s"], end_to_end["keyed_over_plain_dfm_cpu_ns_per_event"],
       end_to_end["keyed_over_plain_builders_cpu_ns_per_event"]))
print("  fewest ns of any run: DFM x%s, builders x%s" % (end_to_end["keyed_over_plain_min_dfm_cpu_ns_per_event"],
      end_to_end["keyed_over_plain_min_builders_cpu_ns_per_event"]))
print("wrote", sys.argv[3])
PY

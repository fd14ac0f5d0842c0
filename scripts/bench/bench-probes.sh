#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What the USDT probes cost. The same traffic (two source hosts sending ids
# 0-3 flat out, 10 events a packet, 32-120-byte fragments, through the
# testbed bridge) into a build-only builder (AF_XDP, --no-forward), in
# these conditions, interleaved, BENCH_RUNS times each:
#
#   noprobes   xevb built with -DXEVB_NO_PROBES (no probe sites at all)
#   idle       the normal build, nothing attached (each probe: a nop and a
#              semaphore test)
#   drops      drops.bt attached: semaphores raised, no drop ever fires
#   latency    build-latency.bt attached: 2 uprobe hits per fragment
#
# Measured over the middle of each run, from the builder's published
# statistics and /proc: events built per second, and builder CPU time
# (user + system) per event. Writes $OUT/bench/probes.json and a table.
# Knobs: BENCH_RUNS (default 3), BENCH_SECONDS (default 6), BENCH_RATE
# (default 100000: what this machine's socket sender sustains without
# loss; one host, so its sources never drift apart).
# "events/s" counts complete events only: a builder that cannot keep up
# loses fragments (xsk drops) and its events go out incomplete.
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start probes "${1:-}" xevb
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECONDS:-6}
RATE=${BENCH_RATE:-100000}
NP_OUT=$OUT/noprobes

echo "# building $NP_OUT/xevb with -DXEVB_NO_PROBES"
make --no-print-directory -s OUT="$NP_OUT" CFLAGS='-O2 -g -DXEVB_NO_PROBES' "$NP_OUT/xevb" >/dev/null ||
	bench_fail "cannot build the probe-less binary"
XNP=$ROOT/$NP_OUT/xevb
readelf -n "$XNP" | grep -q stapsdt && bench_fail "$XNP still has USDT notes"
[[ -e /sys/kernel/tracing/events ]] || mount -t tracefs nodev /sys/kernel/tracing

TB_PREFIX="xe$$bp"
bench_testbed
tb_up --sources 1 --builders 1 --sinks 0 || exit 1
DEST=$(tb_addr builder 0)

# sample PID: "t_ns events cpu_ticks" from the builder's stats and /proc.
sample() {
	local j
	j=$(tb_exec builder 0 "$X" stats --dev eth0 --json 2>>"$W/stats.err") || return 1
	python3 -c '
import json, sys, time
j = json.loads(sys.argv[1]); st = open("/proc/%s/stat" % sys.argv[2]).read().rsplit(")", 1)[1].split()
print(time.monotonic_ns(), j["events_complete"], int(st[11]) + int(st[12]))' "$j" "$1"
}

one() {  # CONDITION RUN -> a JSON line
	local cond=$1 run=$2 bin=$X bpid tpid= s1 s2
	[[ $cond == noprobes ]] && bin=$XNP
	rm -f "$W/b.err" "$W/b.json" "$W/trace.out"
	ip netns exec "$(tb_ns builder 0)" timeout $((SECS + 20)) "$bin" build --dev eth0 --sources 0-3 \
		--no-forward --quiet --window 65536 --duration $((SECS + 4)) --json >"$W/b.json" 2>"$W/b.err" &
	local wpid=$!
	BG_PIDS+=("$wpid")
	wait_for "$W/b.err" 'AF_XDP socket on' "$wpid"
	bpid=$(child_xevb "$wpid")
	[[ -n $bpid ]] || { cat "$W/b.err" >&2; stop_bg; return 1; }
	case $cond in
	latency | drops)
		timeout -s INT $((SECS + 8)) bpftrace -p "$bpid" "scripts/trace/$( [[ $cond == latency ]] && echo build-latency || echo drops).bt" \
			"$bpid" >"$W/trace.out" 2>/dev/null &
		tpid=$!
		BG_PIDS+=("$tpid")
		wait_for "$W/trace.out" Attaching "$tpid"
		sleep 1
		;;
	esac
	ip netns exec "$(tb_ns source 0)" timeout $((SECS + 10)) "$X" source --dest "$DEST" \
		--source-ids 0-3 --duration $((SECS + 1)) --pack 10 --rate "$RATE" \
		--frag-size 32-120 --quiet >/dev/null 2>&1 &
	BG_PIDS+=("$!")
	sleep 2
	s1=$(sample "$bpid")
	sleep $((SECS - 3))
	s2=$(sample "$bpid")
	wait "$wpid" 2>/dev/null
	[[ -n $tpid ]] && { kill -INT "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null; }
	wait 2>/dev/null
	BG_PIDS=()
	python3 -c '
import json, sys
a, b = [list(map(int, s.split())) for s in sys.argv[3:5]]
dt, ev, cpu = (b[0] - a[0]) / 1e9, b[1] - a[1], (b[2] - a[2]) * 1e7  # ticks of 10 ms -> ns
j = json.loads([l for l in open(sys.argv[5]) if l.startswith("{")][-1])
print(json.dumps({"condition": sys.argv[1], "run": int(sys.argv[2]), "events_per_s": ev / dt,
                  "cpu_ns_per_event": cpu / ev if ev else None,
                  "xsk_rx_dropped": j["xsk_rx_dropped"], "events_incomplete": j["events_incomplete"]}))' \
		"$cond" "$run" "$s1" "$s2" "$W/b.json"
}

: >"$OUT/bench/probes.jsonl"
for ((r = 1; r <= RUNS; r++)); do
	for c in noprobes idle drops latency; do
		line=$(one "$c" "$r") || { echo "bench-probes: run $c/$r failed" >&2; continue; }
		echo "$line" | tee -a "$OUT/bench/probes.jsonl"
	done
done
python3 - "$OUT/bench/probes.jsonl" "$OUT/bench/probes.json" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
conds = ["noprobes", "idle", "drops", "latency"]
res = {}
for c in conds:
    r = [x for x in rows if x["condition"] == c]
    if not r:
        continue
    res[c] = {"events_per_s": statistics.median(x["events_per_s"] for x in r),
              "cpu_ns_per_event": statistics.median(x["cpu_ns_per_event"] for x in r if x["cpu_ns_per_event"]),
              "runs": len(r), "xsk_rx_dropped": sum(x["xsk_rx_dropped"] for x in r)}
base = res.get("idle", {}).get("events_per_s")
print("\n%-10s %14s %10s %16s %8s %12s" % ("condition", "events/s", "vs idle", "builder CPU/ev", "runs", "xsk drops"))
for c in conds:
    if c in res:
        v = res[c]
        print("%-10s %14.0f %9.3fx %13.0f ns %8d %12d" % (c, v["events_per_s"], v["events_per_s"] / base if base else 0,
              v["cpu_ns_per_event"], v["runs"], v["xsk_rx_dropped"]))
json.dump({"medians": res, "runs": rows}, open(sys.argv[2], "w"), indent=1)
PY

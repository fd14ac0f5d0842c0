#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The farm node's capacity alone (issue 18): `xevb sink` (shipped defaults:
# every byte checked, format, CRC-32C, the emulator pattern, duplicates) on
# CPU 0, fed over a veth pair by build/bench/sink_flood on CPU 1, a sender
# faster than the builder: a ring of valid built events encoded once,
# written unpaced in 64 KiB writes. On veth the TCP receive softirq runs on
# the sender's core, so CPU 0 holds the sink's reads (the copy out of the
# socket) and its checks. Cases:
#   l1:  126 sources x 32 B fragments (5,576-byte events)
#   hlt: 323 sources x 100 B fragments (36,208-byte events)
# Per run: 1 s of warm-up, then BENCH_SECONDS counted (the sink's
# --progress-file, /proc); every event sent must arrive, checked, with no
# error. BENCH_RUNS runs (3; 1 with BENCH_QUICK=1), medians: events/s, Gb/s,
# the sink's user and system CPU seconds per second, CPU per event, how busy
# each core was and so which side limits. SINK_BASE=PATH (another xevb
# binary, e.g. of an older commit) runs it as the sink too, alternating
# with this tree's run by run: a before/after in one run. And per case and
# run, the check alone in user space (sink_flood --check-cost on CPU 0, no
# socket: ns per event of xevb_event_decode_verify over a 256 KiB window,
# and of decode then verify), which a busy machine disturbs less.
# SINK_RATE=N paces the feeder at N events/s: flat out, the TCP window's
# dynamics decide how fast each sink goes and so its CPU per event; paced,
# two sinks are compared doing the same work.
#
# usage: scripts/bench/bench-sink.sh [OUT]   env: BENCH_QUICK, BENCH_RUNS,
#   BENCH_SECONDS (3; 2 quick), SINK_CASES ("l1 hlt"), SINK_BASE, SINK_RPS=1, SINK_RATE,
#   SINK_FEEDS ("write"; "write uring uring-zc": the feeder's send
#   mechanisms, each row labelled LABEL/SEND), BENCH_KEEP=1
# Writes OUT/bench/sink.json. About 1 minute (2 with SINK_BASE).
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start sink "${1:-}"
bench_runs_secs 2 3
CASES=${SINK_CASES:-l1 hlt}
# The feeder's sends (sink_flood --send), alternating run by run: write,
# uring, uring-zc (issue 18: the send mechanisms side by side).
FEEDS=${SINK_FEEDS:-write}
for f in $FEEDS; do
	[[ $f == write || $f == uring || $f == uring-zc ]] ||
		{ echo "bench-sink: SINK_FEEDS: write, uring, uring-zc" >&2; exit 2; }
done
FLOOD=$ROOT/$OUT/bench/sink_flood
HELP=$ROOT/scripts/bench/sink.py
RATE=${SINK_RATE:-}
[[ -z $RATE || $RATE =~ ^[1-9][0-9]*$ ]] || { echo "bench-sink: SINK_RATE: events per second, a positive integer" >&2; exit 2; }
((RUNS >= 1 && RUNS <= 20 && SECS >= 1 && SECS <= 60)) ||
	{ echo "bench-sink: BENCH_RUNS 1..20, BENCH_SECONDS 1..60" >&2; exit 2; }
SINKS=("now:$X")
if [[ -n ${SINK_BASE:-} ]]; then
	[[ -x $SINK_BASE ]] || { echo "bench-sink: SINK_BASE $SINK_BASE is not an executable" >&2; exit 2; }
	SINKS=("base:$(realpath "$SINK_BASE")" "now:$X")
fi

bench_make "$OUT/xevb" "$FLOOD"
P="xevb$$snk"
FNS="$P-feed" SNS="$P-sink"
FADDR=198.18.1.1 SADDR=198.18.3.1 PORT=5000
POINTS=$W/points.jsonl
CHECKS=$W/checks.jsonl
: >"$POINTS"
: >"$CHECKS"

veth_pair "$FNS" "$SNS" "$FADDR" "$SADDR" || bench_fail "cannot make the veth pair $FNS - $SNS"
# SINK_RPS=1: the sink's TCP receive softirq on CPU 0 (RPS on its veth), so
# that CPU 1 carries the feeder's send alone: what forwarding costs a sender.
if [[ -n ${SINK_RPS:-} ]]; then
	ip netns exec "$SNS" sh -c 'echo 1 > /sys/class/net/eth0/queues/rx-0/rps_cpus' ||
		bench_fail "SINK_RPS: cannot set RPS on the sink's veth"
fi

# run_point LABEL BIN CASE RUN [SEND]: one run, its JSON line appended to
# POINTS; SEND: the feeder's --send (write when not given).
run_point() {
	local label=$1 bin=$2 case=$3 run=$4 send=${5:-write} spid fpid
	local d=$W/$label-$case-$run
	mkdir -p "$d"
	ip netns exec "$SNS" taskset -c 0 "$bin" sink --listen "$SADDR:$PORT" --json --stats-interval 0 \
		--ready-file "$d/ready" --progress-file "$d/progress" >"$d/sink.json" 2>"$d/sink.err" &
	spid=$!
	BG_PIDS+=("$spid")
	wait_for "$d/ready" . "$spid" || { echo "sink did not start: $(tail -2 "$d/sink.err")" >&2; return 1; }
	# The feeder outlasts the window by 6 s: on a loaded host the measuring
	# script itself can take seconds to start.
	ip netns exec "$FNS" taskset -c 1 "$FLOOD" --dest "$SADDR:$PORT" --case "$case" --send "$send" ${RATE:+--rate "$RATE"} \
		--duration $((SECS + 7)) >"$d/feed.json" 2>"$d/feed.err" &
	fpid=$!
	BG_PIDS+=("$fpid")
	python3 "$HELP" window "$spid" "$fpid" "$d/progress" 1 "$SECS" >"$d/window.json" ||
		{ echo "measuring failed: $(cat "$d/feed.err" "$d/sink.err" | tail -3)" >&2; stop_bg; return 1; }
	wait "$fpid" || { echo "feeder failed: $(tail -2 "$d/feed.err")" >&2; stop_bg; return 1; }
	# The sink may trail the feeder by what the sockets hold: its last events
	# are read before it is stopped (at most 10 s more), or they count as lost.
	python3 "$HELP" drained "$d/feed.json" "$d/progress" 10 || echo "  sink still reading after 10 s" >&2
	stop_bg
	python3 "$HELP" point "$label" "$case" "$run" "$d/feed.json" "$d/sink.json" "$d/window.json" \
		>"$d/point.json" || { echo "no figures: $(tail -2 "$d/sink.err")" >&2; return 1; }
	cat "$d/point.json" >>"$POINTS"
	python3 -c 'import json,sys; p=json.loads(sys.stdin.read())
print("  %-5s %-4s run %d: %7.1f kev/s %6.2f Gb/s sink user %.2f sys %.2f s/s, cores %s%s" % (p["label"],
      p["case"], p["run"], p["events_per_s"] / 1e3, p["gbps"], p["sink_user_s_per_s"], p["sink_sys_s_per_s"],
      p["core_busy"], "" if p["ok"] else "  EVENTS LOST OR BROKEN"))' <"$d/point.json"
}

rc=0
for case in $CASES; do
	for ((run = 1; run <= RUNS; run++)); do
		for s in "${SINKS[@]}"; do
			for f in $FEEDS; do
				run_point "${s%%:*}$([[ $FEEDS == write ]] || echo "/$f")" "${s#*:}" "$case" "$run" "$f" || rc=1
			done
		done
		taskset -c 0 "$FLOOD" --check-cost --case "$case" >>"$CHECKS" || rc=1
	done
done
python3 "$HELP" report "$OUT/bench/sink.json" "$POINTS" "$SECS" "$CHECKS" || rc=1
exit $rc

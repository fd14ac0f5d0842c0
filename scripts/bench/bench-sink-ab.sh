#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Two farm nodes' CPU per event, side by side in the same seconds: on a
# shared host the same sink's CPU per event drifts by up to 2x from one
# run of bench-sink.sh to the next, more than the difference asked about.
# Here both sinks (`xevb sink`, shipped defaults: every byte checked) run
# at once on CPU 0, each on its own port, and one feeder on CPU 1
# (sink_flood with --dest twice) writes flat out to one for SINK_SLICE_MS
# (200), then to the other: each sink runs alone on its core while fed,
# and a drift of the host's speed longer than a slice hits both alike.
# CPU per event by the scheduler's clock (ns on a core, all threads) over
# BENCH_SECONDS (20) after 1 s of warm-up; every event sent to each must
# arrive, checked. BENCH_RUNS runs (5), the order of the two swapped run
# by run. Case SINK_CASE (l1: 126 sources x 32 B; hlt: 323 x 100 B).
# SINK_A=LABEL=PATH, SINK_B=LABEL=PATH: the two xevb binaries (both this
# tree's by default: an A/A run, the method's own spread).
#
# usage: scripts/bench/bench-sink-ab.sh [OUT]   env: BENCH_QUICK, BENCH_RUNS,
#   BENCH_SECONDS, SINK_A, SINK_B, SINK_CASE, SINK_SLICE_MS, BENCH_KEEP=1
# Writes OUT/bench/sink-ab.json. About 2 minutes.
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start sink-ab "${1:-}"
RUNS=${BENCH_RUNS:-$(quick_or 2 5)}
SECS=${BENCH_SECONDS:-$(quick_or 4 20)}
SLICE=${SINK_SLICE_MS:-200}
CASE=${SINK_CASE:-l1}
((RUNS >= 1 && RUNS <= 40 && SECS >= 2 && SECS <= 120)) ||
	{ echo "bench-sink-ab: BENCH_RUNS 1..40, BENCH_SECONDS 2..120" >&2; exit 2; }
[[ $SLICE =~ ^[1-9][0-9]*$ && $CASE =~ ^(l1|hlt)$ ]] ||
	{ echo "bench-sink-ab: SINK_SLICE_MS: ms, a positive integer; SINK_CASE: l1 or hlt" >&2; exit 2; }
# sink_spec VAR: LABEL:PATH from VAR (LABEL=PATH), this tree's xevb when unset.
sink_spec() {
	local v=${!1:-} def=$2
	[[ -z $v ]] && { echo "$def:$X"; return; }
	[[ $v =~ ^[A-Za-z0-9]+=. && -x ${v#*=} ]] ||
		{ echo "bench-sink-ab: $1: LABEL=PATH of an executable, not '$v'" >&2; exit 2; }
	echo "${v%%=*}:$(realpath "${v#*=}")"
}
A=$(sink_spec SINK_A a) B=$(sink_spec SINK_B b)
[[ ${A%%:*} != "${B%%:*}" ]] || { echo "bench-sink-ab: SINK_A and SINK_B need two labels" >&2; exit 2; }
FLOOD=$ROOT/$OUT/bench/sink_flood
HELP=$ROOT/scripts/bench/sink_ab.py
bench_make "$OUT/xevb" "$FLOOD"
P="xevb$$sab"
FNS="$P-feed" SNS="$P-sink"
FADDR=198.18.1.1 SADDR=198.18.3.1
POINTS=$W/points.jsonl
: >"$POINTS"
veth_pair "$FNS" "$SNS" "$FADDR" "$SADDR" || bench_fail "cannot make the veth pair $FNS - $SNS"

# start_sink BIN PORT DIR: a sink on CPU 0 in the background, its pid in SPID.
start_sink() {
	mkdir -p "$3"
	ip netns exec "$SNS" taskset -c 0 "$1" sink --listen "$SADDR:$2" --json --stats-interval 0 \
		--ready-file "$3/ready" --progress-file "$3/progress" >"$3/sink.json" 2>"$3/sink.err" &
	SPID=$!
	BG_PIDS+=("$SPID")
	wait_for "$3/ready" . "$SPID" || { echo "sink did not start: $(tail -2 "$3/sink.err")" >&2; return 1; }
}

# run_point RUN: both sinks, the feeder, one JSON line appended to POINTS.
# Odd runs feed A first, even ones B.
run_point() {
	local run=$1 d=$W/run$1 pa pb fpid first=${A%%:*} dests
	start_sink "${A#*:}" 5000 "$d/a" || return 1
	pa=$SPID
	start_sink "${B#*:}" 5001 "$d/b" || return 1
	pb=$SPID
	dests=(--dest "$SADDR:5000" --dest "$SADDR:5001")
	((run % 2)) || { dests=(--dest "$SADDR:5001" --dest "$SADDR:5000"); first=${B%%:*}; }
	ip netns exec "$FNS" taskset -c 1 "$FLOOD" "${dests[@]}" --slice-ms "$SLICE" --case "$CASE" \
		--duration $((SECS + 4)) >"$d/feed.raw" 2>"$d/feed.err" &
	fpid=$!
	BG_PIDS+=("$fpid")
	python3 "$HELP" window "$pa" "$d/a/progress" "$pb" "$d/b/progress" 1 "$SECS" >"$d/window.json" ||
		{ echo "measuring failed: $(cat "$d/feed.err" "$d"/?/sink.err | tail -3)" >&2; stop_bg; return 1; }
	wait "$fpid" || { echo "feeder failed: $(tail -2 "$d/feed.err")" >&2; stop_bg; return 1; }
	# The feeder's dest_events in A, B order whichever went first.
	python3 -c 'import json,sys; f=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
if sys.argv[2] == "1": f["dest_events"].reverse()
print(json.dumps(f))' "$d/feed.raw" $((run % 2 ? 0 : 1)) >"$d/feed.json"
	python3 "$HELP" drained "$d/feed.json" 0 "$d/a/progress" 10 || echo "  sink A still reading after 10 s" >&2
	python3 "$HELP" drained "$d/feed.json" 1 "$d/b/progress" 10 || echo "  sink B still reading after 10 s" >&2
	stop_bg
	python3 "$HELP" point "$run" "$first" "$d/feed.json" "$d/a/sink.json" "$d/b/sink.json" "$d/window.json" \
		>"$d/point.json" || { echo "no figures: $(tail -2 "$d"/?/sink.err)" >&2; return 1; }
	cat "$d/point.json" >>"$POINTS"
	python3 -c 'import json,sys; p=json.loads(sys.stdin.read())
print("  run %d (%s first): %.3f and %.3f us/event, b/a %.3f%s" % (p["run"], p["first"],
      p["a"]["cpu_us_per_event"] or 0, p["b"]["cpu_us_per_event"] or 0, p["b_over_a"] or 0,
      "" if p["ok"] else "  EVENTS LOST OR BROKEN"))' <"$d/point.json"
}

rc=0
for ((run = 1; run <= RUNS; run++)); do
	run_point "$run" || rc=1
done
python3 "$HELP" report "$OUT/bench/sink-ab.json" "$POINTS" "${A%%:*}" "${B%%:*}" "$SLICE" "$SECS" || rc=1
exit $rc

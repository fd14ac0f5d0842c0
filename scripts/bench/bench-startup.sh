#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# How soon a builder receives (issue 38): a builder must receive within
# 300 ms of its start, and within 300 ms of a restart after a SIGKILL. On
# the testbed, a source sends all along (ids 0-3, 5000 events/s, 10 events
# a MEP: a MEP every 0.5 ms), and BENCH_RUNS (10; 3 quick) rounds each:
#
#   start    `xevb build --sources 0-3 --no-forward` starts, nothing on eth0
#   restart  it is killed (SIGKILL) and the same command starts at once
#
# both as `xevb build` runs by default (privileges dropped, a root helper
# detaches XDP when the builder is gone) and with --keep-privileges (the
# killed builder's program stays attached: the next one removes it).
# startup_probe times each from just before the exec (restart: before the
# kill) to the builder's "AF_XDP socket on" line (receiving_ms) and to the
# first frame its XDP program redirected into its socket (first_frame_ms).
# Then the builder stops with SIGINT and the next round starts clean.
# Writes OUT/bench/startup.json (medians and every run, and the verifier's
# figures of the program: steer_load_cost) and a table.
#
# STARTUP_XEVB=PATH measures another build of xevb (the one before a
# change; STARTUP_LOAD_COST=PATH its steer_load_cost), STARTUP_NAME=NAME
# writes OUT/bench/NAME.json instead.
#
# usage: bench-startup.sh [OUT]   (root)
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start "${STARTUP_NAME:-startup}" "${1:-}"
bench_make "$OUT/xevb" "$OUT/bench/startup_probe" "$OUT/bench/steer_load_cost"
BIN=$(realpath "${STARTUP_XEVB:-$X}")
LOAD_COST=$(realpath "${STARTUP_LOAD_COST:-$OUT/bench/steer_load_cost}")
PROBE=$ROOT/$OUT/bench/startup_probe
RUNS=${BENCH_RUNS:-$(quick_or 3 10)}
BUILD_ARGS=(build --dev eth0 --sources 0-3 --no-forward --quiet --json --duration 60)

TB_PREFIX="xe$$su"
bench_testbed
tb_up --sources 1 --builders 1 --sinks 0 || bench_fail "testbed"
BNS=$(tb_ns builder 0)

ip netns exec "$(tb_ns source 0)" timeout 3600 "$X" source --dest "$(tb_addr builder 0)" --source-ids 0-3 \
	--rate 5000 --pack 10 --frag-size 40-120 --quiet >/dev/null 2>"$W/src.err" &
BG_PIDS+=($!)

# probe NAME [startup_probe options]: one timed start; its JSON line, else status 1.
probe() {
	local name=$1
	shift
	ip netns exec "$BNS" "$PROBE" --dev eth0 --log "$W/$name.err" --timeout-ms 30000 "$@" -- \
		"$BIN" "${BUILD_ARGS[@]}" "${EXTRA[@]}" >"$W/$name.json" || {
		echo "bench-startup: $name did not receive; its last lines:" >&2
		tail -5 "$W/$name.err" >&2
		return 1
	}
	cat "$W/$name.json"
}

# gone PID: wait (10 s at most) until it has exited; then nothing of ours is on eth0.
gone() {
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	for ((i = 0; i < 50; i++)); do
		ip -n "$BNS" -d link show eth0 | grep -q 'prog/xdp' || return 0
		sleep 0.1
	done
	bench_fail "an XDP program is still on eth0 after the builder ended"
}

# round SERIES R: a start, a restart after SIGKILL, a clean stop; rows to W/rows.jsonl.
round() {
	local series=$1 r=$2 a b pid
	a=$(probe "$series.$r.start") || return 1
	pid=$(jq -r .pid <<<"$a")
	BG_PIDS+=("$pid")
	sleep 0.5
	b=$(probe "$series.$r.restart" --kill "$pid" --after-id "$(jq -r .prog_id <<<"$a")") || return 1
	pid=$(jq -r .pid <<<"$b")
	BG_PIDS+=("$pid")
	kill -INT "$pid"
	gone "$pid"
	jq -c --arg s "$series" --argjson r "$r" '{series: $s, phase: "start", round: $r} + .' <<<"$a" >>"$W/rows.jsonl"
	jq -c --arg s "$series" --argjson r "$r" '{series: $s, phase: "restart", round: $r} + .' <<<"$b" >>"$W/rows.jsonl"
}

command -v jq >/dev/null || bench_fail "jq not found (bash scripts/install-deps.sh)"
"$LOAD_COST" --runs 3 --json >"$W/verifier.json" || bench_fail "$LOAD_COST failed"
: >"$W/rows.jsonl"
for ((r = 1; r <= RUNS; r++)); do
	for series in default keep_privileges; do
		EXTRA=()
		[[ $series == keep_privileges ]] && EXTRA=(--keep-privileges)
		round "$series" "$r" || bench_fail "round $r ($series) failed"
	done
	echo "# round $r of $RUNS done"
done

"$PY" - "$W/rows.jsonl" >"$W/summary.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for s in ("default", "keep_privileges"):
    for ph in ("start", "restart"):
        r = [x for x in rows if x["series"] == s and x["phase"] == ph]
        rx = [x["receiving_ms"] for x in r]
        ff = [x["first_frame_ms"] for x in r]
        print(json.dumps({"series": s, "phase": ph, "runs": len(r),
                          "receiving_ms": statistics.median(rx), "first_frame_ms": statistics.median(ff),
                          "receiving_ms_runs": rx, "first_frame_ms_runs": ff}))
PY
bench_write "${STARTUP_NAME:-startup}" "$W/summary.jsonl" runs="$RUNS" xevb="$BIN" \
	verifier="$(cat "$W/verifier.json")"
"$PY" - "$OUT/bench/${STARTUP_NAME:-startup}.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-16s %-8s %14s %16s   (medians of %s; %s)" % ("series", "phase", "receiving ms", "first frame ms",
                                                      d["runs"], d["xevb"]))
for r in d["results"]:
    print("%-16s %-8s %14.1f %16.1f" % (r["series"], r["phase"], r["receiving_ms"], r["first_frame_ms"]))
v = d["verifier"]["variants"]
print("verifier, xevb_steer (variant meta, the default): %d instructions processed, load %.1f ms (%.1f ms CPU)"
      % (v["meta"]["insns_processed"], v["meta"]["load_ms_median"], v["meta"]["load_cpu_ms_median"]))
PY

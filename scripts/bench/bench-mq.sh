#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Multi-queue receive cost: `xevb build --queues 0-1` on a veth with 2 RX
# queues, served by 1 worker (today's loop: one thread for both sockets)
# or by 2 workers (`--workers 2 --cpus 1,0`: events owned by id block,
# shares handed over between the workers). Same traffic for both: `xevb
# source --mode live` (CPU 0) through the bridge, every source from its own
# address (--src-addr-base), so flow hashing on the switch port spreads the
# frames over both queues. Threaded NAPI on the builder's veth, its napi
# threads on CPU 1.
#
# Figure: CPU ns per frame summed over the builder's threads (any core) and,
# separately, over the napi threads (the kernel's copy into the UMEM), from
# schedstat; /proc/stat busy time of all cores per frame too (counts the
# generator and anyone else on the machine). Cases:
#   l1:  25 x 32 B fragments a packet (1150-byte frames)
#   hlt: 10 x 100 B fragments a packet (1170-byte frames)
#   one:  1 x 32 B (82-byte frames): with l1, pins down per-frame vs per-fragment cost
# BENCH_RUNS runs (3; 1 with BENCH_QUICK=1) of BENCH_SECONDS (3; 1.5 quick)
# per point, medians. Writes $OUT/bench/multiqueue.{json,csv,png}.
# BENCH_CASES="l1 hlt one", BENCH_RATE (events/s per source, 0 = flat out),
# BENCH_KEEP=1 keeps the per-run files.
set -euo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$(realpath -m --relative-to="$ROOT" "$OUT")
QUICK=${BENCH_QUICK:-}
RUNS=${BENCH_RUNS:-$([[ -n $QUICK ]] && echo 1 || echo 3)}
SECS=${BENCH_SECONDS:-$([[ -n $QUICK ]] && echo 1.5 || echo 3)}
CASES=${BENCH_CASES:-l1 hlt one}
RATE=${BENCH_RATE:-0}
NSRC=64
X=$ROOT/$OUT/xevb
PASS=$ROOT/$OUT/bpf/xevb_pass.bpf.o
HELP=$ROOT/scripts/bench/mq.py
TMP=$(mktemp -d /tmp/xevb-mq.XXXXXX)
ROWS=$TMP/rows.jsonl
BPID=

. scripts/lib/testbed.sh
export TB_QUIET=1

tb_on_cleanup() {
	if [[ -n $BPID ]]; then
		kill -INT "$BPID" 2>/dev/null || true
		sleep 0.5
		kill -KILL "$BPID" 2>/dev/null || true
		wait "$BPID" 2>/dev/null || true
	fi
	[[ -n ${BENCH_KEEP:-} ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}

make -s "$OUT/xevb" "$OUT/bpf/xevb_pass.bpf.o" >/dev/null
mkdir -p "$OUT/bench"
: >"$ROWS"

napi_pids() { ps -eo pid=,comm= | awk '$2 ~ /^napi\// { print $1 }' | sort; }

wait_for() { # FILE PATTERN PID
	local i
	for ((i = 0; i < 100; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# run_one CASE WORKERS RUN
run_one() {
	local case=$1 nw=$2 run=$3 d=$TMP/$1-$2-$3 napi p rc=0
	local wargs=(--workers 1) pin=(taskset -c 1)
	mkdir -p "$d"
	if ((nw > 1)); then
		wargs=(--workers "$nw" --cpus 1,0)
		pin=()
	fi
	napi_pids >"$d/napi0"
	ip netns exec "$BNS" "${pin[@]}" "$X" build --dev eth0 --queues 0-1 "${wargs[@]}" --sources "0-$((NSRC - 1))" \
		--no-forward --timeout-ms 20 --window 65536 --frames 16384 --rx-ring 8192 --frame-size 2048 \
		--json --quiet --duration 60 >"$d/build.json" 2>"$d/build.err" &
	BPID=$!
	if ! wait_for "$d/build.err" 'AF_XDP socket on' "$BPID"; then
		echo "builder did not start: $(tail -3 "$d/build.err")" >&2
		return 1
	fi
	# XDP gave the veth its NAPI instances: move them to threads, on CPU 1.
	ip netns exec "$BNS" sh -c 'echo 1 > /sys/class/net/eth0/threaded'
	napi=$(comm -13 "$d/napi0" <(napi_pids) | tr '\n' ' ')
	for p in $napi; do taskset -p -c 1 "$p" >/dev/null; done
	sleep 0.2
	# shellcheck disable=SC2086
	python3 "$HELP" snap "$BPID" $napi >"$d/s0"
	ip netns exec "$SRCNS" taskset -c 0 "$X" source --dest "$BADDR" --dev eth0 --mode live \
		--src-addr-base 198.18.1.100 --source-ids "0-$((NSRC - 1))" --pack "$PACK" --frag-size "$FRAG" \
		--rate "$RATE" --duration "$SECS" --no-end-of-run --json --quiet >"$d/src.json" 2>"$d/src.err" ||
		echo "source failed: $(tail -2 "$d/src.err")" >&2
	sleep 0.3
	# shellcheck disable=SC2086
	python3 "$HELP" snap "$BPID" $napi >"$d/s1"
	kill -INT "$BPID" 2>/dev/null || true
	wait "$BPID" || rc=$?
	BPID=
	ip netns exec "$BNS" sh -c 'echo 0 > /sys/class/net/eth0/threaded' 2>/dev/null || true
	((rc == 0)) || echo "builder exit status $rc: $(tail -2 "$d/build.err")" >&2
	python3 "$HELP" run case="$case" workers="$nw" run="$run" rc="$rc" s0="$d/s0" s1="$d/s1" \
		src="$d/src.json" bld="$d/build.json" >>"$ROWS"
	python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print("  %-4s %d worker(s) run %s: %.3f Mfr/s, builder %.0f ns/frame, napi %.0f, busy %.0f, hand-off %.2f/frame, queues %s%s" % (
    r["case"], r["workers"], r["run"], r["mframes_per_s"], r["builder_ns_per_frame"] or 0, r["napi_ns_per_frame"] or 0,
    r["busy_ns_per_frame"] or 0, r["handoff_per_frame"], r["queue_frames"], "" if r["ok"] else "  FAILED"))' "$ROWS"
}

P="xevb$$mq"
tb_up --prefix "$P" --sources 1 --builders 1 --sinks 1 --queues 2 --xdp-pass "$PASS"
SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0) BADDR=$(tb_addr builder 0)
echo "multi-queue: $NSRC sources (one address each), 2 RX queues, $RUNS x ${SECS}s a point, rate ${RATE:-0}"
for case in $CASES; do
	case $case in
	l1) PACK=25 FRAG=32 ;;
	hlt) PACK=10 FRAG=100 ;;
	one) PACK=1 FRAG=32 ;;
	*) echo "unknown case $case" >&2; exit 2 ;;
	esac
	for ((run = 1; run <= RUNS; run++)); do
		# Alternate the order: drift on a shared machine hits both alike.
		for nw in $( ((run % 2)) && echo "1 2" || echo "2 1"); do
			run_one "$case" "$nw" "$run" || echo "  $case $nw workers run $run: FAILED" >&2
		done
	done
done
tb_down "$P"
TB_CREATED=${TB_CREATED/ $P/}

meta=$(python3 scripts/bench/meta.py bench=multiqueue runs="$RUNS" seconds="$SECS" cases="$CASES" rate="$RATE" \
	sources="$NSRC" cpus="generator 0; 1 worker: CPU 1; 2 workers: CPUs 1,0; napi threads: CPU 1")
python3 "$HELP" report "$ROWS" "$OUT/bench" "$meta"

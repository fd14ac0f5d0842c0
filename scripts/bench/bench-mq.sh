#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Multi-queue receive cost: `xevb build --queues 0-1` on a veth with 2 RX
# queues, served by 1 worker (today's loop: one thread for both sockets)
# or by 2 workers (`--workers 2 --tune cpus=1,0`: events owned by id block,
# shares handed over between the workers). Same traffic for both: `xevb
# source --mode live` (CPU 0) through the bridge, every source from its own
# address (--src-addr-base), so flow hashing on the switch port spreads the
# frames over both queues. Threaded NAPI on the builder's veth; each queue's
# napi thread runs where that queue's worker runs (as a NIC's queue IRQs
# would be set), configurations (BENCH_CONFIGS, default all three):
#   w1:      1 worker on CPU 1; both napi threads on CPU 1
#   w2:      2 workers, one per core, each where its queue is filled:
#            bridge: queue 0's worker and napi thread on CPU 1, queue 1's on
#            CPU 0 (shared with the generator: the machine has 2 cores);
#            direct: queue q's worker on CPU q, beside its generator
#   w2same:  2 workers, both on CPU 1, napi threads too: the cost of the
#            hand-off itself, without the cross-core cache traffic
#   w2cbase: w2c run by another build's xevb (BENCH_BASE=its build dir):
#            an A/B of two versions of the hand-off in the same run
#   w1cbase: w1c run by that other build's xevb (its 2-worker/1-worker
#            ratio, w2cbase/w1cbase, beside this build's w2c/w1c)
#   w1c, w2c: w1 and w2 through the worker threads with --tune coalesce-us
#            BENCH_COALESCE (200): a nap after work before sleeping, so
#            each wake-up takes a batch (w1c: --workers 1, same loop as w2c)
#
# Two paths (BENCH_PATHS, default both):
#   bridge: light load. One generator (CPU 0) -> bridge -> builder veth; the
#           generator's core caps the offer near 0.3 Mfr/s, the workers are
#           mostly asleep and the cost per frame is mostly waking up.
#   direct: saturated. A second veth pair with 2 queues straight into the
#           builder; one generator per core (CPU 0 and CPU 1: a veth puts a
#           peer's XDP frames on queue CPU % queues, so each fills one
#           queue). Both cores are busy, the RX rings stay full, workers
#           never sleep: the cost per frame of the work itself. Default
#           NAPI there (the kernel's copy runs in the generators' context).
#
# Figure: CPU ns per frame summed over the builder's threads (any core) and,
# separately, over the napi threads (the kernel's copy into the UMEM), from
# schedstat; /proc/stat busy time of all cores per frame too (counts the
# generator and anyone else on the machine). Cases:
#   l1:  25 x 32 B fragments a packet (1150-byte frames)
#   hlt: 10 x 100 B fragments a packet (1170-byte frames)
#   one:  1 x 32 B (82-byte frames): with l1, pins down per-frame vs per-fragment cost
# BENCH_RUNS runs (3; 1 with BENCH_QUICK=1) of BENCH_SECONDS (3; 1.5 quick)
# per point, medians. Writes $OUT/bench/mq.{json,csv,png}; docs/bench/multiqueue.md
# reads them.
# BENCH_CASES="l1 hlt one", BENCH_RATE (events/s per source, 0 = flat out),
# BENCH_MFPS (paced: this many Mframes/s offered by both generators
# together, whatever the case: the rate per source follows from the packing,
# and the builder's timeout becomes 200 ms, BENCH_TIMEOUT_MS). Flat out, a
# single worker cannot keep up with two generators: its RX rings overflow
# and most events end incomplete, at a cost that varies from run to run.
# Paced, every configuration gets the same load, but above 20 kfr/s the
# generator paces by spinning in its XDP program and takes its core, so the
# worker beside it waits: not a clean measurement either on 2 cores),
# BENCH_KEEP=1 keeps the per-run files; BENCH_PERF=DIR records `perf record -g`
# of the builder's threads for each run into DIR.
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start mq "${1:-}"
bench_runs_secs 1.5 3
CASES=${BENCH_CASES:-l1 hlt one}
CONFIGS=${BENCH_CONFIGS:-w1 w2 w1c w2c}
COALESCE=${BENCH_COALESCE:-200}
PATHS=${BENCH_PATHS:-direct bridge}
RATE=${BENCH_RATE:-0}
MFPS=${BENCH_MFPS:-}
# Paced, the two generators start some ms apart and stay so: time out later.
TMO=${BENCH_TIMEOUT_MS:-$([[ -n $MFPS ]] && echo 200 || echo 20)}
NSRC=64
PASS=$ROOT/$OUT/bpf/xevb_pass.bpf.o
HELP=$ROOT/scripts/bench/mq.py
ROWS=$W/rows.jsonl
BPID=

bench_testbed
bench_on_exit() {
	[[ -n $BPID ]] || return 0
	kill -INT "$BPID" 2>/dev/null || true
	sleep 0.5
	kill -KILL "$BPID" 2>/dev/null || true
	wait "$BPID" 2>/dev/null || true
}
bench_make "$OUT/xevb" "$OUT/bpf/xevb_pass.bpf.o"
: >"$ROWS"

# The new napi threads (pids), in napi id order: veth creates them queue by queue.
napi_new() { comm -13 "$1" <(napi_pids) | while read -r p; do echo "$(cut -d- -f2 <"/proc/$p/comm") $p"; done | sort -n | awk '{ print $2 }'; }

# run_one CASE CONFIG RUN   (PATH_NAME, BDEV: which path)
run_one() {
	local case=$1 cfg=$2 run=$3 d=$W/$PATH_NAME-$1-$2-$3 napi="" p q rc=0 nw=1 gpids=() XB=$X
	local wargs=(--workers 1) pin=(taskset -c 1) ncpu=(1 1)
	mkdir -p "$d"
	case $cfg in
	w1c | w1cbase)
		wargs=(--workers 1 --tune cpus=1 --tune coalesce-us="$COALESCE") pin=()
		if [[ $cfg == w1cbase ]]; then
			XB=$(realpath "${BENCH_BASE:?w1cbase needs BENCH_BASE=the build dir of the other version}")/xevb
		fi ;;
	w2 | w2c | w2cbase)
		# Each queue's worker where that queue is filled: bridge, its napi
		# thread (set below); direct, the generator's core (queue = CPU).
		nw=2 pin=() ncpu=(1 0)
		[[ $PATH_NAME == direct ]] && ncpu=(0 1)
		wargs=(--workers 2 --tune cpus="${ncpu[0]},${ncpu[1]}")
		[[ $cfg == w2 ]] && wargs+=(--tune coalesce-us=0) || wargs+=(--tune coalesce-us="$COALESCE")
		if [[ $cfg == w2cbase ]]; then
			XB=$(realpath "${BENCH_BASE:?w2cbase needs BENCH_BASE=the build dir of the other version}")/xevb
		fi ;;
	w2same) nw=2 wargs=(--workers 2 --tune cpus=1,1 --tune coalesce-us=0) pin=() ;;
	esac
	napi_pids >"$d/napi0"
	ip netns exec "$BNS" "${pin[@]}" "$XB" build --dev "$BDEV" --queues 0-1 "${wargs[@]}" --sources "0-$((NSRC - 1))" \
		--no-forward --timeout-ms "$TMO" --window 65536 --tune frames=16384 --tune rx-ring=8192 --tune frame-size=2048 \
		--json --quiet --duration 60 >"$d/build.json" 2>"$d/build.err" &
	BPID=$!
	if ! wait_for "$d/build.err" 'AF_XDP socket on' "$BPID"; then
		echo "builder did not start: $(tail -3 "$d/build.err")" >&2
		return 1
	fi
	if [[ $PATH_NAME == bridge ]]; then
		# XDP gave the veth its NAPI instances: move them to threads, by queue.
		ip netns exec "$BNS" sh -c 'echo 1 > /sys/class/net/eth0/threaded'
		napi=$(napi_new "$d/napi0" | tr '\n' ' ')
		q=0
		for p in $napi; do
			taskset -p -c "${ncpu[$q]:-1}" "$p" >/dev/null
			q=$((q + 1))
		done
	fi
	sleep 0.2
	# shellcheck disable=SC2086
	python3 "$HELP" snap "$BPID" $napi >"$d/s0"
	local perfpid=""
	if [[ -n ${BENCH_PERF:-} ]]; then
		# Where the builder's threads spend their time (software clock samples).
		mkdir -p "$BENCH_PERF"
		perf record -q -e cpu-clock -g -p "$BPID" -o "$BENCH_PERF/$case-$cfg-$run.data" -- sleep "$SECS" >/dev/null 2>&1 &
		perfpid=$!
	fi
	if [[ $PATH_NAME == bridge ]]; then
		ip netns exec "$SRCNS" taskset -c 0 "$X" source --dest "$BADDR" --dev eth0 --mode live \
			--src-addr-base 198.18.1.100 --source-ids "0-$((NSRC - 1))" --pack "$PACK" --frag-size "$FRAG" \
			--rate "$RATE" --duration "$SECS" --no-end-of-run --json --quiet >"$d/src.json" 2>"$d/src.err" ||
			echo "source failed: $(tail -2 "$d/src.err")" >&2
	else
		# Half the sources each; the same event_ids, so events still need both queues.
		for q in 0 1; do
			ip netns exec "$SRCNS" taskset -c "$q" "$X" source --dest "$BADDR" --dev eth1 --mode live \
				--dst-mac 02:18:02:01:00:01 --src-addr "$SADDR" \
				--source-ids "$((q * NSRC / 2))-$(((q + 1) * NSRC / 2 - 1))" --pack "$PACK" --frag-size "$FRAG" \
				--rate "$RATE" --duration "$SECS" --no-end-of-run --json --quiet >"$d/src$q.json" 2>"$d/src$q.err" &
			gpids+=($!)
		done
		for q in 0 1; do
			wait "${gpids[$q]}" || echo "source $q failed: $(tail -2 "$d/src$q.err")" >&2
		done
		cp "$d/src0.json" "$d/src.json"
	fi
	sleep 0.3
	[[ -n $perfpid ]] && wait "$perfpid"
	# shellcheck disable=SC2086
	python3 "$HELP" snap "$BPID" $napi >"$d/s1"
	kill -INT "$BPID" 2>/dev/null || true
	wait "$BPID" || rc=$?
	BPID=
	[[ $PATH_NAME == bridge ]] && { ip netns exec "$BNS" sh -c 'echo 0 > /sys/class/net/eth0/threaded' 2>/dev/null || true; }
	((rc == 0)) || echo "builder exit status $rc: $(tail -2 "$d/build.err")" >&2
	python3 "$HELP" run path="$PATH_NAME" case="$case" config="$cfg" workers="$nw" run="$run" rc="$rc" s0="$d/s0" s1="$d/s1" \
		src="$d/src.json" bld="$d/build.json" >>"$ROWS"
	python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print("  %-6s %-4s %-6s run %s: %.3f Mfr/s, builder %.0f ns/frame (user %.0f), napi %.0f, busy %.0f, hand-off %.2f/frame, queues %s%s" % (
    r["path"], r["case"], r["config"], r["run"], r["mframes_per_s"], r["builder_ns_per_frame"] or 0, r["user_ns_per_frame"] or 0, r["napi_ns_per_frame"] or 0,
    r["busy_ns_per_frame"] or 0, r["handoff_per_frame"], r["queue_frames"], "" if r["ok"] else "  FAILED"))' "$ROWS"
}

P="xevb$$mq"
tb_up --prefix "$P" --sources 1 --builders 1 --sinks 1 --queues 2 --xdp-pass "$PASS"
SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0) BADDR=$(tb_addr builder 0) SADDR=$(tb_addr source 0)
# The direct path: source eth1 <-> builder eth1, 2 queues each, no address.
ip link add eth1 netns "$SRCNS" numtxqueues 2 numrxqueues 2 address 02:18:01:01:00:01 type veth \
	peer name eth1 netns "$BNS" numtxqueues 2 numrxqueues 2 address 02:18:02:01:00:01
ip -n "$SRCNS" link set eth1 up
ip -n "$BNS" link set eth1 up
echo "multi-queue: $NSRC sources (one address each), 2 RX queues, $RUNS x ${SECS}s a point, rate ${MFPS:+$MFPS Mfr/s offered, }${RATE:-0}"
for PATH_NAME in $PATHS; do
BDEV=$([[ $PATH_NAME == direct ]] && echo eth1 || echo eth0)
for case in $CASES; do
	case $case in
	l1) PACK=25 FRAG=32 ;;
	hlt) PACK=10 FRAG=100 ;;
	one) PACK=1 FRAG=32 ;;
	*) echo "unknown case $case" >&2; exit 2 ;;
	esac
	[[ -n $MFPS ]] && RATE=$(python3 -c "print(round($MFPS * 1e6 * $PACK / $NSRC))")
	for ((run = 1; run <= RUNS; run++)); do
		# Alternate the order: drift on a shared machine hits both alike.
		order=$CONFIGS
		((run % 2)) || order=$(echo "$CONFIGS" | tr ' ' '\n' | tac | tr '\n' ' ')
		for cfg in $order; do
			run_one "$case" "$cfg" "$run" || echo "  $PATH_NAME $case $cfg run $run: FAILED" >&2
		done
	done
done
done
bench_tb_down "$P"

meta=$(python3 scripts/bench/meta.py bench=multiqueue runs="$RUNS" seconds="$SECS" cases="$CASES" rate="$RATE" mfps="${MFPS:-flat out}" \
	sources="$NSRC" configs="$CONFIGS" paths="$PATHS" coalesce_us="$COALESCE" cpus="generator 0; w1: worker+napi CPU 1; w2: worker/napi of queue 0 CPU 1, queue 1 CPU 0; w2same: all CPU 1")
"$PY" "$HELP" report "$ROWS" "$OUT/bench" "$meta"

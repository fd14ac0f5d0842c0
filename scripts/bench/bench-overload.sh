#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Overload: goodput vs offered load (issue 25). Offered more than it can
# take, a builder should keep building what it can, not collapse. Per case
# and receive mode this finds the loss-free rate, then offers 0.1x, 0.5x, 0.9x, 1x,
# 1.5x, 2x, 5x and 10x that rate and unpaced, and counts the events that
# arrive complete at the farm node.
#   l1:  126 sources, 25 x 32 B fragments a packet (1150-byte frames)
#   hlt: 323 sources, 10 x 100 B fragments a packet (1170-byte frames)
# Layout (bench-e2e.sh's direct path): `xevb source --mode live` (CPU 0) on
# a veth pair straight to the builder's veth (XDP_TX frames, no bridge); the
# builder on CPU 1. OV_MODEL=split (default, as bench-gateway.sh): veth's
# default NAPI, the receive work (XDP, the copy into the UMEM) runs on the
# sender's core; OV_MODEL=gateway: the builder's veth in threaded NAPI mode,
# its napi thread pinned to CPU 1 (all receive work on the builder's core;
# veth's 256-slot ring then drops a few frames at any rate, before XDP, so
# "loss-free" is luck there). The builder forwards over TCP (its eth0, through the testbed's
# bridge) to one `xevb sink` (CPU 0), which checks every byte; the generator
# is niced below the sink. xdp and socket mode (raw IPv4 socket, recvmmsg,
# behind the steering program in pass mode, which sheds; an XDP_PASS
# program on its veth for NAPI where the builder attaches none: --tune no-shed=1,
# OV_BIN of an older build) alternate point by point.
# The builder runs with the shipped defaults (window, timeout, frames, RX
# ring, frame size): BENCH_BUILD_ARGS adds options (experiments).
#
# Loss-free: every event the generator sent arrives complete at the farm
# node, none incomplete (BENCH_LOSS_TOL: share of the events sent allowed
# to miss, 0). The search (bench-gateway.sh's): one unpaced probe (the upper
# bound), then OV_STEPS bisection steps of the paced event rate (`--rate`,
# events/s of each source), first at what the builder received unpaced; a
# step that loses is tried once more (OV_RETRY, see ov_probe).
# BENCH_RUNS rounds (3; 1 with BENCH_QUICK=1), each a search per mode, then
# every load, xdp and socket alternating, BENCH_SECONDS (2; 1 quick) a
# point. A round's loads are multiples of its own loss-free rates, and its
# goodput is judged against them: this host's speed drifts by up to 20%
# from one minute to the next (docs/bench/overload-and-forwarding.md), and a
# rate found ten minutes earlier would judge the host, not the builder.
# Medians over the rounds, of the ratios too.
#
# Per point: offered frames/s and events/s, frames received by the builder,
# complete events/s at the farm node, incomplete events (and their share of
# those delivered), the builder's counters of shed / evicted / discarded
# events where its summary has them, the CPU of the builder and of its napi
# thread, and the books: sent = complete + incomplete + shed + never
# delivered.
#
# usage: scripts/bench/bench-overload.sh [OUT]   env: BENCH_QUICK, BENCH_RUNS,
#   BENCH_SECONDS, BENCH_BUILD_ARGS, BENCH_KEEP=1 (keep the per-point files),
#   OV_CASES ("l1 hlt"), OV_MODES ("xdp socket"), OV_LOADS ("0.1 0.5 0.9 1 1.5 2
#   5 10 unpaced": multiples of the loss-free rate), OV_STEPS (6; 4 quick), OV_RETRY (1),
#   OV_MODEL (split | gateway), BENCH_GEN (live | xsk: the generator, lib_bench.sh), OV_BIN (the xevb binary of the builder; the
#   generator and the farm node stay this tree's).
# Writes OUT/bench/overload.json, overload.csv, overload-goodput.png.
# Full run about 15 minutes, quick about 4.
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start overload "${1:-}"
bench_runs_secs 1 2
STEPS=${OV_STEPS:-$(quick_or 4 6)}
CASES=${OV_CASES:-l1 hlt}
MODES=${OV_MODES:-xdp socket}
LOADS=${OV_LOADS:-0.1 0.5 0.9 1 1.5 2 5 10 unpaced}
TOL=${BENCH_LOSS_TOL:-0}
RETRY=${OV_RETRY:-1}
# The builder under test (OV_BIN: another build, e.g. of an older commit, for a before/after run).
XB=${OV_BIN:-$X}
[[ -x $XB ]] || { echo "bench-overload: OV_BIN $XB is not an executable" >&2; exit 2; }
PASS=$ROOT/$OUT/bpf/xevb_pass.bpf.o
HELP=$ROOT/scripts/bench/overload.py
SNAP=$ROOT/scripts/bench/e2e.py
SINK_PORT=5000
MODEL=${OV_MODEL:-split}
[[ $MODEL == split || $MODEL == gateway ]] || { echo "bench-overload: OV_MODEL split or gateway" >&2; exit 2; }
((RUNS >= 1 && RUNS <= 20 && STEPS >= 0 && STEPS <= 10 && RETRY >= 0 && RETRY <= 3)) ||
	{ echo "bench-overload: BENCH_RUNS 1..20, OV_STEPS 0..10, OV_RETRY 0..3" >&2; exit 2; }

bench_make "$OUT/xevb" "$OUT/bpf/xevb_pass.bpf.o"
POINTS=$W/points.jsonl
SEARCHES=$W/searches.jsonl
: >"$POINTS"
: >"$SEARCHES"
bench_testbed

# run_point MODE LOAD RATE ROUND PHASE FILE: one point at RATE events/s (0:
# unpaced); its figures, one JSON line, appended to FILE and shown on the
# terminal. Uses CASE NSRC PACK FRAG BNS BDEV SRCNS SNS BADDR SADDR SRCADDR.
run_point() {
	local mode=$1 load=$2 rate=$3 round=$4 phase=$5 rc=0
	local d=$W/$CASE-$mode-$phase-$load-$round
	mkdir -p "$d"
	local pass=
	if [[ $mode == socket ]]; then
		napi_pids >"$d/napi0"
		# without XDP a veth has no NAPI: the XDP_TX frames would be dropped;
		# a socket builder that sheds attaches its own program (pass mode)
		# shellcheck disable=SC2086
		if ! sock_builder_xdp "$XB" ${BENCH_BUILD_ARGS:-}; then
			ip -n "$BNS" link set dev "$BDEV" xdpdrv obj "$PASS" sec xdp || return 1
			pass=1
		fi
	fi
	point_body "$@" >"$d/point.json" || rc=1
	stop_bg
	[[ -n $pass ]] && ip -n "$BNS" link set dev "$BDEV" xdpdrv off
	if ((rc == 0)) && grep -q '^{' "$d/point.json"; then
		show <"$d/point.json"
		cat "$d/point.json" >>"$6"
	else
		echo "  $CASE $mode $phase $load round $round: FAILED" >&2
		rc=1
	fi
	return $rc
}

point_body() {
	local mode=$1 load=$2 rate=$3 round=$4 phase=$5 napi spid bpid bargs=()
	local d=$W/$CASE-$mode-$phase-$load-$round
	[[ $mode == socket ]] && bargs=(--mode socket)
	ip netns exec "$SNS" taskset -c 0 "$X" sink --listen "$SADDR:$SINK_PORT" --json --stats-interval 0 \
		--ready-file "$d/ready" >"$d/sink.json" 2>"$d/sink.err" &
	spid=$!
	BG_PIDS+=("$spid")
	wait_for "$d/ready" . "$spid" || { echo "sink did not start: $(tail -2 "$d/sink.err")" >&2; return 1; }
	[[ $mode == socket ]] || napi_pids >"$d/napi0"
	# shellcheck disable=SC2086
	ip netns exec "$BNS" taskset -c 1 "$XB" build --dev "$BDEV" --sources "0-$((NSRC - 1))" "${bargs[@]}" \
		--sink "$SADDR:$SINK_PORT" ${BENCH_BUILD_ARGS:-} --json --quiet --interval 0 --duration 60 \
		>"$d/build.json" 2>"$d/build.err" &
	bpid=$!
	BG_PIDS+=("$bpid")
	wait_for "$d/build.err" 'AF_XDP socket on|on a kernel socket' "$bpid" ||
		{ echo "builder did not start: $(tail -3 "$d/build.err")" >&2; return 1; }
	napi=$(set_model "$MODEL" "$d/napi0" | head -1)
	[[ -n $napi || $MODEL == split ]] || { echo "no napi thread found for the builder's veth" >&2; return 1; }
	# split: the receive work runs in the generator's softirq on CPU 0, no napi thread
	local roles=(builder="$bpid")
	[[ -n $napi ]] && roles+=(napi="$napi")
	python3 "$SNAP" snap "${roles[@]}" >"$d/s0"
	ip netns exec "$SRCNS" taskset -c 0 nice -n 10 "$X" source --dest "$BADDR" --dev eth1 \
		--dst-mac "$DIRECT_DST_MAC" --src-addr "$SRCADDR" --mode "$GEN" --source-ids "0-$((NSRC - 1))" \
		--pack "$PACK" --frag-size "$FRAG" --duration "$SECS" --rate "$rate" --no-end-of-run --json --quiet \
		>"$d/src.json" 2>"$d/src.err" || echo "source failed: $(tail -2 "$d/src.err")" >&2
	sleep 0.3 # the rings drain
	python3 "$SNAP" snap "${roles[@]}" >"$d/s1"
	kill -INT "$bpid" 2>/dev/null || true
	wait "$bpid" || echo "builder exit status $? ($CASE $mode $load): $(tail -2 "$d/build.err")" >&2
	sleep 0.3 # the last events reach the farm node
	kill -INT "$spid" 2>/dev/null || true
	wait "$spid" || true
	BG_PIDS=()
	python3 "$HELP" point case="$CASE" mode="$mode" load="$load" target="$rate" round="$round" phase="$phase" \
		nsrc="$NSRC" pack="$PACK" src="$d/src.json" bld="$d/build.json" sink="$d/sink.json" s0="$d/s0" s1="$d/s1"
}

# One line on the terminal for a point's JSON line (stdin).
show() {
	python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("  %-4s %-6s %-9s %-7s offered %8.1f kev/s (%8.1f kfr/s), rx %8.1f kfr/s, complete at the farm node %8.1f kev/s, incomplete %6d, never delivered %7d%s" % (
    r["case"], r["mode"], r["phase"], r["load"], r["offered_events_per_s"] / 1e3, r["offered_frames_per_s"] / 1e3,
    r["rx_frames_per_s"] / 1e3, r["complete_events_per_s"] / 1e3, r["delivered_incomplete"],
    r["books"]["never_delivered"], "" if r["ok"] else "  FAILED"), file=sys.stderr)'
}

# bisect_rate's probe and test (mode from SEARCH_MODE). A probe that is not
# loss-free is tried again (OV_RETRY times, 1): the rate holds if one try
# is. Below the rate where the builder runs out of time, frames are still
# lost now and then (a napi thread kept off the core for a few ms by another
# task overflows the veth's 256-frame ring): one such frame must not set
# the loss-free rate, which would then depend on the luck of one probe.
ov_probe() {
	local try n
	for ((try = 0; try <= RETRY; try++)); do
		n=$(wc -l <"$BISECT_LOG")
		run_point "$SEARCH_MODE" paced "$1" "$SEARCH_ROUND.$1-$try" search "$BISECT_LOG" || continue
		(($(wc -l <"$BISECT_LOG") > n)) && tail -1 "$BISECT_LOG" | ov_passes && return 0
	done
	return 0
}
ov_passes() { python3 "$HELP" passes "$TOL"; }

# search MODE ROUND: the loss-free event rate; appends the result to SEARCHES.
search() {
	local mode=$1 line= hi first lf=0 limited=0
	SEARCH_MODE=$mode SEARCH_ROUND=$2
	BISECT_LOG=$W/probes-$CASE-$mode-$2.jsonl
	: >"$BISECT_LOG"
	run_point "$mode" unpaced 0 "$2.0" search "$BISECT_LOG" && line=$(tail -1 "$BISECT_LOG")
	read -r hi first < <(python3 "$HELP" first-guess "$TOL" <<<"${line:-x}")
	if ((hi == 0)) && [[ -n $line ]] && ov_passes <<<"$line"; then
		limited=1   # even unpaced nothing was lost: the generator's rate is the bound
		lf=$(python3 -c 'import json,sys; print(int(json.loads(sys.stdin.read())["offered_events_per_s"]))' <<<"$line")
	elif ((hi > 0)); then
		bisect_rate ov_probe ov_passes 0 "$hi" "$first" "$STEPS"
		lf=$BISECT_RATE
	fi
	python3 "$HELP" search "$BISECT_LOG" case="$CASE" mode="$mode" round="$2" target="$lf" sender_limited="$limited" \
		sources="$NSRC" pack="$PACK" frag_size="$FRAG" bisection_steps="$STEPS" tol="$TOL" | tee -a "$SEARCHES" | cut -c1-160
}

# lossfree_of CASE MODE ROUND: the --rate that held (events/s, integer; 0 if none).
lossfree_of() {
	python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
v = [r["lossfree_target_events_per_s"] for r in rows
     if (r["case"], r["mode"], r["round"]) == (sys.argv[2], sys.argv[3], sys.argv[4])]
print(int(v[-1] or 0) if v else 0)' "$SEARCHES" "$1" "$2" "$3"
}

t0=$SECONDS
P="xevbov$$"
tb_up --prefix "$P" --sources 1 --builders 1 --sinks 1 --mtu 1500
SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0) SNS=$(tb_ns sink 0)
BADDR=$(tb_addr builder 0) SADDR=$(tb_addr sink 0) SRCADDR=$(tb_addr source 0)
BDEV=eth1
direct_link "$SRCNS" "$BNS" 1500
for CASE in $CASES; do
	case $CASE in
	l1) NSRC=126 PACK=25 FRAG=32 ;;
	hlt) NSRC=323 PACK=10 FRAG=100 ;;
	*) echo "unknown case $CASE (l1, hlt)" >&2; exit 2 ;;
	esac
	echo "case $CASE: $NSRC sources, $PACK x $FRAG B fragments a packet; search: unpaced + $STEPS steps; $RUNS x ${SECS}s a point"
	for ((round = 1; round <= RUNS; round++)); do
		declare -A LF=()
		for mode in $MODES; do
			search "$mode" "$round"
			LF[$mode]=$(lossfree_of "$CASE" "$mode" "$round")
		done
		for load in $LOADS; do
			for mode in $MODES; do
				if [[ $load == unpaced ]]; then
					rate=0
				elif ((LF[$mode] > 0)); then
					rate=$(python3 -c "print('%.3f' % ($load * ${LF[$mode]}))")
				else
					continue   # no loss-free rate: only the unpaced point
				fi
				run_point "$mode" "$load" "$rate" "$round" point "$POINTS" || true
			done
		done
		unset LF
	done
done
bench_tb_down "$P"

model_text() {
	if [[ $MODEL == gateway ]]; then
		echo -n "its veth in threaded NAPI mode with the napi thread on CPU 1 (gateway)"
	else
		echo -n "default NAPI: receive work (XDP, the copy into the UMEM) on the sender's core (split)"
	fi
	[[ $GEN == xsk ]] && echo -n "; generator: AF_XDP TX (xevb source --mode xsk), held by veth's back-pressure (pfifo qdisc)"
	echo
}

rc=0
python3 "$HELP" report "$POINTS" "$SEARCHES" "$OUT/bench" rounds="$RUNS" seconds_per_point="$SECS" \
	bisection_steps="$STEPS" search_retries="$RETRY" loss_tolerance="$TOL" loads="\"$LOADS\"" total_seconds="$((SECONDS - t0))" \
	model="\"direct veth pair, generator ($GEN) on CPU 0; builder on CPU 1; $(model_text); forwarding over TCP to one xevb sink on CPU 0; builder with the shipped defaults\"" ||
	rc=$?
"$PY" scripts/bench/plots.py "$OUT/bench" overload || true
echo "bench-overload: $((SECONDS - t0)) s"
exit $rc

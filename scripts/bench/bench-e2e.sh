#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# End-to-end benchmark: `xevb source --mode live` (generator, CPU 0) sends
# as fast as it can to `xevb build` (CPU 1): builder in XDP mode, in socket
# mode (raw IPv4, recvmmsg) and bare (`--tune bare=1`: AF_XDP receive and release,
# nothing built: the receive ceiling), one after the other, same traffic:
#   l1:  126 sources, 25 x 32 B fragments a packet (1150-byte frames), MTU 1500
#   big: 126 sources, 10 x 320 B fragments a packet (3370-byte frames); MTU
#        3500, not 9000: an XDP program that is not frags-aware cannot be
#        attached to a veth whose peer's MTU exceeds about 3.5 kB.
# Two models: gateway (the builder's veth in threaded NAPI mode, its napi
# thread pinned to CPU 1: all receive work on the builder's core) and split
# (default NAPI: receive work runs on the sender's core, CPU 0). Build-only
# (--no-forward) and forwarding over TCP to one `xevb sink` (on CPU 0; the
# generator is niced then, see run_one).
#
# Two paths. bridge: source veth -> bridge -> builder veth (the testbed). A
# veth drops its peer's XDP_TX frames unless it runs XDP, so the source's
# switch port carries an XDP_PASS program (xevb_pass.bpf.o); the bridge then
# forwards skbs, and the generator's core (which also runs that bridge work)
# limits the offered rate to about 0.5 Mpps. direct: a second veth pair
# source eth1 <-> builder eth1, xdp_frames straight into the builder's veth:
# several Mpps offered, enough to overload the builder's core. In socket
# mode the builder's veth runs XDP_PASS too: without XDP (or GRO) a veth has
# no NAPI, its receive work cannot move to a thread, and the XDP_TX frames
# of the direct path would be dropped; a socket builder that sheds (the
# default) attaches its own program in pass mode instead.
#
# Each point: BENCH_RUNS runs (3; 1 with BENCH_QUICK=1) of BENCH_SECONDS (3;
# 1.5 quick), medians. Writes $OUT/bench/e2e.json and prints a table.
# CPU: our tasks' run time (generator, builder, napi thread, sink,
# ksoftirqd/0-1) per frame received; /proc/stat busy time of both cores per
# frame as well ("stat ns": counts whatever else the machine runs).
# Subsets: BENCH_CASES="l1 big" (or "small": 4 x 32 B MEPs, 192 B), BENCH_MODELS="gateway split", BENCH_PATHS=
# "bridge direct"; BENCH_BUILDER_NICE (0) for the builder; BENCH_KEEP=1 keeps
# the per-run files (the temporary directory is printed); BENCH_PERF=DIR
# records `perf record -e cpu-clock -C 1 -g` of each run into DIR;
# BENCH_BUILD_ARGS adds options to every `xevb build` (tuning experiments).
# BENCH_SINK_RPS=1: the farm node's receive work (the switch, its TCP) on
# CPU 0 by RPS on the builder's switch port (sink_rps, lib_bench.sh), not
# inside the builder's sends on its core, as a real network would have it.
# drop: an XDP_DROP program on the builder's veth, no socket (the ceiling of
# the receive path; frames counted by the veth's rx_packets).
# BENCH_MODES ("drop bare xdp socket"), BENCH_FWD ("0 1"): subsets.
# BPF run-time statistics (kernel.bpf_stats_enabled) cost ~8% of the
# builder's core (two sched_clock reads around every XDP program run), so
# the throughput runs go without them; one calibration run
# (BENCH_CAL_SECONDS, 1 s; per case, model and mode, on the first of
# BENCH_PATHS) with statistics on gives xdp_prog_ns_per_packet.
# BENCH_BPF_STATS=1: statistics on during every run (the old way, no
# calibration run). A variant ARGS starting with stats=1 holds them during
# that variant's runs only (A/B of the measurement overhead).
# BENCH_INTERLEAVE=1: bare and xdp alternate run by run (bare 1, xdp 1,
# bare 2, ...) instead of all runs of one mode then the other: this VM's
# speed drifts by tens of % over minutes, and the XDP/bare ratio then also
# has a paired form (median of the per-run ratios, e2e.py).
# BENCH_VARIANTS="NAME:ARGS|NAME:ARGS" runs each mode of BENCH_VARIANT_MODES
# ("xdp") once per variant, ARGS added to `xevb build`, the variants of one
# run back to back (A/B in one run); results carry "variant". ARGS may
# start with bin=PATH: that xevb binary instead (A/B of code changes).
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start e2e "${1:-}"
bench_runs_secs 1.5 3
CASES=${BENCH_CASES:-l1 big}
MODELS=${BENCH_MODELS:-gateway split}
PATHS=${BENCH_PATHS:-bridge direct}
BUILDER_NICE=${BENCH_BUILDER_NICE:-0}
PASS=$ROOT/$OUT/bpf/xevb_pass.bpf.o
DROP=$ROOT/$OUT/bpf/xevb_drop.bpf.o
MODES=${BENCH_MODES:-drop bare xdp socket}
FWDS=${BENCH_FWD:-0 1}
VARIANT_MODES=${BENCH_VARIANT_MODES:-xdp}
BPF_STATS=${BENCH_BPF_STATS:-}
CAL_SECS=${BENCH_CAL_SECONDS:-1}
CAL_RUN=
declare -A CAL_DONE=()   # one calibration run per case, model and mode (the first path)
IFS='|' read -r -a VARIANTS <<<"${BENCH_VARIANTS:-}"
INTERLEAVE=${BENCH_INTERLEAVE:-}
IL_MODES=()
[[ ${#VARIANTS[@]} -gt 0 ]] || VARIANTS=(":")
HELP=$ROOT/scripts/bench/e2e.py
RESULTS=$W/results.jsonl
CAL=$W/calibration.jsonl
SINK_PORT=5000

# xevb build leaves a lock file (and, if killed, a stats file) per namespace
# in /run/xevb, named by the namespace's inode: ours go with our namespaces.
bench_testbed
bench_on_exit() { stats_off; }
bench_make "$OUT/xevb" "$OUT/bpf/xevb_pass.bpf.o" "$OUT/bpf/xevb_drop.bpf.o"

# BPF run-time statistics on (held by a helper process) or off again.
STATS_PID=
stats_on() {
	[[ -n $STATS_PID ]] && return 0
	python3 "$HELP" hold-stats >"$W/stats.on" &
	STATS_PID=$!
	wait_for "$W/stats.on" '^on' "$STATS_PID" && return 0
	echo "cannot enable BPF run-time statistics: no xdp_prog_ns_per_packet" >&2
	STATS_PID=
	return 1
}
stats_off() {
	[[ -n ${STATS_PID:-} ]] || return 0
	kill "$STATS_PID" 2>/dev/null || true
	wait "$STATS_PID" 2>/dev/null || true
	STATS_PID=
}
stats_held() { [[ -n $STATS_PID ]] && echo 1 || echo 0; }

: >"$RESULTS"
: >"$CAL"
[[ -n $BPF_STATS ]] && { stats_on || exit 1; }

# run_point CASE MODEL MODE FWD RUN: one run, its figures appended to RESULTS.
# PATH_NAME, BDEV (builder side), SRC_PATH_ARGS (source side) say which link.
run_point() {
	local rc=0 vstats=
	[[ ${7:-} == stats=1* && -z $BPF_STATS ]] && vstats=1
	[[ -n $vstats ]] && { stats_on || return 1; }
	run_one "$@" || rc=1
	stop_bg
	[[ -n $vstats ]] && stats_off
	return $rc
}

# run_variants CASE MODEL MODE FWD RUN: run_point once per variant of
# BENCH_VARIANTS if MODE is among BENCH_VARIANT_MODES (once otherwise),
# back to back.
run_variants() {
	local v variants=(":")
	[[ " $VARIANT_MODES " == *" $3 "* ]] && variants=("${VARIANTS[@]}")
	for v in "${variants[@]}"; do
		run_point "$@" "${v%%:*}" "${v#*:}" ||
			echo "  $PATH_NAME $1 $2 $3 ${v%%:*} fwd=$4 run $5: FAILED" >&2
	done
}

# Variant ARGS without the bench's own leading words (bin=PATH, stats=1).
strip_vargs() {
	local a=$1
	while [[ $a == bin=* || $a == stats=* ]]; do
		[[ $a == *" "* ]] && a=${a#* } || a=
	done
	echo "$a"
}

run_one() {
	local case=$1 model=$2 mode=$3 fwd=$4 run=$5 vname=${6:-} vargs=${7:-}
	local d=$W/$PATH_NAME-$1-$2-$3-$4-$5${vname:+-$vname}
	local bargs=() bpid spid="" napi=$SOCK_NAPI nice=0 xb=$X secs=$SECS res=$RESULTS
	# a variant "bin=PATH ARGS" runs another build of xevb (A/B of code)
	if [[ $vargs == bin=* ]]; then
		xb=${vargs%% *} && xb=${xb#bin=}
	fi
	vargs=$(strip_vargs "$vargs")
	[[ -n $CAL_RUN ]] && secs=$CAL_SECS res=$CAL
	mkdir -p "$d"
	[[ $mode == drop ]] && { run_drop "$@"; return; }
	case $mode in
	bare) bargs=(--tune bare=1) ;;
	xdp) bargs=() ;;
	socket) bargs=(--mode socket) ;;
	esac
	if [[ $fwd == 1 ]]; then
		rm -f "$d/ready"
		ip netns exec "$SNS" taskset -c 0 "$X" sink --listen "$SADDR:$SINK_PORT" --json \
			--stats-interval 0 --ready-file "$d/ready" >"$d/sink.json" 2>"$d/sink.err" &
		spid=$!
		BG_PIDS+=("$spid")
		wait_for "$d/ready" . "$spid" || { echo "sink did not start: $(tail -2 "$d/sink.err")" >&2; return 1; }
		bargs+=(--sink "$SADDR:$SINK_PORT")
		# The farm node shares CPU 0 with the generator: it goes first, or TCP
		# back-pressure from a starved sink, not the builder, sets the rate.
		nice=10
	elif [[ $mode != bare ]]; then
		bargs+=(--no-forward)
	fi
	napi_pids >"$d/napi0"
	ip netns exec "$BNS" taskset -c 1 nice -n "$BUILDER_NICE" "$xb" build --dev "$BDEV" --sources "0-$((NSRC - 1))" "${bargs[@]}" \
		${BUILD_TUNING[@]+"${BUILD_TUNING[@]}"} ${BENCH_BUILD_ARGS:-} $vargs --json --quiet --duration 60 >"$d/build.json" 2>"$d/build.err" &
	bpid=$!
	BG_PIDS+=("$bpid")
	if ! wait_for "$d/build.err" 'AF_XDP socket on|on a kernel socket' "$bpid"; then
		echo "builder did not start: $(tail -3 "$d/build.err")" >&2
		return 1
	fi
	if [[ $mode != socket || -n $SOCK_OWN_XDP ]]; then
		napi=$(set_model "$model" "$d/napi0" | head -1) || return 1
	fi
	if [[ $model == gateway && -z $napi ]]; then
		echo "no napi thread found for the builder's veth" >&2
		return 1
	fi
	local roles=(builder="$bpid" ksoftirqd0="$(ksoftirqd 0)" ksoftirqd1="$(ksoftirqd 1)")
	roles+=(prog="$(ip -n "$BNS" -j link show dev "$BDEV" | python3 -c '
import json, sys
print(json.load(sys.stdin)[0].get("xdp", {}).get("prog", {}).get("id", ""))')")
	[[ -n $napi ]] && roles+=(napi="$napi")
	[[ -n $spid ]] && roles+=(sink="$spid")
	roles+=(dev="$BNS/$BDEV")
	python3 "$HELP" snap "${roles[@]}" >"$d/s0"
	local perfpid=""
	if [[ -n ${BENCH_PERF:-} ]]; then
		# Where the builder's core goes: software clock samples of CPU 1, all tasks.
		mkdir -p "$BENCH_PERF"
		perf record -q -e cpu-clock -C 1 -g -o "$BENCH_PERF/$PATH_NAME-$case-$model-$mode-$fwd-$run${vname:+-$vname}.data" \
			-- sleep "$secs" >/dev/null 2>&1 &
		perfpid=$!
	fi
	ip netns exec "$SRCNS" taskset -c 0 nice -n "$nice" "$X" source --dest "$BADDR" "${SRC_PATH_ARGS[@]}" --mode "$GEN" \
		--source-ids "0-$((NSRC - 1))" --pack "$PACK" --frag-size "$FRAG" --duration "$secs" \
		--no-end-of-run ${BENCH_SOURCE_ARGS:-} --json --quiet >"$d/src.json" 2>"$d/src.err" || echo "source failed: $(tail -2 "$d/src.err")" >&2
	sleep 0.3 # the rings drain
	[[ -n $perfpid ]] && wait "$perfpid"
	python3 "$HELP" snap "${roles[@]}" >"$d/s1"
	kill -INT "$bpid" 2>/dev/null || true
	wait "$bpid" || echo "builder exit status $? ($case $model $mode fwd=$fwd): $(tail -2 "$d/build.err")" >&2
	if [[ -n $spid ]]; then
		sleep 0.5
		kill -INT "$spid" 2>/dev/null || true
		wait "$spid" || true
	fi
	BG_PIDS=()
	python3 "$HELP" run path="$PATH_NAME" case="$case" model="$model" mode="$mode" fwd="$fwd" pack="$PACK" nsrc="$NSRC" \
		s0="$d/s0" s1="$d/s1" src="$d/src.json" bld="$d/build.json" variant="$vname" bpf_stats="$(stats_held)" \
		sink="$([[ -n $spid ]] && echo "$d/sink.json")" >>"$res"
	print_run "$run" "$res"
}

# The last result line, one line on the terminal.
print_run() {
	python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
p = r.get("xdp_prog_ns_per_packet")
print("  %-6s %-4s %-7s %-6s fwd=%d run %s%s: %.3f Mfr/s (tx %.3f), loss %.2f%%, %s ns/frame, xdp prog %s ns/pkt%s%s" % (
    r["path"], r["case"], r["model"], r["mode"], r["forward"], sys.argv[2],
    " " + r["variant"] if r.get("variant") else "", r["frames_per_s"] / 1e6,
    r["tx_frames_per_s"] / 1e6, 100 * r["loss"],
    "%.0f" % r["cpu_ns_per_frame"] if r["cpu_ns_per_frame"] else "-",
    "%.0f" % p if p else "-", " (bpf stats on)" if r.get("bpf_stats") else "", "" if r["ok"] else "  FAILED"))' \
		"${2:-$RESULTS}" "$1"
}

# The XDP_DROP ceiling: the drop program is on BDEV already (main loop),
# SOCK_NAPI its napi thread; the generator as in run_one, no builder.
run_drop() {
	local case=$1 model=$2 mode=$3 fwd=$4 run=$5 vname=${6:-} d=$W/$PATH_NAME-$1-$2-$3-$4-$5${6:+-$6}
	local secs=$SECS res=$RESULTS
	[[ -n $CAL_RUN ]] && secs=$CAL_SECS res=$CAL
	local roles=(ksoftirqd0="$(ksoftirqd 0)" ksoftirqd1="$(ksoftirqd 1)")
	roles+=(prog="$(ip -n "$BNS" -j link show dev "$BDEV" | python3 -c '
import json, sys
print(json.load(sys.stdin)[0].get("xdp", {}).get("prog", {}).get("id", ""))')")
	[[ -n $SOCK_NAPI ]] && roles+=(napi="$SOCK_NAPI")
	roles+=(dev="$BNS/$BDEV")
	local perfpid=""
	python3 "$HELP" snap "${roles[@]}" >"$d/s0"
	if [[ -n ${BENCH_PERF:-} ]]; then
		mkdir -p "$BENCH_PERF"
		perf record -q -e cpu-clock -C 1 -g -o "$BENCH_PERF/$PATH_NAME-$case-$model-$mode-$fwd-$run${vname:+-$vname}.data" \
			-- sleep "$secs" >/dev/null 2>&1 &
		perfpid=$!
	fi
	ip netns exec "$SRCNS" taskset -c 0 "$X" source --dest "$BADDR" "${SRC_PATH_ARGS[@]}" --mode "$GEN" \
		--source-ids "0-$((NSRC - 1))" --pack "$PACK" --frag-size "$FRAG" --duration "$secs" \
		--no-end-of-run ${BENCH_SOURCE_ARGS:-} --json --quiet >"$d/src.json" 2>"$d/src.err" || echo "source failed: $(tail -2 "$d/src.err")" >&2
	sleep 0.3
	[[ -n $perfpid ]] && wait "$perfpid"
	python3 "$HELP" snap "${roles[@]}" >"$d/s1"
	python3 "$HELP" run path="$PATH_NAME" case="$case" model="$model" mode="$mode" fwd="$fwd" pack="$PACK" nsrc="$NSRC" \
		s0="$d/s0" s1="$d/s1" src="$d/src.json" bld=/dev/null variant="$vname" bpf_stats="$(stats_held)" sink= >>"$res"
	print_run "$run" "$res"
}

# The builder runs with the settings a user gets (its defaults: frame size
# from the MTU, window, timeout, frames, RX ring); BENCH_TUNING="ARGS" puts
# other settings before BENCH_BUILD_ARGS (e.g. the pre-eviction tuning
# "--timeout-ms 20 --window 65536 --tune frames=65536 --tune rx-ring=16384").
read -ra BUILD_TUNING <<<"${BENCH_TUNING:-}"
# The socket builder attaches its own XDP program (pass mode, it sheds) unless
# told not to: then its veth has NAPI per run, like the XDP builder's, and
# xevb_pass stays off it (the builder would not replace it and run unshed).
SOCK_OWN_XDP=
# shellcheck disable=SC2086
sock_builder_xdp "$X" ${BUILD_TUNING[@]+"${BUILD_TUNING[@]}"} ${BENCH_BUILD_ARGS:-} && SOCK_OWN_XDP=1
for case in $CASES; do
	case $case in
	l1) NSRC=126 PACK=25 FRAG=32 MTU=1500 ;;
	big) NSRC=126 PACK=10 FRAG=320 MTU=3500 ;;
	small) NSRC=126 PACK=4 FRAG=32 MTU=1500 ;;  # 192 B MEPs (issue 10: small frames)
	*) echo "unknown case $case" >&2; exit 2 ;;
	esac
	P="xevb$$e2e$case"
	tb_up --prefix "$P" --sources 1 --builders 1 --sinks 1 --mtu "$MTU"
	SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0) SNS=$(tb_ns sink 0)
	BADDR=$(tb_addr builder 0) SADDR=$(tb_addr sink 0)
	ip -n "$(tb_switch)" link set dev "$(tb_port source 0)" xdpdrv obj "$PASS" sec xdp
	[[ -z ${BENCH_SINK_RPS:-} ]] || sink_rps "bench-e2e: BENCH_SINK_RPS"
	# The direct path: a second veth pair, source eth1 <-> builder eth1, no address
	# on either end (the source sends from its eth0 address to the builder's).
	direct_link "$SRCNS" "$BNS" "$MTU"
	echo "case $case: $NSRC sources, $PACK x $FRAG B fragments a packet, MTU $MTU, $RUNS x ${SECS}s a point"
	for PATH_NAME in $PATHS; do
		if [[ $PATH_NAME == direct ]]; then
			BDEV=eth1 SRC_PATH_ARGS=(--dev eth1 --dst-mac "$DIRECT_DST_MAC" --src-addr "$(tb_addr source 0)")
		else
			BDEV=eth0 SRC_PATH_ARGS=(--dev eth0)
		fi
		for model in $MODELS; do
			SOCK_NAPI=
			for mode in $MODES; do
				if [[ $mode == drop || ($mode == socket && -z $SOCK_OWN_XDP) ]]; then
					napi_pids >"$W/napi-sock"
					ip -n "$BNS" link set dev "$BDEV" xdpdrv obj "$([[ $mode == drop ]] && echo "$DROP" || echo "$PASS")" sec xdp
					SOCK_NAPI=$(set_model "$model" "$W/napi-sock" | head -1)
				fi
				# The XDP program's cost: one short run with BPF statistics on.
				if [[ -z $BPF_STATS && -z ${CAL_DONE[$case-$model-$mode]:-} ]] && stats_on; then
					CAL_DONE[$case-$model-$mode]=1
					CAL_RUN=1
					run_point "$case" "$model" "$mode" 0 cal || echo "  $PATH_NAME $case $model $mode calibration run: FAILED" >&2
					CAL_RUN=
					stats_off
				fi
				if [[ -n $INTERLEAVE && ($mode == bare || $mode == xdp) ]]; then
					IL_MODES+=("$mode")   # run below, alternating with the other one
					continue
				fi
				for fwd in $FWDS; do
					[[ ($mode == bare || $mode == drop) && $fwd == 1 ]] && continue
					for ((run = 1; run <= RUNS; run++)); do
						run_variants "$case" "$model" "$mode" "$fwd" "$run"
					done
				done
				if [[ $mode == socket || $mode == drop ]]; then
					ip -n "$BNS" link set dev "$BDEV" xdpdrv off
					SOCK_NAPI=
				fi
			done
			# BENCH_INTERLEAVE: bare and xdp take turns run by run, so that
			# the machine's drift (minutes apart otherwise) hits both alike.
			if ((${#IL_MODES[@]})); then
				for fwd in $FWDS; do
					for ((run = 1; run <= RUNS; run++)); do
						for mode in "${IL_MODES[@]}"; do
							[[ $mode == bare && $fwd == 1 ]] && continue
							run_variants "$case" "$model" "$mode" "$fwd" "$run"
						done
					done
				done
				IL_MODES=()
			fi
		done
	done
	bench_tb_down "$P"
done

meta=$(SOCK_OWN_XDP=$SOCK_OWN_XDP python3 -c '
import json, os, sys
print(json.dumps({"kernel": os.uname().release, "loadavg_at_end": os.getloadavg()[0],
  "runs_per_point": int(sys.argv[1]), "seconds_per_run": float(sys.argv[2]),
  "bpf_stats_in_throughput_runs": sys.argv[3] == "1", "calibration_seconds": float(sys.argv[4]),
  "bare_xdp_interleaved": sys.argv[5] == "1",
  "path": "source veth -> bridge (XDP_PASS on the source switch port) -> builder veth",
  "cpus": {"generator": 0, "builder": 1, "napi_thread_gateway": 1, "sink": 0},
  "notes": ["cpu_ns_per_frame: run time of our tasks (generator incl. its in-context softirq, builder, napi thread, sink, ksoftirqd/0-1) per frame received",
            "cpu_ns_per_frame_rx_side: the same without the generator process (in the split model the receive work runs inside the generator and is left out)",
            "cpu_ns_per_frame_procstat: /proc/stat busy time of cpu0+cpu1 per frame (includes other users of the machine)",
            "xdp_prog_ns_per_packet: BPF run-time statistics of the program on the builder veth, from one calibration run per case, model and mode (bpf_stats on; calibration[] holds those runs) unless bpf_stats_in_throughput_runs; every other figure comes from runs without statistics, which cost ~8% of the gateway core",
            "drop mode counts frames by the builder veth rx_packets (XDP_DROP frames included)",
            ("socket mode runs behind its own XDP program in pass mode (it sheds) on the builder veth" if os.environ.get("SOCK_OWN_XDP") else "socket mode runs with an XDP_PASS program on the builder veth (NAPI for threaded mode)"),
            "big case at MTU 3500: non-frags XDP programs cannot attach to a veth whose peer MTU is 9000"]}))' "$RUNS" "$SECS" "$([[ -n $BPF_STATS ]] && echo 1 || echo 0)" "$CAL_SECS" "$([[ -n $INTERLEAVE ]] && echo 1 || echo 0)")
rc=0
python3 "$HELP" report "$RESULTS" "$OUT/bench/e2e.json" "$meta" "$CAL" || rc=$?
"$PY" scripts/bench/plots.py "$OUT/bench" e2e || true
exit $rc

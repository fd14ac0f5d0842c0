# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Shared helpers of the observability tests (test_trace_*.sh,
# test_metrics.sh): a short live run on the testbed (2 source hosts with
# source ids 0-1 and 2-3, 1 builder, 1 sink) with a bpftrace script or a
# scraper attached to it. Source it after lib_e2e.sh is known:
#
#   . "$(dirname "$0")/lib_trace.sh"
#   trace_init TAG "$1"                       # e2e_init + tracefs + bpftrace check
#   trace_live NAME SECONDS [builder options] # sink + builder + paced sources
#   trace_flowing                             # until the builder builds
#   trace_attach SCRIPT SECONDS OUT           # scripts/trace/run.sh against it
#   trace_stop; ...checks...; e2e_finish      # the run stopped, statuses checked
#   (trace_through SCRIPT SECONDS OUT: trace_flowing, trace_attach, trace_stop)
#
# The builder's pid is $TRACE_BPID once trace_live returns.

. "$(dirname "${BASH_SOURCE[0]}")/lib_e2e.sh"

trace_init() {
	e2e_init "$1" "${2:-build}"
	if ! command -v bpftrace >/dev/null && [[ -z ${TRACE_NO_BPFTRACE:-} ]]; then
		echo "FAIL - bpftrace not installed (bash scripts/install-deps.sh)"
		exit 1
	fi
	if [[ ! -e /sys/kernel/tracing/events ]]; then
		mount -t tracefs nodev /sys/kernel/tracing || e2e_die "cannot mount tracefs"
	fi
	tb_up --sources 2 --builders 1 --sinks 1 || e2e_die "tb_up"
	E2E_DEST=$(tb_addr builder 0)
}

# trace_live NAME SECONDS [builder options] [-- source options]: a sink,
# the builder (expecting ids 0-3, forwarding to the sink) and two sources
# (ids 0-1 and 2-3 at TRACE_RATE events/s, default 20000), all running
# until trace_stop (SECONDS is kept for the callers' sake: every process is
# bounded by E2E_RUN). Source options after -- go to both; TRACE_SRC1_IDS
# replaces the second host's ids; TRACE_NOFWD=1: no sink, the builder
# builds and drops (--no-forward).
trace_live() {
	local name=$1
	shift 2
	local -a bopts=() sopts=()
	while (($#)); do
		[[ $1 == -- ]] && { shift; sopts=("$@"); break; }
		bopts+=("$1"); shift
	done
	TRACE_NAME=$name
	if [[ -n ${TRACE_NOFWD:-} ]]; then
		bopts+=(--no-forward)
	else
		e2e_sink 0 "$name.k"
		bopts+=(--sink "$(tb_addr sink 0):$E2E_PORT")
	fi
	# The two source processes start one after the other: on a loaded host
	# far enough apart to need a wide window (65536 ids: 3 s at 20k/s) and
	# timeout, or the late host's fragments are dropped late.
	e2e_builder 0 "$name.b" --sources 0-3 --duration "$E2E_RUN" --window 65536 --timeout-ms 5000 "${bopts[@]}"
	TRACE_BPID=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "$name: no builder process under $E2E_LAST_PID"
	e2e_source 0 "$name.s0" --source-ids 0-1 --rate "${TRACE_RATE:-20000}" \
		--duration "$E2E_RUN" --pack 10 --frag-size 32-120 --seed 3 "${sopts[@]}"
	e2e_source 1 "$name.s1" --source-ids "${TRACE_SRC1_IDS:-2-3}" --rate "${TRACE_RATE:-20000}" \
		--duration "$E2E_RUN" --pack 10 --frag-size 32-120 --seed 4 "${sopts[@]}"
}

# trace_flowing: the live run's builder has built events (traffic flows).
trace_flowing() {
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0' ||
		e2e_fail "$TRACE_NAME: the builder built nothing in $E2E_WAIT s"
}

# trace_stop: the end of trace_live's run: the sources stopped, then the
# builder once they have ended, then the sink once it has read all; every
# exit status checked.
trace_stop() {
	local n
	e2e_stop "$TRACE_NAME.s0" "$TRACE_NAME.s1"
	for n in s0 s1; do e2e_wait_exit "$(e2e_pid "$TRACE_NAME.$n")" "$E2E_WAIT"; done
	e2e_stop "$TRACE_NAME.b"
	e2e_wait_exit "$(e2e_pid "$TRACE_NAME.b")" "$E2E_WAIT"
	e2e_stop_sinks
	e2e_wait_all
}

# trace_through SCRIPT SECONDS OUT [ARGS]: once the live run's traffic
# flows, the script attached for SECONDS (trace_attach), then the run ended
# (trace_stop, every exit status checked).
trace_through() {
	trace_flowing
	trace_attach "$@"
	trace_stop
}

# _trace_bt PID: the bpftrace process among PID's descendants (run.sh's).
_trace_bt() {
	local level=("$1") next c p depth
	for ((depth = 0; depth < 4; depth++)); do
		next=()
		for p in "${level[@]}"; do
			for c in $(pgrep -P "$p"); do
				[[ $(cat "/proc/$c/comm" 2>/dev/null) == bpftrace ]] && { echo "$c"; return 0; }
				next+=("$c")
			done
		done
		level=("${next[@]}")
	done
	return 1
}

# _trace_running PID: run.sh's bpftrace has its programs loaded and attached
# and waits in its event loop (epoll on its output buffers): the window
# starts. (Loading alone can take many seconds on a loaded host, and a
# program is loaded long before the last probe is attached.)
_trace_running() {
	local bt
	bt=$(_trace_bt "$1") || return 1
	ls -l "/proc/$bt/fd" 2>/dev/null | grep -q 'anon_inode:bpf-prog' && grep -q epoll "/proc/$bt/wchan" 2>/dev/null
}

# trace_attach SCRIPT SECONDS OUT [ARGS]: the script against the builder
# ($TRACE_BPID) for SECONDS from the moment its probes are in (starting
# bpftrace, compiling, loading and attaching, takes seconds on a slow host:
# not part of the window), then SIGINT (bpftrace prints its totals). TRACE_ON_ATTACH: a
# command run as the window opens. Bounded: E2E_WAIT for the start.
trace_attach() {
	local script=$1 secs=$2 out=$3 rc pid bt try
	shift 3
	for try in 1 2; do
		timeout $((secs + E2E_WAIT + 30)) bash scripts/trace/run.sh "$script" "$TRACE_BPID" $((secs + E2E_WAIT)) "$@" \
			>"$out" 2>"$out.err" &
		pid=$!
		if e2e_until "$E2E_WAIT" _trace_running "$pid"; then
			[[ -n ${TRACE_ON_ATTACH:-} ]] && $TRACE_ON_ATTACH
			sleep "$secs"   # the window traced, not a wait for anything
			bt=$(_trace_bt "$pid") && kill -INT "$bt"
		fi
		wait "$pid"
		rc=$?
		# bpftrace itself, now and then, cannot read back the stacks it
		# took (its stack map lookups fail, EBADF): once more, said.
		((rc != 0 && try == 1)) && grep -q "failed to look up stack id" "$out.err" || break
		echo "# $script: bpftrace could not read its stack map back ($(grep -c 'failed to look up stack id' "$out.err") lookups failed): attached once more"
	done
	if ((rc != 0)); then
		e2e_fail "$script: run.sh exit status $rc"
		sed 's/^/  | /' "$out.err" | tail -20
		return 1
	fi
	e2e_ok "$script: attached for ${secs}s, $(wc -l <"$out") lines of output"
}

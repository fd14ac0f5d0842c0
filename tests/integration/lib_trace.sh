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
#   trace_attach SCRIPT SECONDS OUT           # scripts/trace/run.sh against it
#   e2e_wait_all; ...checks...; e2e_finish
#   (trace_through SCRIPT SECONDS OUT: sleep 1, trace_attach, e2e_wait_all)
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
# the builder (expecting ids 0-3, forwarding to the sink, stopping after
# SECONDS) and two sources (ids 0-1 and 2-3 at TRACE_RATE events/s,
# default 20000, for SECONDS-2 s). Source options after -- go to both;
# TRACE_SRC1_IDS replaces the second host's ids; TRACE_NOFWD=1: no sink,
# the builder builds and drops (--no-forward).
trace_live() {
	local name=$1 secs=$2
	shift 2
	local -a bopts=() sopts=()
	while (($#)); do
		[[ $1 == -- ]] && { shift; sopts=("$@"); break; }
		bopts+=("$1"); shift
	done
	if [[ -n ${TRACE_NOFWD:-} ]]; then
		bopts+=(--no-forward)
	else
		e2e_sink 0 "$name.k" --duration $((secs + 4))
		bopts+=(--sink "$(tb_addr sink 0):$E2E_PORT")
	fi
	e2e_builder 0 "$name.b" --sources 0-3 --duration "$secs" "${bopts[@]}"
	TRACE_BPID=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "$name: no builder process under $E2E_LAST_PID"
	e2e_source 0 "$name.s0" --source-ids 0-1 --rate "${TRACE_RATE:-20000}" \
		--duration $((secs - 2)) --pack 10 --frag-size 32-120 --seed 3 "${sopts[@]}"
	e2e_source 1 "$name.s1" --source-ids "${TRACE_SRC1_IDS:-2-3}" --rate "${TRACE_RATE:-20000}" \
		--duration $((secs - 2)) --pack 10 --frag-size 32-120 --seed 4 "${sopts[@]}"
}

# trace_through SCRIPT SECONDS OUT [ARGS]: 1 s into the live run, the script
# attached for SECONDS (trace_attach), then the end of the run awaited
# (e2e_wait_all, every exit status checked).
trace_through() {
	sleep 1
	trace_attach "$@"
	e2e_wait_all
}

# trace_attach SCRIPT SECONDS OUT [ARGS]: the script against the builder, bounded.
trace_attach() {
	local script=$1 secs=$2 out=$3 rc
	shift 3
	timeout $((secs + 30)) bash scripts/trace/run.sh "$script" "$TRACE_BPID" "$secs" "$@" \
		>"$out" 2>"$out.err"
	rc=$?
	if ((rc != 0)); then
		e2e_fail "$script: run.sh exit status $rc"
		sed 's/^/  | /' "$out.err" | tail -20
		return 1
	fi
	e2e_ok "$script: attached for ${secs}s, $(wc -l <"$out") lines of output"
}

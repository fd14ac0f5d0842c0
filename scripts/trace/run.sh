#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs one of the bpftrace scripts here against a running builder (or,
# for dfm.bt, a running data-flow manager):
#
#   scripts/trace/run.sh NAME [PID] [SECONDS] [SCRIPT ARGS...]
#
# NAME: build-latency, drops, xdp-verdicts, syscalls, cpu-profile, shed, dfm (the
# .bt files beside this one). PID: the `xevb build` process (default: the
# newest one on the machine, any namespace; `xevb dfm` for NAME dfm).
# SECONDS: stop after that long
# (default: at Ctrl-C). SCRIPT ARGS follow the PID as $2... (xdp-verdicts:
# an XDP program id to watch). cpu-profile's output is folded for a flame graph
# ("who;frame;frame... count" lines); the others print as they are.
# Mounts tracefs at /sys/kernel/tracing if nothing is there (the xdp and
# syscall tracepoints need it). Root only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=${1:-}
pid=${2:-}
secs=${3:-0}
shift $(($# < 3 ? $# : 3))
extra=("$@")
if [[ -z $name || ! -r $here/$name.bt ]]; then
	echo "usage: $0 NAME [PID] [SECONDS]; NAME one of:" $(cd "$here" && ls ./*.bt | sed 's|./||; s|\.bt$||') >&2
	exit 2
fi
command -v bpftrace >/dev/null || { echo "run.sh: bpftrace not installed (scripts/install-deps.sh)" >&2; exit 1; }
if [[ -z $pid ]]; then
	want=build
	[[ $name == dfm ]] && want=dfm
	# The newest process whose command is `xevb build ...` (not the sink, not a wrapper).
	for p in $(pgrep -x xevb | sort -n); do
		[[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | awk '{ print $2 }') == "$want" ]] && pid=$p
	done
	[[ -n $pid ]] || { echo "run.sh: no 'xevb $want' process running; give its PID" >&2; exit 1; }
fi
[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || { echo "run.sh: no process $pid" >&2; exit 1; }
[[ $secs =~ ^[0-9]+$ ]] || { echo "run.sh: SECONDS '$secs' is not a number" >&2; exit 2; }
if [[ ! -e /sys/kernel/tracing/events ]]; then
	mount -t tracefs nodev /sys/kernel/tracing ||
		{ echo "run.sh: tracefs is not mounted and mounting it failed" >&2; exit 1; }
fi

run() {
	# bpftrace prints its summary on SIGINT: that is how a bounded run ends.
	# Its RLIMIT_MEMLOCK complaint is harmless here (memcg accounting).
	if ((secs > 0)); then
		# timeout(1) says 124 when it had to send the INT: that is the plan.
		timeout -s INT -k 10 "$secs" bpftrace -p "$pid" "$here/$name.bt" "$pid" "${extra[@]}" || (($? == 124))
	else
		bpftrace -p "$pid" "$here/$name.bt" "$pid" "${extra[@]}"
	fi 2> >(grep -v 'RLIMIT_MEMLOCK' >&2)
}

if [[ $name == cpu-profile ]]; then
	run | python3 "$here/fold-stacks.py" -
else
	run
fi

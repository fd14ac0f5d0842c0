#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Verifier cost and code size of every program in a BPF object: loads it
# with bpftool into a temporary bpffs directory (removed on exit) and prints
# per program: instructions processed, total/peak states, stack depth,
# verification time, xlated and jited size.
#
# The verifier only reports its statistics with the log on, and bpftool -d
# asks for the full instruction log (levels 1+2+4), which slows verification
# itself down many times: that time is printed as logged, next to the wall
# time of a plain load without log (parsing, maps, BTF, verification, JIT).
#
# usage: scripts/verifier-stats.sh [OBJECT]   (default build/bpf/xevb_steer.bpf.o; root)
set -euo pipefail
OBJ=${1:-build/bpf/xevb_steer.bpf.o}
cd "$(dirname "$0")/.."

die() { echo "verifier-stats: $*" >&2; exit 2; }
[[ -f $OBJ ]] || die "$OBJ not found (run make)"
((EUID == 0)) || die "loading BPF programs needs root"
command -v bpftool >/dev/null || die "bpftool not found"

mnt=""
if [[ $(stat -f -c %T /sys/fs/bpf 2>/dev/null) == bpf_fs ]]; then
	pin=/sys/fs/bpf/xevb-vs-$$-$RANDOM
	mkdir "$pin"
else
	# No bpffs mounted: a private one, gone with the script.
	mnt=$(mktemp -d)
	mount -t bpf bpf "$mnt" || die "cannot mount a bpffs"
	pin=$mnt/xevb-vs
	mkdir "$pin"
fi
cleanup() {
	rm -rf "$pin"
	if [[ -n $mnt ]]; then umount "$mnt" && rmdir "$mnt"; fi
}
trap cleanup EXIT

echo "verifier-stats: $OBJ (kernel $(uname -r), $(bpftool version | head -1))"

# 1. A plain load: wall time and the sizes the kernel reports.
mkdir "$pin/plain"
t0=$(date +%s%N)
bpftool prog loadall "$OBJ" "$pin/plain" || die "bpftool prog loadall failed (run bpftool -d prog loadall $OBJ DIR for the log)"
t1=$(date +%s%N)
load_ms=$(( (t1 - t0) / 1000000 ))
declare -A xlated jited
for p in "$pin/plain"/*; do
	line=$(bpftool prog show pinned "$p")
	name=$(sed -n 's/.* name \([^ ]*\) .*/\1/p' <<<"$line" | head -1)
	xlated[$name]=$(sed -n 's/.*xlated \([0-9]*\)B.*/\1/p' <<<"$line")
	jited[$name]=$(sed -n 's/.*jited \([0-9]*\)B.*/\1/p' <<<"$line")
done
rm -rf "$pin/plain"

# 2. With the verifier log: its statistics. The log runs to 100+ MB: filter it as it streams.
mkdir "$pin/dbg"
stats=$(bpftool -d prog loadall "$OBJ" "$pin/dbg" 2>&1 | awk '
	/^libbpf: prog .*: -- BEGIN PROG LOAD LOG --/ { split($0, a, "\047"); prog = a[2] }
	/^verification time / { vt[prog] = $3 }
	/^stack depth / { sd[prog] = $3 }
	/^processed [0-9]+ insns/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "processed") ins[prog] = $(i + 1)
			if ($i == "total_states") ts[prog] = $(i + 1)
			if ($i == "peak_states") ps[prog] = $(i + 1)
			if ($i == "max_states_per_insn") ms[prog] = $(i + 1)
		}
		order[++n] = prog
	}
	/^Error:/ || /failed to load/ { err = err $0 "\n" }
	END {
		for (k = 1; k <= n; k++) {
			p = order[k]
			printf "%s %s %s %s %s %s %s\n", p, ins[p], ts[p], ps[p], ms[p], sd[p], vt[p]
		}
		if (err != "") printf "ERR %s", err
	}') || true
[[ -n $stats ]] || die "no verifier statistics in the bpftool -d output"
if grep -q '^ERR' <<<"$stats"; then
	die "load with verifier log failed: $(sed -n 's/^ERR //p' <<<"$stats")"
fi

while read -r name insns total peak maxst stack vtime; do
	printf '%s:\n' "$name"
	printf '  insns processed      %s (limit 1000000)\n' "$insns"
	printf '  total_states         %s\n' "$total"
	printf '  peak_states          %s\n' "$peak"
	printf '  max_states_per_insn  %s\n' "$maxst"
	printf '  stack depth          %s B\n' "$stack"
	printf '  verification time    %s us (with the full instruction log, level 1+2+4)\n' "$vtime"
	printf '  xlated               %s B\n' "${xlated[$name]:-?}"
	printf '  jited                %s B\n' "${jited[$name]:-?}"
done <<<"$stats"
printf 'whole object, plain load (no log): %d ms wall\n' "$load_ms"

# bpftool loads with the object's constants as built (no meta, no frags):
# the steering program's other variants, as xevb build loads them.
LOAD_COST=$(dirname "$OBJ")/../bench/steer_load_cost
if [[ $(basename "$OBJ") == xevb_steer.bpf.o && -x $LOAD_COST ]]; then
	echo "every variant xevb build loads (the budget: scripts/verifier-budget.sh):"
	"$LOAD_COST" --runs 3
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Bounded fuzzing: runs every OUT/fuzz/fuzz_* libFuzzer harness for SECONDS
# each, seeded from the wire-format vectors (tests/vectors/*.hex as binary),
# the harness's past regressions and tests/fuzz/seeds/<harness>/ if present.
# The corpus each harness grows is kept in OUT/fuzz-corpus/<harness>/.
# A crash is copied to tests/fuzz/regressions/<harness>/ (replayed by the
# unit tests) and makes the script exit non-zero.
#
# usage: scripts/fuzz-run.sh [OUT [SECONDS]]    env: FUZZ_MAX_LEN (9216)
set -uo pipefail
OUT=${1:-build}
SECS=${2:-60}
MAX_LEN=${FUZZ_MAX_LEN:-9216}   # a 9000-byte-MTU frame and then some
cd "$(dirname "$0")/.."

die() { echo "fuzz-run: $*" >&2; exit 2; }
[[ $SECS =~ ^[0-9]+$ ]] && ((SECS > 0)) || die "SECONDS must be a positive integer, got '$SECS'"
command -v xxd >/dev/null || die "xxd is needed to turn the .hex vectors into seeds"

# Up to date harnesses (a no-op after `make fuzz`): run-tests.sh calls us after `make all`.
make --no-print-directory -s OUT="$OUT" fuzz || die "make fuzz failed"

shopt -s nullglob
harnesses=()
for b in "$OUT"/fuzz/fuzz_*; do
	[[ -f $b && -x $b ]] && harnesses+=("$b")
done
((${#harnesses[@]})) || die "no harness in $OUT/fuzz (tests/fuzz/fuzz_*.c)"

seeds="$OUT/fuzz-corpus/.vector-seeds"
rm -rf "$seeds" && mkdir -p "$seeds" || die "cannot create $seeds"
nseeds=0
for h in tests/vectors/*.hex; do
	xxd -r -p "$h" "$seeds/$(basename "$h" .hex)" || die "bad hex in $h"
	nseeds=$((nseeds + 1))
done

status=0
total_execs=0
for bin in "${harnesses[@]}"; do
	name=$(basename "$bin")
	corpus="$OUT/fuzz-corpus/$name"
	art=$(mktemp -d)
	log="$OUT/fuzz-corpus/$name.log"
	mkdir -p "$corpus"
	dirs=("$corpus" "$seeds")
	[[ -d tests/fuzz/regressions/$name ]] && dirs+=("tests/fuzz/regressions/$name")
	[[ -d tests/fuzz/seeds/$name ]] && dirs+=("tests/fuzz/seeds/$name")

	echo "fuzz-run: $name for ${SECS}s ($nseeds vector seeds, corpus $corpus)"
	# timeout: a hung harness must not hang the suite.
	timeout -k 10 $((SECS + 120)) "$bin" -max_total_time="$SECS" -timeout=10 \
		-max_len="$MAX_LEN" -print_final_stats=1 -artifact_prefix="$art/" \
		"${dirs[@]}" >"$log" 2>&1
	rc=$?

	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
	[[ -n $execs ]] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
	execs=${execs:-0}
	total_execs=$((total_execs + execs))
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	ncorp=$(find "$corpus" -type f | wc -l)
	echo "fuzz-run: $name: $execs executions in ${SECS}s, ${cov:-cov: ?}, corpus $ncorp files (rc $rc)"

	found=0
	for a in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
		mkdir -p "tests/fuzz/regressions/$name"
		cp "$a" "tests/fuzz/regressions/$name/"
		echo "fuzz-run: $name: FOUND $(basename "$a") -> tests/fuzz/regressions/$name/$(basename "$a")"
		found=1
	done
	if ((found || rc != 0)); then
		status=1
		echo "fuzz-run: $name failed; the end of its log ($log):"
		grep -v -E '^#[0-9]+' "$log" | tail -40
	fi
	rm -rf "$art"
done

echo "fuzz-run: ${#harnesses[@]} harness(es), $total_execs executions in total"
exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs every test suite (unit, BPF_PROG_RUN, bounded fuzzing, integration)
# and ends with one summary line: "tests: N passed, N failed".
set -uo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/.."

passed=0
failed=0
failed_names=()
skipped_names=()

# Criterion prints "Synthesis: Tested: N | Passing: N | Failing: N | Crashing: N"
run_criterion() {
	local name=$1; shift
	local log
	log=$(mktemp)
	echo "=== $name"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	local line p f c
	line=$(grep 'Synthesis:' "$log" | tail -1)
	p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
	f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
	c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
	rm -f "$log"
	if [[ -z $p ]]; then
		failed=$((failed + 1)); failed_names+=("$name (no result, rc $rc)")
		return
	fi
	passed=$((passed + p))
	failed=$((failed + f + c))
	if ((rc != 0 || f + c > 0)); then failed_names+=("$name"); fi
	if ((rc != 0 && f + c == 0)); then failed=$((failed + 1)); fi
}

# A script test passes when it exits 0; 77 (automake's convention) is a
# skip: something it needs is not installed, and it said what.
run_script() {
	local name=$1 rc; shift
	echo "=== $name"
	"$@"
	rc=$?
	if ((rc == 0)); then
		passed=$((passed + 1))
		echo "--- PASS $name"
	elif ((rc == 77)); then
		skipped_names+=("$name")
		echo "--- SKIP $name"
	else
		failed=$((failed + 1)); failed_names+=("$name")
		echo "--- FAIL $name"
	fi
}

run_criterion unit "$OUT/tests/test_unit"
run_criterion bpf "$OUT/tests/test_bpf"

if [[ -x scripts/fuzz-run.sh ]]; then
	run_script fuzz-bounded bash scripts/fuzz-run.sh "$OUT" "${FUZZ_SECONDS:-30}"
fi

for t in tests/integration/test_*.sh; do
	[[ -e $t ]] || continue
	run_script "$(basename "$t" .sh)" bash "$t" "$OUT"
done

echo
if ((${#failed_names[@]})); then
	echo "failed suites: ${failed_names[*]}"
fi
if ((${#skipped_names[@]})); then
	echo "skipped suites: ${skipped_names[*]}"
fi
echo "tests: $passed passed, $failed failed"
((failed == 0))

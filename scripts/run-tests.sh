#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the test suites (unit, BPF_PROG_RUN, bounded fuzzing, integration)
# and ends with one summary line: "tests: N passed, N failed, N skipped".
#
#   scripts/run-tests.sh [OUT]            everything (make test)
#   TIER=quick scripts/run-tests.sh       the edit-test loop (make test-quick):
#                                         unit, BPF and the scripts tagged
#                                         "# tier: quick", no fuzzing
#   TESTS='dfm_* e2e_xdp' ...             only the integration scripts whose
#                                         names match (test_ prefix optional)
#   SUITES='unit bpf' ...                 only these suites (unit bpf fuzz
#                                         integration)
#
# An integration script passes with exit 0, is skipped with exit 77 (a
# feature this machine lacks; its "SKIP ..." line gives the reason) and
# fails otherwise. The scripts' tags: "# tier: quick" (seconds, one per
# area), none (the full run), "# tier: slow" (only in the full run, listed
# last so a failure elsewhere shows first).
set -uo pipefail
OUT=${1:-build}
TIER=${TIER:-full}
TESTS=${TESTS:-}
cd "$(dirname "$0")/.."

case $TIER in
quick) SUITES=${SUITES:-unit bpf integration} ;;
full) SUITES=${SUITES:-unit bpf fuzz integration} ;;
*) echo "run-tests: TIER=$TIER: use quick or full" >&2; exit 2 ;;
esac

passed=0
failed=0
skipped=0
failed_names=()
skipped_names=()
times=()

want_suite() { [[ " $SUITES " == *" $1 "* ]]; }

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

# A script test passes when it exits 0 and is skipped when it exits 77.
run_script() {
	local name=$1; shift
	local log rc t0 el why
	log=$(mktemp)
	echo "=== $name"
	t0=$(date +%s%N)
	# Not a pipe: a stray child holding the test's stdout must not hang us.
	"$@" > >(tee "$log") 2>&1
	rc=$?
	# $! is tee's pid where bash sets it for a process substitution.
	[[ -n ${!:-} ]] && wait "$!" 2>/dev/null
	el=$((($(date +%s%N) - t0) / 1000000))
	times+=("$el $name")
	if ((rc == 0)); then
		passed=$((passed + 1))
		echo "--- PASS $name"
	elif ((rc == 77)); then
		why=$(grep -m1 '^SKIP' "$log" | cut -c1-200)
		skipped=$((skipped + 1)); skipped_names+=("$name")
		echo "--- SKIP $name${why:+ ($why)}"
	else
		failed=$((failed + 1)); failed_names+=("$name")
		echo "--- FAIL $name"
	fi
	rm -f "$log"
}

tier_of() {
	local t
	t=$(sed -n '1,12s/^# tier: *\([a-z]*\).*/\1/p' "$1" | head -1)
	echo "${t:-full}"
}

# The integration scripts of this run, slow ones last.
pick_scripts() {
	local t n tier pat match rest=()
	for t in tests/integration/test_*.sh; do
		[[ -e $t ]] || continue
		n=$(basename "$t" .sh)
		if [[ -n $TESTS ]]; then
			match=
			for pat in $TESTS; do
				# shellcheck disable=SC2053
				[[ $n == test_$pat || $n == $pat ]] && match=1
			done
			[[ -n $match ]] || continue
		fi
		tier=$(tier_of "$t")
		# A named subset runs whatever its tier.
		if [[ -z $TESTS && $TIER == quick && $tier != quick ]]; then
			continue
		fi
		if [[ $tier == slow ]]; then rest+=("$t"); else echo "$t"; fi
	done
	((${#rest[@]})) && printf '%s\n' "${rest[@]}"
	return 0
}

want_suite unit && run_criterion unit "$OUT/tests/test_unit"
want_suite bpf && run_criterion bpf "$OUT/tests/test_bpf"

if want_suite fuzz && [[ -x scripts/fuzz-run.sh ]]; then
	run_script fuzz-bounded bash scripts/fuzz-run.sh "$OUT" "${FUZZ_SECONDS:-20}"
fi

if want_suite integration; then
	mapfile -t scripts < <(pick_scripts)
	if [[ -n $TESTS && ${#scripts[@]} -eq 0 ]]; then
		echo "run-tests: TESTS='$TESTS' matches no script in tests/integration" >&2
		failed=$((failed + 1)); failed_names+=("TESTS='$TESTS'")
	fi
	for t in "${scripts[@]}"; do
		run_script "$(basename "$t" .sh)" bash "$t" "$OUT"
	done
fi

echo
if ((${#times[@]})); then
	echo "slowest: $(printf '%s\n' "${times[@]}" | sort -rn | head -5 |
		awk '{printf "%s%s %.1fs", (NR > 1 ? ", " : ""), $2, $1 / 1000}')"
fi
if ((${#skipped_names[@]})); then
	echo "skipped suites: ${skipped_names[*]}"
fi
if ((${#failed_names[@]})); then
	echo "failed suites: ${failed_names[*]}"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped ($TIER tier)"
((failed == 0))

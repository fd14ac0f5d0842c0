#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the test suites (unit, BPF_PROG_RUN, bounded fuzzing, integration,
# style, python) and ends with one summary line: "tests: N passed, N failed, N skipped".
#
#   scripts/run-tests.sh [OUT]            everything (make test)
#   TIER=check scripts/run-tests.sh       the edit-test loop (make check):
#                                         unit (the parser on every wire-format
#                                         vector among them), BPF (every vector
#                                         through the XDP program), the XDP
#                                         program's load budget (verifier:
#                                         scripts/verifier-budget.sh), style, and
#                                         the scripts tagged "# tier: check":
#                                         one per area, among them the vectors
#                                         through the dissector and a short end
#                                         to end; no fuzzing. TIER=quick: the same
#   TESTS='dfm_* e2e_xdp' ...             a subset (make test T=...), each word
#                                         one of: a suite name (unit bpf
#                                         verifier fuzz integration style
#                                         python), a Criterion
#                                         filter with a slash ('builder/*': run
#                                         in test_unit and test_bpf), or an
#                                         integration script name (test_
#                                         prefix optional). Only the suites the
#                                         words name run, whatever the tier.
#   SUITES='unit bpf' ...                 only these suites
#   TEST_JOBS=1 ...                       one script at a time (default 2:
#                                         the scripts tagged "# parallel: yes"
#                                         run two at a time)
#   STYLE_CHECK=0 ...                     the style suite skipped (on by default)
#                                         against .clang-format (default 0:
#                                         listed and skipped until the tree is
#                                         formatted)
#
# An integration script passes with exit 0, is skipped with exit 77 (a
# feature this machine lacks; its "SKIP ..." line gives the reason) and
# fails otherwise. The scripts' tags, in their first 12 lines:
#   "# tier: check"   seconds, one per area: in make check and make test;
#   (none)            make test only;
#   "# tier: slow"    make test only, run last so a failure elsewhere shows
#                     first;
#   "# parallel: yes" safe beside another such script: its own namespaces
#                     (unique prefix), no fixed port or address outside them,
#                     nothing machine-wide it counts, no assertion a second
#                     test on the other core could break. These run first,
#                     TEST_JOBS at a time, each one's output kept in a file
#                     and printed whole when it ends; then the others, one
#                     at a time.
set -uo pipefail
OUT=${1:-build}
TIER=${TIER:-full}
TESTS=${TESTS:-}
TEST_JOBS=${TEST_JOBS:-2}
STYLE_CHECK=${STYLE_CHECK:-1}
cd "$(dirname "$0")/.." || exit 2

case $TIER in
quick | check) TIER=check; all_suites="unit bpf verifier style python integration" ;;
full) all_suites="unit bpf verifier fuzz style python integration" ;;
*) echo "run-tests: TIER=$TIER: use check or full" >&2; exit 2 ;;
esac
[[ $TEST_JOBS =~ ^[1-9][0-9]*$ ]] || { echo "run-tests: TEST_JOBS=$TEST_JOBS: give a count, 1 or more" >&2; exit 2; }
# The pool waits with `wait -n -p` (bash 5.1).
if ((TEST_JOBS > 1 && (BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1)))); then
	echo "run-tests: bash $BASH_VERSION has no wait -p (5.1): scripts run one at a time" >&2
	TEST_JOBS=1
fi

passed=0
failed=0
skipped=0
failed_names=()
skipped_names=()
times=()
# TESTS, split: suite names, Criterion filters, script name patterns.
pat_suites=()
pat_filters=()
pat_scripts=()

# Words, not globs: 'test*' must not turn into the tests directory.
read -r -a words <<<"$TESTS"
for pat in "${words[@]}"; do
	case $pat in
	unit | bpf | verifier | fuzz | integration | style | python) pat_suites+=("$pat") ;;
	*/*) pat_filters+=("$pat") ;;
	*) pat_scripts+=("$pat") ;;
	esac
done
if [[ -z ${SUITES:-} ]]; then
	SUITES=$all_suites
	if [[ -n $TESTS ]]; then
		SUITES="${pat_suites[*]}"
		((${#pat_filters[@]})) && SUITES+=" unit bpf"
		((${#pat_scripts[@]})) && SUITES+=" integration"
	fi
fi

want_suite() { [[ " $SUITES " == *" $1 "* ]]; }
# All of a suite, or only what TESTS picks in it: all when TESTS names it,
# or names nothing of its kind (SUITES='unit bpf' TESTS=e2e_xdp: unit whole).
suite_whole() {
	[[ " ${pat_suites[*]} " == *" $1 "* ]] && return 0
	case $1 in
	unit | bpf) ((${#pat_filters[@]} == 0)) ;;
	integration) ((${#pat_scripts[@]} == 0)) ;;
	*) return 0 ;;
	esac
}

# Criterion prints "Synthesis: Tested: N | Passing: N | Failing: N | Crashing: N";
# sets $tested to N.
run_criterion() {
	local name=$1; shift
	local log rc line t p f c
	log=$(mktemp)
	echo "=== $name"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep 'Synthesis:' "$log" | tail -1)
	rm -f "$log"
	t=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$line")
	p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
	f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
	c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
	tested=${t:-0}
	if [[ -z $p ]]; then
		failed=$((failed + 1)); failed_names+=("$name (no result, rc $rc)")
		return
	fi
	passed=$((passed + p))
	failed=$((failed + f + c))
	if ((rc != 0 || f + c > 0)); then failed_names+=("$name"); fi
	if ((rc != 0 && f + c == 0)); then failed=$((failed + 1)); fi
}

# run_criterion_suite NAME BINARY: the whole suite, or only TESTS' filters.
run_criterion_suite() {
	local name=$1 bin=$2 f
	if suite_whole "$name"; then
		run_criterion "$name" "$bin"
		return
	fi
	for f in "${pat_filters[@]}"; do
		run_criterion "$name $f" "$bin" --filter "$f"
		filter_hits[$f]=$((${filter_hits[$f]:-0} + tested))
	done
}

# record NAME RC LOG MS: count a script's verdict (0 pass, 77 skip, else fail).
record() {
	local name=$1 rc=$2 log=$3 ms=$4 why
	((rc == 77)) || times+=("$ms $name")
	if ((rc == 0)); then
		passed=$((passed + 1))
		echo "--- PASS $name ($(secs "$ms"))"
	elif ((rc == 77)); then
		why=$(grep -m1 '^SKIP' "$log" | cut -c1-200)
		skipped=$((skipped + 1)); skipped_names+=("$name")
		echo "--- SKIP $name${why:+ ($why)}"
	else
		failed=$((failed + 1)); failed_names+=("$name")
		echo "--- FAIL $name ($(secs "$ms"))"
	fi
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }
secs() { printf '%d.%ds' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# One script in the foreground, its output shown as it comes.
run_script() {
	local name=$1; shift
	local log rc t0
	log=$(mktemp)
	echo "=== $name"
	t0=$(now_ms)
	# Not a pipe: a stray child holding the test's stdout must not hang us.
	"$@" > >(tee "$log") 2>&1
	rc=$?
	# $! is tee's pid where bash sets it for a process substitution.
	[[ -n ${!:-} ]] && wait "$!" 2>/dev/null
	record "$name" "$rc" "$log" $(($(now_ms) - t0))
	rm -f "$log"
}

# Scripts running beside each other: pid -> name, log, start time.
declare -A job_name=() job_log=() job_t0=()

# The next script of the pool to end: its output whole, then its verdict.
reap_one() {
	local pid rc
	wait -n -p pid "${!job_name[@]}"
	rc=$?
	echo "=== ${job_name[$pid]} (beside others, output kept apart)"
	cat "${job_log[$pid]}"
	record "${job_name[$pid]}" "$rc" "${job_log[$pid]}" $(($(now_ms) - ${job_t0[$pid]}))
	rm -f "${job_log[$pid]}"
	unset "job_name[$pid]" "job_log[$pid]" "job_t0[$pid]"
}

# run_pool SCRIPT...: TEST_JOBS at a time, each with its output in a file.
run_pool() {
	local t pid log
	for t in "$@"; do
		while ((${#job_name[@]} >= TEST_JOBS)); do reap_one; done
		log=$(mktemp)
		# A background job starts with SIGINT ignored, and so would every
		# process the script starts (kill -INT would not stop them): undone.
		env --default-signal=SIGINT,SIGQUIT bash "$t" "$OUT" >"$log" 2>&1 </dev/null &
		pid=$!
		job_name[$pid]=$(basename "$t" .sh)
		job_log[$pid]=$log
		job_t0[$pid]=$(now_ms)
	done
	while ((${#job_name[@]})); do reap_one; done
}

# Interrupted: stop the scripts we started (each one's trap cleans up).
stop_pool() {
	local pid
	((${#job_name[@]})) && echo "run-tests: interrupted, stopping ${job_name[*]}" >&2
	for pid in "${!job_name[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${!job_name[@]}"; do wait "$pid" 2>/dev/null; rm -f "${job_log[$pid]}"; done
	exit "$1"
}
trap 'stop_pool 130' INT
trap 'stop_pool 143' TERM

tag_of() {
	sed -n "1,12s/^# $2: *\([a-z]*\).*/\1/p" "$1" | head -1
}

tier_of() {
	local t
	t=$(tag_of "$1" tier)
	[[ $t == quick ]] && t=check
	echo "${t:-full}"
}

# The integration scripts of this run, one per line: "parallel PATH" or
# "serial PATH", slow ones last.
pick_scripts() {
	local t n tier pat match mode rest=()
	for t in tests/integration/test_*.sh; do
		[[ -e $t ]] || continue
		n=$(basename "$t" .sh)
		if ! suite_whole integration; then
			match=
			for pat in "${pat_scripts[@]}"; do
				# shellcheck disable=SC2053
				[[ $n == test_$pat || $n == $pat ]] && match=1
			done
			[[ -n $match ]] || continue
		fi
		tier=$(tier_of "$t")
		# A named subset runs whatever its tier.
		if [[ -z $TESTS && $TIER == check && $tier != check ]]; then
			continue
		fi
		mode=serial
		[[ $(tag_of "$t" parallel) == yes ]] && ((TEST_JOBS > 1)) && mode=parallel
		if [[ $tier == slow ]]; then rest+=("$mode $t"); else echo "$mode $t"; fi
	done
	((${#rest[@]})) && printf '%s\n' "${rest[@]}"
	return 0
}

run_integration() {
	local line par=() ser=() t0 t
	while read -r line; do
		case $line in
		parallel\ *) par+=("${line#parallel }") ;;
		*) ser+=("${line#serial }") ;;
		esac
	done < <(pick_scripts)
	if ((${#par[@]} + ${#ser[@]} == 0)); then
		if [[ -n $TESTS ]]; then
			echo "run-tests: TESTS='$TESTS' matches no script in tests/integration" >&2
			failed=$((failed + 1)); failed_names+=("TESTS='$TESTS'")
		fi
		return
	fi
	t0=$(now_ms)
	((${#par[@]})) && run_pool "${par[@]}"
	for t in "${ser[@]}"; do
		run_script "$(basename "$t" .sh)" bash "$t" "$OUT"
	done
	echo "integration: $((${#par[@]} + ${#ser[@]})) scripts in $(secs $(($(now_ms) - t0))) wall," \
		"${#par[@]} of them $TEST_JOBS at a time"
}

# The house's rules that need no build: the layers of user/ (user/LAYERS),
# docs/benchmarks.md as its generator makes it
# and no function over 100 lines; then the C sources against .clang-format
# (STYLE_CHECK=0: that part skipped).
run_style() {
	local log
	run_script layers bash tests/style/test_layers.sh
	run_script bench-doc bash tests/style/test_bench_doc.sh
	run_script fn-length bash scripts/fn-length.sh 100
	if [[ $STYLE_CHECK != 1 ]]; then
		log=$(mktemp)
		echo "=== style"
		echo "SKIP style: off (STYLE_CHECK=0); make format-check runs it" |
			tee "$log"
		record style 77 "$log" 0
		rm -f "$log"
		return
	fi
	run_script style bash scripts/format.sh check
}

declare -A filter_hits=()
want_suite unit && run_criterion_suite unit "$OUT/tests/test_unit"
want_suite bpf && run_criterion_suite bpf "$OUT/tests/test_bpf"
for f in "${pat_filters[@]}"; do
	if ((${filter_hits[$f]:-0} == 0)); then
		echo "run-tests: TESTS word '$f' matches no Criterion test in test_unit or test_bpf" >&2
		failed=$((failed + 1)); failed_names+=("TESTS='$f'")
	fi
done

# The steering program's load: instructions the verifier processes, CPU it takes.
want_suite verifier && run_script verifier-budget bash scripts/verifier-budget.sh "$OUT"

if want_suite fuzz && [[ -x scripts/fuzz-run.sh ]]; then
	run_script fuzz-bounded bash scripts/fuzz-run.sh "$OUT" "${FUZZ_SECONDS:-20}"
fi

want_suite style && run_style
# The Python package: pytest on what make install-python installs (python/tests/run.sh).
want_suite python && run_script python bash python/tests/run.sh "$OUT"
want_suite integration && run_integration

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
echo "tests: $passed passed, $failed failed, $skipped skipped (${TESTS:+T='$TESTS', }$TIER tier)"
((failed == 0))

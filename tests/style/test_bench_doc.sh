#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# docs/benchmarks.md is what scripts/bench/report.py makes of the committed
# results (docs/bench/data) and hand-written notes (docs/bench/notes), so
# that `make bench-report` loses nothing; a hand edit of the generated
# file, or a note changed without regenerating, fails the check.
set -uo pipefail
cd "$(dirname "$0")/../.."
rc=0
if out=$(python3 scripts/bench/report.py --check 2>&1); then
	echo "ok   - docs/benchmarks.md is what report.py makes of docs/bench/data and docs/bench/notes"
else
	echo "FAIL - docs/benchmarks.md is not what report.py makes: ${out:0:2000}"; rc=1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs"
cp -r docs/benchmarks.md docs/bench "$tmp/docs/"
printf '\nA line written by hand.\n' >>"$tmp/docs/benchmarks.md"
out=$(python3 scripts/bench/report.py --check "$tmp/docs/benchmarks.md" 2>&1)
if [[ $? -ne 0 && $out == *'-A line written by hand.'* && $out == *'is not what the script makes'* ]]; then
	echo "ok   - a line written into the generated file fails the check, shown"
else
	echo "FAIL - a hand edit of the generated file was not caught: ${out:0:500}"; rc=1
fi
cp docs/benchmarks.md "$tmp/docs/benchmarks.md"
sed -i '2a\A note changed, the document not regenerated.' "$tmp/docs/bench/notes/farm-node.md"
out=$(python3 scripts/bench/report.py --check "$tmp/docs/benchmarks.md" 2>&1)
if [[ $? -ne 0 && $out == *'+A note changed, the document not regenerated.'* ]]; then
	echo "ok   - a note changed without regenerating fails the check"
else
	echo "FAIL - a stale document was not caught: ${out:0:500}"; rc=1
fi
exit $rc

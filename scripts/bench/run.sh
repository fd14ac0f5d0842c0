#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`: runs every benchmark piece (scripts/bench/bench-*.sh) in
# turn; each writes its JSON (+ CSV, PNG) under $OUT/bench/ and prints its
# table; then the plots and docs/benchmarks.md are regenerated from them.
# Each piece is bounded by BENCH_TIMEOUT seconds (1200; 420 with
# BENCH_QUICK=1); BENCH_ONLY="daq gateway" runs a subset.
set -euo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT/bench"
LIMIT=${BENCH_TIMEOUT:-$([[ -n ${BENCH_QUICK:-} ]] && echo 420 || echo 1200)}
rc=0
t_all=$SECONDS
for b in scripts/bench/bench-*.sh; do
	[[ -e $b ]] || continue
	name=$(basename "$b" .sh)
	if [[ -n ${BENCH_ONLY:-} && " $BENCH_ONLY " != *" ${name#bench-} "* ]]; then
		continue
	fi
	echo "=== $name"
	t0=$SECONDS
	timeout --kill-after=10 "$LIMIT" bash "$b" "$OUT" || { echo "benchmark $b failed or ran over ${LIMIT}s" >&2; rc=1; }
	echo "=== $name: $((SECONDS - t0)) s"
done
echo "=== all pieces: $((SECONDS - t_all)) s"
if [[ -x /usr/bin/python3 ]]; then
	/usr/bin/python3 scripts/bench/plots.py "$OUT/bench" || rc=1
	/usr/bin/python3 scripts/bench/report.py "$OUT/bench" || rc=1
fi
exit $rc

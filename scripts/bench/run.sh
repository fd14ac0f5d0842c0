#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`: runs every benchmark piece (scripts/bench/bench-*.sh) in
# turn; each writes its JSON under $OUT/bench/ and prints its table.
set -euo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT/bench"
rc=0
for b in scripts/bench/bench-*.sh; do
	[[ -e $b ]] || continue
	echo "=== $(basename "$b" .sh)"
	bash "$b" "$OUT" || { echo "benchmark $b failed" >&2; rc=1; }
done
exit $rc

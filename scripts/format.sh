#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The C sources against .clang-format (the house style):
#
#   scripts/format.sh check    list the files clang-format would change and
#                              how many lines; exit 1 if any (make format-check)
#   scripts/format.sh fix      rewrite them in place (make format)
#
# Sources: the .c and .h files under user/ lib/ include/ bpf/ tests/ (fuzz
# harnesses among them), bench/ and python/ (its extension module). CLANG_FORMAT names the binary
# (default clang-format; .clang-format was measured with Debian 12's, 14).
# Without one: exit 77, a skip for scripts/run-tests.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
mode=${1:-check}

case $mode in
check | fix) ;;
*) echo "format: '$mode': use check or fix" >&2; exit 2 ;;
esac
if ! command -v "$CLANG_FORMAT" >/dev/null; then
	echo "SKIP style: $CLANG_FORMAT not installed (bash scripts/install-deps.sh installs clang-format)"
	exit 77
fi

mapfile -t files < <(find user lib include bpf tests bench python -type f -name '*.[ch]' | LC_ALL=C sort)
if [[ $mode == fix ]]; then
	"$CLANG_FORMAT" -i --style=file "${files[@]}" || { echo "format: $CLANG_FORMAT failed" >&2; exit 1; }
	echo "format: ${#files[@]} files formatted with $("$CLANG_FORMAT" --version | sed 's/.*version /version /')"
	exit 0
fi

bad=0
lines=0
for f in "${files[@]}"; do
	# Lines of the file that formatting would replace.
	n=$("$CLANG_FORMAT" --style=file "$f" | diff -U0 "$f" - | grep -c '^-[^-]')
	((n)) || continue
	echo "  $f: $n lines"
	bad=$((bad + 1))
	lines=$((lines + n))
done
if ((bad)); then
	echo "FAIL style: $bad of ${#files[@]} files not formatted ($lines lines); make format rewrites them," \
		"git diff shows what changed"
	exit 1
fi
echo "PASS style: ${#files[@]} files formatted as .clang-format says"

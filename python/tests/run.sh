#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Python package's suite, as scripts/run-tests.sh runs it ("python"):
# the README's one install command, `make install-python`, into a scratch
# DESTDIR, then pytest (python/tests) on that installed copy, so what is
# tested is what a user gets. The live-stream test needs root (the
# namespace testbed) and skips itself without it.
#
#   python/tests/run.sh [OUT]      PYTHON: the interpreter (default: Debian's)
#
# Exit 0 pass, 77 skip (no pytest, or the module could not be built here:
# its "SKIP" line says why), 1 fail.
set -uo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
# make gets OUT as given: the dependency files name targets that way.
OUT_ABS=$(realpath "$OUT")
# Debian's interpreter is the one install-deps.sh gives pytest and numpy.
PY=${PYTHON:-$( [[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3 )}
skip() { echo "SKIP python: $*"; exit 77; }

"$PY" -c 'import pytest' 2>/dev/null ||
	skip "$PY has no pytest (bash scripts/install-deps.sh, or apt-get install python3-pytest)"
compgen -G "$OUT_ABS/python/xevb/_xevb*.so" >/dev/null ||
	skip "the module is not built in $OUT/python: make python (it needs python3-dev)"
tmp=$(mktemp -d /tmp/xevb-python.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! make --no-print-directory install-python OUT="$OUT" PYTHON="$PY" DESTDIR="$tmp" PREFIX=/usr \
	>"$tmp/install.log" 2>&1; then
	sed 's/^/  | /' "$tmp/install.log"
	echo "FAIL python: make install-python DESTDIR=$tmp PREFIX=/usr"
	exit 1
fi
site=$tmp/usr/lib/python3/dist-packages
[[ -f $site/xevb/__init__.py ]] || { echo "FAIL python: make install-python put nothing in $site/xevb"; exit 1; }
echo "# testing $(PYTHONPATH=$site PYTHONDONTWRITEBYTECODE=1 "$PY" -c 'import xevb; print(xevb.__file__)') (make install-python PREFIX=/usr, scratch DESTDIR)"
PYTHONPATH=$site PYTHONDONTWRITEBYTECODE=1 XEVB_OUT=$OUT_ABS timeout 900 "$PY" -m pytest -q -p no:cacheprovider \
	python/tests

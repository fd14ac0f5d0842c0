#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The layer check (scripts/check-layers.py) passes on the tree and fails on
# a copy of user/ with one planted upward include, naming it.
set -uo pipefail
cd "$(dirname "$0")/../.."
rc=0
if python3 scripts/check-layers.py; then
	echo "ok   - user/ keeps the order of user/LAYERS"
else
	echo "FAIL - user/ breaks the order of user/LAYERS"; rc=1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r user "$tmp/user"
# base is the lowest layer: an include of the control plane from it is upward.
sed -i '0,/^#include/s//#include "ctl\/ctl_sock.h"\n#include/' "$tmp/user/base/notify.c"
out=$(python3 scripts/check-layers.py --root "$tmp/user" 2>&1)
if [[ $? -ne 0 && $out == *'user/base/notify.c: includes "ctl/ctl_sock.h", a layer above base'* ]]; then
	echo "ok   - a planted upward include (base -> ctl) fails the check and is named"
else
	echo "FAIL - a planted upward include was not caught: $out"; rc=1
fi
sed -i 's|#include "ctl/ctl_sock.h"|#include "ctl/no_such.h"|' "$tmp/user/base/notify.c"
out=$(python3 scripts/check-layers.py --root "$tmp/user" 2>&1)
if [[ $? -ne 0 && $out == *'no such header'* ]]; then
	echo "ok   - an include of a header that is not there fails the check"
else
	echo "FAIL - a missing header was not caught: $out"; rc=1
fi
exit $rc

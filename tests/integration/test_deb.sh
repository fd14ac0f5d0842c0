#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian package (issue 23): `make deb` builds it (lintian clean, the
# remaining tags overridden with their reasons in debian/), `dpkg -i`
# installs it on this machine: the packaged xevb runs, every command has its
# man page, the units are where systemd looks and pass systemd-analyze
# verify, the runbook (deploy.md), the wire format, the observability guide
# and the other docs of debian/xevb.docs are in /usr/share/doc/xevb; `dpkg
# -r` then removes every file it installed.
# Exit 77 (a skip, scripts/run-tests.sh) without debhelper or lintian
# (scripts/install-deps.sh --deb: CI does not install them) or without root,
# or when an xevb package is installed already (it is not ours to remove).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${1:-build}
NAME=$(basename "$0" .sh)
FAILS=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
skip() { echo "SKIP $NAME: $*"; exit 77; }

command -v dh >/dev/null || skip "debhelper is not installed (scripts/install-deps.sh --deb)"
command -v lintian >/dev/null || skip "lintian is not installed (scripts/install-deps.sh --deb)"
[[ $(id -u) -eq 0 ]] || skip "dpkg -i needs root"
dpkg-query -W -f='${Status}' xevb 2>/dev/null | grep -q 'ok installed' &&
	skip "an xevb package is installed already; not replacing it"

installed=
cleanup() {
	# Whatever happened, the machine keeps no xevb package of ours.
	[[ -n $installed ]] && dpkg -P xevb >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if out=$(timeout 600 make --no-print-directory deb OUT="$OUT" 2>&1); then
	ok "make deb"
else
	echo "$out" | tail -n 30 | sed 's/^/  | /'
	fail "make deb"
	exit 1
fi
echo "$out" | sed -n '/lintian:/,$p' | sed 's/^/# /'
deb=$(ls "$OUT"/xevb_*_*.deb 2>/dev/null | head -n 1)
[[ -f $deb ]] || { fail "no .deb in $OUT"; exit 1; }

if dpkg -i "$deb" >"$OUT/deb/dpkg-i.log" 2>&1; then
	installed=1
	ok "dpkg -i $(basename "$deb")"
else
	installed=1
	sed 's/^/  | /' "$OUT/deb/dpkg-i.log"
	fail "dpkg -i"
	exit 1
fi
mapfile -t files < <(dpkg -L xevb | while read -r f; do [[ -f $f ]] && echo "$f"; done)

v=$(/usr/bin/xevb version 2>&1)
[[ $v == "xevb "* ]] && ok "/usr/bin/xevb version: $v" || fail "/usr/bin/xevb version: $v"
/usr/bin/xevb --help | grep -q '^  build ' && ok "/usr/bin/xevb --help lists build" || fail "/usr/bin/xevb --help"
for c in xevb $(/usr/bin/xevb help-man --list | sed 's/^/xevb-/'); do
	if man -w "$c" 2>/dev/null | grep -q "^/usr/share/man/man1/$c.1.gz$"; then
		ok "man page $c(1)"
	else
		fail "man page $c(1) not found by man"
	fi
done
for u in xevb-build@.service xevb-sink@.service xevb-dfm.service; do
	[[ -f /lib/systemd/system/$u ]] && ok "unit /lib/systemd/system/$u" || fail "unit $u missing"
done
if command -v systemd-analyze >/dev/null; then
	if err=$(systemd-analyze verify /lib/systemd/system/xevb-build@eth0.service \
		/lib/systemd/system/xevb-sink@farm0.service /lib/systemd/system/xevb-dfm.service 2>&1) && [[ -z $err ]]; then
		ok "systemd-analyze verify: the packaged units"
	else
		echo "$err" | sed 's/^/  | /'
		fail "systemd-analyze verify"
	fi
fi
# The runbook, the wire format and the observability guide go with the
# package (debian/xevb.docs); dh_compress gzips the longer ones.
for d in README.md deploy.md deploy-package.md hardening.md observability.md run-config.md wire-format.md; do
	f=/usr/share/doc/xevb/$d
	if [[ -s $f || -s $f.gz ]]; then
		ok "doc $f$([[ -s $f ]] || echo .gz)"
	else
		fail "doc $f not installed"
	fi
done
[[ -f /usr/lib/$(dpkg-architecture -q DEB_HOST_MULTIARCH)/wireshark/plugins/xevb.lua ]] &&
	ok "Wireshark dissector in the global Lua plugin folder" || fail "dissector not installed"

if dpkg -r xevb >"$OUT/deb/dpkg-r.log" 2>&1; then
	ok "dpkg -r xevb"
else
	sed 's/^/  | /' "$OUT/deb/dpkg-r.log"
	fail "dpkg -r xevb"
fi
left=()
for f in "${files[@]}"; do [[ -e $f ]] && left+=("$f"); done
if ((${#left[@]} == 0)); then
	ok "dpkg -r removed all ${#files[@]} files"
else
	fail "left after dpkg -r: ${left[*]}"
fi
dpkg -P xevb >/dev/null 2>&1
installed=

if ((FAILS)); then
	echo "FAIL $NAME: $FAILS failure(s)"
	exit 1
fi
echo "PASS $NAME"

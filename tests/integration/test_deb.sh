#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian packages (issues 23, 35): `make deb` builds xevb, libxevb1,
# libxevb-dev and python3-xevb, lintian clean (no error, warning or info
# tag; the remaining tags overridden with their reasons in debian/).
#  - contents (dpkg -c, dpkg-deb -f): each package holds what it must and
#    nothing of another's: libxevb1 the library and its soname link, a
#    symbols file and the ldconfig trigger; libxevb-dev the header, the .so
#    link and xevb.pc; python3-xevb the package with its extension module
#    for this python3; the Depends name libsodium, the exact libxevb1 and
#    this python3.
#  - consumer: libxevb1, libxevb-dev and python3-xevb unpacked (dpkg -x)
#    into a temporary root, not onto this machine: a C program compiled
#    with `pkg-config --cflags --libs xevb` against that root alone links,
#    runs on its libxevb.so.1 and writes and reads a run file; `python3 -c
#    'import xevb'` imports the unpacked package and its module reads back
#    a run file it wrote.
#  - installed (root): `dpkg -i` of xevb on this machine: the packaged xevb
#    runs, every command has its man page, the units are where systemd
#    looks and pass systemd-analyze verify, the runbook (deploy.md), the
#    wire format, the observability guide and the other docs of
#    debian/xevb.docs are in /usr/share/doc/xevb; `dpkg -r` then removes
#    every file it installed. Skipped with a reason without root, or when
#    an xevb package is installed already (it is not ours to remove).
# Exit 77 (a skip, scripts/run-tests.sh) without debhelper, dh-python or
# lintian (scripts/install-deps.sh --deb: CI does not install them).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${1:-build}
NAME=$(basename "$0" .sh)
FAILS=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
skip() { echo "SKIP $NAME: $*"; exit 77; }

command -v dh >/dev/null || skip "debhelper is not installed (scripts/install-deps.sh --deb)"
command -v dh_python3 >/dev/null || skip "dh-python is not installed (scripts/install-deps.sh --deb)"
command -v lintian >/dev/null || skip "lintian is not installed (scripts/install-deps.sh --deb)"
W=$(mktemp -d /tmp/xevb-deb.XXXXXX)
finish() {
	if ((FAILS)); then
		echo "FAIL $NAME: $FAILS failure(s)"
		exit 1
	fi
	echo "PASS $NAME"
	exit 0
}
installed=
cleanup() {
	# Whatever happened, the machine keeps no xevb package of ours.
	[[ -n $installed ]] && dpkg -P xevb >/dev/null 2>&1
	rm -rf "$W"
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
lint=$(echo "$out" | sed -n '/lintian/,$p')
echo "$lint" | sed 's/^/# /'
tags=$(grep -E '^ +[EWI]: ' <<<"$lint")
[[ -z $tags ]] && ok "lintian: no error, warning or info tag" || fail "lintian tags: $tags"
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
MA=$(dpkg-architecture -q DEB_HOST_MULTIARCH)
for p in xevb libxevb1 libxevb-dev python3-xevb; do
	[[ -f $OUT/${p}_${version}_${arch}.deb ]] && ok "built $OUT/${p}_${version}_${arch}.deb" ||
		{ fail "no ${p}_${version}_${arch}.deb in $OUT"; exit 1; }
done
deb=$OUT/xevb_${version}_${arch}.deb

# ---------------------------------------------------------------------------
# (grep without -q after a pipe: -q ends early and SIGPIPE fails the
# writer under pipefail.)
# contents: has PKG PATH [TARGET]: PKG's .deb holds ./PATH (a symlink to
# TARGET when given); hasnt PKG REGEX: no path in PKG matches.
# shellcheck disable=SC2317 # called below
list() { dpkg -c "$OUT/${1}_${version}_${arch}.deb" | awk '{ $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }'; }
has() {
	local want="./$2${3:+ -> $3}"
	if list "$1" | grep -xF -- "$want" >/dev/null; then ok "$1 holds /$2${3:+ -> $3}"; else fail "$1 lacks $want"; fi
}
hasnt() {
	local hit
	hit=$(list "$1" | sed 's/ -> .*//' | grep -E -- "$2")
	[[ -z $hit ]] && ok "$1 holds nothing matching $2" || fail "$1 holds $hit"
}
has libxevb1 "usr/lib/$MA/libxevb.so.1.0.0"
has libxevb1 "usr/lib/$MA/libxevb.so.1" libxevb.so.1.0.0
hasnt libxevb1 'include|pkgconfig|libxevb\.so$|python'
has libxevb-dev usr/include/xevb/xevb.h
has libxevb-dev "usr/lib/$MA/libxevb.so" libxevb.so.1
has libxevb-dev "usr/lib/$MA/pkgconfig/xevb.pc"
has libxevb-dev usr/share/doc/libxevb-dev/examples/hlt_farm_node.c
hasnt libxevb-dev 'libxevb\.so\.1|python'
has python3-xevb usr/lib/python3/dist-packages/xevb/__init__.py
pyext=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
has python3-xevb "usr/lib/python3/dist-packages/xevb/_xevb$pyext"
hasnt python3-xevb 'libxevb\.so|include/'
has xevb usr/bin/xevb
hasnt xevb 'libxevb|include/|pkgconfig|dist-packages'
dpkg-deb --ctrl-tarfile "$OUT/libxevb1_${version}_${arch}.deb" | tar -xOf - ./symbols 2>/dev/null |
	grep "^ xevb_lib_version@XEVB_1.0 " >/dev/null && ok "libxevb1 carries a symbols file" || fail "libxevb1: no symbols file"
dpkg-deb --ctrl-tarfile "$OUT/libxevb1_${version}_${arch}.deb" | tar -xOf - ./triggers 2>/dev/null |
	grep '^activate-noawait ldconfig$' >/dev/null && ok "libxevb1 triggers ldconfig" || fail "libxevb1: no ldconfig trigger"
# dep PKG WHAT REGEX: PKG's Depends name WHAT (match REGEX).
dep() {
	local d
	d=$(dpkg-deb -f "$OUT/${1}_${version}_${arch}.deb" Depends)
	grep -qE -- "$3" <<<"$d" && ok "$1 Depends on $2: $d" || fail "$1 Depends '$d': no $2 ($3)"
}
pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
dep libxevb1 'libc6 and libsodium' 'libsodium[0-9]+ .*libc6|libc6 .*libsodium[0-9]+'
dep libxevb-dev "libxevb1 (= $version)" "(^|, )libxevb1 \\(= ${version//./\\.}\\)"
dep python3-xevb "python3 (>= $pyver~)" "python3 \\(>= ${pyver//./\\.}~\\)"
dep python3-xevb libsodium 'libsodium[0-9]+'

# ---------------------------------------------------------------------------
# consumer: the library, its -dev and the Python package unpacked into a
# temporary root; everything found there, nothing on this machine.
ROOT=$W/root
for p in libxevb1 libxevb-dev python3-xevb; do
	dpkg -x "$OUT/${p}_${version}_${arch}.deb" "$ROOT" || fail "dpkg -x $p"
done
LIBDIR=$ROOT/usr/lib/$MA
flags=$(PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_LIBDIR=$LIBDIR/pkgconfig pkg-config --cflags --libs xevb) ||
	fail "pkg-config xevb in the unpacked -dev"
flags=${flags%" "}
modver=$(PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_LIBDIR=$LIBDIR/pkgconfig pkg-config --modversion xevb)
[[ $flags == "-I$ROOT/usr/include -L$LIBDIR -lxevb" ]] && ok "pkg-config --cflags --libs xevb: $flags" ||
	fail "pkg-config flags '$flags'"
cat >"$W/consumer.c" <<'C'
#include <stdio.h>
#include <xevb/xevb.h>

/* One incomplete event: sources 1 and 2 expected, 1 present with "abcd". */
static const unsigned char ev[52] = {
	'E', 'V', 'N', 'T', 1, 1, 0, 1, 0, 0, 0, 5, 0, 0, 0, 42, 0, 0, 0, 52, 0, 2, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0x92, 0xc8, 0x0a, 0x31, 'a', 'b', 'c', 'd', 0, 2, 0, 0,
};

int main(int argc, char **argv)
{
	char err[XEVB_ERRBUF_SIZE];
	const struct xevb_ev *e;
	XEVB_OPTS(xevb_file_writer_opts, wo, .dir = argv[1], .run_number = 5, .flags = XEVB_FW_VERIFY);
	struct xevb_file_writer *w = xevb_file_writer_open(&wo, err);
	struct xevb_file_reader *r;
	int n = 0;

	(void)argc;
	if (!w || xevb_file_writer_write(w, ev, sizeof(ev))) {
		fprintf(stderr, "%s\n", w ? xevb_file_writer_error(w) : err);
		return 1;
	}
	if (xevb_file_writer_close(w) || !(r = xevb_file_reader_open(argv[2], NULL, err)))
		return 2;
	while (xevb_file_reader_next(r, &e) == 1)
		n += xevb_ev_missing(e, 0) == 2;
	printf("%s %d %s\n", xevb_lib_version(), n, xevb_file_state_name(xevb_file_reader_info(r)->state));
	xevb_file_reader_close(r);
	return 0;
}
C
# shellcheck disable=SC2086 # pkg-config's flags are words
if ${CC:-gcc} -std=gnu11 -Wall -Wextra -Werror "$W/consumer.c" $flags -o "$W/consumer" 2>"$W/cc.err"; then
	ok "a C consumer compiles and links with pkg-config's flags against the unpacked libxevb-dev"
	run=$(LD_LIBRARY_PATH=$LIBDIR "$W/consumer" "$W" "$W/xevb-run00000005-0000.xevb" 2>&1)
	[[ $run == "$modver 1 closed" ]] && ok "it runs: writes and reads back a run file ($run)" ||
		fail "consumer: '$run', want '$modver 1 closed'"
	so=$(LD_LIBRARY_PATH=$LIBDIR ldd "$W/consumer" | grep libxevb)
	[[ $so == *"libxevb.so.1 => $LIBDIR/libxevb.so.1 "* ]] && ok "it runs on the unpacked libxevb1's libxevb.so.1" ||
		fail "consumer's libxevb: $so"
else
	fail "the C consumer did not build: $(cat "$W/cc.err")"
fi
PYDIR=$ROOT/usr/lib/python3/dist-packages
if py=$(cd "$W" && env PYTHONPATH="$PYDIR" python3 -c 'import xevb; print(xevb.__file__)' 2>&1) &&
	[[ $py == "$PYDIR/xevb/__init__.py" ]]; then
	ok "python3 -c 'import xevb' imports the unpacked python3-xevb"
else
	fail "import xevb: '$py', want $PYDIR/xevb/__init__.py"
fi
py=$(cd "$W" && env PYTHONPATH="$PYDIR" python3 - "$W/py" "$PYDIR" 2>&1 <<'PY'
import os, sys, xevb
d, pydir = sys.argv[1:3]
assert xevb._xevb.__file__.startswith(pydir + "/"), xevb._xevb.__file__
os.mkdir(d)
with xevb.Writer(dir=d, run_number=9, sources=[1, 2]) as w:
    for i in range(3):
        w.write(xevb.encode_event(i, [(1, b"ab"), (2, b"cd")], run_number=9))
with xevb.Reader(w.path) as r:
    ids = [(ev.event_id, bytes(ev[1])) for ev in r]
    print(xevb.lib_version(), ids, r.state)
PY
)
want="$modver [(0, b'cd'), (1, b'cd'), (2, b'cd')] closed"
[[ $py == "$want" ]] && ok "the unpacked extension module writes and reads a run file: $py" ||
	fail "python3-xevb run file: '$py', want '$want'"

# ---------------------------------------------------------------------------
# installed: dpkg -i of the tools on this machine (root only).
if [[ $(id -u) -ne 0 ]]; then
	echo "SKIP installed: dpkg -i needs root"
	finish
fi
if dpkg-query -W -f='${Status}' xevb 2>/dev/null | grep -q 'ok installed'; then
	echo "SKIP installed: an xevb package is installed already; not replacing it"
	finish
fi

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
/usr/bin/xevb --help | grep '^  build ' >/dev/null && ok "/usr/bin/xevb --help lists build" || fail "/usr/bin/xevb --help"
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

finish

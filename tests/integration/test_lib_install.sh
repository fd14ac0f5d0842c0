#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# libxevb installed (issue 35): `make install-lib DESTDIR=...` puts
# libxevb.so.1.0.0 with its soname links, xevb/xevb.h and xevb.pc in place;
# a consumer compiled with `pkg-config --cflags --libs xevb` against that
# tree alone (C, and the header in C++) writes a run file and reads it
# back; the library's soname is libxevb.so.1, it needs nothing but libc
# and libsodium (no GPL library at link time) and exports only xevb_*
# symbols; `make uninstall-lib` removes every file again. No namespace.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${1:-build}
W=$(mktemp -d /tmp/xevb-lib-install.XXXXXX)
trap 'rm -rf "$W"' EXIT
ROOT=$W/root
MA=$(${CC:-gcc} -dumpmachine)
LIBDIR=$ROOT/usr/local/lib/$MA
fails=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }

make --no-print-directory install-lib OUT="$OUT" DESTDIR="$ROOT" >"$W/install.log" 2>&1 ||
	{ sed 's/^/  | /' "$W/install.log"; echo "FAIL - make install-lib"; exit 1; }
for f in "$LIBDIR/libxevb.so.1.0.0" "$ROOT/usr/local/include/xevb/xevb.h" "$LIBDIR/pkgconfig/xevb.pc"; do
	[[ -f $f ]] && ok "installed ${f#"$ROOT"}" || fail "missing ${f#"$ROOT"}"
done
[[ $(readlink "$LIBDIR/libxevb.so.1") == libxevb.so.1.0.0 && $(readlink "$LIBDIR/libxevb.so") == libxevb.so.1 ]] &&
	ok "links libxevb.so -> libxevb.so.1 -> libxevb.so.1.0.0" || fail "soname links: $(ls -l "$LIBDIR")"
soname=$(readelf -d "$LIBDIR/libxevb.so.1.0.0" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ $soname == libxevb.so.1 ]] && ok "soname $soname" || fail "soname '$soname'"
needed=$(readelf -d "$LIBDIR/libxevb.so.1.0.0" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
[[ $needed == "libc.so.6 libsodium.so.23 " || $needed == "libc.so.6 libsodium.so.26 " ]] &&
	ok "needs only libc and libsodium: $needed" || fail "needs $needed"
others=$(nm -D --defined-only "$LIBDIR/libxevb.so.1.0.0" | awk '$2 == "T" && $3 !~ /^xevb_/ { print $3 }')
[[ -z $others ]] && ok "exports only xevb_* functions" || fail "exports $others"

export PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_LIBDIR=$LIBDIR/pkgconfig
flags=$(pkg-config --cflags --libs xevb) || fail "pkg-config xevb"
[[ $(pkg-config --modversion xevb) == 1.0.0 ]] && ok "pkg-config: xevb 1.0.0, $flags" || fail "pkg-config version"
cat >"$W/consumer.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	struct xevb_ev_frag f;
	XEVB_OPTS(xevb_file_writer_opts, wo, .dir = argv[1], .run_number = 5, .flags = XEVB_FW_VERIFY);
	struct xevb_file_writer *w = xevb_file_writer_open(&wo, err);
	struct xevb_file_reader *r;
	char path[4096];

	(void)argc;
	if (!w || xevb_file_writer_write(w, ev, sizeof(ev)) || xevb_file_writer_write(w, ev, sizeof(ev))) {
		fprintf(stderr, "%s\n", w ? xevb_file_writer_error(w) : err);
		return 1;
	}
	snprintf(path, sizeof(path), "%s", xevb_file_writer_path(w));
	if (xevb_file_writer_close(w) || !(r = xevb_file_reader_open(path, NULL, err)))
		return 2;
	while (xevb_file_reader_next(r, &e) == 1)
		if (xevb_ev_frag(e, 0, &f) || f.source_id != 1 || memcmp(f.payload, "abcd", 4) ||
		    xevb_ev_missing(e, 0) != 2 || xevb_ev_verify(e, NULL))
			return 3;
	printf("%s %s %llu %s\n", xevb_lib_version(), xevb_file_state_name(xevb_file_reader_info(r)->state),
	       (unsigned long long)xevb_file_reader_info(r)->events, path);
	xevb_file_reader_close(r);
	return 0;
}
C
# shellcheck disable=SC2086
if ${CC:-gcc} -std=gnu11 -Wall -Wextra -Werror "$W/consumer.c" $flags -Wl,-rpath,"$LIBDIR" -o "$W/consumer" 2>"$W/cc.err"; then
	ok "a consumer compiles and links with pkg-config's flags against the installed tree"
	out=$("$W/consumer" "$W") && [[ $out == "1.0.0 closed 2 $W/xevb-run00000005-0000.xevb" ]] &&
		ok "it writes a run file and reads it back: $out" || fail "consumer: '$out' (rc $?)"
	# ldd's output taken whole first: `ldd | grep -q` fails under pipefail when grep stops early.
	deps=$(ldd "$W/consumer")
	[[ $deps == *"libxevb.so.1 => $LIBDIR/libxevb.so.1 "* ]] && ok "it runs on the installed libxevb.so.1" ||
		fail "consumer's libxevb: $(grep xevb <<<"$deps")"
else
	fail "consumer did not build: $(cat "$W/cc.err")"
fi
# shellcheck disable=SC2086
echo '#include <xevb/xevb.h>' | ${CXX:-g++} -x c++ -fsyntax-only -Wall -Wextra -Werror $(pkg-config --cflags xevb) - &&
	ok "the header compiles as C++" || fail "the header in C++"

make --no-print-directory uninstall-lib OUT="$OUT" DESTDIR="$ROOT" >"$W/uninstall.log" 2>&1 || fail "make uninstall-lib"
left=$(find "$ROOT" -type f -o -type l | sed "s|^$ROOT||")
[[ -z $left ]] && ok "make uninstall-lib removed every installed file" || fail "left after uninstall: $left"
if ((fails)); then
	echo "FAIL test_lib_install: $fails failure(s)"
	exit 1
fi
echo "PASS test_lib_install"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make deb`: builds the Debian packages (debian/, debhelper) from a copy of
# the tree in OUT/deb, so nothing outside OUT changes: xevb (the tools),
# libxevb1, libxevb-dev and python3-xevb. The .debs land in OUT (the -dbgsym
# ones stay in OUT/deb) and lintian's verdict on them all is printed (tags
# explained in docs/deploy-package.md). Needs the optional group of
# scripts/install-deps.sh --deb (debhelper, dh-python, lintian).
set -euo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/.."
for tool in dpkg-buildpackage dh dh_python3 lintian; do
	command -v "$tool" >/dev/null ||
		{ echo "make-deb: $tool is missing: run scripts/install-deps.sh --deb (as root)" >&2; exit 1; }
done
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
work=$(realpath -m "$OUT/deb")
src=$work/xevb-$version
rm -rf "$work"
mkdir -p "$src"
# The tree as git knows it (tracked and new files, not ignored ones such as
# OUT), else everything but OUT.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src"
else
	tar --exclude="./$OUT" --exclude=./.git -cf - . | tar -xf - -C "$src"
fi
echo "make-deb: building xevb $version ($arch) in $src"
# Two jobs unless told otherwise (DEB_BUILD_OPTIONS=parallel=N).
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2}
(cd "$src" && dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 ||
	{ tail -n 40 "$work/build.log" >&2; echo "make-deb: dpkg-buildpackage failed: $work/build.log" >&2; exit 1; }
for p in xevb libxevb1 libxevb-dev python3-xevb; do
	deb=${p}_${version}_${arch}.deb
	cp "$work/$deb" "$OUT/$deb"
	echo "make-deb: $OUT/$deb"
done
echo "make-deb: lintian (info and pedantic tags shown):"
# Tags that are not errors are explained in docs/deploy-package.md.
tags=$(lintian --info --display-info --pedantic "$work/xevb_${version}_${arch}.changes" 2>/dev/null) || {
	echo "$tags" | sed 's/^/  /'
	echo "make-deb: lintian found errors" >&2
	exit 1
}
echo "${tags:-no tag (overrides with their reasons: debian/*.lintian-overrides)}" | sed 's/^/  /'

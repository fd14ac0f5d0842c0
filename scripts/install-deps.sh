#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs, from Debian's archive, exactly what xevb needs to build, test and
# trace. Idempotent: packages already present are skipped.
set -euo pipefail

PKGS=(
	clang llvm                  # BPF compiler, llvm-objdump
	libclang-rt-14-dev          # libFuzzer and sanitizer runtimes for `make fuzz`
	gcc make pkg-config
	clang-format                # make format, make format-check (the style suite)
	libbpf-dev bpftool          # skeletons, loader
	libxdp-dev xdp-tools        # xsk API, attach; xdp-loader/xdp-filter for tests
	libelf-dev zlib1g-dev
	libsodium-dev               # control-message authentication (BLAKE2b MAC)
	libsystemd-dev              # sd_notify: readiness under systemd (Type=notify units)
	libinih-dev                 # run configuration files (INI, docs/run-config.md)
	libcriterion-dev            # unit tests
	liburing-dev                # io_uring sends in the bench feeder (bench-sink.sh SINK_FEEDS)
	bpftrace systemtap-sdt-dev  # tracing scripts, USDT probes
	iproute2 iputils-ping       # testbed: netns, veth, bridge, tc
	valgrind                    # instruction counts in benchmarks
	python3 python3-matplotlib  # benchmark plots
	python3-yaml                # the alerting rules, read by test_dashboards.sh
	python3-dev                 # the Python package's extension module (make python)
	python3-pytest python3-numpy  # its tests (python/tests), arrays over its views
	procps psmisc               # pgrep/pkill/killall in integration tests
	prometheus                  # promtool checks the metrics pages (its server is kept off)
	tshark tcpdump curl         # Wireshark dissector tests, captures, metrics scrapes
)

# Optional, for `make deb` only (--deb): CI and `make test` never pay for it.
DEB_PKGS=(
	debhelper lintian            # dpkg-buildpackage: dpkg-dev, already in build-essential
	dh-python                    # dh_python3: python3-xevb's ${python3:Depends}, byte-compiling
)
[[ ${1:-} == --deb ]] && PKGS+=("${DEB_PKGS[@]}")

missing=()
for p in "${PKGS[@]}"; do
	[[ $p == \#* ]] && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#PKGS[@]} packages present"
	exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi

echo "install-deps: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark: no setuid dumpcap, and no question asked.
echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections
# Packages with a daemon (prometheus) must not start one: we only want their tools.
policy_tmp=
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
	policy_tmp=1
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[[ -n $policy_tmp ]] && rm -f /usr/sbin/policy-rc.d
if [[ -d /run/systemd/system ]] && systemctl is-active --quiet prometheus 2>/dev/null; then
	systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
echo "install-deps: done"

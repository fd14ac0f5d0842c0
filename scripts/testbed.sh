#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Namespace testbed for xevb: sources, builders and farm nodes on a bridge
# (or an XDP switch: --switch xdp).
# The work is done by scripts/lib/testbed.sh; this is its command line.
set -uo pipefail
. "$(dirname "$0")/lib/testbed.sh"

usage() {
	cat <<EOF
Usage: $0 up   [--prefix P] [--sources N] [--builders M] [--sinks K]
                [--mtu 1500|9000] [--rate-limit RATE] [--queues Q] [--xdp-pass OBJ] [--dfm 0|1]
                [--switch bridge|xdp] [--switch-obj OBJ] [--port-queue N]
       $0 switch --prefix P xdp|bridge|stats
       $0 down --prefix P
       $0 exec --prefix P ROLE INDEX CMD...
       $0 list [--prefix P]

Each host is a network namespace <P>-src<i>, <P>-bld<i> or <P>-snk<i> with
one interface eth0; the bridge br0 lives in <P>-sw. Addresses (one /16):
sources 198.18.1.<i+1>, builders 198.18.2.<i+1>, sinks 198.18.3.<i+1>,
the data-flow manager (--dfm 1, ROLE dfm) 198.18.4.1.
ROLE is source, builder or sink; INDEX counts from 0.

  --prefix P       name prefix (default xevb<pid>; also \$TB_PREFIX)
  --rate-limit R   TBF on each switch port's egress, e.g. 1gbit (emulated 1 GbE)
  --queues Q       rx/tx queues of the builders' veths (default 1)
  --port-queue N   pfifo of N packets on each builder's switch port (default
                   4096, 0: none; not with --rate-limit): a full veth ring
                   holds frames there instead of dropping them before XDP
  --xdp-pass OBJ   XDP_PASS program (build/bpf/xevb_pass.bpf.o) on the sources'
                   switch ports, needed by 'xevb source --mode live'
  --switch xdp     an XDP switch (build/bpf/xevb_switch.bpf.o, or --switch-obj)
                   on every switch port: unicast frames for a known host go
                   veth -> veth as xdp_frames (DEVMAP redirect), no skb, no
                   bridge, as from a NIC; broadcast/ARP and unknown MACs still
                   cross br0. Every host's eth0 gets GRO on (veth NAPI, so it
                   accepts redirected frames) and TX checksum offload off
                   (checksums on the wire, as from a NIC). Default: bridge.
  switch           on a running testbed: xdp, bridge, or stats (the XDP
                   switch's counters: redirected, passed, redirect_errors)
State: /tmp/<P>.testbed. 'up' removes what it made if it fails.
EOF
}

cmd=${1:-}
shift || true
# Leading options only: for exec, everything after ROLE INDEX is the command's.
while (($#)); do
	case $1 in
	--prefix) TB_PREFIX=${2:?--prefix needs a name}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) break ;;
	esac
done

case $cmd in
up)
	# The testbed outlives this script: no cleanup trap, only on failure.
	TB_NO_TRAP=1 tb_up "$@" || exit 1
	echo "$TB_PREFIX"
	tb_list
	;;
down)
	[[ -n ${TB_PREFIX:-} ]] || { echo "testbed: down needs --prefix P (see '$0 list')" >&2; exit 2; }
	tb_down "$TB_PREFIX"
	;;
exec)
	[[ -n ${TB_PREFIX:-} ]] || { echo "testbed: exec needs --prefix P" >&2; exit 2; }
	(($# >= 3)) || { echo "testbed: exec needs ROLE INDEX CMD..." >&2; exit 2; }
	tb_exec "$@"
	;;
switch)
	[[ -n ${TB_PREFIX:-} ]] || { echo "testbed: switch needs --prefix P" >&2; exit 2; }
	case ${1:-} in
	xdp | bridge) tb_switch_use "$@" ;;
	stats) tb_switch_stats ;;
	*) echo "testbed: switch xdp|bridge|stats" >&2; exit 2 ;;
	esac
	;;
list)
	tb_list "${TB_PREFIX:-}"
	;;
*)
	usage >&2
	exit 2
	;;
esac

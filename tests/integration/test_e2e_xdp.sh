#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# End to end through the XDP + AF_XDP path: sources -> xevb build -> xevb
# sink on the namespace testbed, raw IP and UDP, in Nx1, 1xN and NxN
# topologies (see e2e_topology in lib_e2e.sh for what is asserted).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init x "${1:-build}"
tb_up --sources 3 --builders 3 --sinks 2 || e2e_die "tb_up"

#               case       mode proto hosts ids builders sinks events
e2e_topology xraw_nx1      xdp  raw   3     2   1        2     4000
e2e_topology xudp_nx1      xdp  udp   3     2   1        1     3000
e2e_topology xraw_1xn      xdp  raw   1     4   3        2     2000
e2e_topology xudp_nxn      xdp  udp   2     2   2        2     3000
# Longer, paced (0.4 s): 8000 packets, more than the 4096-entry RX ring.
E2E_RATE=50000 \
e2e_topology xraw_nx1_20k  xdp  raw   2     2   1        1     20000
# The MEP digest (--digest): the same accounting, frames read from their digest.
E2E_DIGEST=1 \
e2e_topology xraw_digest   xdp  raw   3     2   1        2     4000
E2E_DIGEST=1 \
e2e_topology xudp_digest   xdp  udp   2     2   2        2     3000
# The one-worker loop's nap (--nap-us) instead of poll() after work: same accounting.
E2E_RATE=50000 E2E_BUILD_ARGS="--nap-us 100" \
e2e_topology xraw_nx1_nap  xdp  raw   2     2   1        1     20000
# Without the XDP meta (--no-xdp-meta): every frame parsed here, same accounting.
E2E_BUILD_ARGS="--no-xdp-meta" \
e2e_topology xudp_nometa   xdp  udp   3     2   1        2     3000
e2e_finish

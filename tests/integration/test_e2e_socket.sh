#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# End to end through the kernel-socket path (xevb build --mode socket, raw
# IPv4 and --udp): sources -> xevb build -> xevb sink on the namespace
# testbed, in Nx1, 1xN and NxN topologies (see e2e_topology in lib_e2e.sh
# for what is asserted).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init s "${1:-build}" --sources 3 --builders 3 --sinks 2

#               case       mode   proto hosts ids builders sinks events
e2e_topology sraw_nx1      socket raw   3     2   1        2     4000
e2e_topology sudp_1xn      socket udp   1     4   3        2     2000
e2e_topology sraw_nxn      socket raw   2     2   3        1     2000
e2e_topology sudp_nxn      socket udp   3     2   2        2     3000
E2E_BUILD_ARGS="--tune wait-us=100" \
e2e_topology sraw_nx1_nap  socket raw   3     2   1        2     4000
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The DFM with builders on the AF_XDP path (XDP steering program + AF_XDP
# socket; the control port is not steered and reaches the kernel stack):
# pull mode, 2 source processes x 2 builders x 1 farm node, exact books,
# and no XDP program left behind.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dx "${1:-build}" --sources 2 --builders 2 --sinks 1 --dfm 1

dfm_sink 0 sink0 --credits 64
for k in 0 1; do
	e2e_builder "$k" "b$k" --dfm "$DFM_ADDR" --exit-on-eor --duration "$E2E_RUN" --sources 0-3 --credits 32 \
		--sink "$(tb_addr sink 0):$E2E_PORT"
	e2e_xdp_attached builder "$k" || e2e_fail "b$k: no XDP program attached"
done
dfm_source 0 s0 --source-ids 0-1 --frag-size 300
dfm_source 1 s1 --source-ids 2-3 --frag-size 300
dfm_run_to_end dfm --mode pull --rate 3000 --events 6000 --pack 3 --wait-builders 2 --wait-sources 2
e2e_check xdp <<PY
$DFM_PY
d = dfm_complete("dfm", 6000)
eq("lost + incomplete", lost(d) + d["incomplete"], 0)
for i in (0, 1):
    b = J("b%d" % i)
    true("builder %d received on AF_XDP (%d frames)" % (i, b["rx_frames"]), b["path"] == "xdp" and b["rx_frames"] > 0)
eq("farm node got every event once", (J("sink0")["events"], J("sink0")["duplicates"]), (6000, 0))
PY
e2e_finish

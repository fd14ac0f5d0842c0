#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# 1 in 1,000 control datagrams lost costs no event, push and pull: every
# process of the run (DFM, 3 builders, 2 source processes, 2 farm nodes
# reporting to the DFM) drops every 1000th control datagram it sends
# (XEVB_TEST_CTL_DROP=1000, test only: ASSIGN, DONE, REQUEST, CLEAR,
# STATUS, SOURCES, BUILDERS; not BYE nor RECEIVED). 20,000 events at
# 3 kHz in blocks of 4. A lost ASSIGN or DONE is repaired by a RETRY
# after --retry-first-ms (10 ms, doubling), a lost REQUEST by a re-ask,
# a lost ASSIGN to a source by the builder's re-ask: at the DFM triggered
# = complete, nothing lost, its books closed at the farm nodes (exit 0);
# at the farm nodes every event once.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dl "${1:-build}" --sources 2 --builders 3 --sinks 2 --dfm 1

N=20000
export XEVB_TEST_CTL_DROP=1000
for mode in push pull; do
	for k in 0 1; do dfm_sink "$k" "${mode}_sink$k" --credits 64 --dfm "$DFM_ADDR"; done
	for k in 0 1 2; do dfm_builder "$k" "${mode}_b$k" 2 --sources 0-3 --credits 32; done
	dfm_source 0 "${mode}_s0" --source-ids 0-1 --frag-size 200
	dfm_source 1 "${mode}_s1" --source-ids 2-3 --frag-size 200
	dfm_run_to_end "${mode}_dfm" --mode "$mode" --rate 3000 --events "$N" --pack 4 --wait-builders 3 --wait-sources 2
	e2e_check "loss_$mode" <<PY
$DFM_PY
m, n = "$mode", $N
d = J(m + "_dfm")
true("the DFM dropped datagrams on purpose (%d of %d)" % (d["ctl"]["test_dropped"], d["ctl"]["sent"]),
     d["ctl"]["test_dropped"] > 0)
eq("triggered = complete, nothing lost or outstanding", (d["triggered"], d["complete"], lost(d), d["outstanding"]), (n, n, 0, 0))
true("lost ASSIGNs and DONEs repaired by RETRYs (%d)" % d["retries"], d["retries"] > 0)
eq("no builder taken for dead", sum(x["deaths"] for x in d["builders"]), 0)
sk = [J(m + "_sink%d" % i) for i in (0, 1)]
eq("farm nodes: every event once", (sum(x["events"] for x in sk), sum(x["duplicates"] for x in sk)), (n, 0))
fn = d["farm_nodes"]
eq("the DFM's books closed at the farm nodes", (fn["received"], fn["not_delivered"]), (n, 0))
bl = [JL(m + "_b%d" % i, "dfm_ctl") for i in (0, 1, 2)]
print("# %s: DFM sent %d datagrams, dropped %d; RETRYs %d (DONE again %d), re-asks %d, repeated DONEs %d" % (
    m, d["ctl"]["sent"], d["ctl"]["test_dropped"], d["retries"], sum(x["done_resent"] for x in bl),
    sum(x["reask_events"] for x in bl), d["done_repeated"]))
PY
done
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A builder the DFM wrongly takes for dead costs nothing, push and pull:
# 3 builders (16 credits each) x 2 source processes x 1 farm node
# reporting to the DFM, 12,000 events at 2 kHz in blocks of 4, --dead-ms
# 200. Builder 2 is stopped (SIGSTOP) for 600 ms once it has built events,
# then goes on (SIGCONT). The DFM takes it for dead and gives its
# outstanding events to the others; when it wakes, its lease on DONE has
# run out and the DFM no longer knows its epoch (the fence): it drops what
# it holds without a DONE sent (`fenced`), keeps what it reported, and
# comes back as a new incarnation. At the farm node every event exactly
# once (no duplicate), at the DFM triggered = complete, nothing lost, its
# books closed at the farm node, and every event it took from a builder
# dropped there or reported before (a builder taken for dead in error under
# this machine's load is fenced too, at no cost).
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init df "${1:-build}" --sources 2 --builders 3 --sinks 1 --dfm 1

N=12000
for mode in push pull; do
	dfm_sink 0 "${mode}_sink0" --credits 64 --dfm "$DFM_ADDR"
	for k in 0 1 2; do dfm_builder "$k" "${mode}_b$k" 1 --sources 0-3 --credits 16; done
	victim=$E2E_LAST_PID
	dfm_source 0 "${mode}_s0" --source-ids 0-1 --frag-size 200
	dfm_source 1 "${mode}_s1" --source-ids 2-3 --frag-size 200
	(
		e2e_until "$E2E_WAIT" e2e_bstat 2 'd["events_complete"] > 0' || exit 1
		p=$(e2e_xevb_pid "$victim") || exit 1
		kill -STOP "$p"
		sleep 0.6 # the fault: stopped for 3 x --dead-ms
		kill -CONT "$p"
	) &
	stopper=$!
	dfm_run "${mode}_dfm" --mode "$mode" --rate 2000 --events "$N" --pack 4 --dead-ms 200 \
		--wait-builders 3 --wait-sources 2
	wait "$stopper" || e2e_fail "${mode}: builder 2 was never stopped"
	dfm_stop_all
	e2e_wait_all
	e2e_check "fence_$mode" <<PY
$DFM_PY
m, n = "$mode", $N
d = J(m + "_dfm")
eq("triggered = complete, nothing lost or outstanding", (d["triggered"], d["complete"] + d["incomplete"], lost(d), d["outstanding"]), (n, n, 0, 0))
v = [x for x in d["builders"] if x["addr"] == "198.18.2.3"][0]
true("the stopped builder taken for dead, by silence (deaths %d, dead_silent %d)" % (v["deaths"], d["dead_silent"]),
     v["deaths"] >= 1 and d["dead_silent"] >= 1)
true("it came back as a new incarnation (%d)" % v["restarts"], v["restarts"] >= 1)
true("its outstanding events re-assigned (%d)" % v["reassigned_away"], v["reassigned_away"] > 0)
bcs = [JL(m + "_b%d" % i, "dfm_ctl") for i in (0, 1, 2)]
bc, f = bcs[2], bcs[2]["fence"]
print("# %s: re-assigned from it %d; it fenced %d (open %d, built %d; built later %d; given back %d), DONE late from the dead one %d, foreign %d, STATUS refused from its old epoch %d" % (
    m, v["reassigned_away"], bc["fenced"], f["open"], f["built"], f["built_later"], f["regained"], d["done_late_dead"], d["done_foreign"], d["fenced_status"]))
true("it started anew (%d)" % f["fences"], f["fences"] >= 1)
# A builder taken for dead in error under this machine's load costs nothing
# either: the same rules hold for every builder. Each event taken from one:
# dropped there (fenced), or its DONE had left before and came late (kept by
# the DFM, or foreign once re-assigned).
others = [x["addr"] for x in d["builders"] if x["deaths"] and x is not v]
print("# %s: other builders taken for dead (this machine's load): %s" % (m, others))
eq("what the DFM gave away = fenced + late DONEs (kept, foreign), all builders",
   sum(x["reassigned_away"] for x in d["builders"]), sum(x["fenced"] for x in bcs) + d["done_late_dead"] + d["done_foreign"])
print("# %s: leases that lapsed at the builders never stopped: %s" % (m, [b["fence"]["lease_expired"] for b in bcs[:2]]))
sk = J(m + "_sink0")
eq("farm node: every event exactly once", (sk["events"], sk["duplicates"]), (n, 0))
fn = d["farm_nodes"]
eq("the DFM's books closed at the farm node", (fn["received"], fn["not_delivered"]), (n, 0))
if m == "push":
    src = [J(m + "_s%d" % i) for i in (0, 1)]
    eq("each source sent its data of every re-assigned event again", [x["assign_again"] for x in src], [d["reassigned"]] * 2)
PY
done
e2e_finish

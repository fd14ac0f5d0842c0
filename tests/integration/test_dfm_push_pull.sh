#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Data-flow manager, push and pull: 2 source processes (4 sources) x 2
# builders (credits 24 and 48) x 2 farm nodes + the DFM. Every event is
# built exactly once across the builders, the split follows the credits,
# (below saturation; at saturation each builder gets what it returns),
# the sources hold and release every event, and the books balance:
# triggered = complete + incomplete + lost, farm nodes got every event once.
# Push: the farm nodes report to the DFM and its books close there
# (not_delivered 0); pull: they do not, and the DFM says so (exit 0).
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dp "${1:-build}" --sources 2 --builders 2 --sinks 2 --dfm 1

for mode in push pull; do
	# Push: the farm nodes report to the DFM (its books close there); pull: they do not.
	report=()
	[[ $mode == push ]] && report=(--dfm "$DFM_ADDR")
	for k in 0 1; do dfm_sink "$k" "${mode}_sink$k" --credits 32 "${report[@]}"; done
	dfm_builder 0 "${mode}_b0" 2 --sources 0-3 --credits 24
	dfm_builder 1 "${mode}_b1" 2 --sources 0-3 --credits 48
	dfm_source 0 "${mode}_s0" --source-ids 0-1 --frag-size 100-300
	dfm_source 1 "${mode}_s1" --source-ids 2-3 --frag-size 100-300
	dfm_run_to_end "${mode}_dfm" --mode "$mode" --rate 4000 --events 12000 --pack 4 --wait-builders 2 --wait-sources 2
	E2E_MODE=$mode e2e_check "$mode" <<PY
$DFM_PY
m = "$mode"
d = J(m + "_dfm")
eq("triggered", d["triggered"], 12000)
eq("complete + incomplete + lost", d["complete"] + d["incomplete"] + lost(d), d["triggered"])
eq("complete (nothing lost on a quiet testbed)", d["complete"], 12000)
eq("DONE from nobody / twice", d["done_unknown"] + d["done_foreign"] + d["done_unknown_peer"], 0)
b = {x["addr"]: x for x in d["builders"]}
a0, a1 = b["198.18.2.1"]["assigned"], b["198.18.2.2"]["assigned"]
true("split follows credits 24:48 (got %d:%d)" % (a0, a1), abs(a1 / max(a0, 1) - 2.0) < 0.1)
bc = [JL(m + "_b%d" % i, "dfm_ctl") for i in (0, 1)]
# An event slower than the DFM's first RETRY (10 ms, or 2 x p99) gets its DONE twice.
eq("builders' DONE complete, less those sent again for a RETRY", sum(x["done_complete"] - x["done_resent"] for x in bc), 12000)
true("DONEs the DFM saw twice (%d) are DONEs sent again (%d)" % (d["done_repeated"], sum(x["done_resent"] for x in bc)),
     d["done_repeated"] <= sum(x["done_resent"] for x in bc))
eq("builders forwarded", sum(x["forwarded"] for x in bc), 12000)
eq("backlog overflow", sum(x["backlog_overflow"] for x in bc), 0)
sk = [J(m + "_sink%d" % i) for i in (0, 1)]
eq("farm nodes received every event once", sum(x["events"] for x in sk), 12000)
eq("farm-node duplicates and errors", sum(x["duplicates"] + x["errors"] for x in sk), 0)
fn = d["farm_nodes"]
if m == "push":
    eq("farm nodes reporting, books closed, not_delivered", (fn["reporting"], fn["books_closed"], d["not_delivered"]),
       (2, True, 0))
    eq("received at the farm nodes per builder = DONE", [x["received"] for x in d["builders"]],
       [x["complete"] + x["incomplete"] for x in d["builders"]])
    eq("received in total", (fn["received"], fn["received_unknown"]), (12000, 0))
else:
    eq("no farm node reporting: books not closed there", (fn["reporting"], fn["books_closed"], d["not_delivered"]),
       (0, False, 0))
    true("the DFM says the books could not be closed at the farm nodes",
         "could not be closed at the farm nodes" in open(W + "/pull_dfm.err").read())
true("both farm nodes used", min(x["events"] for x in sk) > 3000, [x["events"] for x in sk])
for i in (0, 1):
    s = J(m + "_s%d" % i)
    eq("source %d cleared every event it held" % i, (s["cleared"], s["held_now"], s["hold_overflow"]), (12000, 0, 0))
    if m == "pull":
        eq("source %d answered every request, no ASSIGN" % i, (s["answered_events"], s["assigns"]), (12000, 0))
    else:
        eq("source %d sent where told" % i, (s["assigned_events"], s["fragments"]), (12000, 24000))
        # The blocks came as ROUTE tables (ASSIGN copies only before a builder was listed twice).
        true("source %d took ROUTE tables, every id known" % i, s["routes"] > 0 and s["route_unknown_builder"] == 0,
             (s["routes"], s["route_unknown_builder"]))
PY
done
e2e_finish

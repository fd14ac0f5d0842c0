#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A tenth of the builders SIGKILLed mid-run costs no event, push and pull,
# with real processes: 10 builders (`xevb build`, socket mode, 16 credits
# each) x 2 source processes x 2 farm nodes reporting to the DFM, 16,000
# events at 2 kHz in blocks of 4; builder 9 is killed once it has built
# events. Its outstanding events go to the other builders (in push the
# sources send the data they hold again), and the books are exact: at the
# DFM triggered = complete, nothing lost or outstanding, its books closed
# at the farm nodes (exit 0: nothing DONE and not delivered); at the farm
# nodes every event once (an event the victim forwarded before its DONE
# left arrives twice: counted as a duplicate, at most what was
# re-assigned), and what they report is what the DFM's builders DONE.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dk "${1:-build}" --sources 2 --builders 10 --sinks 2 --dfm 1

N=16000
for mode in push pull; do
	for k in 0 1; do
		# The victim's connection may break inside an event: the farm node
		# counts it and exits 1; judged from its JSON below.
		E2E_SINK_RC=x dfm_sink "$k" "${mode}_sink$k" --credits 64 --dfm "$DFM_ADDR" || true
	done
	for k in 0 1 2 3 4 5 6 7 8; do dfm_builder "$k" "${mode}_b$k" 2 --sources 0-3 --credits 16; done
	E2E_BUILD_RC=137 dfm_builder 9 "${mode}_b9" 2 --sources 0-3 --credits 16
	victim=$E2E_LAST_PID
	dfm_source 0 "${mode}_s0" --source-ids 0-1 --frag-size 200
	dfm_source 1 "${mode}_s1" --source-ids 2-3 --frag-size 200
	( e2e_until "$E2E_WAIT" e2e_bstat 9 'd["events_complete"] > 0'; kill -KILL "$(e2e_xevb_pid "$victim")" ) &
	killer=$!
	dfm_run "${mode}_dfm" --mode "$mode" --rate 2000 --events "$N" --pack 4 --wait-builders 10 --wait-sources 2 ${KILL_DFM_ARGS:-}
	wait "$killer"
	dfm_stop_all
	for i in "${!E2E_NAMES[@]}"; do
		[[ ${E2E_NAMES[$i]} == "${mode}"_sink* ]] || continue
		{ wait "${E2E_PIDS[$i]}"; } 2>/dev/null
		E2E_WANT[$i]=$?
	done
	e2e_wait_all
	e2e_check "kill_$mode" <<PY
$DFM_PY
m, n = "$mode", $N
d = J(m + "_dfm")
eq("triggered = complete, nothing lost or outstanding", (d["triggered"], d["complete"] + d["incomplete"], lost(d), d["outstanding"]), (n, n, 0, 0))
eq("builder_dead losses", d["lost"]["builder_dead"], 0)
v = [x for x in d["builders"] if x["addr"] == "198.18.2.10"][0]
eq("the killed builder died once", v["deaths"], 1)
eq("found dead once: by port unreachable or by silence", d["dead_unreachable"] + d["dead_silent"], 1)
print("# %s: found dead by port unreachable %d, by silence %d, %.1f ms after its last word" % (
    m, d["dead_unreachable"], d["dead_silent"], v["dead_after_ms"]))
true("found dead within --dead-ms 200 of its last word (%.1f ms)" % v["dead_after_ms"], 0 < v["dead_after_ms"] <= 200 + 50)
eq("the trigger never waited for the table", d["stall_table"], 0)
print("# %s: longest silence of the builders alive (ms): %s" % (m, sorted(x["max_silent_ms"] for x in d["builders"] if x is not v)))
true("its outstanding events re-assigned (%d, at most its 16 credits)" % d["reassigned"], 0 < d["reassigned"] <= 16)
eq("re-assigned away from it", v["reassigned_away"], d["reassigned"])
true("the others carried on: every builder built events", all(x["complete"] > 0 for x in d["builders"]))
eq("no other builder taken for dead (--dead-ms 200, under this machine's load)",
   [x["addr"] for x in d["builders"] if x["deaths"] and x["addr"] != "198.18.2.10"], [])
sk = [J(m + "_sink%d" % i) for i in (0, 1)]
got = sum(x["events"] for x in sk)
dups = sum(x["duplicates"] for x in sk)
eq("farm nodes: every event once", got - dups, n)
true("duplicates (%d) at most the re-assigned events" % dups, dups <= d["reassigned"])
bad = {k: v for x in sk for k, v in x["error_kinds"].items()
       if k not in ("duplicate_event", "read_error", "truncated_stream")}
eq("farm-node errors other than duplicates and the victim's cut connection", bad, {})
fn = d["farm_nodes"]
eq("the DFM's books closed at the farm nodes: nothing DONE and not delivered", fn["not_delivered"], 0)
true("what they reported (%d) is what they got (%d, %d of it duplicates)" % (fn["received"], got, dups),
     got - dups <= fn["received"] <= got)
if m == "push":
    src = [J(m + "_s%d" % i) for i in (0, 1)]
    eq("each source sent its data of every re-assigned event again", [x["assign_again"] for x in src],
       [d["reassigned"]] * 2)
PY
done
e2e_finish

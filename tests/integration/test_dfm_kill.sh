#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The DFM killed with SIGKILL mid-run, events in flight, and started again
# with the same --state file, 2 source processes x 2 builders x 1 farm node,
# in push and in pull mode. Nobody is wedged: sources and builders keep
# running, learn the new epoch and serve the new DFM, which resumes the
# event numbering past every id the dead one reserved (no farm node sees
# an id twice). The dead epoch's events open at the restart are each
# accounted for by the builders: built complete, built incomplete, or lost
# by reason (no_data, slot), never silently; the new DFM's books balance;
# every event each builder built is written to the farm node or dropped by
# reason, and the farm node got exactly what was written.
#  - push: every event waits for a source id nobody sends (--sources 0-4),
#    so each stays open for --timeout-ms (3 s) and many are still open when
#    the new DFM is heard, however slowly it starts;
#  - pull: a source drops 10% of its answers and the builders re-ask late
#    (1 s), so events still wait for re-asks when the new DFM is heard; the
#    re-asks still recover them.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dK "${1:-build}" --sources 2 --builders 2 --sinks 1 --dfm 1

for mode in push pull; do
	state="$E2E_WORK/$mode.state"
	dfm_sink 0 "${mode}_sink" --credits 256
	if [[ $mode == push ]]; then
		bopt=(--sources 0-4 --credits 4000 --timeout-ms 3000 --tune reask-ms=100 --tune max-reasks=1)
		rate=1000
		sopt=()
		dopt=(--retry-ms 8000)
	else
		bopt=(--sources 0-3 --credits 64 --tune reask-ms=1000 --tune max-reasks=5 --timeout-ms 7000)
		rate=2000
		sopt=(--drop-answers 0.1 --seed 11)
		dopt=(--retry-ms 8000)
	fi
	for k in 0 1; do dfm_builder "$k" "${mode}_b$k" 1 "${bopt[@]}"; done
	dfm_source 0 "${mode}_s0" --source-ids 0-1 --frag-size 200 "${sopt[@]}"
	dfm_source 1 "${mode}_s1" --source-ids 2-3 --frag-size 200
	# The first DFM would run 20-40 s; it is killed once it triggers and the
	# builders have opened events (their published counters say so).
	ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --json --interval 0 --mode "$mode" \
		--rate "$rate" --events 40000 --pack 4 --wait-builders 2 --wait-sources 2 --state "$state" "${dopt[@]}" \
		>"$E2E_WORK/${mode}_dfm1.json" 2>"$E2E_WORK/${mode}_dfm1.err" &
	first=$!
	e2e_wait_line triggering "$E2E_WORK/${mode}_dfm1.err" || e2e_fail "$mode: the first DFM did not trigger"
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_opened"] > 0' || e2e_fail "$mode: builder 0 opened no event"
	kill -KILL "$(e2e_xevb_pid "$first")"
	{ wait "$first"; } 2>/dev/null
	rc=$?
	if ((rc == 137)); then e2e_ok "$mode: first DFM killed (status 137)"; else
		e2e_fail "$mode: first DFM exit status $rc, want 137 (killed)"; e2e_show "${mode}_dfm1"; fi
	sleep 0.1
	dfm_run_to_end "${mode}_dfm2" --mode "$mode" --rate "$rate" --events 4000 --pack 4 --wait-builders 2 \
		--wait-sources 2 --state "$state" "${dopt[@]}"
	e2e_check "kill_$mode" <<PY
$DFM_PY
m = "$mode"
d = J(m + "_dfm2")
true("new DFM resumed from the state file past the dead one's ids (first %d)" % d["first_event"],
     d["resumed"] and d["first_event"] > 0)
eq("new DFM: triggered", d["triggered"], 4000)
eq("new DFM: triggered = complete + incomplete + lost, outstanding 0",
   (d["complete"] + d["incomplete"] + lost(d), d["outstanding"]), (4000, 0))
if m == "push":
    eq("new DFM: every event incomplete (source id 4 never sends), none lost", (d["incomplete"], lost(d)), (4000, 0))
else:
    eq("new DFM: every event complete (re-asks recovered the drops)", d["complete"], 4000)
bc = [JL(m + "_b%d" % i, "dfm_ctl") for i in (0, 1)]
# Until a builder hears the new DFM it reports the dead one's events to the
# same address: the new DFM counts them, they are the builders' dead-epoch DONEs.
old_done = sum(x["restart"]["done"] for x in bc)
eq("new DFM: DONE from the wrong builder", d["done_foreign"], 0)
true("new DFM: DONE unknown + from unknown peer (%d) are dead-epoch DONEs (<= %d)" % (d["done_unknown"] + d["done_unknown_peer"], old_done),
     d["done_unknown"] + d["done_unknown_peer"] <= old_done)
eq("builders saw one DFM restart each", [x["dfm_restarts"] for x in bc], [1, 1])
eq("... and kept their cores (numbering continued)", [x["core_resets"] for x in bc], [0, 0])
R = [x["restart"] for x in bc]
op = sum(r["open"] for r in R)
true("dead epoch: events in flight at the restart (%d)" % op, op > 0)
for i, r in enumerate(R):
    eq("b%d dead epoch: assigned = DONE reported + slot overflow + open at the restart" % i, r["assigned"],
       r["done"] + r["overflow"] + r["open"])
    eq("b%d dead epoch: no slot overflow" % i, r["overflow"], 0)
    eq("b%d dead epoch open: = built complete + incomplete + lost no_data + lost slot" % i,
       r["open"], r["built_complete"] + r["built_incomplete"] + r["lost_no_data"] + r["lost_slot"])
    eq("b%d dead epoch: nothing still open" % i, r["still_open"], 0)
if m == "pull":
    # Sources released the dead epoch's events; re-asks are served unheld.
    eq("dead epoch: open events all built, none lost", sum(r["built_complete"] + r["built_incomplete"] for r in R), op)
    true("dead epoch: most of them complete after re-asks (%d of %d)" % (sum(r["built_complete"] for r in R), op),
         sum(r["built_complete"] for r in R) * 2 >= op)
else:
    eq("dead epoch: open events all built incomplete (the missing id)", sum(r["built_incomplete"] for r in R), op)
# Every event a builder core built, either epoch, left it by reason: sent
# to the farm node whole (all of them over the credit path), or dropped
# for want of a farm node or on a write error; nothing stays behind.
for i in (0, 1):
    j = J(m + "_b%d" % i)
    built = j["events_complete"] + j["events_incomplete"]
    eq("b%d: built (%d) = written + dropped no farm node + dropped write error + dropped buffer full" % (i, built),
       j["out_events"] + j["out_dropped_no_sink"] + j["out_dropped_error"] + j["out_dropped_backlog"], built)
    eq("b%d: written = forwarded over the credit path" % i, j["out_events"], bc[i]["forwarded"])
    eq("b%d: nothing discarded or open in the core, nothing backlogged at the end" % i,
       (j["events_discarded"], j["open_events"], bc[i]["backlog_overflow"]), (0, 0, 0))
    eq("b%d: core fragments received = in events + drops" % i, j["frags_received"],
       j["frags_in_events"] + sum(j[k] for k in j if k.startswith("drop_")))
# A DONE sent again for an ASSIGN the DFM re-sent (a late DONE on a loaded
# machine) is counted once more in done_*: done_resent takes it back.
new_done = sum(x["done_complete"] + x["done_incomplete"] + x["done_no_data"] - x["done_resent"] for x in bc) - \
    sum(r["done"] for r in R)
eq("builders reported the new DFM's events", new_done, 4000)
sk = J(m + "_sink")
fw = sum(x["forwarded"] for x in bc)
eq("farm node: events = forwarded by the builders", sk["events"], fw)
eq("farm node: no duplicate, no error", (sk["duplicates"], sk["errors"]), (0, 0))
for i in (0, 1):
    s = J(m + "_s%d" % i)
    eq("source %d saw the restart" % i, s["dfm_restarts"], 1)
    eq("source %d: no hold overflow" % i, s["hold_overflow"], 0)
    eq("source %d: nothing held at the end (re-asks after the restart are served unheld)" % i, s["held_now"], 0)
PY
done
e2e_finish

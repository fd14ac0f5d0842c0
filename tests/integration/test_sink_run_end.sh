#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# xevb sink ends when its run has ended: the demo's run as it ships
# (examples/demo.ini: push, 8 source processes, one XDP builder with
# exit_on_eor, two farm nodes that report to the DFM, 60,000 events), every
# process started from the file and its --id, and nobody told to stop. The
# DFM ends the run (BYE, to the farm nodes too), the builder forwards what
# it holds and closes its streams, and each farm node then ends by itself:
# run_end "dfm", no signal, exit status 0, every event taken exactly once
# between them, the DFM's books closed at them. A farm node that missed the
# end would run into its --duration (run_end "", exit 124 from timeout or a
# summary without run_end): the outcome is exact, not a matter of time.
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_init sre "${1:-build}" --sources 8 --builders 1 --sinks 2 --dfm 1
CFG=examples/demo.ini

for k in 0 1; do rc_sink "$CFG" "$k" "k$k"; done
rc_builder "$CFG" 1 0 b
for s in 0 1 2 3 4 5 6 7; do rc_source "$CFG" "$s" "s$s"; done
rc_dfm "$CFG" dfm
# Nobody is stopped: every process ends by itself, or timeout(1) ends it
# (E2E_TMO) and the exit status says so.
for p in "${E2E_PIDS[@]}"; do e2e_wait_exit "$p" "$E2E_TMO"; done
e2e_wait_all

e2e_check sink_run_end <<PY
$DFM_PY
n = 60000
d = J("dfm")
eq("DFM: triggered, built complete, lost", (d["triggered"], d["complete"], lost(d)), (n, n, 0))
eq("DFM: both farm nodes reported, books closed at them, nothing undelivered",
   (d["farm_nodes"]["reporting"], d["farm_nodes"]["books_closed"], d["farm_nodes"]["received"], d["not_delivered"]),
   (2, True, n, 0))
k = [J("k0"), J("k1")]
for i in (0, 1):
    eq("farm node %d ended at the DFM's end of run, by itself" % i,
       (k[i]["run_end"], k[i]["signal"], k[i]["result"]), ("dfm", 0, "ok"))
    eq("farm node %d: errors, duplicates, connections dropped" % i,
       (k[i]["errors"], k[i]["duplicates"], k[i]["connections_dropped"]), (0, 0, 0))
eq("farm nodes: every event once, complete", (k[0]["events"] + k[1]["events"],
   k[0]["complete"] + k[1]["complete"]), (n, n))
true("both farm nodes took events (%d, %d)" % (k[0]["events"], k[1]["events"]),
     k[0]["events"] > 0 and k[1]["events"] > 0)
PY
e2e_finish

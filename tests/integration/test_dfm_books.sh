#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The books close at the farm nodes: a stray host (no configuration, open
# membership) claims to be a builder with 4096 credits and answers every
# ASSIGN with DONE complete. The DFM (push, 5 kHz, 20000 events, waiting
# for 2 builders) hands it most events; one real builder forwards its share
# to a farm node that reports to the DFM (xevb sink --dfm). The DFM's books
# balance (every event DONE complete), but the farm node's counts show the
# stray's events never arrived: not_delivered = exactly what the DFM
# assigned the stray, and the DFM exits 4 naming it. The real builder's
# events all arrived: not_delivered 0 for it.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init db "${1:-build}" --sources 1 --builders 2 --sinks 1 --dfm 1

dfm_sink 0 sink0 --dfm "$DFM_ADDR"
dfm_builder 0 b0 1 --sources 0-7
dfm_stray 1 stray --credits 4096
dfm_source 0 s0 --source-ids 0-7 --frag-size 100
DFM_RC=4 dfm_run dfm --mode push --rate 5000 --events 20000 --wait-builders 2 --wait-sources 1
dfm_stop_all
e2e_wait_all
e2e_check stray <<PY
$DFM_PY
d = J("dfm")
eq("triggered", d["triggered"], 20000)
eq("complete (the DFM's own books balance: the stray says DONE complete)", d["complete"], 20000)
eq("lost, outstanding", (lost(d), d["outstanding"]), (0, 0))
eq("accounting_ok", d["accounting_ok"], True)
b = {x["addr"]: x for x in d["builders"]}
real, stray = b["198.18.2.1"], b["198.18.2.2"]
st = J("stray")
true("the stray took most events (%d of 20000)" % stray["assigned"], stray["assigned"] >= 15000, stray)
eq("stray: not_delivered = what the DFM assigned it, exactly", stray["not_delivered"], stray["assigned"])
eq("stray: received at the farm nodes", stray["received"], 0)
# The stray counts the events in the ASSIGNs it got; a datagram lost on the
# way would make it count less than the DFM handed out (bound: 1%, 0 on a
# quiet testbed).
n = stray["not_delivered"]
true("stray's own count of events taken (%d) within 1%% of not_delivered (%d)" % (st["assigned_events"], n),
     abs(st["assigned_events"] - n) <= n // 100, st)
eq("stray answered every event", st["done_sent"] > 0 and st["status_sent"] > 0, True)
eq("real builder: not_delivered", real["not_delivered"], 0)
eq("real builder: received = its DONEs", real["received"], real["complete"] + real["incomplete"])
fn = d["farm_nodes"]
eq("farm nodes reporting, books closed", (fn["reporting"], fn["books_closed"]), (1, True))
eq("not_delivered in total = the stray's", (d["not_delivered"], fn["not_delivered"]), (n, n))
sk = J("sink0")
eq("the farm node got exactly the real builder's events", sk["events"], real["received"])
eq("farm-node duplicates and errors", sk["duplicates"] + sk["errors"], 0)
bc = JL("b0", "dfm_ctl")
eq("real builder forwarded its DONEs", bc["forwarded"], real["complete"] + real["incomplete"])
err = open(W + "/dfm.err").read()
true("the DFM names the stray and what to check",
     "builder 198.18.2.2:23902" in err and "never reached a farm node" in err, err[-600:])
PY
e2e_finish

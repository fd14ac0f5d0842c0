#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: none
# parallel: yes
# Data that comes after the builder gave its event up. The DFM (pull,
# 100 Hz, 400 events in blocks of 10) assigns events to one builder, but no
# source process runs: nobody answers, the builder asks nobody and after
# its re-ask time (3 x 20 ms) reports each event lost, no_data. Then a
# plain source sends events 0-99 after all; the builder builds them and
# forwards them to the farm node. Asserted: the builder sends each of them
# a second DONE with its outcome (built_after_no_data), the DFM counts
# exactly those events complete and takes them back from its losses
# (no_data_recovered; the counters only grow: lost no_data stays 400, the
# books' lost_total is 400 - recovered), and the DFM's books agree with
# the farm node's: complete = events the farm node received = events
# built after no_data.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dl "${1:-build}" --sources 1 --builders 1 --sinks 1 --dfm 1

dfm_sink 0 sink0 --credits 64
dfm_builder 0 b0 1 --sources 0-3 --credits 64 --tune reask-ms=20 --tune max-reasks=2
ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --json --interval 0 --mode pull \
	--rate 100 --events 400 --pack 10 --wait-builders 1 --wait-sources 0 --drain-ms 1000 --metrics 9466 \
	>"$E2E_WORK/dfm.json" 2>"$E2E_WORK/dfm.err" &
DFM_PID=$!
_e2e_track "$DFM_PID" dfm 0
# Events 0-99 are assigned within the DFM's first second, and given up
# 60 ms after their ASSIGN; the data follows once the DFM has counted all
# 100 lost (its page says so), three seconds before its last ASSIGN.
no_data_100() {
	tb_exec dfm 0 curl -s -m 5 http://127.0.0.1:9466/metrics 2>/dev/null |
		awk '$1 == "xevb_dfm_events_lost_total{reason=\"no_data\"}" && $2 >= 100 { ok = 1 } END { exit !ok }'
}
e2e_until "$E2E_WAIT" no_data_100 || e2e_fail "the DFM did not count events 0-99 lost in $E2E_WAIT s"
tb_exec source 0 timeout "$E2E_TMO" "$X" source --dest "$(tb_addr builder 0)" --udp --source-ids 0-3 \
	--frag-size 100 --pack 10 --first-event 0 --events 100 --no-end-of-run --json --quiet \
	>"$E2E_WORK/late.json" 2>"$E2E_WORK/late.err" || e2e_fail "late source: exit status $?"
# The DFM ends by itself (400 events at 100 Hz, then its drain); the
# others at its BYE or, if not, from dfm_stop_all.
e2e_wait_exit "$DFM_PID" "$E2E_TMO"
dfm_stop_all
e2e_wait_all
e2e_check late <<PY
$DFM_PY
d = J("dfm")
bc = JL("b0", "dfm_ctl")
sk = J("sink0")
eq("DFM: triggered", d["triggered"], 400)
n = d["no_data_recovered"]
true("DFM: events given up as no_data, then built, moved to complete (%d)" % n, n >= 50, d)
eq("builder: built after no_data = what the DFM moved", bc["built_after_no_data"], n)
eq("DFM: complete = moved (every built event came late)", (d["complete"], d["incomplete"]), (n, 0))
eq("DFM: lost no_data counted (every event, once)", d["lost"]["no_data"], 400)
eq("DFM: lost in the books = triggered - complete", (lost(d), d["lost_total"]), (400 - n, 400 - n))
eq("DFM: lost otherwise, outstanding", (sum(d["lost"].values()) - d["lost"]["no_data"], d["outstanding"]), (0, 0))
eq("DFM: accounting_ok", d["accounting_ok"], True)
# A RETRY that crosses a DONE gets it again (done_resent): taken back.
eq("builder: DONE complete + no_data, less those sent again for a RETRY (the no_data DONE of each event, then a complete one for the late ones)",
   bc["done_complete"] + bc["done_no_data"] - bc["done_resent"], n + 400)
true("builder: DONE complete %d, no_data %d, of them sent again %d" % (bc["done_complete"], bc["done_no_data"], bc["done_resent"]),
     n <= bc["done_complete"] <= n + bc["done_resent"] and 400 <= bc["done_no_data"] <= 400 + bc["done_resent"])
eq("farm node: events = the DFM's complete", (sk["events"], sk["incomplete"]), (n, 0))
eq("builder: forwarded = the DFM's complete", bc["forwarded"], n)
eq("farm node: duplicates, errors", (sk["duplicates"], sk["errors"]), (0, 0))
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Stops and departures are loud. Push, 2 builders x 1 source process x 1
# farm node, a run of 200,000 events at 2 kHz (100 s: it must not run out):
#  - left: once both builders have built events, each gets SIGINT: each
#    says why it stops ("stopping: SIGINT received") and leaves with BYE;
#    the DFM names each BYE and its sender, and, with no builder left for
#    --dead-ms, says all builders left, stops the run at once and exits 6
#    (run failed): its books balance, what the builders held (waiting to
#    be re-assigned to a builder that never came) counted lost at_stop;
#  - stalled: one builder, SIGSTOPped once it has built events (its
#    --dead-ms of 60 s keeps it "alive"), the run ends by --duration 2 with
#    --drain-ms 300: the events it holds are still outstanding, the DFM
#    names it ("the run stalled") and exits 6, the books balance (lost
#    at_stop = what it held). SIGCONT then lets it end at the BYE.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init bL "${1:-build}" --sources 1 --builders 2 --sinks 1 --dfm 1

e2e_log "left: both builders stopped with SIGINT mid-run"
dfm_sink 0 left_sink --dfm "$DFM_ADDR"
dfm_builder 0 left_b0 1 --sources 0-3
p0=$(e2e_xevb_pid "$E2E_LAST_PID")
dfm_builder 1 left_b1 1 --sources 0-3
p1=$(e2e_xevb_pid "$E2E_LAST_PID")
dfm_source 0 left_s0 --source-ids 0-3 --frag-size 100
(
	e2e_wait_line triggering "$E2E_WORK/left_dfm.err"
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0'
	e2e_until "$E2E_WAIT" e2e_bstat 1 'd["events_complete"] > 0'
	kill -INT "$p0" "$p1"
) &
killer=$!
DFM_RC=6 dfm_run left_dfm --mode push --rate 2000 --events 200000 --wait-builders 2 --dead-ms 500
wait "$killer"
dfm_stop_all
e2e_wait_all

e2e_log "stalled: the only builder SIGSTOPped mid-run, the run ends by --duration"
dfm_sink 0 st_sink
dfm_builder 0 st_b0 1 --sources 0-3
p0=$(e2e_xevb_pid "$E2E_LAST_PID")
dfm_source 0 st_s0 --source-ids 0-3 --frag-size 100
(
	e2e_wait_line triggering "$E2E_WORK/st_dfm.err"
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0'
	kill -STOP "$p0"
) &
stopper=$!
DFM_RC=6 dfm_run st_dfm --mode push --rate 2000 --events 200000 --duration 2 --drain-ms 300 --dead-ms 60000
wait "$stopper"
kill -CONT "$p0"
dfm_stop_all
e2e_wait_all

e2e_check builders_left <<PY
$DFM_PY
def err(name):
    return open(os.path.join(W, name + ".err")).read()
d = J("left_dfm")
eq("left: books balance, outstanding 0", (d["accounting_ok"], d["outstanding"]), (True, 0))
eq("left: triggered = complete + incomplete + lost", d["complete"] + d["incomplete"] + lost(d), d["triggered"])
true("left: stopped long before its 200000 events (%d)" % d["triggered"], d["triggered"] < 100000)
eq("left: what the builders held waited for a builder to take it: lost at_stop, nothing else", lost(d),
   d["lost"]["at_stop"])
eq("left: the run failed", d["run_failed"], True)
eq("left: both builders dead", [b["alive"] for b in d["builders"]], [False, False])
e = err("left_dfm")
for b in ("$(tb_addr builder 0)", "$(tb_addr builder 1)"):
    true("left: the DFM names the BYE of %s" % b, "BYE from builder %s:23902" % b in e, e[-1500:])
true("left: the DFM says all builders left and the run failed",
     "all 2 builder(s) left the run" in e and "stopping the run, which failed" in e, e[-1500:])
for b in ("left_b0", "left_b1"):
    true("left: %s says why it stops" % b, "stopping: SIGINT received" in err(b), err(b)[-600:])
true("left: the source names the DFM's BYE", "BYE from the DFM $DFM_ADDR" in err("left_s0"), err("left_s0")[-600:])

d = J("st_dfm")
eq("stalled: books balance, outstanding 0", (d["accounting_ok"], d["outstanding"]), (True, 0))
b = d["builders"][0]
true("stalled: events held by the stopped builder lost at_stop (%d)" % d["lost"]["at_stop"], d["lost"]["at_stop"] > 0)
eq("stalled: lost = at_stop = triggered - complete - incomplete", (lost(d), d["lost"]["at_stop"]),
   (d["triggered"] - d["complete"] - d["incomplete"],) * 2)
eq("stalled: the run failed", d["run_failed"], True)
e = err("st_dfm")
true("stalled: the DFM names the builder and says the run stalled",
     "the run stalled: builder $(tb_addr builder 0):23902" in e and "still held %d event(s)" % d["lost"]["at_stop"] in e,
     e[-1500:])
true("stalled: the builder names the DFM's BYE once continued", "BYE from the DFM $DFM_ADDR" in err("st_b0"),
     err("st_b0")[-600:])
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Pull mode with a source that drops 5% of its answers on purpose: the
# builders re-ask only the missing sources (after 40 ms, up to 6 times),
# the source answers again flagged RESEND, and every event is built
# complete; the counters show how many re-asks it took.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dr "${1:-build}" --sources 2 --builders 2 --sinks 1 --dfm 1

dfm_sink 0 sink0 --credits 64
for k in 0 1; do dfm_builder "$k" "b$k" 1 --sources 0-5 --credits 32 --tune reask-ms=40 --tune max-reasks=6; done
dfm_source 0 s0 --source-ids 0-2 --frag-size 200 --drop-answers 0.05 --seed 7
dfm_source 1 s1 --source-ids 3-5 --frag-size 200
dfm_run_to_end dfm --mode pull --rate 3000 --events 6000 --pack 2 --wait-builders 2 --wait-sources 2
e2e_check reask <<PY
$DFM_PY
d = dfm_complete("dfm", 6000, "triggered = complete (re-asks recovered every answer)")
eq("incomplete + lost", d["incomplete"] + lost(d), 0)
s0, s1 = J("s0"), J("s1")
true("source 0 dropped answers on purpose (%d MEPs)" % s0["dropped_answers"], s0["dropped_answers"] > 50)
true("source 0 answered re-asks flagged RESEND (%d MEPs)" % s0["resend_meps"], s0["resend_meps"] >= s0["dropped_answers"] * 0.9)
bc = [JL("b%d" % i, "dfm_ctl") for i in (0, 1)]
re = sum(x["reask_events"] for x in bc)
true("builders re-asked (%d events)" % re, re >= s0["dropped_answers"] * 0.9)
# Only the missing sources were asked again: source 1 dropped nothing, so
# it saw (almost) no re-asks: only when a dropped answer of source 0 and a
# slow one of source 1 met in the same event.
true("source 1 RESEND MEPs (%d) far fewer than source 0's (%d)" % (s1["resend_meps"], s0["resend_meps"]),
     s1["resend_meps"] * 10 <= s0["resend_meps"])
eq("farm node got every event, complete", (J("sink0")["events"], J("sink0")["incomplete"]), (6000, 0))
PY
e2e_finish

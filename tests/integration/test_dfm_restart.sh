#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A DFM restart wedges nobody: a first DFM runs 3000 events (pull, run 1)
# and ends; a second one (new epoch, run 2, event ids from 0 again) starts with the
# same builders and sources still running, and builds all of its 3000 too:
# the sources released what the first one held, the builders restarted
# their cores for the new numbering (builder 1 runs 2 workers: both of
# its cores start afresh, and both build events of either run).
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dR "${1:-build}" --sources 2 --builders 2 --sinks 1 --dfm 1

dfm_sink 0 sink0 --credits 64
for k in 0 1; do
	e2e_builder "$k" "b$k" --mode socket --udp --dfm "$DFM_ADDR" --duration "$E2E_RUN" --sources 0-3 --credits 32 \
		--sink "$(tb_addr sink 0):$E2E_PORT" --workers $((k + 1)) --tune owner-block=4
done
# Sources outlive the first DFM's BYE only if they do not stop at it: a
# source stops at the BYE of the DFM it knows, so the second DFM's sources
# are started again (as a real run would), while the builders stay up.
dfm_source 0 s0a --source-ids 0-1 --frag-size 200
dfm_source 1 s1a --source-ids 2-3 --frag-size 200
dfm_run dfm1 --mode pull --rate 3000 --events 3000 --pack 3 --wait-builders 2 --wait-sources 2
# The first sources leave at its BYE: their control ports are free again.
e2e_wait_exit "$(e2e_pid s0a)" "$E2E_WAIT"
e2e_wait_exit "$(e2e_pid s1a)" "$E2E_WAIT"
dfm_source 0 s0b --source-ids 0-1 --frag-size 200 --run 2
dfm_source 1 s1b --source-ids 2-3 --frag-size 200 --run 2
dfm_run_to_end dfm2 --mode pull --rate 3000 --events 3000 --pack 3 --run 2 --wait-builders 2 --wait-sources 2
e2e_check restart <<PY
$DFM_PY
for n in ("dfm1", "dfm2"):
    d = dfm_complete(n, 3000, n + ": triggered = complete")
bc = [JL("b%d" % i, "dfm_ctl") for i in (0, 1)]
eq("both builders saw the DFM restart", [x["dfm_restarts"] for x in bc], [1, 1])
eq("... and restarted their cores", [x["core_resets"] for x in bc], [1, 1])
eq("farm node got both runs' events", J("sink0")["events"], 6000)
wk = JL("b1", "workers")
true("builder 1: both workers built events: %r" % [w["events_complete"] for w in wk],
     len(wk) == 2 and all(w["events_complete"] > 0 for w in wk))
PY
e2e_finish

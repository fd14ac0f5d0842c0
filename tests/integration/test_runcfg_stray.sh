#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Issue 20's stray builder, with a run configuration (examples/Nx1.ini:
# push, 20,000 events at 5,000/s, one builder, three source processes, one
# farm node). A stray host on the farm node's address, not in the file,
# sends STATUS as a builder with 4096 credits every 100 ms and would answer
# every ASSIGN with DONE complete (stray_builder.py). The DFM admits only
# the file's peers: the stray is assigned 0 events, every one of its
# messages the DFM received is counted not_member (and shown on the
# Prometheus page mid-run), the only builder the DFM knows is the
# configured one, and all 20,000 events reach the farm node complete.
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_need curl
e2e_init rs "${1:-build}" --sources 3 --builders 1 --sinks 1 --dfm 1
CFG=examples/Nx1.ini
N=20000
PORT=9465

rc_sink "$CFG" 0 k0
rc_builder "$CFG" 1 0 b0
for k in 0 1 2; do rc_source "$CFG" "$k" "s$k"; done
# The stray speaks before the DFM starts, as in the issue, and until the
# end of the run (SIGINT from dfm_stop_all): started once the others are up
# (however long that takes), its STATUS mostly fall in the DFM's lifetime.
ip netns exec "$(tb_ns sink 0)" timeout "$E2E_TMO" python3 tests/integration/stray_builder.py --dfm "$DFM_ADDR" \
	--bind "$(tb_addr sink 0)" --credits 4096 --duration "$E2E_RUN" --json "$E2E_WORK/stray.json" \
	--ready "$E2E_WORK/stray.ready" >"$E2E_WORK/stray.out" 2>"$E2E_WORK/stray.err" &
_e2e_track $! stray 0
e2e_until "$E2E_WAIT" test -e "$E2E_WORK/stray.ready" || e2e_die "the stray sent nothing"

ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --config "$CFG" --json --interval 0 --metrics "$PORT" \
	>"$E2E_WORK/dfm.json" 2>"$E2E_WORK/dfm.err" &
_e2e_track $! dfm 0
dfm_pid=$!
e2e_wait_line triggering "$E2E_WORK/dfm.err" || e2e_fail "the DFM did not trigger"
# Mid-run, once the page counts the stray's messages.
mid_counted() {
	tb_exec dfm 0 curl -s -m 5 -o "$E2E_WORK/mid.prom" "http://127.0.0.1:$PORT/metrics" &&
		awk '$1 == "xevb_dfm_control_messages_not_admitted_total{reason=\"not_member\"}" && $2 > 0 { ok = 1 }
			END { exit !ok }' "$E2E_WORK/mid.prom"
}
e2e_until "$E2E_WAIT" mid_counted || e2e_fail "GET /metrics mid-run: no not_member counted in $E2E_WAIT s"
e2e_wait_exit "$dfm_pid" "$E2E_TMO"
dfm_stop_all
e2e_wait_all
grep -E 'not_admitted|membership' "$E2E_WORK/mid.prom"
e2e_check runcfg_stray <<PY
$DFM_PY
N = $N
d = J("dfm")
st = json.load(open(os.path.join(W, "stray.json")))
na = d["ctl"]["not_admitted"]
# (the run alone is 4 s: 40 STATUS at 10/s; half of it is enough to say so)
true("the stray spoke all along (%d STATUS)" % st["status_sent"], st["status_sent"] >= 20)
eq("stray: events assigned, DONE sent", (st["assigned_events"], st["done_sent"]), (0, 0))
eq("DFM: the only builder it knows is the configured one", [(b["addr"], b["id"]) for b in d["builders"]],
   [("198.18.2.1", 1)])
true("DFM: the stray's STATUS counted not_member (%d of %d sent)" % (na["not_member"], st["status_sent"]),
     0.4 * st["status_sent"] <= na["not_member"] <= st["status_sent"])
eq("DFM: no other refusal", (na["role_mismatch"], na["id_mismatch"], na["source_ids_mismatch"]), (0, 0, 0))
eq("DFM: triggered = complete, nothing lost", (d["triggered"], d["complete"], d["incomplete"], lost(d)), (N, N, 0, 0))
k = None
for l in open(os.path.join(W, "k0.json")).read().splitlines():
    if l.startswith('{"events"'):
        k = json.loads(l)
eq("farm node: every event once, complete", (k["events"], k["complete"], k["duplicates"], k["errors"]), (N, N, 0, 0))
fn = d["farm_nodes"]
eq("DFM: its books closed at the farm node (the file makes it report): received N, not_delivered 0",
   (fn["reporting"], fn["books_closed"], fn["received"], d["not_delivered"]), (1, True, N, 0))
m = {}
for line in open(os.path.join(W, "mid.prom")):
    if line.strip() and not line.startswith("#"):
        key, v = line.rsplit(" ", 1)
        m[key] = float(v)
true("Prometheus mid-run: membership configured, not_member counted (%s)"
     % m.get('xevb_dfm_control_messages_not_admitted_total{reason="not_member"}'),
     m.get("xevb_dfm_membership_configured") == 1.0
     and 0 < m.get('xevb_dfm_control_messages_not_admitted_total{reason="not_member"}', 0) <= na["not_member"])
PY
grep -q 'control message refused (not_member): STATUS from 198.18.3.1:23902 as builder' "$E2E_WORK/dfm.err" &&
	e2e_ok "the DFM named the stray in its log" || e2e_fail "the DFM did not log the stray"
n=$(grep -c 'control message refused' "$E2E_WORK/dfm.err")
((n <= 8)) && e2e_ok "refusals logged rate-limited ($n lines)" || e2e_fail "$n refusal lines: not rate-limited"
e2e_finish

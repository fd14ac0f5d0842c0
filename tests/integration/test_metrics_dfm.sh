#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `xevb dfm --metrics PORT` during a live DFM run (push, 2 source processes
# x 2 builders with credits 16 and 32 x 1 slow farm node, so that the
# builders turn Busy): two scrapes mid-run (each taken once the page shows
# what it is to show, not at a fixed time) pass `promtool check metrics`,
# carry real values that grow between scrapes and stay within the DFM's
# final JSON (events triggered/complete, per-builder assignments, Busy
# transitions, credits, addresses), show the control messages the test
# sent broken (refused by reason, exactly as the JSON counts them), the
# farm node's counts per builder (it reports to the DFM; the books close at
# the end, after the slow farm node has taken every event), and the
# endpoint listens on loopback only when given a bare port.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_need promtool curl
e2e_init mdf "${1:-build}" --sources 2 --builders 2 --sinks 1 --dfm 1
N=6000
PORT=9464

# Its peers (two builders: seconds each to start on a slow host) get E2E_WAIT.
ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --json --interval 0 --mode push \
	--rate 3000 --events "$N" --pack 4 --wait-builders 2 --wait-sources 2 --metrics "$PORT" --books-ms 15000 \
	--wait-ms $((E2E_WAIT * 1000)) \
	>"$E2E_WORK/mdf.dfm.json" 2>"$E2E_WORK/mdf.dfm.err" &
_e2e_track $! mdf.dfm 0
dfm_tpid=$!

scrape() { e2e_scrape dfm 0 "$1" "$PORT"; }  # NAME
# Before any peer: the page is up, the DFM waiting.
page_up() { tb_exec dfm 0 curl -s -m 2 -o /dev/null "http://127.0.0.1:$PORT/metrics"; }
e2e_until "$E2E_WAIT" page_up || e2e_fail "the DFM's page did not come up in $E2E_WAIT s"
scrape m0
# Two broken control messages, one short, one with a bad magic: refused and counted by reason.
tb_exec source 0 python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b'xy', ('${DFM_ADDR%:*}', ${DFM_ADDR#*:}))
s.sendto(b'\0' * 64, ('${DFM_ADDR%:*}', ${DFM_ADDR#*:}))"

dfm_sink 0 mdf.k --credits 8 --process-rate 1500 --dfm "$DFM_ADDR"
dfm_builder 0 mdf.b0 1 --sources 0-3 --credits 16
dfm_builder 1 mdf.b1 1 --sources 0-3 --credits 32
dfm_source 0 mdf.s0 --source-ids 0-1 --frag-size 100-300
dfm_source 1 mdf.s1 --source-ids 2-3 --frag-size 100-300
e2e_wait_line triggering "$E2E_WORK/mdf.dfm.err" || e2e_fail "the DFM did not trigger"
# scrape_when NAME COND: the page, fetched until the Python condition COND
# holds over m (it) and p1 (page m1, once taken), kept as NAME and linted.
scrape_when() {
	local name=$1 cond=$2 t
	for ((t = 0; t < E2E_WAIT * 10; t++)); do
		tb_exec dfm 0 curl -s -m 5 -o "$E2E_WORK/$name.prom" "http://127.0.0.1:$PORT/metrics" &&
			python3 - "$E2E_WORK" "$name" "$cond" <<'PY' && break
import os, sys
def page(n):
    m, f = {}, os.path.join(sys.argv[1], n + ".prom")
    if not os.path.exists(f):
        return m
    for line in open(f):
        if line.strip() and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            m[k] = float(v)
    return m
m, p1 = page(sys.argv[2]), page("m1")
B = lambda key: [v for k, v in m.items() if k.startswith(key + "{")]
B1 = lambda key: [v for k, v in p1.items() if k.startswith(key + "{")]
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
		sleep 0.1
	done
	((t < E2E_WAIT * 10)) || e2e_fail "$name: the page never showed what it should (in $E2E_WAIT s): $cond"
	e2e_ok "$name: page taken mid-run, $(wc -l <"$E2E_WORK/$name.prom") lines"
	e2e_lint_page "$name"
}
GROWS_PY="['xevb_dfm_events_triggered_total', 'xevb_dfm_events_complete_total', 'xevb_dfm_events_cleared_total',
'xevb_dfm_clear_messages_total', 'xevb_dfm_trigger_stalls_total{reason=\"no_credit\"}',
'xevb_dfm_control_messages_received_total', 'xevb_dfm_control_messages_sent_total']"
# m1: every counter the checks follow is moving, both builders assigned.
scrape_when m1 "all(m.get(k, 0) > 0 for k in $GROWS_PY) and len(B('xevb_dfm_builder_events_assigned_total')) == 2 and min(B('xevb_dfm_builder_events_assigned_total')) > 0"
# m2: each has grown since, the farm node has reported events of both
# builders and Busy has been seen.
scrape_when m2 "all(m.get(k, 0) > p1.get(k, 0) for k in $GROWS_PY) and all(a > b for a, b in zip(B('xevb_dfm_builder_events_assigned_total'), B1('xevb_dfm_builder_events_assigned_total'))) and len(B('xevb_dfm_builder_events_received_total')) == 2 and min(B('xevb_dfm_builder_events_received_total')) > 0 and min(B('xevb_dfm_builder_events_complete_total')) > 0 and sum(B('xevb_dfm_builder_busy_transitions_total')) > 0"
# A bare port binds loopback only.
if tb_exec dfm 0 curl -s -m 2 -o /dev/null "http://${DFM_ADDR%:*}:$PORT/metrics"; then
	e2e_fail "the DFM's metrics answer on ${DFM_ADDR%:*}: should be loopback only"
else
	e2e_ok "bare --metrics PORT: loopback only"
fi
e2e_wait_exit "$dfm_tpid" "$E2E_TMO"
# The farm node runs until told: dfm_stop_all, once it has read all.
dfm_stop_all
e2e_wait_all
grep -E '^xevb_dfm_(events|builder_(busy|events_assigned)|control_messages_refused)' "$E2E_WORK/m2.prom" | head -30
e2e_check metrics_dfm <<PY
N = $N
m0, m1, m2 = page("m0"), page("m1"), page("m2")
d = J("mdf.dfm")
B = d["builders"]
eq("DFM triggered, all complete, books balance", (d["triggered"], d["complete"], d["accounting_ok"]), (N, N, True))
eq("before the peers: waiting, nothing triggered, no builder",
   (m0.get('xevb_dfm_state{state="waiting"}'), m0.get("xevb_dfm_events_triggered_total"), m0.get("xevb_dfm_builders")),
   (1.0, 0.0, 0.0))
eq("mid-run: triggering", m1.get('xevb_dfm_state{state="triggering"}'), 1.0)
eq("mode", m1.get('xevb_dfm_info{mode="push"}'), 1.0)
for k, final in (("xevb_dfm_events_triggered_total", d["triggered"]), ("xevb_dfm_events_complete_total", d["complete"]),
                 ("xevb_dfm_events_cleared_total", d["cleared"]), ("xevb_dfm_clear_messages_total", d["clear_msgs"]),
                 ('xevb_dfm_trigger_stalls_total{reason="no_credit"}', d["stall_no_credit"]),
                 ("xevb_dfm_control_messages_received_total", d["ctl"]["received"]),
                 ("xevb_dfm_control_messages_sent_total", d["ctl"]["sent"])):
    true("%s: 0 < first scrape %s < second %s <= final %s" % (k, m1.get(k), m2.get(k), final),
         0 < m1.get(k, 0) < m2.get(k, 0) <= final)
true("triggered mid-run < N (scraped during the run)", m2["xevb_dfm_events_triggered_total"] < N)
eq("events lost by reason, all 0 (every reason present)",
   sorted((k, v) for k, v in m2.items() if k.startswith("xevb_dfm_events_lost_total")),
   sorted(('xevb_dfm_events_lost_total{reason="%s"}' % r, 0.0) for r in d["lost"]))
eq("builders", m2.get("xevb_dfm_builders"), 2.0)
busy_seen = 0
for i, b in enumerate(B):
    L = '{builder="%d"}' % i
    eq("builder %d info: address and id as in the JSON" % i,
       m2.get('xevb_dfm_builder_info{builder="%d",addr="%s:%d",id="%d"}' % (i, b["addr"], b["port"], b["id"])), 1.0)
    eq("builder %d credits" % i, m2.get("xevb_dfm_builder_credits" + L), float(b["credits"]))
    eq("builder %d alive" % i, m2.get("xevb_dfm_builder_alive" + L), 1.0)
    a1, a2 = m1.get("xevb_dfm_builder_events_assigned_total" + L, 0), m2.get("xevb_dfm_builder_events_assigned_total" + L, 0)
    true("builder %d assigned: 0 < %s < %s <= final %d" % (i, a1, a2, b["assigned"]), 0 < a1 < a2 <= b["assigned"])
    c2 = m2.get("xevb_dfm_builder_events_complete_total" + L, 0)
    true("builder %d complete %s <= assigned %s" % (i, c2, a2), 0 < c2 <= a2)
    o2 = m2.get("xevb_dfm_builder_events_outstanding" + L, -1)
    true("builder %d outstanding %s <= credits" % (i, o2), 0 <= o2 <= b["credits"])
    bt = m2.get("xevb_dfm_builder_busy_transitions_total" + L, 0)
    le("builder %d Busy transitions mid-run <= final busy_on" % i, bt, b["busy_on"])
    busy_seen += bt
    true("builder %d busy gauge is 0 or 1" % i, m2.get("xevb_dfm_builder_busy" + L) in (0.0, 1.0))
true("Busy transitions seen mid-run (slow farm node): %d" % busy_seen, busy_seen > 0)
eq("sum over builders of assigned = triggered (push, no re-assignment)",
   sum(v for k, v in m2.items() if k.startswith("xevb_dfm_builder_events_assigned_total")),
   m2["xevb_dfm_events_triggered_total"])
ref = {k.split('"')[1]: v for k, v in m2.items() if k.startswith("xevb_dfm_control_messages_refused_total")}
eq("refused by reason: the page = the final JSON", ref, {k: float(v) for k, v in d["ctl"]["refused_by_reason"].items()})
eq("the two broken messages refused: short, bad_magic", (ref.get("short"), ref.get("bad_magic"), sum(ref.values())), (1.0, 1.0, 2.0))
eq("sources alive", m2.get("xevb_dfm_source_processes"), 2.0)
k = J("mdf.k")
eq("farm node received every event once", (k["events"], k["duplicates"]), (N, 0))
eq("mid-run: one farm node reporting, books not closed yet",
   (m2.get("xevb_dfm_farm_nodes_reporting"), m2.get("xevb_dfm_books_closed")), (1.0, 0.0))
for i, b in enumerate(B):
    L = '{builder="%d"}' % i
    r2 = m2.get("xevb_dfm_builder_events_received_total" + L, -1)
    true("builder %d received at the farm node mid-run: 0 < %s <= final %d" % (i, r2, b["received"]),
         0 < r2 <= b["received"])
    true("builder %d not delivered (yet) mid-run is a gauge >= 0" % i,
         m2.get("xevb_dfm_builder_events_not_delivered" + L, -1) >= 0)
eq("mid-run: farm received = sum per builder", m2.get("xevb_dfm_farm_events_received_total"),
   sum(v for kk, v in m2.items() if kk.startswith("xevb_dfm_builder_events_received_total")))
fn = d["farm_nodes"]
eq("at the end: books closed at the farm node, nothing not delivered",
   (fn["reporting"], fn["books_closed"], d["not_delivered"], fn["received"]), (1, True, 0, N))
eq("at the end: received = DONE per builder", [b["received"] for b in B], [b["complete"] + b["incomplete"] for b in B])
PY
e2e_finish

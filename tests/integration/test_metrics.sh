#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# --metrics on `xevb build` and `xevb sink` during a live run on the
# testbed: both pages scraped mid-run pass `promtool check metrics` (format
# and naming lint), carry real values (frames, events, XDP verdicts, AF_XDP
# socket statistics, per-source and per-reason counters, sink events) that
# agree with the final JSON summaries, listen on loopback only when given a
# bare port, and refuse other requests (404/405) without stopping.
set -uo pipefail
TRACE_NO_BPFTRACE=1
. "$(dirname "$0")/lib_trace.sh"
e2e_need promtool curl
trace_init tm "${1:-build}"
PORT=9464

# As trace_live, with --metrics on both ends and duplicates to count; all
# run until trace_stop, scraped once the sink has taken events.
TRACE_NAME=tm
e2e_sink 0 tm.k --metrics "$PORT"
e2e_builder 0 tm.b --sources 0-3 --sink "$(tb_addr sink 0):$E2E_PORT" --duration "$E2E_RUN" --metrics "$PORT"
for h in 0 1; do
	e2e_source "$h" "tm.s$h" --source-ids "$((2 * h))-$((2 * h + 1))" --rate 20000 --duration "$E2E_RUN" \
		--pack 10 --frag-size 32-120 --duplicate 0.02 --seed $((h + 5))
done
sink_took() {
	tb_exec sink 0 curl -s -m 5 "http://127.0.0.1:$PORT/metrics" 2>/dev/null |
		awk '$1 == "xevb_sink_events_total" && $2 > 0 { ok = 1 } END { exit !ok }'
}
trace_flowing
e2e_until "$E2E_WAIT" sink_took || e2e_fail "the sink took no event in $E2E_WAIT s"

scrape() { e2e_scrape "$1" 0 "$2" "$PORT"; }  # ROLE NAME
scrape builder b1
scrape sink k1
# Not the endpoint: refused, counted, and the server still answers after.
code=$(tb_exec builder 0 curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")
[[ $code == 404 ]] && e2e_ok "GET /nope: 404" || e2e_fail "GET /nope: HTTP $code, want 404"
code=$(tb_exec builder 0 curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST -d x "http://127.0.0.1:$PORT/metrics")
[[ $code == 405 ]] && e2e_ok "POST /metrics: 405" || e2e_fail "POST /metrics: HTTP $code, want 405"
# A client that connects and says nothing holds nobody up: b2 is served beside it
# (it is dropped at its 2 s deadline, test_hard_metrics_slow.sh counts those).
tb_exec builder 0 python3 -c "
import os, socket, sys, time
s = socket.create_connection(('127.0.0.1', $PORT))
open(sys.argv[1], 'w').close()
time.sleep(3); s.close()" "$E2E_WORK/silent.up" &
e2e_until "$E2E_WAIT" test -e "$E2E_WORK/silent.up" || e2e_fail "the silent client did not connect"
scrape builder b2
wait $!
# A bare port binds loopback only: nothing listens on the namespace's address.
if tb_exec builder 0 curl -s -m 2 -o /dev/null "http://$(tb_addr builder 0):$PORT/metrics"; then
	e2e_fail "the builder's metrics answer on $(tb_addr builder 0): should be loopback only"
else
	e2e_ok "bare --metrics PORT: loopback only"
fi
trace_stop
e2e_check metrics <<'PY'
import re
b1, b2, k1 = page("b1"), page("b2"), page("k1")
B, K = J("tm.b"), J("tm.k")
for key in ("xevb_rx_frames_total", "xevb_fragments_received_total", "xevb_events_complete_total",
            "xevb_output_events_total", 'xevb_xdp_packets_total{verdict="to_xsk"}', 'xevb_source_packets_total{source="0"}',
            'xevb_source_packets_total{source="3"}', 'xevb_fragments_dropped_total{reason="duplicate"}'):
    true("builder %s > 0 mid-run" % key, b1.get(key, 0) > 0, b1.get(key))
    true("builder %s grows between scrapes (or stays)" % key, b2.get(key, 0) >= b1.get(key, 0), (b1.get(key), b2.get(key)))
    true("builder %s mid-run <= final" % key, b1.get(key, 0) <= {
        "xevb_rx_frames_total": B["rx_frames"], "xevb_fragments_received_total": B["frags_received"],
        "xevb_events_complete_total": B["events_complete"], "xevb_output_events_total": B["out_events"],
        'xevb_xdp_packets_total{verdict="to_xsk"}': B["xdp"]["to_xsk"]["packets"],
        'xevb_fragments_dropped_total{reason="duplicate"}': B["drop_duplicate"]}.get(key, 1e18), key)
for q in ("xevb_xsk_rx_dropped_total", "xevb_xsk_rx_ring_full_total", "xevb_xsk_fill_ring_empty_total"):
    true("builder %s{queue=\"0\"} present" % q, q + '{queue="0"}' in b1, sorted(k for k in b1 if k.startswith("xevb_xsk")))
eq("builder_info names eth0 on the XDP path", b1.get('xevb_build_info{ifname="eth0",path="xdp"}'), 1.0)
eq("source ids in the per-source counters", sorted({re.search(r'source="(\d+)"', k).group(1) for k in b1 if k.startswith("xevb_source_packets_total")}), ["0", "1", "2", "3"])
# 404 and 405; the silent client is still waiting beside b2, not a bad request.
eq("the refused requests counted", b2.get("xevb_metrics_bad_requests_total"), 2.0)
true("sink events > 0 mid-run and <= final", 0 < k1.get("xevb_sink_events_total", 0) <= K["events"], (k1.get("xevb_sink_events_total"), K["events"]))
true("sink latency summary count > 0", k1.get("xevb_sink_latency_seconds_count", 0) > 0, k1.get("xevb_sink_latency_seconds_count"))
eq("sink errors all 0", sorted(v for k, v in k1.items() if k.startswith("xevb_sink_errors_total")), [0.0] * len([k for k in k1 if k.startswith("xevb_sink_errors_total")]))
PY
e2e_finish

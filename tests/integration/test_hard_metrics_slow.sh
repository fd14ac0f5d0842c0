#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Slow clients against a metrics endpoint (issue 21, item 5). A farm node
# serves --metrics on its address; from source host 0, slow_clients.py keeps
# 20 connections dripping a request head one byte every 0.2 s (never ending
# it) and 20 idle ones, reopening any the server closes, for 10 s, then
# waits without reopening until the server has closed the last ones. Meanwhile
# 5 real scrapes (curl, 1.5 s apart) must each answer 200 within 2 s.
# The server gives each client one deadline for its whole request (2 s) and
# serves 32 at once, a newcomer taking the oldest's slot: the final page
# counts exactly 5 + 1 scrapes, and every client the attacker opened was
# closed by the server and counted once: evicted (40 clients, 32 slots) or
# at its deadline (the last ones).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_need curl
e2e_init ms "${1:-build}" --sources 1 --sinks 1
ADDR=$(tb_addr sink 0)
MPORT=9464
SLOW=$(realpath tests/integration/slow_clients.py)

# The farm node runs until told (after the final scrape).
e2e_sink 0 ms.k --stats-interval 0 --metrics "$ADDR:$MPORT"
rm -f "$E2E_WORK/slow.ready"
ip netns exec "$(tb_ns source 0)" timeout "$E2E_TMO" python3 "$SLOW" "$ADDR" "$MPORT" --drip 20 --idle 20 \
	--seconds 10 --drain "$E2E_WAIT" --ready "$E2E_WORK/slow.ready" >"$E2E_WORK/ms.slow.json" 2>"$E2E_WORK/ms.slow.err" &
SLOW_PID=$!
_e2e_track "$SLOW_PID" ms.slow 0
e2e_until "$E2E_WAIT" test -e "$E2E_WORK/slow.ready" || e2e_die "slow clients did not connect"
sleep 1  # the drippers are mid-request, the idle ones hold their slots

worst=0
for i in 1 2 3 4 5; do
	out=$(tb_exec source 0 curl -s -m 5 -o "$E2E_WORK/scrape$i.prom" -w '%{http_code} %{time_total}' \
		"http://$ADDR:$MPORT/metrics")
	code=${out% *}
	ms=$(awk -v t="${out#* }" 'BEGIN { printf "%d", t * 1000 }')
	((ms > worst)) && worst=$ms
	if [[ $code == 200 ]] && ((ms < 2000)); then e2e_ok "scrape $i with 40 slow clients: HTTP 200 in $ms ms"
	else e2e_fail "scrape $i with 40 slow clients: HTTP $code in $ms ms, want 200 within 2000 ms"; fi
	sleep 1.5
done
e2e_log "slowest scrape: $worst ms"
wait "$SLOW_PID"
final=$(tb_exec source 0 curl -s -m 5 "http://$ADDR:$MPORT/metrics")
printf '%s\n' "$final" >"$E2E_WORK/final.prom"
e2e_stop ms.k
e2e_wait_all
e2e_check metrics_slow <<'PY'
page = {}
for line in open(os.path.join(W, "final.prom")):
    if line and not line.startswith("#"):
        k, v = line.rsplit(" ", 1)
        page[k] = float(v)
s = J("ms.slow")
eq("scrapes served (5 + this one)", page.get("xevb_metrics_scrapes_total"), 6.0)
eq("bad requests", page.get("xevb_metrics_bad_requests_total"), 0.0)
dl = page.get('xevb_metrics_clients_dropped_total{reason="deadline"}', 0)
ev = page.get('xevb_metrics_clients_dropped_total{reason="evicted"}', 0)
true("slow clients dropped at their deadline", dl >= 20, dl)
true("idle clients evicted for newcomers", ev >= 1, ev)
eq("left open after the drain", s["left_open"], 0)
eq("every close the clients saw is counted", s["closed_by_server"], dl + ev)
eq("every client opened was closed by the server", s["opened"], dl + ev)
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Records the metrics pages the dashboard and the alerting rules are checked
# against (tests/fixtures/metrics/*.prom, read by test_dashboards.sh), each
# scraped mid-run on the testbed: first a short DFM run (push, 2 source
# processes, 2 socket builders, one farm node reporting to the DFM: the
# pages of the DFM, the farm node and a socket builder), then one XDP
# builder on its own (not under a DFM, so that it sheds: the XDP, AF_XDP
# and shedding families), last the same with two workers on two queues
# (the per-worker families). Not a test (no verdict on the
# values): run it as root after a metric is added or renamed, when
# test_dashboards.sh says the fixture and the code disagree.
#   bash tests/integration/record_metrics.sh [BUILD_DIR]
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_need curl
e2e_init rec "${1:-build}" --sources 2 --builders 2 --sinks 1 --dfm 1 --queues 2
FIX=tests/fixtures/metrics
PORT=9464

ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --json --interval 0 --mode push \
	--rate 3000 --events 9000 --pack 4 --wait-builders 2 --wait-sources 2 --metrics "$PORT" --books-ms 5000 \
	--wait-ms $((E2E_WAIT * 1000)) \
	>"$E2E_WORK/rec.dfm.json" 2>"$E2E_WORK/rec.dfm.err" &
_e2e_track $! rec.dfm 0
dfm_sink 0 rec.k --credits 64 --dfm "$DFM_ADDR" --metrics "$PORT"
dfm_builder 0 rec.bd 1 --sources 0-3 --credits 32
dfm_builder 1 rec.bs 1 --sources 0-3 --credits 32 --metrics "$PORT"
dfm_source 0 rec.s0 --source-ids 0-1 --frag-size 100-300
dfm_source 1 rec.s1 --source-ids 2-3 --frag-size 100-300
e2e_wait_line triggering "$E2E_WORK/rec.dfm.err"
# Mid-run: once the recorded builder has built events.
e2e_until "$E2E_WAIT" e2e_bstat 1 'd["events_complete"] > 0'

record() {  # ROLE IDX FILE: the page of that host's process into the fixture
	local code
	code=$(tb_exec "$1" "$2" curl -s -m 5 -o "$FIX/$3" -w '%{http_code}' "http://127.0.0.1:$PORT/metrics")
	if [[ $code == 200 ]]; then
		e2e_ok "$3: $(grep -vc '^#' "$FIX/$3") samples"
	else
		e2e_fail "$3: GET /metrics: HTTP $code"
	fi
}
record builder 1 build-socket.prom
record sink 0 sink.prom
record dfm 0 dfm.prom
dfm_stop_all
e2e_wait_all

# record_builder TAG FILE [build options]: builder 0 (rec.bTAG) under load
# from both source hosts, its page recorded as FILE once it has built
# events; then the sources, the builder and the farm node stopped.
record_builder() {
	local tag=$1 file=$2 h
	shift 2
	e2e_sink 0 "rec.k$tag"
	e2e_builder 0 "rec.b$tag" --sources 0-3 --sink "$(tb_addr sink 0):$E2E_PORT" --duration "$E2E_RUN" \
		--metrics "$PORT" "$@"
	for h in 0 1; do
		e2e_source "$h" "rec.$tag$h" --source-ids "$((2 * h))-$((2 * h + 1))" --rate 5000 --duration "$E2E_RUN"
	done
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0'
	record builder 0 "$file"
	e2e_stop "rec.${tag}0" "rec.${tag}1"
	for h in 0 1; do e2e_wait_exit "$(e2e_pid "rec.$tag$h")" "$E2E_WAIT"; done
	e2e_stop "rec.b$tag"
	e2e_wait_exit "$(e2e_pid "rec.b$tag")" "$E2E_WAIT"
	e2e_stop_sinks
	e2e_wait_all
}

E2E_DEST=$(tb_addr builder 0)
record_builder x build-xdp.prom
record_builder w build-workers.prom --queues 0-1 --workers 2 --tune cpus=0-1
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Hardening (issue 9): stopping a builder while events are open. Source 1
# omits every 10th event and no END_OF_RUN comes; the timeout is a minute,
# so 200 events are still open when the builder is told to stop. They must
# leave by --timeout-policy, never silently:
#  - emit (XDP path, SIGINT): 200 events emitted INCOMPLETE, each missing
#    exactly source 1, checked in the file by `xevb sink --input`;
#  - discard (socket path, SIGTERM): 200 events counted as discarded, none
#    in the file, every fragment they held still accounted for.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init ho "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)

stop_case() {
	local case=$1 policy=$2 sig=$3 victim
	shift 3
	e2e_log "$case: 2000 events, 200 left open (source 1 skips every 10th), SIG$sig, --timeout-policy $policy"
	e2e_builder 0 "$case.b" --sources 0-3 --timeout-ms 60000 --timeout-policy "$policy" --duration "$E2E_RUN" "$@" \
		--output "$E2E_WORK/$case.evt"
	victim=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "$case: no xevb build process"
	F=(--events 2000 --pack 10 --frag-size 40-120 --rate 10000 --no-end-of-run)
	e2e_source 0 "$case.s0" --source-ids 0-1 "${F[@]}" --skip-events 1:10 --seed 81
	e2e_source 1 "$case.s1" --source-ids 2-3 "${F[@]}" --seed 82
	# The sources take 0.2 s; then, once its published counters say so, the
	# builder holds 200 open events and has built the other 1800.
	e2e_wait_exit "$(e2e_pid "$case.s0")" "$E2E_TMO"
	e2e_wait_exit "$(e2e_pid "$case.s1")" "$E2E_TMO"
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] == 1800 and d["open_events"] == 200' ||
		e2e_fail "$case: the builder did not reach 1800 complete and 200 open events in $E2E_WAIT s"
	kill "-$sig" "$victim"
	e2e_wait_all
	e2e_sink_file "$case.k" "$E2E_WORK/$case.evt" --expect-sources 4
	grep -o 'stop: .*' "$E2E_WORK/$case.b.err" >"$E2E_WORK/$case.stopline" || true
	e2e_check "$case" <<'PY'
b, s0, s1, k = J(CASE + ".b"), J(CASE + ".s0"), J(CASE + ".s1"), J(CASE + ".k")
discard = CASE == "discard"
ev = events(os.path.join(W, CASE + ".evt"))
valid = s0["valid_fragments"] + s1["valid_fragments"]
stopline = open(os.path.join(W, CASE + ".stopline")).read().strip()
eq("source 1 skipped fragments", s0["skipped_fragments"], 200)
eq("builder fragments received = sent", b["frags_received"], valid)
eq("fragments in events = received (no drop of any reason)", b["frags_in_events"], valid)
eq("drops (dup, late, unknown, run, overflow)",
   [b[x] for x in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 5)
eq("events opened", b["events_opened"], 2000)
eq("events complete", b["events_complete"], 1800)
eq("open events after stop", b["open_events"], 0)
eq("run not ended", (b["run_ended"], b["events_flushed_eor"]), (False, 0))
if discard:
    eq("stop: the 200 open events are counted as discarded", (b["events_discarded"], b["events_incomplete"]), (200, 0))
    eq("stop message", stopline, "stop: 200 open event(s) discarded and counted (--timeout-policy discard)")
    eq("file: only the 1800 complete events", (len(ev), sum(e["incomplete"] for e in ev)), (1800, 0))
    eq("discarded ids = every 10th", sorted(set(range(2000)) - {e["id"] for e in ev}), list(range(9, 2000, 10)))
    eq("sink: fragments = sent - fragments of the discarded events", k["fragments"], valid - 600)
else:
    eq("stop: the 200 open events are emitted INCOMPLETE", (b["events_incomplete"], b["events_discarded"]), (200, 0))
    eq("stop message", stopline, "stop: 200 open event(s) emitted INCOMPLETE (--timeout-policy emit)")
    inc = [e for e in ev if e["incomplete"]]
    eq("file: 2000 events, 200 incomplete", (len(ev), len(inc)), (2000, 200))
    eq("incomplete ids = every 10th", sorted(e["id"] for e in inc), list(range(9, 2000, 10)))
    eq("each misses exactly source 1", sorted({tuple(e["missing"]) for e in inc}), [(1,)])
    eq("XDP to_xsk frags = received", b["xdp"]["to_xsk"]["frags"], b["frags_received"])
    eq("sink: fragments = sent, missing = 200", (k["fragments"], k["missing_fragments"]), (valid, 200))
eq("sink: errors", k["errors"], 0)
PY
}

stop_case emit emit INT
stop_case discard discard TERM --mode socket
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# End to end with faults from the source emulator: 2 source hosts (source
# ids 0-1 and 2-3) -> 1 builder -> a file or 1 sink. Every count is checked
# exactly against what the sources report: skipped fragments make events
# INCOMPLETE with exactly that source missing (by timeout, or flushed at
# END_OF_RUN), duplicates and corrupt headers are counted and never reach
# an event, a source that stops early leaves exactly the events after its
# last packet incomplete. Built-event files are decoded here and checked
# by `xevb sink --input` (CRC and content of every fragment).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init f "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
SINK="$(tb_addr sink 0):$E2E_PORT"

# stop_when_settled NAME: once its sources (every other tracked process)
# have ended and builder NAME has taken and let out everything, a second
# later (nothing is then left for the stop to flush), it is stopped; every
# exit status checked.
stop_when_settled() {
	local i
	for i in "${!E2E_NAMES[@]}"; do
		[[ ${E2E_NAMES[$i]} == "$1" ]] || e2e_wait_exit "${E2E_PIDS[$i]}" "$E2E_TMO"
	done
	e2e_until "$E2E_WAIT" e2e_settled 0 || e2e_fail "$1: did not settle in $E2E_WAIT s"
	sleep 1
	e2e_stop "$1"
	e2e_wait_all
}

# ---------------------------------------------------------------------------
e2e_log "skip_timeout: XDP, source 1 omits every 10th event, no END_OF_RUN: 200 events time out"
# 2000 events at 10000/s take 0.2 s; the builder is stopped a second after
# every event has left it, so every event that times out (200 ms) does so
# long before the stop flush.
e2e_builder 0 st.b --sources 0-3 --timeout-ms 200 --duration "$E2E_RUN" --output "$E2E_WORK/st.evt"
F=(--events 2000 --pack 10 --frag-size 40-120 --rate 10000 --no-end-of-run)
e2e_source 0 st.s0 --source-ids 0-1 "${F[@]}" --skip-events 1:10 --seed 11
e2e_source 1 st.s1 --source-ids 2-3 "${F[@]}" --seed 12
stop_when_settled st.b
e2e_sink_file st.k "$E2E_WORK/st.evt" --expect-sources 4
e2e_check skip_timeout <<'PY'
b, s0, s1, k = J("st.b"), J("st.s0"), J("st.s1"), J("st.k")
ev = events(os.path.join(W, "st.evt"))
eq("source 1 skipped fragments", s0["skipped_fragments"], 200)
valid = s0["valid_fragments"] + s1["valid_fragments"]
eq("fragments sent", s0["fragments"] + s1["fragments"], 8000 - 200)
eq("builder fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (valid, valid))
eq("XDP to_xsk frags = builder frags_received", b["xdp"]["to_xsk"]["frags"], b["frags_received"])
eq("xsk rx_dropped", b["xsk_rx_dropped"], 0)
eq("drops (dup, late, unknown, run, overflow)",
   [b[x] for x in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 5)
eq("events opened", b["events_opened"], 2000)
eq("events complete", b["events_complete"], 1800)
eq("events incomplete", b["events_incomplete"], 200)
eq("flushed at END_OF_RUN, discarded", (b["events_flushed_eor"], b["events_discarded"]), (0, 0))
eq("run not ended (no END_OF_RUN sent)", b["run_ended"], False)
eq("events in the file", len(ev), 2000)
inc = [e for e in ev if e["incomplete"]]
eq("incomplete event ids = every 10th", sorted(e["id"] for e in inc), list(range(9, 2000, 10)))
eq("each incomplete event misses exactly source 1", sorted({tuple(e["missing"]) for e in inc}), [(1,)])
eq("each incomplete event has sources 0, 2, 3", sorted({tuple(e["sources"]) for e in inc}), [(0, 2, 3)])
byid = {e["id"]: e for e in ev}
# The timeout runs from the first fragment, the neighbour completes with the
# last one: the gap is 200 ms less the skew between the hosts (under load,
# tens of ms), plus up to one poll interval (~100 ms).
gaps = [(byid[e["id"]]["build_ns"] - byid[e["id"] - 1]["build_ns"]) / 1e9 for e in inc]
true("each incomplete event left 0.1-1.0 s after its complete neighbour (the 200 ms timeout)",
     all(0.1 <= g <= 1.0 for g in gaps), "min %.3f max %.3f" % (min(gaps), max(gaps)))
# By timeout, not by the stop's flush: nothing was open when it stopped
# (its own words; the files' clock against this script's is not exact).
blog = open(os.path.join(W, "st.b.err")).read()
true("the builder stopped with no event open (every incomplete one left by timeout, not at stop)",
     "stop: 0 open event(s)" in blog, [l for l in blog.splitlines() if "stop:" in l])
eq("sink: events, complete, incomplete, missing", (k["events"], k["complete"], k["incomplete"], k["missing_fragments"]),
   (2000, 1800, 200, 200))
eq("sink: fragments = fragments sent", k["fragments"], valid)
eq("sink: errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
PY
e2e_no_xdp skip_timeout

# ---------------------------------------------------------------------------
e2e_log "skip_eor: socket mode, source 2 omits every 8th event, no timeout: END_OF_RUN flushes 250 events"
e2e_sink 0 se.k --expect-events 2000 --expect-sources 4
e2e_builder 0 se.b --mode socket --sources 0-3 --timeout-ms 0 --sink "$SINK" --exit-on-eor --duration "$E2E_RUN"
F=(--events 2000 --pack 8 --frag-size 40-120)
e2e_source 0 se.s0 --source-ids 0-1 "${F[@]}" --seed 21
e2e_source 1 se.s1 --source-ids 2-3 "${F[@]}" --skip-events 2:8 --seed 22
e2e_wait_all
e2e_check skip_eor <<'PY'
b, s0, s1, k = J("se.b"), J("se.s0"), J("se.s1"), J("se.k")
valid = s0["valid_fragments"] + s1["valid_fragments"]
eq("source 2 skipped fragments", s1["skipped_fragments"], 250)
eq("builder fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (valid, valid))
eq("socket kernel drops, not MEP", (b["sock_kernel_drops"], b["rx_not_mep"]), (0, 0))
eq("drops (dup, late, unknown, run, overflow)",
   [b[x] for x in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 5)
eq("events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (1750, 250))
eq("all 250 flushed at END_OF_RUN", b["events_flushed_eor"], 250)
eq("run ended", b["run_ended"], True)
eq("out events", b["out_events"], 2000)
eq("sink: events, complete, incomplete, missing", (k["events"], k["complete"], k["incomplete"], k["missing_fragments"]),
   (2000, 1750, 250, 250))
eq("sink: fragments, errors, duplicates", (k["fragments"], k["errors"], k["duplicates"]), (valid, 0, 0))
PY

# ---------------------------------------------------------------------------
e2e_log "dup_corrupt: XDP, 5% duplicated and 5% corrupt packets on both hosts"
e2e_builder 0 dc.b --sources 0-3 --timeout-ms 200 --duration "$E2E_RUN" --output "$E2E_WORK/dc.evt"
F=(--events 3000 --pack 10 --frag-size 40-120 --rate 20000 --duplicate 0.05 --corrupt 0.05)
e2e_source 0 dc.s0 --source-ids 0-1 "${F[@]}" --seed 31
e2e_source 1 dc.s1 --source-ids 2-3 "${F[@]}" --seed 32
stop_when_settled dc.b
e2e_sink_file dc.k "$E2E_WORK/dc.evt" --expect-sources 4
e2e_check dup_corrupt <<'PY'
b, s, k = J("dc.b"), [J("dc.s0"), J("dc.s1")], J("dc.k")
ev = events(os.path.join(W, "dc.evt"))
T = lambda key: sum(x[key] for x in s)
true("duplicates and corrupt packets were sent", T("duplicate_packets") > 0 and T("corrupt_packets") > 0,
     (T("duplicate_packets"), T("corrupt_packets")))
eq("XDP malformed packets = corrupt packets sent", xdp_malformed(b), T("corrupt_packets"))
eq("XDP mep packets = sent - corrupt", b["xdp"]["mep"]["packets"], T("packets") - T("corrupt_packets"))
eq("XDP to_xsk frags = builder frags_received", b["xdp"]["to_xsk"]["frags"], b["frags_received"])
eq("xsk rx_dropped", b["xsk_rx_dropped"], 0)
eq("builder fragments received = valid + duplicate", b["frags_received"], T("valid_fragments") + T("duplicate_fragments"))
eq("builder drop_duplicate = duplicate fragments sent", b["drop_duplicate"], T("duplicate_fragments"))
eq("builder fragments in events = valid fragments sent", b["frags_in_events"], T("valid_fragments"))
eq("other drops (late, unknown, run, overflow)",
   [b[x] for x in ("drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 4)
eq("events in the file = events opened = complete + incomplete", (len(ev), b["events_opened"]),
   (b["events_complete"] + b["events_incomplete"],) * 2)
eq("every event id 0..2999 built once", sorted(e["id"] for e in ev), list(range(3000)))
missing = {(src, e["id"]) for e in ev for src in e["missing"]}
eq("missing fragments = corrupt fragments sent", len(missing), T("corrupt_fragments"))
# A corrupt packet takes a whole block of 10 events of one source with it.
blocks = {(src, eid // 10) for src, eid in missing}
eq("missing fragments are whole corrupt packets", len(missing), 10 * len(blocks))
eq("corrupt packets = blocks missing", len(blocks), T("corrupt_packets"))
eq("complete events = events with no corrupt fragment", b["events_complete"], 3000 - len({e for _, e in missing}))
eq("no fragment twice in an event", sum(len(e["sources"]) != len(set(e["sources"])) for e in ev), 0)
eq("sink: events, incomplete, missing", (k["events"], k["incomplete"], k["missing_fragments"]),
   (3000, b["events_incomplete"], T("corrupt_fragments")))
eq("sink: fragments = valid fragments sent", k["fragments"], T("valid_fragments"))
eq("sink: errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
PY
e2e_no_xdp dup_corrupt

# ---------------------------------------------------------------------------
e2e_log "stop_after: socket mode UDP, source 3 dies after 50 packets (500 events): 1500 time out"
e2e_builder 0 sa.b --mode socket --udp --sources 0-3 --timeout-ms 200 --duration "$E2E_RUN" \
	--output "$E2E_WORK/sa.evt"
F=(--udp 23900 --events 2000 --pack 10 --frag-size 40-120 --rate 20000)
e2e_source 0 sa.s0 --source-ids 0-1 "${F[@]}" --seed 41
e2e_source 1 sa.s1 --source-ids 2-3 "${F[@]}" --stop-after 3:50 --seed 42
stop_when_settled sa.b
e2e_sink_file sa.k "$E2E_WORK/sa.evt" --expect-sources 4
e2e_check stop_after <<'PY'
b, s0, s1, k = J("sa.b"), J("sa.s0"), J("sa.s1"), J("sa.k")
ev = events(os.path.join(W, "sa.evt"))
valid = s0["valid_fragments"] + s1["valid_fragments"]
eq("source 3 stopped, fragments unsent", (s1["stopped_sources"], s1["stopped_fragments"]), (1, 1500))
eq("builder fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (valid, valid))
eq("socket kernel drops", b["sock_kernel_drops"], 0)
eq("events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (500, 1500))
eq("no END_OF_RUN from source 3: not flushed, run not ended", (b["events_flushed_eor"], b["run_ended"]), (0, False))
inc = [e for e in ev if e["incomplete"]]
eq("incomplete event ids", sorted(e["id"] for e in inc), list(range(500, 2000)))
eq("each misses exactly source 3", sorted({tuple(e["missing"]) for e in inc}), [(3,)])
eq("sink: events, complete, incomplete, missing", (k["events"], k["complete"], k["incomplete"], k["missing_fragments"]),
   (2000, 500, 1500, 1500))
eq("sink: errors", k["errors"], 0)
PY

e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# End to end with processes killed mid-run (XDP path), 2 source hosts
# (source ids 0-1 and 2-3) -> 1 builder:
#  - kill_source: one source host's emulator gets SIGKILL while sending
#    (once its first packets are on the wire); the builder keeps running,
#    the events after it died leave by timeout, INCOMPLETE with its sources
#    missing, and every count adds up.
#  - kill_builder: the builder gets SIGKILL while fragments arrive, leaving
#    its XDP program on the interface; a new builder on the same interface
#    starts without manual clean-up (it removes the stale program and says
#    so) and builds a new run completely.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init k "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
SINK="$(tb_addr sink 0):$E2E_PORT"
BNS=$(tb_ns builder 0)

# ---------------------------------------------------------------------------
e2e_log "kill_source: SIGKILL to source host 1 (ids 2-3) once it sends, in a 2 s run"
# The builder runs until stopped: after every event has left it.
e2e_builder 0 ks.b --sources 0-3 --timeout-ms 200 --duration "$E2E_RUN" --output "$E2E_WORK/ks.evt"
F=(--events 4000 --pack 10 --frag-size 40-120 --rate 2000)
# Frames host 1 put on the wire: its switch port's received count.
s1_frames() { ip netns exec "$(tb_switch)" cat "/sys/class/net/$(tb_port source 1)/statistics/rx_packets"; }
s1_sent_some() { (($(s1_frames) - s1_base >= 20)); }
s1_base=$(s1_frames)
e2e_source 0 ks.s0 --source-ids 0-1 "${F[@]}" --seed 51
E2E_SRC_RC=137 e2e_source 1 ks.s1 --source-ids 2-3 "${F[@]}" --seed 52
victim=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "kill_source: no xevb source process under pid $E2E_LAST_PID"
# 20 of its 800 MEPs out (2 s of sending): some but not all.
e2e_until "$E2E_WAIT" s1_sent_some || e2e_fail "kill_source: source host 1 sent nothing in $E2E_WAIT s"
kill -KILL "$victim"
e2e_ok "kill_source: sent SIGKILL to source pid $victim after $(($(s1_frames) - s1_base)) frames"
e2e_wait_exit "$(e2e_pid ks.s0)" "$E2E_TMO"
# Every event has left (complete, or incomplete by its timeout), as the
# builder's published counters say; it is stopped a second later, so that
# the check below sees each incomplete one leave by timeout, not at the stop.
e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] + d["events_incomplete"] == 4000' ||
	e2e_fail "kill_source: not every event left the builder in $E2E_WAIT s"
sleep 1
e2e_stop ks.b
e2e_wait_all
e2e_sink_file ks.k "$E2E_WORK/ks.evt" --expect-sources 4
e2e_check kill_source <<'PY'
b, s0, k = J("ks.b"), J("ks.s0"), J("ks.k")
ev = events(os.path.join(W, "ks.evt"))
inc = [e for e in ev if e["incomplete"]]
com = [e for e in ev if not e["incomplete"]]
infile = sum(len(e["sources"]) for e in ev)
eq("source host 0 sent every fragment", s0["fragments"], 8000)
eq("builder fragments received = in events = fragments in the file", (b["frags_received"], b["frags_in_events"]),
   (infile, infile))
true("host 1 sent some but not all before it died", 0 < infile - 8000 < 8000, infile - 8000)
eq("XDP to_xsk frags = builder frags_received", b["xdp"]["to_xsk"]["frags"], b["frags_received"])
eq("XDP malformed, xsk rx_dropped", (xdp_malformed(b), b["xsk_rx_dropped"]), (0, 0))
eq("drops (dup, late, unknown, run, overflow)",
   [b[x] for x in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 5)
eq("events opened = complete + incomplete = 4000", (b["events_opened"], b["events_complete"] + b["events_incomplete"]),
   (4000, 4000))
true("killed mid-run: some events complete, some not", 0 < b["events_incomplete"] < 4000, b["events_incomplete"])
eq("not flushed by END_OF_RUN, run not ended", (b["events_flushed_eor"], b["run_ended"]), (0, False))
eq("every event id once in the file", sorted(e["id"] for e in ev), list(range(4000)))
eq("file: complete, incomplete", (len(com), len(inc)), (b["events_complete"], b["events_incomplete"]))
true("sources 0 and 1 in every event", all(0 in e["sources"] and 1 in e["sources"] for e in ev))
true("each incomplete event misses some of 2, 3 and nothing else",
     all(e["missing"] and set(e["missing"]) <= {2, 3} for e in inc), [e for e in inc if not set(e["missing"]) <= {2, 3}][:3])
true("the incomplete events are the tail after the kill", min(e["id"] for e in inc) > max(e["id"] for e in com),
     (min(e["id"] for e in inc), max(e["id"] for e in com)))
# By timeout, not by the stop's flush: nothing was open when it stopped
# (its own words; the files' clock against this script's is not exact).
blog = open(os.path.join(W, "ks.b.err")).read()
true("each left by timeout: the builder stopped with no event open", "stop: 0 open event(s)" in blog,
     [l for l in blog.splitlines() if "stop:" in l])
eq("sink: events, incomplete, fragments", (k["events"], k["incomplete"], k["fragments"]), (4000, len(inc), infile))
eq("sink: errors", k["errors"], 0)
PY
e2e_no_xdp kill_source

# ---------------------------------------------------------------------------
e2e_log "kill_builder: SIGKILL to the builder while 2 x 20000 events arrive, then restart on eth0"
# --keep-privileges: a root builder killed leaves its program (a dropped one's
# helper would detach it, test_hard_privdrop.sh); the restart must remove it.
E2E_BUILD_RC=137 e2e_builder 0 kb.b1 --sources 0-3 --no-forward --duration "$E2E_RUN" --keep-privileges
victim=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "kill_builder: no xevb build process under pid $E2E_LAST_PID"
F=(--events 20000 --pack 10 --frag-size 40-120 --rate 10000)
e2e_source 0 kb.s0 --source-ids 0-1 "${F[@]}" --seed 61
e2e_source 1 kb.s1 --source-ids 2-3 "${F[@]}" --seed 62
# Killed while fragments arrive: once it has received some.
e2e_until "$E2E_WAIT" e2e_bstat 0 'd["frags_received"] > 0' ||
	e2e_fail "kill_builder: the builder received nothing in $E2E_WAIT s"
kill -KILL "$victim"
e2e_ok "kill_builder: sent SIGKILL to builder pid $victim"
e2e_wait_all
if e2e_xdp_attached builder 0; then
	stale=$(tb_exec builder 0 ip -d link show eth0 | sed -n 's/.*prog\/xdp id \([0-9]*\) name \([a-z_]*\).*/\1 \2/p')
	e2e_ok "kill_builder: the killed builder left its XDP program ($stale) on eth0"
else
	e2e_fail "kill_builder: no XDP program left after SIGKILL: the restart test below proves nothing"
	stale=
fi
left=$(ip netns pids "$BNS" | wc -l)
[[ $left == 0 ]] && e2e_ok "kill_builder: no process left in the builder namespace" ||
	e2e_fail "kill_builder: $left process(es) left in $BNS"

e2e_sink 0 kb.k --expect-events 2000 --expect-sources 4
e2e_builder 0 kb.b2 --sources 0-3 --run 2 --sink "$SINK" --exit-on-eor --duration "$E2E_RUN"
if grep -q "removing a stale xevb_steer (id ${stale%% *})" "$E2E_WORK/kb.b2.err"; then
	e2e_ok "kill_builder: restart says it removed the stale program: $(grep -o 'removing a stale.*' "$E2E_WORK/kb.b2.err")"
else
	e2e_fail "kill_builder: restart did not say it removed stale program id ${stale%% *}"
	e2e_show kb.b2
fi
F=(--run 2 --events 2000 --pack 10 --frag-size 40-120)
e2e_source 0 kb.s2 --source-ids 0-1 "${F[@]}" --seed 63
e2e_source 1 kb.s3 --source-ids 2-3 "${F[@]}" --seed 64
e2e_wait_all
e2e_check kill_builder <<'PY'
b, k = J("kb.b2"), J("kb.k")
sent = S(["kb.s2", "kb.s3"], "fragments")
pk = S(["kb.s2", "kb.s3"], "packets")
eq("fragments sent", sent, 8000)
eq("run number", b["run_number"], 2)
eq("builder fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (sent, sent))
eq("events complete = events sent", (b["events_opened"], b["events_complete"], b["events_incomplete"]), (2000, 2000, 0))
eq("drops (dup, late, unknown, run, overflow)",
   [b[x] for x in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 5)
eq("XDP mep = to_xsk packets = sent", (b["xdp"]["mep"]["packets"], b["xdp"]["to_xsk"]["packets"]), (pk, pk))
eq("XDP to_xsk frags = builder frags_received", b["xdp"]["to_xsk"]["frags"], b["frags_received"])
eq("XDP malformed, no_xsk_to_kernel, xsk rx_dropped",
   (xdp_malformed(b), b["xdp"]["no_xsk_to_kernel"]["packets"], b["xsk_rx_dropped"]), (0, 0, 0))
eq("run ended, out events", (b["run_ended"], b["out_events"]), (True, 2000))
eq("sink: events, complete, fragments, errors", (k["events"], k["complete"], k["fragments"], k["errors"]),
   (2000, 2000, sent, 0))
PY
e2e_no_xdp kill_builder

e2e_finish

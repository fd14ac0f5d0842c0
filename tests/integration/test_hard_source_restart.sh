#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# A source killed (SIGKILL) mid-run and started again, its packet_seq
# starting from 0 again (issue 9). Source host 0 (ids 0-1) sends events
# 0..9999; source host 1 (ids 2-3) sends from 0 until it is killed (once
# its first frames are on the wire), then a new emulator on it sends
# 6000..9999. The builder must take
# the restart as a restart: seq_resets = 2 (one per source id), seq_gaps =
# 0 (not 2^32 - n lost packets), no drop of any kind; every event 0..9999
# is built once: complete, or INCOMPLETE missing only ids 2 and/or 3, the
# incomplete ones exactly a run of ids ending at 5999 (from the kill to the
# restart); `xevb sink --input` checks every CRC and missing list.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init sr "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
N=10000 K=6000

# Host 0 sends event 6000 1.2 s after it starts; the restarted host 1's
# copy of it comes once host 1 is killed and started again, which on a
# slow or loaded machine takes seconds: the timeout (5 s) covers that, the
# window holds it, and the END_OF_RUN of all four ids ends the run whatever
# is open then.
e2e_builder 0 sr.b --sources 0-3 --timeout-ms 5000 --window 65536 --duration "$E2E_RUN" --exit-on-eor \
	--output "$E2E_WORK/sr.evt"
F=(--pack 10 --frag-size 40-120 --rate 5000)
e2e_source 0 sr.s0 --source-ids 0-1 --events "$N" "${F[@]}" --seed 61
# Frames host 1 put on the wire: its switch port's received count.
s1_frames() { ip netns exec "$(tb_switch)" cat "/sys/class/net/$(tb_port source 1)/statistics/rx_packets"; }
s1_sent_some() { (($(s1_frames) - s1_base >= 160)); }
s1_base=$(s1_frames)
E2E_SRC_RC=137 e2e_source 1 sr.s1a --source-ids 2-3 --events "$N" "${F[@]}" --seed 62
victim=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "no xevb source process under pid $E2E_LAST_PID"
# Killed once it has sent 160 of its 2000 MEPs (800 events, 0.16 s): more
# than 64 per source id (the restart must be further behind than the
# builder's reorder limit to count as one), well before event K (1200 MEPs).
e2e_until "$E2E_WAIT" s1_sent_some || e2e_fail "source host 1 sent nothing in $E2E_WAIT s"
kill -KILL "$victim"
e2e_ok "sent SIGKILL to source host 1 (pid $victim) after $(($(s1_frames) - s1_base)) frames"
victim_gone() { ! kill -0 "$victim" 2>/dev/null; }
e2e_until "$E2E_WAIT" victim_gone || e2e_fail "source host 1 (pid $victim) still there after SIGKILL"
e2e_source 1 sr.s1b --source-ids 2-3 --events $((N - K)) --first-event "$K" "${F[@]}" --seed 63
e2e_wait_all
e2e_sink_file sr.k "$E2E_WORK/sr.evt" --expect-sources 4
export N K
e2e_check source_restart <<'PY'
N, K = int(os.environ["N"]), int(os.environ["K"])
b, s0, s1b, k = J("sr.b"), J("sr.s0"), J("sr.s1b"), J("sr.k")
ev = events(os.path.join(W, "sr.evt"))
eq("seq_resets (source ids 2 and 3 restarted once each)", b["seq_resets"], 2)
eq("seq_gaps (a restart is not a loss)", b["seq_gaps"], 0)
eq("no drop of any kind", {x: b[x] for x in b if x.startswith("drop_") and b[x]}, {})
eq("received = in events", b["frags_received"], b["frags_in_events"])
eq("every event built once", sorted(e["id"] for e in ev), list(range(N)))
eq("events opened = complete + incomplete = N, none discarded or open",
   (b["events_opened"], b["events_complete"] + b["events_incomplete"], b["events_discarded"], b["open_events"]),
   (N, N, 0, 0))
inc = sorted(e["id"] for e in ev if e["incomplete"])
true("some events incomplete (%d)" % len(inc), len(inc) > 0)
eq("incomplete events miss only source ids 2 and 3",
   sorted({tuple(e["missing"]) for e in ev if e["incomplete"]} - {(2, 3), (2,), (3,)}), [])
true("incomplete ids are one run ending at K-1 (%s..%s)" % (inc[0] if inc else None, inc[-1] if inc else None),
     inc and inc == list(range(inc[0], K)))
eq("fragments in the file = fragments received", sum(len(e["sources"]) for e in ev), b["frags_received"])
eq("host 0 and the restarted host 1 sent all theirs", (s0["fragments"], s1b["fragments"]), (2 * N, 2 * (N - K)))
eq("run ended by END_OF_RUN", b["run_ended"], True)
eq("sink --input: events, errors", (k["events"], k["errors"]), (N, 0))
PY
e2e_finish

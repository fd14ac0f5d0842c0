#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# With a DFM the builder's window follows its assignments (issue 21, item 4;
# the rule is in user/evb/builder.c). A DFM run (push, 12000 events at
# 3000/s, 2 source processes, 1 builder, 1 farm node); once the builder has
# built events (so after the DFM's first ASSIGN), source host 1
# spoofs source host 0's address and sends, for each of source_ids 0-2 (3
# of the 4: a quorum), 3 MEPs of the right run with 2 ids 2^28 + k ahead,
# all agreeing. Before: the quorum moved the window and every good fragment
# after it was late (the issue: 30320 late, 4420/12000 complete). Now each
# attack fragment counts `unassigned` (more than a window past what the DFM
# assigned), never `future`, the window never jumps, and every event of the
# run is complete at the builder and at the farm node.
# And before the run (no ASSIGN yet), the same attack 2^29 ahead: its MEPs
# place the window and open 6 events; the first ASSIGN finds them out of
# its reach and discards them (`events_unassigned`), nothing of them is
# built or forwarded, and the run's events place the window afresh.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init ua "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
N=12000
GOOD=$(tb_addr source 0)

dfm_sink 0 sink0 --credits 64
dfm_builder 0 b0 1 --sources 0-3 --credits 64 --timeout-ms 300
dfm_source 0 s0 --source-ids 0-1
dfm_source 1 s1 --source-ids 2-3
attack() {   # NAME DELAY_S FIRST_ID: 3 MEPs for each of source ids 0-2, 2 ids each
	ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" python3 - "$(tb_mac builder 0)" "$(tb_addr builder 0)" "$GOOD" "$2" "$3" \
		>"$E2E_WORK/$1.json" 2>"$E2E_WORK/$1.err" <<'PY'
import json, socket, struct, sys, time
sys.path.insert(0, "tests/integration")
from hostile_send import csum, mac

def udp_mep(dmac, smac, saddr, daddr, sid, run, seq, eids, payload=32):
    recs = b""
    for e in eids:
        recs += struct.pack("!IHHI", e, payload, 0, 0) + bytes((e + i) & 0xFF for i in range(payload))
    mep = struct.pack("!HBBHHII", 0x4D45, 1, 0, sid, len(eids), run, seq) + recs
    udp = struct.pack("!HHHH", 23900, 23900, 8 + len(mep), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(mep), seq & 0xFFFF, 0, 64, 17, 0,
                     socket.inet_aton(saddr), socket.inet_aton(daddr))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return dmac + smac + b"\x08\x00" + ip + udp + mep

time.sleep(float(sys.argv[4]))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
meps = frags = 0
for k in range(3):
    for sid in (0, 1, 2):
        e = int(sys.argv[5]) + 2 * k
        s.send(udp_mep(mac(sys.argv[1]), s.getsockname()[4], sys.argv[3], sys.argv[2], sid, 1,
                       0x7000 + k, [e, e + 1]))
        meps += 1
        frags += 2
        time.sleep(0.01)
print(json.dumps({"meps": meps, "frags": frags}))
PY
}
attack pre 0 $((1 << 29)) || e2e_fail "pre-run attack sender exit status $?"
(e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0' && attack attack 0 $((1 << 28))) &
ATTACK=$!
dfm_run dfm --rate 3000 --events "$N" --pack 10 --wait-builders 1 --wait-sources 2
wait "$ATTACK" || e2e_fail "attack sender exit status $?"
dfm_stop_all
e2e_wait_all
export N
e2e_check unassigned <<PY
$DFM_PY
N = int(os.environ["N"])
a, p, b, d, k = J("attack"), J("pre"), J("b0"), J("dfm"), J("sink0")
print("# builder drops: %s; jumps quorum %d idle %d" % ({x: b[x] for x in b if x.startswith("drop_")},
      b["jumps_quorum"], b["jumps_idle"]))
eq("attack: MEPs, fragments sent (before the run, during it)", (p["meps"], p["frags"], a["meps"], a["frags"]),
   (9, 18, 9, 18))
eq("builder: every attack fragment unassigned", b["drop_unassigned"], a["frags"])
# Real fragments that beat the first ASSIGN while the pre-run attack's window
# stands are late there; their events are re-asked and complete (below), the
# re-sent copies of fragments that did arrive counted duplicate.
print("# late %d, duplicate %d (fragments that beat the first ASSIGN, and re-sent copies)" %
      (b["drop_late"], b["drop_duplicate"]))
eq("builder: no other drop (unknown, run, overflow, future, partial)",
   [b["drop_" + x] for x in ("unknown_source", "wrong_run", "overflow", "future", "partial")], [0] * 5)
eq("builder: the window never jumped (quorum, idle)", (b["jumps_quorum"], b["jumps_idle"]), (0, 0))
eq("builder: received = in events + drops", b["frags_received"],
   b["frags_in_events"] + sum(b[x] for x in b if x.startswith("drop_")))
eq("builder: fragments received = the sources' + the attacks'",
   b["frags_received"], S(["s0", "s1"], "fragments") + a["frags"] + p["frags"])
eq("builder: events complete, incomplete, discarded, open",
   (b["events_complete"], b["events_incomplete"], b["events_discarded"], b["open_events"]), (N, 0, 6, 0))
eq("builder: the 6 events opened before the run discarded at the first ASSIGN, with their fragments",
   (b["events_unassigned"], b["frags_discarded"]), (6, p["frags"]))
eq("DFM: triggered = complete", (d["triggered"], d["complete"]), (N, N))
eq("DFM: lost + incomplete", lost(d) + d["incomplete"], 0)
eq("farm node: every event once, complete", (k["events"], k["complete"], k["duplicates"]), (N, N, 0))
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Far-future event_ids from configured sources at the allowed address
# (issue 9; the window rule is in user/evb/builder.c). One builder, sources
# 0-3 on source host 0 (the only allowed address, --xdp-filter).
#  - phase 1, hostile: while good events flow (until the attack is over:
#    a builder idle through it could take an attack MEP for a restart),
#    source host 1 spoofs
#    the good address and sends 300 MEPs of the right run, each from one
#    configured source_id (random), with 1-3 ids 2^28..2^30 ahead (random;
#    the first 5 are the old reproducer's: source 2, one id each). None is
#    corroborated (one source per region): every one of their fragments is
#    drop_future, the window never moves, every good event is complete.
#  - phase 2, legitimate: the good host restarts numbering 10^9 ahead, all
#    its sources together. The window follows: by quorum (3 of 4 sources:
#    the first MEP of sources 0 and 1, 10 fragments each, is drop_future and
#    its 10 events are INCOMPLETE missing exactly 0 and 1), or, if the
#    restart took longer than the timeout, because the builder was idle
#    (nothing lost). Exactly one jump, and the counts match its kind.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init fj "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
GOOD=$(tb_addr source 0)
N2=2000 FIRST2=1000000000

e2e_builder 0 fj.b --sources 0-3 --run 1 --timeout-ms 300 --allow-src "$GOOD" --xdp-filter --duration "$E2E_RUN" \
	--exit-on-eor --output "$E2E_WORK/fj.evt"
# Phase 1's good source sends until the attack is over (N1: what it sent).
e2e_source 0 fj.good1 --source-ids 0-3 --pack 10 --rate 5000 --no-end-of-run --duration "$E2E_RUN"
good1=$E2E_LAST_PID
# The attack starts once good fragments arrive: the very first fragment of
# all places the window, and that is not what this test is about.
e2e_until "$E2E_WAIT" e2e_bstat 0 'd["frags_received"] > 0' || e2e_die "no good fragment at the builder after $E2E_WAIT s"
ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" python3 - "$(tb_mac builder 0)" "$E2E_DEST" "$GOOD" \
	>"$E2E_WORK/fj.attack.json" 2>"$E2E_WORK/fj.attack.err" <<'PY'
import json, random, socket, sys, time
sys.path.insert(0, "tests/integration")
from hostile_send import mac, mep_frame
rng = random.Random(9)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
meps = frags = 0
t_end = time.time() + 1.0
for i in range(300):
    if i < 5:
        sid, ids = 2, [rng.randrange(0x10000000, 0x70000000)]
    else:
        sid, e = rng.randrange(4), rng.randrange(0x10000000, 0x40000000)
        ids = list(range(e, e + 1 + rng.randrange(3)))
    s.send(mep_frame(mac(sys.argv[1]), s.getsockname()[4], sys.argv[3], sys.argv[2], sid, 1,
                     rng.getrandbits(32), ids))
    meps += 1
    frags += len(ids)
    time.sleep(0.003)
print(json.dumps({"meps": meps, "frags": frags, "late_s": round(time.time() - t_end, 3)}))
PY
arc=$?
((arc == 0)) || { e2e_show fj.attack; e2e_die "attack sender exit status $arc"; }
e2e_stop fj.good1
{ wait "$good1"; } 2>/dev/null || e2e_fail "phase 1 source exit status $?"
e2e_source 0 fj.good2 --source-ids 0-3 --events "$N2" --pack 10 --rate 5000 --first-event "$FIRST2"
e2e_wait_all
e2e_sink_file fj.k "$E2E_WORK/fj.evt" --expect-sources 4 || true
export N2 FIRST2
e2e_check future_jump <<'PY'
N2, F2 = int(os.environ["N2"]), int(os.environ["FIRST2"])
b, a, g1, g2 = J("fj.b"), J("fj.attack"), J("fj.good1"), J("fj.good2")
N1 = g1["events"]
print("# phase 1: %d good events" % N1)
print("# drops: %s; jumps quorum %d idle %d" % ({k: b[k] for k in b if k.startswith("drop_")},
      b["jumps_quorum"], b["jumps_idle"]))
eq("attack: MEPs sent", a["meps"], 300)
eq("XDP: every attack MEP reached the builder (mep = good packets + attack)",
   b["xdp"]["mep"]["packets"], g1["packets"] + g2["packets"] + a["meps"])
eq("exactly one window jump", b["jumps_quorum"] + b["jumps_idle"], 1)
quorum = b["jumps_quorum"] == 1
lost = 20 if quorum else 0
eq("drop_future = attack fragments + the jump's unconfirmed ones (%s)" % ("quorum" if quorum else "idle"),
   b["drop_future"], a["frags"] + lost)
eq("no other drop (dup, late, unknown, run, overflow)",
   [b[k] for k in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 5)
eq("received = in events + drops", b["frags_received"],
   b["frags_in_events"] + sum(b[k] for k in b if k.startswith("drop_")))
eq("events complete", b["events_complete"], N1 + N2 - (10 if quorum else 0))
eq("events incomplete (the jump's first 10 under quorum)", b["events_incomplete"], 10 if quorum else 0)
eq("discarded, open", (b["events_discarded"], b["open_events"]), (0, 0))
eq("run ended by END_OF_RUN", b["run_ended"], True)
ev = events(os.path.join(W, "fj.evt"))
eq("built events written", len(ev), N1 + N2)
eq("ids: phase 1 and phase 2, each once", sorted(e["id"] for e in ev), list(range(N1)) + list(range(F2, F2 + N2)))
eq("phase 1: every good event complete", sum(not e["incomplete"] for e in ev if e["id"] < N1), N1)
inc = [(e["id"], e["missing"]) for e in ev if e["incomplete"]]
eq("incomplete events and what they miss", inc, [(F2 + i, [0, 1]) for i in range(10)] if quorum else [])
k = J("fj.k")
eq("sink --input: every event and CRC checked", (k["events"], k["errors"]), (N1 + N2, 0))
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# No amplification, no remote stop of a source (issue 21). A pull run (DFM,
# one builder, one source process with 4 ids, one farm node); a host that
# is no builder (a second builder host) sends the source process:
#  - one REQUEST, flag REASK, of 181 records x 1024 events (185,344
#    events it does not hold), from its own address, listening there for
#    answers: before, ~58,000x the request's bytes came back;
#  - an ASSIGN and a BYE claiming to come from the DFM.
# Books: the REQUEST is refused (not from a builder the DFM listed), no
# byte comes back (bound: 2x the request), the forged ASSIGN and BYE are
# refused and counted, the source keeps serving the run to its end, and
# every event reaches the farm node complete.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init ha "${1:-build}" --sources 1 --builders 2 --sinks 1 --dfm 1
N=10000
SRC=$(tb_addr source 0)

dfm_sink 0 k0 --credits 1024 --dfm "$DFM_ADDR"
dfm_builder 0 b0 1 --sources 0-3 --credits 256
dfm_source 0 s0 --source-ids 0-3 --frag-size 200
# The attack once the run is on (the DFM triggering: the source has joined).
(e2e_wait_line triggering "$E2E_WORK/dfm.err"; ip netns exec "$(tb_ns builder 1)" timeout "$E2E_TMO" python3 - "$SRC" "$(tb_addr builder 1)" \
	"$E2E_WORK/attacker.json" <<'PY' 2>"$E2E_WORK/attacker.err") &
import json, socket, struct, sys, time
src, me, out = sys.argv[1], sys.argv[2], sys.argv[3]
HDR = struct.Struct("!HBBBBHIIHH")
# answers would come to us as UDP MEPs on 23900
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind((me, 23900))
rx.setblocking(False)
ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ctl.bind((me, 23902))
recs = b"".join(struct.pack("!IHBB", 1000000 + 1024 * i, 1024, 1, 0) for i in range(181))
req = HDR.pack(0x5843, 1, 5, 2, 0, 0, 0x1234567, 1, 181, 0) + recs
ctl.sendto(req, (src, 23903))
# "the DFM": an ASSIGN of 1000 events to us, then BYE
asg = HDR.pack(0x5843, 1, 2, 1, 0, 0, 0x7654321, 1, 1, 0) + \
    struct.pack("!IHBB4sHHI", 2000000, 1000, 0, 0, socket.inet_aton(me), 9, 0, 1)
ctl.sendto(asg, (src, 23903))
ctl.sendto(HDR.pack(0x5843, 1, 7, 1, 0, 0, 0x7654321, 2, 0, 0), (src, 23903))
got, t_end = 0, time.time() + 3
while time.time() < t_end:
    try:
        got += len(rx.recv(65535))
    except BlockingIOError:
        time.sleep(0.01)
json.dump({"request_bytes": len(req), "answer_bytes": got}, open(out, "w"))
PY
_e2e_track $! attacker 0
dfm_run_to_end dfm --mode pull --rate 2500 --events "$N" --wait-builders 1 --wait-sources 1

e2e_check amplify <<PY
$DFM_PY
n = $N
a = json.load(open(os.path.join(W, "attacker.json")))
true("answers to the forged REQUEST: %d bytes for %d sent (bound 2x)" % (a["answer_bytes"], a["request_bytes"]),
     a["answer_bytes"] <= 2 * a["request_bytes"])
s = J("s0")
eq("source: REQUEST not from a builder the DFM listed, refused", s["requests_unknown_builder"], 1)
eq("source: ASSIGN and BYE as the DFM from elsewhere, refused", s["not_from_dfm"], 2)
eq("source: the forged ASSIGN took nothing", s["assigned_events"], 0)
eq("source: it knows the one builder", s["builders_known"], 1)
d = dfm_complete("dfm", n)
eq("lost + incomplete", lost(d) + d["incomplete"], 0)
k = J("k0")
eq("farm node got every event once", (k["events"], k["duplicates"], k["errors"]), (n, 0, 0))
PY
e2e_finish

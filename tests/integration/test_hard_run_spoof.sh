#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The run number is never taken from the data (issue 21, item 4;
# docs/hardening.md). Before the sources start, source host 1 spoofs
# source host 0's address and sends one MEP of run 999 for each of
# source_ids 0-3 (4 fragments). Before: a builder without --run adopted
# run 999 from the first MEP and all 48000 good fragments were wrong_run,
# 0 events complete. Now:
#  - standalone: a builder without --run takes run 1 (the default of
#    xevb source and xevb dfm): the 4 spoofed fragments are wrong_run, all
#    10000 events of run 1 complete;
#  - with a DFM (pull, run 5) and a builder without --run: the run is the
#    one the DFM's ASSIGNs carry: the same 4 wrong_run, all 6000 events of
#    run 5 complete at the builder and the farm node. (Pull: in push mode
#    fragments can beat the first ASSIGN; of a run other than 1 they are
#    then wrong_run and re-asked, docs/hardening.md.)
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init rn "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
E2E_DEST=$(tb_addr builder 0)
GOOD=$(tb_addr source 0)
N1=10000 N2=6000

# spoof_run999 NAME [udp]: one run-999 MEP per source_id 0-3, from GOOD.
spoof_run999() {
	ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" python3 - "$(tb_mac builder 0)" "$E2E_DEST" "$GOOD" "${2:-raw}" \
		>"$E2E_WORK/$1.json" 2>"$E2E_WORK/$1.err" <<'PY'
import json, socket, struct, sys
sys.path.insert(0, "tests/integration")
from hostile_send import csum, mac, mep_frame
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
for sid in range(4):
    f = mep_frame(mac(sys.argv[1]), s.getsockname()[4], sys.argv[3], sys.argv[2], sid, 999, 0, [0])
    if sys.argv[4] == "udp":
        # the same MEP in UDP to port 23900: IP header rewritten, UDP header added
        ip, mep = bytearray(f[14:34]), f[34:]
        ip[9] = 17
        ip[2:4] = struct.pack("!H", 28 + len(mep))
        ip[10:12] = b"\0\0"
        ip[10:12] = struct.pack("!H", csum(bytes(ip)))
        f = f[:14] + bytes(ip) + struct.pack("!HHHH", 23900, 23900, 8 + len(mep), 0) + mep
    s.send(f)
print(json.dumps({"meps": 4, "frags": 4}))
PY
	(($? == 0)) || { e2e_show "$1"; e2e_die "$1: sender failed"; }
	# Taken before anything else comes: the builder has dropped all four.
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["drop_wrong_run"] >= 4' || e2e_fail "$1: the builder did not take the 4 spoofed MEPs"
}

# only_spoofs_dropped(b, a, n): builder B dropped the spoofed fragments of
# sender A as wrong_run and nothing else, and built N events complete.
RS_PY=$(cat <<'PY'
def only_spoofs_dropped(b, a, n):
    drops = {x: b[x] for x in b if x.startswith("drop_")}
    print("# drops: %s" % drops)
    eq("the 4 spoofed fragments wrong_run", b["drop_wrong_run"], a["frags"])
    eq("no other drop", sum(drops.values()), a["frags"])
    eq("received = in events + drops", b["frags_received"], b["frags_in_events"] + sum(drops.values()))
    eq("events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (n, 0))
PY
)

# Standalone: XDP builder without --run.
e2e_sink 0 k1 --expect-events "$N1" --expect-sources 4
e2e_builder 0 b1 --sources 0-3 --sink "$(tb_addr sink 0):$E2E_PORT" --exit-on-eor --duration "$E2E_RUN"
spoof_run999 a1
e2e_source 0 s1 --source-ids 0-3 --events "$N1" --pack 10 --rate 20000
e2e_wait_all
e2e_check standalone <<PY
$RS_PY
b, a, k = J("b1"), J("a1"), J("k1")
eq("run number: the default, not the first MEP's", b["run_number"], 1)
only_spoofs_dropped(b, a, 10000)
eq("farm node: every event, complete", (k["events"], k["complete"]), (10000, 10000))
PY

# With a DFM of run 5: the builder takes the ASSIGNs' run.
dfm_sink 0 k2 --credits 64
dfm_builder 0 b2 1 --sources 0-3 --credits 64
spoof_run999 a2 udp
dfm_source 0 s2a --source-ids 0-1 --run 5
dfm_source 1 s2b --source-ids 2-3 --run 5
dfm_run_to_end dfm --mode pull --rate 3000 --events "$N2" --pack 10 --run 5 --wait-builders 1 --wait-sources 2
e2e_check dfm <<PY
$DFM_PY
$RS_PY
b, a, k = J("b2"), J("a2"), J("k2")
eq("run number: the DFM's", b["run_number"], 5)
only_spoofs_dropped(b, a, 6000)
dfm_complete("dfm", 6000, "DFM: triggered = complete")
eq("farm node: every event once", (k["events"], k["complete"], k["duplicates"]), (6000, 6000, 0))
PY
e2e_finish

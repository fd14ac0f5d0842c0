#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# No lock-out (issue 21): one host (a second builder host) floods the DFM
# with STATUS from 64 ports as builders and 256 ports as source processes,
# every 100 ms, from before the run until after it (until dfm_stop_all's
# SIGINT; E2E_RUN at most): without a bound the
# DFM's tables (64 builders, 256 source processes) fill and the real
# builder and source are never admitted. With --max-per-address (default
# 8) the flood gets at most 8 entries of each at its address, the rest is
# refused and counted, the real builder and source join, and every event
# of the run reaches the farm node complete.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init hl "${1:-build}" --sources 1 --builders 2 --sinks 1 --dfm 1
N=10000

ip netns exec "$(tb_ns builder 1)" timeout "$E2E_TMO" python3 - "${DFM_ADDR%:*}" "$(tb_addr builder 1)" \
	"$E2E_WORK/flood.json" "$E2E_RUN" <<'PY' 2>"$E2E_WORK/flood.err" &
import json, os, signal, socket, struct, sys, time
dfm, me, out = (sys.argv[1], 23901), sys.argv[2], sys.argv[3]
HDR, ST = struct.Struct("!HBBBBHIIHH"), struct.Struct("!IIQIIHH")
socks = []
for k in range(64 + 256):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((me, 30000 + k))
    socks.append(s)
sent, stop = 0, [False]
signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
signal.signal(signal.SIGINT, lambda *_: stop.__setitem__(0, True))
epoch, seq, t_end = int.from_bytes(os.urandom(4), "big") | 1, 0, time.time() + float(sys.argv[4])
while not stop[0] and time.time() < t_end:
    for k, s in enumerate(socks):
        seq += 1
        if k < 64:   # a builder with no credit: it only takes a table entry
            msg = HDR.pack(0x5843, 1, 1, 2, 0, k, epoch, seq, 1, 0) + ST.pack(0, 0, 0, 0, 0, 0, 0)
        else:        # a source process claiming ids 0-3
            msg = HDR.pack(0x5843, 1, 1, 3, 0, 0, epoch, seq, 1, 0) + ST.pack(65536, 0, 0, 0, 0, 0, 4)
        try:
            s.sendto(msg, dfm)
            sent += 1
        except OSError:
            pass
    if not os.path.exists(out + ".ready"):
        open(out + ".ready", "w").close()
    time.sleep(0.1)
json.dump({"sent": sent}, open(out, "w"))
PY
_e2e_track $! flood 0
# The flood is there first: a round sent to every port.
e2e_until "$E2E_WAIT" test -e "$E2E_WORK/flood.json.ready" || e2e_die "the flood did not start"

dfm_sink 0 k0 --credits 1024 --dfm "$DFM_ADDR"
dfm_builder 0 b0 1 --sources 0-3 --credits 256
dfm_source 0 s0 --source-ids 0-3 --frag-size 64
dfm_run_to_end dfm --mode push --rate 5000 --events "$N" --wait-builders 1 --wait-sources 1

e2e_check lockout <<PY
$DFM_PY
n = $N
d = J("dfm")
at = [b for b in d["builders"] if b["addr"] == "198.18.2.2"]
pr = d["peers_refused"]
true("flood: builder entries at its address <= 8 (%d)" % len(at), len(at) <= 8)
true("flood: builder STATUS refused per address (%d)" % pr["builders_per_address"], pr["builders_per_address"] > 0)
true("flood: source STATUS refused per address (%d)" % pr["sources_per_address"], pr["sources_per_address"] > 0)
eq("tables never full", (pr["builders_table_full"], pr["sources_table_full"]), (0, 0))
real = [b for b in d["builders"] if b["addr"] == "198.18.2.1"]
eq("the real builder joined and took every event", [b["assigned"] for b in real], [n])
eq("flood builders took nothing", sum(b["assigned"] for b in at), 0)
eq("triggered = complete", (d["triggered"], d["complete"]), (n, n))
eq("lost + incomplete", lost(d) + d["incomplete"], 0)
k = J("k0")
eq("farm node got every event once", (k["events"], k["duplicates"], k["errors"]), (n, 0, 0))
PY
e2e_finish

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Forged event data for tests/integration/test_hard_forged_data.sh.

A host on the DAQ network with no key and no control-plane access sends
MEPs of the run's source ids to a builder, as whole Ethernet frames on
eth0 (AF_PACKET): from its own MAC, with the IPv4 source address given
(its own, or a spoofed one). Each MEP carries PACK consecutive event ids
from FIRST; every fragment's payload is 32 bytes of 0xEE with CRC 0, so a
farm node that got one would count it as an error. Bounded in count;
prints one JSON object: MEPs and fragments sent.

usage: forge_data.py DMAC DADDR SADDR FIRST COUNT SIDS [PACK]
  SIDS: source ids, comma separated; COUNT event ids from FIRST per source id.
"""
import json, socket, struct, sys, time
sys.path.insert(0, "tests/integration")
from hostile_send import csum, mac

PAYLOAD = 32


def frame(dmac, smac, saddr, daddr, sid, seq, eids):
    recs = b"".join(struct.pack("!IHHI", e, PAYLOAD, 0, 0) + b"\xee" * PAYLOAD for e in eids)
    mep = struct.pack("!HBBHHII", 0x4D45, 1, 0, sid, len(eids), 1, seq) + recs
    udp = struct.pack("!HHHH", 23900, 23900, 8 + len(mep), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(mep), seq & 0xFFFF, 0, 64, 17, 0,
                     socket.inet_aton(saddr), socket.inet_aton(daddr))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return dmac + smac + b"\x08\x00" + ip + udp + mep


def main():
    dmac, daddr, saddr = mac(sys.argv[1]), sys.argv[2], sys.argv[3]
    first, count = int(sys.argv[4]), int(sys.argv[5])
    sids = [int(x) for x in sys.argv[6].split(",")]
    pack = int(sys.argv[7]) if len(sys.argv) > 7 else 10
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind(("eth0", 0))
    smac = s.getsockname()[4]
    meps = frags = 0
    for e in range(first, first + count, pack):
        eids = list(range(e, min(e + pack, first + count)))
        for sid in sids:
            s.send(frame(dmac, smac, saddr, daddr, sid, 0x7000 + meps, eids))
            meps += 1
            frags += len(eids)
            # Paced a little: a veth's queue is not the subject here.
            if meps % 20 == 0:
                time.sleep(0.002)
    print(json.dumps({"meps": meps, "frags": frags}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A forged control BYE (and ASSIGN) for tests/integration/test_hard_remote_stop.sh.

Runs on the DFM's own host (its address, another port): first learns the
DFM's epoch by sniffing one of its datagrams on IFACE (AF_PACKET, UDP from
DFM_PORT, control magic 0x5843), then sends each TARGET (ADDR:PORT) a BYE
in the DFM's role and epoch from FROM_PORT, REPS times; with --assign-to,
also an ASSIGN (10 events from 0, as from a restarted DFM: epoch + 1) to
each of those, REPS times; with --to-dfm, also to the DFM itself, REPS
times each, what its rules drop after validation: a builder's DONE and
BYE from a port no builder of the DFM's is at (unknown_peer), a farm
node's STATUS (wrong_role: the DFM takes none). Bounded: gives up
sniffing after 30 s. Prints one JSON object: the epoch and datagrams sent.
Control header (docs/control-protocol.md): magic u16, version u8, type u8,
role u8, 0 u8, sender_id u16, epoch u32, seq u32, n_recs u16, 0 u16.
"""
import argparse, json, socket, struct, sys, time

STATUS, ASSIGN, DONE, BYE = 1, 2, 3, 7
ROLE_DFM, ROLE_BUILDER, ROLE_SINK = 1, 2, 4


def sniff_epoch(iface, dfm_port):
    # ETH_P_ALL: only these sockets see what the host sends, not just what it gets.
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0x0003))
    s.settimeout(0.5)
    end = time.monotonic() + 30.0
    while time.monotonic() < end:
        try:
            f = s.recv(2048)
        except socket.timeout:
            continue
        ip = f[14:]
        if f[12:14] != b"\x08\x00" or len(ip) < 20 or ip[9] != 17:
            continue
        ihl = (ip[0] & 15) * 4
        udp = ip[ihl:]
        if len(udp) < 8 + 20 or struct.unpack(">H", udp[0:2])[0] != dfm_port:
            continue
        ctl = udp[8:]
        if struct.unpack(">H", ctl[0:2])[0] == 0x5843 and ctl[4] == ROLE_DFM:
            return struct.unpack(">I", ctl[8:12])[0]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("iface")
    ap.add_argument("dfm_addr")
    ap.add_argument("dfm_port", type=int)
    ap.add_argument("from_port", type=int)
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--assign-to", nargs="*", default=[])
    ap.add_argument("--to-dfm", action="store_true")
    a = ap.parse_args()
    epoch = sniff_epoch(a.iface, a.dfm_port)
    if epoch is None:
        print(json.dumps({"epoch": None, "sent": 0}))
        sys.exit(1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.dfm_addr, a.from_port))
    sent = assigns = to_dfm = 0
    for r in range(a.reps):
        for mtype, role, rec in ((DONE, ROLE_BUILDER, struct.pack(">IHBB", 0, 0, 0, 0)), (BYE, ROLE_BUILDER, b""),
                                 (STATUS, ROLE_SINK, struct.pack(">IIQIIHH", 64, 0, 0, 0, 0, 0, 0))):
            if a.to_dfm:
                s.sendto(struct.pack(">HBBBBHIIHH", 0x5843, 1, mtype, role, 0, 7, 0x5151, 3000 + 3 * r + mtype,
                                     1 if rec else 0, 0) + rec, (a.dfm_addr, a.dfm_port))
                to_dfm += 1
        for t in a.targets:
            host, port = t.rsplit(":", 1)
            msg = struct.pack(">HBBBBHIIHH", 0x5843, 1, BYE, ROLE_DFM, 0, 0, epoch, 1000 + r, 0, 0)
            s.sendto(msg, (host, int(port)))
            sent += 1
        for t in a.assign_to:
            host, port = t.rsplit(":", 1)
            msg = struct.pack(">HBBBBHIIHH", 0x5843, 1, ASSIGN, ROLE_DFM, 0, 0, (epoch + 1) & 0xFFFFFFFF or 1,
                              2000 + r, 1, 0) + \
                struct.pack(">IHBB4sHHI", 0, 10, 0, 0, socket.inet_aton(host), 0, 0, 1)
            s.sendto(msg, (host, int(port)))
            assigns += 1
        time.sleep(0.05)
    print(json.dumps({"epoch": "%08x" % epoch, "sent": sent, "assigns": assigns, "to_dfm": to_dfm}))


if __name__ == "__main__":
    main()

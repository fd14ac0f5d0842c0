#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Capture what `xevb source` sends and check it against wire format 1.1.

Runs in the receiving namespace, tcpdump-free:

  frames     AF_PACKET on --dev: every packet as it crossed the wire. Each
             must fit --mtu with DF set and be a valid MEP: plain (records
             fill it, CRCs and payloads right) or a SEGMENT (section 1.1:
             n_frags 1, seg_offset a multiple of 4 and below length, a
             non-last segment a positive multiple of 4 bytes, the last
             padded to 4 with zeros and nothing after). Segments are joined
             per (source, event): offsets i * stride, the right count, every
             byte once, the joined payload the emulator's and its CRC-32C
             the one in every segment.
  datagrams  a raw IPv4 (--proto) or UDP (--udp) socket: what the kernel
             delivers after reassembling IP fragments. Each datagram must
             be one valid plain MEP; /proc/net/snmp says how many datagrams
             the kernel reassembled meanwhile.

Stops --idle seconds after the last packet (once one came), at --timeout
or at SIGINT / SIGTERM; prints one JSON object (counts and the first
violations).
"""
import argparse
import json
import os
import select
import signal
import socket
import struct
import sys
import time

ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33
F_RESEND, F_EOR, F_SEGMENT = 1, 2, 4
EMU = bytes((0x5A + i * 131 + (i >> 8)) & 0xFF for i in range(65535))


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_T = _crc_table()
_emu_crc = {}


def crc32c(b):
    c = 0xFFFFFFFF
    t = CRC_T
    for x in b:
        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def emu_crc(n):
    """CRC of the emulator's payload depends on the length only."""
    if n not in _emu_crc:
        _emu_crc[n] = crc32c(EMU[:n])
    return _emu_crc[n]


assert crc32c(b"123456789") == 0xE3069283


class Check:
    def __init__(self, a):
        self.a = a
        self.stop = False    # SIGINT / SIGTERM: report what came so far
        self.bad = []
        self.n_bad = 0
        self.c = dict(packets=0, plain_packets=0, segment_packets=0, plain_fragments=0,
                      resend_packets=0, eor_packets=0, max_ip_len=0, ip_fragments_seen=0)
        self.frags = {}      # (source, event) -> dict(length, crc, segs{offset: bytes}, dups)
        self.seq = {}        # source -> packet_seqs seen
        self.strides = set()

    def fail(self, what):
        self.n_bad += 1
        if len(self.bad) < 20:
            self.bad.append(what)

    def ip(self, b):
        """The MEP of one IPv4 packet as on the wire, or None."""
        if len(b) < 20 or b[0] >> 4 != 4:
            return None
        ihl = (b[0] & 15) * 4
        tot, ff, proto = struct.unpack_from("!H", b, 2)[0], struct.unpack_from("!H", b, 6)[0], b[9]
        if self.a.udp:
            if proto != 17 or struct.unpack_from("!H", b, ihl + 2)[0] != self.a.udp:
                return None
            l4 = 8
        elif proto != self.a.proto:
            return None
        else:
            l4 = 0
        if ff & 0x3FFF:
            self.c["ip_fragments_seen"] += 1
            if self.a.mode == "frames":
                self.fail("an IP fragment on the wire (flags/offset %04x)" % ff)
            return None
        if tot > len(b):
            self.fail("IP total length %d past the %d captured bytes" % (tot, len(b)))
            return None
        self.c["max_ip_len"] = max(self.c["max_ip_len"], tot)
        if self.a.mode == "frames":
            if tot > self.a.mtu:
                self.fail("a %d-byte packet over the MTU %d" % (tot, self.a.mtu))
            if not ff & 0x4000:
                self.fail("DF clear on a %d-byte packet" % tot)
        return b[ihl + l4:tot]

    def mep(self, m):
        self.c["packets"] += 1
        if len(m) < 16:
            return self.fail("a %d-byte MEP" % len(m))
        magic, ver, flags, src, nf, run, seq = struct.unpack_from("!HBBHHII", m, 0)
        if magic != 0x4D45 or ver != 1 or flags & ~7 or not 1 <= nf <= 1024:
            return self.fail("bad MEP header %s" % m[:16].hex())
        self.seq.setdefault(src, []).append(seq)
        self.c["resend_packets"] += bool(flags & F_RESEND)
        self.c["eor_packets"] += bool(flags & F_EOR)
        if flags & F_SEGMENT:
            self.segment(m, src, nf)
        else:
            self.plain(m, nf)

    def plain(self, m, nf):
        self.c["plain_packets"] += 1
        off = 16
        for j in range(nf):
            if off + 12 > len(m):
                return self.fail("record %d runs past the MEP" % j)
            eid, ln, res, crc = struct.unpack_from("!IHHI", m, off)
            pl = m[off + 12:off + 12 + ln]
            pad = m[off + 12 + ln:off + 12 + ((ln + 3) & ~3)]
            if res or len(pl) != ln or any(pad):
                return self.fail("record %d of event %d: reserved %d or short or bad padding" % (j, eid, res))
            if pl != EMU[:ln] or crc != emu_crc(ln):
                self.fail("record of event %d: payload or CRC wrong" % eid)
            if self.a.frag_size and ln != self.a.frag_size:
                self.fail("record of event %d: %d bytes, want %d" % (eid, ln, self.a.frag_size))
            self.c["plain_fragments"] += 1
            off += 12 + ((ln + 3) & ~3)
        if off != len(m):
            self.fail("%d bytes left after the records" % (len(m) - off))

    def segment(self, m, src, nf):
        self.c["segment_packets"] += 1
        if nf != 1 or len(m) < 16 + 12 + 4:
            return self.fail("SEGMENT with n_frags %d, %d bytes" % (nf, len(m)))
        eid, ln, so, crc = struct.unpack_from("!IHHI", m, 16)
        avail = len(m) - 28
        if ln == 0 or so & 3 or so >= ln:
            return self.fail("SEGMENT of event %d: length %d, seg_offset %d" % (eid, ln, so))
        if so + avail < ln:
            if avail % 4:
                return self.fail("non-last SEGMENT of %d bytes, not a multiple of 4" % avail)
            data = m[28:]
            self.strides.add(avail)
        else:
            n = ln - so
            if avail != ((n + 3) & ~3) or any(m[28 + n:]):
                return self.fail("last SEGMENT of event %d: %d bytes for %d, or padding not zero" % (eid, avail, n))
            data = m[28:28 + n]
        f = self.frags.setdefault((src, eid), dict(length=ln, crc=crc, segs={}, dups=0, times={}))
        f["times"][so] = f["times"].get(so, 0) + 1
        if f["length"] != ln or f["crc"] != crc:
            return self.fail("segments of event %d source %d disagree on length or CRC" % (eid, src))
        if so in f["segs"]:
            if f["segs"][so] != data:
                self.fail("a repeated segment with other bytes")
            f["dups"] += 1
            return
        f["segs"][so] = data

    def join(self):
        """Every fragment from its segments; counts whole, partial, duplicates."""
        whole = partial = dups = resent = uneven = 0
        stride = max(self.strides) if self.strides else 0
        if len(self.strides) > 1:
            self.fail("non-last segments of several sizes %s" % sorted(self.strides))
        for (src, eid), f in sorted(self.frags.items()):
            ln, segs = f["length"], f["segs"]
            dups += f["dups"]
            # A fragment sent again (an answer to a re-ask) comes again whole.
            resent += max(f["times"].values()) > 1
            uneven += len(set(f["times"].values())) > 1
            if self.a.frag_size and ln != self.a.frag_size:
                self.fail("fragment of event %d: %d bytes, want %d" % (eid, ln, self.a.frag_size))
            if stride:
                want = [i * stride for i in range((ln + stride - 1) // stride)]
            else:
                want = [0]
            if sorted(segs) != want:
                if set(segs) <= set(want) and self.a.faults:
                    partial += 1
                    continue
                self.fail("fragment of event %d source %d: offsets %s, want %s" %
                          (eid, src, sorted(segs)[:6], want[:6]))
                continue
            data = b"".join(segs[o] for o in want)
            if data != EMU[:ln]:
                self.fail("fragment of event %d source %d: joined bytes are not the payload" % (eid, src))
            elif emu_crc(ln) != f["crc"]:   # the joined bytes are EMU[:ln]: its CRC, cached per length
                self.fail("fragment of event %d source %d: CRC-32C of the joined bytes is not its crc32c" % (eid, src))
            whole += 1
        self.c.update(segmented_fragments=len(self.frags), whole_fragments=whole,
                      partial_fragments=partial, duplicate_segments=dups, stride=stride,
                      resent_fragments=resent, unevenly_repeated_fragments=uneven)

    def seqs(self):
        """Without faults a source's packets carry packet_seq 0, 1, 2, ... in order."""
        for src, s in self.seq.items():
            if not self.a.faults and s != list(range(s[0], s[0] + len(s))):
                self.fail("source %d: packet_seq not consecutive" % src)
        self.c["sources"] = sorted(self.seq)


def reasm_oks():
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Ip:")]
    return {k: int(v) for k, v in zip(rows[0][1:], rows[1][1:])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("frames", "datagrams"), required=True)
    ap.add_argument("--dev", default="eth0")
    ap.add_argument("--udp", type=int, default=0)
    ap.add_argument("--proto", type=int, default=253)
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--frag-size", type=int, default=0)
    ap.add_argument("--faults", action="store_true", help="segments may be missing or repeated")
    ap.add_argument("--beside-builder", action="store_true", help="frames: a builder's socket takes the packets")
    ap.add_argument("--idle", type=float, default=1.5)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--max-packets", type=int, default=200000)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()
    ck = Check(a)

    # The datagram socket also keeps the kernel from answering with ICMP
    # unreachables, unless a builder on this host takes the packets.
    ds = None
    if a.mode == "datagrams" or not a.beside_builder:
        if a.udp:
            ds = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            ds.bind(("0.0.0.0", a.udp))
        else:
            ds = socket.socket(socket.AF_INET, socket.SOCK_RAW, a.proto)
        ds.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    ps = None
    if a.mode == "frames":
        ps = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
        ps.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        ps.bind((a.dev, ETH_P_IP))
    rx = ps if ps else ds
    snmp0 = reasm_oks()
    with open(a.ready, "w") as f:
        f.write("ready\n")
    t0 = time.monotonic()
    last = None
    n = 0
    signal.signal(signal.SIGINT, lambda *_: setattr(ck, "stop", True))
    signal.signal(signal.SIGTERM, lambda *_: setattr(ck, "stop", True))
    while n < a.max_packets and not ck.stop:
        now = time.monotonic()
        if now - t0 > a.timeout or (last is not None and now - last > a.idle):
            break
        try:
            r, _, _ = select.select([rx], [], [], 0.1)
        except InterruptedError:
            continue
        if not r:
            continue
        b, addr = rx.recvfrom(70000)
        if ps:
            if addr[2] == PACKET_OUTGOING:
                continue
            m = ck.ip(b)
        elif a.udp:
            m = b
        else:
            m = ck.ip(b)
        if m is None:
            continue
        n += 1
        last = time.monotonic()
        ck.mep(m)
    ck.join()
    ck.seqs()
    snmp1 = reasm_oks()
    out = dict(ck.c)
    out.update(violations=ck.n_bad, first_violations=ck.bad,
               reasm_oks=snmp1["ReasmOKs"] - snmp0["ReasmOKs"],
               reasm_fails=snmp1["ReasmFails"] - snmp0["ReasmFails"],
               elapsed_s=round(time.monotonic() - t0, 3))
    if ps:
        tp_packets, tp_drops = struct.unpack("II", ps.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        out["capture_drops"] = tp_drops
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A host without the run's key attacking an authenticated control plane
(docs/control-protocol.md, "Authentication"). Run inside a testbed
namespace while a capture (tcpdump -w PCAP -U) records what reaches the
target; it sends N datagrams of each kind to TARGET and writes what it
sent to OUT as JSON:

  forged:     STATUS as a builder, sealed with a key that is not the run's
  plain:      STATUS as a builder, version 1 (no MAC)
  replayed:   sealed datagrams taken from the capture, sent again unchanged
  flipped:    other captured sealed datagrams, one bit changed

  python3 ctl_attacker.py --target ADDR:PORT --self ADDR --pcap PCAP --n N --json OUT
"""
import argparse
import hashlib
import json
import os
import socket
import struct
import sys
import time

MAGIC = 0x5843
STATUS, ROLE_BUILDER = 1, 2
HDR = struct.Struct("!HBBBBHIIHH")
STATUS_REC = struct.Struct("!IIQIIHH")


def sealed_with(key, dst, msg):
    """Seal a version-1 message (sealed version 3) for dst (ip, port), with key."""
    m = bytearray(msg)
    m[2] = 3
    m += struct.pack(">Q", time.time_ns())
    d = socket.inet_aton(dst[0]) + struct.pack("!H", dst[1])
    return bytes(m) + hashlib.blake2b(d + bytes(m), key=key, digest_size=16).digest()


def status(seq, epoch):
    return HDR.pack(MAGIC, 1, STATUS, ROLE_BUILDER, 0, 7, epoch, seq, 1, 0) + \
        STATUS_REC.pack(4096, 0, 0, 0, 0, 0, 0)


def captured(path, port, me, want, limit_s):
    """Sealed datagrams to UDP port `port` in the capture (Ethernet, IPv4),
    other than our own."""
    t_end = time.time() + limit_s
    while True:
        got = []
        try:
            data = open(path, "rb").read()
        except OSError:
            data = b""
        off = 24
        while off + 16 <= len(data):
            incl = struct.unpack_from("<I", data, off + 8)[0]
            frame = data[off + 16:off + 16 + incl]
            off += 16 + incl
            if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
                continue
            if frame[26:30] == me:
                continue
            ihl = (frame[14] & 15) * 4
            udp = frame[14 + ihl:]
            if struct.unpack_from("!H", udp, 2)[0] != port:
                continue
            payload = udp[8:]
            if len(payload) > 44 and payload[2] == 3:
                got.append(payload)
        if len(got) >= want or time.time() > t_end:
            return got
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--self", required=True, help="our address: our own datagrams are not taken")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    host, port = a.target.rsplit(":", 1)
    dst = (host, int(port))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = {"forged": 0, "plain": 0, "replayed": 0, "flipped": 0}
    epoch = int.from_bytes(os.urandom(4), "big") or 1
    wrong_key = os.urandom(32)
    for i in range(a.n):
        s.sendto(sealed_with(wrong_key, dst, status(i + 1, epoch)), dst)
        sent["forged"] += 1
        s.sendto(status(a.n + i + 1, epoch), dst)
        sent["plain"] += 1
        time.sleep(0.002)
    caps = captured(a.pcap, dst[1], socket.inet_aton(a.self), 2 * a.n, 60.0)
    if len(caps) < 2 * a.n:
        print("ctl_attacker: only %d sealed datagrams in the capture, want %d" % (len(caps), 2 * a.n),
              file=sys.stderr)
    # The newest ones: replayed within the 5 s clock window.
    caps = caps[-2 * a.n:]
    for i, c in enumerate(caps):
        if i % 2 == 0:
            s.sendto(c, dst)
            sent["replayed"] += 1
        else:
            b = bytearray(c)
            b[20 + (i * 7) % (len(b) - 20)] ^= 1 << (i % 8)
            s.sendto(bytes(b), dst)
            sent["flipped"] += 1
        time.sleep(0.002)
    json.dump(sent, open(a.json, "w"))


if __name__ == "__main__":
    main()

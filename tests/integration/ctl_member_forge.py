#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A member of the run turned attacker (docs/hardening.md "Keys per member
and per run"),
for tests/integration/test_hard_member_keys.sh. It holds what its host was
given: a key file (a source's member key, or the master) and the run
number, and seals with the key schedule of docs/control-protocol.md
("Keys": libsodium's crypto_kdf_derive_from_key is BLAKE2b keyed with the
parent key, salt = subkey id little-endian, personal = the context).

  forge:  learns the DFM's epoch and newest sequence number, and its own
          source process's, off the wire (AF_PACKET on IFACE), then sends,
          REPS times each, with the best key it holds:
            dfm_status  a DFM STATUS, seq = newest + 2^30, to the builder
            dfm_bye     a DFM BYE to the builder and to another source (and
                        to the farm node, with --sink)
            sink_status a farm node's STATUS (done_total 2^40) to the builder
            own_jump    its own source's STATUS, seq = newest + 2^30, to the DFM
  builder: holding a builder's key bundle (its member key and its link
          keys), seals with every key it holds, once each: as another
          builder (STATUS to the DFM and to the farm node), as the farm
          node (RECEIVED of 2^40 to the DFM, STATUS to the other builder),
          as the DFM (BYE to the other builder), and as itself to the other
          builder (no link between builders).
  replay: sends the BYEs a capture holds from SRC to DST again, from SRC
          (a raw socket: the DFM's own address and port), unchanged.

Bounded: sniffing gives up after 30 s, reading the capture after 30 s.
Prints one JSON object: what was sent.
"""
import argparse
import hashlib
import json
import os
import socket
import struct
import sys
import time

MAGIC, STATUS, BYE = 0x5843, 1, 7
ROLE_DFM, ROLE_BUILDER, ROLE_SOURCE, ROLE_SINK = 1, 2, 3, 4
HDR = struct.Struct("!HBBBBHIIHH")
STATUS_REC = struct.Struct("!IIQIIHH")
TAG = b"xevb-member-key"


def kdf(parent, subkey_id, ctx):
    return hashlib.blake2b(b"", digest_size=32, key=parent, salt=struct.pack("<Q", subkey_id) + bytes(8),
                           person=ctx + bytes(8)).digest()


def load_key(path):
    """(role, id, key): role 0 for the master."""
    b = open(path, "rb").read()
    if b.startswith(TAG):
        _, role, ident, hexkey = b.split()
        return {b"source": ROLE_SOURCE, b"sink": ROLE_SINK}[role], int(ident), bytes.fromhex(hexkey.decode())
    return 0, 0, (b if len(b) == 32 else bytes.fromhex(b.decode().strip()))


def best_key(key, run, role, ident):
    """The key a holder of `key` uses to seal as (role, ident): a member key
    has one run key, whatever it claims; the master derives the right one."""
    mrole, mid, k = key
    if mrole:
        return kdf(k, run, b"xevbrun1")
    if role in (ROLE_SOURCE, ROLE_SINK):
        return kdf(kdf(k, role << 16 | ident, b"xevbmemb"), run, b"xevbrun1")
    return kdf(kdf(k, 0, b"xevbcore"), run, b"xevbrun1")


BUNDLE = b"xevb-key-bundle"
RECEIVED = 8


def bundle_keys(path, run):
    """(builder id, [run keys it holds]): its link with the DFM, then its links with sources and farm nodes."""
    lines = open(path, "rb").read().splitlines()
    head = lines[0].split()
    assert head[0] == BUNDLE and head[1] == b"builder", "not a builder's bundle"
    keys = [kdf(bytes.fromhex(head[3].decode()), run, b"xevbrun1")]
    for l in lines[1:]:
        f = l.split()
        if f[0] == b"link":
            keys.append(kdf(bytes.fromhex(f[3].decode()), run, b"xevbrun1"))
    return int(head[2]), keys


def forge_builder(a):
    me, keys = bundle_keys(a.bundle, a.run)
    dfm, other, sink = addr(a.dfm), addr(a.other_builder), addr(a.sink)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", a.from_port))
    st = STATUS_REC.pack(1 << 20, 0, 1 << 40, 0, 0, 0, 0)
    rx = struct.pack("!4sIQ", socket.inet_aton(sink[0]), 0, 1 << 40)
    cases = {
        "as_builder_to_dfm": (dfm, STATUS, ROLE_BUILDER, a.other_id, st),
        "as_sink_to_dfm": (dfm, RECEIVED, ROLE_SINK, a.sink_id, rx),
        "as_dfm_to_builder": (other, BYE, ROLE_DFM, 0, b""),
        "as_sink_to_builder": (other, STATUS, ROLE_SINK, a.sink_id, st),
        "as_self_to_builder": (other, STATUS, ROLE_BUILDER, me, st),
        "as_builder_to_sink": (sink, STATUS, ROLE_BUILDER, a.other_id, st),
    }
    sent = {"keys": len(keys)}
    for name, (dst, t, role, ident, rec) in cases.items():
        sent[name] = 0
        for i, k in enumerate(keys):
            s.sendto(seal(k, dst, msg(t, role, ident, 0x7777 + i, 1 << 30, rec)), dst)
            sent[name] += 1
            time.sleep(0.005)
    return sent


def seal(key, dst, msg):
    m = bytearray(msg)
    m[2] = 3
    m += struct.pack(">Q", time.time_ns())
    d = socket.inet_aton(dst[0]) + struct.pack("!H", dst[1])
    return bytes(m) + hashlib.blake2b(d + bytes(m), key=key, digest_size=16).digest()


def msg(mtype, role, ident, epoch, seq, rec=b""):
    return HDR.pack(MAGIC, 1, mtype, role, 0, ident, epoch, seq, 1 if rec else 0, 0) + rec


def addr(s):
    h, p = s.rsplit(":", 1)
    return (h, int(p))


def sniff(iface, want, limit_s=30.0):
    """{name: (epoch, seq)} of the first control datagram matching each want
    entry: name -> (udp src port, role), seen on iface in or out."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0x0003))
    s.settimeout(0.5)
    got, end = {}, time.monotonic() + limit_s
    while len(got) < len(want) and time.monotonic() < end:
        try:
            f = s.recv(2048)
        except socket.timeout:
            continue
        ip = f[14:]
        if f[12:14] != b"\x08\x00" or len(ip) < 20 or ip[9] != 17:
            continue
        udp = ip[(ip[0] & 15) * 4:]
        ctl = udp[8:]
        if len(ctl) < 20 or struct.unpack(">H", ctl[0:2])[0] != MAGIC:
            continue
        sport = struct.unpack(">H", udp[0:2])[0]
        for name, (port, role) in want.items():
            if name not in got and sport == port and ctl[4] == role:
                got[name] = struct.unpack(">II", ctl[8:16])
    return got


def forge(a):
    key = load_key(a.key)
    dfm, bld, other = addr(a.dfm), addr(a.builder), addr(a.other_source)
    bye_to = (bld, other) + ((addr(a.sink),) if a.sink else ())
    seen = sniff(a.iface, {"dfm": (dfm[1], ROLE_DFM), "own": (a.own_port, ROLE_SOURCE)})
    if len(seen) < 2:
        return {"error": "sniffed only %s" % sorted(seen)}
    (de, dseq), (oe, oseq) = seen["dfm"], seen["own"]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", a.from_port))
    sent = {"dfm_status": 0, "dfm_bye": 0, "sink_status": 0, "own_jump": 0}
    k_dfm = best_key(key, a.run, ROLE_DFM, 0)
    k_sink = best_key(key, a.run, ROLE_SINK, 0)
    k_own = best_key(key, a.run, ROLE_SOURCE, a.own_id)
    for i in range(a.reps):
        st = STATUS_REC.pack(1 << 20, 0, 0, 0, 0, 0, 0)
        s.sendto(seal(k_dfm, bld, msg(STATUS, ROLE_DFM, 0, de, (dseq + (1 << 30) + i) & 0xffffffff, st)), bld)
        sent["dfm_status"] += 1
        for dst in bye_to:
            s.sendto(seal(k_dfm, dst, msg(BYE, ROLE_DFM, 0, de, (dseq + (1 << 30) + 8 + i) & 0xffffffff)), dst)
            sent["dfm_bye"] += 1
        rec = STATUS_REC.pack(1 << 20, 0, 1 << 40, a.builder_epoch, 0, 0, 0)
        s.sendto(seal(k_sink, bld, msg(STATUS, ROLE_SINK, 0, 0x5151 + i, 1, rec)), bld)
        sent["sink_status"] += 1
        rec = STATUS_REC.pack(64, 0, 0, 0, 0, a.own_id, a.own_ids)
        s.sendto(seal(k_own, dfm, msg(STATUS, ROLE_SOURCE, a.own_id, oe, (oseq + (1 << 30) + i) & 0xffffffff, rec)),
                 dfm)
        sent["own_jump"] += 1
        time.sleep(0.01)
    sent["dfm_epoch"], sent["own_epoch"] = de, oe
    return sent


def captured_byes(path, src, dst, limit_s=30.0):
    end = time.monotonic() + limit_s
    s_ip, d_ip = socket.inet_aton(src[0]), socket.inet_aton(dst[0])
    while True:
        got = []
        data = open(path, "rb").read() if os.path.exists(path) else b""
        off = 24
        while off + 16 <= len(data):
            incl = struct.unpack_from("<I", data, off + 8)[0]
            f = data[off + 16:off + 16 + incl]
            off += 16 + incl
            if len(f) < 14 + 20 + 8 + 20 or f[12:14] != b"\x08\x00" or f[23] != 17:
                continue
            if f[26:30] != s_ip or f[30:34] != d_ip:
                continue
            udp = f[14 + (f[14] & 15) * 4:]
            sp, dp = struct.unpack_from("!HH", udp, 0)
            ctl = udp[8:]
            if sp == src[1] and dp == dst[1] and ctl[3] == BYE and ctl[2] == 3:
                got.append(bytes(ctl))
        if got or time.monotonic() > end:
            return got
        time.sleep(0.1)


def udp_packet(src, dst, payload):
    """IPv4 + UDP (checksum 0: none, allowed over IPv4) from src to dst."""
    ulen = 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0, socket.inet_aton(src[0]),
                     socket.inet_aton(dst[0]))
    return ip + struct.pack("!HHHH", src[1], dst[1], ulen, 0) + payload


def replay(a):
    src, dst = addr(a.src), addr(a.dst)
    byes = captured_byes(a.pcap, src, dst)
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    for b in byes:
        s.sendto(udp_packet(src, dst, b), (dst[0], 0))
        time.sleep(0.01)
    return {"replayed": len(byes)}


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("forge")
    f.add_argument("--key", required=True)
    f.add_argument("--run", type=int, required=True)
    f.add_argument("--iface", required=True)
    f.add_argument("--dfm", required=True)
    f.add_argument("--builder", required=True)
    f.add_argument("--other-source", required=True)
    f.add_argument("--sink")
    f.add_argument("--own-port", type=int, default=23903)
    f.add_argument("--own-id", type=int, required=True)
    f.add_argument("--own-ids", type=int, required=True)
    f.add_argument("--from-port", type=int, default=23999)
    f.add_argument("--builder-epoch", type=int, default=0)
    f.add_argument("--reps", type=int, default=3)
    b = sub.add_parser("builder")
    b.add_argument("--bundle", required=True)
    b.add_argument("--run", type=int, required=True)
    b.add_argument("--dfm", required=True)
    b.add_argument("--other-builder", required=True)
    b.add_argument("--other-id", type=int, required=True)
    b.add_argument("--sink", required=True)
    b.add_argument("--sink-id", type=int, required=True)
    b.add_argument("--from-port", type=int, default=23999)
    r = sub.add_parser("replay")
    r.add_argument("--pcap", required=True)
    r.add_argument("--src", required=True)
    r.add_argument("--dst", required=True)
    a = ap.parse_args()
    out = forge(a) if a.cmd == "forge" else forge_builder(a) if a.cmd == "builder" else replay(a)
    print(json.dumps(out))
    sys.exit(1 if "error" in out else 0)


if __name__ == "__main__":
    main()

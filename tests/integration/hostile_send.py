#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hostile traffic for tests/integration/test_hard_hostile.sh.

Sends whole Ethernet frames on IFACE (AF_PACKET) to the builder, paced and
bounded, and prints one JSON object: how many frames of each kind were sent
and the XDP verdict each deterministic kind must get.

Kinds:
  vectors    every tests/vectors/*.hex frame that fits the MTU, REPS times
             (MACs rewritten; verdicts from the BPF vector test's table)
  spoofed    valid MEPs of a configured source_id from a source address the
             builder does not allow: unknown_source in XDP
  future     valid MEPs from the allowed address but an unconfigured
             source_id, event_ids far in the future: unknown_source
  mutated    valid MEPs (allowed address, configured source_id, wrong run
             number) with one random byte changed: any verdict; counted in
             total only. One byte cannot turn run 1042 into run 1.
  fragments  6000-byte datagrams through the kernel, IPv4-fragmented into
             5 fragments each, alternately UDP to the MEP port (the first
             fragment is ip_fragment, the 4 later ones carry no UDP header:
             other) and raw protocol 253 (all 5 ip_fragment)
"""
import argparse, json, os, random, socket, struct, sys, time

VERDICT = {
    "bad_magic": "malformed_bad_magic", "bad_version": "malformed_bad_version",
    "bad_flag": "malformed_bad_flags", "zero_frags": "malformed_bad_nfrags",
    "too_many_frags": "malformed_bad_nfrags", "frags_missing": "malformed_frags_missing",
    "record_overrun": "malformed_rec_overrun", "trailing_bytes": "malformed_trailing",
    "reserved_nonzero": "malformed_reserved", "event_order": "malformed_event_order",
    "source_too_big": "malformed_bad_source", "short_mep_header": "malformed_short_mep",
    "ip_len_past_frame": "malformed_ip_len", "ip_len_short": "malformed_rec_overrun",
    "ihl_below_5": "malformed_bad_ihl", "truncated_ip": "malformed_trunc_ip",
    "udp_len_mismatch": "malformed_udp_len", "ip_frag_first": "ip_fragment",
    "ip_frag_later": "ip_fragment", "other_arp": "other", "other_tcp": "other",
    "other_udp_port": "other", "other_icmp": "other", "other_ipv6": "other",
    "seg_two_records": "malformed_segment_nfrags", "seg_zero_length": "malformed_segment_length",
    "seg_offset_unaligned": "malformed_segment_offset", "seg_offset_past_end": "malformed_segment_offset",
    "seg_middle_unaligned": "malformed_segment_size", "seg_last_extra": "malformed_segment_trailing",
}


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def mep_frame(dmac, smac, saddr, daddr, sid, run, seq, eids, payload=32, flags=0):
    recs = b""
    for e in eids:
        recs += struct.pack("!IHHI", e, payload, 0, 0) + bytes((e + i) & 0xFF for i in range(payload))
    mep = struct.pack("!HBBHHII", 0x4D45, 1, flags, sid, len(eids), run, seq) + recs
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(mep), seq & 0xFFFF, 0, 64, 253, 0,
                     socket.inet_aton(saddr), socket.inet_aton(daddr))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return dmac + smac + b"\x08\x00" + ip + mep


def mep_info(frame):
    """(saddr, source_id, n_frags) of a valid raw/UDP MEP frame, VLAN aware."""
    off = 12
    et = struct.unpack_from("!H", frame, off)[0]
    if et == 0x8100:
        off += 4
        et = struct.unpack_from("!H", frame, off)[0]
    off += 2
    ihl = (frame[off] & 15) * 4
    saddr = socket.inet_ntoa(frame[off + 12:off + 16])
    proto = frame[off + 9]
    off += ihl + (8 if proto == 17 else 0)
    sid, nf = struct.unpack_from("!HH", frame, off + 4)
    return saddr, sid, nf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", required=True)
    ap.add_argument("--dst-mac", required=True)
    ap.add_argument("--dst-ip", required=True)
    ap.add_argument("--allowed-ip", required=True)
    ap.add_argument("--sources", default="0-3")
    ap.add_argument("--vectors", default="tests/vectors")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--spoofed", type=int, default=1200)
    ap.add_argument("--future", type=int, default=1200)
    ap.add_argument("--mutated", type=int, default=2000)
    ap.add_argument("--fragments", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=2.0, help="spread over about this long")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="vectors,spoofed,future,mutated,fragments")
    a = ap.parse_args()
    kinds = set(a.kinds.split(","))
    for k in ("vectors", "spoofed", "future", "mutated", "fragments"):
        if k not in kinds:
            setattr(a, k if k != "vectors" else "reps", 0)
    rnd = random.Random(a.seed)
    lo, hi = map(int, a.sources.split("-"))
    configured = set(range(lo, hi + 1))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.dev, 0))
    smac = s.getsockname()[4]
    dmac = mac(a.dst_mac)
    mtu = int(open("/sys/class/net/%s/mtu" % a.dev).read())

    frames = []   # (kind, expected verdict or None, frame)
    skipped = []
    names = sorted(f[:-4] for f in os.listdir(a.vectors) if f.endswith(".hex"))
    index = {l.split("\t")[0]: l.split("\t")[1] for l in open(os.path.join(a.vectors, "index.tsv"))
             if not l.startswith("#")}
    for n in names:
        fr = bytes.fromhex("".join(open(os.path.join(a.vectors, n + ".hex")).read().split()))
        if len(fr) > mtu + 14 + 4:
            skipped.append(n)
            continue
        fr = dmac + smac + fr[12:]
        if index[n] in ("mep", "segment"):
            saddr, sid, _ = mep_info(fr)
            v = "to_xsk" if saddr == a.allowed_ip and sid in configured else "unknown_source"
            if index[n] == "segment":
                v = (v, "segment")   # a segment's own verdict slot, then where it went
        else:
            v = VERDICT[n]
        for _ in range(a.reps):
            frames.append(("vectors", v, fr))
    spoof_ip = a.allowed_ip.rsplit(".", 1)[0] + ".77"
    for i in range(a.spoofed):
        frames.append(("spoofed", "unknown_source",
                       mep_frame(dmac, smac, spoof_ip, a.dst_ip, lo + i % len(configured), 1, i, [i * 4 + k for k in range(4)])))
    for i in range(a.future):
        e = rnd.randrange(0x10000000, 0xF0000000)
        frames.append(("future", "unknown_source",
                       mep_frame(dmac, smac, a.allowed_ip, a.dst_ip, 100 + i % 50, 1, i, [e, e + 1])))
    for i in range(a.mutated):
        fr = bytearray(mep_frame(dmac, smac, a.allowed_ip, a.dst_ip, lo + i % len(configured), 1042, i,
                                 [0x40000000 + i * 4 + k for k in range(4)], payload=rnd.choice((8, 32, 100))))
        p = rnd.randrange(14, len(fr))
        fr[p] ^= rnd.randrange(1, 256)
        frames.append(("mutated", None, bytes(fr)))
    rnd.shuffle(frames)

    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, 253)
    for so in (udp, raw):
        so.setsockopt(socket.IPPROTO_IP, 10, 0)   # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: fragment
    big = bytes(6000)
    per_dgram = (len(big) + 8 + 1479) // 1480
    assert per_dgram == (len(big) + 1479) // 1480 == 5
    nfr = [0, 0]

    def send_big(k):
        if k % 2:
            raw.sendto(big, (a.dst_ip, 0))
            nfr[1] += 1
        else:
            udp.sendto(big, (a.dst_ip, 23900))
            nfr[0] += 1
    total = len(frames) + a.fragments
    gap = a.seconds / max(total, 1)
    sent = {}
    expect = {}
    t0 = time.time()
    k = 0
    for i, (kind, v, fr) in enumerate(frames):
        s.send(fr)
        sent[kind] = sent.get(kind, 0) + 1
        for e in ((v,) if isinstance(v, str) else v or ()):
            expect[e] = expect.get(e, 0) + 1
        if a.fragments and i % max(len(frames) // a.fragments, 1) == 0 and k < a.fragments:
            send_big(k)
            k += 1
        # max(): the clock moves between the check and the sleep (loaded machine)
        time.sleep(max(0.0, t0 + (i + k) * gap - time.time()))
    while k < a.fragments:
        send_big(k)
        k += 1
    sent["fragmented_udp"], sent["fragmented_raw"] = nfr
    expect["ip_fragment"] = expect.get("ip_fragment", 0) + nfr[0] + nfr[1] * per_dgram
    expect["other"] = expect.get("other", 0) + nfr[0] * (per_dgram - 1)
    json.dump({"sent": sent, "frames": len(frames) + k * per_dgram, "expect": expect,
               "skipped_vectors": skipped, "seconds": round(time.time() - t0, 3)}, sys.stdout)
    print()


if __name__ == "__main__":
    main()

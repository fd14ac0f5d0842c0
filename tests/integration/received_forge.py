#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A host that reports RECEIVED to the DFM as a farm node would, with the
counts it chooses (tests/integration/test_books_*.sh): a farm node that
lies about what it received, or a stray host posing as one. Messages as
docs/control-protocol.md says (version 1, role farm node):

  python3 received_forge.py --dfm ADDR:PORT --bind ADDR --port P [--id N]
      --claim BUILDER_ADDR=EVENTS [--claim ...] (--count K | --duration S)
      [--ready FILE] --json OUT

With --count K it sends K RECEIVED back to back and ends; with --duration
it sends one every 100 ms until then (or SIGINT / SIGTERM). --ready FILE is
created once the first one is out. OUT gets {"sent": N}.
"""
import argparse
import json
import os
import signal
import socket
import struct
import time

MAGIC, VERSION, RECEIVED, ROLE_SINK = 0x5843, 1, 8, 4
HDR = struct.Struct("!HBBBBHIIHH")  # 20 bytes
REC = struct.Struct("!4sIQ")         # builder_addr, 0, events: 16 bytes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dfm", required=True)
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--id", type=int, default=0)
    ap.add_argument("--claim", action="append", required=True, help="BUILDER_ADDR=EVENTS")
    ap.add_argument("--count", type=int)
    ap.add_argument("--duration", type=float)
    ap.add_argument("--ready")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    host, port = a.dfm.rsplit(":", 1)
    dfm = (host, int(port))
    recs = b""
    for c in a.claim:
        addr, n = c.split("=")
        recs += REC.pack(socket.inet_aton(addr), 0, int(n))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.bind, a.port))
    epoch = int.from_bytes(os.urandom(4), "big") or 1
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    end = time.monotonic() + (a.duration or 0)
    sent = tries = 0
    while not stop:
        tries += 1
        if a.count is not None and (sent >= a.count or tries > 10 * a.count):
            break
        if a.count is None and time.monotonic() >= end:
            break
        msg = HDR.pack(MAGIC, VERSION, RECEIVED, ROLE_SINK, 0, a.id, epoch, sent + 1, len(a.claim), 0) + recs
        try:
            s.sendto(msg, dfm)
            sent += 1
        except OSError:
            pass  # the DFM not up yet (ICMP port unreachable): the next one tries again
        if sent == 1 and a.ready and not os.path.exists(a.ready):
            open(a.ready, "w").close()
        if a.count is None:
            time.sleep(0.1)
    with open(a.json, "w") as f:
        json.dump({"sent": sent}, f)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A stray host posing as a builder (issue 20): it sends STATUS as role
builder with CREDITS credits to the DFM every 100 ms and answers every
ASSIGN with DONE complete for each of its events, without building
anything. Messages are encoded as docs/control-protocol.md says (version 1).
Run it inside a testbed namespace:

  python3 stray_builder.py --dfm ADDR:PORT --bind ADDR [--port P] --credits 4096
                           --duration SECONDS --json OUT

With --ready FILE it creates FILE once its first STATUS is out.
At the end (--duration, SIGINT or SIGTERM) it writes {"assigned_events": N, "status_sent": N, "done_sent": N}
to OUT: the events the DFM assigned to it (first assignments and
re-assignments; retries of an ASSIGN it already answered are not counted
again), and the STATUS and DONE messages it sent."""
import argparse
import json
import os
import select
import signal
import socket
import struct
import time

MAGIC, VERSION = 0x5843, 1
STATUS, ASSIGN, DONE, BYE = 1, 2, 3, 7
ROLE_DFM, ROLE_BUILDER = 1, 2
HDR = struct.Struct("!HBBBBHIIHH")          # 20 bytes
STATUS_REC = struct.Struct("!IIQIIHH")      # 28 bytes
ASSIGN_REC = struct.Struct("!IHBB4sHHI")    # 20 bytes
DONE_REC = struct.Struct("!IHBB")           # 8 bytes
MAX_DONE = (1472 - HDR.size) // DONE_REC.size   # 181
AS_RETRY = 4


class Stray:
    def __init__(self, args):
        host, port = args.dfm.rsplit(":", 1)
        self.dfm = (host, int(port))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((args.bind, args.port))
        self.credits = args.credits
        self.epoch = int.from_bytes(os.urandom(4), "big") or 1
        self.seq = 0
        self.dfm_epoch = 0
        self.assigned_events = self.status_sent = self.done_sent = self.done_events = 0

    def send(self, mtype, recs=b"", n=0):
        self.seq = (self.seq + 1) & 0xFFFFFFFF
        hdr = HDR.pack(MAGIC, VERSION, mtype, ROLE_BUILDER, 0, 0, self.epoch, self.seq, n, 0)
        try:
            self.sock.sendto(hdr + recs, self.dfm)
        except OSError:
            pass    # the DFM not up yet (ICMP port unreachable): the next beat tries again

    def status(self):
        rec = STATUS_REC.pack(self.credits, 0, self.done_events, self.dfm_epoch, 0, 0, 0)
        self.send(STATUS, rec, 1)
        self.status_sent += 1

    def on_assign(self, body, n):
        events = []
        for i in range(n):
            first, count, flags, _, _, _, _, _ = ASSIGN_REC.unpack_from(body, i * ASSIGN_REC.size)
            if not flags & AS_RETRY:
                self.assigned_events += count
            events.extend((first + k) & 0xFFFFFFFF for k in range(count))
        for off in range(0, len(events), MAX_DONE):
            chunk = events[off:off + MAX_DONE]
            self.send(DONE, b"".join(DONE_REC.pack(e, 0, 0, 0) for e in chunk), len(chunk))
            self.done_sent += 1
            self.done_events += len(chunk)

    def receive(self):
        try:
            data, _ = self.sock.recvfrom(2048)
        except OSError:
            return
        if len(data) < HDR.size:
            return
        magic, ver, mtype, role, _, _, epoch, _, n, _ = HDR.unpack_from(data)
        if magic != MAGIC or ver != VERSION or role != ROLE_DFM:
            return
        self.dfm_epoch = epoch
        if mtype == ASSIGN and len(data) == HDR.size + n * ASSIGN_REC.size:
            self.on_assign(data[HDR.size:], n)

    def run(self, duration, ready_file=None):
        end = time.monotonic() + duration
        next_status = 0.0
        stop = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.append(1))
        while not stop:
            now = time.monotonic()
            if now >= end:
                break
            if now >= next_status:
                self.status()
                next_status = now + 0.1
                if ready_file and not os.path.exists(ready_file):
                    open(ready_file, "w").close()
            try:
                ready, _, _ = select.select([self.sock], [], [], max(0.0, min(next_status, end) - now))
            except InterruptedError:
                continue
            if ready:
                self.receive()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dfm", required=True, help="the DFM's ADDR:PORT")
    ap.add_argument("--bind", required=True, help="our address")
    ap.add_argument("--port", type=int, default=23902, help="our control port (default 23902)")
    ap.add_argument("--credits", type=int, required=True)
    ap.add_argument("--duration", type=float, required=True, help="seconds")
    ap.add_argument("--json", required=True, help="where the counts go")
    ap.add_argument("--ready", help="created once the first STATUS is out")
    args = ap.parse_args()
    s = Stray(args)
    s.run(args.duration, args.ready)
    with open(args.json, "w") as f:
        json.dump({"assigned_events": s.assigned_events, "status_sent": s.status_sent,
                   "done_sent": s.done_sent}, f)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A stray host that claims to be a builder (docs/control-protocol.md).

It sends STATUS as role builder with --credits every 100 ms to the DFM and
answers every ASSIGN with DONE complete, without ever receiving a fragment
or forwarding an event: what a test builder pointed at a production DFM, or
a host that should not be there, does to the run's books. At the end it
writes {"assigned_events": N, "status_sent": N, "done_sent": N} to --json
(assigned_events: events in ASSIGN records other than RETRY, i.e. what the
DFM handed it). Runs for --duration seconds, or until SIGINT / SIGTERM.

  python3 stray_builder.py --dfm ADDR:PORT --bind ADDR [--port P] \
      --credits 4096 --duration SECONDS --json OUT
"""
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
HDR = struct.Struct(">HBBBBHIIHH")        # magic version type role 0 sender epoch seq n_recs 0
STATUS_REC = struct.Struct(">IIQIIHH")    # credits flags done_total peer_epoch load first_id n_ids
ASSIGN_REC = struct.Struct(">IHBB4sHHI")  # first count flags 0 addr builder_id 0 run
DONE_REC = struct.Struct(">IHBB")         # event_id n_missing status 0
AS_RETRY = 0x4
MAX_DONE = (1472 - HDR.size) // DONE_REC.size


class Stray:
    def __init__(self, args):
        host, port = args.dfm.rsplit(":", 1)
        self.dfm = (host, int(port))
        self.credits = args.credits
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((args.bind, args.port))
        self.sock.setblocking(False)
        self.epoch = (int.from_bytes(os.urandom(4), "big") or 1)
        self.seq = 0
        self.dfm_epoch = 0
        self.done_total = 0
        self.n = {"assigned_events": 0, "status_sent": 0, "done_sent": 0}

    def send(self, mtype, recs):
        self.seq = (self.seq + 1) & 0xffffffff
        hdr = HDR.pack(MAGIC, VERSION, mtype, ROLE_BUILDER, 0, 0, self.epoch, self.seq, len(recs), 0)
        try:
            self.sock.sendto(hdr + b"".join(recs), self.dfm)
        except OSError:
            pass

    def status(self):
        self.send(STATUS, [STATUS_REC.pack(self.credits, 0, self.done_total, self.dfm_epoch, 0, 0, 0)])
        self.n["status_sent"] += 1

    def on_assign(self, data, n_recs):
        done = []
        for i in range(n_recs):
            first, count, flags, _, _, _, _, _ = ASSIGN_REC.unpack_from(data, HDR.size + i * ASSIGN_REC.size)
            if not flags & AS_RETRY:
                self.n["assigned_events"] += count
            done.extend(DONE_REC.pack((first + k) & 0xffffffff, 0, 0, 0) for k in range(count))
        for k in range(0, len(done), MAX_DONE):
            self.send(DONE, done[k:k + MAX_DONE])
            self.n["done_sent"] += 1
        self.done_total += len(done)

    def receive(self):
        while True:
            try:
                data = self.sock.recv(2048)
            except BlockingIOError:
                return
            if len(data) < HDR.size:
                continue
            magic, version, mtype, role, _, _, epoch, _, n_recs, _ = HDR.unpack_from(data)
            if magic != MAGIC or version != VERSION or role != ROLE_DFM:
                continue
            self.dfm_epoch = epoch
            if mtype == ASSIGN and len(data) == HDR.size + n_recs * ASSIGN_REC.size:
                self.on_assign(data, n_recs)

    def run(self, duration):
        stop = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.append(1))
        end = time.monotonic() + duration
        next_status = 0.0
        while not stop and time.monotonic() < end:
            now = time.monotonic()
            if now >= next_status:
                self.status()
                next_status = now + 0.1
            try:
                select.select([self.sock], [], [], max(0.0, min(next_status, end) - time.monotonic()))
            except InterruptedError:
                pass
            self.receive()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dfm", required=True, help="the DFM's ADDR:PORT")
    ap.add_argument("--bind", required=True, help="our address")
    ap.add_argument("--port", type=int, default=23902, help="our control port (default 23902)")
    ap.add_argument("--credits", type=int, default=4096)
    ap.add_argument("--duration", type=float, required=True, help="seconds")
    ap.add_argument("--json", required=True, help="write the counts here at the end")
    args = ap.parse_args()
    s = Stray(args)
    s.run(args.duration)
    with open(args.json, "w") as f:
        json.dump(s.n, f)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A farm node in Python: receive built events from xevb builders, check them,
optionally record them to rotated run files, print a JSON summary.

    python3 farm_node.py --listen 198.18.2.1:5000 [--expect N] [--duration S]
        [--verify-crc] [--record DIR --run-number R --max-events M]

Builders send to it with `xevb build --sink 198.18.2.1:5000`; it gives them
credits and Busy over the control protocol (UDP port 23904 on the same
address unless --ctl-port) through libxevb. It stops after --expect events
or --duration seconds, whichever comes first, or on Ctrl-C.
"""
import argparse
import json
import os
import sys
import time

import xevb


def parse_args():
    p = argparse.ArgumentParser(description="A farm node on libxevb's Python binding.")
    p.add_argument("--listen", required=True, help="ADDR:PORT builders connect to (their --sink)")
    p.add_argument("--ctl-port", type=int, default=0, help="control protocol UDP port (default 23904)")
    p.add_argument("--no-ctl", action="store_true", help="no control protocol (no credits, no Busy)")
    p.add_argument("--credits", type=int, default=0, help="events in flight per builder (default 64)")
    p.add_argument("--dfm", help="ADDR:PORT of the data-flow manager: RECEIVED every 100 ms")
    p.add_argument("--key-file", help="the run's key: every control message sealed")
    p.add_argument("--expect", type=int, default=0, help="stop after this many events (0: no limit)")
    p.add_argument("--duration", type=float, default=60.0, help="stop after this many seconds")
    p.add_argument("--verify-crc", action="store_true", help="check every payload's CRC-32C")
    p.add_argument("--record", metavar="DIR", help="write every event to run files in DIR")
    p.add_argument("--run-number", type=int, default=0)
    p.add_argument("--max-events", type=int, default=0, help="events a run file, then the next (0: one file)")
    p.add_argument("--ready-file", help="written once listening")
    return p.parse_args()


class Books:
    """What came in: counts, ids, the first problems seen."""

    def __init__(self):
        self.events = self.complete = self.incomplete = self.frags = self.crc_bad = self.bytes = 0
        self.ids = set()
        self.duplicates = 0
        self.sources = {}

    def take(self, ev):
        self.events += 1
        self.bytes += ev.length
        self.frags += ev.n_frags
        if ev.incomplete:
            self.incomplete += 1
        else:
            self.complete += 1
        if ev.crc_bad:
            self.crc_bad += 1
        if ev.event_id in self.ids:
            self.duplicates += 1
        self.ids.add(ev.event_id)
        key = ",".join(map(str, ev.sources))
        self.sources[key] = self.sources.get(key, 0) + 1


def main():
    a = parse_args()
    farm = xevb.Farm(a.listen, no_ctl=a.no_ctl, ctl_port=a.ctl_port, credits=a.credits, verify_crc=a.verify_crc,
                     dfm=a.dfm, key_file=a.key_file)
    writer = None
    if a.record:
        writer = xevb.Writer(dir=a.record, prefix="farm", run_number=a.run_number, max_events=a.max_events)
    if a.ready_file:
        with open(a.ready_file + ".tmp", "w") as f:
            f.write("%d %d\n" % (farm.port, farm.ctl_port))
        os.rename(a.ready_file + ".tmp", a.ready_file)
    books = Books()
    t0 = time.monotonic()
    end = t0 + a.duration
    try:
        while (not a.expect or books.events < a.expect) and time.monotonic() < end:
            ev = farm.next(timeout=min(0.5, max(0.0, end - time.monotonic())))
            if ev is None:
                continue
            with ev:                     # done at the end: the builder's credit goes back
                books.take(ev)
                if writer:
                    writer.write(ev)     # the event's own bytes, no copy on the way
    except KeyboardInterrupt:
        pass
    files = []
    if writer:
        writer.close()
        files = xevb.run_files(a.record, a.run_number, prefix="farm")
    st = farm.stats()
    builders = farm.builders()
    farm.close()
    ids = sorted(books.ids)
    print(json.dumps({
        "events": books.events, "complete": books.complete, "incomplete": books.incomplete,
        "frags": books.frags, "bytes": books.bytes, "crc_bad": books.crc_bad, "duplicates": books.duplicates,
        "id_min": ids[0] if ids else None, "id_max": ids[-1] if ids else None, "distinct_ids": len(ids),
        "source_sets": books.sources, "seconds": round(time.monotonic() - t0, 3), "farm": st,
        "builders": builders, "files": files,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A minimal HLT farm node on xevb's Python package: receive built events, look at
their fragments, accept or reject, give the credit back; credits, Busy and RECEIVED
to the DFM go out by themselves (hlt_farm_node.c in Python).
Usage: LISTEN DFM KEY_FILE EVENTS   (PYTHONPATH=build/python, or make install-python)"""
import json
import signal
import sys

import xevb


def accept(ev):
    """The "trigger": keep an event whose fragments are all there and not empty."""
    return ev.n_missing == 0 and all(len(payload) for payload in ev)


def main():
    if len(sys.argv) != 5:
        print("usage: %s LISTEN DFM KEY_FILE EVENTS" % sys.argv[0], file=sys.stderr)
        return 2
    listen, dfm, key_file, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    try:
        farm = xevb.Farm(listen, dfm=dfm, key_file=key_file, credits=64)
    except OSError as e:
        print("hlt_farm_node: %s" % e.strerror, file=sys.stderr)
        return 1
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(True))
    seen = accepted = 0
    with farm:                          # close() sends the final RECEIVED
        while not stop and seen < want:
            ev = farm.next(timeout=0.1)
            if ev is None:
                continue
            with ev:                    # done at the end of the block: the credit goes back
                seen += 1
                accepted += accept(ev)
    print(json.dumps({"events": seen, "accepted": accepted, "rejected": seen - accepted}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A minimal HLT farm node on the xevb package: receive built events, look
at their fragments (zero-copy memoryviews), accept or reject, give the
credit back; credits, Busy and RECEIVED to the DFM go out by themselves.
Usage: hlt_farm_node.py LISTEN DFM KEY_FILE EVENTS"""
import json
import signal
import sys

import xevb


def accept(ev):
    """The "trigger": keep an event whose fragments are all there and not empty."""
    return not ev.missing and all(len(ev[i]) for i in range(ev.n_frags))


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: hlt_farm_node.py LISTEN DFM KEY_FILE EVENTS")
    listen, dfm, key, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    seen = accepted = 0
    with xevb.Farm(listen, dfm=dfm, key_file=key, credits=64) as farm:
        try:
            while seen < want:
                ev = farm.next(timeout=0.1)
                if ev is None:
                    continue
                with ev:  # done at the end of the block: the credit goes back
                    seen += 1
                    accepted += accept(ev)
        except KeyboardInterrupt:
            pass
    print(json.dumps({"events": seen, "accepted": accepted, "rejected": seen - accepted}))


if __name__ == "__main__":
    main()

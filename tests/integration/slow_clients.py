#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Slow HTTP clients for tests/integration/test_hard_metrics_slow.sh.

For SECONDS: DRIP connections each send "GET /metrics HTTP/1.1\\r\\n" one byte
every 0.2 s and never end the head; IDLE connections send nothing. A
connection the server closes is opened again at once, so the server always
has DRIP + IDLE of them. Touches READY once all are connected. Then, for
DRAIN seconds at most, nothing is reopened and the last ones are watched until the
server closes them (its deadline), so every close it made is seen here.
Prints one JSON object: connections opened in all, how many the server
closed, and how many were still open at the very end.
"""
import argparse, json, os, select, socket, struct, time

REQ = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 4000


def opener(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Closed with a reset: the server sees no half-request to answer at our end.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.settimeout(30.0)
    s.connect((addr, port))
    s.setblocking(False)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("--drip", type=int, default=20)
    ap.add_argument("--idle", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--drain", type=float, default=3.0)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()

    conns = {}  # socket -> [kind, bytes sent]
    opened = closed = 0
    for i in range(a.drip + a.idle):
        conns[opener(a.addr, a.port)] = ["drip" if i < a.drip else "idle", 0]
        opened += 1
    with open(a.ready + ".tmp", "w") as f:
        f.write("ready\n")
    os.rename(a.ready + ".tmp", a.ready)
    end = time.monotonic() + a.seconds
    stop = end + a.drain
    while conns and time.monotonic() < stop:
        reopen = time.monotonic() < end
        r, _, _ = select.select(list(conns), [], [], 0.2)
        for s in r:
            try:
                gone = s.recv(4096) == b""
            except OSError:
                gone = True
            if gone:
                kind = conns.pop(s)[0]
                s.close()
                closed += 1
                if reopen:
                    conns[opener(a.addr, a.port)] = [kind, 0]
                    opened += 1
        for s, st in conns.items():
            if st[0] == "drip" and st[1] < len(REQ):
                try:
                    st[1] += s.send(REQ[st[1]:st[1] + 1])
                except OSError:
                    pass
    for s in conns:
        s.close()
    print(json.dumps({"opened": opened, "closed_by_server": closed, "left_open": len(conns)}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hostile TCP clients for tests/integration/test_hard_sink_limits.sh.

Opens N connections to a farm node (`xevb sink --listen`), all before any
of them sends a byte, then, by mode:

  claim  each sends the 20 first bytes of a built-event header announcing
         SIZE bytes (wire format section 2: magic EVNT, total_length at
         offset 16, big-endian), then 1 KiB of its body 0.3 s later
  fill   as claim, then sends the event's body up to SIZE-1 bytes, so the
         event never completes; a connection the sink closes stops there
  idle   sends nothing

With --go it touches READY.conn once connected and sends nothing before
READY.go appears (the test sees the sink accept them all first). Then it
touches READY (the test waits for the sink to settle and measures it),
keeps the connections until READY.release appears (--release; HOLD
seconds at most) or for HOLD seconds, and closes them. Bounded: the
connects take at most 30 s, the fill at most FILL_S seconds in all, a wait
for a file WAIT_S. Prints one JSON object: connections opened, and how many
the sink closed while we held them.
"""
import argparse, json, os, select, socket, struct, time

MAGIC = b"EVNT"


def header(size):
    h = bytearray(20)
    h[0:4] = MAGIC
    h[4] = 1  # version
    struct.pack_into(">I", h, 16, size)
    return bytes(h)


def connect_all(addr, port, n):
    """Non-blocking connects, all in flight at once; the ones done in 30 s (a
    loaded sink's full backlog makes SYNs wait for their retransmission)."""
    pending = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((addr, port))
        pending.append(s)
    done, deadline = [], time.monotonic() + 30.0
    while pending and time.monotonic() < deadline:
        _, w, _ = select.select([], pending[:500], [], 0.2)
        for s in w:
            pending.remove(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                done.append(s)
            else:
                s.close()
    for s in pending:
        s.close()
    return done


def send_some(s, buf):
    try:
        return s.send(buf)
    except BlockingIOError:
        return 0
    except OSError:
        return -1  # reset: the sink closed it


def fill(conns, size, fill_s):
    """Body bytes up to size-1 on every connection, round robin, bounded."""
    chunk = bytes(256 * 1024)
    left = {s: size - 1 - 20 for s in conns}
    deadline = time.monotonic() + fill_s
    while left and time.monotonic() < deadline:
        _, w, _ = select.select([], list(left)[:500], [], 0.2)
        for s in w:
            n = send_some(s, chunk[:min(len(chunk), left[s])])
            if n < 0:
                del left[s]
                continue
            left[s] -= n
            if left[s] == 0:
                del left[s]
    return len(left)


def closed_by_peer(s):
    try:
        r, _, _ = select.select([s], [], [], 0)
        if not r:
            return False
        return s.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def touch(path):
    with open(path + ".tmp", "w") as f:
        f.write("ready\n")
    os.rename(path + ".tmp", path)


def wait_file(path, secs):
    """True once PATH exists, polled every 20 ms, at most SECS."""
    deadline = time.monotonic() + secs
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("mode", choices=["claim", "fill", "idle"])
    ap.add_argument("--conns", type=int, required=True)
    ap.add_argument("--size", type=int, default=64 << 20)
    ap.add_argument("--fill-s", type=float, default=8.0)
    ap.add_argument("--hold", type=float, default=3.0)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", action="store_true")
    ap.add_argument("--release", action="store_true")
    ap.add_argument("--wait-s", type=float, default=60.0)
    a = ap.parse_args()

    conns = connect_all(a.addr, a.port, a.conns)
    if a.go:
        # the sink accepts them all before any claim arrives
        touch(a.ready + ".conn")
        wait_file(a.ready + ".go", a.wait_s)
    else:
        time.sleep(0.5)
    unfinished = 0
    if a.mode != "idle":
        for s in conns:
            send_some(s, header(a.size))
        if a.mode == "fill":
            unfinished = fill(conns, a.size, a.fill_s)
        else:
            time.sleep(0.3)
            for s in conns:
                send_some(s, bytes(1024))
    touch(a.ready)
    if a.release:
        wait_file(a.ready + ".release", a.hold)
    else:
        time.sleep(a.hold)
    closed = sum(closed_by_peer(s) for s in conns)
    for s in conns:
        s.close()
    print(json.dumps({"connected": len(conns), "closed_by_sink": closed,
                      "fill_unfinished": unfinished}))


if __name__ == "__main__":
    main()

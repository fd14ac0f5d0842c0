#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Bounded UDP/TCP senders and receivers for the shaping tests.

  recv udp|tcp PORT MAX_S IDLE_S   -> JSON: packets, bytes, t_first, t_last, bins
  send udp|tcp ADDR PORT SIZE DURATION_S [RATE_BPS [SNDBUF]]  -> JSON: sent, bytes, t0, t1

Every loop is bounded in time. Receivers stop IDLE_S after the last datagram
(or at MAX_S). Bins: bytes per 50 ms of CLOCK_REALTIME, for rate-change tests.
The UDP sender blocks when its socket buffer is full: a shaper in front of
it slows it down instead of dropping. RATE_BPS paces it (0: as fast as it can).
"""
import json, socket, sys, time

BIN = 0.05


def recv(proto, port, max_s, idle_s):
    if proto == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    else:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", port))
        ls.listen(1)
        ls.settimeout(max_s)
    if proto == "udp":
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
        s.bind(("0.0.0.0", port))
    print("ready", file=sys.stderr, flush=True)
    end = time.time() + max_s
    if proto == "tcp":
        try:
            s, _ = ls.accept()
        except socket.timeout:
            print(json.dumps({"packets": 0, "bytes": 0, "t_first": 0, "t_last": 0, "bins": {}}))
            return
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)
    s.settimeout(idle_s)
    n = nbytes = 0
    t_first = t_last = 0.0
    bins = {}
    buf = bytearray(1 << 20)
    while time.time() < end:
        try:
            k = s.recv_into(buf)
        except socket.timeout:
            if n:
                break
            continue
        if proto == "tcp" and k == 0:
            break
        t = time.time()
        if not n:
            t_first = t
        t_last = t
        n += 1
        nbytes += k
        b = int(t / BIN)
        bins[b] = bins.get(b, 0) + k
    print(json.dumps({"packets": n, "bytes": nbytes, "t_first": t_first, "t_last": t_last,
                      "bin_s": BIN, "bins": {str(k): v for k, v in bins.items()}}))


def send(proto, addr, port, size, duration, rate_bps, sndbuf):
    if proto == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # A deeper socket buffer (SNDBUF, default 1 MiB; the kernel doubles it)
        # keeps the shaper's queue full while this process waits for the
        # CPU, so the test measures the shaper, not us. It stays below the
        # leaf queue's 4 MiB: the sender blocks before the queue drops.
        s.setsockopt(socket.SOL_SOCKET, 32, sndbuf)  # SO_SNDBUFFORCE
        s.connect((addr, port))
    else:
        s = socket.create_connection((addr, port), timeout=5)
        s.settimeout(duration + 5)
    payload = b"x" * size
    n = nbytes = 0
    print("sending", file=sys.stderr, flush=True)
    t0 = time.time()
    end = t0 + duration
    gap = size * 8 / rate_bps if rate_bps else 0
    nxt = t0
    while True:
        now = time.time()
        if now >= end:
            break
        if gap:
            if now < nxt:
                time.sleep(min(nxt - now, 0.001))
                continue
            nxt += gap
        if proto == "udp":
            s.send(payload)
        else:
            s.sendall(payload)
        n += 1
        nbytes += size
    t1 = time.time()
    s.close()
    print(json.dumps({"sent": n, "bytes": nbytes, "t0": t0, "t1": t1}))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "recv":
        recv(a[1], int(a[2]), float(a[3]), float(a[4]))
    elif a[0] == "send":
        send(a[1], a[2], int(a[3]), int(a[4]), float(a[5]), float(a[6]) if len(a) > 6 else 0,
             int(a[7]) if len(a) > 7 else 1 << 20)
    else:
        sys.exit("usage: shape_flow.py recv|send ...")

# SPDX-License-Identifier: LGPL-2.1-or-later
"""xevb.Farm on loopback, fed by a socket that plays a builder without the control
protocol (no_ctl): events in, views out, done() and its deferral, a broken stream,
close() refused while views live. Every wait is bounded (timeouts of seconds, well
above what a loaded machine needs; nothing depends on speed)."""
import selectors
import socket
import threading
import time

import pytest

import xevb
from conftest import l1_frags

WAIT = 20.0   # seconds: a bound, never a pace


def farm(**kw):
    kw.setdefault("no_ctl", True)
    return xevb.Farm("127.0.0.1:0", **kw)


def builder(f):
    s = socket.create_connection(("127.0.0.1", f.port), timeout=WAIT)
    return s


def take(f, n):
    """n events from f within WAIT seconds."""
    got, end = [], time.monotonic() + WAIT
    while len(got) < n and time.monotonic() < end:
        ev = f.next(timeout=1.0)
        if ev is not None:
            got.append(ev)
    assert len(got) == n, "%d of %d events within %.0f s; stats %s" % (len(got), n, WAIT, f.stats())
    return got


def wait_stat(f, key, want):
    end = time.monotonic() + WAIT
    while f.stats()[key] != want and time.monotonic() < end:
        f.poll(timeout=0.1)
    assert f.stats()[key] == want, "%s: %s, want %s" % (key, f.stats()[key], want)


def test_events_from_a_stream():
    evs = [xevb.encode_event(i, l1_frags(i, 6, 32), run_number=3) for i in range(200)]
    with farm() as f:
        assert f.port > 0 and f.ctl_port == 0
        s = builder(f)
        s.sendall(b"".join(evs))
        got = take(f, 200)
        assert [bytes(e) for e in got] == evs
        e = got[17]
        assert e.builder[0] == "127.0.0.1" and e.builder[1] > 0
        assert [e.seq for e in got] == list(range(200))
        assert bytes(e.matrix().tolist()[2]) == l1_frags(17, 6, 32)[2][1]
        for e in got:
            e.done()
        st = f.stats()
        assert (st["events"], st["done"], st["held"], st["conns_open"]) == (200, 200, 0, 1)
        assert st["frags"] == 200 * 6 and st["complete"] == 200
        (b,) = f.builders()
        assert b["addr"] == "127.0.0.1" and b["events"] == 200 and b["done"] == 200
        s.close()
        wait_stat(f, "conns_open", 0)


def test_done_waits_for_the_last_view():
    with farm() as f:
        s = builder(f)
        s.sendall(xevb.encode_event(1, l1_frags(1, 4, 16)))
        (ev,) = take(f, 1)
        p = ev[2]
        ev.done()
        assert ev.is_done
        # Its bytes are still ours while the view lives: not handed back yet.
        assert f.stats()["done"] == 0
        assert bytes(p) == l1_frags(1, 4, 16)[2][1]
        with pytest.raises(ValueError, match="done"):
            ev[1]
        del p
        assert f.stats()["done"] == 1
        s.close()


def test_with_block_and_dropped_events_are_done():
    with farm() as f:
        s = builder(f)
        s.sendall(b"".join(xevb.encode_event(i, l1_frags(i, 2, 8)) for i in range(3)))
        a, b, c = take(f, 3)
        with a:
            a.sources
        assert f.stats()["done"] == 1
        del b                    # dropped without done(): done by its garbage collection
        assert f.stats()["done"] == 2
        c.done()
        c.done()                 # twice is once
        assert f.stats()["done"] == 3
        s.close()


def test_iteration_and_fileno():
    with farm() as f:
        s = builder(f)
        s.sendall(b"".join(xevb.encode_event(i, l1_frags(i, 3, 8)) for i in range(10)))
        sel = selectors.DefaultSelector()
        sel.register(f.fileno(), selectors.EVENT_READ)
        assert sel.select(timeout=WAIT), "the farm node's descriptor never became readable"
        ids = []
        for ev in f:             # blocks for each event
            with ev:
                ids.append(ev.event_id)
            if len(ids) == 10:
                break
        assert ids == list(range(10))
        sel.close()
        s.close()


def test_broken_stream_closes_that_connection_only():
    logs = []
    with farm(log=lambda lvl, msg: logs.append((lvl, msg))) as f:
        bad, good = builder(f), builder(f)
        bad.sendall(b"XXXX" + bytes(60))
        good.sendall(xevb.encode_event(5, l1_frags(5, 2, 8)))
        (ev,) = take(f, 1)
        assert ev.event_id == 5
        ev.done()
        wait_stat(f, "conns_broken", 1)
        assert f.stats()["conns_open"] == 1
        assert any("out of step" in m and lvl <= xevb.LOG_WARN for lvl, m in logs), logs
        bad.close()
        good.close()


def test_stream_cut_inside_an_event():
    with farm() as f:
        s = builder(f)
        e = xevb.encode_event(1, l1_frags(1, 4, 32))
        s.sendall(e + e[:50])
        (ev,) = take(f, 1)
        ev.done()
        s.close()
        wait_stat(f, "truncated", 1)
        assert f.stats()["events"] == 1


def test_stalled_connection_closed():
    with farm(partial_timeout_ms=200) as f:
        s = builder(f)
        s.sendall(xevb.encode_event(1, l1_frags(1, 4, 32))[:60])
        wait_stat(f, "conns_broken", 1)
        assert f.stats()["events"] == 0
        s.close()


def test_close_refused_while_views_live():
    f = farm()
    s = builder(f)
    s.sendall(b"".join(xevb.encode_event(i, l1_frags(i, 2, 8)) for i in range(2)))
    a, b = take(f, 2)
    m = a.matrix()
    with pytest.raises(BufferError, match="1 events"):
        f.close()
    assert not f.closed
    m.release()
    f.close()
    assert f.closed
    with pytest.raises(ValueError, match="closed"):
        b[0]
    with pytest.raises(ValueError, match="closed"):
        f.next()
    assert b.event_id == 1       # header fields are copies: still there
    s.close()


def test_cycle_through_the_log_callable_is_collected():
    import gc
    import weakref

    class Node:
        def __init__(self):
            self.farm = farm(log=self.log)     # farm -> bound method -> node -> farm
            self.port = self.farm.port

        def log(self, level, msg):
            pass

    n = Node()
    port, ref = n.port, weakref.ref(n)
    del n
    gc.collect()
    assert ref() is None
    # Its port is free again: the handle was closed.
    with xevb.Farm("127.0.0.1:%d" % port, no_ctl=True):
        pass


def test_bad_options():
    with pytest.raises(OSError, match="not IPv4"):
        xevb.Farm("localhost:x", no_ctl=True)
    with pytest.raises(OSError, match="where to listen"):
        xevb.Farm(no_ctl=True)
    with pytest.raises(TypeError):
        xevb.Farm("127.0.0.1:0", log=5)
    with farm() as f:
        with pytest.raises(OSError):
            xevb.Farm("127.0.0.1:%d" % f.port, no_ctl=True)


def test_control_port():
    with xevb.Farm("127.0.0.1:0", ctl_any_port=True, credits=16) as f:
        assert f.ctl_port > 0
        f.set_busy(xevb.BUSY_ON)
        assert f.stats()["busy"]
        f.set_busy(xevb.BUSY_AUTO)
        with pytest.raises(OSError):
            f.set_busy(9)


def test_events_done_from_another_thread_while_waiting():
    with farm() as f:
        s = builder(f)
        s.sendall(xevb.encode_event(1, l1_frags(1, 2, 8)))
        (ev,) = take(f, 1)
        waited = []
        t = threading.Thread(target=lambda: waited.append(f.next(timeout=WAIT)))
        t.start()
        # The other thread is inside the library once the handle refuses us (bounded).
        end, busy = time.monotonic() + WAIT, False
        while not busy and time.monotonic() < end and t.is_alive():
            try:
                f.stats()
                time.sleep(0.01)
            except RuntimeError as e:
                busy = "another thread" in str(e)
        assert busy, "the waiting thread never held the farm node"
        ev.done()                 # while the other waits: queued, handed back after its wait
        s.sendall(xevb.encode_event(2, l1_frags(2, 2, 8)))   # ends the wait
        t.join(WAIT)
        assert not t.is_alive() and [e.event_id for e in waited] == [2]
        st = f.stats()
        assert (st["done"], st["held"]) == (1, 1)
        waited[0].done()
        assert f.stats()["done"] == 2
        s.close()


def test_asyncio_reader():
    import asyncio

    async def main(f, n):
        loop, got, full = asyncio.get_running_loop(), [], asyncio.Event()

        def ready():
            f.process()
            while (ev := f.next()) is not None:
                with ev:
                    got.append(ev.event_id)
            if len(got) >= n:
                full.set()

        loop.add_reader(f.fileno(), ready)
        try:
            await asyncio.wait_for(full.wait(), WAIT)
        finally:
            loop.remove_reader(f.fileno())
        return got

    with farm() as f:
        s = builder(f)
        s.sendall(b"".join(xevb.encode_event(i, l1_frags(i, 3, 8)) for i in range(50)))
        assert asyncio.run(main(f, 50)) == list(range(50))
        s.close()


def test_the_run_ends_with_the_streams():
    evs = [xevb.encode_event(i, l1_frags(i, 4, 32), run_number=3) for i in range(50)]
    with farm() as f:
        assert f.run_end == 0
        s = builder(f)
        s.sendall(b"".join(evs))
        for e in take(f, 50):
            e.done()
        assert not f.run_end & xevb.END_RUN, "a builder still connected"
        s.close()
        end = time.monotonic() + WAIT
        while not f.run_end & xevb.END_RUN and time.monotonic() < end:
            f.poll(timeout=0.1)
        assert f.run_end == xevb.END_STREAMS | xevb.END_RUN
        assert f.stats()["events"] == 50

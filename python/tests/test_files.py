# SPDX-License-Identifier: LGPL-2.1-or-later
"""Run files through xevb.Writer and xevb.Reader: round trip, rotation, a file cut
mid-event, an overwrite refused, corruption, batches, lifetimes."""
import errno
import os

import pytest

import xevb
from conftest import l1_frags


def test_round_trip(make_run):
    (path,), evs = make_run(50, builder_name="bx", builder_id=3)
    with xevb.Reader(path) as r:
        assert (r.run_number, r.seq, r.builder_id, r.builder_name, r.sources) == (7, 0, 3, "bx", tuple(range(8)))
        got = list(r)
        assert r.state == "closed" and r.events == 50 and r.error == ""
        info = r.info()
    assert [bytes(e) for e in got] == evs
    assert [e.seq for e in got] == list(range(50))
    assert [e.build_ns for e in got] == [1000 + i for i in range(50)]
    assert info["trailer"]["clean"] and not info["trailer"]["continued"] and info["trailer"]["events"] == 50
    assert os.path.basename(path) == "xevb-run00000007-0000.xevb"


def test_rotated_files(make_run):
    paths, evs = make_run(100, max_events=30)
    assert [os.path.basename(p) for p in paths] == ["xevb-run00000007-%04d.xevb" % i for i in range(4)]
    counts = []
    for i, p in enumerate(paths):
        with xevb.Reader(p) as r:
            counts.append(len(list(r)))
            assert r.seq == i and r.state == "closed"
            assert r.info()["trailer"]["continued"] == (i < 3)
    assert counts == [30, 30, 30, 10]
    got = list(xevb.read_run(paths))
    assert [e.event_id for e in got] == list(range(100))
    assert [bytes(e) for e in got] == evs
    # A file of the run gone: read_run says so.
    with pytest.raises(xevb.CorruptFileError, match="missing"):
        list(xevb.read_run([paths[0], paths[2]]))


def test_rotation_by_size(make_run):
    paths, evs = make_run(40, max_bytes=4096)
    assert len(paths) > 2
    assert [bytes(e) for e in xevb.read_run(paths)] == evs
    for p in paths:
        assert os.path.getsize(p) <= 4096


def test_file_cut_mid_event(make_run):
    (path,), evs = make_run(20)
    size = os.path.getsize(path)
    # Without its trailer (48 bytes) and half of the last event: a writer that died mid-write.
    cut = size - 48 - len(evs[-1]) // 2
    os.truncate(path, cut)
    with xevb.Reader(path) as r:
        got = [bytes(e) for e in r]
        assert r.state == "cut"
        assert r.cut_bytes == len(evs[-1]) - len(evs[-1]) // 2
        assert "cut after 19 whole events" in r.error
    assert got == evs[:19]
    # Cut as the last file of a run: read_run gives every whole event.
    assert len(list(xevb.read_run([path]))) == 19


def test_file_cut_at_event_boundary(make_run):
    (path,), evs = make_run(10)
    os.truncate(path, os.path.getsize(path) - 48)
    with xevb.Reader(path) as r:
        assert len(list(r)) == 10 and r.state == "cut" and r.cut_bytes == 0


def test_overwrite_refused(make_run, tmp_path):
    (path,), _ = make_run(5)
    before = open(path, "rb").read()
    with pytest.raises(FileExistsError) as ei:
        xevb.Writer(dir=str(tmp_path), run_number=7, sources=range(8))
    assert ei.value.errno == errno.EEXIST and "never overwritten" in str(ei.value)
    with pytest.raises(FileExistsError):
        xevb.Writer(path)
    assert open(path, "rb").read() == before
    # next_name: the next free sequence number instead.
    with xevb.Writer(dir=str(tmp_path), run_number=7, next_name=True, fsync=False) as w:
        assert w.path.endswith("xevb-run00000007-0001.xevb")


def test_corrupt_file_raises_where_it_breaks(make_run):
    (path,), evs = make_run(10)
    with open(path, "r+b") as f:
        data = f.read()
        off = data.index(evs[6])
        f.seek(off + 4)
        f.write(b"\x09")          # event 6's version byte
    r = xevb.Reader(path)
    got = []
    with pytest.raises(xevb.CorruptFileError) as ei:
        for e in r:
            got.append(e.event_id)
    assert got == list(range(6))
    assert ei.value.errno == errno.EBADMSG and "version" in str(ei.value)
    assert r.state == "corrupt"
    r.close()


def test_not_a_run_file(tmp_path):
    p = tmp_path / "junk.xevb"
    p.write_bytes(b"hello, not a run file at all" * 4)
    with pytest.raises(OSError, match="not a run file"):
        xevb.Reader(str(p))
    with pytest.raises(FileNotFoundError):
        xevb.Reader(str(tmp_path / "absent.xevb"))


def test_crc_verified_by_the_reader(make_run):
    (path,), evs = make_run(5)
    with open(path, "r+b") as f:
        data = f.read()
        f.seek(data.index(evs[2]) + 32 + 12 + 5)
        f.write(b"\xff")
    flags = []
    with xevb.Reader(path, verify_crc=True) as r:
        with pytest.raises(xevb.CorruptFileError, match="checksum"):
            for e in r:
                flags.append(e.crc_bad)
    # Each event is whole and valid, its payload flagged; the file's checksum says it was changed.
    assert flags == [False, False, True, False, False]


def test_views_outlive_close(make_run):
    (path,), evs = make_run(5)
    r = xevb.Reader(path)
    ev = next(iter(r))
    nxt = next(r)
    p, m = ev[3], nxt.matrix()
    r.close()
    assert r.closed
    with pytest.raises(ValueError, match="closed"):
        next(r)
    # The mapping stays until the last event and view of it go.
    assert bytes(p) == l1_frags(0)[3][1]
    assert bytes(ev.data) == evs[0] and m.tolist()[1] == list(l1_frags(1)[1][1])
    # An event's fragments after the reader moved on: decoded again from the mapped bytes.
    assert ev.sources == tuple(range(8))
    assert r.state == "reading" and r.events == 2
    del p, m, ev, nxt
    assert r.events == 2 and r.state == "reading"


def test_read_n(make_run):
    (path,), evs = make_run(25)
    with xevb.Reader(path) as r:
        a, b, c = r.read(10), r.read(100), r.read(5)
    assert [len(a), len(b), len(c)] == [10, 15, 0]
    assert [bytes(e) for e in a + b] == evs


def test_batches_uniform(make_run):
    np = pytest.importorskip("numpy")
    (path,), evs = make_run(100, n_sources=6, size=20)
    seen = 0
    with xevb.Reader(path) as r:
        for b in r.batches(32):
            assert b.uniform and b.sources == tuple(range(6))
            ids = np.asarray(b.event_id)
            assert ids.dtype == np.uint32 and list(ids) == list(range(seen, seen + len(b)))
            assert list(np.asarray(b.n_frags)) == [6] * len(b)
            assert list(np.asarray(b.build_ns)) == [1000 + i for i in range(seen, seen + len(b))]
            m = np.asarray(b.matrix())
            assert m.shape == (len(b), 6, 20)
            for k in (0, len(b) - 1):
                assert [bytes(x) for x in m[k]] == [p for _, p in l1_frags(seen + k, 6, 20)]
            assert bytes(b.data) == b"".join(evs[seen:seen + len(b)])
            assert bytes(b[3]) == evs[seen + 3] and b[3].sources == tuple(range(6))
            seen += len(b)
    assert seen == 100


def test_batches_mixed_layouts(tmp_path):
    path = str(tmp_path / "mixed.xevb")
    evs = [xevb.encode_event(0, l1_frags(0, 4, 8)),
           xevb.encode_event(1, l1_frags(1, 4, 8, skip=(2,)), n_expected=4, missing=[2]),
           xevb.encode_event(2, [(0, b"a"), (1, b"bcd"), (2, b""), (3, b"xy")])]
    with xevb.Writer(path, fsync=False) as w:
        for e in evs:
            w.write(e)
    with xevb.Reader(path) as r:
        (b,) = list(r.batches(10))
    assert len(b) == 3 and not b.uniform and b.sources is None
    with pytest.raises(ValueError, match="layout"):
        b.matrix()
    assert [bytes(e) for e in b] == evs
    assert list(b.flags) == [0, xevb.EV_INCOMPLETE, 0]
    assert b[1].missing == (2,)


def test_batch_layout_told_by_lengths_not_sizes(tmp_path):
    """Two events of one size whose middle fragments differ in length (13 and 16 both take 16 bytes)."""
    path = str(tmp_path / "pad.xevb")
    evs = [xevb.encode_event(0, [(0, b"a" * 16), (1, b"b" * 16), (2, b"c" * 16)]),
           xevb.encode_event(1, [(0, b"a" * 16), (1, b"b" * 13), (2, b"c" * 16)])]
    assert len(evs[0]) == len(evs[1])
    with xevb.Writer(path, fsync=False) as w:
        for e in evs:
            w.write(e)
    with xevb.Reader(path) as r:
        (b,) = list(r.batches(10))
    assert not b.uniform
    with xevb.Reader(path) as r:
        first, second = r.batches(1)
    assert first.uniform and first.matrix().shape == (1, 3, 16)   # alone: one layout
    assert not second.uniform                                      # fragments of two lengths


def test_batches_stop_at_corruption(make_run):
    (path,), evs = make_run(10)
    with open(path, "r+b") as f:
        data = f.read()
        f.seek(data.index(evs[7]) + 4)
        f.write(b"\x09")
    r = xevb.Reader(path)
    it = r.batches(4)
    assert [len(next(it)), len(next(it))] == [4, 3]
    with pytest.raises(xevb.CorruptFileError):
        next(it)


def test_writev_and_verify(tmp_path):
    path = str(tmp_path / "v.xevb")
    ev = xevb.encode_event(1, l1_frags(1, 3, 8))
    with xevb.Writer(path, verify=True, fsync=False) as w:
        w.writev([ev[:32], ev[32:40], ev[40:]])
        with pytest.raises(OSError) as ei:
            w.write(b"EVNT" + ev[4:-4])
        assert ei.value.errno == errno.EINVAL
        w.write(xevb.parse_event(ev))       # an Event is bytes-like: its encoded form
        st = w.stats()
    assert st["events"] == 2 and st["files"] == 1 and not st["broken"]
    with xevb.Reader(path) as r:
        assert [bytes(e) for e in r] == [ev, ev]


def test_raw_event_stream(tmp_path):
    """A plain stream of events (what `xevb build --output` wrote before run files)."""
    p = tmp_path / "raw.evt"
    evs = [xevb.encode_event(i, l1_frags(i, 2, 4)) for i in range(3)]
    p.write_bytes(b"".join(evs))
    with xevb.Reader(str(p)) as r:
        assert [bytes(e) for e in r] == evs and r.state == "raw"


def test_writer_from_two_threads(tmp_path):
    import threading
    path = str(tmp_path / "t.xevb")
    ev = xevb.encode_event(1, l1_frags(1, 4, 32))
    errors, n = [], 2000
    with xevb.Writer(path, fsync=False) as w:
        def go():
            for _ in range(n):
                try:
                    w.write(ev)
                except RuntimeError:
                    errors.append(1)
        ts = [threading.Thread(target=go) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        written = w.stats()["events"]
    # Each write either went in whole or was refused: never two at once in the library.
    assert written + len(errors) == 2 * n
    with xevb.Reader(path) as r:
        assert sum(1 for _ in r) == written and r.state == "closed"

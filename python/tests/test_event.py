# SPDX-License-Identifier: LGPL-2.1-or-later
"""xevb.Event: fields, fragments as zero-copy views, the strict decoder."""
import struct

import pytest

import xevb
from conftest import l1_frags


def test_version():
    assert xevb.lib_version() == xevb.__version__
    assert xevb.crc32c(b"123456789") == 0xE3069283
    assert xevb.crc32c(b"56789", xevb.crc32c(b"1234")) == 0xE3069283


def test_fields_and_fragments():
    frags = l1_frags(42, 5, 30)
    ev = xevb.parse_event(xevb.encode_event(42, frags, run_number=9, build_ns=123456789))
    assert (ev.run_number, ev.event_id, ev.build_ns) == (9, 42, 123456789)
    assert (len(ev), ev.n_frags, ev.n_expected, ev.n_missing) == (5, 5, 5, 0)
    assert not ev.incomplete and ev.flags == 0 and ev.builder is None
    assert ev.sources == (0, 1, 2, 3, 4) and ev.missing == ()
    assert [bytes(p) for p in ev] == [p for _, p in frags]
    assert [bytes(p) for p in ev.payloads()] == [p for _, p in frags]
    f = ev.fragment(-1)
    assert (f.source_id, f.index, f.crc32c, bytes(f.payload)) == (4, 4, xevb.crc32c(frags[4][1]), frags[4][1])
    assert bytes(ev.find(3)) == frags[3][1] and ev.find(9) is None
    assert ev.verify() is None
    assert bytes(ev) == bytes(ev.data) and len(ev.data) == ev.length
    with pytest.raises(IndexError):
        ev[5]
    with pytest.raises(IndexError):
        ev.fragment(5)


def test_incomplete_and_missing():
    ev = xevb.parse_event(xevb.encode_event(1, l1_frags(1, 6, 8, skip=(1, 4)), n_expected=6, missing=[1, 4]))
    assert ev.incomplete and ev.flags & xevb.EV_INCOMPLETE
    assert ev.sources == (0, 2, 3, 5) and ev.missing == (1, 4) and ev.n_missing == 2
    assert "incomplete" in repr(ev)


def test_views_are_readonly_and_zero_copy():
    raw = bytearray(xevb.encode_event(3, l1_frags(3, 4, 32)))
    ev = xevb.parse_event(raw)
    p = ev[2]
    assert p.readonly and p.obj is ev
    with pytest.raises(TypeError):
        p[0] = 1
    # The view is over the caller's bytes, not a copy: a change shows through.
    off = 32 + 2 * (12 + 32) + 12
    raw_view = memoryview(raw)
    assert bytes(p) == bytes(raw_view[off:off + 32])
    np = pytest.importorskip("numpy")
    a, whole = np.asarray(p), np.asarray(ev.data)
    assert a.__array_interface__["data"][0] - whole.__array_interface__["data"][0] == off
    assert not a.flags.writeable


def test_matrix():
    np = pytest.importorskip("numpy")
    frags = l1_frags(5, 8, 30)   # 30 B: padded to 32 in the record
    ev = xevb.parse_event(xevb.encode_event(5, frags))
    m = ev.matrix()
    assert m.shape == (8, 30) and m.strides == (12 + 32, 1) and m.readonly
    a = np.asarray(m)
    assert a.shape == (8, 30)
    assert [bytes(r) for r in a] == [p for _, p in frags]
    uneven = xevb.parse_event(xevb.encode_event(6, [(0, b"ab"), (1, b"abc")]))
    with pytest.raises(ValueError, match="unequal"):
        uneven.matrix()
    # Same stride (13 pads to 16), so the same total length: the length field tells.
    padded = xevb.parse_event(xevb.encode_event(6, [(0, b"a" * 16), (1, b"b" * 13), (2, b"c" * 16)]))
    with pytest.raises(ValueError, match="fragment 1 has 13 bytes"):
        padded.matrix()
    empty = xevb.parse_event(xevb.encode_event(7, [], n_expected=2))
    assert empty.matrix().shape == (0, 0)


def test_event_keeps_its_bytes_alive():
    ev = xevb.parse_event(bytes(xevb.encode_event(8, l1_frags(8, 3, 16))))
    p = ev[1]
    del ev
    assert bytes(p) == l1_frags(8, 3, 16)[1][1]


def test_crc_checked_on_request():
    raw = bytearray(xevb.encode_event(9, l1_frags(9, 3, 16)))
    raw[32 + 12 + 16 + 12 + 3] ^= 0xFF   # a byte of source 1's payload
    ev = xevb.parse_event(raw)
    assert ev.verify() == 1


@pytest.mark.parametrize("damage, what", [
    (lambda b: b.__setitem__(slice(0, 4), b"EVNX"), "magic"),
    (lambda b: b.__setitem__(4, 2), "version"),
    (lambda b: b.__setitem__(slice(16, 20), struct.pack("!I", len(b) + 4)), "total_length"),
    (lambda b: b.__setitem__(slice(32, 34), struct.pack("!H", 5000)), "source_id"),
])
def test_parse_refuses_broken_events(damage, what):
    raw = bytearray(xevb.encode_event(1, l1_frags(1, 3, 8)))
    damage(raw)
    with pytest.raises(ValueError, match=what):
        xevb.parse_event(raw)

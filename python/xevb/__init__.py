# SPDX-License-Identifier: LGPL-2.1-or-later
"""xevb: the farm node's side of the xevb event builder, for Python.

A binding of libxevb (the C library in lib/): built events as objects whose
payloads are memoryviews over the library's own bytes (no copy; wrap them
with numpy.asarray for arrays), run files (Reader, Writer) and the farm-node
receiver (Farm). docs/consumer-python.md has the tour; in short::

    import xevb
    with xevb.Reader("xevb-run00000007-0000.xevb") as r:
        for ev in r:                      # Event objects
            ev.event_id, ev.sources, ev[0]   # ev[i]: payload i, a memoryview
        r.state                           # 'closed', 'cut', ...
    for batch in xevb.Reader(path).batches(4096):   # the fast way
        ids = numpy.asarray(batch.event_id)         # a column, no copy
        adc = numpy.asarray(batch.matrix())          # events x sources x bytes

    with xevb.Farm("198.18.0.10:5000") as farm:      # builders' --sink
        for ev in farm:
            with ev:                      # done at the end of the block
                handle(ev.matrix())
"""

import logging as _logging
import os as _os
import re as _re
import struct as _struct

from ._xevb import (  # noqa: F401 (re-exported)
    BUSY_AUTO,
    BUSY_OFF,
    BUSY_ON,
    EV_CRC_BAD,
    END_DFM,
    END_RUN,
    END_STREAMS,
    EV_INCOMPLETE,
    HEADER_VERSION,
    LOG_DEBUG,
    LOG_ERROR,
    LOG_INFO,
    LOG_WARN,
    Batch,
    CorruptFileError,
    Event,
    Fragment,
    Reader,
    Writer,
    crc32c,
    lib_version,
    parse_event,
)
from ._xevb import Farm as _Farm

__all__ = [
    "BUSY_AUTO", "BUSY_OFF", "BUSY_ON", "END_DFM", "END_RUN", "END_STREAMS", "EV_CRC_BAD", "EV_INCOMPLETE",
    "Batch", "CorruptFileError", "Event",
    "Farm", "Fragment", "Reader", "Writer", "crc32c", "encode_event", "lib_version", "parse_event", "read_run",
    "run_files",
]

__version__ = HEADER_VERSION

_log = _logging.getLogger("xevb")
_LEVELS = {LOG_ERROR: _logging.ERROR, LOG_WARN: _logging.WARNING, LOG_INFO: _logging.INFO,
           LOG_DEBUG: _logging.DEBUG}


def _to_logging(level, msg):
    _log.log(_LEVELS.get(level, _logging.INFO), "%s", msg)


class Farm(_Farm):
    __doc__ = _Farm.__doc__ + (
        "\nThe library's messages (a builder connected, a stream broke) go to the logging\n"
        "logger 'xevb' unless log= names another callable(level, message).")

    def __init__(self, listen=None, **kw):
        kw.setdefault("log", _to_logging)
        super().__init__(listen, **kw)


_EVT_MAGIC = 0x45564E54


def encode_event(event_id, fragments, run_number=0, n_expected=None, build_ns=0, missing=None):
    """One event in the wire format (docs/wire-format.md section 2), as bytes.

    fragments: (source_id, payload) pairs, any order (sorted here); payloads
    bytes-like. n_expected: sources configured (default: the fragments plus
    the missing ones); missing: the absent source ids (default: none, or
    derived when n_expected says more). An event with missing sources is
    flagged INCOMPLETE. For tests and simulations: builders encode in C.
    """
    frags = sorted((int(s), bytes(p)) for s, p in fragments)
    present = {s for s, _ in frags}
    if missing is None:
        missing = []
    missing = sorted(int(s) for s in missing)
    if n_expected is None:
        n_expected = len(frags) + len(missing)
    if len(frags) + len(missing) != n_expected:
        if missing or n_expected < len(frags):
            raise ValueError("n_expected %d, but %d fragments and %d missing" % (n_expected, len(frags),
                                                                                 len(missing)))
        # n_expected says more sources than given: the lowest ids not present are missing.
        s = 0
        while len(frags) + len(missing) < n_expected:
            if s not in present:
                missing.append(s)
            s += 1
    parts = []
    for sid, p in frags:
        parts.append(_struct.pack("!HHII", sid, 0, len(p), crc32c(p)))
        parts.append(p)
        parts.append(b"\0" * (-len(p) % 4))
    if missing:
        ml = _struct.pack("!%dH" % len(missing), *missing)
        parts.append(ml + b"\0" * (-len(ml) % 4))
    body = b"".join(parts)
    flags = 1 if missing else 0
    head = _struct.pack("!IBBHIIIHHQ", _EVT_MAGIC, 1, flags, len(frags), run_number, event_id & 0xFFFFFFFF,
                        32 + len(body), n_expected, 0, build_ns)
    return head + body


_NAME = _re.compile(r"^(?P<prefix>.+)-run(?P<run>\d{8})-(?P<seq>\d{4,})\.xevb$")


def run_files(directory=".", run_number=None, prefix="xevb"):
    """The run files in directory (named PREFIX-runRRRRRRRR-SSSS.xevb, as Writer
    names them), of run_number if given, in run and sequence order."""
    found = []
    for name in _os.listdir(directory):
        m = _NAME.match(name)
        if not m or m.group("prefix") != prefix:
            continue
        run, seq = int(m.group("run")), int(m.group("seq"))
        if run_number is None or run == run_number:
            found.append((run, seq, _os.path.join(directory, name)))
    return [p for _, _, p in sorted(found)]


def read_run(paths, check=True, **reader_kw):
    """Every event of a rotated run, file after file (paths in order, e.g. from
    run_files()). With check, a file that is not the last must have been
    closed with the CONTINUED flag and sequence numbers must follow each
    other; a break raises CorruptFileError (a cut last file is fine)."""
    prev_seq = None
    for i, path in enumerate(paths):
        with Reader(path, **reader_kw) as r:
            if check and prev_seq is not None and r.seq != prev_seq + 1:
                raise CorruptFileError(74, "%s: file %d of its run after file %d: one is missing" %
                                       (path, r.seq, prev_seq))
            yield from r
            info = r.info()
            if check and i + 1 < len(paths) and not (info["trailer"] and info["trailer"]["continued"]):
                raise CorruptFileError(74, "%s ended %s, not rotated: the run does not go on in %s" %
                                       (path, r.state, paths[i + 1]))
            prev_seq = r.seq

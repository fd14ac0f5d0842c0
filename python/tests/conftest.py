# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest setup: the package under test is the one on PYTHONPATH (scripts/run-tests.sh
points it at an installed copy), else the build tree's (make python)."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.environ.get("XEVB_OUT", os.path.join(ROOT, "build"))

if importlib.util.find_spec("xevb") is None:
    sys.path.insert(0, os.path.join(OUT, "python"))

import xevb  # noqa: E402


def l1_frags(event_id, n_sources=8, size=32, skip=()):
    """Fragments of one event: source s's payload is a pattern of (event, source)."""
    return [(s, bytes((event_id * 7 + s * 13 + i) & 0xFF for i in range(size)))
            for s in range(n_sources) if s not in skip]


@pytest.fixture
def make_run(tmp_path):
    """make_run(n, **writer_kw) -> (paths, encoded events): a run written with xevb.Writer."""
    def make(n, n_sources=8, size=32, run_number=7, **kw):
        evs = [xevb.encode_event(i, l1_frags(i, n_sources, size), run_number=run_number, build_ns=1000 + i)
               for i in range(n)]
        kw.setdefault("fsync", False)
        if "path" not in kw:
            kw.setdefault("dir", str(tmp_path))
        with xevb.Writer(run_number=run_number, sources=range(n_sources), **kw) as w:
            for e in evs:
                w.write(e)
        paths = xevb.run_files(str(tmp_path), run_number) if "path" not in kw else [kw["path"]]
        return paths, evs
    return make


def pytest_report_header(config):
    return "xevb %s from %s (libxevb %s)" % (xevb.__version__, os.path.dirname(xevb.__file__), xevb.lib_version())

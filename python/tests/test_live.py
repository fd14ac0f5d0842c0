# SPDX-License-Identifier: LGPL-2.1-or-later
"""A live stream from a builder on the namespace testbed into a farm node made with
this package (python/examples/farm_node.py), with and without the data-flow manager:
live_stream.sh does it with the integration tests' helpers; this runs it. Needs root
and a built tree (make); skipped otherwise, with the reason."""
import os
import subprocess
import sys

import pytest

import xevb
from conftest import OUT, ROOT


def test_live_stream_from_a_builder():
    if os.geteuid() != 0:
        pytest.skip("the testbed needs root (network namespaces)")
    if not os.access(os.path.join(OUT, "xevb"), os.X_OK):
        pytest.skip("%s/xevb not built (make)" % OUT)
    env = dict(os.environ, PYTHON=sys.executable,
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(xevb.__file__))))
    # Bounded inside (every process by its --duration and timeout(1)); this is the outer bound.
    p = subprocess.run(["bash", os.path.join(ROOT, "python", "tests", "live_stream.sh"), OUT], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    print(p.stdout)
    if p.returncode == 77:
        pytest.skip(next((l for l in p.stdout.splitlines() if l.startswith("SKIP")), "skipped"))
    assert p.returncode == 0, "live_stream.sh failed:\n" + "\n".join(
        l for l in p.stdout.splitlines() if l.startswith(("FAIL", "#")))

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/trace/cpu-profile.bt (through run.sh, folded by fold-stacks.py)
# against a live build-only, busy-polling builder: folded "frames count" lines, builder
# samples whose stacks hold xevb's own functions, and softirq samples in
# the network receive path.
set -uo pipefail
. "$(dirname "$0")/lib_trace.sh"
trace_init tp "${1:-build}"
# Build-only and busy polling: the builder spends ~1% of a CPU building
# 20k events/s and sleeps in poll() otherwise, so a 5 s sample at 499 Hz
# would hold a handful of its frames; spinning, its loop fills the samples.
TRACE_NOFWD=1 trace_live tp 10 --tune busy-poll=1
trace_through cpu-profile 5 "$E2E_WORK/tp.folded"
head -15 "$E2E_WORK/tp.folded" | cut -c1-300
e2e_check profile <<'PY'
import re
lines = open(os.path.join(W, "tp.folded")).read().splitlines()
bad = [l for l in lines if not re.match(r"^\S+ \d+$", l)]
eq("every line is 'frames count'", bad, [])
folded = [(l.rsplit(" ", 1)[0].split(";"), int(l.rsplit(" ", 1)[1])) for l in lines if l not in bad]
b = [(f, n) for f, n in folded if f[0] == "builder"]
s = [(f, n) for f, n in folded if f[0].startswith("softirq")]
true("builder samples", sum(n for f, n in b) > 0, lines[:5])
own = re.compile(r"^(xevb_\w+|handle_batch|cmd_build|add_frags|slow_path|finish|main)(\.\w+\.\d+)?$")
true("builder stacks hold xevb functions", any(any(own.match(x) for x in f) for f, n in b),
     [";".join(f) for f, n in b[:5]])
true("softirq samples in the NET_RX path", any(f[0] == "softirq:NET_RX" for f, n in s),
     [";".join(f)[:200] for f, n in s[:5]])
PY
e2e_finish

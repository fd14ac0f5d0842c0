#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# scripts/trace/build-latency.bt against a live builder: the latency
# histogram has counts, the per-second lines show events, and the
# per-source tables name only configured source ids (0-3), each of which
# completed some events.
set -uo pipefail
. "$(dirname "$0")/lib_trace.sh"
trace_init tl "${1:-build}"
trace_live tl 10
trace_through build-latency 5 "$E2E_WORK/tl.out"
cat "$E2E_WORK/tl.out"
e2e_check latency <<'PY'
import re
out = open(os.path.join(W, "tl.out")).read()
b = J("tl.b")
secs = [int(m) for m in re.findall(r"events complete (\d+)/s  latency avg", out)]
true("per-second lines with events > 0", secs and max(secs) > 0, out[:400])
hist = re.search(r"@latency_us:\s*\n((?:\[.*\n)+)", out)
true("latency histogram printed", hist, out[-800:])
# Every bucket: the ranges "[a, b)" and the single values bpftrace prints as "[0]", "[1]".
counts = [int(m) for m in re.findall(r"^\[[^\]\n]*[\)\]]\s+(\d+)", hist.group(1) if hist else "", re.M)]
true("histogram counts > 0", sum(counts) > 0, counts)
le("histogram events <= builder events_complete", sum(counts), b["events_complete"])
by = {int(k): int(v) for k, v in re.findall(r"^@completed_by\[(\d+)\]: (\d+)", out, re.M)}
true("completed_by names configured sources only", by and set(by) <= {0, 1, 2, 3}, by)
eq("completed_by adds up to the histogram", sum(by.values()), sum(counts))
late = {int(k) for k in re.findall(r"^@lateness_avg_us\[(\d+)\]:", out, re.M)}
eq("lateness for every source", late, {0, 1, 2, 3})
PY
e2e_finish

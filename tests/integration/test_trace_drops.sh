#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# scripts/trace/drops.bt against a live builder that sees duplicates
# (sources send 5% of packets twice) and an unconfigured source id (4; the
# builder expects 0-3): each drop line names its reason, an event id and
# the source it hit, and the totals agree with what the builder counted.
set -uo pipefail
. "$(dirname "$0")/lib_trace.sh"
trace_init td "${1:-build}"
TRACE_SRC1_IDS=2-4 trace_live td 10 -- --duplicate 0.05
trace_through drops 5 "$E2E_WORK/td.out"
head -30 "$E2E_WORK/td.out"; echo "..."; tail -20 "$E2E_WORK/td.out"
e2e_check drops <<'PY'
import re
out = open(os.path.join(W, "td.out")).read()
b = J("td.b")
lines = re.findall(r"^\d\d:\d\d:\d\d (\w+)\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.M)
kinds = {l[0] for l in lines}
true("per-drop lines printed", lines, out[:500])
true("duplicate and unknown_source drops seen", {"duplicate", "unknown_source"} <= kinds, kinds)
true("duplicates hit configured sources 0-3 only",
     all(int(l[2]) in range(4) for l in lines if l[0] == "duplicate"), lines[:5])
true("unknown_source drops name source 4, a whole MEP (10 fragments) each",
     all(int(l[2]) == 4 and int(l[3]) == 10 for l in lines if l[0] == "unknown_source"), lines[:5])
tot = {k: int(v) for k, v in re.findall(r"^@drops\[(\w+)\]: (\d+)", out, re.M)}
by = {(k, int(s)): int(v) for k, s, v in re.findall(r"^@by_source\[(\w+), (\d+)\]: (\d+)", out, re.M)}
true("duplicate total > 0 and <= the builder's count", 0 < tot.get("duplicate", 0) <= b["drop_duplicate"],
     (tot, b["drop_duplicate"]))
true("unknown_source total > 0 and <= the builder's count",
     0 < tot.get("unknown_source", 0) <= b["drop_unknown_source"], (tot, b["drop_unknown_source"]))
eq("by-source totals add up to the per-reason totals", sum(by.values()), sum(tot.values()))
eq("unknown_source only from source 4", {s for (k, s) in by if k == "unknown_source"}, {4})
true("every drop line's reason is a known one",
     kinds <= {"duplicate", "late", "unknown_source", "wrong_run", "overflow", "future"}, kinds)
PY
e2e_finish

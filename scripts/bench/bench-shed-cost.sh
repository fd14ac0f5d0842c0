#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What the XDP program's shedding costs when it sheds nothing (issue 25):
# the steering program's ns per MEP (BPF run-time statistics, one L1
# frame of 25 records through BPF_PROG_RUN in live-frames mode; see
# xdp_steer_cost.c) in the states a builder runs it in:
#   gate    the gate idle (one load and a branch a MEP), no ring guard
#   guard   the gate idle and the ring guard on, refusing nothing: what
#           `xevb build` runs until its first overload
#   armed   as guard, the gate armed at full level (after an overload: the
#           program records the newest block and sheds nothing)
# This host's speed drifts by up to 50% from one second to the next, far
# more than the few ns looked for: the three states take turns within
# every round of 50k MEPs (xdp_steer_cost --paired), and a state's cost is
# the median over the rounds of its difference to the idle gate in the
# same round. BENCH_RUNS runs (3; 1 quick) of 300 rounds (60 quick), about
# 35 s a run. Writes OUT/bench/shed-cost.json.
#
# usage: bench-shed-cost.sh [OUT]
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start shed-cost "${1:-}"
BIN=$OUT/bench/xdp_steer_cost
bench_make "$BIN"
RUNS=${BENCH_RUNS:-$(quick_or 1 3)}
ROUNDS=$(quick_or 60 300)
REPEAT=50000

for ((r = 0; r < RUNS; r++)); do
	"$BIN" --meta --paired --repeat "$REPEAT" --rounds "$ROUNDS" >>"$W/runs.jsonl" ||
		bench_fail "xdp_steer_cost --paired failed"
done

"$PY" - "$W/runs.jsonl" >"$W/rows.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l)["states"] for l in open(sys.argv[1])]
for s in ("gate", "guard", "armed"):
    ns = [r[s]["median_ns"] for r in runs]
    over = [r[s]["over_gate_median_ns"] for r in runs]
    print(json.dumps({"state": s, "ns_per_mep": statistics.median(ns), "ns_per_mep_runs": ns,
                      "over_gate_ns": statistics.median(over), "over_gate_ns_runs": over}))
PY
bench_write shed-cost "$W/rows.jsonl" runs="$RUNS" rounds="$ROUNDS" repeat="$REPEAT"
"$PY" - "$OUT/bench/shed-cost.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-6s %10s %12s  %s" % ("state", "ns a MEP", "over gate", "over gate, per run"))
for r in d["results"]:
    print("%-6s %10.2f %12.2f  %s" % (r["state"], r["ns_per_mep"], r["over_gate_ns"],
                                     " ".join("%.2f" % v for v in r["over_gate_ns_runs"])))
PY

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
# The states alternate, BENCH_RUNS times each (5; 2 quick), each run the
# median of 7 rounds of 200k MEPs; the piece reports each state's median
# over its runs and its cost over gate. Writes OUT/bench/shed-cost.json.
#
# usage: bench-shed-cost.sh [OUT]
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start shed-cost "${1:-}"
BIN=$OUT/bench/xdp_steer_cost
bench_make "$BIN"
RUNS=${BENCH_RUNS:-$(quick_or 2 5)}
REPEAT=$(quick_or 50000 200000)

declare -A ARGS=([gate]="--meta" [guard]="--meta --guard" [armed]="--meta --guard --shed-armed")
for ((r = 0; r < RUNS; r++)); do
	for s in gate guard armed; do
		# shellcheck disable=SC2086 # ARGS holds several options
		"$BIN" ${ARGS[$s]} --repeat "$REPEAT" --rounds 7 |
			"$PY" -c 'import json, sys; d = json.load(sys.stdin); d["state"] = sys.argv[1]; d["run"] = int(sys.argv[2]); print(json.dumps(d))' \
				"$s" "$r" >>"$W/runs.jsonl" || bench_fail "xdp_steer_cost ${ARGS[$s]} failed"
	done
done

"$PY" - "$W/runs.jsonl" >"$W/rows.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for s in ("gate", "guard", "armed"):
    v = [r["median_ns"] for r in runs if r["state"] == s]
    med[s] = statistics.median(v)
    print(json.dumps({"state": s, "runs": len(v), "ns_per_mep_runs": v, "ns_per_mep": med[s],
                      "over_gate_ns": round(med[s] - med["gate"], 2)}))
PY
bench_write shed-cost "$W/rows.jsonl" runs="$RUNS" repeat="$REPEAT" rounds=7
"$PY" - "$OUT/bench/shed-cost.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-6s %10s %12s" % ("state", "ns a MEP", "over gate"))
for r in d["results"]:
    print("%-6s %10.2f %12.2f" % (r["state"], r["ns_per_mep"], r["over_gate_ns"]))
PY

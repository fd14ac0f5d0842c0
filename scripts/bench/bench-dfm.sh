#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The seeds' scaling scans under the data-flow manager: event rate and
# bandwidth per builder vs fragment size for 1xN, Nx1 and NxN (sources x
# builders), push and pull, the DFM triggering as fast as credits allow.
# Builders build in socket mode without forwarding (the ATLAS study's
# destinations were the builders). Writes OUT/bench/dfm.json.
#
# usage: scripts/bench/bench-dfm.sh [OUT]   env: BENCH_QUICK=1 (short scan),
#        DFM_SECS (seconds per point; 2 quick, 3 full), DFM_NMAX (7 full, 4 quick)
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start dfm "${1:-}" xevb
SECS=${DFM_SECS:-$(quick_or 2 3)}
NMAX=${DFM_NMAX:-$(quick_or 4 7)}
if [[ -n $QUICK ]]; then SIZES=(100 1000); NS=(1 "$NMAX"); else SIZES=(100 400 1000 1400); NS=(1 2 3 5 "$NMAX"); fi
TB_PREFIX="xbd$$"
bench_testbed
tb_up --sources "$NMAX" --builders "$NMAX" --sinks 0 --dfm 1 || exit 1

point() {  # MODE NSRC NBLD SIZE -> one JSON line on stdout
	local mode=$1 ns=$2 nb=$3 size=$4
	dfm_round "$nb" "$ns" "$mode" "$size"
	python3 - "$W/dfm.json" "$mode" "$ns" "$nb" "$size" <<'PY'
import json, sys
f, mode, ns, nb, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
try:
    d = json.loads([l for l in open(f) if l.startswith("{")][-1])
except Exception:
    d = {"events_per_s": 0, "complete": 0, "triggered": 0, "incomplete": 0, "lost_total": 0, "elapsed_s": 0}
eps = d["complete"] / d["elapsed_s"] if d["elapsed_s"] else 0
print(json.dumps({"mode": mode, "sources": ns, "builders": nb, "frag_size": size,
                  "events_per_s": round(eps, 1), "events_per_s_per_builder": round(eps / nb, 1),
                  "MB_per_s_per_builder": round(eps / nb * ns * size / 1e6, 3),
                  "triggered": d["triggered"], "complete": d["complete"], "incomplete": d["incomplete"],
                  "lost": d["lost_total"], "lost_by_reason": {k: v for k, v in d.get("lost", {}).items() if v},
                  "accounting_ok": d.get("accounting_ok", False)}))
PY
}

: >"$W/points"
DFM_BUILD_ARGS=(--mode socket --udp)
for mode in push pull; do
	for size in "${SIZES[@]}"; do
		for n in "${NS[@]}"; do
			for topo in "1 $n" "$n 1" "$n $n"; do
				read -r ns nb <<<"$topo"
				grep -q "\"mode\": \"$mode\", \"sources\": $ns, \"builders\": $nb, \"frag_size\": $size," "$W/points" && continue
				point "$mode" "$ns" "$nb" "$size" >>"$W/points"
			done
		done
	done
done
python3 - "$W/points" "$OUT/bench/dfm.json" "$(nproc)" <<'PY'
import json, os, sys
sys.path.insert(0, "scripts/bench")
import benchlib
pts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
# "results" and "meta" follow the suite's convention; "points" stays for older readers
json.dump({"bench": "dfm", "cpus": int(sys.argv[3]), "meta": benchlib.meta(), "points": pts, "results": pts},
          open(sys.argv[2], "w"), indent=1)
benchlib.write_csv(pts, os.path.splitext(sys.argv[2])[0] + ".csv")
print("%-5s %-6s %9s %10s %12s %10s %8s %-5s %s" % ("mode", "SxB", "frag B", "events/s", "ev/s/builder", "MB/s/bld",
      "incompl", "books", "lost by reason"))
for p in pts:
    print("%-5s %-6s %9d %10.0f %12.0f %10.2f %8d %-5s %s" % (p["mode"], "%dx%d" % (p["sources"], p["builders"]),
          p["frag_size"], p["events_per_s"], p["events_per_s_per_builder"], p["MB_per_s_per_builder"],
          p["incomplete"], "ok" if p["accounting_ok"] else "FAIL",
          " ".join("%s %d" % kv for kv in sorted(p.get("lost_by_reason", {}).items())) or "-"))
print("wrote", sys.argv[2])
PY
"$PY" scripts/bench/plots.py "$OUT/bench" dfm || true

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
OUT=${1:-build}
cd "$(dirname "$0")/../.."
X=$(realpath "$OUT/xevb")
[[ -x $X ]] || { echo "bench-dfm: $X not built (make -j2)" >&2; exit 1; }
. scripts/lib/testbed.sh
QUICK=${BENCH_QUICK:-}
SECS=${DFM_SECS:-$([[ -n $QUICK ]] && echo 2 || echo 3)}
NMAX=${DFM_NMAX:-$([[ -n $QUICK ]] && echo 4 || echo 7)}
if [[ -n $QUICK ]]; then SIZES=(100 1000); NS=(1 "$NMAX"); else SIZES=(100 400 1000 1400); NS=(1 2 3 5 "$NMAX"); fi
TB_PREFIX="xbd$$"
TB_QUIET=1
W=$(mktemp -d "/tmp/$TB_PREFIX.XXXXXX")
PIDS=()
tb_on_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$W"
}
tb_up --sources "$NMAX" --builders "$NMAX" --sinks 0 --dfm 1 || exit 1

point() {  # MODE NSRC NBLD SIZE -> one JSON line on stdout
	local mode=$1 ns=$2 nb=$3 size=$4 k
	PIDS=()
	for ((k = 0; k < nb; k++)); do
		ip netns exec "$(tb_ns builder "$k")" timeout $((SECS + 20)) "$X" build --dev eth0 --mode socket --udp \
			--sources "0-$((ns - 1))" --dfm 198.18.4.1:23901 --credits 50 --no-forward --exit-on-eor \
			--quiet --duration $((SECS + 15)) >/dev/null 2>"$W/b$k.err" &
		PIDS+=($!)
	done
	for ((k = 0; k < ns; k++)); do
		ip netns exec "$(tb_ns source "$k")" timeout $((SECS + 20)) "$X" source --dfm 198.18.4.1:23901 \
			--udp --source-ids "$k" --frag-size "$size" --quiet --duration $((SECS + 15)) \
			>/dev/null 2>"$W/s$k.err" &
		PIDS+=($!)
	done
	ip netns exec "$(tb_ns dfm 0)" timeout $((SECS + 20)) "$X" dfm --listen 198.18.4.1:23901 --mode "$mode" \
		--duration "$SECS" --pack 1 --wait-builders "$nb" --wait-sources "$ns" --json --interval 0 \
		>"$W/dfm.json" 2>"$W/dfm.err"
	sleep 0.3
	for k in "${PIDS[@]}"; do kill -INT "$k" 2>/dev/null; done
	for k in "${PIDS[@]}"; do wait "$k" 2>/dev/null; done
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
mkdir -p "$OUT/bench"
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
/usr/bin/python3 scripts/bench/plots.py "$OUT/bench" dfm || true

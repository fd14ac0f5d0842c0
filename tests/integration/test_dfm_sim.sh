#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# The DFM benchmark with simulated peers, small (BENCH_QUICK=1
# scripts/bench/bench-dfm-scale.sh: 5 points of 1 s, in a namespace of its
# own): `xevb dfm` against build/bench/dfm_sim's builders, source
# processes and farm nodes, push and pull, with and without a key, paced
# and as fast as credits allow, and 80 builders, 300 source processes and
# 70 farm nodes in pull mode (past the old tables of 64, 256 and 64, and
# lists longer than a datagram: 119 sources in SOURCES, 89 builders in a
# RECEIVED).
# Checks what holds on any machine, not how fast it is (--dead-ms 10000:
# a DFM starved of CPU for a second must not take its builders for dead):
# every point's books are exact (the DFM's accounting line, nothing
# outstanding, nothing lost, every event DONE once and received at the
# farm nodes), the DFM's latency histograms time every event once, the
# datagrams by type are the protocol's (ROUTE to the sources in push only,
# and ASSIGN copies only there), a keyed run refuses nothing, a paced trigger
# never runs ahead of its clock, every peer is admitted, every builder
# learns every source process and every source every builder (lists in
# parts), and the DFM's CPU was measured.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init dsim "${1:-build}"
trap 'rm -rf "$E2E_WORK"' EXIT
OUT=$(dirname "$X")
[[ -x $OUT/bench/dfm_sim ]] || e2e_die "$OUT/bench/dfm_sim not built (make -j2)"

if BENCH_QUICK=1 DSCALE_OUT="$E2E_WORK" DSCALE_DFM_ARGS="--dead-ms 10000" timeout 300 bash scripts/bench/bench-dfm-scale.sh "$OUT" \
	>"$E2E_WORK/bench.log" 2>&1; then
	e2e_ok "bench-dfm-scale (quick): exit 0, books exact in every point"
else
	e2e_fail "bench-dfm-scale (quick) failed:"
	tail -20 "$E2E_WORK/bench.log" | sed 's/^/  | /'
fi
grep -E 'ev/s' "$E2E_WORK/bench.log" | head -5 | sed 's/^/# /'
cp -f "$E2E_WORK/dfm-scale.json" "$E2E_WORK/scale.json" 2>/dev/null || e2e_die "no dfm-scale.json written"
python3 - "$E2E_WORK/scale.json" <<'PY' || E2E_FAILS=$((E2E_FAILS + 1))
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
bad = 0
def res(ok, msg):
    global bad
    print(("ok   - " if ok else "FAIL - ") + msg)
    bad += not ok
res(len(rows) == 5, "5 points measured (%d)" % len(rows))
for r in rows:
    n = "%s pack %d %dx%dx%d%s%s" % (r["mode"], r["pack"], r["builders"], r["sources"], r["farm_nodes"],
                                     " key" if r["keyed"] else "", " @%d" % r["rate"] if r["rate"] else "")
    res(r["books_ok"] and r["lossless"] and r["triggered"] > 0 and r["lost"] == 0 and r["outstanding"] == 0,
        "%s: books exact, nothing lost: %s" % (n, r["accounting_line"].split(": ", 1)[-1] or r["books_failed"]))
    admitted = r["builders"]
    res(r["builders_admitted"] == admitted == r["builders_fed"] and r["farm_nodes_reporting"] == r["farm_nodes"]
        and r["not_delivered"] == 0,
        "%s: %d builders given events, %d farm nodes reporting, nothing not delivered" % (n, admitted, r["farm_nodes"]))
    lat = r["lat_us"]
    res(all(lat[k]["p50"] > 0 and lat[k]["p99"] >= lat[k]["p50"] for k in ("trigger_to_assign", "assign_to_done"))
        and lat["trigger_to_assign"]["events"] == lat["assign_to_done"]["events"] == r["triggered"],
        "%s: every event timed once; latency p50/p99 trigger-to-ASSIGN %s/%s us, ASSIGN-to-DONE %s/%s us" % (
            n, lat["trigger_to_assign"]["p50"], lat["trigger_to_assign"]["p99"],
            lat["assign_to_done"]["p50"], lat["assign_to_done"]["p99"]))
    res(r["dfm_received_by_type"].get("DONE", 0) > 0 and r["dfm_sent_by_type"].get("ASSIGN", 0) > 0
        and r["in_per_s"].get("DONE", 0) > 0 and r["out_builders_per_s"].get("ASSIGN", 0) > 0
        and (r["out_sources_per_s"].get("ROUTE", 0) > 0) == (r["mode"] == "push")
        and (r["out_sources_per_s"].get("ASSIGN", 0) == 0 or r["mode"] == "push")
        and r["dfm_received_by_type"].get("RECEIVED", 0) > 0,
        "%s: datagrams by type: in %s, out to builders %s, to sources %s" % (
            n, r["in_per_s"], r["out_builders_per_s"], r["out_sources_per_s"]))
    res(r["refused_at_dfm"] == 0 and r["refused_at_peers"] == 0, "%s: nothing refused on either side" % n)
    res(r["dfm_cpu_s"] > 0 and r["dfm_cpu_us_per_event"] > 0,
        "%s: DFM CPU %.3f s, %.3f us an event" % (n, r["dfm_cpu_s"], r["dfm_cpu_us_per_event"]))
    if r["rate"]:
        # the trigger never runs ahead of its clock: at most rate x its elapsed time (whole blocks)
        res(0 < r["triggered"] <= r["rate"] * r["elapsed_s"] + 1,
            "%s: paced: %d events in %.3f s at %d/s" % (n, r["triggered"], r["elapsed_s"], r["rate"]))
    res((r["sources_admitted"], r["sources_listed_to_builders"], r["builders_listed_to_sources"])
        == (r["sources"], r["sources"], r["builders"]),
        "%s: %d source processes admitted, listed to every builder (%d) and every builder to them (%d)" % (
            n, r["sources_admitted"], r["sources_listed_to_builders"], r["builders_listed_to_sources"]))
keyed = [r for r in rows if r["keyed"]]
res(len(keyed) == 1 and keyed[0]["books_ok"], "a keyed point, its books closed")
sys.exit(1 if bad else 0)
PY
if ip netns list | grep -q '^xds'; then
	ours=$(ip netns list | awk '/^xds/ { print $1 }' | tr '\n' ' ')
	e2e_log "namespaces xds* present (ours are removed by the bench; others may be a parallel run's): $ours"
fi
if ((E2E_FAILS)); then
	echo "FAIL test_dfm_sim: $E2E_FAILS failure(s)"
	exit 1
fi
echo "PASS test_dfm_sim"

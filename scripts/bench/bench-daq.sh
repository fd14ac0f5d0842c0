#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Study 1 (seed 000, ATLAS DAQ/EF-1 event builder over Gigabit Ethernet):
# event rate and bandwidth per destination vs fragment size for 1xN, Nx1 and
# NxN (sources x builders), N = 1, 2, 4, 7, at MTU 1500 and 9000, builders in
# XDP mode and in socket mode (raw IPv4 socket, recvmmsg) in the same run.
# Like the seed, a data-flow manager assigns events to builders by credit
# (push, --credits 50 = the seed's concurrency of 50) and triggers as fast as
# credits allow; builders build without forwarding (the seed's destinations
# were the builders).
#
# Reachable sizes: a MEP must fit in one IP packet (sources set DF), so the
# largest fragment is MTU - 56 bytes (20 IP + 8 UDP + 16 MEP + 12 record):
# 1444 B at MTU 1500, 8944 B at MTU 9000. The seed's 16-64 kB fragments
# (TCP streams) are out of reach and are recorded as skipped with that
# reason. At MTU 9000 the XDP builder takes jumbo MEPs through multi-buffer
# XDP and XDP_USE_SG (docs/bench/jumbo-and-forwarding.md).
# Receive work of each veth runs on the sender's core (default NAPI).
#
# usage: scripts/bench/bench-daq.sh [OUT]   env: BENCH_QUICK=1 (N = 1, 4,
#   two sizes a MTU: ~2 min), DAQ_SECS (seconds of triggering a point, whole: 2
#   quick, 3 full), DAQ_NS ("1 2 4 7"), DAQ_MODES ("xdp socket"), DAQ_MTUS
#   ("1500 9000"), DAQ_SIZES (fragment bytes), BENCH_MERGE=1 (keep the rows of
#   an earlier daq.json this run does not measure). Full: about 15 minutes.
# Writes OUT/bench/daq.json, daq.csv, daq-*.png.
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start daq "${1:-}" xevb
SECS=${DAQ_SECS:-$(quick_or 2 3)}
NS=(${DAQ_NS:-$(quick_or "1 4" "1 2 4 7")})
MODES=(${DAQ_MODES:-xdp socket})
MTUS=(${DAQ_MTUS:-1500 9000})
# The seed's axis (100 B .. 64 kB); what an MTU cannot carry is skipped.
if [[ -n ${DAQ_SIZES:-} ]]; then
	SIZES=($DAQ_SIZES)
elif [[ -n $QUICK ]]; then
	SIZES=(100 1400 8900 16000 65000)
else
	SIZES=(100 400 1400 4000 8900 16000 32000 65000)
fi
NMAX=0
for n in "${NS[@]}"; do ((n > NMAX)) && NMAX=$n; done
bench_testbed

skip() {  # MODE MTU NS NB SIZE REASON
	python3 -c 'import json, sys
m, mtu, ns, nb, size, why = sys.argv[1:]
print(json.dumps({"mode": m, "mtu": int(mtu), "sources": int(ns), "builders": int(nb), "frag_size": int(size),
                  "config": "%sx%s" % (ns, nb), "key": "%s/%s/%sx%s/%s" % (m, mtu, ns, nb, size), "skipped": why}))' "$@"
}

point() {  # MODE MTU NSRC NBLD SIZE -> one JSON line on stdout
	local mode=$1 mtu=$2 ns=$3 nb=$4 size=$5
	DFM_BUILD_ARGS=()
	[[ $mode == socket ]] && DFM_BUILD_ARGS=(--mode socket --udp)
	dfm_round "$nb" "$ns" push "$size"
	python3 - "$W" "$mode" "$mtu" "$ns" "$nb" "$size" <<'PY'
import json, sys
w, mode, mtu, ns, nb, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
sys.path.insert(0, "scripts/bench")
from benchlib import summary_json as last
d = last(w + "/dfm.json")
b = [last("%s/b%d.json" % (w, k)) for k in range(nb)]
el = d.get("elapsed_s", 0)
eps = d.get("complete", 0) / el if el else 0
err = "" if d else "dfm gave no summary: " + open(w + "/dfm.err").read().strip()[-200:]
print(json.dumps({"mode": mode, "mtu": mtu, "sources": ns, "builders": nb, "frag_size": size,
                  "config": "%dx%d" % (ns, nb), "key": "%s/%d/%dx%d/%d" % (mode, mtu, ns, nb, size),
                  "events_per_s": round(eps, 1), "events_per_s_per_builder": round(eps / nb, 1),
                  "MB_per_s_per_builder": round(eps / nb * ns * size / 1e6, 3),
                  "triggered": d.get("triggered", 0), "complete": d.get("complete", 0),
                  "incomplete": d.get("incomplete", 0), "lost": d.get("lost_total", 0),
                  "builder_frags": sum(x.get("frags_received", 0) for x in b),
                  "reask_events": sum(x.get("dfm_ctl", {}).get("reask_events", 0) for x in b),
                  "accounting_ok": d.get("accounting_ok", False), **({"error": err} if err else {})}))
PY
}

: >"$W/points"
DFM_ARGS=(--drain-ms 2000)
for mtu in "${MTUS[@]}"; do
	P="xbdq$$m$mtu"
	tb_up --prefix "$P" --sources "$NMAX" --builders "$NMAX" --sinks 0 --dfm 1 --mtu "$mtu" || exit 1
	# Larger fragments go as SEGMENT packets (wire format 1.1), one a packet.
	maxfrag=65535
	for mode in "${MODES[@]}"; do
		for size in "${SIZES[@]}"; do
			for n in "${NS[@]}"; do
				for topo in "1 $n" "$n 1" "$n $n"; do
					read -r ns nb <<<"$topo"
					grep -q "\"mode\": \"$mode\", \"mtu\": $mtu, \"sources\": $ns, \"builders\": $nb, \"frag_size\": $size," "$W/points" && continue
					if ((size > maxfrag)); then
						skip "$mode" "$mtu" "$ns" "$nb" "$size" "a fragment is at most $maxfrag B" >>"$W/points"
					else
						point "$mode" "$mtu" "$ns" "$nb" "$size" | tee -a "$W/points" | cut -c1-160
					fi
				done
			done
		done
	done
	bench_tb_down "$P"
done
bench_write daq "$W/points" ${BENCH_MERGE:+merge_key=key} seconds_per_point="$SECS" \
	dfm='"push, --pack 1, builders --credits 50, triggered as fast as credits allow"' \
	model='"veth default NAPI: receive work on the sender core; 2 shared cores"'
"$PY" scripts/bench/plots.py "$OUT/bench" daq

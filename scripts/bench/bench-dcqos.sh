#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Study 4 (seed 003, ATLAS data-collection QoS tests): end-of-event (EoE)
# rate and throughput vs fragment size for 1x1 and 6x1 (sources x builder),
# push and pull, with and without per-destination shaping at the sources,
# re-asks counted; the builder in XDP mode and in socket mode.
#
# The seed's destination sat behind one Gigabit Ethernet port, where the 6x1
# incast of pull requests overflowed the switch buffer and fragments had to be
# re-asked. Our veths have no such limit, so the builder's switch port
# emulates it like bench-shape.sh: tbf at BENCH_PORT_RATE (200 Mbit/s, 1 GbE
# scaled down 5x: two shared cores cannot fill more) with a BENCH_PORT_BUFFER
# (32000 bytes) queue. Shaped: each source runs `xevb shape set --dst
# BUILDER --rate 0.95 x port / sources` (the mechanism of `xevb source
# --shape`, which takes --dest and so does not combine with --dfm).
# The DFM triggers as fast as credits allow (--pack 1, --credits 50 as the
# seed's MaxNumberOfAssembledEvents); builders re-ask after 100 ms, 3 times.
# Fragment sizes: a MEP must fit one IP packet (DF): at MTU 1500 the largest
# is 1444 B; the seed's 2-64 kB robDataSize rows are recorded as skipped.
#
# usage: scripts/bench/bench-dcqos.sh [OUT]  env: BENCH_QUICK=1 (two sizes,
#   2 s a point: ~3 min), DCQ_SECS (3 full), DCQ_SIZES, DCQ_MODES ("xdp
#   socket"), DCQ_CONFIGS ("1 6": sources into one builder). Full: ~8 min.
# Writes OUT/bench/dcqos.json, dcqos.csv, dcqos-*.png.
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start dcqos "${1:-}" xevb
SECS=${DCQ_SECS:-$(quick_or 2 3)}
SIZES=(${DCQ_SIZES:-$(quick_or "400 1400 4000" "100 400 1000 1400 4000 16000")})
MODES=(${DCQ_MODES:-xdp socket})
CONFIGS=(${DCQ_CONFIGS:-1 6})
PORT_RATE=${BENCH_PORT_RATE:-200e6}
PORT_BUF=${BENCH_PORT_BUFFER:-32000}
PORT_BPS=$(python3 -c "print(int($PORT_RATE))")
MTU=1500
MAXFRAG=$((MTU - 56))
NMAX=0
for n in "${CONFIGS[@]}"; do ((n > NMAX)) && NMAX=$n; done
bench_testbed
tb_up --prefix "xbdq$$" --sources "$NMAX" --builders 1 --sinks 0 --dfm 1 --mtu "$MTU" || exit 1
SW=$(tb_switch)
BPORT=$(tb_port builder 0)
DEST=$(tb_addr builder 0)

point() {  # BMODE DFMMODE NSRC SIZE SHAPE(none|RATE) -> one JSON line
	local mode=$1 dm=$2 ns=$3 size=$4 shape=$5 k
	tc -n "$SW" qdisc del dev "$BPORT" root 2>/dev/null
	tc -n "$SW" qdisc add dev "$BPORT" root handle 1: tbf rate "${PORT_BPS}bit" burst 15000 limit "$PORT_BUF"
	if [[ $shape != none ]]; then
		for ((k = 0; k < ns; k++)); do
			tb_exec source "$k" "$X" shape set --dev eth0 --dst "$DEST" --rate "$shape" 2>>"$W/shape.err"
		done
	fi
	DFM_BUILD_ARGS=()
	[[ $mode == socket ]] && DFM_BUILD_ARGS=(--mode socket --udp)
	dfm_round 1 "$ns" "$dm" "$size"
	tc -n "$SW" -s -j qdisc show dev "$BPORT" >"$W/port.json"
	if [[ $shape != none ]]; then
		for ((k = 0; k < ns; k++)); do tb_exec source "$k" "$X" shape clear --dev eth0 2>>"$W/shape.err"; done
	fi
	python3 - "$W" "$mode" "$dm" "$ns" "$size" "$shape" <<'PY'
import json, sys
w, mode, dm, ns, size, shape = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
sys.path.insert(0, "scripts/bench")
from benchlib import summary_json as merged
d, b = merged(w + "/dfm.json"), merged(w + "/b0.json")
try:
    port = [q for q in json.load(open(w + "/port.json")) if q["kind"] == "tbf"][0]
except Exception:
    port = {}
el = d.get("elapsed_s", 0)
eoe = d.get("complete", 0) / el if el else 0
ctl = b.get("dfm_ctl", {})
r = {"mode": mode, "dfm_mode": dm, "sources": ns, "config": "%dx1" % ns, "frag_size": size,
     "shape": "none" if shape == "none" else "%.1f Mbit/s" % (float(shape) / 1e6),
     "eoe_per_s": round(eoe, 1), "MB_per_s": round(eoe * ns * size / 1e6, 3),
     "triggered": d.get("triggered", 0), "complete": d.get("complete", 0), "incomplete": d.get("incomplete", 0),
     "lost": d.get("lost_total", 0), "lost_by_reason": {k: v for k, v in d.get("lost", {}).items() if v},
     "reask_events": ctl.get("reask_events", 0), "reask_requests": ctl.get("reask_requests", 0),
     "port_drops": port.get("drops", 0), "port_packets": port.get("packets", 0),
     "builder_seq_gaps": b.get("seq_gaps", 0), "accounting_ok": d.get("accounting_ok", False)}
if not d:
    r["error"] = "dfm gave no summary: " + open(w + "/dfm.err").read().strip()[-200:]
print(json.dumps(r))
PY
}

: >"$W/points"
DFM_ARGS=(--drain-ms 2000)
for ns in "${CONFIGS[@]}"; do
	share=$(python3 -c "print(int(0.95 * $PORT_RATE / $ns))")
	for mode in "${MODES[@]}"; do
		for dm in push pull; do
			for shape in none "$share"; do
				for size in "${SIZES[@]}"; do
					if ((size > MAXFRAG)); then
						python3 -c 'import json, sys
m, dm, ns, size, sh, mx = sys.argv[1:]
print(json.dumps({"mode": m, "dfm_mode": dm, "sources": int(ns), "config": ns + "x1", "frag_size": int(size),
                  "shape": "none" if sh == "none" else "%.1f Mbit/s" % (float(sh) / 1e6),
                  "skipped": "a MEP must fit one IP packet: largest fragment at MTU 1500 is %s B" % mx}))' \
							"$mode" "$dm" "$ns" "$size" "$shape" "$MAXFRAG" >>"$W/points"
						continue
					fi
					point "$mode" "$dm" "$ns" "$size" "$shape" | tee -a "$W/points" | cut -c1-200
				done
			done
		done
	done
done
bench_write dcqos "$W/points" seconds_per_point="$SECS" \
	port="\"tbf $((PORT_BPS / 1000000)) Mbit/s, limit $PORT_BUF B on the builder's switch port (1 GbE scaled 5x)\"" \
	dfm='"--pack 1, builder --credits 50, re-ask after 100 ms up to 3 times; triggered as fast as credits allow"'
"$PY" scripts/bench/plots.py "$OUT/bench" dcqos

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The DFM alone against simulated peers (issue 36): `xevb dfm` in a
# namespace of its own, its B builders, S source processes and F farm
# nodes played by build/bench/dfm_sim (one process, the real codec, each
# peer on its own address on the namespace's lo), so the DFM is the load:
# builders answer every ASSIGN with DONE at once, sources only take what
# the DFM sends, farm nodes report what the builders delivered. Per point:
# events/s, DFM CPU per event (/proc/PID/schedstat), datagrams/s in and
# out by type, p50/p99 trigger-to-ASSIGN and ASSIGN-to-DONE (the DFM's own
# histograms, --json latency_us), the books (exact in every point: the
# DFM's accounting line ok, nothing outstanding or not delivered at the
# farm nodes) and whether any event was lost (counted by reason). Scans B, S
# and F, push and pull, --pack 1 and 25, with and without a key, as fast as
# credits allow; then builder credits (how far the run is bound by events
# in flight) and a paced trigger (trigger-to-ASSIGN with a clock: the wait
# for a builder). dfm_sim plays up to 1024 builders, 4096 source processes
# and 4096 farm nodes (the DFM's tables), each on an address of its own.
#
# DSCALE_SCAN=cost: the scan of the cost model (docs/dfm.md) instead, into
# dfm-cost.json: B = 1, 4, 16, 64, 128, 256, 1024 with S = 320, and S = 1,
# 16, 64, 320, 1024, 4096 with B = 128, F = 1024 farm nodes, push and pull,
# --pack 25, as fast as credits allow; and for the fit, 128x320x1024 with
# --pack 1 and paced at 1000 events/s with S = 320 and 4096 (what the peers
# cost per second). `scripts/bench/dfm_scale.py fit` fits it.
#
# usage: scripts/bench/bench-dfm-scale.sh [OUT]
#   env: DSCALE_SCAN (cost: see above), BENCH_QUICK=1 (5 points of 1 s, for make test), DSCALE_SECS (3; 1
#        quick), DSCALE_MODES ("push pull"), DSCALE_PACKS ("1 25"),
#        DSCALE_KEYS ("0 1"), DSCALE_CREDITS (64, as xevb build --credits),
#        DSCALE_POINTS (a list "MODE:PACK:B:S:F:KEY[:CREDITS[:RATE]] ..."
#        instead of the scan; RATE 0: as fast as credits allow),
#        DSCALE_OUT (OUT/bench: where dfm-scale.json goes), DSCALE_DFM_ARGS
#        (more `xevb dfm` options, e.g. "--dead-ms 10000")
# Writes OUT/bench/dfm-scale.json (+ .csv; dfm-cost.json with
# DSCALE_SCAN=cost); exit 1 when a point's books were not exact.
set -uo pipefail
case ${DSCALE_SCAN:-} in
"" | cost) ;;
*)
	echo "bench-dfm-scale: DSCALE_SCAN=$DSCALE_SCAN: give cost, or leave it empty for the full scan" >&2
	exit 2
	;;
esac
. "$(dirname "$0")/lib_bench.sh"
bench_start dfm-scale "${1:-}" xevb
SIM=$OUT/bench/dfm_sim
[[ -x $SIM ]] || bench_make "$SIM"
SECS=${DSCALE_SECS:-$(quick_or 1 3)}
CREDITS=${DSCALE_CREDITS:-64}
NS_NAME="xds$$"
DFM_AT=198.18.0.1:23901

# The namespace: lo holds 198.18.0.0/15, so every peer binds an address of its own.
ip netns add "$NS_NAME" || bench_fail "cannot create namespace $NS_NAME (root needed)"
BENCH_NETNS+=("$NS_NAME")
ip -n "$NS_NAME" link set lo up &&
	ip -n "$NS_NAME" addr add 198.18.0.1/15 dev lo ||
	bench_fail "cannot set up lo in $NS_NAME"
(umask 077; head -c 32 /dev/urandom >"$W/run.key")

udp_counters() { ip netns exec "$NS_NAME" cat /proc/net/snmp >"$1"; }

# point MODE PACK B S F KEY CREDITS RATE: one run; appends its row to W/points.
point() {
	local mode=$1 pack=$2 nb=$3 ns=$4 nf=$5 key=$6 credits=$7 rate=$8 dpid tpid spid drc src
	local -a k=()
	((key)) && k=(--key-file "$W/run.key")
	udp_counters "$W/snmp0"
	ip netns exec "$NS_NAME" timeout $((SECS + 40)) "$X" dfm --listen "$DFM_AT" --mode "$mode" \
		--duration "$SECS" --pack "$pack" --rate "$rate" --wait-builders "$nb" \
		--wait-sources "$ns" --drain-ms 3000 --books-ms 3000 --json --interval 0 \
		"${k[@]}" ${DSCALE_DFM_ARGS:-} >"$W/dfm.json" 2>"$W/dfm.err" &
	tpid=$!
	BG_PIDS+=("$tpid")
	dpid=$(child_xevb "$tpid")
	[[ -n $dpid ]] || { echo "bench-dfm-scale: the DFM did not start: $(tail -2 "$W/dfm.err")" >&2; }
	ip netns exec "$NS_NAME" timeout $((SECS + 60)) "$SIM" --dfm "$DFM_AT" --builders "$nb" --sources "$ns" \
		--farm "$nf" --credits "$credits" ${dpid:+--dfm-pid "$dpid"} --timeout $((SECS + 50)) "${k[@]}" \
		>"$W/sim.json" 2>"$W/sim.err" &
	spid=$!
	BG_PIDS+=("$spid")
	wait "$tpid"
	drc=$?
	wait "$spid"
	src=$?
	BG_PIDS=()
	((src == 0)) || echo "bench-dfm-scale: dfm_sim exited $src: $(tail -2 "$W/sim.err")" >&2
	udp_counters "$W/snmp1"
	"$PY" scripts/bench/dfm_scale.py row "$W" "$mode" "$pack" "$nb" "$ns" "$nf" "$key" "$credits" "$rate" \
		"$SECS" "$drc" "$src" >>"$W/points"
	tail -1 "$W/points" | "$PY" scripts/bench/dfm_scale.py line
}

cost_points() {  # the cost model's scan (DSCALE_SCAN=cost)
	local m b s
	for m in push pull; do
		for b in 1 4 16 64 128 256 1024; do echo -n "$m:25:$b:320:1024:0 "; done
		for s in 1 16 64 1024 4096; do echo -n "$m:25:128:$s:1024:0 "; done
		echo -n "$m:1:128:320:1024:0 $m:25:128:320:1024:0:64:1000 $m:25:128:4096:1024:0:64:1000 "
	done
	echo
}

points() {  # the scan as MODE:PACK:B:S:F:KEY words
	if [[ -n ${DSCALE_POINTS:-} ]]; then
		echo "$DSCALE_POINTS"
		return
	fi
	if [[ ${DSCALE_SCAN:-} == cost ]]; then
		cost_points
		return
	fi
	if [[ -n $QUICK ]]; then
		echo "push:25:4:4:1:0 push:25:4:4:1:1 pull:1:2:2:1:0 push:25:4:4:1:0:64:20000 pull:25:80:300:70:0"
		return
	fi
	local m p k t
	for m in ${DSCALE_MODES:-push pull}; do
		for p in ${DSCALE_PACKS:-1 25}; do
			for k in ${DSCALE_KEYS:-0 1}; do
				# B alone, S alone, F alone, then all three at their limits
				for t in 1:1:1 4:1:1 16:1:1 64:1:1 256:1:1 1:8:1 1:32:1 1:128:1 1:256:1 1:1024:1 4:4:0 \
					4:4:1 4:4:16 4:4:64 4:4:1024 64:256:64 128:320:1024; do
					echo -n "$m:$p:$t:$k "
				done
			done
		done
	done
	# credits: events in flight per builder; a paced trigger at 20 k and 200 k events/s
	echo -n "push:25:4:1:1:0:256 push:25:4:1:1:0:1024 pull:1:4:1:1:0:256 pull:1:4:1:1:0:1024 "
	echo "push:25:4:4:1:0:64:20000 push:25:4:4:1:0:64:200000 pull:1:4:4:1:0:64:20000 pull:1:4:4:1:0:64:200000"
}

: >"$W/points"
echo "bench-dfm-scale: $SECS s a point, builder credits $CREDITS"
for pt in $(points); do
	IFS=: read -r mode pack nb ns nf key credits rate <<<"$pt"
	point "$mode" "$pack" "$nb" "$ns" "$nf" "$key" "${credits:-$CREDITS}" "${rate:-0}"
done
RES=${DSCALE_OUT:-$OUT/bench}
NAME=dfm-scale
[[ ${DSCALE_SCAN:-} == cost ]] && NAME=dfm-cost
"$PY" scripts/bench/benchlib.py write "$NAME" "$RES" "$W/points" "seconds_per_point=$SECS" "credits=$CREDITS" \
	"cpus=$(nproc)"
"$PY" scripts/bench/dfm_scale.py table "$RES/$NAME.json"

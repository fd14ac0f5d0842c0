#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The incast experiment of the ATLAS QoS study, with tc-bpf + HTB instead of
# CBQ + u32 + TBF. BENCH_SOURCES (4) sources send MEPs (UDP, one 1400-byte
# fragment a packet, 1470-byte frames) to one `xevb build` (XDP, build-only)
# through the testbed bridge; the builder's switch port emulates a 1 GbE
# link with a small buffer (tbf; 1 GbE scaled down 5x by default: BENCH_PORT_RATE 200e6, BENCH_PORT_BUFFER 32000 bytes).
# For each offered load (the sources' total, relative to the port):
#   unshaped: sources send at the offered rate;
#   shaped:   each source also runs `xevb shape` towards the builder at the
#             port's share, 0.95 x port rate / sources, burst BENCH_BURST (6000 bytes).
# Reported: drops at the port (tbf), drops inside the shapers, events
# complete of those sent (the builder has no timeout and a 65536-event
# window: sources throttled by their shapers drift apart by up to a second,
# which is queueing, not loss; it listens twice the expected time), goodput at the port, and the classifier's CPU cost
# per packet (kernel.bpf_stats_enabled: run_time_ns / run_cnt over the
# shaped runs; the sysctl is restored afterwards). Receive work of the veth
# runs on the sender's core (default NAPI model). Writes $OUT/bench/shape.json
# and prints a table. BENCH_QUICK=1: three loads, fewer events.
set -euo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/../.."
X=$(realpath "$OUT/xevb")
QUICK=${BENCH_QUICK:-}
NSRC=${BENCH_SOURCES:-4}
# The port is 1 GbE scaled down 5x by default: two shared cores cannot offer
# much more than 0.35 Gbit/s through the bridge from four senders while the
# builder runs; rate, buffer and burst are scaled together.
PORT_RATE=${BENCH_PORT_RATE:-200e6}
PORT_BUF=${BENCH_PORT_BUFFER:-32000}
BURST=${BENCH_BURST:-6000}
FRAG=1400
FRAME=1470          # 14 eth + 20 ip + 8 udp + 16 MEP + 12 record + 1400
if [[ -n $QUICK ]]; then
	LOADS=${BENCH_LOADS:-"0.5 1.0 1.5"}; EVENTS=${BENCH_EVENTS:-20000}
else
	LOADS=${BENCH_LOADS:-"0.25 0.5 0.75 0.9 1.0 1.25 1.5 2.0"}; EVENTS=${BENCH_EVENTS:-50000}
fi
SHARE=$(python3 -c "print(int(0.95 * $PORT_RATE / $NSRC))")
PORT_BPS=$(python3 -c "print(int($PORT_RATE))")

# shellcheck source=../lib/testbed.sh
. scripts/lib/testbed.sh
TB_QUIET=1
W=$(mktemp -d /tmp/xevbshapebench.XXXXXX)
STATS_OLD=$(sysctl -n kernel.bpf_stats_enabled)
tb_on_cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD" || true
	[[ -n ${BENCH_KEEP:-} ]] || rm -rf "$W"
}
tb_up --prefix "xb$$shp" --sources "$NSRC" --builders 1 --sinks 0 >/dev/null
SW=$(tb_switch)
BPORT=$(tb_port builder 0)
DEST=$(tb_addr builder 0)

# One point: $1 = load (fraction of 1 Gbit/s), $2 = shaped|unshaped.
run_point() {
	local load=$1 mode=$2 hz i dur bpid pids=() ids
	hz=$(python3 -c "print('%.1f' % ($load * $PORT_RATE / $NSRC / ($FRAME * 8)))")
	# No --exit-on-eor: on veth, HTB's dequeue runs on either core and each
	# core's backlog forwards on its own, so a source's END_OF_RUN packet can
	# overtake its last data packets; the builder listens a fixed time.
	dur=$(python3 -c "print(int($EVENTS * $FRAME * 8 * $NSRC / min($load, 0.9) / $PORT_RATE * 2) + 5)")
	tc -n "$SW" qdisc del dev "$BPORT" root 2>/dev/null || true
	tc -n "$SW" qdisc add dev "$BPORT" root handle 1: tbf rate "${PORT_BPS}bit" burst 15000 limit "$PORT_BUF"
	ip netns exec "$(tb_ns builder 0)" timeout $((dur + 10)) "$X" build --dev eth0 --udp \
		--sources 0-$((NSRC - 1)) --no-forward --timeout-ms 0 --window 65536 --duration "$dur" \
		--json --quiet >"$W/b.json" 2>"$W/b.err" &
	bpid=$!
	for _ in $(seq 200); do
		grep -qE 'AF_XDP socket on|on a kernel socket' "$W/b.err" 2>/dev/null && break
		sleep 0.05
	done
	if [[ $mode == shaped ]]; then
		for ((i = 0; i < NSRC; i++)); do
			tb_exec source "$i" "$X" shape set --dev eth0 --dst "$DEST" --rate "$SHARE" \
				--burst "$BURST" 2>>"$W/shape.err"
		done
	fi
	for ((i = 0; i < NSRC; i++)); do
		tb_exec source "$i" timeout $((dur + 5)) "$X" source --dest "$DEST" --udp --source-ids "$i" \
			--pack 1 --frag-size "$FRAG" --rate "$hz" --events "$EVENTS" --json --quiet \
			>"$W/s$i.json" 2>"$W/s$i.err" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || true; done
	wait "$bpid" || true
	tc -n "$SW" -s -j qdisc show dev "$BPORT" >"$W/port.json"
	ip -n "$SW" -s -j link show dev "$BPORT" >"$W/portlink.json"
	ids=""
	for ((i = 0; i < NSRC; i++)); do
		if [[ $mode == shaped ]]; then
			tb_exec source "$i" "$X" shape list --dev eth0 --json >"$W/l$i.json"
			tb_exec source "$i" "$X" shape clear --dev eth0 2>>"$W/shape.err"
		else
			echo '{}' >"$W/l$i.json"
		fi
	done
	python3 - "$W" "$NSRC" "$EVENTS" "$load" "$mode" "$FRAME" >>"$W/points.jsonl" <<'PY'
import json, sys, glob
w, n, events, load, mode, frame = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], int(sys.argv[6])
b = json.load(open(w + "/b.json")) if open(w + "/b.json").read().strip() else {}
port = [q for q in json.load(open(w + "/port.json")) if q["kind"] == "tbf"][0]
src = [json.load(open("%s/s%d.json" % (w, i))) for i in range(n)]
lst = [json.load(open("%s/l%d.json" % (w, i))) for i in range(n)]
sent = sum(s["packets"] for s in src)
el = max(s["elapsed_s"] for s in src)
shaper_drops = sum(r.get("class_drops", 0) + r.get("drop_horizon", 0) for l in lst for r in l.get("rules", []))
prog_ns = [None]
print(json.dumps({
    "load": load, "mode": mode, "events": events, "packets_sent": sent,
    "offered_gbps": round(sent * frame * 8 / el / 1e9, 4) if el else 0,
    "port_goodput_gbps": round(port["bytes"] * 8 / el / 1e9, 4) if el else 0,
    "sender_elapsed_s": round(el, 3),
    "port_drops": port["drops"], "port_sent_packets": port["packets"],
    "port_loss": round(port["drops"] / sent, 6) if sent else 0,
    "shaper_drops": shaper_drops,
    "events_complete": b.get("events_complete", 0),
    "completeness": round(b.get("events_complete", 0) / events, 6),
    "builder_frags": b.get("frags_received", 0),
    "builder_seq_gaps": b.get("seq_gaps", 0),
}))
PY
}

# Classifier cost: run time of the shaping programs over the shaped runs.
prog_stats() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
t = c = 0
for p in json.load(sys.stdin):
    if p.get("name") == "xevb_shape":
        t += p.get("run_time_ns", 0); c += p.get("run_cnt", 0)
print(t, c)'
}

sysctl -qw kernel.bpf_stats_enabled=1
: >"$W/points.jsonl"
: >"$W/cost"
for load in $LOADS; do
	run_point "$load" unshaped
	run_point "$load" shaped
done
# Cost per packet: a separate shaped run, stats read while programs are loaded.
for ((i = 0; i < NSRC; i++)); do
	tb_exec source "$i" "$X" shape set --dev eth0 --dst "$DEST" --rate "$SHARE" --burst "$BURST" 2>/dev/null
done
read -r t0 c0 < <(prog_stats)
for ((i = 0; i < NSRC; i++)); do
	tb_exec source "$i" timeout 30 "$X" source --dest "$DEST" --udp --source-ids "$i" --pack 1 \
		--frag-size "$FRAG" --events "$EVENTS" --quiet >/dev/null 2>&1 &
done
wait
read -r t1 c1 < <(prog_stats)
for ((i = 0; i < NSRC; i++)); do tb_exec source "$i" "$X" shape clear --dev eth0 2>/dev/null; done
sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"

mkdir -p "$OUT/bench"
python3 - "$W/points.jsonl" "$OUT/bench/shape.json" "$((t1 - t0))" "$((c1 - c0))" "$NSRC" "$SHARE" "$PORT_BUF" "$PORT_BPS" <<'PY'
import json, sys
pts = [json.loads(l) for l in open(sys.argv[1])]
t, c = int(sys.argv[3]), int(sys.argv[4])
res = {"sources": int(sys.argv[5]), "share_bps": int(sys.argv[6]), "port": "tbf %.0f Mbit/s, limit %s B" % (int(sys.argv[8]) / 1e6, sys.argv[7]),
       "frame_bytes": 1470, "classifier_run_time_ns": t, "classifier_run_cnt": c,
       "classifier_ns_per_packet": round(t / c, 1) if c else None,
       "note": "bpf_stats includes about 41 ns of measuring floor (machine.md)", "points": pts}
json.dump(res, open(sys.argv[2], "w"), indent=1)
print("incast: %d sources -> 1 builder through one port (%s); shaped = %.1f Mbit/s per source"
      % (res["sources"], res["port"], res["share_bps"] / 1e6))
print("%6s %-9s %9s %10s %9s %9s %12s %8s" % ("load", "mode", "offered", "port_drop", "loss%", "shaper_dr", "complete", "compl%"))
for p in pts:
    print("%6.2f %-9s %7.3fG %10d %9.3f %9d %6d/%-6d %8.2f" % (p["load"], p["mode"], p["offered_gbps"], p["port_drops"],
          100 * p["port_loss"], p["shaper_drops"], p["events_complete"], p["events"], 100 * p["completeness"]))
print("classifier: %s ns per packet (%d runs, kernel.bpf_stats_enabled)" % (res["classifier_ns_per_packet"], c))
PY

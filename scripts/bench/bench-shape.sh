#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Per-destination shaping (issue 6) and the ATLAS QoS study (seeds/001,
# issue 8 study 3), three measurements on one testbed:
#
# 1. Incast (scripts/lib/incast.sh): BENCH_SOURCES (4) sources send MEPs
#    (UDP, one 1400-byte fragment a packet, 1470-byte frames) to one
#    `xevb build` through the testbed bridge; the builder's switch port is a
#    tbf emulating 1 GbE with a small buffer, scaled down 5x by default
#    (BENCH_PORT_RATE 200e6 bit/s, BENCH_PORT_BUFFER 32000 bytes): two shared
#    cores cannot offer much more than 0.35 Gbit/s through the bridge from
#    four senders while the builder runs. For each offered load (the
#    sources' total relative to the port), unshaped and shaped (every source
#    runs `xevb shape set --dst <builder>` at 0.95 x port / sources, burst
#    BENCH_BURST 6000 bytes): port drops, events complete, and every lost
#    fragment placed on the way (incast_acct.py; "unaccounted" must be 0).
#    Each point offers its load for BENCH_SECONDS (6; quick 3).
#    Pull mode (ATLAS DC; scripts/lib/incast.sh ic_pull): `xevb dfm --mode
#    pull` at BENCH_PULL_RATES events/s in blocks of 10; the sources answer
#    each REQUEST at once (10 MEPs each, back to back): port drops and
#    re-asks, unshaped and shaped.
# 2. CPU overhead of shaping (the seed's "QoS software overhead": assigned
#    bandwidth that does not limit): one source, as fast as it can, to the
#    builder (port unlimited), unshaped vs shaped at 10 Gbit/s, for two
#    fragment sizes: peak packet rate (source unpaced), and at one fixed
#    packet rate (BENCH_CPU_HZ 20000/s) the kernel's CPU time per packet,
#    whole machine (/proc/stat system + irq + softirq: the classifier, HTB,
#    veth and XDP; veth's receive work runs on the sender's core; the paced
#    source spins in user space, so all-CPU time is recorded but says little),
#    plus the classifier's own cost (kernel.bpf_stats_enabled run_time_ns /
#    run_cnt, restored after).
# 3. Packet inter-departure times (the seed's tcpdump histogram): tcpdump on
#    the source's eth0 (egress taps see a packet when the qdisc releases it)
#    for one source at the incast share: shaped (HTB, source unpaced),
#    unshaped but paced by the source (--rate), unshaped unpaced.
#
# Writes $OUT/bench/shape.json ({"meta", "results": incast rows, "cpu",
# "classifier", "interdeparture"}), shape.csv (incast rows), shape-cpu.csv,
# shape-ipt.csv, shape-pull.csv and the plots shape-loss.png, shape-cpu.png, shape-ipt.png
# (scripts/bench/shape_report.py). BENCH_QUICK=1: 3 loads, 3 s a point,
# shorter captures (about 2 minutes; the full run about 5).
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start shape "${1:-}" xevb
NSRC=${BENCH_SOURCES:-4}
PORT_RATE=${BENCH_PORT_RATE:-200e6}
PORT_BUF=${BENCH_PORT_BUFFER:-32000}
BURST=${BENCH_BURST:-6000}
if [[ -n $QUICK ]]; then
	LOADS=${BENCH_LOADS:-"0.5 1.0 2.0"}; SECS=${BENCH_SECONDS:-3}
	CPU_EVENTS=${BENCH_CPU_EVENTS:-100000}; CPU_SECS=2; CPU_REPS=1; IPT_PKTS=${BENCH_IPT_PACKETS:-5000}
	PULL_RATES=${BENCH_PULL_RATES:-"1000"}; PULL_EVENTS=${BENCH_PULL_EVENTS:-2000}
else
	LOADS=${BENCH_LOADS:-"0.25 0.5 0.75 0.9 1.0 1.25 1.5 2.0"}; SECS=${BENCH_SECONDS:-6}
	CPU_EVENTS=${BENCH_CPU_EVENTS:-300000}; CPU_SECS=3; CPU_REPS=3; IPT_PKTS=${BENCH_IPT_PACKETS:-20000}
	PULL_RATES=${BENCH_PULL_RATES:-"500 1000 2000"}; PULL_EVENTS=${BENCH_PULL_EVENTS:-4000}
fi
SHARE=$(python3 -c "print(int(0.95 * $PORT_RATE / $NSRC))")
CPU_HZ=${BENCH_CPU_HZ:-20000}
PORT_BPS=$(python3 -c "print(int($PORT_RATE))")

bench_testbed
# shellcheck source=../lib/incast.sh
. scripts/lib/incast.sh
STATS_OLD=$(sysctl -n kernel.bpf_stats_enabled)
bench_on_exit() {
	ic_kill
	sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD" || true
}
tb_up --prefix "xb$$shp" --sources "$NSRC" --builders 1 --sinks 1 --dfm 1 >/dev/null
ic_init "$X" "$W"
ic_port "$PORT_BPS" "$PORT_BUF"
SW=$(tb_switch)
BPORT=$(tb_port builder 0)
DEST=$(tb_addr builder 0)
BNS=$(tb_ns builder 0)

# ---- 1. incast ---------------------------------------------------------
: >"$W/points.jsonl"
for load in $LOADS; do
	ev=$(python3 -c "print(max(1000, int($load * $PORT_BPS / $NSRC / ($IC_FRAME * 8) * $SECS)))")
	for mode in unshaped shaped; do
		ic_point "$load" "$mode" "$ev" "$SHARE" "$BURST" >>"$W/points.jsonl"
		tail -1 "$W/points.jsonl" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("  load %.2f %-8s sent %7d port drops %6d complete %6d/%-6d unaccounted %d" % (r["load"], r["mode"],
      r["sent"], r["port_drops"], r["events_complete"], r["events"], r["unaccounted"]))' >&2
	done
done

# Pull mode: re-asks.
: >"$W/pull.jsonl"
for rate in $PULL_RATES; do
	for mode in unshaped shaped; do
		ic_pull "$mode" "$PULL_EVENTS" "$rate" 10 "$SHARE" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); r["rate_hz"] = float(sys.argv[1]); r["events"] = int(sys.argv[2])
r["offered_gbps"] = round(r["rate_hz"] * int(sys.argv[3]) * 1470 * 8 / 1e9, 4)
print(json.dumps(r))' "$rate" "$PULL_EVENTS" "$NSRC" >>"$W/pull.jsonl"
		tail -1 "$W/pull.jsonl" >&2
	done
done

# ---- 2. CPU overhead and classifier cost --------------------------------
# A builder that only receives (--tune bare=1) absorbs whatever one source sends.
start_bare() {
	rm -f "$W/bare.err"
	ip netns exec "$BNS" timeout 120 "$X" build --dev eth0 --udp --sources 0-$((NSRC - 1)) --tune bare=1 \
		--interval 0 --tune frames=32768 --tune frame-size=2048 --duration 110 >/dev/null 2>"$W/bare.err" &
	BARE=$!
	BG_PIDS+=("$BARE")
	for _ in $(seq 400); do
		grep -q 'AF_XDP socket on' "$W/bare.err" 2>/dev/null && return 0
		kill -0 "$BARE" 2>/dev/null || break
		sleep 0.05
	done
	echo "bench-shape: the receiving builder did not start: $(tail -3 "$W/bare.err")" >&2
	return 1
}
stop_bare() { kill -INT "$BARE" 2>/dev/null || true; wait "$BARE" || true; BG_PIDS=(); }
# "all kernel": busy ticks of the machine, and those in the kernel (system,
# irq, softirq: where the classifier, HTB and veth run; the paced source
# spins in user space between packets).
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $4 + $7 + $8 }' /proc/stat; }
# prog_stats: run time and count of source 0's classifier (by the program id
# `shape list` reports: a program just removed may still be listed a moment).
prog_stats() {
	local id
	id=$(tb_exec source 0 "$X" shape list --dev eth0 --json 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin).get("prog_id", 0))' 2>/dev/null) || id=0
	if [[ -z $id || $id == 0 ]]; then echo 0 0; return; fi
	bpftool -j prog show id "$id" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)
print(p.get("run_time_ns", 0), p.get("run_cnt", 0))' || echo 0 0
}
tc -n "$SW" qdisc del dev "$BPORT" root 2>/dev/null || true
start_bare
sysctl -qw kernel.bpf_stats_enabled=1
: >"$W/cpu.jsonl"
HZ_TICK=$(getconf CLK_TCK)
# cpu_run FRAG MODE KIND [source options]: one run of source 0; one JSON row.
cpu_run() {
	local frag=$1 mode=$2 kind=$3 pt0 pc0 pt1 pc1 c0 c1 k0 k1
	shift 3
	read -r pt0 pc0 < <(prog_stats)
	read -r c0 k0 < <(busy_ticks)
	tb_exec source 0 timeout 60 "$X" source --dest "$DEST" --udp --source-ids 0 --pack 1 \
		--frag-size "$frag" --json --quiet "$@" >"$W/cpu-src.json" 2>>"$W/cpu-src.err" || true
	read -r c1 k1 < <(busy_ticks)
	read -r pt1 pc1 < <(prog_stats)
	python3 - "$W/cpu-src.json" "$frag" "$mode" "$kind" "$((c1 - c0))" "$HZ_TICK" "$((pt1 - pt0))" "$((pc1 - pc0))" "$((k1 - k0))" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
frag, mode, kind, ticks, hz, pt, pc, kt = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
pk, el = s["packets"], s["elapsed_s"]
print(json.dumps({"frag_bytes": int(frag), "frame_bytes": int(frag) + 70, "mode": mode, "kind": kind, "packets": pk,
                  "elapsed_s": round(el, 3), "pps": round(pk / el) if el else 0,
                  "gbps": round(pk * (int(frag) + 70) * 8 / el / 1e9, 4) if el else 0,
                  "cpu_s": round(ticks / hz, 2),
                  "cpu_ns_per_packet": round(ticks / hz * 1e9 / pk, 1) if pk else None,
                  "kernel_cpu_s": round(kt / hz, 2),
                  "kernel_ns_per_packet": round(kt / hz * 1e9 / pk, 1) if pk else None,
                  "classifier_runs": pc, "classifier_ns_per_packet": round(pt / pc, 1) if pc else None}))
PY
}
# Peak: as fast as the source can (the seed's "transfer speed"). Paced: the
# same packet rate shaped and unshaped (CPU_HZ), so the CPU time per packet
# compares equal work (the seed's "CPU usage"); shaped and unshaped
# alternate, CPU_REPS times.
for frag in 64 1400; do
	for rep in $(seq "$CPU_REPS"); do
		for mode in unshaped shaped; do
			[[ $mode == shaped ]] && tb_exec source 0 "$X" shape set --dev eth0 --dst "$DEST" --rate 10gbit 2>>"$W/shape.err"
			((rep == 1)) && cpu_run "$frag" "$mode" peak --events "$CPU_EVENTS" >>"$W/cpu.jsonl"
			cpu_run "$frag" "$mode" paced --rate "$CPU_HZ" --events $((CPU_HZ * CPU_SECS)) >>"$W/cpu.jsonl"
			[[ $mode == shaped ]] && tb_exec source 0 "$X" shape clear --dev eth0 2>>"$W/shape.err"
			tail -1 "$W/cpu.jsonl" >&2
		done
	done
done
sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"

# ---- 3. inter-departure times ---------------------------------------------
# capture NAME SOURCE_ARGS...: tcpdump on source 0's egress, IPT_PKTS packets.
capture() {
	local name=$1 t
	shift
	rm -f "$W/td.err"
	tb_exec source 0 timeout 30 tcpdump -i eth0 -Q out -nn -s 64 -c "$IPT_PKTS" \
		--time-stamp-precision nano -w "$W/$name.pcap" udp 2>"$W/td.err" &
	t=$!
	BG_PIDS+=("$t")
	wait_for "$W/td.err" listening "$t" || true
	tb_exec source 0 timeout 30 "$X" source --dest "$DEST" --udp --source-ids 0 --pack 1 \
		--frag-size "$IC_FRAG" --events $((IPT_PKTS + IPT_PKTS / 4)) --quiet "$@" >/dev/null 2>>"$W/ipt-src.err" || true
	wait "$t" || true
	BG_PIDS=("$BARE")
}
HZ_SHARE=$(python3 -c "print('%.1f' % ($SHARE / ($IC_FRAME * 8)))")
capture unshaped_unpaced
capture unshaped_paced --rate "$HZ_SHARE"
tb_exec source 0 "$X" shape set --dev eth0 --dst "$DEST" --rate "$SHARE" --burst "$BURST" 2>>"$W/shape.err"
capture shaped
tb_exec source 0 "$X" shape clear --dev eth0 2>>"$W/shape.err"
stop_bare

scripts/bench/meta.py BENCH_SOURCES="$NSRC" BENCH_PORT_RATE="$PORT_RATE" BENCH_PORT_BUFFER="$PORT_BUF" \
	BENCH_BURST="$BURST" BENCH_LOADS="$LOADS" BENCH_SECONDS="$SECS" share_bps="$SHARE" \
	builder_timeout_ms="$IC_TIMEOUT_MS" builder_frames="$IC_FRAMES" >"$W/meta.json"
"$PY" scripts/bench/shape_report.py "$W" "$OUT/bench" "$SHARE" "$PORT_BPS" "$PORT_BUF" "$NSRC" "$BURST"

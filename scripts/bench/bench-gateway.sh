#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Study 2 (seed 002, LHCb gateway event building; its Table V): the input
# rate (Gb/s and frames/s) one builder sustains WITHOUT LOSS, for
#   L1:  126 sources, 25 x 32 B fragments a frame (1150-byte frames)
#   HLT: 323 sources, 10 x 100 B fragments a frame (1170-byte frames)
# and each implementation step we have:
#   socket        raw IPv4 socket + recvmmsg (the kernel copies), build only
#   socket+fwd    ... and forwarding to a farm node over TCP with writev
#                 (scatter-gather: our only output path, there is no copy variant)
#   xdp           AF_XDP copy mode (veth has no zero-copy), build only
#   xdp+fwd       ... and forwarding (writev) to a farm node
#   bare          AF_XDP receive and release, nothing built (receive ceiling)
# plus the seed's last two steps on xdp+fwd: packing factor (L1 32 a frame)
# and a larger MTU (3500 with L1 75 x 32 B, HLT 29 x 100 B frames of ~3.3 kB:
# the seed used 4 kB; a non-frags XDP program cannot attach to a veth above
# ~3.5 kB). Full processing with decisions back from farm nodes
# (xdp+fwd+dfm, socket+fwd+dfm): `xevb dfm` assigns blocks of pack events
# (push), one `xevb source --dfm` process emulates all the flow's sources
# (GW_DFM_SOURCE: live, the default, sends them as live frames from one
# running BPF_PROG_RUN call fed a ring of jobs, paced to at most 1M frames/s;
# sock sends a UDP datagram per MEP from a kernel socket, which at 100% of
# its core capped the loop at ~270 kframes/s), the builder forwards to
# GW_DFM_SINKS (2, as issue 18 asks) farm nodes, each granting credits back
# (`xevb sink --ctl-port`), all on CPU 0; the DFM triggers as
# fast as credits allow, so the rate is the loop's, not a loss search: it
# counts as loss-free when the DFM's books show no event lost or incomplete.
# Builder credits: 512, or fewer where their frames would not fit the
# builder's AF_XDP RX ring (4096): credits x NSRC / PACK frames can be on
# their way at once (the DFM's first grant, a burst after a stall), the
# source sends them at up to 1M frames/s and the builder drains ~0.7M:
# HLT's 512 (16.5k frames) overflowed the ring (rx_ring_full, ~11 MEPs of
# every source) in every run, 4096 x PACK / NSRC (HLT 126, 4.1k frames)
# only when the builder's core was taken from it.
# Re-asks after 15 ms (GW_REASK_MS): a re-sent MEP must reach the builder
# before its window (4096 ids) has moved past the event, ~30 ms at L1's
# 135k events/s (the live source answers from its running call within a
# few ms), and a re-ask must not come before the event had a chance to
# arrive: its credits' worth of events plus the source's ring backlog,
# ~4-7 ms at both flows with these credits. At 500 ms every answer came
# late and its event was lost; with HLT's 512 credits (~25 ms of events in
# flight) 10-15 ms re-asked events still on their way until the loop
# collapsed, 30-100 ms cost a third of the rate in duplicates.
# (GW_DFM_CREDITS overrides the credits.)
# The full loop's switch (BENCH_SWITCH): xdp (default) puts the testbed's
# XDP switch on its ports (scripts/lib/testbed.sh, --switch xdp): frames
# reach the builder's veth as xdp_frames, veth to veth, as from a NIC,
# instead of skbs through the bridge (which the builder's XDP path must copy
# back out of an skb, on top of the bridge's work on the sender's core);
# where the kernel refuses it, the bridge, with a message. bridge: the
# bridge. The JSON row says which ("switch"), and where the time went over
# 1.3 s of the run: the share of a core each process of the loop used
# (cpu_share: source, builder, sink, dfm, ksoftirqd/N) and how busy each
# core was (core_busy, /proc/stat).
#
# Each search: one unpaced run (the generator's maximum), then bisection of
# the offered frame rate (`xevb source --mode live --rate`, paced frame by
# frame in BPF at >= 20k frames/s) between 0 and that maximum; a probe
# passes when frames lost (sent - received by the builder, incl. dropped
# in its rings) <= BENCH_LOSS_TOL (1e-4) of those sent, and, with
# forwarding (+fwd), when every event sent arrived complete at the farm
# node and none incomplete (the farm node's counts). The rate reported is
# the highest passing probe's received rate. Path: a veth pair from the
# generator (XDP_TX of live frames, CPU 0) straight to the builder (CPU 1);
# default NAPI model (receive work on the sender's core; threaded NAPI's
# 256-slot ring drops 0.2-0.5% at any rate, so no rate would be loss-free).
# The farm node (xevb sink) runs on CPU 0, the generator niced below it.
#
# Fragments larger than a packet (GW_FLOWS=seg; issue 22): a free-running
# fragment-size scan, GW_SEG_SIZES (1000 2000 4000 8000 16000 32000 64000
# bytes) at GW_SEG_MTUS (1500 9000), GW_SEG_NSRC (4) sources, --pack 1:
# the live generator sends each fragment over a packet as wire-format 1.1
# segments (live frames are at most 3408 bytes whatever the MTU, so at MTU
# 9000 segments of ~3.4 kB, not ~9 kB), the same probe and search as above
# with forwarding to a farm node that checks every byte, for each point
# GW_SEG_IMPLS (xdp+fwd socket+fwd) one after the other; the bisection
# searches up to GW_SEG_HI_RX (3) x the unpaced probe's received rate,
# not the generator's unpaced rate (Mpps). The probes' --rate
# counts events; the generator paces the segments. Each row adds the
# fragment payload MB/s built loss-free and the output engine's copies per
# byte written (out_bytes_copied; with --tune zerocopy=1 those sent by reference
# and those the kernel copied after all). Writes OUT/bench/segments-live.json
# (and .csv); table in docs/bench/segments.md. GW_SEG_IMPLS may also name
# drop (XDP_DROP on the builder's veth, no receiver), bare, socket-bare
# (--mode socket --tune bare=1), xdp, socket and xdp+fwd+zc (--tune zerocopy=1);
# GW_SEG_FPS: one probe paced at that many frames/s instead of the search
# (each probe records its cores' busy share and the receive path's CPU per
# frame: softirq on both cores plus the receiver's own time).
#
# usage: scripts/bench/bench-gateway.sh [OUT]  env: BENCH_QUICK=1 (1 s
#   probes, 2 bisection steps, no bare: ~5 min), GW_SECS (2 full), GW_STEPS
#   (5 full), GW_FLOWS ("l1 hlt"; "seg": the segment scan), GW_IMPLS ("bare socket socket+fwd xdp
#   xdp+fwd"; " " for none), GW_VARIANTS ("dfm pack32 mtu3500"), BENCH_MERGE=1
#   keeps the rows of an earlier gateway.json that this run does not measure
#   (e.g. one flow at a time), BENCH_SWITCH (xdp|bridge, the full loop's),
#   GW_DFM_BUILDERS ("xdp socket": the full loop's builders), GW_DFM_SINKS (2:
#   its farm nodes), GW_DFM_SOURCE
#   (live|sock: the full loop's source; live needs the XDP switch, with the
#   bridge it falls back to sock), GW_MODEL (split | gateway: see gw_model), BENCH_GEN (live | xsk: the generator, lib_bench.sh),
#   GW_NAPI_FIFO (50), GW_CAP (the first probe's frames/s: 0 unpaced, the
#   default; 1500000 in the gateway model), GW_SINK_RPS (1: the farm node's
#   receive work on CPU 0, see below), GW_REASK_MS (15) and GW_DFM_CREDITS (512, fewer where
#   the RX ring needs it): the full loop's builder.
#   Full: about 15 minutes. The full loop alone, L1, quick:
#   BENCH_QUICK=1 GW_FLOWS=l1 GW_IMPLS=" " GW_VARIANTS=dfm BENCH_MERGE=1 scripts/bench/bench-gateway.sh
# Writes OUT/bench/gateway.json, gateway.csv, gateway-*.png.
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start gateway "${1:-}" xevb bpf/xevb_pass.bpf.o
PASS=$ROOT/$OUT/bpf/xevb_pass.bpf.o
DROP=$ROOT/$OUT/bpf/xevb_drop.bpf.o
SECS=${GW_SECS:-$(quick_or 1 2)}
STEPS=${GW_STEPS:-$(quick_or 2 5)}
FLOWS=${GW_FLOWS:-l1 hlt}
IMPLS=${GW_IMPLS:-$(quick_or "socket socket+fwd xdp xdp+fwd" "bare socket socket+fwd xdp xdp+fwd")}
VARIANTS=${GW_VARIANTS-dfm pack32 mtu3500}
MODEL=${GW_MODEL:-split}
NAPI_FIFO=${GW_NAPI_FIFO:-50}
# The search's first probe: unpaced (0), or paced at GW_CAP frames/s. In
# the gateway model an unpaced generator (2.6 M frames/s) is more than
# the builder core's NAPI thread can even drop (veth's per-frame cost at
# SCHED_FIFO): the builder starves, and the bisection would start from a
# rate no builder takes. There the first probe is at 1.5 M frames/s.
CAP=${GW_CAP:-$([[ $MODEL == gateway ]] && echo 1500000 || echo 0)}
[[ $MODEL == split || $MODEL == gateway ]] || { echo "bench-gateway: GW_MODEL split or gateway" >&2; exit 2; }
DFM_SOURCE=${GW_DFM_SOURCE:-live}
DFM_SINKS=${GW_DFM_SINKS:-2}
[[ $DFM_SINKS =~ ^[1-8]$ ]] || { echo "bench-gateway: GW_DFM_SINKS=$DFM_SINKS: 1 to 8 farm nodes" >&2; exit 2; }
[[ $DFM_SOURCE == live || $DFM_SOURCE == sock ]] || { echo "bench-gateway: GW_DFM_SOURCE=$DFM_SOURCE: live or sock" >&2; exit 2; }
TOL=${BENCH_LOSS_TOL:-1e-4}
SWITCH=${BENCH_SWITCH:-xdp}
[[ $SWITCH == xdp || $SWITCH == bridge ]] || { echo "bench-gateway: BENCH_SWITCH=$SWITCH: xdp or bridge" >&2; exit 2; }
bench_testbed

# probe_cores FILE BPID: cpu0 and cpu1 of /proc/stat, then "builder TICKS"
# while the builder BPID (if any) runs.
probe_cores() {
	grep '^cpu[01] ' /proc/stat >"$1"
	[[ -n $2 ]] && awk '{print "builder", $14 + $15}' "/proc/$2/stat" >>"$1" 2>/dev/null
	return 0
}

# probe IMPL FPS -> one JSON line: offered and received frames/s, loss.
# FPS 0: unpaced. Uses NSRC PACK FRAG BNS SRCNS SNS BADDR SADDR, and NSEG
# (packets per fragment: segments; 1 otherwise) to turn FPS into events/s.
probe() {
	local impl=$1 fps=$2 d=$W/p bargs=() nice=0 bpid="" spid="" rate rx0=0
	rm -rf "$d"; mkdir -p "$d"
	case $impl in
	bare) bargs=(--tune bare=1) ;;
	socket-bare) bargs=(--mode socket --tune bare=1) ;;
	xdp) bargs=(--no-forward) ;;
	socket) bargs=(--mode socket --no-forward) ;;
	xdp+fwd) bargs=() ;;
	socket+fwd) bargs=(--mode socket) ;;
	xdp+fwd+zc) bargs=(--tune zerocopy=1) ;;
	esac
	if [[ $impl == *+fwd* ]]; then
		ip netns exec "$SNS" taskset -c 0 "$X" sink --listen "$SADDR:5000" --json --stats-interval 0 \
			--ready-file "$d/ready" >"$d/sink.json" 2>"$d/sink.err" &
		spid=$!
		BG_PIDS+=("$spid")
		wait_for "$d/ready" . "$spid" || { echo "sink did not start: $(tail -2 "$d/sink.err")" >&2; return 1; }
		bargs+=(--sink "$SADDR:5000")
		nice=10
	fi
	# The shipped defaults (window, timeout, frames, RX ring, frame size from
	# the MTU). GW_BUILD_ARGS: more options for the builder (e.g. --tune no-xdp-meta=1
	# to compare; GW_BUILD_ARGS="--timeout-ms 20 --window 65536 --tune frames=65536
	# --tune rx-ring=16384" for the tuning of the runs before session 17).
	if [[ $impl == drop ]]; then
		# The ceiling (seg scan): XDP_DROP on the builder's veth (attached by
		# the caller), no socket, no builder; frames counted by the veth.
		rx0=$(ip netns exec "$BNS" cat /sys/class/net/eth1/statistics/rx_packets)
	else
		# shellcheck disable=SC2086
		ip netns exec "$BNS" taskset -c 1 "$X" build --dev eth1 --sources "0-$((NSRC - 1))" "${bargs[@]}" ${GW_BUILD_ARGS:-} \
			--json --quiet --interval 0 --duration 60 >"$d/build.json" 2>"$d/build.err" &
		bpid=$!
		BG_PIDS+=("$bpid")
		wait_for "$d/build.err" 'AF_XDP socket on|on a kernel socket' "$bpid" ||
			{ echo "builder did not start: $(tail -3 "$d/build.err")" >&2; stop_bg; return 1; }
	fi
	gw_model || { echo "GW_MODEL=gateway: no napi thread on the builder's eth1" >&2; stop_bg; return 1; }
	probe_cores "$d/cpu0" "$bpid"
	# events/s per source for FPS frames/s in all: FPS x pack / sources
	rate=$(python3 -c "print('%.3f' % ($fps * $PACK / $NSRC / ${NSEG:-1}))")
	ip netns exec "$SRCNS" taskset -c 0 nice -n "$nice" "$X" source --dest "$BADDR" --dev eth1 \
		--dst-mac "$DIRECT_DST_MAC" --src-addr "$SRCADDR" --mode "$GEN" --source-ids "0-$((NSRC - 1))" \
		--pack "$PACK" --frag-size "$FRAG" --duration "$SECS" --rate "$rate" --no-end-of-run --json --quiet \
		>"$d/src.json" 2>"$d/src.err" || echo "source failed: $(tail -2 "$d/src.err")" >&2
	# how busy each core was while the generator ran (where the time went)
	probe_cores "$d/cpu1" "$bpid"
	sleep 0.3 # the rings drain
	# the builder's CPU time (user + system, clock ticks) over the whole probe
	local bticks=0
	if [[ -n $bpid ]]; then
		bticks=$(proc_ticks "$bpid")
		kill -INT "$bpid" 2>/dev/null
		wait "$bpid" 2>/dev/null
	else
		echo "{\"rx_frames\": $(($(ip netns exec "$BNS" cat /sys/class/net/eth1/statistics/rx_packets) - rx0))}" \
			>"$d/build.json"
	fi
	if [[ -n $spid ]]; then
		sleep 0.3
		kill -INT "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	BG_PIDS=()
	python3 - "$d" "$fps" "$impl" "$bticks" "$(getconf CLK_TCK)" <<'PY'
import json, sys
d, fps, impl = sys.argv[1], float(sys.argv[2]), sys.argv[3]
bcpu = float(sys.argv[4]) / float(sys.argv[5])
sys.path.insert(0, "scripts/bench")
from benchlib import summary_json as merged
s, b, k = merged(d + "/src.json"), merged(d + "/build.json"), merged(d + "/sink.json")
el = s.get("elapsed_s") or 0
tx, rx = s.get("packets", 0), b.get("rx_frames", 0)
out_drop = b.get("out_dropped_no_sink", 0) + b.get("out_dropped_error", 0) + b.get("out_dropped_backlog", 0)
r = {"target_frames_per_s": fps, "offered_frames_per_s": tx / el if el else 0,
     "frames_per_s": rx / el if el else 0, "gbps": b.get("rx_bytes", 0) * 8 / el / 1e9 if el else 0,
     "tx": tx, "rx": rx, "loss": (tx - rx) / tx if tx else 1.0,
     "ring_drops": b.get("xsk_rx_dropped", 0) + b.get("xsk_rx_ring_full", 0) + b.get("sock_kernel_drops", 0),
     "frag_drops": sum(v for kk, v in b.items() if kk.startswith("drop_") and isinstance(v, int)),
     "events_complete": b.get("events_complete"), "events_incomplete": b.get("events_incomplete"),
     "out_dropped": out_drop, "sink_events": k.get("events"), "sink_result": k.get("result"),
     "ok": bool(el) and bool(b), "builder_cpu_s": bcpu,
     "fragments_sent": s.get("fragments", 0), "segments_sent": s.get("segments", 0),
     "out_bytes": b.get("out_bytes", 0), "out_bytes_copied": b.get("out_bytes_copied"),
     "out_bytes_zerocopy": b.get("out_bytes_zerocopy"), "out_bytes_kernel_copied": b.get("out_bytes_kernel_copied"),
     "builder_cpu_ns_per_frame": round(bcpu * 1e9 / rx, 1) if rx else None}
def cores(f):
    return {l.split()[0]: [int(x) for x in l.split()[1:]] for l in open(f)}
c0, c1 = cores(d + "/cpu0"), cores(d + "/cpu1")
# the builder's CPU while the generator ran (not its start-up)
bwin = (c1["builder"][0] - c0["builder"][0]) / float(sys.argv[5]) if "builder" in c0 and "builder" in c1 else 0.0
c0 = {c: v for c, v in c0.items() if c.startswith("cpu")}
# busy share of each core while the generator ran (idle and iowait are not busy)
r["core_busy"] = {c: round(1 - sum(c1[c][i] - c0[c][i] for i in (3, 4)) / max(1, sum(c1[c]) - sum(c0[c])), 3)
                  for c in c1 if c in c0}
# Receive cost: softirq time on both cores (tick-sampled: the veth's NAPI,
# the XDP program, the copy into the UMEM or the skb's way to the socket)
# plus the receiver's own CPU time, per frame received. Other load on the
# machine adds to the softirq share only by its own network work.
r["softirq_cpu_s"] = round(sum(c1[c][6] - c0[c][6] for c in c1 if c in c0) / float(sys.argv[5]), 3)
r["builder_window_cpu_s"] = round(bwin, 3)
r["rx_cpu_ns_per_frame"] = round((r["softirq_cpu_s"] + bwin) * 1e9 / rx, 1) if rx else None
if "+fwd" in impl and (out_drop or k.get("result") not in (None, "ok")):
    r["loss"] = max(r["loss"], 1.0 if not b.get("out_events") else out_drop / max(1, b.get("out_events", 0) + out_drop))
if "+fwd" in impl:
    # Loss-free with forwarding: every event sent arrives complete at the
    # farm node (not only every frame at the builder), none incomplete.
    sent = s.get("events", 0)
    r["events_sent"], r["sink_complete"], r["sink_incomplete"] = sent, k.get("complete", 0), k.get("incomplete", 0)
    r["events_ok"] = bool(sent) and r["sink_complete"] == sent and r["sink_incomplete"] == 0
print(json.dumps(r))
PY
}

# gw_model: GW_MODEL=gateway puts all receive work on the builder's core,
# as on a gateway whose NIC interrupts that core: the builder's eth1 in
# threaded NAPI mode, its napi thread on CPU 1 at SCHED_FIFO GW_NAPI_FIFO
# (50; 0: normal), as softirq work runs before any task there (at normal
# priority the thread waits for its turn and veth's 256-slot ring drops
# frames at any rate). Call once the builder's XDP program is on (a veth
# has NAPI only then). split (default): nothing to do.
gw_model() {
	local p n=0
	[[ $MODEL == gateway ]] || return 0
	ip netns exec "$BNS" sh -c 'echo 1 > /sys/class/net/eth1/threaded' || return 1
	for p in $(ps -eo pid=,comm= | awk '$2 ~ /^napi\/eth1-/ { print $1 }'); do
		taskset -p -c 1 "$p" >/dev/null || return 1
		((NAPI_FIFO > 0)) && { chrt -f -p "$NAPI_FIFO" "$p" || return 1; }
		n=$((n + 1))
	done
	((n > 0))
}

# dfm_point FLOW MODE(xdp|socket) LABEL: the full loop, one run; appends the result.
dfm_point() {
	local flow=$1 mode=$2 label=$3 d=$W/dfm-$1-$2 bargs=() sargs=() spid bpid srcpid dpid dfm src=$DFM_SOURCE credits k
	local spids=() sinks=()
	rm -rf "$d"; mkdir -p "$d"
	# Live frames leave by XDP_TX: the switch port must take xdp_frames (the XDP switch does).
	if [[ $src == live && $SWITCH_USED != xdp ]]; then
		echo "bench-gateway: the live DFM source needs the XDP switch; the $SWITCH_USED gets the socket source" >&2
		src=sock
	fi
	[[ $src == live ]] && sargs=(--mode live)
	# What the RX ring takes (see the header), at most 512.
	credits=${GW_DFM_CREDITS:-$((4096 * PACK / NSRC < 512 ? 4096 * PACK / NSRC : 512))}
	# the shipped defaults, as in the live runs (GW_BUILD_ARGS adds options)
	bargs=()
	[[ $mode == socket ]] && bargs=(--mode socket --udp)
	# The farm nodes (GW_DFM_SINKS, 2): the builder sends each event to one of them.
	for ((k = 0; k < DFM_SINKS; k++)); do
		ip netns exec "$(tb_ns sink "$k")" taskset -c 0 "$X" sink --listen "$(tb_addr sink "$k"):5000" \
			--ctl-port 23904 --credits 4096 --json --stats-interval 0 --ready-file "$d/ready$k" \
			>"$d/sink$k.json" 2>"$d/sink$k.err" &
		spid=$!
		spids+=("sink$k:$spid")
		sinks+=(--sink "$(tb_addr sink "$k"):5000")
		BG_PIDS+=("$spid")
		wait_for "$d/ready$k" . "$spid" ||
			{ echo "sink $k did not start: $(tail -2 "$d/sink$k.err")" >&2; stop_bg; return 1; }
	done
	# shellcheck disable=SC2086
	ip netns exec "$BNS" taskset -c 1 "$X" build --dev eth0 "${bargs[@]}" ${GW_BUILD_ARGS:-} --sources "0-$((NSRC - 1))" \
		--dfm 198.18.4.1:23901 --credits "$credits" --tune reask-ms="${GW_REASK_MS:-15}" "${sinks[@]}" --exit-on-eor \
		--json --quiet --interval 0 --duration 60 >"$d/build.json" 2>"$d/build.err" &
	bpid=$!
	BG_PIDS+=("$bpid")
	# The builder registers with the DFM before its receive path is open:
	# started before that, the DFM's first blocks (its credits' worth) would
	# reach no socket and cost a re-ask.
	wait_for "$d/build.err" 'AF_XDP socket on|on a kernel socket' "$bpid" ||
		{ echo "builder did not start: $(tail -3 "$d/build.err")" >&2; stop_bg; return 1; }
	ip netns exec "$SRCNS" taskset -c 0 "$X" source --dfm 198.18.4.1:23901 --dev eth0 --udp "${sargs[@]}" \
		--source-ids "0-$((NSRC - 1))" --frag-size "$FRAG" --json --quiet --duration 60 >"$d/src.json" 2>"$d/src.err" &
	srcpid=$!
	BG_PIDS+=("$srcpid")
	ip netns exec "$(tb_ns dfm 0)" timeout 60 "$X" dfm --listen 198.18.4.1:23901 --mode push --pack "$PACK" \
		--duration "$((SECS < 2 ? 2 : SECS))" --wait-builders 1 --wait-sources 1 --json --interval 0 --drain-ms 2000 \
		>"$d/dfm.json" 2>"$d/dfm.err" &
	dpid=$!
	# Where the time goes: CPU of each process and core over 0.5 .. 1.8 s of
	# the DFM's 2 s of triggering (the loop is running; no start, no drain).
	sleep 0.5
	dfm=$(pgrep -P "$dpid" | head -1) # timeout(1)'s child
	cpu_snap "$d/cpu0" "source:$srcpid" "builder:$bpid" "${spids[@]}" "dfm:$dfm"
	sleep 1.3
	cpu_snap "$d/cpu1" "source:$srcpid" "builder:$bpid" "${spids[@]}" "dfm:$dfm"
	wait "$dpid"
	sleep 0.3
	stop_bg
	python3 - "$d" "$flow" "$mode" "$label" "$NSRC" "$PACK" "$FRAG" "$MTU" "$TOL" "$SWITCH_USED" "$(getconf CLK_TCK)" "$src" "$DFM_SINKS" \
		<<'PY' | tee -a "$W/results" | cut -c1-200
import json, sys
d, flow, mode, label, nsrc, pack, frag, mtu, tol, switch, hz, src, nsinks = sys.argv[1:]
nsrc, pack, frag, mtu, hz = int(nsrc), int(pack), int(frag), int(mtu), float(hz)
sys.path.insert(0, "scripts/bench")
from benchlib import summary_json as merged
m, b = merged(d + "/dfm.json"), merged(d + "/build.json")
sinks = [merged("%s/sink%d.json" % (d, i)) for i in range(int(nsinks))]
el = m.get("elapsed_s") or 0
def snap(f):  # name -> ticks (cpuN: busy, total; a process: user + system)
    out = {}
    for l in open(f):
        v = l.split()
        if len(v) < 2:  # a process that had exited: no ticks to read
            continue
        if v[0] == "wall":
            out["wall"] = float(v[1])
        elif v[0].startswith("cpu") and v[0] != "cpu":
            n = [int(x) for x in v[1:]]
            out[v[0]] = (sum(n) - n[3] - n[4], sum(n))
        else:
            out[v[0]] = int(v[1])
    return out
c0, c1 = snap(d + "/cpu0"), snap(d + "/cpu1")
win = c1["wall"] - c0["wall"]
busy = {c: round((c1[c][0] - c0[c][0]) / max(1, c1[c][1] - c0[c][1]), 3) for c in c1 if c.startswith("cpu") and c in c0}
# share of one core each process (and ksoftirqd/N) used over the window
cpu = {n: round((c1[n] - c0[n]) / hz / win, 3) for n in c1 if not n.startswith("cpu") and n != "wall" and n in c0}
cpu["sink"] = round(sum(v for n, v in cpu.items() if n.startswith("sink")), 3)
ev = m.get("complete", 0) / el if el else 0
fps = ev / pack * nsrc          # one MEP a source per block of pack events
frame = 14 + 20 + 8 + 16 + pack * (12 + frag)
clean = bool(el) and m.get("lost_total", 1) == 0 and m.get("incomplete", 1) == 0 and m.get("accounting_ok", False)
print(json.dumps({"kind": "search", "method": "dfm loop, as fast as credits allow", "flow": flow,
    "impl": mode + "+fwd+dfm", "label": label, "sources": nsrc, "pack": pack, "frag_size": frag, "mtu": mtu,
    "frame_bytes": frame, "loss_tolerance": float(tol),
    "lossfree_frames_per_s": round(fps) if clean else 0, "lossfree_gbps": round(fps * frame * 8 / 1e9, 3) if clean else 0,
    "lossfree_fragments_per_s": round(ev * nsrc) if clean else 0, "sender_limited": False,
    "events_per_s": round(ev, 1), "frames_per_s": round(fps), "dfm_lost": m.get("lost_total"),
    "dfm_incomplete": m.get("incomplete"), "dfm_accounting_ok": m.get("accounting_ok"),
    "farm_nodes": len(sinks), "sink_events": sum(k.get("events") or 0 for k in sinks),
    "sink_events_each": [k.get("events") for k in sinks],
    "sink_result": "ok" if all(k.get("result") == "ok" for k in sinks) else [k.get("result") for k in sinks],
    "builder_forwarded": b.get("dfm_ctl", {}).get("forwarded"),
    "unpaced_offered_frames_per_s": round(fps), "unpaced_received_frames_per_s": round(fps), "unpaced_loss": None,
    "switch": switch, "dfm_source": src, "cpu_share": cpu, "core_busy": busy, "cpu_window_s": round(win, 3),
    "source_sent_frames_per_s": round(merged(d + "/src.json").get("packets", 0) / el) if el else 0,
    "probes": [], **({} if el else {"error": open(d + "/dfm.err").read().strip()[-200:]})}))
PY
}

# bisect_rate's probe and test: IMPL from GW_IMPL; held when no more than
# TOL of the frames sent were lost.
gw_probe() { probe "$GW_IMPL" "$1" >>"$BISECT_LOG"; }
gw_passes() {
	python3 -c 'import json,sys; r = json.loads(sys.stdin.read()); sys.exit(0 if r["ok"] and r.get("events_ok", True) and r["loss"] <= float(sys.argv[1]) else 1)' "$TOL"
}

# cpu_snap FILE NAME:PID...: wall clock, /proc/stat per core, the user +
# system ticks of each process and of ksoftirqd/0 and /1.
cpu_snap() {
	local f=$1 p k
	shift
	{
		echo "wall $(date +%s.%N)"
		grep '^cpu[0-9]' /proc/stat
		for p in "$@"; do
			echo "${p%%:*} $(proc_ticks "${p#*:}")"
		done
		for k in $(pgrep -x 'ksoftirqd/[01]'); do
			echo "$(cat "/proc/$k/comm") $(proc_ticks "$k")"
		done
	} >"$f"
}

# use_switch xdp|bridge: the testbed's switch for the full loop; sets
# SWITCH_USED. A kernel that refuses the XDP switch leaves the bridge.
use_switch() {
	SWITCH_USED=bridge
	if [[ $1 == xdp ]]; then
		if tb_switch_use xdp "$ROOT/$OUT/bpf/xevb_switch.bpf.o"; then
			SWITCH_USED=xdp
		else
			echo "bench-gateway: the XDP switch did not attach (see above); the full loop runs through the bridge" >&2
		fi
	else
		tb_switch_use bridge || { echo "bench-gateway: the XDP switch did not come off" >&2; exit 1; }
	fi
}

# search FLOW IMPL LABEL: unpaced probe, then bisection; appends the result.
search() {
	local flow=$1 impl=$2 label=$3 hi mid first=$CAP
	: >"$W/probes"
	# Segments: unpaced first, as the packets per fragment (NSEG, which
	# turns a paced probe's frames/s into events/s) come from that probe.
	NSEG=1
	[[ $flow == seg ]] && first=0
	probe "$impl" "$first" >>"$W/probes" || true
	hi=$(tail -1 "$W/probes" | python3 -c 'import json,sys
try: r = json.loads(sys.stdin.read()); print(int(r["offered_frames_per_s"]) if r["loss"] > float(sys.argv[1]) or not r.get("events_ok", True) else -int(r["offered_frames_per_s"]))
except Exception: print(0)' "$TOL")
	# Packets per fragment, from what the generator sent unpaced (1 for
	# whole records, the segments of one fragment otherwise).
	NSEG=$(tail -1 "$W/probes" | python3 -c 'import json,sys
try:
    r = json.loads(sys.stdin.read()); print(max(1, round(r["tx"] * int(sys.argv[1]) / r["fragments_sent"])))
except Exception: print(1)' "$PACK")
	if [[ $flow == seg && -n ${GW_SEG_FPS:-} ]]; then
		# One paced probe at GW_SEG_FPS frames/s instead of a search: the
		# cost per frame of each receiver at the same rate (bench-seglimit.sh).
		probe "$impl" "$GW_SEG_FPS" >>"$W/probes" || true
	elif ((hi > 0)); then
		# First guess: what the builder received unpaced, then halve the interval.
		mid=$(tail -1 "$W/probes" | python3 -c 'import json,sys; print(int(json.loads(sys.stdin.read())["frames_per_s"]))')
		# Segments: the live generator offers several Mpps unpaced, 10-40x
		# what a builder takes; bisecting up to there spends the steps far
		# above the answer. Search up to GW_SEG_HI_RX (3) x what it took.
		if [[ $flow == seg ]] && ((mid > 0 && hi > mid * ${GW_SEG_HI_RX:-3})); then
			hi=$((mid * ${GW_SEG_HI_RX:-3}))
		fi
		((mid >= hi)) && mid=$((hi * 9 / 10))
		((mid < 20000)) && mid=20000
		GW_IMPL=$impl BISECT_LOG=$W/probes
		bisect_rate gw_probe gw_passes 0 "$hi" "$mid" "$STEPS"
	fi
	python3 - "$W/probes" "$flow" "$impl" "$label" "$NSRC" "$PACK" "$FRAG" "$MTU" "$TOL" <<'PY' | tee -a "$W/results" | cut -c1-200
import json, sys
pf, flow, impl, label, nsrc, pack, frag, mtu, tol = sys.argv[1:]
probes = [json.loads(l) for l in open(pf) if l.startswith("{")]
tol = float(tol)
good = [p for p in probes if p["ok"] and p.get("events_ok", True) and p["loss"] <= tol]
best = max(good, key=lambda p: p["frames_per_s"]) if good else None
frame = 14 + 20 + 16 + int(pack) * (12 + int(frag))
unpaced = probes[0] if probes else {}
r = {"kind": "search", "flow": flow, "impl": impl, "label": label, "sources": int(nsrc), "pack": int(pack),
     "frag_size": int(frag), "mtu": int(mtu), "frame_bytes": frame, "loss_tolerance": tol,
     "lossfree_frames_per_s": round(best["frames_per_s"]) if best else 0,
     "lossfree_gbps": round(best["frames_per_s"] * frame * 8 / 1e9, 3) if best else 0,
     "lossfree_fragments_per_s": (round(best["frames_per_s"] * best["fragments_sent"] / best["tx"])
         if best.get("fragments_sent") and best.get("tx") else round(best["frames_per_s"] * int(pack))) if best else 0,
     "sender_limited": bool(best is not None and best is unpaced),
     # Fragments (and their payload) built loss-free: a fragment may be several packets.
     "frames_per_fragment": round(best["tx"] / best["fragments_sent"], 3) if best and best.get("fragments_sent") else None,
     "lossfree_mb_per_s": round(best["frames_per_s"] * best["fragments_sent"] / best["tx"] * int(frag) / 1e6, 1)
         if best and best.get("fragments_sent") else 0,
     "copied_per_byte": round(best["out_bytes_copied"] / best["out_bytes"], 4)
         if best and best.get("out_bytes") and best.get("out_bytes_copied") is not None else None,
     # zerocopy: sent by reference, and of those what the kernel copied after all (veth: all)
     "zerocopy_per_byte": round(best["out_bytes_zerocopy"] / best["out_bytes"], 4)
         if best and best.get("out_bytes") and best.get("out_bytes_zerocopy") is not None else None,
     "kernel_copied_per_byte": round(best["out_bytes_kernel_copied"] / best["out_bytes"], 4)
         if best and best.get("out_bytes") and best.get("out_bytes_kernel_copied") is not None else None,
     "unpaced_offered_frames_per_s": round(unpaced.get("offered_frames_per_s", 0)),
     "unpaced_received_frames_per_s": round(unpaced.get("frames_per_s", 0)),
     "unpaced_loss": unpaced.get("loss"), "probes": probes}
if r["frames_per_fragment"] and r["frames_per_fragment"] > 1:
    # Segments: frames of several sizes; the bytes the builder received.
    r["frame_bytes"] = None
    r["lossfree_gbps"] = round(best["gbps"], 3) if best else 0
print(json.dumps(r))
PY
}

: >"$W/results"
run_flow_set() {  # FLOW MTU PACK LABEL_SUFFIX IMPLS...
	local flow=$1 suffix=$4 impl
	MTU=$2 PACK=$3
	shift 4
	for impl in "$@"; do
		echo "  $flow $impl$suffix: $NSRC sources, $PACK x $FRAG B, MTU $MTU" >&2
		search "$flow" "$impl" "$flow $impl$suffix"
	done
}
# GW_SINK_RPS=1: the farm node's receive work on CPU 0 (sink_rps, lib_bench.sh).
gw_sink_rps() {
	[[ -z ${GW_SINK_RPS:-} ]] || sink_rps "bench-gateway: GW_SINK_RPS"
}

# gw_testbed PREFIX MTU: the testbed of one MTU (a source, a builder, a
# sink, the DFM) with the direct link; sets SRCNS BNS SNS BADDR SADDR SRCADDR.
gw_testbed() {
	tb_up --prefix "$1" --sources 1 --builders 1 --sinks "$DFM_SINKS" --dfm 1 --mtu "$2" || exit 1
	SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0) SNS=$(tb_ns sink 0)
	BADDR=$(tb_addr builder 0) SADDR=$(tb_addr sink 0) SRCADDR=$(tb_addr source 0)
	direct_link "$SRCNS" "$BNS" "$2" || exit 1
	gw_sink_rps
}

# The segment scan (GW_FLOWS=seg, see the header): per MTU a testbed, per
# fragment size each implementation; its own results file.
seg_scan() {
	local mtu impl
	: >"$W/results"   # after the gateway rows were written
	for mtu in ${GW_SEG_MTUS:-1500 9000}; do
		P="xbgs$$m$mtu"
		gw_testbed "$P" "$mtu"
		MTU=$mtu PACK=1 NSRC=${GW_SEG_NSRC:-4}
		for FRAG in ${GW_SEG_SIZES:-1000 2000 4000 8000 16000 32000 64000}; do
			for impl in ${GW_SEG_IMPLS:-xdp+fwd socket+fwd}; do
				echo "  seg $impl: $NSRC sources, $FRAG B fragments, MTU $mtu" >&2
				# the socket builder needs NAPI on its veth (as above; xdp.frags:
				# a veth above a page's MTU takes no other program)
				# shellcheck disable=SC2086
				[[ $impl == socket* ]] && { { [[ $impl != socket-bare ]] && sock_builder_xdp "$X" ${GW_BUILD_ARGS:-}; } ||
					ip -n "$BNS" link set dev eth1 xdpdrv obj "$PASS" sec xdp.frags; }
				[[ $impl == drop ]] && { ip -n "$BNS" link set dev eth1 xdpdrv obj "$DROP" sec xdp.frags || exit 1; }
				search seg "$impl" "seg $impl $FRAG B MTU $mtu"
				[[ $impl == socket* || $impl == drop ]] && ip -n "$BNS" link set dev eth1 xdpdrv off 2>/dev/null
			done
		done
		bench_tb_down "$P"
	done
	bench_write segments-live "$W/results" \
		${BENCH_MERGE:+merge_key=label} seconds_per_probe="$SECS" bisection_steps="$STEPS" loss_tolerance="$TOL" \
		quick="$(quick_or true false)" \
		model='"direct veth pair, live generator (segments of at most a 3408-byte live frame) XDP_TX on CPU 0, builder on CPU 1 with the shipped defaults'"${GW_BUILD_ARGS:+ and $GW_BUILD_ARGS}"', forwarding to a farm node checking every byte on CPU 0, '"$(model_text)"'; 2 shared cores"'
	python3 - "$OUT/bench/segments-live.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-5s %7s %-11s %9s %10s %8s %s" % ("MTU", "frag B", "builder", "MB/s", "frags/s", "copied", "note"))
for r in d["results"]:
    print("%-5d %7d %-11s %9.1f %10d %8s %s" % (r["mtu"], r["frag_size"], r["impl"], r["lossfree_mb_per_s"],
          r["lossfree_fragments_per_s"], r["copied_per_byte"],
          "generator-limited (no loss unpaced)" if r["sender_limited"] else ""))
PY
}

MAIN_FLOWS=${FLOWS//seg/}
for mtu in 1500 3500; do
	[[ -z ${MAIN_FLOWS// /} ]] && break
	[[ $mtu == 3500 && " $VARIANTS " != *" mtu3500 "* ]] && continue
	P="xbgw$$m$mtu"
	gw_testbed "$P" "$mtu"
	for flow in $MAIN_FLOWS; do
		case $flow in
		l1) NSRC=126 FRAG=32 ;;
		hlt) NSRC=323 FRAG=100 ;;
		*) echo "unknown flow $flow" >&2; exit 2 ;;
		esac
		if [[ $mtu == 1500 ]]; then
			sock=() xdp=()
			for impl in $IMPLS; do [[ $impl == socket* ]] && sock+=("$impl") || xdp+=("$impl"); done
			run_flow_set "$flow" 1500 "$([[ $flow == l1 ]] && echo 25 || echo 10)" "" "${xdp[@]}"
			if ((${#sock[@]})); then
				# the socket builder needs NAPI on its veth (XDP) or XDP_TX frames
				# are dropped: one that sheds attaches its own program (pass mode)
				# shellcheck disable=SC2086
				sock_builder_xdp "$X" ${GW_BUILD_ARGS:-} || ip -n "$BNS" link set dev eth1 xdpdrv obj "$PASS" sec xdp
				run_flow_set "$flow" 1500 "$([[ $flow == l1 ]] && echo 25 || echo 10)" "" "${sock[@]}"
				ip -n "$BNS" link set dev eth1 xdpdrv off
			fi
			if [[ " $VARIANTS " == *" dfm "* ]]; then
				MTU=1500 PACK=$([[ $flow == l1 ]] && echo 25 || echo 10)
				use_switch "$SWITCH"
				for m in ${GW_DFM_BUILDERS:-xdp socket}; do
					echo "  $flow $m+fwd+dfm: $NSRC sources, DFM blocks of $PACK, farm-node credits, $SWITCH_USED switch" >&2
					dfm_point "$flow" "$m" "$flow $m+fwd+dfm"
				done
				# The other cases run on the bridge, as they always did.
				use_switch bridge
			fi
			if [[ $flow == l1 && " $VARIANTS " == *" pack32 "* ]]; then
				run_flow_set l1 1500 32 " pack 32" xdp+fwd
			fi
		else
			run_flow_set "$flow" 3500 "$([[ $flow == l1 ]] && echo 75 || echo 29)" " MTU 3500 pack $([[ $flow == l1 ]] && echo 75 || echo 29)" xdp+fwd
		fi
	done
	bench_tb_down "$P"
done
model_text() {
	if [[ $MODEL == gateway ]]; then
		echo -n "gateway model: threaded NAPI, the napi thread on CPU 1 (SCHED_FIFO $NAPI_FIFO): all receive work on the builder core; the full loop (dfm) on the testbed switch, default NAPI"
	else
		echo -n "split model: default NAPI (receive work on the sender core)"
	fi
	[[ -n ${GW_SINK_RPS:-} ]] && echo -n "; the farm node's receive work on CPU 0 (RPS on the builder's switch port)"
	[[ $GEN == xsk ]] && echo -n "; generator: AF_XDP TX (xevb source --mode xsk) held by veth's back-pressure (pfifo qdisc)"
	echo
}
if [[ -n ${MAIN_FLOWS// /} ]]; then
bench_write gateway "$W/results" ${BENCH_MERGE:+merge_key=label} seconds_per_probe="$SECS" \
	bisection_steps="$STEPS" loss_tolerance="$TOL" \
	model='"direct veth pair, generator ('"$GEN"') on CPU 0, builder on CPU 1 with the shipped defaults'"${GW_BUILD_ARGS:+ and $GW_BUILD_ARGS}"', '"$(model_text)"'; 2 shared cores"'
"$PY" scripts/bench/plots.py "$OUT/bench" gateway
python3 - "$OUT/bench/gateway.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-28s %10s %10s %12s %12s %s" % ("step", "Gb/s", "kframes/s", "unpaced kf/s", "offered kf/s", "note"))
for r in d["results"]:
    print("%-28s %10.3f %10.1f %12.1f %12.1f %s" % (r["label"], r["lossfree_gbps"], r["lossfree_frames_per_s"] / 1e3,
          r["unpaced_received_frames_per_s"] / 1e3, r["unpaced_offered_frames_per_s"] / 1e3,
          "generator-limited (no loss unpaced)" if r["sender_limited"] else ""))
PY
fi
if [[ " $FLOWS " == *" seg "* ]]; then
	seg_scan
fi

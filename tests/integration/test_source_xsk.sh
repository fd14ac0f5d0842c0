#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The AF_XDP TX generator (`xevb source --mode xsk`) into a builder whose
# veth does its receive work on the builder's core (threaded NAPI, the
# napi thread on CPU 1: a NIC's model), with a qdisc on the sender's veth.
# veth then stops the sender's queue while the builder's 256-frame ring is
# full, and the generator waits: nothing is lost on the way, whatever the
# rate. 8 sources x 25 events a MEP, 160,000 events, unpaced:
#    source: every MEP sent, none dropped by the kernel (tx_dropped 0)
#    builder XDP: MEPs seen = MEPs sent (no frame lost before XDP)
#    XDP mep = to_xsk + shed; to_xsk = rx_frames + xsk drops
#    farm node result ok, incomplete <= 1% of the events delivered,
#    farm node events = builder output
#    events sent = complete + incomplete at the farm node + shed events
#    + never delivered (>= 0, printed)
# Then a fixed count at a modest rate (--rate): every event complete at
# the farm node, nothing shed, nothing lost. Last, fragments larger than a
# packet: 4 sources, 16,000-byte fragments at MTU 9000 (two segments each,
# AF_XDP multi-buffer frames of up to 9 kB), paced: every segment reaches
# XDP, every event complete at the farm node with every byte checked.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init sx "${1:-build}" --sources 1 --builders 1 --sinks 1
SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0)
E2E_DEST=$(tb_addr builder 0)
e2e_direct_link "$SRCNS" "$BNS"
# The queue veth stops when the peer is full: without one it drops instead.
ip netns exec "$SRCNS" tc qdisc replace dev eth1 root pfifo limit 10000 || e2e_die "qdisc on the sender's veth"

# The builder's veth in threaded NAPI mode once its XDP program is on (a
# veth has NAPI only then), the napi thread on CPU 1 beside the builder.
gateway_model() {
	local p n=0
	ip netns exec "$BNS" sh -c 'echo 1 > /sys/class/net/eth1/threaded' || e2e_die "threaded NAPI on the builder's veth"
	for p in $(ps -eo pid=,comm= | awk -v d="napi/eth1-" 'index($2, d) == 1 { print $1 }'); do
		taskset -p -c 1 "$p" >/dev/null && n=$((n + 1))
	done
	((n > 0)) || e2e_die "no napi thread for the builder's eth1"
}

xsk_case() {
	local case=$1 events=$2 ids=${XSK_IDS:-0-7} pack=${XSK_PACK:-25} frag=${XSK_FRAG:-32}
	shift 2
	e2e_log "$case: sources $ids, $pack events a MEP of $frag-byte fragments, $events events, --mode xsk $*"
	# The sink stops at XSK_EXPECT events (paced cases), else once the
	# builder has ended and it has read all (e2e_wait_run).
	local stop=()
	[[ -n ${XSK_EXPECT:-} ]] && stop=(--expect-events "$XSK_EXPECT")
	e2e_sink 0 "$case.k" --expect-sources $((${ids#*-} + 1)) "${stop[@]}"
	ip netns exec "$BNS" timeout "$E2E_TMO" taskset -c 1 "$X" build --dev eth1 --json --quiet --sources "$ids" \
		--duration "$E2E_RUN" --exit-on-eor --sink "$(tb_addr sink 0):$E2E_PORT" \
		>"$E2E_WORK/$case.b.json" 2>"$E2E_WORK/$case.b.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "$case.b" 0
	e2e_wait_rx "$case.b"
	gateway_model
	ip netns exec "$SRCNS" timeout "$E2E_TMO" taskset -c 0 "$X" source --dest "$E2E_DEST" --dev eth1 \
		--dst-mac 02:18:02:01:00:01 --src-addr "$(tb_addr source 0)" --mode xsk --source-ids "$ids" \
		--pack "$pack" --frag-size "$frag" --events "$events" --json --quiet "$@" \
		>"$E2E_WORK/$case.s.json" 2>"$E2E_WORK/$case.s.err" &
	_e2e_track $! "$case.s" 0
	e2e_wait_run
	# Where a frame could go missing on the way: the sender veth's drops, and
	# frames the builder's kernel took without XDP (its IP input).
	e2e_log "$case: sender veth tx dropped $(ip netns exec "$SRCNS" cat /sys/class/net/eth1/statistics/tx_dropped)," \
		"builder veth rx dropped $(ip netns exec "$BNS" cat /sys/class/net/eth1/statistics/rx_dropped)," \
		"builder kernel's IPv4 datagrams of an unknown protocol (MEPs past XDP) $(ip netns exec "$BNS" awk '/^Ip: [0-9]/ { print $8 }' /proc/net/snmp)"
}

CHECK_COMMON='
b, k, s = J(CASE + ".b"), J(CASE + ".k"), J(CASE + ".s")
x = b["xdp"]
events = s["events"]
print("# %s: sent %d MEPs (%d events) at %.0f packets/s, %d turns waiting for room; XDP saw %d MEPs, "
      "to_xsk %d, shed %d MEPs (%d events); farm node %d events, %d incomplete"
      % (CASE, s["packets"], events, s["packets_per_s"], s["tx_waits"], x["mep"]["packets"],
         x["to_xsk"]["packets"], b["shed_meps"], b["shed_events"], k["events"], k["incomplete"]))
eq("source: mode, MEPs sent", (s["mode"], s["packets"]), ("xsk", events // 25 * 8))
eq("source: dropped by the kernel on the way out", s["tx_dropped"], 0)
eq("XDP saw every MEP sent (none lost before XDP)", x["mep"]["packets"], s["packets"])
eq("XDP mep = to_xsk + shed", x["mep"]["packets"], x["to_xsk"]["packets"] + x["shed"]["packets"])
eq("XDP malformed, unknown, no_xsk", (xdp_malformed(b), x["unknown_source"]["packets"], x["no_xsk_to_kernel"]["packets"]), (0, 0, 0))
eq("to_xsk = rx_frames + xsk rx_dropped + rx_ring_full",
   b["rx_frames"] + b["xsk_rx_dropped"] + b["xsk_rx_ring_full"], x["to_xsk"]["packets"])
eq("farm node result", k["result"], "ok")
eq("farm node errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
eq("farm node events = builder output", k["events"], b["out_events"])
never = events - k["complete"] - k["incomplete"] - b["shed_events"]
print("# %s: events never delivered (lost in a full ring, or dropped at the output): %d" % (CASE, never))
true("events sent = complete + incomplete + shed + never delivered (>= 0)", never >= 0, never)
'

xsk_case flood 160000
e2e_check flood <<PY
$CHECK_COMMON
true("events delivered > 0", k["events"] > 0, k["events"])
le("incomplete events / delivered", round(k["incomplete"] / max(k["events"], 1), 4), 0.01)
PY

XSK_EXPECT=40000 xsk_case paced 40000 --rate 20000
e2e_check paced <<PY
$CHECK_COMMON
eq("every event complete at the farm node", (k["complete"], k["incomplete"]), (events, 0))
eq("nothing shed", b["shed_events"], 0)
PY

ip -n "$SRCNS" link set eth1 mtu 9000 && ip -n "$BNS" link set eth1 mtu 9000 || e2e_die "MTU 9000 on the direct pair"
XSK_IDS=0-3 XSK_PACK=1 XSK_FRAG=16000 XSK_EXPECT=6000 xsk_case seg 6000 --rate 3000
e2e_check seg <<'PY'
b, k, s = J(CASE + ".b"), J(CASE + ".k"), J(CASE + ".s")
x = b["xdp"]
print("# %s: %d fragments in %d segments sent; XDP saw %d segments; builder: %d segments received, "
      "%d in fragments; farm node %d events, %d incomplete" % (CASE, s["segmented_fragments"], s["segments"],
      x["segment"]["packets"], b["segs_received"], b["segs_in_frags"], k["events"], k["incomplete"]))
eq("source: mode, fragments, segments (2 a fragment)", (s["mode"], s["segmented_fragments"], s["segments"]),
   ("xsk", 6000 * 4, 6000 * 4 * 2))
eq("source: dropped by the kernel on the way out", s["tx_dropped"], 0)
eq("XDP saw every segment sent", x["segment"]["packets"], s["segments"])
eq("builder: every segment received and in a fragment", (b["segs_received"], b["segs_in_frags"]),
   (s["segments"], s["segments"]))
eq("nothing shed", b["shed_events"], 0)
eq("farm node result", k["result"], "ok")
eq("farm node errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
eq("every event complete at the farm node", (k["complete"], k["incomplete"]), (6000, 0))
PY

e2e_finish

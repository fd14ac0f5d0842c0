#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Overload (issue 25): the live generator sends unpaced, far above what the
# builder (forwarding to a farm node that checks every byte) can take, for
# 3 s on a direct veth pair. With shedding (the default) the XDP program
# drops whole events, the same event id blocks from every source, so what
# reaches the farm node is complete:
#    farm node result ok (every CRC and byte checked, no duplicate)
#    incomplete events <= 1% of the events delivered
#    shed MEPs, fragments, events > 0
#    XDP mep = to_xsk + shed             (no unknown source, socket there)
#    to_xsk = rx_frames + xsk_rx_dropped + xsk_rx_ring_full
#    shed fragments = 25 x shed MEPs; shed events = the reference source's
#    shed fragments, and 8 shed MEPs per 25 shed events (sources pack alike)
# Then the same without shedding (--tune no-shed=1), for comparison only: the
# figures of both are printed (complete events, torn events, the level the
# controller reached).
# Then the socket builder (--mode socket, raw IPv4), which attaches the
# steering program in pass mode: the same controller, fed by the socket's
# buffer (SO_MEMINFO), sheds whole events in front of the kernel:
#    farm node result ok; incomplete events <= 1% of the events delivered
#    shed MEPs, fragments, events > 0
#    XDP mep = no_xsk_to_kernel + shed      (nothing to a socket, nothing malformed)
#    no_xsk_to_kernel = rx_frames + socket queue drops
#    the books: events sent = complete + incomplete at the farm node + shed
#    + never delivered (never delivered >= 0: lost before the program
#    reacted, or dropped at the output; printed)
# and, for comparison only, the socket builder with --tune no-shed=1 (an XDP_PASS
# program on its veth for NAPI, as the benchmarks do).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init os "${1:-build}" --sources 1 --builders 1 --sinks 1
SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0)
E2E_DEST=$(tb_addr builder 0)
# The direct path (as scripts/bench/bench-e2e.sh): source eth1 <-> builder
# eth1, live frames straight into the builder's veth.
e2e_direct_link "$SRCNS" "$BNS"

# As e2e_builder, but with the per-second lines (the shedding level) in NAME.err.
builder_eth1() {
	local name=$1
	shift
	ip netns exec "$BNS" timeout "$E2E_TMO" taskset -c 1 "$X" build --dev eth1 --json --interval 1 "$@" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "$name" 0
	e2e_wait_rx "$name"
}

overload_case() {
	local case=$1
	shift
	e2e_log "$case: 8 sources x 25 events a MEP, live and unpaced for 3 s ($*)"
	# The farm node and the builder run until the overload is over and the
	# builder has taken and let out all it was given.
	e2e_sink 0 "$case.k" --expect-sources 8
	builder_eth1 "$case.b" --sources 0-7 --timeout-ms 50 --window 65536 --duration "$E2E_RUN" \
		--sink "$(tb_addr sink 0):$E2E_PORT" "$@"
	ip netns exec "$SRCNS" timeout "$E2E_TMO" taskset -c 0 "$X" source --dest "$E2E_DEST" --dev eth1 \
		--dst-mac 02:18:02:01:00:01 --src-addr "$(tb_addr source 0)" --mode live --source-ids 0-7 \
		--pack 25 --frag-size 32 --duration 3 --no-end-of-run --json --quiet \
		>"$E2E_WORK/$case.s.json" 2>"$E2E_WORK/$case.s.err" &
	_e2e_track $! "$case.s" 0
	e2e_wait_exit "$(e2e_pid "$case.s")" "$E2E_TMO"
	E2E_BDEV=eth1 e2e_until "$E2E_WAIT" e2e_settled 0 || e2e_fail "$case: the builder did not settle in $E2E_WAIT s"
	e2e_stop "$case.b"
	e2e_wait_exit "$(e2e_pid "$case.b")" "$E2E_WAIT"
	e2e_stop_sinks
	e2e_wait_all
	grep -E 'shedding|ev/s' "$E2E_WORK/$case.b.err" | sed 's/^/  | /'
}

overload_case shed
e2e_check shed <<'PY'
b, k, s = J(CASE + ".b"), J(CASE + ".k"), J(CASE + ".s")
x = b["xdp"]
sent_meps = s["packets"]
print("# %s: sent %d MEPs; XDP mep %d, shed %d, to_xsk %d; builder complete %d incomplete %d; "
      "farm node events %d (incomplete %d); level now %d, lowest %d of 65536, %d cuts %d raises; "
      "xsk ring_full %d rx_dropped %d" % (CASE, sent_meps, x["mep"]["packets"], b["shed_meps"],
      x["to_xsk"]["packets"], b["events_complete"], b["events_incomplete"], k["events"], k["incomplete"],
      b["shed_accept"], b["shed_min_accept"], b["shed_cuts"], b["shed_raises"], b["xsk_rx_ring_full"],
      b["xsk_rx_dropped"]))
print("# %s: builder drops by reason: %s" % (CASE, {r: b["drop_" + r] for r in ("duplicate", "late", "overflow", "future")}))
eq("farm node result", k["result"], "ok")
eq("farm node errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
true("events delivered > 0", k["events"] > 0, k["events"])
le("incomplete events / delivered", round(k["incomplete"] / max(k["events"], 1), 4), 0.01)
true("shedding on", b["shed_on"], b["shed_on"])
true("shed MEPs, fragments, events > 0", b["shed_meps"] > 0 and b["shed_frags"] > 0 and b["shed_events"] > 0,
     (b["shed_meps"], b["shed_frags"], b["shed_events"]))
eq("XDP mep = to_xsk + shed", x["mep"]["packets"], x["to_xsk"]["packets"] + x["shed"]["packets"])
eq("XDP malformed, unknown, no_xsk", (xdp_malformed(b), x["unknown_source"]["packets"], x["no_xsk_to_kernel"]["packets"]), (0, 0, 0))
eq("to_xsk = rx_frames + xsk rx_dropped + rx_ring_full",
   b["rx_frames"] + b["xsk_rx_dropped"] + b["xsk_rx_ring_full"], x["to_xsk"]["packets"])
eq("shed frags = 25 x shed MEPs", b["shed_frags"], 25 * b["shed_meps"])
eq("shed events = reference source's shed frags", b["shed_events"], x["shed_ref_source"]["frags"])
true("8 shed MEPs per 25 shed events (a block cut by the end aside)",
     abs(b["shed_meps"] - 8 * b["shed_events"] // 25) < 8, (b["shed_meps"], b["shed_events"]))
eq("builder: opened = complete + incomplete, none open", (b["events_opened"], b["open_events"]),
   (b["events_complete"] + b["events_incomplete"], 0))
eq("builder: received = in events + drops", b["frags_received"],
   b["frags_in_events"] + sum(b[k] for k in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow", "drop_future")))
eq("farm node events = builder output", k["events"], b["out_events"])
PY

overload_case noshed --tune no-shed=1
e2e_check noshed <<'PY'
b, k = J(CASE + ".b"), J(CASE + ".k")
a = J("shed.k")
print("# comparison: complete events at the farm node: shedding %d (incomplete %d), without %d (incomplete %d); "
      "without: xsk ring_full %d rx_dropped %d" % (a["complete"], a["incomplete"], k["complete"], k["incomplete"],
      b["xsk_rx_ring_full"], b["xsk_rx_dropped"]))
print("# %s: builder drops by reason: %s" % (CASE, {r: b["drop_" + r] for r in ("duplicate", "late", "overflow", "future")}))
eq("farm node result", k["result"], "ok")
eq("nothing shed with --tune no-shed=1", (b["shed_on"], b["xdp"]["shed"]["packets"]), (False, 0))
PY

overload_case sockshed --mode socket
e2e_check sockshed <<'PY'
b, k, s = J(CASE + ".b"), J(CASE + ".k"), J(CASE + ".s")
x = b["xdp"]
never = s["events"] - k["complete"] - k["incomplete"] - b["shed_events"]
print("# %s: sent %d MEPs, %d events; XDP mep %d, shed %d, to the kernel %d; socket drops %d; builder rx %d "
      "complete %d incomplete %d; farm node complete %d incomplete %d; shed events %d, never delivered %d; "
      "level now %d, lowest %d of 65536, %d cuts %d raises" % (CASE, s["packets"], s["events"], x["mep"]["packets"],
      b["shed_meps"], x["no_xsk_to_kernel"]["packets"], b["sock_kernel_drops"], b["rx_frames"], b["events_complete"],
      b["events_incomplete"], k["complete"], k["incomplete"], b["shed_events"], never, b["shed_accept"],
      b["shed_min_accept"], b["shed_cuts"], b["shed_raises"]))
print("# %s: builder drops by reason: %s" % (CASE, {r: b["drop_" + r] for r in ("duplicate", "late", "overflow", "future")}))
eq("farm node result", k["result"], "ok")
eq("farm node errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
true("events delivered > 0", k["events"] > 0, k["events"])
le("incomplete events / delivered", round(k["incomplete"] / max(k["events"], 1), 4), 0.01)
eq("socket path, shedding on", (b["path"], b["shed_on"]), ("socket", True))
true("shed MEPs, fragments, events > 0", b["shed_meps"] > 0 and b["shed_frags"] > 0 and b["shed_events"] > 0,
     (b["shed_meps"], b["shed_frags"], b["shed_events"]))
eq("XDP mep = no_xsk_to_kernel + shed", x["mep"]["packets"], x["no_xsk_to_kernel"]["packets"] + x["shed"]["packets"])
eq("XDP malformed, unknown, to_xsk", (xdp_malformed(b), x["unknown_source"]["packets"], x["to_xsk"]["packets"]), (0, 0, 0))
eq("no_xsk_to_kernel = rx_frames + socket queue drops", x["no_xsk_to_kernel"]["packets"], b["rx_frames"] + b["sock_kernel_drops"])
eq("shed frags = 25 x shed MEPs", b["shed_frags"], 25 * b["shed_meps"])
eq("shed events = reference source's shed frags", b["shed_events"], x["shed_ref_source"]["frags"])
true("never delivered >= 0 (the books: sent = complete + incomplete + shed + never delivered)", never >= 0, never)
eq("builder: opened = complete + incomplete, none open", (b["events_opened"], b["open_events"]),
   (b["events_complete"] + b["events_incomplete"], 0))
eq("builder: received = in events + drops", b["frags_received"],
   b["frags_in_events"] + sum(b[k] for k in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow", "drop_future")))
eq("farm node events = builder output", k["events"], b["out_events"])
PY
e2e_no_xdp sockshed

# --tune no-shed=1 attaches nothing: the veth needs an XDP program for NAPI (the live frames).
ip -n "$BNS" link set dev eth1 xdpdrv obj "$(dirname "$X")/bpf/xevb_pass.bpf.o" sec xdp || e2e_die "xevb_pass on eth1"
overload_case socknoshed --mode socket --tune no-shed=1
ip -n "$BNS" link set dev eth1 xdpdrv off
e2e_check socknoshed <<'PY'
b, k = J(CASE + ".b"), J(CASE + ".k")
a = J("sockshed.k")
print("# comparison, socket builder: complete events at the farm node: shedding %d (incomplete %d), without %d "
      "(incomplete %d); without: socket queue drops %d" % (a["complete"], a["incomplete"], k["complete"],
      k["incomplete"], b["sock_kernel_drops"]))
eq("farm node result", k["result"], "ok")
eq("nothing shed, no XDP program of ours with --tune no-shed=1", (b["shed_on"], b["xdp"]["mep"]["packets"]), (False, 0))
PY
e2e_finish

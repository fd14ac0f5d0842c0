#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Segmented fragments out of the XDP builder without a user-space copy
# (issue 22): the live generator sends 16 kB fragments of 4 sources as
# wire-format 1.1 segments (~3.4 kB each, 5 a fragment) over a direct veth
# pair at MTU 9000 into an XDP builder forwarding to a farm node that
# checks every byte (CRC and content). With --tune zerocopy=1 the events leave by
# MSG_ZEROCOPY from the UMEM frames the segments arrived in:
#    out_bytes_copied = 0 (user space copied no byte)
#    out_bytes_zerocopy = out_bytes (every byte by reference)
#    out_bytes_kernel_copied <= out_bytes_zerocopy (over veth the kernel
#      copies for the local receiver; printed, counted apart)
#    segments: received = sent = in fragments; fragments whole = sent
#    every event complete at the farm node, every byte right, nothing lost
# Then the same without it, for contrast: the batched output copies
# every byte once (out_bytes_copied = out_bytes), none by reference. Its
# farm node buffer holds only four of these 64 kB events, and a farm node
# that falls behind for a few ms (a loaded machine) costs events, counted
# out_dropped_backlog by design: there every event is delivered or counted
# so, and what arrives is complete and right.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
. "$(dirname "$0")/../../scripts/bench/lib_bench.sh"   # direct_link
e2e_init sz "${1:-build}" --sources 1 --builders 1 --sinks 1 --mtu 9000
SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0)
E2E_DEST=$(tb_addr builder 0)
direct_link "$SRCNS" "$BNS" 9000 || e2e_die "direct veth pair"

EVENTS=2000
FRAG=16000

# zc_case CASE [build options]: 4 sources x EVENTS events of FRAG bytes, live, paced.
zc_case() {
	local case=$1
	shift
	e2e_log "$case: live generator, 4 sources x $EVENTS events of $FRAG bytes in segments, MTU 9000 ($*)"
	local expect=(--expect-events "$EVENTS")
	# (copy: events may be dropped, counted; the farm node is stopped once
	# the builder has ended and it has read all, e2e_wait_run)
	[[ $case == copy ]] && expect=()
	e2e_sink 0 "$case.k" "${expect[@]}" --expect-sources 4
	ip netns exec "$BNS" timeout "$E2E_TMO" "$X" build --dev eth1 --json --quiet --sources 0-3 --exit-on-eor \
		--duration "$E2E_RUN" --sink "$(tb_addr sink 0):$E2E_PORT" "$@" \
		>"$E2E_WORK/$case.b.json" 2>"$E2E_WORK/$case.b.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "$case.b" 0
	e2e_wait_rx "$case.b"
	# Paced well below what the builder takes: the test is about bytes, not rate.
	ip netns exec "$SRCNS" timeout "$E2E_TMO" "$X" source --dest "$E2E_DEST" --dev eth1 --dst-mac "$DIRECT_DST_MAC" \
		--src-addr "$(tb_addr source 0)" --mode live --source-ids 0-3 --pack 1 --frag-size "$FRAG" \
		--events "$EVENTS" --rate 1000 --json --quiet >"$E2E_WORK/$case.s.json" 2>"$E2E_WORK/$case.s.err" &
	_e2e_track $! "$case.s" 0
	e2e_wait_run
	FRAG=$FRAG EVENTS=$EVENTS e2e_check "$case" <<'PY'
b, k, s = J(CASE + ".b"), J(CASE + ".k"), J(CASE + ".s")
E, frag = int(os.environ["EVENTS"]), int(os.environ["FRAG"])
eq("source: events, fragments", (s["events"], s["fragments"]), (E, 4 * E))
true("source: fragments in several segments (%d segments)" % s["segments"], s["segments"] >= 4 * 4 * E, s["segments"])
eq("builder frames = packets sent", b["rx_frames"], s["packets"])
eq("segments: received, in fragments, pending", (b["segs_received"], b["segs_in_frags"], b["segs_pending"]),
   (s["segments"], s["segments"], 0))
eq("segmented fragments whole = fragments sent", b["seg_frags_whole"], 4 * E)
eq("events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (E, 0))
eq("output: no farm node, write errors", (b["out_dropped_no_sink"], b["out_dropped_error"]), (0, 0))
# zerocopy writes each event through (blocking): none dropped for a full buffer.
n = E if CASE == "zc" else E - b["out_dropped_backlog"]
if CASE != "zc":
    print("# %s: %d events dropped for a full farm node buffer (counted)" % (CASE, b["out_dropped_backlog"]))
eq("output: events = complete - dropped for a full buffer", b["out_events"], n)
eq("farm node: events, complete, fragments", (k["events"], k["complete"], k["fragments"]), (n, n, 4 * n))
eq("farm node: incomplete, missing, errors, duplicates, result",
   (k["incomplete"], k["missing_fragments"], k["errors"], k["duplicates"], k["result"]), (0, 0, 0, 0, "ok"))
true("output bytes hold the payload", b["out_bytes"] > 4 * n * frag, b["out_bytes"])
if CASE == "zc":
    eq("user space copied no byte (out_bytes_copied)", b["out_bytes_copied"], 0)
    eq("every byte sent by reference (out_bytes_zerocopy = out_bytes)", b["out_bytes_zerocopy"], b["out_bytes"])
    le("the kernel's own copies (out_bytes_kernel_copied) within those", b["out_bytes_kernel_copied"],
       b["out_bytes_zerocopy"])
    print("# %s: %d bytes out, user space copied 0, the kernel copied %d after all (veth: a local receiver)"
          % (CASE, b["out_bytes"], b["out_bytes_kernel_copied"]))
else:
    eq("batched output copies each byte once (out_bytes_copied = out_bytes)", b["out_bytes_copied"], b["out_bytes"])
    eq("none by reference", (b["out_bytes_zerocopy"], b["out_bytes_kernel_copied"]), (0, 0))
PY
}

zc_case zc --tune zerocopy=1
zc_case copy
e2e_finish

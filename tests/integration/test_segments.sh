#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# SEGMENT packets (wire format 1.1) end to end. XDP path: source host 0
# sends every wire-format vector that fits the MTU 10 times
# (hostile_send.py --kinds vectors, shuffled: seg_* among them), then the
# 3001-byte fragment of seg_first + seg_middle + seg_last re-labelled for
# sources 21 and 33 and events 1000..1009, last segment first, the very
# last one flagged END_OF_RUN. Once with the single-worker loop, once with
# two workers (segments handed to their event's owner, END_OF_RUN to all).
# Checked:
#  - XDP: segment = the valid segments sent, each malformed_segment_*
#    reason exactly its vectors' count, to_xsk = the builder's frames;
#  - builder: segs_received = XDP segment = in fragments + every segment
#    reason (nothing pending at the end); fragments: received = in events
#    + drops; 20 segmented fragments whole at least;
#  - the output file: events 1000..1009 complete, both 3001-byte fragments
#    with their CRC (xevb sink --input), the run ended by END_OF_RUN.
# Socket path: the same fragments (addressed to the builder): the same.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init sg "${1:-build}" --sources 1 --builders 1 --sinks 1 --queues 2
E2E_DEST=$(tb_addr builder 0)

# A plain switch: with br_netfilter the bridge would judge the vectors' IPv4 headers.
for k in iptables ip6tables arptables; do
	ip netns exec "$(tb_switch)" sysctl -qw "net.bridge.bridge-nf-call-$k=0" 2>/dev/null
done

# send_fragments: events 1000..1009 of sources 21 and 33, each the
# 3001-byte fragment of seg_first/middle/last (its event_id and source_id
# rewritten: the CRC covers the payload only), segments last first; the
# final packet flagged END_OF_RUN. Every frame re-addressed from source host
# 0 to the builder (IP checksum redone) so that a kernel socket takes it too.
send_fragments() {
	ip netns exec "$(tb_ns source 0)" timeout "$E2E_TMO" python3 - "$(tb_mac builder 0)" "$(tb_addr source 0)" \
		"$E2E_DEST" <<'PY'
import socket, struct, sys, time
dmac = bytes(int(x, 16) for x in sys.argv[1].split(":"))
src, dst = socket.inet_aton(sys.argv[2]), socket.inet_aton(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
seq = {}
def frame(name, sid, event, eor=False):
    fr = bytearray.fromhex("".join(open("tests/vectors/%s.hex" % name).read().split()))
    ip, mep = 14, 14 + 20          # raw IPv4, no options
    assert fr[ip + 9] == 253 and fr[mep:mep + 2] == b"\x4d\x45" and fr[mep + 3] == 0x04
    if eor:
        fr[mep + 3] |= 0x02        # END_OF_RUN
    seq[sid] = seq.get(sid, 0) + 1
    struct.pack_into("!HHII", fr, mep + 4, sid, 1, 1042, seq[sid])
    struct.pack_into("!I", fr, mep + 16, event)
    fr[ip + 12:ip + 16], fr[ip + 16:ip + 20], fr[ip + 10:ip + 12] = src, dst, b"\0\0"
    c = sum(struct.unpack("!10H", bytes(fr[ip:ip + 20])))
    c = (c & 0xffff) + (c >> 16)
    struct.pack_into("!H", fr, ip + 10, ~((c & 0xffff) + (c >> 16)) & 0xffff)
    return dmac + s.getsockname()[4] + bytes(fr[12:])
for e in range(1000, 1010):
    for sid in (21, 33):
        for n in ("seg_last", "seg_first", "seg_middle"):
            s.send(frame(n, sid, e, eor=e == 1009 and n == "seg_middle"))
    time.sleep(0.002)
PY
}

# check_file CASE FILE: events 1000..1009 complete with both 3001-byte fragments, CRCs checked.
check_file() {
	e2e_sink_file "$1.k" "$2" --no-content-check --expect-sources 2
	e2e_check "$1.file" <<'PY'
k = J(CASE[:-5] + ".k")
ev = [e for e in events(os.path.join(W, CASE[:-5] + ".evt")) if e["id"] >= 1000]
eq("events 1000..1009, once each", sorted(e["id"] for e in ev), list(range(1000, 1010)))
eq("all complete, sources 21 and 33", [(e["incomplete"], e["sources"]) for e in ev], [(False, [21, 33])] * 10)
eq("sink: CRC errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
PY
}

seg_case() {
	local name=$1
	shift
	e2e_builder 0 "$name.b" --sources 21,33 --run 1042 --timeout-ms 200 --exit-on-eor --duration "$E2E_RUN" \
		--output "$E2E_WORK/$name.evt" "$@"
	ip netns exec "$(tb_ns source 0)" timeout "$E2E_TMO" python3 tests/integration/hostile_send.py --dev eth0 \
		--dst-mac "$(tb_mac builder 0)" --dst-ip "$E2E_DEST" --allowed-ip 198.18.1.1 --sources 21-21 \
		--kinds vectors --reps 10 --seconds 1 --seed 3 >"$E2E_WORK/$name.h.json" 2>"$E2E_WORK/$name.h.err" ||
		{ cat "$E2E_WORK/$name.h.err"; e2e_fail "$name: vector sender failed"; }
	# Every vector taken by the builder (its published counters: frames
	# received and lost = steered) before the END_OF_RUN below ends it.
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["rx_frames"] + d["xsk_rx_dropped"] + d["xsk_rx_ring_full"] == d["xdp"]["to_xsk"]["packets"] > 0' ||
		e2e_fail "$name: the builder did not take the vectors in $E2E_WAIT s"
	send_fragments || e2e_fail "$name: fragments not sent"
	e2e_wait_all
	e2e_check "$name" <<'PY'
b = J(CASE + ".b")
h = json.load(open(os.path.join(W, CASE + ".h.json")))
x, exp = b["xdp"], h["expect"]
print("# sent: %s, skipped vectors %s" % (h["sent"], h["skipped_vectors"]))
print("# XDP: " + ", ".join("%s=%d" % (n, v["packets"]) for n, v in x.items() if v["packets"]))
print("# builder segments: " + ", ".join("%s=%d" % (n, v) for n, v in b.items() if n.startswith("seg")))
true("segments among the vectors sent", exp.get("segment", 0) >= 30, exp)
eq("XDP segment = valid segment vectors sent + 60 of the fragments", x["segment"]["packets"], exp["segment"] + 60)
for r in ("nfrags", "length", "offset", "size", "trailing"):
    n = "malformed_segment_" + r
    eq("XDP %s = its vectors sent" % n, x[n]["packets"], exp.get(n, 0))
eq("builder frames = XDP to_xsk", b["rx_frames"], x["to_xsk"]["packets"])
eq("builder segs_received = XDP segment", b["segs_received"], x["segment"]["packets"])
segs_out = b["segs_in_frags"] + sum(v for k, v in b.items() if k.startswith("segs_") and k not in
                                    ("segs_received", "segs_in_frags", "segs_pending"))
eq("segments: received = in fragments + by reason, none pending", (b["segs_received"], b["segs_pending"]),
   (segs_out, 0))
true("20 segmented fragments whole at least", b["seg_frags_whole"] >= 20, b["seg_frags_whole"])
drops = sum(v for k, v in b.items() if k.startswith("drop_"))
eq("fragments: received = in events + drops", b["frags_received"], b["frags_in_events"] + drops)
eq("the run ended on the END_OF_RUN segments", b["run_ended"], True)
PY
	check_file "$name" "$E2E_WORK/$name.evt"
}

seg_case sg1 --queues 0-1
seg_case sg2 --queues 0-1 --workers 2

e2e_builder 0 sgs.b --mode socket --sources 21,33 --run 1042 --timeout-ms 200 --exit-on-eor --duration "$E2E_RUN" \
	--output "$E2E_WORK/sgs.evt"
send_fragments || e2e_fail "socket: fragments not sent"
e2e_wait_all
e2e_check socket <<'PY'
b = J("sgs.b")
eq("builder frames, not MEP", (b["rx_frames"], b["rx_not_mep"]), (60, 0))
eq("segments: received, in fragments, pending", (b["segs_received"], b["segs_in_frags"], b["segs_pending"]),
   (60, 60, 0))
eq("fragments received = in events = 20, events complete", (b["frags_received"], b["frags_in_events"],
   b["events_complete"]), (20, 20, 10))
eq("the run ended on the END_OF_RUN segment", b["run_ended"], True)
PY
check_file sgs "$E2E_WORK/sgs.evt"
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# SEGMENT packets (wire format 1.1) before the builder reassembles them.
# XDP path: source host 0 sends every wire-format vector that fits the MTU
# 10 times (hostile_send.py --kinds vectors), then one segment flagged
# END_OF_RUN for each configured source (21, 33); once with the
# single-worker loop, once with two workers (the workers' loop, a
# segment's END_OF_RUN sent on to the other owner). Checked:
#  - XDP: segment = the valid segments sent, each malformed_segment_*
#    reason exactly its vectors' count, to_xsk = the builder's frames;
#  - builder: segs_received = segs_unsupported = segments steered to it,
#    no segment counted as a fragment (received = in events + drops);
#  - the run ends on the END_OF_RUN segments (--exit-on-eor, exit 0).
# Socket path: the three segments of seg_first/middle/last, addressed to
# the builder, 10 times, then the END_OF_RUN ones: all counted, run ended.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init sg "${1:-build}"
tb_up --sources 1 --builders 1 --sinks 1 --queues 2 || e2e_die "tb_up"
E2E_DEST=$(tb_addr builder 0)

# A plain switch: with br_netfilter the bridge would judge the vectors' IPv4 headers.
for k in iptables ip6tables arptables; do
	ip netns exec "$(tb_switch)" sysctl -qw "net.bridge.bridge-nf-call-$k=0" 2>/dev/null
done

# send_segments REPS: seg_first, seg_middle, seg_last REPS times, then
# seg_first made END_OF_RUN for sources 21 and 33 (the last packet a source
# sends may be a segment); every frame re-addressed from source host 0 to
# the builder (IP checksum redone) so that a kernel socket takes it too.
send_segments() {
	ip netns exec "$(tb_ns source 0)" timeout 10 python3 - "$(tb_mac builder 0)" "$(tb_addr source 0)" \
		"$E2E_DEST" "$1" <<'PY'
import socket, struct, sys, time
dmac = bytes(int(x, 16) for x in sys.argv[1].split(":"))
src, dst, reps = socket.inet_aton(sys.argv[2]), socket.inet_aton(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
def frame(name, eor_source=None):
    fr = bytearray.fromhex("".join(open("tests/vectors/%s.hex" % name).read().split()))
    ip, mep = 14, 14 + 20          # raw IPv4, no options
    assert fr[ip + 9] == 253 and fr[mep:mep + 2] == b"\x4d\x45" and fr[mep + 3] == 0x04
    if eor_source is not None:
        fr[mep + 3] |= 0x02        # END_OF_RUN
        struct.pack_into("!H", fr, mep + 4, eor_source)
    fr[ip + 12:ip + 16], fr[ip + 16:ip + 20], fr[ip + 10:ip + 12] = src, dst, b"\0\0"
    c = sum(struct.unpack("!10H", bytes(fr[ip:ip + 20])))
    c = (c & 0xffff) + (c >> 16)
    struct.pack_into("!H", fr, ip + 10, ~((c & 0xffff) + (c >> 16)) & 0xffff)
    return dmac + s.getsockname()[4] + bytes(fr[12:])
for _ in range(reps):
    for n in ("seg_first", "seg_middle", "seg_last"):
        s.send(frame(n))
    time.sleep(0.002)
time.sleep(0.2)
for sid in (21, 33):
    s.send(frame("seg_first", sid))
PY
}

seg_case() {
	local name=$1
	shift
	e2e_builder 0 "$name.b" --sources 21,33 --run 1042 --timeout-ms 200 --exit-on-eor --duration 20 \
		--output "$E2E_WORK/$name.evt" "$@"
	ip netns exec "$(tb_ns source 0)" timeout 30 python3 tests/integration/hostile_send.py --dev eth0 \
		--dst-mac "$(tb_mac builder 0)" --dst-ip "$E2E_DEST" --allowed-ip 198.18.1.1 --sources 21-21 \
		--kinds vectors --reps 10 --seconds 1 --seed 3 >"$E2E_WORK/$name.h.json" 2>"$E2E_WORK/$name.h.err" ||
		{ cat "$E2E_WORK/$name.h.err"; e2e_fail "$name: vector sender failed"; }
	sleep 0.3
	send_segments 10 || e2e_fail "$name: segments not sent"
	e2e_wait_all
	e2e_check "$name" <<'PY'
b = J(CASE + ".b")
h = json.load(open(os.path.join(W, CASE + ".h.json")))
x, exp = b["xdp"], h["expect"]
print("# sent: %s, skipped vectors %s" % (h["sent"], h["skipped_vectors"]))
print("# XDP: " + ", ".join("%s=%d" % (n, v["packets"]) for n, v in x.items() if v["packets"]))
true("segments among the vectors sent", exp.get("segment", 0) >= 30, exp)
eq("XDP segment = valid segments sent + 30 + 2 END_OF_RUN ones", x["segment"]["packets"], exp["segment"] + 32)
for r in ("nfrags", "length", "offset", "size", "trailing"):
    n = "malformed_segment_" + r
    eq("XDP %s = its vectors sent" % n, x[n]["packets"], exp.get(n, 0))
eq("builder frames = XDP to_xsk", b["rx_frames"], x["to_xsk"]["packets"])
eq("builder segs_received = segs_unsupported = XDP segment",
   (b["segs_received"], b["segs_unsupported"]), (x["segment"]["packets"],) * 2)
drops = sum(v for k, v in b.items() if k.startswith("drop_"))
eq("fragments: received = in events + drops (no segment among them)", b["frags_received"],
   b["frags_in_events"] + drops)
eq("the run ended on the END_OF_RUN segments", b["run_ended"], True)
PY
}

seg_case sg1 --queues 0-1
seg_case sg2 --queues 0-1 --workers 2

e2e_builder 0 sgs.b --mode socket --sources 21,33 --run 1042 --timeout-ms 200 --exit-on-eor --duration 20 \
	--output "$E2E_WORK/sgs.evt"
send_segments 10 || e2e_fail "socket: segments not sent"
e2e_wait_all
e2e_check socket <<'PY'
b = J("sgs.b")
eq("builder frames, not MEP", (b["rx_frames"], b["rx_not_mep"]), (32, 0))
eq("segs_received = segs_unsupported = 32", (b["segs_received"], b["segs_unsupported"]), (32, 32))
eq("no fragment, no event", (b["frags_received"], b["events_opened"]), (0, 0))
eq("the run ended on the END_OF_RUN segments", b["run_ended"], True)
PY
e2e_finish

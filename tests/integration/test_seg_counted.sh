#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# SEGMENT packets (wire format 1.1) through the XDP path, before the builder
# reassembles them: source host 0 sends every wire-format vector that fits
# the MTU 10 times (hostile_send.py --kinds vectors), then one segment
# flagged END_OF_RUN for each configured source (21, 33). Once with the
# single-worker loop, once with two workers (the workers' loop, a
# segment's END_OF_RUN sent on to the other owner). Checked:
#  - XDP: segment = the valid segments sent, each malformed_segment_*
#    reason exactly its vectors' count, to_xsk = the builder's frames;
#  - builder: segs_received = segs_unsupported = segments steered to it,
#    no segment counted as a fragment (received = in events + drops);
#  - the run ends on the END_OF_RUN segments (--exit-on-eor, exit 0).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init sg "${1:-build}"
tb_up --sources 1 --builders 1 --sinks 1 --queues 2 || e2e_die "tb_up"
E2E_DEST=$(tb_addr builder 0)

# A plain switch: with br_netfilter the bridge would judge the vectors' IPv4 headers.
for k in iptables ip6tables arptables; do
	ip netns exec "$(tb_switch)" sysctl -qw "net.bridge.bridge-nf-call-$k=0" 2>/dev/null
done

# seg_first made END_OF_RUN, of source $1: the last packet a source sends may be a segment.
eor_segment() {
	ip netns exec "$(tb_ns source 0)" timeout 10 python3 - "$(tb_mac builder 0)" "$1" <<'PY'
import socket, struct, sys
dmac = bytes(int(x, 16) for x in sys.argv[1].split(":"))
fr = bytearray.fromhex("".join(open("tests/vectors/seg_first.hex").read().split()))
mep = 14 + 20                      # raw IPv4, no options
assert fr[mep:mep + 2] == b"\x4d\x45" and fr[mep + 3] == 0x04
fr[mep + 3] |= 0x02                # END_OF_RUN
struct.pack_into("!H", fr, mep + 4, int(sys.argv[2]))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
s.send(dmac + s.getsockname()[4] + bytes(fr[12:]))
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
	eor_segment 21 && eor_segment 33 || e2e_fail "$name: END_OF_RUN segments not sent"
	e2e_wait_all
	e2e_check "$name" <<'PY'
b = J(CASE + ".b")
h = json.load(open(os.path.join(W, CASE + ".h.json")))
x, exp = b["xdp"], h["expect"]
print("# sent: %s, skipped vectors %s" % (h["sent"], h["skipped_vectors"]))
print("# XDP: " + ", ".join("%s=%d" % (n, v["packets"]) for n, v in x.items() if v["packets"]))
true("segments among the vectors sent", exp.get("segment", 0) >= 30, exp)
eq("XDP segment = valid segments sent + 2 END_OF_RUN ones", x["segment"]["packets"], exp["segment"] + 2)
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
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `xevb source` with fragments larger than a packet, checked on the wire
# (wire format 1.1), without a builder: a capture (seg_capture.py) in the
# builder's namespace reads every packet and checks it.
#
# Segments: 16 kB and 64 kB fragments at MTU 1500 and 9000, raw IPv4 and
# UDP, 2 source ids: every packet fits the MTU with DF set, every segment
# keeps the 1.1 rules (count, offsets i * stride, sizes, padding), and the
# segments of each fragment join to the emulator's payload with the
# fragment's CRC-32C; counts equal the source's exactly. With faults
# (--skip-segments, --duplicate, --reorder) the missing and repeated
# segments are exactly those the source reports.
# --ip-frag: one oversize MEP per fragment, DF clear; the kernel at the
# receiver reassembles each into one valid MEP (counted by /proc/net/snmp).
# Live mode (the BPF_PROG_RUN generator) at MTU 1500, over a direct veth
# pair into the builder's namespace: the same checks, every segment valid.
# Under a DFM (pull, a socket builder re-asking what it lacks, answers
# dropped on purpose): every answer, and every answer to a re-ask, is the
# whole fragment in segments, the repeated ones all flagged RESEND.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
. "$(dirname "$0")/../../scripts/bench/lib_bench.sh"   # direct_link
e2e_init g "${1:-build}" --sources 1 --builders 1 --sinks 1 --dfm 1 --mtu 9000
E2E_DEST=$(tb_addr builder 0)
CAP=$(realpath tests/integration/seg_capture.py)

# capture NAME [seg_capture options]: the capture on the builder host, in
# the background; returns once its sockets are open. Bounded by its own
# --timeout and by timeout(1).
capture() {
	local name=$1
	shift
	local ready="$E2E_WORK/$name.ready"
	ip netns exec "$(tb_ns builder 0)" timeout "$E2E_TMO" python3 "$CAP" --ready "$ready" --timeout "$E2E_RUN" "$@" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" 0
	e2e_wait_ready "$ready" "$name" "capture not ready"
}

# source_mtu MTU: the source host's link MTU (the switch and the builder stay at 9000).
source_mtu() {
	ip -n "$(tb_ns source 0)" link set eth0 mtu "$1" || e2e_die "cannot set MTU $1"
}

# case_start NAME MTU SIZE EVENTS HOW [source options]: logs the case;
# CASE_CAP: the capture's options for what the source sends (UDP to 23900).
case_start() {
	local name=$1 mtu=$2 size=$3 events=$4 how=$5
	shift 5
	CASE_CAP=()
	[[ " $* " == *" --udp "* ]] && CASE_CAP=(--udp 23900)
	e2e_log "$name: MTU $mtu, $size-byte fragments, $events events x 2 sources, $how $*"
}

# seg_case NAME MTU SIZE EVENTS [source options]: segments, no faults.
# SEG_DEV: capture there instead, and leave the source's eth0 alone (live
# mode over the direct link).
seg_case() {
	local name=$1 mtu=$2 size=$3 events=$4
	shift 4
	case_start "$name" "$mtu" "$size" "$events" "segments" "$@"
	[[ -z ${SEG_DEV:-} ]] && source_mtu "$mtu"
	capture "$name.c" --mode frames --dev "${SEG_DEV:-eth0}" --mtu "$mtu" --frag-size "$size" "${CASE_CAP[@]}"
	e2e_source 0 "$name.s" --source-ids 0-1 --pack 1 --frag-size "$size" --events "$events" \
		--rate 2000 "$@"
	e2e_wait_all
	MTU=$mtu SIZE=$size EVENTS=$events UDP=${#CASE_CAP[@]} e2e_check "$name" <<'PY'
s, c = J(CASE + ".s"), J(CASE + ".c")
mtu, size, events = (int(os.environ[k]) for k in ("MTU", "SIZE", "EVENTS"))
stride = (mtu - 20 - (8 if int(os.environ["UDP"]) else 0) - 28) & ~3
nseg = (size + stride - 1) // stride
eq("no 1.1 violation on the wire", (c["violations"], c["first_violations"]), (0, []))
eq("nothing lost to the capture", c["capture_drops"], 0)
eq("source: fragments, all as segments, all whole", (s["fragments"], s["segmented_fragments"], s["valid_fragments"],
   s["partial_fragments"]), (2 * events,) * 3 + (0,))
eq("source: segments = fragments x ceil(size / stride)", (s["segments"], s["packets"]), (2 * events * nseg,) * 2)
eq("captured: packets, segments, plain", (c["packets"], c["segment_packets"], c["plain_packets"]),
   (s["packets"], s["segments"], 0))
eq("captured: non-last segment size (stride)", c["stride"], stride if nseg > 1 else 0)
eq("captured: fragments joined whole, partial, duplicate segments",
   (c["segmented_fragments"], c["whole_fragments"], c["partial_fragments"], c["duplicate_segments"]),
   (2 * events, 2 * events, 0, 0))
le("largest packet (IP bytes) within the MTU", c["max_ip_len"], mtu)
eq("source ids", c["sources"], [0, 1])
eq("END_OF_RUN on every segment of the last event of each source", c["eor_packets"], 2 * nseg)
PY
}

seg_case seg_1500_raw_16k 1500 16000 30
seg_case seg_1500_udp_64k 1500 65535 12 --udp
seg_case seg_9000_raw_64k 9000 65535 20 --dev eth0
seg_case seg_9000_udp_16k 9000 16384 30 --udp

# Live frames reach the builder's end of the direct link only with XDP on it
# (a veth drops XDP_TX frames otherwise): xevb_pass, then the stack.
direct_link "$(tb_ns source 0)" "$(tb_ns builder 0)" 1500 || e2e_die "direct link"
ip -n "$(tb_ns builder 0)" link set dev eth1 xdpdrv obj "$(dirname "$X")/bpf/xevb_pass.bpf.o" sec xdp ||
	e2e_die "xevb_pass on the builder's eth1"
live=(--mode live --dev eth1 --dst-mac "$DIRECT_DST_MAC" --src-addr "$(tb_addr source 0)")
SEG_DEV=eth1 seg_case seg_live_1500_raw_16k 1500 16000 30 "${live[@]}"
SEG_DEV=eth1 seg_case seg_live_1500_udp_64k 1500 65535 12 "${live[@]}" --udp
ip -n "$(tb_ns builder 0)" link del eth1

# ---------------------------------------------------------------------------
e2e_log "seg_mixed: MTU 1500, fragments of 1000-20000 bytes (some whole, some segmented), IP_HDRINCL sources"
source_mtu 1500
capture sm.c --mode frames --mtu 1500
e2e_source 0 sm.s --source-ids 0-1 --pack 1 --frag-size 1000-20000 --events 60 --rate 2000 \
	--src-addr-base 198.18.1.100 --seed 3
e2e_wait_all
e2e_check seg_mixed <<'PY'
s, c = J("sm.s"), J("sm.c")
eq("no 1.1 violation on the wire", (c["violations"], c["first_violations"]), (0, []))
eq("nothing lost to the capture", c["capture_drops"], 0)
true("both kinds sent", 0 < s["segmented_fragments"] < 120, s["segmented_fragments"])
eq("source: fragments, all valid", (s["fragments"], s["valid_fragments"]), (120, 120))
eq("captured: packets = sent", c["packets"], s["packets"])
eq("captured: whole records, segments", (c["plain_fragments"], c["segment_packets"]),
   (120 - s["segmented_fragments"], s["segments"]))
eq("captured: segmented fragments, all joined whole", (c["segmented_fragments"], c["whole_fragments"]),
   (s["segmented_fragments"],) * 2)
PY

# ---------------------------------------------------------------------------
e2e_log "seg_faults: MTU 1500, 16000-byte fragments, every 7th segment of source 0 skipped, 5% duplicated, reordered"
source_mtu 1500
capture sf.c --mode frames --mtu 1500 --frag-size 16000 --faults
e2e_source 0 sf.s --source-ids 0-1 --pack 1 --frag-size 16000 --events 40 --rate 2000 \
	--skip-segments 0:7 --duplicate 0.05 --reorder --seed 5
e2e_wait_all
e2e_check seg_faults <<'PY'
s, c = J("sf.s"), J("sf.c")
eq("no 1.1 violation on the wire", (c["violations"], c["first_violations"]), (0, []))
eq("nothing lost to the capture", c["capture_drops"], 0)
eq("source: 80 fragments x 12 segments, 480 / 7 skipped", (s["segments"], s["skipped_segments"]), (960, 68))
true("duplicates and reordering happened", s["duplicate_segments"] > 0 and s["reordered_packets"] > 0,
     (s["duplicate_segments"], s["reordered_packets"]))
eq("source: segments = valid + skipped + corrupt", s["segments"],
   s["valid_segments"] + s["skipped_segments"] + s["corrupt_segments"])
eq("source: fragments = whole + partial", 80, s["valid_fragments"] + s["partial_fragments"])
eq("captured packets = sent (valid + duplicate segments)", (c["packets"], c["segment_packets"]),
   (s["packets"], s["valid_segments"] + s["duplicate_segments"]))
eq("captured: whole, partial fragments = the source's", (c["whole_fragments"], c["partial_fragments"]),
   (s["valid_fragments"], s["partial_fragments"]))
eq("captured: duplicate segments = the source's", c["duplicate_segments"], s["duplicate_segments"])
PY

# ---------------------------------------------------------------------------
# ip_case NAME MTU SIZE EVENTS [source options]: --ip-frag, reassembled datagrams.
ip_case() {
	local name=$1 mtu=$2 size=$3 events=$4
	shift 4
	case_start "$name" "$mtu" "$size" "$events" "--ip-frag" "$@"
	source_mtu "$mtu"
	capture "$name.c" --mode datagrams --frag-size "$size" "${CASE_CAP[@]}"
	e2e_source 0 "$name.s" --source-ids 0-1 --pack 1 --frag-size "$size" --events "$events" \
		--rate 1000 --ip-frag "$@"
	e2e_wait_all
	EVENTS=$events SIZE=$size e2e_check "$name" <<'PY'
s, c = J(CASE + ".s"), J(CASE + ".c")
events, size = int(os.environ["EVENTS"]), int(os.environ["SIZE"])
eq("no violation: every datagram one valid MEP", (c["violations"], c["first_violations"]), (0, []))
eq("source: packets, fragments, no segments", (s["packets"], s["fragments"], s["segments"], s["ip_frag"]),
   (2 * events, 2 * events, 0, True))
eq("received: datagrams, records, all plain", (c["packets"], c["plain_fragments"], c["segment_packets"]),
   (2 * events, 2 * events, 0))
eq("the kernel reassembled every datagram, none failed", (c["reasm_oks"], c["reasm_fails"]), (2 * events, 0))
PY
}

ip_case ipf_1500_raw_16k 1500 16000 20
ip_case ipf_9000_udp_64k 9000 65476 10 --udp

# ---------------------------------------------------------------------------
e2e_log "seg_dfm: pull mode, 16000-byte fragments at MTU 1500 over UDP, 20% of answers dropped, re-asked"
source_mtu 1500
capture sd.c --mode frames --beside-builder --mtu 1500 --frag-size 16000 --udp 23900 --faults --idle 3
dfm_sink 0 sd.k --credits 64
# The builder re-asks what it lacks (a builder that takes segments: the
# dropped answers; one that does not yet: everything).
dfm_builder 0 sd.b 1 --sources 0-1 --credits 32 --tune reask-ms=40 --tune max-reasks=2 --timeout-ms 300
dfm_source 0 sd.s --source-ids 0-1 --pack 1 --frag-size 16000 --drop-answers 0.2 --seed 7
ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --json --interval 0 --mode pull \
	--rate 200 --events 20 --pack 1 --wait-builders 1 --wait-sources 1 --drain-ms 1000 \
	>"$E2E_WORK/sd.d.json" 2>"$E2E_WORK/sd.d.err"
dfm_stop_all
e2e_wait_all
e2e_check seg_dfm <<'PY'
s, c = J("sd.s"), J("sd.c")
eq("no 1.1 violation on the wire", (c["violations"], c["first_violations"]), (0, []))
eq("nothing lost to the capture", c["capture_drops"], 0)
true("answers were dropped and re-asked", s["dropped_answers"] > 0 and s["resend_meps"] > 0,
     (s["dropped_answers"], s["resend_meps"]))
eq("source: every fragment in 12 segments", (s["segments"], s["send_errors"]), (12 * s["segmented_fragments"], 0))
eq("captured: packets, segments = the source's", (c["packets"], c["segment_packets"]), (s["packets"], s["segments"]))
eq("captured: RESEND segments = the source's RESEND MEPs", c["resend_packets"], s["resend_meps"])
eq("captured: every fragment whole, none partial", (c["whole_fragments"], c["partial_fragments"]),
   (c["segmented_fragments"], 0))
true("fragments sent again (%d)" % c["resent_fragments"], c["resent_fragments"] > 0)
eq("a fragment sent again came again whole (every segment as often)", c["unevenly_repeated_fragments"], 0)
eq("segments sent again = captured - one of each", c["duplicate_segments"],
   c["segment_packets"] - 12 * c["segmented_fragments"])
PY

# ---------------------------------------------------------------------------
e2e_log "ipf_too_big: --ip-frag refuses a fragment that no IPv4 datagram holds"
source_mtu 1500
E2E_SRC_RC=1 e2e_source 0 itb.s1 --pack 1 --frag-size 65535 --events 1 --ip-frag
E2E_SRC_RC=1 e2e_source 0 itb.s2 --pack 1 --frag-size 65477 --events 1 --ip-frag --udp
e2e_wait_all
for n in itb.s1 itb.s2; do
	if grep -q "over the 65507 of one IPv4 datagram" "$E2E_WORK/$n.err"; then
		e2e_ok "ipf_too_big: $n's error names the limit"
	else
		e2e_fail "ipf_too_big: $n: no clear error"; e2e_show "$n"
	fi
done
e2e_finish

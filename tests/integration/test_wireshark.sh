#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# scripts/wireshark/xevb.lua with tshark on a capture made on the testbed:
# tcpdump on the builder's switch port records MEPs from two sources (raw
# IP and UDP) on their way in and built events on their way to the sink,
# plus wire-format vectors replayed from a source host (three malformed,
# two valid). Checks: every MEP field decoded for every packet the sources
# sent, CRC-32C verified, the three malformed vectors flagged with the rule
# each breaks (and the XDP program agrees), the valid ones clean with the
# CRCs of tests/vectors/index.tsv, and every built event the sink counted
# decoded from the TCP stream, reassembled across segments.
set -uo pipefail
TRACE_NO_BPFTRACE=1
. "$(dirname "$0")/lib_trace.sh"
e2e_need tshark tcpdump
LUA=$(realpath scripts/wireshark/xevb.lua)
trace_init tw "${1:-build}"
CAP=$E2E_WORK/tw.pcap
# MSS-sized TCP segments on the wire, not 64 kB GSO super-packets.
tb_exec builder 0 ip link set eth0 gso_max_segs 1 || e2e_fail "gso_max_segs"

# tcpdump is ours: tracked like the other processes, stopped by pid.
ip netns exec "$(tb_switch)" timeout "$E2E_TMO" tcpdump -i "$(tb_port builder 0)" -w "$CAP" -U --immediate-mode -B 32768 -s 0 \
	'ip proto 253 or udp port 23900 or tcp port 5000' 2>"$E2E_WORK/tcpdump.err" &
TCPDUMP=$!
e2e_wait_line 'listening on' "$E2E_WORK/tcpdump.err" || e2e_die "tcpdump did not start"
# tcpdump_caught_up: tcpdump (asked with SIGUSR1) has written every packet
# the kernel gave it (captured = received by filter).
tcpdump_caught_up() {
	local p l
	p=$(pgrep -P "$TCPDUMP" -x tcpdump) || return 0
	kill -USR1 "$p"
	sleep 0.1
	# "tcpdump: N packets captured, N packets received by filter, ..."
	l=$(grep -o '[0-9]* packets captured, [0-9]* packets received by filter' "$E2E_WORK/tcpdump.err" | tail -1)
	[[ -n $l ]] && (($(awk '{ print $1 - $4 }' <<<"$l") == 0))
}

e2e_sink 0 tw.k --expect-events 1000 --expect-sources 4
e2e_builder 0 tw.b --sources 0-3 --sink "$(tb_addr sink 0):$E2E_PORT" --exit-on-eor --duration "$E2E_RUN"

# Replay: whole frames from tests/vectors, to the builder's MAC.
tb_exec source 0 python3 - "$(tb_mac builder 0)" <<'PY' || e2e_fail "vector replay"
import socket, sys
mac = bytes.fromhex(sys.argv[1].replace(":", ""))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
for n in ("bad_magic", "reserved_nonzero", "record_overrun", "raw_pack10x100", "udp_pack4x200"):
    f = bytes.fromhex("".join(open("tests/vectors/%s.hex" % n).read().split()))
    s.send(mac + f[6:])
print("replayed 5 vectors")
PY

E2E_DEST=$(tb_addr builder 0)
# One event per MEP, 0.5-1.4 kB a fragment: each built event (~4 kB) spans
# several TCP segments, so the dissector has to reassemble it.
F=(--events 1000 --pack 1 --frag-size 500-1400 --rate 2000)
e2e_source 0 tw.s0 --source-ids 0-1 "${F[@]}" --seed 7
e2e_source 1 tw.s1 --source-ids 2-3 "${F[@]}" --udp --seed 8
e2e_wait_all
e2e_until "$E2E_WAIT" tcpdump_caught_up || e2e_fail "capture: tcpdump did not catch up in $E2E_WAIT s"
kill -INT "$TCPDUMP" 2>/dev/null
wait "$TCPDUMP"
# A loaded machine may make tcpdump drop: then nothing below can be exact.
drops=$(sed -n 's/^\([0-9]*\) packets dropped by kernel/\1/p' "$E2E_WORK/tcpdump.err" | tail -1)
if [[ ${drops:-x} == 0 ]]; then
	e2e_ok "capture: $(sed -n 's/^\([0-9]*\) packets captured/\1/p' "$E2E_WORK/tcpdump.err" | tail -1) packets, none dropped"
else
	e2e_fail "capture: tcpdump dropped ${drops:-?} packets"; cat "$E2E_WORK/tcpdump.err"
fi

# Out-of-order segments reassembled too: on a loaded host the capture point
# sees the builder's TCP segments out of order now and then (and their
# retransmissions), and without it tshark loses the events they carry.
tsh() {
	tshark -X lua_script:"$LUA" -r "$CAP" -o tcp.desegment_tcp_streams:TRUE -o tcp.reassemble_out_of_order:TRUE "$@" \
		2>"$E2E_WORK/tshark.err"
}
tsh -Y xevb_mep -T fields -E separator=/t -E occurrence=a -E aggregator=, \
	-e frame.number -e ip.proto -e udp.dstport -e xevb_mep.magic -e xevb_mep.version -e xevb_mep.flags \
	-e xevb_mep.flags.resend -e xevb_mep.flags.end_of_run -e xevb_mep.source_id -e xevb_mep.n_frags \
	-e xevb_mep.run_number -e xevb_mep.packet_seq -e xevb_mep.frag.event_id -e xevb_mep.frag.length \
	-e xevb_mep.frag.reserved -e xevb_mep.frag.crc32c -e xevb_mep.frag.crc32c_ok -e xevb_mep.frag.payload \
	-e xevb_mep.frags_decoded -e _ws.expert.message >"$E2E_WORK/mep.tsv"
tsh -Y xevb_evt -T fields -E separator=/t -E occurrence=a -E aggregator=, \
	-e frame.number -e xevb_evt.magic -e xevb_evt.version -e xevb_evt.flags -e xevb_evt.n_frags \
	-e xevb_evt.run_number -e xevb_evt.event_id -e xevb_evt.total_length -e xevb_evt.n_expected \
	-e xevb_evt.reserved -e xevb_evt.build_ns -e xevb_evt.frag.source_id -e xevb_evt.frag.length \
	-e xevb_evt.frag.crc32c -e xevb_evt.frag.crc32c_ok -e _ws.expert.message >"$E2E_WORK/evt.tsv"
tsh -Y 'xevb_evt && tcp.segment.count > 1' -T fields -e frame.number >"$E2E_WORK/reasm.txt"
tsh -Y xevb_mep | head -3; tsh -Y xevb_evt | head -3
[[ -s $E2E_WORK/tshark.err ]] && grep -v 'Running as user' "$E2E_WORK/tshark.err" | head -5

e2e_check wireshark <<'PY'
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(W, "mep.tsv"))]
H = ["frame", "proto", "udp", "magic", "version", "flags", "resend", "eor", "sid", "nf", "run", "seq",
     "eids", "lens", "rsv", "crcs", "crc_ok", "payload", "decoded", "expert"]
meps = [dict(zip(H, r + [""] * (len(H) - len(r)))) for r in rows]
src = [m for m in meps if m["run"] == "1"]
vec = [m for m in meps if m["run"] == "1042"]
s0, s1, b = J("tw.s0"), J("tw.s1"), J("tw.b")
eq("MEPs of the sources decoded = packets sent", len(src), s0["packets"] + s1["packets"])
eq("UDP MEPs = packets of the UDP source", sum(1 for m in src if m["udp"] == "23900"), s1["packets"])
lst = lambda v: [x for x in v.split(",") if x != ""]
eq("fragment records decoded = fragments sent", sum(len(lst(m["eids"])) for m in src), s0["fragments"] + s1["fragments"])
true("every header field decoded in every MEP",
     all(m[k] != "" for m in src for k in ("magic", "version", "flags", "resend", "eor", "sid", "nf", "run", "seq")),
     [m for m in src if any(m[k] == "" for k in ("magic", "sid", "seq"))][:2])
true("every record decoded whole (event_id, length, reserved, crc, payload)",
     all(len(lst(m[k])) == int(m["nf"]) == int(m["decoded"]) for m in src for k in ("eids", "lens", "rsv", "crcs", "crc_ok")), "")
eq("every CRC-32C verified correct", {x for m in src for x in lst(m["crc_ok"])}, {"1"} if any(src) and "1" in src[0]["crc_ok"] else {"True"})
eq("no expert info on the sources' MEPs", [m["expert"] for m in src if m["expert"]], [])
eq("magic, version of every MEP", {(m["magic"], m["version"]) for m in src}, {("0x4d45", "1")})
eq("source ids seen", sorted({int(m["sid"]) for m in src}), [0, 1, 2, 3])
for sid in range(4):
    seqs = sorted(int(m["seq"]) for m in src if int(m["sid"]) == sid)
    eq("source %d packet_seq contiguous" % sid, seqs, list(range(seqs[0], seqs[0] + len(seqs))) if seqs else [0])
eq("END_OF_RUN flagged on each source's last packet", sum(1 for m in src if m["eor"] in ("1", "True")), 4)
# The replayed vectors, in the order sent.
eq("replayed vectors captured", len(vec), 5)
if len(vec) == 5:
    for m, rule in zip(vec[:3], ("magic 0x4d46", "reserved field 1", "runs 8 bytes past the packet")):
        true("malformed vector flagged: %s" % rule, rule in m["expert"], m["expert"])
    for m in vec[3:]:
        eq("valid vector (source %s) not flagged" % m["sid"], m["expert"], "")
    idx = {l.split("\t")[0]: l.split("\t")[2] for l in open("tests/vectors/index.tsv") if not l.startswith("#")}
    want = [int(f.split(":")[3], 16) for f in idx["raw_pack10x100"].split(",")]
    eq("raw_pack10x100 CRCs = index.tsv", [int(c, 16) for c in lst(vec[3]["crcs"])], want)
    true("raw_pack10x100 CRCs verified", set(lst(vec[3]["crc_ok"])) <= {"1", "True"}, vec[3]["crc_ok"])
x = b["xdp"]
eq("the XDP program also rejected 3 malformed (bad_magic, reserved, rec_overrun)",
   (x["malformed_bad_magic"]["packets"], x["malformed_reserved"]["packets"], x["malformed_rec_overrun"]["packets"]), (1, 1, 1))

E = ["frame", "magic", "version", "flags", "nf", "run", "eid", "tl", "nexp", "rsv", "bns", "sids", "lens", "crcs", "crc_ok", "expert"]
ev = [dict(zip(E, l.rstrip("\n").split("\t") + [""] * len(E))) for l in open(os.path.join(W, "evt.tsv"))]
ids = [int(e) for r in ev for e in lst(r["eid"])]
k = J("tw.k")
eq("built events decoded = events the sink received", len(ids), k["events"])
eq("event ids decoded", sorted(ids), list(range(1000)))
true("every event header field decoded",
     all(len(lst(r[f])) == len(lst(r["eid"])) for r in ev for f in ("magic", "version", "flags", "nf", "run", "tl", "nexp", "rsv", "bns")), "")
eq("fragments in the decoded events", sum(len(lst(r["sids"])) for r in ev), k["fragments"])
true("every fragment of every event decoded (source, length, crc)",
     all(len(lst(r[f])) == len(lst(r["sids"])) for r in ev for f in ("lens", "crcs", "crc_ok")), "")
true("every event CRC verified correct", {x for r in ev for x in lst(r["crc_ok"])} <= {"1", "True"}, "")
eq("no malformed built event", [r["expert"] for r in ev if "MALFORMED" in r["expert"].upper() or "mismatch" in r["expert"]], [])
reasm = open(os.path.join(W, "reasm.txt")).read().split()
true("events reassembled across TCP segments (%d frames complete a multi-segment PDU)" % len(reasm), len(reasm) > 0, "")
PY
e2e_finish

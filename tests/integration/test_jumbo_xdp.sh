#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Jumbo MEPs through the XDP fast path on a 9000-byte MTU testbed: the XDP
# program validates MEPs whose records run into multi-buffer frags, the
# AF_XDP socket (XDP_USE_SG) takes frames spanning several descriptors, and
# every event is built complete, with exact accounting from the sources'
# packets through XDP's counters, the socket and the builder to the sink.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init jb "${1:-build}" --sources 2 --builders 1 --sinks 1 --mtu 9000

# Paced, so that a loaded machine's builder keeps up with the 4096-entry RX
# ring (a 9 kB frame takes 3 of its descriptors); XDP and the socket count
# any overflow, and the test wants none.
JUMBO_RATE=${JUMBO_RATE:-4000}

# jumbo_case CASE PROTO EVENTS "SRC0 OPTS" "SRC1 OPTS" [BUILD OPTS...]: two
# source hosts, two source ids each, one builder in XDP mode, one sink.
jumbo_case() {
	local case=$1 proto=$2 ne=$3 o0=$4 o1=$5 h sopts=()
	shift 5
	e2e_log "$case: $proto, 2 hosts x 2 ids, $ne events; host 0: $o0; host 1: $o1"
	[[ $proto == udp ]] && sopts+=(--udp 23900)
	e2e_sink 0 "$case.k" --expect-events "$ne" --expect-sources 4
	e2e_builder 0 "$case.b" --sources 0-3 --sink "$(tb_addr sink 0):$E2E_PORT" --exit-on-eor --duration "$E2E_RUN" "$@"
	e2e_xdp_attached builder 0 || e2e_fail "$case: no XDP program on the builder's eth0"
	E2E_DEST=$(tb_addr builder 0)
	for h in 0 1; do
		local o=$o0
		((h)) && o=$o1
		# shellcheck disable=SC2086
		e2e_source "$h" "$case.s$h" --source-ids "$((h * 2))-$((h * 2 + 1))" --events "$ne" \
			--seed $((h + 7)) --rate "$JUMBO_RATE" "${sopts[@]}" $o
	done
	e2e_wait_all
	# The builder's own line on what arrived in several descriptors.
	grep -o 'queue 0: [0-9]* jumbo frames gathered from [0-9]* descriptors, [0-9]* waits' \
		"$E2E_WORK/$case.b.err" | head -1 >"$E2E_WORK/$case.sg"
	grep 'MSG_ZEROCOPY:' "$E2E_WORK/$case.b.err" >"$E2E_WORK/$case.zc"
	e2e_check "$case" <<'PY'
import re
j, k = J(CASE + ".b"), J(CASE + ".k")
s = [J(CASE + ".s0"), J(CASE + ".s1")]
sent = sum(x["fragments"] for x in s)
pk = sum(x["packets"] for x in s)
E = s[0]["events"]
for n, x in enumerate(s):
    eq("source %d: events, fragments sent" % n, (x["events"], x["fragments"]), (E, E * x["sources"]))
built_every_fragment(j, pk, sent, E)
x = j["xdp"]
eq("XDP mep packets = to_xsk packets = sent", (x["mep"]["packets"], x["to_xsk"]["packets"]), (pk, pk))
eq("XDP to_xsk frags = frags_received", x["to_xsk"]["frags"], j["frags_received"])
eq("XDP malformed, multibuf_to_kernel, no_xsk", (xdp_malformed(j), x["multibuf_to_kernel"]["packets"],
   x["no_xsk_to_kernel"]["packets"]), (0, 0, 0))
eq("xsk rx_dropped, rx_ring_full", (j["xsk_rx_dropped"], j["xsk_rx_ring_full"]), (0, 0))
eq("out_events = events complete", j["out_events"], j["events_complete"])
eq("sink events, complete", (k["events"], k["complete"]), (j["out_events"], j["out_events"]))
eq("sink incomplete, missing, errors, duplicates",
   (k["incomplete"], k["missing_fragments"], k["errors"], k["duplicates"]), (0, 0, 0, 0))
eq("sink fragments = fragments sent", k["fragments"], sent)
eq("sink result", k["result"], "ok")
# Frames above one chunk did arrive in several descriptors (XDP_USE_SG).
line = open(os.path.join(W, CASE + ".sg")).read()
m = re.search(r"(\d+) jumbo frames gathered from (\d+) descriptors", line)
true("builder reports frames gathered from several descriptors", m, repr(line))
if m:
    big = int(m.group(1))
    true("jumbo frames: %d of %d packets, each in >= 2 descriptors" % (big, pk),
         big > 0 and int(m.group(2)) >= 2 * big, line)
    # Host 0 sends only jumbo MEPs (its end-of-run block too).
    true("every packet of host 0 came in several descriptors", big >= s[0]["packets"],
         "%d < %d" % (big, s[0]["packets"]))
zc = open(os.path.join(W, CASE + ".zc")).read()
if CASE == "jzc":
    # Every event left through MSG_ZEROCOPY; every send completed before the
    # frames went back; the payloads the sink checked (CRC, content) came
    # from frames that were held, not reused, while the kernel read them.
    m = re.search(r"(\d+) sends, (\d+) completed \((\d+) of them copied.*?(\d+) events sent copied, "
                  r"(\d+) waits, (\d+) frame releases deferred", zc)
    true("builder reports its MSG_ZEROCOPY sends", m, repr(zc))
    if m:
        sends, completed, copied, fb, waits, held = map(int, m.groups())
        true("zerocopy sends >= events forwarded", sends >= j["out_events"] and sends > 0, zc)
        eq("zerocopy completions = sends", completed, sends)
        eq("events sent copied instead", fb, 0)
        true("frame releases were deferred", held > 0, zc)
        print("# %s: %d zerocopy sends, %d reported copied by the kernel (veth: a local receiver)" % (CASE, sends, copied))
else:
    eq("no MSG_ZEROCOPY without --tune zerocopy=1", zc, "")
avg = s[0]["bytes"] / max(s[0]["packets"], 1)
true("host 0's packets average %.0f bytes (> 3.8 kB: more than one chunk)" % avg, avg > 3840, avg)
PY
}

# One ~9 kB fragment per MEP: a 9000-byte IP datagram, three 4 kB chunks.
jumbo_case jraw raw 1500 "--pack 1 --frag-size 8900-8950" "--pack 1 --frag-size 8900-8950"
# Eight ~1 kB fragments per MEP over UDP: records straddle the linear part.
jumbo_case judp udp 2000 "--pack 8 --frag-size 1000-1090" "--pack 8 --frag-size 1000-1090"
# Jumbo and small MEPs interleaved: one and several descriptors in one ring.
jumbo_case jmix raw 3000 "--pack 6 --frag-size 1200-1400" "--pack 10 --frag-size 32-120"
# The same through MSG_ZEROCOPY forwarding (build --tune zerocopy=1).
jumbo_case jzc raw 2000 "--pack 8 --frag-size 1000-1090" "--pack 4 --frag-size 32-2000" --tune zerocopy=1
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Hardening (issue 9): hostile traffic while good traffic runs. Source host
# 0 (198.18.1.1, the only allowed address) sends 20000 good events of
# source ids 0-3; meanwhile source host 1 (hostile_send.py) sends every
# wire-format vector that fits the MTU 20 times, 1200 spoofed-address MEPs,
# 1200 far-future event_ids from unknown source_ids (from the allowed
# address), 2000 randomly mutated MEPs and 50 IPv4-fragmented 6000-byte
# UDP datagrams. The builder runs with --xdp-filter --allow-src 198.18.1.1
# --run 1. Checked:
#  - every good event is built complete, every CRC and payload checked by
#    `xevb sink --input`;
#  - every XDP verdict of a deterministic kind has exactly the count sent
#    (per malformed reason, unknown_source, ip_fragment, other), and every
#    frame of either host is counted by XDP exactly once;
#  - what reached the builder is all accounted (received = in events +
#    drops), open events and RSS stay bounded.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init hh "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
GOOD=$(tb_addr source 0)

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# The switch must be a plain switch: with br_netfilter (on by default
# here) the bridge validates IPv4 headers and reassembles fragments, so some
# hostile frames would never reach the builder.
for k in iptables ip6tables arptables; do
	ip netns exec "$(tb_switch)" sysctl -qw "net.bridge.bridge-nf-call-$k=0" 2>/dev/null
done

# The steering program's counters, by slot name, summed over CPUs.
xdp_counters() {
	local prog m
	prog=$(tb_exec builder 0 ip -d link show eth0 | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	for m in $(bpftool -j prog show id "$prog" | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["map_ids"])))'); do
		bpftool -j map show id "$m" | grep -q '"name":"counters"' || continue
		bpftool -j map dump id "$m" | python3 -c '
import json, sys
names = ["other", "mep", "ip_fragment", "multibuf_to_kernel", "segment", "malformed_trunc_ip", "malformed_bad_ihl",
         "malformed_ip_len", "malformed_udp_trunc", "malformed_udp_len", "malformed_short_mep",
         "malformed_bad_magic", "malformed_bad_version", "malformed_bad_flags", "malformed_bad_source",
         "malformed_bad_nfrags", "malformed_frags_missing", "malformed_rec_overrun", "malformed_reserved",
         "malformed_event_order", "malformed_trailing", "malformed_segment_nfrags", "malformed_segment_length",
         "malformed_segment_offset", "malformed_segment_size", "malformed_segment_trailing",
         "to_xsk", "no_xsk_to_kernel", "unknown_source",
         "meta_failed", "shed", "shed_ref_source", "src_addr_mismatch", "src_mac_mismatch", "src_vlan_mismatch"]
out = {}
for e in json.load(sys.stdin):
    f = e["formatted"]
    out[names[f["key"]]] = sum(v["value"]["packets"] for v in f["values"])
json.dump(out, sys.stdout)'
		return
	done
}

# Frames the switch put on the builder's link: what its XDP program sees.
port_tx() { ip netns exec "$(tb_switch)" cat "/sys/class/net/$(tb_port builder 0)/statistics/$1"; }
# link_quiet: nothing more went out toward the builder in 0.2 s (what was
# sent has passed the switch and reached the builder's XDP program).
link_quiet() {
	local a
	a=$(port_tx tx_packets)
	sleep 0.2
	[[ $(port_tx tx_packets) == "$a" ]]
}
# p1_counted: every phase 1 frame of a deterministic verdict is counted by XDP.
p1_counted() {
	xdp_counters >"$E2E_WORK/hh.c_p1"
	python3 - "$E2E_WORK" <<'PY'
import json, os, sys
W = sys.argv[1]
c0, c1 = (json.load(open(os.path.join(W, n))) for n in ("hh.c0", "hh.c_p1"))
exp = json.load(open(os.path.join(W, "hh.p1.json")))["expect"]
sys.exit(0 if all(c1.get(n, 0) - c0.get(n, 0) >= v for n, v in exp.items() if n not in ("mep", "to_xsk", "other")) else 1)
PY
}

H=(python3 tests/integration/hostile_send.py --dev eth0 --dst-mac "$(tb_mac builder 0)" --dst-ip "$E2E_DEST"
	--allowed-ip "$GOOD" --seconds 2)
e2e_log "hostile: 20000 good events; phase 1: vectors, spoofed, far-future, fragmented; phase 2: mutated"
e2e_builder 0 hh.b --sources 0-3 --xdp-filter --allow-src "$GOOD" --run 1 --timeout-ms 300 \
	--duration "$E2E_RUN" --output "$E2E_WORK/hh.evt"
bpid=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "no xevb build process"
rss0=$(rss_kb "$bpid")
rssmax=$rss0
xdp_counters >"$E2E_WORK/hh.c0"
tx0=$(port_tx tx_packets)
e2e_source 0 hh.good --source-ids 0-3 --events 20000 --pack 10 --frag-size 40-120 --rate 6000 --seed 5
gpid=$E2E_LAST_PID
phase() {
	local name=$1 hpid r
	shift
	ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" "${H[@]}" "$@" >"$E2E_WORK/hh.$name.json" 2>"$E2E_WORK/hh.$name.err" &
	hpid=$!
	while kill -0 "$hpid" 2>/dev/null; do
		r=$(rss_kb "$bpid")
		[[ -n $r ]] && ((r > rssmax)) && rssmax=$r
		sleep 0.1
	done
	wait "$hpid" || { cat "$E2E_WORK/hh.$name.err"; e2e_fail "hostile sender ($name) failed"; }
	# The last frames through the switch (phase 1: each one counted).
	if [[ $name == p1 ]]; then
		e2e_until "$E2E_WAIT" p1_counted || e2e_fail "phase 1: XDP did not count every frame sent in $E2E_WAIT s"
	else
		e2e_until "$E2E_WAIT" link_quiet
	fi
	xdp_counters >"$E2E_WORK/hh.c_$name"
}
phase p1 --kinds vectors,spoofed,future,fragments --seed 9
phase p2 --kinds mutated --seed 10
e2e_wait_exit "$gpid" "$E2E_TMO"
r=$(rss_kb "$bpid")
[[ -n $r ]] && ((r > rssmax)) && rssmax=$r
echo "$rss0 $rssmax" >"$E2E_WORK/hh.rss"
e2e_until "$E2E_WAIT" link_quiet   # the good source's last frames through the switch
echo "$(($(port_tx tx_packets) - tx0)) $(port_tx tx_dropped)" >"$E2E_WORK/hh.wire"
kill -INT "$bpid"
e2e_wait_all
e2e_sink_file hh.k "$E2E_WORK/hh.evt" --expect-sources 4
e2e_check hostile <<'PY'
b, g, k = J("hh.b"), J("hh.good"), J("hh.k")
L = lambda n: json.load(open(os.path.join(W, n)))
h1, h2 = L("hh.p1.json"), L("hh.p2.json")
c0, c1, c2 = L("hh.c0"), L("hh.c_p1"), L("hh.c_p2")
x = b["xdp"]
rss0, rssmax = map(int, open(os.path.join(W, "hh.rss")).read().split())
print("# phase 1 sent: %s (%d frames), skipped vectors %s" % (h1["sent"], h1["frames"], h1["skipped_vectors"]))
print("# phase 2 sent: %s" % h2["sent"])
print("# XDP at the end: " + ", ".join("%s=%d" % (n, v["packets"]) for n, v in x.items() if v["packets"]))
print("# RSS %d kB at start, %d kB max" % (rss0, rssmax))
bad = h1["frames"] + h2["frames"]
open(os.path.join(W, "hh.summary"), "w").write("%d %d %d\n" % (h1["frames"], h2["frames"], rssmax - rss0))
true("bad frames sent >= 5000", bad >= 5000, bad)
# good traffic
eq("good: fragments in events = sent", b["frags_in_events"], g["fragments"])
eq("good: events complete, incomplete, discarded", (b["events_complete"], b["events_incomplete"], b["events_discarded"]), (20000, 0, 0))
eq("run ended by END_OF_RUN", b["run_ended"], True)
ev = events(os.path.join(W, "hh.evt"))
ids = sorted(e["id"] for e in ev)
eq("file: 20000 events, ids 0..19999 once each, none incomplete", (len(ids), ids == list(range(20000)), sum(e["incomplete"] for e in ev)), (20000, True, 0))
eq("sink: events, complete, errors, duplicates", (k["events"], k["complete"], k["errors"], k["duplicates"]), (20000, 20000, 0, 0))
# phase 1: every deterministic verdict exact (good traffic only adds mep/to_xsk)
d1 = {n: c1[n] - c0[n] for n in c1}
exp = h1["expect"]
for n in sorted(set(d1) | set(exp)):
    if n in ("mep", "to_xsk"):
        continue
    if n == "other":
        # Hosts' own ARP / IPv6 ND frames are non-DAQ too: a few may join ours.
        true("phase 1: XDP other = %d sent (+ at most 4 stray ARP/ND)" % exp.get(n, 0),
             0 <= d1[n] - exp.get(n, 0) <= 4, d1[n])
        continue
    eq("phase 1: XDP %s" % n, d1[n], exp.get(n, 0))
# both phases: every frame counted once
verdicts = [n for n in x if n not in ("to_xsk", "no_xsk_to_kernel", "unknown_source", "meta_failed", "shed", "shed_ref_source",
                                     "src_addr_mismatch", "src_mac_mismatch", "src_vlan_mismatch")]
wire, wdrop = map(int, open(os.path.join(W, "hh.wire")).read().split())
eq("switch port drops toward the builder", wdrop, 0)
# The port count is read just before the XDP counters: a stray ARP or IPv6
# ND frame in between is counted by XDP (as other) but not by the port.
excess = sum(x[n]["packets"] for n in verdicts) - wire
true("every frame on the builder's link counted once by XDP (at most 4 stray non-DAQ frames after the port count)",
     0 <= excess <= min(4, x["other"]["packets"]), excess)
chatter = wire - (g["packets"] + h1["frames"] + h2["frames"])
print("# frames on the link beyond what was sent (hosts answering the builder's replies to mutated frames): %d" % chatter)
true("the link carried every frame sent (plus a little chatter, < 1%)", 0 <= chatter < (h2["frames"] // 100), chatter)
d2 = {n: c2[n] - c1[n] for n in c2}
eq("mep + segment = to_xsk + unknown_source, no socket missing",
   (x["mep"]["packets"] + x["segment"]["packets"], x["no_xsk_to_kernel"]["packets"]),
   (x["to_xsk"]["packets"] + x["unknown_source"]["packets"], 0))
through = x["to_xsk"]["packets"] - g["packets"]
true("hostile MEPs let through by the filters = 60 vectors + some mutated (wrong run), <= 60 + 2000",
     exp.get("to_xsk", 0) <= through <= exp.get("to_xsk", 0) + h2["sent"]["mutated"], through)
eq("builder frames = to_xsk (nothing lost at the socket)", (b["rx_frames"], b["xsk_rx_dropped"], b["xsk_rx_ring_full"]), (x["to_xsk"]["packets"], 0, 0))
drops = {kk: b[kk] for kk in b if kk.startswith("drop_")}
print("# builder drops: %s" % drops)
eq("builder: received = in events + drops", b["frags_received"], b["frags_in_events"] + sum(drops.values()))
eq("builder: every hostile fragment that got through is a wrong_run drop", (b["frags_received"] - g["fragments"], sum(drops.values())),
   (drops["drop_wrong_run"],) * 2)
eq("open events at the end", b["open_events"], 0)
le("RSS growth during the attack (kB)", rssmax - rss0, 16384)
PY
e2e_finish

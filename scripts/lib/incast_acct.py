#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Accounting of one incast point (scripts/lib/incast.sh): every fragment the
# sources sent is either in an event at the builder or counted at exactly one
# place on the way. Prints one JSON line.
#
# The chain (packets; one fragment a packet):
#   sent (sources' JSON)          = src_tx + shaper_drops
#   src_tx (source eth0 tx)       = port_rx + src_tx_dropped          (veth -> switch backlog)
#   port_rx (switch ports' rx)    = bport_tx + bport_tx_dropped + tbf_drops - non_daq
#                                   (the bridge; the port's tbf; veth -> the builder's XDP ring)
#   bport_tx                      = beth0_rx
#   beth0_rx                      = xdp_mep + non_daq (frames the switch itself sent)
#                                   (beth0's rx_dropped counts what XDP did not deliver, e.g.
#                                   a redirect into a full AF_XDP ring: the same frames as
#                                   xsk_rx_dropped, so it is reported, not added)
#   xdp_mep                       = to_xsk + no_xsk_to_kernel + xdp_unknown_source
#   to_xsk                        = builder rx_frames + xsk_rx_dropped
#   frags_received                = frags_in_events + builder drops
# unaccounted = sent - frags_in_events - (every drop above): must be 0.
#
# usage: incast_acct.py DIR NSRC EVENTS LOAD MODE FRAME SHARE_BPS T0
import json
import sys

d, n, events, load, mode, frame, share, t0 = sys.argv[1:9]
n, events, frame = int(n), int(events), int(frame)


def sections(fn):
    out, cur, buf = {}, None, []
    for line in open(fn):
        if line.startswith("== "):
            if cur:
                out[cur] = json.loads("".join(buf))[0]["stats64"]
            cur, buf = line[3:].strip(), []
        else:
            buf.append(line)
    if cur:
        out[cur] = json.loads("".join(buf))[0]["stats64"]
    return out


a, b = sections(d + "/snap0"), sections(d + "/snap1")


def delta(dev, way, field):
    return b[dev][way][field] - a[dev][way][field]


def load_json(fn):
    try:
        txt = open(fn).read().strip()
        # The builder's JSON summary is the last line of its stdout.
        return json.loads(txt.splitlines()[-1]) if txt else {}
    except (OSError, ValueError):
        return {}


src = [load_json("%s/s%d.json" % (d, i)) for i in range(n)]
lst = [load_json("%s/l%d.json" % (d, i)) for i in range(n)]
bj = load_json(d + "/b.json")
port = [q for q in json.load(open(d + "/port.json")) if q["kind"] == "tbf"][0]
xdp = bj.get("xdp", {})


def xp(slot):
    return xdp.get(slot, {}).get("packets", 0)


r = {"load": float(load), "mode": mode, "events": events, "sources": n}
r["sent"] = sum(s.get("packets", 0) for s in src)
el = max([s.get("elapsed_s", 0) for s in src] or [0])
r["sender_elapsed_s"] = round(el, 3)
r["offered_gbps"] = round(r["sent"] * frame * 8 / el / 1e9, 4) if el else 0
r["share_bps"] = int(share) if mode == "shaped" else 0
r["shaper_drops"] = sum(x.get("class_drops", 0) + x.get("drop_horizon", 0) for l in lst for x in l.get("rules", [])) + \
    sum(l.get("root", {}).get("drops", 0) for l in lst)
r["src_tx"] = sum(delta("src%d" % i, "tx", "packets") for i in range(n))
r["src_tx_dropped"] = sum(delta("src%d" % i, "tx", "dropped") for i in range(n))
r["port_rx"] = sum(delta("port%d" % i, "rx", "packets") for i in range(n))
r["port_sent"] = port["packets"]
r["port_drops"] = port["drops"]
# Requeues: veth stopped the port (the builder's XDP ring full, kernel >= 6.16
# pushes back into the qdisc instead of dropping): the port's queue then
# grows and may drop because the builder, not the link, fell behind.
r["port_requeues"] = port.get("requeues", 0)
r["port_loss"] = round(port["drops"] / r["sent"], 6) if r["sent"] else 0
r["port_goodput_gbps"] = round(port["bytes"] * 8 / el / 1e9, 4) if el else 0
r["bport_tx"] = delta("bport", "tx", "packets")
r["bport_tx_dropped"] = delta("bport", "tx", "dropped")
r["builder_eth0_rx"] = delta("beth0", "rx", "packets")
r["builder_eth0_rx_dropped"] = delta("beth0", "rx", "dropped")
r["xdp_mep"] = xp("mep")
# Frames on the builder's link that are not MEPs (the switch's own, e.g. IPv6
# router solicitations of br0): they enter at the port, not from a source.
r["non_daq_frames"] = r["builder_eth0_rx"] - r["xdp_mep"]
r["xdp_to_xsk"] = xp("to_xsk")
r["xdp_no_xsk"] = xp("no_xsk_to_kernel")
r["xdp_unknown_source"] = xp("unknown_source")
r["xsk_rx_dropped"] = bj.get("xsk_rx_dropped", 0)
r["xsk_rx_ring_full"] = bj.get("xsk_rx_ring_full", 0)
r["xsk_fill_ring_empty"] = bj.get("xsk_fill_ring_empty", 0)
r["builder_frames"] = bj.get("rx_frames", 0)
r["builder_frags"] = bj.get("frags_received", 0)
r["frags_in_events"] = bj.get("frags_in_events", 0)
r["builder_drops"] = sum(v for k, v in bj.items() if k.startswith("drop_"))
r["builder_seq_gaps"] = bj.get("seq_gaps", 0)
r["events_complete"] = bj.get("events_complete", 0)
r["events_incomplete"] = events - r["events_complete"]
r["completeness"] = round(r["events_complete"] / events, 6) if events else 0
r["lost_fragments"] = r["sent"] - r["frags_in_events"]
placed = (r["shaper_drops"] + r["src_tx_dropped"] + r["port_drops"] + r["bport_tx_dropped"] +
          r["xdp_no_xsk"] + r["xdp_unknown_source"] + r["xsk_rx_dropped"] +
          r["builder_drops"])
r["unaccounted"] = r["lost_fragments"] - placed
# Where each stage's own equation fails (0 everywhere when all is counted).
r["chain"] = {
    "sent-src_tx-shaper": r["sent"] - r["src_tx"] - r["shaper_drops"],
    "src_tx-port_rx-src_drop": r["src_tx"] - r["port_rx"] - r["src_tx_dropped"],
    "port_rx+non_daq-bport_tx-drops": r["port_rx"] + r["non_daq_frames"] - r["bport_tx"] - r["bport_tx_dropped"] - r["port_drops"],
    "bport_tx-beth0": r["bport_tx"] - r["builder_eth0_rx"],
    "xdp_mep-actions": r["xdp_mep"] - r["xdp_to_xsk"] - r["xdp_no_xsk"] - r["xdp_unknown_source"],
    "to_xsk-frames-xsk_drop": r["xdp_to_xsk"] - r["builder_frames"] - r["xsk_rx_dropped"],
    "frags-in_events-drops": r["builder_frags"] - r["frags_in_events"] - r["builder_drops"],
}
print(json.dumps(r))

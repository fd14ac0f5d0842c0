#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Results of scripts/bench/bench-shape.sh: JSON, CSVs, plots and the tables.
#
# usage: shape_report.py WORKDIR OUTDIR SHARE_BPS PORT_BPS PORT_BUF NSRC BURST
import csv
import json
import os
import struct
import sys

w, out = sys.argv[1], sys.argv[2]
share, port_bps, port_buf, nsrc, burst = (int(float(x)) for x in sys.argv[3:8])

pts = [json.loads(l) for l in open(os.path.join(w, "points.jsonl")) if l.strip()]
cpu = [json.loads(l) for l in open(os.path.join(w, "cpu.jsonl")) if l.strip()]
pull = [json.loads(l) for l in open(os.path.join(w, "pull.jsonl")) if l.strip()] if os.path.exists(os.path.join(w, "pull.jsonl")) else []
meta = json.load(open(os.path.join(w, "meta.json")))


def pcap_times(fn):
    """Timestamps (s) of a nanosecond pcap (tcpdump --time-stamp-precision nano)."""
    ts = []
    with open(fn, "rb") as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            return ts
        # Written on this machine: little-endian; 0xa1b23c4d = nanoseconds.
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic not in (0xA1B23C4D, 0xA1B2C3D4):
            return ts
        div = 1e9 if magic == 0xA1B23C4D else 1e6
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                break
            sec, frac, incl, _ = struct.unpack("<IIII", rec)
            f.seek(incl, 1)
            ts.append(sec + frac / div)
    return ts


# Inter-departure times: log-spaced bins from 1 us to 100 ms.
EDGES = [10 ** (k / 10) for k in range(0, 51)]  # us
ipt = {}
for name in ("unshaped_unpaced", "unshaped_paced", "shaped"):
    fn = os.path.join(w, name + ".pcap")
    t = pcap_times(fn) if os.path.exists(fn) else []
    d = sorted((b - a) * 1e6 for a, b in zip(t, t[1:]))
    hist = [0] * (len(EDGES) - 1)
    for x in d:
        for i in range(len(EDGES) - 1):
            if x < EDGES[i + 1] or i == len(EDGES) - 2:
                hist[i] += 1
                break

    def q(p):
        return round(d[min(len(d) - 1, int(p * len(d)))], 2) if d else None
    span = t[-1] - t[0] if len(t) > 1 else 0
    ipt[name] = {"packets": len(t), "mean_us": round(sum(d) / len(d), 2) if d else None,
                 "p1_us": q(0.01), "p50_us": q(0.5), "p99_us": q(0.99), "max_us": round(d[-1], 1) if d else None,
                 "below_10us": sum(1 for x in d if x < 10), "rate_mbit": round(len(d) * 1470 * 8 / span / 1e6, 2) if span else None,
                 "hist_edges_us": [round(e, 3) for e in EDGES], "hist": hist}

def cls_cost(rows):
    runs = sum(c["classifier_runs"] for c in rows if c["mode"] == "shaped" and c["classifier_runs"] > 0)
    ns = sum(c["classifier_ns_per_packet"] * c["classifier_runs"] for c in rows
             if c["mode"] == "shaped" and c["classifier_runs"] > 0)
    return (round(ns / runs, 1) if runs else None), runs


cls_all, cls_runs = cls_cost(cpu)
classifier = {"ns_per_packet": cls_all, "runs": cls_runs,
              "ns_per_packet_peak": cls_cost([c for c in cpu if c["kind"] == "peak"])[0],
              "ns_per_packet_paced": cls_cost([c for c in cpu if c["kind"] == "paced"])[0],
              "note": "kernel.bpf_stats_enabled run_time_ns / run_cnt; includes about 41 ns of measuring floor "
                      "(machine.md); peak = back-to-back packets (warm caches), paced = 20000 packets/s"}


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else None


# One summary row per fragment size and mode: peak rate, and the median over
# the paced repetitions of the CPU time per packet.
cpu_sum = []
for size in sorted({c["frag_bytes"] for c in cpu}):
    for mode in ("unshaped", "shaped"):
        peak = [c for c in cpu if c["frag_bytes"] == size and c["mode"] == mode and c["kind"] == "peak"]
        paced = [c for c in cpu if c["frag_bytes"] == size and c["mode"] == mode and c["kind"] == "paced"]
        cpu_sum.append({"frag_bytes": size, "mode": mode,
                        "peak_pps": peak[0]["pps"] if peak else None, "peak_gbps": peak[0]["gbps"] if peak else None,
                        "paced_pps": median([c["pps"] for c in paced]),
                        "cpu_ns_per_packet": median([c["cpu_ns_per_packet"] for c in paced]),
                        "kernel_ns_per_packet": median([c["kernel_ns_per_packet"] for c in paced]),
                        "kernel_ns_per_packet_all": [c["kernel_ns_per_packet"] for c in paced]})
for c in cpu_sum:
    if c["mode"] == "shaped":
        base = [u for u in cpu_sum if u["mode"] == "unshaped" and u["frag_bytes"] == c["frag_bytes"]][0]
        if base["kernel_ns_per_packet"]:
            c["kernel_cpu_ratio"] = round(c["kernel_ns_per_packet"] / base["kernel_ns_per_packet"], 3)
            c["kernel_ns_added"] = round(c["kernel_ns_per_packet"] - base["kernel_ns_per_packet"], 1)
        if base["peak_pps"]:
            c["peak_ratio"] = round(c["peak_pps"] / base["peak_pps"], 3)

res = {"meta": meta, "port": "tbf %.0f Mbit/s, limit %d B, burst 15000 B" % (port_bps / 1e6, port_buf),
       "sources": nsrc, "share_bps": share, "burst_bytes": burst, "frame_bytes": 1470,
       "results": pts, "pull": pull, "cpu": cpu_sum, "cpu_runs": cpu, "classifier": classifier, "interdeparture": ipt}
os.makedirs(out, exist_ok=True)
json.dump(res, open(os.path.join(out, "shape.json"), "w"), indent=1)

cols = [k for k in pts[0] if k != "chain"] if pts else []
with open(os.path.join(out, "shape.csv"), "w", newline="") as f:
    wr = csv.writer(f)
    wr.writerow(cols)
    for p in pts:
        wr.writerow([p[k] for k in cols])
for name, rows in (("shape-pull.csv", pull), ("shape-cpu.csv", cpu)):
    if rows:
        rcols = list(dict.fromkeys(k for c in rows for k in c))
        with open(os.path.join(out, name), "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(rcols)
            for c in rows:
                wr.writerow([c.get(k, "") for k in rcols])
with open(os.path.join(out, "shape-ipt.csv"), "w", newline="") as f:
    wr = csv.writer(f)
    wr.writerow(["bin_low_us", "bin_high_us"] + list(ipt))
    for i in range(len(EDGES) - 1):
        wr.writerow(["%.3f" % EDGES[i], "%.3f" % EDGES[i + 1]] + [ipt[n]["hist"][i] for n in ipt])

# Tables.
print("incast: %d sources -> 1 builder through one port (%s); shaped = %.1f Mbit/s per source"
      % (nsrc, res["port"], share / 1e6))
print("%6s %-9s %9s %8s %10s %8s %9s %15s %8s %6s %8s" % ("load", "mode", "offered", "sent", "port_drop", "loss%",
                                                           "shaper_dr", "complete", "compl%", "unacc", "requeues"))
for p in pts:
    print("%6.2f %-9s %7.3fG %8d %10d %8.3f %9d %7d/%-7d %8.2f %6d %8d" % (
        p["load"], p["mode"], p["offered_gbps"], p["sent"], p["port_drops"], 100 * p["port_loss"],
        p["shaper_drops"], p["events_complete"], p["events"], 100 * p["completeness"], p["unaccounted"],
        p.get("port_requeues", 0)))
if pull:
    print("pull mode (DFM, blocks of 10 events, %d sources answer each REQUEST at once):" % nsrc)
    print("%8s %-9s %9s %10s %9s %9s %10s %10s" % ("events/s", "mode", "offered", "port_drop", "re-asks", "resends", "complete", "dfm_rc"))
    for p in pull:
        print("%8.0f %-9s %7.3fG %10d %9s %9s %5s/%-5s %6s" % (p["rate_hz"], p["mode"], p["offered_gbps"], p["port_drops"],
              p["reask_events"], p["resend_meps"], p["complete"], p["triggered"], p["dfm_rc"]))
print("shaping CPU overhead (source 0 alone, port unlimited; shaped at 10 Gbit/s = not limiting):")
for c in cpu_sum:
    print("  frag %5d B %-9s peak %7s pkt/s %6s Gb/s | at %s pkt/s: kernel %s ns/packet (median of %s)%s" % (
        c["frag_bytes"], c["mode"], c["peak_pps"], c["peak_gbps"], c["paced_pps"], c["kernel_ns_per_packet"],
        c["kernel_ns_per_packet_all"], "  kernel x%s (%+s ns), peak x%s" % (c.get("kernel_cpu_ratio"), c.get("kernel_ns_added"),
                                                                         c.get("peak_ratio")) if c["mode"] == "shaped" else ""))
print("classifier: %s ns per packet (%d runs, kernel.bpf_stats_enabled; back to back %s ns, at 20000/s %s ns)" % (
    classifier["ns_per_packet"], cls_runs, classifier["ns_per_packet_peak"], classifier["ns_per_packet_paced"]))
print("inter-departure (source 0 egress, tcpdump):")
for n, v in ipt.items():
    print("  %-17s %6d pkts  p1 %8s us  p50 %8s us  p99 %8s us  max %9s us  <10us %6d  %s Mbit/s" % (
        n, v["packets"], v["p1_us"], v["p50_us"], v["p99_us"], v["max_us"], v["below_10us"], v["rate_mbit"]))

# Plots.
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib missing (scripts/install-deps.sh installs python3-matplotlib): no plots", file=sys.stderr)
    sys.exit(0)

fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
for mode, mk in (("unshaped", "o-"), ("shaped", "s-")):
    ps = sorted((p for p in pts if p["mode"] == mode), key=lambda p: p["load"])
    x = [p["load"] * port_bps / 1e6 for p in ps]
    ax[0].plot(x, [100 * p["port_loss"] for p in ps], mk, label=mode)
    ax[1].plot(x, [100 * p["completeness"] for p in ps], mk, label=mode)
for a in ax:
    a.axvline(port_bps / 1e6, color="grey", ls=":", label="port rate")
    a.set_xlabel("offered load, all sources (Mbit/s)")
    a.grid(alpha=0.3)
ax[0].legend(loc="upper left")
ax[1].legend(loc="lower left")
ax[0].set_ylabel("packet loss at the port (%)")
ax[0].set_title("Loss vs offered load (%d sources, %.0f Mbit/s port, %d kB buffer)" % (nsrc, port_bps / 1e6, port_buf // 1000), fontsize=9)
ax[1].set_ylabel("events complete (%)")
ax[1].set_ylim(-2, 102)
ax[1].set_title("Event completeness, push (shaped: %.1f Mbit/s per source)" % (share / 1e6), fontsize=9)
fig.tight_layout()
fig.savefig(os.path.join(out, "shape-loss.png"), dpi=110)

if pull:
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode, mk in (("unshaped", "o-"), ("shaped", "s-")):
        ps = sorted((p for p in pull if p["mode"] == mode), key=lambda p: p["rate_hz"])
        ax.plot([p["offered_gbps"] * 1e3 for p in ps], [1000.0 * (p["reask_events"] or 0) / p["events"] for p in ps], mk,
                label=mode + " (re-asks)")
        ax.plot([p["offered_gbps"] * 1e3 for p in ps], [1000.0 * p["port_drops"] / p["events"] for p in ps],
                mk.replace("-", ":"), label=mode + " (port drops)")
    ax.set_xlabel("offered load, all sources (Mbit/s)")
    ax.set_ylabel("per 1000 events")
    ax.set_title("Pull mode: port drops and re-asked events (%.0f Mbit/s port)" % (port_bps / 1e6), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "shape-pull.png"), dpi=110)

if cpu_sum:
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    sizes = sorted({c["frag_bytes"] for c in cpu_sum})
    for k, mode in enumerate(("unshaped", "shaped")):
        v = [next(c for c in cpu_sum if c["frag_bytes"] == s_ and c["mode"] == mode) for s_ in sizes]
        xs = [i + (k - 0.5) * 0.35 for i in range(len(sizes))]
        ax[0].bar(xs, [(c["kernel_ns_per_packet"] or 0) / 1000 for c in v], 0.35, label=mode)
        ax[1].bar(xs, [(c["peak_pps"] or 0) / 1000 for c in v], 0.35, label=mode)
    for a in ax:
        a.set_xticks(range(len(sizes)))
        a.set_xticklabels(["%d B" % s_ for s_ in sizes])
        a.set_xlabel("fragment payload per packet")
        a.legend()
        a.grid(alpha=0.3, axis="y")
    hz = next((c["paced_pps"] for c in cpu_sum if c["paced_pps"]), 0)
    ax[0].set_ylabel("kernel CPU time per packet, both cores (us)")
    ax[0].set_title("CPU at %d packets/s, 10 Gbit/s assigned (not limiting);\nclassifier alone %s ns/packet"
                    % (hz, classifier["ns_per_packet"]), fontsize=9)
    ax[1].set_ylabel("peak packet rate, one source (kpackets/s)")
    ax[1].set_title("Transfer speed with and without shaping", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "shape-cpu.png"), dpi=110)

fig, ax = plt.subplots(figsize=(8, 4.2))
lows = EDGES[:-1]
widths = [EDGES[i + 1] - EDGES[i] for i in range(len(EDGES) - 1)]
labels = {"unshaped_unpaced": "no shaping, source unpaced",
          "unshaped_paced": "no shaping, source paced (--rate)",
          "shaped": "shaped %.1f Mbit/s (HTB), source unpaced" % (share / 1e6)}
for n, v in ipt.items():
    if v["packets"] > 1:
        tot = sum(v["hist"])
        ax.step(lows, [100 * h / tot for h in v["hist"]], where="post", label="%s (%d pkts)" % (labels[n], v["packets"]))
ax.set_xscale("log")
# Log scale: the tails (scheduling delays) are what differ.
ax.set_yscale("log")
ax.set_ylim(bottom=0.001)
ax.set_xlabel("packet inter-departure time at the sender's egress (us)")
ax.set_ylabel("packets (%)")
ax.set_title("Inter-departure distribution, 1470-byte frames, tcpdump on the source's eth0", fontsize=9)
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, "shape-ipt.png"), dpi=110)

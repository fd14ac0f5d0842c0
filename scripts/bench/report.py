#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes docs/benchmarks.md from the suite's JSON results: for each seed
study its published headline next to ours, the ratio to the socket
baseline, what limits ours on this machine, and the plots (copied to
docs/bench/img/, the JSON to docs/bench/data/ so the figures stay traceable).

  report.py [RESULTS_DIR (build/bench)] [DOC (docs/benchmarks.md)]
  report.py --check [DOC]   DOC is what its bench/data/ and bench/notes/
                            make (the committed plots as they are); else
                            the difference and exit 1

Measurements no JSON of the suite holds (runs against other trees,
profiles) are hand-written in DOC's bench/notes/NAME.md and included in
their place.

BENCH_NOTE (environment) adds a line on how the machine was used during the
runs (e.g. "shared with five other engineers' tests"). Everything in the
document below the title comes from this script: edit it, not the output."""
import json
import os
import shutil
import statistics
import sys

CHECK = sys.argv[1:2] == ["--check"]
if CHECK:
    DOC = sys.argv[2] if len(sys.argv) > 2 else "docs/benchmarks.md"
else:
    RES = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    DOC = sys.argv[2] if len(sys.argv) > 2 else "docs/benchmarks.md"
DOCDIR = os.path.dirname(DOC) or "."
IMG = os.path.join(DOCDIR, "bench", "img")
DATA = os.path.join(DOCDIR, "bench", "data")
if CHECK:
    RES = DATA
NOTES = os.path.join(DOCDIR, "bench", "notes")


def load(name):
    p = os.path.join(RES, name + ".json")
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None


def img(name, alt):
    """Copies RES/name.png into the docs; a markdown image line, or a note."""
    src = os.path.join(RES, name + ".png")
    if CHECK:
        return img_link(name, alt) if os.path.exists(os.path.join(IMG, name + ".png")) else \
            "_(plot %s.png not produced: run the benchmark)_\n" % name
    if not os.path.exists(src):
        return "_(plot %s.png not produced: run the benchmark)_\n" % name
    os.makedirs(IMG, exist_ok=True)
    shutil.copy(src, os.path.join(IMG, name + ".png"))
    return img_link(name, alt)


def img_link(name, alt):
    return "![%s](bench/img/%s.png)\n" % (alt, name)


def notes(name):
    """docs/bench/notes/NAME.md, hand-written (what no JSON of the suite holds: side-by-side runs of other
    trees, profiles), kept in its place in the document; its first line, a comment, left out."""
    try:
        lines = open(os.path.join(NOTES, name + ".md")).read().splitlines()
    except OSError:
        return []
    return [l for l in lines if not l.startswith("<!-- hand-written")]


def keep(name):
    p = os.path.join(RES, name + ".json")
    if os.path.exists(p) and not CHECK:
        os.makedirs(DATA, exist_ok=True)
        shutil.copy(p, os.path.join(DATA, name + ".json"))
        c = os.path.join(RES, name + ".csv")
        if os.path.exists(c):
            shutil.copy(c, os.path.join(DATA, name + ".csv"))


def metaline(doc):
    m = (doc or {}).get("meta") or {}
    if not m:
        return "_(no meta recorded)_"
    s = m.get("settings", {})
    return ("measured %s on %s (%s, %s CPUs, kernel %s), git %s, load average %.2f when the results were written%s" % (
        m.get("date", "?"), m.get("host", "?"), m.get("cpu", "?"), m.get("cpus", "?"), m.get("kernel", "?"),
        m.get("git", "?"), m.get("loadavg", 0), ", BENCH_QUICK=1" if s.get("BENCH_QUICK") else ""))


def f(v, spec="%.1f"):
    return "-" if v is None else spec % v


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"


def not_run(name, cmd):
    return "_Not run yet: `%s` writes build/bench/%s.json._\n" % (cmd, name)


# ---------------------------------------------------------------- study 1
def study1():
    out = ["## Study 1: ATLAS DAQ/EF-1 event builder over Gigabit Ethernet (seed 000)\n",
           "**Seed.** TCP event building on PCs and Gigabit Ethernet, a data-flow manager assigning events "
           "(concurrency 50, MTU 1500). Headlines: a destination builds at most about **2 kHz** "
           "(software overhead), so 1xN rates are ~2 kHz x N for small fragments; a source link carries "
           "~**50 MB/s** (1xN bandwidth plateau above ~20 kB fragments); a destination handles ~**35 MB/s** "
           "(Nx1 plateau); **7x7 reaches only ~5 kHz** (not 14 kHz) up to 4 kB fragments (Figs. 10-15).\n",
           "**Ours.** `scripts/bench/bench-daq.sh`: the same scans under `xevb dfm` (push, one event per "
           "assignment, builders grant 50 credits = the seed's concurrency, triggered as fast as credits "
           "allow), builders build without forwarding, XDP mode and socket mode in the same run, MTU 1500 "
           "and 9000. Sources are `xevb source --dfm` (kernel UDP sockets).\n"]
    d = load("daq")
    if not d:
        return out + [not_run("daq", "scripts/bench/bench-daq.sh")]
    keep("daq")
    out.append("_%s._\n" % metaline(d))
    rows = [r for r in d["results"] if not r.get("skipped")]
    skipped = [r for r in d["results"] if r.get("skipped")]
    sizes = sorted({r["frag_size"] for r in rows})
    cfgs = sorted({r["config"] for r in rows}, key=lambda c: [int(x) for x in c.split("x")])
    for mtu in sorted({r["mtu"] for r in rows}):
        sizes = sorted({r["frag_size"] for r in rows if r["mtu"] == mtu})
        out.append("\nEvent rate (kHz, all builders) / bandwidth per destination (MB/s), MTU %d:\n" % mtu)
        out.append("| config | mode | " + " | ".join("%d B" % s for s in sizes) + " |")
        out.append("|---|---|" + "---|" * len(sizes))
        for cfg in cfgs:
            for mode in ("xdp", "socket"):
                cells = []
                have = False
                for s in sizes:
                    r = [x for x in rows if x["config"] == cfg and x["mode"] == mode and x["mtu"] == mtu and x["frag_size"] == s]
                    if r:
                        have = True
                        cells.append("%.1f / %.1f%s" % (r[0]["events_per_s"] / 1e3, r[0]["MB_per_s_per_builder"],
                                                        "" if r[0].get("accounting_ok") else " (!)"))
                    else:
                        cells.append("-")
                if have:
                    out.append("| %s | %s | %s |" % (cfg, mode, " | ".join(cells)))
    # ratio XDP / socket over the points both modes ran
    pairs = []
    for r in rows:
        if r["mode"] != "xdp":
            continue
        s = [x for x in rows if x["mode"] == "socket" and x["mtu"] == r["mtu"] and x["config"] == r["config"]
             and x["frag_size"] == r["frag_size"]]
        if s and s[0]["events_per_s"] and r["events_per_s"]:
            pairs.append(r["events_per_s"] / s[0]["events_per_s"])
    small = [r for r in rows if r["frag_size"] <= 1000]
    best = max(small, key=lambda r: r["events_per_s_per_builder"]) if small else None
    bw = max(rows, key=lambda r: r["MB_per_s_per_builder"]) if rows else None
    big = [r for r in rows if r["sources"] == r["builders"] and r["sources"] > 1]
    bigmax = max(big, key=lambda r: (r["sources"], r["events_per_s"])) if big else None
    out.append("\n(!) marks a point whose DFM accounting check did not pass. Skipped points: %d (%s).\n" % (
        len(skipped), "; ".join(sorted({"%s" % r["skipped"] for r in skipped})) or "none"))
    out.append("**Side by side.**\n")
    out.append("| headline | seed (2003, 1 GbE, TCP) | ours |")
    out.append("|---|---|---|")
    if best:
        out.append("| events/s per destination, fragments <= 1 kB | ~2 kHz | %.1f kHz (%s %s, %d B, MTU %d) |" % (
            best["events_per_s_per_builder"] / 1e3, best["config"], best["mode"], best["frag_size"], best["mtu"]))
    if bw:
        out.append("| bandwidth per destination, best | ~35 MB/s (Nx1), ~50 MB/s per source link | %.1f MB/s (%s %s, %d B, MTU %d) |" % (
            bw["MB_per_s_per_builder"], bw["config"], bw["mode"], bw["frag_size"], bw["mtu"]))
    if bigmax:
        out.append("| NxN total, largest N | 7x7: ~5 kHz | %s: %.1f kHz (%s, %d B) |" % (
            bigmax["config"], bigmax["events_per_s"] / 1e3, bigmax["mode"], bigmax["frag_size"]))
    if pairs:
        out.append("| XDP / socket event rate, same point | - | median %.2f (range %.2f-%.2f, %d points) |" % (
            statistics.median(pairs), min(pairs), max(pairs), len(pairs)))
    med = statistics.median(pairs) if pairs else None
    same = med is not None and 0.8 <= med <= 1.25
    out.append("\n**What limits ours.** The best rate per destination is %s the seed's 2 kHz; %s "
               "The per-event work is the event-by-event control path (one ASSIGN per event with `--pack 1`, a "
               "CLEAR per 50, DONE/credits back) and the kernel-socket senders, all on 2 shared cores with N "
               "sources + N builders + the DFM: rates fall as N grows (more processes than cores), as the seed's "
               "7x7 did (there for a reason the seed left open). Bandwidth grows with fragment size because the per-event "
               "cost dominates: there is no link limit on veth. " % (
                   "%.0fx" % (best["events_per_s_per_builder"] / 2000) if best else "-",
                   "XDP and socket builders give about the same figure (median ratio %.2f): the builder's receive "
                   "path is not the limit here." % med if same else
                   "the XDP/socket median ratio is %s." % (f(med, "%.2f")))
               + 
               "Fragments larger than a packet travel as SEGMENT packets (wire format 1.1) or as IP fragments, "
               "up to 64 kB: the scans of 1-64 kB fragments, the DFM loop's and the free-running one's beside "
               "the seed's figures, are in [bench/segments.md](bench/segments.md). At MTU 9000 the XDP builder takes jumbo MEPs "
               "through multi-buffer XDP and XDP_USE_SG, with one copy per jumbo frame into a bounce buffer "
               "([bench/jumbo-and-forwarding.md](bench/jumbo-and-forwarding.md)). "
               "The DFM's own scans (push and pull, up to 7x7) are in [dfm.md](dfm.md).\n")
    for fam in ("1xN", "Nx1", "NxN"):
        out.append(img("daq-" + fam, "study 1 %s" % fam))
    return out


# ---------------------------------------------------------------- study 2
SEED_T5 = [("1. prod/cons", 1.35), ("2. stdlib mm + sendmsg", 1.63), ("3. raw mm + sendmsg (scatter-gather)", 1.71),
           ("4. packet socket + memcpy", 1.63), ("5. packet socket + opt. memcpy", 1.71),
           ("6. packet socket + zero copy", 1.95), ("7. with full processing (L1 decisions)", 1.77),
           ("8. full processing + 4 kB MTU", 1.87), ("9. more data fragments (L1 pack 32)", 1.95)]


def study2():
    out = ["## Study 2: LHCb gateway event building (seed 002, Table V)\n",
           "**Seed.** A dual-CPU gateway receives L1 (126 sources, 25 x 32 B a frame) and HLT (323 sources, "
           "10 x 100 B) over two GbE links and forwards built events; Table V lists the input rate it handles "
           "per implementation step, from **1.35 Gb/s** (producer/consumer) to **1.95 Gb/s** (zero-copy "
           "sending, and again with full processing + 4 kB MTU + L1 packing 32); at ~2 Gb/s that is ~250 kframes/s. "
           "The links (2 x 1 Gb/s) were the ceiling at the end.\n",
           "| seed step (Table V) | Gb/s |", "|---|---|"]
    out += ["| %s | %.2f |" % s for s in SEED_T5]
    out.append("\n**Ours.** `scripts/bench/bench-gateway.sh`: the highest offered rate (`xevb source --mode live "
               "--rate`, paced frame by frame in BPF) one builder sustains without loss (lost frames <= "
               "loss tolerance of those sent, and with forwarding every event sent complete at the farm node), "
               "found by bisection, per step we have, with the builder's shipped defaults. Forwarding copies "
               "each event into a per-farm-node buffer sent 64 KiB at a time in both modes; no zero-copy "
               "(veth: copy mode only).\n")
    d = load("gateway")
    if not d:
        return out + [not_run("gateway", "scripts/bench/bench-gateway.sh")]
    keep("gateway")
    out.append("_%s; %s; loss tolerance %s; %s s a probe, %s bisection steps._\n" % (
        metaline(d), d.get("model", ""), d.get("loss_tolerance"), d.get("seconds_per_probe"), d.get("bisection_steps")))
    rows = d["results"]
    idx = {(r["flow"], r["impl"], r["pack"], r["mtu"]): r for r in rows}
    out.append("| step | flow | pack x frag | MTU | Gb/s without loss | kframes/s | Mfragments/s | vs socket baseline | lowest lossy probe, offered kframes/s | unpaced: offered / received kframes/s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        base = None
        variant = (r["pack"], r["mtu"]) not in ((25, 1500), (10, 1500))
        if (r["impl"].startswith("xdp") or r["impl"] == "bare") and not variant:
            base = idx.get((r["flow"], "socket" if r["impl"] == "bare" else r["impl"].replace("xdp", "socket"),
                            25 if r["flow"] == "l1" else 10, 1500))
        lim = ">= " if r["sender_limited"] else ""
        bad = [p["offered_frames_per_s"] for p in r.get("probes", [])
               if not (p.get("ok") and p["loss"] <= r["loss_tolerance"])]
        out.append("| %s | %s | %d x %d B | %d | %s%.3f | %s%.1f | %.2f | %s | %s | %.1f / %.1f |" % (
            r["impl"] + ("" if (r["pack"], r["mtu"]) in ((25, 1500), (10, 1500)) else " (variant)"),
            r["flow"].upper(), r["pack"], r["frag_size"], r["mtu"], lim, r["lossfree_gbps"], lim,
            r["lossfree_frames_per_s"] / 1e3, r["lossfree_fragments_per_s"] / 1e6,
            (">= " if r["sender_limited"] and not base["sender_limited"] else "~" if r["sender_limited"] else "")
            + ratio(r["lossfree_frames_per_s"], base["lossfree_frames_per_s"]) if base else "-",
            "%.1f" % (min(bad) / 1e3) if bad else "-",
            r["unpaced_offered_frames_per_s"] / 1e3, r["unpaced_received_frames_per_s"] / 1e3))
    out.append("\n`>=`: no loss even unpaced: the generator's core, not the builder, set the rate (a lower bound). "
               "\"vs socket baseline\": frames/s over the socket builder's with the same flow and forwarding. The "
               "loss-free rate lies between its column and the lowest lossy probe (the bisection's resolution; "
               "BENCH_QUICK runs 2 steps, the full run 5). `+dfm` rows are the full loop (DFM assignments in "
               "blocks of pack events, one process sending for all sources through the testbed's switch, "
               "forwarding, farm-node credits back): their rate is what credits allowed with no event lost or "
               "incomplete (0 if any was), not a search.\n")
    xl1 = idx.get(("l1", "xdp", 25, 1500))
    fl1 = idx.get(("l1", "xdp+fwd", 25, 1500))
    sl1 = idx.get(("l1", "socket", 25, 1500))
    out.append("**Side by side.** The seed's final 1.95 Gb/s was two 1 GbE links full (~250 kframes/s). Ours: "
               "L1 build-only, AF_XDP %s Gb/s (%s kframes/s; socket %s Gb/s); L1 with forwarding %s Gb/s. Everything here is on 2 shared vCPUs: the "
               "generator, the veth receive work (default NAPI: on the generator's core) and, with "
               "forwarding, the farm node (`xevb sink`, checking every byte) share CPU 0; the builder has CPU 1.\n" % (
                   f(xl1 and xl1["lossfree_gbps"], "%.2f"), f(xl1 and xl1["lossfree_frames_per_s"] / 1e3),
                   f(sl1 and sl1["lossfree_gbps"], "%.2f"), f(fl1 and fl1["lossfree_gbps"], "%.2f")))
    xf = {fl: idx.get((fl, "xdp+fwd", 25 if fl == "l1" else 10, 1500)) for fl in ("l1", "hlt")}
    sf = {fl: idx.get((fl, "socket+fwd", 25 if fl == "l1" else 10, 1500)) for fl in ("l1", "hlt")}
    worse = [fl.upper() for fl in xf if xf[fl] and sf[fl] and xf[fl]["lossfree_frames_per_s"] < 0.8 * sf[fl]["lossfree_frames_per_s"]]
    close = [fl.upper() for fl in xf if xf[fl] and sf[fl] and fl.upper() not in worse
             and xf[fl]["lossfree_frames_per_s"] < 1.25 * sf[fl]["lossfree_frames_per_s"]]
    if close:
        out.append("**Forwarding, XDP vs socket.** For %s the two builders are within 25%% of each other with "
                   "forwarding (noise level for single quick runs): the TCP path to the farm node, not the "
                   "receive path, sets that rate.\n" % " and ".join(close))
    if worse:
        out.append("**Where XDP is not ahead.** With forwarding, the socket builder sustained more than the XDP "
                   "builder by more than 25%% for %s in this run. Not profiled; a likely cause is buffering: while `writev` blocks "
                   "on the farm node's TCP connection the builder does not drain its receive queue, and the "
                   "socket's 64 MB receive buffer absorbs a longer pause than the AF_XDP RX ring (16384 "
                   "frames).\n" % " and ".join(worse))
    xd = {fl: idx.get((fl, "xdp+fwd+dfm", 25 if fl == "l1" else 10, 1500)) for fl in ("l1", "hlt")}
    sd = {fl: idx.get((fl, "socket+fwd+dfm", 25 if fl == "l1" else 10, 1500)) for fl in ("l1", "hlt")}
    if any(xd.values()):
        nf = sorted({r.get("farm_nodes", 1) for r in list(xd.values()) + list(sd.values()) if r})
        out.append("**Full processing (`+dfm`).** The DFM in push mode, farm-node credits, the XDP switch, %s farm "
                   "node(s) (`farm_nodes`); the sources "
                   "are one `xevb source --dfm` process (`dfm_source`: live frames, or a kernel socket). A rate of 0 "
                   "means the run lost events (the DFM's books, `dfm_lost`: counted, never silent): %s. See "
                   "[bench/overload-and-forwarding.md](bench/overload-and-forwarding.md) for why.\n" % (
                       " or ".join(str(n) for n in nf), ", ".join("%s %s: %s lost" % (fl.upper(), m, r.get("dfm_lost")) for fl in ("l1", "hlt")
                                 for m, r in (("xdp", xd[fl]), ("socket", sd[fl])) if r and r.get("dfm_lost"))
                       or "none"))
    out.append("**What limits ours.** Build-only, XDP: the generator (the live-frame sender and the receive "
               "work it carries) saturates CPU 0 before the builder drops anything. Socket mode: recvmmsg's "
               "~0.6 us per frame on the builder's core. With forwarding: the TCP connection to the farm node "
               "on the other, busy core (the sink checks every event) - the builder's rings fill while it "
               "writes. Packing more fragments a frame or larger frames (MTU 3500) lowers the frame rate the "
               "builder pays for at the same Gb/s, as in the seed (steps 8-9).\n")
    out.append(img("gateway-lossfree", "study 2 loss-free rate per step"))
    out.append(img("gateway-forwarded", "study 2 forwarded Gb/s vs offered, XDP vs socket vs the seed's 1.95 Gb/s"))
    out.append(img("gateway-loss", "study 2 loss vs offered rate"))
    return out


# ---------------------------------------------------------------- study 3
def study3():
    return ["## Study 3: ATLAS QoS on Linux (seed 001)\n",
            "UDP loss vs offered rate with and without shaping, the shaping's CPU cost and the inter-departure "
            "distribution: `scripts/bench/bench-shape.sh` (`build/bench/shape.json`), reported in "
            "[bench/qos.md](bench/qos.md) and [shaping.md](shaping.md).\n"]


# ---------------------------------------------------------------- study 4
def study4():
    out = ["## Study 4: ATLAS data-collection QoS tests (seed 003)\n",
           "**Seed.** DataCollection event building, 1x1 and 6x1 (ROS emulators into one SFI over 1 GbE), "
           "push and pull, with and without traffic shaping. 1x1: EoE rate drops above 40-50 kHz input, "
           "throughput **> 50 MB/s**, **no re-asks**, push better than pull. 6x1 without QoS: EoE rate plateau "
           "**5 kHz push / 4 kHz pull** at 1 kB, throughput **> 90 MB/s pull / 80 MB/s push** (push falls with "
           "size), **lots of re-asks**. With QoS (40 and 20 Mbit/s a source): throughput plateaus at the "
           "assigned rate and **re-asks decrease**; QoS improved push.\n",
           "**Ours.** `scripts/bench/bench-dcqos.sh`: `xevb dfm` push and pull, `--pack 1`, builder credits 50, "
           "re-ask after 100 ms; the builder's switch port emulates the SFI's GbE port (tbf, see below); "
           "shaped = `xevb shape set --dst BUILDER --rate 0.95 x port / sources` on every source.\n"]
    d = load("dcqos")
    if not d:
        return out + [not_run("dcqos", "scripts/bench/bench-dcqos.sh")]
    keep("dcqos")
    out.append("_%s; port: %s._\n" % (metaline(d), d.get("port", "?")))
    rows = [r for r in d["results"] if not r.get("skipped")]
    out.append("| config | DFM | builder | shaping | frag B | EoE kHz | MB/s | incomplete | re-asked events | port drops |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["sources"], r["dfm_mode"], r["mode"], r["shape"] != "none", r["frag_size"])):
        out.append("| %s | %s | %s | %s | %d | %.2f | %.1f | %d | %d | %d |" % (
            r["config"], r["dfm_mode"], r["mode"], r["shape"], r["frag_size"], r["eoe_per_s"] / 1e3, r["MB_per_s"],
            r["incomplete"], r["reask_events"], r["port_drops"]))
    sk = {r["skipped"] for r in d["results"] if r.get("skipped")}
    if sk:
        out.append("\nSkipped: %s.\n" % "; ".join(sorted(sk)))

    def agg(cfg, dm, shaped, key):
        v = [r[key] for r in rows if r["config"] == cfg and r["dfm_mode"] == dm and (r["shape"] != "none") == shaped]
        return sum(v) if v else None

    def mx(cfg, dm, shaped, key, mode=None):
        v = [r[key] for r in rows if r["config"] == cfg and r["dfm_mode"] == dm and (r["shape"] != "none") == shaped
             and (mode is None or r["mode"] == mode)]
        return max(v) if v else None
    out.append("\n**Side by side.**\n")
    out.append("| headline | seed | ours |")
    out.append("|---|---|---|")
    out.append("| 1x1 throughput, best | > 50 MB/s | push %s, pull %s MB/s |" % (f(mx("1x1", "push", False, "MB_per_s")), f(mx("1x1", "pull", False, "MB_per_s"))))
    out.append("| 1x1 re-asks | none | push %s, pull %s events |" % (f(agg("1x1", "push", False, "reask_events"), "%d"), f(agg("1x1", "pull", False, "reask_events"), "%d")))
    out.append("| 6x1 no QoS: peak EoE rate | 5 kHz push, 4 kHz pull | push %s, pull %s kHz |" % (
        f((mx("6x1", "push", False, "eoe_per_s") or 0) / 1e3, "%.2f"), f((mx("6x1", "pull", False, "eoe_per_s") or 0) / 1e3, "%.2f")))
    out.append("| 6x1 no QoS: throughput, best | 80 MB/s push, 90 MB/s pull | push %s, pull %s MB/s |" % (
        f(mx("6x1", "push", False, "MB_per_s")), f(mx("6x1", "pull", False, "MB_per_s"))))
    out.append("| 6x1 re-asked events, all sizes: no QoS -> shaped | lots -> fewer | push %s -> %s, pull %s -> %s |" % (
        f(agg("6x1", "push", False, "reask_events"), "%d"), f(agg("6x1", "push", True, "reask_events"), "%d"),
        f(agg("6x1", "pull", False, "reask_events"), "%d"), f(agg("6x1", "pull", True, "reask_events"), "%d")))
    out.append("| 6x1 port drops, all sizes: no QoS -> shaped | (switch loss) | push %s -> %s, pull %s -> %s |" % (
        f(agg("6x1", "push", False, "port_drops"), "%d"), f(agg("6x1", "push", True, "port_drops"), "%d"),
        f(agg("6x1", "pull", False, "port_drops"), "%d"), f(agg("6x1", "pull", True, "port_drops"), "%d")))
    port_mb = None
    try:
        port_mb = float(d.get("meta", {}).get("settings", {}).get("BENCH_PORT_RATE", "200e6")) / 8e6
    except ValueError:
        pass
    if port_mb:
        b1, b6 = mx("1x1", "push", False, "MB_per_s"), max(mx("6x1", "push", False, "MB_per_s") or 0, mx("6x1", "pull", False, "MB_per_s") or 0)
        out.append("| best throughput as a share of the link, 1x1 / 6x1 | 50 / 90 of 125 MB/s: %d%% / %d%% | %s / %s of %.0f MB/s: %s / %s |" % (
            40, 72, f(b1), f(b6), port_mb, "%d%%" % (100 * b1 / port_mb) if b1 else "-", "%d%%" % (100 * b6 / port_mb) if b6 else "-"))
    pairs = []
    for r in rows:
        if r["mode"] == "xdp":
            s = [x for x in rows if x["mode"] == "socket" and all(x[k] == r[k] for k in ("config", "dfm_mode", "shape", "frag_size"))]
            if s and s[0]["eoe_per_s"] and r["eoe_per_s"]:
                pairs.append(r["eoe_per_s"] / s[0]["eoe_per_s"])
    if pairs:
        out.append("| XDP / socket EoE rate, same point | - | median %.2f (range %.2f-%.2f, %d points) |" % (
            statistics.median(pairs), min(pairs), max(pairs), len(pairs)))
    notes = []
    u_dr, s_dr = [agg("6x1", dm, sh, "port_drops") for dm in ("push", "pull") for sh in (False,)], \
        [agg("6x1", dm, True, "port_drops") for dm in ("push", "pull")]
    u_ra = sum(agg("6x1", dm, False, "reask_events") or 0 for dm in ("push", "pull"))
    s_ra = sum(agg("6x1", dm, True, "reask_events") or 0 for dm in ("push", "pull"))
    if any(u_dr) and not any(s_dr):
        notes.append("The seed's effect reproduces: unshaped, the 6x1 incast overflows the port's buffer and "
                     "the builder re-asks (%d re-asked events over the 6x1 runs); shaped at the port's share, "
                     "no packet is dropped at the port and re-asks fall to %d." % (u_ra, s_ra))
    one = agg("1x1", "push", False, "port_drops") or 0
    if one:
        notes.append("Unlike the seed, our 1x1 also loses at the port at large fragments: one source sends "
                     "faster than the emulated port (the seed's 1x1 was software-bound below its link), which "
                     "is why 1x1 shows re-asks too.")
    odd = [r for r in rows if r["shape"] != "none" and r["reask_events"] and not r["port_drops"]]
    if odd:
        notes.append("%d shaped run(s) show re-asks with no port drop (%s events): not investigated; a count "
                     "equal to the builder's 50 credits points at the start or the end of a run rather than at "
                     "loss." % (len(odd), ", ".join(str(r["reask_events"]) for r in odd)))
    out.append("\n**What limits ours.** The emulated port (1 GbE scaled down 5x, 25 MB/s) bounds throughput at "
               "large fragments, as the seed's GbE did; at small fragments the event-by-event DFM control "
               "path and 2 shared cores set the EoE rate. %s Fragments above 1444 B cannot be sent at MTU "
               "1500 (one MEP per IP packet).\n" % " ".join(notes))
    for cfg in sorted({r["config"] for r in rows}):
        out.append(img("dcqos-" + cfg, "study 4 " + cfg))
    return out


# ---------------------------------------------------------------- overload
# The curves of the code before the overload fixes, kept in the docs
# (DATA): name, how it was run.
OVERLOAD_BEFORE = [("overload-before", "full run (3 rounds of 2 s a point, medians, 6 bisection steps) of the "
                   "same script with the builder of 17fcca1 (`OV_BIN`), before eviction, shedding and batched output")]


def overload_tables(d):
    """The loss-free rates and goodput per offered load of one overload.json."""
    out = ["| case | mode | loss-free kevents/s (kframes/s), per round |", "|---|---|---|"]
    per = {}
    for sr in d.get("searches", []):
        per.setdefault((sr["case"], sr["mode"]), []).append(sr)
    for (case, mode), srs in per.items():
        out.append("| %s | %s | %s |" % (case, mode, "; ".join(
            "%.1f (%.1f)%s" % (sr["lossfree_events_per_s"] / 1e3, sr["lossfree_frames_per_s"] / 1e3,
                               ", generator-limited" if sr.get("sender_limited") else "")
            if sr.get("lossfree_events_per_s") else "none found" for sr in srs)))
    rows = d.get("results", [])
    loads = []
    for r in rows:
        if r["load"] not in loads:
            loads.append(r["load"])
    out.append("\nComplete events/s at the farm node / loss-free rate, and in brackets the share of the events "
               "delivered that were incomplete and the load the generator actually offered (a multiple of the "
               "loss-free rate: where it is below the load asked for, the generator fell short; where the "
               "builder delivered every event offered, complete, nothing was above its capacity), per offered "
               "load (multiple of the loss-free rate):\n")
    out.append("| case | mode | " + " | ".join(l if l == "unpaced" else l + "x" for l in loads) + " |")
    out.append("|---|---|" + "---|" * len(loads))
    for case in sorted({r["case"] for r in rows}, key=lambda c: (c != "l1", c)):
        for mode in ("xdp", "socket"):
            cells, have = [], False
            for load in loads:
                r = [x for x in rows if x["case"] == case and x["mode"] == mode and x["load"] == load]
                if not r:
                    cells.append("-")
                    continue
                have, r = True, r[0]
                g, inc = r.get("goodput_over_lossfree"), r.get("incomplete_share")
                off = r.get("offered_over_lossfree")
                cells.append("%s (%s; %s)%s" % (f(g, "%.2f"), "%.0f%%" % (100 * inc) if inc is not None else "-",
                                                f(off, "%.2f"), "" if r.get("ok") else " (!)"))
            if have:
                out.append("| %s | %s | %s |" % (case, mode, " | ".join(cells)))
    out.append("\nPer point (medians over the rounds): offered, received by the builder, complete at the farm "
               "node; the books of the events sent; the builder's core (builder process + its napi thread):\n")
    out.append("| case | mode | load | offered kev/s | offered kfr/s | rx kfr/s | complete kev/s | incomplete | "
               "shed | evicted | never delivered | builder CPU | napi CPU |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = r.get("books", {})
        sent = b.get("sent") or 0

        def share(v):
            return "-" if v is None else "%.1f%%" % (100 * v / sent) if sent else "%d" % v
        out.append("| %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s |" % (
            r["case"], r["mode"], r["load"], r["offered_events_per_s"] / 1e3, r["offered_frames_per_s"] / 1e3,
            r["rx_frames_per_s"] / 1e3, r["complete_events_per_s"] / 1e3, share(b.get("delivered_incomplete")),
            share(b.get("shed")), share(b.get("evicted")), share(b.get("never_delivered")),
            f(r.get("builder_cpu"), "%.2f"), f(r.get("napi_cpu"), "%.2f")))
    return out


def overload():
    out = ["## Overload: goodput vs offered load\n",
           "`scripts/bench/bench-overload.sh`: the live generator (CPU 0) on a direct veth pair to the builder "
           "(CPU 1; split model, as in bench-gateway: veth's default NAPI runs the receive work on the sender's "
           "core, `OV_MODEL=gateway` moves it to the builder's), which forwards over "
           "TCP to one `xevb sink` (CPU 0) that checks every byte. The builder runs with its **shipped defaults**. "
           "Cases L1 (126 sources, 25 x 32 B a packet) and HLT (323 sources, 10 x 100 B). In each round, per case "
           "and mode, a bisection of the paced rate finds the loss-free rate (every event sent arrives complete at "
           "the farm node, none incomplete), then the generator offers 0.1x to 10x that rate and unpaced, xdp and "
           "socket alternating; each round is judged against its own loss-free rates (this host's speed drifts by "
           "up to 20% from one minute to the next), medians over the rounds. "
           "Goodput = complete events/s at the farm node. A builder that degrades gracefully stays "
           "near 1 (above the dashed 0.9) however much it is offered; one that collapses falls towards 0. "
           "Shares of the events sent: incomplete = delivered flagged incomplete, shed = dropped whole by XDP, "
           "evicted = pushed out of the window, never delivered = sent but neither delivered nor shed "
           "(shed/evicted: `-` where the builder has no such counter). The curves of the code before the fixes "
           "are kept below; the full run's is drawn grey under a newer run's curve.\n"]
    d = load("overload")
    if d:
        keep("overload")
        out.append("_%s; %s round(s) of %s s a point, %s bisection steps._\n" % (
            metaline(d), d.get("rounds", "?"), d.get("seconds_per_point", "?"), d.get("bisection_steps", "?")))
        out += overload_tables(d)
        out.append("")
        out.append(img("overload-goodput", "goodput vs offered load"))
    else:
        out.append(not_run("overload", "scripts/bench/bench-overload.sh"))
    out += shed_cost()
    for name, how in OVERLOAD_BEFORE:
        try:
            before = json.load(open(os.path.join(DATA, name + ".json")))
        except (OSError, ValueError):
            continue
        out.append("### Before the overload fixes\n")
        out.append("%s; kept as [bench/data/%s.json](bench/data/%s.json) to compare the fixes against. "
                   "_%s._\n" % (how, name, name, metaline(before)))
        out += overload_tables(before)
        out.append("")
        out.append(img(name, "goodput vs offered load before the fixes"))
    return out


def shed_cost():
    """What the XDP program's shedding costs while it sheds nothing."""
    out = ["### What shedding costs when it sheds nothing\n",
           "`scripts/bench/bench-shed-cost.sh`: the steering program's ns a MEP from the kernel's BPF run-time "
           "statistics (one L1 frame of 25 records through BPF_PROG_RUN in live-frames mode, with the XDP meta; "
           "the redirect itself not counted). `gate`: the shedding gate idle, which is one load and a branch a "
           "MEP (the program before the gate existed measured the same within noise, 2026-11-25 at a3974df: "
           "112.2 against 112.1 ns), no ring guard. `guard`: the gate idle and the ring guard on, refusing nothing: what "
           "`xevb build` runs until its first overload. `armed`: after an overload, the gate armed at full "
           "level, recording the newest block and shedding nothing. This host's speed drifts by up to 50% from "
           "one second to the next, so the three states take turns within every round of 50k MEPs and a "
           "state's cost is the median over the rounds of its difference to `gate` in the same round.\n"]
    d = load("shed-cost")
    if not d:
        return out + [not_run("shed-cost", "scripts/bench/bench-shed-cost.sh")]
    keep("shed-cost")
    out.append("_%s; %s run(s) of %s rounds of %s MEPs a state._\n" % (
        metaline(d), d.get("runs", "?"), d.get("rounds", "?"), d.get("repeat", "?")))
    out.append("| state | ns a MEP (median) | over `gate`, paired | over `gate`, per run |")
    out.append("|---|---|---|---|")
    for r in d.get("results", []):
        out.append("| %s | %.1f | %+.1f | %s |" % (r["state"], r["ns_per_mep"], r["over_gate_ns"],
                                                  ", ".join("%+.1f" % v for v in r["over_gate_ns_runs"])))
    out.append("")
    return out


def farm_node():
    """sink.json: the farm node's capacity alone, so a benchmark says which side limits."""
    out = ["## The farm node alone\n",
           "`scripts/bench/bench-sink.sh`: `xevb sink` (every byte checked: format, CRC-32C, the emulator "
           "pattern, duplicates) on CPU 0, where the other benchmarks run it, fed over a veth pair by "
           "`build/bench/sink_flood` on CPU 1, a sender faster than the builder (a ring of encoded events, "
           "64 KiB writes; on veth the TCP receive softirq runs on the sender's core). L1: 126 x 32 B fragments, "
           "HLT: 323 x 100 B. \"1 core\" = events/s over the sink's CPU seconds per second: what it would take "
           "with CPU 0 to itself. \"limit\": the core at >= 95% busy. \"check alone\": the user-space check "
           "without a socket, ns per event.\n"]
    d = load("sink")
    if not d:
        out.append(not_run("sink", "scripts/bench/bench-sink.sh"))
        return out
    keep("sink")
    out.append("_%s; %s s a run._\n" % (metaline(d), d.get("seconds_per_run", "?")))
    out.append("| sink | case | runs | k events/s | Gb/s | sink user s/s | sys s/s | CPU us/event | 1 core: k events/s | "
               "CPU 0 / 1 busy | limit |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in d.get("results", []):
        out.append("| %s | %s | %d | %.1f | %.2f | %.2f | %.2f | %s | %s | %.2f / %.2f | %s%s |" % (
            r["label"], r["case"], r["runs"], r["events_per_s"] / 1e3, r["gbps"], r["sink_user_s_per_s"],
            r["sink_sys_s_per_s"], f(r.get("sink_cpu_us_per_event"), "%.2f"),
            f((r.get("capacity_events_per_s") or 0) / 1e3 or None), r["cpu0_busy"], r["cpu1_busy"], r["limit"],
            "" if r["ok"] else " (events lost or broken)"))
    cc = d.get("check_cost") or []
    if cc:
        out.append("\n| check alone | ns/event, one walk | decode then verify |")
        out.append("|---|---|---|")
        for c in cc:
            out.append("| %s (%d B events) | %.0f | %.0f |" % (c["case"], c["event_bytes"], c["one_walk_ns_per_event"],
                                                           c["decode_then_verify_ns_per_event"]))
    out.append("")
    return out + sink_ab() + notes("farm-node")


def sink_ab():
    """sink-ab.json: two sinks side by side in the same seconds (bench-sink-ab.sh)."""
    d = load("sink-ab")
    if not d:
        return []
    keep("sink-ab")
    la, lb = d["a"], d["b"]
    out = ["### Two sinks side by side in the same seconds\n",
           "`scripts/bench/bench-sink-ab.sh`: the same sinks and feeder as above, but both sinks at once on CPU 0 "
           "(ports 5000 and 5001) and one feeder on CPU 1 writing flat out to one for %d ms, then to the other "
           "(`sink_flood --dest A --dest B --slice-ms`), so each runs alone on its core while fed and a drift of "
           "the host's speed longer than a slice hits both alike. CPU per event by the scheduler's clock (all "
           "threads) over each run; the order of the two swapped run by run. `%s` and `%s` are the two "
           "binaries (SINK_A, SINK_B; by default both this tree's).\n" % (d.get("slice_ms", 0), la, lb),
           "_%s; %s s a run._\n" % (metaline(d), d.get("seconds_per_run", "?")),
           "| run | first | %s: CPU us/event | %s: CPU us/event | %s / %s |" % (la, lb, lb, la),
           "|---|---|---|---|---|"]
    for p in d.get("points", []):
        out.append("| %d | %s | %s | %s | %s%s |" % (
            p["run"], p["first"], f(p["a"]["cpu_us_per_event"], "%.3f"), f(p["b"]["cpu_us_per_event"], "%.3f"),
            f(p["b_over_a"], "%.3f"), "" if p["ok"] else " (events lost or broken)"))
    r = d.get("b_over_a")
    if r:
        out.append("| median | | %s | %s | **%.3f** (%.3f to %.3f) |" % (
            f(d["a_cpu_us_per_event"]["median"], "%.3f"), f(d["b_cpu_us_per_event"]["median"], "%.3f"),
            r["median"], r["min"], r["max"]))
    out.append("")
    return out


# ---------------------------------------------------------------- the DFM alone
def dfm_scale_lat(r, which):
    v = (r.get("lat_us") or {}).get(which) or {}
    g = lambda q: "-" if v.get(q) is None else "%.0f" % v[q] if v[q] >= 100 else "%.1f" % v[q]
    return "%s / %s" % (g("p50"), g("p99"))


def dfm_scale_out(r):
    """Datagrams/s the DFM sent: ASSIGN to builders, ASSIGN and CLEAR to sources, the rest."""
    b, s = r.get("out_builders_per_s", {}), r.get("out_sources_per_s", {})
    rest = sum(b.values()) + sum(s.values()) - b.get("ASSIGN", 0) - s.get("ASSIGN", 0) - s.get("CLEAR", 0)
    k = lambda v: "%.0fk" % (v / 1e3) if v >= 10000 else "%.1fk" % (v / 1e3) if v >= 100 else "%d" % v
    return "%s / %s / %s / %s" % (k(b.get("ASSIGN", 0)), k(s.get("ASSIGN", 0)), k(s.get("CLEAR", 0)), k(rest))


def dfm_scale_row(r, label=None):
    i = r.get("in_per_s", {})
    k = lambda v: "%.0fk" % (v / 1e3) if v >= 10000 else "%.1fk" % (v / 1e3) if v >= 100 else "%d" % v
    return "| %s | %s | %.2f / %.2f | %.3f | %s / %s | %s | %s | %s | %s |" % (
        label or "%dx%dx%d" % (r["builders"], r["sources"], r["farm_nodes"]),
        "%.0f" % r["events_per_s"] if r["events_per_s"] < 10000 else "%.0fk" % (r["events_per_s"] / 1e3),
        r.get("dfm_cpu_util") or 0, r.get("dfm_runq_wait_util") or 0, r.get("dfm_cpu_us_per_event") or 0,
        k(i.get("DONE", 0)), k(sum(i.values()) - i.get("DONE", 0)), dfm_scale_out(r),
        dfm_scale_lat(r, "trigger_to_assign"), dfm_scale_lat(r, "assign_to_done"),
        ("exact" if r.get("books_ok") else "**NOT EXACT** (%s)" % ", ".join(r.get("books_failed", []))) +
        ("" if r.get("lossless", True) else "; lost %s" % ", ".join(
            "%s %d" % kv for kv in sorted((r.get("lost_by_reason") or {}).items()))))


DFM_SCALE_HEAD = ["| BxSxF | events/s | DFM CPU / run-queue wait (of a core) | DFM CPU us/event | in/s: DONE / other | "
                  "out/s: ASSIGN to B / ASSIGN to S / CLEAR / other | trigger-to-ASSIGN p50 / p99 us | "
                  "ASSIGN-to-DONE p50 / p99 us | books |", "|---|---|---|---|---|---|---|---|---|"]


def dfm_scale():
    """Issue 36: the DFM alone against simulated peers (bench-dfm-scale.sh)."""
    out = ["## The DFM alone, with simulated peers\n",
           "`scripts/bench/bench-dfm-scale.sh`: `xevb dfm` in a namespace of its own against "
           "`build/bench/dfm_sim`, one process playing B builders, S source processes and F farm nodes through "
           "the project's codec (sealed with `--key-file` in the key rows), each peer on its own address "
           "(198.18.0.0/15 on the namespace's lo). Builders grant 64 credits (`xevb build`'s default) and "
           "answer every ASSIGN at once with DONE complete; sources only take what the DFM sends (ASSIGN in "
           "push, CLEAR, BUILDERS); farm nodes report (RECEIVED) the builders' events, so the DFM closes its "
           "books there. So the DFM is the load: as fast as credits allow (`--rate 0`), `--pack` 1 and 25, "
           "`--clear-group` 50 (the default). DFM CPU from /proc/PID/schedstat between the first ASSIGN and "
           "the BYE (\"run-queue wait\": the time it was runnable and waited for a core, the machine's other "
           "load); datagrams/s as the peers sent and received them; latencies from the DFM's own histograms "
           "(`--json` `latency_us`, the metrics `xevb_dfm_trigger_to_assign_seconds`, "
           "`xevb_dfm_assign_to_done_seconds`: bucket upper bounds, at most 12.5% high). At `--rate 0` the "
           "trigger is the step that assigns the event, so trigger-to-ASSIGN is the DFM's own delay to the "
           "builder's datagram (the sources' copies of a push ASSIGN leave after it); with `--rate` it counts "
           "from each event's due time (packing, the 1 ms trigger tick and any wait for credit). "
           "\"books\": exact when the DFM's accounting line is ok (triggered = complete + incomplete + lost by "
           "reason), nothing is outstanding or not delivered at the farm nodes and both processes exit 0; "
           "events lost, if any, by reason (they are counted, never silent).\n"]
    d = load("dfm-scale")
    if not d:
        return out + [not_run("dfm-scale", "scripts/bench/bench-dfm-scale.sh")]
    keep("dfm-scale")
    rows = d.get("results", [])
    bad = [r for r in rows if not r.get("books_ok")]
    loads = [r["loadavg_1m"] for r in rows if r.get("loadavg_1m") is not None]
    lossy = [r for r in rows if not r.get("lossless", True)]
    out.append("_%s; %s s a point; load average during the points %s; books exact in **%d of %d** points, "
               "events lost in %d._\n" % (
                   metaline(d), d.get("seconds_per_point", "?"),
                   "%.1f-%.1f" % (min(loads), max(loads)) if loads else "?", len(rows) - len(bad), len(rows),
                   len(lossy)))
    main = [r for r in rows if not r.get("rate") and r.get("credits") == 64 and r["builders"] <= 64
            and r["sources"] <= 256]
    for mode in ("push", "pull"):
        for pack in sorted({r["pack"] for r in main}):
            for keyed in (False, True):
                sel = [r for r in main if r["mode"] == mode and r["pack"] == pack and r["keyed"] == keyed]
                if not sel:
                    continue
                out.append("**%s, `--pack %d`%s** (BxSxF = builders x source processes x farm nodes)\n" % (
                    mode, pack, ", with a key" if keyed else ""))
                out += DFM_SCALE_HEAD
                out += [dfm_scale_row(r) for r in sel]
                out.append("")
    other = [r for r in rows if r not in main]
    if other:
        out.append("**Credits, a paced trigger, and past the DFM's tables**\n")
        out += DFM_SCALE_HEAD
        for r in other:
            label = "%s pack %d %dx%dx%d%s%s%s" % (
                r["mode"], r["pack"], r["builders"], r["sources"], r["farm_nodes"], " key" if r["keyed"] else "",
                ", credits %d" % r["credits"] if r["credits"] != 64 else "",
                ", --rate %d" % r["rate"] if r.get("rate") else "")
            out.append(dfm_scale_row(r, label))
        out.append("")
    out += dfm_scale_limits(rows)
    out.append(img("dfm-scale", "The DFM alone: events/s and CPU per event along B and S, latencies along B"))
    return out + notes("dfm-scale") + notes("ctl-auth")


def dfm_scale_limits(rows):
    """Where the DFM's fixed tables bite, from the points that reach them."""
    out = []
    for r in rows:
        pr = r.get("peers_refused") or {}
        if r["builders"] > 64:
            out.append("- %d builders: the DFM admitted %d (`XEVB_DFM_MAX_BUILDERS`), gave events to %s, refused "
                       "%d STATUS messages of the others (`peers_refused.builders_table_full`)." % (
                           r["builders"], r["builders_admitted"], r.get("builders_fed"),
                           pr.get("builders_table_full", 0)))
        if r["sources"] > 256:
            out.append("- %d source processes: the DFM admitted %s (`DFM_MAX_SOURCES`), refused %d STATUS "
                       "messages of the others (`sources_table_full`); they get no ASSIGN or CLEAR." % (
                           r["sources"], r.get("sources_admitted"), pr.get("sources_table_full", 0)))
    listed = sorted({(r["sources"], r.get("sources_listed_to_builders")) for r in rows
                     if r["sources"] > 119 and r["sources"] <= 256})
    for s, n in listed:
        out.append("- %d source processes: SOURCES (one datagram, 119 records) lists %s of them to the builders: in "
                   "pull mode a builder never REQUESTs the others' fragments." % (s, n))
    if out:
        out.insert(0, "**Where the limits bite.**\n")
        out.append("")
    return out


# ---------------------------------------------------------------- the rest
def others():
    out = ["## Other pieces of the suite\n",
           "- `e2e.json` (`bench-e2e.sh`): bare AF_XDP receive, the XDP builder and the socket builder on the same "
           "live traffic (L1-like and 3.4 kB frames), gateway and split NAPI models, build-only and forwarding, "
           "with CPU per frame (runs without BPF statistics; the XDP program's ns per packet from a calibration run "
           "with them): [performance.md](performance.md).",
           "- `dfm.json` (`bench-dfm.sh`): the DFM's scaling scans, push and pull: [dfm.md](dfm.md).",
           "- `builder-core.json`, `source_live.json`, `shape.json`, probes: [performance.md](performance.md), "
           "[bench/qos.md](bench/qos.md), [observability.md](observability.md).",
           "- `jumbo.json` (`bench-jumbo.sh`): jumbo MEPs and forwarding modes: "
           "[bench/jumbo-and-forwarding.md](bench/jumbo-and-forwarding.md).",
           "- `mq.json` (`bench-mq.sh`): 1 vs 2 worker threads, projection to 100 Gb/s: "
           "[bench/multiqueue.md](bench/multiqueue.md); tuning knobs: [bench/tuning.md](bench/tuning.md).\n"]
    # e2e-l1-gateway.json: the speed targets judged on medians of several
    # runs (BENCH_CASES=l1 BENCH_PATHS=direct BENCH_MODELS=gateway
    # BENCH_RUNS=3 bench-e2e.sh, saved under that name); e2e.json of a quick
    # suite has one short run a point, which can mislead on a ratio.
    for name, what in (("e2e-l1-gateway", "the speed targets, gateway model, medians of the runs"),
                       ("e2e-l1-split", "the speed targets, split model, medians of the runs"),
                       ("e2e-small-gateway", "small frames (192 B MEPs), gateway model, medians of the runs"),
                       ("e2e", "all cases")):
        e = load(name)
        if not e:
            continue
        keep(name)
        runs = e.get("runs_per_point", "?")
        out.append("_%s (%s, %s run(s) a point): %s._\n" % (name, what, runs, metaline(e)))
        if isinstance(runs, int) and runs < 3:
            out.append("One short run a point: a ratio here can be off by the run-to-run spread (the generator "
                       "itself varies by up to ~40% between runs); the targets are judged on medians of 3 runs "
                       "above when present.\n")
        if e.get("bare_xdp_interleaved") or e.get("meta", {}).get("bare_xdp_interleaved"):
            out.append("Bare and XDP runs alternated (BENCH_INTERLEAVE=1); \"paired\" is the median of the per-run "
                       "XDP/bare ratios.\n")
        paired = {(q["path"], q["model"]): q.get("xdp_over_bare_paired_median") for q in e.get("ratios", [])
                  if not q.get("forward") and q.get("case") == "l1" and not q.get("variant")}
        if e.get("targets"):
            out.append("| target | path | model | value | paired | met |")
            out.append("|---|---|---|---|---|---|")
            for t in e.get("targets", []):
                pv = paired.get((t["path"], t["model"])) if "bare" in t["target"] else None
                out.append("| %s | %s | %s | %.2f | %s | %s |" % (t["target"], t["path"], t["model"], t["value"],
                                                             "%.2f" % pv if pv else "-", "yes" if t["met"] else "no"))
            out.append("")
        if name == "e2e-small-gateway":
            for q in e.get("ratios", []):
                if q.get("case") == "small" and not q.get("forward") and "xdp_over_socket_frames_per_s" in q:
                    v = q["xdp_over_socket_frames_per_s"]
                    out.append("Small frames, %s %s: XDP / socket frames/s = **%.2f** (target >= 7: %s).\n"
                               % (q["path"], q["model"], v, "met" if v >= 7 else "not met"))
        if name != "e2e":
            rows = [r for r in e.get("results", []) if not r.get("forward")]
            out.append("| model | mode | offered Mframes/s | Mframes/s | loss | CPU ns/frame (both cores) | XDP program ns/packet |")
            out.append("|---|---|---|---|---|---|---|")
            for r in rows:
                p = r.get("xdp_prog_ns_per_packet")
                tx = r.get("tx_frames_per_s")
                out.append("| %s | %s | %s | %.3f | %s | %.0f | %s |" % (
                    r["model"], r["mode"], "%.3f" % (tx / 1e6) if tx else "-", r["frames_per_s"] / 1e6,
                    "%.0f%%" % (100 * r["loss"]) if r.get("loss") is not None else "-",
                    r.get("cpu_ns_per_frame") or 0, "%.0f" % p if p else "-"))
            out.append("")
    if load("e2e"):
        out.append(img("e2e-rx", "e2e frames received per mode"))
    if load("dfm"):
        keep("dfm")
        out.append(img("dfm-scan", "DFM scaling scan"))
    out += cost_and_ceiling()
    return out


def cost_and_ceiling():
    """The per-fragment cost (ns, instructions) and the gap to XDP_DROP."""
    out = []
    core = load("builder-core")
    if core:
        keep("builder-core")
        out.append("### The builder's cost per fragment, and the gap to the XDP_DROP ceiling\n")
        out.append("_builder-core (`bench-builder-core.sh`: the builder core alone on one core, synthetic MEPs; "
                   "ns timed, instructions from callgrind over the measured loop)._\n")
        out.append("| case | ns/fragment | instructions/fragment | with the parser: ns/fragment | instructions/fragment |")
        out.append("|---|---|---|---|---|")
        for r in core:
            ins = r.get("instructions_per_fragment")
            pins = r.get("parse_instructions_per_fragment")
            name = r["case"] + (" (%d%% of MEPs lost, %.0f ns a received frame)" % (r["drop_pct"], r["ns_per_frame"])
                                if r.get("drop_pct") else "")
            out.append("| %s | %.2f | %s | %.2f | %s |" % (
                name, r["ns_per_fragment"], "%.1f" % ins if ins else "-", r["parse_ns_per_fragment"],
                "%.1f" % pins if pins else "-"))
        out.append("")
    rows = []
    for name in ("e2e-l1-gateway", "e2e-small-gateway", "e2e-l1-split"):
        e = load(name)
        for q in (e or {}).get("ratios", []):
            if q.get("forward") or q.get("variant") or "xdp_over_drop_frames_per_s" not in q:
                continue
            rows.append("| %s | %s %s | %.2f | %.2f |" % (q["case"], q["path"], q["model"],
                                                         q["xdp_over_drop_frames_per_s"],
                                                         q.get("bare_over_drop_frames_per_s", float("nan"))))
    if rows:
        out.append("Frames/s of the XDP builder and of bare AF_XDP receive as a fraction of XDP_DROP's in the "
                   "same run (the e2e pieces above). The gap is the kernel's receive into the socket (the "
                   "copy into the UMEM, the redirect, the rings), which bare receive pays too: the builder "
                   "itself takes what is left between the two columns.\n")
        out.append("| case | path, model | XDP builder / XDP_DROP | bare receive / XDP_DROP |")
        out.append("|---|---|---|---|")
        out += rows
        out.append("")
    return out


def main():
    note = os.environ.get("BENCH_NOTE", "")
    parts = ["# Benchmarks: the seed studies re-run on xevb\n",
             "<!-- generated by scripts/bench/report.py from build/bench/*.json: edit the script, not this file -->\n",
             "Each of the seed studies (the ATLAS DAQ/EF-1 event builder on Gigabit Ethernet, ATLAS QoS on Linux, LHCb gateway event building, ATLAS data-collection QoS tests) re-measured on the namespace testbed, XDP mode and "
             "the kernel-socket baseline in the same run. Results: `build/bench/<name>.json` (with `meta`: "
             "machine, kernel, versions, git, settings) and `.csv`; copies of the JSON/CSV used here are in "
             "[bench/data/](bench/data/), the plots in [bench/img/](bench/img/).\n",
             "**Regenerate.** `make bench` (all pieces, each bounded; `BENCH_QUICK=1` for the short version; "
             "`BENCH_ONLY=\"daq gateway dcqos\"` for a subset) then `make bench-report` (plots + this file from "
             "the JSON; `make bench` runs it at the end too). One piece: `bash scripts/bench/bench-daq.sh build`.\n",
             "**The machine.** 2 vCPUs (Firecracker VM), veth pairs and a Linux bridge, AF_XDP in copy mode only, "
             "no NIC: every packet is sent and received by the same two cores, so most figures are CPU-bound "
             "where the seeds were link-bound. Where a figure is the machine's limit rather than the design's, "
             "the section says so.%s\n" % ((" " + note) if note else "")]
    only = os.environ.get("REPORT_ONLY")
    if only:  # one section on stdout, to paste (REPORT_ONLY=dfm_scale)
        print("\n".join(globals()[only]()).rstrip())
        return
    for s in (study1, study2, study3, study4, overload, farm_node, dfm_scale, others):
        parts += s()
        parts.append("")
    text = "\n".join(parts).rstrip() + "\n"
    if CHECK:
        sys.exit(check(text))
    os.makedirs(DOCDIR, exist_ok=True)
    with open(DOC, "w") as fo:
        fo.write(text)
    print("wrote", DOC)


def check(text):
    """0 when DOC is text; else its difference (a hand edit of the generated file, or a stale one) and 1."""
    import difflib
    try:
        old = open(DOC).read()
    except OSError as e:
        print("report.py --check: cannot read %s: %s" % (DOC, e.strerror), file=sys.stderr)
        return 1
    if old == text:
        return 0
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), DOC,
                                               "what scripts/bench/report.py makes of " + DATA, n=1))
    print("report.py --check: %s is not what the script makes: edit the script or %s/bench/notes/, "
          "then `python3 scripts/bench/report.py --check` to see, `make bench-report` to write" % (DOC, DOCDIR),
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()

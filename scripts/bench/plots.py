#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Draws the PNG plots of the benchmark suite from its JSON results.

  plots.py DIR [NAME ...]    DIR/NAME.json -> DIR/NAME-*.png (every known
                             result in DIR when no NAME is given)

Debian's /usr/bin/python3 with python3-matplotlib (Agg backend, no display)."""
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]
STYLE = {"xdp": "-", "socket": "--"}
MARK = {1500: "o", 9000: "s", 3500: "^"}


def load(d, name):
    p = os.path.join(d, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None


def save(fig, d, name):
    p = os.path.join(d, name + ".png")
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    print("plot", p)


def family(cfg):
    s, b = (int(x) for x in cfg.split("x"))
    if s == 1 and b == 1:
        return ["1xN", "Nx1", "NxN"]
    return ["1xN"] if s == 1 else ["Nx1"] if b == 1 else ["NxN"] if s == b else []


def plot_daq(d, doc):
    rows = [r for r in doc["results"] if not r.get("skipped") and r.get("events_per_s")]
    for fam in ("1xN", "Nx1", "NxN"):
        sel = [r for r in rows if fam in family(r["config"])]
        if not sel:
            continue
        fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
        cfgs = sorted({r["config"] for r in sel}, key=lambda c: [int(x) for x in c.split("x")])
        for i, cfg in enumerate(cfgs):
            for mode in ("xdp", "socket"):
                for mtu in sorted({r["mtu"] for r in sel}):
                    pts = sorted((r["frag_size"], r["events_per_s"], r["MB_per_s_per_builder"]) for r in sel
                                 if r["config"] == cfg and r["mode"] == mode and r["mtu"] == mtu)
                    if not pts:
                        continue
                    kw = dict(color=COLORS[i % len(COLORS)], linestyle=STYLE[mode], marker=MARK.get(mtu, "x"),
                              label="%s %s MTU %d" % (cfg, mode, mtu))
                    ax[0].plot([p[0] for p in pts], [p[1] / 1e3 for p in pts], **kw)
                    ax[1].plot([p[0] for p in pts], [p[2] for p in pts], **kw)
        ax[0].set_ylabel("event builder rate (kHz, all builders)")
        ax[1].set_ylabel("bandwidth per destination (MB/s)")
        for a in ax:
            a.set_xscale("log")
            a.set_xlabel("fragment size (bytes)")
            a.set_ylim(bottom=0)
            a.grid(True, which="both", alpha=0.3)
        ax[0].set_title("Event rate vs fragment size, %s (seed 000 Fig. 10/12/14)" % fam, fontsize=9)
        ax[1].set_title("Bandwidth per destination, %s (seed 000 Fig. 11/13/15)" % fam, fontsize=9)
        ax[1].legend(fontsize=6, ncol=2)
        save(fig, d, "daq-" + fam)


def plot_gateway(d, doc):
    rows = [r for r in doc["results"] if r.get("kind") == "search"]
    if not rows:
        return
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [r["label"] for r in rows]
    y = range(len(rows))
    col = [COLORS[0] if r["flow"] == "l1" else COLORS[1] for r in rows]
    hatch = ["//" if r.get("sender_limited") else "" for r in rows]
    for a, vals in ((ax[0], [r["lossfree_gbps"] for r in rows]), (ax[1], [r["lossfree_frames_per_s"] / 1e3 for r in rows])):
        for yi, v, c, h in zip(y, vals, col, hatch):
            a.barh(yi, v, color=c, hatch=h, edgecolor="white" if h else c)
    ax[0].axvline(1.35, color="grey", linestyle=":", label="seed step 1: 1.35 Gb/s")
    ax[0].axvline(1.95, color="black", linestyle="--", label="seed best: 1.95 Gb/s (2 x GbE)")
    ax[1].axvline(250, color="black", linestyle="--", label="seed: ~250 kframes/s at ~2 Gb/s")
    ax[0].legend(fontsize=7, loc="lower right")
    ax[1].legend(fontsize=7, loc="lower right")
    ax[1].set_title("hatched: generator-limited, no loss even unpaced (lower bound)", fontsize=9)
    for a in ax:
        a.set_yticks(list(y))
        a.set_yticklabels(labels, fontsize=7)
        a.invert_yaxis()
        a.grid(True, axis="x", alpha=0.3)
    ax[1].set_yticklabels([])
    ax[0].set_xlabel("input rate sustained without loss (Gb/s)")
    ax[1].set_xlabel("input rate sustained without loss (kframes/s)")
    ax[0].set_title("Gateway (seed 002 Table V analogue); blue L1, orange HLT", fontsize=9)
    save(fig, d, "gateway-lossfree")
    # loss vs offered rate of every search
    fig, a = plt.subplots(figsize=(8, 4.5))
    for i, r in enumerate(rows):
        pts = sorted((p["offered_frames_per_s"], p["loss"]) for p in r["probes"])
        a.plot([p[0] / 1e3 for p in pts], [max(p[1], 1e-6) * 100 for p in pts], marker="o",
               color=COLORS[i % len(COLORS)], label=r["label"])
    a.set_yscale("log")
    a.set_xlabel("offered rate (kframes/s)")
    a.set_ylabel("frames lost (%, 1e-4 % = none)")
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=6)
    a.set_title("Gateway: loss vs offered rate, every search probe", fontsize=9)
    save(fig, d, "gateway-loss")
    plot_gateway_forwarded(d, rows)


def forwarded_gbps(r, p):
    """Input Gb/s of the events the farm node got complete in a probe: the
    frames received, scaled by the share of their events that arrived."""
    events_in = p.get("rx", 0) * r["pack"] / r["sources"]
    done = p.get("sink_complete", p.get("sink_events", 0)) or 0
    return p["gbps"] * min(1.0, done / events_in) if events_in else 0.0


def plot_gateway_forwarded(d, rows):
    """Issue 18's plot: forwarded Gb/s against offered Gb/s, XDP and socket
    builders with forwarding, every probe, beside the seed's 1.95 Gb/s."""
    sel = [r for r in rows if r["impl"] in ("xdp+fwd", "socket+fwd") and r["mtu"] == 1500 and r["probes"]
           and r["pack"] == (25 if r["flow"] == "l1" else 10)]
    if not sel:
        return
    fig, a = plt.subplots(figsize=(8, 4.5))
    top = 0.0
    for r in sel:
        gb_per_frame = r["frame_bytes"] * 8 / 1e9
        pts = sorted((p["offered_frames_per_s"] * gb_per_frame, forwarded_gbps(r, p)) for p in r["probes"])
        top = max([top] + [p[0] for p in pts])
        a.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linestyle=STYLE[r["impl"].split("+")[0]],
               color=COLORS[0] if r["flow"] == "l1" else COLORS[1], label=r["label"])
    a.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle=":", label="everything offered")
    a.axhline(1.95, color="black", linestyle="--", label="seed best: 1.95 Gb/s (2 x GbE)")
    a.set_xlabel("offered (Gb/s of frames)")
    a.set_ylabel("forwarded: events complete at the farm node (input Gb/s)")
    a.set_xlim(left=0)
    a.set_ylim(bottom=0)
    a.grid(True, alpha=0.3)
    a.legend(fontsize=7)
    a.set_title("Gateway with forwarding: solid XDP, dashed socket; blue L1, orange HLT", fontsize=9)
    save(fig, d, "gateway-forwarded")


def plot_dcqos(d, doc):
    rows = [r for r in doc["results"] if not r.get("skipped") and "eoe_per_s" in r]
    if not rows:
        return
    for cfg in sorted({r["config"] for r in rows}):
        fig, ax = plt.subplots(1, 3, figsize=(15, 4.5))
        i = 0
        for dm in ("push", "pull"):
            for mode in ("xdp", "socket"):
                for shaped in sorted({r["shape"] for r in rows}):
                    pts = sorted((r["frag_size"], r["eoe_per_s"], r["MB_per_s"], r["reask_events"]) for r in rows
                                 if r["config"] == cfg and r["dfm_mode"] == dm and r["mode"] == mode and r["shape"] == shaped)
                    if not pts:
                        continue
                    kw = dict(color=COLORS[i % len(COLORS)], linestyle=STYLE[mode], marker="o" if dm == "push" else "s",
                              label="%s %s %s" % (dm, mode, "shaped %s" % shaped if shaped != "none" else "no QoS"))
                    i += 1
                    ax[0].plot([p[0] for p in pts], [p[1] / 1e3 for p in pts], **kw)
                    ax[1].plot([p[0] for p in pts], [p[2] for p in pts], **kw)
                    ax[2].plot([p[0] for p in pts], [p[3] for p in pts], **kw)
        ax[0].set_ylabel("end-of-event rate (kHz)")
        ax[1].set_ylabel("throughput (MB/s)")
        ax[2].set_ylabel("re-asked events (count)")
        for a in ax:
            a.set_ylim(bottom=0)
            a.set_xscale("log")
            a.set_xlabel("fragment size (bytes)")
            a.grid(True, which="both", alpha=0.3)
        ax[0].set_title("%s: EoE rate vs fragment size (seed 003)" % cfg, fontsize=9)
        ax[1].set_title("%s: throughput vs fragment size" % cfg, fontsize=9)
        ax[2].set_title("%s: re-asks" % cfg, fontsize=9)
        ax[1].legend(fontsize=6)
        save(fig, d, "dcqos-" + cfg)


def plot_dfm(d, doc):
    pts = doc.get("results") or doc.get("points") or []
    if not pts:
        return
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    i = 0
    for mode in ("push", "pull"):
        for cfg in sorted({"%dx%d" % (p["sources"], p["builders"]) for p in pts}):
            sel = sorted((p["frag_size"], p["events_per_s"], p["MB_per_s_per_builder"]) for p in pts
                         if p["mode"] == mode and "%dx%d" % (p["sources"], p["builders"]) == cfg)
            kw = dict(color=COLORS[i % len(COLORS)], linestyle="-" if mode == "push" else "--", marker="o",
                      label="%s %s" % (cfg, mode))
            i += 1
            ax[0].plot([s[0] for s in sel], [s[1] / 1e3 for s in sel], **kw)
            ax[1].plot([s[0] for s in sel], [s[2] for s in sel], **kw)
    ax[0].set_ylabel("event rate (kHz)")
    ax[1].set_ylabel("bandwidth per builder (MB/s)")
    for a in ax:
        a.set_xlabel("fragment size (bytes)")
        a.grid(True, alpha=0.3)
    ax[1].legend(fontsize=6, ncol=2)
    ax[0].set_title("DFM scaling scan, socket builders (bench-dfm.sh, docs/dfm.md)", fontsize=9)
    save(fig, d, "dfm-scan")


def dfm_scale_axis(pts, axis, mode, pack, keyed):
    """The scan's points along one axis (B with S = 1, or S with B = 1; F = 1), as fast as credits allow,
    within the DFM's tables: sorted (x, row)."""
    fixed = "sources" if axis == "builders" else "builders"
    return sorted((r[axis], r) for r in pts if r[fixed] == 1 and r["farm_nodes"] == 1 and r["mode"] == mode
                  and r["pack"] == pack and r["keyed"] == keyed and not r["rate"] and r["credits"] == 64
                  and r["builders"] <= 64 and r["sources"] <= 256)


def plot_dfm_scale(d, doc):
    """bench-dfm-scale.sh: events/s and DFM CPU per event along B and S, the latencies along B."""
    pts = [r for r in doc.get("results", []) if r.get("books_ok")]
    if not pts:
        return
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    i = 0
    for mode in ("push", "pull"):
        for pack in sorted({r["pack"] for r in pts}):
            for keyed in (False, True):
                kw = dict(color=COLORS[i % len(COLORS)], linestyle="--" if keyed else "-", marker="o",
                          label="%s pack %d%s" % (mode, pack, " key" if keyed else ""))
                for a, axis, key, scale in ((ax[0][0], "builders", "events_per_s", 1e3),
                                            (ax[0][1], "sources", "events_per_s", 1e3),
                                            (ax[1][0], "sources", "dfm_cpu_us_per_event", 1)):
                    sel = dfm_scale_axis(pts, axis, mode, pack, keyed)
                    if sel:
                        a.plot([x for x, _ in sel], [r[key] / scale for _, r in sel], **kw)
            i += 1
    for mode, pack, c in (("push", 25, COLORS[0]), ("pull", 1, COLORS[1])):
        sel = dfm_scale_axis(pts, "builders", mode, pack, False)
        for which, ls in (("trigger_to_assign", ":"), ("assign_to_done", "-")):
            for q, mk in (("p50", "o"), ("p99", "^")):
                ys = [(x, r["lat_us"].get(which, {}).get(q)) for x, r in sel]
                ys = [(x, y) for x, y in ys if y]
                if ys:
                    ax[1][1].plot([x for x, _ in ys], [y for _, y in ys], color=c, linestyle=ls, marker=mk,
                                  label="%s pack %d %s %s" % (mode, pack, which.replace("_", " "), q))
    ax[0][0].set_ylabel("events/s (k), S = 1")
    ax[0][1].set_ylabel("events/s (k), B = 1")
    ax[1][0].set_ylabel("DFM CPU per event (us), B = 1")
    ax[1][1].set_ylabel("latency (us), S = 1, no key")
    for a, xl in ((ax[0][0], "builders B"), (ax[0][1], "source processes S"), (ax[1][0], "source processes S"),
                  (ax[1][1], "builders B")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel(xl)
        a.grid(True, which="both", alpha=0.3)
    ax[0][1].legend(fontsize=6, ncol=2)
    ax[1][1].legend(fontsize=5, ncol=2)
    ax[0][0].set_title("The DFM alone, simulated peers, F = 1 farm node (bench-dfm-scale.sh)", fontsize=9)
    save(fig, d, "dfm-scale")


def plot_dfm_cost(d, doc):
    """bench-dfm-scale.sh DSCALE_SCAN=cost: DFM CPU per event and datagrams per event along B (S = 320) and
    S (B = 128), F = 1024, pack 25, as fast as credits allow; the fitted model dashed (dfm_scale.py fit)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dfm_scale
    pts = [r for r in doc.get("results", []) if r.get("window_blocks") is not None and r.get("dfm_cpu_s")]
    ok = [r for r in pts if r.get("books_ok")]
    if not ok:
        return
    k = dfm_scale.nnls([dfm_scale.features(r) for r in ok], [r["dfm_cpu_s"] for r in ok])
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    for col, (axis, fixed, val) in enumerate((("builders", "sources", 320), ("sources", "builders", 128))):
        for i, mode in enumerate(("push", "pull")):
            sel = sorted((r[axis], r) for r in pts if r[fixed] == val and r["mode"] == mode and r["pack"] == 25
                         and not r["rate"] and r["farm_nodes"] == 1024)
            if not sel:
                continue
            xs = [x for x, _ in sel]
            ev = [r["window_events"] or 1 for _, r in sel]
            c = COLORS[i]
            ax[0][col].plot(xs, [r["dfm_cpu_s"] / e * 1e6 for (_, r), e in zip(sel, ev)], color=c, marker="o",
                            label="%s measured" % mode)
            ax[0][col].plot(xs, [sum(a * b for a, b in zip(k, dfm_scale.features(r))) / e * 1e6
                                 for (_, r), e in zip(sel, ev)], color=c, linestyle="--", label="%s model" % mode)
            bad = [(x, r["dfm_cpu_s"] / e * 1e6) for (x, r), e in zip(sel, ev) if not r.get("books_ok")]
            if bad:
                ax[0][col].plot([x for x, _ in bad], [y for _, y in bad], color=c, marker="x", markersize=10,
                                linestyle="none", label="%s books not closed" % mode)
            ax[1][col].plot(xs, [r["window_in"] / e for (_, r), e in zip(sel, ev)], color=c, marker="o",
                            label="%s datagrams in" % mode)
            ax[1][col].plot(xs, [r["window_out"] / e for (_, r), e in zip(sel, ev)], color=c, marker="s",
                            linestyle=":", label="%s datagrams out" % mode)
        ax[0][col].set_ylabel("DFM CPU per event (us)")
        ax[1][col].set_ylabel("datagrams per event")
        for a in (ax[0][col], ax[1][col]):
            a.set_xscale("log", base=2)
            a.set_yscale("log")
            a.set_xlabel("builders B (S = 320)" if axis == "builders" else "source processes S (B = 128)")
            a.grid(True, which="both", alpha=0.3)
            a.legend(fontsize=6)
    ax[0][0].set_title("DFM cost, simulated peers, F = 1024, pack 25 (bench-dfm-scale.sh DSCALE_SCAN=cost)",
                       fontsize=9)
    save(fig, d, "dfm-cost")


# "drop" is the XDP_DROP ceiling run beside the others (bench-e2e.sh).
E2E_MODES = ["bare", "xdp", "socket", "drop"]


def plot_e2e(d, doc):
    rows = [r for r in doc.get("results", []) if not r.get("forward")]
    if not rows:
        return
    fig, a = plt.subplots(figsize=(9, 4.5))
    labels = ["%s %s %s %s" % (r["path"], r["case"], r["model"], r["mode"]) for r in rows]
    a.barh(range(len(rows)), [r["frames_per_s"] / 1e6 for r in rows], color=[COLORS[E2E_MODES.index(r["mode"]) if r["mode"] in E2E_MODES else len(E2E_MODES)] for r in rows])
    a.set_yticks(range(len(rows)))
    a.set_yticklabels(labels, fontsize=7)
    a.invert_yaxis()
    a.set_xlabel("frames received (Mframes/s), build only")
    a.set_title("End to end: XDP_DROP ceiling / bare AF_XDP / XDP builder / socket builder", fontsize=9)
    a.grid(True, axis="x", alpha=0.3)
    save(fig, d, "e2e-rx")


# The overload curves of the code before the overload fixes (issue 25),
# kept in the docs: each drawn on its own, and the first one there faintly
# under the current curve so the fix shows.
DOCDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "bench", "data")
OVERLOAD_BEFORE = [("overload-before", "before (17fcca1)")]


def overload_before():
    """(name, label, doc) of each kept before-curve."""
    out = []
    for name, label in OVERLOAD_BEFORE:
        try:
            out.append((name, label, json.load(open(os.path.join(DOCDATA, name + ".json")))))
        except (OSError, ValueError):
            pass
    return out


def overload_lines(a, doc, faint=None):
    """Goodput vs offered load, a line per case and mode; FAINT: a label, grey."""
    rows = [r for r in doc.get("results", []) if r.get("offered_over_lossfree") and r.get("goodput_over_lossfree") is not None]
    cases = sorted({r["case"] for r in rows}, key=lambda c: (c != "l1", c))
    for ci, case in enumerate(cases):
        for mode in ("xdp", "socket"):
            pts = sorted((r["offered_over_lossfree"], r["goodput_over_lossfree"], r["load"]) for r in rows
                         if r["case"] == case and r["mode"] == mode)
            if not pts:
                continue
            kw = dict(color="grey" if faint else COLORS[ci % len(COLORS)], linestyle=STYLE.get(mode, "-"),
                      linewidth=0.8 if faint else 1.6, alpha=0.6 if faint else 1.0,
                      label="%s %s%s" % ("L1" if case == "l1" else case.upper(), mode, " (before, %s)" % faint if faint else ""))
            a.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if faint else "o", **kw)
            for x, y, load in pts:
                if load == "unpaced":
                    a.plot([x], [y], marker="*", markersize=6 if faint else 10, color=kw["color"], alpha=kw["alpha"])
                    if not faint:
                        a.annotate("unpaced", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=6,
                                   color=kw["color"])


def plot_overload(d, doc, name="overload-goodput", title="builder with shipped defaults", under=True):
    fig, a = plt.subplots(figsize=(9, 5))
    before = overload_before() if under else []
    if before and before[0][2].get("meta", {}).get("date") != doc.get("meta", {}).get("date"):
        overload_lines(a, before[0][2], faint=before[0][1])
    overload_lines(a, doc)
    a.axhline(0.9, color="black", linestyle="--", linewidth=1, label="0.9 of the loss-free rate")
    # below the loss-free rate every event offered should arrive: goodput = offered
    a.plot([0.3, 1.0], [0.3, 1.0], color="black", linestyle=":", linewidth=0.8, label="goodput = offered")
    a.set_xscale("log")
    a.set_ylim(bottom=0)
    a.set_xlabel("offered load / loss-free rate (events/s; star: unpaced)")
    a.set_ylabel("complete events/s at the farm node / loss-free rate")
    a.set_title("Goodput vs offered load (bench-overload.sh; %s)" % title, fontsize=9)
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=7)
    save(fig, d, name)


def plot_overload_before(d):
    """Each kept before-curve on its own: NAME.png."""
    for name, label, doc in overload_before():
        plot_overload(d, doc, name, "before the fixes: %s, shared machine" % label, under=False)


PLOTS = {"daq": plot_daq, "gateway": plot_gateway, "dcqos": plot_dcqos, "dfm": plot_dfm, "e2e": plot_e2e,
         "overload": plot_overload, "dfm-scale": plot_dfm_scale,
         "dfm-cost": plot_dfm_cost}


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    names = sys.argv[2:] or list(PLOTS)
    for n in names:
        doc = load(d, n)
        if doc is None:
            if len(sys.argv) > 2:
                print("plots: no %s/%s.json" % (d, n), file=sys.stderr)
            continue
        try:
            PLOTS[n](d, doc)
        except (KeyError, ValueError, TypeError) as e:
            print("plots: %s: %r" % (n, e), file=sys.stderr)
    if "overload" in names:
        plot_overload_before(d)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helper of bench-mq.sh (multi-queue receive, 1 worker vs 2 workers).

  mq.py snap PID [NAPI_PID...]    one JSON line: run time (schedstat, ns) of
                                  every thread of PID, of each napi thread,
                                  and /proc/stat busy time of every core
  mq.py run KEY=VALUE...          one run's row from two snaps + the JSONs
  mq.py report ROWS OUT_DIR META  medians, ratios, the per-frame/per-fragment
                                  fit, the 100 Gb/s projection; JSON, CSV, PNGs

CPU is what the builder's threads ran (all of them, on any core) plus the
veth's napi threads (threaded NAPI: the kernel's copy into the UMEM), per
frame received. The generator is not counted: it is not part of a gateway.
"""
import csv
import glob
import json
import os
import statistics
import sys
import time

import benchlib

USER_HZ = 100


def user_sys_ns(pid):
    """utime and stime of every thread (clock ticks: 10 ms resolution)."""
    u = k = 0
    for f in glob.glob("/proc/%s/task/*/stat" % pid):
        try:
            with open(f) as fh:
                v = fh.read().rsplit(")", 1)[1].split()
            u += int(v[11])
            k += int(v[12])
        except (OSError, ValueError, IndexError):
            pass
    return u * 1e9 / USER_HZ, k * 1e9 / USER_HZ


def busy_ns():
    return sum(t["busy"] for t in benchlib.core_ticks().values()) * 1e9 / USER_HZ


def cmd_snap(args):
    pid, napi = args[0], args[1:]
    u, k = user_sys_ns(pid)
    print(json.dumps({"t": time.monotonic(), "builder_ns": benchlib.task_ns(pid), "user_ns": u, "sys_ns": k,
                      "napi_ns": sum(benchlib.task_ns(p) for p in napi), "busy_ns": busy_ns()}))


def last_json(path, prefix="{"):
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.startswith(prefix)]
    return json.loads(lines[-1]) if lines else None


def cmd_run(args):
    kv = dict(a.split("=", 1) for a in args)
    s0, s1 = (json.loads(open(kv[k]).read()) for k in ("s0", "s1"))
    b = last_json(kv["bld"])
    w = last_json(kv["bld"], '{"workers"')
    src = last_json(kv["src"]) or {}
    fr = b["rx_frames"] if b else 0
    frags = b["frags_received"] if b else 0
    dt = s1["t"] - s0["t"]
    bns = s1["builder_ns"] - s0["builder_ns"]
    nns = s1["napi_ns"] - s0["napi_ns"]
    row = {
        "path": kv.get("path", "bridge"), "case": kv["case"], "config": kv["config"], "workers": int(kv["workers"]), "run": int(kv["run"]),
        "frames": fr, "frags": frags, "frags_per_frame": frags / fr if fr else 0,
        "frame_bytes": b["rx_bytes"] / fr if fr else 0,
        "seconds": dt, "mframes_per_s": fr / dt / 1e6 if dt else 0,
        "tx_packets": src.get("packets", 0),
        "builder_ns_per_frame": bns / fr if fr else None,
        "napi_ns_per_frame": nns / fr if fr else None,
        "user_ns_per_frame": (s1["user_ns"] - s0["user_ns"]) / fr if fr else None,
        "sys_ns_per_frame": (s1["sys_ns"] - s0["sys_ns"]) / fr if fr else None,
        "rx_side_ns_per_frame": (bns + nns) / fr if fr else None,
        "busy_ns_per_frame": (s1["busy_ns"] - s0["busy_ns"]) / fr if fr else None,
        "events_complete": b["events_complete"] if b else 0,
        "events_incomplete": b["events_incomplete"] if b else 0,
        "handoff_per_frame": (sum(x["handoff_sent"] for x in w["workers"]) / fr) if (w and fr) else 0,
        "split_meps": sum(x["split_meps"] for x in w["workers"]) if w else 0,
        "queue_frames": [q["rx_frames"] for x in w["workers"] for q in x["queues"]] if w else [],
        "builder_rc": int(kv.get("rc", "0")),
        "ok": bool(b) and kv.get("rc", "0") == "0" and fr > 0,
    }
    print(json.dumps(row))


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(v) if v else None


def fit(points):
    """Least squares ns = a + b * frags over (frags, ns) points."""
    n = len(points)
    if n < 2:
        return None, None
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None, None
    b = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx
    return my - b * mx, b


# 100 Gb/s of frames of this many bytes on the wire (+ FCS, preamble, gap: 24 B).
def frames_per_s(frame_bytes):
    return 100e9 / 8 / (frame_bytes + 24)


# The traffic of the projection: MEP = 16 B header + records of 12 B + payload.
SHAPES = {"L1-like (25 x 32 B)": (25, 32), "HLT-like (10 x 100 B)": (10, 100)}


def cmd_report(args):
    rows = [json.loads(l) for l in open(args[0]) if l.strip()]
    out, meta = args[1], json.loads(args[2])
    pts = []
    # A point: path:case (direct:l1 ...) and configuration.
    key = lambda r: "%s:%s" % (r["path"], r["case"])
    for case in sorted({key(r) for r in rows}, key=lambda c: (c.split(":")[0], [r["frags_per_frame"] for r in rows if key(r) == c][0])):
        for cf in sorted({r["config"] for r in rows}):
            rs = [r for r in rows if key(r) == case and r["config"] == cf and r["ok"]]
            if not rs:
                continue
            p = {"case": case, "path": rs[0]["path"], "config": cf, "workers": rs[0]["workers"], "runs": len(rs)}
            for k in ("frames", "frags_per_frame", "frame_bytes", "mframes_per_s", "builder_ns_per_frame",
                      "user_ns_per_frame", "sys_ns_per_frame",
                      "napi_ns_per_frame", "rx_side_ns_per_frame", "busy_ns_per_frame", "handoff_per_frame"):
                p[k] = med(rs, k)
            p["builder_ns_per_frag"] = p["builder_ns_per_frame"] / p["frags_per_frame"] if p["frags_per_frame"] else None
            pts.append(p)
    ratios = {}
    for case in {p["case"] for p in pts}:
        for two, base in [(p, b) for p in pts if p["case"] == case and p["config"] not in ("w1", "w1c", "w1cbase")
                          # A coalescing configuration (w2c, w2cbase) against the coalescing single
                          # worker (same wake-up policy) and the loop of before; w2c against w2cbase (A/B);
                          # the other build's own ratio, w2cbase/w1cbase.
                          for b in (("w1c", "w1") if "c" in p["config"][2:] else ("w1",)) +
                          (("w2cbase",) if p["config"] == "w2c" else ()) +
                          (("w1cbase",) if p["config"] == "w2cbase" else ())]:
            one = [p for p in pts if p["case"] == case and p["config"] == base]
            if not one or not one[0]["builder_ns_per_frame"]:
                continue
            ratios["%s %s/%s" % (case, two["config"], base)] = {
                "builder_ns_ratio": two["builder_ns_per_frame"] / one[0]["builder_ns_per_frame"],
                "rx_side_ns_ratio": two["rx_side_ns_per_frame"] / one[0]["rx_side_ns_per_frame"],
                "user_ns_ratio": (two["user_ns_per_frame"] / one[0]["user_ns_per_frame"]) if one[0]["user_ns_per_frame"] else None,
                "within_10pct": two["rx_side_ns_per_frame"] <= 1.10 * one[0]["rx_side_ns_per_frame"],
            }
    model, proj = {}, []
    for nw in sorted({"%s:%s" % (p["path"], p["config"]) for p in pts}):
        q = [p for p in pts if "%s:%s" % (p["path"], p["config"]) == nw]
        a, b = fit([(p["frags_per_frame"], p["builder_ns_per_frame"]) for p in q])
        na, nb = fit([(p["frags_per_frame"], p["napi_ns_per_frame"] or 0) for p in q])
        model[nw] = {"builder_ns_per_frame_fixed": a, "builder_ns_per_fragment": b,
                     "napi_ns_per_frame_fixed": na, "napi_ns_per_fragment": nb}
        if a is None:
            continue
        for name, (nf, size) in SHAPES.items():
            fb = 14 + 20 + 16 + nf * (12 + size)
            fps = frames_per_s(fb)
            bns = a + b * nf
            nns = (na or 0) + (nb or 0) * nf
            proj.append({"traffic": name, "config": nw, "frame_bytes": fb, "mframes_per_s": fps / 1e6,
                         "builder_ns_per_frame": bns, "napi_ns_per_frame": nns,
                         "builder_cores": fps * bns / 1e9, "with_kernel_rx_cores": fps * (bns + nns) / 1e9})
    res = {"meta": meta, "results": rows, "points": pts, "ratios": ratios, "model": model, "projection": proj}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "mq.json"), "w") as f:
        json.dump(res, f, indent=1)
    keys = [k for k in rows[0] if k != "queue_frames"] + ["queue_frames"] if rows else []
    with open(os.path.join(out, "mq.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=keys)
        wr.writeheader()
        for r in rows:
            wr.writerow({**r, "queue_frames": " ".join(map(str, r["queue_frames"]))})
    print("%-12s %6s %6s %8s %9s %8s %8s %9s %9s %9s %8s" % ("case", "config", "fr/pk", "Mfr/s", "bld ns/fr", "user ns",
                                                     "sys ns", "napi ns", "bld ns/fg", "busy ns", "handoff"))
    for p in pts:
        print("%-12s %6s %6.1f %8.3f %9.0f %8.0f %8.0f %9.0f %9.1f %9.0f %8.2f" % (
            p["case"], p["config"], p["frags_per_frame"], p["mframes_per_s"], p["builder_ns_per_frame"],
            p["user_ns_per_frame"] or 0, p["sys_ns_per_frame"] or 0,
            p["napi_ns_per_frame"] or 0, p["builder_ns_per_frag"] or 0, p["busy_ns_per_frame"] or 0,
            p["handoff_per_frame"] or 0))
    for c, r in sorted(ratios.items()):
        print("%-20s CPU per frame ratio: builder %.3f (user time only %s), builder+napi %.3f (target <= 1.10: %s)" % (
            c, r["builder_ns_ratio"], "%.2f" % r["user_ns_ratio"] if r["user_ns_ratio"] else "-",
            r["rx_side_ns_ratio"], "met" if r["within_10pct"] else "NOT met"))
    for nw, m in sorted(model.items()):
        if m["builder_ns_per_frame_fixed"] is not None:
            print("model %-13s: builder %.0f ns/frame + %.1f ns/fragment; napi %.0f + %.1f" % (
                nw, m["builder_ns_per_frame_fixed"], m["builder_ns_per_fragment"],
                m["napi_ns_per_frame_fixed"] or 0, m["napi_ns_per_fragment"] or 0))
    for p in proj:
        print("100 Gb/s %-22s %-13s: %.2f Mfr/s x %.0f ns = %.1f cores (%.1f with the kernel's copy-mode receive)" % (
            p["traffic"], p["config"], p["mframes_per_s"], p["builder_ns_per_frame"], p["builder_cores"],
            p["with_kernel_rx_cores"]))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        cases = [c for c in dict.fromkeys(p["case"] for p in pts)]
        fig, ax = plt.subplots(figsize=(10, 4.5))
        cfgs = sorted({p["config"] for p in pts})
        width = 0.8 / len(cfgs)
        for i, nw in enumerate(cfgs):
            ys = [next((p["builder_ns_per_frame"] for p in pts if p["case"] == c and p["config"] == nw), 0) for c in cases]
            ns = [next((p["napi_ns_per_frame"] or 0 for p in pts if p["case"] == c and p["config"] == nw), 0) for c in cases]
            xs = [j + (i - (len(cfgs) - 1) / 2) * width for j in range(len(cases))]
            bars = ax.bar(xs, ys, width, label="builder threads, " + nw)
            ax.bar(xs, ns, width, bottom=ys, alpha=0.35, color=bars[0].get_facecolor(), hatch="//",
                   label="napi threads (kernel copy), " + nw)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels(["%s\n%.0f frags/frame" % (c, next(p["frags_per_frame"] for p in pts if p["case"] == c)) for c in cases], fontsize=8)
        ax.set_ylabel("CPU ns per frame (all cores)")
        ax.set_title("Multi-queue receive: CPU per frame, 1 vs 2 workers (2 RX queues)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "mq.png"), dpi=100)
    except ImportError:
        print("no matplotlib: no plot", file=sys.stderr)


if __name__ == "__main__":
    sys.exit({"snap": cmd_snap, "run": cmd_run, "report": cmd_report}[sys.argv[1]](sys.argv[2:]) or 0)

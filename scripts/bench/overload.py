#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helper of bench-overload.sh: one point's figures, the loss-free test, the
report (goodput vs offered load).

  overload.py point KEY=VALUE...    one JSON line from the JSON summaries of
                                    source/build/sink and two CPU snapshots
                                    (e2e.py snap) around the generator's run
  overload.py passes TOL            reads a point's line on stdin: exit 0
                                    when it was loss-free (every event sent
                                    arrived complete at the farm node, none
                                    incomplete; TOL: share of the events sent
                                    allowed to miss that, 0 by default)
  overload.py first-guess [TOL]     reads the unpaced point's line: prints
                                    "HI FIRST" (events/s) for the bisection,
                                    or "0 0" if even unpaced was loss-free
  overload.py search PROBES KEY=VALUE...
                                    one search's result (JSON line): the
                                    loss-free rate, measured (offered events/s
                                    of the fastest loss-free probe) and asked
                                    (its --rate: target=), and the probes
  overload.py report POINTS SEARCHES OUTDIR KEY=VALUE...
                                    medians per case, mode and load; writes
                                    OUTDIR/overload.json (+ .csv), prints the table

Builder counters are read by name where they exist: events_evicted (window
eviction) and shed_events / shed_meps / shed_frags (XDP whole-event
shedding) are newer than this script and may be absent (then null)."""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

# counters of a builder's summary picked up by name wherever they sit
OPTIONAL = ("events_evicted", "shed_events", "shed_meps", "shed_frags")
LOAD_ORDER = {"unpaced": 1e9}


def load_order(label):
    return LOAD_ORDER.get(label, float(label) if label.replace(".", "", 1).isdigit() else 1e12)


def find_key(doc, key):
    """The value of KEY anywhere in a nested summary (summed if it is in
    several places, e.g. per worker), None if nowhere."""
    found = []

    def walk(d):
        if isinstance(d, dict):
            for k, v in d.items():
                if k == key and isinstance(v, (int, float)) and not isinstance(v, bool):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(d, list):
            for v in d:
                walk(v)
    walk(doc)
    return sum(found) if found else None


def task_cpu_s(s0, s1, role):
    a = s0.get("pids", {}).get(role, {}).get("ns")
    b = s1.get("pids", {}).get(role, {}).get("ns")
    return (b - a) / 1e9 if a is not None and b is not None and b >= a else None


def cmd_point(args):
    kv = dict(a.split("=", 1) for a in args)
    src = benchlib.summary_json(kv["src"])
    bld = benchlib.summary_json(kv["bld"])
    snk = benchlib.summary_json(kv["sink"])
    s0, s1 = benchlib.last_json(kv["s0"]), benchlib.last_json(kv["s1"])
    nsrc, pack = int(kv["nsrc"]), int(kv["pack"])
    el = src.get("elapsed_s") or 0
    sent = src.get("events", 0)
    tx, rx = src.get("packets", 0), bld.get("rx_frames", 0)
    complete, incomplete = snk.get("complete", 0), snk.get("incomplete", 0)
    delivered = snk.get("events", complete + incomplete)
    opt = {k: find_key(bld, k) for k in OPTIONAL}
    shed = opt["shed_events"] or 0
    wall = s1.get("t", 0) - s0.get("t", 0)
    bcpu, ncpu = task_cpu_s(s0, s1, "builder"), task_cpu_s(s0, s1, "napi")
    tick = 0.01  # USER_HZ
    cpu1 = None
    if s0.get("stat") and s1.get("stat"):
        cpu1 = (s1["stat"]["cpu1"]["busy"] - s0["stat"]["cpu1"]["busy"]) * tick
    ok = bool(el) and bool(bld) and bool(snk) and snk.get("result") == "ok" and not snk.get("errors")
    r = {
        "case": kv["case"], "mode": kv["mode"], "load": kv["load"], "phase": kv.get("phase", "point"),
        "round": kv.get("round"), "target_events_per_s": float(kv.get("target", 0)),
        "ok": ok, "elapsed_s": el, "nsrc": nsrc, "pack": pack,
        "offered_events_per_s": sent / el if el else 0,
        "offered_frames_per_s": tx / el if el else 0,
        "rx_frames_per_s": rx / el if el else 0,
        "complete_events_per_s": complete / el if el else 0,
        "incomplete_share": incomplete / delivered if delivered else None,
        "events_sent": sent, "frames_sent": tx, "frames_received": rx,
        "frames_lost_before_builder": tx - rx,
        # xdp mode: frames the XDP program saw (the rest were lost in the veth)
        "frames_seen_by_xdp": (bld.get("xdp") or {}).get("mep", {}).get("packets") if kv["mode"] == "xdp" else None,
        "delivered_complete": complete, "delivered_incomplete": incomplete,
        "builder": {
            "events_opened": bld.get("events_opened"), "events_complete": bld.get("events_complete"),
            # incomplete: emitted on timeout or flushed at the stop
            "events_incomplete": bld.get("events_incomplete"), "events_discarded": bld.get("events_discarded"),
            "open_events": bld.get("open_events"), "out_events": bld.get("out_events"),
            "out_dropped": (bld.get("out_dropped_no_sink", 0) + bld.get("out_dropped_error", 0)) if bld else None,
            "frag_drops": {k[5:]: v for k, v in bld.items() if k.startswith("drop_") and isinstance(v, int)},
            "ring_drops": bld.get("xsk_rx_dropped", 0) + bld.get("xsk_rx_ring_full", 0) + bld.get("sock_kernel_drops", 0),
            **opt,
        },
        # the books: every event sent is delivered complete, delivered
        # incomplete, shed whole (XDP, if the builder counts it) or never
        # delivered (lost whole: all its frames dropped, or discarded)
        "books": {
            "sent": sent, "delivered_complete": complete, "delivered_incomplete": incomplete,
            "shed": opt["shed_events"], "evicted": opt["events_evicted"],
            "never_delivered": sent - delivered - shed,
            "builder_out_matches_sink": bld.get("out_events") == delivered if bld and snk else None,
        },
        "builder_cpu": bcpu / wall if bcpu is not None and wall > 0 else None,
        "napi_cpu": ncpu / wall if ncpu is not None and wall > 0 else None,
        "cpu1_busy": cpu1 / wall if cpu1 is not None and wall > 0 else None,
        "sink_result": snk.get("result"), "sink_errors": snk.get("errors"),
        # build to farm node (the event header's build time), at the sink
        "latency_us": snk.get("latency_us"),
    }
    print(json.dumps(r))


def lossfree(r, tol=0.0):
    """Every event sent arrived complete at the farm node and none incomplete
    (up to TOL of the events sent)."""
    sent = r.get("events_sent", 0)
    missed = sent - r.get("delivered_complete", 0)
    return bool(r.get("ok")) and sent > 0 and r.get("delivered_incomplete", 1) <= tol * sent and missed <= tol * sent


def cmd_passes(args):
    try:
        r = json.loads(sys.stdin.read())
    except ValueError:
        return 1
    return 0 if lossfree(r, float(args[0]) if args else 0.0) else 1


def cmd_first_guess(args):
    try:
        r = json.loads(sys.stdin.read())
    except ValueError:
        print("0 0")
        return 0
    if lossfree(r, float(args[0]) if args else 0.0):
        print("0 0")
        return 0
    hi = int(r.get("offered_events_per_s", 0))
    # what the builder received unpaced, in events/s: above the loss-free rate
    first = int(r.get("rx_frames_per_s", 0) * r["pack"] / r["nsrc"])
    print("%d %d" % (hi, first if 0 < first < hi else hi // 2))
    return 0


def cmd_search(args):
    kv = dict(a.split("=", 1) for a in args[1:])
    probes = [json.loads(l) for l in open(args[0]) if l.startswith("{")]
    target, limited, tol = float(kv["target"]), kv["sender_limited"] == "1", float(kv.get("tol", 0))
    # the fastest loss-free probe: the one at TARGET (the bisection's), or
    # the unpaced one (target 0) if even that was loss-free
    at = 0.0 if limited else target
    best = max((p for p in probes if p["target_events_per_s"] == at and lossfree(p, tol)),
               key=lambda p: p["offered_events_per_s"], default=None) if limited or target else None
    lf = best["offered_events_per_s"] if best else None
    nsrc, pack = int(kv["sources"]), int(kv["pack"])
    print(json.dumps({"case": kv["case"], "mode": kv["mode"], "round": kv.get("round"), "sources": nsrc, "pack": pack,
                      "frag_size": int(kv["frag_size"]), "bisection_steps": int(kv["bisection_steps"]),
                      "lossfree_events_per_s": lf, "lossfree_frames_per_s": lf * nsrc / pack if lf else None,
                      "lossfree_target_events_per_s": (lf if limited else target) if best else None,
                      "sender_limited": limited,
                      "probes": [{k: p.get(k) for k in ("target_events_per_s", "offered_events_per_s", "offered_frames_per_s",
                                  "rx_frames_per_s", "complete_events_per_s", "delivered_incomplete", "events_sent", "ok")}
                                 for p in probes]}))
    return 0


def med(vals):
    vals = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return statistics.median(vals) if vals else None


def merge(runs):
    m = dict(runs[0])
    for k, v in runs[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) or (v is None and k not in ("round",)):
            m[k] = med([r.get(k) for r in runs])
        elif isinstance(v, dict):
            m[k] = {kk: med([(r.get(k) or {}).get(kk) for r in runs])
                    if not isinstance(vv, (dict, bool, str)) else vv for kk, vv in v.items()}
    m["ok"] = all(r["ok"] for r in runs)
    m["rounds"] = len(runs)
    m["complete_events_per_s_rounds"] = [r["complete_events_per_s"] for r in runs]
    m.pop("round", None)
    m.pop("phase", None)
    return m


def group_points(pts):
    groups = {}
    for p in pts:
        groups.setdefault((p["case"], p["mode"], p["load"]), []).append(p)
    return groups


def round_lossfree(searches, point):
    """The loss-free event rate of the point's round (the one search of an
    older run without rounds)."""
    lf = [s.get("lossfree_events_per_s") for s in searches if s["case"] == point["case"]
          and s["mode"] == point["mode"] and s.get("round") in (None, str(point.get("round")))]
    return lf[-1] if lf else None


def cmd_report(args):
    points_path, searches_path, outdir = args[0], args[1], args[2]
    extra = dict(a.split("=", 1) for a in args[3:])
    pts = [json.loads(l) for l in open(points_path) if l.startswith("{")]
    searches = [json.loads(l) for l in open(searches_path) if l.startswith("{")]
    rows = []
    for (case, mode, load), runs in group_points(pts).items():
        m = merge(runs)
        # each round against its own loss-free rate: the host's speed drifts
        lfs = [round_lossfree(searches, r) for r in runs]
        m["lossfree_events_per_s"] = med(lfs)
        m["lossfree_events_per_s_rounds"] = lfs
        m["offered_over_lossfree"] = med([r["offered_events_per_s"] / lf for r, lf in zip(runs, lfs) if lf])
        m["goodput_over_lossfree_rounds"] = [r["complete_events_per_s"] / lf if lf else None
                                             for r, lf in zip(runs, lfs)]
        m["goodput_over_lossfree"] = med(m["goodput_over_lossfree_rounds"])
        # the same against one rate for the whole run, to show what the rounds' own rates change
        m["goodput_over_run_lossfree"] = (m["complete_events_per_s"] / m["lossfree_events_per_s"]
                                          if m["lossfree_events_per_s"] else None)
        rows.append(m)
    corder = {"l1": 0, "hlt": 1}
    rows.sort(key=lambda r: (corder.get(r["case"], 9), r["mode"] != "xdp", load_order(r["load"])))
    doc = {"bench": "overload", "meta": benchlib.meta(["%s=%s" % kv for kv in extra.items()])}
    doc.update({k: benchlib.value(v) for k, v in extra.items()})
    doc["searches"] = searches
    doc["results"] = rows
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, "overload.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    benchlib.write_csv(rows, os.path.join(outdir, "overload.csv"))
    print("wrote %s and overload.csv (%d rows)" % (out, len(rows)))
    print_table(doc)
    return 0 if all(r["ok"] for r in rows) else 1


def print_table(doc):
    print("loss-free rates (bisection, every event complete at the farm node), per round:")
    for s in doc.get("searches", []):
        print("  %-4s %-6s %-3s %9.1f kev/s  %9.1f kframes/s%s" % (
            s["case"], s["mode"], s.get("round") or "-", (s["lossfree_events_per_s"] or 0) / 1e3,
            (s["lossfree_frames_per_s"] or 0) / 1e3,
            "  (generator-limited: unpaced was loss-free)" if s.get("sender_limited") else
            "" if s["lossfree_events_per_s"] else "  (no probe was loss-free)"))
    print("%-4s %-6s %-7s %8s %9s %9s %9s %7s %8s %9s %7s %7s %9s %8s" % (
        "case", "mode", "load", "x lf", "off kev/s", "off kfr/s", "rx kfr/s", "goodput", "cmpl kev/s", "incompl%",
        "bld cpu", "napi", "never dlv", "p99 us"))
    for r in doc["results"]:
        b = r["books"]
        print("%-4s %-6s %-7s %8s %9.1f %9.1f %9.1f %7s %10.1f %9s %7s %7s %9s %8s%s" % (
            r["case"], r["mode"], r["load"], fmt(r["offered_over_lossfree"], "%.2f"), r["offered_events_per_s"] / 1e3,
            r["offered_frames_per_s"] / 1e3, r["rx_frames_per_s"] / 1e3, fmt(r["goodput_over_lossfree"], "%.2f"),
            r["complete_events_per_s"] / 1e3, fmt(100 * r["incomplete_share"] if r["incomplete_share"] is not None else None, "%.1f"),
            fmt(r["builder_cpu"], "%.2f"), fmt(r["napi_cpu"], "%.2f"), fmt(b["never_delivered"], "%.0f"),
            fmt((r.get("latency_us") or {}).get("p99"), "%.0f"), "" if r["ok"] else "  FAILED"))
    print("x lf: offered / loss-free event rate; goodput: complete events/s at the farm node / loss-free rate")
    print("(each round against its own loss-free rate, medians over the rounds);")
    print("bld cpu, napi: share of a core (builder process, its napi thread); never dlv: events sent, neither")
    print("delivered nor shed; p99 us: build-to-farm-node latency, 99th percentile (median over the rounds)")


def fmt(v, spec):
    return "-" if v is None else spec % v


if __name__ == "__main__":
    cmds = {"point": cmd_point, "search": cmd_search, "passes": cmd_passes, "first-guess": cmd_first_guess, "report": cmd_report}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]) or 0)

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helper of bench-e2e.sh: CPU snapshots, one run's figures, the report.

  e2e.py snap ROLE=PID...          one JSON line: /proc/stat of cpu0/cpu1 and
                                   each PID's run time (schedstat, ns);
                                   prog=ID: BPF run-time statistics of a
                                   program; dev=NETNS/DEV: its rx_packets
  e2e.py run KEY=VALUE...          one run's figures from the snapshots and
                                   the JSON summaries of source/build/sink
  e2e.py report RESULTS OUT.json META [CALIBRATION]
                                   medians per point, ratios, targets, table;
                                   xdp_prog_ns_per_packet from the
                                   calibration runs where a point has none
  e2e.py hold-stats                BPF run-time statistics on until killed
                                   (prints "on" once they are)

The machine is shared: besides /proc/stat's busy time of both cores (which
counts everyone), CPU is summed over our own tasks (generator, builder,
napi thread, sink, ksoftirqd/0-1). Without IRQ time accounting, softirq
work done in a task's context is part of that task's run time.
"""
import json
import os
import statistics
import sys
import time

import benchlib

USER_HZ = 100


def procstat():
    return {c: {k: t[k] for k in ("busy", "softirq", "system", "user")}
            for c, t in benchlib.core_ticks(("cpu0", "cpu1")).items()}


def runtime_ns(pid):
    try:
        with open("/proc/%s/schedstat" % pid) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def prog_stats(prog_id):
    """run_time_ns and run_cnt of a BPF program (kernel.bpf_stats_enabled=1)."""
    import subprocess
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)],
                             capture_output=True, text=True, timeout=10).stdout
        j = json.loads(out)
        # bpftool leaves both out while the program has not run yet
        return {"run_time_ns": j.get("run_time_ns", 0), "run_cnt": j.get("run_cnt", 0)} if "id" in j else {}
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}


def dev_rx_packets(spec):
    """rx_packets of NETNS/DEV: a veth counts the frames its XDP program ran on, XDP_DROP included."""
    import subprocess
    ns, _, dev = spec.partition("/")
    try:
        out = subprocess.run(["ip", "-n", ns, "-j", "-s", "link", "show", "dev", dev],
                             capture_output=True, text=True, timeout=10).stdout
        return json.loads(out)[0]["stats64"]["rx"]["packets"]
    except (OSError, ValueError, KeyError, IndexError, subprocess.SubprocessError):
        return None


def cmd_hold_stats(args):
    """Keep BPF run-time statistics on while this process lives (BPF_ENABLE_STATS
    holds a reference: a parallel toggle of the sysctl cannot switch them off)."""
    import ctypes
    import signal
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # union bpf_attr { __u32 type; } = BPF_STATS_RUN_TIME (0)
    fd = libc.syscall(321, 32, attr, 8)    # __NR_bpf on x86-64, BPF_ENABLE_STATS
    if fd < 0:
        print("cannot enable BPF statistics: errno %d" % ctypes.get_errno(), file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    print("on", flush=True)
    while True:
        time.sleep(3600)


def cmd_snap(args):
    snap = {"t": time.monotonic(), "stat": procstat(), "pids": {}}
    for a in args:
        role, _, pid = a.partition("=")
        if role == "prog":
            snap["prog"] = prog_stats(pid) if pid else {}
        elif role == "dev":
            snap["dev_rx_packets"] = dev_rx_packets(pid) if pid else None
        elif pid:
            snap["pids"][role] = {"pid": pid, "ns": runtime_ns(pid)}
    print(json.dumps(snap))


def cmd_run(args):
    kv = dict(a.split("=", 1) for a in args)
    s0, s1 = benchlib.last_json(kv["s0"]), benchlib.last_json(kv["s1"])
    src, bld = benchlib.last_json(kv["src"]), benchlib.last_json(kv["bld"])
    snk = benchlib.last_json(kv["sink"]) if kv.get("sink") else {}
    pack, nsrc = int(kv["pack"]), int(kv["nsrc"])
    el = src.get("elapsed_s") or 0
    ok = bool(el) and bool(bld)
    tx = src.get("packets", 0)
    rx = bld.get("rx_frames", 0)
    d0, d1 = s0.get("dev_rx_packets"), s1.get("dev_rx_packets")
    dev_rx = d1 - d0 if d0 is not None and d1 is not None and d1 >= d0 else None
    pr0, pr1 = s0.get("prog") or {}, s1.get("prog") or {}
    prog_runs = pr1.get("run_cnt", 0) - pr0.get("run_cnt", 0) if "run_cnt" in pr1 else None
    if kv["mode"] == "drop":
        # no builder: the frames the veth's XDP_DROP program ran on (its
        # rx_packets; the program's run count needs BPF statistics on)
        rx = dev_rx if dev_rx else max(0, prog_runs or 0)
        ok = bool(el) and rx > 0
    wall = s1["t"] - s0["t"]

    # CPU of our tasks over the window; the generator reports its own.
    cpu = {"source": src.get("cpu_s", 0) * 1e9}
    for role, v in s1["pids"].items():
        a, b = s0["pids"].get(role, {}).get("ns"), v.get("ns")
        if a is not None and b is not None and b >= a:
            cpu[role] = float(b - a)
    ours = sum(cpu.values())
    tick = 1e9 / USER_HZ
    busy = sum(s1["stat"][c]["busy"] - s0["stat"][c]["busy"] for c in ("cpu0", "cpu1")) * tick
    soft = {c: (s1["stat"][c]["softirq"] - s0["stat"][c]["softirq"]) * tick for c in ("cpu0", "cpu1")}

    # The XDP program's own cost per packet it ran on (bpf_stats).
    p0, p1 = s0.get("prog") or {}, s1.get("prog") or {}
    prog_ns = None
    if p0.get("run_cnt") is not None and p1.get("run_cnt") is not None and p1["run_cnt"] > p0["run_cnt"]:
        prog_ns = (p1["run_time_ns"] - p0["run_time_ns"]) / (p1["run_cnt"] - p0["run_cnt"])

    xdp_seen = bld.get("xdp", {}).get("mep", {}).get("packets") if kv["mode"] != "socket" else None
    frags = bld.get("frags_received", 0) if kv["mode"] not in ("bare", "drop") else rx * pack
    drops = sum(v for k, v in bld.items() if k.startswith("drop_"))
    xskd = bld.get("xsk_rx_dropped", 0) + bld.get("xsk_rx_ring_full", 0)
    sockd = bld.get("sock_kernel_drops", 0)
    r = {
        "path": kv.get("path", "bridge"), "case": kv["case"], "mode": kv["mode"], "model": kv["model"], "forward": kv["fwd"] == "1",
        "ok": ok, "elapsed_s": el, "window_s": wall, "tx_packets": tx, "rx_frames": rx,
        "frames_per_s": rx / el if el else 0,
        "fragments_per_s": frags / el if el else 0,
        "events_per_s": bld.get("events_complete", 0) / el if el and kv["mode"] not in ("bare", "drop") else None,
        "gbps": (bld.get("rx_bytes", 0) if kv["mode"] != "drop" else rx * src.get("bytes", 0) / max(tx, 1)) * 8 / el / 1e9 if el else 0,
        "tx_frames_per_s": tx / el if el else 0,
        "loss": (tx - rx) / tx if tx else 0,
        "loss_where": {
            # packets lost before XDP (veth ring, bridge): exact from the XDP
            # program's count; in socket mode packet_seq gaps less the socket's drops
            "before_rx": tx - xdp_seen if xdp_seen is not None else max(0, (bld.get("seq_gaps") or 0) - sockd),
            "socket_rings": xskd + sockd,
            "builder_frag_drops": drops,
            "seq_gaps": bld.get("seq_gaps"),
            "xsk_rx_dropped": bld.get("xsk_rx_dropped", 0), "xsk_rx_ring_full": bld.get("xsk_rx_ring_full", 0),
            "sock_kernel_drops": sockd,
            "out_dropped": bld.get("out_dropped_no_sink", 0) + bld.get("out_dropped_error", 0)
                           + bld.get("out_dropped_backlog", 0),
        },
        "incomplete_events_per_s": bld.get("events_incomplete", 0) / el if el and kv["mode"] not in ("bare", "drop") else None,
        "events_complete": bld.get("events_complete", 0), "events_incomplete": bld.get("events_incomplete", 0),
        "cpu_ns_per_frame": ours / rx if rx else None,
        "xdp_prog_ns_per_packet": prog_ns,
        "bpf_stats": kv.get("bpf_stats") == "1",
        "dev_rx_packets": dev_rx, "prog_run_cnt": prog_runs if prog_runs else None,
        "cpu_ns_per_frame_procstat": busy / rx if rx else None,
        "cpu_ns_per_frame_rx_side": (ours - cpu.get("source", 0)) / rx if rx else None,
        "cpu_s": {k: v / 1e9 for k, v in cpu.items()},
        "softirq_s": {k: v / 1e9 for k, v in soft.items()},
        "busy_s_both_cores": busy / 1e9,
        "foreign_cpu_s": max(0.0, busy - ours) / 1e9,
        # share of both cores' time that went to tasks that are not ours
        "foreign_frac": max(0.0, busy - ours) / 1e9 / (2 * wall) if wall > 0 else None,
        "nsrc": nsrc, "pack": pack, "variant": kv.get("variant", ""),
    }
    if snk:
        r["sink"] = {k: snk.get(k) for k in ("events", "complete", "incomplete", "errors", "result")}
        r["out_events"] = bld.get("out_events", 0)
        if not snk.get("result") == "ok" or snk.get("errors"):
            r["ok"] = False
    print(json.dumps(r))


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def merge(runs):
    """Median of each figure over the runs of one point."""
    m = dict(runs[0])
    for k, v in runs[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            m[k] = med([r.get(k) for r in runs])
        elif isinstance(v, dict):
            m[k] = {kk: med([r.get(k, {}).get(kk) for r in runs])
                    if isinstance(vv, (int, float)) or vv is None else vv for kk, vv in v.items()}
    m["ok"] = all(r["ok"] for r in runs)
    m["runs"] = len(runs)
    m["frames_per_s_runs"] = [r["frames_per_s"] for r in runs]
    return m


def fmt(v, scale=1.0, spec="%.2f"):
    return "-" if v is None else spec % (v / scale)


def cmd_report(args):
    path, out = args[0], args[1]
    meta = json.loads(args[2]) if len(args) > 2 else {}
    pts = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                pts.setdefault((r["path"], r["case"], r["model"], r["forward"], r["mode"], r.get("variant", "")),
                               []).append(r)
    rows = [merge(v) for v in pts.values()]
    # The XDP program's cost from the calibration runs (statistics on) of
    # the same path, case, model and mode: the throughput runs go without.
    cal = []
    if len(args) > 3 and args[3]:
        with open(args[3]) as f:
            cal = [json.loads(line) for line in f if line.strip()]
    for r in rows:
        if r.get("xdp_prog_ns_per_packet") is None:
            # one calibration a case, model and mode: the program's cost per
            # packet does not depend on the path that brought the frame
            c = med([x.get("xdp_prog_ns_per_packet") for x in cal
                     if (x["case"], x["model"], x["mode"]) == (r["case"], r["model"], r["mode"])])
            r["xdp_prog_ns_per_packet"] = c
            r["xdp_prog_ns_from"] = "calibration" if c is not None else None
        else:
            r["xdp_prog_ns_from"] = "same runs (bpf stats on)"
    idx = {(r["path"], r["case"], r["model"], r["forward"], r["mode"], r.get("variant", "")): r for r in rows}

    ratios, targets = [], []
    for (path, case, model, fwd, mode, var), r in sorted(idx.items()):
        if mode != "xdp":
            continue
        sk = idx.get((path, case, model, fwd, "socket", var)) or idx.get((path, case, model, fwd, "socket", ""))
        bare = idx.get((path, case, model, False, "bare", var)) or idx.get((path, case, model, False, "bare", ""))
        drop = idx.get((path, case, model, False, "drop", var)) or idx.get((path, case, model, False, "drop", ""))
        q = {"path": path, "case": case, "model": model, "forward": fwd}
        if var:
            q["variant"] = var
        if drop and drop["frames_per_s"] and not fwd:
            q["xdp_over_drop_frames_per_s"] = r["frames_per_s"] / drop["frames_per_s"]
            if bare and bare["frames_per_s"]:
                q["bare_over_drop_frames_per_s"] = bare["frames_per_s"] / drop["frames_per_s"]
        if sk and sk["frames_per_s"]:
            q["xdp_over_socket_frames_per_s"] = r["frames_per_s"] / sk["frames_per_s"]
            if r["cpu_ns_per_frame"] and sk["cpu_ns_per_frame"]:
                q["socket_over_xdp_cpu_per_frame"] = sk["cpu_ns_per_frame"] / r["cpu_ns_per_frame"]
        if bare and bare["frames_per_s"] and not fwd:
            q["xdp_over_bare_frames_per_s"] = r["frames_per_s"] / bare["frames_per_s"]
            if r["cpu_ns_per_frame"] and bare["cpu_ns_per_frame"]:
                q["bare_over_xdp_cpu_per_frame"] = bare["cpu_ns_per_frame"] / r["cpu_ns_per_frame"]
            # run k of xdp against run k of bare: meaningful when they alternated (BENCH_INTERLEAVE)
            xr, br = r.get("frames_per_s_runs") or [], bare.get("frames_per_s_runs") or []
            if len(xr) == len(br) > 1 and all(br):
                q["xdp_over_bare_paired_median"] = statistics.median(x / b for x, b in zip(xr, br))
        r["ratios"] = {k: v for k, v in q.items() if k not in ("path", "case", "model", "forward", "variant")}
        ratios.append(q)
        if case == "l1" and not fwd:
            if "xdp_over_bare_frames_per_s" in q:
                targets.append({"target": "L1 build-only: XDP builder >= 85% of bare AF_XDP receive",
                                "variant": var, "path": path, "model": model, "value": q["xdp_over_bare_frames_per_s"],
                                "met": q["xdp_over_bare_frames_per_s"] >= 0.85})
            if model == "gateway" and "xdp_over_socket_frames_per_s" in q:
                targets.append({"target": "L1 build-only, gateway: XDP >= 3.5x socket mode",
                                "variant": var, "path": path, "model": model, "value": q["xdp_over_socket_frames_per_s"],
                                "met": q["xdp_over_socket_frames_per_s"] >= 3.5})

    order = {"bridge": 0, "direct": 1, "l1": 0, "big": 1, "gateway": 0, "split": 1, "drop": -1, "bare": 0, "xdp": 1,
             "socket": 2}
    rows.sort(key=lambda r: (order.get(r["path"], 9), order.get(r["case"], 9), order.get(r["model"], 9), r["forward"],
                             order.get(r["mode"], 9), r.get("variant", "")))
    doc = dict(meta, bench="e2e", results=rows, ratios=ratios, targets=targets, calibration=cal)
    # the suite's convention (benchlib.py): meta.py's record and a CSV beside the JSON
    doc.setdefault("meta", benchlib.meta())
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    benchlib.write_csv(rows, os.path.splitext(out)[0] + ".csv")

    print("%-6s %-4s %-7s %-3s %-6s %8s %8s %8s %8s %7s %7s %8s %8s %8s %5s %5s  %s" % (
        "path", "case", "model", "fwd", "mode", "offered", "Mfr/s", "Mfrag/s", "kev/s", "Gb/s", "loss%",
        "ns/fr", "rx ns/fr", "stat ns", "oth%", "prog", "lost: before rx / socket rings (pkts) / builder (frags)"))
    for r in rows:
        lw = r["loss_where"]
        print("%-6s %-4s %-7s %-3s %-6s %8s %8s %8s %8s %7s %7s %8s %8s %8s %5s %5s  %s/%s/%s%s" % (
            r["path"], r["case"], r["model"], "yes" if r["forward"] else "no",
            r["mode"] + ("/" + r["variant"] if r.get("variant") else ""),
            fmt(r["tx_frames_per_s"], 1e6, "%.3f"),
            fmt(r["frames_per_s"], 1e6, "%.3f"), fmt(r["fragments_per_s"], 1e6, "%.2f"),
            fmt(r["events_per_s"], 1e3, "%.1f"), fmt(r["gbps"]), fmt(r["loss"], 0.01, "%.2f"),
            fmt(r["cpu_ns_per_frame"], 1, "%.0f"), fmt(r["cpu_ns_per_frame_rx_side"], 1, "%.0f"),
            fmt(r["cpu_ns_per_frame_procstat"], 1, "%.0f"), fmt(r.get("foreign_frac"), 0.01, "%.0f"),
            fmt(r.get("xdp_prog_ns_per_packet"), 1, "%.0f") + ("*" if r.get("bpf_stats") else ""),
            fmt(lw["before_rx"], 1, "%.0f"), fmt(lw["socket_rings"], 1, "%.0f"), fmt(lw["builder_frag_drops"], 1, "%.0f"),
            "" if r["ok"] else "  RUN FAILED"))
    fw = [r for r in rows if r["forward"]]
    if fw:
        print("\nwith forwarding, CPU seconds per run (median) and frames arrived as events at the sink:")
        print("%-6s %-4s %-7s %-6s %7s %7s %7s %7s %7s %7s %9s %9s %10s" % (
            "path", "case", "model", "mode", "source", "builder", "napi", "sink", "ksirq0", "ksirq1",
            "softirq0", "softirq1", "sink ev/s"))
        for r in fw:
            c, s = r["cpu_s"], r["softirq_s"]
            ev = r.get("sink", {}).get("events")
            print("%-6s %-4s %-7s %-6s %7s %7s %7s %7s %7s %7s %9s %9s %10s" % (
                r["path"], r["case"], r["model"], r["mode"], fmt(c.get("source")), fmt(c.get("builder")),
                fmt(c.get("napi")), fmt(c.get("sink")), fmt(c.get("ksoftirqd0")),
                fmt(c.get("ksoftirqd1")), fmt(s.get("cpu0")), fmt(s.get("cpu1")),
                fmt(ev / r["elapsed_s"] if ev is not None and r["elapsed_s"] else None, 1e3, "%.1fk")))
    print("offered, Mfr/s: frames per second sent, received; kev/s: complete events; ns/fr: CPU of our tasks per")
    print("frame received, both cores; rx ns/fr: the same without the generator; stat ns: /proc/stat, both cores;")
    print("oth%: share of both cores taken by tasks not ours (other users of the machine) during the runs")
    print("prog: the XDP program's ns per packet (BPF statistics): from a calibration run, or * from these runs,")
    print("whose other figures then include the statistics' own cost")
    print("\nratios:")
    for q in ratios:
        print("  %-6s %-4s %-7s fwd=%-3s %s%s" % (q["path"], q["case"], q["model"], "yes" if q["forward"] else "no",
              q["variant"] + ": " if q.get("variant") else "",
              "  ".join("%s %.2f" % (k, v) for k, v in q.items() if k not in ("path", "case", "model", "forward", "variant"))))
    print("targets:")
    for t in targets:
        print("  %-58s %-6s %-7s %-10s %.2f  %s" % (t["target"], t["path"], t["model"], t.get("variant") or "-", t["value"],
                                              "MET" if t["met"] else "NOT MET"))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    cmds = {"snap": cmd_snap, "run": cmd_run, "report": cmd_report, "hold-stats": cmd_hold_stats}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]) or 0)

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helpers of bench-sink.sh (the farm node's capacity alone).

  sink.py window SINK_PID FEEDER_PID PROGRESS_FILE WARMUP_S SECONDS
      after WARMUP_S, counts over SECONDS: the sink's events (its
      --progress-file), its user and system CPU, the feeder's CPU, and how
      busy each core was (/proc/stat); one JSON object on stdout.
  sink.py drained FEED_JSON PROGRESS_FILE LIMIT_S
      wait until the sink has taken every event the feeder sent (exit 0),
      at most LIMIT_S (exit 1).
  sink.py point LABEL CASE RUN FEED_JSON SINK_JSON WINDOW_JSON
      one run's figures, checked (every event sent arrived, no error): one
      JSON line.
  sink.py report OUT_JSON POINT_LINES_FILE SECONDS [CHECK_LINES_FILE]
      medians per (label, case) and of the check-cost lines per case,
      OUT_JSON, a table on stdout; exit 1 when a run lost or broke an
      event."""
import json
import os
import statistics
import struct
import sys
import time

import benchlib

HZ = os.sysconf("SC_CLK_TCK")


def proc_ticks(pid):
    """user and system ticks of a process (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]), int(rest[12])


def proc_faults(pid):
    """minor page faults of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def proc_sched(pid):
    """ns on a core, ns runnable and waiting for one (/proc/PID/schedstat)."""
    with open("/proc/%d/schedstat" % pid) as f:
        run, wait = f.read().split()[:2]
    return int(run), int(wait)


def proc_reads(pid):
    """read syscalls of a process so far (/proc/PID/io)."""
    with open("/proc/%d/io" % pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith("syscr"))


def cores():
    """cpuN -> (busy ticks, softirq ticks, total ticks)."""
    return {c: (t["busy"], t["softirq"], t["total"]) for c, t in benchlib.core_ticks().items()}


def snap(spid, fpid, progress):
    with open(progress, "rb") as f:
        events = struct.unpack("=Q", f.read(8))[0]
    return {"t": time.monotonic(), "events": events, "sink": proc_ticks(spid), "feeder": proc_ticks(fpid),
            "reads": proc_reads(spid), "faults": proc_faults(spid), "sched": proc_sched(spid), "cores": cores()}


def window(spid, fpid, progress, warmup, secs):
    time.sleep(warmup)
    a = snap(spid, fpid, progress)
    time.sleep(secs)
    b = snap(spid, fpid, progress)
    dt = b["t"] - a["t"]
    busy = {c: round((b["cores"][c][0] - a["cores"][c][0]) / max(1, b["cores"][c][2] - a["cores"][c][2]), 3)
            for c in b["cores"] if c in a["cores"]}
    softirq = {c: round((b["cores"][c][1] - a["cores"][c][1]) / max(1, b["cores"][c][2] - a["cores"][c][2]), 3)
               for c in b["cores"] if c in a["cores"]}
    return {"window_s": round(dt, 3), "events": b["events"] - a["events"],
            "sink_user_s_per_s": round((b["sink"][0] - a["sink"][0]) / HZ / dt, 3),
            "sink_sys_s_per_s": round((b["sink"][1] - a["sink"][1]) / HZ / dt, 3),
            "feeder_cpu_s_per_s": round((sum(b["feeder"]) - sum(a["feeder"])) / HZ / dt, 3),
            "sink_reads": b["reads"] - a["reads"], "sink_faults": b["faults"] - a["faults"],
            "sink_run_s_per_s": round((b["sched"][0] - a["sched"][0]) / 1e9 / dt, 4),
            "sink_wait_s_per_s": round((b["sched"][1] - a["sched"][1]) / 1e9 / dt, 4),
            "core_busy": busy, "core_softirq": softirq}


def point(label, case, run, feed, sink, win):
    ev = win["events"] / win["window_s"]
    cpu = win["sink_user_s_per_s"] + win["sink_sys_s_per_s"]
    ok = (sink.get("errors") == 0 and sink.get("events") == feed["events"] and
          sink.get("complete") == feed["events"] and win["events"] > 0)
    return {"label": label, "case": case, "run": run, "ok": ok,
            "events_per_s": round(ev, 1), "gbps": round(ev * feed["event_bytes"] * 8 / 1e9, 3),
            "sink_user_s_per_s": win["sink_user_s_per_s"], "sink_sys_s_per_s": win["sink_sys_s_per_s"],
            "sink_cpu_us_per_event": round(cpu * 1e6 / ev, 3) if ev else None,
            # what one core would take at this CPU per event (the rate itself when CPU 0 is the limit)
            "capacity_events_per_s": round(ev / cpu, 1) if cpu else None,
            "feeder_cpu_s_per_s": win["feeder_cpu_s_per_s"], "core_busy": win["core_busy"],
            # the feeder's core (CPU 1) per event: its sends and, on veth, the receive softirq
            "feeder_core_us_per_event": round(win["core_busy"].get("cpu1", 0) * 1e6 / ev, 3) if ev else None,
            "feeder_send": feed.get("send", "write"), "feeder_sends": feed.get("sends"),
            "feeder_zc_copied": feed.get("zc_copied"), "feeder_zc_notifs": feed.get("zc_notifs"),
            # the sink's read() calls: how much each brought (a sink that keeps up reads often, and small)
            "sink_reads_per_event": round(win["sink_reads"] / win["events"], 4) if win["events"] else None,
            # on a core by the scheduler's clock (ns, not ticks), and waiting for it (other load)
            "sink_run_us_per_event": round(win["sink_run_s_per_s"] * 1e6 / ev, 3) if ev else None,
            "sink_wait_s_per_s": win["sink_wait_s_per_s"],
            # minor page faults per event: fresh memory touched for the first time
            "sink_faults_per_event": round(win["sink_faults"] / win["events"], 5) if win["events"] else None,
            "core_softirq": win["core_softirq"], "window_s": win["window_s"],
            "event_bytes": feed["event_bytes"], "sent": feed["events"], "received": sink.get("events"),
            "sink_errors": sink.get("errors"), "latency_us": sink.get("latency_us")}


MED = ("events_per_s", "gbps", "sink_user_s_per_s", "sink_sys_s_per_s", "sink_cpu_us_per_event",
       "capacity_events_per_s", "feeder_cpu_s_per_s", "feeder_core_us_per_event", "sink_reads_per_event",
       "sink_run_us_per_event", "sink_wait_s_per_s", "sink_faults_per_event")


def limit(busy0, busy1):
    """Which side a run's rate is the ceiling of: the busy core's."""
    if busy0 >= 0.95 and busy1 < 0.95:
        return "sink (CPU 0)"
    if busy1 >= 0.95 and busy0 < 0.95:
        return "feeder (CPU 1)"
    return "both cores" if busy0 >= 0.95 else "neither core saturated"


def check_costs(lines):
    """Medians of sink_flood --check-cost per case."""
    rows = [json.loads(x) for x in open(lines) if x.strip()] if lines else []
    res = []
    for case in dict.fromkeys(r["case"] for r in rows):
        rr = [r for r in rows if r["case"] == case]
        res.append({"case": case, "runs": len(rr), "event_bytes": rr[0]["event_bytes"],
                    "one_walk_ns_per_event": statistics.median(r["one_walk_ns_per_event"] for r in rr),
                    "decode_then_verify_ns_per_event": statistics.median(
                        r["decode_then_verify_ns_per_event"] for r in rr)})
    return res


def report(out, lines, secs, checks=None):
    pts = [json.loads(x) for x in open(lines) if x.strip()]
    res = []
    for key in dict.fromkeys((p["label"], p["case"]) for p in pts):
        runs = [p for p in pts if (p["label"], p["case"]) == key]
        r = {"label": key[0], "case": key[1], "runs": len(runs), "ok": all(p["ok"] for p in runs),
             "event_bytes": runs[0]["event_bytes"]}
        for k in MED:
            vals = [p[k] for p in runs if p[k] is not None]
            r[k] = round(statistics.median(vals), 5 if k == "sink_faults_per_event" else 3) if vals else None
        for c in ("cpu0", "cpu1"):
            r[c + "_busy"] = statistics.median(p["core_busy"].get(c, 0) for p in runs)
            r[c + "_softirq"] = statistics.median(p["core_softirq"].get(c, 0) for p in runs)
        r["limit"] = limit(r["cpu0_busy"], r["cpu1_busy"])
        r["points"] = runs
        res.append(r)
    doc = {"bench": "sink", "seconds_per_run": secs, "meta": benchlib.meta(),
           "note": ("xevb sink alone on CPU 0 (checks every byte: format, CRC-32C, emulator pattern, duplicates), "
                    "fed over a veth pair by build/bench/sink_flood on CPU 1 (a ring of encoded events, 64 KiB "
                    "writes); the TCP receive softirq runs on the feeder's core; medians over the runs"),
           "results": res, "check_cost": check_costs(checks),
           "check_cost_note": ("sink_flood --check-cost on CPU 0: the sink's user-space check alone "
                               "(xevb_event_decode_verify, every byte) over a 256 KiB window of events, "
                               "and decode then verify in two walks; ns per event, medians")}
    json.dump(doc, open(out, "w"), indent=1)
    print("%-5s %-4s %8s %6s %8s %8s %8s %12s %5s %5s  %s" % (
        "sink", "case", "kev/s", "Gb/s", "user s/s", "sys s/s", "us/event", "1-core kev/s", "CPU0", "CPU1", "limit"))
    for r in res:
        print("%-5s %-4s %8.1f %6.2f %8.3f %8.3f %8.3f %12.1f %5.2f %5.2f  %s%s" % (
            r["label"], r["case"], r["events_per_s"] / 1e3, r["gbps"], r["sink_user_s_per_s"],
            r["sink_sys_s_per_s"], r["sink_cpu_us_per_event"] or 0, (r["capacity_events_per_s"] or 0) / 1e3,
            r["cpu0_busy"], r["cpu1_busy"], r["limit"],
            "" if r["ok"] else "  (EVENTS LOST OR BROKEN)"))
    for c in doc["check_cost"]:
        print("check alone, %s: %.0f ns/event in one walk (decode then verify: %.0f)" % (
            c["case"], c["one_walk_ns_per_event"], c["decode_then_verify_ns_per_event"]))
    print("wrote", out)
    return 0 if all(r["ok"] for r in res) else 1


def drained(feed, progress, limit):
    """Wait (at most limit s) until the sink has taken every event the feeder sent: 0, else 1."""
    with open(feed) as f:
        want = json.loads(f.read().strip().splitlines()[-1])["events"]
    return progress_reaches(progress, want, limit)


def progress_reaches(progress, want, limit):
    """Wait (at most limit s) until the sink's --progress-file counts want events: 0, else 1."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        with open(progress, "rb") as f:
            if struct.unpack("=Q", f.read(8))[0] >= want:
                return 0
        time.sleep(0.01)
    return 1


def main():
    a = sys.argv[1:]
    if a and a[0] == "drained" and len(a) == 4:
        sys.exit(drained(a[1], a[2], float(a[3])))
    if a and a[0] == "window" and len(a) == 6:
        print(json.dumps(window(int(a[1]), int(a[2]), a[3], float(a[4]), float(a[5]))))
    elif a and a[0] == "point" and len(a) == 7:
        def rd(p):
            with open(p) as f:
                return json.loads(f.read().strip().splitlines()[-1])
        print(json.dumps(point(a[1], a[2], int(a[3]), rd(a[4]), rd(a[5]), rd(a[6]))))
    elif a and a[0] == "report" and len(a) in (4, 5):
        sys.exit(report(a[1], a[2], float(a[3]), a[4] if len(a) == 5 else None))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

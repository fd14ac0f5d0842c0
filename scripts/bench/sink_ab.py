#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helpers of bench-sink-ab.sh (two sinks on one core, fed in turn).

  sink_ab.py window PID_A PROGRESS_A PID_B PROGRESS_B WARMUP_S SECONDS
      after WARMUP_S, over SECONDS: each sink's events (its
      --progress-file) and CPU (ns on a core, all its threads, by the
      scheduler's clock; user and system ticks); one JSON object.
  sink_ab.py drained FEED_JSON INDEX PROGRESS_FILE LIMIT_S
      wait until the sink has taken every event the feeder sent to its
      INDEX-th destination (exit 0), at most LIMIT_S (exit 1).
  sink_ab.py point RUN FIRST FEED_JSON SINK_A_JSON SINK_B_JSON WINDOW_JSON
      one run's figures, checked (each sink took every event sent to it,
      no error): one JSON line.
  sink_ab.py report OUT_JSON POINT_LINES_FILE LABEL_A LABEL_B SLICE_MS SECONDS
      per sink the CPU per event of every run, and B over A run by run:
      median, lowest, highest; OUT_JSON, a table on stdout; exit 1 when a
      run lost or broke an event."""
import json
import statistics
import struct
import sys
import time

import benchlib
import sink


def snap(pid, progress):
    with open(progress, "rb") as f:
        events = struct.unpack("=Q", f.read(8))[0]
    return {"events": events, "run_ns": benchlib.task_ns(pid), "ticks": sink.proc_ticks(pid),
            "reads": sink.proc_reads(pid)}


def window(pa, proga, pb, progb, warmup, secs):
    time.sleep(warmup)
    t0, a0, b0 = time.monotonic(), snap(pa, proga), snap(pb, progb)
    time.sleep(secs)
    t1, a1, b1 = time.monotonic(), snap(pa, proga), snap(pb, progb)

    def diff(x, y):
        return {"events": y["events"] - x["events"], "run_s": (y["run_ns"] - x["run_ns"]) / 1e9,
                "user_s": (y["ticks"][0] - x["ticks"][0]) / sink.HZ,
                "sys_s": (y["ticks"][1] - x["ticks"][1]) / sink.HZ, "reads": y["reads"] - x["reads"]}
    return {"window_s": round(t1 - t0, 3), "a": diff(a0, a1), "b": diff(b0, b1)}


def drained(feed, index, progress, limit):
    with open(feed) as f:
        want = json.loads(f.read().strip().splitlines()[-1])["dest_events"][index]
    return sink.progress_reaches(progress, want, limit)


def side(w, feed_events, snk):
    ev = w["events"]
    return {"ok": snk.get("errors") == 0 and snk.get("events") == feed_events and
            snk.get("complete") == feed_events and ev > 0,
            "events": ev, "sent": feed_events, "received": snk.get("events"),
            "cpu_us_per_event": round(w["run_s"] * 1e6 / ev, 4) if ev else None,
            "user_us_per_event": round(w["user_s"] * 1e6 / ev, 4) if ev else None,
            "sys_us_per_event": round(w["sys_s"] * 1e6 / ev, 4) if ev else None,
            "reads_per_event": round(w["reads"] / ev, 4) if ev else None}


def point(run, first, feed, sa, sb, win):
    a = side(win["a"], feed["dest_events"][0], sa)
    b = side(win["b"], feed["dest_events"][1], sb)
    ratio = round(b["cpu_us_per_event"] / a["cpu_us_per_event"], 4) if a["cpu_us_per_event"] and \
        b["cpu_us_per_event"] else None
    return {"run": run, "first": first, "window_s": win["window_s"], "ok": a["ok"] and b["ok"],
            "a": a, "b": b, "b_over_a": ratio, "event_bytes": feed["event_bytes"]}


def spread(vals):
    return {"median": round(statistics.median(vals), 4), "min": round(min(vals), 4), "max": round(max(vals), 4)}


def report(out, lines, la, lb, slice_ms, secs):
    pts = [json.loads(x) for x in open(lines) if x.strip()]
    ok = bool(pts) and all(p["ok"] for p in pts)
    ratios = [p["b_over_a"] for p in pts if p["b_over_a"]]
    doc = {"bench": "sink-ab", "meta": benchlib.meta(), "seconds_per_run": secs, "slice_ms": slice_ms,
           "a": la, "b": lb, "ok": ok,
           "note": ("two sinks on CPU 0, one feeder on CPU 1 writing to one for slice_ms, then to the other, "
                    "so both are measured over the same seconds; CPU per event by the scheduler's clock "
                    "(all threads), b_over_a run by run"),
           "a_cpu_us_per_event": spread([p["a"]["cpu_us_per_event"] for p in pts if p["a"]["cpu_us_per_event"]]),
           "b_cpu_us_per_event": spread([p["b"]["cpu_us_per_event"] for p in pts if p["b"]["cpu_us_per_event"]]),
           "b_over_a": spread(ratios) if ratios else None, "points": pts}
    json.dump(doc, open(out, "w"), indent=1)
    print("%-4s %-6s %12s %12s %12s %12s %8s" % ("run", "first", la + " us/ev", lb + " us/ev",
                                                  la + " kev/s", lb + " kev/s", "b/a"))
    for p in pts:
        print("%-4d %-6s %12.3f %12.3f %12.1f %12.1f %8.3f%s" % (
            p["run"], p["first"], p["a"]["cpu_us_per_event"] or 0, p["b"]["cpu_us_per_event"] or 0,
            p["a"]["events"] / p["window_s"] / 1e3, p["b"]["events"] / p["window_s"] / 1e3, p["b_over_a"] or 0,
            "" if p["ok"] else "  (EVENTS LOST OR BROKEN)"))
    if ratios:
        print("%s over %s, CPU per event run by run: median %.3f (%.3f to %.3f) over %d runs" % (
            lb, la, statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
    print("wrote", out)
    return 0 if ok else 1


def main():
    a = sys.argv[1:]
    if a and a[0] == "drained" and len(a) == 5:
        sys.exit(drained(a[1], int(a[2]), a[3], float(a[4])))
    if a and a[0] == "window" and len(a) == 7:
        print(json.dumps(window(int(a[1]), a[2], int(a[3]), a[4], float(a[5]), float(a[6]))))
    elif a and a[0] == "point" and len(a) == 7:
        def rd(p):
            with open(p) as f:
                return json.loads(f.read().strip().splitlines()[-1])
        print(json.dumps(point(int(a[1]), a[2], rd(a[3]), rd(a[4]), rd(a[5]), rd(a[6]))))
    elif a and a[0] == "report" and len(a) == 7:
        sys.exit(report(a[1], a[2], a[3], a[4], int(a[5]), float(a[6])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

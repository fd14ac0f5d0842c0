#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The figures of scripts/bench/bench-dfm-scale.sh (the DFM against
build/bench/dfm_sim's simulated peers).

  dfm_scale.py row W MODE PACK B S F KEY CREDITS RATE SECS DFM_RC SIM_RC
      one JSON row from W/dfm.json (the DFM's --json), W/dfm.err (its
      accounting line), W/sim.json (dfm_sim's counts) and W/snmp0, W/snmp1
      (the namespace's UDP counters before and after)
  dfm_scale.py line            a row on stdin -> one line for the log
  dfm_scale.py table JSON      the table of OUT/bench/dfm-scale.json; exit 1
                               when a point's books did not close"""
import json
import os
import sys


def last_json(path):
    try:
        return json.loads([l for l in open(path) if l.startswith("{")][-1])
    except (OSError, ValueError, IndexError):
        return {}


def udp(path):
    """Udp: counters of /proc/net/snmp as a dict."""
    try:
        lines = [l.split() for l in open(path) if l.startswith("Udp:")]
        return dict(zip(lines[0][1:], (int(x) for x in lines[1][1:])))
    except (OSError, IndexError, ValueError):
        return {}


def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def per_s(counts, secs):
    return {k: round(v / secs) for k, v in (counts or {}).items()} if secs else {}


def books(d, s, dfm_rc, sim_rc):
    """The books exact: the DFM's check and balance, nothing outstanding or
    not delivered, both processes ended well. Then whether nothing was lost:
    every event the DFM assigned DONE once by the simulated builders, and
    counted complete once."""
    lost = d.get("lost_total", -1)
    assigned = sum(b.get("assigned", 0) for b in d.get("builders", []))
    checks = {
        "accounting_ok": d.get("accounting_ok") is True,
        "balance": d.get("triggered", -1) == d.get("complete", 0) + d.get("incomplete", 0) + lost,
        "outstanding_0": d.get("outstanding", -1) == 0,
        "delivered": d.get("not_delivered", -1) == 0,
        "exit_0": dfm_rc == 0 and sim_rc == 0,
    }
    lossless = lost == 0 and s.get("events_done", -1) == assigned == d.get("complete", -2)
    return all(checks.values()), [k for k, v in checks.items() if not v], lossless


def row(a):
    w, mode, pack, nb, ns, nf, key, credits, rate, secs, dfm_rc, sim_rc = a
    d, s = last_json(os.path.join(w, "dfm.json")), last_json(os.path.join(w, "sim.json"))
    u0, u1 = udp(os.path.join(w, "snmp0")), udp(os.path.join(w, "snmp1"))
    try:
        acct = [l.strip() for l in open(os.path.join(w, "dfm.err")) if "accounting" in l][-1]
    except (OSError, IndexError):
        acct = ""
    win = s.get("window_s") or 0
    dwin = s.get("dfm_window_s") or 0
    trig = d.get("triggered", 0)
    cpu = s.get("dfm_cpu_s") or 0
    ok, failed, lossless = books(d, s, int(dfm_rc), int(sim_rc))
    lat = d.get("latency_us", {})
    ins, outb, outs = s.get("dfm_in", {}), s.get("dfm_out_builders", {}), s.get("dfm_out_sources", {})
    r = {
        "mode": mode, "pack": int(pack), "builders": int(nb), "sources": int(ns), "farm_nodes": int(nf),
        "keyed": key == "1", "credits": int(credits), "rate": float(rate), "seconds": float(secs),
        "events_per_s": d.get("events_per_s", 0), "elapsed_s": d.get("elapsed_s"), "triggered": trig, "complete": d.get("complete", 0),
        "incomplete": d.get("incomplete", 0), "lost": d.get("lost_total"),
        "lost_by_reason": {k: v for k, v in d.get("lost", {}).items() if v},
        "outstanding": d.get("outstanding"), "retries": d.get("retries"),
        "stall_no_credit": d.get("stall_no_credit"), "clear_msgs": d.get("clear_msgs"),
        "window_s": win, "dfm_cpu_s": cpu, "dfm_user_s": s.get("dfm_user_s"), "dfm_sys_s": s.get("dfm_sys_s"),
        "dfm_cpu_util": round(cpu / dwin, 3) if dwin else None,
        "dfm_runq_wait_util": round((s.get("dfm_wait_s") or 0) / dwin, 3) if dwin else None,
        "dfm_cpu_us_per_event": round(cpu / trig * 1e6, 4) if trig else None,
        "sim_cpu_util": round((s.get("sim_cpu_s") or 0) / win, 3) if win else None,
        "in_per_s": per_s(ins, win), "out_builders_per_s": per_s(outb, win), "out_sources_per_s": per_s(outs, win),
        "window_events": s.get("window_events"), "window_blocks": s.get("window_blocks"),
        "window_in": sum(ins.values()), "window_out": sum(outb.values()) + sum(outs.values()) +
        sum(s.get("dfm_out_farm", {}).values()),
        "dfm_window_s": dwin,
        "in_total_per_s": round(sum(ins.values()) / win) if win else 0,
        "out_total_per_s": round((sum(outb.values()) + sum(outs.values())) / win) if win else 0,
        "dfm_sent_by_type": {k: v for k, v in d.get("ctl", {}).get("sent_by_type", {}).items() if v},
        "dfm_received_by_type": {k: v for k, v in d.get("ctl", {}).get("received_by_type", {}).items() if v},
        "refused_at_dfm": d.get("ctl", {}).get("refused"), "refused_at_peers": s.get("refused"),
        "lat_us": {k: {q: v.get(q) for q in ("events", "p50", "p90", "p99", "p999", "mean")} for k, v in lat.items()},
        "builders_admitted": len(d.get("builders", [])), "builders_fed": s.get("builders_fed"),
        "sources_admitted": d.get("sources"), "sources_listed_to_builders": s.get("sources_listed_min"),
        "builders_listed_to_sources": s.get("builders_listed_min"),
        "peers_refused": d.get("peers_refused", {}),
        "farm_nodes_reporting": d.get("farm_nodes", {}).get("reporting"), "not_delivered": d.get("not_delivered"),
        "udp_rcvbuf_errors": u1.get("RcvbufErrors", 0) - u0.get("RcvbufErrors", 0),
        "udp_in_errors": u1.get("InErrors", 0) - u0.get("InErrors", 0),
        "dfm_exit": int(dfm_rc), "sim_exit": int(sim_rc), "accounting_line": acct,
        "loadavg_1m": loadavg(), "books_ok": ok, "books_failed": failed, "lossless": lossless,
    }
    print(json.dumps(r))


def name(r):
    return "%s pack %d %dx%dx%d%s%s%s" % (
        r["mode"], r["pack"], r["builders"], r["sources"], r["farm_nodes"], " key" if r["keyed"] else "",
        " c%d" % r["credits"] if r["credits"] != 64 else "", " @%dk" % (r["rate"] / 1e3) if r["rate"] else "")


def lat(r, which, q):
    v = (r.get("lat_us") or {}).get(which, {}).get(q)
    return "-" if v is None else "%.0f" % v if v >= 100 else "%.1f" % v


def line(r):
    return ("%-34s %9.0f ev/s  DFM %.2f cpu, %6.3f us/ev  in %6d/s out %7d/s  t->A p50/p99 %s/%s us  "
            "A->D %s/%s us  books %s%s" % (
                name(r), r["events_per_s"], r["dfm_cpu_util"] or 0, r["dfm_cpu_us_per_event"] or 0,
                r["in_total_per_s"], r["out_total_per_s"], lat(r, "trigger_to_assign", "p50"),
                lat(r, "trigger_to_assign", "p99"), lat(r, "assign_to_done", "p50"), lat(r, "assign_to_done", "p99"),
                "exact" if r["books_ok"] else "FAILED (%s)" % ", ".join(r["books_failed"]),
                "" if r.get("lossless", True) else ", lost %s" % (r.get("lost_by_reason") or r.get("lost"))))


def table(path):
    doc = json.load(open(path))
    bad = [r for r in doc["results"] if not r["books_ok"]]
    print("bench-dfm-scale: BxSxF = builders x source processes x farm nodes; %s s a point" %
          doc.get("seconds_per_point"))
    for r in doc["results"]:
        print(line(r))
    lossy = [r for r in doc["results"] if not r.get("lossless", True)]
    print("books exact in %d of %d points; events lost (counted by reason) in %d" % (
        len(doc["results"]) - len(bad), len(doc["results"]), len(lossy)))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "row" and len(sys.argv) == 14:
        row(sys.argv[2:])
    elif sys.argv[1] == "line":
        print(line(json.loads(sys.stdin.read())))
    elif sys.argv[1] == "table" and len(sys.argv) == 3:
        sys.exit(table(sys.argv[2]))
    else:
        sys.exit(__doc__)

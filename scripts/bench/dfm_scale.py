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
                               when a point's books did not close
  dfm_scale.py fit JSON...     the cost model fitted to dfm-cost.json
                               (DSCALE_SCAN=cost): constants, the points
                               against the model, what one core carries"""
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


# The cost model: DFM CPU seconds = a events + b blocks + c datagrams in (other than RECEIVED)
# + c_r RECEIVED datagrams + c_rr their records + d datagrams out + e peer-seconds.
TERMS = ("a_event", "b_block", "c_dgram_in", "c_received", "c_received_rec", "d_dgram_out", "e_peer_s")
RECEIVED_PER_DGRAM = 89


def features(r):
    w = r.get("dfm_window_s") or r["window_s"]
    # What the DFM read: what the peers sent, less the drops at its socket (the namespace's only drops),
    # taken from every type alike; a farm node's report names every builder, in parts of 89.
    keep = max(r["window_in"] - r.get("udp_rcvbuf_errors", 0), 0) / (r["window_in"] or 1)
    rec = r["in_per_s"].get("RECEIVED", 0) * r["window_s"] * keep
    per_rec = r["builders"] / -(-r["builders"] // RECEIVED_PER_DGRAM)
    return [r["window_events"], r["window_blocks"], r["window_in"] * keep - rec, rec, rec * per_rec,
            r["window_out"], (r["builders"] + r["sources"] + r["farm_nodes"]) * w]


def solve(rows, ys, use):
    """Least squares of the relative error (each point weighs as much, small or large) over the terms in use."""
    n = len(use)
    ata = [[0.0] * n for _ in range(n)]
    aty = [0.0] * n
    for x, y in zip(rows, ys):
        v = [x[j] / y for j in use]
        for i in range(n):
            aty[i] += v[i]
            for j in range(n):
                ata[i][j] += v[i] * v[j]
    for i in range(n):  # Gauss-Jordan with partial pivoting
        p = max(range(i, n), key=lambda k: abs(ata[k][i]))
        ata[i], ata[p], aty[i], aty[p] = ata[p], ata[i], aty[p], aty[i]
        for k in range(n):
            if k != i and ata[i][i]:
                f = ata[k][i] / ata[i][i]
                ata[k] = [ak - f * ai for ak, ai in zip(ata[k], ata[i])]
                aty[k] -= f * aty[i]
    return {use[i]: aty[i] / ata[i][i] for i in range(n)}


def nnls(rows, ys):
    """The fit without negative constants: drop the most negative term and fit again."""
    use = list(range(len(TERMS)))
    while True:
        c = solve(rows, ys, use)
        neg = [j for j in use if c[j] < 0]
        if not neg:
            return [c.get(j, 0.0) for j in range(len(TERMS))]
        use.remove(min(neg, key=lambda j: c[j]))


def setup_rates(rate, pack, nb, ns, nf, push):
    """Datagrams/s in and out of the DFM for a setup, from the protocol's periods: every peer's 100 ms
    heartbeat answered, lists (SOURCES 119 a datagram, BUILDERS 179) every 500 ms, RECEIVED (89 builders a
    datagram) every 100 ms, a builder's STATUS every 10 ms unless a DONE left, one ASSIGN and one DONE
    datagram a block up to one a builder per 1 ms trigger tick (a paced trigger), a CLEAR to every source
    20 ms after the first event to clear (or per 16384 events), in push the sources' copy 2 ms after its
    first block (or full, 72 blocks). Nominal periods: upper bounds of what peers send."""
    blocks = rate / pack
    up = lambda n, k: -(-n // k)
    assigns = min(blocks, 1000 * nb)
    din = assigns + nb * max(0, 100 - assigns / nb) + ns * 10
    rec = nf * 10 * up(nb, RECEIVED_PER_DGRAM)
    batch = lambda r, wait, full: max(r / (1 + r * wait), r / full)  # leaves `wait` after its first, or full
    dout = assigns + (nb + ns) * 10 + 2 * (nb * up(ns, 119) + ns * up(nb, 179)) + ns * batch(rate, 0.02, 16384)
    if push:
        dout += ns * batch(blocks, 0.002, 72)
    return [rate, rate / pack, din, rec, nf * 10 * nb, dout, nb + ns + nf]


SETUPS = (("LHCb-like: 1 MHz, pack 25, 128 x 320 x 1024", 1e6, 25, 128, 320, 1024),
          ("ATLAS-like: 100 kHz, pack 1, 128 x 100 x 2000", 1e5, 1, 128, 100, 2000),
          ("ATLAS-like, every farm node a builder: 100 kHz, pack 1, 1024 x 100 x 2000", 1e5, 1, 1024, 100, 2000))


def cost(k, rate, pack, nb, ns, nf, push):
    """The model's DFM core for a setup at a rate."""
    return sum(a * b for a, b in zip(k, setup_rates(rate, pack, nb, ns, nf, push)))


def full_core(k, pack, nb, ns, nf, push):
    """The rate at which the model's DFM takes one core (bisection: the cost grows with the rate)."""
    lo, hi = 0.0, 1e8
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cost(k, mid, pack, nb, ns, nf, push) < 1 else (lo, mid)
    return lo


def check_rates(pts):
    """The protocol's datagram rates (setup_rates) against the paced points, where the model applies."""
    print("\n| paced point | datagrams in/s measured, model | out/s measured, model |")
    print("|---|---|---|")
    for r in pts:
        if r["rate"]:
            w = r.get("dfm_window_s") or r["window_s"]
            x = setup_rates(r["rate"], r["pack"], r["builders"], r["sources"], r["farm_nodes"], r["mode"] == "push")
            din, dout = x[2] + x[3], x[5]
            print("| %s | %.0f, %.0f | %.0f, %.0f |" % (name(r), r["window_in"] / w, din, r["window_out"] / w, dout))


def fit(paths):
    docs = [json.load(open(p)) for p in paths]
    pts = [r for doc in docs for r in doc["results"] if r.get("books_ok") and r.get("window_blocks") is not None
           and r.get("dfm_cpu_s") and not r.get("keyed")]
    xs, ys = [features(r) for r in pts], [r["dfm_cpu_s"] for r in pts]
    k = nnls(xs, ys)
    print("fit over %d points (books exact) of %s" % (len(pts), ", ".join(
        "%s at git %s" % (d.get("meta", {}).get("date", ""), d.get("meta", {}).get("git", "")) for d in docs)))
    for t, v in zip(TERMS, k):
        print("  %-12s %8.3f us" % (t, v * 1e6))
    print("\n| point | events/s | blocks/s | dgrams in/s | dgrams out/s | DFM CPU us/event measured | model | model/measured |")
    print("|---|---|---|---|---|---|---|---|")
    for r, x, y in zip(pts, xs, ys):
        w = r.get("dfm_window_s") or r["window_s"]
        pred = sum(a * b for a, b in zip(k, x))
        ev = r["window_events"] or 1
        print("| %s | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f |" % (
            name(r), r["window_events"] / w, r["window_blocks"] / w, r["window_in"] / w, r["window_out"] / w,
            y / ev * 1e6, pred / ev * 1e6, pred / y))
    check_rates(pts)
    print("\n| setup | mode | datagrams in/s (RECEIVED) | out/s | DFM core (model) | of which the peers' periodic "
          "traffic | events/s one core carries |")
    print("|---|---|---|---|---|---|---|")
    for label, rate, pack, nb, ns, nf in SETUPS:
        for push in (True, False):
            x = setup_rates(rate, pack, nb, ns, nf, push)
            core = cost(k, rate, pack, nb, ns, nf, push)
            fixed = cost(k, 1, pack, nb, ns, nf, push)
            carries = "%.0f k" % (full_core(k, pack, nb, ns, nf, push) / 1e3) if fixed < 1 else "none"
            print("| %s | %s | %.0f k (%.0f k) | %.0f k | %.2f | %.2f | %s |" % (
                label, "push" if push else "pull", (x[2] + x[3]) / 1e3, x[3] / 1e3, x[5] / 1e3, core, fixed,
                carries))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "row" and len(sys.argv) == 14:
        row(sys.argv[2:])
    elif sys.argv[1] == "line":
        print(line(json.loads(sys.stdin.read())))
    elif sys.argv[1] == "fit" and len(sys.argv) >= 3:
        sys.exit(fit(sys.argv[2:]))
    elif sys.argv[1] == "table" and len(sys.argv) == 3:
        sys.exit(table(sys.argv[2]))
    else:
        sys.exit(__doc__)

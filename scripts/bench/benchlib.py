#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes one benchmark's results in the suite's convention (common to every
bench-*.sh): OUT/bench/NAME.json = {"bench", "meta" (meta.py), "results":
[rows], extra keys} and OUT/bench/NAME.csv with the same rows (nested dicts
flattened as a.b columns).

  benchlib.py write NAME OUTDIR ROWS.jsonl [KEY=JSON_OR_TEXT ...]
      merge_key=K among them: rows of an existing NAME.json whose K is not
      among the new rows' are kept (a benchmark run in pieces)
  benchlib.py csv JSON                       (re)writes the CSV next to JSON

Runs under Debian's /usr/bin/python3 (its matplotlib draws the plots)."""
import csv
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def summary_json(path):
    """The JSON lines a tool printed (--json), merged into one dict: build
    prints its dfm_ctl or workers line before its report. {} if none."""
    out = {}
    try:
        for line in open(path):
            if line.startswith("{"):
                out.update(json.loads(line))
    except (OSError, ValueError):
        pass
    return out


def last_json(path):
    """The last line of a file a tool wrote (--json), as a dict; {} if the
    file is missing, empty or that line is no JSON."""
    try:
        with open(path) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return {}


def task_ns(pid):
    """ns on a core of every thread of a process so far (/proc/PID/task/*/schedstat)."""
    tot = 0
    for f in glob.glob("/proc/%s/task/*/schedstat" % pid):
        try:
            with open(f) as fh:
                tot += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return tot


def core_ticks(names=None):
    """How busy each core has been (/proc/stat, clock ticks): cpuN (those
    in names, or all) -> busy (all but idle and iowait), softirq, system,
    user (with nice) and total, of the first eight fields."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            p = line.split()
            if not p[0].startswith("cpu") or p[0] == "cpu" or (names and p[0] not in names):
                continue
            # user nice system idle iowait irq softirq steal
            v = [int(x) for x in p[1:9]]
            out[p[0]] = {"busy": sum(v) - v[3] - v[4], "softirq": v[6], "system": v[2],
                         "user": v[0] + v[1], "total": sum(v)}
    return out


def meta(extra=()):
    out = subprocess.run([sys.executable, os.path.join(HERE, "meta.py")] + list(extra),
                         capture_output=True, text=True, timeout=60)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {"error": "meta.py failed: " + out.stderr.strip()[-200:]}


def flatten(row, prefix=""):
    flat = {}
    for k, v in row.items():
        if isinstance(v, dict):
            flat.update(flatten(v, prefix + k + "."))
        elif isinstance(v, list):
            flat[prefix + k] = " ".join(str(x) for x in v)
        else:
            flat[prefix + k] = v
    return flat


def write_csv(rows, path):
    flat = [flatten(r) for r in rows]
    cols = []
    for f in flat:
        for k in f:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in flat:
            w.writerow(r)


def value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def cmd_write(args):
    name, outdir, rows_path = args[0], args[1], args[2]
    rows = []
    with open(rows_path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    extra = dict(a.split("=", 1) for a in args[3:])
    key = extra.pop("merge_key", None)
    path = os.path.join(outdir, name + ".json")
    if key and os.path.exists(path):
        # keep the earlier run's rows this run did not measure (pieces run apart)
        new = {r.get(key) for r in rows}
        old = [r for r in json.load(open(path)).get("results", []) if r.get(key) not in new]
        rows = old + rows
    doc = {"bench": name, "meta": meta(["%s=%s" % kv for kv in extra.items() if isinstance(value(kv[1]), (str, int, float))])}
    doc.update({k: value(v) for k, v in extra.items()})
    doc["results"] = rows
    os.makedirs(outdir, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    write_csv(rows, os.path.join(outdir, name + ".csv"))
    print("wrote %s and %s.csv (%d rows)" % (path, name, len(rows)))


def cmd_csv(args):
    doc = json.load(open(args[0]))
    rows = doc.get("results") or doc.get("points") or []
    write_csv(rows, os.path.splitext(args[0])[0] + ".csv")


if __name__ == "__main__":
    cmds = {"write": cmd_write, "csv": cmd_csv}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]) or 0)

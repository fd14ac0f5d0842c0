#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# The Grafana dashboard and the Prometheus alerting rules (issue 23), no
# testbed, no root:
#  - rules: `promtool check rules` on dist/prometheus/xevb-alerts.yml, and
#    `promtool test rules` on xevb-alerts.test.yml (each alert fires on the
#    series meant to fire it, and on no other, and not before its `for`).
#  - dashboard: dist/grafana/xevb.json is what scripts/gen-grafana-dashboard.py
#    writes; it loads and holds together (schema version, the datasource, job
#    and instance variables, unique panel ids, a grid without overlaps, every
#    query on the datasource variable and filtered by $job and $instance);
#    every query parses as PromQL (promtool check rules on them as recording
#    rules).
#  - names: every metric the dashboard and the rules query, with every label
#    they match or group by and every label value they match exactly, is on
#    a page recorded from a real run (tests/fixtures/metrics/*.prom,
#    written by tests/integration/record_metrics.sh). The pages are fixtures,
#    not a live run, so that this test needs neither root nor a testbed; so
#    that they cannot go stale silently, every metric name on them must
#    still be a string in the code that renders metrics, and every metric
#    name in that code must be on them (a metric added or renamed fails
#    here until the pages are recorded again).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
cd "$(dirname "$0")/../.."
e2e_need promtool python3
W=$(mktemp -d /tmp/xevb-dash.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
ok() { echo "ok   - $*"; }
fail() {
	echo "FAIL - $*"
	fails=$((fails + 1))
}
RULES=dist/prometheus/xevb-alerts.yml
DASH=dist/grafana/xevb.json

# --- rules ------------------------------------------------------------------
if promtool check rules "$RULES" >"$W/check.out" 2>&1; then
	ok "promtool check rules: $(grep -o '[0-9]* rules found' "$W/check.out")"
else
	fail "promtool check rules $RULES:"
	sed 's/^/  | /' "$W/check.out"
fi
if (cd dist/prometheus && promtool test rules xevb-alerts.test.yml) >"$W/test.out" 2>&1; then
	ok "promtool test rules: every alert fires and holds as recorded"
else
	fail "promtool test rules xevb-alerts.test.yml:"
	sed 's/^/  | /' "$W/test.out" | head -40
fi

# --- dashboard: generated, and every query valid PromQL ----------------------
if python3 scripts/gen-grafana-dashboard.py >"$W/gen.json" && cmp -s "$W/gen.json" "$DASH"; then
	ok "$DASH is what scripts/gen-grafana-dashboard.py writes"
else
	fail "$DASH differs from the generator's output: python3 scripts/gen-grafana-dashboard.py >$DASH"
fi
# Grafana's variables filled in the way it would: then each query is a recording rule.
python3 - "$DASH" >"$W/queries.yml" <<'PY' || fail "cannot read the queries of $DASH"
import json, sys
d = json.load(open(sys.argv[1]))
print("groups:\n  - name: dashboard\n    rules:")
for p in d["panels"]:
    for t in p.get("targets", []):
        e = t["expr"].replace("$__rate_interval", "1m").replace("$job", ".*").replace("$instance", ".*")
        print("      - record: dashboard:panel%d:%s" % (p["id"], t["refId"]))
        print("        expr: %s" % json.dumps(e))
PY
if promtool check rules "$W/queries.yml" >"$W/q.out" 2>&1; then
	ok "every dashboard query parses: $(grep -o '[0-9]* rules found' "$W/q.out")"
else
	fail "dashboard queries that do not parse:"
	sed 's/^/  | /' "$W/q.out" | head -20
fi

# --- dashboard structure, and names against the recorded pages and the code --
python3 - "$DASH" "$RULES" <<'PY' || fails=$((fails + 1))
import glob, json, re, subprocess, sys
import yaml

bad = 0
def res(cond, msg):
    global bad
    print(("ok   - " if cond else "FAIL - ") + msg)
    bad += not cond

d = json.load(open(sys.argv[1]))
res(isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] >= 39, "schemaVersion %s (Grafana 11+)" % d.get("schemaVersion"))
res(all(isinstance(d.get(k), t) for k, t in (("uid", str), ("title", str), ("panels", list), ("templating", dict), ("time", dict))),
    "uid, title, panels, templating, time present")
var = {v["name"]: v for v in d["templating"]["list"]}
res(var.get("datasource", {}).get("type") == "datasource" and var["datasource"].get("query") == "prometheus",
    "datasource is a template variable over Prometheus data sources")
for v in ("job", "instance"):
    res(v in var and var[v]["type"] == "query" and var[v]["datasource"]["uid"] == "${datasource}" and var[v]["multi"],
        "variable $%s: a multi-value query on ${datasource}" % v)
panels = d["panels"]
ids = [p["id"] for p in panels]
res(len(ids) == len(set(ids)), "%d panels, ids unique" % len(ids))
cells, overlap = set(), []
for p in panels:
    g = p["gridPos"]
    if g["x"] < 0 or g["x"] + g["w"] > 24:
        overlap.append((p["title"], "outside the 24 columns"))
    for x in range(g["x"], g["x"] + g["w"]):
        for y in range(g["y"], g["y"] + g["h"]):
            if (x, y) in cells:
                overlap.append((p["title"], (x, y)))
            cells.add((x, y))
res(not overlap, "the grid: every panel within 24 columns, none overlapping %s" % overlap[:3])
targets = [(p, t) for p in panels for t in p.get("targets", [])]
queried = [p for p in panels if p["type"] != "row"]
res(all(p.get("targets") for p in queried), "every panel but the rows has a query (%d queries)" % len(targets))
res(all(p["datasource"]["uid"] == "${datasource}" and t["datasource"]["uid"] == "${datasource}" for p, t in targets),
    "every panel and query on ${datasource}")
res(all(len({t["refId"] for t in p["targets"]}) == len(p["targets"]) for p in queried), "refIds unique per panel")

# Selectors: metric{matchers}; grouping: by (labels).
SEL = re.compile(r'\b(xevb_[a-z0-9_]+)(?:\{([^}]*)\})?')
MATCH = re.compile(r'([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"')
BY = re.compile(r'\b(?:by|on|group_left|without)\s*\(([^)]*)\)')
unfiltered = [(p["title"], m.group(1)) for p, t in targets for m in SEL.finditer(t["expr"])
              if 'job=~"$job"' not in (m.group(2) or "") or 'instance=~"$instance"' not in (m.group(2) or "")]
res(not unfiltered, "every metric in the dashboard filtered by $job and $instance %s" % unfiltered[:3])

# The recorded pages: sample name -> {label: set(values)}.
page = {}
for f in sorted(glob.glob("tests/fixtures/metrics/*.prom")):
    for line in open(f):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'([a-z_0-9]+)(?:\{(.*)\})? ', line)
        labels = page.setdefault(m.group(1), {})
        for k, v in re.findall(r'([a-z_]+)="([^"]*)"', m.group(2) or ""):
            labels.setdefault(k, set()).add(v)
res(len(page) > 100, "recorded pages: %d metric names" % len(page))

def check(where, expr):
    errs = []
    names = [m.group(1) for m in SEL.finditer(expr)]
    for m in SEL.finditer(expr):
        name = m.group(1)
        if name not in page:
            errs.append("%s not on any recorded page" % name)
            continue
        for k, op, v in MATCH.findall(m.group(2) or ""):
            if k in ("job", "instance"):
                continue
            if k not in page[name]:
                errs.append("%s has no label %s" % (name, k))
            elif op == "=" and v not in page[name][k]:
                errs.append('%s{%s="%s"}: no such value (recorded: %s)' % (name, k, v, sorted(page[name][k])))
            elif op == "=~" and not any(re.fullmatch(v, x) for x in page[name][k]):
                errs.append('%s{%s=~"%s"} matches no recorded value' % (name, k, v))
    for grp in BY.findall(expr):
        for k in (x.strip() for x in grp.split(",")):
            if k and k not in ("job", "instance") and not any(k in page.get(n, {}) for n in names):
                errs.append("grouping label %s is on none of %s" % (k, sorted(set(names))))
    res(not errs, "%s: %d metric(s) as recorded%s" % (where, len(names), "" if not errs else ": " + "; ".join(errs)))
    return names

used = set()
for p, t in targets:
    used.update(check("dashboard '%s' %s" % (p["title"], t["refId"]), t["expr"]))
for g in yaml.safe_load(open(sys.argv[2]))["groups"]:
    for r in g["rules"]:
        used.update(check("alert %s" % r["alert"], r["expr"]))
print("# %d metric names queried by the dashboard and the rules" % len(used))

# The pages against the code: the sources that render metrics, found by the calls they make
# (not the headers, whose comments show the calls), and the counter table the builder's page
# is rendered from.
src = subprocess.run(["grep", "-rlE", "--include=*.c", r"xevb_metric_(one|family|u64|f64)\(|xevb_metrics_counter\(", "user"],
                     capture_output=True, text=True).stdout.split() + ["user/base/counters.h"]
code = set()
for f in src:
    code.update(re.findall(r'"(xevb_[a-z0-9_]+)"', open(f).read()))
families = set(page)
for f in glob.glob("tests/fixtures/metrics/*.prom"):
    families.update(re.findall(r'^# TYPE (\S+)', open(f).read(), re.M))
gone = sorted(n for n in families if n not in code and not re.sub(r'_(sum|count)$', '', n) in code)
new = sorted(n for n in code if n not in families)
res(not gone, "every recorded metric name is still in the code (%s)%s" % (", ".join(src),
    "" if not gone else ": gone from the code: %s; record again (tests/integration/record_metrics.sh)" % gone))
res(not new, "every metric name in the code is on a recorded page%s" % (
    "" if not new else ": not recorded: %s; record again (tests/integration/record_metrics.sh)" % new))
sys.exit(1 if bad else 0)
PY

if ((fails)); then
	echo "FAIL test_dashboards: $fails failure(s)"
	exit 1
fi
echo "PASS test_dashboards"

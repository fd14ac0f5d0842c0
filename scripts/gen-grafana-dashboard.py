#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes the Grafana dashboard dist/grafana/xevb.json (to stdout).

The panels are listed here once, as (title, description, queries, unit), and
the JSON's layout, ids and boilerplate follow from the list: edit this file
and regenerate (python3 scripts/gen-grafana-dashboard.py >dist/grafana/xevb.json);
tests/integration/test_dashboards.sh fails while the two differ. Every
metric and label is one the code emits (docs/observability.md), checked
against recorded pages by the same test.
"""
import json
import sys

# Grafana 11.x dashboards (schemaVersion 39); newer Grafana migrates on load.
SCHEMA_VERSION = 39
DS = {"type": "prometheus", "uid": "${datasource}"}
# Every selector: the job and instance variables.
S = 'job=~"$job",instance=~"$instance"'
RI = "$__rate_interval"


def rate(metric, by="instance", match=""):
    sel = S + ("," + match if match else "")
    return "sum by (%s) (rate(%s{%s}[%s]))" % (by, metric, sel, RI)


def q(expr, legend):
    return (expr, legend)


def rates(*counters):
    """Per-second rates of (metric, what) counters, one query each, legend "<instance> <what>"."""
    return [q(rate(m), "{{instance}} " + what) for m, what in counters]


# The XDP verdicts that keep a packet from the builder (the rest are MEPs and
# segments redirected, other traffic passed on, and shedding, shown apart).
XDP_LOSS = 'verdict=~"malformed_.*|ip_fragment|unknown_source|src_addr_mismatch|src_mac_mismatch|src_vlan_mismatch|meta_failed|no_xsk_to_kernel|multibuf_to_kernel"'
BUILDER_INFO = " * on (job, instance, builder) group_left (addr) xevb_dfm_builder_info{%s}" % S

ROWS = [
    ("Overview", [
        ("stat", "Builders reporting", "Builders whose statistics snapshot is readable (xevb_build_snapshot_valid).",
         [q("count(xevb_build_snapshot_valid{%s} == 1)" % S, "builders")], "none", None),
        ("stat", "Events complete", "Events built complete per second, all selected builders.",
         [q("sum(rate(xevb_events_complete_total{%s}[%s]))" % (S, RI), "complete")], "cps", None),
        ("stat", "Events incomplete", "Share of the events emitted incomplete (timeout, eviction, end of run). "
         "Alert XevbIncompleteEvents above 1 %: see the 'Loss by place' row.",
         [q("sum(rate(xevb_events_incomplete_total{%s}[%s])) / (sum(rate(xevb_events_complete_total{%s}[%s])) "
            "+ sum(rate(xevb_events_incomplete_total{%s}[%s])))" % (S, RI, S, RI, S, RI), "incomplete")],
         "percentunit", [0.001, 0.01]),
        ("stat", "Events shed", "Whole events the builders chose not to take (XDP shedding), per second.",
         [q("sum(rate(xevb_shed_events_total{%s}[%s]))" % (S, RI), "shed")], "cps", [0.001, 1]),
        ("stat", "Farm node connections", "Builder connections open at the farm nodes (xevb sink).",
         [q("sum(xevb_sink_connections_open{%s})" % S, "connections")], "none", None),
        ("stat", "DFM events outstanding", "Events the DFM has triggered and not yet booked.",
         [q("sum(xevb_dfm_events_outstanding{%s})" % S, "outstanding")], "none", None),
    ]),
    ("Rates in", [
        ("timeseries", "Frames in", "Frames taken from the receive sockets (AF_XDP or kernel socket).",
         [q(rate("xevb_rx_frames_total"), "{{instance}}")], "pps", None),
        ("timeseries", "Bytes in", "Bytes of the frames taken from the receive sockets.",
         [q(rate("xevb_rx_bytes_total"), "{{instance}}")], "Bps", None),
        ("timeseries", "MEPs in", "Valid MEPs and segments handed to the builder; frames that were not MEPs.",
         rates(("xevb_mep_packets_total", "MEPs"), ("xevb_rx_not_mep_frames_total", "not MEP")), "pps", None),
        ("timeseries", "MEPs per source", "Valid MEPs per source id: a source sending less stands out.",
         [q(rate("xevb_source_packets_total", "instance, source"), "{{instance}} source {{source}}")], "pps", None),
        ("timeseries", "Frames per worker", "Builders with --workers > 1: frames each worker took from its "
         "queue. One worker taking all: the NIC steers every flow to one queue.",
         [q(rate("xevb_worker_rx_frames_total", "instance, worker"), "{{instance}} worker {{worker}}")],
         "pps", None),
        ("timeseries", "Hand-offs between workers", "MEP shares handed to the worker that owns their events, "
         "and MEPs split between owners.",
         [q(rate("xevb_worker_handoff_sent_total", "instance, worker"), "{{instance}} worker {{worker}} sent"),
          q(rate("xevb_worker_split_meps_total", "instance, worker"), "{{instance}} worker {{worker}} split")],
         "pps", None),
    ]),
    ("Events", [
        ("timeseries", "Events out of the builder", "Complete, incomplete (of which evicted and flushed at end of "
         "run) and discarded events per second.",
         rates(("xevb_events_complete_total", "complete"), ("xevb_events_incomplete_total", "incomplete"),
               ("xevb_events_evicted_total", "evicted"), ("xevb_events_flushed_eor_total", "flushed at end of run"),
               ("xevb_events_discarded_total", "discarded")), "cps", None),
        ("timeseries", "Open events and frames held", "Events open now and the receive frames they hold: frames "
         "held near --tune frames empties the fill ring.",
         [q("xevb_events_open{%s}" % S, "{{instance}} open events"),
          q("xevb_frames_held{%s}" % S, "{{instance}} frames held")], "short", None),
        ("timeseries", "Output to farm nodes", "Built events written whole to the farm nodes (or the file).",
         [q(rate("xevb_output_events_total"), "{{instance}} events")], "cps", None),
        ("timeseries", "Output bytes", "Bytes of built events written.",
         [q(rate("xevb_output_bytes_total"), "{{instance}}")], "Bps", None),
    ]),
    ("Loss by place (wire to farm node)", [
        ("timeseries", "1. Wire, switch, NIC: packets missing per source", "Packets missing by packet_seq, per "
         "source id: lost before the builder's XDP program (wire, switch, NIC ring). The NIC's own drops are in "
         "ethtool -S, not on this page.",
         [q(rate("xevb_source_seq_gaps_total", "instance, source"), "{{instance}} source {{source}}")], "pps", None),
        ("timeseries", "2. XDP program: packets kept from the builder", "Packets by XDP verdict that do not reach "
         "the builder: malformed by rule, IP fragments, unknown sources, no socket on their queue, multi-buffer.",
         [q(rate("xevb_xdp_packets_total", "instance, verdict", XDP_LOSS), "{{instance}} {{verdict}}")], "pps", None),
        ("timeseries", "3. AF_XDP sockets: drops and empty fill ring", "XDP_STATISTICS per queue: rx_dropped (RX "
         "ring full, the builder fell behind), fill ring empty (no free frame), invalid descriptors.",
         [q(rate("xevb_xsk_rx_dropped_total", "instance, queue"), "{{instance}} q{{queue}} rx_dropped"),
          q(rate("xevb_xsk_rx_ring_full_total", "instance, queue"), "{{instance}} q{{queue}} rx ring full"),
          q(rate("xevb_xsk_fill_ring_empty_total", "instance, queue"), "{{instance}} q{{queue}} fill ring empty"),
          q(rate("xevb_xsk_rx_invalid_descs_total", "instance, queue"), "{{instance}} q{{queue}} invalid descs")],
         "pps", None),
        ("timeseries", "3. Kernel socket path: drops", "Socket builders (--mode socket): packets dropped at the "
         "socket queue, and truncated to the frame size.",
         rates(("xevb_socket_kernel_drops_total", "kernel drops"),
               ("xevb_socket_truncated_total", "truncated")), "pps", None),
        ("timeseries", "4. Builder: fragments dropped by reason", "Fragments received but in no event: duplicate, "
         "late, unknown_source, wrong_run, partial, unassigned, ...",
         [q(rate("xevb_fragments_dropped_total", "instance, reason"), "{{instance}} {{reason}}")], "cps", None),
        ("timeseries", "4. Builder: segments dropped by reason", "Segments (wire format 1.1) not in a built fragment.",
         [q(rate("xevb_segments_dropped_total", "instance, reason"), "{{instance}} {{reason}}")], "cps", None),
        ("timeseries", "5. Output: built events dropped by reason", "Built events not delivered: no_sink (no farm "
         "node connected), write_error, backlog, in_flight, encode_error; and farm node reconnects.",
         [q(rate("xevb_output_dropped_events_total", "instance, reason"), "{{instance}} {{reason}}"),
          q(rate("xevb_output_reconnects_total"), "{{instance}} reconnects"),
          q(rate("xevb_output_peer_resets_total"), "{{instance}} peer resets")], "cps", None),
        ("timeseries", "6. Farm nodes: broken or duplicated events", "Events the farm nodes refused by kind.",
         [q(rate("xevb_sink_errors_total", "instance, kind"), "{{instance}} {{kind}}")], "cps", None),
    ]),
    ("Shedding", [
        ("timeseries", "Accept level", "Fraction of event id blocks the XDP program lets through (100 %: no "
         "shedding). Alert XevbSheddingActive after 10 minutes below.",
         [q("xevb_shed_accept{%s} / 65536" % S, "{{instance}}")], "percentunit", None),
        ("timeseries", "Shed", "Events, MEPs and fragments shed whole by the XDP program.",
         rates(("xevb_shed_events_total", "events"), ("xevb_shed_meps_total", "MEPs"),
               ("xevb_shed_fragments_total", "fragments")), "cps", None),
        ("timeseries", "Cuts by cause", "Times the controller lowered the level in the last 5 minutes: ring and "
         "kernel_drops (this builder is short of CPU), backlog (the farm nodes are).",
         [q("sum by (instance, cause) (increase(xevb_shed_cuts_total{%s}[5m]))" % S, "{{instance}} {{cause}}")],
         "short", None),
    ]),
    ("Data-flow manager", [
        ("timeseries", "DFM events", "Events triggered, booked complete and incomplete per second.",
         rates(("xevb_dfm_events_triggered_total", "triggered"), ("xevb_dfm_events_complete_total", "complete"),
               ("xevb_dfm_events_incomplete_total", "incomplete")), "cps", None),
        ("timeseries", "Outstanding and not delivered", "Events in flight now; events DONE that no farm node "
         "received (in flight during the run, not delivered once the books are closed).",
         [q("xevb_dfm_events_outstanding{%s}" % S, "{{instance}} outstanding"),
          q("xevb_dfm_events_not_delivered{%s}" % S, "{{instance}} not delivered"),
          q("xevb_dfm_books_closed{%s}" % S, "{{instance}} books closed")], "short", None),
        ("timeseries", "Events lost by reason", "builder_dead, no_data, no_done, at_stop.",
         [q(rate("xevb_dfm_events_lost_total", "instance, reason"), "{{instance}} {{reason}}")], "cps", None),
        ("timeseries", "Trigger stalls by reason", "no_credit: every builder Busy or out of credit (the farm "
         "cannot keep up); table_full: too many events in flight.",
         [q(rate("xevb_dfm_trigger_stalls_total", "instance, reason"), "{{instance}} {{reason}}")], "cps", None),
        ("timeseries", "Busy builders", "1 while the builder is Busy (its farm nodes' backlog is full).",
         [q("xevb_dfm_builder_busy{%s}%s" % (S, BUILDER_INFO), "{{instance}} {{addr}}")], "short", None),
        ("timeseries", "Busy transitions", "Times each builder turned Busy, per second: flapping means the "
         "bottleneck is downstream.",
         [q("sum by (instance, builder) (rate(xevb_dfm_builder_busy_transitions_total{%s}[%s]))" % (S, RI),
            "{{instance}} builder {{builder}}")], "cps", None),
        ("timeseries", "Builder credits and events outstanding", "Credits each builder grants the DFM (xevb "
         "build --credits) and its events in flight. The farm nodes' credits to the builders (xevb sink "
         "--credits) are not on a metrics page.",
         [q("xevb_dfm_builder_credits{%s}%s" % (S, BUILDER_INFO), "{{instance}} {{addr}} credits"),
          q("xevb_dfm_builder_events_outstanding{%s}%s" % (S, BUILDER_INFO), "{{instance}} {{addr}} outstanding")],
         "short", None),
        ("timeseries", "Not delivered per builder", "Events each builder reported DONE that no farm node "
         "received.",
         [q("xevb_dfm_builder_events_not_delivered{%s}%s" % (S, BUILDER_INFO), "{{instance}} {{addr}}")],
         "short", None),
        ("timeseries", "Peers", "Builders alive, farm nodes reporting, source processes.",
         [q("sum by (instance) (xevb_dfm_builder_alive{%s})" % S, "{{instance}} builders alive"),
          q("xevb_dfm_farm_nodes_reporting{%s}" % S, "{{instance}} farm nodes reporting"),
          q("xevb_dfm_source_processes{%s}" % S, "{{instance}} source processes")], "short", None),
        ("timeseries", "Builder faults", "Deaths, rejoins and restarts per builder (increase over 5 minutes).",
         [q("sum by (instance, builder) (increase(xevb_dfm_builder_deaths_total{%s}[5m]))" % S,
            "{{instance}} builder {{builder}} deaths"),
          q("sum by (instance, builder) (increase(xevb_dfm_builder_restarts_total{%s}[5m]))" % S,
            "{{instance}} builder {{builder}} restarts")], "short", None),
    ]),
    ("Farm nodes", [
        ("timeseries", "Events received", "Built events received by the farm nodes, complete and flagged "
         "incomplete.",
         rates(("xevb_sink_events_complete_total", "complete"),
               ("xevb_sink_events_incomplete_total", "incomplete")), "cps", None),
        ("timeseries", "Bytes received", "Bytes of the events received.",
         [q(rate("xevb_sink_bytes_total"), "{{instance}}")], "Bps", None),
        ("timeseries", "Latency from build", "Mean (over the rate interval) and longest time from the builder's "
         "emit to the farm node.",
         [q("sum by (instance) (rate(xevb_sink_latency_seconds_sum{%s}[%s])) / sum by (instance) "
            "(rate(xevb_sink_latency_seconds_count{%s}[%s]))" % (S, RI, S, RI), "{{instance}} mean"),
          q("xevb_sink_latency_max_seconds{%s}" % S, "{{instance}} max")], "s", None),
        ("timeseries", "Connections", "Builder connections open now, and dropped on a broken stream.",
         [q("xevb_sink_connections_open{%s}" % S, "{{instance}} open"),
          q(rate("xevb_sink_connections_dropped_total"), "{{instance}} dropped /s")], "short", None),
    ]),
]


def thresholds(steps):
    out = [{"color": "green", "value": None}]
    if steps:
        out += [{"color": "orange", "value": steps[0]}, {"color": "red", "value": steps[1]}]
    return {"mode": "absolute", "steps": out}


def panel(pid, kind, title, desc, queries, unit, steps, pos):
    p = {
        "id": pid,
        "type": kind,
        "title": title,
        "description": desc,
        "datasource": DS,
        "gridPos": pos,
        "fieldConfig": {"defaults": {"unit": unit, "thresholds": thresholds(steps)}, "overrides": []},
        "targets": [{"refId": chr(ord("A") + i), "datasource": DS, "expr": e, "legendFormat": legend, "range": True}
                    for i, (e, legend) in enumerate(queries)],
    }
    if kind == "stat":
        p["fieldConfig"]["defaults"]["color"] = {"mode": "thresholds"}
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "area", "justifyMode": "auto",
                        "orientation": "auto", "textMode": "auto"}
    else:
        p["fieldConfig"]["defaults"]["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                                                  "showPoints": "never", "spanNulls": False}
        p["options"] = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}}
    return p


def variable(name, label, query):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "query": query, "definition": query, "refresh": 2, "sort": 1, "multi": True, "includeAll": True,
            "allValue": ".*", "current": {}, "options": [], "hide": 0, "regex": ""}


def dashboard():
    panels, pid, y = [], 1, 0
    for title, items in ROWS:
        panels.append({"id": pid, "type": "row", "title": title, "collapsed": False, "panels": [],
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
        pid, y, x = pid + 1, y + 1, 0
        for kind, ptitle, desc, queries, unit, steps in items:
            w, h = (4, 4) if kind == "stat" else (12, 8)
            if x + w > 24:
                x, y = 0, y + h
            panels.append(panel(pid, kind, ptitle, desc, queries, unit, steps, {"h": h, "w": w, "x": x, "y": y}))
            pid, x = pid + 1, x + w
        y += h
    # Every xevb process serves xevb_metrics_scrapes_total: the jobs and instances of all three roles.
    templating = [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "options": [], "hide": 0, "refresh": 1, "regex": ""},
        variable("job", "Job", "label_values(xevb_metrics_scrapes_total, job)"),
        variable("instance", "Instance", 'label_values(xevb_metrics_scrapes_total{job=~"$job"}, instance)'),
    ]
    return {
        "uid": "xevb-overview",
        "title": "xevb event builder",
        "description": "Builders, farm nodes and the data-flow manager of xevb: rates in, events, loss by "
                       "place, shedding, Busy, credits. docs/deploy.md says how to read it.",
        "tags": ["xevb", "daq"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "timezone": "",
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "refresh": "30s",
        "links": [],
        "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                                  "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                                  "name": "Annotations & Alerts", "type": "dashboard"}]},
        "templating": {"list": templating},
        "panels": panels,
    }


if __name__ == "__main__":
    json.dump(dashboard(), sys.stdout, indent=2)
    sys.stdout.write("\n")

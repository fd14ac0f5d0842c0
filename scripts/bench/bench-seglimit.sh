#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Issue 22's point, and what limits it: 16 kB fragments at MTU 9000 (4
# sources, live generator segments), side by side in one run, each a
# loss-free search of bench-gateway's segment flow (GW_FLOWS=seg):
#   drop         XDP_DROP on the builder's veth: the generator and veth alone
#   bare         AF_XDP copy-mode receive and release (xevb build --tune bare=1)
#   socket-bare  raw IPv4 socket receive (recvmmsg) and release (--mode socket --tune bare=1)
#   xdp, socket  the builders, build only (--no-forward)
#   xdp+fwd, socket+fwd, xdp+fwd+zc   the builders forwarding to a farm node
#                that checks every byte (xdp+fwd+zc: --tune zerocopy=1, MSG_ZEROCOPY)
# SEGLIMIT_RUNS (3) times. MB/s = fragment payload built (or received)
# loss-free per second. Each run's rows, and per run the ratios the issue
# asks about:
#   bare_over_socket_bare   AF_XDP receive vs socket receive alone
#   xdp_over_socket_fwd     the target: XDP builder vs socket builder, forwarding
#   bound_over_socket_fwd   bare AF_XDP vs the socket builder: what the XDP
#                           builder could reach at most (it receives as bare does)
#   zc_over_socket_fwd      the XDP builder with --tune zerocopy=1 vs the socket builder
# with their medians. Then the cost: the same receivers paced at
# SEGLIMIT_COST_FPS (100000) frames/s, which each takes, and the receive
# path's CPU per frame (softirq on both cores, where the veth, the XDP
# program and the copy into the UMEM or the skb's way to the socket run,
# plus the receiver's own time: recvmmsg's copy for the socket), per run,
# and cost_socket_bare_over_bare: how many times bare AF_XDP's CPU per
# frame the socket's is; the XDP path moves 2x the bytes of the socket
# path on the same cores only if that is 2 or more. CPU time per frame
# suffers less than a rate from other load on the machine.
# Writes OUT/bench/seglimit.json (and .csv); an OUT/bench/segments-live.json
# of an earlier segment scan is kept (bench-gateway writes its rows there).
#
# usage: scripts/bench/bench-seglimit.sh [OUT]   env: SEGLIMIT_RUNS (3; 1 with BENCH_QUICK),
#   SEGLIMIT_IMPLS (all of the above), GW_SECS, GW_STEPS, BENCH_QUICK, GW_MODEL,
#   GW_SINK_RPS as for bench-gateway.sh; SEGLIMIT_COST_IMPLS (drop bare
#   socket-bare xdp socket), SEGLIMIT_COST_FPS (100000). About 5 minutes a run (full).
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start seglimit "${1:-}"
RUNS=${SEGLIMIT_RUNS:-$(quick_or 1 3)}
IMPLS=${SEGLIMIT_IMPLS:-drop bare socket-bare xdp socket xdp+fwd socket+fwd xdp+fwd+zc}
COST_IMPLS=${SEGLIMIT_COST_IMPLS:-drop bare socket-bare xdp socket}
COST_FPS=${SEGLIMIT_COST_FPS:-100000}
# bench-gateway's seg flow writes segments-live.*: put back what was there.
mkdir -p "$W/keep"
cp "$OUT"/bench/segments-live.* "$W/keep/" 2>/dev/null
bench_on_exit() {
	rm -f "$OUT"/bench/segments-live.*
	cp "$W"/keep/* "$OUT/bench/" 2>/dev/null
}

for ((run = 1; run <= RUNS; run++)); do
	echo "seglimit: run $run of $RUNS ($IMPLS)" >&2
	GW_FLOWS=seg GW_SEG_SIZES=16000 GW_SEG_MTUS=9000 GW_SEG_IMPLS="$IMPLS" GW_IMPLS=" " GW_VARIANTS=" " \
		bash scripts/bench/bench-gateway.sh "$OUT" >&2 || { echo "seglimit: run $run failed" >&2; exit 1; }
	cp "$OUT/bench/segments-live.json" "$W/run$run.json"
	if [[ -n ${COST_IMPLS// /} ]]; then
		echo "seglimit: run $run, cost at $COST_FPS frames/s ($COST_IMPLS)" >&2
		GW_SEG_FPS=$COST_FPS GW_FLOWS=seg GW_SEG_SIZES=16000 GW_SEG_MTUS=9000 GW_SEG_IMPLS="$COST_IMPLS" \
			GW_IMPLS=" " GW_VARIANTS=" " bash scripts/bench/bench-gateway.sh "$OUT" >&2 ||
			{ echo "seglimit: run $run (cost) failed" >&2; exit 1; }
		cp "$OUT/bench/segments-live.json" "$W/cost$run.json"
	fi
done

python3 - "$W" "$RUNS" >"$W/rows" <<'PY'
import json, sys
w, runs = sys.argv[1], int(sys.argv[2])
for run in range(1, runs + 1):
    d = json.load(open("%s/run%d.json" % (w, run)))
    mb = {}
    for r in d["results"]:
        best = max((p for p in r["probes"] if p["ok"] and p.get("events_ok", True) and p["loss"] <= r["loss_tolerance"]),
                   key=lambda p: p["frames_per_s"], default=None)
        mb[r["impl"]] = r["lossfree_mb_per_s"]
        print(json.dumps({"run": run, "impl": r["impl"], "mb_per_s": r["lossfree_mb_per_s"],
                          "fragments_per_s": r["lossfree_fragments_per_s"],
                          "frames_per_fragment": r["frames_per_fragment"],
                          "sender_limited": r["sender_limited"], "copied_per_byte": r["copied_per_byte"],
                          "builder_cpu_ns_per_frame": best.get("builder_cpu_ns_per_frame") if best else None,
                          "core_busy": best.get("core_busy") if best else None,
                          "zerocopy_per_byte": r.get("zerocopy_per_byte"),
                          "kernel_copied_per_byte": r.get("kernel_copied_per_byte"),
                          "unpaced_received_frames_per_s": r["unpaced_received_frames_per_s"]}))
    def ratio(a, b):
        return round(mb[a] / mb[b], 3) if mb.get(a) and mb.get(b) else None
    try:
        cost = json.load(open("%s/cost%d.json" % (w, run)))["results"]
    except OSError:
        cost = []
    ns = {}
    for r in cost:
        p = r["probes"][-1] if len(r["probes"]) > 1 else {}
        ns[r["impl"]] = p.get("rx_cpu_ns_per_frame") if p.get("loss", 1) <= r["loss_tolerance"] else None
        print(json.dumps({"run": run, "impl": r["impl"], "kind": "cost", "target_frames_per_s": p.get("target_frames_per_s"),
                          "frames_per_s": p.get("frames_per_s"), "loss": p.get("loss"),
                          "rx_cpu_ns_per_frame": p.get("rx_cpu_ns_per_frame"), "softirq_cpu_s": p.get("softirq_cpu_s"),
                          "builder_cpu_s": p.get("builder_window_cpu_s"), "core_busy": p.get("core_busy")}))
    print(json.dumps({"run": run, "impl": "ratios",
                      "cost_socket_bare_over_bare": round(ns["socket-bare"] / ns["bare"], 3)
                          if ns.get("socket-bare") and ns.get("bare") else None,
                      "cost_socket_over_xdp": round(ns["socket"] / ns["xdp"], 3) if ns.get("socket") and ns.get("xdp") else None,
                      "bare_over_socket_bare": ratio("bare", "socket-bare"),
                      "xdp_over_socket_fwd": ratio("xdp+fwd", "socket+fwd"),
                      "bound_over_socket_fwd": ratio("bare", "socket+fwd"),
                      "zc_over_socket_fwd": ratio("xdp+fwd+zc", "socket+fwd"),
                      "xdp_over_socket_build_only": ratio("xdp", "socket")}))
PY
python3 - "$W/rows" >"$W/medians" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for r in rows:
    if r.get("kind") == "cost":
        if r["rx_cpu_ns_per_frame"]:
            med.setdefault(r["impl"] + "_rx_cpu_ns_per_frame", []).append(r["rx_cpu_ns_per_frame"])
    elif r["impl"] == "ratios":
        for k, v in r.items():
            if k not in ("run", "impl") and v is not None:
                med.setdefault(k, []).append(v)
    elif r["mb_per_s"]:
        med.setdefault(r["impl"] + "_mb_per_s", []).append(r["mb_per_s"])
print(json.dumps({k: round(statistics.median(v), 3) for k, v in med.items()}))
PY
bench_write seglimit "$W/rows" runs="$RUNS" \
	medians="$(cat "$W/medians")" \
	model='"bench-gateway seg flow: 4 sources, 16000-byte fragments, MTU 9000, live generator segments (<= 3408-byte frames) on a direct veth pair, generator and veth receive work on CPU 0, receiver on CPU 1, farm node on CPU 0; 2 shared cores"'
python3 - "$OUT/bench/seglimit.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-4s %-12s %9s %s" % ("run", "impl", "MB/s", "note"))
for r in d["results"]:
    if r.get("kind") == "cost":
        print("%-4d %-12s %9s cost at %s frames/s: %s ns CPU per frame (loss %s)" % (r["run"], r["impl"], "",
              r["target_frames_per_s"], r["rx_cpu_ns_per_frame"], r["loss"]))
    elif r["impl"] == "ratios":
        print("%-4d ratios       %s" % (r["run"], ", ".join("%s %s" % (k, v) for k, v in r.items() if k not in ("run", "impl"))))
    else:
        print("%-4d %-12s %9.1f %s" % (r["run"], r["impl"], r["mb_per_s"], "generator-limited" if r["sender_limited"] else ""))
print("medians: " + json.dumps(d["medians"]))
PY

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Jumbo MEPs and forwarding without copies. A testbed with MTU 9000 (one
# source host, one builder, one farm node, through the bridge). The source
# (`xevb source`, kernel sockets + sendmmsg: live frames stop at 3408 bytes)
# sends flat out from CPU 0 for BENCH_SECONDS; `xevb build` runs on CPU 1,
# the sink on CPU 0. Points, CASE:MODE:FWD:
#   CASE  jumbo: 4 sources, 8 x 1040 B fragments a packet (8482-byte frames,
#         three 4 kB AF_XDP chunks each, XDP_USE_SG); l1: 25 x 32 B (1150 B)
#   MODE  xdp (AF_XDP behind XDP) or socket (raw IPv4, recvmmsg)
#   FWD   none (--no-forward), writev (TCP to the sink, the default) or
#         zerocopy (--tune zerocopy=1: MSG_ZEROCOPY with deferred frame release)
# Per run: frames/s and Gb/s the builder received (rx over the source's
# sending time), the builder's CPU time per frame (/proc/PID/stat), events
# built and forwarded, drops. Window 65536 events, timeout 100 ms: a flat-out
# source overflows the RX ring now and then, and the events it leaves open
# must not overflow the window meanwhile. BENCH_RUNS runs (3; 1 with BENCH_QUICK=1) of
# BENCH_SECONDS (3; 1.5 quick), medians. BENCH_POINTS overrides the list;
# BENCH_PERF=DIR records `perf record -e cpu-clock -C 1 -g` of the last run
# of each point and writes the top symbols to DIR/<point>.txt.
# Writes $OUT/bench/jumbo.json, jumbo.csv and jumbo-*.png.
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start jumbo "${1:-}" xevb
bench_runs_secs 1.5 3
POINTS=${BENCH_POINTS:-"jumbo:xdp:none jumbo:socket:none jumbo:xdp:writev jumbo:xdp:zerocopy
	jumbo:socket:writev jumbo:socket:zerocopy l1:xdp:writev l1:xdp:zerocopy"}
HZ=$(getconf CLK_TCK)
bench_testbed
tb_up --prefix "xb$$jmb" --sources 1 --builders 1 --sinks 1 --mtu 9000 >/dev/null
SRCNS=$(tb_ns source 0)
BNS=$(tb_ns builder 0)
KNS=$(tb_ns sink 0)
DEST=$(tb_addr builder 0)
SINK="$(tb_addr sink 0):5000"
: >"$W/rows.jsonl"

run_point() { # CASE MODE FWD RUN
	local case=$1 mode=$2 fwd=$3 run=$4 d="$W/$1-$2-$3-$4" bopts=() sopts=() bpid spid kpid xp t0 t1 perfpid=
	mkdir -p "$d"
	case $case in
	jumbo) sopts=(--pack 8 --frag-size 1040) ;;
	l1) sopts=(--pack 25 --frag-size 32) ;;
	esac
	# A socket-mode frame must hold a whole jumbo datagram.
	[[ $mode == socket ]] && bopts+=(--mode socket --tune frame-size=16384)
	case $fwd in
	none) bopts+=(--no-forward) ;;
	writev) bopts+=(--sink "$SINK") ;;
	zerocopy) bopts+=(--sink "$SINK" --tune zerocopy=1) ;;
	esac
	if [[ $fwd != none ]]; then
		ip netns exec "$KNS" taskset -c 0 timeout 60 "$X" sink --listen "$SINK" --ready-file "$d/ready" \
			--json --stats-interval 0 --duration 40 >"$d/sink.json" 2>"$d/sink.err" &
		kpid=$!
		BG_PIDS+=("$kpid")
		wait_for "$d/ready" . "$kpid" || true
	fi
	ip netns exec "$BNS" taskset -c 1 timeout 60 "$X" build --dev eth0 --sources 0-3 --json --quiet \
		--duration 40 --window 65536 --timeout-ms 100 "${bopts[@]}" >"$d/build.json" 2>"$d/build.err" &
	bpid=$!
	BG_PIDS+=("$bpid")
	wait_for "$d/build.err" 'AF_XDP socket on|on a kernel socket' "$bpid" || true
	xp=$(child_xevb "$bpid")
	t0=$(proc_ticks "$xp")
	if [[ -n ${BENCH_PERF:-} && $run == "$RUNS" ]]; then
		mkdir -p "$BENCH_PERF"
		perf record -q -e cpu-clock -C 1 -g -o "$W/perf.data" -- sleep "$SECS" >/dev/null 2>&1 &
		perfpid=$!
	fi
	ip netns exec "$SRCNS" taskset -c 0 "$X" source --dest "$DEST" --source-ids 0-3 "${sopts[@]}" \
		--duration "$SECS" --no-end-of-run --json --quiet >"$d/src.json" 2>"$d/src.err" ||
		echo "source failed: $(tail -2 "$d/src.err")" >&2
	sleep 0.4 # the rings drain
	t1=$(proc_ticks "$xp")
	[[ -n $perfpid ]] && wait "$perfpid"
	kill -INT "$bpid" 2>/dev/null || true
	wait "$bpid" || echo "builder exit status $? ($case $mode $fwd): $(tail -2 "$d/build.err")" >&2
	if [[ -n ${kpid:-} ]]; then
		sleep 0.3
		kill -INT "$kpid" 2>/dev/null || true
		wait "$kpid" || true
	fi
	BG_PIDS=()
	if [[ -n $perfpid ]]; then
		{
			echo "# CPU 1 (the builder's core) by task and object, then the top symbols"
			perf report -i "$W/perf.data" --stdio --no-children --sort comm,dso -g none 2>/dev/null |
				grep -vE '^#|^$' | head -12
			perf report -i "$W/perf.data" --stdio --no-children --sort comm,sym -g none \
				--percent-limit 0.7 2>/dev/null | grep -vE '^#|^$' | head -40
		} >"$BENCH_PERF/$case-$mode-$fwd.txt" || true
	fi
	"$PY" - "$d" "$case" "$mode" "$fwd" "$run" "$((t1 - t0))" "$HZ" >>"$W/rows.jsonl" <<'PY'
import json, sys
d, case, mode, fwd, run, ticks, hz = sys.argv[1:8]
def J(n):
    try:
        l = [x for x in open(d + "/" + n + ".json").read().splitlines() if x.startswith("{")]
        return json.loads(l[-1]) if l else {}
    except OSError:
        return {}
s, b, k = J("src"), J("build"), J("sink")
el = s.get("elapsed_s") or 1.0
rx = b.get("rx_frames", 0)
x = b.get("xdp", {})
mal = sum(v["packets"] for kk, v in x.items() if kk.startswith("malformed_"))
cpu_s = int(ticks) / int(hz)
print(json.dumps(dict(
    case=case, mode=mode, fwd=fwd, run=int(run), seconds=round(el, 3),
    sent_frames=s.get("packets", 0), sent_pps=round(s.get("packets", 0) / el),
    rx_frames=rx, rx_fps=round(rx / el), rx_gbps=round(b.get("rx_bytes", 0) * 8 / el / 1e9, 3),
    builder_cpu_s=round(cpu_s, 3), builder_ns_per_frame=round(cpu_s * 1e9 / rx) if rx else None,
    events_complete=b.get("events_complete", 0), events_incomplete=b.get("events_incomplete", 0),
    out_events=b.get("out_events", 0), out_gbps=round(b.get("out_bytes", 0) * 8 / el / 1e9, 3),
    sink_events=k.get("events"), sink_errors=k.get("errors"),
    drops_ring_full=b.get("xsk_rx_ring_full", 0), drops_xsk=b.get("xsk_rx_dropped", 0),
    drops_socket=b.get("sock_kernel_drops", 0), xdp_malformed=mal,
    rx_not_mep=b.get("rx_not_mep", 0))))
PY
}

for p in $POINTS; do
	IFS=: read -r c m f <<<"$p"
	for ((r = 1; r <= RUNS; r++)); do
		run_point "$c" "$m" "$f" "$r"
	done
done

"$PY" - "$W/rows.jsonl" "$OUT/bench" "$RUNS" "$SECS" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, "scripts/bench")
import benchlib
rows = [json.loads(l) for l in open(sys.argv[1])]
out, runs, secs = sys.argv[2], sys.argv[3], sys.argv[4]
meta = benchlib.meta(["BENCH_RUNS=" + runs, "BENCH_SECONDS=" + secs])
keys = ["rx_fps", "rx_gbps", "builder_ns_per_frame", "out_gbps", "sent_pps"]
med = []
for pt in dict.fromkeys((r["case"], r["mode"], r["fwd"]) for r in rows):
    rs = [r for r in rows if (r["case"], r["mode"], r["fwd"]) == pt]
    m = dict(case=pt[0], mode=pt[1], fwd=pt[2], runs=len(rs))
    for k in keys:
        v = [r[k] for r in rs if r[k] is not None]
        m[k] = statistics.median(v) if v else None
    m["drops"] = sum(r["drops_ring_full"] + r["drops_xsk"] + r["drops_socket"] for r in rs)
    m["sink_errors"] = sum(r["sink_errors"] or 0 for r in rs)
    med.append(m)
json.dump(dict(meta=meta, results=rows, medians=med), open(os.path.join(out, "jumbo.json"), "w"), indent=1)
benchlib.write_csv(rows, os.path.join(out, "jumbo.csv"))
print("%-6s %-6s %-8s %10s %8s %10s %8s %7s %6s" % ("case", "mode", "forward", "frames/s", "Gb/s",
      "ns/frame", "out Gb/s", "drops", "runs"))
for m in med:
    f = lambda v, fmt: fmt % v if v is not None else "-"
    print("%-6s %-6s %-8s %10s %8s %10s %8s %7d %6d" % (m["case"], m["mode"], m["fwd"], f(m["rx_fps"], "%.0f"),
          f(m["rx_gbps"], "%.2f"), f(m["builder_ns_per_frame"], "%.0f"), f(m["out_gbps"], "%.2f"),
          m["drops"], m["runs"]))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("no matplotlib: no plots (scripts/install-deps.sh installs python3-matplotlib)", file=sys.stderr)
    sys.exit(0)
labels = ["%s\n%s\n%s" % (m["case"], m["mode"], m["fwd"]) for m in med]
for key, ylabel, name in (("rx_fps", "frames received per second", "rate"),
                          ("rx_gbps", "Gb/s received (frame bytes)", "gbps"),
                          ("builder_ns_per_frame", "builder CPU ns per frame", "cpu")):
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.bar(range(len(med)), [m[key] or 0 for m in med], color=["C0" if m["mode"] == "xdp" else "C1" for m in med],
           label="bars: median of %s run(s); blue xdp, orange socket" % runs)
    ax.set_xticks(range(len(med)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("case / receive mode / forwarding")
    ax.set_title("xevb build, MTU 9000 testbed: %s (%s s runs, 2-core machine, exclusive)" % (ylabel, secs), fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "jumbo-%s.png" % name), dpi=100)
    plt.close(fig)
PY
echo "wrote $OUT/bench/jumbo.json, jumbo.csv, jumbo-{rate,gbps,cpu}.png"

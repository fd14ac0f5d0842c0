#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Live-frames generator ceiling: `xevb source --mode live` in one namespace
# sends 1 kB MEPs (pack 1, 1000-byte fragment: 1062-byte frames) over a
# direct veth pair to a namespace where bpf/testbed/xevb_count.bpf.c parses, counts
# and drops them. Generator pinned to CPU 0; veth in its default (not
# threaded) mode, so the receiver's XDP also runs on CPU 0, in the sender's
# softirq. Three runs of BENCH_SECONDS; prints the median, writes
# $OUT/bench/source_live.json.
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start source-live "${1:-}"
SECS=${BENCH_SECONDS:-3}
FRAG=${BENCH_FRAG:-1000}
P="xevb$$gen"
A="$P-a" B="$P-b"

bench_make "$OUT/xevb" "$OUT/bpf/xevb_count.bpf.o"
veth_pair "$A" "$B" 198.18.1.1 198.18.2.1 || bench_fail "cannot make the veth pair $A - $B"
ip -n "$B" link set dev eth0 xdpdrv obj "$OUT/bpf/xevb_count.bpf.o" sec xdp

prog=$(ip -n "$B" -d link show eth0 | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
map=$(bpftool prog show id "$prog" -j | python3 -c '
import json, subprocess, sys
for m in json.load(sys.stdin)["map_ids"]:
    info = json.loads(subprocess.check_output(["bpftool", "map", "show", "id", str(m), "-j"]))
    if info.get("name") == "xevb_cnt":
        print(m)')

# frames, bytes, meps, frags, bad: summed over CPUs
counts() {
	bpftool map dump id "$map" -j | python3 -c '
import json, sys
print(" ".join(str(sum(v["value"] for v in e["formatted"]["values"])) for e in json.load(sys.stdin)))'
}

results=()
for run in 1 2 3; do
	read -r f0 _ m0 _ _ <<<"$(counts)"
	js=$(ip netns exec "$A" taskset -c 0 "$X" source --dest 198.18.2.1 --dev eth0 --mode live \
		--source-ids 0-15 --pack 1 --frag-size "$FRAG" --duration "$SECS" --json --quiet)
	read -r f1 _ m1 _ bad <<<"$(counts)"
	res=$(python3 - "$js" "$((f1 - f0))" "$((m1 - m0))" "$bad" <<'PY'
import json, sys
j = json.loads(sys.argv[1]); rx, meps, bad = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(json.dumps({"tx_packets": j["packets"], "rx_frames": rx, "rx_meps": meps, "rx_bad": bad,
                  "elapsed_s": j["elapsed_s"], "tx_mpps": j["packets_per_s"] / 1e6,
                  "rx_mpps": rx / j["elapsed_s"] / 1e6, "gbps": j["gbps"],
                  "cpu_s": j["cpu_s"], "mpps_per_cpu_s": j["packets_per_cpu_s"] / 1e6}))
PY
)
	echo "run $run: $res"
	results+=("$res")
done

python3 - "$OUT/bench/source_live.json" "$FRAG" "${results[@]}" <<'PY'
import json, statistics, sys
path, frag, runs = sys.argv[1], int(sys.argv[2]), [json.loads(r) for r in sys.argv[3:]]
med = statistics.median(r["rx_mpps"] for r in runs)
out = {"bench": "source_live", "frame_bytes": 14 + 20 + 16 + 12 + frag, "sources": 16,
       "model": "veth default mode: generator and receiver XDP both on CPU 0",
       "median_rx_mpps": med, "runs": runs}
json.dump(out, open(path, "w"), indent=1)
out["median_mpps_per_cpu_s"] = statistics.median(r["mpps_per_cpu_s"] for r in runs)
json.dump(out, open(path, "w"), indent=1)
print("%-22s %8s %8s %8s %14s" % ("live generator", "tx Mpps", "rx Mpps", "Gb/s", "Mpps/CPU-s"))
for r in runs:
    print("%-22s %8.2f %8.2f %8.2f %14.2f" % ("%d-byte frames" % out["frame_bytes"], r["tx_mpps"],
          r["rx_mpps"], r["gbps"], r["mpps_per_cpu_s"]))
print("median rx: %.2f Mpps (wall clock; other load on CPU 0 lowers it), %.2f Mpps per CPU-second"
      % (med, out["median_mpps_per_cpu_s"]))
ok = all(r["rx_meps"] == r["tx_packets"] and r["rx_bad"] == 0 for r in runs)
print("every frame sent arrived as a valid MEP: %s" % ("yes" if ok else "NO"))
sys.exit(0 if ok else 1)
PY

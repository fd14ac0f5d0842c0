#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The main job, small: 8 read-out sources -> 1 gateway (XDP + AF_XDP) -> 2
# farm nodes, on a network-namespace testbed, for a few seconds. Prints the
# builder's and the farm nodes' summaries, then removes the testbed.
set -euo pipefail
OUT=${1:-build}
cd "$(dirname "$0")/.."
X=$PWD/$OUT/xevb
NSRC=${DEMO_SOURCES:-8}
EVENTS=${DEMO_EVENTS:-60000}
RATE=${DEMO_RATE:-20000}
. scripts/lib/testbed.sh

[[ $(id -u) -eq 0 ]] || { echo "demo: needs root (network namespaces, XDP)" >&2; exit 1; }
[[ -x $X ]] || { echo "demo: $X missing; run make first" >&2; exit 1; }

tmp=$(mktemp -d /tmp/xevb-demo.XXXXXX)
cleanup() {
	for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	tb_down >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

echo "== testbed: $NSRC sources, 1 builder, 2 farm nodes on a bridge (198.18.0.0/15)"
tb_up --prefix "xevbdemo$$" --sources "$NSRC" --builders 1 --sinks 2
B=$(tb_addr builder 0)
per_sink=$((EVENTS / 2))
kpids=()

for k in 0 1; do
	tb_exec sink "$k" "$X" sink --listen "$(tb_addr sink "$k"):5000" --expect-events "$per_sink" \
		--duration 60 --ready-file "$tmp/ready$k" >"$tmp/sink$k.txt" 2>&1 &
	kpids[$k]=$!
done
for k in 0 1; do
	for _ in $(seq 100); do [[ -e $tmp/ready$k ]] && break; sleep 0.1; done
done

echo "== builder on $B: XDP steering + AF_XDP, sources 0-$((NSRC - 1)), forwarding round robin"
tb_exec builder 0 "$X" build --dev eth0 --sources "0-$((NSRC - 1))" \
	--sink "$(tb_addr sink 0):5000" --sink "$(tb_addr sink 1):5000" \
	--window 65536 --timeout-ms 1000 --exit-on-eor --duration 60 --interval 1 2>&1 | sed 's/^/  [builder] /' &
bpid=$!
for _ in $(seq 100); do
	tb_exec builder 0 "$X" stats --dev eth0 >/dev/null 2>&1 && break
	sleep 0.1
done

echo "== $NSRC sources: $EVENTS events each at $RATE events/s, 10 events per packet, 100-byte fragments (LHCb HLT-like)"
spids=()
for i in $(seq 0 $((NSRC - 1))); do
	tb_exec source "$i" "$X" source --dest "$B" --source-ids "$i" --events "$EVENTS" --rate "$RATE" \
		--pack 10 --frag-size 100 --quiet --json >"$tmp/src$i.json" &
	spids+=($!)
done
sleep 1
echo "== live counters (xevb stats --watch, 2 lines)"
tb_exec builder 0 "$X" stats --dev eth0 --watch --count 2 | sed 's/^/  [stats] /' || true
fail=0
for p in "${spids[@]}"; do wait "$p" || { echo "demo: a source failed" >&2; fail=1; }; done
wait $bpid || { echo "demo: the builder failed" >&2; fail=1; }
for k in 0 1; do
	wait "${kpids[$k]}" || { echo "demo: farm node $k did not get its events intact" >&2; fail=1; }
	echo "== farm node $k"
	grep -v '^xevb sink: [0-9.]*s:' "$tmp/sink$k.txt" | sed 's/^/  /'
done
((fail == 0)) || exit 1
echo "== demo done: $EVENTS events built from $NSRC sources, every byte checked at the farm nodes"

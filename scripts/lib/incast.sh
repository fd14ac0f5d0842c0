# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# The incast experiment (ATLAS QoS study, seeds/001) on the testbed, shared by
# scripts/bench/bench-shape.sh and tests/integration/test_shape_incast.sh:
# NSRC sources (one `xevb source` each, UDP, one 1400-byte fragment a packet,
# 1470-byte frames) send the same events to one `xevb build` (XDP,
# build-only) through the testbed bridge; the builder's switch
# port is a tbf with a small buffer. Every counter on the way is read before
# and after, so each fragment that did not make it into an event is placed
# (scripts/lib/incast_acct.py).
#
#   . scripts/lib/testbed.sh; . scripts/lib/incast.sh
#   tb_up --sources N --builders 1 --sinks 0
#   ic_init XEVB_BINARY WORKDIR
#   ic_port RATE_BPS LIMIT_BYTES           # the port: tbf, burst 15000 B (re-made each point)
#   ic_point LOAD unshaped|shaped EVENTS SHARE_BPS BURST >>points.jsonl
#   ic_pull unshaped|shaped EVENTS RATE PACK SHARE_BPS     # pull mode (DFM)
#
# LOAD is the sources' total rate relative to the port. Shaped: every source
# runs `xevb shape set --dst <builder> --rate SHARE_BPS --burst BURST` for
# the point and `shape clear` after it.
#
# The builder holds the UMEM frames of every open event. With no timeout
# (--timeout-ms 0), each event a port drop left incomplete keeps its frames
# for ever: after --tune frames of them the fill ring is empty and the builder
# drops everything that follows (xsk_fill_ring_empty == xsk_rx_dropped),
# which turns a few percent of port loss into near-total loss. So the
# builder here times incomplete events out (IC_TIMEOUT_MS, default 1000 ms)
# and has IC_FRAMES (32768) 2 kB frames: more than the port delivers in a
# timeout (17 kframes/s at 200 Mbit/s).
#
# Stopping the builder: once every source has exited and every queue on the
# way (the sources' shapers, the port) is empty, the builder gets SIGINT.
# Not --exit-on-eor: on veth, HTB's dequeue may run on either core and each
# core's backlog forwards on its own, so a source's END_OF_RUN packet can
# overtake its last data packets. Not a fixed --duration either: that cuts
# off a slow run and wastes time on a fast one (--duration only bounds it).
# Every wait here is for a condition, IC_WAIT seconds at most (default 60):
# how long we wait before calling a thing hung, not how long it takes.

IC_FRAG=1400
IC_FRAME=1470 # 14 eth + 20 ip + 8 udp + 16 MEP + 12 record + 1400

ic_init() {
	IC_X=$1
	IC_W=$2
	IC_NSRC=$(tb_list | grep -c '^source ') || true
	IC_SW=$(tb_switch)
	IC_BPORT=$(tb_port builder 0)
	IC_DEST=$(tb_addr builder 0)
	IC_BNS=$(tb_ns builder 0)
	IC_ACCT=$(dirname "${BASH_SOURCE[0]}")/incast_acct.py
	IC_PIDS=()
	IC_TIMEOUT_MS=${IC_TIMEOUT_MS:-1000}
	IC_FRAMES=${IC_FRAMES:-32768}
	IC_WAIT=${IC_WAIT:-60}
}

# _ic_taken: the point's builder has taken every frame steered to its
# socket (or the kernel counted it lost), as its published counters say.
_ic_taken() {
	ip netns exec "$IC_BNS" "$IC_X" stats --dev eth0 --json 2>/dev/null | python3 -c '
import json, sys
d = json.loads(sys.stdin.readline())
sys.exit(0 if d["rx_frames"] + d["xsk_rx_dropped"] + d["xsk_rx_ring_full"] == d["xdp"]["to_xsk"]["packets"] else 1)' \
		2>/dev/null
}

ic_port() {
	IC_PORT_BPS=$1
	IC_PORT_BUF=$2
	tc -n "$IC_SW" qdisc del dev "$IC_BPORT" root 2>/dev/null || true
	tc -n "$IC_SW" qdisc add dev "$IC_BPORT" root handle 1: tbf rate "$1bit" burst 15000 limit "$2"
}

# Kills what a point left running (the testbed's cleanup calls it too).
ic_kill() {
	local p
	for p in "${IC_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${IC_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	IC_PIDS=()
}

# Every counter on the way, as "== name" sections (incast_acct.py reads them).
_ic_snap() {
	local i
	{
		for ((i = 0; i < IC_NSRC; i++)); do
			echo "== src$i"
			ip -n "$(tb_ns source "$i")" -s -j link show dev eth0
			echo "== port$i"
			ip -n "$IC_SW" -s -j link show dev "$(tb_port source "$i")"
		done
		echo "== bport"
		ip -n "$IC_SW" -s -j link show dev "$IC_BPORT"
		echo "== beth0"
		ip -n "$IC_BNS" -s -j link show dev eth0
	} >"$1"
}

# Total backlog (packets) of the sources' root qdiscs and of the port.
_ic_backlog() {
	local i
	{
		for ((i = 0; i < IC_NSRC; i++)); do tc -n "$(tb_ns source "$i")" -s -j qdisc show dev eth0; done
		tc -n "$IC_SW" -s -j qdisc show dev "$IC_BPORT"
	} | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    if line.strip():
        n += sum(q.get("qlen", 0) for q in json.loads(line))
print(n)'
}

# ic_point LOAD MODE EVENTS SHARE_BPS BURST [PORT_BPS]: one run; prints one
# JSON line (the accounting). Files of the point: $IC_W/pt/.
ic_point() {
	local load=$1 mode=$2 events=$3 share=$4 burst=$5 port_bps=${6:-$IC_PORT_BPS}
	local d=$IC_W/pt hz dur i bpid ok=0 t0
	rm -rf "$d" && mkdir -p "$d"
	hz=$(python3 -c "print('%.1f' % ($load * $port_bps / $IC_NSRC / ($IC_FRAME * 8)))")
	# An upper bound only: twice the time at the slower of the offered and
	# the shaped rate, plus set-up.
	dur=$(python3 -c "print(int($events * $IC_FRAME * 8 * $IC_NSRC / min($load, 0.9) / $port_bps * 2) + 10)")
	# A fresh tbf: its counters start at 0.
	ic_port "$port_bps" "$IC_PORT_BUF"
	_ic_snap "$d/snap0"
	# A fresh stderr file: a stale one would say "ready" before this builder is.
	ip netns exec "$IC_BNS" timeout $((dur + 10)) "$IC_X" build --dev eth0 --udp \
		--sources 0-$((IC_NSRC - 1)) --no-forward --timeout-ms "$IC_TIMEOUT_MS" --window 65536 --tune frames="$IC_FRAMES" --tune frame-size=2048 \
		--duration "$dur" \
		--interval 0 --json >"$d/b.json" 2>"$d/b.err" &
	bpid=$!
	IC_PIDS+=("$bpid")
	for _ in $(seq $((IC_WAIT * 20))); do
		if grep -qE 'AF_XDP socket on' "$d/b.err" 2>/dev/null; then ok=1; break; fi
		kill -0 "$bpid" 2>/dev/null || break
		sleep 0.05
	done
	if ((!ok)); then
		echo "ic_point: the builder did not start: $(tail -3 "$d/b.err")" >&2
		ic_kill
		return 1
	fi
	if [[ $mode == shaped ]]; then
		for ((i = 0; i < IC_NSRC; i++)); do
			tb_exec source "$i" "$IC_X" shape set --dev eth0 --dst "$IC_DEST" --rate "$share" \
				--burst "$burst" 2>>"$d/shape.err" || { echo "ic_point: shape set failed: $(cat "$d/shape.err")" >&2; ic_kill; return 1; }
		done
	fi
	t0=$(date +%s.%N)
	local spids=()
	for ((i = 0; i < IC_NSRC; i++)); do
		tb_exec source "$i" timeout "$dur" "$IC_X" source --dest "$IC_DEST" --udp --source-ids "$i" \
			--pack 1 --frag-size "$IC_FRAG" --rate "$hz" --events "$events" --json --quiet \
			>"$d/s$i.json" 2>"$d/s$i.err" &
		spids+=($!)
		IC_PIDS+=($!)
	done
	for i in "${spids[@]}"; do wait "$i" || true; done
	# Drained: nothing queued in the shapers or at the port, twice in a row.
	local zero=0
	for _ in $(seq $((IC_WAIT * 10))); do
		if [[ $(_ic_backlog) == 0 ]]; then
			zero=$((zero + 1))
			((zero >= 2)) && break
		else
			zero=0
		fi
		sleep 0.1
	done
	# ... and the builder has taken all that reached it.
	for _ in $(seq $((IC_WAIT * 10))); do
		_ic_taken && break
		sleep 0.1
	done
	kill -INT "$bpid" 2>/dev/null || true
	wait "$bpid" || true
	IC_PIDS=()
	_ic_snap "$d/snap1"
	tc -n "$IC_SW" -s -j qdisc show dev "$IC_BPORT" >"$d/port.json"
	for ((i = 0; i < IC_NSRC; i++)); do
		if [[ $mode == shaped ]]; then
			tb_exec source "$i" "$IC_X" shape list --dev eth0 --json >"$d/l$i.json"
			tb_exec source "$i" "$IC_X" shape clear --dev eth0 2>>"$d/shape.err"
		else
			echo '{}' >"$d/l$i.json"
		fi
	done
	python3 "$IC_ACCT" "$d" "$IC_NSRC" "$events" "$load" "$mode" "$IC_FRAME" "$share" "$t0"
}

# ic_pull MODE EVENTS RATE PACK SHARE_BPS: the same port in pull mode (ATLAS
# DC): `xevb dfm --mode pull` triggers EVENTS at RATE events/s in blocks of
# PACK, the builder (socket mode; --dfm, re-ask after 50 ms, up to 6 times)
# REQUESTs each block from the sources, which all answer at once, PACK
# MEPs of one 1400-byte fragment each (MEPs fit the MTU) back to back: an
# incast burst at the port.
# Needs tb_up --sinks 1 --dfm 1 (the farm node takes the built events).
# Prints one JSON line: the DFM's outcome, port and shaper drops, re-asks.
ic_pull() {
	local mode=$1 events=$2 rate=$3 pack=$4 share=$5
	local d=$IC_W/pull-$1 i sk b dfm=198.18.4.1:23901
	rm -rf "$d" && mkdir -p "$d"
	ic_port "$IC_PORT_BPS" "$IC_PORT_BUF"
	ip netns exec "$(tb_ns sink 0)" timeout $((IC_WAIT * 3)) "$IC_X" sink --listen "$(tb_addr sink 0):5000" --ctl-port 23904 \
		--credits 64 --ready-file "$d/sink.ready" --json --stats-interval 0 --duration $((IC_WAIT * 2)) >"$d/sink.json" 2>"$d/sink.err" &
	sk=$!
	IC_PIDS+=("$sk")
	for _ in $(seq $((IC_WAIT * 20))); do [[ -s $d/sink.ready ]] && break; sleep 0.05; done
	ip netns exec "$(tb_ns builder 0)" timeout $((IC_WAIT * 3)) "$IC_X" build --dev eth0 --mode socket --udp --sources 0-$((IC_NSRC - 1)) \
		--dfm "$dfm" --sink "$(tb_addr sink 0):5000" --credits 64 --tune reask-ms=50 --tune max-reasks=6 \
		--exit-on-eor --duration $((IC_WAIT * 2)) --json --quiet >"$d/b.json" 2>"$d/b.err" &
	b=$!
	IC_PIDS+=("$b")
	if [[ $mode == shaped ]]; then
		for ((i = 0; i < IC_NSRC; i++)); do
			tb_exec source "$i" "$IC_X" shape set --dev eth0 --dst "$(tb_addr builder 0)" --rate "$share" --burst 6000 \
				2>>"$d/shape.err" || { echo "ic_pull: shape set failed: $(cat "$d/shape.err")" >&2; ic_kill; return 1; }
		done
	fi
	for ((i = 0; i < IC_NSRC; i++)); do
		ip netns exec "$(tb_ns source "$i")" timeout $((IC_WAIT * 3)) "$IC_X" source --dfm "$dfm" --udp --source-ids "$i" \
			--frag-size 1400 --json --quiet --duration $((IC_WAIT * 2)) >"$d/s$i.json" 2>"$d/s$i.err" &
		IC_PIDS+=($!)
	done
	# The builder was not waited for: its start (seconds on a slow host) is
	# in the DFM's wait for its peers.
	ip netns exec "$(tb_ns dfm 0)" timeout $((IC_WAIT * 3)) "$IC_X" dfm --listen "$dfm" --mode pull --rate "$rate" \
		--events "$events" --pack "$pack" --wait-builders 1 --wait-sources "$IC_NSRC" --json --interval 0 \
		--wait-ms $((IC_WAIT * 1000)) \
		>"$d/dfm.json" 2>"$d/dfm.err" && echo 0 >"$d/dfm.rc" || echo $? >"$d/dfm.rc"
	# Builder and sources leave at the DFM's BYE.
	for _ in $(seq $((IC_WAIT * 10))); do
		local alive=0
		for i in "${IC_PIDS[@]}"; do
			if [[ $i != "$sk" ]] && kill -0 "$i" 2>/dev/null; then alive=1; fi
		done
		((alive)) || break
		sleep 0.1
	done
	# The farm node has every event (the DFM ended): stop it, then the rest.
	kill -INT "$sk" 2>/dev/null || true
	ic_kill
	tc -n "$IC_SW" -s -j qdisc show dev "$IC_BPORT" >"$d/port.json"
	if [[ $mode == shaped ]]; then
		for ((i = 0; i < IC_NSRC; i++)); do
			tb_exec source "$i" "$IC_X" shape list --dev eth0 --json >"$d/l$i.json"
			tb_exec source "$i" "$IC_X" shape clear --dev eth0 2>>"$d/shape.err"
		done
	fi
	python3 - "$d" "$mode" "$IC_NSRC" <<'PY'
import json, sys
d, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def lines(fn):
    try:
        return [json.loads(l) for l in open(fn) if l.startswith("{")]
    except (OSError, ValueError):
        return []
def find(fn, key):
    for j in lines(fn):
        if key in j:
            return j
    return {}
dfm = (lines(d + "/dfm.json") or [{}])[-1]
ctl = find(d + "/b.json", "dfm_ctl").get("dfm_ctl", {})
port = [q for q in json.load(open(d + "/port.json")) if q["kind"] == "tbf"][0]
src = [(lines("%s/s%d.json" % (d, i)) or [{}])[-1] for i in range(n)]
shaper = 0
for i in range(n):
    for l in lines("%s/l%d.json" % (d, i)):
        shaper += l.get("root", {}).get("drops", 0) + sum(r.get("class_drops", 0) + r.get("drop_horizon", 0) for r in l.get("rules", []))
print(json.dumps({"mode": mode, "dfm_rc": int(open(d + "/dfm.rc").read()), "triggered": dfm.get("triggered"),
    "complete": dfm.get("complete"), "incomplete": dfm.get("incomplete"),
    "lost": sum(dfm.get("lost", {}).values()) if isinstance(dfm.get("lost"), dict) else dfm.get("lost"),
    "port_drops": port["drops"], "port_packets": port["packets"], "shaper_drops": shaper,
    "reask_events": ctl.get("reask_events"), "reask_requests": ctl.get("reask_requests"),
    "resend_meps": sum(s.get("resend_meps", 0) for s in src)}))
PY
}

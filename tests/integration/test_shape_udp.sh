#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# xevb shape, UDP senders faster than the rate: per destination, the rate
# achieved at the receiver is within 5% of the configured one at 50 Mbit/s,
# 400 Mbit/s and 2 Gbit/s, and nothing is lost inside the shaper (every
# datagram sent arrives; HTB class and root drop counters stay 0). Two
# destinations at once each get their own rate. Rates are L2 frame bits.
set -uo pipefail
. "$(dirname "$0")/lib_shape.sh"
sh_init shu "${1:-build}" --sources 1 --builders 0 --sinks 2 --mtu 9000
D0=$(tb_addr sink 0)
D1=$(tb_addr sink 1)

# lossless NAME DST: sent == received, no drops in our classes or root.
lossless() {
	local name=$1 dst=$2 sent got
	sent=$(jnum "$SH_W/$name.send" sent)
	got=$(jnum "$SH_W/$name.recv.json" packets)
	if [[ $sent == "$got" && $sent -gt 0 ]]; then sh_ok "$name: $got of $sent datagrams arrived"
	else sh_fail "$name: $got of $sent datagrams arrived"; fi
	sh_list >"$SH_W/list.json"
	python3 - "$SH_W/list.json" "$dst" <<'PY' && sh_ok "$name: shaper drop counters 0" || sh_fail "$name: shaper dropped ($(cat "$SH_W/list.json"))"
import json, sys
d = json.load(open(sys.argv[1]))
r = [x for x in d["rules"] if x["dst"] == sys.argv[2]][0]
sys.exit(0 if d["root"]["drops"] == 0 and r["class_drops"] == 0 and r["drop_horizon"] == 0
         and r["packets"] > 0 else 1)
PY
}

for rate in 50 400 2000; do
	shape set --dev eth0 --dst "$D0" --rate "${rate}mbit" 2>"$SH_W/set.err" ||
		{ sh_fail "set $rate: $(cat "$SH_W/set.err")"; continue; }
	if sh_measure udp 0 5001 "$rate" "udp$rate"; then
		sh_ok "udp to $D0 at $rate Mbit/s: $SH_MBIT Mbit/s"
	else
		sh_fail "udp to $D0 at $rate Mbit/s: $SH_MBIT Mbit/s (more than 5% off)"
	fi
	lossless "udp$rate" "$D0"
done

# Two destinations at once, each at its own rate.
shape set --dev eth0 --dst "$D0" --rate 100mbit 2>/dev/null
shape set --dev eth0 --dst "$D1" --rate 300mbit 2>/dev/null
for try in 1 2; do
	sh_recv udp 1 5002 d1.recv 10 || break
	r1=$SH_LAST
	tb_exec source 0 timeout 10 python3 "$FLOW" send udp "$D1" 5002 "$SH_SIZE" 2 >"$SH_W/d1.send" 2>"$SH_W/d1.send.err" &
	s1=$!
	sh_flow udp 0 5001 2 "$SH_SIZE" 0 d0
	wait "$s1"; wait "$r1"
	m0=$(sh_rate "$SH_W/d0.recv.json" udp)
	m1=$(sh_rate "$SH_W/d1.recv.json" udp)
	sh_two_rates_ok "$m0" 100 "$m1" 300 && break
	echo "# two destinations: $m0 and $m1 Mbit/s (try $try)"
done
sh_expect_two_rates "two destinations at once" "$m0" 100 "$m1" 300
lossless d0 "$D0"
lossless d1 "$D1"

shape clear --dev eth0 2>/dev/null || sh_fail "clear"
sh_nothing_left "after clear"
sh_finish

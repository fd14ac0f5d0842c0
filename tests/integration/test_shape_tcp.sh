#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# xevb shape, TCP through the shaper (the sender is paced by the queue, TSQ
# and ACKs, not by itself): the receiver's goodput, scaled to L2 frames, is
# within 5% of the configured rate at 50 Mbit/s, 500 Mbit/s and 2 Gbit/s.
set -uo pipefail
. "$(dirname "$0")/lib_shape.sh"
sh_init sht "${1:-build}" --sources 1 --builders 0 --sinks 1 --mtu 9000
D0=$(tb_addr sink 0)
for rate in 50 500 2000; do
	shape set --dev eth0 --dst "$D0" --rate "${rate}mbit" 2>"$SH_W/set.err" ||
		{ sh_fail "set $rate: $(cat "$SH_W/set.err")"; continue; }
	if sh_measure tcp 0 $((5100 + rate)) "$rate" "tcp$rate"; then
		sh_ok "tcp to $D0 at $rate Mbit/s: $SH_MBIT Mbit/s"
	else
		sh_fail "tcp to $D0 at $rate Mbit/s: $SH_MBIT Mbit/s (more than 5% off)"
	fi
done
shape clear --dev eth0 2>/dev/null || sh_fail "clear"
sh_nothing_left "after clear"
sh_finish

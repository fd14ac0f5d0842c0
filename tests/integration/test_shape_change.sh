#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# xevb shape: a rate change under load takes effect within a second
# (100 -> 400 Mbit/s, same program, no reload); clear removes exactly what
# set added (the classifier, HTB and its classes, clsact only if it was
# ours) and unshaped throughput comes back; a root qdisc that is not ours
# is refused and left alone.
set -uo pipefail
. "$(dirname "$0")/lib_shape.sh"
sh_init shc "${1:-build}" --sources 1 --builders 0 --sinks 1 --mtu 9000
D0=$(tb_addr sink 0)

sh_flow udp 0 5001 1.5 "$SH_SIZE" 0 base
base=$(sh_rate "$SH_W/base.recv.json" udp)
echo "# unshaped: $base Mbit/s"

shape set --dev eth0 --dst "$D0" --rate 100mbit 2>/dev/null || sh_fail "set 100mbit"
prog=$(python3 -c "import json,sys; print(json.load(sys.stdin)['prog_id'])" < <(sh_list))
for try in 1 2; do
	shape set --dev eth0 --dst "$D0" --rate 100mbit 2>/dev/null
	sh_recv udp 0 5001 chg.recv 12 || break
	rp=$SH_LAST
	rm -f "$SH_W/chg.send.err"
	tb_exec source 0 timeout 12 python3 "$FLOW" send udp "$D0" 5001 "$SH_SIZE" 4 >"$SH_W/chg.send" \
		2>"$SH_W/chg.send.err" &
	sp=$!
	# 2 s of shaped traffic once the sender sends (its start may take a while).
	e2e_wait_line sending "$SH_W/chg.send.err"
	sleep 2
	tchg=$(date +%s.%N)
	shape set --dev eth0 --dst "$D0" --rate 400mbit 2>/dev/null || sh_fail "change to 400mbit"
	wait "$sp"; wait "$rp"
	t0=$(jnum "$SH_W/chg.send" t0)
	before=$(sh_rate_window "$SH_W/chg.recv.json" udp "$(echo "$t0 + 0.5" | bc)" "$tchg")
	after=$(sh_rate_window "$SH_W/chg.recv.json" udp "$(echo "$tchg + 1.0" | bc)" 1e12)
	sh_two_rates_ok "$before" 100 "$after" 400 && break
	echo "# change: $before then $after Mbit/s (try $try)"
done
sh_expect_two_rates "rate change: before, and from 1 s after the change" "$before" 100 "$after" 400
now=$(python3 -c "import json,sys; print(json.load(sys.stdin)['prog_id'])" < <(sh_list))
[[ $now == "$prog" ]] && sh_ok "same classifier (prog $prog) after the change" ||
	sh_fail "classifier changed: $prog -> $now"
sent=$(jnum "$SH_W/chg.send" sent); got=$(jnum "$SH_W/chg.recv.json" packets)
[[ $sent == "$got" ]] && sh_ok "no loss across the change ($got)" || sh_fail "$got of $sent arrived"

shape clear --dev eth0 2>/dev/null || sh_fail "clear"
sh_nothing_left "after clear"
# The kernel frees a detached program after an RCU grace period (and a
# workqueue pass): give it up to E2E_WAIT before calling it leaked.
for _ in $(seq $((E2E_WAIT * 10))); do
	tb_exec source 0 bpftool prog show id "$prog" >/dev/null 2>&1 || break
	sleep 0.1
done
if tb_exec source 0 bpftool prog show id "$prog" >/dev/null 2>&1; then
	sh_fail "program $prog still loaded $E2E_WAIT s after clear"
else
	sh_ok "program $prog is gone"
fi
for try in 1 2; do
	sh_flow udp 0 5001 1.5 "$SH_SIZE" 0 after
	unsh=$(sh_rate "$SH_W/after.recv.json" udp)
	python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1200 and float(sys.argv[1]) > 0.5 * float(sys.argv[2]) else 1)" "$unsh" "$base" && break
done
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1200 and float(sys.argv[1]) > 0.5 * float(sys.argv[2]) else 1)" "$unsh" "$base"; then
	sh_ok "unshaped again: $unsh Mbit/s (before shaping: $base)"
else
	sh_fail "after clear only $unsh Mbit/s (before shaping: $base)"
fi

# A clsact that was there before stays; only our filter goes.
tb_exec source 0 tc qdisc add dev eth0 clsact
shape set --dev eth0 --dst "$D0" --rate 100mbit 2>/dev/null || sh_fail "set with a clsact present"
shape clear --dev eth0 2>/dev/null || sh_fail "clear with a clsact present"
q=$(tb_exec source 0 tc qdisc show dev eth0)
f=$(tb_exec source 0 tc filter show dev eth0 egress)
if grep -q clsact <<<"$q" && ! grep -q htb <<<"$q" && [[ -z $f ]]; then
	sh_ok "a clsact we did not make is kept; our filter and HTB are gone"
else
	sh_fail "clsact case left: [$q] [$f]"
fi
tb_exec source 0 tc qdisc del dev eth0 clsact

# Someone else's root qdisc: refused, untouched, nothing of ours left.
tb_exec source 0 tc qdisc add dev eth0 root handle 7: tbf rate 1gbit burst 64kb latency 10ms
if shape set --dev eth0 --dst "$D0" --rate 100mbit 2>"$SH_W/refuse.err"; then
	sh_fail "set replaced a foreign root qdisc"
else
	grep -q "already has a root qdisc" "$SH_W/refuse.err" && sh_ok "foreign root qdisc refused: $(head -1 "$SH_W/refuse.err")" ||
		sh_fail "unexpected error: $(cat "$SH_W/refuse.err")"
fi
q=$(tb_exec source 0 tc qdisc show dev eth0)
f=$(tb_exec source 0 tc filter show dev eth0 egress 2>/dev/null)
if grep -q "tbf 7:" <<<"$q" && ! grep -q clsact <<<"$q" && [[ -z $f ]]; then
	sh_ok "the foreign tbf is untouched and nothing of ours was left"
else
	sh_fail "after refusal: [$q] [$f]"
fi
tb_exec source 0 tc qdisc del dev eth0 root
sh_finish

# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Helpers of the shaping tests (tests/integration/test_shape_*.sh): one
# source host sending to sink hosts on the testbed through `xevb shape` on
# its eth0, with tests/integration/shape_flow.py as sender and receiver.
#
#   sh_init TAG "$1" --sources 1 --builders 0 --sinks 2 --mtu 9000  # + tb_up
#   sh_flow udp 0 5001 2 [SIZE] [PACE_BPS]   # send 2 s to sink 0 -> $SH_W/{recv,send}.json
#   sh_rate $SH_W/recv.json udp               # L2 Mbit/s in steady state
#   sh_within MEASURED_MBIT WANT_MBIT PCT     # exit status

# e2e_init and its neighbours; this file's tb_on_cleanup, below, replaces
# the one lib_e2e.sh defines.
. "$(dirname "${BASH_SOURCE[0]}")/lib_e2e.sh"

SH_FAILS=0
# UDP datagram size: 30000 bytes = 4 IP fragments at MTU 9000. Large
# datagrams keep the Python sender's CPU cost per bit low on a busy machine.
SH_SIZE=30000
SH_PIDS=()

sh_ok() { echo "ok   - $*"; }
sh_fail() { echo "FAIL - $*"; SH_FAILS=$((SH_FAILS + 1)); }

# sh_init TAG BUILD_DIR [tb_up options]: e2e_init (lib_e2e.sh); the
# scratch dir in $SH_W.
sh_init() {
	e2e_init "$@"
	SH_W=$E2E_WORK
	FLOW=$(realpath tests/integration/shape_flow.py)
}

# The testbed's trap calls this before removing the namespaces.
tb_on_cleanup() {
	local p
	for p in "${SH_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${SH_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$E2E_WORK"
}

shape() { tb_exec source 0 "$X" shape "$@"; }

# sh_recv PROTO SINK PORT NAME MAX_S: background receiver; waits until ready.
sh_recv() {
	local proto=$1 sink=$2 port=$3 name=$4 max=$5
	rm -f "$SH_W/$name.err"
	tb_exec sink "$sink" timeout $((${max%.*} + 10)) python3 "$FLOW" recv "$proto" "$port" "$max" 1.5 \
		>"$SH_W/$name.json" 2>"$SH_W/$name.err" &
	SH_PIDS+=($!)
	SH_LAST=$!
	for _ in $(seq $((E2E_WAIT * 20))); do
		grep -q ready "$SH_W/$name.err" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "receiver $name did not start: $(cat "$SH_W/$name.err")" >&2
	return 1
}

# sh_flow PROTO SINK PORT SECONDS [SIZE] [PACE_BPS] [NAME]: one bounded transfer.
sh_flow() {
	local proto=$1 sink=$2 port=$3 secs=$4 size=${5:-$SH_SIZE} pace=${6:-0} name=${7:-flow}
	local addr rpid
	addr=$(tb_addr sink "$sink") || return 1
	[[ $proto == tcp ]] && size=65536
	sh_recv "$proto" "$sink" "$port" "$name.recv" "$((${secs%.*} + 8))" || return 1
	rpid=$SH_LAST
	tb_exec source 0 timeout $((${secs%.*} + 10)) python3 "$FLOW" send "$proto" "$addr" "$port" "$size" \
		"$secs" "$pace" "${SH_SNDBUF:-1048576}" >"$SH_W/$name.send" 2>"$SH_W/$name.send.err" ||
		{ echo "sender failed: $(cat "$SH_W/$name.send.err")" >&2; }
	wait "$rpid"
}

# sh_rate FILE PROTO [SKIP_S]: L2 Mbit/s the receiver saw in steady state
# (after SKIP_S from the first byte, up to the last). UDP adds 42 bytes of
# headers per datagram; TCP scales payload by frame/MSS for MTU 9000.
sh_rate() {
	python3 - "$1" "$2" "${3:-0.3}" <<'PY'
import json, sys
def l2_per_byte(d):
    # UDP datagram -> IPv4 fragments of up to 8976 bytes at MTU 9000, each
    # with 14 + 20 bytes of headers; the UDP header once.
    size = d["bytes"] / max(d["packets"], 1)
    frags = -(-(int(size) + 8) // 8976)
    return (size + 8 + 34 * frags) / size
d = json.load(open(sys.argv[1])); proto = sys.argv[2]; skip = float(sys.argv[3])
bs = d["bin_s"]; bins = {int(k): v for k, v in d["bins"].items()}
lo = d["t_first"] + skip; hi = d["t_last"]
# whole bins only, strictly inside [lo, hi)
b0 = int(lo / bs) + 1; b1 = int(hi / bs)
if b1 <= b0:
    print(0); sys.exit()
nbytes = sum(bins.get(b, 0) for b in range(b0, b1))
secs = (b1 - b0) * bs
if proto == "udp":
    nbytes *= l2_per_byte(d)
else:
    nbytes *= 9014 / 8948
print("%.2f" % (nbytes * 8 / secs / 1e6))
PY
}

# sh_within MEASURED WANT PCT
sh_within() {
	python3 -c "import sys; m,w,p=map(float,sys.argv[1:]); sys.exit(0 if abs(m-w) <= w*p/100 else 1)" "$@"
}

# sh_two_rates_ok A WANT_A B WANT_B: both rates (Mbit/s) within 5%.
sh_two_rates_ok() { sh_within "$1" "$2" 5 && sh_within "$3" "$4" 5; }

# sh_expect_two_rates WHAT A WANT_A B WANT_B: the verdict of sh_two_rates_ok.
sh_expect_two_rates() {
	local what=$1
	shift
	if sh_two_rates_ok "$@"; then
		sh_ok "$what: $1 Mbit/s ($2) and $3 Mbit/s ($4)"
	else
		sh_fail "$what: $1 Mbit/s ($2) and $3 Mbit/s ($4), want both within 5%"
	fi
}

# jnum FILE KEY: a number from one-line JSON.
jnum() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# sh_list_json: xevb shape list --json on the source.
sh_list() { shape list --dev eth0 --json; }

# Nothing of ours on the source's eth0: no qdisc but the default, no filter.
sh_nothing_left() {
	local q f
	q=$(tb_exec source 0 tc qdisc show dev eth0)
	f=$(tb_exec source 0 tc filter show dev eth0 egress 2>/dev/null)
	if [[ $q == "qdisc noqueue 0: root refcnt 2"* && $(wc -l <<<"$q") == 1 && -z $f ]]; then
		sh_ok "$1: no qdisc, class or filter left on eth0"
	else
		sh_fail "$1: left behind: [$q] [$f]"
	fi
}

sh_finish() {
	if ((SH_FAILS)); then echo "$SH_FAILS check(s) failed"; exit 1; fi
	echo "all checks passed"
	exit 0
}

# sh_rate_window FILE PROTO T_LO T_HI: L2 Mbit/s in whole bins within [T_LO, T_HI) (realtime s).
sh_rate_window() {
	python3 - "$@" <<'PY'
import json, sys
def l2_per_byte(d):
    # UDP datagram -> IPv4 fragments of up to 8976 bytes at MTU 9000, each
    # with 14 + 20 bytes of headers; the UDP header once.
    size = d["bytes"] / max(d["packets"], 1)
    frags = -(-(int(size) + 8) // 8976)
    return (size + 8 + 34 * frags) / size
d = json.load(open(sys.argv[1])); proto = sys.argv[2]; lo = float(sys.argv[3]); hi = float(sys.argv[4])
bs = d["bin_s"]; bins = {int(k): v for k, v in d["bins"].items()}
hi = min(hi, d["t_last"])
b0 = int(lo / bs) + 1; b1 = int(hi / bs)
if b1 <= b0:
    print(0); sys.exit()
nbytes = sum(bins.get(b, 0) for b in range(b0, b1))
nbytes *= l2_per_byte(d) if proto == "udp" else 9014 / 8948
print("%.2f" % (nbytes * 8 / ((b1 - b0) * bs) / 1e6))
PY
}

# sh_measure PROTO SINK PORT RATE_MBIT NAME: one transfer through the shaper,
# retried once if the rate misses by more than 5% (a loaded machine can
# starve the sender); sets SH_MBIT and leaves NAME.recv.json / NAME.send.
sh_measure() {
	local proto=$1 sink=$2 port=$3 want=$4 name=$5 try
	# At 1 Gbit/s and more the leaf queue holds 100 ms (over 12 MB): let
	# the sender queue 8 MB (32 ms at 2 Gbit/s) so a descheduled sender
	# does not starve the shaper; still below the limit, so no drops.
	local SH_SNDBUF=1048576
	((want >= 1000)) && SH_SNDBUF=4194304
	for try in 1 2; do
		sh_flow "$proto" "$sink" "$port" 2 "$SH_SIZE" 0 "$name" || return 1
		SH_MBIT=$(sh_rate "$SH_W/$name.recv.json" "$proto")
		sh_within "$SH_MBIT" "$want" 5 && return 0
		echo "# $name: $SH_MBIT Mbit/s for $want configured (try $try)"
	done
	return 1
}

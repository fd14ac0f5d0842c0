# SPDX-License-Identifier: GPL-2.0-only
# Shell helpers shared by the scripts/bench/bench-*.sh pieces (sourced).
# The caller's EXIT trap (the testbed's tb_on_cleanup) calls stop_bg.

# wait_for FILE PATTERN PID: until FILE matches PATTERN (grep -E), PID dies
# (status 1) or 10 s pass (status 1).
wait_for() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# The processes of the current run (builder, sink, ...) a piece started in
# the background: stop_bg sends them SIGINT, then KILL after 3 s.
BG_PIDS=()
stop_bg() {
	local p i
	for p in "${BG_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	for p in "${BG_PIDS[@]}"; do
		for ((i = 0; i < 30; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	BG_PIDS=()
}

napi_pids() { ps -eo pid=,comm= | awk '$2 ~ /^napi\// { print $1 }' | sort; }
ksoftirqd() { ps -eo pid=,comm= | awk -v n="ksoftirqd/$1" '$2 == n { print $1 }'; }

# set_model MODEL BEFORE: threaded NAPI on the builder's veth BDEV in
# namespace BNS (gateway: all receive work on the builder's core) or not
# (split: it runs on the sender's core); prints the napi thread(s) that
# appeared since BEFORE (a file of napi pids, from napi_pids), pinned to CPU 1.
# A veth has NAPI only while it runs XDP: call it once the program is on.
set_model() {
	local model=$1 before=$2 p
	if [[ $model == gateway ]]; then
		ip netns exec "$BNS" sh -c "echo 1 > /sys/class/net/$BDEV/threaded" || return 1
		for p in $(comm -13 "$before" <(napi_pids)); do
			taskset -p -c 1 "$p" >/dev/null && echo "$p"
		done
	else
		ip netns exec "$BNS" sh -c "echo 0 > /sys/class/net/$BDEV/threaded" 2>/dev/null || true
	fi
}

# sock_builder_xdp BIN ARGS...: 0 when `BIN build --mode socket ARGS...`
# attaches its own XDP program (pass mode, to shed whole events) to its
# device. Then the veth has NAPI while the builder runs and a script must
# not attach xevb_pass.bpf.o there: the builder would not replace a
# program it did not load, and would run without shedding. Older builds
# (OV_BIN), --tune no-shed=1, --tune bare=1 and --dfm attach nothing: xevb_pass is needed.
sock_builder_xdp() {
	local bin=$1
	shift
	[[ " $* " == *" --tune no-shed=1 "* || " $* " == *" --tune bare=1 "* || " $* " == *" --dfm "* ]] && return 1
	local help
	# Not `| grep -q`: grep quits at the first match, the help gets SIGPIPE,
	# and under pipefail the answer would be "no" now and then.
	# (--help-tune since the switch moved behind --tune; older builds list it in --help.)
	help=$("$bin" build --help 2>&1; "$bin" build --help-tune 2>&1)
	[[ $help == *'socket mode attaches the XDP program in pass mode'* ]]
}

# direct_link SRCNS BNS MTU: the direct path, a second veth pair source eth1
# <-> builder eth1 with no address on either end (the generator sends from
# its eth0 address, --dev eth1 --dst-mac 02:18:02:01:00:01): xdp_frames go
# straight into the builder's veth, several Mpps, no bridge in between.
DIRECT_DST_MAC=02:18:02:01:00:01
direct_link() {
	ip link add eth1 netns "$1" address 02:18:01:01:00:01 mtu "$3" type veth \
		peer name eth1 netns "$2" address "$DIRECT_DST_MAC" mtu "$3" || return 1
	ip -n "$1" link set eth1 up || return 1
	ip -n "$2" link set eth1 up || return 1
	ip netns exec "$2" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.eth1.rp_filter=0
}

# bisect_rate PROBE PASSES LO HI FIRST STEPS: the highest offered rate that
# holds, between LO (known to hold, or 0) and HI (known not to): STEPS probes,
# the first at FIRST (a guess, e.g. what was received unpaced), then halving
# the interval. PROBE RATE runs one probe and appends its figures (one JSON
# line) to the file BISECT_LOG; PASSES reads that line on stdin and exits 0
# when the rate held. Sets BISECT_RATE to the highest rate that held (LO if
# none did). No subshell around PROBE: the processes it starts stay known
# to the caller's cleanup.
bisect_rate() {
	local probe=$1 passes=$2 lo=$3 hi=$4 mid=$5 steps=$6 i n line
	((mid > lo && mid < hi)) || mid=$(((lo + hi) / 2))
	for ((i = 0; i < steps; i++)); do
		n=$(wc -l <"$BISECT_LOG")
		"$probe" "$mid" || true
		line=
		(($(wc -l <"$BISECT_LOG") > n)) && line=$(tail -1 "$BISECT_LOG")
		if [[ -n $line ]] && "$passes" <<<"$line"; then
			lo=$mid
		else
			hi=$mid
		fi
		mid=$(((lo + hi) / 2))
	done
	BISECT_RATE=$lo
}

# SPDX-License-Identifier: GPL-2.0-only
# The driver every scripts/bench/bench-*.sh piece shares (sourced): its
# start (bench_start: options, directories, binaries), its testbed and
# cleanup (bench_testbed, bench_cleanup), the runs under the data-flow manager
# (dfm_round), the loss-free bisection (bisect_rate) and helpers. A piece
# keeps only what it measures. Every piece: `bench-NAME.sh [OUT]`, OUT the
# build directory (build); BENCH_QUICK=1 its quickest run; BENCH_KEEP=1
# keeps its working directory W (printed). Sourcing defines only functions
# and empty lists (tests/integration use direct_link).

# bench_start NAME [OUT [BUILT...]]: from the repository's root on, sets
# BENCH_NAME, ROOT, OUT (relative to ROOT, so that make's targets match; an
# absolute OUT works too), QUICK (BENCH_QUICK), X (this tree's xevb), PY
# (Debian's python3: its matplotlib draws the plots; a pyenv one may lack
# it), W (a new working directory) and makes OUT/bench; from here on,
# bench_cleanup runs on exit (the testbed's trap calls it too, once
# tb_up has taken over). BUILT: files under OUT the piece needs built
# (bench_need).
bench_start() {
	BENCH_NAME=$1
	cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
	ROOT=$PWD
	OUT=$(realpath -ms --relative-to="$ROOT" "${2:-build}")
	QUICK=${BENCH_QUICK:-}
	X=$ROOT/$OUT/xevb
	PY=$([[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || command -v python3)
	local f
	for f in "${@:3}"; do bench_need "$OUT/$f"; done
	W=$(mktemp -d "/tmp/xb-$BENCH_NAME.$$.XXXXXX") || exit 1
	bench_trap
	mkdir -p "$OUT/bench"
}

# quick_or QUICK FULL: prints QUICK under BENCH_QUICK=1, FULL otherwise.
quick_or() { if [[ -n ${QUICK:-} ]]; then echo "$1"; else echo "$2"; fi; }

# bench_runs_secs QUICK_SECS FULL_SECS [SECS_VAR]: RUNS from BENCH_RUNS (1
# quick, 3 full) and SECS from SECS_VAR (BENCH_SECONDS) or the default.
bench_runs_secs() {
	local var=${3:-BENCH_SECONDS}
	RUNS=${BENCH_RUNS:-$(quick_or 1 3)}
	SECS=${!var:-$(quick_or "$1" "$2")}
}

# bench_fail WHAT...: the piece's name and WHAT on stderr, exit 1.
bench_fail() {
	echo "bench-$BENCH_NAME: $*" >&2
	exit 1
}

# bench_need FILE...: each is there (built by make -j2) or the piece stops.
bench_need() {
	local f
	for f; do [[ -e $f ]] || bench_fail "$f not built (make -j2)"; done
}

# bench_make TARGET...: make builds them (relative to ROOT), quietly.
bench_make() {
	make --no-print-directory -s OUT="$OUT" "$@" >/dev/null || bench_fail "cannot build $*"
}

# bench_cleanup: stops the piece's processes (stop_bg), runs its own
# bench_on_exit if it has one, removes the namespaces in BENCH_NETNS and W
# (kept with BENCH_KEEP=1). The testbed's tb_on_cleanup or bench_trap's
# EXIT trap calls it.
BENCH_NETNS=()
bench_cleanup() {
	local ns
	stop_bg
	if declare -F bench_on_exit >/dev/null; then bench_on_exit || true; fi
	for ns in "${BENCH_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	if [[ -n ${BENCH_KEEP:-} ]]; then echo "kept $W" >&2; else rm -rf "$W"; fi
}

# bench_trap: bench_cleanup on exit (bench_start sets it).
bench_trap() {
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# bench_testbed: the testbed (scripts/lib/testbed.sh), quiet; its EXIT
# trap calls bench_cleanup, then removes the namespaces (and with them the
# veths, XDP programs and napi threads).
bench_testbed() {
	# shellcheck source=../lib/testbed.sh
	. scripts/lib/testbed.sh
	export TB_QUIET=1
	# No port buffer: the figures so far were taken without one (a
	# builder's veth drops past its 256-slot ring); BENCH_PORT_QUEUE=N
	# measures with one.
	export TB_PORT_QUEUE=${BENCH_PORT_QUEUE:-0}
	tb_on_cleanup() { bench_cleanup; }
}

# bench_tb_down PREFIX: removes the testbed PREFIX now (a piece that builds
# one per setting), so that the EXIT trap does not again.
bench_tb_down() {
	tb_down "$1"
	TB_CREATED=${TB_CREATED/ $1/}
}

# veth_pair NS_A NS_B ADDR_A ADDR_B: two new namespaces (into BENCH_NETNS),
# joined by eth0 (MAC 02:18:01:00:00:01 in A, 02:18:0X:00:00:01 in B, X the
# third byte of ADDR_B), addresses in /16, static neighbours, IPv6 off.
veth_pair() {
	local a=$1 b=$2 aa=$3 ba=$4 ns
	local amac=02:18:01:00:00:01 bmac
	bmac=$(printf '02:18:%02x:00:00:01' "$(cut -d. -f3 <<<"$ba")")
	for ns in "$a" "$b"; do
		ip netns add "$ns" || return 1
		BENCH_NETNS+=("$ns")
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
		ip -n "$ns" link set lo up
	done
	ip link add eth0 netns "$a" address "$amac" type veth peer name eth0 netns "$b" address "$bmac" &&
		ip -n "$a" addr add "$aa/16" dev eth0 && ip -n "$b" addr add "$ba/16" dev eth0 &&
		ip -n "$a" link set eth0 up && ip -n "$b" link set eth0 up &&
		ip -n "$a" neigh replace "$ba" lladdr "$bmac" dev eth0 nud permanent &&
		ip -n "$b" neigh replace "$aa" lladdr "$amac" dev eth0 nud permanent
}

# dfm_round NB NS MODE FRAG: one run under the data-flow manager on the
# testbed: NB builders (build only, `--credits DFM_CREDITS`, 50), NS
# sources (source k sends id k, UDP, FRAG-byte fragments; DFM_IDS: one id
# range for all instead), the DFM (MODE push or pull, --pack 1) in the
# foreground for SECS seconds, as fast as credits allow; then the others
# stop. More options: the arrays DFM_BUILD_ARGS, DFM_SOURCE_ARGS, DFM_ARGS.
# Leaves W/dfm.json, W/b<k>.json (the tools' --json) and their .err.
DFM_ADDR=${DFM_ADDR:-198.18.4.1:23901}
DFM_BUILD_ARGS=() DFM_SOURCE_ARGS=() DFM_ARGS=()
dfm_round() {
	local nb=$1 ns=$2 mode=$3 frag=$4 k
	local tmo=$((SECS + 20)) dur=$((SECS + 15))
	for ((k = 0; k < nb; k++)); do
		ip netns exec "$(tb_ns builder "$k")" timeout "$tmo" "$X" build --dev eth0 "${DFM_BUILD_ARGS[@]}" \
			--sources "${DFM_IDS:-0-$((ns - 1))}" --dfm "$DFM_ADDR" --credits "${DFM_CREDITS:-50}" \
			--no-forward --exit-on-eor --quiet --interval 0 --json --duration "$dur" \
			>"$W/b$k.json" 2>"$W/b$k.err" &
		BG_PIDS+=($!)
	done
	for ((k = 0; k < ns; k++)); do
		ip netns exec "$(tb_ns source "$k")" timeout "$tmo" "$X" source --dfm "$DFM_ADDR" --dev eth0 --udp \
			--source-ids "${DFM_IDS:-$k}" --frag-size "$frag" --quiet --duration "$dur" "${DFM_SOURCE_ARGS[@]}" \
			>/dev/null 2>"$W/s$k.err" &
		BG_PIDS+=($!)
	done
	ip netns exec "$(tb_ns dfm 0)" timeout "$tmo" "$X" dfm --listen "$DFM_ADDR" --mode "$mode" \
		--duration "$SECS" --pack 1 --wait-builders "$nb" --wait-sources "$ns" --json --interval 0 \
		"${DFM_ARGS[@]}" >"$W/dfm.json" 2>"$W/dfm.err"
	sleep 0.3
	stop_bg
}

# bench_write NAME ROWS.jsonl [KEY=VALUE...]: OUT/bench/NAME.json and .csv
# in the suite's convention (benchlib.py write).
bench_write() {
	"$PY" scripts/bench/benchlib.py write "$1" "$OUT/bench" "${@:2}"
}

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

# child_xevb PID: the xevb that PID (timeout(1) under ip netns exec) runs,
# once it is there (2.5 s at most); nothing if it is not.
child_xevb() {
	local i p
	for ((i = 0; i < 50; i++)); do
		p=$(pgrep -P "$1" -x xevb || true)
		[[ -n $p ]] && { echo "$p"; return; }
		sleep 0.05
	done
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

# proc_ticks PID: the CPU time of PID so far, user + system, all threads
# (clock ticks); 0 once it is gone.
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

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
# With BENCH_GEN=xsk the generator's end gets a pfifo queue (see GEN).
DIRECT_DST_MAC=02:18:02:01:00:01
direct_link() {
	ip link add eth1 netns "$1" address 02:18:01:01:00:01 mtu "$3" type veth \
		peer name eth1 netns "$2" address "$DIRECT_DST_MAC" mtu "$3" || return 1
	ip -n "$1" link set eth1 up || return 1
	ip -n "$2" link set eth1 up || return 1
	ip netns exec "$2" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.eth1.rp_filter=0
	[[ $GEN == xsk ]] || return 0
	ip netns exec "$1" tc qdisc replace dev eth1 root pfifo limit 10000
}

# sink_rps WHO: the farm node's receive work (the switch, its TCP) on CPU
# 0, where the farm node runs, by RPS on the builder's switch port; without
# it that work runs inside the builder's send, on the builder's core (a
# quarter of its time at L1 with forwarding, profiled: tcp_sendmsg -> the
# sink's tcp_v4_rcv and its wake-up), which a real network never charges
# it. WHO names the script in a failure. Call once the testbed is up.
sink_rps() {
	ip netns exec "$(tb_switch)" sh -c "echo 1 > /sys/class/net/$(tb_port builder 0)/queues/rx-0/rps_cpus" ||
		{ echo "$1: cannot set RPS on the builder's switch port" >&2; exit 1; }
}

# The generator on the direct path, `xevb source --mode $GEN` (BENCH_GEN):
# live (default): live frames, XDP_TX from BPF_PROG_RUN. They enter the
#   builder's veth ring with no back-pressure: in the gateway model (the
#   builder's receive work on its own core, as from a NIC) frames over the
#   256-slot ring are dropped at random before XDP.
# xsk: an AF_XDP socket's TX ring. veth's transmit stops the generator's
#   queue while the builder's ring is full (a qdisc on the generator's veth,
#   direct_link), so the generator waits, as a sender on a flow-controlled
#   link (802.3x pause) does: nothing is lost before the builder's XDP
#   program, in either model.
GEN=${BENCH_GEN:-live}
[[ $GEN == live || $GEN == xsk ]] || { echo "BENCH_GEN: live or xsk" >&2; exit 2; }

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

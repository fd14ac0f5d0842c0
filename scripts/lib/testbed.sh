# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Namespace testbed: N sources, M builders and K farm nodes ("sinks"), each
# a network namespace with one veth "eth0", all plugged into a Linux bridge
# that lives in its own namespace (the switch). Source this file:
#
#   . scripts/lib/testbed.sh
#   tb_up --sources 2 --builders 1 --sinks 1     # cleans up on EXIT by itself
#   tb_exec builder 0 ip -s link show eth0
#   dst=$(tb_addr builder 0)
#
# Addresses: 198.18.1.(i+1) sources, 198.18.2.(i+1) builders, 198.18.3.(i+1)
# sinks, 198.18.4.1 the data-flow manager (tb_up --dfm 1), one /16 on the bridge. MACs are fixed by role and index, every host
# has permanent neighbour entries for every other one and the bridge has
# static FDB entries, so no packet waits for ARP and nothing is flooded.
# IPv6 is off in every namespace to keep the links quiet.
#
# Port buffers: a builder's switch port gets a pfifo of TB_PORT_QUEUE
# packets (default 4096; --port-queue N, 0 for none) unless --rate-limit
# gives it a tbf. A builder's eth0 runs XDP, so its veth takes frames into
# a ring of 256; with no qdisc on the peer a burst past that is dropped
# before XDP, seen only as sequence gaps (a test's sources sending flat out
# from both cores lost 14 of 2400 frames so). With one, a full ring stops
# the port's queue and the frames wait there (veth's back-pressure, Linux
# 6.16 and later), as in a switch's port buffer; they are dropped only
# when the pfifo is full too, and counted there (tc -s qdisc). Benchmarks
# (scripts/bench/lib_bench.sh) set 0 to keep their figures comparable.
#
# Switch (tb_up --switch xdp, or tb_switch_use xdp on a running testbed): an XDP
# program (bpf/testbed/xevb_switch.bpf.c) on every switch port sends each unicast
# frame for a known host straight to that host's port through a DEVMAP, as
# an xdp_frame into the host's veth: no skb, no bridge, no copy into one on
# the receiving side, as a NIC's DMA buffers reach XDP. Broadcast, multicast
# (ARP) and unknown MACs still go through the bridge. A veth accepts
# redirected frames only with NAPI on, so every host's eth0 gets GRO on; and
# its TX checksum offload off, for a checksum on the wire (see _tb_nic).
# Nothing is pinned: the program lives as long as the ports (the namespace).
#
# State: /tmp/<prefix>.testbed, one line per object:
#   prefix P | switch NS | host ROLE INDEX NS ADDR MAC PORT | ns NS |
#   xdppass OBJ (the sources' ports run it) | xdpswitch PROG_ID
# tb_down reads it, and also removes any namespace named <prefix>-*.

TB_STATE_DIR=${TB_STATE_DIR:-/tmp}
TB_CREATED=${TB_CREATED:-}
# The XDP switch's object: --switch-obj, else $TB_SWITCH_OBJ, else make's default.
_TB_DEFAULT_SWITCH_OBJ=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bpf/xevb_switch.bpf.o

_tb_err() { echo "testbed: error: $*" >&2; }
_tb_log() { [[ -n ${TB_QUIET:-} ]] || echo "testbed: $*" >&2; }

_tb_role_num() {
	case $1 in
	source | src) echo 1 ;;
	builder | bld) echo 2 ;;
	sink | snk | farm) echo 3 ;;
	dfm) echo 4 ;;
	*) _tb_err "unknown role '$1' (source, builder, sink or dfm)"; return 1 ;;
	esac
}

_tb_role_tag() {
	case $1 in
	1) echo src ;; 2) echo bld ;; 3) echo snk ;; 4) echo dfm ;;
	esac
}

_tb_state() { echo "$TB_STATE_DIR/${1:-${TB_PREFIX:-}}.testbed"; }

_tb_mac() { printf '02:18:%02x:00:%02x:%02x' "$1" $(($2 >> 8)) $(($2 & 255)); }

# Kept quiet, runs in the namespace: disable IPv6 before links arrive.
_tb_ns_add() {
	local ns=$1
	ip netns add "$ns" || return 1
	echo "ns $ns" >>"$(_tb_state)"
	ip netns exec "$ns" sh -c '
		sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		sysctl -qw net.ipv6.conf.default.disable_ipv6=1
		ip link set lo up' || return 1
}

# The body of tb_up; any failure returns non-zero and tb_up cleans up.
_tb_up_inner() {
	local nsrc=$1 nbld=$2 nsnk=$3 mtu=$4 rate=$5 queues=$6 pass=$7 ndfm=${8:-0} portq=${9:-0}
	local sw="$TB_PREFIX-sw" r i n ns port mac addr q
	local -a hosts=()

	: >"$(_tb_state)" || return 1
	echo "prefix $TB_PREFIX" >>"$(_tb_state)"
	[[ -n $pass ]] && echo "xdppass $(realpath "$pass")" >>"$(_tb_state)"
	_tb_ns_add "$sw" || return 1
	echo "switch $sw" >>"$(_tb_state)"
	ip -n "$sw" link add br0 type bridge || return 1
	ip -n "$sw" link set br0 up || return 1

	for r in 1 2 3 4; do
		case $r in 1) n=$nsrc ;; 2) n=$nbld ;; 3) n=$nsnk ;; 4) n=$ndfm ;; esac
		for ((i = 0; i < n; i++)); do
			ns="$TB_PREFIX-$(_tb_role_tag $r)$i"
			port="$(_tb_role_tag $r)$i"
			mac=$(_tb_mac $r $i)
			addr="198.18.$r.$((i + 1))"
			q=()
			if ((r == 2 && queues > 1)); then
				q=(numtxqueues "$queues" numrxqueues "$queues")
			fi
			_tb_ns_add "$ns" || return 1
			# Created directly inside the namespaces: no name in the root one.
			ip link add eth0 netns "$ns" "${q[@]}" address "$mac" mtu "$mtu" type veth \
				peer name "$port" netns "$sw" "${q[@]}" mtu "$mtu" || return 1
			ip -n "$ns" addr add "$addr/16" dev eth0 || return 1
			ip -n "$ns" link set eth0 up || return 1
			ip -n "$sw" link set "$port" master br0 up || return 1
			bridge -n "$sw" fdb replace "$mac" dev "$port" master static || return 1
			if [[ -n $rate ]]; then
				# The switch port's egress is the host's ingress link.
				tc -n "$sw" qdisc add dev "$port" root tbf rate "$rate" burst 64kb latency 20ms ||
					return 1
			elif ((r == 2 && portq > 0)); then
				tc -n "$sw" qdisc add dev "$port" root pfifo limit "$portq" || return 1
			fi
			if ((r == 1)) && [[ -n $pass ]]; then
				# Lets XDP_TX frames of the live generator into the switch.
				ip -n "$sw" link set dev "$port" xdpdrv obj "$pass" sec xdp || return 1
			fi
			hosts+=("$r $i $ns $addr $mac $port")
			echo "host $(_tb_role_name $r) $i $ns $addr $mac $port" >>"$(_tb_state)"
		done
	done

	# Every host knows every other host's MAC from the start.
	local h o
	for h in "${hosts[@]}"; do
		read -r _ _ ns _ _ _ <<<"$h"
		for o in "${hosts[@]}"; do
			[[ $o == "$h" ]] && continue
			read -r _ _ _ addr mac _ <<<"$o"
			echo "neigh replace $addr lladdr $mac dev eth0 nud permanent"
		done | ip -n "$ns" -batch - || return 1
	done
	return 0
}

_tb_role_name() {
	case $1 in 1) echo source ;; 2) echo builder ;; 3) echo sink ;; 4) echo dfm ;; esac
}

_tb_cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	if declare -F tb_on_cleanup >/dev/null; then tb_on_cleanup || true; fi
	for p in $TB_CREATED; do tb_down "$p" || true; done
	TB_CREATED=
	exit "$rc"
}

# tb_up [--prefix P] [--sources N] [--builders M] [--sinks K] [--mtu 1500|9000]
#       [--rate-limit RATE] [--queues Q] [--xdp-pass OBJ] [--dfm 0|1]
#       [--switch bridge|xdp] [--switch-obj OBJ] [--port-queue N]
# Defaults from TB_PREFIX, TB_SOURCES, TB_BUILDERS, TB_SINKS, TB_MTU,
# TB_RATE_LIMIT, TB_QUEUES, TB_SWITCH, TB_SWITCH_OBJ, TB_PORT_QUEUE (4096:
# the builders' port buffers, see the top). --switch xdp: the XDP
# switch (see the top; tb_switch_use), its object by default
# build/bpf/xevb_switch.bpf.o of this checkout; a kernel that refuses it
# fails tb_up (the caller may retry with --switch bridge). Unless
# TB_NO_TRAP is set, installs an EXIT/INT/TERM trap that tears down every
# testbed this shell made (it calls a tb_on_cleanup function first, if
# defined). --xdp-pass OBJ attaches an XDP_PASS program
# (build/bpf/xevb_pass.bpf.o) to the sources' switch ports: a veth drops
# XDP_TX frames from its peer unless it runs XDP, so `xevb source --mode
# live` needs it to reach the bridge (with --switch xdp the switch program
# takes its place, and frames for a known host skip the bridge).
tb_up() {
	local nsrc=${TB_SOURCES:-1} nbld=${TB_BUILDERS:-1} nsnk=${TB_SINKS:-1}
	local mtu=${TB_MTU:-1500} rate=${TB_RATE_LIMIT:-} queues=${TB_QUEUES:-1} pass=${TB_XDP_PASS:-}
	local ndfm=${TB_DFM:-0} switch=${TB_SWITCH:-bridge} swobj=${TB_SWITCH_OBJ:-$_TB_DEFAULT_SWITCH_OBJ}
	local portq=${TB_PORT_QUEUE:-4096}
	TB_PREFIX=${TB_PREFIX:-xevb$$}
	while (($#)); do
		case $1 in
		--prefix) TB_PREFIX=$2; shift ;;
		--sources) nsrc=$2; shift ;;
		--builders) nbld=$2; shift ;;
		--sinks) nsnk=$2; shift ;;
		--mtu) mtu=$2; shift ;;
		--rate-limit) rate=$2; shift ;;
		--queues) queues=$2; shift ;;
		--xdp-pass) pass=$2; shift ;;
		--dfm) ndfm=$2; shift ;;
		--switch) switch=$2; shift ;;
		--switch-obj) swobj=$2; shift ;;
		--port-queue) portq=$2; shift ;;
		*) _tb_err "tb_up: unknown option '$1'"; return 2 ;;
		esac
		shift || { _tb_err "tb_up: option needs a value"; return 2; }
	done
	local v
	for v in "$nsrc" "$nbld" "$nsnk" "$queues" "$mtu" "$ndfm" "$portq"; do
		[[ $v =~ ^[0-9]+$ ]] || { _tb_err "tb_up: '$v' is not a number"; return 2; }
	done
	if ((nsrc > 250 || nbld > 250 || nsnk > 250)); then
		_tb_err "tb_up: at most 250 hosts per role (one /24 each)"; return 2
	fi
	if ((mtu < 576 || mtu > 65535)); then
		_tb_err "tb_up: --mtu $mtu out of 576..65535"; return 2
	fi
	if [[ -n $pass && ! -r $pass ]]; then
		_tb_err "tb_up: --xdp-pass $pass: no such object (make -j2 builds build/bpf/xevb_pass.bpf.o)"
		return 2
	fi
	case $switch in
	bridge) ;;
	xdp)
		[[ -r $swobj ]] || { _tb_err "tb_up: --switch-obj $swobj: no such object (make -j2 builds build/bpf/xevb_switch.bpf.o)"; return 2; } ;;
	*) _tb_err "tb_up: --switch '$switch': bridge or xdp"; return 2 ;;
	esac
	if [[ ! $TB_PREFIX =~ ^[A-Za-z0-9_.]+$ ]]; then
		_tb_err "tb_up: prefix '$TB_PREFIX': letters, digits, '_' and '.' only"; return 2
	fi
	if [[ -e $(_tb_state) ]] || ip netns list | grep -q "^$TB_PREFIX-"; then
		_tb_err "tb_up: testbed '$TB_PREFIX' exists: tb_down it or pick another --prefix"
		return 1
	fi
	if [[ -z ${TB_NO_TRAP:-} ]]; then
		TB_CREATED="$TB_CREATED $TB_PREFIX"
		trap _tb_cleanup EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
	fi
	if ! _tb_up_inner "$nsrc" "$nbld" "$nsnk" "$mtu" "$rate" "$queues" "$pass" "$ndfm" "$portq" ||
		{ [[ $switch == xdp ]] && ! _tb_switch_xdp "$swobj"; }; then
		_tb_err "tb_up: building testbed '$TB_PREFIX' failed; removing what was made"
		tb_down "$TB_PREFIX"
		return 1
	fi
	_tb_log "up: $TB_PREFIX ($nsrc sources, $nbld builders, $nsnk sinks, mtu $mtu${rate:+, $rate per port}, $switch switch, builder port buffer ${portq} packets); state $(_tb_state)"
}

# --- The XDP switch (tb_switch_use) ---------------------------------------------

# _tb_nic NS DEV 0|1: 1 makes a host's veth look like a NIC to the XDP
# switch, 0 undoes it; through the ethtool ioctl (the machine may have no
# ethtool binary). GRO on: a veth with GRO has NAPI and accepts xdp_frames
# redirected to its peer even without an XDP program. TX checksum offload
# off: a redirected xdp_frame loses the skb's "checksum still to do" mark,
# so the checksum must be on the wire, as a NIC would have put it there.
_tb_nic() {
	ip netns exec "$1" /usr/bin/python3 - "$2" "$3" <<'PY'
import ctypes, fcntl, socket, struct, sys
SIOCETHTOOL, ETHTOOL_STXCSUM, ETHTOOL_SGRO = 0x8946, 0x17, 0x2c
dev, on = sys.argv[1].encode(), int(sys.argv[2])
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    for cmd, val in ((ETHTOOL_SGRO, on), (ETHTOOL_STXCSUM, 1 - on)):
        buf = ctypes.create_string_buffer(struct.pack("II", cmd, val), 8)
        fcntl.ioctl(s, SIOCETHTOOL, struct.pack("16sP16x", dev, ctypes.addressof(buf)))
PY
}

# _tb_xdp_prog NS DEV: the id of the XDP program on DEV (nothing if none).
_tb_xdp_prog() {
	ip -n "$1" -j -d link show dev "$2" | /usr/bin/python3 -c '
import json, sys
x = json.load(sys.stdin)[0].get("xdp") or {}
if "prog" in x: print(x["prog"]["id"])'
}

# _tb_prog_map PROG_ID NAME: the id of the program's map NAME.
_tb_prog_map() {
	local m
	for m in $(bpftool -j prog show id "$1" | /usr/bin/python3 -c \
		'import json, sys; print(*json.load(sys.stdin).get("map_ids", []))'); do
		bpftool -j map show id "$m" | grep -q "\"name\":\"$2\"" && { echo "$m"; return 0; }
	done
	_tb_err "XDP program $1 has no map $2"
	return 1
}

# _tb_switch_fill SW MACS_ID PORTS_ID: one DEVMAP slot per host's port and
# every host's MAC -> its port, as one bpftool batch run in the switch's
# namespace (DEVMAP ifindexes are resolved in the caller's namespace).
_tb_switch_fill() {
	local sw=$1 macs=$2 ports=$3 batch
	batch=$(awk '$1 == "host" { print $6, $7 }' "$(_tb_state)" | while read -r mac port; do
		ip -n "$sw" -j link show dev "$port" | /usr/bin/python3 -c '
import json, struct, sys
mac, macs, ports = sys.argv[1:]
idx = " ".join("%02x" % b for b in struct.pack("=I", json.load(sys.stdin)[0]["ifindex"]))
print("map update id %s key hex %s value hex %s" % (ports, idx, idx))
print("map update id %s key hex %s 00 00 value hex %s" % (macs, mac.replace(":", " "), idx))' \
			"$mac" "$macs" "$ports" || exit 1
	done) || return 1
	nsenter --net="/run/netns/$sw" bpftool batch file <(echo "$batch") >/dev/null
}

# _tb_switch_xdp OBJ: every host NIC-like (_tb_nic), the switch program on every port.
_tb_switch_xdp() {
	local obj=$1 sw=$TB_PREFIX-sw ns port first="" prog="" macs ports
	[[ -r $obj ]] || { _tb_err "tb_switch_use: $obj: no such object (make -j2 builds build/bpf/xevb_switch.bpf.o)"; return 2; }
	command -v bpftool >/dev/null && command -v nsenter >/dev/null ||
		{ _tb_err "tb_switch_use: needs bpftool and nsenter (scripts/install-deps.sh)"; return 2; }
	# Every host first: a frame redirected to a host without NAPI is lost.
	while read -r ns; do
		_tb_nic "$ns" eth0 1 || { _tb_err "tb_switch_use: GRO on / TX checksum offload off on $ns eth0 failed"; return 1; }
	done < <(awk '$1 == "host" { print $4 }' "$(_tb_state)")
	while read -r port; do
		if [[ -z $first ]]; then
			# Loaded once; every other port shares the program and its maps.
			ip -n "$sw" link set dev "$port" xdpdrv off &&
				ip -n "$sw" link set dev "$port" xdpdrv obj "$obj" sec xdp.frags &&
				prog=$(_tb_xdp_prog "$sw" "$port") && [[ -n $prog ]] &&
				macs=$(_tb_prog_map "$prog" switch_macs) && ports=$(_tb_prog_map "$prog" switch_ports) &&
				_tb_switch_fill "$sw" "$macs" "$ports" ||
				{ _tb_err "tb_switch_use: loading $obj on $sw/$port failed (native XDP on veth: kernel 4.14+; DEVMAP_HASH: 5.4+)"; return 1; }
			echo "xdpswitch $prog" >>"$(_tb_state)"
			first=$port
		else
			nsenter --net="/run/netns/$sw" bpftool net attach xdpdrv id "$prog" dev "$port" overwrite ||
				{ _tb_err "tb_switch_use: attaching XDP program $prog to $sw/$port failed"; return 1; }
		fi
	done < <(awk '$1 == "host" { print $7 }' "$(_tb_state)")
	[[ -n $first ]] || { _tb_err "tb_switch_use: testbed '$TB_PREFIX' has no hosts"; return 1; }
}

# _tb_switch_bridge: the bridge alone again (the sources' XDP_PASS ports
# back), programs off before GRO: no frame is redirected to a host without NAPI.
_tb_switch_bridge() {
	local sw=$TB_PREFIX-sw f pass ns port role rc=0
	f=$(_tb_state)
	pass=$(awk '$1 == "xdppass" { print $2 }' "$f")
	while read -r role port; do
		ip -n "$sw" link set dev "$port" xdpdrv off || rc=1
		if [[ $role == source && -n $pass ]]; then
			ip -n "$sw" link set dev "$port" xdpdrv obj "$pass" sec xdp || rc=1
		fi
	done < <(awk '$1 == "host" { print $2, $7 }' "$f")
	while read -r ns; do
		_tb_nic "$ns" eth0 0 || rc=1
	done < <(awk '$1 == "host" { print $4 }' "$f")
	sed -i '/^xdpswitch /d' "$f"
	((rc == 0)) || _tb_err "tb_switch_use: detaching the XDP switch from $sw left something behind"
	return $rc
}

# tb_switch_use xdp [OBJ] | bridge: which switch a running testbed uses.
tb_switch_use() {
	local f
	f=$(_tb_state)
	[[ -r $f ]] || { _tb_err "no testbed '${TB_PREFIX:-}' (no $f)"; return 1; }
	case $1 in
	xdp)
		grep -q '^xdpswitch ' "$f" && return 0
		_tb_switch_xdp "${2:-${TB_SWITCH_OBJ:-$_TB_DEFAULT_SWITCH_OBJ}}" || { _tb_switch_bridge; return 1; }
		_tb_log "switch: XDP (program $(awk '$1 == "xdpswitch" { print $2 }' "$f")) on $TB_PREFIX"
		;;
	bridge)
		grep -q '^xdpswitch ' "$f" || return 0
		_tb_switch_bridge
		;;
	*) _tb_err "tb_switch_use: '$1': xdp or bridge"; return 2 ;;
	esac
}

# tb_switch_stats: the XDP switch's counters, summed over CPUs, as JSON
# {"prog_id", "redirected", "passed", "redirect_errors", "runt"}.
tb_switch_stats() {
	local prog cnt
	prog=$(awk '$1 == "xdpswitch" { print $2 }' "$(_tb_state)" 2>/dev/null)
	[[ -n $prog ]] || { _tb_err "testbed '${TB_PREFIX:-}' has no XDP switch (tb_switch_use xdp)"; return 1; }
	cnt=$(_tb_prog_map "$prog" switch_cnt) || return 1
	bpftool -j map dump id "$cnt" | /usr/bin/python3 -c '
import json, sys
names = ["redirected", "passed", "redirect_errors", "runt"]
out = {"prog_id": int(sys.argv[1])}
for e in json.load(sys.stdin):
    k = e.get("key")
    k = k if isinstance(k, int) else int.from_bytes(bytes(int(b, 16) for b in k), "little")
    vals = e.get("values", [])
    out[names[k]] = sum(v["value"] if isinstance(v["value"], int)
                        else int.from_bytes(bytes(int(b, 16) for b in v["value"]), "little") for v in vals)
print(json.dumps(out))' "$prog"
}

# tb_down [PREFIX]: remove every namespace of the testbed and its state file.
# xevb build keys its /run/xevb lock and stats files by network-namespace
# inode: a builder that was killed leaves them; they go with the namespace.
_tb_run_files() {
	local ino
	ino=$(stat -L -c %i "/run/netns/$1" 2>/dev/null) &&
		rm -f "/run/xevb/$ino-"*.lock "/run/xevb/$ino-"*.stats
	return 0
}

tb_down() {
	local p=${1:-${TB_PREFIX:-}} f ns pid
	local -a nss=()
	[[ -n $p ]] || { _tb_err "tb_down: which prefix?"; return 2; }
	f=$(_tb_state "$p")
	if [[ -r $f ]]; then
		while read -r kind name _; do
			[[ $kind == ns ]] && nss+=("$name")
		done <"$f"
	fi
	while read -r ns _; do
		[[ $ns == "$p"-* ]] && nss+=("$ns")
	done < <(ip netns list)
	for ns in $(printf '%s\n' "${nss[@]}" | sort -u); do
		# Processes left in the namespace would keep its links alive.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
		_tb_run_files "$ns"
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -f "$f"
	_tb_log "down: $p"
}

# Namespace, address and MAC of a host.
_tb_host_field() {
	local role=$1 idx=$2 col=$3 f r
	r=$(_tb_role_num "$role") || return 1
	f=$(_tb_state)
	[[ -r $f ]] || { _tb_err "no testbed '$TB_PREFIX' (no $f)"; return 1; }
	awk -v r="$(_tb_role_name "$r")" -v i="$idx" -v c="$col" \
		'$1 == "host" && $2 == r && $3 == i { print $c; found = 1 } END { exit !found }' "$f" ||
		{ _tb_err "no $role $idx in testbed '$TB_PREFIX'"; return 1; }
}
tb_ns() { _tb_host_field "$1" "$2" 4; }
tb_addr() { _tb_host_field "$1" "$2" 5; }
tb_mac() { _tb_host_field "$1" "$2" 6; }
# The host's port on the switch, and the switch namespace.
tb_port() { _tb_host_field "$1" "$2" 7; }
tb_switch() { echo "$TB_PREFIX-sw"; }

# tb_exec ROLE INDEX CMD...: run CMD in the host's namespace.
tb_exec() {
	local ns
	ns=$(tb_ns "$1" "$2") || return 1
	shift 2
	ip netns exec "$ns" "$@"
}

# tb_list [PREFIX]: the hosts of a testbed, or every testbed's prefix.
tb_list() {
	local p=${1:-${TB_PREFIX:-}} f
	if [[ -n $p ]]; then
		f=$(_tb_state "$p")
		[[ -r $f ]] || { _tb_err "no testbed '$p'"; return 1; }
		awk '$1 == "host" { printf "%-8s %3s  %-20s %-15s %s\n", $2, $3, $4, $5, $6 }' "$f"
	else
		for f in "$TB_STATE_DIR"/*.testbed; do
			[[ -e $f ]] && basename "$f" .testbed
		done
	fi
	return 0
}

# tb_ping ROLE INDEX ADDR [COUNT]: ICMP echo from a host (the machine has no
# ping binary); succeeds when every echo is answered, each within
# TB_PING_WAIT seconds (default 5: a bound on a loaded host, not a delay).
tb_ping() {
	local ns
	ns=$(tb_ns "$1" "$2") || return 1
	ip netns exec "$ns" /usr/bin/python3 - "$3" "${4:-1}" "${TB_PING_WAIT:-5}" <<'PY'
import os, socket, struct, sys, time
dst, n, wait_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(wait_s)
ident, ok = os.getpid() & 0xffff, 0
for seq in range(n):
    h = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"xevb-testbed"
    h = h[:2] + struct.pack("!H", csum(h)) + h[4:]
    s.sendto(h, (dst, 0))
    end = time.time() + wait_s
    while time.time() < end:
        try:
            d, a = s.recvfrom(2048)
        except socket.timeout:
            break
        ihl = (d[0] & 15) * 4
        t, _, _, i, q = struct.unpack("!BBHHH", d[ihl:ihl + 8])
        if a[0] == dst and t == 0 and i == ident and q == seq:
            ok += 1
            break
print("ping %s: %d/%d answered" % (dst, ok, n))
sys.exit(0 if ok == n else 1)
PY
}

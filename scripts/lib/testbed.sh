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
# State: /tmp/<prefix>.testbed, one line per object:
#   prefix P | switch NS | host ROLE INDEX NS ADDR MAC PORT | ns NS
# tb_down reads it, and also removes any namespace named <prefix>-*.

TB_STATE_DIR=${TB_STATE_DIR:-/tmp}
TB_CREATED=${TB_CREATED:-}

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
	local nsrc=$1 nbld=$2 nsnk=$3 mtu=$4 rate=$5 queues=$6 pass=$7 ndfm=${8:-0}
	local sw="$TB_PREFIX-sw" r i n ns port mac addr q
	local -a hosts=()

	: >"$(_tb_state)" || return 1
	echo "prefix $TB_PREFIX" >>"$(_tb_state)"
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
# Defaults from TB_PREFIX, TB_SOURCES, TB_BUILDERS, TB_SINKS, TB_MTU,
# TB_RATE_LIMIT, TB_QUEUES. Unless TB_NO_TRAP is set, installs an EXIT/INT/
# TERM trap that tears down every testbed this shell made (it calls a
# tb_on_cleanup function first, if defined). --xdp-pass OBJ attaches an
# XDP_PASS program (build/bpf/xevb_pass.bpf.o) to the sources' switch
# ports: a veth drops XDP_TX frames from its peer unless it runs XDP, so
# `xevb source --mode live` needs it to reach the bridge.
tb_up() {
	local nsrc=${TB_SOURCES:-1} nbld=${TB_BUILDERS:-1} nsnk=${TB_SINKS:-1}
	local mtu=${TB_MTU:-1500} rate=${TB_RATE_LIMIT:-} queues=${TB_QUEUES:-1} pass=${TB_XDP_PASS:-}
	local ndfm=${TB_DFM:-0}
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
		*) _tb_err "tb_up: unknown option '$1'"; return 2 ;;
		esac
		shift || { _tb_err "tb_up: option needs a value"; return 2; }
	done
	local v
	for v in "$nsrc" "$nbld" "$nsnk" "$queues" "$mtu" "$ndfm"; do
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
	if ! _tb_up_inner "$nsrc" "$nbld" "$nsnk" "$mtu" "$rate" "$queues" "$pass" "$ndfm"; then
		_tb_err "tb_up: building testbed '$TB_PREFIX' failed; removing what was made"
		tb_down "$TB_PREFIX"
		return 1
	fi
	_tb_log "up: $TB_PREFIX ($nsrc sources, $nbld builders, $nsnk sinks, mtu $mtu${rate:+, $rate per port}); state $(_tb_state)"
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
# ping binary); succeeds when every echo is answered, each within 1 s.
tb_ping() {
	local ns
	ns=$(tb_ns "$1" "$2") || return 1
	ip netns exec "$ns" /usr/bin/python3 - "$3" "${4:-1}" <<'PY'
import os, socket, struct, sys, time
dst, n = sys.argv[1], int(sys.argv[2])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(1.0)
ident, ok = os.getpid() & 0xffff, 0
for seq in range(n):
    h = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"xevb-testbed"
    h = h[:2] + struct.pack("!H", csum(h)) + h[4:]
    s.sendto(h, (dst, 0))
    end = time.time() + 1.0
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

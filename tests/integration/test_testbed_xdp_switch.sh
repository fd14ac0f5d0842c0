#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# The testbed's XDP switch (tb_up --switch xdp, bpf/testbed/xevb_switch.bpf.c):
# sources -> xevb build (XDP and socket modes) -> xevb sink with every
# unicast frame redirected veth -> veth through the switch's DEVMAP.
# Asserts: every event complete at the farm node (e2e_topology), the
# switch redirected at least every MEP sent and passed nothing to the
# bridge meanwhile, no redirect error; ARP (broadcast) still crosses the
# bridge; `tb_switch_use bridge` and tb_down leave no XDP program behind.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init w "${1:-build}"
OBJ=$(realpath "${1:-build}/bpf/xevb_switch.bpf.o")
[[ -r $OBJ ]] || e2e_die "$OBJ not built (make -j2)"
export TB_SWITCH_OBJ=$OBJ

# prog_gone ID: the kernel freed the program (bounded wait, E2E_WAIT:
# freeing is deferred).
prog_gone() {
	local t
	for ((t = 0; t < E2E_WAIT * 20; t++)); do
		bpftool prog show id "$1" >/dev/null 2>&1 || return 0
		sleep 0.05
	done
	return 1
}

# The down path first, on a testbed of its own: namespaces go, the program with them.
MAIN=$TB_PREFIX
tb_up --prefix "${MAIN}d" --sources 1 --builders 1 --sinks 1 --switch xdp || e2e_die "tb_up --switch xdp"
prog=$(awk '$1 == "xdpswitch" { print $2 }' "$(_tb_state)")
nports=$(ip -n "$(tb_switch)" -d link show | grep -c "prog/xdp id $prog ")
[[ $nports == 3 ]] && e2e_ok "down: switch program $prog on all 3 ports" ||
	e2e_fail "down: switch program $prog on $nports of 3 ports"
tb_down "${MAIN}d"
TB_CREATED=${TB_CREATED/ ${MAIN}d/}
prog_gone "$prog" && e2e_ok "down: program $prog freed with the namespaces" ||
	e2e_fail "down: program $prog still loaded after tb_down"
[[ ! -e $(_tb_state "${MAIN}d") ]] && ! ip netns list | grep -q "^${MAIN}d-" &&
	e2e_ok "down: no state file, no namespace left" || e2e_fail "down: state or namespaces left"

TB_PREFIX=$MAIN
tb_up --sources 2 --builders 1 --sinks 1 --switch xdp || e2e_die "tb_up --switch xdp"
PROG=$(awk '$1 == "xdpswitch" { print $2 }' "$(_tb_state)")

# ARP: the source forgets the sink's MAC; the request is broadcast (passed to
# the bridge, which floods it), the reply unicast (redirected).
tb_switch_stats >"$E2E_WORK/arp.sw0.json"
tb_exec source 0 ip neigh del "$(tb_addr sink 0)" dev eth0 || e2e_die "neigh del"
tb_ping source 0 "$(tb_addr sink 0)" 2 >"$E2E_WORK/arp.ping" 2>&1
tb_switch_stats >"$E2E_WORK/arp.sw1.json"
tb_exec source 0 ip -j neigh show "$(tb_addr sink 0)" dev eth0 >"$E2E_WORK/arp.neigh.json"
SINK_MAC=$(tb_mac sink 0) e2e_check arp <<'PY'
a, b = J("arp.sw0"), J("arp.sw1")
n = json.load(open(os.path.join(W, "arp.neigh.json")))
true("ping answered", "2/2 answered" in open(os.path.join(W, "arp.ping")).read())
eq("neighbour learnt by ARP (lladdr, not permanent)",
   [(e.get("lladdr"), "PERMANENT" in e.get("state", [])) for e in n], [(os.environ["SINK_MAC"], False)])
true("ARP request passed to the bridge", b["passed"] - a["passed"] >= 1, b["passed"] - a["passed"])
true("ARP reply and ICMP redirected", b["redirected"] - a["redirected"] >= 5, b["redirected"] - a["redirected"])
eq("redirect errors", b["redirect_errors"] - a["redirect_errors"], 0)
PY

# switch_case CASE e2e_topology-args...: the case, between two snapshots of the counters.
switch_case() {
	local case=$1
	tb_switch_stats >"$E2E_WORK/$case.sw0.json"
	e2e_topology "$@"
	tb_switch_stats >"$E2E_WORK/$case.sw1.json"
	e2e_check "$case" <<'PY'
P = json.load(open(os.path.join(W, CASE + ".plan")))
a, b = J(CASE + ".sw0"), J(CASE + ".sw1")
meps = sum(J(n)["packets"] for srcs in P["builders"].values() for n in srcs)
d = {k: b[k] - a[k] for k in ("redirected", "passed", "redirect_errors", "runt")}
true("switch redirected %d >= MEPs sent %d" % (d["redirected"], meps), d["redirected"] >= meps, d)
eq("switch passed to the bridge, redirect errors, runts", (d["passed"], d["redirect_errors"], d["runt"]), (0, 0, 0))
PY
}

#            case      mode   proto hosts ids builders sinks events
switch_case  wraw_xdp  xdp    raw   2     2   1        1     3000
switch_case  wudp_xdp  xdp    udp   2     2   1        1     3000
# No XDP program on the builder's veth: GRO (NAPI) lets the frames in.
switch_case  wudp_sock socket udp   2     2   1        1     3000

tb_switch_use bridge || e2e_fail "tb_switch_use bridge"
prog_gone "$PROG" && e2e_ok "bridge: switch program $PROG detached and freed" ||
	e2e_fail "bridge: switch program $PROG still loaded"
e2e_no_xdp "bridge"
tb_ping source 0 "$(tb_addr sink 0)" 1 >/dev/null && e2e_ok "bridge: ping through the bridge" ||
	e2e_fail "bridge: no ping through the bridge after the switch went"
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# A source_id is bound to its source process's address in the XDP filter
# (issue 21, item 4; --bind-src, which a run configuration gives for every
# source). One XDP builder, sources 0-1 on source host 0 and 2-3 on source
# host 1, both addresses allowed (--allow-src, --xdp-filter) and each bound
# to its ids. While 10000 good events flow, source host 1 (an allowed
# address) also sends MEPs for source_ids 0-1, another process's ids, far
# ahead: 20 MEPs, 100 fragments. Each is dropped in XDP and counted
# src_addr_mismatch. Each binding names its host's MAC too (,mac=): source
# host 1 also sends MEPs for source_id 0 from source host 0's address
# (spoofing the IP only, a raw IP_HDRINCL socket), 20 MEPs, 100 fragments,
# each dropped and counted src_mac_mismatch. The builder never sees one,
# every good event is complete and nothing is dropped.
# The same from a run configuration alone (the file binds each [source N]'s
# ids to its address and mac): an XDP builder under a DFM (push, 6000
# events), the same two attacks (UDP) from source host 1.
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_init sb "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
E2E_DEST=$(tb_addr builder 0)
S0=$(tb_addr source 0) S1=$(tb_addr source 1)
N=10000

# send_spoofs PREFIX [source options]: from host 1, PREFIXatk: 50 events
# of host 0's ids 0-1 (20 MEPs, 100 fragments) from host 1's address;
# PREFIXatkmac: 100 events of id 0 (20 MEPs, 100 fragments) from host 0's
# address but host 1's MAC. Both far ahead, no END_OF_RUN.
send_spoofs() {
	local p=$1
	shift
	e2e_source 1 "${p}atk" "$@" --source-ids 0-1 --events 50 --pack 5 --first-event 100000 --no-end-of-run
	e2e_source 1 "${p}atkmac" "$@" --source-ids 0 --src-addr-base "$S0" --events 100 --pack 5 \
		--first-event 200000 --no-end-of-run
}

# spoofs_refused(x, atk, atkmac): send_spoofs sent 20 MEPs of 100 fragments
# each way, and XDP (counters X) refused exactly those by address and MAC.
SB_PY=$(cat <<'PY'
def spoofs_refused(x, atk, atkmac):
    eq("attack: MEPs, fragments sent", (atk["packets"], atk["fragments"]), (20, 100))
    eq("XDP: src_addr_mismatch packets, frags = the attack's",
       (x["src_addr_mismatch"]["packets"], x["src_addr_mismatch"]["frags"]), (20, 100))
    eq("IP-only spoof: MEPs, fragments sent", (atkmac["packets"], atkmac["fragments"]), (20, 100))
    eq("XDP: src_mac_mismatch packets, frags = the IP-only spoof's",
       (x["src_mac_mismatch"]["packets"], x["src_mac_mismatch"]["frags"]), (20, 100))
PY
)

e2e_sink 0 k --expect-events "$N" --expect-sources 4
e2e_builder 0 b --sources 0-3 --allow-src "$S0" --allow-src "$S1" --xdp-filter \
	--bind-src "0-1=$S0,mac=$(tb_mac source 0)" --bind-src "2-3=$S1,mac=$(tb_mac source 1)" \
	--sink "$(tb_addr sink 0):$E2E_PORT" --exit-on-eor --duration "$E2E_RUN"
e2e_source 0 s0 --source-ids 0-1 --events "$N" --pack 10 --rate 5000
e2e_source 1 s1 --source-ids 2-3 --events "$N" --pack 10 --rate 5000
sleep 0.5
send_spoofs ""
e2e_wait_all
export N
e2e_check src_bind <<PY
$SB_PY
N = int(os.environ["N"])
b, k, atk, atkmac = J("b"), J("k"), J("atk"), J("atkmac")
x = b["xdp"]
print("# xdp src_addr_mismatch %s, src_mac_mismatch %s, unknown_source %s; builder drops %s" % (
    x["src_addr_mismatch"], x["src_mac_mismatch"], x["unknown_source"],
    {n: b[n] for n in b if n.startswith("drop_")}))
spoofs_refused(x, atk, atkmac)
eq("XDP: src_vlan_mismatch (no VLAN bound)", x["src_vlan_mismatch"]["packets"], 0)
eq("XDP: unknown_source", x["unknown_source"]["packets"], 0)
good = S(["s0", "s1"], "fragments")
eq("builder: fragments received = the good ones only", b["frags_received"], good)
eq("builder: fragments in events = received", b["frags_in_events"], good)
eq("builder: no drop", sum(b[n] for n in b if n.startswith("drop_")), 0)
eq("builder: events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (N, 0))
eq("farm node: every event, complete", (k["events"], k["complete"]), (N, N))
PY

# Socket mode sees a VLAN through its device: eth0 is no VLAN device, so
# every frame it passes came untagged, and ids bound to VLAN 100 are refused
# from their own address (src_vlan_mismatch, with their fragments); ids
# bound by address alone are built. The builder warns at start.
NV=200
e2e_builder 0 v --mode socket --udp --sources 0-3 --bind-src "0-1=$S0,vlan=100" --bind-src "2-3=$S1" \
	--no-forward --duration "$E2E_RUN"
e2e_source 0 v0 --udp --source-ids 0-1 --events "$NV" --pack 10 --rate 2000
V0=$E2E_LAST_PID
e2e_source 1 v1 --udp --source-ids 2-3 --events "$NV" --pack 10 --rate 2000
V1=$E2E_LAST_PID
e2e_until "$E2E_WAIT" bash -c "! kill -0 $V0 2>/dev/null && ! kill -0 $V1 2>/dev/null" ||
	e2e_fail "socket vlan: the sources did not end"
e2e_until "$E2E_WAIT" e2e_bstat 0 "d['xdp']['src_vlan_mismatch']['packets'] > 0 and d['frags_received'] == 2 * $NV" ||
	e2e_fail "socket vlan: the builder did not take source 1's fragments"
e2e_settled 0
e2e_stop v
e2e_wait_all
export NV
e2e_check src_bind_vlan_socket <<'PY'
NV = int(os.environ["NV"])
b, v0, v1 = J("v"), J("v0"), J("v1")
x = b["xdp"]
print("# socket: src_vlan_mismatch %s, src_addr_mismatch %s" % (x["src_vlan_mismatch"], x["src_addr_mismatch"]))
eq("socket: src_vlan_mismatch packets, frags = source 0's MEPs", (x["src_vlan_mismatch"]["packets"],
   x["src_vlan_mismatch"]["frags"]), (v0["packets"], v0["fragments"]))
eq("socket: src_addr_mismatch", x["src_addr_mismatch"]["packets"], 0)
eq("socket: fragments received = source 1's", b["frags_received"], v1["fragments"])
true("socket: the builder said the VLAN cannot arrive on eth0",
     "source_id 0 is bound to VLAN 100, but eth0 is no VLAN device" in open(os.path.join(W, "v.err")).read(), "see v.err")
PY

N2=6000
CFG=$E2E_WORK/run.ini
cat >"$CFG" <<INI
[run]
mode = push
number = 1
events = $N2
rate = 3000
pack = 10
[dfm]
address = $DFM_ADDR
[builder]
interface = eth0
receive = xdp
udp = true
credits = 64
exit_on_eor = true
[builder 1]
address = $(tb_addr builder 0)
[source]
udp = true
[source 0]
address = $S0
source_ids = 0-1
mac = $(tb_mac source 0)
[source 1]
address = $S1
source_ids = 2-3
mac = $(tb_mac source 1)
[sink 0]
address = $(tb_addr sink 0)
port = $E2E_PORT
credits = 32
INI
rc_sink "$CFG" 0 ck
rc_builder "$CFG" 1 0 cb
rc_source "$CFG" 0 cs0
rc_source "$CFG" 1 cs1
# XDP judges the address before anything else: the attack needs no timing.
send_spoofs c --udp
rc_dfm "$CFG" cdfm
dfm_stop_all
e2e_wait_all
export N2
e2e_check src_bind_config <<PY
$DFM_PY
$SB_PY
N = int(os.environ["N2"])
b, d, atk, atkmac = J("cb"), J("cdfm"), J("catk"), J("catkmac")
x = b["xdp"]
print("# xdp src_addr_mismatch %s, src_mac_mismatch %s; builder drops %s" % (x["src_addr_mismatch"],
      x["src_mac_mismatch"], {n: b[n] for n in b if n.startswith("drop_")}))
true("the file bound each source's ids", "--bind-src 0-1=%s,mac=%s --bind-src 2-3=%s,mac=%s" % (
     "$S0", "$(tb_mac source 0)", "$S1", "$(tb_mac source 1)")
     in open(os.path.join(W, "cb.err")).read(), "see cb.err")
spoofs_refused(x, atk, atkmac)
eq("builder: fragments received = the sources'", b["frags_received"], S(["cs0", "cs1"], "fragments"))
eq("builder: no drop", sum(b[n] for n in b if n.startswith("drop_")), 0)
eq("builder: events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (N, 0))
eq("DFM: triggered = complete", (d["triggered"], d["complete"]), (N, N))
eq("DFM: lost + incomplete", lost(d) + d["incomplete"], 0)
PY
e2e_finish

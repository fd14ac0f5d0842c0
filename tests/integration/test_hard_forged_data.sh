#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Forged event data from a host with no key and no control-plane access
# never reaches a farm node. A run configuration (push, 30000 events at
# 4000/s, one source process with ids 0-1 on source host 0, one builder,
# one farm node) binds the source's ids to its address and MAC. Source
# host 1 is the forger (tests/integration/forge_data.py): before the DFM
# starts it sends MEPs for ids 0-1999 of both source ids, once from its own
# address and once spoofing the source's (IP only: its own MAC); once the
# builder has built events, the same for 200 ids just ahead of what it has
# built. Every forged MEP is refused where it arrives and counted by
# cause: from its own address src_addr_mismatch, spoofed src_mac_mismatch,
# all their fragments; the builder's core never sees one; the farm node
# gets every triggered event once, complete, with no error (a forged
# payload is 0xEE bytes: it would be one); the DFM exits 0. Once with
# `receive = socket` (the kernel's socket, its filter judging the MAC) and
# once with `receive = xdp` (the XDP program).
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_init fd "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
N=30000
S0=$(tb_addr source 0) S1=$(tb_addr source 1)

# forge NAME SADDR FIRST COUNT: from source host 1, COUNT ids from FIRST of ids 0-1, as SADDR.
forge() {
	ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" python3 tests/integration/forge_data.py \
		"$(tb_mac builder 0)" "$(tb_addr builder 0)" "$2" "$3" "$4" 0,1 >"$E2E_WORK/$1.json" \
		2>"$E2E_WORK/$1.err" || { e2e_fail "$1: forger exit status $?"; return 1; }
}

# The builder's published count of MEPs refused for CAUSE (an XDP counter name).
refused() {
	tb_exec builder 0 "$X" stats --dev eth0 --json 2>/dev/null |
		python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["xdp"][sys.argv[1]]["packets"])' "$1"
}

# ahead P: once the builder has built events, 200 ids just ahead of them,
# both ways; returns once the builder has counted every forged MEP (the run
# is far from its end: 7.5 s at 4000/s, the forger needs a fraction). In the
# background: 1 and a line saying why when not.
ahead() {
	local p=$1 c
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0' || { echo "FAIL - $p: no event built"; return 1; }
	c=$(tb_exec builder 0 "$X" stats --dev eth0 --json |
		python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["events_complete"])')
	forge "${p}ahead" "$S1" $((c + 100)) 200 || return 1
	forge "${p}aheadspoof" "$S0" $((c + 100)) 200 || return 1
	e2e_until "$E2E_WAIT" e2e_bstat 0 \
		'd["xdp"]["src_addr_mismatch"]["packets"] == 440 and d["xdp"]["src_mac_mismatch"]["packets"] == 440' && return 0
	echo "FAIL - $p: the builder did not count every forged MEP while it ran (addr $(refused src_addr_mismatch)," \
		"mac $(refused src_mac_mismatch) of 440 each)"
	return 1
}

# run_mode RECEIVE P: the run, the forger before the DFM and during the run.
run_mode() {
	local p=$2 cfg=$E2E_WORK/$2.ini
	cat >"$cfg" <<INI
[run]
mode = push
number = 1
events = $N
rate = 4000
pack = 10
[dfm]
address = $DFM_ADDR
[builder]
interface = eth0
receive = $1
udp = true
credits = 64
exit_on_eor = true
[builder 1]
address = $(tb_addr builder 0)
[source 0]
address = $S0
source_ids = 0-1
mac = $(tb_mac source 0)
udp = true
[sink 0]
address = $(tb_addr sink 0)
port = $E2E_PORT
credits = 32
INI
	rc_sink "$cfg" 0 "${p}k"
	rc_builder "$cfg" 1 0 "${p}b"
	rc_source "$cfg" 0 "${p}s0"
	forge "${p}pre" "$S1" 0 2000
	forge "${p}prespoof" "$S0" 0 2000
	ahead "$p" &
	local atk=$!
	rc_dfm "$cfg" "${p}dfm"
	wait "$atk" || e2e_fail "$p: the forger's attack during the run (above)"
	dfm_stop_all
	e2e_wait_all
}

FD_PY=$(cat <<'PY'
def forged_refused(p, path):
    N = int(os.environ["N"])
    b, d, k, s = J(p + "b"), J(p + "dfm"), J(p + "k"), J(p + "s0")
    own = [J(p + x) for x in ("pre", "ahead")]
    spoof = [J(p + x) for x in ("prespoof", "aheadspoof")]
    x = b["xdp"]
    print("# %s: xdp src_addr_mismatch %s, src_mac_mismatch %s; builder drops %s" % (path,
          x["src_addr_mismatch"], x["src_mac_mismatch"], {n: b[n] for n in b if n.startswith("drop_")}))
    eq(path + ": receive path", b["path"], path)
    eq(path + ": forger MEPs, fragments (own address, spoofed: before the DFM, ahead)",
       [(a["meps"], a["frags"]) for a in own + spoof], [(400, 4000), (40, 400)] * 2)
    eq(path + ": src_addr_mismatch packets, frags = the forger's from its own address",
       (x["src_addr_mismatch"]["packets"], x["src_addr_mismatch"]["frags"]),
       (sum(a["meps"] for a in own), sum(a["frags"] for a in own)))
    eq(path + ": src_mac_mismatch packets, frags = the forger's spoofed ones",
       (x["src_mac_mismatch"]["packets"], x["src_mac_mismatch"]["frags"]),
       (sum(a["meps"] for a in spoof), sum(a["frags"] for a in spoof)))
    eq(path + ": builder: fragments received = the source's", b["frags_received"], s["fragments"])
    # A loaded machine delays DONEs: the builder re-asks, the source re-sends (RESEND MEPs), copies are duplicates.
    eq(path + ": builder: no drop but duplicates", sum(b[n] for n in b if n.startswith("drop_") and n != "drop_duplicate"), 0)
    true(path + ": builder: duplicates (%d) only of re-sent MEPs (%d)" % (b["drop_duplicate"], s["resend_meps"]),
         b["drop_duplicate"] == 0 or s["resend_meps"] > 0)
    eq(path + ": builder: events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (N, 0))
    eq(path + ": DFM: triggered = complete", (d["triggered"], d["complete"]), (N, N))
    eq(path + ": farm node: events, complete, duplicates, errors (0 forged)",
       (k["events"], k["complete"], k["duplicates"], k["errors"]), (N, N, 0, 0))
    true(path + ": the builder did not warn of a source bound without a MAC",
         "without a MAC" not in open(os.path.join(W, p + "b.err")).read(), "see %sb.err" % p)
PY
)
export N

run_mode socket s
e2e_check forged_socket <<PY
$FD_PY
forged_refused("s", "socket")
PY

run_mode xdp x
e2e_check forged_xdp <<PY
$FD_PY
forged_refused("x", "xdp")
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One member's key cannot speak for another, and nothing crosses runs
# (docs/hardening.md "Keys per member and per run"). Two runs from a run configuration
# (2 source processes x 1 builder x 1 farm node; run 1 push, run 2 pull,
# the builder's REQUESTs sealed for each source's member key): the DFM and the
# builder hold the master key; each source process and the farm node only
# its member key (xevb key derive). While run 1 is on, source host 1,
# holding source 2's member key, learns the DFM's epoch and newest
# sequence number off the wire and sends, 3 times each, sealed with the
# best key it has (ctl_member_forge.py):
#  - a DFM STATUS with seq = newest + 2^30 to the builder (before: every
#    genuine DFM message then refused as replay, the run stalled);
#  - a DFM BYE to the builder, to source process 0 and to the farm node
#    (before: the builder left at 1.5 s, the DFM said "accounting ok");
#  - a farm node's STATUS with done_total 2^40 to the builder (before: that
#    farm node's credits ignored, counted nowhere);
#  - its own source's STATUS with seq = newest + 2^30 to the DFM (before:
#    its genuine messages then refused as replay).
# Every forgery refused and counted by its reason (bad_mac at the builder,
# source 0 and the farm node, seq_jump at the DFM), nothing else refused,
# nothing dropped after the MAC (the DFM's and the farm node's too); the run
# completes with exact books. The DFM's end-of-run BYE to the builder,
# captured in run 1, is replayed from the DFM's own address and port into
# run 2 (same key files, the next run number): refused (bad_mac), run 2
# completes. Last, a member key given to another member is refused at start.
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_need tcpdump
e2e_init mk "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
FORGE=$(realpath tests/integration/ctl_member_forge.py)
W=$E2E_WORK
N=10000
(umask 077; head -c 32 /dev/urandom >"$W/run.key")
"$X" key derive --master "$W/run.key" --role source --id 0 --out "$W/s0.key" 2>/dev/null
"$X" key derive --master "$W/run.key" --role source --id 2 --out "$W/s1.key" 2>/dev/null
"$X" key derive --master "$W/run.key" --role sink --id 0 --out "$W/k0.key" 2>/dev/null

config() {  # RUN FILE MODE
	cat >"$2" <<EOF
[run]
mode = $3
number = $1
events = $N
rate = 2500
pack = 10
key_file = $W/run.key

[dfm]
address = $DFM_ADDR
dead_ms = 1000
retry_ms = 1000
drain_ms = 5000

[builder]
interface = eth0
receive = socket
udp = true
credits = 64
exit_on_eor = true

[builder 1]
address = $(tb_addr builder 0)

[source]
udp = true

[source 0]
address = $(tb_addr source 0)
source_ids = 0-1
key_file = $W/s0.key

[source 1]
address = $(tb_addr source 1)
source_ids = 2-3
key_file = $W/s1.key

[sink 0]
address = $(tb_addr sink 0)
port = 5000
credits = 32
key_file = $W/k0.key
EOF
	chmod 600 "$2"
}
config 41 "$W/run41.ini" push
config 42 "$W/run42.ini" pull

ip netns exec "$(tb_switch)" timeout "$E2E_TMO" tcpdump -i "$(tb_port builder 0)" -w "$W/bld.pcap" -U \
	--immediate-mode -s 0 "udp src port 23901 and udp dst port 23902" 2>"$W/tcpdump.err" &
_e2e_track $! tcpdump 0
e2e_wait_line 'listening on' "$W/tcpdump.err" || e2e_die "tcpdump did not start"

run() {  # CFG TAG: one run, every process from CFG
	rc_sink "$1" 0 "$2_k0"
	rc_builder "$1" 1 0 "$2_b0"
	rc_source "$1" 0 "$2_s0"
	rc_source "$1" 1 "$2_s1"
}
run "$W/run41.ini" r1
(
	e2e_wait_line triggering "$W/r1_dfm.err"
	ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" python3 "$FORGE" forge --key "$W/s1.key" --run 41 \
		--iface eth0 --dfm "$DFM_ADDR" --builder "$(tb_addr builder 0):23902" \
		--other-source "$(tb_addr source 0):23903" --sink "$(tb_addr sink 0):23904" --own-id 2 --own-ids 2 >"$W/forge.json" 2>"$W/forge.err"
) &
_e2e_track $! forge 0
rc_dfm "$W/run41.ini" r1_dfm
dfm_stop_all
e2e_wait_all

# Run 2, pull: the same keys, the next run number; run 1's BYE replayed into it.
run "$W/run42.ini" r2
(
	e2e_wait_line triggering "$W/r2_dfm.err"
	ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" python3 "$FORGE" replay --pcap "$W/bld.pcap" \
		--src "$DFM_ADDR" --dst "$(tb_addr builder 0):23902" >"$W/replay.json" 2>"$W/replay.err"
) &
_e2e_track $! replay 0
rc_dfm "$W/run42.ini" r2_dfm
dfm_stop_all
e2e_wait_all

export N
e2e_check member_keys <<'PY'
def JL(name, key):
    for l in open(os.path.join(W, name + ".json")).read().splitlines():
        if l.startswith("{") and ('"%s"' % key) in l[:40]:
            return json.loads(l)[key]
    raise SystemExit("FAIL - %s: %s printed no %s line" % (CASE, name, key))
def SINK(name):
    for l in open(os.path.join(W, name + ".json")).read().splitlines():
        if l.startswith('{"events"'):
            return json.loads(l)
    raise SystemExit("FAIL - %s: %s printed no summary" % (CASE, name))
def only(what, by_reason, want):
    eq(what, {k: v for k, v in by_reason.items() if v}, want)
N = int(os.environ["N"])
f = J("forge")
eq("forgeries sent (3 each)", (f.get("dfm_status"), f.get("dfm_bye"), f.get("sink_status"), f.get("own_jump")),
   (3, 9, 3, 3))
for r in ("r1", "r2"):
    d = J(r + "_dfm")
    eq(r + ": DFM triggered = complete", (d["triggered"], d["complete"]), (N, N))
    eq(r + ": DFM lost, incomplete", (sum(d["lost"].values()), d["incomplete"]), (0, 0))
    b = J(r + "_b0")
    eq(r + ": builder built every event complete", (b["events_complete"], b["events_incomplete"]), (N, 0))
    k = SINK(r + "_k0")
    eq(r + ": farm node got every event once", (k["events"], k["complete"], k["duplicates"]), (N, N, 0))
    for s in ("s0", "s1"):
        eq("%s: source %s cleared every event" % (r, s), J(r + "_" + s)["cleared"], N)
d = J("r1_dfm")
only("r1: DFM refused only source 2's own sequence jumps (seq_jump)", d["ctl"]["refused_by_reason"],
     {"seq_jump": 3})
bc = JL("r1_b0", "dfm_ctl")
only("r1: builder refused the DFM STATUS, BYE and farm-node STATUS forged by source host 1 (bad_mac)",
     bc["ctl_refused_by_reason"], {"bad_mac": 9})
eq("r1: builder: no DFM restart, no core reset", (bc["dfm_restarts"], bc["core_resets"]), (0, 0))
only("r1: source 0 refused the forged BYE (bad_mac)", J("r1_s0")["ctl_refused_by_reason"], {"bad_mac": 3})
only("r1: source 1 refused nothing", J("r1_s1")["ctl_refused_by_reason"], {})
kc = JL("r1_k0", "sink_ctl")
only("r1: the farm node refused the forged BYE (bad_mac)", kc["ctl_refused_by_reason"], {"bad_mac": 3})
for r in ("r1", "r2"):
    only(r + ": the DFM dropped nothing after the MAC", J(r + "_dfm")["ctl"]["dropped"], {})
    only(r + ": the farm node dropped nothing after the MAC", JL(r + "_k0", "sink_ctl")["ctl_dropped"], {})
only("r2: the farm node refused nothing", JL("r2_k0", "sink_ctl")["ctl_refused_by_reason"], {})
rp = J("replay")
true("run 1's end-of-run BYE to the builder captured (%d)" % rp["replayed"], rp["replayed"] >= 1)
only("r2: builder refused run 1's BYE replayed from the DFM's address (bad_mac)",
     JL("r2_b0", "dfm_ctl")["ctl_refused_by_reason"], {"bad_mac": rp["replayed"]})
only("r2: DFM refused nothing", J("r2_dfm")["ctl"]["refused_by_reason"], {})
eq("r2: pull mode, the builder asked the sources (REQUESTs sent > 0)", (J("r2_dfm")["mode"],
   JL("r2_b0", "dfm_ctl")["requests"] > 0), ("pull", True))
for s in ("s0", "s1"):
    only("r2: source %s refused nothing (the builder's REQUESTs open with its member key)" % s,
         J("r2_" + s)["ctl_refused_by_reason"], {})
PY

# A member key is its member's alone: source process 0 given source 2's key does not start.
out=$(ip netns exec "$(tb_ns source 0)" timeout "$E2E_TMO" "$X" source --config "$W/run41.ini" --id 0 \
	--key-file "$W/s1.key" --duration 1 2>&1)
rc=$?
if ((rc != 0)) && grep -q "member key of source 2, but this process is source 0" <<<"$out"; then
	e2e_ok "another member's key: exit $rc ($(grep -m1 'member key' <<<"$out" | cut -c1-110))"
else
	e2e_fail "another member's key: exit $rc, want an error naming both members: $out"
fi
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Authenticated control plane (issue 20): DFM, builder, source process and
# farm node share a key (--key-file); a host without it (ctl_attacker.py,
# on a second builder host) sends the DFM 20 STATUS sealed with another
# key, 20 unsealed ones, 20 sealed datagrams captured on their way to the
# DFM sent again unchanged, and 20 more captured ones with one bit flipped.
# Exact books: every one of the 80 refused and counted by its reason
# (bad_mac 40, unauthenticated 20, replay + stale 20), nothing else refused
# anywhere, the attacker never becomes a builder, and the run completes
# with every event at the farm node. Then a member with the wrong key is
# refused (counted, logged with what to do), and a key file others can read
# is refused at start.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_need tcpdump
e2e_init da "${1:-build}" --sources 1 --builders 2 --sinks 1 --dfm 1
KEY=$E2E_WORK/run.key
(umask 077; head -c 32 /dev/urandom >"$KEY")
N=20000
CAP=$E2E_WORK/dfm.pcap

ip netns exec "$(tb_switch)" timeout "$E2E_TMO" tcpdump -i "$(tb_port dfm 0)" -w "$CAP" -U --immediate-mode -s 0 \
	'udp dst port 23901' 2>"$E2E_WORK/tcpdump.err" &
_e2e_track $! tcpdump 0
e2e_wait_line 'listening on' "$E2E_WORK/tcpdump.err" || e2e_die "tcpdump did not start"

dfm_sink 0 k0 --credits 1024 --dfm "$DFM_ADDR" --key-file "$KEY"
dfm_builder 0 b0 1 --sources 0-3 --credits 256 --key-file "$KEY" --json
dfm_source 0 s0 --source-ids 0-3 --frag-size 64 --key-file "$KEY"
# The attack once the run is on (the DFM triggering: its members admitted).
(e2e_wait_line triggering "$E2E_WORK/dfm.err"; ip netns exec "$(tb_ns builder 1)" timeout "$E2E_TMO" python3 tests/integration/ctl_attacker.py \
	--target "$DFM_ADDR" --self "$(tb_addr builder 1)" --pcap "$CAP" --n 20 --json "$E2E_WORK/attacker.json" 2>"$E2E_WORK/attacker.err") &
_e2e_track $! attacker 0
dfm_run_to_end dfm --mode push --rate 5000 --events "$N" --wait-builders 1 --wait-sources 1 --key-file "$KEY"

e2e_check auth <<PY
$DFM_PY
n = $N
a = json.load(open(os.path.join(W, "attacker.json")))
eq("attacker sent", (a["forged"], a["plain"], a["replayed"], a["flipped"]), (20, 20, 20, 20))
d = J("dfm")
r = d["ctl"]["refused_by_reason"]
eq("DFM: forged and flipped refused bad_mac", r["bad_mac"], a["forged"] + a["flipped"])
eq("DFM: unsealed refused unauthenticated", r["unauthenticated"], a["plain"])
eq("DFM: captured copies refused as replay or stale (%d, %d)" % (r["replay"], r["stale"]),
   r["replay"] + r["stale"], a["replayed"])
eq("DFM: nothing else refused", d["ctl"]["refused"], sum(a.values()))
eq("DFM: one builder, the member", [b["addr"] for b in d["builders"]], ["198.18.2.1"])
eq("triggered = complete", (d["triggered"], d["complete"]), (n, n))
eq("lost + incomplete", lost(d) + d["incomplete"], 0)
eq("books closed at the farm node: not_delivered", d["not_delivered"], 0)
k = J("k0")
eq("farm node got every event once", (k["events"], k["duplicates"], k["errors"]), (n, 0, 0))
bc = JL("b0", "dfm_ctl")
eq("builder refused nothing", bc["ctl_refused"], 0)
s = J("s0")
eq("source refused nothing", s["ctl_refused"], 0)
PY

# A member with another key: the DFM refuses it (bad_mac) and says what to do.
OTHER=$E2E_WORK/other.key
(umask 077; head -c 32 /dev/urandom >"$OTHER")
# It runs until the DFM has given up on it (2 s), then is stopped.
dfm_builder 0 b1 1 --sources 0-3 --credits 256 --key-file "$OTHER"
DFM_RC=1 dfm_run dfm1 --mode push --events 100 --wait-builders 1 --wait-sources 0 --wait-ms 2000 --key-file "$KEY"
e2e_stop b1
e2e_wait_all
e2e_check wrongkey <<PY
$DFM_PY
d = J("dfm1")
true("DFM refused the builder's messages bad_mac (%d)" % d["ctl"]["refused_by_reason"]["bad_mac"],
     d["ctl"]["refused_by_reason"]["bad_mac"] > 0 and d["triggered"] == 0)
err = open(os.path.join(W, "dfm1.err")).read()
true("the DFM logged the refusal with what to check", "bad_mac" in err and "another key" in err)
PY

# A key file others may read is refused before anything starts.
chmod 644 "$OTHER"
out=$(ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --key-file "$OTHER" --events 1 2>&1)
rc=$?
if ((rc == 2)) && grep -q "mode 0644: group or others may use it, a key is its owner.s alone: chmod 600" <<<"$out"; then
	e2e_ok "key file readable by others: exit 2 ($(head -1 <<<"$out" | cut -c1-100))"
else
	e2e_fail "key file readable by others: exit $rc, want 2 with a message: $out"
fi
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Books no liar can close, open membership (no run configuration). The
# DFM holds three numbers per builder and farm node: its own DONE, what
# the builder says it sent there (FORWARDED) and what the farm node says it
# received (RECEIVED); a discrepancy names the party whose number
# disagrees. Push, 4000 events at 4 kHz, one real builder (b0) with one
# farm node, in three cases:
#  - stray: a stray host claims to be a builder (4096 credits, answers
#    every ASSIGN with DONE) and also reports RECEIVED as a farm node
#    claiming every event it was given: its lie is consistent, which open
#    membership cannot tell. With --require-books the DFM exits 5 and says
#    the books were not closed at the farm nodes (open membership);
#  - over: a host reports RECEIVED as a farm node claiming 2^40 events from
#    b0: exit 5, that host named as over-reporting (b0 says it sent it 0);
#  - under: the farm node b0 sends to does not report; a host on its
#    address reports 1000 of b0's 4000: exit 4, the farm node named with
#    the three numbers (DONE 4000, sent 4000, received 1000), b0 not blamed.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init bl "${1:-build}" --sources 1 --builders 2 --sinks 1 --dfm 1
N=4000
B0=$(tb_addr builder 0)
FORGE=tests/integration/received_forge.py

# forge NAME ROLE IDX CLAIM...: received_forge.py on that host's address, port 23914, until SIGINT.
forge() {
	local name=$1 role=$2 idx=$3 c
	local -a claims=()
	shift 3
	for c in "$@"; do claims+=(--claim "$c"); done
	rm -f "$E2E_WORK/$name.ready"
	ip netns exec "$(tb_ns "$role" "$idx")" timeout "$E2E_TMO" python3 "$FORGE" --dfm "$DFM_ADDR" \
		--bind "$(tb_addr "$role" "$idx")" --port 23914 --duration "$E2E_RUN" --ready "$E2E_WORK/$name.ready" \
		--json "$E2E_WORK/$name.json" "${claims[@]}" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" 0
}

run() {  # CASE RC SINK_REPORTS [dfm options]
	local c=$1 rc=$2 report=()
	shift 2
	[[ $1 == yes ]] && report=(--dfm "$DFM_ADDR")
	shift
	dfm_sink 0 "${c}_sink" "${report[@]}"
	dfm_builder 0 "${c}_b0" 1 --sources 0-7
	dfm_source 0 "${c}_s0" --source-ids 0-7 --frag-size 100
	DFM_RC=$rc dfm_run "${c}_dfm" --mode push --rate 4000 --events $N "$@"
	dfm_stop_all
	e2e_wait_all
}

e2e_log "stray: a stray builder that also reports RECEIVED for its own events; --require-books"
dfm_stray 1 stray_host --credits 4096 --received-port 23914 --ready "$E2E_WORK/stray_host.ready"
e2e_until "$E2E_WAIT" test -e "$E2E_WORK/stray_host.ready" || e2e_die "the stray sent nothing"
run stray 5 yes --wait-builders 2 --require-books

e2e_log "over: a host reports 2^40 events received from b0"
forge over_forger source 0 "$B0=$((1 << 40))"
e2e_until "$E2E_WAIT" test -e "$E2E_WORK/over_forger.ready" || e2e_die "the forger sent nothing"
run over 5 yes

e2e_log "under: the farm node does not report; a host on its address says it got 1000 of b0's events"
forge under_forger sink 0 "$B0=1000"
e2e_until "$E2E_WAIT" test -e "$E2E_WORK/under_forger.ready" || e2e_die "the forger sent nothing"
run under 4 no

e2e_check liars <<PY
$DFM_PY
N = $N
def books(d):
    eq("triggered = complete, none lost, outstanding 0",
       (d["triggered"], d["complete"], lost(d), d["outstanding"], d["accounting_ok"]), (N, N, 0, 0, True))
def err(name):
    return open(os.path.join(W, name + ".err")).read()
def sink_events(name):
    for l in open(os.path.join(W, name + ".json")).read().splitlines():
        if l.startswith('{"events"'):
            return json.loads(l)["events"]

# stray
d = J("stray_dfm"); books(d)
b = {x["addr"]: x for x in d["builders"]}
st = json.load(open(os.path.join(W, "stray_host.json")))
real, stray = b["$B0"], b["$(tb_addr builder 1)"]
true("stray: took most events (%d) and reported RECEIVED (%d)" % (stray["assigned"], st["received_sent"]),
     stray["assigned"] >= N // 2 and st["received_sent"] > 0, st)
fn = d["farm_nodes"]
eq("stray: its lie is consistent (not_delivered 0; 2 farm nodes reporting); the books are not trusted",
   (d["not_delivered"], fn["reporting"], fn["trusted"], fn["over_reporting"]), (0, 2, False, 0))
eq("stray: real builder forwarded = received = its DONEs", (real["forwarded"], real["received"]),
   (real["complete"], real["complete"]))
eq("stray: the stray never said what it sent", (stray["forwarded_reports"], stray["received"]), (0, stray["complete"]))
eq("stray: the real farm node got the real builder's events only", sink_events("stray_sink"), real["complete"])
e = err("stray_dfm")
true("stray: the DFM says the books were not closed (open membership, --require-books)",
     "the books were not closed at the farm nodes: open membership" in e and "(--require-books)" in e, e[-800:])

# over
d = J("over_dfm"); books(d)
fn = d["farm_nodes"]
eq("over: the over-reporting farm node counted, nothing not delivered", (fn["over_reporting"], d["not_delivered"]),
   (1, 0))
b0 = d["builders"][0]
eq("over: b0 says it sent its DONEs (to the real farm node)", (b0["forwarded"], b0["complete"]), (N, N))
eq("over: received from b0 = 2^40 + N", b0["received"], (1 << 40) + N)
e = err("over_dfm")
true("over: names the host as a farm node over-reporting, with its count",
     "farm node $(tb_addr source 0):23914 reports 1099511627776 of them: more than the builder says it sent there" in e
     and "more than the %d it reported DONE" % N in e, e[-1200:])
true("over: the real farm node and b0 are not named",
     "$(tb_addr sink 0):23904 reports %d" % N not in e and "lost at the builder" not in e and "never reached" not in e, e[-1200:])
eq("over: the real farm node got every event", sink_events("over_sink"), N)

# under
d = J("under_dfm"); books(d)
fn = d["farm_nodes"]
b0 = d["builders"][0]
eq("under: b0 DONE, forwarded, received", (b0["complete"], b0["forwarded"], b0["received"]), (N, N, 1000))
eq("under: not_delivered", d["not_delivered"], N - 1000)
eq("under: one farm node named under-reporting, no builder named",
   (fn["under_reporting"], fn["builders_short"], fn["builders_unchecked"]), (1, 0, 0))
e = err("under_dfm")
true("under: the farm node named with the three numbers",
     "farm node(s) at $(tb_addr sink 0): builder $B0:23902" in e
     and "says it sent them %d events (of %d DONE), they report 1000: %d missing at the farm node" % (N, N, N - 1000) in e
     and "farm node $(tb_addr sink 0):23914 reports 1000 of them: fewer than it was sent" in e, e[-1200:])
true("under: the honest builder is not blamed",
     "never reached a farm node" not in e and "lost at the builder" not in e, e[-1200:])
eq("under: the farm node really got every event", sink_events("under_sink"), N)
PY
e2e_finish

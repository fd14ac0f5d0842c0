#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Books no liar can close, with a run configuration (examples/Nx1.ini:
# push, three source processes, one builder, one farm node; 8000 events at
# 5 kHz): only the configured farm node counts, and it must report.
#  - stray: once the DFM triggers, a host on the farm node's address but
#    another port (no member) sends 20 RECEIVED claiming 2^40 events from
#    the builder: all 20 refused not_member, the books close at the real
#    farm node (trusted, received 8000, nothing over-reported), exit 0;
#  - silent: the configured farm node runs on another control port than the
#    file says (its RECEIVED are refused not_member, as a stale clock or a
#    wrong key would have them refused): it never reports, and the DFM
#    exits 5 naming it (farm node 0, its address and port, and what the
#    builder says it sent it) instead of taking DONE as delivered;
#  - stale: the same file with a key, the configured farm node's clock 10 s
#    off (XEVB_TEST_CLOCK_OFFSET_MS=10000): the DFM refuses its RECEIVED as
#    stale, the farm node the builder's and the DFM's (so it sends the
#    builder no STATUS; the events still flow): it never reports, and the
#    DFM exits 5 naming it, never taking DONE as delivered; the refusals
#    named exactly (stale only, nothing dropped after the MAC).
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_init bc "${1:-build}" --sources 3 --builders 1 --sinks 1 --dfm 1
CFG=examples/Nx1.ini
N=8000

run() {  # CASE RC [sink options]
	local c=$1 rc=$2 k
	shift 2
	XEVB_TEST_CLOCK_OFFSET_MS=${SINK_CLOCK_MS:-} rc_sink "$CFG" 0 "${c}_k0" "$@"
	rc_builder "$CFG" 1 0 "${c}_b0"
	for k in 0 1 2; do rc_source "$CFG" "$k" "${c}_s$k"; done
	DFM_RC=$rc dfm_run "${c}_dfm" --config "$CFG" --events $N
}

e2e_log "stray: a host that is no member reports RECEIVED (2^40 from the builder) while the run triggers"
(
	e2e_wait_line triggering "$E2E_WORK/stray_dfm.err" &&
		ip netns exec "$(tb_ns sink 0)" timeout "$E2E_WAIT" python3 tests/integration/received_forge.py \
			--dfm "$DFM_ADDR" --bind "$(tb_addr sink 0)" --port 23914 --claim "$(tb_addr builder 0)=$((1 << 40))" \
			--count 20 --json "$E2E_WORK/stray_forger.json" 2>"$E2E_WORK/stray_forger.err"
	# Sent while the DFM still triggered (else the count below is inconclusive).
	grep -q "trigger stopped" "$E2E_WORK/stray_dfm.err" && echo late >"$E2E_WORK/stray_forger.late"
) &
forger=$!
run stray 0
wait "$forger"
dfm_stop_all
e2e_wait_all

e2e_log "silent: the configured farm node reports from another port than the file's: never heard"
run silent 5 --ctl-port 23914
dfm_stop_all
e2e_wait_all

e2e_log "stale: with a key, the configured farm node's clock 10 s off: its RECEIVED refused stale"
(umask 077; head -c 32 /dev/urandom >"$E2E_WORK/run.key")
sed "/^\[run\]/a key_file = $E2E_WORK/run.key" "$CFG" >"$E2E_WORK/keyed.ini"
chmod 600 "$E2E_WORK/keyed.ini"
CFG=$E2E_WORK/keyed.ini SINK_CLOCK_MS=10000 run stale 5
dfm_stop_all
e2e_wait_all

e2e_check configured <<PY
$DFM_PY
N = $N
def sink(name):
    for l in open(os.path.join(W, name + ".json")).read().splitlines():
        if l.startswith('{"events"'):
            return json.loads(l)
for c in ("stray", "silent"):
    d = dfm_complete(c + "_dfm", N)
    eq(c + ": lost, outstanding", (lost(d), d["outstanding"]), (0, 0))
    eq(c + ": the farm node got every event once", (sink(c + "_k0")["events"], sink(c + "_k0")["duplicates"]), (N, 0))
    eq(c + ": the builder says it sent them all", d["builders"][0]["forwarded"], N)

d = J("stray_dfm")
fg = json.load(open(os.path.join(W, "stray_forger.json")))
eq("stray: the forger sent 20 while the DFM triggered", (fg["sent"], os.path.exists(os.path.join(W, "stray_forger.late"))),
   (20, False))
eq("stray: all 20 refused not_member", d["ctl"]["not_admitted"]["not_member"], 20)
fn = d["farm_nodes"]
eq("stray: books closed at the configured farm node only (expected, reporting, silent, over, trusted)",
   (fn["expected"], fn["reporting"], fn["silent"], fn["over_reporting"], fn["trusted"]), (1, 1, 0, 0, True))
eq("stray: received = N, not_delivered 0", (fn["received"], d["not_delivered"]), (N, 0))

d = J("silent_dfm")
fn = d["farm_nodes"]
eq("silent: expected 1, reporting 0, silent 1, not trusted to close", (fn["expected"], fn["reporting"], fn["silent"]),
   (1, 0, 1))
true("silent: its RECEIVED refused not_member (%d)" % d["ctl"]["not_admitted"]["not_member"],
     d["ctl"]["not_admitted"]["not_member"] > 0)
e = open(os.path.join(W, "silent_dfm.err")).read()
true("silent: the DFM names the farm node and what the builder sent it",
     "farm node 0 ($(tb_addr sink 0):23904) of the run configuration never reported what it received" in e
     and "the builders say they sent it %d events" % N in e, e[-1200:])
true("silent: nothing is taken as delivered", "DONE is taken as delivered" not in e, e[-600:])

def nonzero(by_reason):
    return {k: v for k, v in by_reason.items() if v}
d = J("stale_dfm")
fn, ctl = d["farm_nodes"], d["ctl"]
eq("stale: expected 1, reporting 0, silent 1", (fn["expected"], fn["reporting"], fn["silent"]), (1, 0, 1))
true("stale: the DFM refused the farm node's RECEIVED as stale, nothing else (%s)" % nonzero(ctl["refused_by_reason"]),
     list(nonzero(ctl["refused_by_reason"])) == ["stale"])
eq("stale: nothing not admitted, nothing dropped after the MAC at the DFM",
   (nonzero(ctl["not_admitted"]) == {"membership": "configured"}, nonzero(ctl["dropped"])), (True, {}))
kc = JL("stale_k0", "sink_ctl")
true("stale: the farm node refused the builder's and the DFM's messages as stale, nothing else (%s)"
     % nonzero(kc["ctl_refused_by_reason"]), list(nonzero(kc["ctl_refused_by_reason"])) == ["stale"])
eq("stale: the farm node dropped nothing after the MAC", nonzero(kc["ctl_dropped"]), {})
e = open(os.path.join(W, "stale_dfm.err")).read()
true("stale: the DFM names the farm node, and says its RECEIVED may be refused as stale",
     "farm node 0 ($(tb_addr sink 0):23904) of the run configuration never reported what it received" in e
     and "stale clock" in e, e[-1200:])
true("stale: nothing is taken as delivered", "DONE is taken as delivered" not in e, e[-600:])
true("stale: the farm node says its clock is off, test only",
     "XEVB_TEST_CLOCK_OFFSET_MS=10000" in open(os.path.join(W, "stale_k0.err")).read())
# It never hears a builder's STATUS, so it sends none (the builder refuses nothing): the data flows, the books do not close.
eq("stale: the builder sent every event, the farm node got them, the builder refused nothing",
   (d["builders"][0]["forwarded"], sink("stale_k0")["events"], nonzero(JL("stale_b0", "dfm_ctl")["ctl_refused_by_reason"])),
   (N, N, {}))
PY
e2e_finish

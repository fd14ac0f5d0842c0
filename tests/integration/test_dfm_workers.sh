#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A DFM steering a builder of 2 workers (`xevb build --dfm ... --workers 2`,
# socket mode: worker 0 reads the socket and hands worker 1 the events of
# its id blocks; then the XDP path, a worker on each of 2 queues). Every ASSIGN reaches both builder cores, each worker
# re-asks the missing sources of the events it owns, and both build and
# forward through the one control endpoint. Pull mode with a source that
# drops 5% of its answers on purpose, then push mode. Asserts: every event
# complete at the DFM and at the farm node, once; both workers built
# events and their counts add up; the re-asks recovered every dropped
# answer; the hand-offs close; zero-copy sends (frames held and reaped
# under the lock) keep every byte right.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dw "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1 --queues 2

# dw_case CASE MODE DROP EVENTS [build options]: socket mode unless DW_XDP=1
# (the XDP path, a worker on each of the builder's 2 queues).
dw_case() {
	local case=$1 mode=$2 drop=$3 ev=$4
	shift 4
	e2e_log "$case: $mode mode, 2 workers, owner block 4, $ev events, source 0 drops $drop of its answers $*"
	dfm_sink 0 "$case.k" --credits 64
	if [[ -n ${DW_XDP:-} ]]; then
		e2e_builder 0 "$case.b" --udp --dfm "$DFM_ADDR" --exit-on-eor --duration "$E2E_RUN" \
			--sink "$(tb_addr sink 0):$E2E_PORT" --queues 0-1 --sources 0-5 --credits 32 --workers 2 \
			--tune owner-block=4 --tune reask-ms=40 --tune max-reasks=6 "$@"
	else
		dfm_builder 0 "$case.b" 1 --sources 0-5 --credits 32 --workers 2 --tune owner-block=4 \
			--tune reask-ms=40 --tune max-reasks=6 "$@"
	fi
	dfm_source 0 "$case.s0" --source-ids 0-2 --frag-size 200 --drop-answers "$drop" --seed 7
	dfm_source 1 "$case.s1" --source-ids 3-5 --frag-size 200
	dfm_run_to_end "$case.dfm" --mode "$mode" --rate 3000 --events "$ev" --pack 2 --wait-builders 1 \
		--wait-sources 2
	ARGS="$*" EV=$ev DROP=$drop XDP=${DW_XDP:-} e2e_check "$case" <<PY
$DFM_PY
ev, drop = int(os.environ["EV"]), float(os.environ["DROP"])
d = dfm_complete(CASE + ".dfm", ev, "triggered = complete")
eq("incomplete + lost", d["incomplete"] + lost(d), 0)
b = J(CASE + ".b")
bc = JL(CASE + ".b", "dfm_ctl")
wk = JL(CASE + ".b", "workers")
eq("workers", [w["worker"] for w in wk], [0, 1])
true("both workers built events: %r" % [w["events_complete"] for w in wk], all(w["events_complete"] > 0 for w in wk))
eq("events per worker add up", sum(w["events_complete"] for w in wk), ev)
if os.environ["XDP"]:
    eq("builder path", b["path"], "xdp")
    eq("frames received, by the workers, = received", sum(w["rx_frames"] for w in wk), b["rx_frames"])
    eq("shares handed off = taken", sum(w["handoff_sent"] for w in wk), sum(w["handoff_received"] for w in wk))
else:
    eq("frames received, by worker (worker 0 reads the socket)", wk[1]["rx_frames"], 0)
    true("worker 0 handed worker 1 its shares (%d)" % wk[0]["handoff_sent"], wk[0]["handoff_sent"] > 0)
    eq("shares handed off = taken", wk[0]["handoff_sent"], wk[1]["handoff_received"])
eq("ASSIGNs merged for want of room in a box", wk[1]["assigns_merged"], 0)
# A RETRY that crosses a DONE gets it again (done_resent): taken back.
eq("builder DONE complete (less those sent again for a RETRY), forwarded", (bc["done_complete"] - bc["done_resent"], bc["forwarded"]), (ev, ev))
if drop:
    s0 = J(CASE + ".s0")
    true("source 0 dropped answers on purpose (%d MEPs)" % s0["dropped_answers"], s0["dropped_answers"] > 50)
    true("re-asked (%d events), answered (%d RESEND MEPs)" % (bc["reask_events"], s0["resend_meps"]),
         bc["reask_events"] >= s0["dropped_answers"] * 0.9 and s0["resend_meps"] >= s0["dropped_answers"] * 0.9)
if "zerocopy=1" in os.environ["ARGS"]:
    true("sent by reference (out_bytes_zerocopy %d of %d)" % (b["out_bytes_zerocopy"], b["out_bytes"]),
         0 < b["out_bytes_zerocopy"] <= b["out_bytes"])
k = J(CASE + ".k")
eq("farm node: events, complete, duplicates, errors", (k["events"], k["complete"], k["duplicates"], k["errors"]),
   (ev, ev, 0, 0))
PY
}

dw_case dw_pull pull 0.05 6000
dw_case dw_push push 0 6000
# MSG_ZEROCOPY: frames held by the shared connections' sends, reaped under the lock.
dw_case dw_zc push 0 6000 --tune zerocopy=1
# The XDP path: both queues' workers, the same control endpoint.
DW_XDP=1 dw_case dw_xdp pull 0.05 6000
e2e_finish

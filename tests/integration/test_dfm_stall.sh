#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A silent builder: stalled or gone? The DFM asks its host (a TCP handshake
# on its control port, which the kernel answers without the process), push
# and pull: 3 builders (16 credits each) x 2 source processes x 1 farm node
# reporting to the DFM, 8,000 events at 2 kHz in blocks of 4, --dead-ms 200.
#  - stall: builder 2 is stopped (SIGSTOP) for 600 ms once it has built
#    events, then goes on. Its host answers: the DFM keeps it (a stall, not
#    a death, within --hung-ms 2000), nothing is re-assigned, and the farm
#    node gets every event exactly once. (Before, silence alone decided:
#    it was taken for dead and its events were built twice.)
#  - gone: builder 2's host stops answering (an XDP program drops all it
#    receives) and the process stops: no answer, so it is dead within
#    --dead-ms plus the check's 100 ms, its events go to the others, every
#    event complete, nothing lost (an event it forwarded before its DONE
#    left arrives twice: a duplicate, at most what was re-assigned).
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dz "${1:-build}" --sources 2 --builders 3 --sinks 1 --dfm 1
DROP_OBJ=$(dirname "$X")/bpf/xevb_drop.bpf.o
[[ -f $DROP_OBJ ]] || e2e_fail "no $DROP_OBJ: make all builds it"
BNS=$(tb_ns builder 2)

N=8000
for fault in stall gone; do
	for mode in push pull; do
		c=${fault}_$mode
		dfm_sink 0 "${c}_sink0" --credits 64 --dfm "$DFM_ADDR"
		for k in 0 1; do dfm_builder "$k" "${c}_b$k" 1 --sources 0-3 --credits 16; done
		E2E_BUILD_RC=$([[ $fault == gone ]] && echo 137 || echo 0) dfm_builder 2 "${c}_b2" 1 --sources 0-3 --credits 16
		victim=$E2E_LAST_PID
		dfm_source 0 "${c}_s0" --source-ids 0-1 --frag-size 200
		dfm_source 1 "${c}_s1" --source-ids 2-3 --frag-size 200
		(
			e2e_until "$E2E_WAIT" e2e_bstat 2 'd["events_complete"] > 0' || exit 1
			p=$(e2e_xevb_pid "$victim") || exit 1
			if [[ $fault == stall ]]; then
				kill -STOP "$p"
				sleep 0.6 # 3 x --dead-ms
				kill -CONT "$p"
			else
				ip -n "$BNS" link set dev eth0 xdpgeneric obj "$DROP_OBJ" sec xdp || exit 1
				kill -STOP "$p"
			fi
		) &
		stopper=$!
		dfm_run "${c}_dfm" --mode "$mode" --rate 2000 --events "$N" --pack 4 --dead-ms 200 \
			--wait-builders 3 --wait-sources 2 ${STALL_DFM_ARGS:-}
		wait "$stopper" || e2e_fail "$c: builder 2 was never stopped"
		if [[ $fault == gone ]]; then
			kill -KILL "$(e2e_xevb_pid "$victim")"
			ip -n "$BNS" link set dev eth0 xdpgeneric off
		fi
		dfm_stop_all
		e2e_wait_all
		e2e_check "$c" <<PY
$DFM_PY
f, m, n = "$fault", "$mode", $N
d = J("${c}_dfm")
eq("triggered = complete, nothing lost or outstanding", (d["triggered"], d["complete"] + d["incomplete"], lost(d), d["outstanding"]), (n, n, 0, 0))
v = [x for x in d["builders"] if x["addr"] == "198.18.2.3"][0]
lv = d["liveness"]
print("# %s: liveness %s; victim deaths %d stalls %d dead_after_ms %.1f max_silent_ms %.1f; others' longest silence %s" % (
    f + "_" + m, lv, v["deaths"], v["stalls"], v["dead_after_ms"], v["max_silent_ms"],
    [x["max_silent_ms"] for x in d["builders"] if x is not v]))
true("every builder says it listens", all(x["listens"] for x in d["builders"]))
eq("no other builder taken for dead", [x["addr"] for x in d["builders"] if x["deaths"] and x is not v], [])
sk = J("${c}_sink0")
fn = d["farm_nodes"]
eq("the DFM's books closed at the farm node: nothing DONE and not delivered", fn["not_delivered"], 0)
if f == "stall":
    eq("the stopped builder is not taken for dead", (v["deaths"], d["dead_silent"], d["reassigned"]), (0, 0, 0))
    true("its silence (%.0f ms) was a stall its host answered for (%d)" % (v["max_silent_ms"], v["stalls"]),
         v["max_silent_ms"] > 200 and v["stalls"] >= 1 and lv["stalls"] >= 1 and lv["checks"] >= 1)
    eq("farm node: every event exactly once", (sk["events"], sk["duplicates"]), (n, 0))
    eq("what the farm node reported is what it got", fn["received"], n)
else:
    eq("the gone builder died once, of no answer", (v["deaths"], lv["dead_no_answer"], lv["dead_refused"], lv["dead_hung"]), (1, 1, 0, 0))
    true("found dead before --hung-ms (%.1f ms of silence)" % v["dead_after_ms"], 200 < v["dead_after_ms"] < 2000)
    true("its outstanding events re-assigned (%d, at most its 16 credits)" % d["reassigned"], 0 < d["reassigned"] <= 16)
    dups = sk["duplicates"]
    eq("farm node: every event once", sk["events"] - dups, n)
    true("duplicates (%d) at most the re-assigned events" % dups, dups <= d["reassigned"])
    if m == "push":
        src = [J("${c}_s%d" % i) for i in (0, 1)]
        eq("each source sent its data of every re-assigned event again", [x["assign_again"] for x in src], [d["reassigned"]] * 2)
PY
	done
done
e2e_finish

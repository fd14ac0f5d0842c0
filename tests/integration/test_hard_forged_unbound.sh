#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Forged event data where no binding stops it (a builder started without
# --bind-src, socket mode): only what the DFM assigned, and in pull mode
# what the builder requested, reaches a farm node. A DFM run (6000 events
# at 2000/s, one source process with ids 0-1, one builder, one farm node);
# source host 1 is the forger (tests/integration/forge_data.py, from its
# own address, payload 0xEE: a farm node would count it an error).
# Before the DFM starts it sends MEPs for ids 0-1999 of both ids: the
# builder builds 2000 events nobody assigned. Push: each is held at most
# 250 ms (fragments may beat their ASSIGN), then dropped; the test waits
# until the builder has built them all and then longer than that margin
# (a lower bound on time, whatever the machine's speed). Pull: the first
# ASSIGN drops every one (nothing was requested before it). Either way
# pre_dropped counts the 2000 events and their 4000 fragments, the core
# forgets the window they placed, and the run's own events 0-1999 are
# built from the source's data. Pull (1000/s), once the builder has built
# 1000 of the run's events: 200 ids 2500 ahead of them, and 200 past the
# run's end (never triggered), of both ids: no REQUEST asked for them, so
# each fragment is dropped by the core as unassigned before it can open
# an event (one that did would be dropped whole as unsolicited, and the
# run's own fragments of its id taken for duplicates). The farm node gets
# every triggered event once, complete, with no error; the DFM exits 0.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init fu "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
N=6000

# forge NAME FIRST COUNT: from source host 1's own address, COUNT ids from FIRST of ids 0-1.
forge() {
	ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" python3 tests/integration/forge_data.py \
		"$(tb_mac builder 0)" "$(tb_addr builder 0)" "$(tb_addr source 1)" "$2" "$3" 0,1 >"$E2E_WORK/$1.json" \
		2>"$E2E_WORK/$1.err" || { e2e_fail "$1: forger exit status $?"; return 1; }
}

# pull_during: once the builder has built 1000 of the run's events (1 s
# at 1000/s), 200 ids 2500 past them (requested 2.5 s later, whatever
# the forger's speed within that) and 200 past the run's end.
pull_during() {
	local c
	e2e_until "$E2E_WAIT" e2e_bstat 0 "d['events_complete'] >= 3000" || { echo "FAIL - pull: no event built"; return 1; }
	c=$(tb_exec builder 0 "$X" stats --dev eth0 --json |
		python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["events_complete"] - 2000)')
	forge pull_ahead $((c + 2500)) 200 || return 1
	forge pull_after $((N + 10)) 200
}

for mode in push pull; do
	p=${mode}_
	dfm_sink 0 "${p}k" --credits 64
	dfm_builder 0 "${p}b" 1 --sources 0-1 --credits 64 --timeout-ms 300
	dfm_source 0 "${p}s0" --source-ids 0-1
	forge "${p}pre" 0 2000
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] == 2000' ||
		e2e_fail "$mode: the builder did not build the 2000 forged events before the run"
	# Push holds them 250 ms at most: twice that is past the margin on any machine.
	[[ $mode == push ]] && sleep 0.5
	rate=2000
	if [[ $mode == pull ]]; then
		rate=1000
		(pull_during) &
		atk=$!
	fi
	dfm_run "${p}dfm" --mode "$mode" --rate "$rate" --events "$N" --pack 10 --wait-builders 1 --wait-sources 1
	[[ $mode == pull ]] && { wait "$atk" || e2e_fail "pull: the forger during the run"; }
	dfm_stop_all
	e2e_wait_all
done
export N

e2e_check forged_unbound <<PY
$DFM_PY
N = int(os.environ["N"])
for m in ("push", "pull"):
    p = m + "_"
    b, bc, d, k, pre = J(p + "b"), JL(p + "b", "dfm_ctl"), J(p + "dfm"), J(p + "k"), J(p + "pre")
    print("# %s: pre held %d forwarded %d dropped %d; unsolicited %d %s; core: events_unassigned %d, drops %s" % (
          m, bc["pre_held"], bc["pre_forwarded"], bc["pre_dropped"], bc["unsolicited"], bc["unsolicited_frags"],
          b["events_unassigned"], {n: b[n] for n in b if n.startswith("drop_") and b[n]}))
    eq(m + ": forger before the run: MEPs, fragments", (pre["meps"], pre["frags"]), (400, 4000))
    eq(m + ": builder: dropped before the first ASSIGN: events, fragments",
       (bc["pre_dropped"], bc["pre_dropped_frags"]), (2000, 4000))
    eq(m + ": builder: the counter table's events dropped, unassigned and unsolicited",
       (b["out_dropped_unassigned"], b["out_dropped_unsolicited"]), (2000, 0))
    eq(m + ": builder: forwarded = DONE complete = N", (bc["forwarded"], bc["done_complete"]), (N, N))
    eq(m + ": DFM: triggered = complete", (d["triggered"], d["complete"]), (N, N))
    eq(m + ": DFM: lost + incomplete", lost(d) + d["incomplete"], 0)
    eq(m + ": farm node: events, complete, duplicates, errors (0 forged)",
       (k["events"], k["complete"], k["duplicates"], k["errors"]), (N, N, 0, 0))
a, af, bc, b = J("pull_ahead"), J("pull_after"), JL("pull_b", "dfm_ctl"), J("pull_b")
eq("pull: forger during the run: MEPs, fragments (ahead, past the end)",
   [(x["meps"], x["frags"]) for x in (a, af)], [(40, 400)] * 2)
unsol = sum(bc["unsolicited_frags"].values()) + bc["unsolicited_other_frags"]
eq("pull: its fragments unassigned (core: nobody requested them)", b["drop_unassigned"], a["frags"] + af["frags"])
eq("pull: none reached an event (unsolicited)", (bc["unsolicited"], unsol), (0, 0))
eq("pull: unsolicited fragments all of source process 0's ids", bc["unsolicited_other_frags"], 0)
PY
e2e_finish

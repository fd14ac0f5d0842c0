#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Runs driven by the shipped run configurations alone (examples/Nx1.ini:
# push, 3 source processes x 1 builder x 1 farm node, 20,000 events;
# examples/NxN.ini: pull, 3 x 3 builders x 2 farm nodes, 12,000 events):
# every process starts from the file and its --id. The books are exact:
# every event triggered is built complete once and reaches a farm node
# once, every source process holds and releases every event, the split
# follows the file's credits, and with membership on nobody's control
# messages are refused (every peer is who the file says).
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_init rr "${1:-build}" --sources 3 --builders 3 --sinks 2 --dfm 1

run_case() {  # NAME CFG BUILDERS SINKS
	local name=$1 cfg=$2 nb=$3 nk=$4 k
	for ((k = 0; k < nk; k++)); do rc_sink "$cfg" "$k" "${name}_k$k"; done
	for ((k = 0; k < nb; k++)); do rc_builder "$cfg" $((k + 1)) "$k" "${name}_b$k"; done
	for k in 0 1 2; do rc_source "$cfg" "$k" "${name}_s$k"; done
	rc_dfm "$cfg" "${name}_dfm"
	dfm_stop_all
	e2e_wait_all
}

run_case nx1 examples/Nx1.ini 1 1
run_case nxn examples/NxN.ini 3 2
e2e_check runcfg_run <<PY
$DFM_PY
def SINK(name):
    for l in open(os.path.join(W, name + ".json")).read().splitlines():
        if l.startswith('{"events"'):
            return json.loads(l)
    raise SystemExit("FAIL - %s: %s printed no summary" % (CASE, name))
def admitted_all(what, na):
    eq(what + ": membership configured, nothing refused",
       (na["membership"], sum(v for k, v in na.items() if k != "membership")), ("configured", 0))
for name, n, nb, nk, mode in (("nx1", 20000, 1, 1, "push"), ("nxn", 12000, 3, 2, "pull")):
    d = J(name + "_dfm")
    eq(name + ": DFM mode from the file", d["mode"], mode)
    eq(name + ": triggered = complete (events from the file)", (d["triggered"], d["complete"]), (n, n))
    eq(name + ": lost, incomplete, DONE from nobody", (lost(d), d["incomplete"], d["done_unknown_peer"]), (0, 0, 0))
    eq(name + ": builders known = configured", sorted(b["addr"] for b in d["builders"]),
       ["198.18.2.%d" % (i + 1) for i in range(nb)])
    eq(name + ": builder ids from the file", sorted(b["id"] for b in d["builders"]), list(range(1, nb + 1)))
    admitted_all(name + " DFM", d["ctl"]["not_admitted"])
    sk = [JL("%s_k%d" % (name, i), "sink_ctl") for i in range(nk)]
    ev = [SINK("%s_k%d" % (name, i)) for i in range(nk)]
    eq(name + ": farm nodes received every event once, complete",
       (sum(x["events"] for x in ev), sum(x["complete"] for x in ev)), (n, n))
    eq(name + ": farm-node duplicates and errors", sum(x["duplicates"] + x["errors"] for x in ev), 0)
    for i in range(nk):
        admitted_all("%s farm node %d" % (name, i), sk[i]["ctl_not_admitted"])
    for i in range(nb):
        admitted_all("%s builder %d" % (name, i), JL("%s_b%d" % (name, i), "dfm_ctl")["ctl_not_admitted"])
    for i in range(3):
        s = J("%s_s%d" % (name, i))
        eq("%s source %d cleared every event it held" % (name, i), (s["cleared"], s["held_now"], s["hold_overflow"]),
           (n, 0, 0))
        admitted_all("%s source %d" % (name, i), s["ctl_not_admitted"])
b = {x["addr"]: x["assigned"] for x in J("nxn_dfm")["builders"]}
a1, a3 = b["198.18.2.1"], b["198.18.2.3"]
true("nxn: [builder 3] has credits 64 against 32: about twice the events (%d:%d)" % (a1, a3),
     abs(a3 / max(a1, 1) - 2.0) < 0.2)
PY
e2e_finish

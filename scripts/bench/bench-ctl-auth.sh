#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What authenticated control messages cost (docs/control-protocol.md,
# "Authentication"): the per-message figures of build/bench/ctl_auth_cost,
# and the DFM's assignment rate end to end with and without --key-file,
# back to back in one run (A/B, alternating): one event per ASSIGN (--pack
# 1) so the control plane is the load, as fast as credits allow, builders in
# socket mode without forwarding, one source process.
#
# usage: scripts/bench/bench-ctl-auth.sh [OUT]   env: BENCH_QUICK=1 (1 run
#        of 2 s), BENCH_RUNS (3), CA_SECS (3), CA_BUILDERS (2)
# Writes OUT/bench/ctl_auth.json.
set -uo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start ctl-auth "${1:-}" xevb
COST=$OUT/bench/ctl_auth_cost
[[ -x $COST ]] || bench_make "$COST"
bench_runs_secs 2 3 CA_SECS
NB=${CA_BUILDERS:-2}
TB_PREFIX="xca$$"
bench_testbed
tb_up --sources 1 --builders "$NB" --sinks 0 --dfm 1 || exit 1
(umask 077; head -c 32 /dev/urandom >"$W/run.key")

point() {  # KEYED RUN -> one JSON line on stdout
	local keyed=$1 run=$2
	local -a key=()
	[[ $keyed == 1 ]] && key=(--key-file "$W/run.key")
	DFM_BUILD_ARGS=(--mode socket --udp "${key[@]}") DFM_SOURCE_ARGS=("${key[@]}") DFM_ARGS=("${key[@]}")
	dfm_round "$NB" 1 push 16
	python3 - "$W/dfm.json" "$keyed" "$run" <<'PY'
import json, sys
f, keyed, run = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
try:
    d = json.loads([l for l in open(f) if l.startswith("{")][-1])
except Exception:
    d = {"complete": 0, "elapsed_s": 0, "triggered": 0, "ctl": {"sent": 0, "received": 0, "refused": 0}}
el = d["elapsed_s"] or 1
print(json.dumps({"keyed": keyed, "run": run, "events_per_s": round(d["complete"] / el, 1),
                  "ctl_sent_per_s": round(d["ctl"]["sent"] / el, 1),
                  "ctl_received_per_s": round(d["ctl"]["received"] / el, 1),
                  "refused": d["ctl"]["refused"], "triggered": d["triggered"], "complete": d["complete"],
                  "lost": d.get("lost_total", 0)}))
PY
}

# One source process sends ids 0-3; one event per ASSIGN makes the control
# plane the load: credits enough that builders never hold the DFM back.
DFM_IDS=0-3 DFM_CREDITS=1024
: >"$W/points"
for ((r = 0; r < RUNS; r++)); do
	point 0 "$r" >>"$W/points"
	point 1 "$r" >>"$W/points"
done
"$COST" >"$W/cost.json" || echo '{}' >"$W/cost.json"
python3 - "$W/points" "$W/cost.json" "$OUT/bench/ctl_auth.json" "$NB" <<'PY'
import json, statistics, sys
sys.path.insert(0, "scripts/bench")
import benchlib
pts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cost = json.load(open(sys.argv[2]))
med = lambda k, key: statistics.median([p[key] for p in pts if p["keyed"] == k] or [0])
plain, keyed = med(False, "events_per_s"), med(True, "events_per_s")
summary = {"builders": int(sys.argv[4]), "plain_events_per_s": plain, "keyed_events_per_s": keyed,
           "keyed_over_plain": round(keyed / plain, 3) if plain else None,
           "plain_ctl_msgs_per_s": med(False, "ctl_sent_per_s") + med(False, "ctl_received_per_s"),
           "keyed_ctl_msgs_per_s": med(True, "ctl_sent_per_s") + med(True, "ctl_received_per_s")}
json.dump({"bench": "ctl_auth", "meta": benchlib.meta(), "per_message": cost, "summary": summary,
           "results": pts}, open(sys.argv[3], "w"), indent=1)
print("DFM, push, one event per ASSIGN, %d builders (median of runs):" % summary["builders"])
print("  without a key: %.0f events/s, %.0f control messages/s at the DFM" % (plain, summary["plain_ctl_msgs_per_s"]))
print("  with a key:    %.0f events/s, %.0f control messages/s at the DFM (x%s)" %
      (keyed, summary["keyed_ctl_msgs_per_s"], summary["keyed_over_plain"]))
for k, v in cost.items():
    if isinstance(v, dict):
        print("  %-10s %5d B: plain %6.0f ns, sealed + opened %6.0f ns" % (k, v["bytes"], v["plain_ns"], v["keyed_ns"]))
print("wrote", sys.argv[3])
PY

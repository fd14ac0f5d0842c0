#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Pull mode with more source processes than one SOURCES datagram lists
# (119): 130 `xevb source --dfm` processes (one source id each, each on its
# own control port on one host) x 2 builders x 1 farm node + the DFM. The
# DFM's lists span datagrams (SOURCES to the builders, BUILDERS to the
# sources): both builders learn all 130, every source process is asked for
# every event and answers it, every event is built complete once and
# reaches the farm node, the books balance at the DFM and at the farm node,
# and nothing is refused anywhere.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dms "${1:-build}" --sources 1 --builders 2 --sinks 1 --dfm 1

NSRC=130
N=2000
dfm_sink 0 sink0 --credits 64 --dfm "$DFM_ADDR"
for b in 0 1; do dfm_builder "$b" "b$b" 1 --sources 0-$((NSRC - 1)) --credits 100; done
for ((k = 0; k < NSRC; k++)); do
	dfm_source 0 "s$k" --source-ids "$k" --ctl-port $((24000 + k)) --frag-size 40 --hold 4096
done
dfm_run_to_end dfm --mode pull --rate 1000 --events "$N" --pack 25 --wait-builders 2 --wait-sources "$NSRC" \
	--max-per-address "$NSRC"
e2e_check pull <<PY
$DFM_PY
N, NSRC = $N, $NSRC
d = J("dfm")
eq("triggered = complete", (d["triggered"], d["complete"], d["incomplete"], lost(d)), (N, N, 0, 0))
eq("source processes at the DFM", d["sources"], NSRC)
# A block slower than the first RETRY (10 ms: 130 processes on a loaded host) is asked
# again and its DONE comes twice: counted done_repeated, never twice in the books.
eq("DONE from nobody / foreign", (d["done_unknown"], d["done_foreign"], d["done_unknown_peer"]), (0, 0, 0))
print("# retries %d, DONEs repeated %d" % (d["retries"], d["done_repeated"]))
fn = d["farm_nodes"]
eq("books closed at the farm node", (fn["reporting"], fn["books_closed"], fn["received"], d["not_delivered"]),
   (1, True, N, 0))
bc = [JL("b%d" % i, "dfm_ctl") for i in (0, 1)]
eq("builders' DONE complete = every event, and those a RETRY repeated", sum(x["done_complete"] for x in bc),
   N + d["done_repeated"])
eq("builders forwarded", sum(x["forwarded"] for x in bc), N)
eq("both builders learned every source process (SOURCES in parts)", [x["source_processes"] for x in bc], [NSRC, NSRC])
# A fragment slower than the re-ask (100 ms: 130 processes on a loaded host) is
# asked for again: the source answers it twice, the builder takes it once.
ra = sum(x["reask_events"] for x in bc)
print("# events re-asked: %d" % ra)
eq("ids no source process announced", [x["no_source_for"] for x in bc], [0, 0])
sk = J("sink0")
eq("farm node received every event once", (sk["events"], sk["duplicates"], sk["errors"]), (N, 0, 0))
asked = [J("s%d" % k) for k in range(NSRC)]
eq("every source process was asked for no ASSIGN, nothing it did not hold",
   sorted(set((s["assigns"], s["reask_unheld"]) for s in asked)), [(0, 0)])
true("every source process answered every event, again only what was re-asked (%d events)" % ra,
     all(N <= s["answered_events"] <= N + ra for s in asked), sorted(set(s["answered_events"] for s in asked)))
eq("every source process cleared every event", sorted(set((s["cleared"], s["held_now"], s["hold_overflow"])
   for s in asked)), [(N, 0, 0)])
eq("no REQUEST refused at any source (both builders listed)",
   sum(s["requests_unknown_builder"] + s["builders_not_remembered"] for s in asked), 0)
true("every source knew both builders", all(s["builders_known"] == 2 for s in asked),
     sorted(set(s["builders_known"] for s in asked)))
PY
e2e_finish

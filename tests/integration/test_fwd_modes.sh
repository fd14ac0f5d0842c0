#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Forwarding in plain mode and in DFM credit mode gives the same books for
# the same traffic. For the XDP builder and the socket builder: 2 source
# processes (ids 0-1 and 2-3, fixed fragment sizes 100 and 300 B, packed 4
# events a MEP, 3000 events/s) send 6000 events once straight to a builder
# forwarding round robin to 2 farm nodes, and once under a DFM in push mode
# whose farm nodes grant credits. The builder's events, bytes, fragments
# and drops and the farm nodes' events, bytes and fragments must be equal
# between the two runs (and exact: every event complete, nothing dropped).
#
# Fixed sizes: a plain source draws random sizes from its --seed stream, a
# DFM source from a hash of (event, source id), so MIN-MAX sizes would not
# be the same bytes in the two runs.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init fm "${1:-build}" --sources 2 --builders 1 --sinks 2 --dfm 1

EVENTS=6000
PACK=4
RATE=3000
SINKS=(--sink "$(tb_addr sink 0):$E2E_PORT" --sink "$(tb_addr sink 1):$E2E_PORT")
# Source process i: its ids, fragment size and seed, the same in both runs.
SRC_IDS=(0-1 2-3)
SRC_SIZE=(100 300)

# fwd_plain PATH: sources -> builder (--sink) -> 2 farm nodes, no DFM.
fwd_plain() {
	local path=$1 i k mode=()
	[[ $path == socket ]] && mode=(--mode socket --udp)
	for k in 0 1; do
		e2e_sink "$k" "${path}_plain_k$k" --expect-events $((EVENTS / 2)) --expect-sources 4
	done
	e2e_builder 0 "${path}_plain_b" "${mode[@]}" --sources 0-3 "${SINKS[@]}" --exit-on-eor --duration "$E2E_RUN"
	E2E_DEST=$(tb_addr builder 0)
	for i in 0 1; do
		e2e_source "$i" "${path}_plain_s$i" --udp 23900 --source-ids "${SRC_IDS[$i]}" \
			--frag-size "${SRC_SIZE[$i]}" --seed $((i + 1)) --events "$EVENTS" --pack "$PACK" --rate "$RATE"
	done
	e2e_wait_all
}

# fwd_dfm PATH: the DFM in push mode triggers the same events; farm nodes
# grant credits; sources send where the DFM says.
fwd_dfm() {
	local path=$1 i k
	for k in 0 1; do dfm_sink "$k" "${path}_dfm_k$k" --credits 32 --expect-sources 4; done
	if [[ $path == socket ]]; then
		dfm_builder 0 "${path}_dfm_b" 2 --sources 0-3 --credits 32
	else
		e2e_builder 0 "${path}_dfm_b" --dfm "$DFM_ADDR" --exit-on-eor --duration "$E2E_RUN" --sources 0-3 \
			--credits 32 "${SINKS[@]}"
	fi
	for i in 0 1; do
		dfm_source "$i" "${path}_dfm_s$i" --source-ids "${SRC_IDS[$i]}" --frag-size "${SRC_SIZE[$i]}" \
			--seed $((i + 1))
	done
	dfm_run_to_end "${path}_dfm" --mode push --rate "$RATE" --events "$EVENTS" --pack "$PACK" \
		--wait-builders 1 --wait-sources 2
}

for path in xdp socket; do
	e2e_log "$path builder: plain, then under the DFM (push, farm-node credits)"
	fwd_plain "$path"
	fwd_dfm "$path"
	E2E_EVENTS=$EVENTS e2e_check "$path" <<'PY'
E = int(os.environ["E2E_EVENTS"])
p = CASE
bp, bd = J(p + "_plain_b"), J(p + "_dfm_b")
kp = [J("%s_plain_k%d" % (p, k)) for k in (0, 1)]
kd = [J("%s_dfm_k%d" % (p, k)) for k in (0, 1)]
eq("plain builder path", bp["path"], p)
eq("DFM builder path", bd["path"], p)
# The plain run is exact; the DFM run must then give the same books.
eq("plain: events complete, incomplete", (bp["events_complete"], bp["events_incomplete"]), (E, 0))
eq("plain: fragments in events", bp["frags_in_events"], 4 * E)
eq("plain: farm nodes' events (round robin)", [k["events"] for k in kp], [E // 2, E // 2])
same = ("frags_received", "frags_in_events", "events_opened", "events_complete", "events_incomplete",
        "events_discarded", "events_evicted", "events_flushed_eor", "open_events", "out_events", "out_bytes",
        "out_dropped_no_sink", "out_dropped_error", "out_dropped_backlog", "out_lost_in_flight")
for key in same:
    eq("builder " + key + ": DFM = plain", bd[key], bp[key])
drops = sorted(k for k in bp if k.startswith("drop_"))
true("builder drop counters reported", len(drops) >= 6, drops)
eq("builder drops by reason: DFM = plain = 0", [bd[k] for k in drops], [bp[k] for k in drops])
eq("plain drops by reason all 0", [bp[k] for k in drops], [0] * len(drops))
for key in ("events", "complete", "incomplete", "fragments", "missing_fragments", "bytes"):
    eq("farm nodes' " + key + ": DFM = plain", sum(k[key] for k in kd), sum(k[key] for k in kp))
eq("farm nodes' bytes = builder out_bytes (DFM)", sum(k["bytes"] for k in kd), bd["out_bytes"])
for name, ks in (("plain", kp), ("DFM", kd)):
    eq(name + " farm nodes' errors, duplicates", [(k["errors"], k["duplicates"]) for k in ks], [(0, 0), (0, 0)])
    eq(name + " farm nodes' result", [k["result"] for k in ks], ["ok", "ok"])
d = J(p + "_dfm")
eq("DFM triggered = complete", (d["triggered"], d["complete"]), (E, E))
PY
done
e2e_finish

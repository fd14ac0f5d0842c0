#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# No remote stop (issue 21, item 3). A DFM run (push, 12000 events at
# 3000/s, 2 source processes x 1 builder x 1 farm node, builder with
# --exit-on-eor); once the builder has built events, two forgeries:
#  - a control BYE "from the DFM": from the DFM's own address (its host)
#    but another port, in the DFM's role and with its real epoch (sniffed
#    off the wire), to the builder and to both sources, 3 times each, and
#    an ASSIGN as from a restarted DFM to the builder (before: a core reset
#    and a duplicate event at the farm node); the same BYE to the farm node;
#    and to the DFM, from that port, a builder's DONE and BYE (no builder
#    there) and a farm node's STATUS, 3 times each;
#  - END_OF_RUN in the data: a source process on source host 1 sends event
#    0 (long built) of the run from every source_id 0-3, with the flag.
# Before: the builder and the sources stopped at the BYE; the builder with
# --exit-on-eor stopped at the 4 END_OF_RUN MEPs. Now: DFM messages are
# taken only from the DFM's address and port (the forged ones counted:
# the builder's ctl_unexpected, the sources' and the farm node's
# not_from_dfm; the DFM drops the others by reason: unknown_peer 6,
# wrong_role 3, the DONE's record in done_unknown_peer), and under a DFM
# the builder's END_OF_RUN flags are counted, never acted on: every event of
# the run is complete at the farm node, and each process ends at the real
# DFM's BYE.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init rs "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
N=12000
FORGE=$(realpath tests/integration/ctl_forge.py)

dfm_sink 0 sink0 --credits 64
dfm_builder 0 b0 1 --sources 0-3 --credits 64
dfm_source 0 s0 --source-ids 0-1
dfm_source 1 s1 --source-ids 2-3
(
	e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0'
	ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" python3 "$FORGE" eth0 "${DFM_ADDR%:*}" "${DFM_ADDR#*:}" 23999 \
		"$(tb_addr builder 0):23902" "$(tb_addr source 0):23903" "$(tb_addr source 1):23903" \
		"$(tb_addr sink 0):23904" --assign-to "$(tb_addr builder 0):23902" --to-dfm >"$E2E_WORK/forge.json" 2>"$E2E_WORK/forge.err"
	ip netns exec "$(tb_ns source 1)" timeout "$E2E_TMO" "$X" source --dest "$(tb_addr builder 0)" --udp \
		--source-ids 0-3 --events 1 --pack 1 --json --quiet >"$E2E_WORK/eor.json" 2>"$E2E_WORK/eor.err"
) &
ATTACK=$!
dfm_run dfm --rate 3000 --events "$N" --pack 10 --wait-builders 1 --wait-sources 2
wait "$ATTACK"
dfm_stop_all
e2e_wait_all
export N
e2e_check remote_stop <<PY
$DFM_PY
N = int(os.environ["N"])
f, eor = J("forge"), J("eor")
true("the DFM's epoch learned off the wire", f["epoch"] is not None, f)
eq("forged BYEs sent (4 targets x 3), messages to the DFM (3 x 3)", (f["sent"], f["to_dfm"]), (12, 9))
eq("forged END_OF_RUN MEPs sent (one per source_id)", eor["packets"], 4)
d = dfm_complete("dfm", N, "DFM: triggered = complete")
eq("DFM: lost + incomplete", lost(d) + d["incomplete"], 0)
b = J("b0")
eq("builder: events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (N, 0))
bc = JL("b0", "dfm_ctl")
eq("forged ASSIGNs sent to the builder (as from a restarted DFM)", f["assigns"], 3)
eq("builder: the 3 forged BYEs and 3 ASSIGNs counted unexpected", bc["ctl_unexpected"], 6)
eq("builder: no core reset for a DFM restart", (bc["dfm_restarts"], bc["core_resets"]), (0, 0))
eq("builder: the run not ended by the data", b["run_ended"], False)
eq("builder: flushed by END_OF_RUN", b["events_flushed_eor"], 0)
import re
eor_ids = [int(m) for m in re.findall(r"source +(\d+):.* eor$", open(os.path.join(W, "b0.err")).read(), re.M)]
eq("builder: every source_id's END_OF_RUN counted (summary 'eor')", eor_ids, [0, 1, 2, 3])
for s in ("s0", "s1"):
    eq(s + ": the 3 forged BYEs refused (not_from_dfm)", J(s)["not_from_dfm"], 3)
k = J("sink0")
eq("farm node: every event once", (k["events"], k["complete"], k["duplicates"]), (N, N, 0))
kc = JL("sink0", "sink_ctl")
eq("farm node: the 3 forged BYEs dropped as not_from_dfm, nothing else",
   (kc["ctl_dropped"], {r: n for r, n in kc["ctl_refused_by_reason"].items() if n}, kc["ctl_unexpected"]),
   ({"not_from_dfm": 3, "wrong_role": 0, "builders_full": 0}, {}, 3))
eq("builder: the 3 forged BYEs and 3 ASSIGNs dropped as not_from_dfm", bc["ctl_dropped"]["not_from_dfm"], 6)
eq("DFM: dropped after validation, by reason (DONE and BYE from no builder; a farm node's STATUS)",
   d["ctl"]["dropped"], {"not_from_dfm": 0, "wrong_role": 3, "wrong_epoch": 0, "unknown_peer": 6})
eq("DFM: the forged DONEs' records counted from no builder, nothing refused",
   (d["done_unknown_peer"], d["ctl"]["refused"]), (3, 0))
PY
e2e_finish

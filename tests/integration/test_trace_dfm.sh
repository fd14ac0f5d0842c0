#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/trace/dfm.bt against a live DFM run (push, 2 source processes x 2
# builders with credits 16 and 32 x 1 farm node). The farm node is slow
# (--process-rate 1500 with 8 credits per builder, the DFM triggers at 4000
# events/s): the builders' backlogs fill, they turn Busy and back, and the
# DFM stalls on them. The script is attached before the trigger starts, so
# its totals must equal the DFM's own books: events assigned per builder,
# Busy transitions per builder; each builder's credits as it announced
# them; the per-second lines add up to the totals; Busy periods measured.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init tdf "${1:-build}"
e2e_need bpftrace
tb_up --sources 2 --builders 2 --sinks 1 --dfm 1 || e2e_die "tb_up"
N=5000
OUT=$E2E_WORK/tdf.out

# The DFM first, waiting for its peers, so the script sees every assignment.
ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --json --interval 0 --mode push \
	--rate 4000 --events "$N" --pack 4 --wait-builders 2 --wait-sources 2 --wait-ms $((E2E_WAIT * 1000)) \
	>"$E2E_WORK/tdf.dfm.json" 2>"$E2E_WORK/tdf.dfm.err" &
_e2e_track $! tdf.dfm 0
dfm_tpid=$!
DPID=$(e2e_xevb_pid "$dfm_tpid") || e2e_die "no DFM process under $dfm_tpid"
# bpftrace leaves when the DFM exits (-p); E2E_RUN bounds it anyway.
timeout "$E2E_TMO" bash scripts/trace/run.sh dfm "$DPID" "$E2E_RUN" >"$OUT" 2>"$OUT.err" &
tr_pid=$!
E2E_PIDS+=("$tr_pid"); E2E_NAMES+=("run.sh dfm"); E2E_WANT+=(0)
for ((t = 0; t < E2E_WAIT * 20; t++)); do
	grep -q '^xevb DFM:' "$OUT" 2>/dev/null && break
	kill -0 "$tr_pid" 2>/dev/null || break
	sleep 0.05
done
grep -q '^xevb DFM:' "$OUT" || { sed 's/^/  | /' "$OUT.err" | tail; e2e_die "dfm.bt did not attach in $E2E_WAIT s"; }
e2e_ok "dfm.bt attached to the DFM (pid $DPID) before its peers started"

dfm_sink 0 tdf.k --credits 8 --process-rate 1500
dfm_builder 0 tdf.b0 1 --sources 0-3 --credits 16
dfm_builder 1 tdf.b1 1 --sources 0-3 --credits 32
dfm_source 0 tdf.s0 --source-ids 0-1 --frag-size 100-300
dfm_source 1 tdf.s1 --source-ids 2-3 --frag-size 100-300
# The DFM ends by itself (--events); then the script, the builders and the sources.
e2e_wait_exit "$dfm_tpid" "$E2E_TMO"
e2e_wait_exit "$tr_pid" "$E2E_WAIT"
# The farm node runs until told: once the others have left and it has read all.
dfm_stop_all
e2e_wait_all
grep -E '^[0-9:]+ (busy|not_busy)' "$OUT" | head -6; echo "..."; sed -n '/ second$/,$p' "$OUT" | head -16
echo "..."; sed -n '/^totals:/,$p' "$OUT"
e2e_check trace_dfm <<PY
import re
N = $N
out = open(os.path.join(W, "tdf.out")).read()
d = J("tdf.dfm")
eq("DFM triggered, all complete, books balance", (d["triggered"], d["complete"], d["accounting_ok"]), (N, N, True))
B = d["builders"]
eq("two builders", len(B), 2)
tot = {int(b): int(v) for b, v in re.findall(r"^@assigned_events\[(\d+)\]: (\d+)", out, re.M)}
eq("events assigned per builder (script) = the DFM's JSON", tot, {i: b["assigned"] for i, b in enumerate(B)})
true("both builders assigned events", len(tot) == 2 and min(tot.values()) > 0, tot)
blocks = {int(b): int(v) for b, v in re.findall(r"^@assign_blocks\[(\d+)\]: (\d+)", out, re.M)}
eq("blocks of 4 (--pack 4): events = 4 x blocks", {b: 4 * v for b, v in blocks.items()}, tot)
# Per second: print then clear, so an assignment landing between the two
# is missed there (not in the totals); with a few hundred blocks a second
# that is rare: at most 1% allowed.
secs = re.split(r"^\d\d:\d\d:\d\d (?:second|end)$", out, flags=re.M)[1:]
def per_second(sec):
    # Summed, not a dict: where a header line came out garbled two seconds share a section.
    d = {}
    for b, v in re.findall(r"^@assigned_1s\[(\d+)\]: (\d+)", sec, re.M):
        d[int(b)] = d.get(int(b), 0) + int(v)
    return d
per = [per_second(s) for s in secs]
busy_secs = [p for p in per if p]
true("per-second assignment lines in %d of %d seconds" % (len(busy_secs), len(per)), len(busy_secs) >= 2, per)
for i in (0, 1):
    s = sum(p.get(i, 0) for p in per)
    true("builder %d: per-second lines add up to its total (%d vs %d)" % (i, s, tot.get(i, 0)),
         tot.get(i, 0) * 0.99 <= s <= tot.get(i, 0))
cr = {int(b): int(v) for b, v in re.findall(r"^@credits\[(\d+)\]: (\d+)", out.split("totals:")[-1], re.M)}
eq("credits per builder as announced", cr, {i: b["credits"] for i, b in enumerate(B)})
eq("credits are the builders' --credits", sorted(cr.values()), [16, 32])
st = {int(b): int(v) for b, v in re.findall(r"^@status_msgs\[(\d+)\]: (\d+)", out, re.M)}
true("STATUS seen from both builders", len(st) == 2 and min(st.values()) > 0, st)
bl = [int(b) for b in re.findall(r"^\d\d:\d\d:\d\d busy +builder (\d+)$", out, re.M)]
nb = re.findall(r"^\d\d:\d\d:\d\d not_busy builder (\d+)(?: after (\d+) us)?$", out, re.M)
busy_on = {i: b["busy_on"] for i, b in enumerate(B)}
true("Busy provoked by the slow farm node (DFM busy_on %s)" % busy_on, sum(busy_on.values()) > 0)
eq("Busy lines per builder = the DFM's busy_on", {i: bl.count(i) for i in (0, 1)}, busy_on)
busy = {int(b): int(v) for b, v in re.findall(r"^@busy\[(\d+)\]: (\d+)", out, re.M)}
eq("@busy totals = the DFM's busy_on", {i: busy.get(i, 0) for i in (0, 1)}, busy_on)
true("not-Busy transitions seen, with the Busy period measured", any(a for _, a in nb), nb[:5])
hist = re.search(r"^@busy_us:\s*\n((?:\[.*\n)+)", out, re.M)
# Every bucket: the ranges "[a, b)" and the single values bpftrace prints as "[0]", "[1]".
counts = [int(m) for m in re.findall(r"^\[[^\]\n]*[\)\]]\s+(\d+)", hist.group(1) if hist else "", re.M)]
# Counted anywhere on a line: two printfs racing on two CPUs can share one.
measured = re.findall(r"not_busy builder \d+ after \d+ us", out)
eq("@busy_us histogram counts the measured Busy periods", sum(counts), len(measured))
true("stalls on no credit while Busy (DFM stall_no_credit %d)" % d["stall_no_credit"], d["stall_no_credit"] > 0)
k = J("tdf.k")
eq("farm node received every event once", (k["events"], k["duplicates"]), (N, 0))
PY
e2e_finish

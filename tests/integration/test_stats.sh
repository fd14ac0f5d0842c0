#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# `xevb stats` against a live builder on the testbed: the summary with the
# AF_XDP socket statistics per queue and the XDP program's per-CPU
# counters (read from its map), and `--all --json`: every counter with a
# per-second rate, the rates of a running builder above zero, the per-CPU
# counters adding up to at least the builder's last published total.
set -uo pipefail
TRACE_NO_BPFTRACE=1
. "$(dirname "$0")/lib_trace.sh"
trace_init st "${1:-build}"
trace_live st 8
trace_flowing
tb_exec builder 0 "$X" stats --dev eth0 >"$E2E_WORK/st.summary" 2>&1 || e2e_fail "xevb stats exit status $?"
tb_exec builder 0 timeout "$E2E_TMO" "$X" stats --dev eth0 --all --json --count 3 >"$E2E_WORK/st.all" 2>"$E2E_WORK/st.all.err" ||
	e2e_fail "xevb stats --all exit status $?"
tb_exec builder 0 timeout "$E2E_TMO" "$X" stats --dev eth0 --all --count 2 >"$E2E_WORK/st.alltext" 2>&1 ||
	e2e_fail "xevb stats --all (text) exit status $?"
trace_stop
cat "$E2E_WORK/st.summary"; head -30 "$E2E_WORK/st.alltext"
e2e_check stats <<'PY'
import re
summ = open(os.path.join(W, "st.summary")).read()
true("per-queue XDP_STATISTICS line", re.search(r"queue  0: rx_dropped \d+ rx_invalid_descs \d+ rx_ring_full \d+ fill_ring_empty \d+", summ), summ[-600:])
m = re.search(r"^  to_xsk\s+((?:\s*\d+)+)$", summ, re.M)
true("per-CPU table has a to_xsk row", m, summ[-600:])
if m:
    true("per-CPU to_xsk packets > 0", sum(map(int, m.group(1).split())) > 0, m.group(0))
reps = [json.loads(l) for l in open(os.path.join(W, "st.all")) if l.startswith("{")]
eq("--all --json --count 3: reports", len(reps), 3)
if len(reps) == 3:
    last = reps[-1]
    for k in ("rx_frames", "frags_received", "events_complete", "xdp.to_xsk.packets", "source.0.packets", "source.3.packets"):
        true("%s rate > 0 in a running builder" % k, last.get(k, {}).get("per_s", 0) > 0, last.get(k))
    for k in ("xsk.q0.rx_dropped", "xsk.q0.rx_ring_full", "xsk.q0.fill_ring_empty", "xsk.q0.rx_invalid_descs"):
        true("%s present" % k, k in last, sorted(x for x in last if x.startswith("xsk")))
    cpus = [v["value"] for k, v in last.items() if re.match(r"xdp\.to_xsk\.cpu\d+\.packets$", k)]
    true("per-CPU to_xsk counters present", cpus, sorted(last)[:20])
    true("per-CPU to_xsk sum (read now) >= published total", sum(cpus) >= last["xdp.to_xsk.packets"]["value"],
         (sum(cpus), last["xdp.to_xsk.packets"]["value"]))
    eq("first report has no rates", {v["per_s"] for v in reps[0].values()}, {0.0})
txt = open(os.path.join(W, "st.alltext")).read()
true("text --all shows values with rates", re.search(r"^rx_frames\s+\d+\s+[\d.]+/s$", txt, re.M), txt[:300])
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/trace/shed.bt against a builder offered far more than it can take
# (the live generator unpaced on a direct veth pair, as test_overload_shed):
#    the script saw the controller tick (per-second lines with ticks > 0)
#    and the level go below 100% in some second;
#    every cut line names a cause the builder counts (ring, kernel_drops,
#    backlog), and the cuts it printed are at most the builder's;
#    the builder's cuts by cause add up to its cuts.
set -uo pipefail
. "$(dirname "$0")/lib_trace.sh"
. "$(dirname "$0")/../../scripts/bench/lib_bench.sh"   # direct_link
e2e_init ts "${1:-build}"
command -v bpftrace >/dev/null || e2e_die "bpftrace not installed (bash scripts/install-deps.sh)"
[[ -e /sys/kernel/tracing/events ]] || mount -t tracefs nodev /sys/kernel/tracing || e2e_die "cannot mount tracefs"
tb_up --sources 1 --builders 1 --sinks 1 || e2e_die "tb_up"
SRCNS=$(tb_ns source 0) BNS=$(tb_ns builder 0)
direct_link "$SRCNS" "$BNS" 1500 || e2e_die "direct veth pair"

e2e_sink 0 ts.k --expect-sources 8
ip netns exec "$BNS" timeout "$E2E_TMO" taskset -c 1 "$X" build --dev eth1 --json --sources 0-7 --duration "$E2E_RUN" \
	--sink "$(tb_addr sink 0):$E2E_PORT" >"$E2E_WORK/ts.b.json" 2>"$E2E_WORK/ts.b.err" &
E2E_LAST_PID=$!
_e2e_track $! ts.b 0
e2e_wait_rx ts.b
TRACE_BPID=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "no builder process under $E2E_LAST_PID"
# The generator (3 s of overload) starts once the script is attached
# (bpftrace needs a moment, seconds on a slow host).
generator() {
	ip netns exec "$SRCNS" timeout "$E2E_TMO" taskset -c 0 "$X" source --dest "$(tb_addr builder 0)" --dev eth1 \
		--dst-mac "$DIRECT_DST_MAC" --src-addr "$(tb_addr source 0)" --mode live --source-ids 0-7 \
		--pack 25 --frag-size 32 --duration 3 --no-end-of-run --json --quiet \
		>"$E2E_WORK/ts.s.json" 2>"$E2E_WORK/ts.s.err" &
	_e2e_track $! ts.s 0
}
TRACE_ON_ATTACH=generator trace_attach shed 6 "$E2E_WORK/ts.out"
e2e_wait_exit "$(e2e_pid ts.s)" "$E2E_TMO"
e2e_stop ts.b
e2e_wait_exit "$(e2e_pid ts.b)" "$E2E_WAIT"
e2e_stop_sinks
e2e_wait_all
cp "$E2E_WORK/ts.out" /tmp/ts.out; head -20 "$E2E_WORK/ts.out" | sed "s/^/  | /"
e2e_check shed-trace <<'PY'
import re
out = open(os.path.join(W, "ts.out")).read()
b = J("ts.b")
secs = [(int(t), int(lo), int(hi)) for t, lo, hi in re.findall(r"ticks (\d+)  level (\d+)\.\.(\d+)%", out)]
true("per-second lines with controller ticks", secs and max(t for t, _, _ in secs) > 0, out[:400])
true("the level went below 100% in some second", any(lo < 100 for _, lo, _ in secs), secs)
cuts = re.findall(r"cut to [\d.]+% \((\w+)\)", out)
true("cut lines printed", len(cuts) > 0, out[:600])
true("cut causes are named ones", set(cuts) <= {"ring", "kernel_drops", "backlog"}, set(cuts))
by = b["shed_cuts_by"]
eq("builder: cuts by cause add up to cuts", sum(by.values()), b["shed_cuts"])
le("cuts traced <= builder's cuts", len(cuts), b["shed_cuts"])
for c in set(cuts):
    le("cuts traced for %s <= builder's" % c, cuts.count(c), by[c])
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/trace/xdp-verdicts.bt against a live builder: the per-second
# lines show XDP redirects next to the builder's received frames, and the
# builder's own XDP program (its prog id from `ip link`, given to the
# script as a filter) redirected as many frames as the builder received,
# second by second, give or take what sits in the RX ring.
set -uo pipefail
. "$(dirname "$0")/lib_trace.sh"
trace_init tx "${1:-build}"
trace_live tx 10
trace_flowing
PROG=$(tb_exec builder 0 ip -d link show eth0 | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p' | head -1)
[[ -n $PROG ]] || e2e_fail "no XDP program id on the builder's eth0"
echo "$PROG" >"$E2E_WORK/tx.prog"
trace_attach xdp-verdicts 5 "$E2E_WORK/tx.out" "$PROG"
trace_stop
cat "$E2E_WORK/tx.out"
e2e_check xdp <<'PY'
import re
out = open(os.path.join(W, "tx.out")).read()
prog = int(open(os.path.join(W, "tx.prog")).read())
sec = [tuple(map(int, m)) for m in re.findall(
    r"redirect (\d+)  redirect_err (\d+)  exception (\d+) \| builder: frames (\d+)  frags (\d+)  drops (\d+)  events (\d+)", out)]
true("per-second lines", len(sec) >= 3, out[:300])
true("a second with redirects and builder frames", any(s[0] > 0 and s[3] > 0 and s[6] > 0 for s in sec), sec)
red = {int(p): int(v) for p, i, m, v in re.findall(r"^@redirect\[(\d+), (\d+), (\d+)\]: (\d+)", out, re.M)}
eq("only our XDP program (id %d) in the redirect table" % prog, sorted(red), [prog])
r, f = sum(s[0] for s in sec), sum(s[3] for s in sec)
# Frames redirected in one second may be taken from the RX ring (4096
# entries) in the next: the sums over the same seconds differ by at most that.
true("redirects of our program = builder frames over the same seconds (%d vs %d)" % (r, f),
     r > 0 and abs(r - f) <= 4096, (r, f))
eq("no redirect errors, no exceptions", (sum(s[1] for s in sec), sum(s[2] for s in sec)), (0, 0))
eq("no builder drops", sum(s[5] for s in sec), 0)
PY
e2e_finish

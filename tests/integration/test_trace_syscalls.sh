#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/trace/syscalls.bt against a live builder: per-second syscall and
# event rates with syscalls per event, syscalls by name (the builder
# sleeps in poll and forwards with send), totals that add up.
set -uo pipefail
. "$(dirname "$0")/lib_trace.sh"
trace_init ts "${1:-build}"
trace_live ts 10
trace_through syscalls 5 "$E2E_WORK/ts.out"
head -20 "$E2E_WORK/ts.out"; echo "..."; tail -25 "$E2E_WORK/ts.out"
e2e_check syscalls <<'PY'
import re
out = open(os.path.join(W, "ts.out")).read()
sec = [tuple(map(int, m)) for m in re.findall(
    r"syscalls (\d+)/s  events (\d+)/s  batches (\d+)/s  syscalls/event (\d+)\.(\d+)", out)]
true("per-second lines with syscalls, events and a per-event figure",
     any(s[0] > 0 and s[1] > 0 and s[2] > 0 for s in sec), out[:400])
names = {k: int(v) for k, v in re.findall(r"^@by_name\[tracepoint:syscalls:sys_enter_(\w+)\]: (\d+)", out, re.M)}
true("poll counted (wake-ups)", names.get("poll", 0) > 0, names)
# batched output: non-blocking send of the farm node's buffer (sendto)
true("sendto counted (forwarding)", names.get("sendto", 0) > 0, names)
# Each second: all syscalls >= the named ones counted in the same second.
# Not the last: it may be printed while the probes detach, one by one.
blocks = re.findall(r"syscalls (\d+)/s .*\n((?:@sec\[.*\n)*)", out)
true("per-second blocks", len(blocks) >= 3, out[:300])
for tot, body in blocks[:-1]:
    named = sum(int(v) for v in re.findall(r"\]: (\d+)", body))
    if not true("second with %s syscalls >= %d named ones" % (tot, named), int(tot) >= named, body):
        break
ev = re.search(r"^@events: (\d+)", out, re.M)
true("events counted", ev and int(ev.group(1)) > 0, out[-300:])
PY
e2e_finish

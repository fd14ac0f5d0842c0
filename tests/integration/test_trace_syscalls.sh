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
# The named ones are among all syscalls. Not second by second: a second's
# total is read in the kernel when the interval fires, but its named map is
# printed and cleared by bpftrace's user space when it gets to it, late on
# a loaded host (one "second" then holds more than a second of names, the
# next less); and the first and last seconds are edges (the probes attach
# and detach one after the other: under load, the named ones a fraction of
# a second before the total). Over the seconds between the edges they add
# up, give or take one second's names shifted across each end.
blocks = [(int(t), sum(int(v) for v in re.findall(r"\]: (\d+)", b)))
          for t, b in re.findall(r"syscalls (\d+)/s .*\n((?:@sec\[.*\n)*)", out)]
true("per-second blocks", len(blocks) >= 4, out[:300])
mid = blocks[1:-1]
tot, named = sum(t for t, _ in mid), sum(n for _, n in mid)
slack = max((n for _, n in blocks), default=0)
print("# seconds between the edges: %d syscalls, %d of them named (per second: %s)" % (tot, named, blocks))
true("named syscalls (%d) <= all syscalls (%d) over the seconds between the edges, give or take a second's names (%d)"
     % (named, tot, slack), named <= tot + slack, blocks)
ev = re.search(r"^@events: (\d+)", out, re.M)
true("events counted", ev and int(ev.group(1)) > 0, out[-300:])
PY
e2e_finish

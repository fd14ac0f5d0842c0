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
# a loaded host (one "second" then holds several seconds' names, the next
# fewer). Over the run they add up: every named syscall printed in a
# second is in the total (@all) printed at the end (give or take the
# edges: the probes attach one after the other).
blocks = re.findall(r"syscalls (\d+)/s .*\n((?:@sec\[.*\n)*)", out)
true("per-second blocks", len(blocks) >= 3, out[:300])
named = sum(int(v) for _, body in blocks for v in re.findall(r"\]: (\d+)", body))
worst = max((sum(int(v) for v in re.findall(r"\]: (\d+)", b)) - int(t) for t, b in blocks), default=0)
print("# named syscalls printed per second: %d in all; a second's named ones exceeded its total by %d at most" % (named, worst))
tot = re.search(r"builder syscalls in total, events built in total:\n@all: (\d+)", out)
true("named ones printed each second (%d) <= all syscalls (%s), edges aside" % (named, tot and tot.group(1)),
     tot and named <= int(tot.group(1)) * 1.01 + 50, out[-400:])
ev = re.search(r"^@events: (\d+)", out, re.M)
true("events counted", ev and int(ev.group(1)) > 0, out[-300:])
PY
e2e_finish

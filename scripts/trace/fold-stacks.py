#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Fold the @stacks map printed by cpu-profile.bt into flame-graph input.

Reads bpftrace's map dump (a file, or - for stdin) and writes one line per
distinct stack, root first, with its sample count:

    builder;main;cmd_build;handle_batch;xevb_builder_add_mep 42
    softirq:NET_RX;ret_from_fork;...;veth_poll;...;xsk_rcv 17

A builder sample has its user frames (outermost first), then its kernel
frames if it was in the kernel; a softirq sample has its kernel frames.
Offsets (+0x1c) are dropped so the same function folds into one frame.
"""
import re
import sys

VEC = {1: "HI", 2: "TIMER", 3: "NET_TX", 4: "NET_RX", 5: "BLOCK", 6: "IRQ_POLL",
       7: "TASKLET", 8: "SCHED", 9: "HRTIMER", 10: "RCU"}


def frames(block):
    out = []
    for line in block:
        line = line.strip().rstrip(",").strip()
        if not line:
            continue
        sym = line.split()[0] if " " in line else line
        sym = re.sub(r"\+\d+$", "", sym)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        if sym.startswith("0x") or sym == "[unknown]":
            sym = "[unknown]"
        out.append(sym.replace(";", ":"))
    return list(reversed(out))  # bpftrace prints the leaf first


def parse(text):
    """Yield (who, vec, kframes, uframes, count) for each @stacks entry."""
    pat = re.compile(r"^@stacks\[(\w+), (\d+), (.*?)\]: (\d+)$", re.S | re.M)
    for m in pat.finditer(text):
        who, vec, body, count = m.group(1), int(m.group(2)), m.group(3), int(m.group(4))
        # body: kernel frames, a ", " line, user frames. An empty kernel
        # stack (a sample in user mode) leaves just ", " before the user ones.
        if body.lstrip(" ").startswith(","):
            kpart, upart = [], body.lstrip(" ")[1:].splitlines()
        else:
            parts = re.split(r"^\s*,\s*$", body, maxsplit=1, flags=re.M)
            kpart = parts[0].splitlines()
            upart = parts[1].splitlines() if len(parts) > 1 else []
        yield who, vec, frames(kpart), frames(upart), count


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "-"
    text = sys.stdin.read() if src == "-" else open(src).read()
    folded = {}
    for who, vec, k, u, n in parse(text):
        if who == "softirq":
            key = ["softirq:" + VEC.get(vec, str(vec))] + k
        else:
            key = [who] + u + k
        key = ";".join(key)
        folded[key] = folded.get(key, 0) + n
    if not folded:
        print("fold-stacks: no @stacks entries in the input", file=sys.stderr)
        return 1
    for key, n in sorted(folded.items(), key=lambda kv: -kv[1]):
        print(key, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())

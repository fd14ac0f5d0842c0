#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The layers of user/ (user/LAYERS): each folder may include its own
headers and those of the folders below it, never one above. Prints every
include that breaks the order and fails; --graph prints the folder arrows.
An include is written "folder/name.h" (user/ is on the include path), so
the folder it reaches is read off the line itself."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([A-Za-z0-9_]+\.h)"', re.M)


def read_layers(path):
    """The folders from the bottom up, and the allowed exceptions."""
    order, allowed = [], set()
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("allow "):
            _, src, dst = line.split()
            allowed.add((src, dst))
        else:
            order.append(line.split()[0])
    return order, allowed


def main():
    # --root DIR: another tree's user/ (the planted-violation test's copy)
    user = sys.argv[sys.argv.index("--root") + 1] if "--root" in sys.argv else os.path.join(ROOT, "user")
    order, allowed = read_layers(os.path.join(user, "LAYERS"))
    rank = {name: i for i, name in enumerate(order)}
    bad, arrows = [], {}
    for folder in sorted(os.listdir(user)):
        path = os.path.join(user, folder)
        if not os.path.isdir(path):
            continue
        if folder not in rank:
            bad.append(f"user/{folder}/: not a layer in user/LAYERS")
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            text = open(os.path.join(path, name), errors="replace").read()
            for dst, header in INCLUDE.findall(text):
                where = f"user/{folder}/{name}"
                if dst not in rank:
                    bad.append(f'{where}: includes "{dst}/{header}": no such layer')
                    continue
                if not os.path.exists(os.path.join(user, dst, header)):
                    bad.append(f'{where}: includes "{dst}/{header}": no such header')
                if dst != folder:
                    arrows[(folder, dst)] = arrows.get((folder, dst), 0) + 1
                if rank[dst] > rank[folder] and (f"{folder}/{name}", f"{dst}/{header}") not in allowed:
                    bad.append(f'{where}: includes "{dst}/{header}", a layer above {folder} (user/LAYERS)')
    if "--graph" in sys.argv:
        for (src, dst), n in sorted(arrows.items(), key=lambda a: (rank[a[0][0]], rank[a[0][1]])):
            print(f"{src:5} -> {dst:5} {n}")
    for line in bad:
        print(line, file=sys.stderr)
    if bad:
        print(f"check-layers: {len(bad)} include(s) break the order of user/LAYERS", file=sys.stderr)
        return 1
    print(f"check-layers: {len(order)} layers, {sum(arrows.values())} includes across them, none upward")
    return 0


if __name__ == "__main__":
    sys.exit(main())

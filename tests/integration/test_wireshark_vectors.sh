#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# Every wire-format vector (tests/vectors/index.tsv) through the Wireshark
# dissector (scripts/wireshark/xevb.lua), from a capture file written here
# (no testbed): the valid MEPs and SEGMENT packets decode with the source,
# event ids, lengths, CRCs (and segment offsets and sizes) of index.tsv and
# no expert error; every malformed one is flagged, by our dissector or by
# Wireshark's own IP/UDP checks; IP fragments and other traffic are never
# decoded as a clean MEP.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
cd "$(dirname "$0")/../.."
e2e_need tshark python3
W=$(mktemp -d /tmp/xevb-wsv.XXXXXX)
trap 'rm -rf "$W"' EXIT

python3 - "$W/v.pcap" "$W/names" <<'PY' || { echo "FAIL - cannot write the capture"; exit 1; }
import struct, sys
names = []
with open(sys.argv[1], "wb") as out:
    out.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for line in open("tests/vectors/index.tsv"):
        if line.startswith("#") or not line.strip():
            continue
        name = line.split("\t")[0]
        b = bytes.fromhex("".join(open("tests/vectors/%s.hex" % name).read().split()))
        out.write(struct.pack("<IIII", len(names), 0, len(b), len(b)) + b)
        names.append(name)
open(sys.argv[2], "w").write("\n".join(names) + "\n")
PY

# Each frame judged alone, as index.tsv does: no IP reassembly.
tshark -X lua_script:scripts/wireshark/xevb.lua -o ip.defragment:FALSE -r "$W/v.pcap" -T fields -E separator='|' -E occurrence=a \
	-e frame.number -e frame.protocols -e xevb_mep.source_id -e xevb_mep.frag.event_id \
	-e xevb_mep.frag.length -e xevb_mep.frag.crc32c -e xevb_mep.frag.seg_offset -e xevb_mep.frag.seg_bytes \
	-e _ws.expert.group >"$W/fields" 2>"$W/tshark.err" || { echo "FAIL - tshark: $(head -3 "$W/tshark.err")"; exit 1; }

python3 - "$W/names" "$W/fields" <<'PY'
import sys
names = open(sys.argv[1]).read().split()
rows = {}
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("|")
    rows[int(f[0])] = f
idx = {}
for line in open("tests/vectors/index.tsv"):
    if line.startswith("#") or not line.strip():
        continue
    c = line.rstrip("\n").split("\t")
    idx[c[0]] = c
bad = 0
# PI_MALFORMED (ours and Wireshark's), PI_PROTOCOL (Wireshark's IP checks)
FLAGS = ("117440512", "150994944")
def res(ok, msg):
    global bad
    print(("ok   - " if ok else "FAIL - ") + msg)
    bad += not ok
counts = {}
for i, n in enumerate(names, 1):
    verdict, frags = idx[n][1], idx[n][2]
    f = rows.get(i)
    if f is None:
        res(False, "%s: not in tshark's output" % n)
        continue
    protos, experts = f[1], f[8].split(",") if f[8] else []
    ours = "xevb_mep" in protos
    flagged = any(e in FLAGS for e in experts)
    counts[verdict] = counts.get(verdict, 0) + 1
    if verdict in ("mep", "segment"):
        got = []
        evs, lens, crcs = f[3].split(","), f[4].split(","), f[5].split(",")
        for k in range(len(evs) if ours and f[3] else 0):
            rec = "%08x:%s:%s:%s" % (int(evs[k]), f[2], lens[k], "%08x" % int(crcs[k], 16))
            if verdict == "segment":
                rec += ":%s:%s" % (f[6], f[7])
            got.append(rec)
        res(ours and not experts and ",".join(got) == frags,
            "%s (%s): decoded clean, %d record(s) as index.tsv" % (n, verdict, len(got)) +
            ("" if ",".join(got) == frags else " (got %s, want %s; experts %s)" % (got, frags, experts)))
    elif verdict == "malformed":
        res(flagged, "%s: flagged malformed (%s)" % (n, idx[n][3]))
    else:
        res(not ours or flagged, "%s (%s): not decoded as a clean MEP" % (n, verdict))
print("# vectors by verdict: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))
if bad:
    print("FAIL test_wireshark_vectors: %d failure(s)" % bad)
    sys.exit(1)
print("PASS test_wireshark_vectors (%d vectors)" % len(names))
PY

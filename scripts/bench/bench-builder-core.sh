#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builder core alone, one core: fragments/s, events/s, ns per fragment (timed
# run), and instructions per fragment (callgrind, counting only run_lap, the
# measured loop; Ir / fragments fed). Both for add_mep on pre-parsed MEPs and
# for classify + add_mep. Writes OUT/bench/builder-core.json, prints a table.
# A third row, "l1-drop": the live overload regime (bench_builder_core
# --drop: most MEPs lost before XDP, events time out incomplete, window
# 65536), timed per received frame, and under callgrind with a cache
# simulation (--cache-sim=yes, D1 32 kB; LL once 1 MB like this machine's L2
# and once 32 MB like its L3): instructions and misses per fragment,
# deterministic, unlike times on the shared machine.
#
# usage: bench-builder-core.sh [OUT]
# env:   BENCH_BUILDER_FRAGS (timed, per case and mode; default 50000000)
#        BENCH_BUILDER_CG_FRAGS (under callgrind; default 1000000)
#        BENCH_BUILDER_DROP (% of MEPs lost in the l1-drop row; default 75)
set -euo pipefail
. "$(dirname "$0")/lib_bench.sh"
bench_start builder-core "${1:-}"
BIN=$OUT/bench/bench_builder_core
FRAGS=${BENCH_BUILDER_FRAGS:-50000000}
CG_FRAGS=${BENCH_BUILDER_CG_FRAGS:-1000000}
JSON=$OUT/bench/builder-core.json
DROP=${BENCH_BUILDER_DROP:-75}

bench_make "$BIN"


"$BIN" --frags "$FRAGS" >"$W/timed.jsonl"
"$BIN" --case l1 --drop "$DROP" --frags "$FRAGS" >"$W/drop.jsonl"

have_cg=0
if command -v valgrind >/dev/null; then
	have_cg=1
	for c in l1 hlt; do
		for m in add parse; do
			valgrind --tool=callgrind --toggle-collect=run_lap \
				--callgrind-out-file="$W/cg.$c.$m" \
				"$BIN" --case "$c" --mode "$m" --frags "$CG_FRAGS" \
				>"$W/cg.$c.$m.jsonl" 2>"$W/cg.$c.$m.err" ||
				{ cat "$W/cg.$c.$m.err" >&2; exit 1; }
			sed -n 's/^summary: *//p' "$W/cg.$c.$m" >"$W/cg.$c.$m.ir"
		done
	done
	for m in add parse; do
		for ll in l2:1048576 l3:33554432; do
			valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 \
				--D1=32768,8,64 --LL="${ll#*:},16,64" --toggle-collect=run_lap \
				--callgrind-out-file="$W/cg.drop.$m.${ll%%:*}" \
				"$BIN" --case l1 --mode "$m" --drop "$DROP" --frags "$CG_FRAGS" \
				>"$W/cg.drop.$m.${ll%%:*}.jsonl" 2>"$W/cg.drop.$m.err" ||
				{ cat "$W/cg.drop.$m.err" >&2; exit 1; }
		done
	done
fi

python3 - "$W" "$JSON" "$have_cg" <<'EOF'
import json, sys, os
tmp, out, have_cg = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rows = [json.loads(l) for l in open(os.path.join(tmp, "timed.jsonl")) if l.strip()]
for r in rows:
    c = r["case"]
    for m, key, fed in (("add", "instructions_per_fragment", "fed_fragments"),
                        ("parse", "parse_instructions_per_fragment", "parse_fed_fragments")):
        if not have_cg:
            r[key] = None
            continue
        ir = int(open(os.path.join(tmp, f"cg.{c}.{m}.ir")).read().split()[0])
        cg = json.loads(open(os.path.join(tmp, f"cg.{c}.{m}.jsonl")).read())
        r[key] = round(ir / cg[fed], 2)
    r["parse_only_ns_per_fragment"] = round(r["parse_ns_per_fragment"] - r["ns_per_fragment"], 3)
    if r["instructions_per_fragment"] is not None:
        r["parse_only_instructions_per_fragment"] = round(
            r["parse_instructions_per_fragment"] - r["instructions_per_fragment"], 2)
    r["note"] = ("builder core alone on one core, synthetic MEPs in a ring of frames; "
                 "fragments_per_s/ns/instructions: add_mep on pre-parsed MEPs; "
                 "parse_*: xevb_classify + add_mep")
drop = json.loads(open(os.path.join(tmp, "drop.jsonl")).read())
drop["case"] = "l1-drop"
drop["note"] = (f"live overload regime: {drop['drop_pct']}% of MEPs lost before the builder, "
                "window 65536, 20 ms timeout (simulated clock), events time out incomplete; "
                "ns per received fragment/frame; misses per fragment from callgrind's cache "
                "simulation (D1 32 kB, LL 1 MB = l2, 32 MB = l3)")
for m, pre in (("add", ""), ("parse", "parse_")):
    if not have_cg:
        drop[pre + "instructions_per_fragment"] = None
        continue
    for lvl in ("l2", "l3"):
        f = os.path.join(tmp, f"cg.drop.{m}.{lvl}")
        ev = summ = None
        for line in open(f):
            if line.startswith("events:"):
                ev = line.split()[1:]
            elif line.startswith("summary:"):
                summ = [int(x) for x in line.split()[1:]]
        summ += [0] * (len(ev) - len(summ))
        d = dict(zip(ev, summ))
        fed = json.loads(open(f + ".jsonl").read())[pre + "fed_fragments" if m == "parse" else "fed_fragments"]
        drop[pre + "instructions_per_fragment"] = round(d["Ir"] / fed, 2)
        drop[pre + "d1_misses_per_fragment"] = round((d["D1mr"] + d["D1mw"]) / fed, 3)
        drop[pre + f"{lvl}_misses_per_fragment"] = round((d["DLmr"] + d["DLmw"]) / fed, 3)
rows.append(drop)
json.dump(rows, open(out, "w"), indent=1)
hdr = f'{"case":5} {"Mfrag/s":>9} {"kev/s":>9} {"ns/frag":>8} {"instr/frag":>10} | {"+parse Mfrag/s":>14} {"ns/frag":>8} {"instr/frag":>10}'
print(hdr)
for r in rows:
    ipf = r["instructions_per_fragment"]
    pipf = r["parse_instructions_per_fragment"]
    print(f'{r["case"]:5} {r["fragments_per_s"]/1e6:9.1f} {r["events_per_s"]/1e3:9.1f} '
          f'{r["ns_per_fragment"]:8.2f} {ipf if ipf is not None else "n/a":>10} | '
          f'{r["parse_fragments_per_s"]/1e6:14.1f} {r["parse_ns_per_fragment"]:8.2f} '
          f'{pipf if pipf is not None else "n/a":>10}')
d = drop
print(f'{d["case"]:7} {d["drop_pct"]}% of MEPs lost: {d["ns_per_fragment"]:.2f} ns/frag '
      f'{d["ns_per_frame"]:.0f} ns/frame; +parse {d["parse_ns_per_fragment"]:.2f} ns/frag '
      f'{d["parse_ns_per_frame"]:.0f} ns/frame')
if d.get("l2_misses_per_fragment") is not None:
    for pre, what in (("", "add"), ("parse_", "+parse")):
        print(f'        {what:6} per fragment: {d[pre + "instructions_per_fragment"]} instr, '
              f'{d[pre + "d1_misses_per_fragment"]} D1 misses, '
              f'{d[pre + "l2_misses_per_fragment"]} 1 MB-LL misses, '
              f'{d[pre + "l3_misses_per_fragment"]} 32 MB-LL misses')
print(f"wrote {out}")
EOF

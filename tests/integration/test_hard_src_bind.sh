#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A source_id is bound to its source process's address in the XDP filter
# (issue 21, item 4; --bind-src, which a run configuration gives for every
# source). One XDP builder, sources 0-1 on source host 0 and 2-3 on source
# host 1, both addresses allowed (--allow-src, --xdp-filter) and each bound
# to its ids. While 10000 good events flow, source host 1 (an allowed
# address) also sends MEPs for source_ids 0-1, another process's ids, far
# ahead: 20 MEPs, 100 fragments. Each is dropped in XDP and counted
# src_addr_mismatch; the builder never sees one, every good event is
# complete and nothing is dropped.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init sb "${1:-build}"
tb_up --sources 2 --builders 1 --sinks 1 || e2e_die "tb_up"
E2E_DEST=$(tb_addr builder 0)
S0=$(tb_addr source 0) S1=$(tb_addr source 1)
N=10000

e2e_sink 0 k --expect-events "$N" --expect-sources 4
e2e_builder 0 b --sources 0-3 --allow-src "$S0" --allow-src "$S1" --xdp-filter \
	--bind-src "0-1=$S0" --bind-src "2-3=$S1" --sink "$(tb_addr sink 0):$E2E_PORT" --exit-on-eor --duration 20
e2e_source 0 s0 --source-ids 0-1 --events "$N" --pack 10 --rate 5000
e2e_source 1 s1 --source-ids 2-3 --events "$N" --pack 10 --rate 5000
sleep 0.5
e2e_source 1 atk --source-ids 0-1 --events 50 --pack 5 --first-event 100000 --no-end-of-run
e2e_wait_all
export N
e2e_check src_bind <<'PY'
N = int(os.environ["N"])
b, k, atk = J("b"), J("k"), J("atk")
x = b["xdp"]
print("# xdp src_addr_mismatch %s, unknown_source %s; builder drops %s" % (
    x["src_addr_mismatch"], x["unknown_source"], {n: b[n] for n in b if n.startswith("drop_")}))
eq("attack: MEPs, fragments sent", (atk["packets"], atk["fragments"]), (20, 100))
eq("XDP: src_addr_mismatch packets, frags = the attack's",
   (x["src_addr_mismatch"]["packets"], x["src_addr_mismatch"]["frags"]), (20, 100))
eq("XDP: unknown_source", x["unknown_source"]["packets"], 0)
good = S(["s0", "s1"], "fragments")
eq("builder: fragments received = the good ones only", b["frags_received"], good)
eq("builder: fragments in events = received", b["frags_in_events"], good)
eq("builder: no drop", sum(b[n] for n in b if n.startswith("drop_")), 0)
eq("builder: events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (N, 0))
eq("farm node: every event, complete", (k["events"], k["complete"]), (N, N))
PY
e2e_finish

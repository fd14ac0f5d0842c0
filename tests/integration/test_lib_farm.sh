#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# libxevb against today's tools (issue 35): the farm node of the run is the
# library's example consumer (lib/examples/farm_node.c, linked to
# build/libxevb.so.1), not `xevb sink`. Under a DFM with a key (push,
# 10000 events at 5 kHz, 8 sources of 100 bytes), a socket builder forwards
# to it with its credits (`xevb build --sink`, STATUS from the library),
# and the library reports RECEIVED to the DFM. Exact books: the DFM's books
# close at the farm node (exit 0, not_delivered 0), every event arrives once
# with every CRC right, the builder forwarded every event in credit mode and
# refused no control message, and the run files the consumer wrote (2 of
# 5000 events) each read back closed, 10000 events in all.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init lf "${1:-build}" --sources 1 --builders 1 --sinks 1 --dfm 1
FARM=$(realpath "${1:-build}/lib/examples/xevb-farm-example")
[[ -x $FARM ]] || e2e_die "$FARM not built (make libxevb)"
KEY=$E2E_WORK/run.key
(umask 077; head -c 32 /dev/urandom >"$KEY")
OUTDIR=$E2E_WORK/run
mkdir -p "$OUTDIR"
N=10000

ready=$E2E_WORK/farm.ready
ip netns exec "$(tb_ns sink 0)" timeout 40 "$FARM" --listen "$(tb_addr sink 0):$E2E_PORT" --dfm "$DFM_ADDR" \
	--key-file "$KEY" --credits 64 --hold 16 --events "$N" --duration 30 --output "$OUTDIR" --run 1 \
	--ready-file "$ready" >"$E2E_WORK/farm.json" 2>"$E2E_WORK/farm.err" &
_e2e_track $! farm 0
e2e_wait_ready "$ready" farm "the library's farm node not listening"
dfm_builder 0 b0 1 --sources 0-7 --credits 256 --key-file "$KEY" --json
dfm_source 0 s0 --source-ids 0-7 --frag-size 100 --key-file "$KEY"
dfm_run_to_end dfm --mode push --rate 5000 --events "$N" --wait-builders 1 --wait-sources 1 --key-file "$KEY"

"$FARM" --read "$OUTDIR"/*.xevb >"$E2E_WORK/files.jsonl" 2>"$E2E_WORK/files.err" ||
	e2e_fail "reading the run files back: $(cat "$E2E_WORK/files.err")"

e2e_check lib_farm <<PY
$DFM_PY
n = $N
d = J("dfm")
eq("triggered = complete", (d["triggered"], d["complete"]), (n, n))
eq("lost + incomplete", lost(d) + d["incomplete"], 0)
fn = d["farm_nodes"]
eq("the library reports RECEIVED: farm nodes reporting, books closed", (fn["reporting"], fn["books_closed"]), (1, True))
eq("not_delivered", d["not_delivered"], 0)
eq("DFM refused nothing", d["ctl"]["refused"], 0)
f = J("farm")
eq("farm node: events, complete", (f["events"], f["complete"]), (n, n))
eq("farm node: CRC errors, broken connections", (f["crc_bad"], f["conns_broken"]), (0, 0))
eq("farm node: every event done", f["done"], n)
true("farm node: STATUS to the builder (%d), RECEIVED to the DFM (%d)" % (f["status_sent"], f["received_sent"]),
     f["status_sent"] > 0 and f["received_sent"] > 0, f)
eq("farm node: control messages refused", f["ctl_refused"], 0)
bc = JL("b0", "dfm_ctl")
eq("builder forwarded every event", bc["forwarded"], n)
eq("builder refused nothing", bc["ctl_refused"], 0)
files = [json.loads(l) for l in open(os.path.join(W, "files.jsonl")) if l.startswith("{")]
eq("run files written", (f["files"], len(files)), (2, 2))
eq("run files: each closed cleanly, run 1", [(x["state"], x["run"], x["seq"]) for x in files],
   [("closed", 1, 0), ("closed", 1, 1)])
eq("run files: events, CRC errors", (sum(x["events"] for x in files), sum(x["crc_bad"] for x in files)), (n, 0))
eq("run files: the first continues in the second", [x["continued"] for x in files], [True, False])
PY
e2e_finish

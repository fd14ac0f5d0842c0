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
# 5000 events) each read back closed, 10000 events in all. Then the same
# from a run configuration alone (every process --config, the consumer
# too: its address, port, credits, the DFM, the key and the membership
# from the file): 5000 events, books closed, nothing refused anywhere.
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
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
# ---------------------------------------------------------------------------
e2e_log "run configuration: every process from one file, the library's farm node too"
CFG=$E2E_WORK/run.ini
cat >"$CFG" <<INI
[run]
mode = push
number = 2
events = 5000
rate = 5000
key_file = $KEY

[dfm]
address = $DFM_ADDR

[builder 1]
address = $(tb_addr builder 0)
interface = eth0
receive = socket
udp = true
credits = 256
exit_on_eor = true

[source 0]
address = $(tb_addr source 0)
source_ids = 0-7
udp = true
frag_size = 100

[sink 0]
address = $(tb_addr sink 0)
port = $E2E_PORT
credits = 32
INI
ready=$E2E_WORK/farm2.ready
ip netns exec "$(tb_ns sink 0)" timeout 40 "$FARM" --config "$CFG" --id 0 --events 5000 --duration 30 \
	--ready-file "$ready" >"$E2E_WORK/farm2.json" 2>"$E2E_WORK/farm2.err" &
_e2e_track $! farm2 0
e2e_wait_ready "$ready" farm2 "the library's farm node (--config) not listening"
rc_builder "$CFG" 1 0 b1
rc_source "$CFG" 0 s1
rc_dfm "$CFG" dfm2
dfm_stop_all
e2e_wait_all
e2e_check lib_farm_config <<PY
$DFM_PY
d = J("dfm2")
eq("triggered = complete", (d["triggered"], d["complete"]), (5000, 5000))
eq("books closed at the farm node, not_delivered", (d["farm_nodes"]["books_closed"], d["not_delivered"]), (True, 0))
eq("DFM refused nothing", d["ctl"]["refused"], 0)
f = J("farm2")
eq("farm node: events, CRC errors, control messages refused", (f["events"], f["crc_bad"], f["ctl_refused"]), (5000, 0, 0))
bc = JL("b1", "dfm_ctl")
eq("builder forwarded every event with credits, refused nothing", (bc["forwarded"], bc["ctl_refused"]), (5000, 0))
PY
e2e_finish

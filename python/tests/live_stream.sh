#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A live stream into the Python binding (test_live.py runs this): on the
# namespace testbed, `xevb build` forwards to python/examples/farm_node.py,
# a farm node on xevb.Farm in the sink's namespace, which checks every
# CRC-32C.
#  - plain: 2 source hosts x 4 source ids -> the builder (socket mode, raw
#    IPv4) -> the farm node, which records what it takes to run files
#    rotated every 1000 events. Every event arrives once, complete, with its
#    8 fragments and good CRCs; the builder forwarded them all; the files,
#    read back in another process, hold the same events, each rotated file
#    closed with CONTINUED.
#  - dfm: the same under the data-flow manager (push, 3000 events): the
#    farm node grants credits over the control protocol and reports
#    RECEIVED to the DFM; the DFM's books close (every event triggered is
#    complete and at a farm node, none not delivered), and the farm node
#    heard the builder and sent it STATUS.
#
#   python/tests/live_stream.sh [OUT]    (PYTHON: the interpreter with xevb)
#
# Exit 0 pass, 77 skip (no root), 1 fail. Every wait is bounded (ready
# files 5 s, processes by --duration and timeout(1)), none is a pace.
set -uo pipefail
. "$(dirname "$0")/../../tests/integration/lib_dfm.sh"
PY=${PYTHON:-python3}
[[ $(id -u) -eq 0 ]] || { echo "SKIP live_stream: the testbed needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP live_stream: no ip(8) (iproute2)"; exit 77; }
"$PY" -c 'import xevb' 2>/dev/null || { echo "FAIL - $PY cannot import xevb (PYTHONPATH=build/python)"; exit 1; }

N=3000
PER_FILE=1000
e2e_init py "${1:-build}" --sources 2 --builders 1 --sinks 1 --dfm 1
FARM=$(realpath python/examples/farm_node.py)

# py_farm NAME [farm_node.py options]: the Python farm node on sink 0, port
# $E2E_PORT, in the background; returns once it listens.
py_farm() {
	local name=$1
	shift
	ip netns exec "$(tb_ns sink 0)" timeout 60 "$PY" "$FARM" --listen "$(tb_addr sink 0):$E2E_PORT" \
		--verify-crc --ready-file "$E2E_WORK/$name.ready" "$@" >"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" 0
	e2e_wait_ready "$E2E_WORK/$name.ready" "$name" "the Python farm node is not listening"
}

# The books every case keeps at the farm node (FARM: its name).
FARM_PY='
N = int(os.environ["N"])
f = J(os.environ["FARM"])
eq("farm node: events, complete, incomplete", (f["events"], f["complete"], f["incomplete"]), (N, N, 0))
eq("farm node: distinct ids, first, last, duplicates", (f["distinct_ids"], f["id_min"], f["id_max"], f["duplicates"]),
   (N, 0, N - 1, 0))
eq("farm node: fragments (8 an event), bad CRCs", (f["frags"], f["crc_bad"]), (8 * N, 0))
eq("farm node: every event from sources 0-7", f["source_sets"], {"0,1,2,3,4,5,6,7": N})
eq("farm node: the library'"'"'s books (events, done, held)", (f["farm"]["events"], f["farm"]["done"], f["farm"]["held"]),
   (N, N, 0))
eq("farm node: broken connections, refused control messages", (f["farm"]["conns_broken"], f["farm"]["ctl_refused"]),
   (0, 0))
'

e2e_log "plain: 2 hosts x 4 sources -> builder -> Python farm node recording run files"
REC=$E2E_WORK/rec
mkdir -p "$REC"
py_farm plain --expect "$N" --duration 40 --record "$REC" --run-number 11 --max-events "$PER_FILE"
e2e_builder 0 plain_b --mode socket --sources 0-7 --sink "$(tb_addr sink 0):$E2E_PORT" --timeout-ms 500 \
	--exit-on-eor --duration 30
E2E_DEST=$(tb_addr builder 0)
e2e_source 0 plain_s0 --source-ids 0-3 --events "$N" --frag-size 32 --pack 10 --seed 1
e2e_source 1 plain_s1 --source-ids 4-7 --events "$N" --frag-size 32 --pack 10 --seed 2
e2e_wait_all
N=$N FARM=plain e2e_check plain <<PY
$FARM_PY
b = J("plain_b")
eq("builder: events complete, forwarded", (b["events_complete"], b["out_events"]), (N, N))
eq("run files written", [os.path.basename(p) for p in f["files"]],
   ["farm-run00000011-%04d.xevb" % i for i in range(N // $PER_FILE)])
PY
# The run files, read back with the binding in another process.
if ! "$PY" - "$REC" "$N" <<'PY'; then E2E_FAILS=$((E2E_FAILS + 1)); fi
import sys
import xevb
rec, n = sys.argv[1], int(sys.argv[2])
bad = 0
def check(what, got, want):
    global bad
    ok = got == want
    bad += not ok
    r = repr(got)
    print(("ok   - " if ok else "FAIL - ") + "files: %s = %s%s" % (what, r if len(r) < 120 else r[:100] + "...",
                                                              "" if ok else ", want %r" % (want,)))
paths = xevb.run_files(rec, 11, prefix="farm")
evs = list(xevb.read_run(paths))
check("events in the run files (read_run)", len(evs), n)
check("their ids", sorted(e.event_id for e in evs) == list(range(n)), True)
check("fragments of each", {len(e) for e in evs}, {8})
check("events with a bad payload CRC", [e.event_id for e in evs if e.verify() is not None], [])
states = []
for p in paths:
    with xevb.Reader(p) as r:
        list(r)
        states.append((r.state, r.info()["trailer"]["continued"]))
check("each file's (state, continued)", states, [("closed", i + 1 < len(paths)) for i in range(len(paths))])
sys.exit(1 if bad else 0)
PY

e2e_log "dfm: source -> builder under the DFM (push) -> Python farm node with credits, RECEIVED to the DFM"
py_farm dfm_k --expect "$N" --duration 40 --credits 32 --dfm "$DFM_ADDR"
dfm_builder 0 dfm_b 1 --sources 0-7 --credits 32
dfm_source 0 dfm_s0 --source-ids 0-7 --frag-size 32
dfm_run_to_end dfm --mode push --rate 3000 --events "$N" --wait-builders 1 --wait-sources 1
N=$N FARM=dfm_k e2e_check dfm <<PY
$FARM_PY
$DFM_PY
d = dfm_complete("dfm", N)
eq("DFM: lost, outstanding", (lost(d), d["outstanding"]), (0, 0))
fn = d["farm_nodes"]
eq("DFM: farm nodes reporting, books closed, not delivered", (fn["reporting"], fn["books_closed"], fn["not_delivered"]),
   (1, True, 0))
true("farm node: STATUS sent to the builder", f["farm"]["status_sent"] > 0, f["farm"])
true("farm node: RECEIVED sent to the DFM", f["farm"]["received_sent"] > 0, f["farm"])
(bld,) = f["builders"]
true("farm node: heard the builder's STATUS (its control port and epoch)", bld["ctl_port"] > 0 and bld["epoch"] > 0, bld)
eq("farm node: the builder's events, all done", (bld["events"], bld["done"]), (N, N))
PY
e2e_finish

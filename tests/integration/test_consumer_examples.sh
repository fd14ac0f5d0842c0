#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# The consumer examples README and docs/consumer.md show, each the farm node
# of a keyed run under a DFM (push, 4000 events at 4 kHz, 4 sources): the C
# one (examples/consumer/hlt_farm_node.c, on libxevb.so.1) and the Python
# one (examples/consumer/hlt_farm_node.py, on the python package) when the
# package is built. Exact books at the farm node: the DFM triggered N, all
# complete, none lost, its books closed there (RECEIVED through the
# library, not_delivered 0); the example saw every event once and accepted
# every one (all complete, no empty fragment).
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init cx "${1:-build}" --sources 1 --builders 1 --sinks 1 --dfm 1
OUT=$(realpath "${1:-build}")
KEY=$E2E_WORK/run.key
(umask 077; head -c 32 /dev/urandom >"$KEY")
N=4000
LISTEN=$(tb_addr sink 0):$E2E_PORT

# wait_listen NAME: the example's TCP port is open in the farm node's namespace (bounded).
wait_listen() {
	local t
	for ((t = 0; t < ${E2E_WAIT_TRIES:-600}; t++)); do
		tb_exec sink 0 ss -Hltn "sport = :$E2E_PORT" 2>/dev/null | grep -q LISTEN && return 0
		kill -0 "$E2E_LAST_PID" 2>/dev/null || break
		sleep 0.1
	done
	e2e_show "$1"
	e2e_die "$1: not listening on $LISTEN"
}

# run_example NAME CMD...: the example as the run's farm node, then the run; its books checked.
run_example() {
	local name=$1
	shift
	ip netns exec "$(tb_ns sink 0)" timeout 120 "$@" "$LISTEN" "$DFM_ADDR" "$KEY" "$N" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "$name" 0
	wait_listen "$name"
	dfm_builder 0 "$name.b" 1 --sources 0-3 --credits 256 --key-file "$KEY" --json
	dfm_source 0 "$name.s" --source-ids 0-3 --frag-size 64-200 --key-file "$KEY"
	dfm_run_to_end "$name.dfm" --mode push --rate 4000 --events "$N" --wait-builders 1 --wait-sources 1 \
		--key-file "$KEY"
	e2e_check "$name" <<PY
$DFM_PY
n = $N
d = J("$name.dfm")
eq("triggered = complete", (d["triggered"], d["complete"]), (n, n))
eq("lost + incomplete", lost(d) + d["incomplete"], 0)
eq("books closed at the example farm node", (d["farm_nodes"]["reporting"], d["farm_nodes"]["books_closed"]), (1, True))
eq("not_delivered", d["not_delivered"], 0)
x = J("$name")
eq("the example: events, accepted, rejected", (x["events"], x["accepted"], x["rejected"]), (n, n, 0))
PY
}

run_example c "$OUT/examples/hlt_farm_node"
if PYTHONPATH=$OUT/python python3 -c 'import xevb' 2>/dev/null; then
	run_example py env PYTHONPATH="$OUT/python" python3 "$(realpath examples/consumer/hlt_farm_node.py)"
else
	e2e_log "the Python package is not built in $OUT/python: the Python example is not run"
fi
e2e_finish

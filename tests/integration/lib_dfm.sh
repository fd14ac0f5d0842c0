# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Helpers of the data-flow-manager tests (tests/integration/test_dfm_*.sh),
# on top of lib_e2e.sh: farm nodes with credits, builders and sources under
# the DFM on 198.18.4.1, each process in the background, bounded by its own
# --duration and timeout(1) (E2E_RUN, E2E_TMO: bounds only; each ends at
# the DFM's BYE or by dfm_stop_all), output in $E2E_WORK/NAME.json / NAME.err.
. "$(dirname "${BASH_SOURCE[0]}")/lib_e2e.sh"

DFM_ADDR=198.18.4.1:23901

# dfm_sink IDX NAME [sink options]: a farm node granting credits on 23904.
dfm_sink() {
	local idx=$1 name=$2
	shift 2
	e2e_sink "$idx" "$name" --ctl-port 23904 "$@"
}

# dfm_builder IDX NAME NSINKS [build options]: socket mode, UDP, to every sink.
dfm_builder() {
	local idx=$1 name=$2 nsinks=$3 k
	local -a sinks=()
	shift 3
	for ((k = 0; k < nsinks; k++)); do sinks+=(--sink "$(tb_addr sink "$k"):$E2E_PORT"); done
	e2e_builder "$idx" "$name" --mode socket --udp --dfm "$DFM_ADDR" --exit-on-eor --duration "$E2E_RUN" \
		"${sinks[@]}" "$@"
}

# dfm_source IDX NAME [source options]
dfm_source() {
	local idx=$1 name=$2
	shift 2
	ip netns exec "$(tb_ns source "$idx")" timeout "$E2E_TMO" "$X" source --dfm "$DFM_ADDR" --udp --json --quiet \
		--duration "$E2E_RUN" "$@" >"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" 0
}

# dfm_run NAME [dfm options]: the DFM in the foreground (bounded); its rc
# checked: DFM_RC (default 0; 4: events DONE that no farm node received).
# Its peers get E2E_WAIT to join (--wait-ms, unless given).
dfm_run() {
	local name=$1 rc want=${DFM_RC:-0}
	shift
	ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --listen "$DFM_ADDR" --json --interval 0 \
		--wait-ms $((E2E_WAIT * 1000)) "$@" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err"
	rc=$?
	if ((rc == want)); then e2e_ok "$name: exit status $rc"; else
		e2e_fail "$name: exit status $rc, want $want"; e2e_show "$name"; fi
}

# dfm_run_to_end NAME [dfm options]: dfm_run, then dfm_stop_all and
# e2e_wait_all: every process of the run has ended, each exit status checked.
dfm_run_to_end() {
	dfm_run "$@"
	dfm_stop_all
	e2e_wait_all
}

# dfm_stray IDX NAME [stray_builder.py options]: a host on builder IDX that
# claims to be a builder (tests/integration/stray_builder.py), background,
# bounded by --duration E2E_RUN and timeout E2E_TMO (it stops at
# dfm_stop_all's SIGINT); its counts in NAME.json.
dfm_stray() {
	local idx=$1 name=$2
	shift 2
	ip netns exec "$(tb_ns builder "$idx")" timeout "$E2E_TMO" python3 tests/integration/stray_builder.py \
		--dfm "$DFM_ADDR" --bind "$(tb_addr builder "$idx")" --duration "$E2E_RUN" --json "$E2E_WORK/$name.json" "$@" \
		2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" 0
}

# dfm_stop_all: the DFM has said BYE; stop what has not ended by itself.
# Builders and sources leave at the BYE (after a second, SIGINT); once they
# are gone, each farm node gets SIGINT when it has read all they wrote (no
# connection left in its namespace), however long that takes: E2E_WAIT at
# most for either.
dfm_stop_all() {
	local p t alive
	for ((t = 0; t < E2E_WAIT * 10; t++)); do
		alive=0
		for p in "${E2E_PIDS[@]}"; do
			[[ -z ${E2E_SINK_NS[$p]:-} ]] && kill -0 "$p" 2>/dev/null && alive=1
		done
		((alive)) || break
		if ((t == 10)); then
			for p in "${E2E_PIDS[@]}"; do [[ -z ${E2E_SINK_NS[$p]:-} ]] && kill -INT "$p" 2>/dev/null; done
		fi
		sleep 0.1
	done
	e2e_stop_sinks
}

# The python prelude gains JL(name, key): the JSON line of NAME that has KEY;
# lost(d): the DFM's lost events in its books, every reason, less those
# built after all (no_data_recovered); dfm_complete(name, n, what):
# asserts the DFM NAME triggered N events and all N were built complete,
# returns its summary.
DFM_PY='
def JL(name, key):
    with open(os.path.join(W, name + ".json")) as f:
        for l in f.read().splitlines():
            if l.startswith("{") and ("\"%s\"" % key) in l[:40]:
                return json.loads(l)[key]
    raise SystemExit("FAIL - %s: %s printed no %s line" % (CASE, name, key))
def lost(d):
    return sum(d["lost"].values()) - d.get("no_data_recovered", 0)
def dfm_complete(name, n, what="triggered = complete"):
    d = J(name)
    eq(what, (d["triggered"], d["complete"]), (n, n))
    return d
'

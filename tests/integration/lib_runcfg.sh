# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Helpers of the run-configuration tests (tests/integration/test_runcfg_*.sh),
# on top of lib_dfm.sh: every process starts from a configuration file and
# its --id; the only other options are the tests' own (JSON summary, quiet,
# a ready file, a bound on the run time).
. "$(dirname "${BASH_SOURCE[0]}")/lib_dfm.sh"

# rc_sink CFG ID NAME [options]: farm node ID of CFG in sink host ID's namespace.
rc_sink() {
	local cfg=$1 id=$2 name=$3
	shift 3
	local ready="$E2E_WORK/$name.ready"
	ip netns exec "$(tb_ns sink "$id")" timeout "$E2E_TMO" "$X" sink --config "$cfg" --id "$id" --ready-file "$ready" \
		--json --stats-interval 0 --duration "$E2E_RUN" "$@" >"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" 0
	E2E_SINK_NS[$!]=$(tb_ns sink "$id")
	e2e_wait_ready "$ready" "$name" "farm node not listening"
}

# rc_builder CFG ID HOST NAME [options]: [builder ID] of CFG on builder host HOST; returns once it receives.
rc_builder() {
	local cfg=$1 id=$2 host=$3 name=$4
	shift 4
	ip netns exec "$(tb_ns builder "$host")" timeout "$E2E_TMO" "$X" build --config "$cfg" --id "$id" --json --quiet \
		--duration "$E2E_RUN" "$@" >"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "$name" 0
	e2e_wait_rx "$name"
}

# rc_source CFG ID NAME [options]: [source ID] of CFG on source host ID.
rc_source() {
	local cfg=$1 id=$2 name=$3
	shift 3
	ip netns exec "$(tb_ns source "$id")" timeout "$E2E_TMO" "$X" source --config "$cfg" --id "$id" --json --quiet \
		--duration "$E2E_RUN" "$@" >"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" 0
}

# rc_dfm CFG NAME [options]: the DFM of CFG in the foreground (bounded); its exit status checked.
rc_dfm() {
	local cfg=$1 name=$2 rc
	shift 2
	ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --config "$cfg" --json --interval 0 "$@" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err"
	rc=$?
	if ((rc == 0)); then e2e_ok "$name: exit status 0 (accounting ok)"; else
		e2e_fail "$name: exit status $rc"; e2e_show "$name"; fi
}

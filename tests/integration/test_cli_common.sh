#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# The command line: (1) the run commands share their common flags (one
# entry each in user/base/cli.c: same name, argument and help in every
# --help); (2) `xevb build --dev nosuchdev --sink ...` fails on the
# interface before it connects to any farm node (the farm node sees no
# connection); (3) `xevb sink --quiet` prints no statistics line even when
# --interval asks for one.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init cl "${1:-build}"

# (1) one help line per shared flag, the same in every command that has it
for flag in json quiet verbose duration interval metrics; do
	lines=$(for c in build dfm sink source; do "$X" "$c" --help | grep -E -- "^ *(-., )?--$flag( |$)" | sed 's/^ *//'; done | sort -u)
	n=$(grep -c . <<<"$lines")
	if ((n == 1)); then e2e_ok "--$flag: one help line across the commands that take it"; else
		e2e_fail "--$flag: $n different help lines:"; echo "$lines" | sed 's/^/  | /'; fi
done
missing=0
for c in build dfm sink source; do
	help=$("$X" "$c" --help)
	for flag in json quiet verbose duration; do
		grep -E -- "^ *(-., )?--$flag( |$)" <<<"$help" >/dev/null || { e2e_fail "xevb $c has no --$flag"; missing=1; }
	done
done
((missing)) || e2e_ok "build, dfm, sink and source take --json --quiet --verbose --duration"

tb_up --builders 1 --sinks 1 || e2e_die "tb_up"
SINK="$(tb_addr sink 0):$E2E_PORT"

# (2) + (3): a quiet farm node asked for a line a second, and a builder with a typo in --dev
e2e_sink 0 sink0 --interval 1 --quiet --duration 3
ip netns exec "$(tb_ns builder 0)" timeout "$E2E_TMO" "$X" build --dev nosuchdev --mode socket --udp --sources 0-1 \
	--sink "$SINK" --json >"$E2E_WORK/b0.json" 2>"$E2E_WORK/b0.err"
rc=$?
if ((rc == 1)); then e2e_ok "build --dev nosuchdev: exit status 1"; else
	e2e_fail "build --dev nosuchdev: exit status $rc, want 1"; e2e_show b0; fi
if grep -q "no interface 'nosuchdev'" "$E2E_WORK/b0.err"; then e2e_ok "the error names the interface"; else
	e2e_fail "the error does not name the interface"; e2e_show b0; fi
e2e_wait_all
e2e_check cli <<'PY'
sk = J("sink0")
eq("the farm node saw no connection from the builder", sk["connections"], 0)
err = open(W + "/sink0.err").read()
eq("sink --quiet: no statistics line in 3 s", [l for l in err.splitlines() if " ev/s " in l], [])
PY
e2e_finish

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

# (4) the command line as operators know it: --version, help CMD, usage errors exit 2 with the reason
[ "$("$X" --version)" = "$("$X" version)" ] && [ "$("$X" -V)" = "$("$X" version)" ] &&
	e2e_ok "xevb --version and -V print what xevb version prints" || e2e_fail "xevb --version/-V differ from xevb version"
[ "$("$X" help build)" = "$("$X" build --help)" ] && "$X" help | grep '^Usage: xevb COMMAND' >/dev/null &&
	e2e_ok "xevb help build is xevb build --help, xevb help the command list" || e2e_fail "xevb help [CMD]"
usage_err() { # want-text args...: exit 2 and the reason on stderr
	local want=$1 err rc
	shift
	err=$("$X" "$@" 2>&1 >/dev/null)
	rc=$?
	if ((rc == 2)) && grep -qF -- "$want" <<<"$err"; then e2e_ok "xevb $*: exit 2, '$want'"; else
		e2e_fail "xevb $*: exit $rc, want 2 and '$want'; said: $err"; fi
}
usage_err "range 7-0 runs backwards: give LOW-HIGH" build --dev lo --sources 7-0
usage_err "ids go from 0 to 4095" build --dev lo --sources 0-70000
usage_err "--metrics: '99999' is not a number in 1..65535" build --dev lo --sources 0-3 --metrics 99999
usage_err "unknown command 'nope'" help nope
usage_err "unknown command 'nope'" nope

# (5) the bash completion, generated from the option tables: valid bash, completes commands, options, enum values
comp=$E2E_WORK/xevb.bash
"$X" help-completion >"$comp" && bash -n "$comp" && e2e_ok "xevb help-completion: valid bash" ||
	e2e_fail "xevb help-completion: not valid bash"
complete_words() { # the completions of the words given, the last one being completed
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _xevb; echo "${COMPREPLY[*]}"' _ "$comp" xevb "$@"
}
# before|current word|want: the words before the cursor, the one being completed, its completions
for c in "|bu|build" "help|s|stats source shape sink" "build|--sou|--sources" "build --mode||xdp socket" \
	"build --timeout-policy|e|emit" "sink|--js|--json" "build --dev||"; do
	IFS='|' read -r before cur want <<<"$c"
	# shellcheck disable=SC2086 # the words before split on purpose
	got=$(complete_words $before "$cur")
	if [ "$got" = "$want" ]; then e2e_ok "completion of 'xevb $before $cur': '$want'"; else
		e2e_fail "completion of 'xevb $before $cur': '$got', want '$want'"; fi
done

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

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# Run configuration errors: every command refuses a wrong file before it
# does anything, with exit status 2 and one message that names the file,
# the line and the key and says what is expected; --id must name a
# configured process; and explicit options come after the file's (a bad
# explicit value is the option's error; a good one overrides the file).
# No testbed: nothing gets as far as sending a control message.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init re "${1:-build}"
trap 'rm -rf "$E2E_WORK"' EXIT
F=$E2E_WORK/run.ini

# expect NAME WANT_RC PATTERN CMD...: CMD exits WANT_RC and its stderr matches PATTERN (grep -E).
expect() {
	local name=$1 want=$2 pat=$3 rc
	shift 3
	timeout "$E2E_TMO" "$X" "$@" >"$E2E_WORK/out" 2>"$E2E_WORK/err"
	rc=$?
	if ((rc != want)); then
		e2e_fail "$name: exit status $rc, want $want"
		sed 's/^/  | /' "$E2E_WORK/err" | head -5
	elif ! grep -qE -- "$pat" "$E2E_WORK/err"; then
		e2e_fail "$name: message does not match /$pat/:"
		sed 's/^/  | /' "$E2E_WORK/err" | head -5
	else
		e2e_ok "$name: exit status $rc: $(grep -E -- "$pat" "$E2E_WORK/err" | head -1 | cut -c1-160)"
	fi
}

# bad NAME CMD PATTERN < file: the file refused by CMD (with --id 1 where it needs one).
bad() {
	local name=$1 cmd=$2 pat=$3
	cat >"$F"
	case $cmd in
	dfm) expect "$name ($cmd)" 2 "error: $F:$pat" dfm --config "$F" ;;
	*) expect "$name ($cmd)" 2 "error: $F:$pat" "$cmd" --config "$F" --id 1 ;;
	esac
}

good_head='[dfm]
address = 198.18.4.1:23901
[builder 1]
address = 198.18.2.1'

bad "not a number" build '5: \[builder 1\] credits: .lots. is not a whole number in 1\.\.1048576' <<INI
$good_head
credits = lots
INI
bad "unknown key" dfm '5: \[builder 1\] crdits: unknown key \(known in \[builder\]: address, ctl_port' <<INI
$good_head
crdits = 64
INI
bad "bad word" source '4: \[run\] mode: .both. is not one of push\|pull' <<INI
[dfm]
address = 198.18.4.1:23901
[run]
mode = both
[builder 1]
address = 198.18.2.1
INI
bad "DFM address without port" sink '2: \[dfm\] address: .198\.18\.4\.1. is not ADDR:PORT' <<INI
[dfm]
address = 198.18.4.1
INI
bad "key given twice" dfm '6: \[builder 1\] credits: given twice \(first on line 5\)' <<INI
$good_head
credits = 8
credits = 9
INI
bad "two processes on one endpoint" dfm '6: \[builder 2\] ctl_port: 198\.18\.2\.1:23902 is also the control endpoint of \[builder 1\] \(line 3\)' <<INI
$good_head
[builder 2]
address = 198.18.2.1
INI
bad "overlapping source ids" dfm '10: \[source 1\] source_ids: 4-9 overlaps 0-7 of \[source 0\]' <<INI
$good_head
[source 0]
address = 198.18.1.1
source_ids = 0-7
[source 1]
address = 198.18.1.2
source_ids = 4-9
INI
bad "missing address" build '3: \[builder 1\] address: missing' <<INI
[dfm]
address = 198.18.4.1:23901
[builder 1]
interface = eth0
INI
bad "not INI" dfm '5: not an INI line' <<INI
$good_head
this is not ini
INI

expect "no such file" 2 "error: /nonexistent/run.ini: cannot open" dfm --config /nonexistent/run.ini
expect "--config without --id" 2 "which process is this\? give --id N, the N of its \[builder N\] section" \
	build --config examples/Nx1.ini
expect "abbreviated --config is not silently ignored" 2 "write --config FILE in full" \
	sink --conf examples/Nx1.ini --id 0
expect "--id not configured" 2 "examples/Nx1.ini: no \[source 9\] section" source --config examples/Nx1.ini --id 9
# Explicit options come after the file's: a bad one is that option's error...
expect "explicit option parsed after the file" 2 "--mode: push or pull, not 'sideways'" \
	dfm --config examples/Nx1.ini --mode sideways
# ...and a good one wins: the farm node tries to listen where the flag says, not where the file does.
expect "explicit option overrides the file" 1 "198\.19\.255\.254:5000" \
	sink --config examples/Nx1.ini --id 0 --listen 198.19.255.254:5000 --duration 1
if ((E2E_FAILS)); then
	echo "FAIL $(basename "$0" .sh): $E2E_FAILS failure(s)"
	exit 1
fi
echo "PASS $(basename "$0" .sh)"

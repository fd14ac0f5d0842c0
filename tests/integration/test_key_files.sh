#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# Key files and run configurations checked as a security tool checks them
# (docs/hardening.md "Key and configuration files"). Every command that
# takes them, xevb dfm, build, source and sink, and the library's farm node
# (xevb-farm-example), refuses each weak spot, given as --key-file, as
# --config, or as the key_file of a configuration: exit status 2 and a
# message that names the file, says what is wrong and what to do, at once.
# Each command is bounded by timeout 10 and must not reach it (a FIFO or
# /dev/zero used to hang the read). Then the good files pass, and a
# configuration without key_file gets a warning from every process, one
# with a key from none. Everything runs in a namespace of its own that has
# the configuration's addresses on its loopback (no testbed, no traffic).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init kf "${1:-build}"
FARM=$(realpath "${1:-build}/lib/examples/xevb-farm-example")
[[ -x $FARM ]] || e2e_die "$FARM not built (make -j2 all)"
NS=$TB_PREFIX-kf
W=$E2E_WORK
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$E2E_WORK"' EXIT
ip netns add "$NS" || e2e_die "ip netns add $NS"
ip -n "$NS" link set lo up || e2e_die "lo up in $NS"
for a in 198.18.4.1 198.18.2.1 198.18.1.1 198.18.3.1; do
	ip -n "$NS" addr add "$a/32" dev lo || e2e_die "address $a in $NS"
done

# run NAME WANT_RC PATTERN CMD...: CMD in the namespace, bounded: it ends
# by itself, with WANT_RC, and its stderr matches PATTERN (grep -E).
run() {
	local name=$1 want=$2 pat=$3 rc
	shift 3
	ip netns exec "$NS" timeout 10 "$@" >"$W/out" 2>"$W/err"
	rc=$?
	if ((rc == 124)); then
		e2e_fail "$name: still running after 10 s (it hangs on the file)"
	elif ((rc != want)); then
		e2e_fail "$name: exit status $rc, want $want"
		sed 's/^/  | /' "$W/err" | head -5
	elif ! grep -qE -- "$pat" "$W/err"; then
		e2e_fail "$name: message does not match /$pat/:"
		sed 's/^/  | /' "$W/err" | head -5
	else
		e2e_ok "$name: exit $rc: $(grep -E -- "$pat" "$W/err" | head -1 | cut -c1-150)"
	fi
}

# every_key CASE FILE PATTERN: each command refuses FILE as its --key-file.
every_key() {
	local c=$1 f=$2 pat=$3
	run "$c (dfm --key-file)" 2 "error: key file $f: $pat" "$X" dfm --key-file "$f"
	run "$c (build --key-file)" 2 "error: key file $f: $pat" "$X" build --key-file "$f"
	run "$c (source --key-file)" 2 "error: key file $f: $pat" "$X" source --key-file "$f"
	run "$c (sink --key-file)" 2 "error: key file $f: $pat" "$X" sink --key-file "$f"
	run "$c (library farm node key_file)" 2 "^farm-example: key file $f: $pat" \
		"$FARM" --listen 198.18.3.1:5000 --key-file "$f"
}

# every_config CASE FILE PATTERN: each command refuses FILE as its --config
# (PATTERN follows the file's name: ": what" or ":LINE: [section]: what").
every_config() {
	local c=$1 f=$2 pat=$3
	run "$c (dfm --config)" 2 "error: $f$pat" "$X" dfm --config "$f"
	run "$c (build --config)" 2 "error: $f$pat" "$X" build --config "$f" --id 1
	run "$c (source --config)" 2 "error: $f$pat" "$X" source --config "$f" --id 1
	run "$c (sink --config)" 2 "error: $f$pat" "$X" sink --config "$f" --id 1
	run "$c (library farm node run_config)" 2 "^farm-example: (run configuration )?$f$pat" \
		"$FARM" --config "$f" --id 1
}

GOOD_KEY=$W/good.key
(umask 077; head -c 32 /dev/urandom >"$GOOD_KEY")
HOWTO='make one: \(umask 077; head -c 32 /dev/urandom > '

# ---- key files ----
k=$W/zero.key
(umask 077; head -c 32 /dev/zero >"$k")
every_key "all-zero key" "$k" "all 32 bytes are 0x00; a key is 32 random bytes, or 64 hex digits .*$HOWTO"
k=$W/short.key
(umask 077; head -c 16 /dev/urandom >"$k")
every_key "short key" "$k" "16 bytes; a key is 32 random bytes.*$HOWTO"
k=$W/hex32.key
(umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$k"; echo >>"$k")
every_key "32 hex digits and a newline (ambiguous)" "$k" "32 hex digits; a key is 32 random bytes.*$HOWTO"
ln -s "$GOOD_KEY" "$W/link.key"
every_key "symlinked key" "$W/link.key" "is a symbolic link \(to $GOOD_KEY\): refused"
cp -p "$GOOD_KEY" "$W/foreign.key" && chown 65534:65534 "$W/foreign.key"
every_key "key owned by another user" "$W/foreign.key" \
	"owned by uid 65534, neither by this user \(uid 0\) nor by root.*chmod 600"
cp -p "$GOOD_KEY" "$W/group.key" && chmod 640 "$W/group.key"
every_key "group-readable key" "$W/group.key" "mode 0640: group or others may use it.*: chmod 600 $W/group.key"
mkfifo -m 600 "$W/fifo.key"
every_key "FIFO as key" "$W/fifo.key" "is a FIFO, not a regular file: refused"
every_key "/dev/zero as key" /dev/zero "is a character device, not a regular file: refused"
mkdir -m 700 "$W/dir.key"
every_key "directory as key" "$W/dir.key" "is a directory, not a regular file: refused"

# ---- run configurations ----
cfg() {  # cfg FILE [KEY_FILE]: a good configuration, with that key (or none)
	{
		[[ -n ${2:-} ]] && printf '[run]\nkey_file = %s\n' "$2"
		cat <<INI
[dfm]
address = 198.18.4.1:23901
[builder]
interface = lo
receive = socket
udp = true
[builder 1]
address = 198.18.2.1
[source 1]
address = 198.18.1.1
source_ids = 0-3
[sink 1]
address = 198.18.3.1
INI
	} >"$1"
	chmod 644 "$1"
}
GOOD=$W/good.ini
cfg "$GOOD" "$GOOD_KEY"
ln -s "$GOOD" "$W/link.ini"
every_config "symlinked configuration" "$W/link.ini" ": is a symbolic link \(to $GOOD\): refused"
cp -p "$GOOD" "$W/foreign.ini" && chown 65534:65534 "$W/foreign.ini"
every_config "configuration owned by another user" "$W/foreign.ini" \
	": owned by uid 65534, neither by this user \(uid 0\) nor by root.*chmod go-w"
cp -p "$GOOD" "$W/group.ini" && chmod 664 "$W/group.ini"
every_config "group-writable configuration" "$W/group.ini" \
	": mode 0664: group or others may change it: chmod go-w $W/group.ini"
mkfifo -m 644 "$W/fifo.ini"
every_config "FIFO as configuration" "$W/fifo.ini" ": is a FIFO, not a regular file: refused"
every_config "/dev/zero as configuration" /dev/zero ": is a character device, not a regular file: refused"
mkdir -m 755 "$W/dir.ini"
every_config "directory as configuration" "$W/dir.ini" ": is a directory, not a regular file: refused"
cfg "$W/dup.ini"
printf '[sink 2]\naddress = 198.18.3.2\n[builder 1]\ncredits = 8\n' >>"$W/dup.ini"
every_config "a second [builder 1]" "$W/dup.ini" ":16: \[builder 1\]: section given twice \(first on line 7\)"
cfg "$W/dup2.ini"
printf '[sink 1]\n' >>"$W/dup2.ini"
every_config "[sink 1] twice" "$W/dup2.ini" ":14: \[sink 1\]: section given twice \(first on line 12\)"
cfg "$W/nul.ini"
printf 'credits = 8\0\n' >>"$W/nul.ini"
every_config "a NUL byte" "$W/nul.ini" ":14: a NUL byte"
cfg "$W/big.ini"
head -c 4300000 /dev/zero | tr '\0' '\n' >>"$W/big.ini"
every_config "a configuration over 4 MiB" "$W/big.ini" \
	": [0-9]+ bytes: larger than a run configuration can be \(4194304 bytes at most\)"
# A configuration's key_file is checked as --key-file is.
cfg "$W/zerokey.ini" "$W/zero.key"
for c in "dfm" "build --id 1" "source --id 1" "sink --id 1"; do
	# shellcheck disable=SC2086 # the command and its --id
	run "all-zero key from the configuration ($c)" 2 "error: key file $W/zero.key: all 32 bytes are 0x00" \
		"$X" $c --config "$W/zerokey.ini"
done
run "all-zero key from the configuration (library farm node)" 2 \
	"^farm-example: key file $W/zero.key: all 32 bytes are 0x00" "$FARM" --config "$W/zerokey.ini" --id 1

# ---- good files pass; without a key every process warns, with one none ----
NOKEY=$W/nokey.ini
cfg "$NOKEY"
WARN='control port [0-9]+: no key, control messages are not authenticated'
# about NAME CFG WANT ERRFILE: the process took the files, and warned that
# there is no key (WANT warns) or said nothing of it (quiet).
about() {
	local name="$(basename "$2"): $1" want=$3 err=$4
	local refused="error: (key file|$2)|^farm-example: (key file|run configuration)"
	if grep -qE "$refused" "$err"; then
		e2e_fail "$name refused a file: $(grep -E "$refused" "$err" | head -1)"
	elif [[ $want == warns ]] && ! grep -qE "$WARN" "$err"; then
		e2e_fail "$name did not warn that there is no key"
	elif [[ $want == quiet ]] && grep -qE "$WARN" "$err"; then
		e2e_fail "$name warned of no key with key_file given"
	elif [[ $want == warns ]]; then
		e2e_ok "$name warns: $(grep -oE "$WARN" "$err" | head -1)"
	else
		e2e_ok "$name says nothing of a key"
	fi
}

# each CFG WANT: every process of the file starts from it, bounded in time.
# The library's farm node runs in the background while the builder runs,
# which then connects at once (it waits 5 s for a farm node that is not
# there), and is stopped after it.
each() {
	local cfg=$1 want=$2 pid t rc
	rm -f "$W/farm.ready"
	ip netns exec "$NS" timeout 20 "$FARM" --config "$cfg" --id 1 --duration 15 --ready-file "$W/farm.ready" \
		>"$W/farm.out" 2>"$W/farm.err" &
	pid=$!
	for ((t = 0; t < 100; t++)); do [[ -s $W/farm.ready ]] && break; sleep 0.1; done
	[[ -s $W/farm.ready ]] || e2e_fail "$(basename "$cfg"): the library's farm node not listening after 10 s"
	run "$(basename "$cfg"): build starts" 0 "." "$X" build --config "$cfg" --id 1 --duration 1
	about build "$cfg" "$want" "$W/err"
	kill -TERM "$pid" # timeout passes it on: the farm node stops as on Ctrl-C, exit 0
	wait "$pid"
	rc=$?
	if ((rc == 0)); then e2e_ok "$(basename "$cfg"): library farm node: exit 0"; else
		e2e_fail "$(basename "$cfg"): library farm node: exit $rc, want 0"; sed 's/^/  | /' "$W/farm.err" | head -5; fi
	about "library farm node" "$cfg" "$want" "$W/farm.err"
	run "$(basename "$cfg"): dfm starts (no peer comes: exit 1)" 1 "." "$X" dfm --config "$cfg" --events 1 --wait-ms 100
	about dfm "$cfg" "$want" "$W/err"
	run "$(basename "$cfg"): source starts" 0 "." "$X" source --config "$cfg" --id 1 --duration 1
	about source "$cfg" "$want" "$W/err"
	run "$(basename "$cfg"): sink starts" 0 "." "$X" sink --config "$cfg" --id 1 --duration 1
	about sink "$cfg" "$want" "$W/err"
}
each "$GOOD" quiet
each "$NOKEY" warns

if ((E2E_FAILS)); then
	echo "FAIL $(basename "$0" .sh): $E2E_FAILS failure(s)"
	exit 1
fi
echo "PASS $(basename "$0" .sh)"

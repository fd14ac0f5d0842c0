#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# xevb sink end to end, over loopback TCP (127.0.0.1, port chosen by the
# kernel) and from files: good streams from several connections, each kind
# of corruption, garbage, an unmet expectation, SIGTERM. Every sink run is
# bounded by --duration and by timeout(1); the trap kills what we started.
# Waits are on conditions (a log line, the connections read to the end),
# SINK_WAIT seconds at most: never how long the sink should take.
set -uo pipefail
OUT=${1:-build}
X=$(realpath "$OUT/xevb")
T=$(mktemp -d /tmp/xevb$$sink.XXXX)
SINK_PID=
SINK_WAIT=${SINK_WAIT:-60}

cleanup() {
	[[ -n $SINK_PID ]] && kill "$SINK_PID" 2>/dev/null && wait "$SINK_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

fails=0
ok()   { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }

# jget FILE KEY: a number from the one-line JSON summary.
jget() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1"; }

# check FILE KEY VALUE
check() {
	local v
	v=$(jget "$1" "$2")
	if [[ $v == "$3" ]]; then ok "$2 = $3"; else fail "$2 = '$v', want $3 ($1: $(cat "$1"))"; fi
}

# start_sink NAME [sink options]: background sink on 127.0.0.1, port in $ADDR.
start_sink() {
	local name=$1; shift
	rm -f "$T/ready"
	timeout $((SINK_WAIT + 60)) "$X" sink --listen 127.0.0.1:0 --ready-file "$T/ready" --json \
		--stats-interval 1 "$@" >"$T/$name.json" 2>"$T/$name.err" &
	SINK_PID=$!
	for _ in $(seq $((SINK_WAIT * 20))); do
		[[ -s $T/ready ]] && break
		sleep 0.05
	done
	if [[ ! -s $T/ready ]]; then
		fail "$name: sink not ready"; cat "$T/$name.err"; return 1
	fi
	ADDR=$(cat "$T/ready")
}

# wait_sink NAME WANT_RC
wait_sink() {
	local rc
	wait "$SINK_PID"; rc=$?
	SINK_PID=
SINK_WAIT=${SINK_WAIT:-60}
	if [[ $rc == "$2" ]]; then ok "$1: sink exit status $rc"
	else fail "$1: sink exit status $rc, want $2"; cat "$T/$1.err"; fi
}

feed() { "$X" sink --selftest-send "$@" 2>>"$T/feed.err"; }

# wait_dropped NAME N: until the sink has logged N dropped connections
# (SINK_WAIT at most), so that what is sent next cannot overtake the bad stream.
wait_dropped() {
	for _ in $(seq $((SINK_WAIT * 20))); do
		(($(grep -c 'connection closed after' "$T/$1.err") >= $2)) && return 0
		sleep 0.05
	done
	fail "$1: no dropped connection logged"
}

echo "# two builders at once, complete and incomplete events"
start_sink two --expect-events 3000 --expect-sources 8 --duration "$SINK_WAIT" || exit 1
feed "$ADDR" 1500 --sources 8 --incomplete-every 10 --first-event 0 &
f1=$!
feed "$ADDR" 1500 --sources 8 --incomplete-every 10 --first-event 100000 --max-len 1500 &
f2=$!
wait $f1 || fail "feeder 1"
wait $f2 || fail "feeder 2"
wait_sink two 0
check "$T/two.json" events 3000
check "$T/two.json" complete 2700
check "$T/two.json" incomplete 300
# Incomplete events miss 2 of 8 sources: 2700*8 + 300*6 fragments.
check "$T/two.json" fragments 23400
check "$T/two.json" missing_fragments 600
check "$T/two.json" connections 2
check "$T/two.json" errors 0
grep -q '"result":"ok"' "$T/two.json" && ok "result ok" || fail "result not ok"

echo "# --run-end streams: the sink ends once every builder closed its stream in order"
start_sink ends --run-end streams --duration "$SINK_WAIT" || exit 1
feed "$ADDR" 300 --sources 4 || fail "feeder"
wait_sink ends 0
check "$T/ends.json" events 300
grep -q '"signal":0,"run_end":"streams","result":"ok"' "$T/ends.json" &&
	ok "ended by itself at the end of the stream" || fail "not ended by the stream's end: $(cat "$T/ends.json")"
# A stream cut inside an event is no end: the builder comes back, and only
# its next stream, closed in order, ends the run (exit 1: the cut is an error).
start_sink cut --run-end streams --duration "$SINK_WAIT" || exit 1
feed "$ADDR" 50 --sources 3 --corrupt truncate --corrupt-at 25
wait_dropped cut 1
feed "$ADDR" 40 --sources 3 --first-event 1000 || fail "feeder"
wait_sink cut 1
check "$T/cut.json" events 65
check "$T/cut.json" truncated_stream 1
grep -q '"signal":0,"run_end":"streams"' "$T/cut.json" && ok "cut stream: ended at the second stream's end" ||
	fail "cut stream: $(cat "$T/cut.json")"
# Without a DFM a farm node runs until told by default: a closed stream
# does not end it (a builder may be restarted); the next stream is taken.
start_sink stays --expect-events 200 --duration "$SINK_WAIT" || exit 1
feed "$ADDR" 100 --sources 4 || fail "feeder"
feed "$ADDR" 100 --sources 4 --first-event 1000 || fail "feeder 2"
wait_sink stays 0
check "$T/stays.json" events 200
check "$T/stays.json" connections 2
grep -q '"run_end":""' "$T/stays.json" && ok "default: runs on after a stream's end" ||
	fail "default: $(cat "$T/stays.json")"

echo "# a corrupt stream costs its connection, not the sink"
start_sink magic --expect-events 200 --duration "$SINK_WAIT" || exit 1
feed "$ADDR" 200 --corrupt magic --corrupt-at 100
wait_dropped magic 1
feed "$ADDR" 100 --first-event 5000
wait_sink magic 1
check "$T/magic.json" events 200
check "$T/magic.json" bad_magic 1
check "$T/magic.json" connections_dropped 1
check "$T/magic.json" errors 1
grep -q 'bad_magic' "$T/magic.err" && ok "error reported" || fail "error not on stderr"

echo "# CRC (a payload byte, a CRC byte), content, record field, truncation, duplicate over TCP"
# The bad event counts towards 50 when its structure is sound; otherwise the
# stream ends after 25 good events and one more comes on a new connection.
for kind in crc:crc_mismatch:50 crc-field:crc_mismatch:50 content:content_mismatch:50 \
	    reserved:record_reserved_nonzero:26 \
	    truncate:truncated_stream:26; do
	IFS=: read -r k key n <<<"$kind"
	start_sink "c_$k" --duration "$SINK_WAIT" --expect-events "$n" || exit 1
	feed "$ADDR" 50 --sources 3 --corrupt "$k" --corrupt-at 25
	if ((n == 26)); then
		wait_dropped "c_$k" 1
		feed "$ADDR" 1 --sources 3 --first-event 1000
	fi
	wait_sink "c_$k" 1
	check "$T/c_$k.json" "$key" 1
	check "$T/c_$k.json" events "$n"
	check "$T/c_$k.json" errors 1
done
start_sink dup --duration "$SINK_WAIT" --expect-events 150 || exit 1
feed "$ADDR" 100 --first-event 0
feed "$ADDR" 50 --first-event 60
wait_sink dup 1
check "$T/dup.json" duplicate_event 40
check "$T/dup.json" duplicates 40

echo "# garbage and absurd lengths from raw sockets"
start_sink junk --duration "$SINK_WAIT" --expect-events 10 || exit 1
port=${ADDR##*:}
head -c 4000 /dev/urandom 2>/dev/null >"/dev/tcp/127.0.0.1/$port" || true
wait_dropped junk 1
# EVNT v1, total_length 0x7fffffff: refused before any allocation.
printf 'EVNT\001\000\000\001\000\000\000\001\000\000\000\001\177\377\377\377' \
	>"/dev/tcp/127.0.0.1/$port" || true
wait_dropped junk 2
feed "$ADDR" 10
wait_sink junk 1
check "$T/junk.json" events 10
check "$T/junk.json" too_big 1
check "$T/junk.json" connections 3
check "$T/junk.json" connections_dropped 2
# Random bytes start with "EVNT" with probability 2^-32.
check "$T/junk.json" bad_magic 1

echo "# --expect-events not reached within --duration"
start_sink short --expect-events 100 --duration 2 || exit 1
feed "$ADDR" 50
wait_sink short 1
check "$T/short.json" events 50
check "$T/short.json" errors 0
grep -q 'ev/s.*complete 50 incomplete 0 errors 0' "$T/short.err" && ok "statistics lines" ||
	fail "no statistics line: $(cat "$T/short.err")"

echo "# SIGTERM ends the run with a summary"
start_sink term --duration "$SINK_WAIT" || exit 1
feed "$ADDR" 10
# The sink has read the feeder's stream to its end: no connection left to
# its port (none established, closing or waiting to be accepted).
port=${ADDR##*:}
for _ in $(seq $((SINK_WAIT * 20))); do
	[[ -z $(ss -Htn state established state close-wait state syn-recv "( sport = :$port )") ]] && break
	sleep 0.05
done
kill -TERM "$SINK_PID"
wait_sink term 0
check "$T/term.json" events 10
check "$T/term.json" signal 15

echo "# an address the farm node's library does not take is refused, saying why"
timeout 10 "$X" sink --listen '[::1]:0' --json >/dev/null 2>"$T/v6.err"
rc=$?; [[ $rc == 2 ]] && grep -q 'IPv4 only' "$T/v6.err" && ok "--listen on IPv6: exit 2, said why" ||
	fail "--listen on IPv6: exit $rc: $(cat "$T/v6.err")"

echo "# --input FILE"
feed - 500 --sources 16 --incomplete-every 5 --max-len 3000 >"$T/good.evt"
timeout $((SINK_WAIT + 60)) "$X" sink --input "$T/good.evt" --json --expect-sources 16 >"$T/file.json" 2>"$T/file.err"
rc=$?; [[ $rc == 0 ]] && ok "file: exit 0" || { fail "file: exit $rc"; cat "$T/file.err"; }
check "$T/file.json" events 500
check "$T/file.json" incomplete 100
check "$T/file.json" bytes "$(stat -c %s "$T/good.evt")"
timeout $((SINK_WAIT + 60)) "$X" sink --input - --json <"$T/good.evt" >"$T/stdin.json" 2>/dev/null
check "$T/stdin.json" events 500
# A pipe cannot be mapped: the reader gets it through an anonymous file.
cat "$T/good.evt" | timeout 30 "$X" sink --input - --json >"$T/pipe.json" 2>/dev/null
check "$T/pipe.json" events 500
check "$T/pipe.json" errors 0
# An empty stream: no event, nothing wrong.
: >"$T/empty.evt"
timeout 30 "$X" sink --input "$T/empty.evt" --json >"$T/empty.json" 2>/dev/null
rc=$?; [[ $rc == 0 ]] && ok "empty file: exit 0" || fail "empty file: exit $rc"
check "$T/empty.json" events 0
feed - 40 --corrupt truncate --corrupt-at 39 >"$T/trunc.evt"
timeout $((SINK_WAIT + 60)) "$X" sink --input "$T/trunc.evt" --json >"$T/trunc.json" 2>/dev/null
rc=$?; [[ $rc == 1 ]] && ok "truncated file: exit 1" || fail "truncated file: exit $rc"
check "$T/trunc.json" events 39
check "$T/trunc.json" truncated_stream 1
# Content pattern wrong but CRC right: only the content check sees it.
feed - 40 --corrupt content >"$T/content.evt"
timeout $((SINK_WAIT + 60)) "$X" sink --input "$T/content.evt" --json --no-content-check >"$T/nocc.json" 2>/dev/null
rc=$?; [[ $rc == 0 ]] && ok "--no-content-check: exit 0" || fail "--no-content-check: exit $rc"
timeout $((SINK_WAIT + 60)) "$X" sink --input "$T/content.evt" --json >"$T/cc.json" 2>/dev/null
check "$T/cc.json" content_mismatch 1

echo
if ((fails)); then echo "test_sink: $fails failed"; exit 1; fi
echo "test_sink: all passed"

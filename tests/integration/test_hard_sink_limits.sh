#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# A hostile host against a farm node (issue 21, item 5). One `xevb sink`
# (a farm node on libxevb) with its defaults (--max-event-size 64 MiB,
# --max-buffer-total 256 MiB); source host 0 attacks it with sink_attack.py
# in three phases:
#   A  8 connections, each announcing a 64 MiB event and sending all of it
#      but the last byte: the buffers stop at the total. Each connection
#      holds a first buffer of 1 MiB (from its first read); one grows in
#      place to 64 MiB only if the total stays within the cap, else, as no
#      event is held, it is closed (buffer_limit, its 1 MiB freed): waiting
#      for room that only the attacker could free would last for ever. In
#      any order that leaves 4 held and 4 refused (the 8th fits once 4
#      first buffers are gone); the test computes it from that rule. VmRSS
#      grows by at most the cap (+ 2 MiB of other per-connection state)
#      while they are held
#   B  200 connections, each announcing 64 MiB and sending 1 KiB of it:
#      by the same rule 4 grow, 196 refused; VmSize stays under the cap
#   C  the sink's descriptor limit set to 256 (prlimit), 300 idle
#      connections: it stops accepting with one message, uses under 5 % of
#      a core over 3 s (utime+stime from /proc), and takes the other
#      connections once the first ones close
# The summary's counts are then exact: 508 connections, 200 buffer_limit,
# 8 truncated_stream (the 4 + 4 held partial events, closed by the client).
#   D  a second sink with --partial-timeout-ms 1000: 4 connections each
#      hold all but the last byte of a 64 MiB event until the sink closes
#      each (after 1 s: partial_timeout), and a real sender's 1000 events
#      are then all taken.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init sl "${1:-build}" --sources 1 --sinks 1
ADDR=$(tb_addr sink 0)
CAP=$((256 << 20))
ATTACK=$(realpath tests/integration/sink_attack.py)

status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# connected N: the sink ($SINK_NAME) has logged N connections accepted in all.
connected() { (($(grep -cE ': (builder )?connected$' "$E2E_WORK/$SINK_NAME.err") >= $1)); }
# settled: the sink has read everything the attack sent on the connections
# it holds (nothing unread on its side, nothing unacknowledged on the
# attacker's), and closed the ones it refused.
settled() {
	[[ -z $(ip netns exec "$(tb_ns sink 0)" ss -Htn state established "( sport = :$E2E_PORT )" | awk '$1 != 0') &&
		-z $(ip netns exec "$(tb_ns source 0)" ss -Htn state established "( dport = :$E2E_PORT )" | awk '$2 != 0') ]]
}
# none_held: the sink has closed every connection of the attack.
none_held() { [[ -z $(ip netns exec "$(tb_ns source 0)" ss -Htn state established "( dport = :$E2E_PORT )") ]]; }
# sink_idle: every connection of the sink gone (closed, none waiting).
sink_idle() { e2e_ns_idle "$(tb_ns sink 0)"; }

# attack NAME MODE ARGS...: sink_attack.py on source host 0, in the
# background; returns once it has connected (claim, fill: and the sink has
# accepted every connection before the first byte is sent), sent what it
# sends, and the sink has settled on it. It holds until release NAME.
attack() {
	local name=$1 mode=$2 t n go=()
	shift
	n=$(awk '{ for (i = 1; i < NF; i++) if ($i == "--conns") print $(i + 1) }' <<<"$*")
	[[ $mode != idle ]] && go=(--go)
	rm -f "$E2E_WORK/$name".ready*
	ip netns exec "$(tb_ns source 0)" timeout "$E2E_TMO" python3 "$ATTACK" "$ADDR" "$E2E_PORT" "$@" "${go[@]}" \
		--release --ready "$E2E_WORK/$name.ready" >"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	ATTACK_PID=$!
	_e2e_track "$ATTACK_PID" "$name" 0
	if ((${#go[@]})); then
		e2e_until "$E2E_WAIT" test -e "$E2E_WORK/$name.ready.conn" || e2e_die "$name: the attack did not connect"
		e2e_until "$E2E_WAIT" connected $((ACCEPTED + n)) || e2e_die "$name: the sink did not accept $n connections"
		touch "$E2E_WORK/$name.ready.go"
	fi
	ACCEPTED=$((ACCEPTED + n))
	for ((t = 0; t < E2E_WAIT * 20; t++)); do
		[[ -e $E2E_WORK/$name.ready ]] && break
		kill -0 "$ATTACK_PID" 2>/dev/null || break
		sleep 0.05
	done
	if [[ ! -e $E2E_WORK/$name.ready ]]; then
		e2e_show "$name"
		e2e_die "$name: the attack did not get going"
	fi
	[[ $mode == idle ]] || e2e_until "$E2E_WAIT" settled || e2e_fail "$name: the sink did not settle in $E2E_WAIT s"
}

# release NAME: the attack closes its connections and ends; then the sink
# closes its side of every one (and accepts and closes any left waiting).
release() {
	touch "$E2E_WORK/$1.ready.release"
	wait "$ATTACK_PID"
	e2e_until "$E2E_WAIT" sink_idle || e2e_fail "$1: the sink still has connections after $E2E_WAIT s"
}

# grown_within_cap WHAT FIELD BASE_KB SLACK_MIB: the sink's /proc status FIELD
# grew from BASE_KB by at most the cap plus SLACK_MIB.
grown_within_cap() {
	local what=$1 field=$2 base=$3 slack=$4 now
	now=$(status_kb "$SINK" "$field")
	if (((now - base) * 1024 <= CAP + (slack << 20))); then
		e2e_ok "$what: $field ${now} kB, +$((now - base)) kB <= cap $((CAP >> 10)) kB + $slack MiB"
	else
		e2e_fail "$what: $field ${now} kB, +$((now - base)) kB, cap $((CAP >> 10)) kB + $slack MiB"
	fi
}

# The sink exits 1: it saw broken streams, as it should. It runs until told.
E2E_SINK_RC=1 e2e_sink 0 sl.k --stats-interval 0
SINK_NAME=sl.k ACCEPTED=0
SINK=$(e2e_xevb_pid "${E2E_PIDS[-1]}") || e2e_die "no xevb sink process under pid ${E2E_PIDS[-1]}"
base_rss=$(status_kb "$SINK" VmRSS)
base_vsz=$(status_kb "$SINK" VmSize)
e2e_log "sink pid $SINK, VmRSS at start ${base_rss} kB, VmSize ${base_vsz} kB"

attack sl.a fill --conns 8 --size $((64 << 20)) --fill-s "$E2E_WAIT" --hold "$E2E_WAIT"
grown_within_cap "A: 8 x 64 MiB claims" VmRSS "$base_rss" 2
release sl.a

attack sl.b claim --conns 200 --size $((64 << 20)) --hold "$E2E_WAIT"
grown_within_cap "B: 200 x 64 MiB claims" VmSize "$base_vsz" 8
release sl.b

prlimit --pid "$SINK" --nofile=256:256 || e2e_die "prlimit"
attack sl.c idle --conns 300 --hold "$E2E_WAIT"
# The window starts once the sink sits at its limit (it accepts what it can).
at_limit() { (($(ls "/proc/$SINK/fd" | wc -l) >= 250)); }
e2e_until "$E2E_WAIT" at_limit || e2e_fail "C: the sink did not reach its descriptor limit in $E2E_WAIT s"
fds0=$(ls "/proc/$SINK/fd" | wc -l)
t0=$(cpu_ticks "$SINK")
sleep 3   # the window measured, not a wait for anything
t1=$(cpu_ticks "$SINK")
fds1=$(ls "/proc/$SINK/fd" | wc -l)
# The window counts only if the sink sat at its limit throughout.
if ((fds0 >= 250 && fds1 >= 250)); then e2e_ok "C: at the descriptor limit during the window: $fds0 and $fds1 fds open"
else e2e_fail "C: not at the descriptor limit during the window: $fds0 and $fds1 fds open, want >= 250"; fi
hz=$(getconf CLK_TCK)
pct=$(((t1 - t0) * 100 * 100 / (3 * hz)))  # hundredths of a percent
if ((pct < 500)); then e2e_ok "C: at the descriptor limit: $((t1 - t0)) ticks in 3 s ($((pct / 100)).$(printf %02d $((pct % 100))) % of a core) < 5 %"
else e2e_fail "C: at the descriptor limit: $((t1 - t0)) ticks in 3 s ($((pct / 100)) % of a core), want < 5 %"; fi
msgs=$(grep -c 'not accepting until one closes' "$E2E_WORK/sl.k.err")
if [[ $msgs == 1 ]]; then e2e_ok "C: the descriptor-limit message printed once"
else e2e_fail "C: the descriptor-limit message printed $msgs times, want 1"; fi
release sl.c   # the sink takes the last connections from its backlog, then
kill -TERM "$SINK"

e2e_wait_all
export CAP
E2E_SINK_RC=1 e2e_sink 0 sl.k2 --stats-interval 0 --partial-timeout-ms 1000 --expect-sources 4
SINK_NAME=sl.k2 ACCEPTED=0
SINK2=$(e2e_xevb_pid "${E2E_PIDS[-1]}") || e2e_die "no second xevb sink process"
# Each held until the sink has closed it (at its partial timeout, 1 s).
attack sl.d fill --conns 4 --size $((64 << 20)) --fill-s "$E2E_WAIT" --hold "$E2E_WAIT"
e2e_until "$E2E_WAIT" none_held || e2e_fail "D: the sink did not close the stalled connections in $E2E_WAIT s"
release sl.d
if ip netns exec "$(tb_ns source 0)" timeout "$E2E_TMO" "$X" sink --selftest-send "$ADDR:$E2E_PORT" 1000 \
	2>"$E2E_WORK/sl.feed.err"; then e2e_ok "D: a real sender's 1000 events sent after the stalled ones"
else e2e_fail "D: the real sender failed: $(tail -1 "$E2E_WORK/sl.feed.err")"; fi
e2e_until "$E2E_WAIT" sink_idle || e2e_fail "D: the sink did not read the real sender's stream in $E2E_WAIT s"
kill -TERM "$SINK2"
e2e_wait_all   # its summary written before it is read

e2e_check sink_limits <<'PY'
CAP, CAP0, BIG = int(os.environ["CAP"]), 1 << 20, 64 << 20
def held_refused(n):
    """n connections with a first buffer each grow to BIG one after the other."""
    held = refused = 0
    for _ in range(n):
        if (n - refused - held - 1) * CAP0 + (held + 1) * BIG <= CAP:
            held += 1
        else:
            refused += 1
    return held, refused
ha, ra = held_refused(8)
hb, rb = held_refused(200)
k = J("sl.k")
a, b, c = J("sl.a"), J("sl.b"), J("sl.c")
eq("A: connected", a["connected"], 8)
eq("A: closed by the sink", a["closed_by_sink"], ra)
eq("A: every held event filled", a["fill_unfinished"], 0)
eq("B: connected", b["connected"], 200)
eq("B: closed by the sink", b["closed_by_sink"], rb)
eq("C: connected", c["connected"], 300)
eq("connections accepted", k["connections"], 8 + 200 + 300)
eq("refused at accept", k["connections_refused"], {"max_conns": 0, "other": 0})
eq("error kinds", k["error_kinds"], {"buffer_limit": ra + rb, "truncated_stream": ha + hb})
eq("connections dropped", k["connections_dropped"], 8 + 200)
true("accept() paused at the descriptor limit", k["accept_fd_limit"] >= 1, k["accept_fd_limit"])
le("buffer high-water mark", k["buffer_max_bytes"], int(os.environ["CAP"]))
eq("events", k["events"], 0)
d, k2 = J("sl.d"), J("sl.k2")
eq("D: connected, closed by the sink", (d["connected"], d["closed_by_sink"]), (4, 4))
eq("D: error kinds", k2["error_kinds"], {"partial_timeout": 4})
eq("D: events taken from the real sender", (k2["events"], k2["complete"]), (1000, 1000))
eq("D: connections", k2["connections"], 5)
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Hardening (issue 9): ten builders in a row on one interface, each killed
# with SIGKILL once its program has steered packets to its socket while a
# source keeps sending, then an eleventh that runs until it has received
# traffic and is stopped cleanly. Each start must succeed without manual
# clean-up (no EBUSY, the stale program of the killed one removed and
# named), and nothing leaks: the XDP program id and the map ids of every
# killed builder (read from the interface and from bpftool while it ran)
# are gone from the kernel at the end. Other engineers' tests load xevb
# programs on this machine at the same time, so only the ids tied to our
# own interface are counted. Nothing here depends on how long a start
# takes (seconds on a slow host, most of it the verifier): the source
# sends until the test stops it, each step waits for its condition.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init hr "${1:-build}" --sources 1 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
N=${RESTARTS:-10}

xdp_prog_id() {
	tb_exec builder 0 ip -d link show eth0 | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p' | head -1
}
# Packets the program steered to the socket (slot XEVB_XDP_TO_XSK = 26 of
# its per-CPU counters map), summed over CPUs: 0 if unreadable.
to_xsk() {
	local m
	for m in $(map_ids "$1"); do
		bpftool -j map show id "$m" 2>/dev/null | grep -q '"name":"counters"' || continue
		bpftool -j map lookup id "$m" key 26 0 0 0 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(int(v["value"]["packets"]) if isinstance(v["value"], dict) else
          int.from_bytes(bytes(int(b, 16) for b in v["value"][:8]), "little") for v in d["values"]))' 2>/dev/null && return
	done
	echo 0
}
# steered_some: program $pid has steered a packet to its socket ($n: how many).
steered_some() { n=$(to_xsk "$pid"); ((n > 0)); }
map_ids() { bpftool -j prog show id "$1" 2>/dev/null | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin).get("map_ids", []))))'; }

e2e_log "restart: $N x (start, packets steered, SIGKILL) while 4 source ids send 5000 events/s"
global0=$(bpftool prog show 2>/dev/null | grep -c 'name xevb_steer')
# Sends until SIGINT below; --duration and timeout(1) only bound it, with
# room for N slow starts.
SRC_BOUND=$((E2E_RUN + 30 * N))
E2E_TMO=$((SRC_BOUND + 60)) e2e_source 0 hr.src --source-ids 0-3 --rate 5000 --pack 10 --frag-size 40-120 \
	--duration "$SRC_BOUND"
SRC_XEVB=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "no xevb source process"
progs=() maps=() steered=() prev=
for ((i = 1; i <= N; i++)); do
	# --keep-privileges: what a root builder leaves when killed (a dropped one's
	# helper detaches at once, test_hard_privdrop.sh).
	E2E_BUILD_RC=137 e2e_builder 0 "hr.b$i" --sources 0-3 --no-forward --timeout-ms 100 --duration "$E2E_RUN" \
		--keep-privileges
	victim=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "restart $i: no xevb build process"
	pid=$(xdp_prog_id)
	[[ -n $pid ]] || e2e_die "restart $i: no XDP program on eth0 after start"
	progs+=("$pid")
	m=$(map_ids "$pid")
	maps+=($m)
	if grep -qiE 'EBUSY|busy|already' "$E2E_WORK/hr.b$i.err"; then
		e2e_fail "restart $i: start complained: $(grep -iE 'busy|already' "$E2E_WORK/hr.b$i.err" | head -1)"
	fi
	if [[ -n $prev ]]; then
		grep -q "removing a stale xevb_steer (id $prev)" "$E2E_WORK/hr.b$i.err" ||
			e2e_fail "restart $i: did not say it removed stale program $prev"
	fi
	e2e_until "$E2E_WAIT" steered_some ||
		e2e_fail "restart $i: no packet steered to builder $i's socket in $E2E_WAIT s ($n)"
	steered+=("$n")
	kill -KILL "$victim"
	wait "$E2E_LAST_PID" 2>/dev/null
	rc=$?
	E2E_PIDS=("${E2E_PIDS[@]:0:1}") E2E_NAMES=("${E2E_NAMES[@]:0:1}") E2E_WANT=("${E2E_WANT[@]:0:1}")
	[[ $rc == 137 ]] || e2e_fail "restart $i: builder exit status $rc, want 137"
	# The killed builder's program stays attached: the next start removes it.
	[[ $(xdp_prog_id) == "$pid" ]] || e2e_fail "restart $i: program $pid not left after SIGKILL (test proves nothing)"
	prev=$pid
done
e2e_ok "restart: $N builders started and were killed; program ids ${progs[*]}"
e2e_ok "restart: their map ids ${maps[*]}"
e2e_ok "restart: packets each killed builder's program steered to its socket: ${steered[*]}"

e2e_builder 0 hr.final --sources 0-3 --no-forward --timeout-ms 100 --duration "$E2E_RUN"
grep -q "removing a stale xevb_steer (id $prev)" "$E2E_WORK/hr.final.err" &&
	e2e_ok "final: removed the stale program $prev" || e2e_fail "final: did not remove stale program $prev"
final_prog=$(xdp_prog_id)
final_maps=$(map_ids "$final_prog")
# It runs until it has built from the traffic (its counters are published
# each second), then stops cleanly; then the source.
e2e_until "$E2E_WAIT" e2e_bstat 0 'd["events_complete"] > 0' ||
	e2e_fail "final: no event built in $E2E_WAIT s"
e2e_stop hr.final
e2e_wait_exit "$(e2e_pid hr.final)" "$E2E_WAIT"
kill -INT "$SRC_XEVB"
e2e_wait_all   # final builder and the source
[[ -z $(xdp_prog_id) ]] && e2e_ok "final: nothing attached after a clean exit" || e2e_fail "final: program left on eth0"

# Freed objects go away after an RCU grace period or so: bounded retries
# (E2E_WAIT at most; each pass runs 100 bpftool calls, seconds on a slow host).
leaked= end=$(($(date +%s) + E2E_WAIT))
for ((t = 0; t < E2E_WAIT * 10 && $(date +%s) < end; t++)); do
	leaked=
	for p in "${progs[@]}" $final_prog; do bpftool prog show id "$p" >/dev/null 2>&1 && leaked+=" prog:$p"; done
	for m in "${maps[@]}" $final_maps; do bpftool map show id "$m" >/dev/null 2>&1 && leaked+=" map:$m"; done
	[[ -z $leaked ]] && break
	sleep 0.1
done
nm=$(( ${#maps[@]} + $(wc -w <<<"$final_maps") ))
if [[ -z $leaked ]]; then
	e2e_ok "no leak: all $((N + 1)) program ids and $nm map ids of our builders are gone from the kernel"
else
	e2e_fail "leaked after $((N + 1)) builders:$leaked"
fi
global1=$(bpftool prog show 2>/dev/null | grep -c 'name xevb_steer')
e2e_log "machine-wide xevb_steer programs before/after (other tests included): $global0 / $global1"
echo "$N ${#progs[@]} $nm" >"$E2E_WORK/hr.counts"
e2e_check restart <<'PY'
n, np, nm = map(int, open(os.path.join(W, "hr.counts")).read().split())
eq("builders killed = distinct program ids", np, n)
true("map ids recorded (>= 4 per program)", nm >= 4 * (n + 1), nm)
f, s = J("hr.final"), J("hr.src")
true("final builder received traffic", f["frags_received"] > 0, f["frags_received"])
eq("final builder: received = in events + drops",
   f["frags_received"], f["frags_in_events"] + sum(f[k] for k in f if k.startswith("drop_")))
eq("final builder: no xsk drop", (f["xsk_rx_dropped"], f["xsk_rx_ring_full"]), (0, 0))
true("source sent all along", s["packets"] > 0, s["packets"])
PY
e2e_finish

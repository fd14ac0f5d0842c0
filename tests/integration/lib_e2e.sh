# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Shared helpers of the end-to-end tests (tests/integration/test_e2e_*.sh):
# sources -> `xevb build` -> `xevb sink` on the namespace testbed. Source
# it, then:
#
#   e2e_init TAG "$1" --sources 2 --builders 1 --sinks 1   # + tb_up, trap
#   e2e_sink 0 s0 --expect-events 100     # background, waits for its ready file
#   e2e_builder 0 b0 --sources 0-3 --sink "$(tb_addr sink 0):$E2E_PORT" ...
#   e2e_source 0 src0 --source-ids 0-1 --events 100   # background
#   e2e_wait_all                          # every process started, with rc checks
#   e2e_check CASE <<'PY' ... PY          # python asserts over the JSON files
#   e2e_no_xdp CASE                       # no XDP program on any test interface
#   e2e_finish                            # tb_down, nothing left, exit status
#
# Every process runs in the background with its stdout (the JSON summary)
# in $E2E_WORK/NAME.json and stderr in $E2E_WORK/NAME.err; each is bounded
# by its own --duration and by timeout(1). The trap kills what we started
# (by pid), then the testbed's own trap removes the namespaces.
#
# No test may assume how long anything takes (a start, a restart, a run):
# machines differ 2x in speed and more under load. A test waits for a
# condition (e2e_until, e2e_bstat, e2e_wait_*), bounded in count and time,
# and returns as soon as it holds; a process that must outlive the test's
# steps runs until the test stops it (e2e_stop), its --duration only an
# outer bound. The bounds below are how long we wait before calling a
# thing hung, never how long it should take:
#   E2E_WAIT  seconds a condition may take (a process ready, receiving, ...)
#   E2E_RUN   --duration of a process that ends by a condition or a signal
#   E2E_TMO   timeout(1) around each process (> E2E_RUN)
E2E_WAIT=${E2E_WAIT:-60}
E2E_RUN=${E2E_RUN:-120}
E2E_TMO=${E2E_TMO:-$((E2E_RUN + 60))}

E2E_PORT=5000
E2E_FAILS=0
E2E_PIDS=()    # pids of background processes not yet waited for
E2E_NAMES=()   # their names, same order
E2E_WANT=()    # the exit status each must have
declare -A E2E_SINK_NS=()  # pid of a farm node -> its namespace (dfm_stop_all)

e2e_log() { echo "# $*"; }
e2e_ok() { echo "ok   - $*"; }
e2e_fail() {
	echo "FAIL - $*"
	E2E_FAILS=$((E2E_FAILS + 1))
}
# e2e_xevb_pid PID: the xevb process under `timeout` PID (our child's
# child), for kill -9, /proc reads and tracing; waits up to E2E_WAIT for it
# to start, else returns 1.
e2e_xevb_pid() {
	local p t
	for ((t = 0; t < E2E_WAIT * 20; t++)); do
		p=$(pgrep -P "$1" -x xevb) && { echo "$p"; return 0; }
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# e2e_until SECONDS CMD [ARGS]: run CMD every 50 ms until it succeeds;
# status 1 if it has not within SECONDS (whole seconds; bounded in count and
# in time: a slow CMD does not stretch the bound).
e2e_until() {
	local secs=$1 t end
	shift
	end=$(($(date +%s%N) + secs * 1000000000))
	for ((t = 0; t < secs * 20; t++)); do
		"$@" && return 0
		(($(date +%s%N) < end)) || return 1
		sleep 0.05
	done
	return 1
}

# e2e_bstat IDX EXPR: true when the Python expression EXPR holds over d,
# the counters builder IDX's `xevb build --dev eth0` (E2E_BDEV: another
# interface) publishes (`xevb stats --json`, refreshed each second). E.g.
# e2e_until "$E2E_WAIT" e2e_bstat 0 'd["frags_received"] > 0'.
e2e_bstat() {
	tb_exec builder "$1" "$X" stats --dev "${E2E_BDEV:-eth0}" --json 2>/dev/null | python3 -c '
import json, sys
line = sys.stdin.readline()
d = json.loads(line) if line.startswith("{") else None
sys.exit(0 if d is not None and eval(sys.argv[1]) else 1)' "$2" 2>/dev/null
}

# e2e_settled IDX: builder IDX's published counters show every packet it
# was given taken (XDP: steered to its socket, or counted lost by the
# kernel; socket: passed to the kernel) and no event open: after its
# sources have ended, it has done all it will do.
e2e_settled() {
	e2e_bstat "$1" 'd["open_events"] == 0 and (d["rx_frames"] + d["xsk_rx_dropped"] + d["xsk_rx_ring_full"] ==
d["xdp"]["to_xsk"]["packets"] if d["path"] == "xdp" else d["rx_frames"] + d["sock_kernel_drops"] >=
d["xdp"]["no_xsk_to_kernel"]["packets"])'
}

# e2e_stop NAME...: SIGINT to the tracked processes NAME (timeout(1)
# passes it on): the clean end of a process that runs until told; the
# caller's e2e_wait_all then checks its exit status.
e2e_stop() {
	local n i
	for n; do
		for i in "${!E2E_NAMES[@]}"; do
			[[ ${E2E_NAMES[$i]} == "$n" ]] && kill -INT "${E2E_PIDS[$i]}" 2>/dev/null
		done
	done
	return 0
}

# e2e_ns_idle NS: no TCP connection left in namespace NS, established,
# closing or waiting to be accepted: a farm node there has read to the end
# of every stream it was sent (its peers gone).
e2e_ns_idle() {
	[[ -z $(ip netns exec "$1" ss -Htn state established state close-wait state syn-recv 2>/dev/null) ]]
}

# e2e_stop_sinks: SIGINT to each farm node still running (e2e_sink,
# rc_sink) once it has read all it was sent (e2e_ns_idle, E2E_WAIT at
# most): for a sink that runs until told, after its writers have ended.
e2e_stop_sinks() {
	local p
	for p in "${E2E_PIDS[@]}"; do
		[[ -n ${E2E_SINK_NS[$p]:-} ]] && kill -0 "$p" 2>/dev/null || continue
		e2e_until "$E2E_WAIT" e2e_ns_idle "${E2E_SINK_NS[$p]}"
		kill -INT "$p" 2>/dev/null
	done
	return 0
}

# e2e_wait_run: the end of a run whose farm nodes run until told: every
# other process ends by itself (each waited for, up to E2E_TMO), then the
# farm nodes are stopped (e2e_stop_sinks) and every exit status checked
# (e2e_wait_all).
e2e_wait_run() {
	local p
	for p in "${E2E_PIDS[@]}"; do
		[[ -n ${E2E_SINK_NS[$p]:-} ]] || e2e_wait_exit "$p" "$E2E_TMO"
	done
	e2e_stop_sinks
	e2e_wait_all
}

# e2e_pid NAME: the pid (timeout's) of the tracked process NAME.
e2e_pid() {
	local i
	for i in "${!E2E_NAMES[@]}"; do
		[[ ${E2E_NAMES[$i]} == "$1" ]] && { echo "${E2E_PIDS[$i]}"; return 0; }
	done
	return 1
}

# e2e_need TOOL...: stop, failing, unless every TOOL is on PATH.
e2e_need() {
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "FAIL - $t not installed (bash scripts/install-deps.sh)"; exit 1; }
	done
}

# This machine lacks a feature the test needs: exit 77 (scripts/run-tests.sh
# counts it skipped, with this reason). Cleanup runs from the trap.
e2e_skip() {
	echo "SKIP $(basename "$0" .sh): $*"
	exit 77
}
# Stop now: cleanup runs from the trap.
e2e_die() {
	echo "FAIL - $* (giving up)"
	E2E_FAILS=$((E2E_FAILS + 1))
	exit 1
}

# e2e_init TAG BUILD_DIR [tb_up options]: paths, prefix, scratch dir,
# cleanup hook; with tb_up options, the testbed up too (or give up).
e2e_init() {
	local tag=$1 out=${2:-build}
	shift $(($# < 2 ? $# : 2))
	cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
	X=$(realpath "$out/xevb")
	[[ -x $X ]] || { echo "FAIL - $X not built (make -j2)"; exit 1; }
	# shellcheck source=../../scripts/lib/testbed.sh
	. scripts/lib/testbed.sh
	TB_PREFIX="xe$$$tag"
	TB_QUIET=1
	E2E_WORK=$(mktemp -d "/tmp/$TB_PREFIX.XXXXXX")
	export E2E_WORK
	E2E_T0=$(date +%s.%N)
	(($#)) || return 0
	tb_up "$@" || e2e_die "tb_up $*"
}

# On failure, the last lines each process printed: CI keeps only the
# test's output, and a failure seen once must be explainable from it.
e2e_dump_errs() {
	local f
	for f in "$E2E_WORK"/*.err; do
		[[ -s $f ]] || continue
		echo "# --- last lines of $(basename "$f"):"
		tail -n "${E2E_DUMP_LINES:-6}" "$f" | cut -c1-400 | sed 's/^/#   /'
	done
}

# Called by the testbed's EXIT trap before the namespaces go.
tb_on_cleanup() {
	local p
	for p in "${E2E_PIDS[@]}"; do
		[[ -n $p ]] && kill "$p" 2>/dev/null
	done
	for p in "${E2E_PIDS[@]}"; do
		[[ -n $p ]] && wait "$p" 2>/dev/null
	done
	E2E_PIDS=()
	((E2E_FAILS)) && e2e_dump_errs
	if ((E2E_FAILS)) && [[ -n ${E2E_KEEP:-} ]]; then
		echo "# kept $E2E_WORK"
	else
		rm -rf "$E2E_WORK"
	fi
}

# xevb build keeps a lock file (and, if killed, a stats file) per namespace
# in /run/xevb, named by the namespace's inode: ours go with our namespaces.
_e2e_track() {
	E2E_PIDS+=("$1")
	E2E_NAMES+=("$2")
	E2E_WANT+=("$3")
}

# e2e_wait_all: wait for every tracked process; check each exit status.
e2e_wait_all() {
	local i rc
	for i in "${!E2E_PIDS[@]}"; do
		{ wait "${E2E_PIDS[$i]}"; } 2>/dev/null  # no "Killed" notice: rc says it
		rc=$?
		if [[ $rc == "${E2E_WANT[$i]}" ]]; then
			e2e_ok "${E2E_NAMES[$i]}: exit status $rc"
		else
			e2e_fail "${E2E_NAMES[$i]}: exit status $rc, want ${E2E_WANT[$i]}"
			e2e_show "${E2E_NAMES[$i]}"
		fi
	done
	E2E_PIDS=()
	E2E_NAMES=()
	E2E_WANT=()
	E2E_SINK_NS=()
}

# e2e_show NAME: what a process printed (on failures).
e2e_show() {
	echo "  --- $1 stderr (last lines):"
	tail -n 25 "$E2E_WORK/$1.err" 2>/dev/null | sed 's/^/  | /'
	echo "  --- $1 stdout:"
	sed 's/^/  | /' "$E2E_WORK/$1.json" 2>/dev/null
}

# e2e_wait_ready FILE NAME WHAT: wait (E2E_WAIT at most) for a process's
# ready file; otherwise show its output and give up saying WHAT.
e2e_wait_ready() {
	local t
	for ((t = 0; t < E2E_WAIT * 20; t++)); do
		[[ -s $1 ]] && return 0
		sleep 0.05
	done
	e2e_show "$2"
	e2e_die "$2: $3 after $E2E_WAIT s"
}

# e2e_wait_exit PID SECONDS: wait until PID has exited, at most SECONDS
# (tenths allowed); the caller's e2e_wait_all then checks its exit status.
e2e_wait_exit() {
	local t tenths
	tenths=$(awk -v s="$2" 'BEGIN { printf "%d", s * 10 }')
	for ((t = 0; t < tenths; t++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
}

# e2e_wait_line PATTERN FILE: wait (E2E_WAIT at most) for a line matching
# PATTERN in FILE (e.g. the DFM's "triggering" once its peers have joined);
# status 1 if none came.
e2e_wait_line() {
	local t
	for ((t = 0; t < E2E_WAIT * 10; t++)); do
		grep -qs "$1" "$2" && return 0
		sleep 0.1
	done
	return 1
}

# e2e_scrape ROLE IDX NAME PORT: that host's /metrics page into
# $E2E_WORK/NAME.prom, HTTP 200 and clean under promtool.
e2e_scrape() {
	local out=$E2E_WORK/$3.prom code
	code=$(tb_exec "$1" "$2" curl -s -m 5 -o "$out" -w '%{http_code}' "http://127.0.0.1:$4/metrics")
	if [[ $code != 200 ]]; then
		e2e_fail "$3: GET /metrics: HTTP $code"
		return
	fi
	e2e_ok "$3: GET /metrics: HTTP 200, $(wc -l <"$out") lines"
	e2e_lint_page "$3"
}

# e2e_lint_page NAME: $E2E_WORK/NAME.prom clean under promtool.
e2e_lint_page() {
	local out=$E2E_WORK/$1.prom
	if promtool check metrics <"$out" >"$out.lint" 2>&1 && [[ ! -s $out.lint ]]; then
		e2e_ok "$1: promtool check metrics: clean"
	else
		e2e_fail "$1: promtool check metrics:"
		sed 's/^/  | /' "$out.lint" | head -20
	fi
}

# e2e_sink IDX NAME [sink options]: a farm node on sink IDX, listening on
# its address, port $E2E_PORT, in the background; returns once it listens.
# Bounded: --duration E2E_RUN (unless given: a sink with neither
# --expect-events nor --duration runs until e2e_stop) and timeout E2E_TMO.
e2e_sink() {
	local idx=$1 name=$2
	shift 2
	local ready="$E2E_WORK/$name.ready"
	rm -f "$ready"
	# Not through tb_exec: $! must be timeout(1) itself, not a subshell.
	ip netns exec "$(tb_ns sink "$idx")" timeout "$E2E_TMO" "$X" sink --listen "$(tb_addr sink "$idx"):$E2E_PORT" \
		--ready-file "$ready" --json --stats-interval 0 --duration "$E2E_RUN" "$@" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" "${E2E_SINK_RC:-0}"
	E2E_SINK_NS[$!]=$(tb_ns sink "$idx")
	e2e_wait_ready "$ready" "$name" "sink not listening"
}

# e2e_builder IDX NAME [build options]: `xevb build --dev eth0` on builder
# IDX in the background; returns once its receive path is open (the XDP
# program attached and the AF_XDP socket bound, or the kernel socket open).
# Give it --duration (bounded anyway by timeout E2E_TMO): an outer bound
# if it ends otherwise (--exit-on-eor, e2e_stop). Its pid: $E2E_LAST_PID.
# E2E_BUILD_RC: the exit status it must end with (default 0).
e2e_builder() {
	local idx=$1 name=$2
	shift 2
	ip netns exec "$(tb_ns builder "$idx")" timeout "$E2E_TMO" "$X" build --dev eth0 --json --quiet "$@" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "$name" "${E2E_BUILD_RC:-0}"
	e2e_wait_rx "$name"
}

# e2e_farm_builder NAME NIDS NEVENTS [build options]: a farm node NAME.k on
# sink 0 expecting NEVENTS events of NIDS source ids, and builder NAME.b on
# builder 0 building ids 0..NIDS-1 for it (events time out after 500 ms, the
# run ends at END_OF_RUN, --duration E2E_RUN only a bound).
e2e_farm_builder() {
	local name=$1 nids=$2 nevents=$3
	shift 3
	e2e_sink 0 "$name.k" --expect-sources "$nids" --expect-events "$nevents"
	e2e_builder 0 "$name.b" --sources "0-$((nids - 1))" --timeout-ms 500 --exit-on-eor --duration "$E2E_RUN" \
		--sink "$(tb_addr sink 0):$E2E_PORT" "$@"
}

# e2e_wait_rx NAME: wait (E2E_WAIT at most; the verifier alone may take
# seconds) until the builder started as NAME ($E2E_LAST_PID) has its
# receive path open; dies if it never does.
e2e_wait_rx() {
	local name=$1 t
	for ((t = 0; t < E2E_WAIT * 20; t++)); do
		grep -qE 'AF_XDP socket on|on a kernel socket' "$E2E_WORK/$name.err" 2>/dev/null && return 0
		kill -0 "$E2E_LAST_PID" 2>/dev/null || break
		sleep 0.05
	done
	e2e_show "$name"
	e2e_die "$name: builder did not open its receive path"
}

# e2e_source IDX NAME [source options]: `xevb source` on source host IDX,
# to builder $E2E_DEST, in the background (timeout E2E_TMO). E2E_SRC_RC: the
# exit status it must end with (default 0). One that must send while the
# test does things (starts, kills) gets no --events: it sends until
# e2e_stop, --duration only a bound.
e2e_source() {
	local idx=$1 name=$2
	shift 2
	ip netns exec "$(tb_ns source "$idx")" timeout "$E2E_TMO" "$X" source --dest "$E2E_DEST" --json --quiet "$@" \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "$name" "${E2E_SRC_RC:-0}"
}

# e2e_sink_file NAME FILE [sink options]: check a file written by
# `build --output` with `xevb sink --input` (every CRC and the content; a
# run file's header and trailer through libxevb's reader); its JSON
# summary goes to NAME.json like any other. Exit status 0 wanted.
e2e_sink_file() {
	local name=$1 file=$2 rc
	shift 2
	timeout "$E2E_TMO" "$X" sink --input "$file" --json "$@" >"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err"
	rc=$?
	if ((rc == 0)); then
		e2e_ok "$name: sink --input exit status 0"
	else
		e2e_fail "$name: sink --input exit status $rc"
		e2e_show "$name"
	fi
}

# e2e_runfiles NAME FILE...: read run files with libxevb's reader (the
# example farm node's --read, built by `make libxevb`): one JSON line per
# file (header fields, how it ended, events) in NAME.jsonl, for
# runfiles(NAME) in e2e_check. Exit status 0 when every file closed cleanly.
e2e_runfiles() {
	local name=$1 farm
	shift
	farm=$(dirname "$X")/lib/examples/xevb-farm-example
	[[ -x $farm ]] || e2e_die "$farm not built (make libxevb)"
	"$farm" --read "$@" >"$E2E_WORK/$name.jsonl" 2>"$E2E_WORK/$name.err"
}

# e2e_check CASE < python: runs the python on stdin after a prelude:
#   J(name)        the JSON summary of process NAME
#   eq(what, got, want) / le / true(what, cond, detail): print ok/FAIL lines
#   built_every_fragment(b, pk, sent, n): builder B got every packet and
#                  fragment sent, all in N complete events, no drop
#   events(path[, cut]) decode a run file (`build --output`, wire format
#                  section 4; cut=True: no trailer, read to the last whole
#                  event) or a plain event stream (section 2): a list
#                  of dicts id, run, flags, incomplete, expected, sources
#                  (list of received source_ids), missing (list), build_ns
#                  (CLOCK_REALTIME ns when the builder emitted the event)
#   runfiles(name) the JSON lines e2e_runfiles NAME wrote, one per file
#   W              the scratch dir; CASE the case name
# Fails the test (not the script) when any assertion fails.
e2e_check() {
	local py
	py=$(cat)
	if python3 -c "$_E2E_PRELUDE
$py
done()" "$1"; then
		return 0
	fi
	E2E_FAILS=$((E2E_FAILS + 1))
	return 1
}

_E2E_PRELUDE=$(cat <<'PY'
import json, os, struct, sys
W = os.environ["E2E_WORK"]
CASE = sys.argv[1]
_bad = 0
def J(name):
    with open(os.path.join(W, name + ".json")) as f:
        lines = [l for l in f.read().splitlines() if l.startswith("{")]
    if not lines:
        raise SystemExit("FAIL - %s: %s printed no JSON summary (see %s.err)" % (CASE, name, name))
    return json.loads(lines[-1])
def _res(ok, msg):
    global _bad
    print(("ok   - " if ok else "FAIL - ") + CASE + ": " + msg)
    if not ok:
        _bad += 1
    return ok
def _short(v):
    if isinstance(v, list) and len(v) > 8:
        return "[%s, ..., %s] (%d items)" % (", ".join(map(repr, v[:3])), ", ".join(map(repr, v[-2:])), len(v))
    return repr(v)
def eq(what, got, want):
    if got == want:
        return _res(True, "%s = %s" % (what, _short(got)))
    msg = "%s = %s, want %s" % (what, _short(got), _short(want))
    if isinstance(got, list) and isinstance(want, list):
        g, w = set(map(repr, got)), set(map(repr, want))
        msg += "\n       only got: %s\n       only wanted: %s" % (sorted(g - w)[:10], sorted(w - g)[:10])
    return _res(False, msg)
def le(what, got, limit):
    return _res(got <= limit, "%s = %r <= %r" % (what, got, limit))
def true(what, cond, detail=""):
    return _res(bool(cond), what + ("" if cond else ": " + str(detail)))
# A Prometheus page saved as W/NAME.prom (e2e_scrape): {"name{labels}": value}.
def page(name):
    m = {}
    for line in open(os.path.join(W, name + ".prom")):
        if line.startswith("#") or not line.strip():
            continue
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
    return m
def runfiles(name):
    with open(os.path.join(W, name + ".jsonl")) as f:
        return [json.loads(l) for l in f if l.startswith("{")]
def events(path, cut=False):
    out = []
    with open(path, "rb") as f:
        b = f.read()
    off, end = 0, len(b)
    # A run file (wire-format.md section 4): events from header_length on,
    # up to the trailer (48 bytes, "XEND", which must end the file); cut:
    # no trailer, the events up to the last whole one. A plain stream:
    # events from byte 0.
    if b[:4] == b"XEVF":
        off = struct.unpack_from("!H", b, 6)[0]
    while off < end:
        if b[off:off + 4] == b"XEND" and b[:4] == b"XEVF":
            if off + 48 != end:
                raise SystemExit("FAIL - %s: %s: %d bytes after the trailer" % (CASE, path, end - off - 48))
            break
        if cut and off + 32 > end:
            break
        magic, ver, flags, nf, run, eid, tot, nexp, res, bns = struct.unpack_from("!IBBHIIIHHQ", b, off)
        if cut and magic == 0x45564E54 and off + tot > end:
            break
        if magic != 0x45564E54 or ver != 1 or tot < 32 or off + tot > end:
            raise SystemExit("FAIL - %s: %s: bad event header at offset %d" % (CASE, path, off))
        p, srcs = off + 32, []
        for _ in range(nf):
            sid, r, ln, crc = struct.unpack_from("!HHII", b, p)
            srcs.append(sid)
            p += 12 + ((ln + 3) & ~3)
        miss = list(struct.unpack_from("!%dH" % (nexp - nf), b, p)) if flags & 1 else []
        out.append(dict(id=eid, run=run, flags=flags, incomplete=bool(flags & 1), expected=nexp,
                        sources=srcs, missing=miss, build_ns=bns))
        off += tot
    return out
# Builder summary B took the PK packets and the SENT fragments of the N
# events the sources sent: every fragment in a complete event, no drop.
def built_every_fragment(b, pk, sent, n):
    eq("frames received = packets sent", b["rx_frames"], pk)
    eq("fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (sent, sent))
    eq("events opened = complete = sent", (b["events_opened"], b["events_complete"]), (n, n))
    eq("incomplete/discarded/open", (b["events_incomplete"], b["events_discarded"], b["open_events"]), (0, 0, 0))
    eq("drops (dup, late, unknown, run, overflow)",
       [b[x] for x in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow")], [0] * 5)
    eq("rx_not_mep, seq_gaps", (b["rx_not_mep"], b["seq_gaps"]), (0, 0))
def S(names, key):
    return sum(J(n)[key] for n in names)
def xdp_malformed(j):
    return sum(v["packets"] for k, v in j["xdp"].items() if k.startswith("malformed_"))
def done():
    sys.exit(1 if _bad else 0)
PY
)

# e2e_no_xdp CASE: no XDP program on any link of any namespace of the
# testbed but the testbed's own XDP switch (tb_up --switch xdp) on its ports.
e2e_no_xdp() {
	local ns left="" sw=""
	grep -q '^xdpswitch ' "$(_tb_state)" 2>/dev/null && sw=$(tb_switch)
	for ns in $(ip netns list | awk -v p="$TB_PREFIX-" 'index($1, p) == 1 { print $1 }'); do
		if [[ $ns == "$sw" ]]; then
			ip -n "$ns" -d link show | grep 'prog/xdp' | grep -qv ' name xevb_switch ' && left+=" $ns"
			continue
		fi
		if ip -n "$ns" -d link show | grep -qE 'prog/xdp|[[:space:]]xdp(generic|offload)?[[:space:]]'; then
			left+=" $ns"
		fi
	done
	if [[ -z $left ]]; then
		e2e_ok "$1: no XDP program left on any test interface"
	else
		e2e_fail "$1: XDP program left in:$left"
		for ns in $left; do ip -n "$ns" -d link show | grep -E 'xdp' | sed 's/^/  | /'; done
	fi
}

# e2e_direct_link SRCNS BNS: the direct path (as scripts/bench's direct_link):
# source eth1 <-> builder eth1, no bridge, no address; frames go straight
# into the builder's veth (send with --dev eth1 --dst-mac 02:18:02:01:00:01).
e2e_direct_link() {
	ip link add eth1 netns "$1" address 02:18:01:01:00:01 type veth \
		peer name eth1 netns "$2" address 02:18:02:01:00:01 || e2e_die "direct veth pair"
	ip -n "$1" link set eth1 up
	ip -n "$2" link set eth1 up
	ip netns exec "$2" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.eth1.rp_filter=0
}

# e2e_xdp_attached ROLE IDX: true when eth0 of that host has an XDP program.
e2e_xdp_attached() {
	tb_exec "$1" "$2" ip -d link show eth0 | grep -q 'prog/xdp'
}

# e2e_finish: tear the testbed down, check nothing of it remains, and exit
# with the verdict.
e2e_finish() {
	local p=$TB_PREFIX el
	e2e_no_xdp "end"
	tb_down "$p"
	TB_CREATED=
	if ip netns list | grep -q "^$p-"; then
		e2e_fail "namespaces left: $(ip netns list | grep "^$p-" | tr '\n' ' ')"
	else
		e2e_ok "teardown: no namespace named $p-* remains"
	fi
	el=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" \
		"$E2E_T0" "$(date +%s.%N)")
	tb_on_cleanup
	if ((E2E_FAILS)); then
		echo "FAIL $(basename "$0" .sh): $E2E_FAILS failure(s) in ${el}s"
		exit 1
	fi
	echo "PASS $(basename "$0" .sh) in ${el}s"
	exit 0
}

# e2e_topology CASE MODE PROTO HOSTS IDS BUILDERS SINKS EVENTS
#   MODE xdp|socket, PROTO raw|udp. HOSTS source hosts, each emulating IDS
#   source ids (host h: h*IDS .. h*IDS+IDS-1); BUILDERS builders, each
#   expecting every source id and getting its own range of EVENTS events
#   (builder b: event_ids b*EVENTS ..), sent by one source process per
#   (host, builder); every builder forwards round robin to all SINKS sinks.
#   Nx1: HOSTS>1, BUILDERS=1; 1xN: HOSTS=1, BUILDERS>1; NxN: both > 1.
#   E2E_RATE: trigger rate of each source process (default: flat out).
#   E2E_PACK: events per MEP (default 10; 1 with a low E2E_RATE sends each
#   event on its own, a trickle).
#   E2E_BUILD_ARGS: more options for every `xevb build` (e.g. --tune wait-us=100).
# Asserts, per builder: fragments sent to it = received = in events (XDP:
# = steered to the AF_XDP socket, no drop anywhere); every event complete;
# no drop of any reason; every event forwarded; per sink: exactly its round
# robin share, every CRC and content checked, no error; in total: sink
# events = builder out_events, sink fragments = fragments sent.
e2e_topology() {
	local case=$1 mode=$2 proto=$3 nh=$4 ni=$5 nb=$6 ns=$7 ne=$8
	local h b k ids last=$(($4 * $5 - 1)) want bopts sopts sinks=() plan
	e2e_log "$case: $mode mode, $proto, $nh source host(s) x $ni ids -> $nb builder(s) -> $ns sink(s), $ne events per builder"
	local meta=1
	[[ " ${E2E_BUILD_ARGS:-} " == *" --tune no-xdp-meta=1 "* ]] && meta=0
	plan="{\"mode\":\"$mode\",\"meta\":$meta,\"events\":$ne,\"sources\":$((last + 1)),\"builders\":{"
	for ((k = 0; k < ns; k++)); do
		# Round robin from sink 0, per builder.
		want=$((nb * ((ne - k + ns - 1) / ns)))
		e2e_sink "$k" "$case.k$k" --expect-events "$want" --expect-sources $((last + 1))
		sinks+=(--sink "$(tb_addr sink "$k"):$E2E_PORT")
	done
	# The source processes start one after the other, each a process start
	# apart (a loaded host: a second or more): every event waits for the
	# late hosts' fragments, so the window (65536 events: 1.3 s at 50k/s)
	# and the timeout (5 s) hold that skew; nothing waits for them once
	# every fragment is in, and END_OF_RUN ends the run.
	bopts=(--window 65536 --timeout-ms 5000)
	[[ $mode == socket ]] && bopts+=(--mode socket)
	[[ $mode == socket && $proto == udp ]] && bopts+=(--udp)
	local extra=()
	read -r -a extra <<<"${E2E_BUILD_ARGS:-}"
	bopts+=("${extra[@]}")
	sopts=()
	[[ $proto == udp ]] && sopts+=(--udp 23900)
	[[ -n ${E2E_RATE:-} ]] && sopts+=(--rate "$E2E_RATE")
	for ((b = 0; b < nb; b++)); do
		e2e_builder "$b" "$case.b$b" "${bopts[@]}" --sources "0-$last" "${sinks[@]}" \
			--exit-on-eor --duration "$E2E_RUN"
	done
	for ((b = 0; b < nb; b++)); do
		E2E_DEST=$(tb_addr builder "$b")
		plan+="$( ((b)) && echo ,)\"$case.b$b\":["
		for ((h = 0; h < nh; h++)); do
			ids="$((h * ni))-$((h * ni + ni - 1))"
			e2e_source "$h" "$case.s${h}b$b" --source-ids "$ids" --events "$ne" \
				--first-event $((b * ne)) --pack "${E2E_PACK:-10}" --frag-size 32-120 \
				--seed $((h * 16 + b + 1)) "${sopts[@]}"
			plan+="$( ((h)) && echo ,)\"$case.s${h}b$b\""
		done
		plan+="]"
	done
	plan+="},\"sinks\":{"
	for ((k = 0; k < ns; k++)); do
		plan+="$( ((k)) && echo ,)\"$case.k$k\":$((nb * ((ne - k + ns - 1) / ns)))"
	done
	plan+="}}"
	echo "$plan" >"$E2E_WORK/$case.plan"
	e2e_wait_all
	e2e_check "$case" <<'PY'
P = json.load(open(os.path.join(W, CASE + ".plan")))
E, xdp = P["events"], P["mode"] == "xdp"
for b, srcs in sorted(P["builders"].items()):
    j, s = J(b), [J(n) for n in srcs]
    sent = sum(x["fragments"] for x in s)
    pk = sum(x["packets"] for x in s)
    for n, x in zip(srcs, s):
        eq(n + " fragments sent", x["fragments"], E * x["sources"])
    eq(b + " fragments received = sent", j["frags_received"], sent)
    eq(b + " fragments in events = sent", j["frags_in_events"], sent)
    eq(b + " frames received = packets sent", j["rx_frames"], pk)
    eq(b + " events opened", j["events_opened"], E)
    eq(b + " events complete = events sent", j["events_complete"], E)
    eq(b + " incomplete/discarded/open", (j["events_incomplete"], j["events_discarded"], j["open_events"]), (0, 0, 0))
    eq(b + " drops (dup, late, unknown, run, overflow, future, unassigned)",
       [j[k] for k in ("drop_duplicate", "drop_late", "drop_unknown_source", "drop_wrong_run", "drop_overflow", "drop_future",
                       "drop_unassigned")],
       [0] * 7)
    eq(b + " rx_not_mep, seq_gaps", (j["rx_not_mep"], j["seq_gaps"]), (0, 0))
    eq(b + " out_events", j["out_events"], E)
    eq(b + " out dropped (no sink, error, buffers full)",
       (j["out_dropped_no_sink"], j["out_dropped_error"], j["out_dropped_backlog"]), (0, 0, 0))
    eq(b + " run ended by END_OF_RUN", j["run_ended"], True)
    if xdp:
        x = j["xdp"]
        eq(b + " XDP to_xsk frags = builder frags_received", x["to_xsk"]["frags"], j["frags_received"])
        eq(b + " XDP mep packets = to_xsk packets = sent", (x["mep"]["packets"], x["to_xsk"]["packets"]), (pk, pk))
        eq(b + " XDP malformed, no_xsk_to_kernel, unknown_source",
           (xdp_malformed(j), x["no_xsk_to_kernel"]["packets"], x["unknown_source"]["packets"]), (0, 0, 0))
        eq(b + " xsk rx_dropped, rx_ring_full", (j["xsk_rx_dropped"], j["xsk_rx_ring_full"]), (0, 0))
        if P.get("meta"):
            # Sources pack consecutive triggers: every MEP carries its XDP meta
            # through AF_XDP copy mode and the builder takes it (xsk_meta.h).
            eq(b + " frames taken from their XDP meta, parsed, meta_failed",
               (j["rx_meta"], j["rx_meta_fallback"], x["meta_failed"]["packets"]), (pk, 0, 0))
        else:
            eq(b + " no XDP meta (off)", (j["rx_meta"], j["rx_meta_fallback"], x["meta_failed"]["packets"]), (0, 0, 0))
    else:
        eq(b + " socket kernel drops", j["sock_kernel_drops"], 0)
        # The steering program in pass mode in front of the socket (it sheds):
        # every MEP passed to the kernel, none shed at this rate.
        x = j["xdp"]
        eq(b + " socket mode shedding on (XDP program in pass mode)", j["shed_on"], True)
        eq(b + " XDP mep packets = no_xsk_to_kernel = sent", (x["mep"]["packets"], x["no_xsk_to_kernel"]["packets"]), (pk, pk))
        eq(b + " XDP malformed, to_xsk, shed", (xdp_malformed(j), x["to_xsk"]["packets"], j["shed_meps"]), (0, 0, 0))
tot_sent = sum(J(n)["fragments"] for srcs in P["builders"].values() for n in srcs)
tot_out = sum(J(b)["out_events"] for b in P["builders"])
for k, want in sorted(P["sinks"].items()):
    j = J(k)
    eq(k + " events (round robin share)", j["events"], want)
    eq(k + " complete", j["complete"], want)
    eq(k + " incomplete, missing, errors, duplicates", (j["incomplete"], j["missing_fragments"], j["errors"], j["duplicates"]), (0, 0, 0, 0))
    eq(k + " result", j["result"], "ok")
eq("sink events = builder out_events", sum(J(k)["events"] for k in P["sinks"]), tot_out)
eq("sink bytes = builder out_bytes", sum(J(k)["bytes"] for k in P["sinks"]), sum(J(b)["out_bytes"] for b in P["builders"]))
eq("sink fragments = fragments sent", sum(J(k)["fragments"] for k in P["sinks"]), tot_sent)
PY
	e2e_no_xdp "$case"
}

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# make install and the systemd units (issue 23):
#  - tree: `make install DESTDIR=$W/root` puts the binary, a man page per
#    command (rendered by man without a warning), the bpftrace scripts, the
#    dissector, the examples, the units, the Grafana dashboard and the
#    Prometheus alerting rules in place (the installed rules pass
#    `promtool check rules`, the dashboard loads as JSON); the installed `xevb
#    --help` runs; `make uninstall` removes every file again.
#  - run: the installed xevb builds on the testbed (2 hosts x 2 sources ->
#    builder -> farm node, 3000 events, every one complete and checked).
#  - verify: `systemd-analyze verify` on the installed units, with the
#    installed tree mounted at its PREFIX in a private mount namespace (the
#    units name /usr/local/bin/xevb and man pages); skipped with a reason
#    where systemd-analyze is missing.
#  - exposure: `systemd-analyze security --offline=yes` on the installed
#    units: at most 6.0 for xevb-build@, 4.5 for xevb-dfm and xevb-sink@;
#    skipped with a reason where systemd-analyze or --offline is missing.
#  - ready: the builder unit's own ExecStart line (systemd is not PID 1
#    here, or it would not be ours to use), %I and $XEVB_BUILD_ARGS filled
#    in from an env file the way systemd does, as its DynamicUser (nobody)
#    with its AmbientCapabilities, CapabilityBoundingSet and NoNewPrivileges
#    (setpriv), its RuntimeDirectory (/run/xevb, kept between starts) and
#    the kernel's 8 MiB RLIMIT_MEMLOCK, with NOTIFY_SOCKET on a socket this
#    test reads: READY=1 comes from the xevb process, once its XDP program
#    is attached; it then builds 2000 events exactly; a SIGTERM (systemctl
#    stop) ends it with status 0 and nothing attached; once READY it runs
#    with no capability; killed (SIGKILL), its helper detaches at once;
#    with --keep-privileges, after a SIGKILL the next start under the same
#    capabilities removes the stale program (by the id its lock file
#    records: no CAP_SYS_ADMIN) and is READY again. The hardening setpriv
#    cannot give (namespaces, system call filter) is not exercised here.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init in "${1:-build}"
OUT=${1:-build}
PREFIX=/usr/local
ROOT=$E2E_WORK/root
UNIT_DIR=$ROOT$PREFIX/lib/systemd/system

# ---------------------------------------------------------------------------
e2e_log "tree: make install DESTDIR=$ROOT"
if make --no-print-directory install OUT="$OUT" DESTDIR="$ROOT" >"$E2E_WORK/install.log" 2>&1; then
	e2e_ok "make install"
else
	sed 's/^/  | /' "$E2E_WORK/install.log"
	e2e_die "make install"
fi
X=$ROOT$PREFIX/bin/xevb
[[ -x $X ]] && e2e_ok "installed $PREFIX/bin/xevb" || e2e_die "no $PREFIX/bin/xevb in $ROOT"
if "$X" --help | grep '^  build ' >/dev/null; then e2e_ok "installed xevb --help lists the commands"; else e2e_fail "installed xevb --help"; fi
"$X" version | grep -q '^xevb ' && e2e_ok "installed xevb version" || e2e_fail "installed xevb version"
for page in xevb $("$X" help-man --list | sed 's/^/xevb-/'); do
	f=$ROOT$PREFIX/share/man/man1/$page.1
	# lintian's check: groff warnings while man renders the page.
	warn=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" 2>&1 >/dev/null)
	if [[ -s $f && -z $warn ]] && man -l "$f" 2>/dev/null | grep '^NAME' >/dev/null; then
		e2e_ok "man page $page(1) renders without a warning"
	else
		e2e_fail "man page $page(1): ${warn:-missing or empty}"
	fi
done
# The build page carries the option table: one entry per option.
nopt=$("$X" build --help | sed '/^Examples:/q' | grep -cE '^ +-')
nman=$(grep -c '^\.TP' "$ROOT$PREFIX/share/man/man1/xevb-build.1")
e2e_check man_options <<PY
eq("xevb-build(1) entries = options in build --help", $nman, $nopt)
PY
for f in share/xevb/trace/run.sh share/xevb/trace/drops.bt share/xevb/trace/fold-stacks.py \
	"lib/$(gcc -dumpmachine)/wireshark/plugins/xevb.lua" share/doc/xevb/examples/build.env \
	lib/systemd/system/xevb-build@.service lib/systemd/system/xevb-sink@.service \
	lib/systemd/system/xevb-dfm.service share/xevb/grafana/xevb.json share/xevb/prometheus/xevb-alerts.yml \
	share/bash-completion/completions/xevb; do
	[[ -s $ROOT$PREFIX/$f ]] && e2e_ok "installed $PREFIX/$f" || e2e_fail "not installed: $PREFIX/$f"
done
if ! command -v promtool >/dev/null; then
	e2e_fail "promtool not installed (bash scripts/install-deps.sh)"
elif promtool check rules "$ROOT$PREFIX/share/xevb/prometheus/xevb-alerts.yml" >"$E2E_WORK/rules.log" 2>&1; then
	e2e_ok "installed alerting rules: promtool check rules"
else
	e2e_fail "installed alerting rules: $(tail -n 3 "$E2E_WORK/rules.log")"
fi
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$ROOT$PREFIX/share/xevb/grafana/xevb.json" &&
	e2e_ok "installed dashboard loads as JSON" || e2e_fail "installed dashboard: not JSON"
runsh=$(bash "$ROOT$PREFIX/share/xevb/trace/run.sh" 2>&1)   # usage: the scripts it found
grep -q 'one of: .*drops' <<<"$runsh" &&
	e2e_ok "installed trace/run.sh finds its scripts beside it" || e2e_fail "installed trace/run.sh"
if grep -q "^ExecStart=$PREFIX/bin/xevb build --dev %I \$XEVB_BUILD_ARGS$" "$UNIT_DIR/xevb-build@.service" &&
	grep -q '^EnvironmentFile=/etc/xevb/build-%I.env$' "$UNIT_DIR/xevb-build@.service"; then
	e2e_ok "xevb-build@.service names the installed binary and /etc/xevb/build-%I.env"
else
	e2e_fail "xevb-build@.service paths: $(grep -E '^(ExecStart|EnvironmentFile)=' "$UNIT_DIR/xevb-build@.service")"
fi
! grep -rl '@[A-Z]*DIR@' "$ROOT" && e2e_ok "no @DIR@ placeholder left in the installed tree" ||
	e2e_fail "placeholders left (above)"

# ---------------------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
	e2e_log "verify: systemd-analyze verify, the installed tree mounted at $PREFIX"
	if err=$(unshare -m sh -c 'mount --bind "$1" "$2" && MANPATH="$2/share/man" exec systemd-analyze verify \
		"$3/xevb-build@eth0.service" "$3/xevb-sink@farm0.service" "$3/xevb-dfm.service"' \
		sh "$ROOT$PREFIX" "$PREFIX" "$PREFIX/lib/systemd/system" 2>&1) && [[ -z $err ]]; then
		e2e_ok "systemd-analyze verify: xevb-build@eth0, xevb-sink@farm0, xevb-dfm (binary, man pages found)"
	else
		echo "$err" | sed 's/^/  | /'
		e2e_fail "systemd-analyze verify"
	fi
else
	e2e_log "SKIP verify: systemd-analyze is not installed (Debian package systemd)"
fi

# ---------------------------------------------------------------------------
# What a security review reads first: systemd's own exposure score (0 to 10,
# lower is better) of each installed unit, at most 6.0 for the builder (it
# needs the network, BPF and XDP) and 4.5 for the others.
if ! command -v systemd-analyze >/dev/null; then
	e2e_log "SKIP exposure: systemd-analyze is not installed (Debian package systemd)"
elif ! systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
	e2e_log "SKIP exposure: systemd-analyze $(systemd-analyze --version | awk 'NR == 1 { print $2 }') has no security --offline (systemd 250+)"
else
	e2e_log "exposure: systemd-analyze security --offline=yes --root=$ROOT"
	for u in xevb-build@.service:6.0 xevb-dfm.service:4.5 xevb-sink@.service:4.5; do
		out=$(systemd-analyze security --offline=yes --root="$ROOT" "${u%:*}" 2>&1)
		lvl=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' <<<"$out")
		if [[ -n $lvl ]] && awk -v l="$lvl" -v m="${u#*:}" 'BEGIN { exit !(l <= m) }'; then
			e2e_ok "exposure: ${u%:*} $lvl, at most ${u#*:}"
		else
			echo "$out" | grep -v '^✓' | sed 's/^/  | /'
			e2e_fail "exposure: ${u%:*} '${lvl:-no score}', want at most ${u#*:}"
		fi
	done
fi

# ---------------------------------------------------------------------------
tb_up --sources 2 --builders 1 --sinks 1 || e2e_die "tb_up"
E2E_DEST=$(tb_addr builder 0)
BNS=$(tb_ns builder 0)
SINK="$(tb_addr sink 0):$E2E_PORT"

e2e_log "run: the installed xevb on the testbed, 2 hosts x 2 sources, 3000 events"
e2e_topology inst xdp raw 2 2 1 1 3000

# ---------------------------------------------------------------------------
e2e_log "ready: systemd is $( [[ $(ps -p 1 -o comm=) == systemd ]] || echo 'not ')PID 1 ($(ps -p 1 -o comm=)): the unit's ExecStart line, run as systemd would"
# unit_load FILE: the unit's ExecStart line and how systemd would run it:
# UNIT_EXEC, UNIT_VAR (the $VAR it expands), UNIT_PRIV (setpriv options for
# its CapabilityBoundingSet, AmbientCapabilities, NoNewPrivileges,
# DynamicUser as nobody), UNIT_RUNDIR (its RuntimeDirectory, /run/NAME).
# The notify sockets live in $E2E_WORK: units running as nobody reach them.
chmod 0711 "$E2E_WORK"
unit_caps() {
	local c set=-all
	for c in $(sed -n "s/^$1=//p" "$2"); do
		c=${c#CAP_}
		set+=",+${c,,}"
	done
	echo "$set"
}
unit_load() {
	local amb
	UNIT_EXEC=$(sed -n 's/^ExecStart=//p' "$1")
	UNIT_VAR=$(grep -o '\$XEVB_[A-Z]*_ARGS' <<<"$UNIT_EXEC")
	UNIT_VAR=${UNIT_VAR#\$}
	amb=$(unit_caps AmbientCapabilities "$1")
	UNIT_PRIV=(--bounding-set "$(unit_caps CapabilityBoundingSet "$1")" --inh-caps="$amb")
	[[ $amb == -all ]] || UNIT_PRIV+=(--ambient-caps="$amb")
	grep -q '^NoNewPrivileges=yes$' "$1" && UNIT_PRIV+=(--no-new-privs)
	grep -q '^DynamicUser=yes$' "$1" && UNIT_PRIV+=(--reuid=65534 --regid=65534 --clear-groups)
	UNIT_RUNDIR=$(sed -n 's/^RuntimeDirectory=/\/run\//p' "$1")
	e2e_log "$(basename "$1"): ExecStart=$UNIT_EXEC; setpriv ${UNIT_PRIV[*]}${UNIT_RUNDIR:+; $UNIT_RUNDIR}"
}
# A unit's RuntimeDirectory, owned by its (dynamic) user, kept between starts
# (RuntimeDirectoryPreserve=yes): mounted over /run/NAME in the unit's own
# mount namespace, so the machine's /run/NAME stays as it is.
RUNTIME=$E2E_WORK/runtime
install -d -o 65534 -g 65534 -m 0700 "$RUNTIME"

# unit_start NAME NS ARGS: the loaded unit's ExecStart line (unit_load) with
# %i and %I = eth0 and its $VAR = ARGS read from NAME.env (KEY=VALUE, as
# EnvironmentFile= reads it; an unbraced $VAR splits at spaces, as systemd
# splits it), in a clean environment with NOTIFY_SOCKET, in namespace NS;
# the installed tree is mounted at PREFIX so the line's own path runs.
# Returns once a READY=1 arrived (dies after E2E_WAIT without); NAME.notify
# holds what came: the messages, the sender's pid and command, and whether
# an XDP program was attached on eth0 of NS when READY=1 arrived. The xevb
# pid: $UNIT_PID. UNIT_RC: the exit status it must end with (default 0).
unit_start() {
	local name=$1 ns=$2 args=$3 sock=$E2E_WORK/$1.sock t
	printf '# test instance\n%s=%s\n' "$UNIT_VAR" "$args" >"$E2E_WORK/$name.env"
	rm -f "$sock" "$E2E_WORK/$name.notify"
	timeout "$E2E_TMO" python3 - "$sock" "$E2E_WORK/$name.notify" "$ns" "$E2E_WAIT" <<'PY' &
import json, os, socket, struct, subprocess, sys
path, out, ns, wait_s = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path)
os.chmod(path, 0o666)   # as systemd's: units with DynamicUser= send too
s.settimeout(float(wait_s))
res = {"ready": False, "messages": []}
try:
    while True:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = 0
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", data[:12])[0]
        lines = msg.decode(errors="replace").split("\n")
        res["messages"].append(lines)
        if "READY=1" in lines:
            link = subprocess.run(["ip", "-n", ns, "-d", "link", "show", "eth0"], capture_output=True, text=True).stdout
            res.update(ready=True, pid=pid, xdp_attached="prog/xdp" in link)
            try:
                res["comm"] = open("/proc/%d/comm" % pid).read().strip()
            except OSError:
                res["comm"] = None
            break
except socket.timeout:
    res["timeout"] = True
json.dump(res, open(out, "w"))
PY
	local lpid=$!
	for ((t = 0; t < E2E_WAIT * 20; t++)); do [[ -S $sock ]] && break; sleep 0.05; done
	[[ -S $sock ]] || e2e_die "$name: notify socket listener did not start"
	local env
	env=$(sed -n "s/^$UNIT_VAR=//p" "$E2E_WORK/$name.env")
	local cmd=${UNIT_EXEC//%[iI]/eth0}
	cmd=${cmd//\$$UNIT_VAR/$env}
	# The installed tree at PREFIX, the unit's RuntimeDirectory (if any) over /run/NAME.
	local mnt='mount --bind "$1" "$2" || exit 1
[ -z "$4" ] || { [ -d "$4" ] || mkdir -m 0700 "$4"; mount --bind "$3" "$4"; } || exit 1
shift 4; exec "$@"'
	# shellcheck disable=SC2086 # split as systemd splits an unbraced $VAR
	unshare -m sh -c "$mnt" sh "$ROOT$PREFIX" "$PREFIX" "$RUNTIME" "$UNIT_RUNDIR" \
		ip netns exec "$ns" timeout "$E2E_TMO" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin NOTIFY_SOCKET="$sock" \
		prlimit --memlock=8388608 setpriv "${UNIT_PRIV[@]}" -- $cmd \
		>"$E2E_WORK/$name.json" 2>"$E2E_WORK/$name.err" &
	_e2e_track $! "$name" "${UNIT_RC:-0}"
	wait "$lpid" 2>/dev/null
	[[ -s $E2E_WORK/$name.notify ]] || e2e_die "$name: the notify listener wrote nothing"
	UNIT_PID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid", 0))' "$E2E_WORK/$name.notify")
	((UNIT_PID > 0)) || { e2e_show "$name"; e2e_die "$name: no READY=1 within $E2E_WAIT s"; }
}

# unit_ready_check NAME STATUS [XDP]: READY=1 from xevb itself with STATUS;
# XDP: the program was attached by then.
unit_ready_check() {
	WANT_STATUS=$2 WANT_XDP=${3:-} e2e_check "$1" <<'PY'
n = json.load(open(os.path.join(W, CASE + ".notify")))
true("READY=1 received", n["ready"], n)
eq("sent by", n.get("comm"), "xevb")
if os.environ["WANT_XDP"]:
    true("XDP program attached on eth0 when READY=1 arrived", n.get("xdp_attached"), n)
st = [l for m in n["messages"] for l in m if l.startswith("STATUS=")]
eq("STATUS", st, ["STATUS=" + os.environ["WANT_STATUS"]])
PY
}
BSTATUS="building on eth0 (XDP + AF_XDP)"
unit_load "$UNIT_DIR/xevb-build@.service"

# 1. READY, then the unit builds 2000 events exactly and ends at END_OF_RUN.
E2E_SINK_RC=0 e2e_sink 0 ready.k0 --expect-events 2000 --expect-sources 4
unit_start ready.b "$BNS" "--sources 0-3 --sink $SINK --exit-on-eor --duration $E2E_RUN --json --quiet"
unit_ready_check ready.b "$BSTATUS" xdp
e2e_source 0 ready.s0 --source-ids 0-1 --events 2000 --seed 5
e2e_source 1 ready.s1 --source-ids 2-3 --events 2000 --seed 6
e2e_wait_all
e2e_check ready <<'PY'
b, k = J("ready.b"), J("ready.k0")
sent = J("ready.s0")["fragments"] + J("ready.s1")["fragments"]
eq("fragments sent", sent, 8000)
eq("builder fragments received, in events", (b["frags_received"], b["frags_in_events"]), (sent, sent))
eq("builder events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (2000, 0))
eq("builder out_events", b["out_events"], 2000)
eq("farm node events complete, errors", (k["complete"], k["errors"]), (2000, 0))
PY
e2e_no_xdp ready

# 2. systemctl stop: SIGTERM to the main process; exit 0, XDP detached. Once
# READY it runs as nobody with no capability (the drop after set-up).
unit_start stop.b "$BNS" "--sources 0-3 --no-forward --duration $E2E_RUN --json --quiet"
unit_ready_check stop.b "$BSTATUS" xdp
e2e_wait_line 'running as nobody' "$E2E_WORK/stop.b.err" || e2e_fail "stop: no 'running as nobody' in $E2E_WAIT s"
st=$(awk '$1 == "Uid:" { u = $2 } $1 == "CapEff:" { c = $2 } END { print u, c }' "/proc/$UNIT_PID/status")
[[ $st == "65534 0000000000000000" ]] && e2e_ok "stop: runs as nobody with CapEff 0 under the unit's set" ||
	e2e_fail "stop: Uid and CapEff '$st', want '65534 0000000000000000'"
kill -TERM "$UNIT_PID"
e2e_wait_all
e2e_no_xdp stop

# 2b. The default builder killed (SIGKILL): its helper detaches at once.
UNIT_RC=137 unit_start kill.b "$BNS" "--sources 0-3 --no-forward --duration $E2E_RUN --json --quiet"
e2e_wait_line 'running as nobody' "$E2E_WORK/kill.b.err" || e2e_fail "kill: no 'running as nobody' in $E2E_WAIT s"
kill -KILL "$UNIT_PID"
e2e_wait_all
detached() { ! e2e_xdp_attached builder 0; }
e2e_until "$E2E_WAIT" detached
e2e_no_xdp kill

# 3. A builder with --keep-privileges killed (SIGKILL) leaves its program
# attached; the next start, under the same capability set, removes it and is
# READY again.
UNIT_RC=137 unit_start crash.b "$BNS" "--sources 0-3 --no-forward --duration $E2E_RUN --json --quiet --keep-privileges"
kill -KILL "$UNIT_PID"
e2e_wait_all
if e2e_xdp_attached builder 0; then
	e2e_ok "crash: the killed builder's XDP program is still attached"
else
	e2e_fail "crash: no program left to recover from (the test proves nothing)"
fi
unit_start again.b "$BNS" "--sources 0-3 --no-forward --duration $E2E_RUN --json --quiet"
unit_ready_check again.b "$BSTATUS" xdp
grep -q 'removing a stale xevb_steer' "$E2E_WORK/again.b.err" &&
	e2e_ok "again: removed the stale program" || e2e_fail "again: no 'removing a stale' line"
kill -TERM "$UNIT_PID"
e2e_wait_all
e2e_no_xdp again

# 4. The farm-node unit: no capability, as nobody (DynamicUser); READY=1 once
# it listens, SIGTERM ends it with status 0.
unit_load "$UNIT_DIR/xevb-sink@.service"
unit_start sinku.k "$(tb_ns sink 0)" "--listen $SINK --stats-interval 0 --json"
unit_ready_check sinku.k "listening on $SINK"
kill -TERM "$UNIT_PID"
e2e_wait_all

# 5. The DFM unit, likewise: READY=1 once its control socket is bound; with
# no builder coming it gives up after --wait-ms (exit status 1).
unit_load "$UNIT_DIR/xevb-dfm.service"
UNIT_RC=1 unit_start dfmu.d "$(tb_ns sink 0)" "--listen $(tb_addr sink 0):23901 --wait-ms 300 --json --quiet"
unit_ready_check dfmu.d "listening on $(tb_addr sink 0):23901"
e2e_wait_all

# ---------------------------------------------------------------------------
e2e_log "tree: make uninstall DESTDIR=$ROOT"
make --no-print-directory uninstall OUT="$OUT" DESTDIR="$ROOT" >"$E2E_WORK/uninstall.log" 2>&1 ||
	e2e_fail "make uninstall: $(tail -n 3 "$E2E_WORK/uninstall.log")"
left=$(find "$ROOT" -type f | sed "s|^$ROOT||")
[[ -z $left ]] && e2e_ok "make uninstall removed every installed file" || e2e_fail "left after uninstall: $left"

e2e_finish

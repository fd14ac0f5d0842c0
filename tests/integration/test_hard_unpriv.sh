#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Least privilege (issue 38, item 3): `xevb build` as nobody with exactly
# the capabilities user/ops/privdrop.h names (CAP_BPF, CAP_PERFMON,
# CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK: ambient, also the bounding set,
# as xevb-build@.service gives them), RLIMIT_MEMLOCK 8 MiB, its lock and
# statistics files in a directory nobody owns (XEVB_RUN_DIR, as the unit's
# RuntimeDirectory):
#  - doctor: as that user, capabilities, memlock and run_dir ok; without
#    any one of the five, the check it belongs to fails naming it, and the
#    builder exits 1, its warning naming it, nothing attached.
#  - e2e: 2 hosts x 2 sources -> builder -> farm node, 2000 events, all
#    complete; the builder runs as nobody with every capability set empty
#    and no_new_privs, its helper as nobody with CAP_NET_ADMIN alone; `xevb
#    stats` reads its statistics; after exit nothing attached, no file left.
#  - stale: a --keep-privileges builder killed (SIGKILL) leaves its program;
#    the next start, with no CAP_SYS_ADMIN to look it up by id, knows it by
#    the id the lock file records, removes it and builds.
#  - foreign: a program xevb did not load is refused (exit 1, it stays);
#    --force replaces it.
#  - fail: XEVB_TEST_FAIL_STEP=N (test only) fails the start at its N-th
#    step after the XDP attach, N = 1, 2, ... until a start goes through:
#    after each, no XDP program on the interface and no file left. As nobody
#    and as root, XDP mode; as nobody, socket mode (its shedding program).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init hu "${1:-build}" --sources 2 --builders 1 --sinks 1
OUT=${1:-build}
E2E_DEST=$(tb_addr builder 0)
BNS=$(tb_ns builder 0)
SINK="$(tb_addr sink 0):$E2E_PORT"
NSINO=$(ip netns exec "$BNS" stat -L -c %i /proc/self/ns/net)
e2e_need setpriv prlimit
CAPS=(bpf perfmon net_admin net_raw ipc_lock)
# The helper's effective set: CAP_NET_ADMIN (12) alone, to detach.
HELPER_HEX=0000000000001000

# The binary where nobody may run it, the run directory nobody owns.
chmod 0711 "$E2E_WORK"
XROOT=$X
cp "$X" "$E2E_WORK/xevb" && chmod 0755 "$E2E_WORK/xevb"
RUN=$E2E_WORK/run
install -d -o 65534 -g 65534 -m 0700 "$RUN"
RUNF="$RUN/$NSINO-eth0"

# unpriv_x NAME CAP...: a script that runs xevb as nobody with exactly CAPs.
unpriv_x() {
	local name=$1 c set=-all
	shift
	for c; do set+=",+$c"; done
	printf '#!/bin/sh\nexec env XEVB_RUN_DIR=%s prlimit --memlock=8388608 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=%s --ambient-caps=%s --bounding-set=%s -- %s "$@"\n' \
		"$RUN" "$set" "$set" "$set" "$E2E_WORK/xevb" >"$E2E_WORK/$name"
	chmod 0755 "$E2E_WORK/$name"
	echo "$E2E_WORK/$name"
}
XU=$(unpriv_x xevb-unpriv "${CAPS[@]}")
attached() { e2e_xdp_attached builder 0 2>/dev/null; }
runfiles() { ls "$1".* 2>/dev/null | tr '\n' ' '; }

# ---------------------------------------------------------------------------
e2e_log "doctor: as nobody with ${CAPS[*]}, then without each"
ip netns exec "$BNS" timeout 20 "$XU" doctor --dev eth0 --json >"$E2E_WORK/dr.all.json" 2>"$E2E_WORK/dr.all.err"
for c in "${CAPS[@]}"; do
	others=()
	for o in "${CAPS[@]}"; do [[ $o == "$c" ]] || others+=("$o"); done
	x=$(unpriv_x "xevb-no-$c" "${others[@]}")
	ip netns exec "$BNS" timeout 20 "$x" doctor --dev eth0 --json >"$E2E_WORK/dr.no-$c.json" 2>/dev/null
	ip netns exec "$BNS" timeout 30 "$x" build --dev eth0 --sources 0-3 --no-forward --duration 1 \
		>"$E2E_WORK/b.no-$c.json" 2>"$E2E_WORK/b.no-$c.err"
	echo $? >"$E2E_WORK/b.no-$c.rc"
	attached && echo yes >"$E2E_WORK/b.no-$c.attached" || echo no >"$E2E_WORK/b.no-$c.attached"
	runfiles "$RUNF" >"$E2E_WORK/b.no-$c.files"
done
CAPS_LIST="${CAPS[*]}" e2e_check doctor <<'PY'
import re
V = lambda name: {c["name"]: c for c in json.loads(open(os.path.join(W, name)).read())["checks"]}
d = V("dr.all.json")
for k in ("capabilities", "memlock", "run_dir"):
    eq("all five: " + k, d[k]["verdict"], "ok")
true("all five: run_dir names the directory", os.path.join(W, "run") in d["run_dir"]["detail"], d["run_dir"])
for c in os.environ["CAPS_LIST"].split():
    name = "CAP_" + c.upper()
    d = V("dr.no-%s.json" % c)
    chk = "memlock" if c == "ipc_lock" else "capabilities"
    eq("without %s: doctor %s" % (name, chk), d[chk]["verdict"], "fail")
    if chk == "capabilities":
        true("without %s: doctor names it" % name, name + " (" in d[chk]["detail"], d[chk]["detail"])
        eq("without %s: memlock" % name, d["memlock"]["verdict"], "ok")
    else:
        eq("without %s: capabilities" % name, d["capabilities"]["verdict"], "ok")
    err = open(os.path.join(W, "b.no-%s.err" % c)).read()
    eq("without %s: build exit status" % name, open(os.path.join(W, "b.no-%s.rc" % c)).read().strip(), "1")
    true("without %s: build warns naming it" % name, re.search(r"warning: missing .*%s \(" % name, err), err[-600:])
    eq("without %s: XDP attached after exit" % name, open(os.path.join(W, "b.no-%s.attached" % c)).read().strip(), "no")
    eq("without %s: files left" % name, open(os.path.join(W, "b.no-%s.files" % c)).read().split(), [])
PY

# ---------------------------------------------------------------------------
e2e_log "e2e: build as nobody with ${CAPS[*]}, 2 x 2 sources -> farm node, 2000 events"
e2e_sink 0 e.k --expect-events 2000 --expect-sources 4
X=$XU e2e_builder 0 e.b --sources 0-3 --timeout-ms 200 --exit-on-eor --duration 15 --sink "$SINK"
bpid=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "e2e: no xevb build process"
for ((t = 0; t < 100; t++)); do grep -q 'running as nobody' "$E2E_WORK/e.b.err" && break; sleep 0.05; done
grep -E '^(Uid|CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' "/proc/$bpid/status" >"$E2E_WORK/e.status" 2>/dev/null
helper=$(pgrep -P "$bpid" -x xevb)
[[ -n $helper ]] && grep -E '^(Uid|CapEff|CapPrm|CapAmb):' "/proc/$helper/status" >"$E2E_WORK/e.helper" 2>/dev/null
XEVB_RUN_DIR=$RUN ip netns exec "$BNS" timeout 10 "$XROOT" stats --dev eth0 >"$E2E_WORK/e.stats" 2>&1
echo $? >"$E2E_WORK/e.stats.rc"
e2e_source 0 e.s0 --source-ids 0-1 --events 2000 --pack 10 --seed 31
e2e_source 1 e.s1 --source-ids 2-3 --events 2000 --pack 10 --seed 32
e2e_wait_all
attached && echo yes >"$E2E_WORK/e.attached" || echo no >"$E2E_WORK/e.attached"
runfiles "$RUNF" >"$E2E_WORK/e.files"
HELPER_HEX=$HELPER_HEX e2e_check e2e <<'PY'
b, k = J("e.b"), J("e.k")
sent = J("e.s0")["fragments"] + J("e.s1")["fragments"]
eq("fragments received, in events = sent", (b["frags_received"], b["frags_in_events"]), (sent, sent))
eq("events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (2000, 0))
eq("farm node: complete, errors", (k["complete"], k["errors"]), (2000, 0))
st = {a: " ".join(v.split()) for a, v in (l.split(":", 1) for l in open(os.path.join(W, "e.status")).read().splitlines())}
eq("builder: Uid", st.get("Uid"), "65534 65534 65534 65534")
eq("builder: CapInh CapPrm CapEff CapAmb", [st.get(c) for c in ("CapInh", "CapPrm", "CapEff", "CapAmb")], ["0000000000000000"] * 4)
eq("builder: NoNewPrivs", st.get("NoNewPrivs"), "1")
h = {a: " ".join(v.split()) for a, v in (l.split(":", 1) for l in open(os.path.join(W, "e.helper")).read().splitlines())}
eq("helper: Uid", h.get("Uid"), "65534 65534 65534 65534")
eq("helper: CapEff, CapPrm, CapAmb: CAP_NET_ADMIN alone", [h.get(c) for c in ("CapEff", "CapPrm", "CapAmb")],
   [os.environ["HELPER_HEX"]] * 2 + ["0000000000000000"])
err = open(os.path.join(W, "e.b.err")).read()
true("no warning about missing capabilities", "warning: missing" not in err, err[-400:])
eq("xevb stats (root, XEVB_RUN_DIR) exit status", open(os.path.join(W, "e.stats.rc")).read().strip(), "0")
true("xevb stats read the builder's file", "eth0" in open(os.path.join(W, "e.stats")).read(), open(os.path.join(W, "e.stats")).read()[-300:])
eq("after exit: XDP attached", open(os.path.join(W, "e.attached")).read().strip(), "no")
eq("after exit: files left", open(os.path.join(W, "e.files")).read().split(), [])
PY

# ---------------------------------------------------------------------------
e2e_log "stale: --keep-privileges as nobody, SIGKILL, then a plain start"
E2E_BUILD_RC=137 X=$XU e2e_builder 0 st.a --sources 0-3 --no-forward --duration 15 --keep-privileges
apid=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "stale: no xevb build process"
for ((t = 0; t < 100; t++)); do
	[[ $(cut -d' ' -f2 "$RUNF.lock" 2>/dev/null) =~ ^[1-9] ]] && break
	sleep 0.05
done
stale=$(tb_exec builder 0 ip -d link show eth0 | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
recorded=$(cat "$RUNF.lock" 2>/dev/null)
kill -KILL "$apid"
e2e_wait_all
attached && e2e_ok "stale: program $stale left attached (lock file: '$recorded')" ||
	e2e_fail "stale: nothing left attached (the test proves nothing)"
X=$XU e2e_builder 0 st.b --sources 0-3 --no-forward --duration 1
e2e_wait_all
grep -q "removing a stale xevb_steer (id $stale)" "$E2E_WORK/st.b.err" &&
	e2e_ok "stale: the next start removed program $stale" || e2e_fail "stale: no 'removing a stale xevb_steer (id $stale)'"
attached && e2e_fail "stale: a program is attached after exit" || e2e_ok "stale: nothing attached after exit"

# ---------------------------------------------------------------------------
e2e_log "foreign: a program xevb did not load"
tb_exec builder 0 ip link set dev eth0 xdpdrv obj "$OUT/bpf/xevb_pass.bpf.o" sec xdp ||
	e2e_die "foreign: cannot attach $OUT/bpf/xevb_pass.bpf.o"
ip netns exec "$BNS" timeout 30 "$XU" build --dev eth0 --sources 0-3 --no-forward --duration 1 \
	>"$E2E_WORK/fo.a.json" 2>"$E2E_WORK/fo.a.err"
rc=$?
[[ $rc == 1 ]] && e2e_ok "foreign: refused, exit status 1" || e2e_fail "foreign: exit status $rc, want 1"
grep -q 'not the one a builder recorded' "$E2E_WORK/fo.a.err" && grep -q 'pass --force to replace it' "$E2E_WORK/fo.a.err" &&
	e2e_ok "foreign: says why and what to do" || e2e_fail "foreign: message: $(tail -n 2 "$E2E_WORK/fo.a.err")"
tb_exec builder 0 ip -d link show eth0 | grep -q 'name xevb_pass' && e2e_ok "foreign: xevb_pass still attached" ||
	e2e_fail "foreign: xevb_pass gone"
ip netns exec "$BNS" timeout 30 "$XU" build --dev eth0 --sources 0-3 --no-forward --duration 1 --force \
	>"$E2E_WORK/fo.b.json" 2>"$E2E_WORK/fo.b.err"
rc=$?
[[ $rc == 0 ]] && grep -q -- '--force: replacing XDP program id' "$E2E_WORK/fo.b.err" &&
	e2e_ok "foreign: --force replaced it" || e2e_fail "foreign: --force: exit status $rc: $(tail -n 2 "$E2E_WORK/fo.b.err")"
attached && e2e_fail "foreign: a program is attached after exit" || e2e_ok "foreign: nothing attached after exit"

# ---------------------------------------------------------------------------
# fail_steps CASE XEVB RUNF [build options]: a start per step after the attach.
fail_steps() {
	local case=$1 x=$2 runf=$3 n rc step
	shift 3
	: >"$E2E_WORK/fs.$case"
	for ((n = 1; n <= 16; n++)); do
		XEVB_TEST_FAIL_STEP=$n ip netns exec "$BNS" timeout 30 "$x" build --dev eth0 --sources 0-3 --no-forward \
			--duration 1 "$@" >"$E2E_WORK/fs.$case.$n.json" 2>"$E2E_WORK/fs.$case.$n.err"
		rc=$?
		step=$(sed -n "s/.*XEVB_TEST_FAIL_STEP=$n: the start fails here, at step '\([a-z_]*\)'.*/\1/p" \
			"$E2E_WORK/fs.$case.$n.err")
		echo "$n ${step:--} $rc $(attached && echo attached || echo detached) $(runfiles "$runf" | wc -w)" \
			>>"$E2E_WORK/fs.$case"
		[[ -n $step ]] || break
	done
}
e2e_log "fail: XEVB_TEST_FAIL_STEP=1, 2, ... as nobody (XDP, socket) and as root (XDP)"
fail_steps nobody "$XU" "$RUNF"
fail_steps socket "$XU" "$RUNF" --mode socket
fail_steps root "$XROOT" "/run/xevb/$NSINO-eth0"
e2e_check fail <<'PY'
for case in ("nobody", "socket", "root"):
    rows = [l.split() for l in open(os.path.join(W, "fs." + case)).read().splitlines()]
    print("# %s: %s" % (case, ", ".join("%s %s: exit %s, %s, %s files" % tuple(r) for r in rows)))
    steps = [r for r in rows if r[1] != "-"]
    true(case + ": a start went through after the last step", rows and rows[-1][1] == "-" and rows[-1][2] == "0", rows[-1:])
    true(case + ": steps after the attach failed", len(steps) >= (5 if case == "socket" else 7), [r[1] for r in steps])
    for n, step, rc, xdp, files in rows:
        # In socket mode the shedding program is optional: the start goes on without it.
        want = "0" if step == "-" or (case == "socket" and step == "attach") else "1"
        eq("%s step %s (%s): exit status" % (case, n, step), rc, want)
        eq("%s step %s (%s): XDP after exit, files left" % (case, n, step), (xdp, files), ("detached", "0"))
PY
e2e_no_xdp end
e2e_finish

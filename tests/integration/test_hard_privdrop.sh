#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Hardening (issue 9): privilege drop.
#  - selftest: `build --user nobody --tune selftest-privs=1`: after attach and bind
#    the builder runs as nobody with every capability set empty (checked
#    from outside in /proc and by the builder itself), the data path keeps
#    building (2000 events sent after the drop, all complete, every CRC
#    checked), and from that process map updates/deletes on its XSKMAP and
#    counters, map/prog fd by id, program load, XDP attach and detach and
#    setuid(0) all fail with EPERM. After it exits, nothing is attached and
#    its /run/xevb files are gone (removed by the root helper).
#  - killed: `--user nobody`, SIGKILL to the unprivileged builder while
#    traffic flows: the root helper detaches XDP and removes the lock, and
#    a plain builder starts next without finding anything stale.
#  - socket: `--mode socket --user nobody` forwards to a TCP sink;
#    the helper removes the stats file at exit.
#  - default (issue 21): a builder given no privilege option runs as
#    nobody with CapEff (and every other set) 0 after start, prints no
#    privileges line (the log says it), builds, and leaves nothing attached
#    and no /run/xevb file after it exits; `--keep-privileges` keeps root
#    and its full capability set, and still detaches at exit. Under a
#    bounded capability set without CAP_SETUID/CAP_SETGID/CAP_SETPCAP (as a
#    service unit may give it, setpriv here) it stays uid 0 but with
#    CapEff/CapPrm/CapInh/CapAmb 0 and NoNewPrivs, says why, and its root
#    helper still detaches at exit.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init hp "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
NSINO=$(ip netns exec "$(tb_ns builder 0)" stat -L -c %i /proc/self/ns/net)
RUNF="/run/xevb/$NSINO-eth0"

attached() { tb_exec builder 0 ip -d link show eth0 2>/dev/null | grep -q 'prog/xdp'; }
# dropped NAME WHO: builder NAME has logged that it runs as WHO (E2E_WAIT at most).
dropped() { e2e_wait_line "running as $2" "$E2E_WORK/$1.err" || e2e_fail "$1: no 'running as $2' in $E2E_WAIT s"; }

# ---------------------------------------------------------------------------
e2e_log "selftest: build --user nobody --tune selftest-privs=1, 2 x 1000 events after the drop"
e2e_builder 0 ps.b --sources 0-3 --user nobody --tune selftest-privs=1 --timeout-ms 200 --exit-on-eor \
	--duration "$E2E_RUN" --output "$E2E_WORK/ps.evt" --metrics 9464
bpid=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "selftest: no xevb build process"
dropped ps.b nobody
grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/"$bpid"/status \
	>"$E2E_WORK/ps.status" 2>/dev/null
helper=$(pgrep -P "$bpid" -x xevb)
[[ -n $helper ]] && grep -E '^Uid:' /proc/"$helper"/status >"$E2E_WORK/ps.helper" 2>/dev/null
# The metrics thread starts after the drop and serves as nobody.
page_served() {
	tb_exec builder 0 curl -s -m 2 "http://127.0.0.1:9464/metrics" 2>/dev/null | grep -c '^xevb_' >"$E2E_WORK/ps.metrics"
	(($(cat "$E2E_WORK/ps.metrics") > 10))
}
e2e_until "$E2E_WAIT" page_served
F=(--events 1000 --pack 10 --frag-size 40-120 --rate 10000)
e2e_source 0 ps.s0 --source-ids 0-1 "${F[@]}" --seed 91
e2e_source 1 ps.s1 --source-ids 2-3 "${F[@]}" --seed 92
e2e_wait_all
e2e_sink_file ps.k "$E2E_WORK/ps.evt" --expect-sources 4
ls "$RUNF".* >"$E2E_WORK/ps.runfiles" 2>/dev/null
attached && echo yes >"$E2E_WORK/ps.attached" || echo no >"$E2E_WORK/ps.attached"
e2e_check selftest <<'PY'
b, k = J("ps.b"), J("ps.k")
with open(os.path.join(W, "ps.b.json")) as f:
    pl = [json.loads(l)["privileges"] for l in f if l.startswith('{"privileges"')]
eq("one privileges line", len(pl), 1)
p = pl[0]
print("# privileges: " + json.dumps(p))
st = dict(l.split(":", 1) for l in open(os.path.join(W, "ps.status")).read().splitlines())
st = {a: " ".join(v.split()) for a, v in st.items()}
eq("/proc status of the running builder: Uid, Gid", (st.get("Uid"), st.get("Gid")), ("65534 65534 65534 65534",) * 2)
eq("/proc: supplementary groups", st.get("Groups", ""), "")
eq("/proc: CapInh CapPrm CapEff CapBnd CapAmb", [st.get(c) for c in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
   ["0000000000000000"] * 5)
eq("/proc: NoNewPrivs", st.get("NoNewPrivs"), "1")
helper = open(os.path.join(W, "ps.helper")).read().split() if os.path.exists(os.path.join(W, "ps.helper")) else []
eq("the clean-up helper is root", helper[1:2], ["0"])
eq("builder's own view: user, uid, caps", (p["user"], p["uid"], p["cap_eff"], p["cap_prm"], p["cap_bnd"], p["cap_amb"], p["no_new_privs"]),
   ("nobody", 65534, "0", "0", "0", "0", 1))
true("map fds reopened read-only (>= 6: xsks, counters, src_ips, src_ids, bss, rodata)", p["maps_readonly"] >= 6, p["maps_readonly"])
true("program fds closed", p["progs_closed"] >= 1, p["progs_closed"])
eq("link fds (none: attached through netlink)", p["links_closed"], 0)
eq("selftest: every privileged operation fails with EPERM", p["selftest"],
   {k: "EPERM" for k in ("map_update_xskmap", "map_update_counters", "map_delete_xskmap", "map_fd_by_id",
                         "prog_fd_by_id", "prog_load_xdp", "xdp_attach", "xdp_detach", "setuid_root")})
sent = J("ps.s0")["fragments"] + J("ps.s1")["fragments"]
eq("data path after the drop: fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (sent, sent))
eq("events complete", (b["events_complete"], b["events_incomplete"]), (1000, 0))
eq("XDP counters still readable: to_xsk frags = received", b["xdp"]["to_xsk"]["frags"], b["frags_received"])
eq("run ended", b["run_ended"], True)
eq("sink: events, complete, errors", (k["events"], k["complete"], k["errors"]), (1000, 1000, 0))
true("metrics page served after the drop (xevb_* lines)", int(open(os.path.join(W, "ps.metrics")).read() or 0) > 10,
     open(os.path.join(W, "ps.metrics")).read())
eq("after exit: XDP attached", open(os.path.join(W, "ps.attached")).read().strip(), "no")
eq("after exit: /run/xevb files of the interface", open(os.path.join(W, "ps.runfiles")).read().split(), [])
PY

# ---------------------------------------------------------------------------
e2e_log "killed: --user nobody, SIGKILL to the unprivileged builder under traffic"
E2E_BUILD_RC=137 e2e_builder 0 pk.b --sources 0-3 --user nobody --no-forward --duration "$E2E_RUN"
bpid=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "killed: no xevb build process"
dropped pk.b nobody
helper=$(pgrep -P "$bpid" -x xevb)
# Frames source host 0 put on the wire: its switch port's received count.
s0_frames() { ip netns exec "$(tb_switch)" cat "/sys/class/net/$(tb_port source 0)/statistics/rx_packets"; }
s0_base=$(s0_frames)
s0_sent_some() { (($(s0_frames) - s0_base >= 100)); }
e2e_source 0 pk.s0 --source-ids 0-1 --events 20000 --pack 10 --rate 10000 --no-end-of-run
# Killed while traffic flows: once 100 of the source's 4000 MEPs are out.
e2e_until "$E2E_WAIT" s0_sent_some || e2e_fail "killed: the source sent nothing in $E2E_WAIT s"
attached && e2e_ok "killed: XDP attached while it runs" || e2e_fail "killed: no XDP program while it runs"
kill -KILL "$bpid"
e2e_wait_all
cleaned() { ! attached && ! ls "$RUNF".* >/dev/null 2>&1 && ! kill -0 "$helper" 2>/dev/null; }
t0=$(date +%s%N)
e2e_until "$E2E_WAIT" cleaned && e2e_ok "killed: helper $helper detached XDP, removed $RUNF.* and exited (in $((($(date +%s%N) - t0) / 1000000)) ms)" ||
	e2e_fail "killed: after $E2E_WAIT s: attached=$(attached && echo yes || echo no) files=$(ls "$RUNF".* 2>/dev/null) helper alive=$(kill -0 "$helper" 2>/dev/null && echo yes || echo no)"
e2e_builder 0 pk.b2 --sources 0-3 --no-forward --duration 1
e2e_wait_all
grep -q 'stale' "$E2E_WORK/pk.b2.err" && e2e_fail "killed: next builder found something stale" ||
	e2e_ok "killed: next builder started with nothing stale to remove"

# ---------------------------------------------------------------------------
e2e_log "socket: --mode socket --user nobody forwards to a sink, and its stats file goes at exit"
e2e_sink 0 pso.k --expect-events 1000 --expect-sources 4
e2e_builder 0 pso.b --mode socket --sources 0-3 --user nobody --timeout-ms 200 --exit-on-eor --duration "$E2E_RUN" \
	--sink "$(tb_addr sink 0):$E2E_PORT"
dropped pso.b nobody
F=(--events 1000 --pack 10 --frag-size 40-120 --rate 10000)
e2e_source 0 pso.s0 --source-ids 0-1 "${F[@]}" --seed 93
e2e_source 1 pso.s1 --source-ids 2-3 "${F[@]}" --seed 94
e2e_wait_all
ls "$RUNF".* >"$E2E_WORK/pso.runfiles" 2>/dev/null
e2e_check socket <<'PY'
b = J("pso.b")
with open(os.path.join(W, "pso.b.json")) as f:
    p = [json.loads(l)["privileges"] for l in f if l.startswith('{"privileges"')][0]
eq("dropped: uid, caps", (p["uid"], p["cap_eff"], p["cap_bnd"]), (65534, "0", "0"))
sent = J("pso.s0")["fragments"] + J("pso.s1")["fragments"]
eq("fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (sent, sent))
eq("events complete", b["events_complete"], 1000)
k = J("pso.k")
eq("sink over TCP: events, complete, errors, result", (k["events"], k["complete"], k["errors"], k["result"]), (1000, 1000, 0, "ok"))
eq("after exit: /run/xevb files of the interface", open(os.path.join(W, "pso.runfiles")).read().split(), [])
PY

# ---------------------------------------------------------------------------
e2e_log "default: no privilege option: nobody, no capability, clean exit"
BOUNDED="$E2E_WORK/xevb-bounded"
printf '#!/bin/sh\nexec setpriv --bounding-set -setuid,-setgid,-setpcap %s "$@"\n' "$X" >"$BOUNDED"
chmod +x "$BOUNDED"
for mode in default keep bounded; do
	opt=() xevb=$X
	[[ $mode == keep ]] && opt=(--keep-privileges)
	[[ $mode == bounded ]] && xevb=$BOUNDED
	X=$xevb e2e_builder 0 pd.$mode --sources 0-3 --timeout-ms 200 --exit-on-eor --duration "$E2E_RUN" --no-forward "${opt[@]}"
	bpid=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "$mode: no xevb build process"
	[[ $mode == keep ]] || dropped "pd.$mode" ""   # (keep: nothing dropped, nothing said)
	grep -E '^(Uid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/"$bpid"/status >"$E2E_WORK/pd.$mode.status" 2>/dev/null
	F=(--events 1000 --pack 10 --frag-size 40-120 --rate 10000)
	e2e_source 0 pd.$mode.s0 --source-ids 0-1 "${F[@]}" --seed 95
	e2e_source 1 pd.$mode.s1 --source-ids 2-3 "${F[@]}" --seed 96
	e2e_wait_all
	ls "$RUNF".* >"$E2E_WORK/pd.$mode.runfiles" 2>/dev/null
	attached && echo yes >"$E2E_WORK/pd.$mode.attached" || echo no >"$E2E_WORK/pd.$mode.attached"
done
FULL=$(awk '$1 == "CapBnd:" { print $2 }' /proc/self/status)
export FULL
e2e_check default <<'PY'
def status(mode):
    st = dict(l.split(":", 1) for l in open(os.path.join(W, "pd.%s.status" % mode)).read().splitlines())
    return {a: " ".join(v.split()) for a, v in st.items()}
d, k, bd = status("default"), status("keep"), status("bounded")
eq("default: Uid", d.get("Uid"), "65534 65534 65534 65534")
eq("default: CapInh CapPrm CapEff CapBnd CapAmb", [d.get(c) for c in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
   ["0000000000000000"] * 5)
eq("default: NoNewPrivs", d.get("NoNewPrivs"), "1")
eq("default: no privileges line on stdout (not asked for)",
   [l for l in open(os.path.join(W, "pd.default.json")) if l.startswith('{"privileges"')], [])
true("default: the log says so", "running as nobody (uid 65534) with no capability" in open(os.path.join(W, "pd.default.err")).read())
eq("--keep-privileges: Uid", k.get("Uid"), "0 0 0 0")
eq("--keep-privileges: CapEff = the full set", k.get("CapEff"), os.environ["FULL"])
eq("bounded set: Uid", bd.get("Uid"), "0 0 0 0")
eq("bounded set: CapInh CapPrm CapEff CapAmb", [bd.get(c) for c in ("CapInh", "CapPrm", "CapEff", "CapAmb")],
   ["0000000000000000"] * 4)
eq("bounded set: NoNewPrivs", bd.get("NoNewPrivs"), "1")
err = open(os.path.join(W, "pd.bounded.err")).read()
true("bounded set: says why it stays uid 0", "no CAP_SETUID/CAP_SETGID: after set-up the data path stays uid 0" in err)
true("bounded set: the log says so", "running as root (uid 0) with no capability" in err)
for mode in ("default", "keep", "bounded"):
    b = J("pd." + mode)
    sent = J("pd.%s.s0" % mode)["fragments"] + J("pd.%s.s1" % mode)["fragments"]
    eq(mode + ": fragments received = in events = sent", (b["frags_received"], b["frags_in_events"]), (sent, sent))
    eq(mode + ": events complete", b["events_complete"], 1000)
    eq(mode + ": after exit: XDP attached", open(os.path.join(W, "pd.%s.attached" % mode)).read().strip(), "no")
    eq(mode + ": after exit: /run/xevb files", open(os.path.join(W, "pd.%s.runfiles" % mode)).read().split(), [])
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Hardening (issue 9): one interface, other owners.
#  - second: a second builder on an interface a builder already serves is
#    refused with a clear message naming the first one's pid; the first
#    keeps its program and builds what comes next.
#  - pins: xevb pins nothing in bpffs (no pinned path on its program or
#    maps); its only files are /run/xevb/<netns>-<if>.{lock,stats}, dir 0700,
#    files 0600.
#  - xdp_filter: xdp-filter (xdp-tools) attached first. libxdp's dispatcher
#    cannot load here (freplace is refused with EPERM), so the builder says
#    so and refuses to replace a program it did not load (exit 1, the filter
#    stays); with --force it replaces it, says so, and builds.
#    Where the dispatcher works the builder would run beside xdp-filter:
#    that path cannot be tested on this kernel.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init hc "${1:-build}" --sources 1 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
BNS=$(tb_ns builder 0)

prog_on_eth0() { tb_exec builder 0 ip -d link show eth0 2>/dev/null | sed -n 's/.*prog\/xdp id \([0-9]*\) name \([a-z_]*\).*/\1 \2/p'; }

# ---------------------------------------------------------------------------
e2e_log "second: a second builder on the same interface"
e2e_builder 0 sc.a --sources 0-1 --no-forward --timeout-ms 200 --exit-on-eor --duration "$E2E_RUN"
apid=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "second: no first builder"
first=$(prog_on_eth0)
timeout "$E2E_TMO" ip netns exec "$BNS" "$X" build --dev eth0 --sources 0-1 --no-forward --duration 1 \
	>"$E2E_WORK/sc.b.out" 2>"$E2E_WORK/sc.b.err"
rc=$?
[[ $rc == 1 ]] && e2e_ok "second: refused, exit status 1" || e2e_fail "second: exit status $rc, want 1"
want="another xevb builder (pid $apid) already runs on eth0; stop it first"
grep -qF "$want" "$E2E_WORK/sc.b.err" && e2e_ok "second: says '$want'" ||
	{ e2e_fail "second: message"; sed 's/^/  | /' "$E2E_WORK/sc.b.err"; }
[[ $(prog_on_eth0) == "$first" ]] && e2e_ok "second: first builder's program ($first) untouched" ||
	e2e_fail "second: program changed from '$first' to '$(prog_on_eth0)'"

# pins, while builder A runs
pid=${first%% *}
mids=$(bpftool -j prog show id "$pid" | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["map_ids"])))')
pins=$(bpftool -j -f prog show id "$pid" | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("pinned", [])))')
for m in $mids; do
	pins=$((pins + $(bpftool -j -f map show id "$m" | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("pinned", [])))')))
done
[[ $pins == 0 ]] && e2e_ok "pins: program $pid and maps $mids have no pinned path" || e2e_fail "pins: $pins pinned paths"
if grep -nE 'bpf_obj_pin|__pin\(|pin_path|pin_root' user/*/*.c >/dev/null; then
	e2e_fail "pins: the code pins something: $(grep -nE 'bpf_obj_pin|__pin\(|pin_path|pin_root' user/*/*.c | head -3)"
else
	e2e_ok "pins: no pinning call in user/"
fi
NSINO=$(ip netns exec "$BNS" stat -L -c %i /proc/self/ns/net)
perm=$(stat -c '%a %U' /run/xevb "/run/xevb/$NSINO-eth0.lock" "/run/xevb/$NSINO-eth0.stats" 2>&1 | tr '\n' ' ')
[[ $perm == "700 root 600 root 600 root " ]] && e2e_ok "pins: /run/xevb 700, lock and stats 600 (root)" ||
	e2e_fail "pins: modes '$perm', want '700 root 600 root 600 root '"

e2e_source 0 sc.s --source-ids 0-1 --events 1000 --pack 10
e2e_wait_all
e2e_check second <<'PY'
a, s = J("sc.a"), J("sc.s")
eq("first builder built everything after the refusal", (a["frags_in_events"], a["events_complete"]), (s["fragments"], 1000))
PY

# ---------------------------------------------------------------------------
e2e_log "xdp_filter: xdp-filter attached first on eth0"
# A private bpffs in the namespace's own mount namespace: xdp-filter wants
# one for its maps; the machine's /sys/fs/bpf is not touched.
xf() { ip netns exec "$BNS" sh -c 'mount -t bpf bpf /sys/fs/bpf && exec "$@"' sh "$@"; }
xf xdp-filter load eth0 -m native >"$E2E_WORK/xf.load" 2>&1 || e2e_die "xdp-filter load: $(cat "$E2E_WORK/xf.load")"
filt=$(prog_on_eth0)
[[ $filt == *xdpfilt* ]] && e2e_ok "xdp_filter: xdp-filter attached ($filt)" || e2e_die "xdp_filter: not attached: '$filt'"
timeout "$E2E_TMO" ip netns exec "$BNS" "$X" build --dev eth0 --sources 0-1 --no-forward --duration 1 \
	>"$E2E_WORK/xf.b.out" 2>"$E2E_WORK/xf.b.err"
rc=$?
[[ $rc == 1 ]] && e2e_ok "xdp_filter: builder refused, exit status 1" || e2e_fail "xdp_filter: exit status $rc, want 1"
for want in "eth0 already has XDP program '${filt#* }' (id ${filt%% *}), not loaded by xevb" \
	"libxdp's multi-program dispatcher cannot load on this kernel (freplace programs are refused: Operation not permitted)" \
	"it does not replace a program it did not load" "pass --force to replace it"; do
	grep -qF "$want" "$E2E_WORK/xf.b.err" && e2e_ok "xdp_filter: says '$want'" ||
		{ e2e_fail "xdp_filter: does not say '$want'"; sed 's/^/  | /' "$E2E_WORK/xf.b.err"; }
done
[[ $(prog_on_eth0) == "$filt" ]] && e2e_ok "xdp_filter: xdp-filter's program still attached" ||
	e2e_fail "xdp_filter: program is now '$(prog_on_eth0)'"

e2e_builder 0 xf.force --sources 0-1 --force --no-forward --timeout-ms 200 --exit-on-eor --duration "$E2E_RUN"
want="--force: replacing XDP program '${filt#* }' (id ${filt%% *}) on eth0"
grep -qF -- "$want" "$E2E_WORK/xf.force.err" && e2e_ok "xdp_filter: says '$want'" ||
	{ e2e_fail "xdp_filter: --force message"; sed 's/^/  | /' "$E2E_WORK/xf.force.err"; }
[[ $(prog_on_eth0) == *xevb_steer ]] && e2e_ok "xdp_filter: xevb_steer attached in its place" ||
	e2e_fail "xdp_filter: attached now: '$(prog_on_eth0)'"
e2e_source 0 xf.s --source-ids 0-1 --events 1000 --pack 10
e2e_wait_all
e2e_check xdp_filter <<'PY'
b, s = J("xf.force"), J("xf.s")
eq("forced builder built everything", (b["frags_in_events"], b["events_complete"], b["events_incomplete"]), (s["fragments"], 1000, 0))
PY
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# `xevb doctor --dev eth0` on the testbed's builder (a veth): every check
# prints one verdict; --json parses, has every check with name, verdict,
# detail and fix, and states veth's known facts (native XDP with redirect,
# no zero-copy, no rings, IRQs or NUMA node of its own); a builder started
# there afterwards agrees (native mode, copy mode). Exit status 1 for a
# queue veth lacks and for an unprivileged user, 2 for usage errors.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init dr "${1:-build}" --sources 1 --builders 1 --sinks 1 --queues 2

doctor() {  # doctor NAME WANT_RC [options]: stdout NAME.out, stderr NAME.err
	local name=$1 want=$2 rc
	shift 2
	tb_exec builder 0 timeout "$E2E_TMO" "$X" doctor "$@" >"$E2E_WORK/$name.out" 2>"$E2E_WORK/$name.err"
	rc=$?
	if [[ $rc == "$want" ]]; then
		e2e_ok "$name: exit status $rc"
	else
		e2e_fail "$name: exit status $rc, want $want"
		sed 's/^/  | /' "$E2E_WORK/$name.out" "$E2E_WORK/$name.err"
	fi
}

doctor text 0 --dev eth0
# Before 6.3 the kernel has no XDP feature flags: the veth facts below cannot hold.
grep -q '^skip  xdp_native' "$E2E_WORK/text.out" &&
	e2e_skip "the kernel gives no XDP feature flags (netdev netlink family, 6.3+)"
doctor json 0 --dev eth0 --json
doctor queues 1 --dev eth0 --queues 0-2 --json
doctor allq 0 --dev eth0 --queues 0-1 --json
doctor usage 2 --dev eth0 --bogus
doctor nodev 2 --json
doctor missing 1 --dev nosuch0
# An unprivileged user: no capabilities, the default memlock limit.
tb_exec builder 0 timeout "$E2E_TMO" setpriv --reuid 65534 --regid 65534 --clear-groups "$X" doctor --dev eth0 \
	--json >"$E2E_WORK/user.out" 2>"$E2E_WORK/user.err"
rc=$?
((rc == 1)) && e2e_ok "user: exit status 1" || e2e_fail "user: exit status $rc, want 1"
cat "$E2E_WORK/text.out"

# --config: each [source N]'s MAC against the builder's neighbour table.
# The source's own MAC (ok), the farm node's address without a MAC (warn,
# the neighbour's MAC as the fix), an address nobody answers for (warn:
# ping it), then the source with a MAC its host does not have (fail, 1).
srccfg() {  # srccfg FILE SOURCE0_MAC
	(umask 077; cat >"$1" <<INI
[run]
number = 1
[dfm]
address = $(tb_addr builder 0):23901
[builder 1]
address = $(tb_addr builder 0)
[source 0]
address = $(tb_addr source 0)
source_ids = 0-1
mac = $2
[source 1]
address = $(tb_addr sink 0)
source_ids = 2
[source 2]
address = 198.19.255.254
source_ids = 3
[sink 0]
address = $(tb_addr sink 0)
port = $E2E_PORT
INI
	)
}
srccfg "$E2E_WORK/src_ok.ini" "$(tb_mac source 0)"
srccfg "$E2E_WORK/src_bad.ini" 02:00:00:00:00:99
for h in "source 0" "sink 0"; do
	tb_exec builder 0 ping -c 1 -W 2 "$(tb_addr $h)" >/dev/null || e2e_fail "ping $h from the builder"
done
doctor src_ok 0 --dev eth0 --config "$E2E_WORK/src_ok.ini" --json
doctor src_bad 1 --dev eth0 --config "$E2E_WORK/src_bad.ini"
doctor src_none 2 --dev eth0 --config "$E2E_WORK/nosuch.ini"
export SRC0_ADDR=$(tb_addr source 0) SRC0_MAC=$(tb_mac source 0) SINK_ADDR=$(tb_addr sink 0) SINK_MAC=$(tb_mac sink 0)

# The builder on the same device: what the kernel gives it must match.
E2E_DEST=$(tb_addr builder 0)
e2e_builder 0 b0 --sources 0 --no-forward --duration 1
e2e_wait_all

e2e_check doctor <<'PY'
import re
names = ["driver", "xdp_native", "xdp_zerocopy", "mtu", "queues", "rings", "steering", "hugepages",
         "irqbalance", "irq_affinity", "numa", "cpu_governor", "busy_poll", "memlock", "capabilities",
         "run_dir"]
out = lambda n: open(os.path.join(W, n + ".out")).read()
err = lambda n: open(os.path.join(W, n + ".err")).read()
text = out("text").splitlines()
lines = [l for l in text if re.match(r"^(ok|warn|fail|skip)\s+\S+\s+\S", l)]
eq("text: one verdict line per check, in order", [l.split()[1] for l in lines], names)
for l in lines:
    v = l.split()[0]
    if v in ("warn", "fail"):
        true("text: %s says how to fix it" % l.split()[1], "; fix: " in l or l.split()[1] == "xdp_zerocopy", l)
true("text: summary line", re.match(r"^summary: \d+ ok, \d+ warn, 0 fail, \d+ skip$", text[-1]), text[-1])

j = json.loads(out("json"))
eq("json: dev", j["dev"], "eth0")
eq("json: driver", j["driver"], "veth")
eq("json: check names", [c["name"] for c in j["checks"]], names)
eq("json: every check has name, verdict, detail, fix", [c["name"] for c in j["checks"]
   if sorted(c) == ["detail", "fix", "name", "verdict"] and isinstance(c["fix"], str)], names)
eq("json: every verdict is ok/warn/fail/skip", [c["name"] for c in j["checks"]
   if c["verdict"] in ("ok", "warn", "fail", "skip")], names)
eq("json: checks without a detail", [c["name"] for c in j["checks"] if not c["detail"]], [])
V = {c["name"]: c["verdict"] for c in j["checks"]}
eq("json: summary adds up", j["summary"], {v: list(V.values()).count(v) for v in ("ok", "warn", "fail", "skip")})
eq("veth: native XDP with redirect (BASIC|REDIRECT flags)", j["xdp_features"] & 3, 3)
eq("veth: no zero-copy flag", j["xdp_features"] & 8, 0)
eq("veth: xdp_native", V["xdp_native"], "ok")
eq("veth: xdp_zerocopy", V["xdp_zerocopy"], "warn")
eq("veth: rings (none of its own)", V["rings"], "skip")
eq("veth: irq_affinity (no IRQs)", V["irq_affinity"], "skip")
eq("veth: numa (no node)", V["numa"], "skip")
eq("veth: 2 queues, 1 served, no rules or RSS table to read: steering", V["steering"], "skip")
true("veth: steering says why", "no RSS table to read" in [c for c in j["checks"] if c["name"] == "steering"][0]["detail"], j["checks"][6])
eq("root: capabilities", V["capabilities"], "ok")
eq("root: memlock", V["memlock"], "ok")
eq("no fail as root", j["summary"]["fail"], 0)

q = {c["name"]: c for c in json.loads(out("queues"))["checks"]}
eq("--queues 0-2: queues fails", q["queues"]["verdict"], "fail")
true("--queues 0-2: the fix names the queues veth has", "--queues 0-1 " in q["queues"]["fix"], q["queues"])
q = {c["name"]: c["verdict"] for c in json.loads(out("allq"))["checks"]}
eq("--queues 0-1: every queue served, steering", q["steering"], "ok")
eq("--queues 0-1: queues", q["queues"], "ok")
u = {c["name"]: c for c in json.loads(out("user"))["checks"]}
eq("unprivileged: capabilities", u["capabilities"]["verdict"], "fail")
true("unprivileged: fix", "setcap" in u["capabilities"]["fix"], u["capabilities"])
true("usage: names the bad option", "unknown option '--bogus'" in err("usage"), err("usage"))
true("no --dev: says it is required", "--dev is required" in err("nodev"), err("nodev"))
true("missing device: says so", "no interface 'nosuch0'" in err("missing"), err("missing"))

S = [c for c in json.loads(out("src_ok"))["checks"] if c["name"] == "source_mac"]
E = os.environ
eq("--config: a source_mac check per source", [c["verdict"] for c in S], ["ok", "warn", "warn"])
true("--config: the source's MAC as its neighbour entry", "mac %s, as eth0's neighbour entry" % E["SRC0_MAC"] in S[0]["detail"], S[0])
true("--config: no mac: the neighbour's MAC as the fix", 'add "mac = %s" to [source 1]' % E["SINK_MAC"] in S[1]["fix"], S[1])
true("--config: no neighbour entry: ping it", S[2]["fix"].startswith("ping -c 1 -I eth0 198.19.255.254"), S[2])
bad = [l for l in out("src_bad").splitlines() if "source_mac" in l]
true("--config: a MAC the host does not have fails", bad and bad[0].startswith("fail") and
     "02:00:00:00:00:99 in the run configuration, but eth0's neighbour entry says %s" % E["SRC0_MAC"] in bad[0], bad)
true("--config: a missing file is named", "nosuch.ini" in err("src_none"), err("src_none"))

b = err("b0")
true("builder agrees: native mode", re.search(r"attached to eth0 in native mode", b), b[-400:])
true("builder agrees: copy mode", re.search(r"AF_XDP socket on eth0 queue 0: copy mode", b), b[-400:])
PY
e2e_finish

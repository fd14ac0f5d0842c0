#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A builder's keys cannot speak for another member (docs/hardening.md "Keys
# per member and per run"). One pull run from a run configuration (2 source
# processes x 2 builders x 1 farm node): only the DFM holds the master key;
# each builder its key bundle (xevb key derive --role builder --config: its
# member key and its link keys with the sources and the farm node), each
# source process and the farm node its member key. While the run is on, a
# process on builder 1's host, holding builder 1's bundle, seals with every
# key it holds (ctl_member_forge.py builder):
#  - as builder 2: a STATUS to the DFM and to the farm node;
#  - as the farm node: a RECEIVED of 2^40 events to the DFM, a STATUS of
#    done_total 2^40 to builder 2;
#  - as the DFM: a BYE to builder 2;
#  - as itself, to builder 2 (builders never talk to each other).
# Every forgery refused and counted (bad_mac, or wrong_role for the link
# that does not exist), nothing else refused; the run completes with exact
# books, the builders' REQUESTs opening at the sources and the farm node's
# STATUS at each builder on their pair's link. Last, hostile bundles: a
# truncated one, one with a member twice, one given to another builder, one
# given to a source: each refused at start with exit 2 and what is wrong.
set -uo pipefail
. "$(dirname "$0")/lib_runcfg.sh"
e2e_init bk "${1:-build}" --sources 2 --builders 2 --sinks 1 --dfm 1
FORGE=$(realpath tests/integration/ctl_member_forge.py)
W=$E2E_WORK
N=10000
(umask 077; head -c 32 /dev/urandom >"$W/run.key")
"$X" key derive --master "$W/run.key" --role source --id 0 --out "$W/s0.key" 2>/dev/null
"$X" key derive --master "$W/run.key" --role source --id 2 --out "$W/s1.key" 2>/dev/null
"$X" key derive --master "$W/run.key" --role sink --id 0 --out "$W/k0.key" 2>/dev/null

cat >"$W/run.ini" <<EOF
[run]
mode = pull
number = 43
events = $N
rate = 2500
pack = 10
key_file = $W/run.key

[dfm]
address = $DFM_ADDR
dead_ms = 1000
retry_ms = 1000
drain_ms = 5000

[builder]
interface = eth0
receive = socket
udp = true
credits = 64
exit_on_eor = true

[builder 1]
address = $(tb_addr builder 0)
key_file = $W/b1.key

[builder 2]
address = $(tb_addr builder 1)
key_file = $W/b2.key

[source]
udp = true

[source 0]
address = $(tb_addr source 0)
source_ids = 0-1
key_file = $W/s0.key

[source 1]
address = $(tb_addr source 1)
source_ids = 2-3
key_file = $W/s1.key

[sink 0]
address = $(tb_addr sink 0)
port = 5000
credits = 32
key_file = $W/k0.key
EOF
chmod 600 "$W/run.ini"
for b in 1 2; do
	"$X" key derive --master "$W/run.key" --role builder --id $b --config "$W/run.ini" --out "$W/b$b.key" \
		2>"$W/derive$b.err" || e2e_die "key derive --role builder --id $b: $(cat "$W/derive$b.err")"
done
grep -q '^end 3$' "$W/b1.key" || e2e_die "builder 1's bundle does not hold 3 links: $(cut -c1-30 "$W/b1.key")"

rc_sink "$W/run.ini" 0 k0
rc_builder "$W/run.ini" 1 0 b1
rc_builder "$W/run.ini" 2 1 b2
rc_source "$W/run.ini" 0 s0
rc_source "$W/run.ini" 1 s1
(
	e2e_wait_line triggering "$W/dfm.err"
	ip netns exec "$(tb_ns builder 0)" timeout "$E2E_TMO" python3 "$FORGE" builder --bundle "$W/b1.key" \
		--run 43 --dfm "$DFM_ADDR" --other-builder "$(tb_addr builder 1):23902" --other-id 2 \
		--sink "$(tb_addr sink 0):23904" --sink-id 0 >"$W/forge.json" 2>"$W/forge.err"
) &
_e2e_track $! forge 0
rc_dfm "$W/run.ini" dfm
dfm_stop_all
e2e_wait_all

export N
e2e_check builder_keys <<'PY'
def JL(name, key):
    for l in open(os.path.join(W, name + ".json")).read().splitlines():
        if l.startswith("{") and ('"%s"' % key) in l[:40]:
            return json.loads(l)[key]
    raise SystemExit("FAIL - %s: %s printed no %s line" % (CASE, name, key))
def SINK(name):
    for l in open(os.path.join(W, name + ".json")).read().splitlines():
        if l.startswith('{"events"'):
            return json.loads(l)
    raise SystemExit("FAIL - %s: %s printed no summary" % (CASE, name))
def only(what, by_reason, want):
    eq(what, {k: v for k, v in by_reason.items() if v}, want)
N = int(os.environ["N"])
f = J("forge")
K = f["keys"]
eq("builder 1 holds 4 keys (its own, 2 sources, the farm node)", K, 4)
d = J("dfm")
eq("DFM triggered = complete", (d["triggered"], d["complete"]), (N, N))
eq("DFM lost, incomplete", (sum(d["lost"].values()), d["incomplete"]), (0, 0))
eq("pull mode", d["mode"], "pull")
only("DFM refused builder 1's STATUS as builder 2 and RECEIVED as the farm node (bad_mac)",
     d["ctl"]["refused_by_reason"], {"bad_mac": f["as_builder_to_dfm"] + f["as_sink_to_dfm"]})
b1, b2 = J("b1"), J("b2")
eq("builders built every event once, complete", (b1["events_complete"] + b2["events_complete"],
   b1["events_incomplete"] + b2["events_incomplete"]), (N, 0))
only("builder 1 refused nothing", JL("b1", "dfm_ctl")["ctl_refused_by_reason"], {})
bc = JL("b2", "dfm_ctl")
only("builder 2 refused the DFM's BYE and the farm node's STATUS (bad_mac) and builder 1 as a peer (wrong_role)",
     bc["ctl_refused_by_reason"], {"bad_mac": f["as_dfm_to_builder"] + f["as_sink_to_builder"],
                                   "wrong_role": f["as_self_to_builder"]})
eq("builder 2: no DFM restart, no core reset", (bc["dfm_restarts"], bc["core_resets"]), (0, 0))
eq("builders asked the sources (REQUESTs sent > 0)",
   (JL("b1", "dfm_ctl")["requests"] > 0, bc["requests"] > 0), (True, True))
k = SINK("k0")
eq("farm node got every event once", (k["events"], k["complete"], k["duplicates"]), (N, N, 0))
eq("farm node refused builder 1's STATUS as builder 2 (its only refusals)", JL("k0", "sink_ctl")["ctl_refused"],
   f["as_builder_to_sink"])
for s in ("s0", "s1"):
    eq("source %s cleared every event" % s, J(s)["cleared"], N)
    only("source %s refused nothing (REQUESTs open on the builder's link)" % s,
         J(s)["ctl_refused_by_reason"], {})
PY

# Hostile bundles: each refused at start, exit 2, saying what is wrong.
bad_bundle() {  # NAME WANT-IN-MESSAGE [build options]
	local name=$1 want=$2 out rc
	shift 2
	out=$(ip netns exec "$(tb_ns builder 0)" timeout "$E2E_TMO" "$X" build --config "$W/run.ini" --id 1 \
		--duration 1 "$@" 2>&1)
	rc=$?
	if ((rc == 2)) && grep -q -- "$want" <<<"$out"; then
		e2e_ok "$name: exit 2 ($(grep -m1 -- "$want" <<<"$out" | cut -c1-120))"
	else
		e2e_fail "$name: exit $rc, want 2 and '$want': $out"
	fi
}
(umask 077; head -n 2 "$W/b1.key" >"$W/trunc.key"; head -c 100 "$W/b1.key" >"$W/cut.key"
 { head -n 2 "$W/b1.key"; sed -n 2p "$W/b1.key"; sed -n 3,4p "$W/b1.key"; echo "end 4"; } >"$W/dup.key"
 sed 's/^xevb-key-bundle builder/xevb-key-bundle sink/' "$W/b1.key" >"$W/role.key")
bad_bundle "truncated bundle (no end line)" "the bundle is truncated" --key-file "$W/trunc.key"
bad_bundle "bundle cut inside a line" "cut short" --key-file "$W/cut.key"
bad_bundle "a member twice" "has two links" --key-file "$W/dup.key"
bad_bundle "a bundle of another role" "a bundle is a builder's" --key-file "$W/role.key"
bad_bundle "builder 2's bundle given to builder 1" "key bundle of builder 2, but this process is builder 1" \
	--key-file "$W/b2.key"
out=$(ip netns exec "$(tb_ns source 0)" timeout "$E2E_TMO" "$X" source --config "$W/run.ini" --id 0 \
	--key-file "$W/b1.key" --duration 1 2>&1)
rc=$?
if ((rc == 2)) && grep -q "key bundle of builder 1, but this process is source 0" <<<"$out"; then
	e2e_ok "a bundle given to a source: exit $rc"
else
	e2e_fail "a bundle given to a source: exit $rc, want 2 and an error naming both: $out"
fi
# A farm node given a builder's bundle: refused, the bundle named.
out=$(ip netns exec "$(tb_ns sink 0)" timeout "$E2E_TMO" "$X" sink --listen "$(tb_addr sink 0):$E2E_PORT" \
	--ctl-port 24998 --key-file "$W/b1.key" --duration 1 2>&1)
rc=$?
if ((rc != 0)) && grep -q "is a builder's key bundle: a farm node takes its own member key" <<<"$out"; then
	e2e_ok "a bundle given to a farm node: exit $rc, the bundle named"
else
	e2e_fail "a bundle given to a farm node: exit $rc, want a refusal naming the bundle: $out"
fi
# The DFM holds the master: a bundle or a member key is refused before its socket opens.
for k in b1 k0; do
	out=$(ip netns exec "$(tb_ns dfm 0)" timeout "$E2E_TMO" "$X" dfm --config "$W/run.ini" --key-file "$W/$k.key" \
		--duration 1 2>&1)
	rc=$?
	if ((rc == 2)) && grep -q "but the DFM holds the run's master key" <<<"$out"; then
		e2e_ok "$k.key given to the DFM: exit 2"
	else
		e2e_fail "$k.key given to the DFM: exit $rc, want 2 and an error saying the DFM holds the master: $out"
	fi
done
e2e_finish

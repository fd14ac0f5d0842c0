#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: check
# parallel: yes
# xevb dump (issue 35 item 5) on the namespace testbed. Live: a socket
# builder forwards 2000 events (every 100th without source 2) to
# `xevb dump --listen --json --verify --until-close`: every event once, as
# JSON Lines, its CRCs right, the incomplete ones missing source 2, exit 0
# when the builder closes. Under a DFM, dump is the run's farm node: the
# builder forwards within its credits, the DFM's books close on its
# RECEIVED. --count stops after N; a stream cut inside an event exits 1
# after every whole event. Files: run files written by libxevb's writer (the example farm
# node, fed by `xevb sink --selftest-send`), read whole (exit 0), cut
# inside an event and at the trailer (exit 1, the reason last on stderr),
# damaged (exit 1, --verify names the event and source); filters, JSON,
# hex payloads checked against the CRCs in python; plain streams; usage
# errors exit 2 with the reason.
set -uo pipefail
. "$(dirname "$0")/lib_dfm.sh"
e2e_init dp "${1:-build}" --sources 1 --builders 1 --sinks 1 --dfm 1
FARM=$(realpath "${1:-build}/lib/examples/xevb-farm-example")
[[ -x $FARM ]] || e2e_die "$FARM not built (make libxevb)"
D=$E2E_WORK
SINK=$(tb_addr sink 0)
NS_SINK=$(tb_ns sink 0)
NS_B=$(tb_ns builder 0)

# rundump NAME WANT_RC [dump options]: xevb dump in the foreground
# (bounded), stdout in NAME.out, stderr in NAME.err; checks the exit status.
rundump() {
	local name=$1 want=$2 rc
	shift 2
	timeout 30 "$X" dump "$@" >"$D/$name.out" 2>"$D/$name.err"
	rc=$?
	if [[ $rc == "$want" ]]; then
		e2e_ok "$name: exit status $rc"
	else
		e2e_fail "$name: exit status $rc, want $want (xevb dump $*)"
		sed 's/^/  | /' "$D/$name.err" | tail -n 10
	fi
}

# lines NAME WANT: NAME.out has WANT lines.
lines() {
	local n
	n=$(wc -l <"$D/$1.out")
	if [[ $n == "$2" ]]; then e2e_ok "$1: $n lines"; else e2e_fail "$1: $n lines, want $2"; fi
}

# says NAME TEXT: NAME.err says TEXT.
says() {
	if grep -qF -- "$2" "$D/$1.err"; then e2e_ok "$1: says '$2'"
	else e2e_fail "$1: does not say '$2': $(tail -n 3 "$D/$1.err")"; fi
}

# live_dump NAME PORT [dump options]: xevb dump --listen on sink 0 in the
# background, tracked (E2E_DUMP_RC: its exit status, default 0); returns once it listens.
live_dump() {
	local name=$1 port=$2
	shift 2
	ip netns exec "$NS_SINK" timeout 40 "$X" dump --listen "$SINK:$port" --ready-file "$D/$name.ready" "$@" \
		>"$D/$name.json" 2>"$D/$name.err" &
	_e2e_track $! "$name" "${E2E_DUMP_RC:-0}"
	e2e_wait_ready "$D/$name.ready" "$name" "xevb dump not listening"
}

e2e_log "live: source -> socket builder -> xevb dump --listen --until-close"
live_dump live 5000 --json --verify --until-close --duration 25
e2e_builder 0 lb --mode socket --sources 0-3 --sink "$SINK:5000" --timeout-ms 300 --exit-on-eor --duration 20
E2E_DEST=$(tb_addr builder 0)
e2e_source 0 ls --source-ids 0-3 --events 2000 --pack 4 --frag-size 16-200 --skip-events 2:100
e2e_wait_all
says live "control protocol on UDP port 23904"
e2e_check live <<PY
evs = [json.loads(l) for l in open(W + "/live.json")]
eq("events shown", len(evs), 2000)
eq("event ids, each once", sorted(e["event_id"] for e in evs), list(range(2000)))
inc = [e for e in evs if not e["complete"]]
eq("incomplete: every 100th", len(inc), 20)
eq("incomplete: source 2 missing, 3 of 4 fragments", {(tuple(e["missing"]), e["frags"], e["expected"]) for e in inc},
   {((2,), 3, 4)})
eq("complete: 4 of 4, none missing", {(e["frags"], e["expected"], tuple(e["missing"])) for e in evs if e["complete"]},
   {(4, 4, ())})
eq("--verify: every CRC right", {(e["crc_ok"], e["bad_source"]) for e in evs}, {(True, None)})
eq("run", {e["run"] for e in evs}, {1})
eq("builder address", {e["builder"].split(":")[0] for e in evs}, {"$(tb_addr builder 0)"})
true("seq 0..1999", sorted(e["seq"] for e in evs) == list(range(2000)))
true("build time ISO = build_ns", all(e["time"].endswith("%09dZ" % (e["build_ns"] % 10**9)) for e in evs))
PY

e2e_log "live under a DFM: xevb dump is the farm node (credits to the builder, RECEIVED to the DFM)"
N=3000
live_dump dfmk "$E2E_PORT" --dfm "$DFM_ADDR" --credits 32 --json --verify --count "$N" --duration 30
dfm_builder 0 db 1 --sources 0-3 --credits 256 --json
dfm_source 0 ds --source-ids 0-3 --frag-size 100
dfm_run_to_end dfm --mode push --rate 5000 --events "$N" --wait-builders 1 --wait-sources 1
e2e_check dfm <<PY
$DFM_PY
n = $N
d = dfm_complete("dfm", n)
fn = d["farm_nodes"]
eq("xevb dump reports RECEIVED: farm nodes reporting, books closed", (fn["reporting"], fn["books_closed"]), (1, True))
eq("not_delivered", d["not_delivered"], 0)
bc = JL("db", "dfm_ctl")
eq("builder forwarded every event", bc["forwarded"], n)
eq("builder heard dump's credits (32), sent it every event", [(k["credits"], k["sent"]) for k in bc["sinks"]], [(32, n)])
evs = [json.loads(l) for l in open(W + "/dfmk.json")]
eq("dump: events shown, each once", (len(evs), len({e["event_id"] for e in evs})), (n, n))
eq("dump: complete, CRCs right", {(e["complete"], e["crc_ok"]) for e in evs}, {(True, True)})
PY

e2e_log "live: --count stops after N; a stream cut inside an event exits 1"
live_dump count 5001 --no-ctl --count 10
# The feeder may find the connection closed after the 10th event: its status is not the point.
ip netns exec "$NS_B" timeout 20 "$X" sink --selftest-send "$SINK:5001" 50 >/dev/null 2>&1
E2E_DUMP_RC=1 live_dump cut 5002 --no-ctl --until-close --duration 20
ip netns exec "$NS_B" timeout 20 "$X" sink --selftest-send "$SINK:5002" 50 --corrupt truncate 2>"$D/feed.err"
e2e_wait_all
[[ $(wc -l <"$D/count.json") == 10 ]] && e2e_ok "count: 10 lines" || e2e_fail "count: $(wc -l <"$D/count.json") lines"
sent=$(sed -n 's/.*sent \([0-9]*\) whole events.*/\1/p' "$D/feed.err")
[[ -n $sent && $(wc -l <"$D/cut.json") == "$sent" ]] && e2e_ok "cut: every whole event shown ($sent)" ||
	e2e_fail "cut: $(wc -l <"$D/cut.json") lines, $sent whole events sent"
says cut "input not whole: 1 of 1 builder connections broke (1 closed inside an event)"

e2e_log "files: run files from libxevb's writer (the example farm node), 6000 events in two files"
mkdir -p "$D/run"
ip netns exec "$NS_SINK" timeout 40 "$FARM" --listen "$SINK:5003" --ready-file "$D/farm.ready" --output "$D/run" \
	--run 42 --events 6000 --hold 0 --duration 30 >"$D/farm.json" 2>"$D/farm.err" &
_e2e_track $! farm 0
e2e_wait_ready "$D/farm.ready" farm "the example farm node not listening"
ip netns exec "$NS_B" timeout 20 "$X" sink --selftest-send "$SINK:5003" 6000 --sources 6 --incomplete-every 7 \
	--run 42 --first-event 1000 --max-len 300 2>>"$D/feed.err"
e2e_wait_all
F0=$D/run/xevb-run00000042-0000.xevb
F1=$D/run/xevb-run00000042-0001.xevb
[[ -f $F0 && -f $F1 ]] || e2e_die "run files: $(ls "$D/run")"

rundump whole 0 -r "$F0" -r "$F1"
lines whole 6000
says whole "closed cleanly, 5000 events (the run continues in the next file)"
says whole "closed cleanly, 1000 events"
says whole "reading $F0: run 42 file 0"
rundump json 0 -r "$F0" -r "$F1" --json --verify
rundump inc 0 -r "$F0" -r "$F1" --incomplete-only --json
rundump range 0 -r "$F0" -r "$F1" --events 1000-1099
lines range 100
rundump one 0 -r "$F0" -r "$F1" --events 4242 --time ns
lines one 1
rundump src0 0 -r "$F0" -r "$F1" --source-id 0 --json
rundump miss0 0 -r "$F0" -r "$F1" --missing 0 --json
rundump frag 0 -r "$F0" --events 1003 --fragments --snap 16 --verify
rundump fragj 0 -r "$F0" --events 1003 --fragments --snap 0 --json --verify
rundump fragsrc 0 -r "$F0" --events 1003 --fragments --source-id 4 --json
rundump count 0 -r "$F0" -r "$F1" --count 5 --quiet
lines count 5
[[ -s $D/count.err ]] && e2e_fail "count --quiet: stderr $(cat "$D/count.err")" || e2e_ok "--quiet: nothing on stderr"
e2e_check files <<'PY'
def L(name):
    return [json.loads(l) for l in open(W + "/" + name + ".out")]
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF
evs = L("json")
eq("--json: events", len(evs), 6000)
eq("--json: ids 1000..6999 in order", [e["event_id"] for e in evs], list(range(1000, 7000)))
eq("--json: run, builder (none in a file), CRCs", {(e["run"], e["builder"], e["crc_ok"]) for e in evs},
   {(42, None, True)})
eq("--json: seq counts within each file", [e["seq"] for e in evs], list(range(5000)) + list(range(1000)))
inc = [e["event_id"] for e in evs if not e["complete"]]
eq("incomplete: every 7th", len(inc), 6000 // 7)
true("incomplete: frags + missing = expected",
     all(e["frags"] + len(e["missing"]) == e["expected"] == 6 for e in evs))
eq("--incomplete-only", [e["event_id"] for e in L("inc")], inc)
has0 = [e["event_id"] for e in evs if 0 not in e["missing"]]
eq("--source-id 0: the events with a fragment of source 0", [e["event_id"] for e in L("src0")], has0)
eq("--missing 0: the events without", [e["event_id"] for e in L("miss0")],
   [e["event_id"] for e in evs if 0 in e["missing"]])
true("--source-id 0 and --missing 0 split the events", len(has0) < 6000 and len(has0) + len(L("miss0")) == 6000)
rng = open(W + "/range.out").read().splitlines()
eq("--events 1000-1099: the ids", [int(l.split()[4]) for l in rng], list(range(1000, 1100)))
one = open(W + "/one.out").read().split()
eq("--events 4242 --time ns: the line", (one[0], one[1:5]), (str(evs[3242]["build_ns"]), ["run", "42", "event", "4242"]))
fj = L("fragj")
eq("--fragments --json: one event", len(fj), 1)
fr = fj[0]["fragments"]
eq("--fragments: every fragment of event 1003", len(fr), fj[0]["frags"])
eq("--fragments --snap 0: whole payloads, each matching its CRC-32C",
   [(f["length"], len(f["payload"]) // 2, f["payload_more"], crc32c(bytes.fromhex(f["payload"])), f["crc_ok"]) for f in fr],
   [(f["length"], f["length"], 0, f["crc32c"], True) for f in fr])
eq("--fragments --source-id 4: its fragment only", [f["source_id"] for f in L("fragsrc")[0]["fragments"]], [4])
txt = open(W + "/frag.out").read().splitlines()
true("text: the event line first, crc ok", txt[0].split()[1:5] == ["run", "42", "event", "1003"] and " crc ok" in txt[0], txt[0])
shown = {}
cur = None
for l in txt[1:]:
    if l.startswith("  source "):
        w = l.split()
        cur = int(w[1])
        shown[cur] = [int(w[3]), int(w[5], 16), w[6], b""]
    elif l.startswith("\t0x"):
        shown[cur][3] += bytes.fromhex(l[10:49].replace(" ", ""))
want = {f["source_id"]: [f["length"], f["crc32c"], "ok", bytes.fromhex(f["payload"])[:16]] for f in fr}
eq("text --fragments --snap 16: source, length, crc, the first 16 payload bytes in hex", shown, want)
PY

e2e_log "files: cut, damaged, plain streams"
cp "$F1" "$D/cut.xevb"
truncate -s -100 "$D/cut.xevb"
rundump cut 1 -r "$D/cut.xevb"
lines cut 999
says cut "input not whole (cut): $D/cut.xevb: cut after 999 whole events"
timeout 30 "$X" dump -q -r "$D/cut.xevb" >"$D/mixed.out" 2>&1
if tail -n 1 "$D/mixed.out" | grep -q "input not whole (cut)" &&
	tail -n 2 "$D/mixed.out" | head -n 1 | grep -q " event 6998 "; then
	e2e_ok "cut: every whole event (the last 6998), then the reason"
else
	e2e_fail "cut: the end of stdout+stderr is $(tail -n 2 "$D/mixed.out")"
fi
cp "$F1" "$D/notrailer.xevb"
truncate -s -48 "$D/notrailer.xevb"
rundump notrailer 1 -r "$D/notrailer.xevb"
lines notrailer 1000
says notrailer "no trailer: cut after 1000 whole events"
rundump twofiles 1 -r "$D/cut.xevb" -r "$F0"
lines twofiles 5999
# A payload byte of event 2000 flipped: the file's checksum says corrupt, --verify names event and source.
read -r off sid < <(python3 - "$F0" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
off = struct.unpack_from("!H", b, 6)[0]
while True:
    nf, eid, tot = struct.unpack_from("!H", b, off + 6)[0], struct.unpack_from("!I", b, off + 12)[0], struct.unpack_from("!I", b, off + 16)[0]
    if eid == 2000:
        p = off + 32
        for _ in range(nf):
            sid, _r, ln = struct.unpack_from("!HHI", b, p)
            if ln:
                print(p + 12, sid)
                sys.exit(0)
            p += 12 + ((ln + 3) & ~3)
    off += tot
PY
)
cp "$F0" "$D/dmg.xevb"
printf '\xa5' | dd of="$D/dmg.xevb" bs=1 seek="$off" conv=notrunc status=none
cmp -s "$F0" "$D/dmg.xevb" && e2e_fail "damaged: the byte at $off was not changed"
rundump dmg 1 -r "$D/dmg.xevb"
lines dmg 5000
says dmg "input not whole (corrupt)"
says dmg "checksum mismatch"
rundump dmgv 1 -r "$D/dmg.xevb" --verify
n=$(grep -c " CRC-BAD source $sid" "$D/dmgv.out")
[[ $n == 1 ]] && e2e_ok "--verify: one event with CRC-BAD source $sid" || e2e_fail "--verify: $n lines with CRC-BAD"
says dmgv "a bad payload CRC-32C in 1 of the events shown (the first: event 2000, source $sid)"

"$X" sink --selftest-send - 100 --sources 3 >"$D/raw.bin" 2>/dev/null
rundump raw 0 -r "$D/raw.bin"
lines raw 100
says raw "ending at an event boundary"
truncate -s -7 "$D/raw.bin"
rundump rawcut 1 -r "$D/raw.bin"
lines rawcut 99
says rawcut "input not whole (cut)"

e2e_log "usage errors: exit 2 with the reason; a missing file: 1"
rundump u_none 2 --json
says u_none "give --input FILE"
rundump u_range 2 -r "$F0" --events 9-3
says u_range "'9-3' starts after it ends"
rundump u_snap 2 -r "$F0" --snap 8
says u_snap "give --fragments too"
rundump u_listen_only 2 -r "$F0" --credits 4
says u_listen_only "go with --listen"
rundump u_addr 2 --listen "$SINK"
says u_addr "is not IPv4-ADDR:PORT"
rundump u_src 2 -r "$F0" --source-id 5000
says u_src "ids go from 0 to 4095"
rundump u_count 2 -r "$F0" --count 0
says u_count "--count"
rundump nofile 1 -r "$D/no-such.xevb"
says nofile "no-such.xevb"
if "$X" help-man dump | grep '^\.TH XEVB-DUMP 1' >/dev/null; then e2e_ok "help-man dump: the page"; else e2e_fail "help-man dump"; fi
e2e_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Multi-queue receive with event ownership (`xevb build --workers 2`): the
# builder's veth has 2 RX queues; 12 sources, each from its own address, so
# flow hashing on the normal transmit path spreads them over both queues.
# Asserts: both queues receive (per-queue counters), the sources seen on
# the two queues are disjoint and both non-empty (so every event has
# fragments from both queues: each is cross-queue), shares were handed off
# and MEPs split between owners (whole ones handed over without refs when
# blocks are wider than a MEP; with refs again when mixed packings keep the
# owners' builders from booking them as runs), and every event is built
# exactly once and complete (the sink checks every CRC, the content, and
# duplicates).
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init mq "${1:-build}" --sources 2 --builders 1 --sinks 1 --queues 2

# Both ends of the builder's link have 2 queues.
q=$(tb_exec builder 0 ls /sys/class/net/eth0/queues | grep -c '^rx-')
[[ $q == 2 ]] || e2e_die "builder eth0 has $q RX queues, want 2"

# The python prelude of the cases: the builder's books over what both sources sent, and the farm node's.
MQ_PY='
def mq_books(E):
    b, k = J(CASE + ".b"), J(CASE + ".k0")
    s = [J(CASE + ".s0"), J(CASE + ".s1")]
    with open(os.path.join(W, CASE + ".b.json")) as f:
        wk = [json.loads(l) for l in f.read().splitlines() if l.startswith("{\"workers\"")][0]["workers"]
    sent = sum(x["fragments"] for x in s)
    pk = sum(x["packets"] for x in s)
    eq("fragments sent", sent, 12 * E)
    built_every_fragment(b, pk, sent, E)
    eq("out_events", b["out_events"], E)
    eq("run ended by END_OF_RUN", b["run_ended"], True)
    return b, k, wk, s, sent, pk
def mq_sink_ok(k, E, sent):
    eq("sink events = complete", (k["events"], k["complete"]), (E, E))
    eq("sink incomplete, missing, errors, duplicates",
       (k["incomplete"], k["missing_fragments"], k["errors"], k["duplicates"]), (0, 0, 0, 0))
    eq("sink fragments = sent", k["fragments"], sent)
    eq("sink result", k["result"], "ok")
'

mq_case() {
	local case=$1 ev=$2 block=$3 pack0=${MQ_PACK0:-10} pack1=${MQ_PACK1:-7}
	shift 3
	e2e_log "$case: 2 queues, 2 workers, 12 sources, $ev events, owner block $block $*"
	e2e_sink 0 "$case.k0" --expect-events "$ev" --expect-sources 12
	e2e_builder 0 "$case.b" --queues 0-1 --workers 2 --tune owner-block="$block" --sources 0-11 \
		--sink "$(tb_addr sink 0):$E2E_PORT" --exit-on-eor --duration "$E2E_RUN" "$@"
	E2E_DEST=$(tb_addr builder 0)
	# Different packing factors: the MEPs of the two hosts cross owner blocks at different ids.
	e2e_source 0 "$case.s0" --source-ids 0-5 --src-addr-base 198.18.1.100 --events "$ev" \
		--pack "$pack0" --frag-size 32-120 --rate 20000 --seed 3
	e2e_source 1 "$case.s1" --source-ids 6-11 --src-addr-base 198.18.1.200 --events "$ev" \
		--pack "$pack1" --frag-size 32-120 --rate 20000 --seed 4 --udp 23900
	e2e_wait_all
	ARGS="$*" E=$ev BLK=$block ONE=$((pack0 == 1 && pack1 == 1)) SAME=$((pack0 == pack1 && pack0 > 1)) e2e_check "$case" <<PY
$MQ_PY
E, BLK, ONE, SAME = int(os.environ["E"]), int(os.environ["BLK"]), os.environ["ONE"] == "1", os.environ["SAME"] == "1"

b, k, wk, s, sent, pk = mq_books(E)
eq("XDP to_xsk frags = frags received", b["xdp"]["to_xsk"]["frags"], b["frags_received"])
eq("xsk rx_dropped, rx_ring_full", (b["xsk_rx_dropped"], b["xsk_rx_ring_full"]), (0, 0))
eq("workers", [w["worker"] for w in wk], [0, 1])
qs = {q["queue"]: q["rx_frames"] for w in wk for q in w["queues"]}
true("both queues received frames: %r" % qs, qs.get(0, 0) > 0 and qs.get(1, 0) > 0, qs)
eq("per-queue frames add up", sum(qs.values()), b["rx_frames"])
s0, s1 = set(wk[0]["rx_sources"]), set(wk[1]["rx_sources"])
true("sources per queue: %s | %s" % (sorted(s0), sorted(s1)), s0 and s1 and not (s0 & s1) and s0 | s1 == set(range(12)),
     "want two disjoint non-empty sets covering 0-11")
# Every event has fragments of a source on queue 0 and of one on queue 1.
cross = E if (s0 and s1 and not (s0 & s1)) else 0
true("cross-queue events (fragments on both queues): %d" % cross, cross == E)
eq("shares handed off = taken", sum(w["handoff_sent"] for w in wk), sum(w["handoff_received"] for w in wk))
true("both workers handed shares off: %r" % [w["handoff_sent"] for w in wk], all(w["handoff_sent"] > 0 for w in wk))
true("MEPs split between owners: %d" % sum(w["split_meps"] for w in wk), (sum(w["split_meps"] for w in wk) > 0) != ONE)
# Blocks wider than a MEP: most shares are whole MEPs, handed over without refs; split ones keep theirs.
whole = [w["handoff_whole"] for w in wk]
true("whole MEPs handed off without refs: %r" % whole, all(x > 0 for x in whole) if BLK > 10 else True)
if SAME:   # every source packs alike: every share is booked as a run, none needs refs again
    eq("owners that asked for refs again", [w["refs_wanted_windows"] for w in wk], [0, 0])
true("shares with refs (split MEPs, END_OF_RUN): %d" % sum(w["handoff_sent"] - w["handoff_whole"] for w in wk),
     sum(w["handoff_sent"] - w["handoff_whole"] for w in wk) > 0)
# Every worker takes the XDP meta of its queues' MEPs; only while an owner asks for refs are frames parsed.
eq("frames taken from their XDP meta + parsed = received", b["rx_meta"] + b["rx_meta_fallback"], b["rx_frames"])
eq("XDP meta_failed", b["xdp"]["meta_failed"]["packets"], 0)
if SAME:
    eq("frames taken from their XDP meta, parsed", (b["rx_meta"], b["rx_meta_fallback"]), (pk, 0))
else:
    true("frames taken from their XDP meta: %d" % b["rx_meta"], b["rx_meta"] > 0)
if "zerocopy=1" in os.environ.get("ARGS", ""):
    true("sent by reference (out_bytes_zerocopy %d of %d)" % (b["out_bytes_zerocopy"], b["out_bytes"]),
         0 < b["out_bytes_zerocopy"] <= b["out_bytes"])
eq("frames returned = taken back", sum(w["returns_sent"] for w in wk), sum(w["returns_received"] for w in wk))
true("both workers built events: %r" % [w["events_complete"] for w in wk], all(w["events_complete"] > 0 for w in wk))
eq("events per worker add up", sum(w["events_complete"] for w in wk), E)
eq("ring full waits", sum(w["ring_full_waits"] for w in wk), 0)
mq_sink_ok(k, E, sent)
PY
}

mq_case mq_b64 20000 64 --tune wait-us=0
mq_case mq_b1 6000 1 --tune wait-us=100
# One record a MEP: never split; each goes whole as its one ref (in the entry, or from the parsed line).
MQ_PACK0=1 MQ_PACK1=1 mq_case mq_one 2000 64 --tune wait-us=0
# Packed alike (as real sources pack the same triggers): whole MEPs go without refs throughout.
MQ_PACK0=6 MQ_PACK1=6 mq_case mq_same 12000 64 --tune wait-us=0
# MSG_ZEROCOPY forwarding: each worker's output holds the frames its sends may read, and gives them
# back (a frame of another worker's queue over the return ring) once the kernel is done.
mq_case mq_zc 6000 64 --tune zerocopy=1

# Socket mode: one socket, read by worker 0, which hands worker 1 the shares of its id blocks.
mq_sock() {
	local case=$1 ev=$2 bopt=() sopt=()
	[[ $3 == udp ]] && bopt=(--udp) && sopt=(--udp 23900)
	e2e_log "$case: socket mode, $3, 2 workers, 12 sources, $ev events"
	e2e_sink 0 "$case.k0" --expect-events "$ev" --expect-sources 12
	e2e_builder 0 "$case.b" --mode socket --workers 2 --tune owner-block=16 --sources 0-11 \
		--sink "$(tb_addr sink 0):$E2E_PORT" --exit-on-eor --duration "$E2E_RUN" "${bopt[@]}"
	E2E_DEST=$(tb_addr builder 0)
	e2e_source 0 "$case.s0" --source-ids 0-5 --src-addr-base 198.18.1.100 --events "$ev" \
		--pack 10 --frag-size 32-120 --rate 20000 --seed 5 "${sopt[@]}"
	e2e_source 1 "$case.s1" --source-ids 6-11 --src-addr-base 198.18.1.200 --events "$ev" \
		--pack 7 --frag-size 32-120 --rate 20000 --seed 6 "${sopt[@]}"
	e2e_wait_all
	E=$ev e2e_check "$case" <<PY
$MQ_PY
E = int(os.environ["E"])
b, k, wk, s, sent, pk = mq_books(E)
eq("socket: kernel drops, truncated", (b["sock_kernel_drops"], b["sock_truncated"]), (0, 0))
eq("frames received, by worker", [w["rx_frames"] for w in wk], [pk, 0])
true("worker 0 handed worker 1 its shares: %d" % wk[0]["handoff_sent"], wk[0]["handoff_sent"] > 0)
eq("shares handed off = taken", wk[0]["handoff_sent"], wk[1]["handoff_received"])
eq("frames returned = taken back", wk[1]["returns_sent"], wk[0]["returns_received"])
true("both workers built events: %r" % [w["events_complete"] for w in wk], all(w["events_complete"] > 0 for w in wk))
eq("events per worker add up", sum(w["events_complete"] for w in wk), E)
mq_sink_ok(k, E, sent)
PY
}
mq_sock mq_sock 6000 raw
mq_sock mq_sock_udp 4000 udp

# --output FILE: the workers share one writer (under a mutex, per event).
e2e_log "mq_file: 2 workers writing one file, owner block 4, default wait-us"
e2e_builder 0 mq_file.b --queues 0-1 --workers 2 --tune owner-block=4 --sources 0-11 \
	--output "$E2E_WORK/events.bin" --exit-on-eor --duration "$E2E_RUN"
E2E_DEST=$(tb_addr builder 0)
e2e_source 0 mq_file.s0 --source-ids 0-5 --src-addr-base 198.18.1.100 --events 3000 --pack 9 --rate 20000
e2e_source 1 mq_file.s1 --source-ids 6-11 --src-addr-base 198.18.1.200 --events 3000 --pack 4 --rate 20000
e2e_wait_all
e2e_sink_file mq_file.k "$E2E_WORK/events.bin" --expect-events 3000 --expect-sources 12
e2e_check mq_file <<'PY'
b, k = J("mq_file.b"), J("mq_file.k")
eq("events complete, incomplete", (b["events_complete"], b["events_incomplete"]), (3000, 0))
eq("file: events, complete, duplicates, errors", (k["events"], k["complete"], k["duplicates"], k["errors"]), (3000, 3000, 0, 0))
eq("file: fragments", k["fragments"], 36000)
# Packs 9 and 4 over blocks of 4: the split MEPs' shares fit no run the whole ones opened, so
# owners fall back record by record and ask for refs again (whole MEPs then travel with them).
with open(os.path.join(W, "mq_file.b.json")) as f:
    wk = [json.loads(l) for l in f.read().splitlines() if l.startswith('{"workers"')][0]["workers"]
true("owners asked for refs again: %r" % [w["refs_wanted_windows"] for w in wk], any(w["refs_wanted_windows"] > 0 for w in wk))
PY

# --metrics with workers: the page has each worker's counters (they were
# missing from session 22 to 26: the engine never got the page).
# It runs until the page is read.
e2e_builder 0 mq_metrics.b --queues 0-1 --workers 2 --sources 0-11 --no-forward --duration "$E2E_RUN" --metrics 9464
if tb_exec builder 0 curl -s -m 5 http://127.0.0.1:9464/metrics >"$E2E_WORK/mq_metrics.prom"; then
	e2e_ok "mq_metrics: page read"
else
	e2e_fail "mq_metrics: GET /metrics failed"
fi
e2e_stop mq_metrics.b
e2e_wait_all
e2e_check mq_metrics <<'PY'
page = open(os.path.join(W, "mq_metrics.prom")).read()
for fam in ("xevb_worker_rx_frames_total", "xevb_worker_handoff_sent_total", "xevb_worker_handoff_received_total"):
    got = sorted(l.split(" ")[0] for l in page.splitlines() if l.startswith(fam + "{"))
    eq(fam + " per worker", got, [fam + '{worker="0"}', fam + '{worker="1"}'])
PY
e2e_finish

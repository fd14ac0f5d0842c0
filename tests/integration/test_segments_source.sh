#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fragments larger than a packet from `xevb source` (wire format 1.1
# segments) built by `xevb build` and forwarded to a farm node, which
# checks every byte (content and CRC-32C): 16 kB and 64 kB fragments, MTU
# 1500 and 9000, from 2 source hosts of 2 source ids each, 200 events; the
# XDP path with one worker and with two (segments handed to their event's
# owner), and the socket path. Every event complete at the farm node, every
# segment in a built fragment, the run ended by END_OF_RUN (which the
# sources put on every segment of their last fragment).
# Then, at MTU 1500, with the sources' faults (--skip-segments,
# --duplicate, --reorder): no byte wrong, no event twice at the farm node;
# each event incomplete exactly for the fragments left partial, every
# segment accounted for (in fragments + by reason).
# Needs an `xevb source` that sends segments; without one (a build before
# the sources learnt 1.1) this says so and checks nothing.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init ss "${1:-build}"
# Not a pipe into grep -q: under pipefail, its early exit (SIGPIPE to the help) read as "not found".
if ! grep -q "flag SEGMENT" <<<"$("$X" source --help 2>&1)"; then
	echo "# xevb source in $X does not send segments (wire format 1.1): nothing to test here"
	echo "PASS $(basename "$0" .sh) (no segmenting source in this build)"
	exit 0
fi

# run CASE FRAG_SIZE FAULTS -- BUILD_OPTS...: 2 source hosts to the builder (FAULTS: source
# options of host 0's process), built events to the farm node.
run() {
	local name=$1 fs=$2 sopts=$3
	shift 4
	e2e_farm_builder "$name" 4 200 "$@"
	# shellcheck disable=SC2086
	e2e_source 0 "$name.s0" --source-ids 0-1 --events 200 --pack 1 --frag-size "$fs" --rate 1000 $sopts
	e2e_source 1 "$name.s1" --source-ids 2-3 --events 200 --pack 1 --frag-size "$fs" --rate 1000
	e2e_wait_all
}

segment_checks() {
	e2e_check "$1" <<'PY'
b, k = J(CASE + ".b"), J(CASE + ".k")
drops = sum(v for n, v in b.items() if n.startswith("drop_"))
segs_out = b["segs_in_frags"] + sum(v for n, v in b.items() if n.startswith("segs_") and n not in
                                    ("segs_received", "segs_in_frags", "segs_pending"))
print("# builder: frames %d, segments %d in %d whole fragments, events %d complete %d incomplete" %
      (b["rx_frames"], b["segs_received"], b["seg_frags_whole"], b["events_complete"], b["events_incomplete"]))
eq("segments: received = in fragments + by reason, none pending", (b["segs_received"], b["segs_pending"]),
   (segs_out, 0))
eq("fragments: received = in events + drops", b["frags_received"], b["frags_in_events"] + drops)
eq("the run ended on END_OF_RUN", b["run_ended"], True)
eq("farm node: CRC or content errors, duplicates", (k["errors"], k["duplicates"]), (0, 0))
if "faults" in CASE:
    true("fragments left partial by the skipped segments", b["drop_partial"] > 0, b["drop_partial"])
    eq("incomplete events = partial fragments (one skipped segment an event at most)",
       (b["events_incomplete"], k["incomplete"]), (b["drop_partial"],) * 2)
    eq("farm node: every event once", k["events"], 200)
else:
    eq("every segment in a built fragment", b["segs_in_frags"], b["segs_received"])
    eq("builder: 200 events complete, 800 fragments whole", (b["events_complete"], b["seg_frags_whole"]),
       (200, 800))
    eq("farm node: 200 events, all complete", (k["events"], k["complete"]), (200, 200))
PY
}

for mtu in 1500 9000; do
	tb_up --sources 2 --builders 1 --sinks 1 --queues 2 --mtu "$mtu" || e2e_die "tb_up --mtu $mtu"
	E2E_DEST=$(tb_addr builder 0)
	for fs in 16000 65535; do
		run "x1_${mtu}_$fs" "$fs" "" -- --queues 0-1
		segment_checks "x1_${mtu}_$fs"
		run "x2_${mtu}_$fs" "$fs" "" -- --queues 0-1 --workers 2
		segment_checks "x2_${mtu}_$fs"
		# The socket path reads whole datagrams: frames as large as the MTU.
		run "so_${mtu}_$fs" "$fs" "" -- --mode socket --tune frame-size=16384
		segment_checks "so_${mtu}_$fs"
	done
	if ((mtu == 1500)); then
		# Source 1 leaves out every 97th of its segments: 12 a 16 kB fragment, one an event at most.
		run faults_1500 16000 "--skip-segments 1:97 --duplicate 0.05 --reorder" -- --queues 0-1
		segment_checks faults_1500
	fi
	tb_down "$TB_PREFIX"
done
e2e_finish

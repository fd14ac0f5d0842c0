// SPDX-License-Identifier: GPL-2.0-only
/*
 * The builder and SEGMENT packets (wire format 1.1) before reassembly:
 * every segment counted once, as received and unsupported, its frame back
 * at once; the packet counted as its source's (packet_seq, END_OF_RUN);
 * nothing counted as a fragment, so the fragment invariant is untouched.
 * On the rig (tests/common/builder_rig.c), whose fini checks both
 * invariants and that every frame came back exactly once.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/builder.h>
#include "../common/builder_rig.h"

TestSuite(builder_segments, .timeout = 30);

static struct rig R;
static const uint16_t SRC3[] = { 7, 2, 40 };

#define ST xevb_builder_stats(R.b)

/* A 3001-byte fragment of event e from src in three segments, last one first. */
static void send_3001(uint16_t src, uint32_t e, uint8_t last_flags)
{
	rig_send_segment(&R, src, 0, 1, e, 3001, 2904, 97);
	rig_send_segment(&R, src, 0, 1, e, 3001, 0, 1452);
	rig_send_segment(&R, src, last_flags, 1, e, 3001, 1452, 1452);
}

Test(builder_segments, counted_once_never_built_frames_back)
{
	char msg[256];

	rig_init(&R, SRC3, 3, 16, 16, NULL);
	rig_send_range(&R, 7, 0, 1, 10, 2);
	send_3001(2, 10, 0);
	rig_send_range(&R, 2, 0, 1, 11, 1);
	rig_send_range(&R, 40, 0, 1, 10, 2);
	/* Event 11 is whole; event 10 still waits for source 2's fragment, which is never built. */
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u32, R.ev[0].event_id, 11));
	cr_assert(eq(u64, ST->segs_received, 3));
	cr_assert(eq(u64, ST->segs_unsupported, 3));
	cr_assert(eq(u64, ST->src[2].segs_received, 3));
	cr_assert(eq(u64, ST->src[2].segs_unsupported, 3));
	cr_assert(eq(u64, ST->src[7].segs_received, 0));
	/* Packets: 3 MEPs + 3 segments; source 2's packet_seq ran 0..3 without a gap. */
	cr_assert(eq(u64, ST->packets, 6));
	cr_assert(eq(u64, ST->src[2].packets, 4));
	cr_assert(eq(u64, ST->src[2].seq_gaps, 0));
	/* No fragment counted for the segments: 2 + 1 + 2 MEP records. */
	cr_assert(eq(u64, ST->frags_received, 5));
	cr_assert(eq(u64, ST->src[2].frags_received, 1));
	/* Every segment's frame came back before add_segment returned. */
	cr_assert(eq(u32, rig_frames_held(&R), 2), "the frames of event 10 (sources 7 and 40) only");
	cr_assert(xevb_builder_check(R.b, msg, sizeof(msg)), "%s", msg);
	rig_fini(&R);
}

/* The last packet of a source may be a segment: its END_OF_RUN ends the run. */
Test(builder_segments, end_of_run_on_a_segment)
{
	rig_init(&R, SRC3, 3, 16, 16, NULL);
	rig_send_range(&R, 7, XEVB_MEP_F_END_OF_RUN, 1, 20, 3);
	rig_send_range(&R, 40, XEVB_MEP_F_END_OF_RUN, 1, 20, 3);
	rig_send_range(&R, 2, 0, 1, 20, 2);
	cr_assert(eq(sz, R.n_ev, 2));
	cr_assert(not(ST->run_ended));
	/* Another run's END_OF_RUN, even on a segment of a configured source, does not count. */
	rig_send_segment(&R, 2, XEVB_MEP_F_END_OF_RUN, 9, 22, 3001, 0, 1452);
	cr_assert(not(ST->run_ended));
	cr_assert(not(ST->src[2].end_of_run));
	send_3001(2, 22, XEVB_MEP_F_END_OF_RUN);
	cr_assert(ST->run_ended);
	cr_assert(ST->src[2].end_of_run);
	/* Event 22 left incomplete at the flush: source 2's fragment was never built. */
	cr_assert(eq(sz, R.n_ev, 3));
	cr_assert(eq(u32, R.ev[2].event_id, 22));
	cr_assert(eq(u8, R.ev[2].flags, XEVB_EVT_F_INCOMPLETE));
	cr_assert(not(rig_has(&R.ev[2], 2)));
	cr_assert(eq(u64, ST->events_flushed_eor, 1));
	cr_assert(eq(u64, ST->segs_received, 4));
	cr_assert(eq(u64, ST->segs_unsupported, 4));
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	rig_fini(&R);
}

/* Unconfigured sources' segments are counted the same; the call's own checks hold. */
Test(builder_segments, unknown_source_and_bad_calls)
{
	struct xevb_pkt_info pi = { .source_id = 2, .flags = 0 };

	rig_init(&R, SRC3, 3, 16, 16, NULL);
	rig_send_segment(&R, 1000, 0, 1, 5, 3001, 0, 1452);
	cr_assert(eq(u64, ST->src[1000].segs_received, 1));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNKNOWN_SOURCE], 0), "a segment is no fragment");
	/* No SEGMENT flag, or a frame index out of range: refused, counted, nothing released. */
	xevb_builder_add_segment(R.b, 0, &pi);
	pi.flags = XEVB_MEP_F_SEGMENT;
	xevb_builder_add_segment(R.b, R.n_frames, &pi);
	cr_assert(eq(u64, ST->bad_calls, 2));
	cr_assert(eq(u64, ST->segs_received, 1));
	cr_assert(eq(u64, R.releases, 1));
	rig_fini(&R);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The builder and SEGMENT packets (wire format 1.1), rule by rule, then a
 * model with random sizes, orders, duplicates, overlaps and losses. On the
 * rig (tests/common/builder_rig.c): every emitted fragment is checked byte
 * by byte and by CRC, pieces included, and encoded both ways; rig_fini
 * checks both invariants and that every frame came back exactly once.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include "evb/builder.h"
#include "../common/builder_rig.h"

TestSuite(builder_segments, .timeout = 60);

static struct rig R;
static const uint16_t SRC3[] = { 7, 2, 40 };

#define ST      xevb_builder_stats(R.b)
#define SEGS(r) (ST->segs_drops[XEVB_SEG_##r])

/* The 3001-byte fragment of event e from src in three segments, in the order given. */
static void send_3001(uint16_t src, uint32_t e, const int *order, uint8_t last_flags)
{
	static const uint16_t off[] = { 0, 1452, 2904 }, len[] = { 1452, 1452, 97 };

	for (int k = 0; k < 3; k++)
		rig_send_segment(&R, src, k == 2 ? last_flags : 0, 1, e, 3001, off[order[k]], len[order[k]]);
}

static const int LAST_FIRST[] = { 2, 0, 1 };

static void check_now(void)
{
	char msg[512];

	cr_assert(xevb_builder_check(R.b, msg, sizeof(msg)), "%s", msg);
}

/* Any order: the fragment is whole with its last segment, the event goes out in pieces. */
Test(builder_segments, three_segments_make_the_fragment)
{
	uint16_t miss[4];

	rig_init(&R, SRC3, 3, 16, 32, NULL);
	rig_send_range(&R, 7, 0, 1, 10, 1);
	rig_send_range(&R, 40, 0, 1, 10, 1);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 2904, 97);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 0, 1452);
	/* Two of three: pending, missing for a re-ask, its frames held. */
	cr_assert(eq(sz, R.n_ev, 0));
	cr_assert(eq(int, xevb_builder_missing(R.b, 10, miss, 4), 1));
	cr_assert(eq(u16, miss[0], 2));
	cr_assert(eq(u64, ST->frags_pending, 1));
	cr_assert(eq(u64, ST->segs_pending, 2));
	cr_assert(eq(u32, rig_frames_held(&R), 4));
	check_now();
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 1452, 1452);
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u8, R.ev[0].flags, 0));
	cr_assert(rig_has(&R.ev[0], 2));
	/* The record is the whole fragment: its header and padded payload. */
	cr_assert(eq(u32, R.ev[0].wire_size,
		     32 + (12 + 3004) + (12 + XEVB_PAD4(rig_len(7, 10))) + (12 + XEVB_PAD4(rig_len(40, 10)))));
	cr_assert(eq(u64, ST->frags_received, 3));
	cr_assert(eq(u64, ST->frags_in_events, 3));
	cr_assert(eq(u64, ST->segs_received, 3));
	cr_assert(eq(u64, ST->segs_in_frags, 3));
	cr_assert(eq(u64, ST->seg_frags_whole, 1));
	cr_assert(eq(u64, ST->frags_pending + ST->segs_pending + ST->seg_frags_live, 0));
	cr_assert(eq(u32, rig_frames_held(&R), 0), "every segment's frame back after the emit");
	cr_assert(eq(u64, ST->src[2].segs_in_frags, 3));
	cr_assert(eq(u64, ST->src[2].packets, 3));
	cr_assert(eq(u64, ST->src[2].seq_gaps, 0));
	rig_fini(&R);
}

/* One segment carrying the whole fragment: whole at once. */
Test(builder_segments, one_segment_fragment)
{
	rig_init(&R, SRC3, 3, 16, 16, NULL);
	rig_send_segment(&R, 2, 0, 1, 5, 97, 0, 97);
	rig_send_range(&R, 7, 0, 1, 5, 1);
	rig_send_range(&R, 40, 0, 1, 5, 1);
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u8, R.ev[0].flags, 0));
	cr_assert(eq(u64, ST->segs_in_frags, 1));
	rig_fini(&R);
}

/* Duplicates, overlaps and disagreements are counted and kept out; the fragment still builds. */
Test(builder_segments, duplicate_and_mismatched_segments)
{
	rig_init(&R, SRC3, 3, 16, 32, NULL);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 0, 1452);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 0, 1452);           /* same offset */
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 4, 1448);           /* overlaps it */
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 1448, 8);           /* overlaps its end */
	rig_send_segment_crc(&R, 2, 0, 1, 10, 3001, 1452, 1452, 1); /* another crc32c */
	rig_send_segment(&R, 2, 0, 1, 10, 3004, 1452, 1452);        /* another length */
	cr_assert(eq(u64, SEGS(DUPLICATE), 1));
	cr_assert(eq(u64, SEGS(MISMATCHED), 4));
	cr_assert(eq(u64, ST->frags_received, 1), "one fragment, however many segments");
	cr_assert(eq(u32, rig_frames_held(&R), 1), "only the kept segment's frame");
	check_now();
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 1452, 1452);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 2904, 97);
	/* Whole now, the event still open: a segment again is a duplicate, a MEP of it a duplicate fragment. */
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 2904, 97);
	rig_send_range(&R, 2, 0, 1, 10, 1);
	cr_assert(eq(u64, SEGS(DUPLICATE), 2));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 1));
	rig_send_range(&R, 7, 0, 1, 10, 1);
	rig_send_range(&R, 40, 0, 1, 10, 1);
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u8, R.ev[0].flags, 0));
	cr_assert(eq(u64, ST->segs_in_frags, 3));
	cr_assert(eq(u64, ST->segs_received, 9));
	/* The event has left: its fragment again, in segments, is a duplicate fragment (counted at offset 0). */
	send_3001(2, 10, LAST_FIRST, 0);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 2));
	cr_assert(eq(u64, SEGS(FRAG_DROPPED), 3));
	rig_fini(&R);
}

/* Not whole in time: partial, the source missing from the INCOMPLETE event; later ones late. */
Test(builder_segments, partial_at_timeout)
{
	struct xevb_builder_cfg x = { .timeout_ns = 1000 };

	rig_init(&R, SRC3, 3, 16, 32, &x);
	R.now = 100;
	rig_send_range(&R, 7, 0, 1, 10, 1);
	rig_send_range(&R, 40, 0, 1, 10, 1);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 0, 1452);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 2904, 97);
	R.now = 2000;
	xevb_builder_poll(R.b, R.now);
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u8, R.ev[0].flags, XEVB_EVT_F_INCOMPLETE));
	cr_assert(not(rig_has(&R.ev[0], 2)));
	cr_assert(rig_has(&R.ev[0], 7) && rig_has(&R.ev[0], 40));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_PARTIAL], 1));
	cr_assert(eq(u64, ST->src[2].drops[XEVB_DROP_PARTIAL], 1));
	cr_assert(eq(u64, SEGS(PARTIAL), 2));
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	check_now();
	/* The missing segment comes now: late, and not another fragment (it is not at offset 0). */
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 1452, 1452);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 0));
	cr_assert(eq(u64, SEGS(FRAG_DROPPED), 1));
	/* A re-ask's answer, all three: one late fragment. */
	send_3001(2, 10, LAST_FIRST, XEVB_MEP_F_RESEND);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 1));
	cr_assert(eq(u64, SEGS(FRAG_DROPPED), 4));
	cr_assert(eq(u64, ST->frags_received, 4));
	rig_fini(&R);
}

/* Under the discard policy the partial fragment is counted the same; the event is discarded. */
Test(builder_segments, partial_discarded)
{
	struct xevb_builder_cfg x = { .timeout_ns = 1000, .timeout_policy = XEVB_TIMEOUT_DISCARD };

	rig_init(&R, SRC3, 3, 16, 32, &x);
	rig_send_range(&R, 7, 0, 1, 10, 1);
	rig_send_segment(&R, 2, 0, 1, 10, 3001, 0, 1452);
	R.now = 5000;
	xevb_builder_poll(R.b, R.now);
	cr_assert(eq(sz, R.n_ev, 0));
	cr_assert(eq(u64, ST->events_discarded, 1));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_PARTIAL], 1));
	cr_assert(eq(u64, ST->frags_discarded, 1));
	rig_fini(&R);
}

/* Dropped before any of it is held: counted once, with the segment at offset 0. */
Test(builder_segments, dropped_before_held)
{
	struct xevb_builder_cfg x = { .run_number = 1 };

	rig_init(&R, SRC3, 3, 16, 32, &x);
	send_3001(1000, 10, LAST_FIRST, 0); /* not configured */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNKNOWN_SOURCE], 1));
	send_3001(2, 10, LAST_FIRST, 0);                  /* fine */
	rig_send_segment(&R, 7, 0, 2, 10, 3001, 0, 1452); /* run 2 */
	rig_send_segment(&R, 7, 0, 2, 10, 3001, 1452, 1452);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_WRONG_RUN], 1));
	cr_assert(eq(u64, SEGS(FRAG_DROPPED), 5));
	cr_assert(eq(u64, ST->frags_received, 3));
	cr_assert(eq(u64, ST->src[1000].segs_received, 3));
	cr_assert(eq(u32, rig_frames_held(&R), 3), "source 2's fragment only");
	rig_fini(&R);
}

/* A segment of an event booked in a run of MEPs splits the run, then builds as ever. */
Test(builder_segments, segment_into_a_run)
{
	rig_init(&R, SRC3, 3, 16, 32, NULL);
	rig_send_range(&R, 7, 0, 1, 19, 1); /* the window has a base: runs can open */
	rig_send_range(&R, 7, 0, 1, 20, 4);
	rig_send_range(&R, 40, 0, 1, 20, 4);
	cr_assert(eq(u64, ST->meps_grouped, 2));
	for (uint32_t e = 20; e < 24; e++)
		send_3001(2, e, LAST_FIRST, 0);
	cr_assert(eq(sz, R.n_ev, 4));
	for (size_t i = 0; i < 4; i++)
		cr_assert(eq(u8, R.ev[i].flags, 0));
	cr_assert(eq(u64, ST->groups_split, 1));
	rig_fini(&R);
}

/*
 * END_OF_RUN on segments: a source flags every segment of its last
 * fragment, so the run ends once that fragment is whole, not at the first
 * flagged segment; another fragment still pending holds the end until its
 * timeout makes it partial.
 */
Test(builder_segments, end_of_run_on_segments)
{
	static const int IN_ORDER[] = { 0, 1, 2 };
	struct xevb_builder_cfg x = { .timeout_ns = 1000 };

	rig_init(&R, SRC3, 3, 16, 32, &x);
	rig_send_range(&R, 7, XEVB_MEP_F_END_OF_RUN, 1, 20, 2);
	rig_send_range(&R, 40, XEVB_MEP_F_END_OF_RUN, 1, 20, 2);
	rig_send_segment(&R, 2, XEVB_MEP_F_END_OF_RUN, 1, 20, 3001, 0, 1452);
	cr_assert(not(ST->run_ended), "more segments of the last fragment may follow");
	rig_send_segment(&R, 2, XEVB_MEP_F_END_OF_RUN, 1, 20, 3001, 1452, 1452);
	rig_send_segment(&R, 2, XEVB_MEP_F_END_OF_RUN, 1, 20, 3001, 2904, 97);
	/* Whole: event 20 complete; 21 has sources 7 and 40 only and leaves with the run's end. */
	cr_assert(ST->run_ended);
	cr_assert(eq(sz, R.n_ev, 2));
	cr_assert(eq(u8, R.ev[0].flags, 0));
	cr_assert(eq(u32, R.ev[1].event_id, 21));
	cr_assert(eq(u64, ST->events_flushed_eor, 1));
	rig_fini(&R);

	/* Another fragment pending (event 31): the end waits for its timeout. */
	rig_init(&R, SRC3, 3, 16, 32, &x);
	rig_send_range(&R, 7, XEVB_MEP_F_END_OF_RUN, 1, 30, 2);
	rig_send_range(&R, 40, XEVB_MEP_F_END_OF_RUN, 1, 30, 2);
	rig_send_segment(&R, 2, 0, 1, 31, 3001, 0, 1452);
	/* Another run's END_OF_RUN does not count. */
	rig_send_segment(&R, 2, XEVB_MEP_F_END_OF_RUN, 9, 30, 3001, 0, 1452);
	cr_assert(not(ST->src[2].end_of_run));
	send_3001(2, 30, IN_ORDER, XEVB_MEP_F_END_OF_RUN);
	cr_assert(eq(sz, R.n_ev, 1), "event 30 whole and out");
	cr_assert(not(ST->run_ended), "31 still pending");
	R.now = 5000;
	xevb_builder_poll(R.b, R.now);
	cr_assert(ST->run_ended);
	cr_assert(eq(sz, R.n_ev, 2));
	cr_assert(eq(u32, R.ev[1].event_id, 31));
	cr_assert(eq(u8, R.ev[1].flags, XEVB_EVT_F_INCOMPLETE));
	cr_assert(not(rig_has(&R.ev[1], 2)));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_PARTIAL], 1));
	rig_fini(&R);
}

/* More segments than a fragment may hold: counted, the fragment partial. */
Test(builder_segments, too_many_segments)
{
	rig_init(&R, SRC3, 3, 16, 80, NULL);
	for (uint32_t k = 0; k <= XEVB_SEG_MAX_PIECES; k++)
		rig_send_segment(&R, 2, 0, 1, 3, 4 * (XEVB_SEG_MAX_PIECES + 2), (uint16_t)(4 * k), 4);
	cr_assert(eq(u64, SEGS(TOO_MANY), 1));
	cr_assert(eq(u64, ST->segs_pending, XEVB_SEG_MAX_PIECES));
	check_now();
	rig_fini(&R);
}

/* No free entry: the oldest open events leave (evicted), their pending fragments partial. */
Test(builder_segments, entries_run_out)
{
	struct xevb_builder_cfg x = { .max_seg_frags = 6 };

	rig_init(&R, SRC3, 3, 64, 32, &x);
	for (uint32_t e = 0; e < 7; e++)
		rig_send_segment(&R, 2, 0, 1, e, 3001, 0, 1452);
	cr_assert(eq(u64, ST->events_evicted, 1));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_PARTIAL], 1));
	cr_assert(eq(u64, ST->seg_frags_live, 6));
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u32, R.ev[0].event_id, 0));
	check_now();
	rig_fini(&R);
}

/* Bad calls are refused and counted; nothing is released. */
Test(builder_segments, bad_calls)
{
	struct xevb_pkt_info pi = { .source_id = 2, .flags = XEVB_MEP_F_SEGMENT, .seg_bytes = 4, .frag_length = 8 };
	struct xevb_frag_ref ref = { .length = 4 };
	uint8_t frame[64] = { 0 };

	rig_init(&R, SRC3, 3, 16, 16, NULL);
	xevb_builder_add_segment(R.b, R.n_frames, frame, &pi, &ref, 0); /* frame index */
	xevb_builder_add_segment(R.b, 0, frame, &pi, NULL, 0);          /* no ref */
	pi.flags = 0;
	xevb_builder_add_segment(R.b, 0, frame, &pi, &ref, 0); /* not a segment */
	pi.flags = XEVB_MEP_F_SEGMENT;
	pi.seg_offset = 8;
	xevb_builder_add_segment(R.b, 0, frame, &pi, &ref, 0); /* past the fragment */
	cr_assert(eq(u64, ST->bad_calls, 4));
	cr_assert(eq(u64, ST->segs_received, 0));
	cr_assert(eq(u64, R.releases, 0));
	rig_fini(&R);
}

/* ---- the model ---- */

static uint64_t rng;

static uint32_t below(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return n ? (uint32_t)(rng >> 33) % n : 0;
}

struct mseg {
	uint16_t src;
	uint32_t event;
	uint16_t length, off, bytes;
	uint8_t kind;   /* 0 real, 1 duplicate copy, 2 overlap, 3 other crc */
	uint32_t after; /* bad ones: not before this packet index of their fragment */
};

#define M_EVENTS 12
#define M_SEGSRC 3 /* sources 1..3 send segments; 0 MEPs; 9 nothing (events stay open) */
#define M_MAX    (M_EVENTS * M_SEGSRC * 80)

static struct mseg plan[M_MAX];
/* Over all rounds: what the model exercised. */
static uint64_t tot_segs, tot_in, tot_dup, tot_mis, tot_partial, tot_whole;

/*
 * One round: every fragment of sources 1..3 in random segments, some lost,
 * some repeated, some answered by an overlapping or disagreeing segment
 * once the fragment is whole; all packets of all sources shuffled; source
 * 0 sends MEPs of 4 events. Source 9 never sends: every event stays open
 * until the flush, so what each segment counts as is exact.
 */
static void model_round(uint64_t seed)
{
	static const uint16_t srcs[] = { 0, 1, 2, 3, 9 };
	uint64_t want_in = 0, want_dup = 0, want_mis = 0, want_partial_segs = 0, want_frags = 0;
	uint64_t want_whole = 0, want_partial = 0;
	bool whole[M_EVENTS][M_SEGSRC + 1];
	uint32_t n = 0, i, meps = 0;

	rng = seed;
	rig_init(&R, srcs, 5, 64, 1024, NULL);
	for (uint32_t e = 0; e < M_EVENTS; e++)
		for (uint16_t s = 1; s <= M_SEGSRC; s++) {
			uint32_t len = 1 + below(5000), min = (len + 59) / 60, at = 0, first = n;
			int lose = below(4) == 0; /* 2: one segment was lost */
			bool delivered = false;

			min = (min + 3) & ~3u;
			if (min < 8)
				min = 8;
			while (at < len) {
				uint32_t sz = min + 4 * below(200), b = len - at < sz ? len - at : sz;

				if (!(lose && below(3) == 0)) {
					plan[n++] = (struct mseg){ s, e, (uint16_t)len, (uint16_t)at, (uint16_t)b,
								   0, 0 };
					delivered = true;
					if (below(6) == 0) {
						plan[n++] = (struct mseg){
							s, e, (uint16_t)len, (uint16_t)at, (uint16_t)b, 1, 0
						};
						want_dup++;
					}
				} else {
					lose = 2; /* lost one for sure */
				}
				at += b;
			}
			whole[e][s] = lose != 2;
			want_frags += delivered;
			if (whole[e][s]) {
				uint32_t reals = 0;

				for (i = first; i < n; i++)
					reals += plan[i].kind == 0;
				want_in += reals;
				want_whole++;
				/* Bad ones, after the fragment is whole: an overlap, a disagreeing crc32c. */
				for (i = first; i < n && below(3) == 0; i++) {
					if (plan[i].kind || plan[i].bytes < 8)
						continue;
					plan[n] = plan[i];
					plan[n].kind = (uint8_t)(2 + below(2));
					if (plan[n].kind == 2) {
						plan[n].off += 4;
						plan[n].bytes -= 4;
					}
					n++;
					want_mis++;
				}
			} else {
				for (i = first; i < n; i++)
					want_partial_segs += plan[i].kind == 0;
				want_partial += delivered;
			}
		}
	cr_assert(lt(u32, n, M_MAX));
	/* Shuffle, then move every bad one behind its fragment's last real or copy. */
	for (i = n; i > 1; i--) {
		uint32_t j = below(i);
		struct mseg t = plan[i - 1];

		plan[i - 1] = plan[j];
		plan[j] = t;
	}
	for (i = 0; i < n; i++) {
		if (plan[i].kind < 2)
			continue;
		for (uint32_t j = i + 1; j < n; j++)
			if (plan[j].kind < 2 && plan[j].src == plan[i].src && plan[j].event == plan[i].event) {
				struct mseg t = plan[i];

				memmove(&plan[i], &plan[i + 1], sizeof(plan[0]) * (j - i));
				plan[j] = t;
				i--;
				break;
			}
	}
	for (i = 0; i < n; i++) {
		const struct mseg *m = &plan[i];

		/* Source 0's MEPs of 4 events each, spread among the segments. */
		if (meps < M_EVENTS / 4 && i == meps * (n / 3)) {
			rig_send_range(&R, 0, 0, 1, meps * 4, 4);
			meps++;
		}
		if (m->kind == 3)
			rig_send_segment_crc(&R, m->src, 0, 1, m->event, m->length, m->off, m->bytes, 0xbad);
		else
			rig_send_segment(&R, m->src, 0, 1, m->event, m->length, m->off, m->bytes);
		if (i % 16 == 0)
			check_now();
	}
	for (; meps < M_EVENTS / 4; meps++)
		rig_send_range(&R, 0, 0, 1, meps * 4, 4);
	check_now();
	cr_assert(eq(u64, ST->segs_received, n));
	cr_assert(eq(u64, ST->segs_in_frags, want_in));
	cr_assert(eq(u64, ST->segs_drops[XEVB_SEG_DUPLICATE], want_dup));
	cr_assert(eq(u64, ST->segs_drops[XEVB_SEG_MISMATCHED], want_mis));
	cr_assert(eq(u64, ST->segs_pending, want_partial_segs));
	cr_assert(eq(u64, ST->seg_frags_whole, want_whole));
	cr_assert(eq(u64, ST->frags_pending, want_partial));
	xevb_builder_flush(R.b);
	cr_assert(eq(u64, ST->segs_drops[XEVB_SEG_PARTIAL], want_partial_segs));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_PARTIAL], want_partial));
	cr_assert(eq(u64, ST->segs_pending + ST->frags_pending + ST->seg_frags_live, 0));
	/* Every event went out at the flush: a segmenting source in it iff its fragment was whole. */
	cr_assert(eq(sz, R.n_ev, M_EVENTS));
	for (i = 0; i < R.n_ev; i++) {
		const struct rig_event *ev = &R.ev[i];

		cr_assert(eq(u8, ev->flags, XEVB_EVT_F_INCOMPLETE));
		cr_assert(not(rig_has(ev, 9)));
		for (uint16_t s = 1; s <= M_SEGSRC; s++)
			cr_assert(eq(int, rig_has(ev, s), whole[ev->event_id][s]), "seed %llu event %u source %u",
				  (unsigned long long)seed, ev->event_id, s);
	}
	cr_assert(eq(u64, ST->frags_received - ST->src[0].frags_received, want_frags));
	tot_segs += n;
	tot_in += want_in;
	tot_dup += want_dup;
	tot_mis += want_mis;
	tot_partial += want_partial;
	tot_whole += want_whole;
	rig_fini(&R);
}

Test(builder_segments, model_random_sizes_orders_duplicates_overlaps_losses)
{
	for (uint64_t seed = 1; seed <= 30; seed++)
		model_round(seed * 0x9e3779b97f4a7c15ull);
	printf("builder_segments model: 30 rounds, %llu segments: %llu in %llu whole fragments, %llu duplicate, "
	       "%llu mismatched, %llu fragments partial\n",
	       (unsigned long long)tot_segs, (unsigned long long)tot_in, (unsigned long long)tot_whole,
	       (unsigned long long)tot_dup, (unsigned long long)tot_mis, (unsigned long long)tot_partial);
	cr_assert(gt(u64, tot_dup, 50));
	cr_assert(gt(u64, tot_mis, 50));
	cr_assert(gt(u64, tot_partial, 50));
	cr_assert(gt(u64, tot_whole, 500));
}

/* Pull mode: a source whose fragment is partial is re-asked and sends it all again: it builds. */
Test(builder_segments, reask_answer_completes_the_fragment)
{
	static const int IN_ORDER[] = { 0, 1, 2 };
	uint16_t miss[4];

	rig_init(&R, SRC3, 3, 16, 32, NULL);
	rig_send_range(&R, 7, 0, 1, 30, 1);
	rig_send_range(&R, 40, 0, 1, 30, 1);
	rig_send_segment(&R, 2, 0, 1, 30, 3001, 0, 1452);
	rig_send_segment(&R, 2, 0, 1, 30, 3001, 2904, 97); /* 1452.. lost on the way */
	cr_assert(eq(int, xevb_builder_missing(R.b, 30, miss, 4), 1));
	cr_assert(eq(u16, miss[0], 2));
	send_3001(2, 30, IN_ORDER, XEVB_MEP_F_RESEND);
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u8, R.ev[0].flags, 0));
	/* Offset 0 again: a duplicate segment; 1452 made it whole; 2904 came after the event left. */
	cr_assert(eq(u64, SEGS(DUPLICATE), 1));
	cr_assert(eq(u64, SEGS(FRAG_DROPPED), 1));
	cr_assert(eq(u64, ST->segs_in_frags, 3));
	cr_assert(eq(u64, ST->frags_received, 3), "the answer is the same fragment, not another");
	rig_fini(&R);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * Builder core, rule by rule. Every test runs on the rig (tests/common/
 * builder_rig.c): each emitted fragment is checked in place (frame still
 * held, payload and CRC intact), and rig_fini checks the accounting
 * invariant, flushes and asserts that every frame came back exactly once.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <string.h>
#include "evb/builder.h"
#include "../common/builder_rig.h"

TestSuite(builder, .timeout = 30);

static struct rig R;
static const uint16_t SRC3[] = { 7, 2, 40 }; /* unsorted on purpose */

#define ST xevb_builder_stats(R.b)

static void init3(uint32_t window, const struct xevb_builder_cfg *extra)
{
	rig_init(&R, SRC3, 3, window, 64, extra);
}

/* Each source of SRC3 in turn sends events first..first+n-1 in one MEP. */
static void send3(uint32_t first, uint32_t n)
{
	for (int i = 0; i < 3; i++)
		rig_send_range(&R, SRC3[i], 0, 1, first, n);
}

Test(builder, bad_configurations)
{
	uint16_t s[] = { 1, 2, 2 }, big[] = { 4096 };
	struct xevb_builder_cfg c = { .sources = s, .n_sources = 2, .window = 8, .n_frames = 4 };
	struct xevb_builder *b = xevb_builder_new(&c);

	cr_assert(not(eq(ptr, b, NULL)));
	xevb_builder_free(b);
	struct xevb_builder_cfg bad[] = {
		{ .sources = s, .n_sources = 3, .window = 8, .n_frames = 4 }, /* repeat */
		{ .sources = s, .n_sources = 0, .window = 8, .n_frames = 4 },
		{ .sources = s, .n_sources = 4097, .window = 8, .n_frames = 4 },
		{ .sources = big, .n_sources = 1, .window = 8, .n_frames = 4 },
		{ .sources = s, .n_sources = 2, .window = 0, .n_frames = 4 },
		{ .sources = s, .n_sources = 2, .window = 8, .n_frames = 0 },
		{ .sources = NULL, .n_sources = 2, .window = 8, .n_frames = 4 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert(eq(ptr, xevb_builder_new(&bad[i]), NULL), "config %zu accepted", i);
		cr_assert(eq(int, errno, EINVAL), "config %zu errno", i);
	}
}

/* 25 events per MEP from three sources: built, sources ascending, in place. */
Test(builder, complete_events_in_place)
{
	init3(64, &(struct xevb_builder_cfg){ .run_number = 5 });
	rig_send_range(&R, 40, 0, 5, 100, 25);
	rig_send_range(&R, 2, 0, 5, 100, 25);
	cr_assert(eq(sz, R.n_ev, 0));
	cr_assert(eq(u32, rig_frames_held(&R), 2), "both frames still held");
	cr_assert(eq(u64, ST->frames_held, 2));
	cr_assert(eq(u64, ST->open_events, 25));
	rig_check(&R);
	rig_send_range(&R, 7, 0, 5, 100, 25);
	cr_assert(eq(sz, R.n_ev, 25));
	for (uint32_t i = 0; i < 25; i++) {
		cr_assert(eq(u32, R.ev[i].event_id, 100 + i));
		cr_assert(eq(u8, R.ev[i].flags, 0));
		cr_assert(eq(u16, R.ev[i].n_frags, 3));
		cr_assert(rig_has(&R.ev[i], 2) && rig_has(&R.ev[i], 7) && rig_has(&R.ev[i], 40));
	}
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	cr_assert(eq(u64, R.releases, 3));
	cr_assert(eq(u64, ST->events_complete, 25));
	cr_assert(eq(u64, ST->frags_in_events, 75));
	cr_assert(eq(u64, ST->src[40].frags_in_events, 25));
	cr_assert(eq(u32, ST->run_number, 5));
	cr_assert(ST->run_known);
	rig_fini(&R);
}

/* A frame goes back only with its last fragment, never before. */
Test(builder, frame_lives_until_its_last_fragment)
{
	uint32_t f_a, f_b;

	init3(16, NULL);
	f_a = rig_send_range(&R, 2, 0, 1, 10, 4); /* events 10..13 */
	f_b = rig_send_range(&R, 7, 0, 1, 10, 2); /* events 10..11 */
	rig_send_range(&R, 40, 0, 1, 10, 1);      /* completes 10 */
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(R.held[f_a] && R.held[f_b], "frames released after event 10 only");
	rig_send_range(&R, 40, 0, 1, 11, 1); /* completes 11: f_b done */
	cr_assert(eq(sz, R.n_ev, 2));
	cr_assert(not(R.held[f_b]), "frame of events 10-11 released");
	cr_assert(R.held[f_a], "frame of 10-13 still holds 12, 13");
	rig_send_range(&R, 7, 0, 1, 12, 2);
	rig_send_range(&R, 40, 0, 1, 12, 1);
	cr_assert(R.held[f_a]);
	rig_send_range(&R, 40, 0, 1, 13, 1);
	cr_assert(not(R.held[f_a]));
	cr_assert(eq(sz, R.n_ev, 4));
	rig_fini(&R);
}

/* One MEP with 1024 events: its frame lives until the 1024th is out. */
Test(builder, frame_with_1024_events)
{
	static const uint16_t s2[] = { 1, 2 };
	uint32_t f;

	rig_init(&R, s2, 2, 2048, 8, NULL);
	f = rig_send_range(&R, 1, 0, 1, 0, 1024);
	for (uint32_t e = 0; e < 1024; e++) {
		cr_assert(R.held[f], "released before event %u", e);
		rig_send_range(&R, 2, 0, 1, e, 1);
	}
	cr_assert(not(R.held[f]));
	cr_assert(eq(sz, R.n_ev, 1024));
	rig_fini(&R);
}

/* Frames with nothing accepted go back before add_mep returns. */
Test(builder, frame_without_accepted_fragment_released_at_once)
{
	init3(16, &(struct xevb_builder_cfg){ .run_number = 9 });
	rig_send_range(&R, 3, 0, 9, 1, 5); /* unknown source */
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	rig_send_range(&R, 2, 0, 8, 1, 5); /* wrong run */
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	rig_send_range(&R, 2, 0, 9, 1, 5);
	cr_assert(eq(u32, rig_frames_held(&R), 1));
	rig_send_range(&R, 2, XEVB_MEP_F_RESEND, 9, 1, 5); /* all duplicates */
	cr_assert(eq(u32, rig_frames_held(&R), 1));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNKNOWN_SOURCE], 5));
	cr_assert(eq(u64, ST->src[3].drops[XEVB_DROP_UNKNOWN_SOURCE], 5));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_WRONG_RUN], 5));
	cr_assert(eq(u64, ST->src[2].drops[XEVB_DROP_WRONG_RUN], 5));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 5));
	cr_assert(eq(u64, ST->src[2].drops[XEVB_DROP_DUPLICATE], 5));
	cr_assert(eq(u64, ST->frags_received, 20));
	rig_fini(&R);
}

/* Single-fragment MEPs: all 720 arrival orders of 3 sources x 2 events. */
Test(builder, every_arrival_order)
{
	int perm[6] = { 0, 1, 2, 3, 4, 5 };
	unsigned count = 0;

	for (;;) {
		init3(8, NULL);
		for (int k = 0; k < 6; k++) {
			uint32_t id = 0xfffffffeu + (uint32_t)(perm[k] / 3) * 3; /* wraps */
			rig_send_range(&R, SRC3[perm[k] % 3], 0, 1, id, 1);
		}
		cr_assert(eq(sz, R.n_ev, 2), "order %u", count);
		for (int e = 0; e < 2; e++) {
			cr_assert(eq(u16, R.ev[e].n_frags, 3));
			cr_assert(eq(u8, R.ev[e].flags, 0));
		}
		cr_assert(eq(u64, ST->events_complete, 2));
		rig_fini_none_held(&R);
		count++;
		/* next permutation */
		int i = 4;
		while (i >= 0 && perm[i] > perm[i + 1])
			i--;
		if (i < 0)
			break;
		int j = 5;
		while (perm[j] < perm[i])
			j--;
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
		for (int a = i + 1, z = 5; a < z; a++, z--) {
			t = perm[a];
			perm[a] = perm[z];
			perm[z] = t;
		}
	}
	cr_assert(eq(uint, count, 720));
}

/* Multi-event MEPs in every source order, sources out of phase. */
Test(builder, every_source_order_multi_event)
{
	static const int orders[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
					  { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };

	for (int o = 0; o < 6; o++) {
		init3(64, NULL);
		/* each source sends events 0..29 in MEPs of different packing */
		uint32_t next[3] = { 0, 0, 0 };
		const uint32_t pack[3] = { 7, 10, 3 };
		while (next[0] < 30 || next[1] < 30 || next[2] < 30) {
			for (int k = 0; k < 3; k++) {
				int s = orders[o][k];
				if (next[s] >= 30)
					continue;
				uint32_t n = pack[s] < 30 - next[s] ? pack[s] : 30 - next[s];
				rig_send_range(&R, SRC3[s], 0, 1, next[s], n);
				next[s] += n;
			}
			rig_check(&R);
		}
		cr_assert(eq(sz, R.n_ev, 30));
		cr_assert(eq(u64, ST->events_complete, 30));
		rig_fini_none_held(&R);
	}
}

/* A source that never sends: every event times out, missing list exact. */
Test(builder, silent_source_all_incomplete)
{
	init3(64, &(struct xevb_builder_cfg){ .timeout_ns = 1000 });
	R.now = 5000;
	rig_send_range(&R, 2, 0, 1, 0, 20);
	R.now = 5500;
	rig_send_range(&R, 40, 0, 1, 0, 20);
	xevb_builder_poll(R.b, 5999);
	cr_assert(eq(sz, R.n_ev, 0), "not yet due");
	cr_assert(eq(u32, rig_frames_held(&R), 2));
	xevb_builder_poll(R.b, 6000);
	cr_assert(eq(sz, R.n_ev, 20));
	for (uint32_t i = 0; i < 20; i++) {
		const struct rig_event *e = &R.ev[i];

		cr_assert(eq(u32, e->event_id, i), "in opening order");
		cr_assert(eq(u8, e->flags, XEVB_EVT_F_INCOMPLETE));
		cr_assert(eq(u16, e->n_frags, 2));
		cr_assert(eq(u64, e->open_ns, 5000));
		cr_assert(rig_has(e, 2) && rig_has(e, 40) && !rig_has(e, 7), "missing exactly 7");
		uint32_t want = 32 + 12 + XEVB_PAD4(rig_len(2, i)) + 12 + XEVB_PAD4(rig_len(40, i)) + 4;
		cr_assert(eq(u32, e->wire_size, want), "event %u wire size", i);
	}
	cr_assert(eq(u64, ST->events_incomplete, 20));
	cr_assert(eq(u64, ST->events_flushed_eor, 0));
	cr_assert(eq(u64, ST->open_events, 0));
	rig_fini_none_held(&R);
}

/* Timeouts by opening time, one at a time, and LATE afterwards. */
Test(builder, late_after_timeout)
{
	init3(16, &(struct xevb_builder_cfg){ .timeout_ns = 100 });
	R.now = 1000;
	rig_send_range(&R, 2, 0, 1, 1, 1);
	R.now = 1050;
	rig_send_range(&R, 2, 0, 1, 2, 1);
	rig_send_range(&R, 7, 0, 1, 1, 2);
	xevb_builder_poll(R.b, 1120);
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u32, R.ev[0].event_id, 1));
	cr_assert(eq(u16, R.ev[0].n_frags, 2));
	/* 40 for event 1 is late; 7 for event 1 again is a duplicate */
	R.now = 1130;
	rig_send_range(&R, 40, 0, 1, 1, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 1));
	cr_assert(eq(u64, ST->src[40].drops[XEVB_DROP_LATE], 1));
	rig_send_range(&R, 7, 0, 1, 1, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 1));
	cr_assert(eq(u64, ST->src[7].drops[XEVB_DROP_DUPLICATE], 1));
	cr_assert(eq(sz, R.n_ev, 1), "no second event 1");
	/* event 2 completes normally */
	rig_send_range(&R, 40, 0, 1, 2, 1);
	cr_assert(eq(sz, R.n_ev, 2));
	cr_assert(eq(u8, R.ev[1].flags, 0));
	cr_assert(eq(u64, ST->events_incomplete, 1));
	cr_assert(eq(u64, ST->events_complete, 1));
	rig_fini(&R);
}

Test(builder, timeout_discard_policy)
{
	init3(16, &(struct xevb_builder_cfg){ .timeout_ns = 10, .timeout_policy = XEVB_TIMEOUT_DISCARD });
	rig_send_range(&R, 2, 0, 1, 1, 5);
	rig_send_range(&R, 7, 0, 1, 3, 5);
	xevb_builder_poll(R.b, 10);
	cr_assert(eq(sz, R.n_ev, 0), "discarded, not emitted");
	cr_assert(eq(u64, ST->events_discarded, 7));
	cr_assert(eq(u64, ST->frags_discarded, 10));
	cr_assert(eq(u64, ST->src[2].frags_discarded, 5));
	cr_assert(eq(u64, ST->src[7].frags_discarded, 5));
	cr_assert(eq(u64, ST->frags_in_events, 10));
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	rig_send_range(&R, 40, 0, 1, 1, 7);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 7));
	rig_fini(&R);
}

Test(builder, timeout_zero_disables)
{
	init3(16, NULL);
	rig_send_range(&R, 2, 0, 1, 1, 5);
	xevb_builder_poll(R.b, UINT64_MAX / 2);
	cr_assert(eq(sz, R.n_ev, 0));
	cr_assert(eq(u64, ST->open_events, 5));
	rig_fini(&R);
	/* rig_fini flushed them: incomplete */
}

Test(builder, flush_emits_incomplete_in_id_order)
{
	init3(16, NULL);
	rig_send_range(&R, 7, 0, 1, 5, 3);
	rig_send_range(&R, 2, 0, 1, 3, 3);
	xevb_builder_flush(R.b);
	cr_assert(eq(sz, R.n_ev, 5));
	for (uint32_t i = 0; i < 5; i++) {
		cr_assert(eq(u32, R.ev[i].event_id, 3 + i));
		cr_assert(eq(u8, R.ev[i].flags, XEVB_EVT_F_INCOMPLETE));
	}
	cr_assert(eq(u16, R.ev[2].n_frags, 2));
	cr_assert(eq(u64, ST->events_incomplete, 5));
	rig_fini_none_held(&R);
}

/* Duplicates within and across packets, also after the event was emitted. */
Test(builder, duplicates)
{
	static const uint32_t a[] = { 10, 12, 14 }, bb[] = { 11, 12, 13, 14 };

	init3(64, NULL);
	rig_send(&R, 2, 0, 1, a, 3);
	rig_send(&R, 2, 0, 1, bb, 4); /* 12, 14 again */
	cr_assert(eq(u64, ST->src[2].drops[XEVB_DROP_DUPLICATE], 2));
	cr_assert(eq(u64, ST->src[2].frags_in_events, 5));
	rig_send_range(&R, 7, 0, 1, 10, 5);
	rig_send_range(&R, 40, 0, 1, 10, 5);
	cr_assert(eq(sz, R.n_ev, 5));
	/* a resend of everything after emission: all duplicates, no new event */
	rig_send_range(&R, 40, XEVB_MEP_F_RESEND, 1, 10, 5);
	rig_send(&R, 2, XEVB_MEP_F_RESEND, 1, a, 3);
	cr_assert(eq(sz, R.n_ev, 5));
	cr_assert(eq(u64, ST->src[40].drops[XEVB_DROP_DUPLICATE], 5));
	cr_assert(eq(u64, ST->src[2].drops[XEVB_DROP_DUPLICATE], 5));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 10));
	cr_assert(eq(u64, ST->events_opened, 5));
	for (size_t i = 0; i < R.n_ev; i++)
		cr_assert(eq(u16, R.ev[i].n_frags, 3), "never a fragment twice");
	rig_fini(&R);
}

/* Run of 300 events through 2^32 with a window of 8 and packing 7. */
Test(builder, event_id_wraps)
{
	const uint32_t first = 0xffffff00u;

	init3(8, NULL);
	for (uint32_t e = 0; e < 300; e += 7) {
		uint32_t n = 300 - e < 7 ? 300 - e : 7;
		for (int s = 0; s < 3; s++)
			rig_send_range(&R, SRC3[s], 0, 1, first + e, n);
	}
	cr_assert(eq(sz, R.n_ev, 300));
	for (uint32_t i = 0; i < 300; i++) {
		cr_assert(eq(u32, R.ev[i].event_id, first + i));
		cr_assert(eq(u8, R.ev[i].flags, 0));
	}
	cr_assert(eq(u64, ST->events_complete, 300));
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		cr_assert(eq(u64, ST->drops[r], 0));
	rig_fini(&R);
}

/*
 * The window is in event_id units: W=5 rounds to 8. An id that needs the
 * window past open events evicts them (incomplete, at once, oldest first):
 * nothing is dropped for overflow, nothing waits for a timeout.
 */
Test(builder, window_pressure_evicts)
{
	init3(5, NULL);
	rig_send_range(&R, 2, 0, 1, 100, 1); /* window [93, 101) */
	rig_send_range(&R, 2, 0, 1, 107, 1); /* slides to [100, 108) */
	cr_assert(eq(u64, ST->open_events, 2));
	rig_send_range(&R, 7, 0, 1, 108, 1); /* [101, 109): 100 leaves */
	cr_assert(eq(u64, ST->events_evicted, 1));
	cr_assert(eq(u64, ST->events_incomplete, 1));
	cr_assert(eq(u64, ST->open_events, 2));
	cr_assert(eq(sz, R.n_ev, 1));
	cr_assert(eq(u32, R.ev[0].event_id, 100));
	cr_assert(eq(u8, R.ev[0].flags, XEVB_EVT_F_INCOMPLETE));
	cr_assert(rig_has(&R.ev[0], 2) && !rig_has(&R.ev[0], 7) && !rig_has(&R.ev[0], 40));
	/* what comes later for 100 is late; so is a duplicate of it */
	rig_send_range(&R, 7, 0, 1, 100, 1);
	rig_send_range(&R, 2, 0, 1, 100, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 2));
	/* 107 and 108 complete in the window as usual */
	rig_send_range(&R, 40, 0, 1, 107, 2);
	rig_send_range(&R, 7, 0, 1, 107, 1);
	rig_send_range(&R, 2, 0, 1, 108, 1);
	cr_assert(eq(u64, ST->events_complete, 2));
	/* a jump far ahead from one source: not corroborated, FUTURE; nothing leaves */
	rig_send_range(&R, 2, 0, 1, 110, 1);
	rig_send_range(&R, 2, 0, 1, 100000, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 1));
	cr_assert(eq(u64, ST->open_events, 1));
	/* a second source agrees (quorum 2 of 3): 110 is evicted, the window jumps */
	rig_send_range(&R, 40, 0, 1, 100001, 1);
	cr_assert(eq(u64, ST->jumps_quorum, 1));
	cr_assert(eq(u64, ST->events_evicted, 2));
	cr_assert(eq(u32, R.ev[R.n_ev - 1].event_id, 110));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_OVERFLOW], 0));
	cr_assert(eq(u64, ST->open_events, 1));
	rig_check(&R);
	rig_fini(&R);
}

/* The discard policy holds for evicted events as for timed-out ones. */
Test(builder, evicted_events_follow_the_discard_policy)
{
	init3(8, &(struct xevb_builder_cfg){ .timeout_policy = XEVB_TIMEOUT_DISCARD });
	rig_send_range(&R, 2, 0, 1, 0, 4); /* 0-3 open, source 2 only */
	rig_send_range(&R, 7, 0, 1, 9, 1); /* [2, 10): 0 and 1 leave */
	cr_assert(eq(u64, ST->events_evicted, 2));
	cr_assert(eq(u64, ST->events_discarded, 2));
	cr_assert(eq(u64, ST->frags_discarded, 2));
	cr_assert(eq(u64, ST->src[2].frags_discarded, 2));
	cr_assert(eq(sz, R.n_ev, 0));
	rig_check(&R);
	rig_fini(&R);
}

/*
 * Frame pressure: above max_frames_held the oldest open events (opening
 * order) leave incomplete until 7/8 of the bound is held, so the receive
 * path keeps free frames; runs leave whole.
 */
Test(builder, frame_pressure_evicts_oldest)
{
	struct xevb_builder_cfg x = { .max_frames_held = 16 };

	init3(64, &x);
	for (uint32_t e = 0; e < 16; e++)
		rig_send_range(&R, 2, 0, 1, 30 - e, 1); /* opened newest id first */
	cr_assert(eq(u64, ST->frames_held, 16));
	cr_assert(eq(u64, ST->events_evicted, 0));
	rig_send_range(&R, 7, 0, 1, 40, 1); /* 17 held: down to 14 */
	cr_assert(eq(u64, ST->frames_held, 14));
	cr_assert(eq(u64, ST->events_evicted, 3));
	cr_assert(eq(u64, ST->events_incomplete, 3));
	cr_assert(eq(sz, R.n_ev, 3));
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert(eq(u32, R.ev[i].event_id, 30 - i), "oldest opened first");
		cr_assert(eq(u8, R.ev[i].flags, XEVB_EVT_F_INCOMPLETE));
	}
	rig_check(&R);
	rig_fini(&R);

	/* a run (4 events, one frame per source) leaves whole, all 4 events */
	x.max_frames_held = 8;
	init3(64, &x);
	rig_send_range(&R, 40, 0, 1, 100, 4);
	rig_send_range(&R, 7, 0, 1, 100, 4);
	for (uint32_t e = 0; e < 7; e++)
		rig_send_range(&R, 2, 0, 1, 104 + e, 1); /* 9 held: down to 7 */
	cr_assert(eq(u64, ST->frames_held, 7));
	cr_assert(eq(u64, ST->events_evicted, 4));
	cr_assert(eq(sz, R.n_ev, 4));
	for (uint32_t i = 0; i < 4; i++) {
		cr_assert(eq(u32, R.ev[i].event_id, 100 + i));
		cr_assert(rig_has(&R.ev[i], 7) && rig_has(&R.ev[i], 40) && !rig_has(&R.ev[i], 2));
	}
	cr_assert(eq(u64, ST->drops[XEVB_DROP_OVERFLOW], 0));
	rig_check(&R);
	rig_fini(&R);
}

/*
 * With nothing open the window follows a jump of more than one window once
 * a quorum (default: a majority, 2 of 3) of distinct sources report the
 * region: the first source's fragments before that are FUTURE, and its
 * events go out INCOMPLETE without it.
 */
Test(builder, window_jumps_when_nothing_open)
{
	init3(8, NULL);
	send3(0, 2);
	for (uint32_t k = 1; k < 10; k++) {
		uint32_t e = k * 1000003u;
		rig_send_range(&R, 7, 0, 1, e, 2); /* alone: FUTURE */
		cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 2 * k));
		cr_assert(eq(u64, ST->jumps_quorum, k - 1));
		rig_send_range(&R, 2, 0, 1, e, 2); /* 2 of 3: the window jumps */
		cr_assert(eq(u64, ST->jumps_quorum, k));
		rig_send_range(&R, 40, 0, 1, e, 2);
		rig_send_range(&R, 7, 0, 1, e + 2, 1); /* its next ones fit again */
		rig_send_range(&R, 2, 0, 1, e + 2, 1);
		rig_send_range(&R, 40, 0, 1, e + 2, 1);
		xevb_builder_flush(R.b);
	}
	cr_assert(eq(sz, R.n_ev, 2 + 9 * 3));
	cr_assert(eq(u64, ST->events_complete, 2 + 9));
	cr_assert(eq(u64, ST->events_incomplete, 9 * 2));
	for (size_t i = 0; i < R.n_ev; i++)
		cr_assert(eq(int, R.ev[i].flags != 0, !rig_has(&R.ev[i], 7)), "event %u", R.ev[i].event_id);
	cr_assert(eq(u64, ST->src[7].drops[XEVB_DROP_FUTURE], 18));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE] + ST->drops[XEVB_DROP_OVERFLOW], 0));
	cr_assert(eq(u64, ST->jumps_idle, 0));
	rig_fini(&R);
}

/*
 * A far jump over blocks our XDP program shed (pi->shed_run from a vouched
 * XDP meta, shed.h) needs no quorum: nothing is FUTURE, no event torn. It
 * holds only as far as the run reaches: further, the quorum rule again.
 */
Test(builder, far_jump_vouched_by_the_shed_run)
{
	init3(64, NULL);
	send3(100, 1);
	/*
	 * Over two windows past the window's end (a far jump), within what a
	 * run of 1 unit (16 blocks of 16 ids) and 2 blocks' slack reach: 288.
	 */
	R.shed_run = 1;
	rig_send_range(&R, 7, 0, 1, 300, 2);
	cr_assert(eq(u64, ST->jumps_shed, 1));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 0));
	R.shed_run = 0;
	rig_send_range(&R, 2, 0, 1, 300, 2);
	rig_send_range(&R, 40, 0, 1, 300, 2);
	cr_assert(eq(u64, ST->events_complete, 3));
	/* 1000 ids further, vouched by a run of 1 unit: not that far, FUTURE */
	R.shed_run = 1;
	rig_send_range(&R, 7, 0, 1, 1300, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 1));
	cr_assert(eq(u64, ST->jumps_shed, 1));
	/* a run that does reach it: 6 units, (96 + 2) blocks */
	R.shed_run = 6;
	rig_send_range(&R, 7, 0, 1, 1300, 1);
	cr_assert(eq(u64, ST->jumps_shed, 2));
	R.shed_run = 0;
	rig_send_range(&R, 2, 0, 1, 1300, 1);
	rig_send_range(&R, 40, 0, 1, 1300, 1);
	cr_assert(eq(u64, ST->events_complete, 4));
	cr_assert(eq(u64, ST->events_incomplete, 0));
	cr_assert(eq(u64, ST->jumps_quorum + ST->jumps_idle, 0));
	rig_fini(&R);
}

/*
 * The hostile case: one configured source sends ids far ahead between good
 * events. Nothing moves; each one is counted FUTURE and every good event
 * is built complete.
 */
Test(builder, far_future_from_one_source_refused)
{
	struct xevb_builder_cfg x = { .timeout_ns = 1000 };
	uint32_t bad = 0, rnd = 12345;

	init3(16, &x);
	for (uint32_t e = 0; e < 2000; e++) {
		for (int s = 0; s < 3; s++)
			rig_send_range(&R, SRC3[s], 0, 1, e, 1);
		if (e % 7 == 3) {
			/* far ids (2^28 ahead and random), from one source at a time */
			rnd = rnd * 1103515245u + 12345u;
			rig_send_range(&R, SRC3[e % 3], 0, 1, e + (1u << 28) + (rnd >> 4), 1 + e % 5);
			bad += 1 + e % 5;
		}
		R.now += 10;
		xevb_builder_poll(R.b, R.now);
	}
	cr_assert(eq(u64, ST->events_complete, 2000));
	cr_assert(eq(sz, R.n_ev, 2000));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], bad));
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		if (r != XEVB_DROP_FUTURE)
			cr_assert(eq(u64, ST->drops[r], 0), "reason %d", r);
	cr_assert(eq(u64, ST->jumps_quorum + ST->jumps_idle, 0));
	rig_fini(&R);
}

/* Two sources far ahead, but in regions a window apart: no quorum. */
Test(builder, far_claims_must_agree)
{
	init3(16, NULL);
	send3(100, 1);
	rig_send_range(&R, 7, 0, 1, 5000, 1);
	rig_send_range(&R, 2, 0, 1, 5016, 1); /* 16 away: another region */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 2));
	rig_send_range(&R, 40, 0, 1, 5001, 1); /* agrees with 7: jump */
	cr_assert(eq(u64, ST->jumps_quorum, 1));
	cr_assert(eq(u64, ST->open_events, 1));
	rig_fini(&R);
}

/* A claim older than the timeout does not count towards the quorum. */
Test(builder, far_claims_expire)
{
	init3(16, &(struct xevb_builder_cfg){ .timeout_ns = 100 });
	rig_send_range(&R, 7, 0, 1, 0, 1);
	rig_send_range(&R, 7, 0, 1, 90000, 1); /* claim at t=0 */
	R.now = 60;
	rig_send_range(&R, 2, 0, 1, 0, 1); /* traffic: not idle */
	R.now = 120;
	rig_send_range(&R, 2, 0, 1, 90001, 1); /* 7's claim is 120 old */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 2));
	cr_assert(eq(u64, ST->jumps_quorum + ST->jumps_idle, 0));
	R.now = 150;
	xevb_builder_poll(R.b, R.now);         /* event 0 times out */
	rig_send_range(&R, 7, 0, 1, 90002, 1); /* 2's claim is 30 old */
	cr_assert(eq(u64, ST->jumps_quorum, 1));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 2));
	rig_fini(&R);
}

/*
 * Idle (no MEP at all) for the timeout: the next fragment moves the window
 * wherever it is, a restart after a pause loses nothing. Events still open
 * (not polled yet) are timed out first, by the policy.
 */
Test(builder, far_jump_after_idle)
{
	init3(16, &(struct xevb_builder_cfg){ .timeout_ns = 100 });
	rig_send_range(&R, 7, 0, 1, 0, 3);
	rig_send_range(&R, 2, 0, 1, 0, 3);
	rig_send_range(&R, 40, 0, 1, 0, 2); /* event 2 stays open */
	R.now = 99;
	rig_send_range(&R, 7, 0, 1, 1u << 30, 1); /* 99 idle: not enough */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 1));
	R.now = 99 + 100;
	rig_send_range(&R, 2, 0, 1, (1u << 30) + 1, 1);
	cr_assert(eq(u64, ST->jumps_idle, 1));
	cr_assert(eq(u64, ST->events_incomplete, 1), "event 2 timed out first");
	cr_assert(eq(u64, ST->drops[XEVB_DROP_OVERFLOW], 0));
	rig_send_range(&R, 7, 0, 1, (1u << 30) + 1, 1);
	rig_send_range(&R, 40, 0, 1, (1u << 30) + 1, 1);
	cr_assert(eq(u64, ST->events_complete, 3));
	cr_assert(eq(u32, R.ev[R.n_ev - 1].event_id, (1u << 30) + 1));
	rig_fini(&R);
}

/* jump_quorum = n: every source must agree. */
Test(builder, far_jump_quorum_configurable)
{
	init3(16, &(struct xevb_builder_cfg){ .jump_quorum = 3 });
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 0, 1);
	rig_send_range(&R, 7, 0, 1, 1000, 1);
	rig_send_range(&R, 2, 0, 1, 1000, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 2));
	rig_send_range(&R, 40, 0, 1, 1000, 1);
	cr_assert(eq(u64, ST->jumps_quorum, 1));
	rig_fini(&R);
}

/* One source: its own report is the quorum (nothing else to ask). */
Test(builder, far_jump_single_source)
{
	static const uint16_t one[] = { 9 };

	rig_init(&R, one, 1, 4, 8, NULL);
	rig_send_range(&R, 9, 0, 1, 0, 1);
	rig_send_range(&R, 9, 0, 1, 1u << 20, 1);
	cr_assert(eq(u64, ST->jumps_quorum, 1));
	cr_assert(eq(u64, ST->events_complete, 2));
	rig_fini(&R);
}

/*
 * With a DFM the window follows its assignments: every configured source
 * at once (a quorum, spoofed) sending ids 2^28 ahead moves nothing; each
 * fragment counts UNASSIGNED (never FUTURE: no claim is recorded) and every
 * assigned event is built complete.
 */
Test(builder, unassigned_quorum_moves_nothing)
{
	struct xevb_builder_cfg x = { .timeout_ns = 1000 };
	uint64_t bad = 0;

	init3(16, &x);
	for (uint32_t e = 0; e < 2000; e += 10) {
		xevb_builder_assigned(R.b, e, 10);
		for (int s = 0; s < 3; s++)
			rig_send_range(&R, SRC3[s], 0, 1, e, 10);
		if (e % 70 == 30) {
			for (int s = 0; s < 3; s++)
				rig_send_range(&R, SRC3[s], 0, 1, e + (1u << 28), 3);
			bad += 9;
		}
		R.now += 10;
		xevb_builder_poll(R.b, R.now);
	}
	cr_assert(eq(u64, ST->events_complete, 2000));
	cr_assert(eq(sz, R.n_ev, 2000));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], bad));
	cr_assert(eq(u64, ST->src[2].drops[XEVB_DROP_UNASSIGNED], bad / 3));
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		if (r != XEVB_DROP_UNASSIGNED)
			cr_assert(eq(u64, ST->drops[r], 0), "reason %d", r);
	cr_assert(eq(u64, ST->jumps_quorum + ST->jumps_idle, 0));
	rig_fini(&R);
}

/*
 * The margin is one window past the newest assigned id A (A = 10 here,
 * window 16): 25 may still open (fragments beat their ASSIGN), 26 may not;
 * a MEP across the edge is judged id by id.
 */
Test(builder, unassigned_margin_is_one_window)
{
	init3(16, NULL);
	xevb_builder_assigned(R.b, 0, 10);
	rig_send_range(&R, 7, 0, 1, 10, 1);
	rig_send_range(&R, 7, 0, 1, 25, 1);
	cr_assert(eq(u64, ST->open_events, 2));
	rig_send_range(&R, 7, 0, 1, 26, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 1));
	rig_send_range(&R, 2, 0, 1, 20, 10); /* 20..25 open, 26..29 do not */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 5));
	cr_assert(eq(u64, ST->src[2].frags_in_events, 6));
	xevb_builder_assigned(R.b, 10, 10); /* A = 20: up to 35 */
	xevb_builder_assigned(R.b, 5, 1);   /* an older ASSIGN does not pull A back */
	rig_send_range(&R, 2, 0, 1, 35, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 5));
	rig_send_range(&R, 2, 0, 1, 36, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 6));
	rig_fini(&R);
}

/*
 * Pull mode (xevb_builder_set_pull): nothing at or past A (one past the
 * newest id assigned) was requested, so a fragment there that would open
 * an event is UNASSIGNED, a run of them too (no group opens); below A
 * everything opens as before, and once assigned the same ids build.
 */
Test(builder, pull_unrequested_opens_nothing)
{
	init3(16, NULL);
	xevb_builder_set_pull(R.b, true);
	xevb_builder_assigned(R.b, 0, 10);
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 10, 4); /* A = 10: nobody asked */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 12));
	cr_assert(eq(u64, ST->open_events, 0));
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 0, 10);
	cr_assert(eq(u64, ST->events_complete, 10));
	xevb_builder_assigned(R.b, 10, 10);
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 10, 4);
	cr_assert(eq(u64, ST->events_complete, 14));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 12));
	/* Push again: the margin of a window lets fragments beat their ASSIGN. */
	xevb_builder_set_pull(R.b, false);
	rig_send_range(&R, 7, 0, 1, 25, 1);
	cr_assert(eq(u64, ST->open_events, 1));
	rig_fini(&R);
}

/*
 * Other builders' blocks between ours (A = 10, then 100..109: a step of
 * 90): ours may beat their ASSIGN by as much, so the margin becomes the
 * window + 90. It never shrinks, and ids 2^28 ahead stay unassigned.
 */
Test(builder, unassigned_margin_grows_with_the_step)
{
	init3(16, NULL);
	xevb_builder_assigned(R.b, 0, 10);
	rig_send_range(&R, 7, 0, 1, 0, 1);
	rig_send_range(&R, 7, 0, 1, 30, 1); /* 10 + 16 + 4: unassigned */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 1));
	xevb_builder_assigned(R.b, 100, 10);       /* A = 110, margin 16 + 90 */
	xevb_builder_assigned(R.b, 110, 10);       /* A = 120, a step of 0: margin stays */
	rig_send_range(&R, 7, 0, 1, 120 + 105, 1); /* within: the rules above (no quorum: future) */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 1));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_FUTURE], 1));
	rig_send_range(&R, 7, 0, 1, 120 + 106, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 2));
	rig_send_range(&R, 2, 0, 1, 1u << 28, 3);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 5));
	rig_fini(&R);
}

/* A spoofed fragment far ahead before any good one does not place the window. */
Test(builder, unassigned_never_places_window)
{
	init3(16, NULL);
	xevb_builder_assigned(R.b, 100, 10);
	rig_send_range(&R, 40, 0, 1, 1u << 28, 4);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 4));
	cr_assert(eq(u64, ST->open_events, 0));
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 100, 10);
	cr_assert(eq(u64, ST->events_complete, 10));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 0));
	rig_fini(&R);
}

/*
 * Before the first ASSIGN the data places the window: a spoofed MEP far
 * ahead opens events there. The first ASSIGN finds that window out of its
 * reach: those events are discarded (events_unassigned), and the real
 * events place the window afresh and are built complete.
 */
Test(builder, window_placed_before_the_first_assign_out_of_its_reach_is_reset)
{
	init3(16, NULL);
	rig_send_range(&R, 40, 0, 1, 1u << 28, 4);
	rig_send_range(&R, 2, 0, 1, (1u << 28) + 1, 2);
	cr_assert(eq(u64, ST->open_events, 4));
	xevb_builder_assigned(R.b, 100, 10);
	cr_assert(eq(u64, ST->open_events, 0));
	cr_assert(eq(u64, ST->events_discarded, 4));
	cr_assert(eq(u64, ST->events_unassigned, 4));
	cr_assert(eq(u64, ST->frags_discarded, 6));
	cr_assert(eq(sz, R.n_ev, 0), "nothing emitted");
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 100, 10);
	cr_assert(eq(u64, ST->events_complete, 10));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE] + ST->drops[XEVB_DROP_FUTURE], 0));
	/* Later spoofs are unassigned, as ever. */
	rig_send_range(&R, 40, 0, 1, 1u << 28, 4);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNASSIGNED], 4));
	rig_fini(&R);
}

/* With a DFM nothing times out before its first ASSIGN: that ASSIGN decides. */
Test(builder, awaiting_the_first_assign_nothing_times_out)
{
	init3(16, &(struct xevb_builder_cfg){ .timeout_ns = 1000, .await_first_assign = true });
	rig_send_range(&R, 40, 0, 1, 1u << 28, 4);
	R.now += 100000;
	xevb_builder_poll(R.b, R.now);
	cr_assert(eq(u64, ST->open_events, 4));
	cr_assert(eq(sz, R.n_ev, 0));
	xevb_builder_assigned(R.b, 0, 10);
	cr_assert(eq(u64, ST->events_unassigned, 4));
	rig_send_range(&R, 2, 0, 1, 0, 10);
	R.now += 100000;
	xevb_builder_poll(R.b, R.now);
	cr_assert(eq(u64, ST->events_incomplete, 10), "assigned: the timeout runs again");
	rig_fini(&R);
}

/* Fragments that beat the first ASSIGN (push mode) keep their window and events. */
Test(builder, window_placed_by_fragments_that_beat_the_first_assign_stays)
{
	init3(16, NULL);
	for (int s = 0; s < 2; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 100, 10);
	xevb_builder_assigned(R.b, 100, 10);
	cr_assert(eq(u64, ST->events_unassigned, 0));
	cr_assert(eq(u64, ST->open_events, 10));
	rig_send_range(&R, SRC3[2], 0, 1, 100, 10);
	cr_assert(eq(u64, ST->events_complete, 10));
	/* A window a little behind (the first events went to another builder) stays too. */
	xevb_builder_assigned(R.b, 110, 10);
	cr_assert(eq(u64, ST->events_unassigned, 0));
	rig_fini(&R);
}

/* The first event places the window so that a lagging source can open older ids. */
Test(builder, first_event_is_newest_of_window)
{
	init3(16, NULL);
	rig_send_range(&R, 2, 0, 1, 1000, 1);
	rig_send_range(&R, 7, 0, 1, 985, 1); /* 1000 - 15: inside */
	rig_send_range(&R, 7, 0, 1, 984, 1); /* outside: late */
	cr_assert(eq(u64, ST->open_events, 2));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 1));
	rig_fini(&R);
}

/* The DFM's run (xevb_builder_set_run) ends adoption: the data never sets it. */
Test(builder, set_run_ends_adoption)
{
	init3(16, &(struct xevb_builder_cfg){ .adopt_run = true });
	xevb_builder_set_run(R.b, 5);
	cr_assert(ST->run_known);
	rig_send_range(&R, 7, 0, 999, 1, 2);
	cr_assert(eq(u32, ST->run_number, 5));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_WRONG_RUN], 2));
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 5, 1, 2);
	cr_assert(eq(u64, ST->events_complete, 2));
	rig_fini(&R);
}

Test(builder, wrong_run_and_adopt)
{
	init3(16, &(struct xevb_builder_cfg){ .adopt_run = true });
	cr_assert(not(ST->run_known));
	rig_send_range(&R, 99, 0, 77, 1, 2); /* unknown source: does not set the run */
	cr_assert(not(ST->run_known));
	rig_send_range(&R, 7, 0, 42, 1, 2);
	cr_assert(ST->run_known);
	cr_assert(eq(u32, ST->run_number, 42));
	rig_send_range(&R, 2, 0, 41, 1, 2);
	rig_send_range(&R, 40, 0, 43, 1, 2);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_WRONG_RUN], 4));
	cr_assert(eq(u64, ST->src[2].drops[XEVB_DROP_WRONG_RUN], 2));
	cr_assert(eq(u64, ST->drops[XEVB_DROP_UNKNOWN_SOURCE], 2));
	rig_send_range(&R, 2, 0, 42, 1, 2);
	rig_send_range(&R, 40, 0, 42, 1, 2);
	cr_assert(eq(sz, R.n_ev, 2));
	rig_fini(&R);
}

Test(builder, end_of_run_flushes)
{
	init3(64, NULL);
	rig_send_range(&R, 2, 0, 1, 0, 10);
	rig_send_range(&R, 7, 0, 1, 0, 10);
	rig_send_range(&R, 40, 0, 1, 0, 8);                     /* 8, 9 missing 40 */
	rig_send_range(&R, 2, XEVB_MEP_F_END_OF_RUN, 1, 10, 3); /* 10..12 */
	rig_send_range(&R, 7, XEVB_MEP_F_END_OF_RUN, 1, 10, 2); /* 10, 11 */
	cr_assert(eq(sz, R.n_ev, 8));
	cr_assert(not(ST->run_ended));
	cr_assert(eq(u64, ST->open_events, 5));
	rig_send_range(&R, 2, XEVB_MEP_F_END_OF_RUN, 1, 10, 1); /* resent: dup, no flush */
	cr_assert(not(ST->run_ended));
	rig_send_range(&R, 40, XEVB_MEP_F_END_OF_RUN, 1, 10, 1); /* last source */
	cr_assert(ST->run_ended);
	cr_assert(eq(u64, ST->open_events, 0));
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	cr_assert(eq(sz, R.n_ev, 13));
	/* 10 completes with the last EOR MEP, then the flush in id order */
	static const uint32_t want_id[] = { 10, 8, 9, 11, 12 };
	static const uint16_t want_n[] = { 3, 2, 2, 2, 1 };
	for (int i = 0; i < 5; i++) {
		const struct rig_event *e = &R.ev[8 + i];
		cr_assert(eq(u32, e->event_id, want_id[i]), "emission order");
		cr_assert(eq(u8, e->flags, i ? XEVB_EVT_F_INCOMPLETE : 0));
		cr_assert(eq(u16, e->n_frags, want_n[i]));
	}
	cr_assert(not(rig_has(&R.ev[9], 40)));
	cr_assert(not(rig_has(&R.ev[12], 7)));
	cr_assert(not(rig_has(&R.ev[12], 40)));
	cr_assert(eq(u64, ST->events_flushed_eor, 4), "10 completed by the last EOR MEP");
	cr_assert(eq(u64, ST->events_incomplete, 4));
	cr_assert(eq(u64, ST->events_complete, 9));
	cr_assert(ST->src[40].end_of_run);
	rig_fini(&R);
}

/* Under a DFM (its BYE ends the run): every source's END_OF_RUN is counted, nothing flushed. */
Test(builder, end_of_run_counted_only)
{
	init3(64, &(struct xevb_builder_cfg){ .end_of_run_counted_only = true });
	rig_send_range(&R, 2, 0, 1, 0, 10);
	rig_send_range(&R, 7, 0, 1, 0, 10);
	rig_send_range(&R, 40, 0, 1, 0, 8);                      /* 8, 9 missing 40 */
	rig_send_range(&R, 2, XEVB_MEP_F_END_OF_RUN, 1, 10, 3);  /* 10..12 */
	rig_send_range(&R, 7, XEVB_MEP_F_END_OF_RUN, 1, 10, 2);  /* 10, 11 */
	rig_send_range(&R, 40, XEVB_MEP_F_END_OF_RUN, 1, 10, 1); /* the last source's flag */
	cr_assert(not(ST->run_ended));
	cr_assert(ST->src[2].end_of_run && ST->src[7].end_of_run && ST->src[40].end_of_run);
	cr_assert(eq(sz, R.n_ev, 9), "0..7 and 10, complete; nothing flushed");
	cr_assert(eq(u64, ST->open_events, 4));
	cr_assert(eq(u64, ST->events_flushed_eor, 0));
	/* The open events still complete as their fragments come. */
	rig_send_range(&R, 40, 0, 1, 8, 2);
	rig_send_range(&R, 40, 0, 1, 11, 1);
	cr_assert(eq(sz, R.n_ev, 12));
	cr_assert(eq(u64, ST->events_complete, 12));
	cr_assert(eq(u64, ST->events_incomplete, 0));
	cr_assert(eq(u64, ST->open_events, 1), "12 waits for 7 and 40");
	rig_fini(&R);
}

Test(builder, packet_seq_gaps)
{
	init3(16, NULL);
	R.seq[2] = 0xfffffffeu;
	rig_send_range(&R, 2, 0, 1, 1, 1); /* fffffffe */
	R.seq[2] = 0;
	rig_send_range(&R, 2, 0, 1, 2, 1); /* 0: one missing (ffffffff) */
	R.seq[2] = 4;
	rig_send_range(&R, 2, 0, 1, 3, 1); /* 4: three missing */
	R.seq[2] = 2;
	rig_send_range(&R, 2, 0, 1, 4, 1); /* reordered: nothing */
	R.seq[2] = 5;
	rig_send_range(&R, 2, 0, 1, 5, 1);
	cr_assert(eq(u64, ST->src[2].seq_gaps, 4));
	cr_assert(eq(u32, ST->src[2].last_seq, 5));
	cr_assert(eq(u64, ST->src[2].packets, 5));
	cr_assert(eq(u64, ST->packets, 5));
	cr_assert(eq(u64, ST->src[7].seq_gaps, 0));
	cr_assert(eq(u64, ST->seq_resets, 0));
	rig_fini(&R);
}

/*
 * A source restarted from packet_seq 0 after 1000 packets is a reset, not
 * 2^32 - 1000 missing packets nor reordering: counted, and the new
 * numbering's gaps count from there. 64 behind is still reordering.
 */
Test(builder, packet_seq_reset)
{
	init3(16, NULL);
	R.seq[2] = 1000;
	rig_send_range(&R, 2, 0, 1, 1, 1);
	R.seq[2] = 1000 - 64;
	rig_send_range(&R, 2, 0, 1, 2, 1); /* reordered */
	cr_assert(eq(u64, ST->src[2].seq_resets, 0));
	R.seq[2] = 0;
	rig_send_range(&R, 2, 0, 1, 3, 1); /* restarted */
	cr_assert(eq(u64, ST->src[2].seq_resets, 1));
	cr_assert(eq(u32, ST->src[2].last_seq, 0));
	R.seq[2] = 3;
	rig_send_range(&R, 2, 0, 1, 4, 1); /* two missing in the new numbering */
	cr_assert(eq(u64, ST->src[2].seq_gaps, 2));
	cr_assert(eq(u64, ST->seq_resets, 1));
	cr_assert(eq(u64, ST->src[7].seq_resets, 0));
	rig_fini(&R);
}

/* 1100 sources (more than 1024 per event), one fragment each, any order. */
Test(builder, many_sources)
{
	static uint16_t s[1100];

	for (int i = 0; i < 1100; i++)
		s[i] = (uint16_t)(4095 - i * 3);
	rig_init(&R, s, 1100, 4, 2300, NULL);
	for (int i = 0; i < 1099; i++)
		rig_send_range(&R, s[(i * 3) % 1099] /* 3 is coprime to 1099 */, 0, 1, 50, 2);
	cr_assert(eq(sz, R.n_ev, 0));
	cr_assert(eq(u64, ST->frames_held, 1099));
	rig_send_range(&R, 4095, 0, 1, 50, 1); /* dup */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 1));
	rig_check(&R);
	rig_send_range(&R, s[1099], 0, 1, 50, 2);
	cr_assert(eq(sz, R.n_ev, 2));
	cr_assert(eq(u16, R.ev[0].n_frags, 1100));
	cr_assert(eq(u16, R.ev[1].n_frags, 1100));
	rig_fini_none_held(&R);
}

/* One source configured: every fragment completes its event on arrival. */
Test(builder, single_source)
{
	static const uint16_t one[] = { 4095 };

	rig_init(&R, one, 1, 1, 4, NULL);
	rig_send_range(&R, 4095, 0, 1, 7, 20);
	cr_assert(eq(sz, R.n_ev, 20));
	cr_assert(eq(u32, rig_frames_held(&R), 0));
	rig_send_range(&R, 4095, 0, 1, 26, 1); /* still in the W=1 window */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 1));
	rig_send_range(&R, 4095, 0, 1, 20, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 1));
	rig_fini(&R);
}

Test(builder, bad_calls_ignored)
{
	struct xevb_pkt_info pi = { .source_id = 2, .n_frags = 1, .run_number = 1 };
	struct xevb_frag_ref fr = { .event_id = 1 };
	uint8_t frame[64] = { 0 };

	init3(16, NULL);
	xevb_builder_add_mep(R.b, 64, frame, &pi, &fr, 0); /* out of range */
	uint32_t f = rig_send_range(&R, 2, 0, 1, 1, 1);
	xevb_builder_add_mep(R.b, f, frame, &pi, &fr, 0); /* still held */
	cr_assert(eq(u64, ST->bad_calls, 2));
	cr_assert(eq(u64, ST->packets, 1));
	rig_fini(&R);
}

Test(builder, wire_size)
{
	static const uint16_t ids[] = { 1, 2, 3, 4, 5 };
	struct xevb_frag_slot fr[5] = {
		{ 0, 100, 0 }, { UINT32_MAX, 0, 0 }, { 1, 100, 5 }, { 2, 100, 8 }, { UINT32_MAX, 0, 0 }
	};
	struct xevb_event ev = { .n_expected = 5, .n_frags = 3, .source_ids = ids, .frags = fr };

	cr_assert(eq(u32, xevb_event_wire_size(&ev), 32 + 12 + 12 + 8 + 12 + 8));
	ev.flags = XEVB_EVT_F_INCOMPLETE;
	cr_assert(eq(u32, xevb_event_wire_size(&ev), 32 + 12 + 12 + 8 + 12 + 8 + 4));
	fr[0].frame_idx = UINT32_MAX;
	ev.n_frags = 2;
	cr_assert(eq(u32, xevb_event_wire_size(&ev), 32 + 12 + 8 + 12 + 8 + 8));
	/* Not from the builder (frag_wire_bytes 0): the O(1) variant walks. */
	cr_assert(eq(u32, xevb_event_wire_size_fast(&ev), 32 + 12 + 8 + 12 + 8 + 8));
	ev.frag_wire_bytes = 12 + 8 + 12 + 8;
	cr_assert(eq(u32, xevb_event_wire_size_fast(&ev), 32 + 12 + 8 + 12 + 8 + 8));
	ev.flags = 0; /* sizing trusts the flag, as the walk does */
	cr_assert(eq(u32, xevb_event_wire_size_fast(&ev), xevb_event_wire_size(&ev)));
}

/*
 * The live overload regime, small: 126 sources, 25 fragments a MEP, 75% of
 * the MEPs lost, events timing out with ~30 fragments (emit or discard;
 * the timeout spans ~2 groups of 25 events, each group's MEPs arrive
 * within one).
 * The rig asserts O(1) size == walked size for every event emitted and that
 * every frame comes back exactly once, after the events holding it;
 * check() cross-checks each open event's running byte sum against its row
 * after every step.
 */
static void lossy_l1(enum xevb_timeout_policy pol, uint32_t seed)
{
	static uint16_t src[126];
	struct xevb_builder_cfg x = { .timeout_ns = 3000, .timeout_policy = pol };
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
	uint32_t sent = 0;

	for (uint32_t i = 0; i < 126; i++)
		src[i] = (uint16_t)(4095 - i * 31); /* unsorted, spread */
	rig_init(&R, src, 126, 256, 1024, &x);
	for (uint32_t g = 0; g < 24; g++) {
		for (uint32_t s = 0; s < 126; s++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			R.now += 10;
			if (rng % 100 < 75 && g != 5) /* group 5 complete */
				continue;
			rig_send_range(&R, src[s], 0, 1, g * 25, 25);
			sent++;
			if (rng % 7 == 0) {
				rig_check(&R);
				xevb_builder_poll(R.b, R.now);
			}
		}
		rig_check(&R);
	}
	R.now += 3000;
	xevb_builder_poll(R.b, R.now);
	rig_check(&R);
	cr_assert(eq(u64, ST->open_events, 0));
	cr_assert(eq(u64, ST->events_opened, 24 * 25));
	cr_assert(eq(u64, ST->frags_in_events, sent * 25ull));
	cr_assert(eq(u64, ST->events_complete, 25));
	if (pol == XEVB_TIMEOUT_DISCARD) {
		cr_assert(eq(u64, ST->events_discarded, 23 * 25));
		cr_assert(eq(u64, ST->frags_discarded, ST->frags_in_events - 25 * 126));
	} else {
		cr_assert(eq(u64, ST->events_incomplete, 23 * 25));
	}
	cr_assert(eq(u32, rig_frames_held(&R), 0), "every frame back after the timeouts");
	rig_fini(&R);
}

Test(builder, lossy_l1_emit)
{
	for (uint32_t seed = 1; seed <= 4; seed++)
		lossy_l1(XEVB_TIMEOUT_EMIT_INCOMPLETE, seed);
}

Test(builder, lossy_l1_discard)
{
	for (uint32_t seed = 1; seed <= 4; seed++)
		lossy_l1(XEVB_TIMEOUT_DISCARD, seed);
}

/* The UDP transport feeds the builder the same way. */
Test(builder, udp_transport)
{
	init3(16, NULL);
	R.use_udp = true;
	for (int s = 0; s < 3; s++)
		rig_send_range(&R, SRC3[s], 0, 1, 1, 4);
	cr_assert(eq(sz, R.n_ev, 4));
	rig_fini(&R);
}

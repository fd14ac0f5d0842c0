// SPDX-License-Identifier: GPL-2.0-only
/*
 * Runs: MEPs of the same consecutive events from every source, booked as
 * a whole (user/evb/builder.c, "Runs"). What must hold: the events come
 * out exactly as fragment by fragment (the rig checks every payload in
 * place), runs complete, time out, are discarded, and split back into
 * single events when a MEP does not fit; duplicates and late fragments
 * are told apart after a run is done; a MEP handed over without refs is
 * booked the same; emit_run counts what emit would have seen.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include "evb/builder.h"
#include "../common/builder_rig.h"

TestSuite(builder_runs, .timeout = 30);

static struct rig R;
static uint16_t SRC[126];

#define ST xevb_builder_stats(R.b)

static void init_l1(uint32_t n_src, const struct xevb_builder_cfg *extra)
{
	for (uint32_t i = 0; i < n_src; i++)
		SRC[i] = (uint16_t)(3 * i + 1);
	rig_init(&R, SRC, n_src, 256, 4096, extra);
}

/* Every source sends MEP k (ids first+25k ...) before anyone sends k+1. */
static void send_l1(uint32_t n_src, uint32_t first, uint32_t n_meps)
{
	for (uint32_t k = 0; k < n_meps; k++)
		for (uint32_t i = 0; i < n_src; i++)
			rig_send_range(&R, SRC[(i * 11 + k) % n_src], 0, 1, first + 25 * k, 25);
}

/* init_l1, then every source's first MEP (events 0..24). */
static void init_l1_first_mep(uint32_t n_src, const struct xevb_builder_cfg *extra)
{
	init_l1(n_src, extra);
	send_l1(n_src, 0, 1);
}

Test(builder_runs, l1_runs_complete_in_order)
{
	init_l1(126, NULL);
	send_l1(126, 1000, 8);
	cr_assert(eq(sz, R.n_ev, 200));
	for (size_t i = 0; i < R.n_ev; i++) {
		cr_assert(eq(u32, R.ev[i].event_id, 1000 + (uint32_t)i), "emitted in id order");
		cr_assert(eq(u8, R.ev[i].flags, 0));
		cr_assert(eq(u16, R.ev[i].n_frags, 126));
	}
	/* The very first MEP sets the window, fragment by fragment; then runs. */
	cr_assert(ge(u64, ST->meps_grouped, 126 * 7));
	cr_assert(eq(u64, ST->groups_split, 0));
	cr_assert(eq(u64, ST->frags_in_events, 126 * 200));
	cr_assert(eq(u32, rig_frames_held(&R), 0), "every frame back once its run is built");
	rig_fini(&R);
}

Test(builder_runs, refless_meps_build_the_same)
{
	init_l1(40, NULL);
	R.refless_every = 1;
	send_l1(40, 77, 6);
	cr_assert(eq(sz, R.n_ev, 150));
	cr_assert(ge(u64, ST->meps_grouped, 40 * 5));
	cr_assert(eq(u64, ST->bad_calls, 0));
	rig_fini(&R);
}

Test(builder_runs, run_times_out_incomplete)
{
	struct xevb_builder_cfg x = { .timeout_ns = 1000 };
	uint16_t missing[8];

	init_l1_first_mep(4, &x);        /* events 0..24: one by one */
	for (uint32_t i = 0; i < 3; i++) /* 25..49: a run, source SRC[3] silent */
		rig_send_range(&R, SRC[i], 0, 1, 25, 25);
	cr_assert(eq(u64, ST->meps_grouped, 3));
	cr_assert(eq(u64, ST->open_events, 25));
	cr_assert(eq(int, xevb_builder_missing(R.b, 30, missing, 8), 1));
	cr_assert(eq(u16, missing[0], SRC[3]));
	rig_check(&R);
	R.now += 1000;
	xevb_builder_poll(R.b, R.now);
	cr_assert(eq(sz, R.n_ev, 50));
	for (uint32_t e = 25; e < 50; e++) {
		const struct rig_event *re = rig_find(&R, e);

		cr_assert(not(eq(ptr, (void *)re, NULL)));
		cr_assert(eq(u8, re->flags, XEVB_EVT_F_INCOMPLETE));
		cr_assert(eq(u16, re->n_frags, 3));
		cr_assert(not(rig_has(re, SRC[3])));
	}
	cr_assert(eq(u64, ST->events_incomplete, 25));
	/* The silent source after the timeout: late, all 25; a repeat: duplicate. */
	rig_send_range(&R, SRC[3], 0, 1, 25, 25);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_LATE], 25));
	rig_send_range(&R, SRC[0], 0, 1, 25, 25);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 25));
	rig_fini(&R);
}

Test(builder_runs, run_discarded_counts_per_source)
{
	struct xevb_builder_cfg x = { .timeout_ns = 10, .timeout_policy = XEVB_TIMEOUT_DISCARD };

	init_l1_first_mep(4, &x);
	rig_send_range(&R, SRC[1], 0, 1, 25, 25);
	rig_send_range(&R, SRC[2], 0, 1, 25, 25);
	R.now += 10;
	xevb_builder_poll(R.b, R.now);
	cr_assert(eq(u64, ST->events_discarded, 25));
	cr_assert(eq(u64, ST->frags_discarded, 50));
	cr_assert(eq(u64, ST->src[SRC[1]].frags_discarded, 25));
	cr_assert(eq(u64, ST->src[SRC[0]].frags_discarded, 0));
	rig_fini_none_held(&R);
}

Test(builder_runs, duplicate_run_mep)
{
	init_l1_first_mep(3, NULL);
	rig_send_range(&R, SRC[0], 0, 1, 25, 25);
	rig_send_range(&R, SRC[0], 0, 1, 25, 25); /* resent whole */
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 25));
	cr_assert(eq(u32, rig_frames_held(&R), 1), "the duplicate's frame went back at once");
	rig_send_range(&R, SRC[1], 0, 1, 25, 25);
	rig_send_range(&R, SRC[2], 0, 1, 25, 25);
	cr_assert(eq(sz, R.n_ev, 50));
	rig_fini(&R);
}

/* A MEP that does not fit the run (other count, shifted first id). */
Test(builder_runs, misfit_mep_splits_the_run)
{
	init_l1_first_mep(3, NULL);
	rig_send_range(&R, SRC[0], 0, 1, 25, 25);
	rig_send_range(&R, SRC[1], 0, 1, 25, 25);
	rig_send_range(&R, SRC[2], 0, 1, 30, 5); /* 30..34 only */
	cr_assert(eq(u64, ST->groups_split, 1));
	cr_assert(eq(sz, R.n_ev, 30), "0..24 and 30..34 complete");
	rig_check(&R);
	/* The rest of the run's events from SRC[2], one by one and a repeat of 32. */
	rig_send_range(&R, SRC[2], 0, 1, 25, 5);
	rig_send_range(&R, SRC[2], 0, 1, 32, 1);
	cr_assert(eq(u64, ST->drops[XEVB_DROP_DUPLICATE], 1));
	rig_send_range(&R, SRC[2], 0, 1, 35, 15);
	cr_assert(eq(sz, R.n_ev, 50));
	for (uint32_t e = 0; e < 50; e++) {
		const struct rig_event *re = rig_find(&R, e);

		cr_assert(not(eq(ptr, (void *)re, NULL)), "event %u", e);
		cr_assert(eq(u16, re->n_frags, 3), "event %u", e);
	}
	/* The split frames were held by every event of the run, then freed. */
	rig_fini_none_held(&R);
}

/* A MEP overlapping a run from its middle, and one with a gap. */
Test(builder_runs, shifted_and_gapped_meps)
{
	init_l1_first_mep(2, NULL);
	rig_send_range(&R, SRC[0], 0, 1, 25, 25);
	rig_send_range(&R, SRC[1], 0, 1, 40, 25); /* 40..64: splits 25..49 */
	cr_assert(eq(u64, ST->groups_split, 1));
	cr_assert(eq(sz, R.n_ev, 25 + 10));
	uint32_t gap[] = { 50, 52, 54 };
	rig_send(&R, SRC[0], 0, 1, gap, 3);
	cr_assert(eq(sz, R.n_ev, 25 + 13));
	rig_fini(&R);
}

static uint64_t run_events, run_bytes, run_calls;

static void count_run(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t bytes)
{
	(void)ctx;
	cr_assert(eq(ptr, (void *)first->frags, NULL));
	run_events += n;
	run_bytes += bytes;
	run_calls++;
}

/*
 * 20 sources, 4 MEPs each of events 500..599 (four runs), then the fifth
 * (600..624) from 15 of them only: after x's timeout those are incomplete.
 */
static void build_runs_and_a_timeout(const struct xevb_builder_cfg *x)
{
	init_l1(20, x);
	send_l1(20, 500, 4);
	for (uint32_t i = 0; i < 15; i++)
		rig_send_range(&R, SRC[i], 0, 1, 600, 25);
	R.now += x->timeout_ns;
	xevb_builder_poll(R.b, R.now);
}

/* emit_run counts exactly the events and bytes emit would have seen. */
Test(builder_runs, emit_run_counts_like_emit)
{
	struct xevb_builder_cfg x = { .timeout_ns = 100 };
	uint64_t bytes = 0, events;

	build_runs_and_a_timeout(&x);
	events = R.n_ev;
	for (size_t i = 0; i < R.n_ev; i++)
		bytes += R.ev[i].wire_size;
	rig_fini(&R);

	x.emit_run = count_run;
	run_events = run_bytes = run_calls = 0;
	build_runs_and_a_timeout(&x);
	cr_assert(eq(u64, run_events + R.n_ev, events));
	for (size_t i = 0; i < R.n_ev; i++)
		run_bytes += R.ev[i].wire_size;
	cr_assert(eq(u64, run_bytes, bytes), "bytes counted whole = bytes of every event");
	cr_assert(eq(u64, run_calls, 4), "the runs 525.. 550.. 575.. 600.. counted whole");
	rig_fini(&R);
}

/*
 * A consecutive share of a MEP (a multi-worker hand-off): the run holds
 * only the share's records, the rest of the frame is never read as its.
 */
Test(builder_runs, share_of_a_mep_books_its_records_only)
{
	uint32_t ids[25];

	init_l1_first_mep(3, NULL);
	for (uint32_t j = 0; j < 25; j++)
		ids[j] = 25 + j;
	for (uint32_t i = 0; i < 3; i++)
		rig_send_part(&R, SRC[i], 0, 1, ids, 25, 8, 8); /* 33..40 */
	cr_assert(ge(u64, ST->meps_grouped, 3));
	cr_assert(eq(sz, R.n_ev, 25 + 8), "the rig checked every payload of 33..40");
	for (uint32_t e = 33; e <= 40; e++)
		cr_assert(not(eq(ptr, (void *)rig_find(&R, e), NULL)), "event %u", e);
	/* A share split by a misfit share: rows from the right records too. */
	for (uint32_t j = 0; j < 25; j++)
		ids[j] = 50 + j;
	rig_send_part(&R, SRC[0], 0, 1, ids, 25, 3, 10); /* 53..62 */
	rig_send_part(&R, SRC[1], 0, 1, ids, 25, 3, 10);
	rig_send_part(&R, SRC[2], 0, 1, ids, 25, 5, 4); /* 55..58: splits */
	cr_assert(eq(u64, ST->groups_split, 1));
	cr_assert(eq(sz, R.n_ev, 25 + 8 + 4));
	rig_fini(&R);
}

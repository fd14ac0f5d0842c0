// SPDX-License-Identifier: GPL-2.0-only
/* The DFM state machine, one rule per test, with exact books after each. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include "ctl/dfm.h"
#include "ctl/dfm_slots.h"

#define MS 1000000ull

struct rec {
	struct xevb_ctl_assign a[4096];
	uint32_t to[4096];
	uint32_t na;
	struct xevb_ctl_range c[4096];
	uint32_t nc, clear_calls;
};
static struct rec R;

static void on_assign(void *ctx, uint32_t b, const struct xevb_ctl_assign *a)
{
	(void)ctx;
	R.to[R.na] = b;
	R.a[R.na++] = *a;
}

static void on_clear(void *ctx, const struct xevb_ctl_range *r, uint32_t n)
{
	(void)ctx;
	memcpy(&R.c[R.nc], r, n * sizeof(*r));
	R.nc += n;
	R.clear_calls++;
}

static struct xevb_dfm *mk(bool pull, uint32_t block)
{
	struct xevb_dfm_cfg c = {
		.pull = pull,
		.block = block,
		.first_event = 1000,
		.run = 3,
		.table = 1024,
		.dead_ns = 500 * MS,
		.retry_ns = 200 * MS,
		.max_retries = 2,
		.clear_group = 10,
		.clear_flush_ns = 50 * MS,
		.send_assign = on_assign,
		.send_clear = on_clear,
	};
	memset(&R, 0, sizeof(R));
	return xevb_dfm_new(&c);
}

static void status(struct xevb_dfm *d, uint32_t b, uint32_t epoch, uint32_t credits, bool busy, uint64_t now)
{
	struct xevb_ctl_hdr h = {
		.type = XEVB_CTL_STATUS, .role = XEVB_ROLE_BUILDER, .epoch = epoch, .sender_id = (uint16_t)b
	};
	struct xevb_ctl_status s = { .credits = credits, .flags = busy ? XEVB_CTL_ST_BUSY : 0 };
	cr_assert(ge(int, xevb_dfm_on_status(d, 0x0a000000 + b, 23902, &h, &s, now), 0));
}

static void done(struct xevb_dfm *d, uint32_t b, uint32_t epoch, uint32_t ev, uint8_t status, uint64_t now)
{
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_DONE, .role = XEVB_ROLE_BUILDER, .epoch = epoch };
	struct xevb_ctl_done r = { ev, status == XEVB_DONE_COMPLETE ? 0 : 1, status };
	xevb_dfm_on_done(d, 0x0a000000 + b, 23902, &h, &r, 1, now);
}

static void books(struct xevb_dfm *d)
{
	char msg[200];
	cr_assert(xevb_dfm_check(d, msg, sizeof(msg)), "%s", msg);
}

/* The end of a test: the books balance, then the DFM is freed. */
static void free_balanced(struct xevb_dfm *d)
{
	books(d);
	xevb_dfm_free(d);
}

Test(dfm, never_more_than_credits)
{
	struct xevb_dfm *d = mk(false, 4);
	status(d, 0, 11, 10, false, 0);
	/* 10 credits, blocks of 4: two blocks, then no room for a third. */
	cr_assert(eq(u32, xevb_dfm_step(d, 1, 100), 8));
	cr_assert(eq(u32, R.na, 2));
	cr_assert(eq(u32, R.a[0].first_event, 1000));
	cr_assert(eq(u16, R.a[0].count, 4));
	cr_assert(eq(u32, R.a[1].first_event, 1004));
	cr_assert(eq(u32, R.a[0].run, 3));
	cr_assert(eq(u32, R.a[0].builder_addr, 0x0a000000));
	cr_assert(not(xevb_dfm_can_assign(d)));
	cr_assert(eq(u32, xevb_dfm_step(d, 2, 100), 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->stall_no_credit, 2));
	/* Two DONEs free 2 credits: 4 free, one more block. */
	done(d, 0, 11, 1000, XEVB_DONE_COMPLETE, 3);
	done(d, 0, 11, 1001, XEVB_DONE_INCOMPLETE, 3);
	cr_assert(eq(u32, xevb_dfm_step(d, 4, 100), 4));
	cr_assert(eq(u32, xevb_dfm_builder(d, 0)->outstanding, 10));
	cr_assert(eq(u64, xevb_dfm_stats(d)->complete, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->incomplete, 1));
	/* max_new is honoured in whole blocks. */
	done(d, 0, 11, 1002, XEVB_DONE_COMPLETE, 5);
	done(d, 0, 11, 1003, XEVB_DONE_COMPLETE, 5);
	done(d, 0, 11, 1004, XEVB_DONE_COMPLETE, 5);
	done(d, 0, 11, 1005, XEVB_DONE_COMPLETE, 5);
	cr_assert(eq(u32, xevb_dfm_step(d, 6, 3), 0));
	free_balanced(d);
}

Test(dfm, distribution_follows_credits)
{
	struct xevb_dfm *d = mk(false, 1);
	uint32_t per[3] = { 0 };
	status(d, 0, 1, 100, false, 0);
	status(d, 1, 2, 200, false, 0);
	status(d, 2, 3, 100, false, 0);
	/* With credit to spare everywhere, 400 events split 1:2:1. */
	cr_assert(eq(u32, xevb_dfm_step(d, 1, 400), 400));
	for (uint32_t i = 0; i < R.na; i++)
		per[R.to[i]]++;
	cr_assert(eq(u32, per[0], 100));
	cr_assert(eq(u32, per[1], 200));
	cr_assert(eq(u32, per[2], 100));
	free_balanced(d);
}

Test(dfm, busy_builder_gets_nothing_new)
{
	struct xevb_dfm *d = mk(false, 1);
	status(d, 0, 1, 100, false, 0);
	status(d, 1, 2, 100, true, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 1, 50), 50));
	for (uint32_t i = 0; i < R.na; i++)
		cr_assert(eq(u32, R.to[i], 0));
	/* Not-Busy again: it shares once more. */
	status(d, 1, 2, 100, false, 2);
	R.na = 0;
	cr_assert(eq(u32, xevb_dfm_step(d, 3, 20), 20));
	uint32_t to1 = 0;
	for (uint32_t i = 0; i < R.na; i++)
		to1 += R.to[i] == 1;
	cr_assert(ge(u32, to1, 10));
	/* Everyone Busy: the trigger waits. */
	status(d, 0, 1, 100, true, 4);
	status(d, 1, 2, 100, true, 4);
	cr_assert(eq(u32, xevb_dfm_step(d, 5, 20), 0));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->busy_on, 2));
	free_balanced(d);
}

Test(dfm, push_dead_builder_events_reassigned)
{
	struct xevb_dfm *d = mk(false, 5);
	status(d, 0, 1, 10, false, 0);
	status(d, 1, 2, 10, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 20), 20));
	/* Builder 1 goes silent; 0 keeps reporting, with room for 10 more. */
	status(d, 0, 1, 20, false, 400 * MS);
	xevb_dfm_poll(d, 400 * MS);
	cr_assert(xevb_dfm_builder(d, 1)->alive);
	xevb_dfm_poll(d, 501 * MS);
	cr_assert(not(xevb_dfm_builder(d, 1)->alive));
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_BUILDER_DEAD], 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, 20));
	books(d);
	/* Its events go to builder 0 before any new one, flagged (the sources
	   get the same ASSIGNs in push and send the data they hold again). */
	R.na = 0;
	cr_assert(eq(u32, xevb_dfm_step(d, 502 * MS, 0), 0));
	cr_assert(eq(u32, R.na, 10));
	for (uint32_t i = 0; i < R.na; i++) {
		cr_assert(eq(u32, R.to[i], 0));
		cr_assert(eq(u8, R.a[i].flags, XEVB_CTL_AS_REASSIGN));
	}
	cr_assert(eq(u64, xevb_dfm_stats(d)->reassigned, 10));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->reassigned_away, 10));
	/* Its late DONE is not counted: the event is builder 0's now. */
	done(d, 1, 2, R.a[0].first_event, XEVB_DONE_COMPLETE, 503 * MS);
	cr_assert(eq(u64, xevb_dfm_stats(d)->complete, 0));
	for (uint32_t i = 0; i < R.na; i++)
		done(d, 0, 1, R.a[i].first_event, XEVB_DONE_COMPLETE, 504 * MS);
	cr_assert(eq(u64, xevb_dfm_stats(d)->complete, 10));
	books(d);
	/* It comes back: rejoins and gets work again. */
	status(d, 1, 2, 10, false, 600 * MS);
	cr_assert(xevb_dfm_builder(d, 1)->alive);
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->rejoins, 1));
	R.na = 0;
	cr_assert(eq(u32, xevb_dfm_step(d, 600 * MS, 10), 10));
	cr_assert(eq(u32, R.to[R.na - 1], 1));
	xevb_dfm_stop(d);
	free_balanced(d);
}

Test(dfm, pull_dead_builder_events_reassigned)
{
	struct xevb_dfm *d = mk(true, 5);
	status(d, 0, 1, 10, false, 0);
	status(d, 1, 2, 10, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 20), 20));
	cr_assert(eq(u8, R.a[0].flags & XEVB_CTL_AS_PULL, XEVB_CTL_AS_PULL));
	/* Builder 0 finishes its events; builder 1 dies with 10 outstanding. */
	for (uint32_t i = 0; i < R.na; i++)
		if (R.to[i] == 0)
			for (uint32_t e = 0; e < R.a[i].count; e++)
				done(d, 0, 1, R.a[i].first_event + e, XEVB_DONE_COMPLETE, 1);
	status(d, 0, 1, 10, false, 600 * MS);
	xevb_dfm_poll(d, 600 * MS);
	cr_assert(not(xevb_dfm_builder(d, 1)->alive));
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_BUILDER_DEAD], 0));
	books(d);
	/* Re-assigned one by one to builder 0, flagged, before any new event. */
	R.na = 0;
	cr_assert(eq(u32, xevb_dfm_step(d, 601 * MS, 0), 0));
	cr_assert(eq(u32, R.na, 10));
	for (uint32_t i = 0; i < R.na; i++) {
		cr_assert(eq(u32, R.to[i], 0));
		cr_assert(eq(u8, R.a[i].flags, XEVB_CTL_AS_PULL | XEVB_CTL_AS_REASSIGN));
		done(d, 0, 1, R.a[i].first_event, XEVB_DONE_COMPLETE, 602 * MS);
	}
	cr_assert(eq(u64, xevb_dfm_stats(d)->reassigned, 10));
	cr_assert(eq(u64, xevb_dfm_stats(d)->complete, 20));
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, 0));
	free_balanced(d);
}

Test(dfm, restart_is_a_death_and_a_rejoin)
{
	struct xevb_dfm *d = mk(false, 2);
	status(d, 0, 1, 4, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 4), 4));
	/* Same address, new epoch: the old incarnation forgot its events; they
	   are assigned again, to the new one (the only builder). */
	status(d, 0, 99, 4, false, 10);
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_BUILDER_DEAD], 0));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->reassigned_away, 4));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->restarts, 1));
	cr_assert(xevb_dfm_builder(d, 0)->alive);
	/* A DONE of the old epoch is refused. */
	done(d, 0, 1, 1000, XEVB_DONE_COMPLETE, 11);
	cr_assert(eq(u64, xevb_dfm_stats(d)->done_unknown_peer, 1));
	/* What the DFM's drop reasons go by (wrong_epoch, unknown_peer): the builder at an address and port. */
	cr_assert(eq(int, xevb_dfm_builder_at(d, 0x0a000000, 23902), 0));
	cr_assert(eq(u32, xevb_dfm_builder(d, 0)->epoch, 99));
	cr_assert(eq(int, xevb_dfm_builder_at(d, 0x0a000000, 23903), -1));
	cr_assert(eq(int, xevb_dfm_builder_at(d, 0x0a000001, 23902), -1));
	R.na = 0;
	cr_assert(eq(u32, xevb_dfm_step(d, 12, 4), 0));
	cr_assert(eq(u32, R.na, 4));
	cr_assert(eq(u8, R.a[0].flags, XEVB_CTL_AS_REASSIGN));
	cr_assert(eq(u32, xevb_dfm_step(d, 12, 4), 0)); /* no credit left: 4 outstanding again */
	xevb_dfm_stop(d);
	free_balanced(d);
}

Test(dfm, unknown_and_foreign_done_counted)
{
	struct xevb_dfm *d = mk(false, 1);
	status(d, 0, 1, 4, false, 0);
	status(d, 1, 2, 4, false, 0);
	xevb_dfm_step(d, 0, 2);
	done(d, 0, 1, 5000, XEVB_DONE_COMPLETE, 1); /* never triggered */
	cr_assert(eq(u64, xevb_dfm_stats(d)->done_unknown, 1));
	done(d, R.to[0] == 0 ? 1 : 0, R.to[0] == 0 ? 2 : 1, R.a[0].first_event, XEVB_DONE_COMPLETE, 1);
	cr_assert(eq(u64, xevb_dfm_stats(d)->done_foreign, 1));
	done(d, R.to[0], R.to[0] + 1, R.a[0].first_event, XEVB_DONE_COMPLETE, 1);
	done(d, R.to[0], R.to[0] + 1, R.a[0].first_event, XEVB_DONE_COMPLETE, 1); /* again: a RETRY crossed it */
	cr_assert(eq(u64, xevb_dfm_stats(d)->done_unknown, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->done_repeated, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->complete, 1));
	free_balanced(d);
}

/*
 * A lost ASSIGN or DONE is repaired in milliseconds: the first RETRY after
 * retry_first_ns (or twice the p99 ASSIGN-to-DONE, if longer), doubling up
 * to retry_ns; max_retries at retry_ns, then lost as no_done.
 */
Test(dfm, quick_retries_back_off)
{
	struct xevb_dfm_cfg c = { .block = 1,
				  .first_event = 1000,
				  .table = 1024,
				  .dead_ns = 100000 * MS,
				  .retry_ns = 200 * MS,
				  .retry_first_ns = 10 * MS,
				  .max_retries = 2,
				  .clear_group = 10,
				  .clear_flush_ns = 50 * MS,
				  .send_assign = on_assign,
				  .send_clear = on_clear };
	/* Doubling below 200 ms, then max_retries at 200 ms, then lost. */
	static const uint64_t gap[] = { 10, 20, 40, 80, 160, 200, 200, 200 };
	uint64_t last = 0, when[8];
	struct xevb_dfm *d;
	uint32_t k = 0;

	memset(&R, 0, sizeof(R));
	d = xevb_dfm_new(&c);
	status(d, 0, 1, 4, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 1), 1));
	for (uint64_t t = 1; t <= 1200 && k < 8; t++) {
		uint64_t before = xevb_dfm_stats(d)->retries + xevb_dfm_stats(d)->lost[XEVB_LOST_NO_DONE];
		status(d, 0, 1, 4, false, t * MS);
		xevb_dfm_poll(d, t * MS);
		if (xevb_dfm_stats(d)->retries + xevb_dfm_stats(d)->lost[XEVB_LOST_NO_DONE] != before)
			when[k++] = t;
	}
	cr_assert(eq(u32, k, 8));
	/* Each within a scan period (first / 4) of its due time. */
	for (k = 0; k < 8; k++) {
		cr_assert(ge(u64, when[k] - last, gap[k]), "step %u after %llu ms", k,
			  (unsigned long long)(when[k] - last));
		cr_assert(le(u64, when[k] - last, gap[k] + 3), "step %u after %llu ms", k,
			  (unsigned long long)(when[k] - last));
		last = when[k];
	}
	cr_assert(eq(u64, xevb_dfm_stats(d)->retries, 7));
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_NO_DONE], 1));
	free_balanced(d);
}

Test(dfm, retries_then_lost_no_done)
{
	struct xevb_dfm *d = mk(true, 1);
	uint64_t t;
	status(d, 0, 1, 4, false, 0);
	xevb_dfm_step(d, 0, 1);
	R.na = 0;
	for (t = 50 * MS; t <= 1000 * MS; t += 50 * MS) {
		status(d, 0, 1, 4, false, t); /* alive, but never a DONE */
		xevb_dfm_poll(d, t);
	}
	cr_assert(eq(u32, R.na, 2));
	cr_assert(eq(u8, R.a[0].flags, XEVB_CTL_AS_PULL | XEVB_CTL_AS_RETRY));
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_NO_DONE], 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->retries, 2));
	/* NO_DATA from the builder is a loss with its own name. */
	xevb_dfm_step(d, t, 1);
	done(d, 0, 1, 1001, XEVB_DONE_NO_DATA, t);
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_NO_DATA], 1));
	free_balanced(d);
}

/*
 * A builder gives an event up as NO_DATA, then its data comes after all
 * and the event is built: its second DONE counts the event with that
 * outcome too, and no_data_recovered takes the loss back in the books
 * (counters only grow). Only the builder that gave it up, and only while
 * the slot still names the event.
 */
Test(dfm, no_data_then_built_moves_to_its_outcome)
{
	struct xevb_dfm *d = mk(false, 1);
	const struct xevb_dfm_stats *st = xevb_dfm_stats(d);
	uint32_t e0, e1;

	status(d, 0, 1, 8, false, 0);
	status(d, 1, 2, 8, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 2), 2));
	e0 = R.a[0].first_event;
	e1 = R.a[1].first_event;
	cr_assert(ne(u32, R.to[0], R.to[1]));
	done(d, R.to[0], R.to[0] + 1, e0, XEVB_DONE_NO_DATA, 1);
	done(d, R.to[1], R.to[1] + 1, e1, XEVB_DONE_NO_DATA, 1);
	cr_assert(eq(u64, st->lost[XEVB_LOST_NO_DATA], 2));
	/* Another builder's word on it changes nothing. */
	done(d, R.to[1], R.to[1] + 1, e0, XEVB_DONE_COMPLETE, 2);
	cr_assert(eq(u64, st->done_unknown, 1));
	cr_assert(eq(u64, st->lost[XEVB_LOST_NO_DATA], 2));
	/* Its own builder built it after all: complete, once. */
	done(d, R.to[0], R.to[0] + 1, e0, XEVB_DONE_COMPLETE, 3);
	done(d, R.to[0], R.to[0] + 1, e0, XEVB_DONE_COMPLETE, 3);
	cr_assert(eq(u64, st->lost[XEVB_LOST_NO_DATA], 2));
	cr_assert(eq(u64, st->complete, 1));
	cr_assert(eq(u64, st->no_data_recovered, 1));
	cr_assert(eq(u64, st->done_unknown, 2));
	cr_assert(eq(u64, xevb_dfm_builder(d, R.to[0])->complete, 1));
	cr_assert(eq(u64, xevb_dfm_builder(d, R.to[0])->no_data, 1));
	cr_assert(eq(u64, xevb_dfm_builder(d, R.to[0])->no_data_recovered, 1));
	books(d);
	/* Built incomplete: incomplete. */
	done(d, R.to[1], R.to[1] + 1, e1, XEVB_DONE_INCOMPLETE, 4);
	cr_assert(eq(u64, st->incomplete, 1));
	cr_assert(eq(u64, st->no_data_recovered, 2));
	cr_assert(eq(u64, xevb_dfm_builder(d, R.to[1])->no_data_recovered, 1));
	free_balanced(d);
}

/* Once the slot holds a newer event, a DONE for the old one is unknown. */
Test(dfm, no_data_recovery_ends_with_its_slot)
{
	struct xevb_dfm *d = mk(false, 1);
	const struct xevb_dfm_stats *st = xevb_dfm_stats(d);
	uint32_t e0;

	status(d, 0, 1, 8, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 1), 1));
	e0 = R.a[0].first_event;
	done(d, 0, 1, e0, XEVB_DONE_NO_DATA, 1);
	/* Walk the 1024-event table once round: e0's slot takes e0 + 1024. */
	for (uint32_t i = 0; i < 1024; i++) {
		status(d, 0, 1, 8, false, 2);
		cr_assert(eq(u32, xevb_dfm_step(d, 2, 1), 1));
		done(d, 0, 1, R.a[R.na - 1].first_event, XEVB_DONE_COMPLETE, 2);
	}
	cr_assert(eq(u32, R.a[R.na - 1].first_event, e0 + 1024));
	done(d, 0, 1, e0, XEVB_DONE_COMPLETE, 3);
	cr_assert(eq(u64, st->no_data_recovered, 0));
	cr_assert(eq(u64, st->lost[XEVB_LOST_NO_DATA], 1));
	cr_assert(eq(u64, st->done_unknown, 1));
	free_balanced(d);
}

Test(dfm, clears_batched_and_merged)
{
	struct xevb_dfm *d = mk(false, 1);
	status(d, 0, 1, 100, false, 0);
	xevb_dfm_step(d, 0, 25);
	/* Out of order: 9 DONEs, no clear yet (group of 10). */
	uint32_t order[] = { 1003, 1001, 1000, 1002, 1004, 1006, 1007, 1008, 1009 };
	for (int i = 0; i < 9; i++)
		done(d, 0, 1, order[i], XEVB_DONE_COMPLETE, 1);
	cr_assert(eq(u32, R.clear_calls, 0));
	done(d, 0, 1, 1010, XEVB_DONE_COMPLETE, 2);
	cr_assert(eq(u32, R.clear_calls, 1));
	cr_assert(eq(u32, R.nc, 2)); /* 1000-1004 and 1006-1010 */
	cr_assert(eq(u32, R.c[0].first_event, 1000));
	cr_assert(eq(u32, R.c[0].count, 5));
	cr_assert(eq(u32, R.c[1].first_event, 1006));
	cr_assert(eq(u32, R.c[1].count, 5));
	/* A partial batch leaves after clear_flush_ns. */
	done(d, 0, 1, 1005, XEVB_DONE_COMPLETE, 10 * MS);
	status(d, 0, 1, 100, false, 30 * MS);
	xevb_dfm_poll(d, 30 * MS);
	cr_assert(eq(u32, R.clear_calls, 1));
	status(d, 0, 1, 100, false, 61 * MS);
	xevb_dfm_poll(d, 61 * MS);
	cr_assert(eq(u32, R.clear_calls, 2));
	cr_assert(eq(u32, R.c[2].first_event, 1005));
	/* Stop: the rest are lost at stop, and cleared too. */
	xevb_dfm_stop(d);
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_AT_STOP], 14));
	cr_assert(eq(u64, xevb_dfm_stats(d)->cleared, 25));
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, 0));
	free_balanced(d);
}

Test(dfm, table_bounds_events_in_flight)
{
	struct xevb_dfm *d = mk(false, 8);
	status(d, 0, 1, 100000, false, 0);
	/* Ids span the table (1024), then the oldest open ones move aside, a quarter of it at most. */
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 5000), 1280));
	cr_assert(eq(u64, xevb_dfm_stats(d)->stall_table, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->stragglers, 256));
	books(d);
	/* One aside done: room for one more to move, not a block of 8. */
	done(d, 0, 1, 1001, XEVB_DONE_COMPLETE, 1);
	cr_assert(eq(u32, xevb_dfm_step(d, 2, 8), 0));
	books(d);
	for (uint32_t e = 1000; e < 1016; e++)
		done(d, 0, 1, e, XEVB_DONE_COMPLETE, 3);
	cr_assert(eq(u32, xevb_dfm_step(d, 4, 8), 8));
	cr_assert(eq(u64, xevb_dfm_stats(d)->complete, 16));
	books(d);
	xevb_dfm_stop(d);
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_AT_STOP], 1288 - 16));
	free_balanced(d);
}

/*
 * A builder that dies (or a lost DONE) leaves events behind while the
 * trigger goes on through many tables: they wait aside, are retried,
 * re-assigned, finished by id; the trigger never waits for them.
 */
Test(dfm, stragglers_never_hold_the_trigger)
{
	struct xevb_dfm *d = mk(false, 4);
	uint32_t n_to1 = 0, t;

	status(d, 0, 1, 64, false, 0);
	status(d, 1, 2, 64, false, 0);
	/* Builder 1 takes its share once, then falls silent; 0 answers everything. */
	for (t = 1; t <= 200; t++) {
		R.na = 0;
		xevb_dfm_step(d, t * MS / 10, 64);
		for (uint32_t i = 0; i < R.na; i++) {
			if (R.to[i] == 1) {
				n_to1 += R.a[i].count;
				continue;
			}
			for (uint32_t k = 0; k < R.a[i].count; k++)
				done(d, 0, 1, R.a[i].first_event + k, XEVB_DONE_COMPLETE, t * MS / 10);
		}
		status(d, 0, 1, 64, false, t * MS / 10);
		if (t == 1)
			cr_assert(gt(u32, n_to1, 0));
		else
			status(d, 1, 2, 0, false, t * MS / 10); /* alive, no credit: keeps its events */
	}
	cr_assert(ge(u64, xevb_dfm_stats(d)->triggered, 10 * 1024));
	cr_assert(eq(u64, xevb_dfm_stats(d)->stall_table, 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->stragglers, n_to1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, n_to1));
	books(d);
	/* It dies: its events, all aside, go to builder 0 and are done there. */
	R.na = 0;
	status(d, 0, 1, 64, false, 20 * MS + 500 * MS);
	xevb_dfm_poll(d, 20 * MS + 501 * MS);
	cr_assert(not(xevb_dfm_builder(d, 1)->alive));
	xevb_dfm_step(d, 20 * MS + 502 * MS, 0);
	cr_assert(eq(u32, R.na, n_to1));
	for (uint32_t i = 0; i < R.na; i++)
		done(d, 0, 1, R.a[i].first_event, XEVB_DONE_COMPLETE, 20 * MS + 503 * MS);
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->complete, xevb_dfm_stats(d)->triggered));
	free_balanced(d);
}

/* A farm node (sink s, epoch e) reports cumulative counts for builders 0..n-1. */
static void received(struct xevb_dfm *d, uint32_t s, uint32_t epoch, const uint64_t *per_builder, uint32_t n,
		     uint64_t now)
{
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_RECEIVED, .role = XEVB_ROLE_SINK, .epoch = epoch };
	struct xevb_ctl_received r[8];

	for (uint32_t i = 0; i < n; i++)
		r[i] = (struct xevb_ctl_received){ 0x0a000000 + i, per_builder[i] };
	xevb_dfm_on_received(d, 0x0b000000 + s, 23904, &h, r, n, now);
}

/* Builder 0 done 8 (6 complete, 2 incomplete), builder 1 (the stray) done 4. */
static struct xevb_dfm *two_builders_done(void)
{
	struct xevb_dfm *d = mk(false, 4);

	status(d, 0, 11, 8, false, 0);
	status(d, 1, 12, 4, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 1, 12), 12));
	for (uint32_t i = 0; i < R.na; i++)
		for (uint32_t e = R.a[i].first_event; e < R.a[i].first_event + R.a[i].count; e++)
			done(d, R.to[i], R.to[i] ? 12 : 11, e,
			     R.to[i] == 0 && e % 4 == 3 ? XEVB_DONE_INCOMPLETE : XEVB_DONE_COMPLETE, 2);
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, 0));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->complete + xevb_dfm_builder(d, 0)->incomplete, 8));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->complete, 4));
	return d;
}

Test(dfm, no_farm_node_reports_books_not_closed)
{
	struct xevb_dfm *d = two_builders_done();

	cr_assert(eq(u64, xevb_dfm_reconcile(d), 0));
	cr_assert(eq(u32, xevb_dfm_n_sinks(d), 0));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->not_delivered, 0));
	free_balanced(d);
}

Test(dfm, done_never_received_is_not_delivered)
{
	struct xevb_dfm *d = two_builders_done();
	uint64_t a[2] = { 5, 0 }, b[2] = { 3, 0 };

	/* Two farm nodes got 5 + 3 of builder 0's events, none of the stray's. */
	received(d, 0, 100, a, 1, 3);
	received(d, 1, 200, b, 2, 3);
	cr_assert(eq(u32, xevb_dfm_n_sinks(d), 2));
	cr_assert(eq(u64, xevb_dfm_reconcile(d), 4));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->received, 8));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->not_delivered, 0));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->received, 0));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->not_delivered, 4));
	cr_assert(eq(u64, xevb_dfm_stats(d)->received, 8));
	cr_assert(eq(u64, xevb_dfm_stats(d)->not_delivered, 4));
	/* Reconciling again gives the same books (nothing accumulates). */
	cr_assert(eq(u64, xevb_dfm_reconcile(d), 4));
	cr_assert(eq(u64, xevb_dfm_stats(d)->received, 8));
	free_balanced(d);
}

Test(dfm, received_counts_are_cumulative_and_survive_a_farm_node_restart)
{
	struct xevb_dfm *d = two_builders_done();
	uint64_t r6[2] = { 6, 4 }, r2[2] = { 2, 0 }, r1[2] = { 1, 0 };

	received(d, 0, 100, r6, 2, 3);
	/* An older report arriving late lowers nothing. */
	received(d, 0, 100, r2, 2, 4);
	cr_assert(eq(u64, xevb_dfm_reconcile(d), 2));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->received, 6));
	/* The farm node restarts (new epoch) and counts from 0: 6 + 1 delivered. */
	received(d, 0, 101, r1, 1, 5);
	cr_assert(eq(u64, xevb_dfm_sink(d, 0)->restarts, 1));
	cr_assert(eq(u64, xevb_dfm_reconcile(d), 1));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->received, 7));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->received, 4));
	cr_assert(eq(u64, xevb_dfm_builder(d, 1)->not_delivered, 0));
	xevb_dfm_free(d);
}

Test(dfm, received_from_strangers_counted_apart)
{
	struct xevb_dfm *d = two_builders_done();
	uint64_t r[3] = { 8, 4, 9 }; /* 0x0a000002 is no builder of ours */

	received(d, 0, 100, r, 3, 3);
	cr_assert(eq(u64, xevb_dfm_reconcile(d), 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->received, 12));
	cr_assert(eq(u64, xevb_dfm_stats(d)->received_unknown, 9));
	xevb_dfm_free(d);
}

Test(dfm, builders_sharing_an_address_share_its_count)
{
	struct xevb_dfm *d = mk(false, 2);
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_STATUS, .role = XEVB_ROLE_BUILDER, .epoch = 21 };
	struct xevb_ctl_status st = { .credits = 2 };
	uint64_t r[1] = { 3 };

	/* Two builders on one host (ports 23902, 23912), 2 events each, 3 reached a farm node. */
	cr_assert(eq(int, xevb_dfm_on_status(d, 0x0a000000, 23902, &h, &st, 0), 0));
	h.epoch = 22;
	cr_assert(eq(int, xevb_dfm_on_status(d, 0x0a000000, 23912, &h, &st, 0), 1));
	cr_assert(eq(u32, xevb_dfm_step(d, 1, 4), 4));
	for (uint32_t i = 0; i < R.na; i++) {
		struct xevb_ctl_hdr dh = { .type = XEVB_CTL_DONE,
					   .role = XEVB_ROLE_BUILDER,
					   .epoch = R.to[i] ? 22 : 21 };
		for (uint32_t k = 0; k < R.a[i].count; k++) {
			struct xevb_ctl_done rd = { R.a[i].first_event + k, 0, XEVB_DONE_COMPLETE };
			xevb_dfm_on_done(d, 0x0a000000, R.to[i] ? 23912 : 23902, &dh, &rd, 1, 2);
		}
	}
	received(d, 0, 100, r, 1, 3);
	cr_assert(eq(u64, xevb_dfm_reconcile(d), 1));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->received + xevb_dfm_builder(d, 1)->received, 3));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->not_delivered + xevb_dfm_builder(d, 1)->not_delivered, 1));
	free_balanced(d);
}

Test(dfm, farm_node_tables_bounded_and_counted)
{
	struct xevb_dfm *d = mk(false, 1);
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_RECEIVED, .role = XEVB_ROLE_SINK, .epoch = 1 };
	struct xevb_ctl_received r[XEVB_DFM_MAX_BUILDERS + 3];

	for (uint32_t i = 0; i < XEVB_DFM_MAX_BUILDERS + 3; i++)
		r[i] = (struct xevb_ctl_received){ 0x0c000000 + i, 1 };
	/* One farm node names 3 builder addresses more than its table holds. */
	xevb_dfm_on_received(d, 0x0b000000, 23904, &h, r, XEVB_DFM_MAX_BUILDERS + 3, 1);
	cr_assert(eq(u32, xevb_dfm_sink(d, 0)->n, XEVB_DFM_MAX_BUILDERS));
	cr_assert(eq(u64, xevb_dfm_sink(d, 0)->untracked, 3));
	/* The farm-node table is full at XEVB_DFM_MAX_SINKS: the next one is refused and counted. */
	for (uint32_t s = 1; s <= XEVB_DFM_MAX_SINKS; s++)
		xevb_dfm_on_received(d, 0x0b000000 + s, 23904, &h, r, 1, 2);
	cr_assert(eq(u32, xevb_dfm_n_sinks(d), XEVB_DFM_MAX_SINKS));
	cr_assert(eq(u64, xevb_dfm_stats(d)->sinks_full, 1));
	/* None of it is a builder of ours. */
	cr_assert(eq(u64, xevb_dfm_reconcile(d), 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->received_unknown, XEVB_DFM_MAX_BUILDERS + XEVB_DFM_MAX_SINKS - 1));
	xevb_dfm_free(d);
}

/* No lock-out: one address gets at most max_per_addr live entries; dead
   entries that never took an event make room for newcomers. */
Test(dfm, one_address_cannot_fill_the_builder_table)
{
	struct xevb_dfm *d = mk(false, 2);
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_STATUS, .role = XEVB_ROLE_BUILDER, .epoch = 5 };
	struct xevb_ctl_status st = { .credits = 0 };

	for (uint16_t p = 0; p < 8; p++)
		cr_assert(ge(int, xevb_dfm_on_status(d, 0x0b000000, (uint16_t)(30000 + p), &h, &st, 0), 0));
	cr_assert(eq(int, xevb_dfm_on_status(d, 0x0b000000, 30008, &h, &st, 0), -1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->builders_per_addr, 1));
	/* Another address still joins; the table fills from many addresses. */
	for (uint32_t a = 1; xevb_dfm_n_builders(d) < XEVB_DFM_MAX_BUILDERS; a++)
		cr_assert(ge(int, xevb_dfm_on_status(d, 0x0b000000 + a, 23902, &h, &st, 0), 0));
	cr_assert(eq(int, xevb_dfm_on_status(d, 0x0c000000, 23902, &h, &st, 0), -1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->builders_full, 1));
	/* They fall silent: dead, never assigned an event, their entries go to newcomers. */
	xevb_dfm_poll(d, 600 * MS);
	cr_assert(ge(int, xevb_dfm_on_status(d, 0x0c000000, 23902, &h, &st, 700 * MS), 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->builders_expired, 1));
	cr_assert(eq(u32, xevb_dfm_n_builders(d), XEVB_DFM_MAX_BUILDERS));
	xevb_dfm_free(d);
}

/*
 * Latency: trigger-to-ASSIGN from each event's due time on the trigger
 * clock (or the step without one) to its ASSIGN leaving; ASSIGN-to-DONE
 * from that send to the DONE read. A retry is no new send; an event that
 * finished before its ASSIGN left is not timed.
 */
Test(dfm, latency_trigger_to_assign_and_assign_to_done)
{
	struct xevb_dfm *d = mk(false, 4);
	const struct xevb_dfm_lat_stats *ta = xevb_dfm_latency(d, XEVB_DFM_LAT_TRIGGER_ASSIGN);
	const struct xevb_dfm_lat_stats *ad = xevb_dfm_latency(d, XEVB_DFM_LAT_ASSIGN_DONE);

	status(d, 0, 1, 100, false, 0);
	/* 1 kHz from t = 0: the events fall due at 1, 2, 3, 4 ms; the block leaves at 10 ms. */
	xevb_dfm_trigger_clock(d, 0, 1000);
	cr_assert(eq(u32, xevb_dfm_step(d, 5 * MS, 4), 4));
	xevb_dfm_assign_sent(d, &R.a[0], 10 * MS);
	cr_assert(eq(u64, ta->h.total, 4));
	cr_assert(eq(u64, ta->sum_ns, (9 + 8 + 7 + 6) * MS));
	cr_assert(le(u64, 9 * MS, xevb_lat_quantile(&ta->h, 1.0)));
	cr_assert(le(u64, xevb_lat_quantile(&ta->h, 1.0), 9 * MS + 9 * MS / 8));
	/* Sent again (a retry, or a second call): not counted twice. */
	xevb_dfm_assign_sent(d, &R.a[0], 20 * MS);
	cr_assert(eq(u64, ta->h.total, 4));
	done(d, 0, 1, 1000, XEVB_DONE_COMPLETE, 13 * MS);
	done(d, 0, 1, 1001, XEVB_DONE_NO_DATA, 15 * MS);
	cr_assert(eq(u64, ad->h.total, 2));
	cr_assert(eq(u64, ad->sum_ns, (3 + 5) * MS));
	/* A DONE for an event already done is not timed again. */
	done(d, 0, 1, 1000, XEVB_DONE_COMPLETE, 16 * MS);
	cr_assert(eq(u64, ad->h.total, 2));
	/* Without a clock the trigger time is the step's. */
	xevb_dfm_trigger_clock(d, 0, 0);
	R.na = 0;
	cr_assert(eq(u32, xevb_dfm_step(d, 30 * MS, 4), 4));
	xevb_dfm_assign_sent(d, &R.a[0], 30 * MS + 500);
	cr_assert(eq(u64, ta->h.total, 8));
	cr_assert(eq(u64, ta->sum_ns, (9 + 8 + 7 + 6) * MS + 4 * 500));
	/* The builder dies before the ASSIGN leaves: its events wait for
	   another builder, not timed; none comes, they are lost at the stop. */
	R.na = 0;
	cr_assert(eq(u32, xevb_dfm_step(d, 31 * MS, 4), 4));
	xevb_dfm_on_bye(d, 0x0a000000, 23902, 31 * MS);
	xevb_dfm_assign_sent(d, &R.a[0], 32 * MS);
	cr_assert(eq(u64, ta->h.total, 8));
	xevb_dfm_stop(d);
	cr_assert(eq(u64, xevb_dfm_stats(d)->lost[XEVB_LOST_AT_STOP], 10)); /* with the 6 before */
	free_balanced(d);
}

/* The side table: ids in, some out (entries after a hole move back), every one still found. */
Test(dfm, side_table_finds_every_id_after_deletions)
{
	struct dfm_side s;
	uint32_t ids[256], n = 0;

	cr_assert(eq(int, dfm_side_init(&s, 1024), 0));
	cr_assert(eq(u32, s.cap, 256));
	for (uint32_t k = 0; k < 256; k++) {
		/* Blocks of 4 consecutive ids far apart, as a dead builder leaves them. */
		struct dfm_slot x = { .event = 7000 + (k / 4) * 1024 + k % 4, .state = SLOT_ASSIGNED };
		dfm_side_put(&s, &x);
		ids[n++] = x.event;
	}
	cr_assert(eq(u32, dfm_side_count(&s), 256));
	for (uint32_t k = 0; k < 256; k += 3) {
		struct dfm_slot *x = dfm_side_find(&s, ids[k]);
		cr_assert(not(eq(ptr, x, NULL)));
		dfm_side_del(&s, x);
	}
	for (uint32_t k = 0; k < 256; k++) {
		struct dfm_slot *x = dfm_side_find(&s, ids[k]);
		if (k % 3 == 0)
			cr_assert(eq(ptr, x, NULL), "id %u still found", ids[k]);
		else
			cr_assert(x && x->event == ids[k], "id %u lost", ids[k]);
	}
	cr_assert(eq(u32, dfm_side_count(&s), s.n));
	cr_assert(eq(u32, dfm_side_ids(&s), s.n));
	dfm_side_free(&s);
}

/* Clears in serial order whatever order the DONEs came in, across the wrap of the event ids. */
Test(dfm, clears_sorted_across_the_wrap)
{
	struct xevb_dfm_cfg c = { .block = 1,
				  .first_event = 0xfffffffbu,
				  .run = 3,
				  .table = 1024,
				  .dead_ns = 500 * MS,
				  .retry_ns = 200 * MS,
				  .max_retries = 2,
				  .clear_group = 10,
				  .clear_flush_ns = 50 * MS,
				  .send_assign = on_assign,
				  .send_clear = on_clear };
	struct xevb_dfm *d;

	memset(&R, 0, sizeof(R));
	d = xevb_dfm_new(&c);
	cr_assert(not(eq(ptr, d, NULL)));
	status(d, 0, 1, 64, false, 0);
	cr_assert(eq(u32, xevb_dfm_step(d, 1, 10), 10));
	/* 0xfffffffb .. 4, DONE from the last to the first: one batch of 10, one range. */
	for (int k = 9; k >= 0; k--)
		done(d, 0, 1, 0xfffffffbu + (uint32_t)k, XEVB_DONE_COMPLETE, 2);
	cr_assert(eq(u32, R.nc, 1));
	cr_assert(eq(u32, R.c[0].first_event, 0xfffffffbu));
	cr_assert(eq(u32, R.c[0].count, 10));
	free_balanced(d);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The verdict on the books at the farm nodes (ctl/dfm_books.h): the DFM's
 * DONE, the builder's FORWARDED and the farm node's RECEIVED, and who is
 * named when they disagree; the FORWARDED codec.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include "ctl/dfm.h"
#include "ctl/dfm_books.h"

#define B0 0x0a000001u /* the builder's address (as the tests store it) */
#define K0 0x0b000001u /* the farm node's */

static void no_assign(void *ctx, uint32_t b, const struct xevb_ctl_assign *a)
{
	(void)ctx;
	(void)b;
	(void)a;
}

static void no_clear(void *ctx, const struct xevb_ctl_range *r, uint32_t n)
{
	(void)ctx;
	(void)r;
	(void)n;
}

/* One builder (epoch 7) that built all 8 events it was given, complete. */
static struct xevb_dfm *built8(void)
{
	struct xevb_dfm_cfg c = { .block = 8,
				  .table = 64,
				  .dead_ns = 1000000000ull,
				  .clear_group = 8,
				  .send_assign = no_assign,
				  .send_clear = no_clear };
	struct xevb_dfm *d = xevb_dfm_new(&c);
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_STATUS, .role = XEVB_ROLE_BUILDER, .epoch = 7 };
	struct xevb_ctl_status st = { .credits = 8 };

	cr_assert(ge(int, xevb_dfm_on_status(d, B0, 23902, &h, &st, 0), 0));
	cr_assert(eq(u32, xevb_dfm_step(d, 1, 8), 8));
	h.type = XEVB_CTL_DONE;
	for (uint32_t e = 0; e < 8; e++) {
		struct xevb_ctl_done r = { e, 0, XEVB_DONE_COMPLETE };
		xevb_dfm_on_done(d, B0, 23902, &h, &r, 1, 2);
	}
	xevb_dfm_stop(d);
	return d;
}

static void forwarded(struct xevb_dfm *d, uint32_t epoch, uint64_t n)
{
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_FORWARDED, .role = XEVB_ROLE_BUILDER, .epoch = epoch };
	struct xevb_ctl_forwarded r = { K0, n };

	xevb_dfm_on_forwarded(d, B0, 23902, &h, &r, 1);
}

static void received(struct xevb_dfm *d, uint64_t n)
{
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_RECEIVED, .role = XEVB_ROLE_SINK, .epoch = 3 };
	struct xevb_ctl_received r = { B0, n };

	xevb_dfm_on_received(d, K0, 23904, &h, &r, 1, 3);
}

static struct dfm_books_verdict judge(struct xevb_dfm *d, bool configured, bool require)
{
	struct dfm_books_verdict v;

	xevb_dfm_reconcile(d);
	dfm_books_judge(d, configured, require, &v);
	return v;
}

Test(dfm_books, three_numbers_agree_the_books_close)
{
	struct xevb_dfm *d = built8();
	struct dfm_books_verdict v;

	xevb_dfm_expect_sink(d, K0, 23904, 0);
	forwarded(d, 7, 8);
	received(d, 8);
	xevb_dfm_reconcile(d);
	cr_assert(dfm_books_settled(d));
	v = judge(d, true, true);
	cr_assert(eq(int, v.rc, 0));
	cr_assert(v.trusted);
	cr_assert(eq(u32, v.expected + v.reporting, 2));
	cr_assert(eq(u32, v.silent + v.over + v.under + v.builder_short + v.builder_unchecked, 0));
	xevb_dfm_free(d);
}

Test(dfm_books, a_farm_node_under_reporting_is_named_not_the_builder)
{
	struct xevb_dfm *d = built8();
	struct dfm_books_verdict v;

	forwarded(d, 7, 8);
	received(d, 2);
	xevb_dfm_reconcile(d);
	cr_assert(not(dfm_books_settled(d)));
	v = judge(d, false, false);
	cr_assert(eq(int, v.rc, DFM_RC_NOT_DELIVERED));
	cr_assert(eq(u32, v.under, 1));
	cr_assert(eq(u32, v.builder_short + v.builder_unchecked + v.over, 0));
	xevb_dfm_free(d);
}

Test(dfm_books, a_builder_that_sent_less_than_done_is_named)
{
	struct xevb_dfm *d = built8();
	struct dfm_books_verdict v;

	forwarded(d, 7, 5);
	received(d, 5);
	v = judge(d, false, false);
	cr_assert(eq(int, v.rc, DFM_RC_NOT_DELIVERED));
	cr_assert(eq(u32, v.builder_short, 1));
	cr_assert(eq(u32, v.under + v.over, 0));
	xevb_dfm_free(d);
}

Test(dfm_books, received_beyond_done_is_an_error_naming_the_farm_node)
{
	struct xevb_dfm *d = built8();
	struct dfm_books_verdict v;

	forwarded(d, 7, 8);
	received(d, 1ull << 40);
	v = judge(d, false, false);
	cr_assert(eq(int, v.rc, DFM_RC_BOOKS_OPEN));
	cr_assert(eq(u32, v.over, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->not_delivered, 0));
	xevb_dfm_free(d);
}

Test(dfm_books, a_builder_that_never_says_what_it_sent_is_named_as_before)
{
	struct xevb_dfm *d = built8();
	struct dfm_books_verdict v;

	received(d, 0);
	v = judge(d, false, false);
	cr_assert(eq(int, v.rc, DFM_RC_NOT_DELIVERED));
	cr_assert(eq(u32, v.builder_unchecked, 1));
	xevb_dfm_free(d);
}

Test(dfm_books, a_configured_farm_node_that_never_reports_leaves_the_books_open)
{
	struct xevb_dfm *d = built8();
	struct dfm_books_verdict v;

	xevb_dfm_expect_sink(d, K0, 23904, 4);
	forwarded(d, 7, 8);
	xevb_dfm_reconcile(d);
	cr_assert(not(dfm_books_settled(d)));
	v = judge(d, true, false);
	cr_assert(eq(int, v.rc, DFM_RC_BOOKS_OPEN));
	cr_assert(eq(u32, v.silent, 1));
	cr_assert(eq(u32, v.reporting, 0));
	cr_assert(eq(u16, xevb_dfm_sink(d, 0)->id, 4));
	xevb_dfm_free(d);
}

Test(dfm_books, open_membership_fails_only_when_asked)
{
	struct xevb_dfm *d = built8();
	struct dfm_books_verdict v;

	forwarded(d, 7, 8);
	received(d, 8);
	v = judge(d, false, false);
	cr_assert(eq(int, v.rc, 0));
	cr_assert(not(v.trusted));
	v = judge(d, false, true);
	cr_assert(eq(int, v.rc, DFM_RC_BOOKS_OPEN));
	/* A configuration without farm nodes closes nothing either. */
	v = judge(d, true, true);
	cr_assert(eq(int, v.rc, DFM_RC_BOOKS_OPEN));
	xevb_dfm_free(d);
}

Test(dfm_books, forwarded_counts_only_from_the_current_incarnation_and_never_drop)
{
	struct xevb_dfm *d = built8();

	forwarded(d, 7, 6);
	forwarded(d, 7, 4); /* an older report, late */
	cr_assert(eq(i64, xevb_dfm_builder_to(d, 0, K0), 6));
	forwarded(d, 9, 3); /* no STATUS of epoch 9 yet: not the builder we know */
	cr_assert(eq(u64, xevb_dfm_stats(d)->fwd_unknown_peer, 1));
	cr_assert(eq(i64, xevb_dfm_builder_to(d, 0, K0), 6));
	cr_assert(eq(u64, xevb_dfm_builder(d, 0)->fwd_reports, 2));
	xevb_dfm_free(d);
}

Test(dfm_books, forwarded_codec)
{
	struct xevb_ctl_msg m = { .h = { .type = XEVB_CTL_FORWARDED,
					 .role = XEVB_ROLE_BUILDER,
					 .epoch = 5,
					 .n_recs = 2 } },
			    out;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	m.u.forwarded[0] = (struct xevb_ctl_forwarded){ K0, 1ull << 40 };
	m.u.forwarded[1] = (struct xevb_ctl_forwarded){ K0 + 1, 3 };
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, XEVB_CTL_HLEN + 2 * XEVB_CTL_FORWARDED_RLEN));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &out), XEVB_CTL_OK));
	cr_assert(eq(u64, out.u.forwarded[0].events, 1ull << 40));
	cr_assert(eq(u32, out.u.forwarded[1].sink_addr, K0 + 1));
	cr_assert(eq(str, (char *)xevb_ctl_type_name(XEVB_CTL_FORWARDED), "FORWARDED"));
	buf[XEVB_CTL_HLEN + 4] = 1; /* the reserved word */
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &out), XEVB_CTL_E_FIELD));
	m.h.role = XEVB_ROLE_SINK; /* only builders send it */
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, 0));
	m.h.role = XEVB_ROLE_BUILDER;
	m.h.n_recs = 0; /* nothing sent yet: allowed */
	cr_assert(gt(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.h.n_recs = 1;
	m.u.forwarded[0].sink_addr = 0;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
}

// SPDX-License-Identifier: GPL-2.0-only
/* Push mode's copy for the sources (user/ctl/dfm_push.h): ROUTE tables, ASSIGN copies, their order. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include "ctl/dfm_push.h"

#define MAX_SENT 16
static struct xevb_ctl_msg out[MAX_SENT];
static uint32_t n_out;

static void keep(void *ctx, struct xevb_ctl_msg *m)
{
	(void)ctx;
	cr_assert(lt(u32, n_out, MAX_SENT));
	out[n_out++] = *m;
}

static struct xevb_ctl_assign blk(uint32_t first, uint16_t count, uint16_t id, uint8_t flags)
{
	return (struct xevb_ctl_assign){ .first_event = first,
					 .count = count,
					 .flags = flags,
					 .builder_addr = 0x0a000001u + id,
					 .builder_id = id,
					 .run = 3 };
}

static void list(struct dfm_push *p, uint32_t n, const uint32_t *addrs)
{
	dfm_push_list_begin(p);
	for (uint32_t i = 0; i < n; i++)
		if (addrs[i])
			dfm_push_list_add(p, i, addrs[i], 23902);
	dfm_push_list_end(p);
}

/* Routable once two lists in a row named it at one address; not a newcomer in a reused entry, not with --no-route. */
Test(dfm_push, routable_after_two_lists)
{
	static struct dfm_push p;
	static const uint32_t one[] = { 1, 2, 0, 4 }, two[] = { 9, 2, 3, 4 };
	struct xevb_ctl_assign a = { .first_event = 0, .count = 25, .builder_addr = 1, .run = 3 };

	n_out = 0;
	dfm_push_init(&p, 25, keep, NULL);
	list(&p, 4, one);
	cr_assert(not(dfm_push_routable(&p, 0)));
	list(&p, 4, one);
	cr_assert(dfm_push_routable(&p, 0));
	cr_assert(dfm_push_routable(&p, 1));
	cr_assert(not(dfm_push_routable(&p, 2)));
	cr_assert(dfm_push_routable(&p, 3));
	cr_assert(not(dfm_push_routable(&p, 4)));
	cr_assert(not(dfm_push_routable(&p, 5000)));
	list(&p, 4, two); /* entry 0: another builder; entry 2: new */
	cr_assert(not(dfm_push_routable(&p, 0)));
	cr_assert(not(dfm_push_routable(&p, 2)));
	cr_assert(dfm_push_routable(&p, 1));
	list(&p, 4, two);
	cr_assert(dfm_push_routable(&p, 0));
	cr_assert(dfm_push_routable(&p, 2));
	list(&p, 1, two); /* 1..3 gone */
	cr_assert(not(dfm_push_routable(&p, 3)));
	p.assign_only = true;
	dfm_push_add(&p, &a, 0, 1);
	dfm_push_flush(&p);
	cr_assert(eq(u8, out[0].h.type, XEVB_CTL_ASSIGN));
}

static void routable(struct dfm_push *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		p->name[i].routable = true;
}

/* Consecutive blocks in one table; a gap starts another; REASSIGN leaves after the table as a copy. */
Test(dfm_push, tables_gaps_and_reassign_order)
{
	static struct dfm_push p;
	struct xevb_ctl_assign a;

	n_out = 0;
	dfm_push_init(&p, 25, keep, NULL);
	routable(&p, 10);
	a = blk(100, 25, 4, 0);
	dfm_push_add(&p, &a, a.builder_id, 10);
	a = blk(125, 25, 6, 0);
	dfm_push_add(&p, &a, a.builder_id, 11);
	cr_assert(not(dfm_push_due(&p, 1009, 1000)));
	cr_assert(dfm_push_due(&p, 1010, 1000));
	a = blk(200, 25, 4, 0); /* a gap: the first table leaves */
	dfm_push_add(&p, &a, a.builder_id, 12);
	cr_assert(eq(u32, n_out, 1));
	cr_assert(eq(u8, out[0].h.type, XEVB_CTL_ROUTE));
	cr_assert(eq(u16, out[0].h.n_recs, 2));
	cr_assert(eq(u32, out[0].u.route.first_event, 100));
	cr_assert(eq(u16, out[0].u.route.id[1], 6));
	a = blk(225, 25, 9, 0); /* builder not routable (index 200): a copy */
	dfm_push_add(&p, &a, 200, 13);
	a = blk(100, 3, 6, XEVB_CTL_AS_REASSIGN); /* first the table, then the copy */
	dfm_push_add(&p, &a, a.builder_id, 14);
	cr_assert(eq(u32, n_out, 2));
	cr_assert(eq(u8, out[1].h.type, XEVB_CTL_ROUTE));
	cr_assert(eq(u32, out[1].u.route.first_event, 200));
	dfm_push_flush(&p);
	cr_assert(eq(u32, n_out, 3));
	cr_assert(eq(u8, out[2].h.type, XEVB_CTL_ASSIGN));
	cr_assert(eq(u16, out[2].h.n_recs, 2));
	cr_assert(eq(u32, out[2].u.assign[1].first_event, 100));
	cr_assert(eq(u64, p.route_blocks, 3));
	cr_assert(eq(u64, p.copy_blocks, 2));
	cr_assert(not(dfm_push_due(&p, 100000, 0)));
	/* A short block (not the run's size) goes as a copy. */
	a = blk(300, 5, 4, 0);
	dfm_push_add(&p, &a, a.builder_id, 20);
	dfm_push_flush(&p);
	cr_assert(eq(u8, out[3].h.type, XEVB_CTL_ASSIGN));
}

/* A full table leaves at once, and every table encodes. */
Test(dfm_push, full_table_leaves_and_encodes)
{
	static struct dfm_push p;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	uint32_t max = xevb_ctl_max_recs(XEVB_CTL_ROUTE);

	n_out = 0;
	dfm_push_init(&p, 25, keep, NULL);
	routable(&p, 128);
	for (uint32_t k = 0; k < max + 1; k++) {
		struct xevb_ctl_assign a = blk(k * 25, 25, (uint16_t)(k % 128), 0);
		dfm_push_add(&p, &a, a.builder_id, k);
	}
	cr_assert(eq(u32, n_out, 1));
	cr_assert(eq(u16, out[0].h.n_recs, max));
	out[0].h.role = XEVB_ROLE_DFM;
	out[0].h.epoch = 1;
	cr_assert(ne(sz, xevb_ctl_encode(&out[0], buf, sizeof(buf)), 0));
	dfm_push_flush(&p);
	cr_assert(eq(u32, n_out, 2));
	cr_assert(eq(u32, out[1].u.route.first_event, max * 25));
}

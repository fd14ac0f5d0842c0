// SPDX-License-Identifier: GPL-2.0-only
/* The source's control handlers (user/ctl/source_ctl.h): the DFM's clear mark and lists in parts. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "ctl/source_ctl.h"

static uint64_t sent;

static void count_send(void *ctx, uint32_t addr, const uint32_t *evs, uint32_t n, bool resend)
{
	(void)ctx, (void)addr, (void)evs, (void)resend;
	sent += n;
}

static struct sockaddr_in dfm = { .sin_family = AF_INET, .sin_port = 23901 };

static void mk(struct src_ctl *s)
{
	struct src_ctl_cfg c = { .hold = 1024, .send = count_send, .dfm_name = "dfm" };

	dfm.sin_addr.s_addr = htonl(0xc6120401);
	c.dfm = dfm;
	cr_assert(eq(int, src_ctl_init(s, &c), 0));
}

static void from_dfm(struct src_ctl *s, struct xevb_ctl_msg *m)
{
	m->h.role = XEVB_ROLE_DFM;
	m->h.epoch = 7;
	src_ctl_on_msg(s, m, &dfm);
}

static void assign(struct src_ctl *s, uint32_t first, uint16_t count)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_ASSIGN, .h.n_recs = 1 };

	m.u.assign[0] = (struct xevb_ctl_assign){ .first_event = first,
						  .count = count,
						  .builder_addr = htonl(0x0a000001) };
	from_dfm(s, &m);
}

static void mark(struct src_ctl *s, uint32_t w)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	m.u.status = (struct xevb_ctl_status){ .flags = XEVB_CTL_ST_CLEARED, .done_total = w };
	from_dfm(s, &m);
}

/* CLEARs lost: the mark releases what lies before it, once, and nothing after it. */
Test(source_ctl, clear_mark_repairs_lost_clears)
{
	static struct src_ctl s;
	char msg[128];

	mk(&s);
	assign(&s, 100, 50);
	cr_assert(eq(u32, s.n_held, 50));
	mark(&s, 120);
	cr_assert(eq(u32, s.n_held, 30));
	cr_assert(eq(u64, s.cleared, 20));
	cr_assert(eq(u64, s.cleared_mark, 20));
	mark(&s, 110); /* an older mark, late: nothing */
	cr_assert(eq(u32, s.n_held, 30));
	mark(&s, 150);
	cr_assert(eq(u32, s.n_held, 0));
	cr_assert(eq(u64, s.cleared, 50));
	/* A jump past the whole table: a scan, the same result. */
	assign(&s, 5000, 10);
	mark(&s, 5000 + 4096);
	cr_assert(eq(u32, s.n_held, 0));
	cr_assert(eq(u64, s.cleared_mark, 60));
	cr_assert(src_ctl_check(&s, msg, sizeof(msg)), "%s", msg);
	src_ctl_free(&s);
}

/* BUILDERS in parts: every part adds builders, none replaces another's. */
Test(source_ctl, builders_in_parts_accumulate)
{
	static struct src_ctl s;
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_BUILDERS };

	mk(&s);
	for (uint32_t part = 0; part < 3; part++) {
		m.h.n_recs = 100;
		for (uint32_t r = 0; r < 100; r++)
			m.u.builders[r] =
				(struct xevb_ctl_bldinfo){ .addr = htonl(0x0a000000 + part * 100 + r + 1),
							   .port = 23902,
							   .id = (uint16_t)(part * 100 + r) };
		from_dfm(&s, &m);
	}
	cr_assert(eq(u32, src_ctl_builders_known(&s), 300));
	for (uint32_t k = 1; k <= 300; k++)
		cr_assert(src_ctl_known_builder(&s, htonl(0x0a000000 + k), htons(23902)));
	cr_assert(not(src_ctl_known_builder(&s, htonl(0x0a000000 + 301), htons(23902))));
	cr_assert(not(src_ctl_known_builder(&s, htonl(0x0a000001), htons(23903))));
	src_ctl_free(&s);
}

static void builders(struct src_ctl *s, uint32_t n)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_BUILDERS, .h.n_recs = (uint16_t)n };

	for (uint32_t r = 0; r < n; r++)
		m.u.builders[r] = (struct xevb_ctl_bldinfo){ .addr = htonl(0x0a000001 + r),
							     .port = 23902,
							     .id = (uint16_t)(100 + r) };
	from_dfm(s, &m);
}

/* ROUTE: each block to the builder its id names; an unknown id is counted, nothing held or sent. */
Test(source_ctl, route_blocks_to_listed_ids)
{
	static struct src_ctl s;
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_ROUTE, .h.n_recs = 4 };
	char msg[128];

	mk(&s);
	sent = 0;
	builders(&s, 3);
	m.u.route =
		(struct xevb_ctl_route){ .first_event = 500, .block = 10, .run = 1, .id = { 100, 102, 7, 101 } };
	from_dfm(&s, &m);
	cr_assert(eq(u64, s.routes, 1));
	cr_assert(eq(u64, s.route_unknown, 1)); /* id 7: no builder of the list */
	cr_assert(eq(u64, s.assigns, 3));
	cr_assert(eq(u64, s.assigned_events, 30));
	cr_assert(eq(u32, s.n_held, 30));
	cr_assert(eq(u64, sent, 30));
	/* The same table again is a re-send of what we hold, not new events. */
	from_dfm(&s, &m);
	cr_assert(eq(u64, s.assign_again, 30));
	cr_assert(eq(u32, s.n_held, 30));
	cr_assert(eq(u64, s.route_unknown, 2));
	/* A ROUTE not from the DFM's address moves nothing. */
	{
		struct sockaddr_in other = dfm;
		other.sin_port = 1;
		m.h.role = XEVB_ROLE_DFM;
		src_ctl_on_msg(&s, &m, &other);
		cr_assert(eq(u64, s.routes, 2));
		cr_assert(eq(u64, s.not_dfm, 1));
	}
	/* A new DFM numbers its builders afresh: the old indexes route nothing. */
	m.h.role = XEVB_ROLE_DFM;
	m.h.epoch = 8;
	m.u.route.first_event = 900;
	src_ctl_on_msg(&s, &m, &dfm);
	cr_assert(eq(u64, s.route_unknown, 6));
	cr_assert(src_ctl_check(&s, msg, sizeof(msg)), "%s", msg);
	src_ctl_free(&s);
}

/* Only the DFM may send a clear mark, and it is an event id. */
Test(source_ctl, clear_mark_rules)
{
	struct xevb_ctl_msg m = {
		.h = { .type = XEVB_CTL_STATUS, .role = XEVB_ROLE_DFM, .epoch = 1, .n_recs = 1 }
	};
	uint8_t buf[XEVB_CTL_MAX_LEN];

	m.u.status = (struct xevb_ctl_status){ .flags = XEVB_CTL_ST_CLEARED, .done_total = 0xffffffffull };
	cr_assert(gt(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.status.done_total = 1ull << 32;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.status.done_total = 5;
	m.h.role = XEVB_ROLE_BUILDER;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
}

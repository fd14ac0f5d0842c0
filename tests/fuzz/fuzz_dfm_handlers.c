// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness for the DFM's message handlers (user/ctl/dfm.c), not
 * only the decoder: any sequence of STATUS, DONE, RECEIVED, FORWARDED and BYE from up
 * to 16 peers (builders, one of them sharing another's address; farm
 * nodes), with any epochs, credits, Busy flags, event ids (assigned ones,
 * recently assigned, or anything), interleaved with trigger steps, polls
 * and a clock that jumps. After every step the books must balance
 * (xevb_dfm_check); at the end xevb_dfm_stop leaves nothing outstanding,
 * and the verdict on the farm nodes' books (dfm_books_judge) is reached.
 *
 *   byte 0: bit 0 pull; bits 1-3 block - 1 (1..8 events an assignment);
 *           bits 4-5 table 64 << n; bits 6-7 max_per_addr 1..4
 *   then steps of 4 bytes: op, peer, a, b
 *     op % 8: 0 STATUS (credits a, Busy b bit 0, epoch b >> 1 & 3)
 *             1 DONE (event: an assigned one picked by a, or a + b << 8 when
 *               b bit 7; status b & 3, n_missing b >> 2 & 1)
 *             2 RECEIVED (from a farm node: builder peer a & 15, count a * b),
 *               or from a builder FORWARDED (to farm node 12 + a & 3, count a * b)
 *             3 BYE
 *             4 step (max_new a)
 *             5 poll
 *             6 clock += (a << 8 | b) us
 *             7 DONE for a run of assigned events (a of them)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/ctl_proto.h"
#include "ctl/dfm.h"
#include "ctl/dfm_books.h"

#define N_PEERS 16
#define RECENT  4096

static uint32_t recent[RECENT], n_recent;

static void on_assign(void *ctx, uint32_t builder, const struct xevb_ctl_assign *a)
{
	(void)ctx;
	(void)builder;
	for (uint32_t k = 0; k < a->count; k++)
		recent[n_recent++ % RECENT] = a->first_event + k;
}

static void on_clear(void *ctx, const struct xevb_ctl_range *r, uint32_t n)
{
	(void)ctx;
	(void)r;
	(void)n;
}

/* Peers 0..11 builders (peer 11 shares peer 10's address), 12..15 farm nodes. */
static uint32_t peer_addr(uint8_t p)
{
	return 0x0a000000u + (p == 11 ? 10 : p);
}

static uint16_t peer_port(uint8_t p)
{
	return (uint16_t)(23902 + (p == 11 ? 10 : 0));
}

static void check(const struct xevb_dfm *d)
{
	char msg[256];

	if (!xevb_dfm_check(d, msg, sizeof(msg))) {
		fprintf(stderr, "fuzz_dfm_handlers: books do not balance: %s\n", msg);
		abort();
	}
}

static void one_step(struct xevb_dfm *d, const uint8_t *s, uint64_t *now)
{
	uint8_t op = s[0] % 8, p = s[1] % N_PEERS, a = s[2], b = s[3];
	struct xevb_ctl_hdr h = { .role = p >= 12 ? XEVB_ROLE_SINK : XEVB_ROLE_BUILDER,
				  .sender_id = p,
				  .epoch = 1 + ((b >> 1) & 3),
				  .seq = 1 };
	uint32_t addr = peer_addr(p);
	uint16_t port = peer_port(p);

	switch (op) {
	case 0: {
		struct xevb_ctl_status st = { .credits = a, .flags = (b & 1) ? XEVB_CTL_ST_BUSY : 0 };
		if (p < 12)
			xevb_dfm_on_status(d, addr, port, &h, &st, *now);
		break;
	}
	case 1: {
		struct xevb_ctl_done r = { .event_id =
						   (b & 0x80) ?
							   (uint32_t)a + ((uint32_t)b << 8) :
							   (n_recent ? recent[(n_recent - 1 - a) % RECENT] : a),
					   .status = (uint8_t)(b & 3),
					   .n_missing = (uint16_t)((b >> 2) & 1) };
		h.epoch = 1;
		xevb_dfm_on_done(d, addr, port, &h, &r, 1, *now);
		break;
	}
	case 2: {
		struct xevb_ctl_received r = { .builder_addr = peer_addr(a % 12), .events = (uint64_t)a * b };
		struct xevb_ctl_forwarded f = { .sink_addr = 0x0b00000cu + (a & 3), .events = (uint64_t)a * b };
		if (p < 12) {
			xevb_dfm_on_forwarded(d, addr, port, &h, &f, 1);
			break;
		}
		h.role = XEVB_ROLE_SINK;
		xevb_dfm_on_received(d, 0x0b000000u + p, 23904, &h, &r, 1, *now);
		break;
	}
	case 3:
		xevb_dfm_on_bye(d, addr, port, *now);
		break;
	case 4:
		xevb_dfm_step(d, *now, a);
		break;
	case 5:
		xevb_dfm_poll(d, *now);
		break;
	case 6:
		*now += ((uint64_t)a << 8 | b) * 1000ull;
		break;
	case 7: {
		static struct xevb_ctl_done r[64];
		uint32_t n = 0;
		for (uint32_t k = 0; k < a % 64 && k < n_recent; k++)
			r[n++] = (struct xevb_ctl_done){ .event_id = recent[(n_recent - 1 - k) % RECENT],
							 .status = XEVB_DONE_COMPLETE };
		h.epoch = 1;
		xevb_dfm_on_done(d, addr, port, &h, r, n, *now);
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xevb_dfm_cfg c = {
		.first_event = 0xfffff000u,
		.run = 1,
		.dead_ns = 50000000ull,
		.retry_ns = 20000000ull,
		.max_retries = 2,
		.clear_group = 8,
		.clear_flush_ns = 5000000ull,
		.send_assign = on_assign,
		.send_clear = on_clear,
	};
	struct xevb_dfm *d;
	struct dfm_books_verdict v;
	uint64_t now = 1000000000ull;

	if (size < 1)
		return 0;
	c.pull = data[0] & 1;
	c.block = 1 + ((data[0] >> 1) & 7);
	c.table = 64u << ((data[0] >> 4) & 3);
	c.max_per_addr = 1 + (data[0] >> 6);
	n_recent = 0;
	d = xevb_dfm_new(&c);
	if (!d)
		return 0;
	if (data[0] & 8)
		xevb_dfm_expect_sink(d, 0x0b00000cu, 23904, 0);
	for (size_t off = 1; off + 4 <= size; off += 4) {
		one_step(d, data + off, &now);
		check(d);
	}
	xevb_dfm_stop(d);
	check(d);
	if (xevb_dfm_stats(d)->outstanding) {
		fprintf(stderr, "fuzz_dfm_handlers: %llu outstanding after stop\n",
			(unsigned long long)xevb_dfm_stats(d)->outstanding);
		abort();
	}
	xevb_dfm_reconcile(d);
	dfm_books_settled(d);
	dfm_books_judge(d, data[0] & 2, data[0] & 4, &v);
	xevb_dfm_free(d);
	return 0;
}

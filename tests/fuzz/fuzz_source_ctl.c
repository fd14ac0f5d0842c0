// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness for the source's control handlers (user/ctl/source_ctl.c):
 * ASSIGN, BUILDERS, CLEAR, STATUS and BYE as the DFM sends them, REQUESTs
 * (and re-asks) from builders the DFM listed or not, DFM restarts, the
 * DFM's messages forged (its address on another port, another host) and
 * arbitrary datagrams, all through the endpoint's own checks (decoded, and
 * with a key sealed and opened). No socket: the answers the handlers send
 * are counted where they go.
 *
 * After every step: src_ctl_check (the hold table's count and bound); every
 * counter only grows; answers go only to addresses the DFM named (BUILDERS
 * or an ASSIGN); one REQUEST is answered with at most its events, of them
 * at most 1024 re-asks of events not held; a REQUEST from a builder not
 * known, or a message as the DFM not from it, changes only its counter,
 * sends nothing and ends nothing.
 *
 *   byte 0: bit 0 key; bits 1-3 hold table 64 << n (up to 8192)
 *   then steps, op byte and 3 bytes a, b, c:
 *     op % 10: 0 ASSIGN (1 + a % 3 records of 1 + b % 64 events from the
 *                 cursor, builder c % 6: 4 and 5 never listed); a bit 7:
 *                 ROUTE instead (1 + a % 8 blocks of 1 + b % 64 events
 *                 from the cursor, route indexes from c % 8: 6 and 7 name
 *                 no builder)
 *              1 BUILDERS (builders whose bit is set in a, 0..5, port b bit 0)
 *              2 REQUEST from builder a % 6 (1 + b % 4 records of 1 + c * 4
 *                 events from the cursor back by b, re-ask b bit 7; c 0xff:
 *                 1024 events each)
 *              3 CLEAR (1 + a % 3 ranges of 1 + b events, from the cursor back by c)
 *              4 STATUS from the DFM (pull a bit 0)
 *              5 BYE from the DFM
 *              6 the DFM restarts (new epoch)
 *              7 forged: ASSIGN, BUILDERS, CLEAR or BYE (b % 4) as the DFM,
 *                from its host on another port (a bit 0) or another host
 *              8 a datagram of a bytes from the input, from the DFM (b bit 0)
 *                or builder 0
 *              9 cursor += a << (b % 24)
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "ctl_fuzz.h"
#include "ctl/source_ctl.h"

#define DFM_HOST 0xc6120401u /* 198.18.4.1 */
#define ME_HOST  0xc6120101u /* 198.18.1.1 */
#define BLD_HOST 0xc6120201u /* builders 198.18.2.1 .. .6 */
#define N_BLD    6
#define DFM_PORT 23901

static struct src_ctl sc;
static struct xevb_ctl_io io;
static struct cf_peer dfm, bld[N_BLD];
static uint32_t cursor;
/* Every address the real DFM ever named as a builder. */
static uint32_t named[1024], n_named;
static uint64_t sent_events, sent_calls;

/* clang-format off: one entry a line (its line packing does not settle) */
#define COUNTERS(X) \
	X(assigns) \
	X(assigned_events) \
	X(requests) \
	X(requested_events) \
	X(answered_events) \
	X(hold_overflow) \
	X(not_held) \
	X(cleared) \
	X(clear_unknown) \
	X(released_restart) \
	X(dfm_restarts) \
	X(reask_unheld) \
	X(unexpected) \
	X(rq_unknown) \
	X(not_dfm) \
	X(reask_unheld_capped) \
	X(max_held)
/* clang-format on */

struct counts {
#define FIELD(f) uint64_t f;
	COUNTERS(FIELD)
#undef FIELD
	uint64_t rx_bad, refused, sent_events, sent_calls;
};

static void counts(struct counts *c)
{
#define COPY(f) c->f = sc.f;
	COUNTERS(COPY)
#undef COPY
	c->rx_bad = io.rx_bad_total;
	c->refused = io.rx_refused_total;
	c->sent_events = sent_events;
	c->sent_calls = sent_calls;
}

static void grew(const struct counts *a, const struct counts *b)
{
#define GREW(f) \
	if (b->f < a->f) \
		CF_FAIL("counter " #f " went down: %llu -> %llu", (unsigned long long)a->f, \
			(unsigned long long)b->f);
	COUNTERS(GREW)
#undef GREW
	if (b->rx_bad < a->rx_bad || b->refused < a->refused)
		CF_FAIL("the endpoint's refusals went down");
}

/* Only the counter at byte offset off of struct counts moved, by one. */
static void only(const struct counts *a, const struct counts *b, size_t off, const char *name)
{
	struct counts want = *a;

	(*(uint64_t *)((char *)&want + off))++;
	if (memcmp(&want, b, sizeof(want)))
		CF_FAIL("a message refused (%s) moved more than its counter", name);
}

static bool was_named(uint32_t addr)
{
	for (uint32_t i = 0; i < n_named; i++)
		if (named[i] == addr)
			return true;
	return false;
}

static void name(uint32_t addr)
{
	if (!was_named(addr) && n_named < 1024)
		named[n_named++] = addr;
}

static void on_send(void *ctx, uint32_t addr, const uint32_t *evs, uint32_t n, bool resend)
{
	(void)ctx;
	(void)evs;
	(void)resend;
	if (!was_named(addr))
		CF_FAIL("fragments sent to %s, which the DFM never named", inet_ntoa((struct in_addr){ addr }));
	if (!n || n > 1024)
		CF_FAIL("an answer of %u events", n);
	sent_events += n;
	sent_calls++;
}

static uint32_t bld_addr(uint32_t k)
{
	return htonl(BLD_HOST + k);
}

/* The DFM's message op (0 ASSIGN, 1 BUILDERS, 3 CLEAR, 4 STATUS, 5 BYE) into m. */
static void make_dfm(uint8_t op, uint8_t a, uint8_t b, uint8_t c, struct xevb_ctl_msg *m)
{
	memset(&m->h, 0, sizeof(m->h));
	switch (op) {
	case 0:
		if (a & 0x80) {
			m->h.type = XEVB_CTL_ROUTE;
			m->h.n_recs = 1 + a % 8;
			m->u.route.first_event = cursor;
			m->u.route.block = (uint16_t)(1 + b % 64);
			m->u.route.run = 1;
			for (uint32_t r = 0; r < m->h.n_recs; r++)
				m->u.route.id[r] = (uint16_t)((c + r) % 8);
			cursor += (uint32_t)m->h.n_recs * m->u.route.block;
			break;
		}
		m->h.type = XEVB_CTL_ASSIGN;
		m->h.n_recs = 1 + a % 3;
		for (uint32_t r = 0; r < m->h.n_recs; r++) {
			uint16_t n = (uint16_t)(1 + b % 64);
			m->u.assign[r] = (struct xevb_ctl_assign){ .first_event = cursor,
								   .count = n,
								   .builder_addr = bld_addr(c % N_BLD),
								   .builder_id = c % N_BLD,
								   .run = 1 };
			cursor += n;
		}
		break;
	case 1:
		m->h.type = XEVB_CTL_BUILDERS;
		for (uint32_t k = 0; k < N_BLD; k++)
			if (a & (1u << k))
				m->u.builders[m->h.n_recs++] = (struct xevb_ctl_bldinfo){
					.addr = bld_addr(k),
					.port = (uint16_t)(XEVB_CTL_BUILDER_PORT + (b & 1)),
					.id = (uint16_t)k
				};
		if (!m->h.n_recs)
			m->u.builders[m->h.n_recs++] = (struct xevb_ctl_bldinfo){ .addr = bld_addr(0),
										  .port = XEVB_CTL_BUILDER_PORT,
										  .id = 0 };
		break;
	case 3:
		m->h.type = XEVB_CTL_CLEAR;
		m->h.n_recs = 1 + a % 3;
		for (uint32_t r = 0; r < m->h.n_recs; r++)
			m->u.clear[r] =
				(struct xevb_ctl_range){ .first_event = cursor - c - r * 64u, .count = 1u + b };
		break;
	case 4:
		m->h.type = XEVB_CTL_STATUS;
		m->h.n_recs = 1;
		m->u.status = (struct xevb_ctl_status){ .credits = 1, .flags = (a & 1) ? XEVB_CTL_ST_PULL : 0 };
		break;
	default:
		m->h.type = XEVB_CTL_BYE;
		break;
	}
}

/* What the real DFM names becomes an address answers may go to. */
static void note_named(const struct xevb_ctl_msg *m)
{
	if (m->h.type == XEVB_CTL_ASSIGN)
		for (uint32_t r = 0; r < m->h.n_recs; r++)
			name(m->u.assign[r].builder_addr);
	if (m->h.type == XEVB_CTL_BUILDERS)
		for (uint32_t r = 0; r < m->h.n_recs; r++)
			name(m->u.builders[r].addr);
}

static void from_dfm(struct xevb_ctl_msg *m)
{
	struct counts before, after;
	uint64_t events = 0;

	if (m->h.type == XEVB_CTL_ASSIGN)
		for (uint32_t r = 0; r < m->h.n_recs; r++)
			events += m->u.assign[r].count;
	if (m->h.type == XEVB_CTL_ROUTE)
		events = (uint64_t)m->h.n_recs * m->u.route.block;
	counts(&before);
	if (!cf_deliver(&io, htonl(ME_HOST), &dfm, m))
		return;
	note_named(m);
	src_ctl_on_msg(&sc, m, &dfm.sa);
	counts(&after);
	if (after.sent_events - before.sent_events > events)
		CF_FAIL("an ASSIGN of %llu events sent %llu", (unsigned long long)events,
			(unsigned long long)(after.sent_events - before.sent_events));
}

static void request(uint8_t a, uint8_t b, uint8_t c)
{
	static struct xevb_ctl_msg m;
	struct cf_peer *p = &bld[a % N_BLD];
	struct counts before, after;
	bool known;
	uint64_t asked = 0;

	memset(&m.h, 0, sizeof(m.h));
	m.h.type = XEVB_CTL_REQUEST;
	m.h.n_recs = 1 + b % 4;
	for (uint32_t r = 0; r < m.h.n_recs; r++) {
		uint16_t n = c == 0xff ? 1024 : (uint16_t)(1 + c * 4);
		m.u.request[r] = (struct xevb_ctl_request){ .first_event = cursor - (b & 0x7f) * 8u + r * 1024u,
							    .count = n,
							    .flags = (b & 0x80) ? XEVB_CTL_RQ_REASK : 0 };
		asked += n;
	}
	counts(&before);
	known = src_ctl_known_builder(&sc, p->sa.sin_addr.s_addr, p->sa.sin_port);
	if (!cf_deliver(&io, htonl(ME_HOST), p, &m))
		return;
	src_ctl_on_msg(&sc, &m, &p->sa);
	counts(&after);
	if (!known) {
		only(&before, &after, offsetof(struct counts, rq_unknown), "not a known builder");
		return;
	}
	if (after.sent_events - before.sent_events > asked ||
	    after.answered_events - before.answered_events != after.sent_events - before.sent_events)
		CF_FAIL("a REQUEST for %llu events: %llu answered, %llu sent", (unsigned long long)asked,
			(unsigned long long)(after.answered_events - before.answered_events),
			(unsigned long long)(after.sent_events - before.sent_events));
	if (after.reask_unheld - before.reask_unheld > SRC_CTL_MAX_UNHELD_PER_REQUEST)
		CF_FAIL("one REQUEST answered %llu re-asks of events not held",
			(unsigned long long)(after.reask_unheld - before.reask_unheld));
}

static void forged(uint8_t a, uint8_t b, uint8_t c)
{
	static struct xevb_ctl_msg m;
	static const uint8_t ops[4] = { 0, 1, 3, 5 };
	struct cf_peer p = dfm;
	struct counts before, after;
	uint32_t saved = cursor;
	bool bye = sc.bye;

	make_dfm(ops[b % 4], c, a, b, &m);
	cursor = saved;
	if (a & 1)
		p.sa.sin_port = htons(DFM_PORT + 98);
	else
		p.sa = cf_addr(0xc6120199u, DFM_PORT);
	counts(&before);
	if (!cf_deliver(&io, htonl(ME_HOST), &p, &m))
		return;
	src_ctl_on_msg(&sc, &m, &p.sa);
	counts(&after);
	only(&before, &after, offsetof(struct counts, not_dfm), "not from the DFM");
	if (sc.bye != bye)
		CF_FAIL("a forged BYE ended the source");
}

static void raw(const uint8_t *d, size_t n, bool as_dfm)
{
	static struct xevb_ctl_msg m;
	const struct cf_peer *p = as_dfm ? &dfm : &bld[0];

	if (!cf_deliver_raw(&io, htonl(ME_HOST), p, d, n, &m))
		return;
	if (as_dfm && m.h.role == XEVB_ROLE_DFM)
		note_named(&m);
	src_ctl_on_msg(&sc, &m, &p->sa);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct xevb_ctl_msg m;
	struct src_ctl_cfg cfg = { .dfm_name = "198.18.4.1:23901", .send = on_send };
	struct counts prev, cur;
	size_t off = 1;
	char msg[256];

	if (size < 1)
		return 0;
	xevb_log_level = XEVB_LOG_ERR; /* the handlers' warnings are the command's, not findings */
	dfm = (struct cf_peer){ .sa = cf_addr(DFM_HOST, DFM_PORT), .role = XEVB_ROLE_DFM, .epoch = 1 };
	for (uint32_t k = 0; k < N_BLD; k++)
		bld[k] = (struct cf_peer){ .sa = cf_addr(BLD_HOST + k, XEVB_CTL_BUILDER_PORT),
					   .role = XEVB_ROLE_BUILDER,
					   .id = (uint16_t)k,
					   .epoch = 50 + k };
	cfg.dfm = dfm.sa;
	cfg.hold = 64u << ((data[0] >> 1) & 7);
	if (xevb_ctl_init(&io, XEVB_ROLE_SOURCE, 0) || src_ctl_init(&sc, &cfg))
		CF_FAIL("init");
	if (data[0] & 1) {
		io.auth = malloc(sizeof(*io.auth));
		if (!io.auth)
			CF_FAIL("out of memory");
		xevb_ctl_auth_init(io.auth, cf_key);
	}
	cursor = 0xffffff00u;
	n_named = 0;
	sent_events = sent_calls = 0;
	counts(&prev);
	while (off + 4 <= size) {
		uint8_t op = data[off] % 10, a = data[off + 1], b = data[off + 2], c = data[off + 3];
		size_t used = 0;

		switch (op) {
		case 0:
		case 1:
		case 3:
		case 4:
		case 5:
			make_dfm(op, a, b, c, &m);
			from_dfm(&m);
			break;
		case 2:
			request(a, b, c);
			break;
		case 6:
			dfm.epoch++;
			dfm.seq = 0;
			break;
		case 7:
			forged(a, b, c);
			break;
		case 8:
			used = a < size - off - 4 ? a : size - off - 4;
			raw(data + off + 4, used, b & 1);
			break;
		case 9:
			cursor += (uint32_t)a << (b % 24);
			break;
		}
		off += 4 + used;
		if (!src_ctl_check(&sc, msg, sizeof(msg)))
			CF_FAIL("the hold table: %s", msg);
		counts(&cur);
		grew(&prev, &cur);
		prev = cur;
	}
	src_ctl_free(&sc);
	xevb_ctl_close(&io);
	return 0;
}

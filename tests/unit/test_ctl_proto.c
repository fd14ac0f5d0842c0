// SPDX-License-Identifier: GPL-2.0-only
/* Control-protocol codec: round trips, and every rule of the strict decoder. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include <xevb/bytes.h>
#include "ctl/ctl_proto.h"
#include "ctl/flowctl.h"

TestSuite(ctl_proto, .timeout = 10);

static struct xevb_ctl_msg hdr(uint8_t type, uint8_t role, uint16_t n)
{
	struct xevb_ctl_msg m;
	memset(&m, 0, sizeof(m));
	m.h = (struct xevb_ctl_hdr){
		.type = type, .role = role, .sender_id = 7, .epoch = 0xabcdef01, .seq = 42, .n_recs = n
	};
	return m;
}

Test(ctl_proto, status_roundtrip)
{
	struct xevb_ctl_msg m = hdr(XEVB_CTL_STATUS, XEVB_ROLE_SOURCE, 1), d;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	m.u.status = (struct xevb_ctl_status){ .credits = 64,
					       .flags = XEVB_CTL_ST_BUSY,
					       .done_total = 0x123456789aull,
					       .peer_epoch = 5,
					       .load = 77,
					       .first_id = 4,
					       .n_ids = 3 };
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, XEVB_CTL_HLEN + XEVB_CTL_STATUS_RLEN));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_OK));
	cr_assert(eq(u8, d.h.type, XEVB_CTL_STATUS));
	cr_assert(eq(u16, d.h.sender_id, 7));
	cr_assert(eq(u32, d.h.epoch, 0xabcdef01));
	cr_assert(eq(u32, d.h.seq, 42));
	cr_assert(eq(u32, d.u.status.credits, 64));
	cr_assert(eq(u64, d.u.status.done_total, 0x123456789aull));
	cr_assert(eq(u32, d.u.status.load, 77));
	cr_assert(eq(u16, d.u.status.first_id, 4));
	cr_assert(eq(u16, d.u.status.n_ids, 3));
	/* Wire layout: magic, version, type, role at fixed offsets, big-endian. */
	cr_assert(eq(u16, xevb_ld16(buf), 0x5843));
	cr_assert(eq(u8, buf[2], 1));
	cr_assert(eq(u8, buf[3], XEVB_CTL_STATUS));
	cr_assert(eq(u8, buf[4], XEVB_ROLE_SOURCE));
	cr_assert(eq(u32, xevb_ld32(buf + XEVB_CTL_HLEN), 64));
}

Test(ctl_proto, batched_records_roundtrip)
{
	struct xevb_ctl_msg m, d;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	uint32_t n = xevb_ctl_max_recs(XEVB_CTL_ASSIGN);
	size_t len;

	/* Room for the 24-byte authentication trailer, keyed or not. */
	cr_assert(eq(u32, n, (XEVB_CTL_MAX_LEN - 24 - XEVB_CTL_HLEN) / 20));
	m = hdr(XEVB_CTL_ASSIGN, XEVB_ROLE_DFM, (uint16_t)n);
	for (uint32_t i = 0; i < n; i++)
		m.u.assign[i] = (struct xevb_ctl_assign){ .first_event = 0xfffffff0u + i * 25,
							  .count = 25,
							  .flags = XEVB_CTL_AS_PULL,
							  .builder_addr = 0x010212c6,
							  .builder_id = (uint16_t)i,
							  .run = 9 };
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(le(sz, len, XEVB_CTL_MAX_LEN));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_OK));
	cr_assert(eq(u16, d.h.n_recs, n));
	for (uint32_t i = 0; i < n; i++) {
		cr_assert(eq(u32, d.u.assign[i].first_event, 0xfffffff0u + i * 25));
		cr_assert(eq(u16, d.u.assign[i].builder_id, i));
		cr_assert(eq(u32, d.u.assign[i].builder_addr, 0x010212c6));
	}
	/* A version-1 peer's full datagram still decodes; one record more
	   than a datagram holds does not encode. */
	m.h.n_recs = (uint16_t)((XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN) / 20);
	for (uint32_t i = n; i < m.h.n_recs; i++)
		m.u.assign[i] = m.u.assign[0];
	cr_assert(gt(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.h.n_recs++;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));

	m = hdr(XEVB_CTL_DONE, XEVB_ROLE_BUILDER, 3);
	m.u.done[0] = (struct xevb_ctl_done){ 1, 0, XEVB_DONE_COMPLETE };
	m.u.done[1] = (struct xevb_ctl_done){ 2, 2, XEVB_DONE_INCOMPLETE };
	m.u.done[2] = (struct xevb_ctl_done){ 3, 4, XEVB_DONE_NO_DATA };
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_OK));
	cr_assert(eq(u8, d.u.done[1].status, XEVB_DONE_INCOMPLETE));
	cr_assert(eq(u16, d.u.done[2].n_missing, 4));

	m = hdr(XEVB_CTL_BYE, XEVB_ROLE_SINK, 0);
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, XEVB_CTL_HLEN));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_OK));
}

/* A valid REQUEST to break one rule at a time. */
static size_t good_request(uint8_t *buf)
{
	struct xevb_ctl_msg m = hdr(XEVB_CTL_REQUEST, XEVB_ROLE_BUILDER, 2);
	m.u.request[0] = (struct xevb_ctl_request){ 100, 25, 0 };
	m.u.request[1] = (struct xevb_ctl_request){ 125, 1, XEVB_CTL_RQ_REASK };
	return xevb_ctl_encode(&m, buf, XEVB_CTL_MAX_LEN);
}

Test(ctl_proto, every_rule_refuses)
{
	uint8_t buf[XEVB_CTL_MAX_LEN + 8];
	struct xevb_ctl_msg d;
	size_t len = good_request(buf);

	cr_assert(eq(sz, len, 36));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_OK));
	cr_assert(eq(int, xevb_ctl_decode(buf, 19, &d), XEVB_CTL_E_SHORT));
	cr_assert(eq(int, xevb_ctl_decode(buf, len - 1, &d), XEVB_CTL_E_LENGTH));
	buf[len] = 0;
	cr_assert(eq(int, xevb_ctl_decode(buf, len + 1, &d), XEVB_CTL_E_LENGTH));
#define BREAK(off, val, want) \
	do { \
		good_request(buf); \
		buf[off] = (val); \
		cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), want), "byte %d = %d", off, val); \
	} while (0)
	BREAK(0, 0x58 ^ 1, XEVB_CTL_E_MAGIC);
	BREAK(2, 2, XEVB_CTL_E_VERSION);
	BREAK(3, 0, XEVB_CTL_E_TYPE);
	BREAK(3, XEVB_CTL__TYPES, XEVB_CTL_E_TYPE);
	BREAK(4, XEVB_ROLE_DFM, XEVB_CTL_E_ROLE); /* only builders request */
	BREAK(4, 0, XEVB_CTL_E_ROLE);
	BREAK(4, 9, XEVB_CTL_E_ROLE);
	BREAK(5, 1, XEVB_CTL_E_RESERVED);
	BREAK(19, 1, XEVB_CTL_E_RESERVED);
	BREAK(17, 3, XEVB_CTL_E_LENGTH);       /* n_recs says 3, 2 present */
	BREAK(17, 0, XEVB_CTL_E_COUNT);        /* no record */
	BREAK(20 + 4, 0x10, XEVB_CTL_E_FIELD); /* count 4096+25 > 1024 */
	BREAK(20 + 6, 0x02, XEVB_CTL_E_FIELD); /* unknown flag */
	BREAK(20 + 7, 1, XEVB_CTL_E_FIELD);    /* reserved byte */
	good_request(buf);
	memset(buf + 8, 0, 4);
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_E_EPOCH));
	good_request(buf);
	xevb_st16(buf + 20 + 4, 0); /* count 0 */
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_E_FIELD));
#undef BREAK
}

Test(ctl_proto, record_rules)
{
	struct xevb_ctl_msg m, d;
	uint8_t buf[XEVB_CTL_MAX_LEN];

	/* STATUS: exactly one record; source ids only from sources and in range. */
	m = hdr(XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 1);
	m.u.status.first_id = 1;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m = hdr(XEVB_CTL_STATUS, XEVB_ROLE_SOURCE, 1);
	m.u.status.first_id = 4090;
	m.u.status.n_ids = 7;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.status.n_ids = 6;
	cr_assert(ne(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.status.flags = 0x80;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	/* LISTEN: a builder's word only. */
	m.u.status.flags = XEVB_CTL_ST_LISTEN;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m = hdr(XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 1);
	m.u.status.flags = XEVB_CTL_ST_LISTEN | XEVB_CTL_ST_BUSY;
	cr_assert(ne(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	/* DONE: complete means nothing missing, and the other way round. */
	m = hdr(XEVB_CTL_DONE, XEVB_ROLE_BUILDER, 1);
	m.u.done[0] = (struct xevb_ctl_done){ 5, 1, XEVB_DONE_COMPLETE };
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.done[0] = (struct xevb_ctl_done){ 5, 0, XEVB_DONE_INCOMPLETE };
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.done[0] = (struct xevb_ctl_done){ 5, 1, XEVB_DONE__COUNT };
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	/* ASSIGN: a builder address, count 1..1024. */
	m = hdr(XEVB_CTL_ASSIGN, XEVB_ROLE_DFM, 1);
	m.u.assign[0] = (struct xevb_ctl_assign){ .first_event = 1, .count = 1, .builder_addr = 0 };
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.assign[0].builder_addr = 1;
	m.u.assign[0].count = 1025;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	/* CLEAR: 1..65536 events per range. */
	m = hdr(XEVB_CTL_CLEAR, XEVB_ROLE_DFM, 1);
	m.u.clear[0] = (struct xevb_ctl_range){ 0xffffffffu, 65536 };
	cr_assert(ne(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.clear[0].count = 65537;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	/* SOURCES: ids within 0..4095, a port. */
	m = hdr(XEVB_CTL_SOURCES, XEVB_ROLE_DFM, 1);
	m.u.src[0] = (struct xevb_ctl_srcinfo){ .addr = 1, .port = 0, .first_id = 0, .n_ids = 1 };
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.src[0].port = 23903;
	cr_assert(ne(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	cr_assert(eq(int, xevb_ctl_decode(buf, XEVB_CTL_HLEN + 12, &d), XEVB_CTL_OK));
	/* SOURCES from a builder is refused. */
	m.h.role = XEVB_ROLE_BUILDER;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	cr_assert(eq(str, (char *)xevb_ctl_err_name(XEVB_CTL_E_FIELD), "bad_field"));
}

Test(ctl_proto, received_roundtrip_and_rules)
{
	struct xevb_ctl_msg m = hdr(XEVB_CTL_RECEIVED, XEVB_ROLE_SINK, 2), d;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	cr_assert(eq(u32, xevb_ctl_max_recs(XEVB_CTL_RECEIVED), 89)); /* room for the MAC trailer */
	m.u.received[0] = (struct xevb_ctl_received){ 0x010212c6, 0x1122334455ull };
	m.u.received[1] = (struct xevb_ctl_received){ 0x020212c6, 0 };
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, XEVB_CTL_HLEN + 2 * 16));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_OK));
	cr_assert(eq(u32, d.u.received[0].builder_addr, 0x010212c6));
	cr_assert(eq(u64, d.u.received[0].events, 0x1122334455ull));
	cr_assert(eq(u32, d.u.received[1].builder_addr, 0x020212c6));
	cr_assert(eq(u8, buf[3], 8));
	cr_assert(eq(u32, xevb_ld32(buf + XEVB_CTL_HLEN + 12), 0x22334455));
	cr_assert(eq(str, (char *)xevb_ctl_type_name(XEVB_CTL_RECEIVED), "RECEIVED"));
	/* The reserved word must be 0, the address not. */
	buf[XEVB_CTL_HLEN + 7] = 1;
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_E_FIELD));
	m.u.received[1].builder_addr = 0;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	/* Only farm nodes report what they received. */
	m.u.received[1].builder_addr = 1;
	m.h.role = XEVB_ROLE_BUILDER;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.h.role = XEVB_ROLE_SINK;
	m.h.n_recs = 91;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
}

/* ROUTE: a 12-byte prefix, then one builder id (u16) per block; the fixture pins the layout. */
Test(ctl_proto, route_roundtrip_and_layout)
{
	struct xevb_ctl_msg m = hdr(XEVB_CTL_ROUTE, XEVB_ROLE_DFM, 3), d;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	static const uint8_t fixture[] = { 0x58, 0x43, 1,  11, 1, 0, 0,    7,    0xab, 0xcd, 0xef, 0x01, 0,
					   0,    0,    42, 0,  3, 0, 0,    0x00, 0x01, 0x86, 0xa0, 0,    25,
					   0,    0,    0,  0,  0, 9, 0x00, 0x05, 0x01, 0x02, 0xff, 0xff };
	size_t len;

	cr_assert(eq(u32, xevb_ctl_max_recs(XEVB_CTL_ROUTE), 708)); /* room for the MAC trailer */
	cr_assert(eq(u32, XEVB_CTL_ROUTE_MAX_RECS, 720));
	m.u.route.first_event = 100000;
	m.u.route.block = 25;
	m.u.route.run = 9;
	m.u.route.id[0] = 5;
	m.u.route.id[1] = 0x102;
	m.u.route.id[2] = 0xffff;
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, sizeof(fixture)));
	cr_assert(eq(int, memcmp(buf, fixture, len), 0));
	cr_assert(eq(int, xevb_ctl_decode(fixture, sizeof(fixture), &d), XEVB_CTL_OK));
	cr_assert(eq(u32, d.u.route.first_event, 100000));
	cr_assert(eq(u16, d.u.route.block, 25));
	cr_assert(eq(u32, d.u.route.run, 9));
	cr_assert(eq(u16, d.h.n_recs, 3));
	cr_assert(eq(u16, d.u.route.id[1], 0x102));
	cr_assert(eq(u16, d.u.route.id[2], 0xffff));
	cr_assert(eq(str, (char *)xevb_ctl_type_name(XEVB_CTL_ROUTE), "ROUTE"));
	/* A full table, sealed size: 708 blocks. */
	m.h.n_recs = 708;
	for (uint32_t i = 0; i < 708; i++)
		m.u.route.id[i] = (uint16_t)(i * 7);
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, XEVB_CTL_HLEN + 12 + 2 * 708));
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &d), XEVB_CTL_OK));
	cr_assert(eq(u16, d.u.route.id[707], (uint16_t)(707 * 7)));
}

/* Hostile ROUTEs: each refused whole, with its reason. */
Test(ctl_proto, route_rules)
{
	struct xevb_ctl_msg m = hdr(XEVB_CTL_ROUTE, XEVB_ROLE_DFM, 2), d;
	uint8_t buf[XEVB_CTL_MAX_LEN + 8], bad[XEVB_CTL_MAX_LEN + 8];
	size_t len;

	m.u.route = (struct xevb_ctl_route){ .first_event = 1000, .block = 25, .run = 1, .id = { 1, 2 } };
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(eq(sz, len, XEVB_CTL_HLEN + 12 + 4));
	/* Short: the prefix cut, a record cut, the header alone. */
	cr_assert(eq(int, xevb_ctl_decode(buf, XEVB_CTL_HLEN + 6, &d), XEVB_CTL_E_LENGTH));
	cr_assert(eq(int, xevb_ctl_decode(buf, len - 1, &d), XEVB_CTL_E_LENGTH));
	cr_assert(eq(int, xevb_ctl_decode(buf, XEVB_CTL_HLEN, &d), XEVB_CTL_E_LENGTH));
	/* No block, or more than a datagram holds. */
	memcpy(bad, buf, len);
	xevb_st16(bad + 16, 0);
	cr_assert(eq(int, xevb_ctl_decode(bad, XEVB_CTL_HLEN + 12, &d), XEVB_CTL_E_COUNT));
	memset(bad, 0, sizeof(bad));
	memcpy(bad, buf, XEVB_CTL_HLEN + 12);
	xevb_st16(bad + 16, 721);
	cr_assert(eq(int, xevb_ctl_decode(bad, XEVB_CTL_HLEN + 12 + 2 * 721, &d), XEVB_CTL_E_COUNT));
	xevb_st16(bad + 16, 720); /* the decoder's bound: an unsealed full datagram */
	cr_assert(eq(int, xevb_ctl_decode(bad, XEVB_CTL_HLEN + 12 + 2 * 720, &d), XEVB_CTL_OK));
	/* Block 0 or over 1024, the reserved word, a table past the last event id. */
	memcpy(bad, buf, len);
	xevb_st16(bad + XEVB_CTL_HLEN + 4, 0);
	cr_assert(eq(int, xevb_ctl_decode(bad, len, &d), XEVB_CTL_E_FIELD));
	xevb_st16(bad + XEVB_CTL_HLEN + 4, 1025);
	cr_assert(eq(int, xevb_ctl_decode(bad, len, &d), XEVB_CTL_E_FIELD));
	memcpy(bad, buf, len);
	bad[XEVB_CTL_HLEN + 7] = 1;
	cr_assert(eq(int, xevb_ctl_decode(bad, len, &d), XEVB_CTL_E_FIELD));
	m.u.route.first_event = 0xffffffffu - 30; /* block 2 would wrap */
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	m.u.route.first_event = 0xffffffffu - 49; /* ends on the last id: fine */
	cr_assert(ne(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
	/* Only the DFM routes. */
	m.h.role = XEVB_ROLE_BUILDER;
	cr_assert(eq(sz, xevb_ctl_encode(&m, buf, sizeof(buf)), 0));
}

Test(flowctl, busy_hysteresis_defaults)
{
	struct xevb_busy b;
	xevb_busy_init(&b, 10, XEVB_BUSY_HIGH_DEFAULT, XEVB_BUSY_LOW_DEFAULT);
	cr_assert(eq(u32, b.high, 12));
	cr_assert(eq(u32, b.low, 2));
	cr_assert(not(xevb_busy_update(&b, 12))); /* at the mark: not yet */
	cr_assert(xevb_busy_update(&b, 13));
	cr_assert(b.busy);
	/* Between the marks nothing changes, either way. */
	cr_assert(not(xevb_busy_update(&b, 5)));
	cr_assert(b.busy);
	cr_assert(not(xevb_busy_update(&b, 2)));
	cr_assert(xevb_busy_update(&b, 1));
	cr_assert(not(b.busy));
	cr_assert(not(xevb_busy_update(&b, 12)));
	cr_assert(eq(u64, b.n_busy, 1));
	cr_assert(eq(u64, b.n_clear, 1));
}

Test(flowctl, wrr_follows_weights)
{
	int64_t cur[3] = { 0 };
	uint32_t w[3] = { 1, 2, 5 }, got[3] = { 0 };
	for (int i = 0; i < 800; i++)
		got[xevb_wrr_pick(cur, w, 3)]++;
	cr_assert(eq(u32, got[0], 100));
	cr_assert(eq(u32, got[1], 200));
	cr_assert(eq(u32, got[2], 500));
	w[2] = 0; /* ineligible now */
	for (int i = 0; i < 30; i++)
		cr_assert(ne(int, xevb_wrr_pick(cur, w, 3), 2));
	w[0] = w[1] = 0;
	cr_assert(eq(int, xevb_wrr_pick(cur, w, 3), -1));
}

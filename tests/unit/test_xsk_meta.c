// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb_xsk_meta_pi: the XDP meta in front of an AF_XDP frame is taken only
 * when it is bound to that frame, and then gives exactly the pkt_info the
 * parser gives; every mismatch falls back to the parser (-1); nothing is
 * read outside [data - 16, data + len) (guard pages on both sides).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "wire/mep_write.h"
#include "rx/xsk_meta.h"
#include "../common/pkt_info_assert.h"
#include "../common/vectors.h"

#define COOKIE 0x9e3779b9u

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

static uint8_t *pages; /* guard | 2 pages | guard */
static size_t pg;

static void setup(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(pages != MAP_FAILED);
	cr_assert(eq(int, mprotect(pages, pg, PROT_NONE), 0));
	cr_assert(eq(int, mprotect(pages + 3 * pg, pg, PROT_NONE), 0));
}

static void teardown(void)
{
	munmap(pages, 4 * pg);
}

TestSuite(xsk_meta, .init = setup, .fini = teardown, .timeout = 30);

/* What the XDP program writes for the MEP the parser sees in frame. */
static void meta_of(const uint8_t *frame, size_t len, uint32_t cookie, struct xevb_xdp_meta *m)
{
	struct xevb_pkt_info pi = { 0 };

	cr_assert(eq(int, xevb_classify(frame, frame + len, (uint32_t)len, &cfg, &pi, NULL), XEVB_RES_MEP));
	cr_assert(eq(u8, pi.consec, 1));
	memset(m, 0, sizeof(*m));
	m->check = cookie ^ pi.packet_seq;
	m->first_event_id = pi.first_event_id;
	m->mep_off = pi.mep_off;
	m->mep_len = pi.mep_len;
	m->n_frags = pi.n_frags;
	m->flags = XEVB_XDP_META_F_CONSEC | (pi.is_udp ? XEVB_XDP_META_F_UDP : 0);
}

static size_t make_frame(uint8_t *buf, size_t cap, uint32_t n, uint16_t size, int udp, int vlan)
{
	struct xevb_mep_params p = {
		.saddr = htonl(0xc6120107u),
		.daddr = htonl(0xc6120201u),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.udp_dport = udp ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = 77,
		.flags = XEVB_MEP_F_RESEND,
		.run_number = 0x01020304,
		.packet_seq = 0xabcdef01u,
		.first_event_id = 0xfffffff0u,
		.n_frags = n,
		.frag_size = size,
	};
	ssize_t w = xevb_write_frame(buf, cap, &p);

	cr_assert(gt(sz, (size_t)(w < 0 ? 0 : w), 0));
	if (vlan)
		return vectors_tag_vlan(buf, (size_t)w, 7);
	return (size_t)w;
}

/* The frame right after its meta, the meta at the start of the readable area. */
static uint8_t *place_front(const uint8_t *frame, size_t len, const struct xevb_xdp_meta *m)
{
	uint8_t *data = pages + pg + XEVB_XDP_META_LEN;

	memcpy(data - XEVB_XDP_META_LEN, m, sizeof(*m));
	memcpy(data, frame, len);
	return data;
}

/* The frame ending at the guard page after it. */
static uint8_t *place_back(const uint8_t *frame, size_t len, const struct xevb_xdp_meta *m)
{
	uint8_t *data = pages + 3 * pg - len;

	memcpy(data - XEVB_XDP_META_LEN, m, sizeof(*m));
	memcpy(data, frame, len);
	return data;
}

static void assert_same_pi(const uint8_t *frame, size_t len, const struct xevb_pkt_info *got, const char *what)
{
	struct xevb_pkt_info want = { 0 };

	cr_assert(eq(int, xevb_classify(frame, frame + len, (uint32_t)len, &cfg, &want, NULL), XEVB_RES_MEP));
	pi_assert_same_mep(got, &want, what);
	cr_assert(eq(u8, got->consec, 1), "%s", what);
}

Test(xsk_meta, good_meta_gives_the_parsers_pi)
{
	static uint8_t f[4096];
	const int shapes[][4] = {
		/* n, size, udp, vlan */
		{ 25, 32, 0, 0 }, { 25, 32, 1, 0 },  { 1, 0, 0, 0 },
		{ 3, 5, 1, 1 },   { 100, 20, 0, 1 }, { 1, 1400, 1, 0 },
	};

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		size_t len = make_frame(f, sizeof(f), (uint32_t)shapes[k][0], (uint16_t)shapes[k][1], shapes[k][2],
					shapes[k][3]);
		struct xevb_xdp_meta m;
		struct xevb_pkt_info pi;
		char what[64];

		snprintf(what, sizeof(what), "shape %zu (%d x %d B, udp %d, vlan %d)", k, shapes[k][0],
			 shapes[k][1], shapes[k][2], shapes[k][3]);
		meta_of(f, len, COOKIE, &m);
		memset(&pi, 0xa5, sizeof(pi));
		cr_assert(eq(int, xevb_xsk_meta_pi(place_front(f, len, &m), (uint32_t)len, COOKIE, &pi),
			     XEVB_RES_MEP),
			  "%s", what);
		assert_same_pi(f, len, &pi, what);
		memset(&pi, 0xa5, sizeof(pi));
		cr_assert(eq(int, xevb_xsk_meta_pi(place_back(f, len, &m), (uint32_t)len, COOKIE, &pi),
			     XEVB_RES_MEP),
			  "%s at the end", what);
		assert_same_pi(f, len, &pi, what);
		/* Ethernet padding after the datagram: still the same MEP. */
		memset(f + len, 0, 16);
		cr_assert(eq(int, xevb_xsk_meta_pi(place_back(f, len + 16, &m), (uint32_t)len + 16, COOKIE, &pi),
			     XEVB_RES_MEP),
			  "%s padded", what);
	}
}

/* One mutation of meta or frame that must make the reader fall back. */
static void assert_rejected(const uint8_t *frame, size_t len, const struct xevb_xdp_meta *m, uint32_t cookie,
			    const char *what)
{
	struct xevb_pkt_info pi;

	cr_assert(eq(int, xevb_xsk_meta_pi(place_front(frame, len, m), (uint32_t)len, cookie, &pi), -1),
		  "%s: accepted", what);
	cr_assert(eq(int, xevb_xsk_meta_pi(place_back(frame, len, m), (uint32_t)len, cookie, &pi), -1),
		  "%s: accepted at the end", what);
}

/* A vouched MEP's meta carries the shed run (shed.h): it reaches pi, nothing else changes. */
Test(xsk_meta, vouched_meta_carries_the_shed_run)
{
	static uint8_t f[4096];
	struct xevb_xdp_meta m;
	struct xevb_pkt_info pi;
	size_t len = make_frame(f, sizeof(f), 25, 32, 0, 0);

	meta_of(f, len, COOKIE, &m);
	cr_assert(eq(int, xevb_xsk_meta_pi(place_front(f, len, &m), (uint32_t)len, COOKIE, &pi), XEVB_RES_MEP));
	cr_assert(eq(u8, pi.shed_run, 0));
	m.flags |= XEVB_XDP_META_F_VOUCHED;
	m.reserved = 78;
	cr_assert(eq(int, xevb_xsk_meta_pi(place_back(f, len, &m), (uint32_t)len, COOKIE, &pi), XEVB_RES_MEP));
	assert_same_pi(f, len, &pi, "vouched");
	cr_assert(eq(u8, pi.shed_run, 78));
}

/* The good meta m with one field edited (x): the frame f is rejected, for the reason why. */
#define REJECTED_EDITED(edit, why) \
	do { \
		x = m; \
		edit; \
		assert_rejected(f, len, &x, COOKIE, why); \
	} while (0)

Test(xsk_meta, mismatches_fall_back)
{
	static uint8_t f[4096], g[4096];
	struct xevb_xdp_meta m, x;
	size_t len = make_frame(f, sizeof(f), 25, 32, 0, 0), ulen;
	uint32_t mep_off;

	meta_of(f, len, COOKIE, &m);
	mep_off = m.mep_off;

	assert_rejected(f, len, &m, COOKIE ^ 1, "wrong cookie");
	assert_rejected(f, len, &m, 0, "meta off (cookie 0)");
	REJECTED_EDITED(x.check = 0, "zeroed check word (cleared chunk)");
	REJECTED_EDITED(x.flags = XEVB_XDP_META_F_UDP, "consec flag missing");
	REJECTED_EDITED(x.flags |= 0x80, "unknown flag");
	REJECTED_EDITED(x.reserved = 1, "reserved byte set without the vouched flag");
	REJECTED_EDITED(x.flags |= XEVB_XDP_META_F_VOUCHED, "vouched flag without a run");
	REJECTED_EDITED(x.n_frags = 24, "n_frags disagrees with the header");
	REJECTED_EDITED(x.n_frags = 0, "n_frags 0");
	REJECTED_EDITED(x.first_event_id++, "first_event_id disagrees with the first record");
	REJECTED_EDITED(x.mep_off += 4, "mep_off moved");
	REJECTED_EDITED(x.mep_off = 300, "mep_off beyond 256");
	REJECTED_EDITED(x.mep_off = 10, "mep_off inside the headers");
	REJECTED_EDITED(x.mep_len += 4, "mep_len past the frame");
	REJECTED_EDITED(x.mep_len -= 4, "mep_len short of the IP length");
	REJECTED_EDITED(x.mep_len = 0xffff, "mep_len 65535");
	REJECTED_EDITED(x.flags |= XEVB_XDP_META_F_UDP, "UDP flag on a raw frame");
	assert_rejected(f, len - 1, &m, COOKIE, "frame shorter than the MEP");
	assert_rejected(f, 40, &m, COOKIE, "frame cut to 40 bytes");

	/* The frame changed under a meta that was right for it before. */
	memcpy(g, f, len);
	g[mep_off] ^= 0xff;
	assert_rejected(g, len, &m, COOKIE, "bad MEP magic");
	memcpy(g, f, len);
	g[mep_off + 2] = 2;
	assert_rejected(g, len, &m, COOKIE, "bad MEP version");
	memcpy(g, f, len);
	g[mep_off + 15] ^= 1; /* packet_seq: the check word no longer matches */
	assert_rejected(g, len, &m, COOKIE, "another packet_seq (stale meta of an earlier frame)");
#undef REJECTED_EDITED
	memcpy(g, f, len);
	g[mep_off + 7] = 24; /* n_frags in the header */
	assert_rejected(g, len, &m, COOKIE, "header n_frags disagrees");
	memcpy(g, f, len);
	g[12] = 0x86;
	g[13] = 0xdd;
	assert_rejected(g, len, &m, COOKIE, "not IPv4");
	memcpy(g, f, len);
	g[14] = 0x46; /* IHL 24 */
	assert_rejected(g, len, &m, COOKIE, "IHL disagrees with mep_off");
	memcpy(g, f, len);
	g[16] ^= 1; /* IP total length */
	assert_rejected(g, len, &m, COOKIE, "IP total length disagrees");
	memcpy(g, f, len);
	g[20] |= 0x20; /* MF */
	assert_rejected(g, len, &m, COOKIE, "IP fragment");
	memcpy(g, f, len);
	g[23] = XEVB_IPPROTO_UDP;
	assert_rejected(g, len, &m, COOKIE, "raw meta on a UDP datagram");

	/* UDP: the UDP length must agree too. */
	ulen = make_frame(f, sizeof(f), 25, 32, 1, 0);
	meta_of(f, ulen, COOKIE, &m);
	memcpy(g, f, ulen);
	g[m.mep_off - 8 + 5] ^= 4;
	assert_rejected(g, ulen, &m, COOKIE, "UDP length disagrees");
	x = m;
	x.flags &= (uint8_t)~XEVB_XDP_META_F_UDP;
	assert_rejected(f, ulen, &x, COOKIE, "raw flag on a UDP frame");
}

/* splitmix64 */
static uint64_t rng = 0x3e7a5eedull;
static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Random bytes in meta and frame, lengths down to 0, at both guard pages:
 * never a fault, and whatever is accepted carries a MEP header that checks
 * out, inside the frame, the meta's cookie and first record.
 */
Test(xsk_meta, random_bytes_never_read_outside)
{
	static uint8_t f[4096];
	size_t base = make_frame(f, sizeof(f), 25, 32, (int)(rnd() & 1), 0);
	struct xevb_xdp_meta good, m;
	unsigned accepted = 0;

	meta_of(f, base, COOKIE, &good);
	for (unsigned it = 0; it < 200000; it++) {
		static uint8_t g[4096];
		uint32_t len = (uint32_t)(rnd() % (base + 8));
		struct xevb_pkt_info pi;
		uint8_t *data;
		int res;

		memcpy(g, f, sizeof(g));
		m = good;
		for (unsigned k = rnd() % 4; k; k--)
			((uint8_t *)&m)[rnd() % sizeof(m)] = (uint8_t)rnd();
		for (unsigned k = rnd() % 4; k; k--)
			g[rnd() % (base + 8)] = (uint8_t)rnd();
		if (rnd() & 1)
			len = (uint32_t)base;
		data = (it & 1) ? place_front(g, len, &m) : place_back(g, len, &m);
		res = xevb_xsk_meta_pi(data, len, COOKIE, &pi);
		if (res != XEVB_RES_MEP) {
			cr_assert(eq(int, res, -1));
			continue;
		}
		accepted++;
		cr_assert(le(u32, (uint32_t)pi.mep_off + pi.mep_len, len));
		cr_assert(eq(u32, m.check ^ pi.packet_seq, COOKIE));
		cr_assert(eq(u32, xevb_ld32(data + pi.mep_off + XEVB_MEP_HLEN), pi.first_event_id));
		cr_assert(ge(u32, pi.mep_len, XEVB_MEP_HLEN + XEVB_REC_HLEN * (uint32_t)pi.n_frags));
	}
	printf("xsk_meta: %u of 200000 mutated frames accepted\n", accepted);
	cr_assert(gt(u32, accepted, 1000));
}

/* The clear leaves a chunk whose next frame has no meta of its own rejected. */
Test(xsk_meta, cleared_meta_is_never_taken_again)
{
	static uint8_t f[4096];
	size_t len = make_frame(f, sizeof(f), 25, 32, 0, 0);
	struct xevb_xdp_meta m;
	struct xevb_pkt_info pi;
	uint8_t *data;

	meta_of(f, len, COOKIE, &m);
	data = place_front(f, len, &m);
	cr_assert(eq(int, xevb_xsk_meta_pi(data, (uint32_t)len, COOKIE, &pi), XEVB_RES_MEP));
	xevb_xsk_meta_clear(data);
	/* The same bytes arrive again (a resend) without a meta being written. */
	cr_assert(eq(int, xevb_xsk_meta_pi(data, (uint32_t)len, COOKIE, &pi), -1));
	/* Only the check word went: the rest of the headroom is as it was. */
	cr_assert(eq(int, memcmp(data - 12, (const uint8_t *)&m + 4, 12), 0));
}

/*
 * A segment (wire format 1.1) never gets a meta: one bound to its frame
 * all the same (a one-record frame made a segment after its meta was
 * written, every other check passing) is refused, and the parser decides.
 */
Test(xsk_meta, segment_frames_are_parsed)
{
	static uint8_t frame[2048];
	struct xevb_xdp_meta m;
	struct xevb_pkt_info pi = { 0 };
	size_t len = make_frame(frame, sizeof(frame), 1, 400, 0, 0);
	uint8_t *data, *mep;

	meta_of(frame, len, COOKIE, &m);
	data = place_front(frame, len, &m);
	cr_assert(eq(int, xevb_xsk_meta_pi(data, (uint32_t)len, COOKIE, &pi), XEVB_RES_MEP));
	mep = data + m.mep_off;
	mep[3] |= XEVB_MEP_F_SEGMENT; /* the last (and only) segment of a 400-byte fragment */
	cr_assert(eq(int, xevb_xsk_meta_pi(data, (uint32_t)len, COOKIE, &pi), -1));
	cr_assert(eq(int, xevb_classify(data, data + len, (uint32_t)len, &cfg, &pi, NULL), XEVB_RES_SEGMENT));
	cr_assert(eq(u8, pi.seg_last, 1));
	cr_assert(eq(u16, pi.seg_bytes, 400));
}

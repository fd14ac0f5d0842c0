// SPDX-License-Identifier: GPL-2.0-only
/*
 * The user-space MEP digest reader (xevb/mep_digest.h) against the parser:
 * on random valid MEPs with the digest the XDP program would append, the
 * same fragments; on digests corrupted field by field, a fallback to the
 * parser every time; on random corruption anywhere, never a crash and never
 * an offset outside the frame. (tests/bpf/test_xdp_digest.c checks that the
 * program writes what this reader reads.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/mep_digest.h>
#include <xevb/mep_write.h>

#define N_RANDOM  20000
#define N_FLIPS   200000
#define SEED      0xd16e5700ull

TestSuite(digest, .timeout = 60);

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
	.digest = 1,
};

static uint64_t rng = SEED;
static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A random valid MEP frame of n records, raw or UDP, sometimes VLAN-tagged. */
static size_t random_frame(uint8_t *buf, size_t cap, uint32_t n)
{
	static uint32_t ids[XEVB_DIGEST_MAX_FRAGS];
	static uint16_t lens[XEVB_DIGEST_MAX_FRAGS];
	struct xevb_mep_params p = {
		.saddr = htonl(0xc6120100u + (uint32_t)(rnd() & 0xff)), .daddr = htonl(0xc6120201u),
		.ip_proto = XEVB_DEFAULT_IP_PROTO, .udp_dport = (rnd() & 1) ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = (uint16_t)(rnd() % 4096), .flags = (uint8_t)(rnd() % 4),
		.run_number = (uint32_t)rnd(), .packet_seq = (uint32_t)rnd(),
		.n_frags = n, .event_id = ids, .frag_len = lens,
	};
	uint32_t id = (uint32_t)rnd();
	ssize_t w;

	for (uint32_t i = 0; i < n; i++) {
		ids[i] = id;
		id += 1 + (uint32_t)(rnd() % 1000);
		lens[i] = (uint16_t)(rnd() % 50);
	}
	w = xevb_write_frame(buf, cap, &p);
	cr_assert(gt(sz, (size_t)(w < 0 ? 0 : w), 0));
	if (rnd() % 4 == 0) {
		memmove(buf + 16, buf + 12, (size_t)w - 12);
		buf[12] = 0x81;
		buf[13] = 0x00;
		buf[14] = 0x00;
		buf[15] = 0x07;
		w += 4;
	}
	return (size_t)w;
}

/* What the XDP program appends (bpf/xevb_steer.bpf.c), from the parser's view. */
static size_t append_digest(uint8_t *f, size_t len, const struct xevb_pkt_info *pi,
			    const struct xevb_frag_ref *fr)
{
	struct xevb_digest_trailer t = {
		.first_event_id = pi->first_event_id, .mep_off = pi->mep_off, .n_frags = pi->n_frags,
		.orig_len = (uint16_t)len, .magic = XEVB_DIGEST_MAGIC,
	};
	for (uint32_t i = 0; i < pi->n_frags; i++) {
		uint32_t e = (fr[i].event_id - pi->first_event_id) | ((uint32_t)fr[i].length << 16);
		memcpy(f + len + i * XEVB_DIGEST_ENT_LEN, &e, 4);
	}
	memcpy(f + len + pi->n_frags * XEVB_DIGEST_ENT_LEN, &t, sizeof(t));
	return len + XEVB_DIGEST_LEN(pi->n_frags);
}

static void assert_same(const struct xevb_pkt_info *a, const struct xevb_frag_ref *fa,
			const struct xevb_pkt_info *b, const struct xevb_frag_ref *fb, unsigned k)
{
	cr_assert(eq(u32, a->saddr, b->saddr), "frame %u", k);
	cr_assert(eq(u32, a->daddr, b->daddr), "frame %u", k);
	cr_assert(eq(u16, a->mep_off, b->mep_off), "frame %u", k);
	cr_assert(eq(u16, a->mep_len, b->mep_len), "frame %u", k);
	cr_assert(eq(u16, a->source_id, b->source_id), "frame %u", k);
	cr_assert(eq(u16, a->n_frags, b->n_frags), "frame %u", k);
	cr_assert(eq(u32, a->run_number, b->run_number), "frame %u", k);
	cr_assert(eq(u32, a->packet_seq, b->packet_seq), "frame %u", k);
	cr_assert(eq(u32, a->first_event_id, b->first_event_id), "frame %u", k);
	cr_assert(eq(u8, a->flags, b->flags), "frame %u", k);
	cr_assert(eq(u8, a->is_udp, b->is_udp), "frame %u", k);
	for (uint32_t i = 0; i < a->n_frags; i++) {
		cr_assert(eq(u32, fa[i].event_id, fb[i].event_id), "frame %u record %u", k, i);
		cr_assert(eq(u16, fa[i].payload_off, fb[i].payload_off), "frame %u record %u", k, i);
		cr_assert(eq(u16, fa[i].length, fb[i].length), "frame %u record %u", k, i);
	}
}

Test(digest, random_meps_read_like_the_parser)
{
	static uint8_t f[8192];
	static struct xevb_frag_ref fp[XEVB_MAX_FRAGS_PER_MEP], fd[XEVB_MAX_FRAGS_PER_MEP];

	for (unsigned k = 0; k < N_RANDOM; k++) {
		uint32_t n = 1 + (uint32_t)(rnd() % XEVB_DIGEST_MAX_FRAGS);
		size_t len = random_frame(f, sizeof(f), n), dlen;
		struct xevb_pkt_info pp = { 0 }, pd = { 0 };
		int used = -1;

		cr_assert(eq(int, xevb_classify(f, f + len, (uint32_t)len, &cfg, &pp, fp), XEVB_RES_MEP));
		/* Without a digest: the fallback, with the same answer. */
		cr_assert(eq(int, xevb_digest_read(f, (uint32_t)len, &cfg, &pd, fd), -1), "frame %u", k);
		dlen = append_digest(f, len, &pp, fp);
		cr_assert(eq(int, xevb_digest_read(f, (uint32_t)dlen, &cfg, &pd, fd), XEVB_RES_MEP), "frame %u", k);
		assert_same(&pp, fp, &pd, fd, k);
		memset(&pd, 0, sizeof(pd));
		cr_assert(eq(int, xevb_xsk_classify(f, (uint32_t)dlen, &cfg, &pd, fd, &used), XEVB_RES_MEP));
		cr_assert(eq(int, used, 1));
		assert_same(&pp, fp, &pd, fd, k);
	}
}

/* Each corruption the reader can see: a fallback to the parser, which still gets it right. */
Test(digest, corrupted_fields_fall_back)
{
	static uint8_t f[8192], g[8192];
	static struct xevb_frag_ref fp[XEVB_MAX_FRAGS_PER_MEP], fd[XEVB_MAX_FRAGS_PER_MEP];
	unsigned cases = 0;

	for (unsigned k = 0; k < 2000; k++) {
		uint32_t n = 2 + (uint32_t)(rnd() % (XEVB_DIGEST_MAX_FRAGS - 1));
		size_t len = random_frame(f, sizeof(f), n), dlen;
		struct xevb_pkt_info pp = { 0 }, pd;
		size_t tr;

		cr_assert(eq(int, xevb_classify(f, f + len, (uint32_t)len, &cfg, &pp, fp), XEVB_RES_MEP));
		dlen = append_digest(f, len, &pp, fp);
		tr = dlen - XEVB_DIGEST_TRAILER_LEN;
		for (int c = 0; c < 11; c++) {
			uint16_t v16;
			uint32_t v32, glen = (uint32_t)dlen;
			int used = -1;

			memcpy(g, f, dlen);
			switch (c) {
			case 0: g[tr + 10] ^= 1; break;                                     /* magic */
			case 1: memcpy(&v16, g + tr + 6, 2); v16++; memcpy(g + tr + 6, &v16, 2); break;  /* n_frags + 1 */
			case 2: memcpy(&v16, g + tr + 6, 2); v16--; memcpy(g + tr + 6, &v16, 2); break;  /* n_frags - 1 */
			case 3: memcpy(&v16, g + tr + 8, 2); v16 += 4; memcpy(g + tr + 8, &v16, 2); break; /* orig_len */
			case 4: memcpy(&v16, g + tr + 4, 2); v16 += 4; memcpy(g + tr + 4, &v16, 2); break; /* mep_off */
			case 5: {   /* a record length: offsets no longer meet the end */
				uint32_t i = (uint32_t)(rnd() % n);
				memcpy(&v16, g + len + i * 4 + 2, 2); v16 += 4; memcpy(g + len + i * 4 + 2, &v16, 2);
				break;
			}
			case 6: {   /* event order: a delta equal to its predecessor */
				uint32_t i = 1 + (uint32_t)(rnd() % (n - 1));
				memcpy(g + len + i * 4, g + len + (i - 1) * 4, 2);
				break;
			}
			case 7: memcpy(&v32, g + len, 4); v32 |= 1; memcpy(g + len, &v32, 4); break; /* delta 0 != 0 */
			case 8: glen--; break;                                              /* frame shorter */
			case 9: {   /* IP total length disagrees */
				size_t l3 = f[12] == 0x81 ? 18 : 14;
				g[l3 + 3] ^= 4;
				break;
			}
			case 10: {  /* MEP header's n_frags disagrees */
				memcpy(&v16, g + pp.mep_off + 6, 2);
				v16 = htons((uint16_t)(ntohs(v16) + 1));
				memcpy(g + pp.mep_off + 6, &v16, 2);
				break;
			}
			}
			cr_assert(eq(int, xevb_digest_read(g, glen, &cfg, &pd, fd), -1), "frame %u corruption %d", k, c);
			/* The parser takes over: an intact frame is still the same MEP. */
			if (c <= 8) {
				memset(&pd, 0, sizeof(pd));
				cr_assert(eq(int, xevb_xsk_classify(g, glen, &cfg, &pd, fd, &used), XEVB_RES_MEP));
				cr_assert(eq(int, used, 0));
				assert_same(&pp, fp, &pd, fd, k);
			}
			cases++;
		}
	}
	printf("digest: %u corrupted digests, every one fell back\n", cases);
}

/*
 * Random bytes changed anywhere (headers, records, digest) and random
 * lengths: whatever the reader accepts lies inside the frame and after the
 * MEP header, in the order the parser demands.
 */
Test(digest, random_corruption_never_escapes)
{
	static uint8_t f[8192], g[8192];
	static struct xevb_frag_ref fp[XEVB_MAX_FRAGS_PER_MEP], fd[XEVB_MAX_FRAGS_PER_MEP];
	unsigned accepted = 0, rejected = 0;
	size_t dlen = 0;

	for (unsigned k = 0; k < N_FLIPS; k++) {
		uint32_t n = 1 + (uint32_t)(rnd() % XEVB_DIGEST_MAX_FRAGS);
		size_t len;
		struct xevb_pkt_info pp = { 0 }, pd;
		uint32_t glen;
		int flips = 1 + (int)(rnd() % 4);

		if (k % 64 == 0) {
			len = random_frame(f, sizeof(f), n);
			cr_assert(eq(int, xevb_classify(f, f + len, (uint32_t)len, &cfg, &pp, fp), XEVB_RES_MEP));
			dlen = append_digest(f, len, &pp, fp);
		}
		memcpy(g, f, dlen);
		glen = (uint32_t)dlen;
		for (int i = 0; i < flips; i++) {
			size_t at = rnd() % 2 ? dlen - 1 - rnd() % (dlen < 300 ? dlen : 300) : rnd() % dlen;
			g[at] = (uint8_t)rnd();
		}
		if (rnd() % 8 == 0)
			glen = (uint32_t)(rnd() % (dlen + 1));
		if (xevb_digest_read(g, glen, &cfg, &pd, fd) != XEVB_RES_MEP) {
			rejected++;
			continue;
		}
		accepted++;
		cr_assert(le(u32, (uint32_t)pd.mep_off + pd.mep_len, glen), "frame %u", k);
		for (uint32_t i = 0; i < pd.n_frags; i++) {
			cr_assert(ge(u32, fd[i].payload_off, (uint32_t)pd.mep_off + XEVB_MEP_HLEN + XEVB_REC_HLEN),
				  "frame %u record %u", k, i);
			cr_assert(le(u32, (uint32_t)fd[i].payload_off + fd[i].length,
				     (uint32_t)pd.mep_off + pd.mep_len), "frame %u record %u", k, i);
			if (i)
				cr_assert(xevb_seq_after(fd[i].event_id, fd[i - 1].event_id), "frame %u record %u", k, i);
		}
	}
	printf("digest: %u randomly corrupted frames: %u digests accepted (inside the frame), %u fell back\n",
	       N_FLIPS, accepted, rejected);
	cr_assert(gt(u32, rejected, 0));
}

/* A builder whose program writes no digests never believes one (nothing trims the padding). */
Test(digest, not_read_unless_the_program_writes_them)
{
	static uint8_t f[8192];
	static struct xevb_frag_ref fp[XEVB_MAX_FRAGS_PER_MEP], fd[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_parse_cfg off = cfg;
	struct xevb_pkt_info pp = { 0 }, pd = { 0 };
	size_t len = random_frame(f, sizeof(f), 25), dlen;
	int used = -1;

	off.digest = 0;
	cr_assert(eq(int, xevb_classify(f, f + len, (uint32_t)len, &cfg, &pp, fp), XEVB_RES_MEP));
	dlen = append_digest(f, len, &pp, fp);
	cr_assert(eq(int, xevb_digest_read(f, (uint32_t)dlen, &off, &pd, fd), -1));
	cr_assert(eq(int, xevb_xsk_classify(f, (uint32_t)dlen, &off, &pd, fd, &used), XEVB_RES_MEP));
	cr_assert(eq(int, used, 0));
	assert_same(&pp, fp, &pd, fd, 0);
}

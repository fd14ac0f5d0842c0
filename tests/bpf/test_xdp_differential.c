// SPDX-License-Identifier: GPL-2.0-only
/*
 * Differential test: the user-space parser and the XDP program (the same
 * source, compiled twice and run under different rules: the verifier's
 * packet bounds, BPF loads, bpf_xdp_get_buff_len) must reach the same
 * verdict on every frame. Frames: every vector plus mutants of them from a
 * fixed seed, aimed at the header and length fields the parser trusts least.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <arpa/inet.h>
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"
#include "evb/names.h"
#include "xdp_harness.h"
#include "../common/vectors.h"

#define N_MUTANTS 5000
#define SEED      0x5eed0f0e17b0ull
/* Below the test-run linear area (3520 B on x86-64): mutants stay linear. */
#define MUT_MAX 3400
/* Jumbo mutants: a 9000-byte MTU frame, its MEP spanning the frags. */
#define JUMBO_MAX       9018
#define N_JUMBO_MUTANTS 2000
#define MIN_FRAME       XEVB_ETH_HLEN /* BPF_PROG_RUN refuses shorter frames */
#define MAX_RECS        64

static struct xdp_env env;
static size_t mut_max = MUT_MAX; /* OP_APPEND grows frames up to this */

static void teardown(void)
{
	xdp_env_close(&env);
	vectors_teardown();
}

TestSuite(xdp_differential, .init = vectors_setup, .fini = teardown, .timeout = 120);

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

/* XEVB_DIFF_MUTANTS=N runs a longer (or shorter) sequence from the same seed. */
static unsigned n_mutants(void)
{
	const char *s = getenv("XEVB_DIFF_MUTANTS");
	return s && *s ? (unsigned)strtoul(s, NULL, 0) : N_MUTANTS;
}

/* splitmix64: the same sequence on every libc. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* Where the fields sit in a frame, found without the parser under test. */
struct layout {
	size_t l3, l4, mep;   /* 0: not present in the frame */
	size_t rec[MAX_RECS]; /* record header offsets */
	unsigned nrec;
};

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void wr16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void find_layout(const uint8_t *f, size_t len, struct layout *lo)
{
	size_t off;

	memset(lo, 0, sizeof(*lo));
	if (len < 18)
		return;
	lo->l3 = rd16(f + 12) == 0x8100 ? 18 : 14;
	if (len < lo->l3 + 20)
		return;
	lo->l4 = lo->l3 + (f[lo->l3] & 0xf) * 4u;
	lo->mep = lo->l4 + (f[lo->l3 + 9] == 17 ? 8 : 0);
	if (lo->mep + 16 > len) {
		lo->mep = 0;
		return;
	}
	for (off = lo->mep + 16; off + 12 <= len && lo->nrec < MAX_RECS;) {
		lo->rec[lo->nrec++] = off;
		off += 12 + XEVB_PAD4(rd16(f + off + 4));
	}
}

/* Values that sit on the parser's boundaries. */
static uint32_t edgy16(uint32_t orig)
{
	static const uint32_t v[] = { 0,    1,    7,    8,    15,     16,     20,     1023,
				      1024, 1025, 4095, 4096, 0x7fff, 0x8000, 0xfffe, 0xffff };
	switch (below(4)) {
	case 0:
		return v[below(sizeof(v) / sizeof(v[0]))];
	case 1:
		return (uint32_t)rnd() & 0xffff;
	default:
		return (orig + below(41) - 20) & 0xffff; /* near the truth */
	}
}

/* Recompute IP total length and UDP length for the current frame length. */
static void resync_lengths(uint8_t *f, size_t len, const struct layout *lo)
{
	if (!lo->l4 || lo->l4 > len || lo->l3 + 20 > len)
		return;
	wr16(f + lo->l3 + 2, (uint32_t)(len - lo->l3));
	if (f[lo->l3 + 9] == 17 && lo->l4 + 8 <= len)
		wr16(f + lo->l4 + 4, (uint32_t)(len - lo->l4));
}

enum op {
	OP_BITFLIP,
	OP_HDR_BYTE,
	OP_TRUNCATE,
	OP_IP_TOTLEN,
	OP_UDP_LEN,
	OP_NFRAGS,
	OP_REC_LEN,
	OP_APPEND,
	OP_IHL,
	OP_ETHERTYPE,
	OP_IP_FRAG,
	OP_IP_PROTO,
	OP_REC_FIELD,
	OP_CUT_RECORDS,
	OP_RESYNC,
	OP_SEG_FIELD,
	OP__COUNT
};

static const char *const op_names[OP__COUNT] = {
	"bitflip", "hdr_byte",  "truncate", "ip_totlen", "udp_len",   "n_frags",     "rec_len", "append",
	"ihl",     "ethertype", "ip_frag",  "ip_proto",  "rec_field", "cut_records", "resync",  "seg_field",
};

/* Values on the SEGMENT rules' boundaries for seg_offset (orig: the record's length). */
static uint32_t edgy_seg_off(uint32_t len)
{
	switch (below(5)) {
	case 0:
		return 0;
	case 1:
		return len & ~3u; /* at or just below the end */
	case 2:
		return (len - 1) & ~3u;
	case 3:
		return below(2) ? len + 4 : 2; /* past the end, unaligned */
	default:
		return below(len ? len : 1) & ~3u; /* anywhere, aligned */
	}
}

/* One mutation in place; returns the new length. */
static size_t mutate(uint8_t *f, size_t len, enum op op)
{
	struct layout lo;
	size_t at;

	find_layout(f, len, &lo);
	switch (op) {
	case OP_BITFLIP:
		/* Mostly in the headers, where a flip changes the path taken. */
		at = below(4) ? below((uint32_t)(len < 96 ? len : 96)) : below((uint32_t)len);
		f[at] ^= (uint8_t)(1u << below(8));
		break;
	case OP_HDR_BYTE: {
		size_t lim = lo.mep ? lo.mep + 16 : 64;
		at = below((uint32_t)(lim < len ? lim : len));
		f[at] = below(3) ? (uint8_t)rnd() : (uint8_t)(below(2) ? 0 : 0xff);
		break;
	}
	case OP_TRUNCATE:
		if (len > MIN_FRAME)
			len = MIN_FRAME + below((uint32_t)(len - MIN_FRAME));
		break;
	case OP_IP_TOTLEN:
		if (lo.l3 && lo.l3 + 4 <= len)
			wr16(f + lo.l3 + 2, edgy16(rd16(f + lo.l3 + 2)));
		break;
	case OP_UDP_LEN:
		if (lo.l4 && lo.l4 + 6 <= len)
			wr16(f + lo.l4 + 4, edgy16(rd16(f + lo.l4 + 4)));
		break;
	case OP_NFRAGS:
		if (lo.mep)
			wr16(f + lo.mep + 6, edgy16(rd16(f + lo.mep + 6)));
		break;
	case OP_REC_LEN:
		if (lo.nrec) {
			at = lo.rec[below(lo.nrec)] + 4;
			wr16(f + at, edgy16(rd16(f + at)));
		}
		break;
	case OP_APPEND: {
		uint32_t n = 1 + below(64);
		if (len + n > mut_max)
			n = (uint32_t)(mut_max - len);
		for (uint32_t i = 0; i < n; i++)
			f[len + i] = below(2) ? 0 : (uint8_t)rnd();
		len += n;
		break;
	}
	case OP_IHL:
		if (lo.l3 && lo.l3 < len)
			f[lo.l3] = (uint8_t)((below(8) ? 0x40 : below(16) << 4) | below(16));
		break;
	case OP_ETHERTYPE: {
		static const uint16_t t[] = { 0x0800, 0x8100, 0x86dd, 0x0806, 0x8100 };
		wr16(f + 12, t[below(5)]);
		if (rd16(f + 12) == 0x8100 && len >= 18 && below(2))
			wr16(f + 16, 0x0800);
		break;
	}
	case OP_IP_FRAG:
		if (lo.l3 && lo.l3 + 8 <= len)
			wr16(f + lo.l3 + 6, below(2) ? 0 : (below(2) ? 0x2000 : (uint32_t)rnd() & 0xffff));
		break;
	case OP_IP_PROTO: {
		static const uint8_t p[] = { 253, 17, 6, 254, 1 };
		if (lo.l3 && lo.l3 + 10 <= len)
			f[lo.l3 + 9] = p[below(5)];
		break;
	}
	case OP_REC_FIELD:
		/* Event id equal to or before the previous one, or reserved bits set. */
		if (lo.nrec) {
			unsigned r = below(lo.nrec);
			if (below(2) && r > 0)
				memcpy(f + lo.rec[r], f + lo.rec[r - 1], 4);
			else
				wr16(f + lo.rec[r] + 6, below(2) ? 0 : 1u << below(16));
		}
		break;
	case OP_CUT_RECORDS:
		/* Keep the first k records, with n_frags and the lengths made consistent: valid again. */
		if (lo.nrec > 1) {
			unsigned k = 1 + below(lo.nrec - 1);
			wr16(f + lo.mep + 6, k);
			len = lo.rec[k] < len ? lo.rec[k] : len;
			resync_lengths(f, len, &lo);
		}
		break;
	case OP_RESYNC:
		resync_lengths(f, len, &lo);
		break;
	case OP_SEG_FIELD:
		/* The 1.1 fields: the flag itself, the whole length, seg_offset. */
		if (!lo.mep)
			break;
		switch (below(3)) {
		case 0:
			f[lo.mep + 3] ^= XEVB_MEP_F_SEGMENT;
			break;
		case 1:
			if (lo.nrec)
				wr16(f + lo.rec[0] + 4,
				     below(2) ? edgy16(rd16(f + lo.rec[0] + 4)) :
						(rd16(f + lo.rec[0] + 4) + 4 * below(400)) & 0xffff);
			break;
		default:
			if (lo.nrec)
				wr16(f + lo.rec[0] + 6, edgy_seg_off(rd16(f + lo.rec[0] + 4)));
			break;
		}
		break;
	case OP__COUNT:
		break;
	}
	return len < MIN_FRAME ? MIN_FRAME : len;
}

/* Same verdict on both sides, or a message (static buffer) saying how not. */
static const char *compare(const uint8_t *f, size_t len, int *verdict)
{
	static char msg[700];
	struct xevb_pkt_info pi = { 0 };
	struct xdp_outcome o;
	const char *bad;
	int res, slots[2], n = 1;
	uint64_t frags = 0;
	uint32_t act;

	res = xevb_classify(f, f + len, (uint32_t)len, &cfg, &pi, NULL);
	*verdict = res;
	xdp_env_run(&env, f, len, &o);
	if (res == XEVB_RES_MULTIBUF) {
		snprintf(msg, sizeof(msg), "user space says multibuf, which only XDP may say");
		return msg;
	}
	/* A MEP running into the frags is walked there: no verdict may differ. */
	slots[0] = res;
	act = xevb_res_is_malformed((unsigned)res) ? XDP_DROP : XDP_PASS;
	if (res == XEVB_RES_MEP) {
		slots[n++] = XEVB_XDP_NO_XSK;
		frags = pi.n_frags;
	}
	if (res == XEVB_RES_SEGMENT) {
		/* Both sides read the same segment: its frags column counts offset 0 only. */
		slots[n++] = XEVB_XDP_NO_XSK;
		frags = pi.seg_offset == 0;
	}
	bad = xdp_outcome_mismatch(&o, len, act, slots, n, frags);
	if (!bad)
		return NULL;
	snprintf(msg, sizeof(msg), "user space: %s (n_frags %u, seg_offset %u); XDP: %s",
		 xevb_slot_name((unsigned)res), pi.n_frags, res == XEVB_RES_SEGMENT ? pi.seg_offset : 0, bad);
	return msg;
}

static void dump(const char *what, const uint8_t *f, size_t len)
{
	fprintf(stderr, "%s (%zu bytes):", what, len);
	for (size_t i = 0; i < len && i < 256; i++)
		fprintf(stderr, "%s%02x", i % 32 ? "" : "\n  ", f[i]);
	fprintf(stderr, "%s\n", len > 256 ? " ..." : "");
}

/* Ends a summary line with each verdict reached and its count; returns how many were reached. */
static unsigned print_verdicts(const unsigned hist[XEVB_RES__COUNT])
{
	unsigned distinct = 0;

	for (int r = 0; r < XEVB_RES__COUNT; r++) {
		if (!hist[r])
			continue;
		distinct++;
		printf(" %s=%u", xevb_slot_name((unsigned)r), hist[r]);
	}
	printf("\n");
	return distinct;
}

Test(xdp_differential, vectors_and_mutants_agree)
{
	static uint8_t buf[MUT_MAX + 64];
	unsigned hist[XEVB_RES__COUNT] = { 0 }, ops_used[OP__COUNT] = { 0 };
	unsigned compared = 0, distinct, mutants = n_mutants();
	size_t nbase = 0;
	int verdict;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);

	for (size_t i = 0; i < nvecs; i++) {
		const char *bad = compare(vecs[i].frame, vecs[i].len, &verdict);
		if (bad)
			dump(vecs[i].name, vecs[i].frame, vecs[i].len);
		cr_assert(bad == NULL, "vector %s: %s", vecs[i].name, bad);
		hist[verdict]++;
		compared++;
		if (vecs[i].len <= MUT_MAX)
			nbase++;
	}
	cr_assert(gt(sz, nbase, 30));

	rng_state = SEED;
	for (unsigned m = 0; m < mutants; m++) {
		const struct vector *v;
		char trail[160];
		size_t len, tl = 0;
		unsigned nops = 1 + below(3);
		const char *bad;

		/* Mostly the valid MEPs and segments: their mutants reach the deepest checks. */
		do {
			v = &vecs[below((uint32_t)nvecs)];
		} while (v->verdict != VEC_MEP && v->verdict != VEC_SEGMENT && below(3));
		len = v->len < MUT_MAX ? v->len : MUT_MAX;
		memcpy(buf, v->frame, len);
		trail[0] = 0;
		for (unsigned k = 0; k < nops; k++) {
			enum op op = (enum op)below(OP__COUNT);
			len = mutate(buf, len, op);
			ops_used[op]++;
			tl += (size_t)snprintf(trail + tl, sizeof(trail) - tl, " %s", op_names[op]);
		}
		bad = compare(buf, len, &verdict);
		if (bad)
			dump("mutant", buf, len);
		cr_assert(bad == NULL, "mutant %u of %s (%s): %s", m, v->name, trail + 1, bad);
		hist[verdict]++;
		compared++;
	}

	printf("xdp_differential: %u frames compared (%zu vectors + %u mutants, seed %#llx):", compared, nvecs,
	       mutants, (unsigned long long)SEED);
	distinct = print_verdicts(hist);
	cr_log_info("%u frames compared, %u distinct verdicts", compared, distinct);
	for (int k = 0; k < OP__COUNT; k++)
		cr_assert(gt(uint, ops_used[k], 0), "mutation %s never used", op_names[k]);
	/* The mutants must exercise the parser, not just bounce off the first check. */
	cr_assert(gt(uint, hist[XEVB_RES_MEP], mutants / 20));
	cr_assert(gt(uint, hist[XEVB_RES_SEGMENT], mutants / 50));
	for (int r = XEVB_RES_SEG_NFRAGS; r <= XEVB_RES_SEG_TRAILING; r++)
		cr_assert(gt(uint, hist[r], 0), "no mutant reached %s", xevb_slot_name((unsigned)r));
	cr_assert(ge(uint, distinct, XEVB_RES__COUNT - 2), "only %u distinct verdicts", distinct);
}

/* A jumbo base's addresses and header: MEP k, raw or UDP; records set by the caller. */
static struct xevb_mep_params jumbo_params(unsigned k, bool udp, uint16_t source_id, uint32_t first_event_id)
{
	struct xevb_mep_params p = {
		.dst_mac = { 2, 0x18, 2, 0, 0, 1 },
		.src_mac = { 2, 0x18, 1, 0, 0, 1 },
		.saddr = htonl(0xc6120101),
		.daddr = htonl(0xc6120201),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.udp_dport = udp ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = source_id,
		.run_number = 7,
		.packet_seq = k,
		.first_event_id = first_event_id,
	};

	return p;
}

/*
 * Jumbo frames, whose MEP runs past the linear area (3520 bytes here) into
 * the frags: the XDP program validates those records with the frags walker
 * (mep_parse_ld.h), and must still agree with user space on every frame.
 * Bases: raw and UDP MEPs up to a 9000-byte MTU, with records of many sizes
 * so that record headers straddle the linear/frags boundary, plus mutants.
 */
static size_t jumbo_base(uint8_t *buf, unsigned k)
{
	static const uint16_t fsz[] = { 8900, 4400, 1200, 211, 97, 27, 3 };
	static const uint32_t nf[] = { 1, 2, 7, 40, 90, 300, 540 };
	struct xevb_mep_params p = jumbo_params(k, k & 1, (uint16_t)(k * 37 % 4096), 0xfffffff0u + k);
	ssize_t n;

	p.n_frags = nf[k % 7];
	p.frag_size = fsz[k % 7];

	/* Shrink until it fits the MTU: a different size each k. */
	while (xevb_frame_len(&p) > JUMBO_MAX - 4 - (k % 5) * 700 && p.frag_size > 1)
		p.frag_size--;
	n = xevb_write_frame(buf, JUMBO_MAX, &p);
	cr_assert(n > 0, "writing jumbo base %u: %s", k, strerror(errno));
	return (size_t)n;
}

/*
 * A jumbo SEGMENT packet (wire format 1.1): base k's one record made a
 * segment of a larger fragment, at an aligned offset; every other k the
 * last segment, else one in the middle (its size a multiple of 4). Made by
 * patching a one-record MEP, so it does not depend on how the writer
 * segments.
 */
static size_t jumbo_seg_base(uint8_t *buf, unsigned k)
{
	struct xevb_mep_params p = jumbo_params(k, k & 2, (uint16_t)(k * 41 % 4096), 0x100u + k);
	struct layout lo;
	uint32_t seg_off = 4000u * (k % 3), flen;
	ssize_t n;

	p.n_frags = 1;
	p.frag_size = (uint16_t)((8900 - (k % 5) * 700) & ~3u);

	while (xevb_frame_len(&p) > JUMBO_MAX - 4)
		p.frag_size = (uint16_t)(p.frag_size - 4);
	n = xevb_write_frame(buf, JUMBO_MAX, &p);
	cr_assert(n > 0, "writing jumbo segment base %u: %s", k, strerror(errno));
	find_layout(buf, (size_t)n, &lo);
	cr_assert(eq(uint, lo.nrec, 1));
	/* Last: the bytes end the fragment (less than the room, padding kept); else more follow. */
	flen = k & 1 ? seg_off + p.frag_size - (k % 4 == 1 ? 3 : 0) : seg_off + p.frag_size + 1000;
	buf[lo.mep + 3] |= XEVB_MEP_F_SEGMENT;
	wr16(buf + lo.rec[0] + 4, flen);
	wr16(buf + lo.rec[0] + 6, seg_off);
	return (size_t)n;
}

Test(xdp_differential, jumbo_mutants_agree)
{
	static uint8_t buf[JUMBO_MAX + 64], base[20][JUMBO_MAX];
	size_t blen[20];
	unsigned hist[XEVB_RES__COUNT] = { 0 }, distinct, frags_runs = 0, nb = 20, nmep = 14;
	int verdict;
	struct xdp_outcome o;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	for (unsigned k = 0; k < nb; k++) {
		const char *bad;

		blen[k] = k < nmep ? jumbo_base(base[k], k) : jumbo_seg_base(base[k], k - nmep);
		bad = compare(base[k], blen[k], &verdict);
		cr_assert(bad == NULL, "jumbo base %u (%zu bytes): %s", k, blen[k], bad);
		cr_assert(eq(int, verdict, k < nmep ? XEVB_RES_MEP : XEVB_RES_SEGMENT), "jumbo base %u", k);
	}
	/* The bases do reach the frags: the linear area is shorter than most. */
	for (unsigned k = 0; k < nb; k++) {
		xdp_env_run(&env, base[k], blen[k], &o);
		frags_runs += o.linear < blen[k];
	}
	cr_assert(ge(uint, frags_runs, nb / 2), "only %u of %u jumbo bases spanned frags", frags_runs, nb);

	mut_max = JUMBO_MAX;
	rng_state = SEED ^ 0x9000;
	for (unsigned m = 0; m < N_JUMBO_MUTANTS; m++) {
		unsigned b = below(nb), nops = 1 + below(3);
		size_t len = blen[b];
		char trail[160];
		size_t tl = 0;
		const char *bad;

		memcpy(buf, base[b], len);
		trail[0] = 0;
		for (unsigned k = 0; k < nops; k++) {
			enum op op = (enum op)below(OP__COUNT);
			len = mutate(buf, len, op);
			tl += (size_t)snprintf(trail + tl, sizeof(trail) - tl, " %s", op_names[op]);
		}
		bad = compare(buf, len, &verdict);
		if (bad)
			dump("jumbo mutant", buf, len);
		cr_assert(bad == NULL, "jumbo mutant %u of base %u (%s): %s", m, b, trail + 1, bad);
		hist[verdict]++;
	}
	mut_max = MUT_MAX;
	printf("xdp_differential: %u jumbo bases (%u span frags) + %u mutants agree:", nb, frags_runs,
	       N_JUMBO_MUTANTS);
	distinct = print_verdicts(hist);
	cr_assert(gt(uint, hist[XEVB_RES_MEP], N_JUMBO_MUTANTS / 20));
	cr_assert(gt(uint, hist[XEVB_RES_SEGMENT], N_JUMBO_MUTANTS / 50));
	/* Record-level verdicts are reached past the linear area too. */
	cr_assert(gt(uint, hist[XEVB_RES_REC_OVERRUN], 0));
	cr_assert(gt(uint, hist[XEVB_RES_EVENT_ORDER] + hist[XEVB_RES_RESERVED], 0));
	cr_assert(ge(uint, distinct, 10), "only %u distinct verdicts", distinct);
}

/*
 * The XDP program walks a MEP's records XEVB_WALK_CHUNK (32) at a call,
 * linear or across frags (mep_parse.h, mep_parse_ld.h): MEPs of record
 * counts around the chunk boundaries, each whole and with one fault at a
 * record around them, must get the user-space parser's verdict.
 */
enum walk_fault { WF_NONE, WF_ORDER, WF_RESERVED, WF_GAP, WF_OVERRUN, WF_MISSING, WF_TRAILING, WF_CUT, WF__N };

/* Offset of record j (they all have frag_size bytes here). */
static size_t walk_rec(size_t mep, unsigned j, uint16_t frag_size)
{
	return mep + 16 + (size_t)j * (12 + XEVB_PAD4(frag_size));
}

static size_t walk_fault(uint8_t *f, size_t len, unsigned n, unsigned j, uint16_t fsz, enum walk_fault wf)
{
	struct layout lo;
	size_t at;

	find_layout(f, len, &lo);
	at = walk_rec(lo.mep, j, fsz);
	switch (wf) {
	case WF_ORDER:
		memcpy(f + at, f + walk_rec(lo.mep, j - 1, fsz), 4);
		break;
	case WF_RESERVED:
		wr16(f + at + 6, 1);
		break;
	case WF_GAP: /* still valid, no longer consecutive */
		for (unsigned k = j; k < n; k++) {
			size_t r = walk_rec(lo.mep, k, fsz);
			uint32_t id = (uint32_t)rd16(f + r) << 16 | rd16(f + r + 2);
			wr16(f + r, (id + 5) >> 16);
			wr16(f + r + 2, (id + 5) & 0xffff);
		}
		break;
	case WF_OVERRUN:
		wr16(f + at + 4, 0xfff0);
		break;
	case WF_MISSING:
		wr16(f + lo.mep + 6, n + 1);
		break;
	case WF_TRAILING:
		memset(f + len, 0, 4);
		len += 4;
		resync_lengths(f, len, &lo);
		break;
	case WF_CUT: /* the MEP ends inside record j's header */
		len = at + 6;
		resync_lengths(f, len, &lo);
		break;
	default:
		break;
	}
	return len;
}

static void walk_case(unsigned n, uint16_t fsz, bool udp, unsigned *hist, unsigned *cases)
{
	static uint8_t base[JUMBO_MAX + 64], buf[JUMBO_MAX + 64];
	static const unsigned at[] = { 1, 2, 30, 31, 32, 33, 34, 63, 64, 65, 96, 97 };
	struct xevb_mep_params p = jumbo_params(n, udp, (uint16_t)n, 0xffffffe0u);
	ssize_t blen;
	int verdict;

	p.n_frags = n;
	p.frag_size = fsz;
	blen = xevb_write_frame(base, JUMBO_MAX, &p);
	cr_assert(gt(sz, (size_t)(blen < 0 ? 0 : blen), 0), "writing %u records of %u bytes", n, fsz);
	for (int wf = WF_NONE; wf < WF__N; wf++) {
		for (unsigned a = 0; a < sizeof(at) / sizeof(at[0]); a++) {
			unsigned j = wf == WF_MISSING || wf == WF_TRAILING || wf == WF_NONE ? n - 1 : at[a];
			const char *bad;
			size_t len;

			if (j >= n || (wf == WF_ORDER && j == 0) || (wf >= WF_MISSING && a > 0) ||
			    (wf == WF_NONE && a > 0))
				continue;
			memcpy(buf, base, (size_t)blen);
			len = walk_fault(buf, (size_t)blen, n, j, fsz, (enum walk_fault)wf);
			bad = compare(buf, len, &verdict);
			if (bad)
				dump("walk case", buf, len);
			cr_assert(bad == NULL, "%u records of %u bytes (%s), fault %d at record %u: %s", n, fsz,
				  udp ? "udp" : "raw", wf, j, bad);
			hist[verdict]++;
			(*cases)++;
		}
	}
}

Test(xdp_differential, walk_chunk_boundaries)
{
	static const unsigned lin_n[] = { 1, 2, 31, 32, 33, 63, 64, 65, 96, 97, 200 };
	static const unsigned mb_n[] = { 31, 32, 33, 64, 65 };
	unsigned hist[XEVB_RES__COUNT] = { 0 }, cases = 0;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	/* Linear: small records, the frame within the test run's linear area. */
	for (unsigned k = 0; k < sizeof(lin_n) / sizeof(lin_n[0]); k++)
		for (int udp = 0; udp < 2; udp++)
			walk_case(lin_n[k], 2, udp, hist, &cases);
	/* Across frags: 128 bytes a record, past the linear area from 28 records on. */
	for (unsigned k = 0; k < sizeof(mb_n) / sizeof(mb_n[0]); k++)
		for (int udp = 0; udp < 2; udp++)
			walk_case(mb_n[k], 116, udp, hist, &cases);
	printf("xdp_differential: %u walk cases around the chunk boundaries agree:", cases);
	print_verdicts(hist);
	for (int r = XEVB_RES_FRAGS_MISSING; r <= XEVB_RES_TRAILING; r++)
		cr_assert(gt(uint, hist[r], 0), "no walk case reached %s", xevb_slot_name((unsigned)r));
	cr_assert(gt(uint, hist[XEVB_RES_MEP], 40));
}

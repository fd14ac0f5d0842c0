// SPDX-License-Identifier: GPL-2.0-only
/*
 * The multi-buffer MEP walker (mep_parse_ld.h), compiled for user space over
 * a flat buffer, against the linear parser: the XDP program runs the same
 * walker on jumbo frames, so it must reach the parser's verdict and header
 * fields on every MEP, valid or not. Frames: the vectors, and random
 * corruptions of them from a fixed seed (no root needed).
 */
#include <string.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/mep_parse_ld.h>
#include "evb/names.h"
#include "../common/pkt_info_assert.h"
#include "../common/vectors.h"

TestSuite(parse_ld, .init = vectors_setup, .fini = vectors_teardown, .timeout = 20);

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

/*
 * Classify f; where the verdict was reached inside the MEP (classify found
 * where the MEP lies), the walker must agree. Returns 1 if compared.
 */
static int agree(const uint8_t *f, size_t len, const char *what)
{
	struct xevb_pkt_info a = { 0 }, b = { 0 };
	struct xevb_ld_buf buf = { f, (__u32)len };
	int ra, rb;

	ra = xevb_classify(f, f + len, (uint32_t)len, &cfg, &a, NULL);
	if (ra != XEVB_RES_MEP && ra != XEVB_RES_SEGMENT && ra < XEVB_RES_SHORT_MEP)
		return 0;
	rb = xevb_mep_parse_ld(&buf, a.mep_off, a.mep_len, &b);
	cr_assert(eq(int, rb, ra), "%s: walker says %s, parser %s", what, xevb_slot_name((unsigned)rb),
		  xevb_slot_name((unsigned)ra));
	if (ra == XEVB_RES_MEP)
		pi_assert_same_header(&b, &a, what);
	if (ra == XEVB_RES_SEGMENT)
		pi_assert_same_segment(&b, &a, what);
	return 1;
}

static uint64_t rng = 0x1d0c0ffeeull;

static uint32_t below(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33) % n;
}

Test(parse_ld, walker_agrees_with_parser)
{
	static uint8_t f[65536];
	unsigned compared = 0, valid = 0, hist[XEVB_RES__COUNT] = { 0 };

	for (size_t i = 0; i < nvecs; i++)
		compared += agree(vecs[i].frame, vecs[i].len, vecs[i].name);
	cr_assert(ge(uint, compared, 20), "only %u vectors reached the MEP", compared);

	for (unsigned m = 0; m < 20000; m++) {
		const struct vector *v = &vecs[below((uint32_t)nvecs)];
		struct xevb_pkt_info pi = { 0 };
		size_t len = v->len;
		unsigned nflip = 1 + below(3);

		if (v->verdict != VEC_MEP && v->verdict != VEC_SEGMENT)
			continue;
		memcpy(f, v->frame, len);
		/* Corrupt bytes past the IP header only: the MEP is what is compared. */
		for (unsigned k = 0; k < nflip; k++) {
			uint32_t at = 34 + below((uint32_t)(len > 34 ? len - 34 : 1));
			if (at < len)
				f[at] = below(2) ? (uint8_t)below(256) : f[at] ^ (uint8_t)(1u << below(8));
		}
		if (!agree(f, len, v->name))
			continue;
		compared++;
		hist[xevb_classify(f, f + len, (uint32_t)len, &cfg, &pi, NULL)]++;
	}
	for (int r = 0; r < XEVB_RES__COUNT; r++)
		valid += hist[r] > 0;
	cr_assert(gt(uint, hist[XEVB_RES_MEP], 100));
	cr_assert(gt(uint, hist[XEVB_RES_SEGMENT], 50));
	cr_assert(ge(uint, valid, 8), "only %u distinct verdicts", valid);
}

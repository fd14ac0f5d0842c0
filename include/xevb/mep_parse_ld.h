/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * MEP validation for frames the parser cannot address as one array: in XDP,
 * a jumbo frame whose MEP runs past the linear part into the frags. The
 * header and every record header are copied out (bpf_xdp_load_bytes) and
 * judged by the same rules as the linear parser (xevb_mep_hdr_check,
 * xevb_rec_check in mep_parse.h). Every record is bounds-checked against
 * the MEP length before it is loaded; the loader itself fails on any read
 * past the frame.
 *
 * User space compiles the same walker over a flat buffer, so unit tests and
 * the fuzzer exercise the code the XDP program runs.
 */
#ifndef XEVB_MEP_PARSE_LD_H
#define XEVB_MEP_PARSE_LD_H

#include "mep_parse.h"

#ifdef __bpf__
typedef struct xdp_md *xevb_ld_ctx;

/* Non-zero when [off, off + len) is not within the frame. */
static __always_inline int xevb_ld(xevb_ld_ctx ctx, __u32 off, __u8 *buf, __u32 len)
{
	return bpf_xdp_load_bytes(ctx, off, buf, len);
}
#else
struct xevb_ld_buf {
	const __u8 *p;
	__u32 len;
};
typedef const struct xevb_ld_buf *xevb_ld_ctx;

static inline int xevb_ld(xevb_ld_ctx ctx, __u32 off, __u8 *buf, __u32 len)
{
	if (off > ctx->len || len > ctx->len - off)
		return -1;
	__builtin_memcpy(buf, ctx->p + off, len);
	return 0;
}
#endif

/*
 * Validate the mep_len-byte MEP at frame offset mep_off (as classify found
 * them). Fills pi like xevb_mep_parse, a SEGMENT packet's seg_* fields
 * too; no fragment list (XDP needs none).
 */
static __always_inline int xevb_mep_parse_ld(xevb_ld_ctx ctx, __u32 mep_off, __u32 mep_len,
					     struct xevb_pkt_info *pi)
{
	__u8 h[XEVB_MEP_HLEN];
	__u32 off, n, i, prev = 0, next = 0;
	int res;

	/* consec stays 0: the multi-buffer path books per fragment */
	res = xevb_mep_place(mep_off, mep_len, XEVB_MAX_IP_PAYLOAD, XEVB_RES_IP_LEN, pi);
	if (res != XEVB_RES_MEP)
		return res;
	if (xevb_ld(ctx, mep_off, h, XEVB_MEP_HLEN))
		return XEVB_RES_SHORT_MEP;
	res = xevb_mep_hdr_check(h, pi);
	if (res != XEVB_RES_MEP)
		return res;
	n = pi->n_frags;
	if (pi->flags & XEVB_MEP_F_SEGMENT) {
		/* The same rules and order as xevb_seg_parse. */
		if (n != 1)
			return XEVB_RES_SEG_NFRAGS;
		if (mep_len <= XEVB_MEP_HLEN)
			return XEVB_RES_FRAGS_MISSING;
		if (mep_len < XEVB_MEP_HLEN + XEVB_REC_HLEN ||
		    xevb_ld(ctx, mep_off + XEVB_MEP_HLEN, h, XEVB_REC_HLEN))
			return XEVB_RES_REC_OVERRUN;
		return xevb_seg_check(h, mep_len, pi);
	}

	for (i = 0, off = XEVB_MEP_HLEN; i < XEVB_MAX_FRAGS_PER_MEP; i++) {
		if (i >= n)
			break;
		if ((res = xevb_rec_room(off, mep_len)) != XEVB_RES_MEP)
			return res;
		if (xevb_ld(ctx, mep_off + off, h, XEVB_REC_HLEN))
			return XEVB_RES_REC_OVERRUN;
		res = xevb_rec_check(h, i, off, mep_len, prev, &next);
		if (res != XEVB_RES_MEP)
			return res;
		if (i == 0)
			pi->first_event_id = xevb_ld32(h);
		prev = xevb_ld32(h);
		off = next;
	}
	if (off != mep_len)
		return XEVB_RES_TRAILING;
	return XEVB_RES_MEP;
}

#endif /* XEVB_MEP_PARSE_LD_H */

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
 * Record w->i copied out and judged, as xevb_rec_next judges it in place
 * (no fragment list, no consec); the walk's offset and prev move past it.
 */
static __always_inline int xevb_ld_rec_next(xevb_ld_ctx ctx, struct xevb_rec_walk *w, const int first,
					    struct xevb_pkt_info *pi)
{
	__u8 h[XEVB_REC_HLEN];
	__u32 next = 0;
	int res;

	if ((res = xevb_rec_room(w->off, w->mep_len)) != XEVB_RES_MEP)
		return res;
	if (xevb_ld(ctx, w->mep_off + w->off, h, XEVB_REC_HLEN))
		return XEVB_RES_REC_OVERRUN;
	res = xevb_rec_check(h, first ? 0 : 1, w->off, w->mep_len, w->prev, &next);
	if (res != XEVB_RES_MEP)
		return res;
	if (first)
		pi->first_event_id = xevb_ld32(h);
	w->prev = xevb_ld32(h);
	w->off = next;
	return XEVB_RES_MEP;
}

/* Up to max records from where w stands: the answers of xevb_rec_walk. */
static __always_inline int xevb_ld_rec_walk(xevb_ld_ctx ctx, struct xevb_rec_walk *w, __u32 max,
					    const int from_start, struct xevb_pkt_info *pi)
{
	struct xevb_rec_walk s = *w;
	__u32 left = s.n - s.i, k;
	int res;

	for (k = 0; k < max; k++) {
		if (k >= left)
			break;
		res = xevb_ld_rec_next(ctx, &s, from_start && k == 0, pi);
		if (res != XEVB_RES_MEP)
			return res;
	}
	s.i += k;
	*w = s;
	return k >= left ? XEVB_RES_MEP : XEVB_WALK_MORE;
}

#ifdef __bpf__
/* XEVB_WALK_CHUNK records a call, verified once: see xevb_xdp_rec_chunk. */
__attribute__((noinline)) int xevb_xdp_ld_chunk(struct xdp_md *ctx, struct xevb_rec_walk *w)
{
	if (!w)
		return XEVB_RES_REC_OVERRUN;
	return xevb_ld_rec_walk(ctx, w, XEVB_WALK_CHUNK, 0, 0);
}

/* The first chunk inline (the caller is a global function), the rest a chunk a call. */
static __always_inline int xevb_ld_rec_walk_all(xevb_ld_ctx ctx, struct xevb_rec_walk *w, struct xevb_pkt_info *pi)
{
	int res = xevb_ld_rec_walk(ctx, w, XEVB_WALK_CHUNK, 1, pi);
	__u32 c;

	for (c = 1; c < XEVB_MAX_FRAGS_PER_MEP / XEVB_WALK_CHUNK && res == XEVB_WALK_MORE; c++)
		res = xevb_xdp_ld_chunk(ctx, w);
	/* n_frags <= 1024: never more left */
	return res == XEVB_WALK_MORE ? XEVB_RES_BAD_NFRAGS : res;
}
#else
static __always_inline int xevb_ld_rec_walk_all(xevb_ld_ctx ctx, struct xevb_rec_walk *w, struct xevb_pkt_info *pi)
{
	return xevb_ld_rec_walk(ctx, w, XEVB_MAX_FRAGS_PER_MEP, 1, pi);
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
	struct xevb_rec_walk w = { .off = XEVB_MEP_HLEN, .mep_off = mep_off, .mep_len = mep_len };
	__u8 h[XEVB_MEP_HLEN];
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
	w.n = pi->n_frags;
	if (pi->flags & XEVB_MEP_F_SEGMENT) {
		/* The same rules and order as xevb_seg_parse. */
		if (w.n != 1)
			return XEVB_RES_SEG_NFRAGS;
		if (mep_len <= XEVB_MEP_HLEN)
			return XEVB_RES_FRAGS_MISSING;
		if (mep_len < XEVB_MEP_HLEN + XEVB_REC_HLEN ||
		    xevb_ld(ctx, mep_off + XEVB_MEP_HLEN, h, XEVB_REC_HLEN))
			return XEVB_RES_REC_OVERRUN;
		return xevb_seg_check(h, mep_len, pi);
	}
	res = xevb_ld_rec_walk_all(ctx, &w, pi);
	if (res != XEVB_RES_MEP)
		return res;
	if (w.off != mep_len)
		return XEVB_RES_TRAILING;
	return XEVB_RES_MEP;
}

#ifdef __bpf__
/*
 * The multi-buffer walker as a global function (mep_off and mep_len as
 * classify left them in pi): verified once, apart from the program's
 * paths; a jumbo MEP's records cost a helper call each anyway.
 */
__attribute__((noinline)) int xevb_xdp_parse_ld(struct xdp_md *ctx, struct xevb_pkt_info *pi)
{
	if (!pi)
		return XEVB_RES_OTHER;
	return xevb_mep_parse_ld(ctx, pi->mep_off, pi->mep_len, pi);
}
#endif

#endif /* XEVB_MEP_PARSE_LD_H */

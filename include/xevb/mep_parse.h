/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one frame classifier and MEP validator. The same source is inlined
 * into the XDP program and into user space, so the two can never disagree
 * on a verdict. Rules: docs/wire-format.md section 1.
 *
 * Written for the verifier: every pointer is checked against data_end
 * right before it is read, every offset is bounded by a constant
 * (XEVB_PARSE_MAX_OFF), and the record loop has a constant trip count. In
 * XDP the records are walked in global functions, a chunk of them a call,
 * so that the verifier checks the walk once, not on every path to it
 * (xevb_xdp_mep_records; scripts/verifier-budget.sh keeps it cheap).
 */
#ifndef XEVB_MEP_PARSE_H
#define XEVB_MEP_PARSE_H

#include <linux/types.h>
#include "bytes.h"
#include "result.h"
#include "wire.h"

#define XEVB_ETH_HLEN    14
#define XEVB_VLAN_HLEN   4
#define XEVB_ETH_P_IP    0x0800
#define XEVB_ETH_P_8021Q 0x8100
#define XEVB_IPPROTO_UDP 17
#define XEVB_UDP_HLEN    8
#define XEVB_MEP_HLEN    16
#define XEVB_REC_HLEN    12

/*
 * In BPF the MEP must lie in the linear part of the frame, at most a page:
 * a smaller bound keeps pointer + offset within the verifier's packet range.
 * Longer MEPs never reach the parser there (see XEVB_RES_MULTIBUF).
 */
#ifdef __bpf__
#define XEVB_PARSE_MAX_OFF 8192
/* Hide a value from clang so that a bound the verifier needs is kept. */
#define xevb_opaque(x) asm volatile("" : "+r"(x))
#else
#define XEVB_PARSE_MAX_OFF XEVB_MAX_IP_PAYLOAD
#define xevb_opaque(x) \
	do { \
	} while (0)
#endif

struct xevb_parse_cfg {
	__u16 udp_port; /* host order; 0 disables the UDP transport */
	__u8 ip_proto;  /* 0 disables the raw IPv4 transport */
};

/* What the classifier learned about a DAQ frame. */
struct xevb_pkt_info {
	__u32 saddr;   /* network order */
	__u32 daddr;   /* network order */
	__u16 mep_off; /* MEP header, from the frame start */
	__u16 mep_len; /* MEP header + records, padding included */
	__u16 source_id;
	__u16 n_frags;
	__u32 run_number;
	__u32 packet_seq;
	__u32 first_event_id;
	__u8 flags;
	__u8 is_udp;
	/*
	 * 1: the records carry first_event_id, +1, ... +n_frags-1, no gap.
	 * Sources pack consecutive triggers, so nearly every MEP is such a
	 * run, and the builder can book it as a whole (builder.h).
	 */
	__u8 consec;
	/*
	 * Set only from the XDP meta (xsk_meta.h), never by the parser: the
	 * XDP program shed up to this many times XEVB_GUARD_RUN_UNIT (16) blocks
	 * right before this MEP's (1..255), so a far jump to it is the
	 * program's doing (shed.h); 0: nothing said.
	 */
	__u8 shed_run;
	/*
	 * Set only with XEVB_RES_SEGMENT: the segment's place in its fragment.
	 * The record's event_id is first_event_id; frags[0] (if asked for)
	 * refers to the segment's bytes in this frame, seg_bytes of them.
	 */
	__u16 seg_offset;  /* where the segment's bytes start in the fragment */
	__u16 seg_bytes;   /* the fragment's bytes in this packet, padding excluded */
	__u16 frag_length; /* the whole fragment's payload bytes, 1..65535 */
	__u8 seg_last;     /* 1: the segment ends the fragment */
	__u8 seg_pad;
};

/*
 * One fragment, referenced in place: nothing is copied. Of a segment: its
 * bytes in this frame (length = seg_bytes), crc32c the whole fragment's.
 */
struct xevb_frag_ref {
	__u32 event_id;
	__u32 crc32c;
	__u16 payload_off; /* from the frame start */
	__u16 length;
};

/*
 * The MEP header rules, on its 16 bytes at mep (readable: the caller
 * checked). Shared by the linear parser and the multi-buffer walker
 * (mep_parse_ld.h), so both judge a header the same way.
 */
static __always_inline int xevb_mep_hdr_check(const __u8 *mep, struct xevb_pkt_info *pi)
{
	__u32 n;

	if (xevb_ld16(mep) != XEVB_MEP_MAGIC)
		return XEVB_RES_BAD_MAGIC;
	if (mep[2] != XEVB_MEP_VERSION)
		return XEVB_RES_BAD_VERSION;
	if (mep[3] & ~XEVB_MEP_F_KNOWN)
		return XEVB_RES_BAD_FLAGS;
	pi->flags = mep[3];
	pi->source_id = xevb_ld16(mep + 4);
	if (pi->source_id > XEVB_MAX_SOURCE_ID)
		return XEVB_RES_BAD_SOURCE;
	n = xevb_ld16(mep + 6);
	if (n == 0 || n > XEVB_MAX_FRAGS_PER_MEP)
		return XEVB_RES_BAD_NFRAGS;
	pi->n_frags = n;
	pi->run_number = xevb_ld32(mep + 8);
	pi->packet_seq = xevb_ld32(mep + 12);
	return XEVB_RES_MEP;
}

/*
 * The first rules of both walkers: a MEP of mep_len bytes at frame offset
 * mep_off starts in the first 256 bytes, is at most max_len bytes long (else
 * too_long) and has room for its header. Notes where it is in pi, after
 * clearing what only the linear walker may set.
 */
static __always_inline int xevb_mep_place(__u32 mep_off, __u32 mep_len, __u32 max_len, int too_long,
					  struct xevb_pkt_info *pi)
{
	pi->consec = 0;
	pi->shed_run = 0;
	if (mep_off > 256 || mep_len > max_len)
		return too_long;
	if (mep_len < XEVB_MEP_HLEN)
		return XEVB_RES_SHORT_MEP;
	pi->mep_off = (__u16)mep_off;
	pi->mep_len = (__u16)mep_len;
	return XEVB_RES_MEP;
}

/* The next record header, at offset off of a mep_len-byte MEP, is within it (a record is missing at its end). */
static __always_inline int xevb_rec_room(__u32 off, __u32 mep_len)
{
	if (off >= mep_len)
		return XEVB_RES_FRAGS_MISSING;
	if (off + XEVB_REC_HLEN > mep_len)
		return XEVB_RES_REC_OVERRUN;
	return XEVB_RES_MEP;
}

/*
 * The rules for record i, whose 12-byte header (readable) sits at offset off
 * of a mep_len-byte MEP; prev is the previous record's event_id. Sets *next
 * to the following record's offset.
 */
static __always_inline int xevb_rec_check(const __u8 *rec, __u32 i, __u32 off, __u32 mep_len, __u32 prev,
					  __u32 *next)
{
	__u32 eid = xevb_ld32(rec), flen = xevb_ld16(rec + 4);

	if (xevb_ld16(rec + 6) != 0)
		return XEVB_RES_RESERVED;
	if (i > 0 && !xevb_seq_after(eid, prev))
		return XEVB_RES_EVENT_ORDER;
	*next = off + XEVB_REC_HLEN + XEVB_PAD4(flen);
	if (*next > mep_len)
		return XEVB_RES_REC_OVERRUN;
	return XEVB_RES_MEP;
}

/*
 * The rules of wire-format section 1.1 for the one record of a SEGMENT
 * packet, its 12-byte header (readable) at offset 16 of a mep_len-byte MEP
 * (mep_len >= 28: the caller checked). The packet's size gives the
 * segment's: avail bytes follow the record header. Fills pi's seg_* fields.
 */
static __always_inline int xevb_seg_check(const __u8 *rec, __u32 mep_len, struct xevb_pkt_info *pi)
{
	__u32 flen = xevb_ld16(rec + 4), seg_off = xevb_ld16(rec + 6);
	__u32 avail = mep_len - XEVB_MEP_HLEN - XEVB_REC_HLEN, bytes, last;

	if (flen == 0)
		return XEVB_RES_SEG_LENGTH;
	if ((seg_off & 3) || seg_off >= flen)
		return XEVB_RES_SEG_OFFSET;
	if (seg_off + avail < flen) {
		/* Not the last: a whole number of 4-byte words, at least one. */
		if (avail == 0 || (avail & 3))
			return XEVB_RES_SEG_SIZE;
		bytes = avail;
		last = 0;
	} else {
		bytes = flen - seg_off;
		if (avail > XEVB_PAD4(bytes))
			return XEVB_RES_SEG_TRAILING;
		if (avail != XEVB_PAD4(bytes))
			return XEVB_RES_SEG_SIZE;
		last = 1;
	}
	pi->first_event_id = xevb_ld32(rec);
	pi->seg_offset = (__u16)seg_off;
	pi->seg_bytes = (__u16)bytes;
	pi->frag_length = (__u16)flen;
	pi->seg_last = (__u8)last;
	return XEVB_RES_SEGMENT;
}

/*
 * A SEGMENT packet whose MEP header (at mep, mep_len bytes, within
 * XEVB_PARSE_MAX_OFF) passed xevb_mep_hdr_check: exactly one record that
 * fills the packet. consec stays 0: the XDP meta describes MEPs only.
 */
static __always_inline int xevb_seg_parse(const __u8 *mep, const __u8 *data_end, __u32 mep_off, __u32 mep_len,
					  struct xevb_pkt_info *pi, struct xevb_frag_ref *frags)
{
	const __u8 *rec = mep + XEVB_MEP_HLEN;
	int res;

	if (pi->n_frags != 1)
		return XEVB_RES_SEG_NFRAGS;
	if (mep_len <= XEVB_MEP_HLEN)
		return XEVB_RES_FRAGS_MISSING;
	if (mep_len < XEVB_MEP_HLEN + XEVB_REC_HLEN || rec + XEVB_REC_HLEN > data_end)
		return XEVB_RES_REC_OVERRUN;
	res = xevb_seg_check(rec, mep_len, pi);
	if (res != XEVB_RES_SEGMENT)
		return res;
	if (frags) {
		frags[0].event_id = pi->first_event_id;
		frags[0].crc32c = xevb_ld32(rec + 8);
		frags[0].payload_off = (__u16)(mep_off + XEVB_MEP_HLEN + XEVB_REC_HLEN);
		frags[0].length = pi->seg_bytes;
	}
	return XEVB_RES_SEGMENT;
}

/*
 * Where the record walk stands between two records. In user space one call
 * walks a MEP's records; in XDP global functions walk XEVB_WALK_CHUNK of
 * them a call (see below), and this carries the walk from one to the next.
 */
struct xevb_rec_walk {
	__u32 i;       /* records walked */
	__u32 n;       /* records in the MEP (its n_frags, 1..1024) */
	__u32 off;     /* the next record's offset in the MEP */
	__u32 prev;    /* the last record's event_id */
	__u32 gap;     /* non-zero: the event ids so far are not consecutive */
	__u32 mep_off; /* the MEP's, from the frame start (at most 256) */
	__u32 mep_len;
};

/* xevb_rec_walk's: records are left to walk (never a verdict). */
#define XEVB_WALK_MORE (-1)

/*
 * Record idx, at offset w->off of the MEP at mep (its header checked),
 * judged; the walk's offset, prev and gap move past it (the caller counts
 * it in w->i). first: it is record 0; consec: gap is wanted (a constant:
 * the XDP program without meta never reads it). frags, if not NULL,
 * receives the record's entry.
 */
static __always_inline int xevb_rec_next(const __u8 *mep, const __u8 *data_end, struct xevb_rec_walk *w, __u32 idx,
					 const int first, const int consec, struct xevb_pkt_info *pi,
					 struct xevb_frag_ref *frags)
{
	__u32 off = w->off, eid, flen, next;
	const __u8 *rec;
	int res;

	if ((res = xevb_rec_room(off, w->mep_len)) != XEVB_RES_MEP)
		return res;
	/* mep_len <= XEVB_PARSE_MAX_OFF, so this only informs the verifier */
	xevb_opaque(off);
	if (off > XEVB_PARSE_MAX_OFF)
		return XEVB_RES_REC_OVERRUN;
#ifndef __bpf__
	/*
	 * A frame over 64 KiB (a datagram the kernel reassembled): a
	 * payload past that has no 16-bit payload_off. Only a hostile MEP
	 * puts one there (the largest legal record starts near the front).
	 */
	if (w->mep_off + off + XEVB_REC_HLEN > 0xffff)
		return XEVB_RES_REC_OVERRUN;
#endif
	rec = mep + off;
	if (rec + XEVB_REC_HLEN > data_end)
		return XEVB_RES_REC_OVERRUN;
	res = xevb_rec_check(rec, first ? 0 : 1, off, w->mep_len, w->prev, &next);
	if (res != XEVB_RES_MEP)
		return res;
	eid = xevb_ld32(rec);
	flen = xevb_ld16(rec + 4);
	if (frags) {
		frags[idx].event_id = eid;
		frags[idx].crc32c = xevb_ld32(rec + 8);
		frags[idx].payload_off = (__u16)(w->mep_off + off + XEVB_REC_HLEN);
		frags[idx].length = (__u16)flen;
	}
	/*
	 * No branch on the ids: a consec flag set on one path and not on
	 * another would split the verifier's states at every record once
	 * the program reads pi->consec (the XDP meta does).
	 */
	if (first)
		pi->first_event_id = eid;
	else if (consec)
		w->gap |= eid - w->prev - 1;
	w->prev = eid;
	w->off = next;
	return XEVB_RES_MEP;
}

/*
 * Up to max records from where w stands (from_start: record 0 on; a
 * constant): XEVB_RES_MEP once all n are walked (the trailing bytes are
 * the caller's to judge), XEVB_WALK_MORE if records are left, else the
 * verdict. consec, pi, frags: as for xevb_rec_next.
 */
static __always_inline int xevb_rec_walk(const __u8 *mep, const __u8 *data_end, struct xevb_rec_walk *w, __u32 max,
					 const int from_start, const int consec, struct xevb_pkt_info *pi,
					 struct xevb_frag_ref *frags)
{
	struct xevb_rec_walk s = *w; /* in registers, not through w */
	__u32 left = s.n - s.i, k;   /* one counter in the loop, not two */
	int res;

	for (k = 0; k < max; k++) {
		if (k >= left)
			break;
		res = xevb_rec_next(mep, data_end, &s, s.i + k, from_start && k == 0, consec, pi, frags);
		if (res != XEVB_RES_MEP)
			return res;
	}
	s.i += k;
	*w = s;
	return k >= left ? XEVB_RES_MEP : XEVB_WALK_MORE;
}

#ifdef __bpf__
/*
 * In XDP the records are walked by global functions: the verifier checks
 * a global function once, on its own, where it walked an inline loop of
 * 1024 records on every path that led to it (823,000 instructions
 * processed, 2 s of a builder's start). The first XEVB_WALK_CHUNK records
 * (an L1 MEP has 25) in one call, the rest XEVB_WALK_CHUNK a call. The
 * call costs about what the inline loop lost, out of registers in the
 * whole program.
 */
#define XEVB_WALK_CHUNK 32

/* What the walk needs in XDP: the context, and whether pi->consec is wanted (a constant). */
struct xevb_walk_xdp {
	struct xdp_md *ctx;
	int consec;
};
typedef const struct xevb_walk_xdp *xevb_walk_ctx;

/* The MEP at mep_off; NULL past 256 (xevb_mep_place refused that: only the verifier asks). */
static __always_inline const __u8 *xevb_xdp_mep(struct xdp_md *ctx, __u32 mep_off)
{
	if (mep_off > 256)
		return 0;
	return (const __u8 *)(long)ctx->data + mep_off;
}

/* XEVB_WALK_CHUNK records from where w stands. */
static __always_inline int xevb_xdp_chunk(struct xdp_md *ctx, struct xevb_rec_walk *w, const int consec)
{
	const __u8 *mep;

	if (!w || !(mep = xevb_xdp_mep(ctx, w->mep_off)))
		return XEVB_RES_REC_OVERRUN;
	return xevb_rec_walk(mep, (const __u8 *)(long)ctx->data_end, w, XEVB_WALK_CHUNK, 0, consec, 0, 0);
}

/* A later chunk, with and without (_nc) the gap pi->consec needs. */
__attribute__((noinline)) int xevb_xdp_rec_chunk(struct xdp_md *ctx, struct xevb_rec_walk *w)
{
	return xevb_xdp_chunk(ctx, w, 1);
}

__attribute__((noinline)) int xevb_xdp_rec_chunk_nc(struct xdp_md *ctx, struct xevb_rec_walk *w)
{
	return xevb_xdp_chunk(ctx, w, 0);
}

/* The first chunk here, inline (the caller is a global function), the rest a chunk a call. */
static __always_inline int xevb_rec_walk_all(xevb_walk_ctx wctx, const __u8 *mep, const __u8 *data_end,
					     struct xevb_rec_walk *w, struct xevb_pkt_info *pi,
					     struct xevb_frag_ref *frags)
{
	struct xevb_rec_walk more;
	int res;
	__u32 c;

	(void)frags;
	res = xevb_rec_walk(mep, data_end, w, XEVB_WALK_CHUNK, 1, wctx->consec, pi, 0);
	if (res != XEVB_WALK_MORE)
		return res;
	/* A copy for the calls: w stays in registers on the way without them. */
	more = *w;
	for (c = 1; c < XEVB_MAX_FRAGS_PER_MEP / XEVB_WALK_CHUNK && res == XEVB_WALK_MORE; c++)
		res = wctx->consec ? xevb_xdp_rec_chunk(wctx->ctx, &more) :
				     xevb_xdp_rec_chunk_nc(wctx->ctx, &more);
	*w = more;
	/* n_frags <= 1024: never more left */
	return res == XEVB_WALK_MORE ? XEVB_RES_BAD_NFRAGS : res;
}
#else
typedef const void *xevb_walk_ctx; /* XDP's only */

static __always_inline int xevb_rec_walk_all(xevb_walk_ctx wctx, const __u8 *mep, const __u8 *data_end,
					     struct xevb_rec_walk *w, struct xevb_pkt_info *pi,
					     struct xevb_frag_ref *frags)
{
	(void)wctx;
	return xevb_rec_walk(mep, data_end, w, XEVB_MAX_FRAGS_PER_MEP, 1, 1, pi, frags);
}
#endif

/*
 * The records of the mep_len-byte MEP at mep (frame offset mep_off), whose
 * header checked out with n records; then nothing may trail them, and
 * pi->consec says whether their ids are consecutive (in XDP only if
 * wctx->consec).
 */
static __always_inline int xevb_mep_records(const __u8 *mep, const __u8 *data_end, __u32 mep_off, __u32 mep_len,
					    __u32 n, struct xevb_pkt_info *pi, struct xevb_frag_ref *frags,
					    xevb_walk_ctx wctx)
{
	struct xevb_rec_walk w = { .n = n, .off = XEVB_MEP_HLEN, .mep_off = mep_off, .mep_len = mep_len };
	int res;

	res = xevb_rec_walk_all(wctx, mep, data_end, &w, pi, frags);
	if (res != XEVB_RES_MEP)
		return res;
	if (w.off != mep_len)
		return XEVB_RES_TRAILING;
#ifdef __bpf__
	pi->consec = wctx->consec && w.gap == 0;
#else
	pi->consec = w.gap == 0;
#endif
	return XEVB_RES_MEP;
}

#ifdef __bpf__
static __always_inline int xevb_xdp_records(struct xdp_md *ctx, __u32 mep_off, __u32 mep_len, __u32 n,
					    struct xevb_pkt_info *pi, const int consec)
{
	const struct xevb_walk_xdp wctx = { .ctx = ctx, .consec = consec };
	const __u8 *mep = xevb_xdp_mep(ctx, mep_off);

	if (!mep || !pi)
		return XEVB_RES_REC_OVERRUN;
	return xevb_mep_records(mep, (const __u8 *)(long)ctx->data_end, mep_off, mep_len, n, pi, 0, &wctx);
}

/* A MEP's records in XDP, with and without (_nc) pi->consec: one call for up to XEVB_WALK_CHUNK. */
__attribute__((noinline)) int xevb_xdp_mep_records(struct xdp_md *ctx, __u32 mep_off, __u32 mep_len, __u32 n,
						   struct xevb_pkt_info *pi)
{
	return xevb_xdp_records(ctx, mep_off, mep_len, n, pi, 1);
}

__attribute__((noinline)) int xevb_xdp_mep_records_nc(struct xdp_md *ctx, __u32 mep_off, __u32 mep_len, __u32 n,
						      struct xevb_pkt_info *pi)
{
	return xevb_xdp_records(ctx, mep_off, mep_len, n, pi, 0);
}
#endif

/*
 * Validate the MEP at frame + mep_off, mep_len bytes long. frags, if not
 * NULL, receives one entry per record (room for n_frags, up to 1024).
 * A SEGMENT packet (flag set, header valid) is judged by xevb_seg_parse.
 * wctx: XDP's (the walk's global functions read the frame through it);
 * unused elsewhere.
 */
static __always_inline int xevb_mep_parse_in(const __u8 *frame, const __u8 *data_end, __u32 mep_off, __u32 mep_len,
					     struct xevb_pkt_info *pi, struct xevb_frag_ref *frags,
					     xevb_walk_ctx wctx)
{
	const __u8 *mep;
	int res;

	res = xevb_mep_place(mep_off, mep_len, XEVB_PARSE_MAX_OFF, XEVB_RES_MULTIBUF, pi);
	if (res != XEVB_RES_MEP)
		return res;
	mep = frame + mep_off;
	if (mep + XEVB_MEP_HLEN > data_end)
		return XEVB_RES_SHORT_MEP;

	res = xevb_mep_hdr_check(mep, pi);
	if (res != XEVB_RES_MEP)
		return res;
	if (pi->flags & XEVB_MEP_F_SEGMENT)
		return xevb_seg_parse(mep, data_end, mep_off, mep_len, pi, frags);
#ifdef __bpf__
	(void)frags;
	return wctx->consec ? xevb_xdp_mep_records(wctx->ctx, mep_off, mep_len, pi->n_frags, pi) :
			      xevb_xdp_mep_records_nc(wctx->ctx, mep_off, mep_len, pi->n_frags, pi);
#else
	return xevb_mep_records(mep, data_end, mep_off, mep_len, pi->n_frags, pi, frags, wctx);
#endif
}

/*
 * Classify one Ethernet frame. frame_len is the whole frame; in XDP,
 * data_end may end earlier (multi-buffer frames), everywhere else it is
 * frame + frame_len.
 */
static __always_inline int xevb_classify_in(const __u8 *frame, const __u8 *data_end, __u32 frame_len,
					    const struct xevb_parse_cfg *cfg, struct xevb_pkt_info *pi,
					    struct xevb_frag_ref *frags, xevb_walk_ctx wctx)
{
	const __u8 *ip, *udp;
	__u32 l3, ihl, tot, avail, mep_off, mep_len;
	__u16 proto, frag;
	__u8 ipp;
	int is_udp;

	if (frame + XEVB_ETH_HLEN > data_end)
		return XEVB_RES_OTHER;
	proto = xevb_ld16(frame + 12);
	l3 = XEVB_ETH_HLEN;
	if (proto == XEVB_ETH_P_8021Q) {
		if (frame + XEVB_ETH_HLEN + XEVB_VLAN_HLEN > data_end)
			return XEVB_RES_OTHER;
		proto = xevb_ld16(frame + 16);
		l3 += XEVB_VLAN_HLEN;
	}
	if (proto != XEVB_ETH_P_IP)
		return XEVB_RES_OTHER;

	ip = frame + l3;
	/* Protocol byte first: truncation only matters for our own traffic. */
	if (ip + 10 > data_end)
		return XEVB_RES_OTHER;
	ipp = ip[9];
	if (cfg->ip_proto && ipp == cfg->ip_proto)
		is_udp = 0;
	else if (cfg->udp_port && ipp == XEVB_IPPROTO_UDP)
		is_udp = 1;
	else
		return XEVB_RES_OTHER;

	avail = frame_len - l3;
	ihl = (ip[0] & 0x0f) * 4u;
	if (ip + 20 > data_end || avail < 20)
		return is_udp ? XEVB_RES_OTHER : XEVB_RES_TRUNC_IP;
	if ((ip[0] >> 4) != 4)
		return XEVB_RES_OTHER;
	frag = xevb_ld16(ip + 6);
	if (is_udp) {
		/* Later fragments carry no UDP header: not ours to judge. */
		if (frag & 0x1fff)
			return XEVB_RES_OTHER;
		if (ihl < 20 || ip + ihl + 4 > data_end || ihl + 4 > avail)
			return XEVB_RES_OTHER;
		udp = ip + ihl;
		if (xevb_ld16(udp + 2) != cfg->udp_port)
			return XEVB_RES_OTHER;
	} else if (ihl < 20) {
		return XEVB_RES_BAD_IHL;
	}
	if (ihl > avail)
		return XEVB_RES_TRUNC_IP;

	pi->saddr = xevb_cpu_to_be32(xevb_ld32(ip + 12));
	pi->daddr = xevb_cpu_to_be32(xevb_ld32(ip + 16));
	pi->is_udp = is_udp;
	if (frag & 0x3fff) /* MF or offset: leave reassembly to the kernel */
		return XEVB_RES_IP_FRAGMENT;

	tot = xevb_ld16(ip + 2);
	if (tot < ihl || tot > avail)
		return XEVB_RES_IP_LEN;
	mep_off = l3 + ihl;
	mep_len = tot - ihl;
	if (is_udp) {
		if (mep_len < XEVB_UDP_HLEN)
			return XEVB_RES_UDP_TRUNC;
		udp = ip + ihl;
		if (udp + XEVB_UDP_HLEN > data_end)
			return XEVB_RES_UDP_TRUNC;
		if (xevb_ld16(udp + 4) != mep_len)
			return XEVB_RES_UDP_LEN;
		mep_off += XEVB_UDP_HLEN;
		mep_len -= XEVB_UDP_HLEN;
	}
	/*
	 * Only XDP sees part of a frame: the rest sits in its frags. Where the
	 * MEP lies is known, so the multi-buffer walker can take it from here.
	 */
	pi->mep_off = (__u16)mep_off;
	pi->mep_len = (__u16)mep_len;
	if (ip + tot > data_end)
		return XEVB_RES_MULTIBUF;
	return xevb_mep_parse_in(frame, data_end, mep_off, mep_len, pi, frags, wctx);
}

#ifdef __bpf__
/*
 * Classify the XDP frame at ctx (frame_len bytes, its linear part from
 * ctx->data to ctx->data_end); consec: fill pi->consec (a constant; 0:
 * pi->consec says nothing).
 */
static __always_inline int xevb_xdp_classify(struct xdp_md *ctx, __u32 frame_len, const struct xevb_parse_cfg *cfg,
					     struct xevb_pkt_info *pi, const int consec)
{
	const struct xevb_walk_xdp wctx = { .ctx = ctx, .consec = consec };

	return xevb_classify_in((const __u8 *)(long)ctx->data, (const __u8 *)(long)ctx->data_end, frame_len, cfg,
				pi, 0, &wctx);
}
#else
static __always_inline int xevb_mep_parse(const __u8 *frame, const __u8 *data_end, __u32 mep_off, __u32 mep_len,
					  struct xevb_pkt_info *pi, struct xevb_frag_ref *frags)
{
	return xevb_mep_parse_in(frame, data_end, mep_off, mep_len, pi, frags, 0);
}

static __always_inline int xevb_classify(const __u8 *frame, const __u8 *data_end, __u32 frame_len,
					 const struct xevb_parse_cfg *cfg, struct xevb_pkt_info *pi,
					 struct xevb_frag_ref *frags)
{
	return xevb_classify_in(frame, data_end, frame_len, cfg, pi, frags, 0);
}
#endif

#endif /* XEVB_MEP_PARSE_H */

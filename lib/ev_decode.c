// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The strict decoder of built events (wire-format section 2), for the
 * library's event views and the xevb tools alike (lib/shared/xl_event.h):
 * it also keeps each fragment's offset (now, or on first use for a lazy
 * view), so that fragment i is found in O(1). An object of its own that
 * exports nothing, so that the tools can link it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include "internal.h"

/* A broken rule: the sentence in err, the kind (enum xevb_broken, > 0) returned. */
#define fail(err, errlen, kind, ...) (xl_fmt(err, errlen, __VA_ARGS__), (kind))

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The fixed header as decode_head found it valid. */
struct head {
	uint32_t total, event_id;
	uint16_t n_frags, n_expected;
	uint8_t flags;
	bool incomplete;
};

static int decode_head(const uint8_t *buf, size_t len, struct head *h, char *err, size_t errlen)
{
	if (len < XL_EVT_HLEN)
		return fail(err, errlen, XEVB_BROKEN_SHORT, "%zu bytes, less than an event header (32)", len);
	if (xl_ld32(buf) != XL_EVT_MAGIC)
		return fail(err, errlen, XEVB_BROKEN_MAGIC, "bad magic 0x%08x (an event starts with \"EVNT\")",
			    xl_ld32(buf));
	if (buf[4] != XL_EVT_VERSION)
		return fail(err, errlen, XEVB_BROKEN_VERSION, "unknown event version %u (this libxevb reads 1)",
			    buf[4]);
	h->flags = buf[5];
	if (h->flags & ~XL_EVT_F_INCOMPL)
		return fail(err, errlen, XEVB_BROKEN_FLAGS, "unknown event flags 0x%02x", h->flags);
	if (xl_ld16(buf + 22))
		return fail(err, errlen, XEVB_BROKEN_RESERVED, "event header reserved field 0x%04x, not 0",
			    xl_ld16(buf + 22));
	h->total = xl_ld32(buf + 16);
	if (h->total != len)
		return fail(err, errlen, XEVB_BROKEN_TOTAL_LEN, "total_length %u, but the event is %zu bytes",
			    h->total, len);
	h->event_id = xl_ld32(buf + 12);
	h->n_frags = xl_ld16(buf + 6);
	h->n_expected = xl_ld16(buf + 20);
	if (h->n_expected == 0 || h->n_expected > XL_MAX_SOURCES)
		return fail(err, errlen, XEVB_BROKEN_N_EXPECTED, "event %u: n_expected %u (1..4096)", h->event_id,
			    h->n_expected);
	if (h->n_frags > h->n_expected)
		return fail(err, errlen, XEVB_BROKEN_N_FRAGS, "event %u: n_frags %u > n_expected %u", h->event_id,
			    h->n_frags, h->n_expected);
	h->incomplete = h->flags & XL_EVT_F_INCOMPL;
	if (h->incomplete != (h->n_frags < h->n_expected))
		return fail(err, errlen, XEVB_BROKEN_INCOMPLETE_FLAG,
			    "event %u: INCOMPLETE %s with %u of %u fragments", h->event_id,
			    h->incomplete ? "set" : "clear", h->n_frags, h->n_expected);
	return 0;
}

/*
 * Why record i at off is wrong (its header, length or padding): the
 * sentence in err, the rule returned. Off the hot path: the walk below
 * only tests, and comes here to say what it found.
 */
static __attribute__((noinline, cold)) int record_fault(const uint8_t *buf, size_t len, size_t off, uint32_t i,
							int prev, char *err, size_t errlen)
{
	uint16_t sid;
	uint32_t flen;
	uint64_t padded;

	if (len - off < XL_EVT_REC_HLEN)
		return fail(err, errlen, XEVB_BROKEN_REC_TRUNC, "record %u header at offset %zu runs past the end",
			    i, off);
	sid = xl_ld16(buf + off);
	if (xl_ld16(buf + off + 2))
		return fail(err, errlen, XEVB_BROKEN_REC_RESERVED,
			    "record %u (source %u): reserved field 0x%04x, not 0", i, sid, xl_ld16(buf + off + 2));
	if (sid > XL_MAX_SOURCE_ID)
		return fail(err, errlen, XEVB_BROKEN_SOURCE_ID, "record %u: source_id %u (0..4095)", i, sid);
	if ((int)sid <= prev)
		return fail(err, errlen, XEVB_BROKEN_REC_ORDER,
			    "record %u: source_id %u after %d (ascending order)", i, sid, prev);
	flen = xl_ld32(buf + off + 4);
	off += XL_EVT_REC_HLEN;
	padded = XL_PAD4(flen);
	if (padded > len - off)
		return fail(err, errlen, XEVB_BROKEN_REC_TRUNC,
			    "record %u (source %u): length %u runs past the end", i, sid, flen);
	return fail(err, errlen, XEVB_BROKEN_PADDING, "record %u (source %u): non-zero padding", i, sid);
}

/*
 * A record's size when it is not the one before's (sources of one size
 * are the usual event): a call, so that the compiler keeps the test a
 * branch. The walk then steps by the size it predicts, and finding the
 * next record's start does not wait for this one's length to load: the
 * records are checked side by side (a conditional move would put the load
 * back on that path). On a miss the step is the record's own, so off is
 * always exactly the next record's start.
 */
static __attribute__((noinline, cold)) size_t new_step(size_t size)
{
	__asm__("" : "+r"(size)); /* nor may the compiler see through it */
	return size;
}

/*
 * The n fragment records from *offp: each header, length and padding
 * checked, its offset kept in offs (the fragment index; NULL: not kept,
 * a lazy view's is written on first use), its source marked
 * in present (incomplete events; else NULL), its CRC-32C checked when chk
 * asks (XEVB_EV_CRC_BAD in *flagsp). 0, or the rule broken. The loop
 * every record of every event goes through: locals only, one test per
 * record for all its rules, the reasons worked out elsewhere. The index
 * spares every later pass over the records the walk's chain of loads
 * (each record's length says where the next one is).
 */
static inline __attribute__((always_inline)) int decode_records(const uint8_t *buf, size_t len, uint32_t n,
								const struct xl_check *chk, uint32_t *offs,
								uint64_t *present, size_t *offp, uint32_t *flagsp,
								char *err, size_t errlen)
{
	bool crc = chk && (chk->verify & XL_VERIFY_CRC);
	uint32_t flags = 0;
	size_t off = *offp, step = 0;
	int prev = -1;

	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *r = buf + off, *p = r + XL_EVT_REC_HLEN;
		uint32_t sid, flen, pad;
		uint64_t padded;

		if (len - off < XL_EVT_REC_HLEN)
			return record_fault(buf, len, off, i, prev, err, errlen);
		sid = xl_ld16(r);
		flen = xl_ld32(r + 4);
		padded = XL_PAD4(flen);
		pad = (uint32_t)(padded - flen);
		/* The padding: the low pad bytes of the payload's last word (there is one when pad > 0). */
		if (xl_ld16(r + 2) || sid > XL_MAX_SOURCE_ID || (int)sid <= prev ||
		    padded > len - off - XL_EVT_REC_HLEN ||
		    (pad && (xl_ld32(p + padded - 4) & ((1u << (8 * pad)) - 1))))
			return record_fault(buf, len, off, i, prev, err, errlen);
		if (offs)
			offs[i] = (uint32_t)off;
		if (present)
			present[sid / 64] |= 1ull << (sid % 64);
		prev = (int)sid;
		/* The next record where one of this one's size ends: see new_step. */
		if (__builtin_expect(XL_EVT_REC_HLEN + padded != step, 0))
			step = new_step(XL_EVT_REC_HLEN + padded);
		off += step;
		if (crc && !(flags & XEVB_EV_CRC_BAD) && xl_crc32c(0, p, flen) != xl_ld32(r + 8))
			flags |= XEVB_EV_CRC_BAD;
	}
	*offp = off;
	*flagsp = flags;
	return 0;
}

/* The missing list of nmiss ids at *off: rising, none of the present sources, zero padding. */
static int decode_missing(const uint8_t *buf, size_t len, uint32_t nmiss, const uint64_t *present, size_t *offp,
			  char *err, size_t errlen)
{
	size_t off = *offp, bytes = XL_PAD4(2 * nmiss);
	int prev = -1;

	if (len - off < bytes)
		return fail(err, errlen, XEVB_BROKEN_MISSING_TRUNC,
			    "missing list of %u ids needs %zu bytes, %zu left", nmiss, bytes, len - off);
	for (uint32_t i = 0; i < nmiss; i++) {
		uint16_t sid = xl_ld16(buf + off + 2 * i);
		if (sid > XL_MAX_SOURCE_ID || (int)sid <= prev)
			return fail(err, errlen, XEVB_BROKEN_MISSING_ORDER,
				    "missing id %u: %u after %d (ascending, 0..4095)", i, sid, prev);
		if (present[sid / 64] & (1ull << (sid % 64)))
			return fail(err, errlen, XEVB_BROKEN_MISSING_PRESENT, "source %u both present and missing",
				    sid);
		prev = sid;
	}
	if (!all_zero(buf + off + 2 * nmiss, bytes - 2 * nmiss))
		return fail(err, errlen, XEVB_BROKEN_MISSING_PAD, "non-zero padding after the missing list");
	*offp = off + bytes;
	return 0;
}

static int grow_offsets(struct xl_ev *e, uint32_t n)
{
	uint32_t *o;

	if (n <= e->off_cap)
		return 0;
	o = realloc(e->off, (n < 16 ? 16 : n) * sizeof(*o));
	if (!o)
		return -ENOMEM;
	e->off = o;
	e->off_cap = n < 16 ? 16 : n;
	return 0;
}

/* The rule broken, kept in e for the caller's count; the decoder's -EBADMSG. */
static int broke(struct xl_ev *e, int kind)
{
	e->broken = (uint8_t)kind;
	return -EBADMSG;
}

int xl_ev_decode(struct xl_ev *e, const uint8_t *buf, size_t len, const struct xl_check *chk, char *err,
		 size_t errlen)
{
	uint64_t present[XL_MAX_SOURCES / 64];
	struct head h = { 0 };
	size_t off = XL_EVT_HLEN;
	uint32_t nmiss, flags = 0;
	int rc;

	e->broken = XEVB_BROKEN_NONE;
	if ((rc = decode_head(buf, len, &h, err, errlen)))
		return broke(e, rc);
	if (grow_offsets(e, h.n_frags)) {
		xl_fmt(err, errlen, "out of memory for %u fragments", h.n_frags);
		return -ENOMEM;
	}
	if (h.incomplete)
		memset(present, 0, sizeof(present));
	/* The common cases in loops of their own: no CRC check, no present set to keep, the index or not. */
	if (!h.incomplete && !(chk && (chk->verify & XL_VERIFY_CRC)))
		rc = e->lazy ? decode_records(buf, len, h.n_frags, NULL, NULL, NULL, &off, &flags, err, errlen) :
			       decode_records(buf, len, h.n_frags, NULL, e->off, NULL, &off, &flags, err, errlen);
	else
		rc = decode_records(buf, len, h.n_frags, chk, e->lazy ? NULL : e->off,
				    h.incomplete ? present : NULL, &off, &flags, err, errlen);
	if (rc)
		return broke(e, rc);
	__atomic_store_n(&e->idx, e->lazy ? XL_IDX_NONE : XL_IDX_BUILT, __ATOMIC_RELAXED);
	nmiss = (uint32_t)h.n_expected - h.n_frags;
	e->missing_off = (uint32_t)off;
	if (nmiss) {
		if ((rc = decode_missing(buf, len, nmiss, present, &off, err, errlen)))
			return broke(e, rc);
	}
	if (off != len)
		return broke(e, fail(err, errlen, XEVB_BROKEN_TRAILING, "%zu bytes after the event's end",
				     len - off));
	e->pub.run_number = xl_ld32(buf + 8);
	e->pub.event_id = h.event_id;
	e->pub.build_ns = xl_ld64(buf + 24);
	e->pub.flags = h.flags | flags;
	e->pub.n_frags = h.n_frags;
	e->pub.n_expected = h.n_expected;
	e->pub.n_missing = nmiss;
	e->pub.length = h.total;
	e->pub.data = buf;
	/* The caller's check while the event's bytes are in cache. */
	if (chk && chk->fn && chk->fn(chk->ctx, &e->pub))
		e->pub.flags |= XEVB_EV_CHECK_BAD;
	return 0;
}

/*
 * A lazy view's index from its records, checked sound by the decoder (so
 * the walk needs no test) and never changed while the view is valid;
 * room made by the decoder (nothing to fail here). One thread writes it,
 * others asking meanwhile wait for it: a view is read, never written, by
 * the threads it is handed to.
 */
const uint32_t *xl_ev_index_slow(struct xl_ev *e)
{
	uint32_t st = XL_IDX_NONE;

	if (__atomic_compare_exchange_n(&e->idx, &st, XL_IDX_BUSY, false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		const uint8_t *d = e->pub.data;
		size_t off = XL_EVT_HLEN;

		for (uint32_t i = 0; i < e->pub.n_frags; i++) {
			e->off[i] = (uint32_t)off;
			off += XL_EVT_REC_HLEN + XL_PAD4(xl_ld32(d + off + 4));
		}
		__atomic_store_n(&e->idx, XL_IDX_BUILT, __ATOMIC_RELEASE);
		return e->off;
	}
	while (__atomic_load_n(&e->idx, __ATOMIC_ACQUIRE) != XL_IDX_BUILT)
		sched_yield();
	return e->off;
}

void xl_ev_release(struct xl_ev *e)
{
	free(e->off);
	e->off = NULL;
	e->off_cap = 0;
}

const char *xl_broken_name(int kind)
{
	static const char *const n[XEVB_BROKEN__COUNT] = {
		[XEVB_BROKEN_NONE] = "none",
		[XEVB_BROKEN_SHORT] = "short",
		[XEVB_BROKEN_MAGIC] = "bad_magic",
		[XEVB_BROKEN_VERSION] = "bad_version",
		[XEVB_BROKEN_FLAGS] = "unknown_flags",
		[XEVB_BROKEN_RESERVED] = "reserved_nonzero",
		[XEVB_BROKEN_TOTAL_LEN] = "bad_total_length",
		[XEVB_BROKEN_N_EXPECTED] = "bad_n_expected",
		[XEVB_BROKEN_N_FRAGS] = "too_many_frags",
		[XEVB_BROKEN_INCOMPLETE_FLAG] = "bad_incomplete_flag",
		[XEVB_BROKEN_REC_TRUNC] = "record_overrun",
		[XEVB_BROKEN_REC_RESERVED] = "record_reserved_nonzero",
		[XEVB_BROKEN_SOURCE_ID] = "bad_source_id",
		[XEVB_BROKEN_REC_ORDER] = "record_order",
		[XEVB_BROKEN_PADDING] = "padding_nonzero",
		[XEVB_BROKEN_MISSING_TRUNC] = "missing_list_short",
		[XEVB_BROKEN_MISSING_ORDER] = "missing_list_order",
		[XEVB_BROKEN_MISSING_PRESENT] = "missing_but_present",
		[XEVB_BROKEN_MISSING_PAD] = "missing_pad_nonzero",
		[XEVB_BROKEN_TRAILING] = "trailing_bytes",
		[XEVB_BROKEN_TOO_BIG] = "too_big",
		[XEVB_BROKEN_TRUNCATED] = "truncated_stream",
		[XEVB_BROKEN_STALLED] = "partial_timeout",
		[XEVB_BROKEN_BUFFER] = "buffer_limit",
		[XEVB_BROKEN_READ] = "read_error",
		[XEVB_BROKEN_NOMEM] = "out_of_memory",
		[XEVB_BROKEN_FILE] = "file_damaged",
	};

	return kind >= 0 && kind < XEVB_BROKEN__COUNT ? n[kind] : NULL;
}

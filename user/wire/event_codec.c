// SPDX-License-Identifier: GPL-2.0-only
/* Built-event encoding and strict decoding (wire-format section 2). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/event_codec.h"
#include "xl_event.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

/* The missing list (ascending ids, zero-padded to 4 bytes); returns its end. */
static uint8_t *put_missing(uint8_t *s, const struct xevb_event *ev)
{
	uint32_t nmiss = 0;

	for (uint32_t i = 0; i < ev->n_expected; i++)
		if (ev->frags[i].frame_idx == UINT32_MAX) {
			xevb_st16(s, ev->source_ids[i]);
			s += 2;
			nmiss++;
		}
	if (nmiss & 1) {
		xevb_st16(s, 0);
		s += 2;
	}
	return s;
}

static void put_event_header(uint8_t *h, const struct xevb_event *ev, uint32_t recv, uint32_t total,
			     uint64_t build_ns)
{
	xevb_st32(h, XEVB_EVT_MAGIC);
	h[4] = XEVB_EVT_VERSION;
	h[5] = recv < ev->n_expected ? XEVB_EVT_F_INCOMPLETE : 0;
	xevb_st16(h + 6, (uint16_t)recv);
	xevb_st32(h + 8, ev->run_number);
	xevb_st32(h + 12, ev->event_id);
	xevb_st32(h + 16, total);
	xevb_st16(h + 20, ev->n_expected);
	xevb_st16(h + 22, 0);
	xevb_st64(h + 24, build_ns);
}

int xevb_event_encode(const struct xevb_event *ev, uint64_t build_ns, uint8_t *scratch, size_t scratch_len,
		      struct iovec *iov, size_t iov_max, size_t *total_len)
{
	const uint32_t n = ev->n_expected;
	uint8_t *s, *run, *const end = scratch + scratch_len;
	uint64_t total = XEVB_EVT_HLEN;
	uint32_t recv = 0, nmiss;
	size_t niov = 0;
	int prev = -1;
	bool incomplete;

	if (n == 0 || n > XEVB_MAX_SOURCES)
		return -EINVAL;
	if (scratch_len < XEVB_EVT_HLEN)
		return -ENOSPC;
	run = scratch;
	s = scratch + XEVB_EVT_HLEN;
	for (uint32_t i = 0; i < n; i++) {
		const struct xevb_frag_slot *fs = &ev->frags[i];
		uint16_t sid = ev->source_ids[i];
		uint32_t pad, np;

		if (sid > XEVB_MAX_SOURCE_ID || (int)sid <= prev)
			return -EINVAL;
		prev = sid;
		if (fs->frame_idx == UINT32_MAX)
			continue;
		if (end - s < (ptrdiff_t)(XEVB_EVT_REC_HLEN + 3))
			return -ENOSPC;
		xevb_st16(s, sid);
		xevb_st16(s + 2, 0);
		xevb_st32(s + 4, fs->length);
		xevb_st32(s + 8, xevb_event_crc(ev, i));
		s += XEVB_EVT_REC_HLEN;
		total += XEVB_EVT_REC_HLEN + XEVB_PAD4((uint32_t)fs->length);
		recv++;
		if (fs->length == 0)
			continue; /* nothing to send: the scratch run goes on */
		np = xevb_event_npieces(ev, i);
		if (niov + 1 + (np ? np : 1) > iov_max)
			return -ENOSPC;
		iov[niov++] = (struct iovec){ run, (size_t)(s - run) };
		if (np) {
			/* Segments (wire format 1.1): the fragment is its pieces, in order, where they arrived. */
			const struct xevb_seg_piece *p = ev->pieces[i].p;

			for (uint32_t k = 0; k < np; k++)
				iov[niov++] = (struct iovec){
					(void *)(ev->frame_data[p[k].frame_idx] + p[k].payload_off), p[k].bytes
				};
		} else {
			iov[niov++] = (struct iovec){ (void *)xevb_event_payload(ev, i), fs->length };
		}
		/* The padding opens the next scratch run, ahead of the next record. */
		pad = XEVB_PAD4((uint32_t)fs->length) - fs->length;
		run = s;
		memset(s, 0, pad);
		s += pad;
	}
	if (recv != ev->n_frags)
		return -EINVAL;
	incomplete = recv < n;
	if ((ev->flags & ~XEVB_EVT_F_INCOMPLETE) || !!(ev->flags & XEVB_EVT_F_INCOMPLETE) != incomplete)
		return -EINVAL;
	nmiss = n - recv;
	if (nmiss) {
		uint32_t bytes = XEVB_PAD4(2 * nmiss);
		if (end - s < (ptrdiff_t)bytes)
			return -ENOSPC;
		s = put_missing(s, ev);
		total += bytes;
	}
	if (total > UINT32_MAX)
		return -EMSGSIZE;
	if (s > run) {
		if (niov + 1 > iov_max)
			return -ENOSPC;
		iov[niov++] = (struct iovec){ run, (size_t)(s - run) };
	}
	put_event_header(scratch, ev, recv, (uint32_t)total, build_ns);
	*total_len = total;
	return (int)niov;
}

/*
 * A payload of 16 to 64 bytes (an L1 fragment is 32) without a call: two
 * overlapping moves of a fixed size, reading and writing exactly len bytes.
 */
static inline void copy_payload(uint8_t *restrict d, const uint8_t *restrict p, uint32_t len)
{
	if (len < 16 || len > 64) {
		memcpy(d, p, len);
	} else if (len <= 32) {
		memcpy(d, p, 16);
		memcpy(d + len - 16, p + len - 16, 16);
	} else {
		memcpy(d, p, 32);
		memcpy(d + len - 32, p + len - 32, 32);
	}
}

/* A fragment that came in segments: its pieces joined, in order. */
static void copy_pieces(uint8_t *d, const uint8_t *const *frame_data, const struct xevb_frag_pieces *fp)
{
	for (uint32_t k = 0; k < fp->n; k++) {
		const struct xevb_seg_piece *p = &fp->p[k];

		memcpy(d, frame_data[p->frame_idx] + p->payload_off, p->bytes);
		d += p->bytes;
	}
}

/*
 * One pass over the row, a record at a time; the event header last, once
 * the size is known. restrict: the stores into dst never touch the row,
 * the source ids or the frame table, so nothing is reloaded after them.
 */
int xevb_event_encode_into(const struct xevb_event *ev, uint64_t build_ns, uint8_t *dst, size_t cap,
			   size_t *total_len)
{
	const uint32_t n = ev->n_expected;
	const struct xevb_frag_slot *restrict frags = ev->frags;
	const uint16_t *restrict sids = ev->source_ids;
	const uint8_t *const *restrict frame_data = ev->frame_data;
	uint8_t *restrict s = dst + XEVB_EVT_HLEN;
	const uint8_t *const end = dst + cap;
	uint32_t recv = 0, nmiss;
	int prev = -1;

	if (n == 0 || n > XEVB_MAX_SOURCES)
		return -EINVAL;
	if (cap < XEVB_EVT_HLEN)
		return -ENOSPC;
	for (uint32_t i = 0; i < n; i++) {
		const struct xevb_frag_slot fs = frags[i];
		uint32_t sid = sids[i], len = fs.length, padded = XEVB_PAD4(len);
		const uint8_t *p;

		if (sid > XEVB_MAX_SOURCE_ID || (int)sid <= prev)
			return -EINVAL;
		prev = (int)sid;
		if (fs.frame_idx == UINT32_MAX)
			continue;
		if ((size_t)(end - s) < XEVB_EVT_REC_HLEN + (size_t)padded)
			return -ENOSPC;
		p = frame_data[fs.frame_idx] + fs.payload_off;
		xevb_st32(s, sid << 16); /* source_id, reserved 0 */
		xevb_st32(s + 4, len);
		memcpy(s + 8, p - 4, 4); /* the CRC: big-endian in the MEP as here */
		s += XEVB_EVT_REC_HLEN;
		if (padded != len)
			xevb_st32(s + padded - 4, 0);
		if (__builtin_expect(ev->pieces && ev->pieces[i].n, 0))
			copy_pieces(s, frame_data, &ev->pieces[i]);
		else
			copy_payload(s, p, len);
		s += padded;
		recv++;
	}
	if (recv != ev->n_frags)
		return -EINVAL;
	if ((ev->flags & ~XEVB_EVT_F_INCOMPLETE) || !!(ev->flags & XEVB_EVT_F_INCOMPLETE) != (recv < n))
		return -EINVAL;
	nmiss = n - recv;
	if (nmiss) {
		if ((size_t)(end - s) < XEVB_PAD4(2 * nmiss))
			return -ENOSPC;
		s = put_missing(s, ev);
	}
	if ((size_t)(s - dst) > UINT32_MAX)
		return -EMSGSIZE;
	put_event_header(dst, ev, recv, (uint32_t)(s - dst), build_ns);
	*total_len = (size_t)(s - dst);
	return 0;
}

void xevb_iov_advance(struct iovec **iov, size_t *n, size_t w)
{
	while (w > 0) {
		struct iovec *v = *iov;

		if (w >= v->iov_len) {
			w -= v->iov_len;
			(*iov)++;
			(*n)--;
		} else {
			v->iov_base = (uint8_t *)v->iov_base + w;
			v->iov_len -= w;
			w = 0;
		}
	}
}

int xevb_writev_all(int fd, struct iovec *iov, size_t n)
{
	while (n) {
		ssize_t w;

		if (iov->iov_len == 0) {
			iov++;
			n--;
			continue;
		}
		w = writev(fd, iov, n > IOV_MAX ? IOV_MAX : (int)n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		xevb_iov_advance(&iov, &n, (size_t)w);
	}
	return 0;
}

/* The decoder's rules by libxevb's names; ours for the payload checks and the stream reader. */
const char *xevb_evt_err_name(int err)
{
	static const char *const own[XEVB_EVT_E__COUNT] = {
		[XEVB_EVT_OK] = "ok",
		[XEVB_EVT_E_CRC] = "crc_mismatch",
		[XEVB_EVT_E_CONTENT] = "content_mismatch",
		[XEVB_EVT_E_TOO_BIG] = "too_big",
		[XEVB_EVT_E_EOF] = "truncated_stream",
	};

	if (err < 0)
		err = -err;
	if (err >= XEVB_EVT_E__COUNT)
		return "unknown";
	return own[err] ? own[err] : xl_broken_name(err);
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -code;
}

/*
 * The emulator pattern once, so that content checks run at memcmp speed,
 * and the CRC-32C of each of its prefixes: a payload equal to the pattern
 * has, byte for byte, the pattern's CRC, which depends only on its length.
 */
#define EMU_REF_LEN 65536u
static uint8_t emu_ref[EMU_REF_LEN];
static uint32_t emu_crc[EMU_REF_LEN + 1];
static pthread_once_t emu_once = PTHREAD_ONCE_INIT;

static void emu_ref_init(void)
{
	xevb_emu_fill(emu_ref, sizeof(emu_ref));
	emu_crc[0] = 0;
	for (uint32_t i = 0; i < EMU_REF_LEN; i++)
		emu_crc[i + 1] = xevb_crc32c(emu_crc[i], emu_ref + i, 1);
}

typedef uint64_t u64x2 __attribute__((vector_size(16)));

/*
 * a[0..n) == b[0..n), inline for the small payloads (32-100 B) of L1 and
 * HLT: 16 bytes a step, differences or'ed together, no early exit; the
 * last bytes in one load that overlaps what was compared before (and
 * under 16 bytes, two loads that overlap), never byte by byte but for
 * the shortest.
 */
static inline bool same_bytes_small(const uint8_t *a, const uint8_t *b, size_t n)
{
	u64x2 dv = { 0, 0 }, x, y;
	uint64_t x8, y8, z8, w8;
	uint32_t x4, y4, z4, w4;
	uint64_t diff = 0;

	if (n >= 16) {
		for (size_t i = 0; i + 16 < n; i += 16) {
			memcpy(&x, a + i, 16);
			memcpy(&y, b + i, 16);
			dv |= x ^ y;
		}
		memcpy(&x, a + n - 16, 16);
		memcpy(&y, b + n - 16, 16);
		dv |= x ^ y;
		return !(dv[0] | dv[1]);
	}
	if (n >= 8) {
		memcpy(&x8, a, 8);
		memcpy(&y8, b, 8);
		memcpy(&z8, a + n - 8, 8);
		memcpy(&w8, b + n - 8, 8);
		return !((x8 ^ y8) | (z8 ^ w8));
	}
	if (n >= 4) {
		memcpy(&x4, a, 4);
		memcpy(&y4, b, 4);
		memcpy(&z4, a + n - 4, 4);
		memcpy(&w4, b + n - 4, 4);
		return !((x4 ^ y4) | (z4 ^ w4));
	}
	for (size_t i = 0; i < n; i++)
		diff |= (uint64_t)(a[i] ^ b[i]);
	return !diff;
}

static inline bool same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	return n > 256 ? !memcmp(a, b, n) : same_bytes_small(a, b, n);
}

static size_t emu_check(const uint8_t *p, size_t len)
{
	if (len <= sizeof(emu_ref) && same_bytes(p, emu_ref, len))
		return len;
	return xevb_emu_check(p, len);
}

/*
 * A payload equal to the emulator pattern (every byte compared) whose
 * record carries the pattern's CRC for its length: then the CRC over the
 * payload is that CRC, and both checks pass without computing it.
 */
static inline bool payload_is_emu(const uint8_t *p, uint32_t len, uint32_t crc)
{
	return len <= EMU_REF_LEN && same_bytes(p, emu_ref, len) && emu_crc[len] == crc;
}

/*
 * One payload against its record's CRC (XEVB_VERIFY_CRC) and the emulator
 * pattern (XEVB_VERIFY_CONTENT): 0, -XEVB_EVT_E_CRC (checked first) or
 * -XEVB_EVT_E_CONTENT, with a sentence in err.
 */
static int verify_payload(uint32_t event_id, uint16_t source_id, const uint8_t *p, uint32_t len, uint32_t crc,
			  unsigned what, char *err, size_t errlen)
{
	uint32_t c;
	size_t at;

	if ((what & XEVB_VERIFY_CONTENT) && payload_is_emu(p, len, crc))
		return 0;
	if (what & XEVB_VERIFY_CRC) {
		c = xevb_crc32c(0, p, len);
		if (c != crc)
			return fail(err, errlen, XEVB_EVT_E_CRC,
				    "event %u source %u: crc32c 0x%08x, payload has 0x%08x", event_id, source_id,
				    crc, c);
	}
	if (what & XEVB_VERIFY_CONTENT) {
		at = emu_check(p, len);
		if (at != len)
			return fail(err, errlen, XEVB_EVT_E_CONTENT,
				    "event %u source %u: wrong byte at payload offset %zu", event_id, source_id,
				    at);
	}
	return 0;
}

/* The decoder's verdicts are libxevb's rules, numbered alike. */
#define SAME_RULE(a, b) _Static_assert((int)XEVB_EVT_E_##a == (int)XEVB_BROKEN_##b, #a " is " #b)
SAME_RULE(SHORT, SHORT);
SAME_RULE(MAGIC, MAGIC);
SAME_RULE(VERSION, VERSION);
SAME_RULE(FLAGS, FLAGS);
SAME_RULE(RESERVED, RESERVED);
SAME_RULE(TOTAL_LEN, TOTAL_LEN);
SAME_RULE(N_EXPECTED, N_EXPECTED);
SAME_RULE(N_FRAGS, N_FRAGS);
SAME_RULE(INCOMPLETE_FLAG, INCOMPLETE_FLAG);
SAME_RULE(REC_TRUNC, REC_TRUNC);
SAME_RULE(REC_RESERVED, REC_RESERVED);
SAME_RULE(SOURCE_ID, SOURCE_ID);
SAME_RULE(REC_ORDER, REC_ORDER);
SAME_RULE(PADDING, PADDING);
SAME_RULE(MISSING_TRUNC, MISSING_TRUNC);
SAME_RULE(MISSING_ORDER, MISSING_ORDER);
SAME_RULE(MISSING_PRESENT, MISSING_PRESENT);
SAME_RULE(MISSING_PAD, MISSING_PAD);
SAME_RULE(TRAILING, TRAILING);

/*
 * The strict decoder is libxevb's (lib/ev_decode.c, through
 * lib/shared/xl_event.h): every rule of section 2, the same sentences as
 * a farm node on the library gives. Its fragment index goes into offs, as
 * large as any event's (n_frags <= 4096 is checked first), so that it
 * never allocates.
 */
static int decode_into(const uint8_t *buf, size_t len, struct xevb_decoded_event *out,
		       uint32_t offs[XEVB_MAX_SOURCES], char *err, size_t errlen)
{
	struct xl_ev e = { .off = offs, .off_cap = XEVB_MAX_SOURCES };

	if (xl_ev_decode(&e, buf, len, NULL, err, errlen))
		return -(int)e.broken;
	out->flags = (uint8_t)e.pub.flags;
	out->n_frags = (uint16_t)e.pub.n_frags;
	out->n_expected = (uint16_t)e.pub.n_expected;
	out->run_number = e.pub.run_number;
	out->event_id = e.pub.event_id;
	out->total_length = e.pub.length;
	out->build_ns = e.pub.build_ns;
	out->records = buf + XEVB_EVT_HLEN;
	out->missing = buf + e.missing_off;
	return 0;
}

int xevb_event_decode(const uint8_t *buf, size_t len, struct xevb_decoded_event *out, char *err, size_t errlen)
{
	uint32_t offs[XEVB_MAX_SOURCES];

	return decode_into(buf, len, out, offs, err, errlen);
}

/*
 * As `xevb sink` checks an event: the structure (a fault anywhere wins,
 * found before any payload is looked at), then the payloads over the
 * fragment index; the walk that says which and why only for a bad one.
 */
int xevb_event_decode_verify(const uint8_t *buf, size_t len, unsigned what, struct xevb_decoded_event *out,
			     char *err, size_t errlen)
{
	uint32_t offs[XEVB_MAX_SOURCES];
	int rc = decode_into(buf, len, out, offs, err, errlen);

	if (rc || !what || !xevb_payloads_bad_at(buf, offs, out->n_frags, out->event_id, what))
		return rc;
	return xevb_event_verify(out, what, err, errlen);
}

int xevb_event_verify(const struct xevb_decoded_event *ev, unsigned what, char *err, size_t errlen)
{
	const uint8_t *pos = NULL;
	struct xevb_decoded_frag f;
	int rc;

	if (what & XEVB_VERIFY_CONTENT)
		pthread_once(&emu_once, emu_ref_init);
	while (xevb_event_next_frag(ev, &pos, &f)) {
		/* The usual payload passes inline, as in the one walk; anything else takes the full check. */
		if ((what & XEVB_VERIFY_CONTENT) && payload_is_emu(f.payload, f.length, f.crc32c))
			continue;
		rc = verify_payload(ev->event_id, f.source_id, f.payload, f.length, f.crc32c, what, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * A record's size when it is not the one before's: a call, so that the
 * compiler keeps the test a branch (a conditional move would put the
 * length's load back on the way to the next record's address).
 */
static __attribute__((noinline, cold)) size_t new_step(size_t size)
{
	__asm__("" : "+r"(size)); /* nor may the compiler see through it */
	return size;
}

int xevb_event_payloads_bad(const struct xevb_decoded_event *ev, unsigned what)
{
	const uint8_t *p = ev->records;
	size_t step = 0;

	if (what & XEVB_VERIFY_CONTENT)
		pthread_once(&emu_once, emu_ref_init);
	/*
	 * The usual payload in a few instructions; anything else takes the
	 * full check. The next record is where a record of the one before's
	 * size would end, and the branch that says so is predicted: the
	 * records are checked side by side, not one load after the other
	 * (sources of one size are the usual event), and on a miss the step
	 * is the record's own, so p is always the next record's start.
	 */
	while (p < ev->missing) {
		uint32_t len = xevb_ld32(p + 4), crc = xevb_ld32(p + 8);
		const uint8_t *pl = p + XEVB_EVT_REC_HLEN;
		size_t size = XEVB_EVT_REC_HLEN + (((size_t)len + 3) & ~(size_t)3);

		if (__builtin_expect(size != step, 0))
			step = new_step(size);
		if (!((what & XEVB_VERIFY_CONTENT) && len <= 256 && same_bytes_small(pl, emu_ref, len) &&
		      emu_crc[len] == crc) &&
		    verify_payload(ev->event_id, xevb_ld16(p), pl, len, crc, what, NULL, 0))
			return 1;
		p += step;
	}
	return 0;
}

int xevb_payloads_bad_at(const uint8_t *data, const uint32_t *offs, uint32_t n, uint32_t event_id, unsigned what)
{
	if (what & XEVB_VERIFY_CONTENT)
		pthread_once(&emu_once, emu_ref_init);
	/* Records by their offsets: no load waits on the one before. */
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = data + offs[i], *pl = p + XEVB_EVT_REC_HLEN;
		uint32_t len = xevb_ld32(p + 4), crc = xevb_ld32(p + 8);

		if (!((what & XEVB_VERIFY_CONTENT) && len <= 256 && same_bytes_small(pl, emu_ref, len) &&
		      emu_crc[len] == crc) &&
		    verify_payload(event_id, xevb_ld16(p), pl, len, crc, what, NULL, 0))
			return 1;
	}
	return 0;
}

int xevb_evt_reader_init(struct xevb_evt_reader *r, uint32_t max_len)
{
	memset(r, 0, sizeof(*r));
	r->max_len = max_len ? max_len : XEVB_EVT_MAX_LEN;
	r->cap = XEVB_EVT_READER_CAP0;
	r->buf = malloc(r->cap);
	return r->buf ? 0 : -ENOMEM;
}

void xevb_evt_reader_free(struct xevb_evt_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

uint8_t *xevb_evt_reader_space(struct xevb_evt_reader *r, size_t min, size_t *avail)
{
	size_t held = r->tail - r->head;
	size_t need = held + min > r->want ? held + min : r->want;

	/* Move the partial event to the front only when the room behind it is short. */
	if (r->head && (r->cap - r->tail < min || r->cap - r->head < r->want)) {
		memmove(r->buf, r->buf + r->head, held);
		r->head = 0;
		r->tail = held;
	}
	if (r->cap - r->head < need) {
		size_t cap = r->cap * 2 > need ? r->cap * 2 : need;
		uint8_t *nb;

		/* Near the budget, exactly what is needed; beyond it, nothing. */
		if (r->cap_max && cap > r->cap_max)
			cap = need;
		if (r->cap_max && cap > r->cap_max) {
			*avail = 0;
			errno = ENOBUFS;
			return NULL;
		}
		nb = realloc(r->buf, cap);
		if (!nb) {
			*avail = 0;
			errno = ENOMEM;
			return NULL;
		}
		r->buf = nb;
		r->cap = cap;
	}
	*avail = r->cap - r->tail;
	return r->buf + r->tail;
}

size_t xevb_evt_reader_read_size(const struct xevb_evt_reader *r, size_t chunk)
{
	size_t held = r->tail - r->head;

	if (r->want > held && r->want - held < chunk)
		return r->want - held;
	return chunk;
}

void xevb_evt_reader_shrink(struct xevb_evt_reader *r, size_t min_cap)
{
	uint8_t *nb;

	if (r->tail != r->head || r->cap <= min_cap || r->cap <= XEVB_EVT_READER_CAP0)
		return;
	nb = realloc(r->buf, XEVB_EVT_READER_CAP0);
	if (!nb)
		return; /* keep the big one: still correct */
	r->buf = nb;
	r->cap = XEVB_EVT_READER_CAP0;
	r->head = r->tail = 0;
}

void xevb_evt_reader_commit(struct xevb_evt_reader *r, size_t n)
{
	r->tail += n;
}

int xevb_evt_reader_next(struct xevb_evt_reader *r, const uint8_t **ev, size_t *len)
{
	static const uint8_t magic[4] = { 0x45, 0x56, 0x4E, 0x54 };
	const uint8_t *p = r->buf + r->head;
	size_t avail = r->tail - r->head;
	uint32_t tl;

	if (avail == 0)
		return 0;
	/* Catch garbage as early as its first bytes, before trusting a length. */
	if (memcmp(p, magic, avail < 4 ? avail : 4))
		return -XEVB_EVT_E_MAGIC;
	if (avail < 20)
		return 0;
	tl = xevb_ld32(p + 16);
	if (tl < XEVB_EVT_HLEN)
		return -XEVB_EVT_E_TOTAL_LEN;
	if (tl > r->max_len)
		return -XEVB_EVT_E_TOO_BIG;
	if (avail < tl) {
		r->want = tl;
		return 0;
	}
	*ev = p;
	*len = tl;
	r->want = 0;
	r->head += tl;
	if (r->head == r->tail)
		r->head = r->tail = 0;
	return 1;
}

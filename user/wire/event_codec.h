/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Built events (wire-format section 2): a zero-copy encoder over the
 * builder's output, a strict decoder for farm nodes and tests, and a
 * stream reader that cuts a TCP stream or a file into whole events.
 *
 * Encoder layout: every byte that is not a payload (event header, record
 * headers, padding, missing list) is written into one caller-provided
 * scratch buffer, in wire order. A payload's padding is written in front
 * of the next record header, so each received non-empty fragment costs
 * two iovecs (payload in its frame + the following scratch run) and the
 * whole event at most 1 + 2 * n_frags.
 */
#ifndef XEVB_EVENT_CODEC_H
#define XEVB_EVENT_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "evb/builder.h"
#include <xevb/wire.h>

#define XEVB_EVT_HLEN     32u
#define XEVB_EVT_REC_HLEN 12u
/* Default bound for the stream reader: a bigger total_length means corruption. */
#define XEVB_EVT_MAX_LEN (64u << 20)

/* Scratch bytes and iovecs enough for any event with n_expected sources. */
#define XEVB_EVT_SCRATCH_MAX(n_expected) \
	(XEVB_EVT_HLEN + 4u + (size_t)(n_expected) * (XEVB_EVT_REC_HLEN + 3u + 2u) + 4u)
#define XEVB_EVT_IOV_MAX(n_expected) (1u + 2u * (size_t)(n_expected))
/* The same when fragments may come in segments (wire format 1.1): a payload is up to that many pieces. */
#define XEVB_EVT_IOV_MAX_SEG(n_expected) (1u + (1u + (size_t)XEVB_SEG_MAX_PIECES) * (size_t)(n_expected))

/*
 * Encode ev, stamped build_ns. The INCOMPLETE flag and the missing list
 * are derived from the frag slots; ev->flags and ev->n_frags must agree
 * with them, and source_ids must be strictly ascending and <= 4095, so
 * that the encoder never emits what the decoder rejects.
 * Returns the iovec count (>= 1) and *total_len, or -EINVAL (inconsistent
 * event), -ENOSPC (scratch or iov too small), -EMSGSIZE (over 4 GiB).
 * The iovecs point into scratch and into the frames: both must stay put
 * until the event is written.
 */
int xevb_event_encode(const struct xevb_event *ev, uint64_t build_ns, uint8_t *scratch, size_t scratch_len,
		      struct iovec *iov, size_t iov_max, size_t *total_len);

/*
 * The same event, same bytes, written flat into dst[0..cap): payloads
 * copied. For the output's send buffers, where copying a few hundred
 * small fragments costs far less than as many iovecs in the kernel.
 * 0 and *total_len, or -EINVAL (as above), -ENOSPC (cap too small: the
 * event needs xevb_event_wire_size bytes), -EMSGSIZE.
 */
int xevb_event_encode_into(const struct xevb_event *ev, uint64_t build_ns, uint8_t *dst, size_t cap,
			   size_t *total_len);

/*
 * Write all of iov[0..n) to a blocking fd (socket or file): chunks of at
 * most IOV_MAX, partial writes resumed, EINTR retried. iov is consumed
 * (entries are advanced in place). 0, or -errno (-EAGAIN on a non-blocking
 * fd that would block, -EPIPE: ignore SIGPIPE in the caller).
 */
int xevb_writev_all(int fd, struct iovec *iov, size_t n);
/* Past the w bytes a write took from *iov (*n entries): whole entries skipped, a partial one trimmed. */
void xevb_iov_advance(struct iovec **iov, size_t *n, size_t w);

/* Decoder verdicts, negated as return values; 0 is success. */
enum xevb_evt_err {
	XEVB_EVT_OK = 0,
	XEVB_EVT_E_SHORT, /* fewer bytes than an event header */
	XEVB_EVT_E_MAGIC,
	XEVB_EVT_E_VERSION,
	XEVB_EVT_E_FLAGS,           /* unknown flag bit */
	XEVB_EVT_E_RESERVED,        /* header reserved field non-zero */
	XEVB_EVT_E_TOTAL_LEN,       /* total_length disagrees with the buffer */
	XEVB_EVT_E_N_EXPECTED,      /* n_expected 0 or over 4096 */
	XEVB_EVT_E_N_FRAGS,         /* n_frags > n_expected */
	XEVB_EVT_E_INCOMPLETE_FLAG, /* INCOMPLETE set iff n_frags < n_expected: broken */
	XEVB_EVT_E_REC_TRUNC,       /* a record header or payload runs past the end */
	XEVB_EVT_E_REC_RESERVED,
	XEVB_EVT_E_SOURCE_ID,       /* source_id over 4095 */
	XEVB_EVT_E_REC_ORDER,       /* records not in strictly ascending source_id */
	XEVB_EVT_E_PADDING,         /* non-zero padding after a payload */
	XEVB_EVT_E_MISSING_TRUNC,   /* missing list shorter than n_expected - n_frags */
	XEVB_EVT_E_MISSING_ORDER,   /* missing ids not strictly ascending or over 4095 */
	XEVB_EVT_E_MISSING_PRESENT, /* a missing id is also a record */
	XEVB_EVT_E_MISSING_PAD,     /* non-zero padding after the missing list */
	XEVB_EVT_E_TRAILING,        /* bytes after the last record or missing list */
	XEVB_EVT_E_CRC,             /* xevb_event_verify: payload CRC-32C wrong */
	XEVB_EVT_E_CONTENT,         /* xevb_event_verify: not the emulator pattern */
	XEVB_EVT_E_TOO_BIG,         /* stream reader: total_length over its bound */
	XEVB_EVT_E_EOF,             /* stream reader: stream ended inside an event */
	XEVB_EVT_E__COUNT
};

/* Short name ("bad_magic"), for counters and JSON keys. */
const char *xevb_evt_err_name(int err);

struct xevb_decoded_event {
	uint8_t flags;
	uint16_t n_frags;
	uint16_t n_expected;
	uint32_t run_number;
	uint32_t event_id;
	uint32_t total_length;
	uint64_t build_ns;
	const uint8_t *records; /* first record header */
	const uint8_t *missing; /* n_expected - n_frags big-endian u16 */
};

struct xevb_decoded_frag {
	uint16_t source_id;
	uint32_t length;
	uint32_t crc32c;
	const uint8_t *payload;
};

/*
 * Validate buf[0..len) as exactly one event (every rule of section 2) and
 * fill out. 0, or -XEVB_EVT_E_* with a sentence in err. The decoded event
 * points into buf. The rules and their sentences are libxevb's decoder's
 * (lib/ev_decode.c, the one implementation).
 */
int xevb_event_decode(const uint8_t *buf, size_t len, struct xevb_decoded_event *out, char *err, size_t errlen);

/* Walk the records of a decoded event: start with *pos = NULL. */
static inline bool xevb_event_next_frag(const struct xevb_decoded_event *ev, const uint8_t **pos,
					struct xevb_decoded_frag *f)
{
	const uint8_t *p = *pos ? *pos : ev->records;

	if (p >= ev->missing)
		return false;
	f->source_id = xevb_ld16(p);
	f->length = xevb_ld32(p + 4);
	f->crc32c = xevb_ld32(p + 8);
	f->payload = p + XEVB_EVT_REC_HLEN;
	*pos = f->payload + XEVB_PAD4(f->length);
	return true;
}

static inline uint16_t xevb_event_missing(const struct xevb_decoded_event *ev, uint32_t i)
{
	return xevb_ld16(ev->missing + 2 * i);
}

#define XEVB_VERIFY_CRC     0x1u
#define XEVB_VERIFY_CONTENT 0x2u /* xevb_emu_check on every payload */

/*
 * Check the payloads of a decoded event. 0, or -XEVB_EVT_E_CRC /
 * -XEVB_EVT_E_CONTENT for the first bad record (CRC checked first).
 */
int xevb_event_verify(const struct xevb_decoded_event *ev, unsigned what, char *err, size_t errlen);

/*
 * xevb_event_verify's verdict alone, in as few instructions as it can
 * take for the usual payload (a farm node checks every one): 0 when every
 * payload is right, else 1 (xevb_event_verify then says which and why).
 */
int xevb_event_payloads_bad(const struct xevb_decoded_event *ev, unsigned what);
/* The same over n fragment records at data + offs[i] (an index such as libxevb's xevb_ev_offsets). */
int xevb_payloads_bad_at(const uint8_t *data, const uint32_t *offs, uint32_t n, uint32_t event_id, unsigned what);

/*
 * xevb_event_decode then, if it succeeds, xevb_event_verify(what): a
 * structural fault anywhere wins; -XEVB_EVT_E_CRC / -XEVB_EVT_E_CONTENT
 * leave out filled, the event's structure being sound. With both checks,
 * a payload equal to the emulator pattern is CRC-checked against the
 * pattern's CRC for its length.
 */
int xevb_event_decode_verify(const uint8_t *buf, size_t len, unsigned what, struct xevb_decoded_event *out,
			     char *err, size_t errlen);

/*
 * Stream reader: feed bytes with space()/commit(), take whole events with
 * next(). An event returned by next() stays valid until the next call to
 * space(). After an error the stream is out of step: close it.
 */
struct xevb_evt_reader {
	uint8_t *buf;
	size_t cap;
	size_t head;    /* first unconsumed byte */
	size_t tail;    /* end of the data */
	size_t want;    /* total_length of the partial event at head, once known */
	size_t cap_max; /* 0, or the most space() may grow buf to (a caller's budget) */
	uint32_t max_len;
};

#define XEVB_EVT_READER_CAP0 (256u * 1024) /* the buffer's size at init and after a shrink */

/* max_len 0: XEVB_EVT_MAX_LEN. 0 or -ENOMEM. */
int xevb_evt_reader_init(struct xevb_evt_reader *r, uint32_t max_len);
void xevb_evt_reader_free(struct xevb_evt_reader *r);
/*
 * Where to read to, at least min bytes: *avail set. NULL (and *avail 0)
 * with errno ENOBUFS when that needs more than cap_max, ENOMEM when
 * malloc fails.
 */
uint8_t *xevb_evt_reader_space(struct xevb_evt_reader *r, size_t min, size_t *avail);
/*
 * Bytes to ask space() for so that a read never grows the buffer past the
 * partial event it waits for: chunk, or less when the event ends sooner.
 */
size_t xevb_evt_reader_read_size(const struct xevb_evt_reader *r, size_t chunk);
/* Back to XEVB_EVT_READER_CAP0 when nothing is held and buf grew past min_cap. */
void xevb_evt_reader_shrink(struct xevb_evt_reader *r, size_t min_cap);
void xevb_evt_reader_commit(struct xevb_evt_reader *r, size_t n);
/*
 * 1: a whole event in *ev, *len (not yet validated beyond magic and
 * length: run xevb_event_decode); 0: need more bytes; -XEVB_EVT_E_MAGIC,
 * -XEVB_EVT_E_TOTAL_LEN (under 32) or -XEVB_EVT_E_TOO_BIG.
 */
int xevb_evt_reader_next(struct xevb_evt_reader *r, const uint8_t **ev, size_t *len);
/* Bytes held that do not yet form an event: non-zero at EOF means truncation. */
static inline size_t xevb_evt_reader_pending(const struct xevb_evt_reader *r)
{
	return r->tail - r->head;
}

#endif /* XEVB_EVENT_CODEC_H */

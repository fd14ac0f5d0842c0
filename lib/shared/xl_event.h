/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The strict decoder of built events (lib/ev_decode.c): one
 * implementation for the library's event views and the xevb tools'
 * decoder (user/wire/event_codec.c). lib/shared/: see xl_trusted.h.
 */
#ifndef XEVB_LIB_EVENT_H
#define XEVB_LIB_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xevb/xevb.h>

/* A decoded event, the public view first. */
struct xl_ev {
	struct xevb_ev pub;
	uint32_t *off; /* each fragment record's offset from pub.data: the fragment index */
	uint32_t off_cap;
	uint32_t missing_off; /* where the missing list starts */
	/*
	 * lazy: the decoder only checks the records and makes room in off, the
	 * index is written on first use (xl_ev_index; a farm node's views: of
	 * the many out at a time, each index written cost misses in L1 that a
	 * consumer not asking for it paid). idx: XL_IDX_*, atomic (threads
	 * reading one view may ask for its index at once).
	 */
	bool lazy;
	uint32_t idx;
	/* the farm node's bookkeeping (farm.c) */
	struct xl_ev *next; /* in the ready queue or the free list */
	struct xl_ev *all;  /* every view the handle made */
	void *chunk;
	uint32_t builder; /* index in the farm's builder table */
	uint32_t conn_gen;
	uint8_t state;  /* XL_EV_* */
	uint8_t broken; /* after xl_ev_decode failed: the rule broken (enum xevb_broken) */
};
enum { XL_EV_FREE = 0, XL_EV_QUEUED, XL_EV_OUT };
enum { XL_IDX_NONE = 0, XL_IDX_BUSY, XL_IDX_BUILT };

/* What xl_ev_decode checks of each payload beyond the structure (NULL: nothing). */
#define XL_VERIFY_CRC 0x1u
struct xl_check {
	unsigned verify;        /* XL_VERIFY_CRC: XEVB_EV_CRC_BAD on a wrong CRC-32C */
	xevb_event_check_fn fn; /* the caller's check of a sound event: XEVB_EV_CHECK_BAD; NULL: none */
	void *ctx;
};
/*
 * Check buf[0..len) as exactly one event and fill e (pointing into buf).
 * 0, or -EBADMSG with a sentence in err and the rule in e->broken;
 * -ENOMEM. A payload chk finds wrong sets XEVB_EV_CRC_BAD or
 * XEVB_EV_CHECK_BAD: the event is sound, not refused.
 */
int xl_ev_decode(struct xl_ev *e, const uint8_t *buf, size_t len, const struct xl_check *chk, char *err,
		 size_t errlen);
void xl_ev_release(struct xl_ev *e); /* frees the offset array */
/* The fragment index of a sound event, written now if it is not yet (lazy views). */
const uint32_t *xl_ev_index_slow(struct xl_ev *e);
static inline const uint32_t *xl_ev_index(const struct xl_ev *e)
{
	if (__atomic_load_n(&e->idx, __ATOMIC_ACQUIRE) == XL_IDX_BUILT)
		return e->off;
	return xl_ev_index_slow((struct xl_ev *)e);
}
/* xevb_broken_name's names ("bad_magic"): the tools name the same rules by them. */
const char *xl_broken_name(int kind);

#endif

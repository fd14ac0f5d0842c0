// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event views: the accessors of struct xevb_ev over what the decoder
 * (ev_decode.c) found: fragment i in O(1) from its offset (the index
 * written on the first call for a farm node's view).
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

/* Record i of a sound event, from its index. */
static inline const uint8_t *record(const struct xevb_ev *ev, uint32_t i)
{
	return ev->data + xl_ev_index((const struct xl_ev *)ev)[i];
}

XEVB_API const uint32_t *xevb_ev_offsets(const struct xevb_ev *ev)
{
	return xl_ev_index((const struct xl_ev *)ev);
}

XEVB_API int xevb_ev_frag(const struct xevb_ev *ev, uint32_t i, struct xevb_ev_frag *f)
{
	const uint8_t *p;

	if (i >= ev->n_frags)
		return -ERANGE;
	p = record(ev, i);
	f->source_id = xl_ld16(p);
	f->index = (uint16_t)i;
	f->length = xl_ld32(p + 4);
	f->crc32c = xl_ld32(p + 8);
	f->reserved = 0;
	f->payload = p + XL_EVT_REC_HLEN;
	return 0;
}

XEVB_API int xevb_ev_find(const struct xevb_ev *ev, uint16_t source_id, struct xevb_ev_frag *f)
{
	const uint32_t *off = xl_ev_index((const struct xl_ev *)ev);
	uint32_t lo = 0, hi = ev->n_frags;

	/* Records are in ascending source_id: a binary search. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint16_t sid = xl_ld16(ev->data + off[mid]);
		if (sid == source_id)
			return xevb_ev_frag(ev, mid, f);
		if (sid < source_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

XEVB_API int xevb_ev_missing(const struct xevb_ev *ev, uint32_t i)
{
	const struct xl_ev *e = (const struct xl_ev *)ev;

	if (i >= ev->n_missing)
		return -ERANGE;
	return xl_ld16(ev->data + e->missing_off + 2 * i);
}

XEVB_API int xevb_ev_verify(const struct xevb_ev *ev, int *bad_source)
{
	struct xevb_ev_frag f;

	for (uint32_t i = 0; i < ev->n_frags; i++) {
		xevb_ev_frag(ev, i, &f);
		if (xl_crc32c(0, f.payload, f.length) != f.crc32c) {
			if (bad_source)
				*bad_source = f.source_id;
			return -EBADMSG;
		}
	}
	return 0;
}

XEVB_API uint32_t xevb_ev_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return xl_crc32c(crc, buf, len);
}

XEVB_API struct xevb_ev *xevb_ev_parse(const void *buf, size_t len, char *errbuf)
{
	struct xl_ev *e = calloc(1, sizeof(*e));
	int rc;

	if (!e) {
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "out of memory for an event view");
		errno = ENOMEM;
		return NULL;
	}
	rc = xl_ev_decode(e, buf, len, NULL, errbuf, XEVB_ERRBUF_SIZE);
	if (rc) {
		xl_ev_release(e);
		free(e);
		errno = -rc;
		return NULL;
	}
	return &e->pub;
}

XEVB_API void xevb_ev_free(struct xevb_ev *ev)
{
	if (!ev)
		return;
	xl_ev_release((struct xl_ev *)ev);
	free(ev);
}

XEVB_API const char *xevb_broken_name(int kind)
{
	return xl_broken_name(kind);
}

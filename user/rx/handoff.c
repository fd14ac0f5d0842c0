// SPDX-License-Identifier: GPL-2.0-only
/*
 * Event ownership and the hand-off rings (user/rx/handoff.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rx/handoff.h"

int xevb_spsc_init(struct xevb_spsc *r, uint32_t capacity, uint32_t esz)
{
	memset(r, 0, sizeof(*r));
	if (!capacity || (capacity & (capacity - 1)) || !esz || capacity > (1u << 30))
		return -EINVAL;
	/* Cache-line aligned: a 32-byte entry never straddles two lines. */
	if (posix_memalign(&r->buf, 64, (size_t)capacity * esz)) {
		r->buf = NULL;
		return -ENOMEM;
	}
	/* Zeroed and touched now: no page fault on the packet path later. */
	memset(r->buf, 0, (size_t)capacity * esz);
	r->mask = capacity - 1;
	r->esz = esz;
	return 0;
}

void xevb_spsc_free(struct xevb_spsc *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

uint32_t xevb_owner_plan(const struct xevb_frag_ref *frags, uint32_t n, uint32_t shift, uint32_t n_workers,
			 struct xevb_ho_part *parts)
{
	uint32_t blk0 = frags[0].event_id >> shift, diff = 0, owners = 0;

	for (uint32_t w = 0; w < n_workers; w++)
		parts[w] = (struct xevb_ho_part){ 0 };
	/* The common case, one block: one compare per record, no division. */
	for (uint32_t i = 1; i < n; i++)
		diff |= (frags[i].event_id >> shift) ^ blk0;
	if (!diff) {
		struct xevb_ho_part *p = &parts[blk0 % n_workers];
		p->first = 0;
		p->last = (uint16_t)(n - 1);
		p->count = (uint16_t)n;
		return 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct xevb_ho_part *p = &parts[xevb_owner(frags[i].event_id, shift, n_workers)];

		if (!p->count) {
			p->first = (uint16_t)i;
			owners++;
		} else if (p->last != i - 1) {
			p->filter = true;
		}
		p->last = (uint16_t)i;
		p->count++;
	}
	return owners;
}

uint32_t xevb_ho_walk(const uint8_t *frame, const struct xevb_ho_ent *e, uint32_t shift, uint32_t n_workers,
		      uint32_t self, struct xevb_pkt_info *pi, struct xevb_frag_ref *frags)
{
	const uint8_t *mep = frame + e->mep_off;
	uint32_t off = e->rec_off, k = 0;

	pi->mep_off = e->mep_off;
	pi->flags = mep[3];
	pi->source_id = xevb_ld16(mep + 4);
	pi->run_number = xevb_ld32(mep + 8);
	pi->packet_seq = xevb_ld32(mep + 12);
	for (uint32_t i = 0; i < e->n_walk; i++) {
		const uint8_t *rec = frame + off;
		uint32_t eid = xevb_ld32(rec);
		uint16_t len = xevb_ld16(rec + 4);

		if (!(e->flags & XEVB_HO_F_FILTER) || xevb_owner(eid, shift, n_workers) == self) {
			frags[k].event_id = eid;
			frags[k].crc32c = xevb_ld32(rec + 8);
			frags[k].payload_off = (uint16_t)(off + XEVB_REC_HLEN);
			frags[k].length = len;
			k++;
		}
		off += XEVB_REC_HLEN + XEVB_PAD4(len);
	}
	pi->n_frags = (uint16_t)k;
	pi->first_event_id = k ? frags[0].event_id : 0;
	return k;
}

bool xevb_ho_pack(struct xevb_ho_ent *e, struct xevb_spsc *refs, uint32_t frame_idx,
		  const struct xevb_pkt_info *pi, const struct xevb_frag_ref *frags, const struct xevb_ho_part *p,
		  uint32_t shift, uint32_t n_workers, uint32_t owner)
{
	struct xevb_frag_ref *buf = refs->buf;
	uint32_t mask = refs->mask, head = refs->prod_head;
	bool dense = refs->buf && xevb_spsc_room(refs, p->count);

	e->frame_idx = frame_idx;
	e->mep_off = pi->mep_off;
	e->source_id = pi->source_id;
	e->run_number = pi->run_number;
	e->packet_seq = pi->packet_seq;
	e->mep_flags = pi->flags;
	e->pad = 0;
	e->frag_len = 0;
	e->first_event_id = 0;
	if (!p->count) { /* END_OF_RUN notice */
		e->rec_off = e->n_walk = e->span = 0;
		e->flags = dense ? XEVB_HO_F_REFS : 0;
		return dense;
	}
	e->rec_off = (uint16_t)(frags[p->first].payload_off - XEVB_REC_HLEN);
	e->span = (uint16_t)(frags[p->last].payload_off + XEVB_PAD4(frags[p->last].length) -
			     frags[p->first].payload_off + XEVB_REC_HLEN);
	if (!dense) {
		e->n_walk = (uint16_t)(p->last - p->first + 1);
		e->flags = p->filter ? XEVB_HO_F_FILTER : 0;
		return false;
	}
	if (p->filter) {
		for (uint32_t i = p->first; i <= p->last; i++)
			if (xevb_owner(frags[i].event_id, shift, n_workers) == owner)
				buf[head++ & mask] = frags[i];
	} else {
		for (uint32_t i = p->first; i <= p->last; i++)
			buf[head++ & mask] = frags[i];
	}
	refs->prod_head = head;
	e->n_walk = p->count;
	e->flags = XEVB_HO_F_REFS;
	return true;
}

void xevb_ho_pack_whole(struct xevb_ho_ent *e, uint32_t frame_idx, const struct xevb_pkt_info *pi,
			uint16_t frag_len)
{
	e->frame_idx = frame_idx;
	e->mep_off = pi->mep_off;
	e->rec_off = (uint16_t)(pi->mep_off + XEVB_MEP_HLEN);
	e->n_walk = pi->n_frags;
	e->flags = XEVB_HO_F_WHOLE;
	e->span = (uint16_t)(pi->mep_len - XEVB_MEP_HLEN);
	e->source_id = pi->source_id;
	e->run_number = pi->run_number;
	e->packet_seq = pi->packet_seq;
	e->mep_flags = pi->flags;
	e->pad = 0;
	e->frag_len = pi->n_frags == 1 ? frag_len : 0;
	e->first_event_id = pi->first_event_id;
}

const struct xevb_frag_ref *xevb_ho_unpack(const uint8_t *frame, const struct xevb_ho_ent *e,
					   struct xevb_spsc *refs, uint32_t *cursor, uint32_t shift,
					   uint32_t n_workers, uint32_t self, struct xevb_pkt_info *pi,
					   struct xevb_frag_ref *scratch)
{
	const struct xevb_frag_ref *buf = refs->buf, *f;
	uint32_t n = e->n_walk, at;

	if (e->flags & XEVB_HO_F_WHOLE) {
		pi->mep_off = e->mep_off;
		pi->mep_len = (uint16_t)(XEVB_MEP_HLEN + e->span);
		pi->flags = e->mep_flags;
		pi->source_id = e->source_id;
		pi->run_number = e->run_number;
		pi->packet_seq = e->packet_seq;
		pi->n_frags = (uint16_t)n;
		pi->first_event_id = e->first_event_id;
		pi->consec = 1;
		if (n != 1)
			return NULL;
		/* A run of one goes fragment by fragment: its ref, without reading the frame. */
		scratch[0].event_id = e->first_event_id;
		scratch[0].crc32c = 0; /* the builder keeps no CRC: emit reads it from the frame */
		scratch[0].payload_off = (uint16_t)(e->rec_off + XEVB_REC_HLEN);
		scratch[0].length = e->frag_len;
		return scratch;
	}
	if (!(e->flags & XEVB_HO_F_REFS)) {
		xevb_ho_walk(frame, e, shift, n_workers, self, pi, scratch);
		return scratch;
	}
	pi->mep_off = e->mep_off;
	pi->flags = e->mep_flags;
	pi->source_id = e->source_id;
	pi->run_number = e->run_number;
	pi->packet_seq = e->packet_seq;
	pi->n_frags = (uint16_t)n;
	at = (refs->cons_tail + *cursor) & refs->mask;
	*cursor += n;
	f = buf + at;
	if (at + n > refs->mask + 1) { /* wraps: make it one array */
		for (uint32_t i = 0; i < n; i++)
			scratch[i] = buf[(at + i) & refs->mask];
		f = scratch;
	}
	pi->first_event_id = n ? f[0].event_id : 0;
	return f;
}

// SPDX-License-Identifier: GPL-2.0-only
/* Builder core: segmented fragments (wire format 1.1) put together in the segment pool (builder_int.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evb/builder_int.h"
#include "evb/names.h"
#include "base/probes.h"
#include <xevb/shed.h>

/* A segmented fragment dropped before any of it is held: see the top. */
static void seg_frag_dropped(struct xevb_builder *b, struct xevb_source_stats *src, enum xevb_drop_reason r,
			     uint32_t nfrag)
{
	src->frags_received += nfrag;
	b->st.frags_received += nfrag;
	drop(b, src, r, nfrag);
	seg_drop(b, src, XEVB_SEG_FRAG_DROPPED, 1);
}

/* A free pool entry; evicts the oldest open events while there is none. */
static uint32_t seg_get(struct xevb_builder *b)
{
	uint32_t k;

	while (unlikely(b->seg_free == NO_SLOT) && b->oldest != NO_SLOT) {
		const struct slot *s = &b->slots[b->oldest];

		if (SLOT_STATE(s) == SLOT_GOPEN)
			finish_group(b, s->grp, FIN_EVICT);
		else
			finish(b, b->oldest, FIN_EVICT);
	}
	k = b->seg_free;
	if (k == NO_SLOT)
		return NO_SLOT; /* every entry live and no event open: impossible */
	b->seg_free = b->segp[k].next_free;
	b->segp[k].next_free = SEG_IN_USE;
	b->st.seg_frags_live++;
	return k;
}

/*
 * Where a segment of [off, off + bytes) goes among sf's pieces (ascending
 * offsets): its index, or -1 (duplicate) / -2 (mismatched: overlap).
 */
static int seg_slot(const struct seg_frag *sf, uint32_t off, uint32_t bytes)
{
	uint32_t i = 0;

	while (i < sf->n && sf->p[i].seg_offset < off)
		i++;
	if (i < sf->n && sf->p[i].seg_offset == off)
		return -1;
	if (i > 0 && (uint32_t)sf->p[i - 1].seg_offset + sf->p[i - 1].bytes > off)
		return -2;
	if (i < sf->n && off + bytes > sf->p[i].seg_offset)
		return -2;
	return (int)i;
}

/*
 * Keep the segment in entry k (row entry fs of open event idx): the frame
 * held, the piece in place; the fragment accepted once whole. Returns
 * false, counted, when the segment is not kept.
 */
static bool seg_keep(struct xevb_builder *b, uint32_t idx, struct xevb_frag_slot *fs, uint32_t k,
		     uint32_t frame_idx, const uint8_t *frame, const struct xevb_pkt_info *pi,
		     const struct xevb_frag_ref *ref, struct xevb_source_stats *src)
{
	struct seg_frag *sf = &b->segp[k];
	struct slot *s = &b->slots[idx];
	uint32_t off = pi->seg_offset, bytes = pi->seg_bytes;
	int at;

	if (sf->length != pi->frag_length || sf->crc32c != ref->crc32c) {
		seg_drop(b, src, XEVB_SEG_MISMATCHED, 1);
		return false;
	}
	at = seg_slot(sf, off, bytes);
	if (at < 0) {
		seg_drop(b, src, at == -1 ? XEVB_SEG_DUPLICATE : XEVB_SEG_MISMATCHED, 1);
		return false;
	}
	if (sf->n == XEVB_SEG_MAX_PIECES) {
		seg_drop(b, src, XEVB_SEG_TOO_MANY, 1);
		return false;
	}
	memmove(&sf->p[at + 1], &sf->p[at], sizeof(sf->p[0]) * (sf->n - (uint32_t)at));
	sf->p[at] = (struct xevb_seg_piece){ .frame_idx = frame_idx,
					     .payload_off = ref->payload_off,
					     .seg_offset = (uint16_t)off,
					     .bytes = (uint16_t)bytes };
	sf->n++;
	sf->have += bytes;
	src->segs_pending++;
	b->st.segs_pending++;
	b->frame_data[frame_idx] = frame;
	b->refcnt[frame_idx] = 1;
	b->st.frames_held++;
	if (sf->have < sf->length)
		return true;
	/* Pieces never overlap and lie below length: every byte is here exactly once. */
	fs->payload_off = SEG_WHOLE;
	fs->length = sf->length;
	s->wire_bytes += sizeof(struct xevb_evt_frag_hdr) + XEVB_PAD4((uint32_t)sf->length);
	src->frags_in_events++;
	b->st.frags_in_events++;
	src->frags_pending--;
	b->st.frags_pending--;
	src->segs_in_frags += sf->n;
	b->st.segs_in_frags += sf->n;
	src->segs_pending -= sf->n;
	b->st.segs_pending -= sf->n;
	b->st.seg_frags_whole++;
	XEVB_PROBE(frag_accepted, sf->event_id, (unsigned)(src - b->st.src), sf->length, s->open_ns);
	if (++s->n_frags == b->n_src)
		finish(b, idx, FIN_COMPLETE);
	return true;
}

/* A segment of a configured source, of this run: find or open its fragment. */
static bool seg_place(struct xevb_builder *b, uint32_t frame_idx, const uint8_t *frame,
		      const struct xevb_pkt_info *pi, const struct xevb_frag_ref *ref, uint32_t si,
		      struct xevb_source_stats *src, uint64_t now_ns)
{
	uint32_t e = pi->first_event_id, idx = e & b->mask, nfrag = pi->seg_offset == 0, k;
	struct xevb_frag_slot *fs;

	if (b->slots[idx].key != slot_key(e, SLOT_OPEN) && slow_path(b, e, si, src, now_ns, nfrag) == NO_SLOT) {
		src->frags_received += nfrag;
		b->st.frags_received += nfrag;
		seg_drop(b, src, XEVB_SEG_FRAG_DROPPED, 1);
		return false;
	}
	fs = row_of(b, idx) + si;
	if (is_seg(fs))
		return seg_keep(b, idx, fs, fs->frame_idx, frame_idx, frame, pi, ref, src);
	if (fs->frame_idx != NO_FRAME) {
		/* The fragment came whole already: this is it again. */
		seg_frag_dropped(b, src, XEVB_DROP_DUPLICATE, nfrag);
		return false;
	}
	k = seg_get(b);
	/* Making room may have sent this very event: the segment is late then. */
	if (k == NO_SLOT || b->slots[idx].key != slot_key(e, SLOT_OPEN)) {
		if (k != NO_SLOT) {
			b->segp[k].n = 0;
			seg_put(b, k);
		}
		seg_frag_dropped(b, src, XEVB_DROP_LATE, nfrag);
		return false;
	}
	b->segp[k] = (struct seg_frag){ .event_id = e,
					.crc32c = ref->crc32c,
					.si = (uint16_t)si,
					.length = pi->frag_length,
					.next_free = SEG_IN_USE };
	fs->frame_idx = k;
	fs->payload_off = SEG_PENDING;
	fs->length = 0;
	src->frags_received++;
	b->st.frags_received++;
	src->frags_pending++;
	b->st.frags_pending++;
	return seg_keep(b, idx, fs, k, frame_idx, frame, pi, ref, src);
}

void xevb_builder_add_segment(struct xevb_builder *b, uint32_t frame_idx, const uint8_t *frame,
			      const struct xevb_pkt_info *pi, const struct xevb_frag_ref *ref, uint64_t now_ns)
{
	struct xevb_builder_stats *st = &b->st;
	struct xevb_source_stats *src;
	uint16_t sid = pi->source_id;
	uint32_t si, nfrag = pi->seg_offset == 0;
	bool kept = false;

	if (unlikely(frame_idx >= b->n_frames || b->refcnt[frame_idx] || sid > XEVB_MAX_SOURCE_ID ||
		     !(pi->flags & XEVB_MEP_F_SEGMENT) || !frame || !ref || !pi->seg_bytes ||
		     ref->length != pi->seg_bytes || ref->event_id != pi->first_event_id ||
		     (uint32_t)pi->seg_offset + pi->seg_bytes > pi->frag_length)) {
		st->bad_calls++;
		return;
	}
	src = &st->src[sid];
	note_packet(b, src, sid, pi->packet_seq);
	b->shed_run = 0;
	src->segs_received++;
	st->segs_received++;
	si = b->src_index[sid];
	if (unlikely(si == NO_SRC)) {
		seg_frag_dropped(b, src, XEVB_DROP_UNKNOWN_SOURCE, nfrag);
		goto release;
	}
	if (unlikely(!st->run_known)) {
		st->run_number = pi->run_number;
		st->run_known = true;
	}
	if (unlikely(pi->run_number != st->run_number)) {
		seg_frag_dropped(b, src, XEVB_DROP_WRONG_RUN, nfrag);
		goto release;
	}
	kept = seg_place(b, frame_idx, frame, pi, ref, si, src, now_ns);
	b->last_ns = now_ns;
	/* From here on a kept frame is the events' to release, whatever they do. */
	if (pi->flags & XEVB_MEP_F_END_OF_RUN)
		note_end_of_run(b, src);
	if (kept) {
		if (unlikely(b->cfg.max_frames_held && st->frames_held > b->cfg.max_frames_held))
			evict_oldest(b, b->cfg.max_frames_held - b->cfg.max_frames_held / 8);
		eor_settle(b);
		return;
	}
release:
	if (b->cfg.frame_release)
		b->cfg.frame_release(b->cfg.ctx, frame_idx);
	eor_settle(b);
}

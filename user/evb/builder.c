// SPDX-License-Identifier: GPL-2.0-only
/* Builder core: the window and runs, the hot path (the rules: builder_int.h; the API: builder.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evb/builder_int.h"
#include "evb/names.h"
#include "base/probes.h"
#include <xevb/shed.h>

/* The last reference to frame f is gone: back to the caller's pool. */
static void frame_gone(struct xevb_builder *b, uint32_t f)
{
	b->st.frames_held--;
	XEVB_PROBE(frame_released, f);
	if (b->cfg.frame_release)
		b->cfg.frame_release(b->cfg.ctx, f);
}

/* Entry k's segments let go of their frames; the entry back to the pool. */
void seg_put(struct xevb_builder *b, uint32_t k)
{
	struct seg_frag *sf = &b->segp[k];

	for (uint32_t i = 0; i < sf->n; i++) {
		uint32_t f = sf->p[i].frame_idx;

		if (--b->refcnt[f] == 0)
			frame_gone(b, f);
	}
	sf->n = 0;
	sf->next_free = b->seg_free;
	b->seg_free = k;
	b->st.seg_frags_live--;
}

/*
 * Event idx leaves: its pending fragments are partial (their entries go,
 * the row says missing); returns true when a whole one must go out as
 * pieces, with b->erow and b->epieces made for emit.
 */
static bool seg_settle(struct xevb_builder *b, struct xevb_frag_slot *row)
{
	bool pieced = false;

	for (uint32_t j = 0; j < b->n_src; j++) {
		const struct seg_frag *sf;
		struct xevb_source_stats *src;

		b->erow[j] = row[j];
		b->epieces[j].n = 0;
		if (!is_seg(&row[j]))
			continue;
		sf = &b->segp[row[j].frame_idx];
		if (row[j].payload_off == SEG_WHOLE) {
			b->erow[j].frame_idx = sf->p[0].frame_idx;
			b->erow[j].payload_off = sf->p[0].payload_off;
			b->epieces[j] = (struct xevb_frag_pieces){ sf->n, sf->p };
			pieced = true;
			continue;
		}
		src = &b->st.src[b->sorted[j]];
		drop(b, src, XEVB_DROP_PARTIAL, 1);
		src->frags_pending--;
		b->st.frags_pending--;
		XEVB_PROBE(frag_dropped, XEVB_DROP_PARTIAL, sf->event_id, b->sorted[j], 1);
		seg_drop(b, src, XEVB_SEG_PARTIAL, sf->n);
		src->segs_pending -= sf->n;
		b->st.segs_pending -= sf->n;
		seg_put(b, row[j].frame_idx);
		b->erow[j].frame_idx = NO_FRAME;
		row[j].frame_idx = NO_FRAME;
	}
	return pieced;
}

/* Did source si deliver to done event idx (its row, or its run's group)? */
static inline bool done_has(const struct xevb_builder *b, const struct slot *s, uint32_t idx, uint32_t si)
{
	if (SLOT_STATE(s) == SLOT_GDONE)
		return gbit(b, s->grp, si);
	return b->rows[(size_t)idx * b->n_src + si].frame_idx != NO_FRAME;
}

static inline void chain_append(struct xevb_builder *b, uint32_t idx)
{
	struct slot *s = &b->slots[idx];

	s->next = NO_SLOT;
	s->prev = b->newest;
	if (b->newest != NO_SLOT)
		b->slots[b->newest].next = idx;
	else
		b->oldest = idx;
	b->newest = idx;
}

static inline void chain_unlink(struct xevb_builder *b, uint32_t idx)
{
	struct slot *s = &b->slots[idx];

	if (s->prev != NO_SLOT)
		b->slots[s->prev].next = s->next;
	else
		b->oldest = s->next;
	if (s->next != NO_SLOT)
		b->slots[s->next].prev = s->prev;
	else
		b->newest = s->prev;
}

static inline void chain_insert_after(struct xevb_builder *b, uint32_t at, uint32_t idx)
{
	struct slot *a = &b->slots[at], *s = &b->slots[idx];

	s->prev = at;
	s->next = a->next;
	if (a->next != NO_SLOT)
		b->slots[a->next].prev = idx;
	else
		b->newest = idx;
	a->next = idx;
}

/*
 * The next record of a run's MEP, at *cur: its place in the frame into fs
 * (frame_idx left to the caller); *cur moves past it. The MEP was validated
 * whole before it joined the run, so the bounds only guard against a
 * caller that broke add_mep's contract: then the fragment reads as empty,
 * still inside the MEP, and the call is counted as bad.
 */
static inline uint32_t rec_take(struct xevb_builder *b, const uint8_t *frame, const struct gent *ge, uint32_t *cur,
				struct xevb_frag_slot *fs)
{
	uint32_t end = ge->rec_end, off = *cur, len;

	if (likely(off + XEVB_REC_HLEN <= end)) {
		len = xevb_ld16(frame + off + 4);
		if (likely(off + XEVB_REC_HLEN + XEVB_PAD4(len) <= end)) {
			fs->payload_off = (uint16_t)(off + XEVB_REC_HLEN);
			fs->length = (uint16_t)len;
			*cur = off + XEVB_REC_HLEN + XEVB_PAD4(len);
			return sizeof(struct xevb_evt_frag_hdr) + XEVB_PAD4(len);
		}
	}
	b->st.bad_calls++;
	fs->payload_off = ge->rec_start; /* 4 readable bytes before it: the header */
	fs->length = 0;
	*cur = end;
	return sizeof(struct xevb_evt_frag_hdr);
}

/*
 * A MEP handed in without refs must go fragment by fragment: make its refs
 * from the records (ids e0, e0+1, ... by pi->consec).
 */
static const struct xevb_frag_ref *refs_from_frame(struct xevb_builder *b, const uint8_t *frame,
						   const struct xevb_pkt_info *pi, uint32_t e0)
{
	struct gent ge = {
		.rec_start = (uint16_t)(pi->mep_off + XEVB_MEP_HLEN),
		.rec_end = (uint16_t)(pi->mep_off + pi->mep_len),
	};
	uint32_t cur = ge.rec_start;
	struct xevb_frag_slot fs;

	for (uint32_t k = 0; k < pi->n_frags; k++) {
		rec_take(b, frame, &ge, &cur, &fs);
		b->wrefs[k].event_id = e0 + k;
		b->wrefs[k].crc32c = 0; /* the builder keeps no CRC */
		b->wrefs[k].payload_off = fs.payload_off;
		b->wrefs[k].length = fs.length;
	}
	return b->wrefs;
}

/*
 * The lines of the len bytes from p but the first (the one the record
 * before ends in, read already). prefetch never faults: a guess past the
 * MEP's end only wastes a fetch.
 */
static inline void prefetch_rest(const uint8_t *p, uint32_t len)
{
	__builtin_prefetch(p + len - 1, 0, 3);
	for (uint32_t a = 64; a < len; a += 64)
		__builtin_prefetch(p + a - 1, 0, 3);
}

/*
 * The next event of a run as a row (source order): each MEP's next record,
 * cursors in b->mcur. Returns the event's encoded fragment bytes.
 *
 * The frames were written by the kernel, often on another core, a whole
 * run ago: each record read here (and its payload, copied by emit) would
 * be a stall, one per source and event. So each MEP's following record,
 * taken to be as long as this one, is fetched one event ahead: an event's
 * lines are in flight while the one before it is encoded.
 */
static uint32_t run_next_row(struct xevb_builder *b, const struct gent *ge, uint32_t np,
			     struct xevb_frag_slot *restrict row)
{
	const uint8_t *const *frame_data = b->frame_data;
	uint32_t *restrict mcur = b->mcur;
	uint32_t wire = 0;

	/* A complete event fills every entry: nothing to mark missing. */
	if (np != b->n_src)
		memset(row, 0xff, sizeof(*row) * b->n_src);
	for (uint32_t j = 0; j < np; j++) {
		struct xevb_frag_slot *fs = &row[ge[j].si];
		const uint8_t *frame = frame_data[ge[j].frame_idx];
		uint32_t rec;

		fs->frame_idx = ge[j].frame_idx;
		rec = rec_take(b, frame, &ge[j], &mcur[j], fs);
		wire += rec;
		/* rec counts the built event's record header; the MEP's is as long. */
		prefetch_rest(frame + mcur[j], rec);
	}
	return wire;
}

/* The event goes without being emitted: by the timeout policy, or not ours at all. */
static inline bool discards(const struct xevb_builder *b, enum finish_kind kind)
{
	return kind == FIN_UNASSIGNED || (by_policy(kind) && b->cfg.timeout_policy == XEVB_TIMEOUT_DISCARD);
}

/* Close run g: emit its n events (unless discarded), give back its frames. */
void finish_group(struct xevb_builder *b, uint32_t g, enum finish_kind kind)
{
	struct group *gr = &b->groups[g];
	struct xevb_builder_stats *st = &b->st;
	const struct gent *ge = gents_of(b, g);
	bool discard = discards(b, kind);
	uint32_t n = gr->n, np = gr->present, e0 = gr->first, k, j;

	chain_unlink(b, e0 & b->mask);
	for (k = 0; k < n; k++)
		b->slots[(e0 + k) & b->mask].key = slot_key(e0 + k, SLOT_GDONE);
	gr->open = false;
	st->open_events -= n;
	if (kind == FIN_EVICT)
		st->events_evicted += n;
	if (XEVB_PROBE_ENABLED(event_complete) || XEVB_PROBE_ENABLED(event_timeout))
		for (k = 0; k < n; k++) {
			XEVB_PROBE_IF(event_complete, kind == FIN_COMPLETE, e0 + k,
				      xevb_probe_now_ns() - gr->open_ns, np);
			XEVB_PROBE_IF(event_timeout, by_policy(kind), e0 + k, b->n_src - np, discard);
		}

	if (discard) {
		st->events_discarded += n;
		if (kind == FIN_UNASSIGNED)
			st->events_unassigned += n;
		st->frags_discarded += (uint64_t)np * n;
		for (j = 0; j < np; j++)
			st->src[b->sorted[ge[j].si]].frags_discarded += n;
	} else {
		struct xevb_event ev = {
			.event_id = e0,
			.run_number = st->run_number,
			.flags = kind == FIN_COMPLETE ? 0 : XEVB_EVT_F_INCOMPLETE,
			.n_expected = (uint16_t)b->n_src,
			.n_frags = (uint16_t)np,
			.open_ns = gr->open_ns,
			.source_ids = b->sorted,
			.frame_data = b->frame_data,
		};

		if (kind == FIN_COMPLETE) {
			st->events_complete += n;
		} else {
			st->events_incomplete += n;
			if (kind == FIN_EOR)
				st->events_flushed_eor += n;
		}
		if (b->cfg.emit_run) {
			uint64_t per_ev = sizeof(struct xevb_evt_hdr);

			if (ev.flags & XEVB_EVT_F_INCOMPLETE)
				per_ev += XEVB_PAD4(2u * (b->n_src - np));
			ev.frag_wire_bytes = (uint32_t)(gr->wire_bytes / n);
			b->cfg.emit_run(b->cfg.ctx, &ev, n, gr->wire_bytes + per_ev * n);
		} else if (b->cfg.emit) {
			/*
			 * Each event's row, made from the next record of every
			 * MEP; the first records' lines are fetched all at once.
			 */
			for (j = 0; j < np; j++) {
				const uint8_t *rec = b->frame_data[ge[j].frame_idx] + ge[j].rec_start;

				__builtin_prefetch(rec, 0, 3);
				__builtin_prefetch(rec + 64, 0, 3);
				b->mcur[j] = ge[j].rec_start;
			}
			ev.frags = b->mrow;
			for (k = 0; k < n; k++) {
				ev.event_id = e0 + k;
				ev.frag_wire_bytes = run_next_row(b, ge, np, b->mrow);
				b->cfg.emit(b->cfg.ctx, &ev);
			}
		}
	}
	for (j = 0; j < np; j++) {
		uint32_t f = ge[j].frame_idx;

		if (--b->refcnt[f] == 0)
			frame_gone(b, f);
	}
}

/*
 * A MEP that does not fit open run g touches it: make its events single
 * open events again, as if their fragments had come one by one (rows from
 * the records, one frame reference per fragment, chained in id order
 * where the run's first event was).
 */
static void __attribute__((noinline)) explode(struct xevb_builder *b, uint32_t g)
{
	struct group *gr = &b->groups[g];
	const struct gent *ge = gents_of(b, g);
	uint32_t n = gr->n, np = gr->present, e0 = gr->first, k, j, at = NO_SLOT;

	for (j = 0; j < np; j++) {
		b->mcur[j] = ge[j].rec_start;
		b->refcnt[ge[j].frame_idx] = n;
	}
	for (k = 0; k < n; k++) {
		uint32_t idx = (e0 + k) & b->mask;
		struct slot *s = &b->slots[idx];

		s->wire_bytes = run_next_row(b, ge, np, row_of(b, idx));
		s->key = slot_key(e0 + k, SLOT_OPEN);
		s->n_frags = np;
		s->open_ns = gr->open_ns;
		if (k > 0)
			chain_insert_after(b, at, idx);
		at = idx;
	}
	gr->open = false;
	gr->refs = 0;
	b->gfree[b->n_gfree++] = g;
	b->st.groups_split++;
}

static void evict_below(struct xevb_builder *b, uint32_t nb);

/*
 * Open a run for the n events from e0 if fragment-by-fragment booking
 * would open every one of them (no drop, none seen before, no jump of
 * more than a window); NO_GROUP otherwise, with nothing changed that the
 * per-fragment path would not change the same way. Open events the window
 * leaves behind are evicted as the first fragment would evict them.
 */
/* A DFM assigns, and e lies a window or more past what it assigned (rules at the top). */
static inline bool unassigned(const struct xevb_builder *b, uint32_t e)
{
	return unlikely(b->assigned_known) && (int32_t)(e - b->assigned_next) >= (int32_t)b->assigned_margin;
}

/* A DFM pulls, and e would open an event past what it assigned: nobody requested it (rules at the top). */
static inline bool unrequested(const struct xevb_builder *b, uint32_t e)
{
	return unlikely(b->assigned_pull) && (int32_t)(e - b->assigned_next) >= 0;
}

static uint32_t group_open(struct xevb_builder *b, uint32_t e0, uint32_t n, uint64_t now_ns)
{
	const uint32_t w = b->window, mask = b->mask;
	uint32_t last = e0 + n - 1, k, g, idx0 = e0 & mask;
	struct group *gr;

	if (unlikely(!b->have_base) || !b->n_gfree || n > w || unrequested(b, last))
		return NO_GROUP;
	if ((int32_t)(e0 - b->base) < 0 || last - b->base >= 2 * w)
		return NO_GROUP;
	for (k = 0; k < n; k++) {
		const struct slot *s = &b->slots[(e0 + k) & mask];

		if (SLOT_ID(s) == e0 + k && SLOT_STATE(s) != SLOT_FREE)
			return NO_GROUP;
	}
	if (last - b->base >= w) {
		uint32_t nb = last - (w - 1);

		/* Moving the window: the per-fragment rules judge what lies beyond the DFM's reach. */
		if (unassigned(b, last))
			return NO_GROUP;
		if (b->st.open_events)
			evict_below(b, nb);
		b->base = nb;
	}
	g = b->gfree[--b->n_gfree];
	gr = &b->groups[g];
	gr->first = e0;
	gr->n = n;
	gr->present = 0;
	gr->refs = n;
	gr->wire_bytes = 0;
	gr->open_ns = now_ns;
	gr->open = true;
	memset(gbits_of(b, g), 0, sizeof(uint64_t) * b->gwords);
	for (k = 0; k < n; k++) {
		struct slot *s = &b->slots[(e0 + k) & mask];

		slot_let_go(b, s);
		s->key = slot_key(e0 + k, SLOT_GOPEN);
		s->grp = g;
	}
	b->slots[idx0].open_ns = now_ns;
	chain_append(b, idx0);
	if (b->st.open_events == 0 || xevb_seq_after(b->lo, e0))
		b->lo = e0;
	b->st.open_events += n;
	b->st.events_opened += n;
	return g;
}

/*
 * A MEP of n consecutive events from e0: book it in its run if it has or
 * opens one (returns true, *taken = frame references kept); false: it must
 * go fragment by fragment.
 */
static inline bool group_add(struct xevb_builder *b, uint32_t frame_idx, uint32_t rec_start, uint32_t rec_end,
			     uint32_t e0, uint32_t n, uint32_t si, struct xevb_source_stats *src, uint64_t now_ns,
			     uint32_t *accepted, uint32_t *taken)
{
	const struct slot *s = &b->slots[e0 & b->mask];
	struct group *gr;
	struct gent *ge;
	uint64_t *bits;
	uint32_t g;

	if (likely(s->key == slot_key(e0, SLOT_GOPEN))) {
		g = s->grp;
		if (b->groups[g].first != e0 || b->groups[g].n != n)
			return false;
	} else {
		g = group_open(b, e0, n, now_ns);
		if (g == NO_GROUP)
			return false;
	}
	gr = &b->groups[g];
	bits = gbits_of(b, g);
	b->st.meps_grouped++;
	if (unlikely(bits[si / 64] >> (si % 64) & 1)) {
		drop(b, src, XEVB_DROP_DUPLICATE, n);
		XEVB_PROBE(frag_dropped, XEVB_DROP_DUPLICATE, e0, (unsigned)(src - b->st.src), n);
		*accepted = *taken = 0;
		return true;
	}
	bits[si / 64] |= 1ull << (si % 64);
	ge = &gents_of(b, g)[gr->present++];
	ge->frame_idx = frame_idx;
	ge->si = (uint16_t)si;
	ge->rec_start = (uint16_t)rec_start;
	ge->rec_end = (uint16_t)rec_end;
	gr->wire_bytes += rec_end - rec_start;
	*accepted = n;
	*taken = 1;
	if (gr->present == b->n_src)
		finish_group(b, g, FIN_COMPLETE);
	return true;
}

/* Close slot idx: emit (unless discarded), then give back its frames. */
void finish(struct xevb_builder *b, uint32_t idx, enum finish_kind kind)
{
	struct slot *s = &b->slots[idx];
	struct xevb_frag_slot *row = row_of(b, idx);
	struct xevb_builder_stats *st = &b->st;
	bool discard = discards(b, kind);
	bool pieced = b->st.seg_frags_live && seg_settle(b, row);
	uint32_t j, n = b->n_src;

	chain_unlink(b, idx);
	s->key = slot_key(SLOT_ID(s), SLOT_DONE);
	st->open_events--;
	if (kind == FIN_EVICT)
		st->events_evicted++;
	XEVB_PROBE_IF(event_complete, kind == FIN_COMPLETE, SLOT_ID(s), xevb_probe_now_ns() - s->open_ns,
		      s->n_frags);
	XEVB_PROBE_IF(event_timeout, by_policy(kind), SLOT_ID(s), n - s->n_frags, discard);

	if (discard) {
		st->events_discarded++;
		if (kind == FIN_UNASSIGNED)
			st->events_unassigned++;
		st->frags_discarded += s->n_frags;
		for (j = 0; j < n; j++)
			if (row[j].frame_idx != NO_FRAME)
				st->src[b->sorted[j]].frags_discarded++;
	} else {
		struct xevb_event ev = {
			.event_id = SLOT_ID(s),
			.run_number = st->run_number,
			.flags = kind == FIN_COMPLETE ? 0 : XEVB_EVT_F_INCOMPLETE,
			.n_expected = (uint16_t)n,
			.n_frags = (uint16_t)s->n_frags,
			.frag_wire_bytes = s->wire_bytes,
			.open_ns = s->open_ns,
			.source_ids = b->sorted,
			.frags = pieced ? b->erow : row,
			.frame_data = b->frame_data,
			.pieces = pieced ? b->epieces : NULL,
		};

		if (kind == FIN_COMPLETE) {
			st->events_complete++;
		} else {
			st->events_incomplete++;
			if (kind == FIN_EOR)
				st->events_flushed_eor++;
		}
		if (b->cfg.emit)
			b->cfg.emit(b->cfg.ctx, &ev);
	}
	/* The row stays as it is: it tells a later duplicate from a late one. */
	uint32_t *refcnt = b->refcnt;

	for (j = 0; j < n; j++) {
		uint32_t f = row[j].frame_idx;

		if (f == NO_FRAME)
			continue;
		if (unlikely(pieced && is_seg(&row[j]))) {
			seg_put(b, f); /* the row keeps naming it: a duplicate from a late one */
			continue;
		}
		if (--refcnt[f] == 0)
			frame_gone(b, f);
	}
}

/*
 * The window must start at nb: the events still open below it leave now,
 * oldest id first (FIN_EVICT). A run reaching past nb goes single first,
 * so that only its events below nb leave, as fragment by fragment. Open
 * events all lie in [lo, B+W), so this stops within W steps; lo ends on
 * the oldest open event, or at nb.
 */
static void __attribute__((noinline)) evict_below(struct xevb_builder *b, uint32_t nb)
{
	while (b->st.open_events && xevb_seq_after(nb, b->lo)) {
		uint32_t idx = b->lo & b->mask;
		const struct slot *s = &b->slots[idx];

		if (s->key == slot_key(b->lo, SLOT_OPEN)) {
			finish(b, idx, FIN_EVICT);
		} else if (s->key == slot_key(b->lo, SLOT_GOPEN)) {
			const struct group *gr = &b->groups[s->grp];

			if (!xevb_seq_after(nb, gr->first + gr->n - 1)) {
				explode(b, s->grp);
				continue; /* its events are single now: this one next */
			}
			b->lo = gr->first + gr->n;
			finish_group(b, s->grp, FIN_EVICT);
			continue;
		}
		b->lo++;
	}
}

/*
 * A timed-out event's row was last written a timeout ago: long gone from
 * the cache. Fetch the row of the event after it while this one is emitted
 * and released (read by the release loop, and by emit when it forwards).
 */
static inline void prefetch_row(const struct xevb_builder *b, uint32_t idx)
{
	const char *p = (const char *)(b->rows + (size_t)idx * b->n_src);
	size_t len = sizeof(struct xevb_frag_slot) * b->n_src;

	for (size_t off = 0; off < len; off += 64)
		__builtin_prefetch(p + off, 0, 3);
}

/* Time out the open events due at now_ns, oldest first. */
static void expire_due(struct xevb_builder *b, uint64_t now_ns)
{
	uint64_t t = b->cfg.timeout_ns;

	while (b->oldest != NO_SLOT) {
		uint64_t age = now_ns - b->slots[b->oldest].open_ns;
		uint32_t next;

		/* A clock read before the event opened is not a timeout. */
		if ((int64_t)age < 0 || age < t)
			break;
		next = b->slots[b->oldest].next;
		if (SLOT_STATE(&b->slots[b->oldest]) == SLOT_GOPEN) {
			finish_group(b, b->slots[b->oldest].grp, FIN_TIMEOUT);
			continue;
		}
		if (next != NO_SLOT && SLOT_STATE(&b->slots[next]) == SLOT_OPEN)
			prefetch_row(b, next);
		finish(b, b->oldest, FIN_TIMEOUT);
	}
}

/*
 * Frame pressure: the oldest open events (opening order, as timeouts go)
 * leave until at most target frames are held.
 */
void __attribute__((noinline)) evict_oldest(struct xevb_builder *b, uint64_t target)
{
	while (b->st.frames_held > target && b->oldest != NO_SLOT) {
		const struct slot *s = &b->slots[b->oldest];

		if (SLOT_STATE(s) == SLOT_GOPEN)
			finish_group(b, s->grp, FIN_EVICT);
		else
			finish(b, b->oldest, FIN_EVICT);
	}
}

enum jump_ok { JUMP_NO = 0, JUMP_IDLE, JUMP_QUORUM, JUMP_SHED };

/*
 * e is more than a window ahead: may the window go there? Records the
 * source's claim; O(n_src), off the hot path (rules at the top).
 */
static enum jump_ok __attribute__((noinline))
far_jump_ok(struct xevb_builder *b, uint32_t e, uint32_t si, uint64_t now_ns)
{
	const uint64_t t = b->cfg.timeout_ns;
	const uint32_t w = b->window;
	struct claim *c = &b->claims[si];
	uint32_t j, n = 0;

	c->event_id = e;
	c->ns = now_ns;
	c->set = 1;
	/*
	 * Our XDP program shed the blocks in between (pi->shed_run): the gap
	 * is its doing, as far as the run it shed reaches past the window.
	 */
	if (b->shed_run && e - (b->base + w - 1) <= ((uint32_t)b->shed_run * XEVB_GUARD_RUN_UNIT + 2)
							    << XEVB_SHED_BLOCK_SHIFT)
		return JUMP_SHED;
	if (t && (int64_t)(now_ns - b->last_ns) >= (int64_t)t) {
		expire_due(b, now_ns);
		return JUMP_IDLE;
	}
	for (j = 0, c = b->claims; j < b->n_src; j++, c++)
		n += c->set && c->event_id - e + (w - 1) < 2 * w - 1 &&
		     (!t || (int64_t)(now_ns - c->ns) < (int64_t)t);
	return n >= b->quorum ? JUMP_QUORUM : JUMP_NO;
}

/*
 * Everything but "e is open in its slot": returns the slot to store into
 * (e opened there if needed) or NO_SLOT after counting the drop, of nfrag
 * fragments (a segment's: 1 at offset 0, else 0, see the top).
 */
uint32_t __attribute__((noinline)) slow_path(struct xevb_builder *b, uint32_t e, uint32_t si,
					     struct xevb_source_stats *src, uint64_t now_ns, uint32_t nfrag)
{
	uint32_t idx = e & b->mask, d;
	struct slot *s = &b->slots[idx];

	if ((unlikely(!b->have_base) && unassigned(b, e)) || unrequested(b, e)) {
		drop(b, src, XEVB_DROP_UNASSIGNED, nfrag);
		XEVB_PROBE(frag_dropped, XEVB_DROP_UNASSIGNED, e, (unsigned)(src - b->st.src), nfrag);
		return NO_SLOT;
	}
	if (unlikely(!b->have_base)) {
		b->base = e - (b->window - 1);
		b->have_base = true;
		b->last_ns = now_ns;
	}
	d = e - b->base;
	if ((int32_t)d < 0) {
		drop(b, src, XEVB_DROP_LATE, nfrag);
		XEVB_PROBE(frag_dropped, XEVB_DROP_LATE, e, (unsigned)(src - b->st.src), nfrag);
		return NO_SLOT;
	}
	if (s->key == slot_key(e, SLOT_GOPEN)) {
		/* A MEP that does not fit the run: its events go single. */
		explode(b, s->grp);
		if (row_of(b, idx)[si].frame_idx != NO_FRAME) {
			drop(b, src, XEVB_DROP_DUPLICATE, nfrag);
			XEVB_PROBE(frag_dropped, XEVB_DROP_DUPLICATE, e, (unsigned)(src - b->st.src), nfrag);
			return NO_SLOT;
		}
		return idx;
	}
	if (s->key == slot_key(e, SLOT_DONE) || s->key == slot_key(e, SLOT_GDONE)) {
		enum xevb_drop_reason r = done_has(b, s, idx, si) ? XEVB_DROP_DUPLICATE : XEVB_DROP_LATE;

		drop(b, src, r, nfrag);
		XEVB_PROBE(frag_dropped, r, e, (unsigned)(src - b->st.src), nfrag);
		return NO_SLOT;
	}
	if (d >= b->window) {
		uint32_t nb = e - (b->window - 1);
		enum jump_ok far = JUMP_NO;

		if (unassigned(b, e)) {
			drop(b, src, XEVB_DROP_UNASSIGNED, nfrag);
			XEVB_PROBE(frag_dropped, XEVB_DROP_UNASSIGNED, e, (unsigned)(src - b->st.src), nfrag);
			return NO_SLOT;
		}
		if (unlikely(d - b->window >= b->window) && (far = far_jump_ok(b, e, si, now_ns)) == JUMP_NO) {
			drop(b, src, XEVB_DROP_FUTURE, nfrag);
			XEVB_PROBE(frag_dropped, XEVB_DROP_FUTURE, e, (unsigned)(src - b->st.src), nfrag);
			return NO_SLOT;
		}
		if (b->st.open_events)
			evict_below(b, nb);
		b->base = nb;
		if (unlikely(far != JUMP_NO)) {
			if (far == JUMP_IDLE)
				b->st.jumps_idle++;
			else if (far == JUMP_SHED)
				b->st.jumps_shed++;
			else
				b->st.jumps_quorum++;
			memset(b->claims, 0, sizeof(*b->claims) * b->n_src);
		}
	}
	/* Open e. The slot holds nothing or a stale id from below B. */
	memset(row_of(b, idx), 0xff, sizeof(struct xevb_frag_slot) * b->n_src);
	slot_let_go(b, s);
	s->key = slot_key(e, SLOT_OPEN);
	s->n_frags = 0;
	s->wire_bytes = 0;
	s->open_ns = now_ns;
	chain_append(b, idx);
	if (b->st.open_events == 0 || xevb_seq_after(b->lo, e))
		b->lo = e;
	b->st.open_events++;
	b->st.events_opened++;
	return idx;
}

/* Emit every open event INCOMPLETE, in event_id order. */
void flush_open(struct xevb_builder *b, enum finish_kind kind)
{
	uint32_t k;

	if (!b->have_base)
		return;
	for (k = 0; k < b->window && b->st.open_events; k++) {
		uint32_t id = b->base + k, idx = id & b->mask;
		const struct slot *s = &b->slots[idx];

		if (s->key == slot_key(id, SLOT_OPEN))
			finish(b, idx, kind);
		else if (s->key == slot_key(id, SLOT_GOPEN) && b->groups[s->grp].first == id)
			finish_group(b, s->grp, kind);
	}
}

static void note_seq(struct xevb_builder *b, struct xevb_source_stats *src, uint16_t sid, uint32_t seq)
{
	if (unlikely(!src->seen)) {
		src->seen = true;
		src->last_seq = seq;
		b->seen[b->n_seen++] = sid;
		return;
	}
	if (xevb_seq_after(seq, src->last_seq)) {
		src->seq_gaps += seq - src->last_seq - 1;
		src->last_seq = seq;
	} else if (unlikely(src->last_seq - seq > SEQ_REORDER_MAX)) {
		src->seq_resets++;
		b->st.seq_resets++;
		src->last_seq = seq;
	}
}

/*
 * The source sent END_OF_RUN: once every configured source has, the run
 * ends. A source flags the segments of its last fragment, and more of them
 * may follow the first one flagged: while a segmented fragment is pending
 * the end waits (eor_settle), until it is whole or partial at its timeout.
 */
void note_end_of_run(struct xevb_builder *b, struct xevb_source_stats *src)
{
	if (!src->end_of_run) {
		src->end_of_run = true;
		b->n_eor++;
	}
	if (b->n_eor == b->n_src && !b->cfg.end_of_run_counted_only) {
		if (b->st.frags_pending) {
			b->eor_wait = true;
			return;
		}
		flush_open(b, FIN_EOR);
		b->st.run_ended = true;
	}
}

/* A packet of source sid, counted here unless the receiving worker counts packets. */
void note_packet(struct xevb_builder *b, struct xevb_source_stats *src, uint16_t sid, uint32_t packet_seq)
{
	if (likely(!b->cfg.rx_counts_packets)) {
		note_seq(b, src, sid, packet_seq);
		src->packets++;
		b->st.packets++;
	} else if (unlikely(!src->seen)) {
		src->seen = true; /* for the per-source checks */
		b->seen[b->n_seen++] = sid;
	}
}

/*
 * The per-fragment loop; returns how many fragments were dropped. restrict:
 * the stores into the rows never touch the slots, the refs or the builder,
 * so nothing needs reloading after them.
 */
static inline uint32_t add_frags(struct xevb_builder *b, struct slot *restrict slots,
				 struct xevb_frag_slot *restrict col, const struct xevb_frag_ref *restrict frags,
				 uint32_t n, uint32_t frame_idx, uint32_t si, struct xevb_source_stats *src,
				 uint64_t now_ns)
{
	const uint32_t nsrc = b->n_src, mask = b->mask;
	uint32_t i, dropped = 0;

	for (i = 0; i < n; i++) {
		uint32_t e = frags[i].event_id, idx = e & mask;
		struct slot *s = &slots[idx];
		struct xevb_frag_slot *fs = col + (size_t)idx * nsrc;

		if (likely(s->key == slot_key(e, SLOT_OPEN))) {
			if (unlikely(fs->frame_idx != NO_FRAME)) {
				drop(b, src, XEVB_DROP_DUPLICATE, 1);
				XEVB_PROBE(frag_dropped, XEVB_DROP_DUPLICATE, e, (unsigned)(src - b->st.src), 1);
				dropped++;
				continue;
			}
		} else if (slow_path(b, e, si, src, now_ns, 1) == NO_SLOT) {
			dropped++;
			continue;
		}
		fs->frame_idx = frame_idx;
		fs->payload_off = frags[i].payload_off;
		fs->length = frags[i].length;
		s->wire_bytes += sizeof(struct xevb_evt_frag_hdr) + XEVB_PAD4((uint32_t)frags[i].length);
		XEVB_PROBE(frag_accepted, e, (unsigned)(src - b->st.src), frags[i].length, slots[idx].open_ns);
		if (++s->n_frags == nsrc)
			finish(b, idx, FIN_COMPLETE);
	}
	return dropped;
}

void xevb_builder_add_mep(struct xevb_builder *b, uint32_t frame_idx, const uint8_t *frame,
			  const struct xevb_pkt_info *pi, const struct xevb_frag_ref *frags, uint64_t now_ns)
{
	struct xevb_builder_stats *st = &b->st;
	struct xevb_source_stats *src;
	uint32_t n = pi->n_frags, si, accepted, taken, e0, rec_start = 0, rec_end = 0;
	uint16_t sid = pi->source_id;
	bool run;

	if (unlikely(frame_idx >= b->n_frames || b->refcnt[frame_idx] || sid > XEVB_MAX_SOURCE_ID ||
		     n > XEVB_MAX_FRAGS_PER_MEP ||
		     (!frags && (!pi->consec || n == 0 || !frame || pi->mep_len < XEVB_MEP_HLEN)))) {
		st->bad_calls++;
		return;
	}
	/*
	 * Parsed refs strictly increase (the parser's rule), so a span of
	 * n-1 means no gap; without refs the caller vouches (pi->consec).
	 */
	if (frags) {
		e0 = n ? frags[0].event_id : 0;
		run = n > 1 && frags[n - 1].event_id - e0 == n - 1;
		/* Consecutive ids leave no room for another record between them. */
		if (run) {
			rec_start = (uint32_t)frags[0].payload_off - XEVB_REC_HLEN;
			rec_end = (uint32_t)frags[n - 1].payload_off + XEVB_PAD4((uint32_t)frags[n - 1].length);
		}
	} else {
		e0 = pi->first_event_id;
		run = n > 1;
		rec_start = (uint32_t)pi->mep_off + XEVB_MEP_HLEN;
		rec_end = (uint32_t)pi->mep_off + pi->mep_len;
	}
	src = &st->src[sid];
	note_packet(b, src, sid, pi->packet_seq);
	b->shed_run = pi->shed_run;
	src->frags_received += n;
	st->frags_received += n;

	si = b->src_index[sid];
	if (unlikely(si == NO_SRC)) {
		drop(b, src, XEVB_DROP_UNKNOWN_SOURCE, n);
		XEVB_PROBE(frag_dropped, XEVB_DROP_UNKNOWN_SOURCE, e0, sid, n);
		goto release;
	}
	if (unlikely(!st->run_known)) {
		st->run_number = pi->run_number;
		st->run_known = true;
	}
	if (unlikely(pi->run_number != st->run_number)) {
		drop(b, src, XEVB_DROP_WRONG_RUN, n);
		XEVB_PROBE(frag_dropped, XEVB_DROP_WRONG_RUN, e0, sid, n);
		goto release;
	}

	b->frame_data[frame_idx] = frame;
	b->refcnt[frame_idx] = n + 1;
	/* A tracer of single fragments sees them only fragment by fragment. */
	if (!(run && !XEVB_PROBE_ENABLED(frag_accepted) &&
	      group_add(b, frame_idx, rec_start, rec_end, e0, n, si, src, now_ns, &accepted, &taken))) {
		if (!frags)
			frags = refs_from_frame(b, frame, pi, e0);
		accepted = n - add_frags(b, b->slots, b->rows + si, frags, n, frame_idx, si, src, now_ns);
		taken = accepted;
	}
	b->last_ns = now_ns;
	src->frags_in_events += accepted;
	st->frags_in_events += accepted;

	if (pi->flags & XEVB_MEP_F_END_OF_RUN)
		note_end_of_run(b, src);
	/* Take back the references no fragment took, and the guard. */
	b->refcnt[frame_idx] -= n + 1 - taken;
	if (b->refcnt[frame_idx]) {
		st->frames_held++;
		if (unlikely(b->cfg.max_frames_held && st->frames_held > b->cfg.max_frames_held))
			evict_oldest(b, b->cfg.max_frames_held - b->cfg.max_frames_held / 8);
		return;
	}
release:
	if (b->cfg.frame_release)
		b->cfg.frame_release(b->cfg.ctx, frame_idx);
}

void xevb_builder_poll(struct xevb_builder *b, uint64_t now_ns)
{
	if (b->cfg.timeout_ns && (b->assigned_known || !b->cfg.await_first_assign))
		expire_due(b, now_ns);
	/* A timeout, or a MEP's eviction, may have settled the last pending fragment. */
	eor_settle(b);
}

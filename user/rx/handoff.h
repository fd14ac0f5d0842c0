/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Multi-queue receive (`xevb build --workers N`): event ownership and the
 * lock-free hand-off of frame references between workers.
 *
 * Ownership. Event e belongs to worker (e >> shift) % n: blocks of 2^shift
 * consecutive event_ids go round robin over the workers, so a MEP (whose
 * events are consecutive, wire-format section 1) almost always lies in one
 * block and goes whole to one owner. A MEP that crosses a block boundary is
 * split: each owner gets the records of its own events, and the frame
 * stays held until every owner has let go of it. Every fragment of event e
 * therefore meets at one builder, whichever queue it arrived on.
 *
 * Hand-off. One single-producer single-consumer ring per ordered pair of
 * workers carries frame references (struct xevb_ho_ent: frame index + the
 * record range, 32 bytes; a whole MEP of consecutive ids needs nothing
 * else), and one per pair carries released frame indices
 * back to the worker whose queue (fill ring) the frame came from. Both are
 * sized to the frames that can be outstanding, so a push never finds them
 * full; indices are free-running 32-bit counters, published in batches
 * with one release store.
 */
#ifndef XEVB_HANDOFF_H
#define XEVB_HANDOFF_H

#include <stdbool.h>
#include <stdint.h>
#include <xevb/mep_parse.h>

#define XEVB_HO_MAX_WORKERS 16

/*
 * One line per writer and purpose: what a side publishes (head, tail) never
 * shares a line with what it writes for itself at every entry, so the other
 * side's polling does not steal the line under each push or release.
 */
struct xevb_spsc {
	_Alignas(64) uint32_t head;      /* published by the producer: entries [tail, head) readable */
	_Alignas(64) uint32_t tail;      /* published by the consumer: slots before it are free */
	_Alignas(64) uint32_t prod_head; /* the producer's own: written, not yet published */
	uint32_t prod_tail_cache;
	_Alignas(64) uint32_t cons_tail; /* the consumer's own: == tail */
	uint32_t cons_head_cache;
	_Alignas(64) uint32_t mask; /* read only */
	uint32_t esz;
	void *buf;
};

/* capacity: a power of 2; esz: entry size in bytes. 0 or -ENOMEM/-EINVAL. */
int xevb_spsc_init(struct xevb_spsc *r, uint32_t capacity, uint32_t esz);
void xevb_spsc_free(struct xevb_spsc *r);

/* Producer: the slot of the next entry, NULL when full. Then _push. */
static inline void *xevb_spsc_slot(struct xevb_spsc *r)
{
	if (r->prod_head - r->prod_tail_cache > r->mask) {
		r->prod_tail_cache = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (r->prod_head - r->prod_tail_cache > r->mask)
			return NULL;
	}
	return (uint8_t *)r->buf + (size_t)(r->prod_head & r->mask) * r->esz;
}

static inline void xevb_spsc_push(struct xevb_spsc *r)
{
	r->prod_head++;
}

/* Make what was pushed visible; true if anything new was published. */
static inline bool xevb_spsc_publish(struct xevb_spsc *r)
{
	if (r->prod_head == r->head)
		return false;
	__atomic_store_n(&r->head, r->prod_head, __ATOMIC_RELEASE);
	return true;
}

/* Consumer: entries readable now (up to max); read them with _at(i). */
static inline uint32_t xevb_spsc_peek(struct xevb_spsc *r, uint32_t max)
{
	uint32_t n = r->cons_head_cache - r->cons_tail;

	if (n < max) {
		r->cons_head_cache = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		n = r->cons_head_cache - r->cons_tail;
	}
	return n < max ? n : max;
}

static inline void *xevb_spsc_at(struct xevb_spsc *r, uint32_t i)
{
	return (uint8_t *)r->buf + (size_t)((r->cons_tail + i) & r->mask) * r->esz;
}

/* Producer: room for k more entries (written in place, then _push k times). */
static inline bool xevb_spsc_room(struct xevb_spsc *r, uint32_t k)
{
	if (r->prod_head - r->prod_tail_cache + k > r->mask + 1) {
		r->prod_tail_cache = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (r->prod_head - r->prod_tail_cache + k > r->mask + 1)
			return false;
	}
	return true;
}

static inline void xevb_spsc_release(struct xevb_spsc *r, uint32_t n)
{
	r->cons_tail += n;
	__atomic_store_n(&r->tail, r->cons_tail, __ATOMIC_RELEASE);
}

/* Nothing published and unread (either side may ask; a hint). */
static inline bool xevb_spsc_empty(const struct xevb_spsc *r)
{
	return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}

/* Which worker builds event e. */
static inline uint32_t xevb_owner(uint32_t event_id, uint32_t shift, uint32_t n_workers)
{
	/* 2, 4, 8, 16 workers: a mask, not a division, per MEP */
	if (!(n_workers & (n_workers - 1)))
		return (event_id >> shift) & (n_workers - 1);
	return (event_id >> shift) % n_workers;
}

/* A frame reference handed to an owner. */
enum {
	XEVB_HO_F_FILTER = 1, /* records of other owners lie in the range: skip them */
	XEVB_HO_F_REFS = 2,   /* the owner's frag refs wait in the pair's ref ring: no walk */
	XEVB_HO_F_WHOLE = 4,  /* the whole MEP, ids first_event_id, +1, ...: no refs at all */
};

/*
 * 32 bytes, two a cache line. With XEVB_HO_F_REFS the entry carries what
 * the owner needs from the MEP header and its n_walk fragment refs follow
 * in the ref ring, dense, as the receiving worker parsed them: the owner
 * reads neither the frame's MEP header nor its record headers (cache lines
 * the other core wrote), only these entries. Without it (the ref ring was
 * full), the owner walks the records (xevb_ho_walk).
 *
 * XEVB_HO_F_WHOLE (the common case: a MEP of consecutive ids, pi.consec,
 * that goes whole to one owner) needs no refs: the entry alone describes
 * it (n_walk records from first_event_id at rec_off = mep_off + 16, span
 * bytes of them), and the owner's builder books it as a run without refs
 * (xevb_builder_add_mep with frags NULL). A single record travels as its
 * ref in the entry (frag_len), since a run of one is booked per fragment.
 */
struct xevb_ho_ent {
	uint32_t frame_idx;
	uint16_t mep_off; /* MEP header, from the frame start */
	uint16_t rec_off; /* first record of the range, from the frame start */
	uint16_t n_walk;  /* F_REFS: refs in the ref ring; else records in the range (0: END_OF_RUN notice only) */
	uint16_t flags;
	uint16_t span; /* bytes from rec_off to the end of the range's last record */
	uint16_t source_id;
	uint32_t run_number;
	uint32_t packet_seq;
	uint8_t mep_flags;
	uint8_t pad;
	uint16_t frag_len;       /* F_WHOLE with n_walk 1: that record's length */
	uint32_t first_event_id; /* F_WHOLE: the first record's event_id */
};
_Static_assert(sizeof(struct xevb_ho_ent) == 32, "two hand-off entries a cache line");

/* One owner's share of a MEP: records [first, last], count of them its own. */
struct xevb_ho_part {
	uint16_t first, last, count;
	bool filter; /* another owner's records lie between first and last */
};

/*
 * Split a parsed MEP (frags[0..n), n >= 1) by owner. parts[w].count == 0
 * for a worker that gets nothing. Returns how many workers get records.
 */
uint32_t xevb_owner_plan(const struct xevb_frag_ref *frags, uint32_t n, uint32_t shift, uint32_t n_workers,
			 struct xevb_ho_part *parts);

/*
 * The owner's side: rebuild pi and this owner's frag refs from a frame the
 * producer has already validated (xevb_classify said MEP, and nobody writes
 * the frame while it is held). Returns the number of frags written.
 */
uint32_t xevb_ho_walk(const uint8_t *frame, const struct xevb_ho_ent *e, uint32_t shift, uint32_t n_workers,
		      uint32_t self, struct xevb_pkt_info *pi, struct xevb_frag_ref *frags);

/*
 * The receiving worker's side: describe owner's share p of a parsed MEP
 * (pi, frags[0..pi->n_frags)) in entry e. Its refs go into the ref ring
 * (entries of struct xevb_frag_ref) when they fit, else the entry asks for
 * a walk. Returns true if the refs went into the ring. Push e afterwards;
 * the ref ring needs no publish of its own (the hand-off ring's release
 * store covers the refs written before it).
 */
bool xevb_ho_pack(struct xevb_ho_ent *e, struct xevb_spsc *refs, uint32_t frame_idx,
		  const struct xevb_pkt_info *pi, const struct xevb_frag_ref *frags, const struct xevb_ho_part *p,
		  uint32_t shift, uint32_t n_workers, uint32_t owner);

/*
 * The receiving worker's side of a MEP (pi, validated, pi->consec) that
 * goes whole to one owner: entry e, no refs (XEVB_HO_F_WHOLE). frag_len:
 * the length of the only record when pi->n_frags is 1 (else unused).
 */
void xevb_ho_pack_whole(struct xevb_ho_ent *e, uint32_t frame_idx, const struct xevb_pkt_info *pi,
			uint16_t frag_len);

/*
 * The owner's side of entry e: fills pi and returns its frag refs
 * (pi->n_frags of them), read from the ref ring at *cursor entries past its
 * tail (advanced; release them with xevb_spsc_release(refs, *cursor) once
 * the builder took them), copied into scratch only when they wrap around
 * the ring, or walked from frame into scratch. A WHOLE entry returns NULL
 * with pi->consec set (hand frags NULL to the builder), or for a single
 * record its ref in scratch; neither reads the frame nor the ref ring.
 */
const struct xevb_frag_ref *xevb_ho_unpack(const uint8_t *frame, const struct xevb_ho_ent *e,
					   struct xevb_spsc *refs, uint32_t *cursor, uint32_t shift,
					   uint32_t n_workers, uint32_t self, struct xevb_pkt_info *pi,
					   struct xevb_frag_ref *scratch);

#endif /* XEVB_HANDOFF_H */

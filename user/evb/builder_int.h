/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Builder core (API and frame-lifetime contract: user/evb/builder.h), private to
 * builder.c (window, runs), builder_seg.c (segments), builder_setup.c
 * (making it, a DFM's steering, queries) and builder_check.c (the
 * invariant checker): the rules, the layout and the inline helpers they read.
 *
 * Layout. The window is W = 2^k event slots; event e lives in slot
 * e & (W-1). Each slot owns a row of n_src fragment slots (one per expected
 * source, in ascending source_id order), so a complete event is handed to
 * emit as that row, untouched: nothing is copied or sorted per event. A
 * source_id -> dense index table (4096 entries) is read once per MEP; per
 * fragment the work is: slot lookup, state check, duplicate check, one
 * 8-byte store, one counter, one add to the event's encoded size (so that
 * sizing an event is O(1): xevb_event_wire_size_fast). Frame references are counted per frame, not
 * per fragment: a MEP's frame gets n+1 references up front and the unused
 * ones are taken back when the MEP is done (the +1 keeps a frame alive while
 * events complete in the middle of its own MEP).
 *
 * Window semantics (all comparisons in RFC 1982 serial order, so a run
 * crossing event_id 2^32 -> 0 builds like any other):
 *  - base B: every open event has an id in [B, B+W). Ids before B are LATE.
 *    The first fragment ever seen places B at e-(W-1), so that e is the
 *    newest id of the window and lagging sources can still open older ones.
 *  - e in [B, B+W): its slot holds either e (open or done) or a stale older
 *    id or nothing. Open e: add the fragment (DUPLICATE if the source is
 *    already there). Done e: DUPLICATE if the source had delivered, else
 *    LATE; the row of a finished event is kept until its slot is reused, so
 *    a duplicate after emission is still recognised as one. Otherwise e opens.
 *  - e at or after B+W: the window must slide to B' = e-(W-1). Every event
 *    older than B' that is still open leaves at once, oldest id first, as a
 *    timeout would (emitted INCOMPLETE or discarded, by the policy) and is
 *    counted EVICTED; then B moves to B' and the ids it passes become late.
 *    So no fragment is ever dropped because an older event waits for a
 *    fragment that may never come: an incomplete event holds the window
 *    only until the newest id needs its room, not for a timeout, and after
 *    any loss the following events are complete again (no cascade). The
 *    timeout bounds how long an event may wait; the window bounds how far
 *    behind the newest id it may lie. B never moves otherwise, so within
 *    the window "done" is remembered exactly, and below it everything
 *    counts as LATE (a duplicate of an event that has left the window is
 *    counted LATE). OVERFLOW is no longer used by these rules. Frames are
 *    bounded the same way: above cfg.max_frames_held, the oldest open
 *    events (opening order) are evicted.
 *  - e at or after B+2W (a jump of more than one window: the new window
 *    would not overlap the old one) must be corroborated first, because one
 *    bad MEP would otherwise make every later good fragment LATE. Each such
 *    fragment records a claim for its source (id e, time now). The jump is
 *    corroborated when (a) the builder was idle: no MEP of the run from a
 *    configured source for timeout_ns (timeout_ns > 0); the events still
 *    open then are all due and are timed out first; or (b) at least
 *    `quorum` distinct configured sources hold a claim within W of e, none
 *    older than timeout_ns (no age limit when timeout_ns is 0). Otherwise
 *    the fragment is FUTURE. Once corroborated, the rule above applies
 *    (older open events are evicted); when the window moves that way, the
 *    claims are cleared. A legitimate jump (all sources skip ahead together,
 *    e.g. after a stall or a loss of more than a window) costs the FUTURE
 *    fragments sent before the quorum is complete; after a pause longer
 *    than the timeout it costs nothing. A single-source builder's quorum
 *    is 1: nothing can corroborate or contradict its only source.
 *  - With a DFM (xevb_builder_assigned called at least once): let A be one
 *    past the newest id it assigned and M the margin: W plus the widest
 *    step seen from A to the first id of the next assignment (the other
 *    builders' blocks in between; at most ASSIGN_STEP_MAX in all). A
 *    fragment at or after A+M is UNASSIGNED, before any of the rules above
 *    could place or move the window (and before it records a claim): the
 *    DFM, not the data, says how far the run has got, and sources spoofed
 *    to allowed addresses could otherwise form a quorum. The margin lets
 *    fragments beat their ASSIGN (push mode: the sources get it as the
 *    builder does); within it the rules above hold as before. In pull
 *    mode (xevb_builder_set_pull) no fragment may beat its REQUEST, which
 *    follows the ASSIGN: one at or after A that would open an event is
 *    UNASSIGNED (data nobody requested cannot take a slot that the
 *    requested fragments of that id will need).
 *  - An id more than 2^31 away from B is taken as before B: LATE.
 *  - "No free slot" cannot happen apart from the case above: a slot in the
 *    window only ever holds ids of the window or stale ones below it.
 *
 * Timeouts: open events are chained in opening order; poll() expires from
 * the oldest while now - open_ns >= timeout_ns. Emitted INCOMPLETE or
 * discarded (policy); a fragment arriving later for it is LATE.
 *
 * Run: fixed, set by a DFM (xevb_builder_set_run), or adopted from the
 * first MEP of a configured source (only when configured so: anyone can
 * send that MEP, so xevb build never does, docs/hardening.md). A MEP
 * from an unconfigured source counts UNKNOWN_SOURCE (whatever its run); one
 * of another run counts WRONG_RUN, all its fragments.
 *
 * END_OF_RUN: once every configured source has sent a MEP of this run with
 * the flag, every open event is emitted (INCOMPLETE) in event_id order and
 * run_ended is set; while a segmented fragment is still pending, only once
 * it is settled (note_end_of_run). Later MEPs are handled as usual. With
 * end_of_run_counted_only (a DFM ends the run) the flags are only counted.
 *
 * packet_seq: per source, a forward jump of d counts d-1 gaps; a packet at
 * or before the newest seen (reordered, repeated) counts none and does not
 * move the reference, so reordering can overstate gaps, never hide them.
 * A packet more than SEQ_REORDER_MAX behind the newest is a restarted
 * source (numbering from 0 again): counted as seq_resets, and it becomes
 * the reference, so the new numbering's gaps count from there.
 *
 * Runs (groups). Sources pack the same consecutive triggers, so the MEPs of
 * all sources for events [E, E+n) usually carry exactly those n ids. Such a
 * MEP (pi->consec) whose n events would all be opened by it is booked as a
 * run: one group holds, per source, the frame (one frame reference), and
 * the n event slots say GOPEN/GDONE with the group's index. A later MEP with
 * the same E and n joins it in O(1): a presence bit, one entry. Every rule
 * above gives the same answer for all n events of a run (they opened
 * together, hold the same sources), so the run is finished whole: complete
 * when every source is in, timed out, flushed. A MEP that does not fit a
 * run it touches (another count, a shifted first id, a gap) splits the run
 * back into single events first (explode: rows filled from the frames'
 * records), and then goes fragment by fragment. So counters, drop reasons,
 * emitted events and their order are exactly the per-fragment ones; only
 * the work differs. A done run's group stays while any of its slots still
 * names it, so a duplicate is told from a late fragment as before.
 *
 * Accounting: frags_in_events counts fragments accepted into an event, open,
 * emitted or discarded (frags_discarded says how many of them went down
 * with a discarded event), so received == in_events + drops always holds.
 *
 * Segments (wire format 1.1). A fragment sent in segments is put together
 * in place: an entry of a bounded pool lists its segments (pieces) in the
 * frames where they arrived, ascending offset, each holding a reference on
 * its frame. The event's row names the entry: frame_idx = the entry,
 * payload_off SEG_PENDING or SEG_WHOLE (a real fragment's payload lies past
 * its headers, never at 0 or 1). Its first segment opens the event like a
 * fragment would and counts the fragment received; a pending one is
 * missing as far as the event goes. Once every byte is held exactly once
 * the fragment is accepted like any other (n_frags, in_events) and, at
 * emit, handed over as its pieces (xevb_event.pieces). A segment repeating
 * a held offset is a duplicate segment; one disagreeing on length or
 * crc32c, or overlapping a held one, is mismatched; neither is kept. When
 * the event leaves, a pending fragment is partial (XEVB_DROP_PARTIAL) and
 * its segments count as such. A fragment dropped before any of it is held
 * (unknown source, wrong run, late, future, duplicate) counts once, with
 * its segment at offset 0; all its segments count as FRAG_DROPPED. No free
 * entry: the oldest open events leave (evicted) until one is free.
 */
#ifndef XEVB_BUILDER_INT_H
#define XEVB_BUILDER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "evb/builder.h"

#define NO_SRC            0xffffu
#define NO_FRAME          UINT32_MAX
#define NO_SLOT           UINT32_MAX
#define WINDOW_MAX        (1u << 20) /* far below 2^31: serial order stays sound */
#define FRAMES_MAX        (1u << 26)
#define SEQ_REORDER_MAX   64u /* further behind than this: a restart */
#define GROUPS_BYTES_MAX  (64u << 20)
#define SEG_PENDING       0u          /* row payload_off of a fragment being put together */
#define SEG_WHOLE         1u          /* ... of one whole, handed over as pieces */
#define SEG_IN_USE        0xfffffffeu /* seg_frag.next_free of a live entry */
#define SEG_FRAGS_DEFAULT 1024u
#define ASSIGN_STEP_MAX   (1u << 24) /* the unassigned margin at most (window + step) */

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

enum slot_state { SLOT_FREE = 0, SLOT_OPEN, SLOT_DONE, SLOT_GOPEN, SLOT_GDONE };
/* FIN_EVICT: window pressure; the timeout policy applies as to FIN_TIMEOUT. */
/* FIN_UNASSIGNED: opened before a DFM's first ASSIGN, out of its reach (xevb_builder_assigned). */
enum finish_kind { FIN_COMPLETE, FIN_TIMEOUT, FIN_FLUSH, FIN_EOR, FIN_EVICT, FIN_UNASSIGNED };

static inline bool by_policy(enum finish_kind kind)
{
	return kind == FIN_TIMEOUT || kind == FIN_EVICT;
}

/*
 * 32 bytes; key = state << 32 | event_id: the hot check is one compare.
 * wire_bytes (xevb_event.frag_wire_bytes) is summed on this line, which the
 * fragment store has just read anyway, so sizing an event needs no walk.
 */
struct slot {
	uint64_t key;
	union {
		uint32_t n_frags;
		uint32_t grp; /* GOPEN, GDONE: the run's group */
	};
	uint32_t prev, next; /* opening-order chain of open events (a run: its first) */
	uint32_t wire_bytes;
	uint64_t open_ns;
};

static inline uint64_t slot_key(uint32_t event_id, uint32_t state)
{
	return (uint64_t)state << 32 | event_id;
}

/* A source's report of an id more than a window ahead. */
struct claim {
	uint32_t event_id;
	uint32_t set;
	uint64_t ns;
};

#define SLOT_ID(s)    ((uint32_t)(s)->key)
#define SLOT_STATE(s) ((uint32_t)((s)->key >> 32))

/*
 * A source's MEP in a run: its frame and where the run's records lie in it
 * (the whole MEP, or the consecutive part of it a caller handed in).
 */
struct gent {
	uint32_t frame_idx;
	uint16_t si;        /* dense source index */
	uint16_t rec_start; /* the first record's header, from the frame start */
	uint16_t rec_end;   /* just past the last record's padded payload */
	uint16_t pad;
};

/* A run of n events opened together (see "Runs" above). */
struct group {
	uint32_t first, n;
	uint32_t present;    /* sources in */
	uint32_t refs;       /* slots naming this group */
	uint64_t wire_bytes; /* sum of the present MEPs' record bytes */
	uint64_t open_ns;
	bool open;
};

#define NO_GROUP UINT32_MAX

/* A fragment being put together from segments, or whole in an open event. */
struct seg_frag {
	uint32_t event_id;
	uint32_t crc32c;
	uint16_t si;
	uint16_t length; /* the whole fragment's payload bytes */
	uint32_t have;   /* bytes held, in n pieces */
	uint32_t n;
	uint32_t next_free; /* SEG_IN_USE while live */
	struct xevb_seg_piece p[XEVB_SEG_MAX_PIECES];
};

struct xevb_builder {
	/* hot: read per fragment or per MEP */
	struct slot *slots;
	struct xevb_frag_slot *rows; /* [window][n_src] */
	uint32_t *refcnt;            /* [n_frames] */
	const uint8_t **frame_data;  /* [n_frames] */
	uint32_t mask, window, n_src, n_frames;
	uint32_t base; /* B, see above */
	uint32_t lo;   /* no open event in [B, lo) */
	bool have_base;
	bool assigned_known;     /* a DFM assigns (in have_base's padding; the rest at the end) */
	bool assigned_pull;      /* and pulls: nothing at or past assigned_next was requested */
	uint32_t oldest, newest; /* opening-order chain */
	uint32_t n_eor;
	bool eor_wait;    /* every source ended, segmented fragments pending */
	uint64_t last_ns; /* last MEP of the run from a configured source */
	struct xevb_builder_cfg cfg;
	uint32_t quorum;      /* for a jump of more than a window */
	uint8_t shed_run;     /* the MEP being added: pi->shed_run (segments: 0) */
	struct claim *claims; /* [n_src], see the window rules */
	uint16_t *sorted;     /* configured source_ids, ascending */
	uint16_t *seen;       /* source_ids with stats, first-seen order */
	uint32_t n_seen;
	uint32_t *scratch; /* [n_frames], for check() */
	/* runs: see the top */
	struct group *groups; /* [n_groups] */
	struct gent *gents;   /* [n_groups][n_src], arrival order */
	uint64_t *gbits;      /* [n_groups][gwords], presence by source index */
	uint32_t *gfree;      /* free group indices, a stack */
	uint32_t n_groups, n_gfree, gwords;
	struct xevb_frag_slot *mrow; /* [n_src]: a run's event, made for emit */
	uint32_t *mcur;              /* [n_src]: per entry, the next record */
	struct xevb_frag_ref *wrefs; /* [XEVB_MAX_FRAGS_PER_MEP]: a MEP given without refs */
	uint32_t *gscratch;          /* [n_groups], for check() */
	/* segmented fragments: see the top */
	struct seg_frag *segp;            /* [n_segp] */
	uint32_t n_segp, seg_free;        /* free list head, NO_SLOT: none */
	struct xevb_frag_slot *erow;      /* [n_src]: an event with pieces, made for emit */
	struct xevb_frag_pieces *epieces; /* [n_src] */
	uint16_t src_index[XEVB_MAX_SOURCES];
	struct xevb_builder_stats st;
	/* cold: read only once a DFM assigns (assigned_known) */
	uint32_t assigned_next;   /* one past the newest id it assigned */
	uint32_t assigned_margin; /* window + the widest step between assignments */
};

static inline bool is_seg(const struct xevb_frag_slot *fs)
{
	return fs->frame_idx != NO_FRAME && fs->payload_off <= SEG_WHOLE;
}

static inline struct gent *gents_of(const struct xevb_builder *b, uint32_t g)
{
	return b->gents + (size_t)g * b->n_src;
}

static inline uint64_t *gbits_of(const struct xevb_builder *b, uint32_t g)
{
	return b->gbits + (size_t)g * b->gwords;
}

static inline bool gbit(const struct xevb_builder *b, uint32_t g, uint32_t si)
{
	return gbits_of(b, g)[si / 64] >> (si % 64) & 1;
}

/* builder.c, for builder_seg.c and builder_setup.c. */
void seg_put(struct xevb_builder *b, uint32_t k);
void finish_group(struct xevb_builder *b, uint32_t g, enum finish_kind kind);
void finish(struct xevb_builder *b, uint32_t idx, enum finish_kind kind);
void __attribute__((noinline)) evict_oldest(struct xevb_builder *b, uint64_t target);
uint32_t __attribute__((noinline)) slow_path(struct xevb_builder *b, uint32_t e, uint32_t si,
					     struct xevb_source_stats *src, uint64_t now_ns, uint32_t nfrag);
void flush_open(struct xevb_builder *b, enum finish_kind kind);
void note_end_of_run(struct xevb_builder *b, struct xevb_source_stats *src);
void note_packet(struct xevb_builder *b, struct xevb_source_stats *src, uint16_t sid, uint32_t packet_seq);

static inline struct xevb_frag_slot *row_of(struct xevb_builder *b, uint32_t idx)
{
	return b->rows + (size_t)idx * b->n_src;
}

static inline void drop(struct xevb_builder *b, struct xevb_source_stats *src, enum xevb_drop_reason r, uint64_t n)
{
	b->st.drops[r] += n;
	src->drops[r] += n;
}

/* A row entry naming a segmented fragment (pending or whole), not a frame. */
static inline void seg_drop(struct xevb_builder *b, struct xevb_source_stats *src, enum xevb_seg_reason r,
			    uint64_t n)
{
	b->st.segs_drops[r] += n;
	src->segs_drops[r] += n;
}

/* The slot is about to hold another id: its old one no longer names a group. */
static inline void slot_let_go(struct xevb_builder *b, const struct slot *s)
{
	if (SLOT_STATE(s) == SLOT_GDONE && --b->groups[s->grp].refs == 0)
		b->gfree[b->n_gfree++] = s->grp;
}

/* The run's end was waiting for segmented fragments: none pending now, it ends. */
static inline void eor_settle(struct xevb_builder *b)
{
	if (unlikely(b->eor_wait) && !b->st.frags_pending) {
		b->eor_wait = false;
		flush_open(b, FIN_EOR);
		b->st.run_ended = true;
	}
}

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Builder core: event assembly over a configured set of sources, with
 * fragments referenced in place in their frames, exact accounting, and
 * timeouts. Fed by the AF_XDP path and the kernel-socket path alike; knows
 * nothing about sockets. Single-threaded: one builder per worker.
 *
 * Frame lifetime: the caller hands in a frame (an index into its pool plus
 * the frame's address) with its parsed MEP. The builder keeps a reference
 * for each fragment it accepts and calls cfg.frame_release once the last
 * one is gone, that is after every event holding a fragment of the frame
 * has been emitted or discarded. A frame with no accepted fragment is
 * released before xevb_builder_add_mep returns.
 *
 * Events are handed to cfg.emit with their fragments still in the frames,
 * in ascending source_id order; the frames are released right after emit
 * returns, so emit must be done with the payloads (written to a socket,
 * copied, or counted) by then. emit and frame_release must not call back
 * into the builder.
 *
 * The window is counted in event_ids: open events all lie within `window`
 * consecutive ids (serial order); ids below it are LATE; an id that needs
 * the window to move past open events evicts them (they leave incomplete at
 * once, as a timeout would: events_evicted), so an incomplete event never
 * makes newer fragments wait or drop. A jump of more than one window
 * ahead is taken only when corroborated (a quorum of the configured sources
 * report the same region, or the builder was idle for the timeout); until
 * then such a fragment is FUTURE. With a DFM (xevb_builder_assigned), a
 * fragment beyond a margin past what it assigned is UNASSIGNED and
 * moves nothing. Full rules: user/evb/builder.c.
 */
#ifndef XEVB_BUILDER_H
#define XEVB_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/counters.h"
#include <xevb/mep_parse.h>

enum xevb_timeout_policy {
	XEVB_TIMEOUT_EMIT_INCOMPLETE = 0, /* emit flagged INCOMPLETE + missing list */
	XEVB_TIMEOUT_DISCARD,             /* drop the event, count it */
};

/* Why a fragment did not make it into an event. */
enum xevb_drop_reason {
	XEVB_DROP_DUPLICATE = 0,  /* same event_id and source_id again */
	XEVB_DROP_LATE,           /* the event was already emitted or discarded */
	XEVB_DROP_UNKNOWN_SOURCE, /* source_id not in the configured set */
	XEVB_DROP_WRONG_RUN,
	XEVB_DROP_OVERFLOW,   /* no slot: not used by the window rules since
				     window pressure evicts (kept: reports, spec) */
	XEVB_DROP_FUTURE,     /* more than a window ahead, not corroborated */
	XEVB_DROP_PARTIAL,    /* segmented (wire format 1.1), not whole when its event left */
	XEVB_DROP_UNASSIGNED, /* a DFM assigns: beyond a margin past what it
				     assigned (xevb_builder_assigned) */
	XEVB_DROP__COUNT
};

/*
 * Why a segment (wire format 1.1) is not in a built fragment. With the
 * segments in built fragments and those of fragments still being put
 * together (segs_pending), they account for every segment received.
 */
enum xevb_seg_reason {
	XEVB_SEG_DUPLICATE = 0, /* repeats an offset its fragment already holds */
	XEVB_SEG_MISMATCHED,    /* disagrees on length or crc32c, or overlaps a held segment */
	XEVB_SEG_FRAG_DROPPED,  /* its fragment was dropped (any fragment drop reason but partial) */
	XEVB_SEG_PARTIAL,       /* its fragment was not whole when the event left */
	XEVB_SEG_TOO_MANY,      /* its fragment holds XEVB_SEG_MAX_PIECES segments already */
	XEVB_SEG__COUNT
};

/* Segments one fragment may arrive in: 64 kB in 1 kB segments. */
#define XEVB_SEG_MAX_PIECES 64

/* One segment of a fragment, in place in its frame. */
struct xevb_seg_piece {
	uint32_t frame_idx;
	uint16_t payload_off; /* the segment's bytes, from the frame start */
	uint16_t seg_offset;  /* where they go in the fragment */
	uint16_t bytes;
	uint16_t pad;
};

/* A fragment that arrived in segments: n pieces, ascending seg_offset, covering it once. */
struct xevb_frag_pieces {
	uint32_t n;
	const struct xevb_seg_piece *p;
};

struct xevb_event;

struct xevb_builder_cfg {
	const uint16_t *sources; /* expected source_ids, any order, no repeats */
	uint32_t n_sources;      /* 1..4096 */
	uint32_t window;         /* open events at most; rounded up to a power of 2 */
	uint32_t n_frames;       /* frame indices 0..n_frames-1 */
	uint64_t timeout_ns;     /* 0: no timeout */
	enum xevb_timeout_policy timeout_policy;
	uint32_t run_number; /* used when !adopt_run */
	bool adopt_run;      /* take the run number of the first MEP */
	/*
	 * Distinct configured sources that must report the same region before
	 * the window jumps more than one window ahead (0: a majority,
	 * n_sources/2 + 1; capped at n_sources). Idle for timeout_ns also lets
	 * the next fragment move it.
	 */
	uint32_t jump_quorum;
	/*
	 * Segmented fragments (wire format 1.1) being put together or whole
	 * in open events, at most (0: 1024, and never fewer than 2 n_sources).
	 * When none is free, the oldest open events leave (evicted, as for
	 * max_frames_held) until one is.
	 */
	uint32_t max_seg_frags;
	/*
	 * Frames the open events may hold (0: no bound). Above it, the oldest
	 * open events (opening order) are evicted until 7/8 of it is held:
	 * the receive path needs free frames for what arrives next, and a
	 * kernel out of frames drops packets at random, tearing every event.
	 */
	uint32_t max_frames_held;
	/*
	 * END_OF_RUN flags are counted per source, never acted on: a DFM ends
	 * the run (its BYE), and a data-plane flag anyone can forge must not
	 * flush the open events or end it (issue 21).
	 */
	bool end_of_run_counted_only;
	/*
	 * A DFM assigns: no event times out before its first ASSIGN, which
	 * says whether the events the data opened are the run's (kept) or out
	 * of its reach (discarded, xevb_builder_assigned); a spoofed MEP ahead
	 * of the run would otherwise be built and forwarded incomplete.
	 */
	bool await_first_assign;
	/* Called for every complete or incomplete event, in the builder's thread. */
	void (*emit)(void *ctx, const struct xevb_event *ev);
	/*
	 * Optional, for callbacks that only count what is built (build-only
	 * measurement): called instead of emit for n_events consecutive events
	 * booked together from the same MEPs (first->event_id and the n-1
	 * after it), which share flags, n_frags and the set of sources.
	 * first->frags is NULL; wire_bytes is the sum of xevb_event_wire_size
	 * over the n events. Without it, emit sees every event with its
	 * fragments.
	 */
	void (*emit_run)(void *ctx, const struct xevb_event *first, uint32_t n_events, uint64_t wire_bytes);
	/* Called when a frame holds no fragment any more. */
	void (*frame_release)(void *ctx, uint32_t frame_idx);
	void *ctx;
	/*
	 * Multi-worker receive (include/xevb/handoff.h): the receiving worker
	 * counts packets and packet_seq gaps, since an owner sees only part of
	 * a source's packets (and a split MEP twice); add_mep counts fragments.
	 */
	bool rx_counts_packets;
};

/* One fragment of an event, in place in its frame. */
struct xevb_frag_slot {
	uint32_t frame_idx;   /* UINT32_MAX: not received */
	uint16_t payload_off; /* from the frame start; CRC is the 4 bytes before */
	uint16_t length;
};

struct xevb_event {
	uint32_t event_id;
	uint32_t run_number;
	uint8_t flags; /* XEVB_EVT_F_INCOMPLETE */
	uint16_t n_expected;
	uint16_t n_frags; /* received */
	/*
	 * Sum over the received fragments of their record header and padded
	 * payload in the built-event encoding (wire-format section 2), kept by
	 * the builder as fragments arrive; 0 when not known (an event made
	 * elsewhere): xevb_event_wire_size_fast then walks frags.
	 */
	uint32_t frag_wire_bytes;
	uint64_t open_ns;                   /* time of the first fragment (caller's clock) */
	const uint16_t *source_ids;         /* [n_expected], ascending */
	const struct xevb_frag_slot *frags; /* [n_expected], same order; missing ones
					      have frame_idx == UINT32_MAX */
	const uint8_t *const *frame_data;   /* frame_idx -> frame start */
	/*
	 * NULL, or [n_expected]: pieces[i].n > 0 where fragment i arrived in
	 * segments. Its payload is then those pieces in order, not one run of
	 * frags[i].length bytes; frags[i] names the first piece (so
	 * xevb_event_crc reads the CRC, the same in every segment) and the
	 * whole fragment's length.
	 */
	const struct xevb_frag_pieces *pieces;
};

/* Pieces of fragment i of ev: 0 when it is one run of bytes in its frame. */
static inline uint32_t xevb_event_npieces(const struct xevb_event *ev, uint32_t i)
{
	return ev->pieces ? ev->pieces[i].n : 0;
}

static inline const uint8_t *xevb_event_payload(const struct xevb_event *ev, uint32_t i)
{
	return ev->frame_data[ev->frags[i].frame_idx] + ev->frags[i].payload_off;
}

static inline uint32_t xevb_event_crc(const struct xevb_event *ev, uint32_t i)
{
	return xevb_ld32(xevb_event_payload(ev, i) - 4);
}

/*
 * Per source_id (0..4095), configured or not. The counters are declared
 * in include/xevb/counters.h, with their meaning.
 */
struct xevb_source_stats {
	uint32_t last_seq;
	bool seen;
	bool end_of_run;
	XEVB_SOURCE_COUNTERS(XEVB_CTR_FIELD, XEVB_SCTR_ARRAY)
};

/*
 * The builder's statistics: its counters (include/xevb/counters.h, where
 * the invariants they keep are), the run, and the sources'.
 */
struct xevb_builder_stats {
	XEVB_CORE_COUNTERS(XEVB_CTR_FIELD, XEVB_CTR_ARRAY)
	uint32_t run_number;
	bool run_known;
	bool run_ended; /* every source sent END_OF_RUN, all flushed */
	struct xevb_source_stats src[XEVB_MAX_SOURCES];
};

struct xevb_builder;

/* NULL with errno set (EINVAL: bad configuration, ENOMEM). */
struct xevb_builder *xevb_builder_new(const struct xevb_builder_cfg *cfg);
void xevb_builder_free(struct xevb_builder *b);

/*
 * One parsed MEP (verdict XEVB_RES_MEP) in frame frame_idx starting at
 * frame. frags[] as filled by xevb_classify. now_ns on the caller's clock
 * (CLOCK_MONOTONIC), read once per batch.
 *
 * frags may be NULL for a MEP that was validated whole (by xevb_classify
 * here or in the XDP program) with pi->consec set: its records are then
 * read from the frame (pi->mep_off, pi->mep_len) only where needed.
 *
 * A MEP of consecutive event_ids whose events are all new, or that joins
 * the run of events other sources' MEPs opened with the same first id and
 * count, is booked as a whole (O(1) a MEP, not a fragment); every counter,
 * drop reason and emitted event is the same as fragment by fragment.
 */
void xevb_builder_add_mep(struct xevb_builder *b, uint32_t frame_idx, const uint8_t *frame,
			  const struct xevb_pkt_info *pi, const struct xevb_frag_ref *frags, uint64_t now_ns);

/*
 * One valid SEGMENT packet (verdict XEVB_RES_SEGMENT, wire format 1.1) in
 * frame frame_idx starting at frame; pi and ref (its one frag ref: the
 * segment's bytes and the whole fragment's crc32c) as xevb_classify filled
 * them. The segment stays where it is: the frame is held until the event
 * holding its fragment leaves, or released before this returns if the
 * segment is not kept. Rules: docs/wire-format.md section 1.1; counters:
 * xevb_builder_stats (segs_*, XEVB_DROP_PARTIAL).
 */
void xevb_builder_add_segment(struct xevb_builder *b, uint32_t frame_idx, const uint8_t *frame,
			      const struct xevb_pkt_info *pi, const struct xevb_frag_ref *ref, uint64_t now_ns);

/* Handle timeouts up to now_ns. Cheap when nothing is due: call per batch. */
void xevb_builder_poll(struct xevb_builder *b, uint64_t now_ns);

/* Emit every open event as incomplete (stop, end of run); frames released. */
void xevb_builder_flush(struct xevb_builder *b);
/*
 * A DFM assigned event_ids [first, first+count): from the first call on,
 * the window follows the assignments. A fragment at or beyond the newest
 * id assigned so far + a margin (the window plus the widest step seen
 * between assignments, i.e. other builders' blocks) is UNASSIGNED: it
 * neither places nor moves the window (a spoofed MEP far ahead cannot make
 * the good fragments late). Ids below that are judged as before.
 */
void xevb_builder_assigned(struct xevb_builder *b, uint32_t first, uint32_t count);
/*
 * Before the first ASSIGN, the control plane dropped events built from
 * data nobody assigned (sent ahead of the run): the window that data
 * placed is forgotten as the first ASSIGN does one out of its reach (open
 * events discarded, events_unassigned; done ids free again).
 */
void xevb_builder_forget_window(struct xevb_builder *b);
/*
 * The DFM pulls (its ASSIGNs say so): a fragment at or past one after the
 * newest id assigned, which no REQUEST can have asked for, that would
 * open an event is UNASSIGNED whatever the margin. Before
 * xevb_builder_assigned, for every ASSIGN.
 */
void xevb_builder_set_pull(struct xevb_builder *b, bool pull);
/*
 * The run is run from now on (a DFM's ASSIGN says which): adoption from the
 * data, if configured, ends; MEPs of any other run count WRONG_RUN.
 */
void xevb_builder_set_run(struct xevb_builder *b, uint32_t run);

/*
 * Time out every open event now, whatever its age: the timeout policy
 * decides (emitted INCOMPLETE, or discarded and counted). For a stop that
 * must honour --timeout-policy.
 */
void xevb_builder_expire_all(struct xevb_builder *b);

const struct xevb_builder_stats *xevb_builder_stats(const struct xevb_builder *b);

/*
 * The accounting invariant, in total and per source: returns true when
 * received == in events + every drop reason, the same for segments
 * (segs_received == in fragments + every segment reason + pending), and
 * opened == complete + incomplete + discarded + open. On false, writes
 * what disagrees to msg.
 */
bool xevb_builder_check(const struct xevb_builder *b, char *msg, size_t msglen);

/*
 * The source_ids (ascending, up to max) still missing from open event
 * event_id; -1 when that event is not open (never seen, or already gone).
 * For re-asking only the missing sources in pull mode. Not a hot path.
 */
int xevb_builder_missing(const struct xevb_builder *b, uint32_t event_id, uint16_t *out, uint32_t max);

/* Size in bytes of the built-event encoding of ev (wire-format section 2). */
uint32_t xevb_event_wire_size(const struct xevb_event *ev);

/*
 * The same, O(1) from ev->frag_wire_bytes and n_frags: no walk over the
 * (cold, under loss) row of a timed-out event. For emit callbacks that only
 * size or count events.
 */
static inline uint32_t xevb_event_wire_size_fast(const struct xevb_event *ev)
{
	uint32_t size = sizeof(struct xevb_evt_hdr) + ev->frag_wire_bytes;

	if (ev->frag_wire_bytes == 0 && ev->n_frags)
		return xevb_event_wire_size(ev);
	if (ev->flags & XEVB_EVT_F_INCOMPLETE)
		size += XEVB_PAD4(2u * (uint32_t)(ev->n_expected - ev->n_frags));
	return size;
}

#endif /* XEVB_BUILDER_H */

// SPDX-License-Identifier: GPL-2.0-only
/* The builder's invariant checker (xevb_builder_check, builder.h): every
 * counter balances, every slot, run and reference agrees with the tables. */
#include <stdio.h>
#include <string.h>
#include "evb/builder_int.h"
#include "evb/names.h"

#define FAIL(...) \
	do { \
		if (msg && msglen) \
			snprintf(msg, msglen, __VA_ARGS__); \
		return false; \
	} while (0)

/*
 * rx = in + pending + drops[0..n) (the fragment invariant, or the segment
 * invariant of wire format 1.1; see the top). The message names every term,
 * the drops by the reason names the statistics use.
 */
static bool check_sum(const char *who, const char *rx_name, uint64_t rx, const char *in_name, uint64_t in,
		      const uint64_t *drops, unsigned int n, const char *(*reason)(unsigned int), uint64_t pending,
		      char *msg, size_t msglen)
{
	uint64_t sum = in + pending;
	char by[512] = "";
	size_t w = 0;

	for (unsigned int r = 0; r < n; r++) {
		sum += drops[r];
		if (w < sizeof(by))
			w += (size_t)snprintf(by + w, sizeof(by) - w, "%s%s %llu", r ? " " : "", reason(r),
					      (unsigned long long)drops[r]);
	}
	if (sum != rx)
		FAIL("%s: %s %llu != %s %llu + drops (%s) + pending %llu", who, rx_name, (unsigned long long)rx,
		     in_name, (unsigned long long)in, by, (unsigned long long)pending);
	return true;
}

static bool check_frags(const char *who, uint64_t rx, uint64_t in, const uint64_t *drops, uint64_t pending,
			char *msg, size_t msglen)
{
	return check_sum(who, "frags_received", rx, "in_events", in, drops, XEVB_DROP__COUNT,
			 xevb_drop_reason_name, pending, msg, msglen);
}

static bool check_segs(const char *who, uint64_t rx, uint64_t in, const uint64_t *drops, uint64_t pending,
		       char *msg, size_t msglen)
{
	return check_sum(who, "segs_received", rx, "in fragments", in, drops, XEVB_SEG__COUNT,
			 xevb_seg_reason_name, pending, msg, msglen);
}

/*
 * Entry k, named by source index si's row entry fs of open event id: live,
 * its pieces in order, apart, inside the fragment, in frames; whole iff
 * the row says so. Adds its frame references to scratch.
 */
static bool check_seg_entry(const struct xevb_builder *b, uint32_t k, uint32_t id, uint32_t si,
			    const struct xevb_frag_slot *fs, char *msg, size_t msglen)
{
	const struct seg_frag *sf = &b->segp[k];
	uint32_t end = 0, have = 0;

	if (k >= b->n_segp || sf->next_free != SEG_IN_USE || sf->event_id != id || sf->si != si)
		FAIL("event %u source index %u names segment entry %u, not its own", id, si, k);
	if (sf->n == 0 || sf->n > XEVB_SEG_MAX_PIECES || sf->length == 0)
		FAIL("event %u: segment entry %u with %u pieces of a %u-byte fragment", id, k, sf->n, sf->length);
	for (uint32_t i = 0; i < sf->n; i++) {
		const struct xevb_seg_piece *p = &sf->p[i];

		if ((i && p->seg_offset < end) || (uint32_t)p->seg_offset + p->bytes > sf->length || !p->bytes ||
		    p->frame_idx >= b->n_frames)
			FAIL("event %u: segment entry %u piece %u at %u+%u (after %u, of %u)", id, k, i,
			     p->seg_offset, p->bytes, end, sf->length);
		end = (uint32_t)p->seg_offset + p->bytes;
		have += p->bytes;
		b->scratch[p->frame_idx]++;
	}
	if (have != sf->have || (fs->payload_off == SEG_WHOLE) != (have == sf->length) ||
	    (fs->payload_off == SEG_WHOLE && fs->length != sf->length))
		FAIL("event %u: segment entry %u holds %u of %u bytes (says %u), row says %s", id, k, have,
		     sf->length, sf->have, fs->payload_off == SEG_WHOLE ? "whole" : "pending");
	return true;
}

/* The counters alone: every fragment and segment accounted for, per source and in total; the events' balance. */
static bool check_counters(const struct xevb_builder *b, char *msg, size_t msglen)
{
	const struct xevb_builder_stats *st = &b->st;
	struct xevb_source_stats sum;
	const char *differs;
	char who[32];

	memset(&sum, 0, sizeof(sum));
	if (!check_frags("total", st->frags_received, st->frags_in_events, st->drops, st->frags_pending, msg,
			 msglen))
		return false;
	if (!check_segs("total", st->segs_received, st->segs_in_frags, st->segs_drops, st->segs_pending, msg,
			msglen))
		return false;
	for (uint32_t i = 0; i < b->n_seen; i++) {
		const struct xevb_source_stats *s = &st->src[b->seen[i]];

		snprintf(who, sizeof(who), "source %u", b->seen[i]);
		if (!check_frags(who, s->frags_received, s->frags_in_events, s->drops, s->frags_pending, msg,
				 msglen) ||
		    !check_segs(who, s->segs_received, s->segs_in_frags, s->segs_drops, s->segs_pending, msg,
				msglen))
			return false;
		xevb_source_stats_add(&sum, s);
	}
	differs = xevb_source_sums_differ(st, &sum);
	if (differs)
		FAIL("per-source counters do not add up to the totals: %s", differs);
	if (st->events_opened !=
	    st->events_complete + st->events_incomplete + st->events_discarded + st->open_events)
		FAIL("events_opened %llu != complete %llu + incomplete %llu + discarded %llu + open %llu",
		     (unsigned long long)st->events_opened, (unsigned long long)st->events_complete,
		     (unsigned long long)st->events_incomplete, (unsigned long long)st->events_discarded,
		     (unsigned long long)st->open_events);
	if (st->events_flushed_eor > st->events_incomplete)
		FAIL("events_flushed_eor above events_incomplete");
	if (st->events_evicted > st->events_incomplete + st->events_discarded)
		FAIL("events_evicted above events_incomplete + events_discarded");
	return true;
}

/* What the walk over the slots found, to compare with the stats and the chain. */
struct slot_tally {
	uint64_t open, runs, open_in_runs;
	uint64_t live, pend_rows, pend_segs; /* segmented fragments: in rows, pending, their segments */
};

/* A slot of a run (a MEP's events booked together): in its run, and inside the window while open. */
static bool check_run_slot(const struct xevb_builder *b, uint32_t i, struct slot_tally *t, char *msg,
			   size_t msglen)
{
	const struct slot *s = &b->slots[i];
	const struct group *gr = &b->groups[s->grp];
	bool open_slot = SLOT_STATE(s) == SLOT_GOPEN;

	if (s->grp >= b->n_groups)
		FAIL("slot %u names group %u of %u", i, s->grp, b->n_groups);
	if (SLOT_ID(s) - gr->first >= gr->n || gr->open != open_slot)
		FAIL("event %u (%s) not in its run %u+%u (%s)", SLOT_ID(s), open_slot ? "open" : "done", gr->first,
		     gr->n, gr->open ? "open" : "done");
	b->gscratch[s->grp]++;
	if (!open_slot)
		return true;
	t->open++;
	if ((int32_t)(SLOT_ID(s) - b->base) < 0 || SLOT_ID(s) - b->base >= b->window)
		FAIL("open event %u outside the window at %u", SLOT_ID(s), b->base);
	t->open_in_runs++;
	if (SLOT_ID(s) == gr->first)
		t->runs++;
	return true;
}

/* An open event of its own: in the window at its slot, its row's fragments as n_frags and wire_bytes say. */
static bool check_open_slot(const struct xevb_builder *b, uint32_t i, struct slot_tally *t, char *msg,
			    size_t msglen)
{
	const struct slot *s = &b->slots[i];
	const struct xevb_frag_slot *row = b->rows + (size_t)i * b->n_src;
	uint32_t got = 0, wire = 0, f;

	t->open++;
	if (!b->have_base || (int32_t)(SLOT_ID(s) - b->base) < 0 || SLOT_ID(s) - b->base >= b->window ||
	    (SLOT_ID(s) & b->mask) != i)
		FAIL("open event %u outside the window at %u", SLOT_ID(s), b->base);
	for (uint32_t j = 0; j < b->n_src; j++) {
		f = row[j].frame_idx;
		if (f == NO_FRAME)
			continue;
		if (is_seg(&row[j])) {
			if (!check_seg_entry(b, f, SLOT_ID(s), j, &row[j], msg, msglen))
				return false;
			t->live++;
			if (row[j].payload_off == SEG_PENDING) {
				t->pend_rows++;
				t->pend_segs += b->segp[f].n;
				continue;
			}
		} else if (f >= b->n_frames) {
			FAIL("event %u holds frame %u out of range", SLOT_ID(s), f);
		} else {
			b->scratch[f]++;
		}
		wire += sizeof(struct xevb_evt_frag_hdr) + XEVB_PAD4((uint32_t)row[j].length);
		got++;
	}
	if (got != s->n_frags || got >= b->n_src)
		FAIL("event %u: %u fragments stored, n_frags %u", SLOT_ID(s), got, s->n_frags);
	if (wire != s->wire_bytes)
		FAIL("event %u: fragments take %u bytes encoded, wire_bytes says %u", SLOT_ID(s), wire,
		     s->wire_bytes);
	return true;
}

/* Every slot; counts the frame references of open events in scratch and the slots per run in gscratch. */
static bool check_slots(const struct xevb_builder *b, struct slot_tally *t, char *msg, size_t msglen)
{
	memset(b->scratch, 0, sizeof(*b->scratch) * b->n_frames);
	memset(b->gscratch, 0, sizeof(*b->gscratch) * b->n_groups);
	for (uint32_t i = 0; i < b->window; i++) {
		const struct slot *s = &b->slots[i];

		if (SLOT_STATE(s) == SLOT_GOPEN || SLOT_STATE(s) == SLOT_GDONE) {
			if (!check_run_slot(b, i, t, msg, msglen))
				return false;
			continue;
		}
		if (SLOT_STATE(s) == SLOT_OPEN && !check_open_slot(b, i, t, msg, msglen))
			return false;
	}
	return true;
}

/* An open run: its source bits, entries and record bytes agree; its frames counted in scratch. */
static bool check_open_run(const struct xevb_builder *b, uint32_t g, char *msg, size_t msglen)
{
	const struct group *gr = &b->groups[g];
	const struct gent *ge = gents_of(b, g);
	uint64_t gw = 0;
	uint32_t bits = 0;

	for (uint32_t j = 0; j < b->gwords; j++)
		bits += (uint32_t)__builtin_popcountll(gbits_of(b, g)[j]);
	if (bits != gr->present || gr->present >= b->n_src || gr->refs != gr->n)
		FAIL("run %u+%u: %u sources marked, %u in, %u slots", gr->first, gr->n, bits, gr->present,
		     gr->refs);
	for (uint32_t j = 0; j < gr->present; j++) {
		if (ge[j].frame_idx >= b->n_frames || !gbit(b, g, ge[j].si))
			FAIL("run %u: entry %u frame %u source index %u", gr->first, j, ge[j].frame_idx, ge[j].si);
		b->scratch[ge[j].frame_idx]++;
		gw += (uint32_t)ge[j].rec_end - ge[j].rec_start;
	}
	if (gw != gr->wire_bytes)
		FAIL("run %u: MEPs hold %llu record bytes, wire_bytes %llu", gr->first, (unsigned long long)gw,
		     (unsigned long long)gr->wire_bytes);
	return true;
}

/* Runs: free ones named by no slot, the others by exactly refs slots. */
static bool check_runs(const struct xevb_builder *b, char *msg, size_t msglen)
{
	for (uint32_t i = 0; i < b->n_gfree; i++) {
		uint32_t g = b->gfree[i];

		if (g >= b->n_groups || b->gscratch[g] || b->groups[g].open)
			FAIL("free group %u: %u slots name it", g, g < b->n_groups ? b->gscratch[g] : 0);
		b->gscratch[g] = UINT32_MAX;
	}
	for (uint32_t g = 0; g < b->n_groups; g++) {
		const struct group *gr = &b->groups[g];

		if (b->gscratch[g] == UINT32_MAX)
			continue;
		if (b->gscratch[g] != gr->refs || !gr->refs)
			FAIL("group %u: %u slots name it, refs %u", g, b->gscratch[g], gr->refs);
		if (gr->open && !check_open_run(b, g, msg, msglen))
			return false;
	}
	return true;
}

/* The tally against the stats and the chain of open events; the frame references against scratch. */
static bool check_references(const struct xevb_builder *b, const struct slot_tally *t, char *msg, size_t msglen)
{
	const struct xevb_builder_stats *st = &b->st;
	uint64_t chain = 0, held = 0;

	if (t->live != st->seg_frags_live || t->pend_rows != st->frags_pending || t->pend_segs != st->segs_pending)
		FAIL("segmented fragments: %llu live in rows (%llu pending, %llu segments), stats say %llu (%llu, %llu)",
		     (unsigned long long)t->live, (unsigned long long)t->pend_rows,
		     (unsigned long long)t->pend_segs, (unsigned long long)st->seg_frags_live,
		     (unsigned long long)st->frags_pending, (unsigned long long)st->segs_pending);
	for (uint32_t i = b->oldest; i != NO_SLOT && chain <= b->window; i = b->slots[i].next)
		chain++;
	if (t->open != st->open_events || chain != t->open - t->open_in_runs + t->runs)
		FAIL("open events: %llu in slots (%llu in %llu runs), %llu chained, stats say %llu",
		     (unsigned long long)t->open, (unsigned long long)t->open_in_runs, (unsigned long long)t->runs,
		     (unsigned long long)chain, (unsigned long long)st->open_events);
	for (uint32_t f = 0; f < b->n_frames; f++) {
		if (b->scratch[f] != b->refcnt[f])
			FAIL("frame %u: %u references held, %u fragments in open events", f, b->refcnt[f],
			     b->scratch[f]);
		held += b->refcnt[f] != 0;
	}
	if (held != st->frames_held)
		FAIL("frames_held %llu, %llu frames referenced", (unsigned long long)st->frames_held,
		     (unsigned long long)held);
	return true;
}

bool xevb_builder_check(const struct xevb_builder *b, char *msg, size_t msglen)
{
	struct slot_tally t = { 0 };

	if (!check_counters(b, msg, msglen))
		return false;
	/* The frame references must be exactly those of the open events. */
	if (!check_slots(b, &t, msg, msglen) || !check_runs(b, msg, msglen) ||
	    !check_references(b, &t, msg, msglen))
		return false;
	if (msg && msglen)
		msg[0] = '\0';
	return true;
}

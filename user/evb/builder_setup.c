// SPDX-License-Identifier: GPL-2.0-only
/* Builder core: making and freeing it, a DFM's steering, and what callers ask of it (builder_int.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evb/builder_int.h"
#include "evb/names.h"
#include "base/probes.h"
#include <xevb/shed.h>

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static uint32_t round_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

struct xevb_builder *xevb_builder_new(const struct xevb_builder_cfg *cfg)
{
	struct xevb_builder *b;
	uint32_t i, w;

	if (!cfg || !cfg->sources || cfg->n_sources == 0 || cfg->n_sources > XEVB_MAX_SOURCES ||
	    cfg->window == 0 || cfg->window > WINDOW_MAX || cfg->n_frames == 0 || cfg->n_frames > FRAMES_MAX) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	memset(b->src_index, 0xff, sizeof(b->src_index));
	w = round_pow2(cfg->window);
	b->cfg = *cfg;
	b->window = w;
	b->mask = w - 1;
	b->n_src = cfg->n_sources;
	b->n_frames = cfg->n_frames;
	b->oldest = b->newest = NO_SLOT;
	b->sorted = malloc(sizeof(*b->sorted) * cfg->n_sources);
	b->seen = malloc(sizeof(*b->seen) * XEVB_MAX_SOURCES);
	b->slots = calloc(w, sizeof(*b->slots));
	b->rows = malloc(sizeof(*b->rows) * (size_t)w * cfg->n_sources);
	b->refcnt = calloc(cfg->n_frames, sizeof(*b->refcnt));
	b->frame_data = calloc(cfg->n_frames, sizeof(*b->frame_data));
	b->scratch = calloc(cfg->n_frames, sizeof(*b->scratch));
	b->claims = calloc(cfg->n_sources, sizeof(*b->claims));
	/*
	 * Runs opened and still named: at most one per two slots while they
	 * open (n > 1), and bounded in memory; without a free group a MEP
	 * just goes fragment by fragment.
	 */
	b->n_groups = w / 2 ? w / 2 : 1;
	if ((uint64_t)b->n_groups * cfg->n_sources * sizeof(struct gent) > GROUPS_BYTES_MAX)
		b->n_groups = (uint32_t)(GROUPS_BYTES_MAX / (cfg->n_sources * sizeof(struct gent)));
	b->gwords = (cfg->n_sources + 63) / 64;
	b->groups = calloc(b->n_groups, sizeof(*b->groups));
	b->gents = calloc((size_t)b->n_groups * cfg->n_sources, sizeof(*b->gents));
	b->gbits = calloc((size_t)b->n_groups * b->gwords, sizeof(*b->gbits));
	b->gfree = calloc(b->n_groups, sizeof(*b->gfree));
	b->mrow = calloc(cfg->n_sources, sizeof(*b->mrow));
	b->mcur = calloc(cfg->n_sources, sizeof(*b->mcur));
	b->wrefs = calloc(XEVB_MAX_FRAGS_PER_MEP, sizeof(*b->wrefs));
	b->gscratch = calloc(b->n_groups, sizeof(*b->gscratch));
	b->n_segp = cfg->max_seg_frags ? cfg->max_seg_frags : SEG_FRAGS_DEFAULT;
	if (b->n_segp < 2 * cfg->n_sources)
		b->n_segp = 2 * cfg->n_sources;
	b->segp = malloc(sizeof(*b->segp) * b->n_segp);
	b->erow = calloc(cfg->n_sources, sizeof(*b->erow));
	b->epieces = calloc(cfg->n_sources, sizeof(*b->epieces));
	b->quorum = cfg->jump_quorum ? cfg->jump_quorum : cfg->n_sources / 2 + 1;
	if (b->quorum > cfg->n_sources)
		b->quorum = cfg->n_sources;
	if (!b->sorted || !b->seen || !b->slots || !b->rows || !b->refcnt || !b->frame_data || !b->scratch ||
	    !b->claims || !b->groups || !b->gents || !b->gbits || !b->gfree || !b->mrow || !b->mcur || !b->wrefs ||
	    !b->gscratch || !b->segp || !b->erow || !b->epieces) {
		xevb_builder_free(b);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(b->sorted, cfg->sources, sizeof(*b->sorted) * cfg->n_sources);
	qsort(b->sorted, cfg->n_sources, sizeof(*b->sorted), cmp_u16);
	for (i = 0; i < cfg->n_sources; i++) {
		if (b->sorted[i] > XEVB_MAX_SOURCE_ID || (i > 0 && b->sorted[i] == b->sorted[i - 1])) {
			xevb_builder_free(b);
			errno = EINVAL;
			return NULL;
		}
		b->src_index[b->sorted[i]] = (uint16_t)i;
	}
	/* Touch every row now: no page fault on the packet path. */
	memset(b->rows, 0xff, sizeof(*b->rows) * (size_t)w * cfg->n_sources);
	memset(b->gents, 0, sizeof(*b->gents) * (size_t)b->n_groups * cfg->n_sources);
	/* Lowest index on top: the first runs reuse the same few groups. */
	for (i = 0; i < b->n_groups; i++)
		b->gfree[i] = b->n_groups - 1 - i;
	b->n_gfree = b->n_groups;
	/* Touched now too, pieces and all: no page fault when segments arrive. */
	memset(b->segp, 0, sizeof(*b->segp) * b->n_segp);
	for (i = 0; i < b->n_segp; i++)
		b->segp[i].next_free = i + 1 < b->n_segp ? i + 1 : NO_SLOT;
	b->seg_free = 0;
	if (!cfg->adopt_run) {
		b->st.run_number = cfg->run_number;
		b->st.run_known = true;
	}
	return b;
}

void xevb_builder_free(struct xevb_builder *b)
{
	if (!b)
		return;
	free(b->sorted);
	free(b->seen);
	free(b->slots);
	free(b->rows);
	free(b->refcnt);
	free(b->frame_data);
	free(b->scratch);
	free(b->claims);
	free(b->groups);
	free(b->gents);
	free(b->gbits);
	free(b->gfree);
	free(b->mrow);
	free(b->mcur);
	free(b->wrefs);
	free(b->gscratch);
	free(b->segp);
	free(b->erow);
	free(b->epieces);
	free(b);
}

const struct xevb_builder_stats *xevb_builder_stats(const struct xevb_builder *b)
{
	return &b->st;
}

/*
 * The first ASSIGN: a window the data placed before it, out of the reach
 * that assignment gives (a window before its first id to the margin past
 * its end), came from MEPs the DFM never asked for (a spoofed one far
 * ahead, say): its open events are discarded (events_unassigned) and the
 * next fragment places the window afresh, under the DFM's rule.
 */
static void first_assignment(struct xevb_builder *b, uint32_t first, uint32_t next)
{
	uint32_t top = b->base + b->window - 1;

	b->assigned_margin = b->window;
	if (!b->have_base)
		return;
	if (!xevb_seq_after(first - b->window, top) && (int32_t)(b->base - next) < (int32_t)b->assigned_margin)
		return;
	xevb_builder_forget_window(b);
}

void xevb_builder_forget_window(struct xevb_builder *b)
{
	if (!b->have_base)
		return;
	flush_open(b, FIN_UNASSIGNED);
	/* Their done slots lie above the window to come: none may judge a fragment late. */
	for (uint32_t idx = 0; idx <= b->mask; idx++) {
		struct slot *s = &b->slots[idx];

		slot_let_go(b, s);
		s->key = slot_key(0, SLOT_FREE);
	}
	b->have_base = false;
	memset(b->claims, 0, sizeof(*b->claims) * b->n_src);
}

void xevb_builder_assigned(struct xevb_builder *b, uint32_t first, uint32_t count)
{
	uint32_t next = first + count;

	if (!count)
		return;
	if (!b->assigned_known) {
		first_assignment(b, first, next);
	} else if (xevb_seq_after(first, b->assigned_next) &&
		   first - b->assigned_next <= ASSIGN_STEP_MAX - b->window &&
		   b->window + (first - b->assigned_next) > b->assigned_margin) {
		/* Other builders' blocks in between: ours may beat their ASSIGN by as much. */
		b->assigned_margin = b->window + (first - b->assigned_next);
	}
	if (!b->assigned_known || xevb_seq_after(next, b->assigned_next))
		b->assigned_next = next;
	b->assigned_known = true;
}

void xevb_builder_set_pull(struct xevb_builder *b, bool pull)
{
	b->assigned_pull = pull;
}

void xevb_builder_set_run(struct xevb_builder *b, uint32_t run)
{
	b->st.run_number = run;
	b->st.run_known = true;
}

void xevb_builder_flush(struct xevb_builder *b)
{
	flush_open(b, FIN_FLUSH);
}

void xevb_builder_expire_all(struct xevb_builder *b)
{
	flush_open(b, FIN_TIMEOUT);
}

uint32_t xevb_event_wire_size(const struct xevb_event *ev)
{
	uint32_t size = sizeof(struct xevb_evt_hdr), i, got = 0;

	for (i = 0; i < ev->n_expected; i++) {
		if (ev->frags[i].frame_idx == NO_FRAME)
			continue;
		size += sizeof(struct xevb_evt_frag_hdr) + XEVB_PAD4((uint32_t)ev->frags[i].length);
		got++;
	}
	if (ev->flags & XEVB_EVT_F_INCOMPLETE)
		size += XEVB_PAD4(2u * (ev->n_expected - got));
	return size;
}

int xevb_builder_missing(const struct xevb_builder *b, uint32_t event_id, uint16_t *out, uint32_t max)
{
	uint32_t idx = event_id & b->mask, n = 0;
	const struct xevb_frag_slot *row;

	if (b->slots[idx].key == slot_key(event_id, SLOT_GOPEN)) {
		for (uint32_t i = 0; i < b->n_src; i++)
			if (!gbit(b, b->slots[idx].grp, i) && n < max)
				out[n++] = b->sorted[i];
		return (int)n;
	}
	if (b->slots[idx].key != slot_key(event_id, SLOT_OPEN))
		return -1;
	row = b->rows + (size_t)idx * b->n_src;
	/* A fragment still being put together is missing too: its source may be re-asked. */
	for (uint32_t i = 0; i < b->n_src; i++)
		if ((row[i].frame_idx == NO_FRAME || (is_seg(&row[i]) && row[i].payload_off == SEG_PENDING)) &&
		    n < max)
			out[n++] = b->sorted[i];
	return (int)n;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * Data-flow manager logic (user/ctl/dfm.h). Events in flight live in a
 * table indexed by event_id modulo its size; they all lie in [oldest, next)
 * (serial order), so scans for retries and deaths walk only that window.
 * An event still open when the window would span more than the table (its
 * DONE or ASSIGN was lost, its builder died and is not yet detected) moves
 * to a side table, a hash with room for a quarter of the table: one
 * straggler never holds the trigger back, only a quarter of the table in
 * stragglers does (stall_table). Memory: both sized at the start.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/probes.h"
#include "ctl/dfm.h"
#include "ctl/dfm_int.h"
#include "ctl/dfm_slots.h"
#include "ctl/flowctl.h"
#include "ctl/peer_map.h"

struct xevb_dfm *xevb_dfm_new(const struct xevb_dfm_cfg *cfg)
{
	struct xevb_dfm *d;

	if (!cfg->block || cfg->block > 1024 || cfg->table < 4 || (cfg->table & (cfg->table - 1)) ||
	    cfg->table < cfg->block || !cfg->clear_group || !cfg->send_assign || !cfg->send_clear) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->cfg = *cfg;
	d->mask = cfg->table - 1;
	d->clr_cap = cfg->clear_group;
	/* Stragglers: a quarter of the table, in a hash at most half full. */
	d->rq_mask = 2 * cfg->table - 1; /* table + side.cap waiting at most */
	d->slots = calloc(cfg->table, sizeof(*d->slots));
	d->rq = calloc(d->rq_mask + 1, sizeof(*d->rq));
	d->clr = calloc(2 * (size_t)d->clr_cap, sizeof(*d->clr)); /* the second half: sort_serial's */
	d->sk = calloc(XEVB_DFM_MAX_SINKS, sizeof(*d->sk));
	d->sk_pairs = calloc(XEVB_DFM_MAX_SINKS, sizeof(*d->sk_pairs));
	d->pair_cap = PEER_MAP_START;
	d->pair = calloc(d->pair_cap, sizeof(*d->pair));
	d->fa = calloc(XEVB_DFM_MAX_FARM_ADDRS, sizeof(*d->fa));
	d->b_fwd = calloc(XEVB_DFM_MAX_BUILDERS, sizeof(*d->b_fwd));
	if (!d->slots || dfm_side_init(&d->side, cfg->table) || !d->rq || !d->clr || !d->sk || !d->sk_pairs ||
	    !d->pair || !d->fa || !d->b_fwd || peer_map_init(&d->bmap, XEVB_DFM_MAX_BUILDERS) ||
	    peer_map_init(&d->skmap, XEVB_DFM_MAX_SINKS) || peer_map_init(&d->pairmap, XEVB_DFM_MAX_FARM_PAIRS) ||
	    peer_map_init(&d->famap, XEVB_DFM_MAX_FARM_ADDRS)) {
		xevb_dfm_free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->oldest = d->next = cfg->first_event;
	return d;
}

void xevb_dfm_free(struct xevb_dfm *d)
{
	if (!d)
		return;
	free(d->slots);
	dfm_side_free(&d->side);
	free(d->rq);
	free(d->clr);
	free(d->sk);
	free(d->sk_pairs);
	free(d->pair);
	free(d->fa);
	free(d->fwd);
	free(d->b_fwd);
	peer_map_free(&d->fwdmap);
	peer_map_free(&d->bmap);
	peer_map_free(&d->skmap);
	peer_map_free(&d->pairmap);
	peer_map_free(&d->famap);
	free(d);
}

/*
 * Event ids a[0..n) in serial order (they lie within 2^31 of each other),
 * by radix over their distance from the serially smallest, 8 bits a pass
 * and only as many passes as that distance needs (2 or 3 for a clear
 * batch): qsort here was 8% of the DFM's CPU at 1.7 M events/s (perf).
 * tmp holds n ids.
 */
static void sort_serial(uint32_t *a, uint32_t *tmp, uint32_t n)
{
	uint32_t base = a[0], span = 0, *src = a, *dst = tmp;

	for (uint32_t i = 1; i < n; i++)
		if ((int32_t)(a[i] - base) < 0)
			base = a[i];
	for (uint32_t i = 0; i < n; i++) {
		a[i] -= base;
		span |= a[i];
	}
	for (uint32_t sh = 0; sh < 32 && (span >> sh); sh += 8) {
		uint32_t cnt[256] = { 0 }, pos = 0, *t;
		for (uint32_t i = 0; i < n; i++)
			cnt[(src[i] >> sh) & 0xff]++;
		for (uint32_t k = 0; k < 256; k++) {
			uint32_t c = cnt[k];
			cnt[k] = pos;
			pos += c;
		}
		for (uint32_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> sh) & 0xff]++] = src[i];
		t = src, src = dst, dst = t;
	}
	for (uint32_t i = 0; i < n; i++)
		a[i] = src[i] + base;
}

static void clear_flush(struct xevb_dfm *d)
{
	struct xevb_ctl_range r[XEVB_CTL_MAX_RECS];
	uint32_t n = 0;

	if (!d->clr_n)
		return;
	sort_serial(d->clr, d->clr + d->clr_cap, d->clr_n);
	for (uint32_t i = 0; i < d->clr_n; i++) {
		if (n && r[n - 1].first_event + r[n - 1].count == d->clr[i] && r[n - 1].count < 65536) {
			r[n - 1].count++;
			continue;
		}
		if (n == xevb_ctl_max_recs(XEVB_CTL_CLEAR)) {
			d->cfg.send_clear(d->cfg.ctx, r, n);
			d->st.clear_msgs++;
			n = 0;
		}
		r[n++] = (struct xevb_ctl_range){ d->clr[i], 1 };
	}
	d->cfg.send_clear(d->cfg.ctx, r, n);
	d->st.clear_msgs++;
	d->st.cleared += d->clr_n;
	d->clr_n = 0;
}

static void clear_add(struct xevb_dfm *d, uint32_t ev, uint64_t now)
{
	if (!d->clr_n)
		d->clr_first_ns = now;
	d->clr[d->clr_n++] = ev;
	if (d->clr_n >= d->clr_cap)
		clear_flush(d);
}

static void advance(struct xevb_dfm *d)
{
	while (d->oldest != d->next && d->slots[d->oldest & d->mask].state == SLOT_FREE)
		d->oldest++;
}

/* The event's entry while it is in flight (assigned or waiting), or NULL. */
static struct dfm_slot *lookup(struct xevb_dfm *d, uint32_t ev)
{
	struct dfm_slot *s = &d->slots[ev & d->mask];

	if (s->state != SLOT_FREE && s->event == ev)
		return s;
	return dfm_side_find(&d->side, ev);
}

/*
 * Room for a block at next: the window [oldest, next + block) spans the
 * table at most. What holds it back (open long past its block) moves to
 * the side table; false when that is full.
 */
static bool make_room(struct xevb_dfm *d)
{
	while (d->next - d->oldest + d->cfg.block > d->cfg.table) {
		struct dfm_slot *s = &d->slots[d->oldest & d->mask];

		if (d->side.n >= d->side.cap)
			return false;
		dfm_side_put(&d->side, s);
		memset(s, 0, sizeof(*s));
		s->builder = -1;
		d->st.stragglers++;
		advance(d);
	}
	return true;
}

/* The event leaves the books with its outcome: a DONE status or a loss. */
static void finish(struct xevb_dfm *d, struct dfm_slot *s, int done_status, int lost, uint64_t now)
{
	struct xevb_dfm_builder *b = s->builder >= 0 ? &d->b[s->builder] : NULL;

	if (s->state == SLOT_ASSIGNED && b && b->outstanding)
		b->outstanding--;
	if (done_status == XEVB_DONE_COMPLETE) {
		d->st.complete++;
		if (b)
			b->complete++;
	} else if (done_status == XEVB_DONE_INCOMPLETE) {
		d->st.incomplete++;
		if (b)
			b->incomplete++;
	} else {
		d->st.lost[lost]++;
		if (b) {
			if (lost == XEVB_LOST_NO_DATA)
				b->no_data++;
			else
				b->lost++;
		}
	}
	s->no_data_by = done_status < 0 && lost == XEVB_LOST_NO_DATA && b ? (uint16_t)(s->builder + 1) : 0;
	s->done_by = done_status >= 0 && b ? (uint16_t)(s->builder + 1) : 0;
	s->state = SLOT_FREE;
	s->builder = -1;
	d->st.outstanding--;
	clear_add(d, s->event, now);
	if (dfm_side_has(&d->side, s))
		dfm_side_del(&d->side, s);
	else
		advance(d);
}

static void lat_add(struct xevb_dfm *d, enum xevb_dfm_lat w, uint64_t now, uint64_t since)
{
	int64_t ns = (int64_t)(now - since);

	xevb_lat_add(&d->lat[w].h, ns);
	d->lat[w].sum_ns += ns > 0 ? (uint64_t)ns : 0;
}

int dfm_find_builder(const struct xevb_dfm *d, uint32_t addr, uint16_t port)
{
	return (int)peer_map_get(&d->bmap, peer_key(addr, port));
}

/* Queue ev for re-assignment; a full queue first drops what no longer waits. */
static void rq_push(struct xevb_dfm *d, uint32_t ev)
{
	if (d->rq_n > d->rq_mask) {
		uint32_t n = 0;
		for (uint32_t i = 0; i < d->rq_n; i++) {
			uint32_t e = d->rq[(d->rq_head + i) & d->rq_mask];
			struct dfm_slot *s = lookup(d, e);
			if (s && s->state == SLOT_WAIT)
				d->rq[(d->rq_head + n++) & d->rq_mask] = e;
		}
		d->rq_n = n;
	}
	d->rq[(d->rq_head + d->rq_n++) & d->rq_mask] = ev;
}

/* Push too: the sources hold every event until its CLEAR and send a held
   event again to the builder a second ASSIGN names. */
static void to_reassign(struct xevb_dfm *d, struct dfm_slot *s, int bi)
{
	if (s->state != SLOT_ASSIGNED || s->builder != bi)
		return;
	d->b[bi].outstanding--;
	d->b[bi].reassigned_away++;
	s->state = SLOT_WAIT;
	s->builder = -1;
	s->done_by = (uint16_t)(bi + 1); /* while waiting: the builder it was taken from */
	d->n_wait++;
	rq_push(d, s->event);
}

static void end_check(struct xevb_dfm *d, int bi)
{
	struct xevb_dfm_builder *b = &d->b[bi];

	if (!b->checking)
		return;
	b->checking = false;
	if (d->cfg.check_end)
		d->cfg.check_end(d->cfg.ctx, (uint32_t)bi);
}

/* A builder is gone (silent, restarted or said BYE): its events go to the others. */
static void builder_down(struct xevb_dfm *d, int bi, uint64_t now)
{
	struct xevb_dfm_builder *b = &d->b[bi];

	b->alive = false;
	b->deaths++;
	end_check(d, bi);
	b->dead_after_ns = now - b->last_ns;
	for (uint32_t e = d->oldest; e != d->next; e++)
		to_reassign(d, &d->slots[e & d->mask], bi);
	for (uint32_t i = 0; d->side.n && i <= d->side.mask; i++)
		to_reassign(d, &d->side.t[i], bi);
	b->outstanding = 0;
}

static void heard(struct xevb_dfm_builder *b, uint64_t now)
{
	if (b->last_ns && (int64_t)(now - b->last_ns) > (int64_t)b->max_silent_ns)
		b->max_silent_ns = now - b->last_ns;
	b->last_ns = now;
}

/* Builders alive at addr: one host may not fill the table (no lock-out). */
static uint32_t alive_at(const struct xevb_dfm *d, uint32_t addr)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < d->nb; i++)
		n += d->b[i].alive && d->b[i].addr == addr;
	return n;
}

/*
 * An entry for a newcomer: a free one, or the one dead longest that never
 * took an event (no slot, count or book refers to it); -1 when none.
 */
static int new_builder_entry(struct xevb_dfm *d)
{
	int best = -1;

	if (d->nb < XEVB_DFM_MAX_BUILDERS)
		return (int)d->nb++;
	for (uint32_t i = 0; i < d->nb; i++) {
		const struct xevb_dfm_builder *b = &d->b[i];
		if (!b->alive && !b->assigned && (best < 0 || b->last_ns < d->b[best].last_ns))
			best = (int)i;
	}
	if (best >= 0) {
		d->st.builders_expired++;
		peer_map_del(&d->bmap, peer_key(d->b[best].addr, d->b[best].port));
	}
	return best;
}

int xevb_dfm_on_status(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
		       const struct xevb_ctl_status *st, uint64_t now)
{
	int bi = dfm_find_builder(d, addr, port);
	struct xevb_dfm_builder *b;
	bool busy = st->flags & XEVB_CTL_ST_BUSY;

	if (bi < 0) {
		if (alive_at(d, addr) >= (d->cfg.max_per_addr ? d->cfg.max_per_addr : 8)) {
			d->st.builders_per_addr++;
			return -1;
		}
		bi = new_builder_entry(d);
		if (bi < 0) {
			d->st.builders_full++;
			return -1;
		}
		b = &d->b[bi];
		memset(b, 0, sizeof(*b));
		/* An entry given to a newcomer: what the old one said it sent is not its. */
		for (uint32_t j = d->b_fwd[bi]; j; j = d->fwd[j - 1].next)
			d->fwd[j - 1].events = d->fwd[j - 1].earlier = 0;
		b->addr = addr;
		b->port = port;
		b->epoch = h->epoch;
		b->alive = true;
		peer_map_put(&d->bmap, peer_key(addr, port), (uint32_t)bi); /* sized for every entry */
	}
	b = &d->b[bi];
	if (b->epoch != h->epoch) {
		/* A new incarnation forgot what we assigned to the old one. */
		if (b->alive)
			builder_down(d, bi, now);
		b->restarts++;
		b->epoch = h->epoch;
	}
	if (!b->alive) {
		b->alive = true;
		b->rejoins++;
		b->last_ns = 0; /* its silence while dead is not a gap */
		b->wrr = 0;
	}
	XEVB_PROBE_IF(dfm_busy, busy && !b->busy, bi);
	XEVB_PROBE_IF(dfm_not_busy, !busy && b->busy, bi);
	if (busy && !b->busy)
		b->busy_on++;
	b->busy = busy;
	b->listens = st->flags & XEVB_CTL_ST_LISTEN;
	b->id = h->sender_id;
	b->credits = st->credits;
	XEVB_PROBE(dfm_credit, bi, st->credits);
	heard(b, now);
	return bi;
}

/*
 * The builder gave the event up as NO_DATA (re-asks spent, not one
 * fragment), then its data came after all and it built the event: the
 * event counts with the outcome it reports now, so that the books agree
 * with what the farm nodes receive. Counters only grow (they are
 * Prometheus counters): the loss stays counted and no_data_recovered
 * takes it back in the books (xevb_dfm_check).
 */
static bool no_data_recovered(struct xevb_dfm *d, struct dfm_slot *s, int bi, uint8_t status)
{
	struct xevb_dfm_builder *b = &d->b[bi];

	if (s->state != SLOT_FREE || s->no_data_by != bi + 1 ||
	    (status != XEVB_DONE_COMPLETE && status != XEVB_DONE_INCOMPLETE))
		return false;
	s->no_data_by = 0;
	if (status == XEVB_DONE_COMPLETE) {
		d->st.complete++;
		b->complete++;
	} else {
		d->st.incomplete++;
		b->incomplete++;
	}
	d->st.no_data_recovered++;
	b->no_data_recovered++;
	return true;
}

void xevb_dfm_on_done(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
		      const struct xevb_ctl_done *r, uint32_t n, uint64_t now)
{
	int bi = dfm_find_builder(d, addr, port);

	if (bi < 0 || d->b[bi].epoch != h->epoch) {
		d->st.done_unknown_peer += n;
		return;
	}
	/* A DONE is a sign of life as good as a STATUS (a busy builder need not send both). */
	if (d->b[bi].alive)
		heard(&d->b[bi], now);
	for (uint32_t i = 0; i < n; i++) {
		struct dfm_slot *f = &d->slots[r[i].event_id & d->mask], *s;

		if (f->event == r[i].event_id && no_data_recovered(d, f, bi, r[i].status))
			continue;
		s = lookup(d, r[i].event_id);
		if (!s) {
			/* Its DONE again, after a RETRY crossed the first: expected, not unknown. */
			if (f->state == SLOT_FREE && f->event == r[i].event_id && f->done_by == bi + 1)
				d->st.done_repeated++;
			else
				d->st.done_unknown++;
			continue;
		}
		/* Taken from it as dead, and no other builder has it yet: its DONE stands. */
		if (s->state == SLOT_WAIT && s->done_by == bi + 1) {
			d->n_wait--;
			s->state = SLOT_ASSIGNED;
			s->builder = (int16_t)bi;
			d->b[bi].outstanding++;
			d->st.done_late_dead++;
		}
		if (s->state != SLOT_ASSIGNED || s->builder != bi) {
			d->st.done_foreign++;
			continue;
		}
		if (s->sent)
			lat_add(d, XEVB_DFM_LAT_ASSIGN_DONE, now, s->lat_t);
		finish(d, s, r[i].status == XEVB_DONE_NO_DATA ? -1 : r[i].status, XEVB_LOST_NO_DATA, now);
	}
}

void xevb_dfm_unreachable(struct xevb_dfm *d, uint32_t addr, uint16_t port, uint64_t now)
{
	int bi = dfm_find_builder(d, addr, port);

	if (bi >= 0 && d->b[bi].alive) {
		d->st.dead_unreachable++;
		builder_down(d, bi, now);
	}
}

void xevb_dfm_on_bye(struct xevb_dfm *d, uint32_t addr, uint16_t port, uint64_t now)
{
	int bi = dfm_find_builder(d, addr, port);

	if (bi >= 0 && d->b[bi].alive)
		builder_down(d, bi, now);
}

static int pick(struct xevb_dfm *d, uint32_t need)
{
	uint32_t w[XEVB_DFM_MAX_BUILDERS];
	int64_t cur[XEVB_DFM_MAX_BUILDERS];
	int k;

	for (uint32_t i = 0; i < d->nb; i++) {
		const struct xevb_dfm_builder *b = &d->b[i];
		bool ok = b->alive && !b->busy && b->credits > b->outstanding &&
			  b->credits - b->outstanding >= need;
		w[i] = ok ? b->credits : 0;
		cur[i] = b->wrr;
	}
	k = xevb_wrr_pick(cur, w, d->nb);
	for (uint32_t i = 0; i < d->nb; i++)
		d->b[i].wrr = cur[i];
	return k;
}

void xevb_dfm_trigger_clock(struct xevb_dfm *d, uint64_t t0_ns, double rate_hz)
{
	d->clk_t0 = t0_ns;
	d->clk_period_ns = rate_hz > 0 ? 1e9 / rate_hz : 0;
}

void xevb_dfm_assign_sent(struct xevb_dfm *d, const struct xevb_ctl_assign *a, uint64_t now)
{
	if (a->flags & XEVB_CTL_AS_RETRY)
		return;
	for (uint32_t i = 0; i < a->count; i++) {
		struct dfm_slot *s = lookup(d, a->first_event + i);

		/* Finished or taken back before its ASSIGN left (its builder died in the round): nothing to time. */
		if (!s || s->state != SLOT_ASSIGNED || s->sent)
			continue;
		if (!(a->flags & XEVB_CTL_AS_REASSIGN))
			lat_add(d, XEVB_DFM_LAT_TRIGGER_ASSIGN, now, s->lat_t);
		s->lat_t = now;
		s->sent = 1;
	}
}

const struct xevb_dfm_lat_stats *xevb_dfm_latency(const struct xevb_dfm *d, enum xevb_dfm_lat which)
{
	return (unsigned)which < XEVB_DFM_LAT__COUNT ? &d->lat[which] : NULL;
}

const char *xevb_dfm_lat_name(enum xevb_dfm_lat l)
{
	static const char *const n[XEVB_DFM_LAT__COUNT] = { "trigger_to_assign", "assign_to_done" };
	return (unsigned)l < XEVB_DFM_LAT__COUNT ? n[l] : "?";
}

bool xevb_dfm_can_assign(const struct xevb_dfm *d)
{
	for (uint32_t i = 0; i < d->nb; i++) {
		const struct xevb_dfm_builder *b = &d->b[i];
		if (b->alive && !b->busy && b->credits > b->outstanding &&
		    b->credits - b->outstanding >= (d->n_wait ? 1 : d->cfg.block))
			return true;
	}
	return false;
}

/* Slot s takes the i-th event of a block (or a re-assignment: flags). */
static void slot_assign(struct xevb_dfm *d, struct dfm_slot *s, uint32_t ev, int bi, uint8_t flags, uint32_t i,
			uint64_t now)
{
	s->event = ev;
	s->builder = (int16_t)bi;
	s->state = SLOT_ASSIGNED;
	s->retries = 0;
	s->no_data_by = 0;
	s->done_by = 0;
	s->moved = flags != 0;
	s->t = now;
	s->sent = 0;
	/* A new event's trigger time: when it fell due (st.triggered counts
	   the blocks before this one), or now. */
	s->lat_t = flags || !d->clk_period_ns ?
			   now :
			   d->clk_t0 + (uint64_t)((double)(d->st.triggered + i + 1) * d->clk_period_ns);
}

/* Events [first, first + count) to builder bi: a new block, or one event re-assigned (flags). */
static void assign(struct xevb_dfm *d, int bi, uint32_t first, uint32_t count, uint8_t flags, uint64_t now)
{
	struct xevb_dfm_builder *b = &d->b[bi];
	struct xevb_ctl_assign a = {
		.first_event = first,
		.count = (uint16_t)count,
		.flags = (uint8_t)(flags | (d->cfg.pull ? XEVB_CTL_AS_PULL : 0)),
		.builder_addr = b->addr,
		.builder_id = b->id,
		.run = d->cfg.run,
	};

	XEVB_PROBE(dfm_assign, first, bi, count);

	for (uint32_t i = 0; i < count; i++) {
		struct dfm_slot *s = flags ? lookup(d, first + i) : &d->slots[(first + i) & d->mask];
		slot_assign(d, s, first + i, bi, flags, i, now);
	}
	b->outstanding += count;
	b->assigned += count;
	d->cfg.send_assign(d->cfg.ctx, (uint32_t)bi, &a);
}

uint32_t xevb_dfm_step(struct xevb_dfm *d, uint64_t now, uint32_t max_new)
{
	uint32_t added = 0;
	int bi;

	while (d->n_wait && (bi = pick(d, 1)) >= 0) {
		uint32_t e = d->rq[d->rq_head & d->rq_mask];
		struct dfm_slot *s = lookup(d, e);

		d->rq_head++;
		d->rq_n--;
		if (!s || s->state != SLOT_WAIT)
			continue; /* its first builder's DONE came after all */
		d->n_wait--;
		assign(d, bi, e, 1, XEVB_CTL_AS_REASSIGN, now);
		d->st.reassigned++;
	}
	advance(d);
	while (added + d->cfg.block <= max_new) {
		if (!make_room(d)) {
			d->st.stall_table++;
			break;
		}
		if ((bi = pick(d, d->cfg.block)) < 0) {
			d->st.stall_no_credit++;
			break;
		}
		assign(d, bi, d->next, d->cfg.block, 0, now);
		d->next += d->cfg.block;
		d->st.triggered += d->cfg.block;
		d->st.outstanding += d->cfg.block;
		added += d->cfg.block;
	}
	return added;
}

/* The delay before an event's k-th RETRY (k from 0): first, doubling, up to retry_ns. */
static uint64_t retry_delay(const struct xevb_dfm *d, uint64_t first, uint32_t k)
{
	return k >= 40 || (first << k) >= d->cfg.retry_ns ? d->cfg.retry_ns : first << k;
}

/*
 * The first RETRY: twice the p99 ASSIGN-to-DONE so far (one sooner than
 * most events take is wasted), within [retry_first_ns, retry_ns]; without
 * retry_first_ns, retry_ns (a RETRY every retry_ns).
 */
static uint64_t retry_first(const struct xevb_dfm *d)
{
	uint64_t f = d->cfg.retry_first_ns, p99;

	if (!f || f >= d->cfg.retry_ns)
		return d->cfg.retry_ns;
	p99 = xevb_lat_quantile(&d->lat[XEVB_DFM_LAT_ASSIGN_DONE].h, 0.99);
	if (2 * p99 > f)
		f = 2 * p99;
	return f < d->cfg.retry_ns ? f : d->cfg.retry_ns;
}

/* RETRYs of an event before it is given up: the quick ones, then max_retries at retry_ns. */
static uint32_t give_up_after(const struct xevb_dfm *d, uint64_t first)
{
	uint32_t k = 0;

	while (retry_delay(d, first, k) < d->cfg.retry_ns)
		k++;
	return k + d->cfg.max_retries;
}

/* The ASSIGN or its DONE was lost: ask again (a builder that finished the
   event answers with its DONE again), or give the event up as no_done. */
static void retry_one(struct xevb_dfm *d, struct dfm_slot *s, uint32_t give_up, uint64_t now)
{
	struct xevb_dfm_builder *b = &d->b[s->builder];
	struct xevb_ctl_assign a = {
		.first_event = s->event,
		.count = 1,
		.flags = (uint8_t)(XEVB_CTL_AS_RETRY | (d->cfg.pull ? XEVB_CTL_AS_PULL : 0)),
		.builder_addr = b->addr,
		.builder_id = b->id,
		.run = d->cfg.run,
	};

	if (s->retries >= give_up) {
		finish(d, s, -1, XEVB_LOST_NO_DONE, now);
		return;
	}
	s->retries++;
	s->t = now;
	b->retries++;
	d->st.retries++;
	d->cfg.send_assign(d->cfg.ctx, (uint32_t)s->builder, &a);
}

static void retry_scan(struct xevb_dfm *d, uint64_t now)
{
	uint64_t first = retry_first(d);
	uint32_t give_up = give_up_after(d, first), n;

	if (now - d->last_scan_ns < first / 4)
		return;
	d->last_scan_ns = now;
	for (uint32_t e = d->oldest; e != d->next; e++) {
		struct dfm_slot *s = &d->slots[e & d->mask];
		if (s->state != SLOT_ASSIGNED)
			continue;
		if (now - s->t < retry_delay(d, first, s->retries)) {
			/* Its first ASSIGN, not due: every later id was first assigned
			   later, and no RETRY comes sooner than first. */
			if (!s->retries && !s->moved)
				break;
			continue;
		}
		retry_one(d, s, give_up, now);
	}
	n = dfm_side_ids(&d->side);
	for (uint32_t i = 0; i < n; i++) {
		struct dfm_slot *s = dfm_side_find(&d->side, d->side.ids[i]);
		if (s && s->state == SLOT_ASSIGNED && now - s->t >= retry_delay(d, first, s->retries))
			retry_one(d, s, give_up, now);
	}
}

void xevb_dfm_behind(struct xevb_dfm *d, uint64_t now)
{
	d->watch_from = now;
}

/* It spoke after a silence its host answered for: a stall, not a death. */
static void spoke_again(struct xevb_dfm *d, int bi)
{
	struct xevb_dfm_builder *b = &d->b[bi];

	if (b->found_up) {
		b->stalls++;
		d->st.stalls++;
	}
	end_check(d, bi);
}

/*
 * Silent past dead_ns: is it alive all the same? Only its host can say
 * (cfg.check), and only up to hung_ns of silence; a builder that does
 * not listen is dead.
 */
static bool silent_alive(struct xevb_dfm *d, int bi, uint64_t now)
{
	struct xevb_dfm_builder *b = &d->b[bi];
	enum xevb_live v;

	if (!b->listens || !d->cfg.check || d->cfg.hung_ns <= d->cfg.dead_ns)
		return false;
	if (now - b->last_ns > d->cfg.hung_ns) {
		d->st.dead_hung++;
		return false;
	}
	if (!b->checking)
		b->found_up = false;
	b->checking = true;
	v = d->cfg.check(d->cfg.ctx, (uint32_t)bi, now);
	if (v == XEVB_LIVE_UP)
		b->found_up = true;
	if (v == XEVB_LIVE_REFUSED)
		d->st.dead_refused++;
	if (v == XEVB_LIVE_NO_ANSWER)
		d->st.dead_no_answer++;
	return v == XEVB_LIVE_PENDING || v == XEVB_LIVE_UP;
}

void xevb_dfm_poll(struct xevb_dfm *d, uint64_t now)
{
	/* The caller reads every datagram before it polls, so a DFM that was
	   not scheduled for a while still hears what the builders sent
	   meanwhile; one that left some unread (xevb_dfm_behind) gives every
	   builder a whole dead_ns again. */
	for (uint32_t i = 0; i < d->nb; i++) {
		struct xevb_dfm_builder *b = &d->b[i];
		if (!b->alive)
			continue;
		if (now - b->last_ns > d->cfg.dead_ns && now - d->watch_from > d->cfg.dead_ns) {
			if (!silent_alive(d, (int)i, now)) {
				d->st.dead_silent++;
				builder_down(d, (int)i, now);
			}
		} else if (b->checking && now - b->last_ns <= d->cfg.dead_ns) {
			spoke_again(d, (int)i);
		} else if (d->cfg.probe && now - b->last_ns > d->cfg.probe_ns &&
			   now - b->probe_ns >= d->cfg.probe_ns) {
			b->probe_ns = now;
			d->cfg.probe(d->cfg.ctx, i);
		}
	}
	if (d->cfg.retry_ns)
		retry_scan(d, now);
	if (d->clr_n && now - d->clr_first_ns >= d->cfg.clear_flush_ns)
		clear_flush(d);
}

static void stop_one(struct xevb_dfm *d, struct dfm_slot *s)
{
	if (s->state == SLOT_FREE)
		return;
	if (s->state == SLOT_WAIT) {
		s->state = SLOT_ASSIGNED; /* no builder: finish() leaves counts alone */
		s->builder = -1;
	}
	finish(d, s, -1, XEVB_LOST_AT_STOP, 0);
}

void xevb_dfm_stop(struct xevb_dfm *d)
{
	uint32_t n = dfm_side_ids(&d->side);

	for (uint32_t e = d->oldest; e != d->next; e++)
		stop_one(d, &d->slots[e & d->mask]);
	for (uint32_t i = 0; i < n; i++) {
		struct dfm_slot *s = dfm_side_find(&d->side, d->side.ids[i]);
		if (s)
			stop_one(d, s);
	}
	d->rq_n = d->n_wait = 0;
	clear_flush(d);
}

const struct xevb_dfm_stats *xevb_dfm_stats(const struct xevb_dfm *d)
{
	return &d->st;
}

uint32_t xevb_dfm_n_builders(const struct xevb_dfm *d)
{
	return d->nb;
}

const struct xevb_dfm_builder *xevb_dfm_builder(const struct xevb_dfm *d, uint32_t i)
{
	return i < d->nb ? &d->b[i] : NULL;
}

uint32_t xevb_dfm_n_sinks(const struct xevb_dfm *d)
{
	return d->nsk;
}

const struct xevb_dfm_sink *xevb_dfm_sink(const struct xevb_dfm *d, uint32_t i)
{
	return i < d->nsk ? &d->sk[i] : NULL;
}

bool xevb_dfm_check(const struct xevb_dfm *d, char *msg, size_t len)
{
	const struct xevb_dfm_stats *s = &d->st;
	uint64_t lost = 0, held = d->n_wait, slots = 0, side = 0;

	for (int r = 0; r < XEVB_LOST__COUNT; r++)
		lost += s->lost[r];
	lost -= s->no_data_recovered;
	for (uint32_t i = 0; i < d->nb; i++)
		held += d->b[i].outstanding;
	for (uint32_t e = d->oldest; e != d->next; e++)
		slots += d->slots[e & d->mask].state != SLOT_FREE;
	side = dfm_side_count(&d->side);
	if (side != d->side.n || side > d->side.cap) {
		snprintf(msg, len, "side table holds %llu events, counted %u, room for %u",
			 (unsigned long long)side, d->side.n, d->side.cap);
		return false;
	}
	slots += side;
	if (s->triggered != s->complete + s->incomplete + lost + s->outstanding) {
		snprintf(
			msg, len,
			"triggered %llu != complete %llu + incomplete %llu + lost %llu (net of built after no_data) + "
			"outstanding %llu",
			(unsigned long long)s->triggered, (unsigned long long)s->complete,
			(unsigned long long)s->incomplete, (unsigned long long)lost,
			(unsigned long long)s->outstanding);
		return false;
	}
	if (held != s->outstanding || slots != s->outstanding) {
		snprintf(msg, len, "outstanding %llu, but builders hold %llu and the table %llu",
			 (unsigned long long)s->outstanding, (unsigned long long)held, (unsigned long long)slots);
		return false;
	}
	return true;
}

const char *xevb_dfm_lost_name(enum xevb_dfm_lost r)
{
	static const char *const n[XEVB_LOST__COUNT] = {
		"builder_dead",
		"no_data",
		"no_done",
		"at_stop",
	};
	return (unsigned)r < XEVB_LOST__COUNT ? n[r] : "?";
}

uint32_t xevb_dfm_clear_mark(const struct xevb_dfm *d)
{
	uint32_t w = d->oldest;

	for (uint32_t i = 0; i < d->clr_n; i++)
		if ((int32_t)(d->clr[i] - w) < 0)
			w = d->clr[i];
	/* Stragglers lie before the window and are in flight: the sources keep their data. */
	for (uint32_t i = 0; d->side.n && i <= d->side.mask; i++)
		if (d->side.t[i].state != SLOT_FREE && (int32_t)(d->side.t[i].event - w) < 0)
			w = d->side.t[i].event;
	return w;
}

// SPDX-License-Identifier: GPL-2.0-only
/* The source's control handlers (source_ctl.h, docs/control-protocol.md). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "ctl/source_ctl.h"

enum { H_EMPTY = 0, H_HELD, H_ANSWERED };

int src_ctl_init(struct src_ctl *sc, const struct src_ctl_cfg *cfg)
{
	memset(sc, 0, sizeof(*sc));
	sc->cfg = *cfg;
	sc->mask = cfg->hold - 1;
	sc->h = calloc(cfg->hold, sizeof(*sc->h));
	if (!sc->h) {
		xevb_err("cannot allocate the table of %u held events (lower --hold)", cfg->hold);
		return -1;
	}
	return 0;
}

void src_ctl_free(struct src_ctl *sc)
{
	free(sc->h);
	sc->h = NULL;
}

static bool is_held(const struct src_ctl *s, uint32_t ev)
{
	const struct src_ctl_held *h = &s->h[ev & s->mask];

	return h->state != H_EMPTY && h->event == ev;
}

/* Take event ev into the table; false on overflow (its slot holds another). */
static bool hold(struct src_ctl *s, uint32_t ev)
{
	struct src_ctl_held *h = &s->h[ev & s->mask];

	if (is_held(s, ev))
		return true;
	if (h->state != H_EMPTY) {
		s->hold_overflow++;
		return false;
	}
	h->event = ev;
	h->state = H_HELD;
	if (++s->n_held > s->max_held)
		s->max_held = s->n_held;
	return true;
}

static void release_all(struct src_ctl *s)
{
	s->released_restart += s->n_held;
	memset(s->h, 0, (size_t)(s->mask + 1) * sizeof(*s->h));
	s->n_held = 0;
	s->mark_set = false;
}

static void release_slot(struct src_ctl *s, struct src_ctl_held *h)
{
	h->state = H_EMPTY;
	s->n_held--;
	s->cleared++;
	s->cleared_mark++;
}

/* The DFM's clear mark w: every event before it is cleared; only those since the last mark are looked at. */
static void on_mark(struct src_ctl *s, uint32_t w)
{
	uint32_t size = s->mask + 1;

	if (s->mark_set && (int32_t)(w - s->mark) <= 0)
		return;
	if (!s->mark_set || w - s->mark >= size) {
		for (uint32_t i = 0; i < size; i++)
			if (s->h[i].state != H_EMPTY && (int32_t)(s->h[i].event - w) < 0)
				release_slot(s, &s->h[i]);
	} else {
		for (uint32_t ev = s->mark; ev != w; ev++) {
			struct src_ctl_held *h = &s->h[ev & s->mask];
			if (h->state != H_EMPTY && h->event == ev)
				release_slot(s, h);
		}
	}
	s->mark = w;
	s->mark_set = true;
}

static uint32_t bld_hash(uint32_t addr, uint16_t port)
{
	uint32_t h = (addr ^ ((uint32_t)port << 16)) * 0x9e3779b1u;

	return (h >> 16) & (SRC_CTL_BLD_SLOTS - 1);
}

/*
 * Named within SRC_CTL_BLD_TTL_NS of the newest list or ASSIGN, not of now:
 * lists that come late (a DFM or a source not scheduled for a second) must
 * not make the builders they name strangers meanwhile, whose REQUESTs we
 * would refuse and whose events would be lost no_data.
 */
static bool bld_live(const struct src_ctl *s, const struct src_ctl_bld *b)
{
	return b->addr && s->learned_ns - b->seen_ns <= SRC_CTL_BLD_TTL_NS;
}

/* The slot of (addr, port), or NULL; *spot: where it would go (first expired or empty slot). */
static struct src_ctl_bld *bld_find(const struct src_ctl *s, uint32_t addr, uint16_t port,
				    const struct src_ctl_bld **spot)
{
	uint32_t i = bld_hash(addr, port);

	if (spot)
		*spot = NULL;
	for (uint32_t k = 0; k < SRC_CTL_BLD_SLOTS; k++, i = (i + 1) & (SRC_CTL_BLD_SLOTS - 1)) {
		const struct src_ctl_bld *b = &s->bld[i];
		if (b->addr == addr && b->port == port)
			return (struct src_ctl_bld *)b;
		if (spot && !*spot && !bld_live(s, b))
			*spot = b;
		if (!b->addr)
			return NULL;
	}
	return NULL;
}

bool src_ctl_known_builder(const struct src_ctl *s, uint32_t addr, uint16_t port)
{
	const struct src_ctl_bld *b = bld_find(s, addr, port, NULL);

	if (b && bld_live(s, b))
		return true;
	b = port ? bld_find(s, addr, 0, NULL) : NULL;
	return b && bld_live(s, b);
}

uint32_t src_ctl_builders_known(const struct src_ctl *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < SRC_CTL_BLD_SLOTS; i++)
		n += s->bld[i].port && bld_live(s, &s->bld[i]);
	return n;
}

static void learn_builder(struct src_ctl *s, uint32_t addr, uint16_t port, uint64_t now)
{
	const struct src_ctl_bld *spot;
	struct src_ctl_bld *b;

	s->learned_ns = now;
	b = bld_find(s, addr, port, &spot);

	if (!b && !spot) {
		s->bld_full++;
		return;
	}
	if (!b) {
		b = (struct src_ctl_bld *)spot;
		s->n_bld += !b->addr;
		b->addr = addr;
		b->port = port;
	}
	b->seen_ns = now;
}

/* The entry of builder id, or where it may go (an unused or expired slot); NULL if neither. */
static struct src_ctl_rid *rid_find(struct src_ctl *s, uint16_t id, bool insert)
{
	uint32_t i = (id * 2654435761u) >> 20 & (SRC_CTL_BLD_SLOTS - 1);
	struct src_ctl_rid *spot = NULL;

	for (uint32_t k = 0; k < SRC_CTL_BLD_SLOTS; k++, i = (i + 1) & (SRC_CTL_BLD_SLOTS - 1)) {
		struct src_ctl_rid *r = &s->rid[i];
		bool live = r->addr && s->learned_ns - r->seen_ns <= SRC_CTL_BLD_TTL_NS;
		if (r->addr && r->id == id)
			return live || insert ? r : NULL;
		if (!r->addr)
			return insert ? (spot ? spot : r) : NULL;
		if (!live && !spot)
			spot = r;
	}
	return insert ? spot : NULL;
}

static void learn_id(struct src_ctl *s, uint16_t id, uint32_t addr, uint64_t now)
{
	struct src_ctl_rid *r = rid_find(s, id, true);

	if (!r) {
		s->rid_full++;
		return;
	}
	*r = (struct src_ctl_rid){ .addr = addr, .id = id, .seen_ns = now };
}

/* The DFM's list, one part of it (a long list spans datagrams): each named builder is answered for a while. */
static void on_builders(struct src_ctl *s, const struct xevb_ctl_msg *m)
{
	uint64_t now = xevb_now_ns();

	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		learn_builder(s, m->u.builders[r].addr, htons(m->u.builders[r].port), now);
		learn_id(s, m->u.builders[r].id, m->u.builders[r].addr, now);
	}
}

/* A refusal names its sender, once a second at most. */
static void refused(struct src_ctl *s, const char *what, const struct sockaddr_in *from)
{
	uint64_t now = xevb_now_ns();

	if (now - s->warn_ns < 1000000000ull)
		return;
	s->warn_ns = now;
	xevb_warn(
		"%s from %s:%u refused (REQUESTs not from a builder the DFM listed: %llu, messages as the DFM not "
		"from %s: %llu)",
		what, inet_ntoa(from->sin_addr), ntohs(from->sin_port), (unsigned long long)s->rq_unknown,
		s->cfg.dfm_name, (unsigned long long)s->not_dfm);
}

/*
 * Push: send our fragments of the block to the builder it names. An event
 * we hold already is a re-assignment (its builder died): the data goes
 * again, flagged RESEND, to the new one.
 */
static void on_assign(struct src_ctl *s, const struct xevb_ctl_msg *m)
{
	static uint32_t evs[1024], again[1024];
	uint64_t now = xevb_now_ns();

	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		const struct xevb_ctl_assign *a = &m->u.assign[r];
		uint32_t n = 0, na = 0;

		s->assigns++;
		s->assigned_events += a->count;
		learn_builder(s, a->builder_addr, 0, now);
		for (uint32_t j = 0; j < a->count; j++) {
			uint32_t ev = a->first_event + j;
			if (is_held(s, ev))
				again[na++] = ev;
			else if (hold(s, ev))
				evs[n++] = ev;
		}
		s->assign_again += na;
		if (n)
			s->cfg.send(s->cfg.ctx, a->builder_addr, evs, n, false);
		if (na)
			s->cfg.send(s->cfg.ctx, a->builder_addr, again, na, true);
	}
}

/*
 * Push, as a routing table: block k of the ROUTE goes to the builder the
 * DFM's list names by id[k]; each block is taken as an ASSIGN of it. A
 * block naming no id we know is counted and not held: its builder gets
 * nothing from us (the event is incomplete there, never mis-delivered).
 */
static void on_route(struct src_ctl *s, const struct xevb_ctl_msg *m)
{
	const struct xevb_ctl_route *rt = &m->u.route;
	struct xevb_ctl_msg one = { .h = m->h };

	s->routes++;
	one.h.type = XEVB_CTL_ASSIGN;
	one.h.n_recs = 1;
	for (uint32_t k = 0; k < m->h.n_recs; k++) {
		const struct src_ctl_rid *r = rid_find(s, rt->id[k], false);
		if (!r) {
			s->route_unknown++;
			continue;
		}
		one.u.assign[0] = (struct xevb_ctl_assign){ .first_event = rt->first_event + k * rt->block,
							    .count = rt->block,
							    .builder_addr = r->addr,
							    .builder_id = rt->id[k],
							    .run = rt->run };
		on_assign(s, &one);
	}
}

static void on_request(struct src_ctl *s, const struct xevb_ctl_msg *m, const struct sockaddr_in *from)
{
	static uint32_t evs[1024];
	uint32_t unheld = 0;

	if (!src_ctl_known_builder(s, from->sin_addr.s_addr, from->sin_port)) {
		s->rq_unknown++;
		refused(s, "REQUEST", from);
		return;
	}

	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		const struct xevb_ctl_request *q = &m->u.request[r];
		bool again = q->flags & XEVB_CTL_RQ_REASK;
		uint32_t n = 0;

		s->requests++;
		s->requested_events += q->count;
		for (uint32_t j = 0; j < q->count; j++) {
			uint32_t ev = q->first_event + j;
			struct src_ctl_held *h = &s->h[ev & s->mask];
			/* A re-ask of an event we do not hold (its first REQUEST was lost,
			   or it was asked under a DFM that has since restarted, or asked
			   after its CLEAR) is answered but not held: no CLEAR may ever free
			   that slot, and a slot must not block the events of the run. */
			if ((q->flags & XEVB_CTL_RQ_REASK) && !(h->state != H_EMPTY && h->event == ev)) {
				if (unheld++ >= SRC_CTL_MAX_UNHELD_PER_REQUEST) {
					s->reask_unheld_capped++;
					continue;
				}
				s->reask_unheld++;
				evs[n++] = ev;
				continue;
			}
			/* Pull: a request is how the trigger reaches us first. */
			if (!hold(s, ev)) {
				s->not_held++;
				continue;
			}
			if (h->state == H_ANSWERED)
				again = true;
			h->state = H_ANSWERED;
			evs[n++] = ev;
		}
		s->answered_events += n;
		if (n)
			s->cfg.send(s->cfg.ctx, from->sin_addr.s_addr, evs, n, again);
	}
}

static void on_clear(struct src_ctl *s, const struct xevb_ctl_msg *m)
{
	for (uint32_t r = 0; r < m->h.n_recs; r++)
		for (uint32_t j = 0; j < m->u.clear[r].count; j++) {
			uint32_t ev = m->u.clear[r].first_event + j;
			struct src_ctl_held *h = &s->h[ev & s->mask];
			if (h->state != H_EMPTY && h->event == ev) {
				h->state = H_EMPTY;
				s->n_held--;
				s->cleared++;
			} else {
				s->clear_unknown++;
			}
		}
}

void src_ctl_on_msg(struct src_ctl *s, const struct xevb_ctl_msg *m, const struct sockaddr_in *from)
{
	bool from_dfm = m->h.role == XEVB_ROLE_DFM;

	/* Only the DFM we were told speaks as the DFM: a forged ASSIGN, CLEAR
	   or BYE from elsewhere moves nothing. */
	if (from_dfm &&
	    (from->sin_addr.s_addr != s->cfg.dfm.sin_addr.s_addr || from->sin_port != s->cfg.dfm.sin_port)) {
		s->not_dfm++;
		refused(s, xevb_ctl_type_name(m->h.type), from);
		return;
	}
	if (from_dfm && s->dfm_epoch != m->h.epoch) {
		/* A new DFM knows nothing of what the old one assigned. */
		if (s->dfm_epoch) {
			s->dfm_restarts++;
			release_all(s);
			xevb_warn("the DFM restarted (epoch %08x -> %08x): released every held event",
				  s->dfm_epoch, m->h.epoch);
		}
		s->dfm_epoch = m->h.epoch;
		/* Route indexes are that DFM's numbers for its builders. */
		memset(s->rid, 0, sizeof(s->rid));
	}
	switch (m->h.type) {
	case XEVB_CTL_STATUS:
		if (from_dfm && (m->u.status.flags & XEVB_CTL_ST_PULL))
			s->pull_seen = true;
		if (from_dfm && (m->u.status.flags & XEVB_CTL_ST_CLEARED))
			on_mark(s, (uint32_t)m->u.status.done_total);
		break;
	case XEVB_CTL_ASSIGN:
		on_assign(s, m);
		break;
	case XEVB_CTL_ROUTE:
		on_route(s, m);
		break;
	case XEVB_CTL_CLEAR:
		on_clear(s, m);
		break;
	case XEVB_CTL_REQUEST:
		on_request(s, m, from);
		break;
	case XEVB_CTL_BUILDERS:
		if (from_dfm)
			on_builders(s, m);
		break;
	case XEVB_CTL_BYE:
		if (from_dfm && !s->bye)
			xevb_info("BYE from the DFM %s:%u (epoch %08x): the run is over; stopping",
				  inet_ntoa(from->sin_addr), ntohs(from->sin_port), m->h.epoch);
		if (from_dfm)
			s->bye = true;
		break;
	default:
		s->unexpected++;
		break;
	}
}

bool src_ctl_check(const struct src_ctl *s, char *msg, size_t cap)
{
	uint32_t size = s->mask + 1, held = 0;

	for (uint32_t i = 0; i < size; i++) {
		const struct src_ctl_held *h = &s->h[i];
		if (h->state != H_EMPTY && !xevb_ctl_slot_ok(i, h->event, h->state, H_ANSWERED, s->mask, msg, cap))
			return false;
		held += h->state != H_EMPTY;
	}
	if (held != s->n_held || s->n_held > s->max_held || s->max_held > size) {
		snprintf(msg, cap, "%u events in the table, n_held %u, max %u, size %u", held, s->n_held,
			 s->max_held, size);
		return false;
	}
	if (s->n_bld > SRC_CTL_BLD_SLOTS) {
		snprintf(msg, cap, "%u builder slots used, at most %u", s->n_bld, SRC_CTL_BLD_SLOTS);
		return false;
	}
	return true;
}

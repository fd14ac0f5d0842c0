// SPDX-License-Identifier: GPL-2.0-only
/* Control protocol codec: see user/ctl/ctl_proto.h and docs/control-protocol.md. */
#include <stdio.h>
#include <string.h>
#include <xevb/bytes.h>
#include "ctl/ctl_proto.h"

static uint64_t ld64(const uint8_t *p)
{
	return ((uint64_t)xevb_ld32(p) << 32) | xevb_ld32(p + 4);
}

static uint32_t rec_len(uint8_t type)
{
	switch (type) {
	case XEVB_CTL_STATUS:
		return XEVB_CTL_STATUS_RLEN;
	case XEVB_CTL_ASSIGN:
		return XEVB_CTL_ASSIGN_RLEN;
	case XEVB_CTL_DONE:
		return XEVB_CTL_DONE_RLEN;
	case XEVB_CTL_CLEAR:
		return XEVB_CTL_CLEAR_RLEN;
	case XEVB_CTL_REQUEST:
		return XEVB_CTL_REQUEST_RLEN;
	case XEVB_CTL_SOURCES:
		return XEVB_CTL_SRC_RLEN;
	case XEVB_CTL_RECEIVED:
		return XEVB_CTL_RECEIVED_RLEN;
	case XEVB_CTL_BUILDERS:
		return XEVB_CTL_BLD_RLEN;
	case XEVB_CTL_FORWARDED:
		return XEVB_CTL_FORWARDED_RLEN;
	case XEVB_CTL_ROUTE:
		return XEVB_CTL_ROUTE_RLEN;
	default:
		return 0;
	}
}

/* Bytes before the records (ROUTE only). */
static uint32_t prefix_len(uint8_t type)
{
	return type == XEVB_CTL_ROUTE ? XEVB_CTL_ROUTE_PREFIX : 0;
}

/* What a version-1 peer may put in one datagram (the decoder's bound). */
static uint32_t decode_max_recs(uint8_t type)
{
	uint32_t rl = rec_len(type);

	if (type == XEVB_CTL_STATUS)
		return 1;
	return rl ? (XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN - prefix_len(type)) / rl : 0;
}

/* 24 bytes of trailer (ctl_auth.h): a sealed message still fits the MTU. */
uint32_t xevb_ctl_max_recs(uint8_t type)
{
	uint32_t rl = rec_len(type);

	if (type == XEVB_CTL_STATUS)
		return 1;
	return rl ? (XEVB_CTL_MAX_LEN - 24 - XEVB_CTL_HLEN - prefix_len(type)) / rl : 0;
}

/* Which role may send which type. */
static bool role_may_send(uint8_t role, uint8_t type)
{
	switch (type) {
	case XEVB_CTL_STATUS:
	case XEVB_CTL_BYE:
		return true;
	case XEVB_CTL_ASSIGN:
	case XEVB_CTL_CLEAR:
	case XEVB_CTL_SOURCES:
	case XEVB_CTL_BUILDERS:
	case XEVB_CTL_ROUTE:
		return role == XEVB_ROLE_DFM;
	case XEVB_CTL_DONE:
	case XEVB_CTL_REQUEST:
	case XEVB_CTL_FORWARDED:
		return role == XEVB_ROLE_BUILDER;
	case XEVB_CTL_RECEIVED:
		return role == XEVB_ROLE_SINK;
	default:
		return false;
	}
}

static bool status_ok(const struct xevb_ctl_status *s, uint8_t role)
{
	if (s->flags & ~XEVB_CTL_ST_KNOWN)
		return false;
	if ((s->flags & XEVB_CTL_ST_CLEARED) && (role != XEVB_ROLE_DFM || s->done_total > UINT32_MAX))
		return false;
	if (role == XEVB_ROLE_SOURCE)
		return s->n_ids >= 1 && s->n_ids <= 4096 && (uint32_t)s->first_id + s->n_ids - 1 <= 4095;
	return s->n_ids == 0 && s->first_id == 0;
}

static enum xevb_ctl_err decode_rec(struct xevb_ctl_msg *m, uint32_t i, const uint8_t *p)
{
	switch (m->h.type) {
	case XEVB_CTL_STATUS: {
		struct xevb_ctl_status *s = &m->u.status;
		s->credits = xevb_ld32(p);
		s->flags = xevb_ld32(p + 4);
		s->done_total = ld64(p + 8);
		s->peer_epoch = xevb_ld32(p + 16);
		s->load = xevb_ld32(p + 20);
		s->first_id = xevb_ld16(p + 24);
		s->n_ids = xevb_ld16(p + 26);
		return status_ok(s, m->h.role) ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_ASSIGN: {
		struct xevb_ctl_assign *a = &m->u.assign[i];
		a->first_event = xevb_ld32(p);
		a->count = xevb_ld16(p + 4);
		a->flags = p[6];
		memcpy(&a->builder_addr, p + 8, 4);
		a->builder_id = xevb_ld16(p + 12);
		a->run = xevb_ld32(p + 16);
		if (a->count < 1 || a->count > 1024 || (a->flags & ~XEVB_CTL_AS_KNOWN) || p[7] ||
		    xevb_ld16(p + 14) || !a->builder_addr)
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_DONE: {
		struct xevb_ctl_done *d = &m->u.done[i];
		d->event_id = xevb_ld32(p);
		d->n_missing = xevb_ld16(p + 4);
		d->status = p[6];
		if (d->status >= XEVB_DONE__COUNT || p[7] || d->n_missing > 4096 ||
		    (d->status == XEVB_DONE_COMPLETE) != (d->n_missing == 0))
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_CLEAR: {
		struct xevb_ctl_range *r = &m->u.clear[i];
		r->first_event = xevb_ld32(p);
		r->count = xevb_ld32(p + 4);
		return r->count >= 1 && r->count <= 65536 ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_REQUEST: {
		struct xevb_ctl_request *r = &m->u.request[i];
		r->first_event = xevb_ld32(p);
		r->count = xevb_ld16(p + 4);
		r->flags = p[6];
		if (r->count < 1 || r->count > 1024 || (r->flags & ~XEVB_CTL_RQ_KNOWN) || p[7])
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_SOURCES: {
		struct xevb_ctl_srcinfo *s = &m->u.src[i];
		memcpy(&s->addr, p, 4);
		s->port = xevb_ld16(p + 4);
		s->first_id = xevb_ld16(p + 6);
		s->n_ids = xevb_ld16(p + 8);
		if (!s->addr || !s->port || s->n_ids < 1 || s->n_ids > 4096 ||
		    (uint32_t)s->first_id + s->n_ids - 1 > 4095 || xevb_ld16(p + 10))
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_BUILDERS: {
		struct xevb_ctl_bldinfo *b = &m->u.builders[i];
		memcpy(&b->addr, p, 4);
		b->port = xevb_ld16(p + 4);
		b->id = xevb_ld16(p + 6);
		return b->addr && b->port ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_RECEIVED: {
		struct xevb_ctl_received *r = &m->u.received[i];
		memcpy(&r->builder_addr, p, 4);
		r->events = ld64(p + 8);
		return r->builder_addr && !xevb_ld32(p + 4) ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_FORWARDED: {
		struct xevb_ctl_forwarded *f = &m->u.forwarded[i];
		memcpy(&f->sink_addr, p, 4);
		f->events = ld64(p + 8);
		return f->sink_addr && !xevb_ld32(p + 4) ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_ROUTE:
		m->u.route.id[i] = xevb_ld16(p);
		return XEVB_CTL_OK;
	default:
		return XEVB_CTL_E_TYPE;
	}
}

/*
 * ROUTE's prefix: first_event u32, block u16 (1..1024), 0 u16, run u32.
 * The blocks must not wrap the event ids (first_event + n x block - 1
 * <= 2^32 - 1): a source never holds a block that spans the wrap.
 */
static enum xevb_ctl_err decode_route_prefix(struct xevb_ctl_msg *m, const uint8_t *p)
{
	struct xevb_ctl_route *r = &m->u.route;

	r->first_event = xevb_ld32(p);
	r->block = xevb_ld16(p + 4);
	r->run = xevb_ld32(p + 8);
	if (r->block < 1 || r->block > 1024 || xevb_ld16(p + 6) ||
	    (uint64_t)r->first_event + (uint64_t)m->h.n_recs * r->block - 1 > UINT32_MAX)
		return XEVB_CTL_E_FIELD;
	return XEVB_CTL_OK;
}

enum xevb_ctl_err xevb_ctl_decode(const uint8_t *buf, size_t len, struct xevb_ctl_msg *m)
{
	uint32_t rl, pl, maxr;
	enum xevb_ctl_err e;

	if (len < XEVB_CTL_HLEN)
		return XEVB_CTL_E_SHORT;
	if (xevb_ld16(buf) != XEVB_CTL_MAGIC)
		return XEVB_CTL_E_MAGIC;
	if (buf[2] != XEVB_CTL_VERSION)
		return XEVB_CTL_E_VERSION;
	m->h.type = buf[3];
	m->h.role = buf[4];
	if (m->h.type < 1 || m->h.type >= XEVB_CTL__TYPES)
		return XEVB_CTL_E_TYPE;
	if (m->h.role < 1 || m->h.role >= XEVB_ROLE__COUNT || !role_may_send(m->h.role, m->h.type))
		return XEVB_CTL_E_ROLE;
	if (buf[5] || xevb_ld16(buf + 18))
		return XEVB_CTL_E_RESERVED;
	m->h.sender_id = xevb_ld16(buf + 6);
	m->h.epoch = xevb_ld32(buf + 8);
	m->h.seq = xevb_ld32(buf + 12);
	m->h.n_recs = xevb_ld16(buf + 16);
	if (!m->h.epoch)
		return XEVB_CTL_E_EPOCH;
	rl = rec_len(m->h.type);
	pl = prefix_len(m->h.type);
	maxr = decode_max_recs(m->h.type);
	if (m->h.n_recs > maxr || (m->h.type == XEVB_CTL_STATUS && m->h.n_recs != 1) ||
	    (m->h.type != XEVB_CTL_BYE && m->h.type != XEVB_CTL_RECEIVED && m->h.type != XEVB_CTL_FORWARDED &&
	     m->h.n_recs == 0))
		return XEVB_CTL_E_COUNT;
	if (len > XEVB_CTL_MAX_LEN || len != XEVB_CTL_HLEN + pl + (size_t)m->h.n_recs * rl)
		return XEVB_CTL_E_LENGTH;
	if (pl && (e = decode_route_prefix(m, buf + XEVB_CTL_HLEN)) != XEVB_CTL_OK)
		return e;
	for (uint32_t i = 0; i < m->h.n_recs; i++)
		if ((e = decode_rec(m, i, buf + XEVB_CTL_HLEN + pl + (size_t)i * rl)) != XEVB_CTL_OK)
			return e;
	return XEVB_CTL_OK;
}

static void encode_rec(const struct xevb_ctl_msg *m, uint32_t i, uint8_t *p)
{
	switch (m->h.type) {
	case XEVB_CTL_STATUS: {
		const struct xevb_ctl_status *s = &m->u.status;
		xevb_st32(p, s->credits);
		xevb_st32(p + 4, s->flags);
		xevb_st64(p + 8, s->done_total);
		xevb_st32(p + 16, s->peer_epoch);
		xevb_st32(p + 20, s->load);
		xevb_st16(p + 24, s->first_id);
		xevb_st16(p + 26, s->n_ids);
		break;
	}
	case XEVB_CTL_ASSIGN: {
		const struct xevb_ctl_assign *a = &m->u.assign[i];
		xevb_st32(p, a->first_event);
		xevb_st16(p + 4, a->count);
		p[6] = a->flags;
		p[7] = 0;
		memcpy(p + 8, &a->builder_addr, 4);
		xevb_st16(p + 12, a->builder_id);
		xevb_st16(p + 14, 0);
		xevb_st32(p + 16, a->run);
		break;
	}
	case XEVB_CTL_DONE: {
		const struct xevb_ctl_done *d = &m->u.done[i];
		xevb_st32(p, d->event_id);
		xevb_st16(p + 4, d->n_missing);
		p[6] = d->status;
		p[7] = 0;
		break;
	}
	case XEVB_CTL_CLEAR:
		xevb_st32(p, m->u.clear[i].first_event);
		xevb_st32(p + 4, m->u.clear[i].count);
		break;
	case XEVB_CTL_REQUEST: {
		const struct xevb_ctl_request *r = &m->u.request[i];
		xevb_st32(p, r->first_event);
		xevb_st16(p + 4, r->count);
		p[6] = r->flags;
		p[7] = 0;
		break;
	}
	case XEVB_CTL_SOURCES: {
		const struct xevb_ctl_srcinfo *s = &m->u.src[i];
		memcpy(p, &s->addr, 4);
		xevb_st16(p + 4, s->port);
		xevb_st16(p + 6, s->first_id);
		xevb_st16(p + 8, s->n_ids);
		xevb_st16(p + 10, 0);
		break;
	}
	case XEVB_CTL_BUILDERS:
		memcpy(p, &m->u.builders[i].addr, 4);
		xevb_st16(p + 4, m->u.builders[i].port);
		xevb_st16(p + 6, m->u.builders[i].id);
		break;
	case XEVB_CTL_RECEIVED:
		memcpy(p, &m->u.received[i].builder_addr, 4);
		xevb_st32(p + 4, 0);
		xevb_st64(p + 8, m->u.received[i].events);
		break;
	case XEVB_CTL_FORWARDED:
		memcpy(p, &m->u.forwarded[i].sink_addr, 4);
		xevb_st32(p + 4, 0);
		xevb_st64(p + 8, m->u.forwarded[i].events);
		break;
	case XEVB_CTL_ROUTE:
		xevb_st16(p, m->u.route.id[i]);
		break;
	}
}

size_t xevb_ctl_encode(const struct xevb_ctl_msg *m, uint8_t *buf, size_t cap)
{
	struct xevb_ctl_msg check;
	uint32_t rl = rec_len(m->h.type), pl = prefix_len(m->h.type);
	size_t len = XEVB_CTL_HLEN + pl + (size_t)m->h.n_recs * rl;

	if (m->h.type < 1 || m->h.type >= XEVB_CTL__TYPES || len > cap || len > XEVB_CTL_MAX_LEN)
		return 0;
	xevb_st16(buf, XEVB_CTL_MAGIC);
	buf[2] = XEVB_CTL_VERSION;
	buf[3] = m->h.type;
	buf[4] = m->h.role;
	buf[5] = 0;
	xevb_st16(buf + 6, m->h.sender_id);
	xevb_st32(buf + 8, m->h.epoch);
	xevb_st32(buf + 12, m->h.seq);
	xevb_st16(buf + 16, m->h.n_recs);
	xevb_st16(buf + 18, 0);
	if (pl) {
		xevb_st32(buf + XEVB_CTL_HLEN, m->u.route.first_event);
		xevb_st16(buf + XEVB_CTL_HLEN + 4, m->u.route.block);
		xevb_st16(buf + XEVB_CTL_HLEN + 6, 0);
		xevb_st32(buf + XEVB_CTL_HLEN + 8, m->u.route.run);
	}
	for (uint32_t i = 0; i < m->h.n_recs; i++)
		encode_rec(m, i, buf + XEVB_CTL_HLEN + pl + (size_t)i * rl);
	/* Never send what a peer would refuse: one rule set, the decoder's. */
	return xevb_ctl_decode(buf, len, &check) == XEVB_CTL_OK ? len : 0;
}

const char *xevb_ctl_err_name(enum xevb_ctl_err e)
{
	static const char *const n[XEVB_CTL_E__COUNT] = {
		"ok",
		"short",
		"bad_magic",
		"bad_version",
		"bad_type",
		"bad_role",
		"reserved_nonzero",
		"zero_epoch",
		"bad_length",
		"bad_count",
		"bad_field",
		"unauthenticated",
		"no_key",
		"bad_mac",
		"stale",
		"replay",
		"seq_jump",
		"wrong_role",
	};
	return (unsigned)e < XEVB_CTL_E__COUNT ? n[e] : "?";
}

const char *xevb_ctl_type_name(uint8_t t)
{
	static const char *const n[XEVB_CTL__TYPES] = {
		"?",       "STATUS", "ASSIGN",   "DONE",     "CLEAR",     "REQUEST",
		"SOURCES", "BYE",    "RECEIVED", "BUILDERS", "FORWARDED", "ROUTE",
	};
	return t < XEVB_CTL__TYPES ? n[t] : "?";
}

const char *xevb_ctl_role_name(uint8_t r)
{
	static const char *const n[XEVB_ROLE__COUNT] = { "?", "dfm", "builder", "source", "sink" };
	return r < XEVB_ROLE__COUNT ? n[r] : "?";
}

bool xevb_ctl_slot_ok(uint32_t i, uint32_t event, unsigned int state, unsigned int last, uint32_t mask, char *msg,
		      size_t cap)
{
	if (state <= last && (event & mask) == i)
		return true;
	snprintf(msg, cap, "slot %u holds event %u in state %u", i, event, state);
	return false;
}

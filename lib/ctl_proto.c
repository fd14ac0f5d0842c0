// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control protocol's codec, the farm node's and the tools': see
 * shared/xl_ctl_proto.h and docs/control-protocol.md.
 */
#include "internal.h"
#include "shared/xl_ctl_proto.h"

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
uint32_t xl_ctl_max_recs(uint8_t type)
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
	if ((s->flags & XEVB_CTL_ST_LISTEN) && role != XEVB_ROLE_BUILDER)
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
		s->credits = xl_ld32(p);
		s->flags = xl_ld32(p + 4);
		s->done_total = xl_ld64(p + 8);
		s->peer_epoch = xl_ld32(p + 16);
		s->load = xl_ld32(p + 20);
		s->first_id = xl_ld16(p + 24);
		s->n_ids = xl_ld16(p + 26);
		return status_ok(s, m->h.role) ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_ASSIGN: {
		struct xevb_ctl_assign *a = &m->u.assign[i];
		a->first_event = xl_ld32(p);
		a->count = xl_ld16(p + 4);
		a->flags = p[6];
		memcpy(&a->builder_addr, p + 8, 4);
		a->builder_id = xl_ld16(p + 12);
		a->run = xl_ld32(p + 16);
		if (a->count < 1 || a->count > 1024 || (a->flags & ~XEVB_CTL_AS_KNOWN) || p[7] ||
		    xl_ld16(p + 14) || !a->builder_addr)
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_DONE: {
		struct xevb_ctl_done *d = &m->u.done[i];
		d->event_id = xl_ld32(p);
		d->n_missing = xl_ld16(p + 4);
		d->status = p[6];
		if (d->status >= XEVB_DONE__COUNT || p[7] || d->n_missing > 4096 ||
		    (d->status == XEVB_DONE_COMPLETE) != (d->n_missing == 0))
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_CLEAR: {
		struct xevb_ctl_range *r = &m->u.clear[i];
		r->first_event = xl_ld32(p);
		r->count = xl_ld32(p + 4);
		return r->count >= 1 && r->count <= 65536 ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_REQUEST: {
		struct xevb_ctl_request *r = &m->u.request[i];
		r->first_event = xl_ld32(p);
		r->count = xl_ld16(p + 4);
		r->flags = p[6];
		if (r->count < 1 || r->count > 1024 || (r->flags & ~XEVB_CTL_RQ_KNOWN) || p[7])
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_SOURCES: {
		struct xevb_ctl_srcinfo *s = &m->u.src[i];
		memcpy(&s->addr, p, 4);
		s->port = xl_ld16(p + 4);
		s->first_id = xl_ld16(p + 6);
		s->n_ids = xl_ld16(p + 8);
		if (!s->addr || !s->port || s->n_ids < 1 || s->n_ids > 4096 ||
		    (uint32_t)s->first_id + s->n_ids - 1 > 4095 || xl_ld16(p + 10))
			return XEVB_CTL_E_FIELD;
		return XEVB_CTL_OK;
	}
	case XEVB_CTL_BUILDERS: {
		struct xevb_ctl_bldinfo *b = &m->u.builders[i];
		memcpy(&b->addr, p, 4);
		b->port = xl_ld16(p + 4);
		b->id = xl_ld16(p + 6);
		return b->addr && b->port ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_RECEIVED: {
		struct xevb_ctl_received *r = &m->u.received[i];
		memcpy(&r->builder_addr, p, 4);
		r->events = xl_ld64(p + 8);
		return r->builder_addr && !xl_ld32(p + 4) ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_FORWARDED: {
		struct xevb_ctl_forwarded *f = &m->u.forwarded[i];
		memcpy(&f->sink_addr, p, 4);
		f->events = xl_ld64(p + 8);
		return f->sink_addr && !xl_ld32(p + 4) ? XEVB_CTL_OK : XEVB_CTL_E_FIELD;
	}
	case XEVB_CTL_ROUTE:
		m->u.route.id[i] = xl_ld16(p);
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

	r->first_event = xl_ld32(p);
	r->block = xl_ld16(p + 4);
	r->run = xl_ld32(p + 8);
	if (r->block < 1 || r->block > 1024 || xl_ld16(p + 6) ||
	    (uint64_t)r->first_event + (uint64_t)m->h.n_recs * r->block - 1 > UINT32_MAX)
		return XEVB_CTL_E_FIELD;
	return XEVB_CTL_OK;
}

enum xevb_ctl_err xl_ctl_decode(const uint8_t *buf, size_t len, struct xevb_ctl_msg *m)
{
	uint32_t rl, pl, maxr;
	enum xevb_ctl_err e;

	if (len < XEVB_CTL_HLEN)
		return XEVB_CTL_E_SHORT;
	if (xl_ld16(buf) != XEVB_CTL_MAGIC)
		return XEVB_CTL_E_MAGIC;
	if (buf[2] != XEVB_CTL_VERSION)
		return XEVB_CTL_E_VERSION;
	m->h.type = buf[3];
	m->h.role = buf[4];
	if (m->h.type < 1 || m->h.type >= XEVB_CTL__TYPES)
		return XEVB_CTL_E_TYPE;
	if (m->h.role < 1 || m->h.role >= XEVB_ROLE__COUNT || !role_may_send(m->h.role, m->h.type))
		return XEVB_CTL_E_ROLE;
	if (buf[5] || xl_ld16(buf + 18))
		return XEVB_CTL_E_RESERVED;
	m->h.sender_id = xl_ld16(buf + 6);
	m->h.epoch = xl_ld32(buf + 8);
	m->h.seq = xl_ld32(buf + 12);
	m->h.n_recs = xl_ld16(buf + 16);
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
		xl_st32(p, s->credits);
		xl_st32(p + 4, s->flags);
		xl_st64(p + 8, s->done_total);
		xl_st32(p + 16, s->peer_epoch);
		xl_st32(p + 20, s->load);
		xl_st16(p + 24, s->first_id);
		xl_st16(p + 26, s->n_ids);
		break;
	}
	case XEVB_CTL_ASSIGN: {
		const struct xevb_ctl_assign *a = &m->u.assign[i];
		xl_st32(p, a->first_event);
		xl_st16(p + 4, a->count);
		p[6] = a->flags;
		p[7] = 0;
		memcpy(p + 8, &a->builder_addr, 4);
		xl_st16(p + 12, a->builder_id);
		xl_st16(p + 14, 0);
		xl_st32(p + 16, a->run);
		break;
	}
	case XEVB_CTL_DONE: {
		const struct xevb_ctl_done *d = &m->u.done[i];
		xl_st32(p, d->event_id);
		xl_st16(p + 4, d->n_missing);
		p[6] = d->status;
		p[7] = 0;
		break;
	}
	case XEVB_CTL_CLEAR:
		xl_st32(p, m->u.clear[i].first_event);
		xl_st32(p + 4, m->u.clear[i].count);
		break;
	case XEVB_CTL_REQUEST: {
		const struct xevb_ctl_request *r = &m->u.request[i];
		xl_st32(p, r->first_event);
		xl_st16(p + 4, r->count);
		p[6] = r->flags;
		p[7] = 0;
		break;
	}
	case XEVB_CTL_SOURCES: {
		const struct xevb_ctl_srcinfo *s = &m->u.src[i];
		memcpy(p, &s->addr, 4);
		xl_st16(p + 4, s->port);
		xl_st16(p + 6, s->first_id);
		xl_st16(p + 8, s->n_ids);
		xl_st16(p + 10, 0);
		break;
	}
	case XEVB_CTL_BUILDERS:
		memcpy(p, &m->u.builders[i].addr, 4);
		xl_st16(p + 4, m->u.builders[i].port);
		xl_st16(p + 6, m->u.builders[i].id);
		break;
	case XEVB_CTL_RECEIVED:
		memcpy(p, &m->u.received[i].builder_addr, 4);
		xl_st32(p + 4, 0);
		xl_st64(p + 8, m->u.received[i].events);
		break;
	case XEVB_CTL_FORWARDED:
		memcpy(p, &m->u.forwarded[i].sink_addr, 4);
		xl_st32(p + 4, 0);
		xl_st64(p + 8, m->u.forwarded[i].events);
		break;
	case XEVB_CTL_ROUTE:
		xl_st16(p, m->u.route.id[i]);
		break;
	}
}

size_t xl_ctl_encode(const struct xevb_ctl_msg *m, uint8_t *buf, size_t cap)
{
	struct xevb_ctl_msg check;
	uint32_t rl = rec_len(m->h.type), pl = prefix_len(m->h.type);
	size_t len = XEVB_CTL_HLEN + pl + (size_t)m->h.n_recs * rl;

	if (m->h.type < 1 || m->h.type >= XEVB_CTL__TYPES || len > cap || len > XEVB_CTL_MAX_LEN)
		return 0;
	xl_st16(buf, XEVB_CTL_MAGIC);
	buf[2] = XEVB_CTL_VERSION;
	buf[3] = m->h.type;
	buf[4] = m->h.role;
	buf[5] = 0;
	xl_st16(buf + 6, m->h.sender_id);
	xl_st32(buf + 8, m->h.epoch);
	xl_st32(buf + 12, m->h.seq);
	xl_st16(buf + 16, m->h.n_recs);
	xl_st16(buf + 18, 0);
	if (pl) {
		xl_st32(buf + XEVB_CTL_HLEN, m->u.route.first_event);
		xl_st16(buf + XEVB_CTL_HLEN + 4, m->u.route.block);
		xl_st16(buf + XEVB_CTL_HLEN + 6, 0);
		xl_st32(buf + XEVB_CTL_HLEN + 8, m->u.route.run);
	}
	for (uint32_t i = 0; i < m->h.n_recs; i++)
		encode_rec(m, i, buf + XEVB_CTL_HLEN + pl + (size_t)i * rl);
	/* Never send what a peer would refuse: one rule set, the decoder's. */
	return xl_ctl_decode(buf, len, &check) == XEVB_CTL_OK ? len : 0;
}

const char *xl_ctl_err_name(enum xevb_ctl_err e)
{
	static const char *const n[XEVB_CTL_E_NOT_MEMBER + 1] = {
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
		"not_member",
	};
	return (unsigned)e <= XEVB_CTL_E_NOT_MEMBER ? n[e] : "?";
}

const char *xl_ctl_type_name(uint8_t t)
{
	static const char *const n[XEVB_CTL__TYPES] = {
		"?",       "STATUS", "ASSIGN",   "DONE",     "CLEAR",     "REQUEST",
		"SOURCES", "BYE",    "RECEIVED", "BUILDERS", "FORWARDED", "ROUTE",
	};
	return t < XEVB_CTL__TYPES ? n[t] : "?";
}

const char *xl_ctl_role_name(uint8_t r)
{
	static const char *const n[XEVB_ROLE__COUNT] = { "?", "dfm", "builder", "source", "sink" };
	return r < XEVB_ROLE__COUNT ? n[r] : "?";
}

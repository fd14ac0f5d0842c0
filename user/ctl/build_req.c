// SPDX-License-Identifier: GPL-2.0-only
/* The builder's requests to the sources (build_req.h, docs/control-protocol.md). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <xevb/wire.h>
#include "ctl/build_req.h"

int build_req_init(struct build_req *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->src = calloc(BUILD_REQ_MAX_SRCP, sizeof(*rq->src));
	rq->owner = calloc(XEVB_MAX_SOURCE_ID + 1, sizeof(*rq->owner));
	rq->pend = calloc(BUILD_REQ_MAX_SRCP, sizeof(*rq->pend));
	if (!rq->src || !rq->owner || !rq->pend || peer_map_init(&rq->map, BUILD_REQ_MAX_SRCP)) {
		build_req_free(rq);
		return -1;
	}
	return 0;
}

void build_req_free(struct build_req *rq)
{
	free(rq->src);
	free(rq->owner);
	free(rq->pend);
	peer_map_free(&rq->map);
	rq->src = NULL;
	rq->owner = NULL;
	rq->pend = NULL;
	rq->n_srcp = rq->n_pend = 0;
}

static void send_one(struct build_req *rq, struct xevb_ctl_io *io, struct build_srcp *p)
{
	p->rq.h.type = XEVB_CTL_REQUEST;
	xevb_ctl_send(io, &p->sa, &p->rq);
	rq->requests_sent++;
	p->rq.h.n_recs = 0;
}

void build_req_flush(struct build_req *rq, struct xevb_ctl_io *io)
{
	for (uint32_t i = 0; i < rq->n_pend; i++) {
		struct build_srcp *p = &rq->src[rq->pend[i]];
		p->pending = false;
		if (p->rq.h.n_recs)
			send_one(rq, io, p);
	}
	rq->n_pend = 0;
}

static void request(struct build_req *rq, struct xevb_ctl_io *io, struct build_srcp *p, uint32_t first,
		    uint16_t count, uint8_t flags)
{
	struct xevb_ctl_msg *m = &p->rq;

	/* Extend the last record when it continues it: blocks stay one record. */
	if (m->h.n_recs) {
		struct xevb_ctl_request *l = &m->u.request[m->h.n_recs - 1];
		if (l->flags == flags && l->first_event + l->count == first && l->count + count <= 1024) {
			l->count = (uint16_t)(l->count + count);
			return;
		}
	}
	if (!p->pending) {
		p->pending = true;
		rq->pend[rq->n_pend++] = (uint32_t)(p - rq->src);
	}
	m->u.request[m->h.n_recs++] = (struct xevb_ctl_request){ first, count, flags };
	if (m->h.n_recs == xevb_ctl_max_recs(XEVB_CTL_REQUEST))
		send_one(rq, io, p);
}

static struct build_srcp *srcp_of(struct build_req *rq, uint16_t sid)
{
	return sid <= XEVB_MAX_SOURCE_ID && rq->owner[sid] ? &rq->src[rq->owner[sid] - 1] : NULL;
}

void build_req_all(struct build_req *rq, struct xevb_ctl_io *io, uint32_t first, uint16_t count, uint8_t flags)
{
	for (uint32_t i = 0; i < rq->n_srcp; i++)
		request(rq, io, &rq->src[i], first, count, flags);
}

void build_req_missing(struct build_req *rq, struct xevb_ctl_io *io, uint32_t event, const uint16_t *miss, int n)
{
	for (int s = 0; s < n; s++) {
		struct build_srcp *p = srcp_of(rq, miss[s]);
		if (!p) {
			rq->no_source_for++;
			continue;
		}
		/* One REQUEST per source process, however many of its ids are missing. */
		if (p->rq.h.n_recs && p->rq.u.request[p->rq.h.n_recs - 1].first_event == event)
			continue;
		request(rq, io, p, event, 1, XEVB_CTL_RQ_REASK);
	}
}

/* Source ids first .. first + n - 1 belong to process p now (or to none, p NULL, where they were q's). */
static void own(struct build_req *rq, uint16_t first, uint16_t n, const struct build_srcp *q, uint16_t val)
{
	for (uint32_t id = first; id < (uint32_t)first + n && id <= XEVB_MAX_SOURCE_ID; id++)
		if (!q || rq->owner[id] == (uint16_t)(q - rq->src) + 1)
			rq->owner[id] = val;
}

void build_req_unsolicited(struct build_req *rq, const struct xevb_event *ev)
{
	for (uint32_t i = 0; i < ev->n_expected; i++) {
		struct build_srcp *p;

		if (ev->frags[i].frame_idx == UINT32_MAX)
			continue;
		p = srcp_of(rq, ev->source_ids[i]);
		if (p)
			p->unsolicited++;
		else
			rq->unsolicited_other++;
	}
}

void build_req_on_sources(struct build_req *rq, const struct xevb_ctl_msg *m)
{
	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		const struct xevb_ctl_srcinfo *s = &m->u.src[r];
		int64_t i = peer_map_get(&rq->map, peer_key(s->addr, htons(s->port)));
		struct build_srcp *p;

		if (i < 0) {
			if (rq->n_srcp == BUILD_REQ_MAX_SRCP) {
				rq->srcp_full++;
				continue;
			}
			i = rq->n_srcp++;
			peer_map_put(&rq->map, peer_key(s->addr, htons(s->port)), (uint32_t)i);
			p = &rq->src[i];
			memset(p, 0, sizeof(*p));
			p->sa = (struct sockaddr_in){ .sin_family = AF_INET,
						      .sin_addr.s_addr = s->addr,
						      .sin_port = htons(s->port) };
		}
		p = &rq->src[i];
		if (p->n_ids)
			own(rq, p->first_id, p->n_ids, p, 0);
		p->first_id = s->first_id;
		p->n_ids = s->n_ids;
		own(rq, p->first_id, p->n_ids, NULL, (uint16_t)(i + 1));
	}
}

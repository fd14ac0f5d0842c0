// SPDX-License-Identifier: GPL-2.0-only
/* The builder's requests to the sources (build_req.h, docs/control-protocol.md). */
#include <arpa/inet.h>
#include <string.h>
#include "ctl/build_req.h"

void build_req_flush(struct build_req *rq, struct xevb_ctl_io *io)
{
	for (uint32_t i = 0; i < rq->n_srcp; i++) {
		struct build_srcp *p = &rq->src[i];
		if (!p->rq.h.n_recs)
			continue;
		p->rq.h.type = XEVB_CTL_REQUEST;
		xevb_ctl_send(io, &p->sa, &p->rq);
		rq->requests_sent++;
		p->rq.h.n_recs = 0;
	}
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
	m->u.request[m->h.n_recs++] = (struct xevb_ctl_request){ first, count, flags };
	if (m->h.n_recs == xevb_ctl_max_recs(XEVB_CTL_REQUEST)) {
		m->h.type = XEVB_CTL_REQUEST;
		xevb_ctl_send(io, &p->sa, m);
		rq->requests_sent++;
		m->h.n_recs = 0;
	}
}

static struct build_srcp *srcp_of(struct build_req *rq, uint16_t sid)
{
	for (uint32_t i = 0; i < rq->n_srcp; i++)
		if (sid >= rq->src[i].first_id && sid < rq->src[i].first_id + rq->src[i].n_ids)
			return &rq->src[i];
	return NULL;
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
		struct build_srcp *p = NULL;
		for (uint32_t i = 0; i < rq->n_srcp; i++)
			if (rq->src[i].sa.sin_addr.s_addr == s->addr && ntohs(rq->src[i].sa.sin_port) == s->port)
				p = &rq->src[i];
		if (!p) {
			if (rq->n_srcp == BUILD_REQ_MAX_SRCP)
				return;
			p = &rq->src[rq->n_srcp++];
			memset(p, 0, sizeof(*p));
			p->sa = (struct sockaddr_in){ .sin_family = AF_INET,
						      .sin_addr.s_addr = s->addr,
						      .sin_port = htons(s->port) };
		}
		p->first_id = s->first_id;
		p->n_ids = s->n_ids;
	}
}

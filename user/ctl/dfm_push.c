// SPDX-License-Identifier: GPL-2.0-only
/* Push mode: the sources' copy of the assignments as ROUTE tables (dfm_push.h). */
#include <string.h>
#include "ctl/dfm_push.h"

void dfm_push_init(struct dfm_push *p, uint32_t block, void (*send)(void *, struct xevb_ctl_msg *), void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->block = block;
	p->send = send;
	p->ctx = ctx;
	p->route.h.type = XEVB_CTL_ROUTE;
	p->copy.h.type = XEVB_CTL_ASSIGN;
}

static void flush_route(struct dfm_push *p)
{
	if (!p->route.h.n_recs)
		return;
	p->send(p->ctx, &p->route);
	p->routes++;
	p->route_blocks += p->route.h.n_recs;
	p->route.h.n_recs = 0;
}

static void flush_copy(struct dfm_push *p)
{
	if (!p->copy.h.n_recs)
		return;
	p->send(p->ctx, &p->copy);
	p->copies++;
	p->copy_blocks += p->copy.h.n_recs;
	p->copy.h.n_recs = 0;
}

void dfm_push_flush(struct dfm_push *p)
{
	flush_route(p);
	flush_copy(p);
}

bool dfm_push_due(const struct dfm_push *p, uint64_t now, uint64_t interval_ns)
{
	/* Signed: the first block may have come after the caller's clock was read. */
	return (p->route.h.n_recs || p->copy.h.n_recs) && (int64_t)(now - p->first_ns) >= (int64_t)interval_ns;
}

/* Does the block continue the pending ROUTE (same run, the next block, no wrap)? */
static bool continues(const struct dfm_push *p, const struct xevb_ctl_assign *as)
{
	const struct xevb_ctl_route *r = &p->route.u.route;

	return !p->route.h.n_recs ||
	       (r->run == as->run && as->first_event - r->first_event == (uint32_t)p->route.h.n_recs * r->block &&
		as->first_event > r->first_event);
}

void dfm_push_add(struct dfm_push *p, const struct xevb_ctl_assign *as, uint32_t bi, uint64_t now)
{
	bool routable = !p->assign_only && dfm_push_routable(p, bi);

	if (!p->route.h.n_recs && !p->copy.h.n_recs)
		p->first_ns = now;
	if (as->flags & XEVB_CTL_AS_REASSIGN) {
		/* After the first assignment of its events, wherever that waits. */
		flush_route(p);
	} else if (routable && as->count == p->block && (uint64_t)as->first_event + as->count - 1 <= UINT32_MAX) {
		if (!continues(p, as))
			flush_route(p);
		if (!p->route.h.n_recs) {
			p->route.u.route.first_event = as->first_event;
			p->route.u.route.block = (uint16_t)p->block;
			p->route.u.route.run = as->run;
		}
		p->route.u.route.id[p->route.h.n_recs++] = (uint16_t)bi;
		if (p->route.h.n_recs == xevb_ctl_max_recs(XEVB_CTL_ROUTE))
			flush_route(p);
		return;
	}
	p->copy.u.assign[p->copy.h.n_recs++] = *as;
	if (p->copy.h.n_recs == xevb_ctl_max_recs(XEVB_CTL_ASSIGN))
		flush_copy(p);
}

void dfm_push_list_begin(struct dfm_push *p)
{
	for (uint32_t i = 0; i < XEVB_DFM_MAX_BUILDERS; i++) {
		p->name[i].before = p->name[i].now;
		p->name[i].now = false;
	}
}

void dfm_push_list_add(struct dfm_push *p, uint32_t bi, uint32_t addr, uint16_t port)
{
	struct dfm_push_name *n;

	if (bi >= XEVB_DFM_MAX_BUILDERS)
		return;
	n = &p->name[bi];
	if (n->before && (n->addr != addr || n->port != port))
		n->before = false; /* another builder in that entry now */
	n->addr = addr;
	n->port = port;
	n->now = true;
}

void dfm_push_list_end(struct dfm_push *p)
{
	for (uint32_t i = 0; i < XEVB_DFM_MAX_BUILDERS; i++)
		p->name[i].routable = p->name[i].now && p->name[i].before;
}

bool dfm_push_routable(const struct dfm_push *p, uint32_t bi)
{
	return bi < XEVB_DFM_MAX_BUILDERS && p->name[bi].routable;
}

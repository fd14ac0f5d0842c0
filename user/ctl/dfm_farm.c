// SPDX-License-Identifier: GPL-2.0-only
/*
 * The books at the farm nodes (dfm.h): what each farm node received from
 * each builder address (RECEIVED), summed per address as the reports
 * come, what each builder says it sent each farm-node address (FORWARDED),
 * the farm nodes a run configuration expects, and the reconciliation
 * against the DONEs.
 */
#include <stdlib.h>
#include <string.h>
#include "ctl/dfm.h"
#include "ctl/dfm_int.h"

static struct xevb_dfm_sink *find_sink(struct xevb_dfm *d, uint32_t addr, uint16_t port)
{
	int64_t i = peer_map_get(&d->skmap, peer_key(addr, port));
	struct xevb_dfm_sink *k;

	if (i >= 0)
		return &d->sk[i];
	if (d->nsk == XEVB_DFM_MAX_SINKS) {
		d->st.sinks_full++;
		return NULL;
	}
	peer_map_put(&d->skmap, peer_key(addr, port), d->nsk);
	k = &d->sk[d->nsk++];
	memset(k, 0, sizeof(*k));
	k->addr = addr;
	k->port = port;
	return k;
}

/* A restarted farm node counts from 0 again: what the old one got stays delivered. */
static void sink_new_epoch(struct xevb_dfm *d, struct xevb_dfm_sink *k, uint32_t epoch)
{
	if (k->epoch && k->epoch != epoch) {
		for (uint32_t j = d->sk_pairs[k - d->sk]; j; j = d->pair[j - 1].next) {
			d->pair[j - 1].earlier += d->pair[j - 1].events;
			d->pair[j - 1].events = 0;
		}
		k->restarts++;
	}
	k->epoch = epoch;
}

/* The sums of address baddr, or NULL when the table is full. */
static struct farm_addr *farm_addr(struct xevb_dfm *d, uint32_t baddr, bool add)
{
	int64_t i = peer_map_get(&d->famap, baddr);

	if (i >= 0)
		return &d->fa[i];
	if (!add || d->nfa == XEVB_DFM_MAX_FARM_ADDRS)
		return NULL;
	peer_map_put(&d->famap, baddr, d->nfa);
	d->fa[d->nfa] = (struct farm_addr){ .addr = baddr };
	return &d->fa[d->nfa++];
}

/*
 * Room in *arr (of *cap entries of size bytes) for entry n: doubled when
 * full, up to max entries. false: at max, or out of memory (the table stays).
 */
static bool room_for(void **arr, uint32_t *cap, uint32_t n, size_t size, uint32_t max)
{
	uint32_t c = *cap;
	void *a;

	if (n < c)
		return true;
	if (c >= max)
		return false;
	c = c > max / 2 ? max : 2 * c;
	a = realloc(*arr, (size_t)c * size);
	if (!a)
		return false;
	*arr = a;
	*cap = c;
	return true;
}

/* Farm node k's pair for builder address baddr, or NULL (a table is full). */
static struct farm_pair *sink_pair(struct xevb_dfm *d, struct xevb_dfm_sink *k, uint32_t baddr)
{
	uint32_t ki = (uint32_t)(k - d->sk);
	uint64_t key = ((uint64_t)ki << 32) | baddr;
	int64_t i = peer_map_get(&d->pairmap, key);
	struct farm_pair *p;

	if (i >= 0)
		return &d->pair[i];
	if (k->n == XEVB_DFM_MAX_BUILDERS ||
	    !room_for((void **)&d->pair, &d->pair_cap, d->npair, sizeof(*d->pair), XEVB_DFM_MAX_FARM_PAIRS) ||
	    !farm_addr(d, baddr, true) || !peer_map_put(&d->pairmap, key, d->npair))
		return NULL;
	p = &d->pair[d->npair++];
	*p = (struct farm_pair){ .sink = ki, .baddr = baddr, .next = d->sk_pairs[ki] };
	d->sk_pairs[ki] = d->npair;
	k->n++;
	return p;
}

void xevb_dfm_on_received(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
			  const struct xevb_ctl_received *r, uint32_t n, uint64_t now)
{
	struct xevb_dfm_sink *k = find_sink(d, addr, port);

	if (!k)
		return;
	sink_new_epoch(d, k, h->epoch);
	k->last_ns = now;
	d->nsk_reporting += k->reports++ == 0;
	for (uint32_t i = 0; i < n; i++) {
		struct farm_pair *p = sink_pair(d, k, r[i].builder_addr);
		if (!p) {
			k->untracked++;
			continue;
		}
		/* Cumulative counts: an older report arriving late never lowers one. */
		if (r[i].events > p->events) {
			farm_addr(d, p->baddr, false)->total += r[i].events - p->events;
			d->received_all += r[i].events - p->events;
			p->events = r[i].events;
		}
	}
}

void xevb_dfm_expect_sink(struct xevb_dfm *d, uint32_t addr, uint16_t port, uint16_t id)
{
	struct xevb_dfm_sink *k = find_sink(d, addr, port);

	if (k) {
		k->expected = true;
		k->id = id;
	}
}

uint64_t xevb_dfm_sink_from(const struct xevb_dfm *d, uint32_t ki, uint32_t baddr)
{
	int64_t i = peer_map_get(&d->pairmap, ((uint64_t)ki << 32) | baddr);

	return i < 0 ? 0 : d->pair[i].events + d->pair[i].earlier;
}

uint64_t xevb_dfm_received_from(const struct xevb_dfm *d, uint32_t baddr)
{
	int64_t i = peer_map_get(&d->famap, baddr);

	return i < 0 ? 0 : d->fa[i].total;
}

int64_t xevb_dfm_builder_to(const struct xevb_dfm *d, uint32_t bi, uint32_t saddr)
{
	int64_t i = d->fwd ? peer_map_get(&d->fwdmap, ((uint64_t)bi << 32) | saddr) : -1;

	return i < 0 ? -1 : (int64_t)(d->fwd[i].events + d->fwd[i].earlier);
}

uint32_t xevb_dfm_builder_fwd(const struct xevb_dfm *d, uint32_t bi, uint32_t it, uint32_t *saddr,
			      uint64_t *events)
{
	uint32_t j = it ? d->fwd[it - 1].next : (bi < d->nb ? d->b_fwd[bi] : 0);

	if (j) {
		*saddr = d->fwd[j - 1].saddr;
		*events = d->fwd[j - 1].events + d->fwd[j - 1].earlier;
	}
	return j;
}

/* Builder bi's pair for farm-node address saddr, or NULL (the table is full). */
static struct fwd_pair *fwd_pair(struct xevb_dfm *d, uint32_t bi, uint32_t saddr)
{
	uint64_t key = ((uint64_t)bi << 32) | saddr;
	int64_t i;
	struct fwd_pair *p;

	/* Taken at the first FORWARDED: a DFM whose builders never send one pays nothing. */
	if (!d->fwd) {
		if (peer_map_init(&d->fwdmap, XEVB_DFM_MAX_FARM_PAIRS))
			return NULL;
		d->fwd_cap = PEER_MAP_START;
		if (!(d->fwd = calloc(d->fwd_cap, sizeof(*d->fwd)))) {
			peer_map_free(&d->fwdmap);
			return NULL;
		}
	}
	i = peer_map_get(&d->fwdmap, key);
	if (i >= 0)
		return &d->fwd[i];
	if (!room_for((void **)&d->fwd, &d->fwd_cap, d->nfwd, sizeof(*d->fwd), XEVB_DFM_MAX_FARM_PAIRS) ||
	    !peer_map_put(&d->fwdmap, key, d->nfwd))
		return NULL;
	p = &d->fwd[d->nfwd++];
	*p = (struct fwd_pair){ .bi = bi, .saddr = saddr, .next = d->b_fwd[bi] };
	d->b_fwd[bi] = d->nfwd;
	return p;
}

int xevb_dfm_builder_at(const struct xevb_dfm *d, uint32_t addr, uint16_t port)
{
	return dfm_find_builder(d, addr, port);
}

/* Only from the builder's current incarnation (as DONE): a new one counts from 0 again. */
void xevb_dfm_on_forwarded(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
			   const struct xevb_ctl_forwarded *r, uint32_t n)
{
	int bi = dfm_find_builder(d, addr, port);
	struct xevb_dfm_builder *b;

	if (bi < 0 || d->b[bi].epoch != h->epoch) {
		d->st.fwd_unknown_peer++;
		return;
	}
	b = &d->b[bi];
	if (b->fwd_reports && b->fwd_epoch != h->epoch)
		for (uint32_t j = d->b_fwd[bi]; j; j = d->fwd[j - 1].next) {
			d->fwd[j - 1].earlier += d->fwd[j - 1].events;
			d->fwd[j - 1].events = 0;
		}
	b->fwd_epoch = h->epoch;
	b->fwd_reports++;
	for (uint32_t i = 0; i < n; i++) {
		struct fwd_pair *p = fwd_pair(d, (uint32_t)bi, r[i].sink_addr);

		if (!p) {
			d->st.fwd_untracked++;
			continue;
		}
		/* Cumulative: a late report never lowers a count. */
		if (r[i].events > p->events) {
			b->sent += r[i].events - p->events;
			p->events = r[i].events;
		}
	}
}

/*
 * Builders at one address share its count: each takes what covers its own
 * DONE in index order, the last one the rest (so the counts add up to what
 * the farm nodes reported). Events from addresses that are no builder's
 * are received_unknown.
 */
uint64_t xevb_dfm_reconcile(struct xevb_dfm *d)
{
	uint64_t known = 0;

	d->st.received = d->st.not_delivered = d->st.received_unknown = 0;
	d->fa_gen++;
	for (uint32_t i = 0; i < d->nb; i++) {
		struct farm_addr *a = farm_addr(d, d->b[i].addr, false);
		d->b[i].received = d->b[i].not_delivered = 0;
		if (!a)
			continue;
		if (a->gen != d->fa_gen) {
			a->gen = d->fa_gen;
			a->left = a->total;
			known += a->total;
		}
		a->last_bi = i;
	}
	if (!d->nsk)
		return 0;
	for (uint32_t i = 0; i < d->nb; i++) {
		struct xevb_dfm_builder *b = &d->b[i];
		struct farm_addr *a = farm_addr(d, b->addr, false);
		uint64_t done = b->complete + b->incomplete, left = a ? a->left : 0;

		b->received = a && a->last_bi == i ? left : (done < left ? done : left);
		if (a)
			a->left -= b->received;
		b->not_delivered = done > b->received ? done - b->received : 0;
		d->st.received += b->received;
		d->st.not_delivered += b->not_delivered;
	}
	d->st.received_unknown = d->received_all - known;
	return d->st.not_delivered;
}

uint32_t xevb_dfm_n_reporting(const struct xevb_dfm *d)
{
	return d->nsk_reporting;
}

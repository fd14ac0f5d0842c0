// SPDX-License-Identifier: GPL-2.0-only
/* The builder's lease on DONE (build_lease.h). */
#include <stdlib.h>
#include "ctl/build_lease.h"

void build_lease_free(struct build_lease *l)
{
	free(l->rec);
	free(l->first);
	l->rec = NULL;
	l->first = NULL;
	l->n = l->cap = 0;
}

void build_lease_echo(struct build_lease *l, uint64_t stamp, uint32_t dead_ms)
{
	/* A margin of a quarter of dead_ms for the way: a DONE slower than that
	   may find its events given to another builder. */
	uint64_t until = stamp + (uint64_t)dead_ms * 750000ull;

	if (!stamp || !dead_ms)
		return;
	l->on = true;
	if (until > l->until)
		l->until = until;
}

bool build_lease_ok(struct build_lease *l, uint64_t now)
{
	bool ok = !l->on || now < l->until;

	if (!ok && l->n && l->until) {
		l->expired++;
		l->until = 0; /* counted once per lapse */
	}
	return ok;
}

bool build_lease_add(struct build_lease *l, const struct xevb_ctl_done *r, bool first)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? 2 * l->cap : 1024;
		struct xevb_ctl_done *nr = realloc(l->rec, cap * sizeof(*nr));
		uint8_t *nf;

		if (!nr) {
			l->hold_failed++;
			return false;
		}
		l->rec = nr;
		nf = realloc(l->first, cap);
		if (!nf) {
			l->hold_failed++;
			return false;
		}
		l->first = nf;
		l->cap = cap;
	}
	l->rec[l->n] = *r;
	l->first[l->n++] = first;
	return true;
}

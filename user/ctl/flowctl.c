// SPDX-License-Identifier: GPL-2.0-only
#include <math.h>
#include "ctl/flowctl.h"

void xevb_busy_init(struct xevb_busy *b, uint32_t resources, double hi, double lo)
{
	double h = ceil(hi * resources), l = floor(lo * resources);

	if (l > h)
		l = h;
	b->high = h > UINT32_MAX ? UINT32_MAX : (uint32_t)h;
	b->low = l < 0 ? 0 : (uint32_t)l;
	b->busy = false;
	b->n_busy = b->n_clear = 0;
}

bool xevb_busy_update(struct xevb_busy *b, uint32_t load)
{
	if (!b->busy && load > b->high) {
		b->busy = true;
		b->n_busy++;
		return true;
	}
	if (b->busy && load < b->low) {
		b->busy = false;
		b->n_clear++;
		return true;
	}
	return false;
}

int xevb_wrr_pick(int64_t *cur, const uint32_t *weight, uint32_t n)
{
	int64_t total = 0;
	int best = -1;

	for (uint32_t i = 0; i < n; i++) {
		if (!weight[i])
			continue;
		cur[i] += weight[i];
		total += weight[i];
		if (best < 0 || cur[i] > cur[best])
			best = (int)i;
	}
	if (best >= 0)
		cur[best] -= total;
	return best;
}

// SPDX-License-Identifier: GPL-2.0-only
/* Bounded record of event ids seen, to catch an event delivered twice. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "evb/evid_window.h"

int xevb_evid_window_init(struct xevb_evid_window *w, uint32_t size)
{
	uint32_t s = 64;

	while (s < size && s < (1u << 31))
		s <<= 1;
	memset(w, 0, sizeof(*w));
	w->size = s;
	w->bits = calloc(s / 64, sizeof(uint64_t));
	return w->bits ? 0 : -ENOMEM;
}

void xevb_evid_window_free(struct xevb_evid_window *w)
{
	free(w->bits);
	w->bits = NULL;
}

static inline void clear_bit(struct xevb_evid_window *w, uint32_t id)
{
	uint32_t b = id & (w->size - 1);
	w->bits[b / 64] &= ~(1ull << (b % 64));
}

enum xevb_evid_verdict xevb_evid_window_add(struct xevb_evid_window *w, uint32_t run, uint32_t id)
{
	uint32_t b = id & (w->size - 1);
	uint64_t m = 1ull << (b % 64);
	int32_t d;

	if (!w->any || run != w->run) {
		if (w->any)
			w->run_changes++;
		memset(w->bits, 0, w->size / 8);
		w->any = true;
		w->run = run;
		w->high = id;
		w->bits[b / 64] |= m;
		return XEVB_EVID_NEW;
	}
	d = (int32_t)(id - w->high);
	if (d > 0) {
		/* Slots of ids that leave the window are reused for the new ones. */
		if ((uint32_t)d >= w->size) {
			memset(w->bits, 0, w->size / 8);
		} else {
			for (uint32_t x = w->high + 1; x != id; x++)
				clear_bit(w, x);
		}
		w->high = id;
		w->bits[b / 64] |= m;
		return XEVB_EVID_NEW;
	}
	if ((uint32_t) - (int64_t)d >= w->size)
		return XEVB_EVID_TOO_OLD;
	if (w->bits[b / 64] & m)
		return XEVB_EVID_DUP;
	w->bits[b / 64] |= m;
	return XEVB_EVID_NEW;
}

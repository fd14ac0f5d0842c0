/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Flow-control pieces shared by the DFM, builders and farm nodes:
 * Busy / not-Busy with hysteresis (the ATLAS EF-1 scheme: Busy once the
 * events held go above high = 1.2 x resources, not-Busy again once they
 * fall below low = 0.2 x resources) and a smooth weighted round robin that
 * spreads work in proportion to credits over the peers that may take it.
 */
#ifndef XEVB_FLOWCTL_H
#define XEVB_FLOWCTL_H

#include <stdbool.h>
#include <stdint.h>

#define XEVB_BUSY_HIGH_DEFAULT 1.2
#define XEVB_BUSY_LOW_DEFAULT  0.2

struct xevb_busy {
	uint32_t high, low; /* Busy when load > high; not-Busy when load < low */
	bool busy;
	uint64_t n_busy, n_clear; /* transitions */
};

/* high = ceil(hi * resources), low = floor(lo * resources); lo <= hi. */
void xevb_busy_init(struct xevb_busy *b, uint32_t resources, double hi, double lo);
/* Feed the current load; true when the state changed. */
bool xevb_busy_update(struct xevb_busy *b, uint32_t load);

/*
 * Smooth weighted round robin (as nginx): weight[i] 0 means peer i may not
 * take work now. cur[] is the state, n entries, zeroed at start. Returns the
 * index picked, or -1 when every weight is 0. Over time each peer is picked
 * in proportion to its weight, interleaved.
 */
int xevb_wrr_pick(int64_t *cur, const uint32_t *weight, uint32_t n);

#endif

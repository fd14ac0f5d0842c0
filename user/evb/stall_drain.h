/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A receive loop that did not run for a while (descheduled, stopped, a
 * long send, its core taken by receive work) finds its ring full of
 * fragments older than the clock says: the open events' missing pieces
 * are likely among them. Timing those events out first would tear them
 * and make their waiting fragments late. So after a gap in the loop of
 * over a quarter of the timeout, timeouts wait until the ring has been
 * drained once (a batch that was not full), for at most one timeout more.
 */
#ifndef XEVB_STALL_DRAIN_H
#define XEVB_STALL_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

struct xevb_stall_drain {
	uint64_t timeout_ns; /* the builder's; 0: no timeouts, nothing to hold back */
	uint64_t last_ns;    /* the loop's previous turn; 0: none yet */
	uint64_t until_ns;   /* 0: not draining */
	uint64_t stalls;     /* gaps seen */
};

/* At the top of each turn of the loop. */
static inline void xevb_stall_drain_begin(struct xevb_stall_drain *sd, uint64_t now)
{
	if (sd->timeout_ns && sd->last_ns && now - sd->last_ns > sd->timeout_ns / 4) {
		if (!sd->until_ns)
			sd->stalls++;
		sd->until_ns = now + sd->timeout_ns;
	}
	sd->last_ns = now;
}

/* After the turn's receive: true holds the timeouts back this turn. */
static inline bool xevb_stall_draining(struct xevb_stall_drain *sd, bool batch_full, uint64_t now)
{
	if (sd->until_ns && (!batch_full || now >= sd->until_ns))
		sd->until_ns = 0;
	return sd->until_ns != 0;
}

#endif

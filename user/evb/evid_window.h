/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Duplicate detection for event ids at a farm node: a bitmap over the last
 * `size` ids below the highest one seen in the run (serial-number order,
 * so wrapping ids work). Events from several builders arrive interleaved
 * and slightly out of order; an id further back than the window cannot be
 * checked and is reported as such rather than guessed at.
 */
#ifndef XEVB_EVID_WINDOW_H
#define XEVB_EVID_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

enum xevb_evid_verdict {
	XEVB_EVID_NEW = 0,
	XEVB_EVID_DUP,     /* seen before in this run */
	XEVB_EVID_TOO_OLD, /* behind the window: not checked */
};

struct xevb_evid_window {
	uint64_t *bits;
	uint32_t size; /* ids covered, a power of 2 */
	uint32_t high; /* highest id seen */
	uint32_t run;
	bool any;
	uint64_t run_changes;
};

/* size rounded up to a power of 2, at least 64. 0 or -ENOMEM. */
int xevb_evid_window_init(struct xevb_evid_window *w, uint32_t size);
void xevb_evid_window_free(struct xevb_evid_window *w);
/* Record id in run; a new run number starts an empty window. */
enum xevb_evid_verdict xevb_evid_window_add(struct xevb_evid_window *w, uint32_t run, uint32_t id);

#endif

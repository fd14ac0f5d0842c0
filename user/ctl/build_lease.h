/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The builder's lease on DONE and its fence (docs/control-protocol.md
 * "Failure"). The builder stamps each STATUS to the DFM with its own
 * monotonic time; the DFM echoes the newest stamp it heard with its
 * --dead-ms. The DFM cannot take the builder for dead before stamp +
 * dead_ms (by the builder's clock), so a DONE sent before stamp + 3/4
 * dead_ms reaches it in time if it takes less than dead_ms / 4 on the way.
 * Outside its lease the builder holds its DONEs, and the built events with
 * them (their data leaves only after their DONE). A DFM that took it for
 * dead says it no longer knows its epoch: it drops what it holds without
 * a DONE sent (the DFM gave those events to others) and starts anew.
 */
#ifndef XEVB_BUILD_LEASE_H
#define XEVB_BUILD_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"

struct build_lease {
	uint64_t until;            /* DONEs may leave before this (our clock), once on */
	bool on;                   /* the DFM echoes a lease (one that predates it does not) */
	bool known;                /* the DFM's STATUS named our epoch (this DFM epoch) */
	struct xevb_ctl_done *rec; /* DONEs not sent yet, in order */
	uint8_t *first;            /* per record: the event's first DONE (its data waits with it) */
	uint32_t n, cap;
	/* counters: fences (new incarnations), events dropped there (assigned
	   and open; built with their DONE held), built later and dropped,
	   lease ran out (times), DONE records that could not be held */
	uint64_t fences, fenced_open, fenced_built, fenced_late, expired, hold_failed;
	uint64_t regained; /* fenced, then given back to this builder by the DFM */
};

void build_lease_free(struct build_lease *l);
/* The DFM's echo of our stamp and its --dead-ms (0 0: a DFM without the lease). */
void build_lease_echo(struct build_lease *l, uint64_t stamp, uint32_t dead_ms);
/* Whether DONEs may leave now. */
bool build_lease_ok(struct build_lease *l, uint64_t now);
/* One DONE to send; false when it could not be held (out of memory: counted). */
bool build_lease_add(struct build_lease *l, const struct xevb_ctl_done *r, bool first);

#endif

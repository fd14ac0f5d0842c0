// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stall drain (xevb/stall_drain.h): after a gap in the receive loop of
 * over a quarter of the timeout, timeouts wait while batches come full,
 * until a batch that is not, or one timeout more; no gap, no waiting.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "evb/stall_drain.h"

#define MS 1000000ull

Test(stall_drain, no_gap_never_holds_timeouts)
{
	struct xevb_stall_drain sd = { .timeout_ns = 1000 * MS };

	for (uint64_t t = 1; t < 2000; t++) {
		xevb_stall_drain_begin(&sd, t * MS);
		cr_assert(not(xevb_stall_draining(&sd, true, t * MS)), "turn at %llu ms", (unsigned long long)t);
	}
	cr_assert(eq(u64, sd.stalls, 0));
}

Test(stall_drain, gap_holds_until_a_batch_is_not_full)
{
	struct xevb_stall_drain sd = { .timeout_ns = 300 * MS };
	uint64_t t = 10 * MS;

	xevb_stall_drain_begin(&sd, t);
	cr_assert(not(xevb_stall_draining(&sd, true, t)));
	t += 1000 * MS; /* stopped for a second */
	for (int i = 0; i < 50; i++, t += MS) {
		xevb_stall_drain_begin(&sd, t);
		cr_assert(xevb_stall_draining(&sd, true, t), "full batch %d after the gap", i);
	}
	xevb_stall_drain_begin(&sd, t);
	cr_assert(not(xevb_stall_draining(&sd, false, t)), "the ring drained");
	t += MS;
	xevb_stall_drain_begin(&sd, t);
	cr_assert(not(xevb_stall_draining(&sd, true, t)), "full again, but no new gap");
	cr_assert(eq(u64, sd.stalls, 1));
}

Test(stall_drain, holds_at_most_one_timeout)
{
	struct xevb_stall_drain sd = { .timeout_ns = 100 * MS };
	uint64_t t = MS;

	xevb_stall_drain_begin(&sd, t);
	t += 26 * MS; /* just over a quarter of the timeout */
	xevb_stall_drain_begin(&sd, t);
	cr_assert(xevb_stall_draining(&sd, true, t));
	for (uint64_t end = t + 100 * MS; t < end - MS;) {
		t += MS;
		xevb_stall_drain_begin(&sd, t);
		cr_assert(xevb_stall_draining(&sd, true, t), "still within the timeout at +%llu ms",
			  (unsigned long long)(t / MS));
	}
	t += 2 * MS;
	xevb_stall_drain_begin(&sd, t);
	cr_assert(not(xevb_stall_draining(&sd, true, t)),
		  "a ring that never drains holds timeouts one timeout at most");
}

Test(stall_drain, no_timeout_nothing_to_hold)
{
	struct xevb_stall_drain sd = { .timeout_ns = 0 };

	xevb_stall_drain_begin(&sd, MS);
	xevb_stall_drain_begin(&sd, 5000 * MS);
	cr_assert(not(xevb_stall_draining(&sd, true, 5000 * MS)));
	cr_assert(eq(u64, sd.stalls, 0));
}

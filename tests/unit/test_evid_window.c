// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "evb/evid_window.h"

TestSuite(evid_window, .timeout = 10);

Test(evid_window, new_dup_and_too_old)
{
	/* Run 1: each id in turn and what the window says of it. */
	static const struct {
		uint32_t id;
		enum xevb_evid_verdict want;
	} seq[] = {
		{ 1000, XEVB_EVID_NEW },
		{ 1000, XEVB_EVID_DUP },
		/* Out of order within the window. */
		{ 990, XEVB_EVID_NEW },
		{ 1010, XEVB_EVID_NEW },
		{ 990, XEVB_EVID_DUP },
		{ 1005, XEVB_EVID_NEW },
		{ 1005, XEVB_EVID_DUP },
		/* 1010 - 128 = 882 is out of reach. */
		{ 882, XEVB_EVID_TOO_OLD },
		{ 883, XEVB_EVID_NEW },
		/* Advance by less than the window: 990 still known, 1000 too. */
		{ 1100, XEVB_EVID_NEW },
		{ 1000, XEVB_EVID_DUP },
		{ 1050, XEVB_EVID_NEW },
		/* A slot reused by a newer id is not a duplicate of the old one. */
		{ 1000 + 128, XEVB_EVID_NEW },
		{ 1000, XEVB_EVID_TOO_OLD },
		/* A jump past the window forgets everything. */
		{ 100000, XEVB_EVID_NEW },
		{ 100000 - 5, XEVB_EVID_NEW },
	};
	struct xevb_evid_window w;

	cr_assert(eq(int, xevb_evid_window_init(&w, 100), 0));
	cr_assert(eq(u32, w.size, 128));
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		cr_assert(eq(int, xevb_evid_window_add(&w, 1, seq[i].id), seq[i].want), "step %zu: id %u", i,
			  seq[i].id);
	/* A new run starts afresh. */
	cr_assert(eq(int, xevb_evid_window_add(&w, 2, 100000), XEVB_EVID_NEW));
	cr_assert(eq(u64, w.run_changes, 1));
	xevb_evid_window_free(&w);
}

Test(evid_window, wraps_and_every_id_once)
{
	struct xevb_evid_window w;
	cr_assert(eq(int, xevb_evid_window_init(&w, 1024), 0));
	/* Ids across the 2^32 wrap, in blocks delivered in reverse order. */
	for (uint32_t blk = 0; blk < 64; blk++)
		for (int k = 15; k >= 0; k--) {
			uint32_t id = 0xffffff00u + blk * 16 + (uint32_t)k;
			cr_assert(eq(int, xevb_evid_window_add(&w, 7, id), XEVB_EVID_NEW), "id %u", id);
		}
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t id = 0xffffff00u + 1023 - i;
		cr_assert(eq(int, xevb_evid_window_add(&w, 7, id), XEVB_EVID_DUP), "id %u", id);
	}
	xevb_evid_window_free(&w);
}

// SPDX-License-Identifier: GPL-2.0-only
/* The control plane's peer tables (user/ctl/peer_map.h): lookups stay exact through any churn. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include "ctl/peer_map.h"

#define N 4096

/* Random puts and deletes of keys that collide in the low bits, against a plain array. */
Test(peer_map, churn_matches_a_reference)
{
	static int64_t ref[2 * N];
	struct peer_map m;
	uint32_t seed = 12345, live = 0;

	cr_assert(eq(int, peer_map_init(&m, N), 0));
	for (uint32_t k = 0; k < 2 * N; k++)
		ref[k] = -1;
	for (uint32_t step = 0; step < 200000; step++) {
		uint32_t k, r;
		seed = seed * 1103515245u + 12345u;
		r = seed >> 8;
		k = r % (2 * N);
		if (r & 0x10000 && ref[k] < 0 && live < N) {
			cr_assert(peer_map_put(&m, peer_key(0x0a000000u + (k << 8), (uint16_t)k), step));
			ref[k] = step;
			live++;
		} else if (!(r & 0x10000) && ref[k] >= 0) {
			peer_map_del(&m, peer_key(0x0a000000u + (k << 8), (uint16_t)k));
			ref[k] = -1;
			live--;
		}
		if (step % 997 == 0)
			for (uint32_t j = 0; j < 2 * N; j++)
				cr_assert(eq(i64, peer_map_get(&m, peer_key(0x0a000000u + (j << 8), (uint16_t)j)),
					     ref[j]));
	}
	cr_assert(eq(u32, m.n, live));
	peer_map_free(&m);
}

/* Full at max entries: the next key is refused, a known one is still updated. */
Test(peer_map, bounded)
{
	struct peer_map m;

	cr_assert(eq(int, peer_map_init(&m, 3), 0));
	for (uint32_t i = 0; i < 3; i++)
		cr_assert(peer_map_put(&m, peer_key(1, (uint16_t)i), i));
	cr_assert(not(peer_map_put(&m, peer_key(1, 9), 9)));
	cr_assert(peer_map_put(&m, peer_key(1, 2), 7));
	cr_assert(eq(i64, peer_map_get(&m, peer_key(1, 2)), 7));
	cr_assert(eq(i64, peer_map_get(&m, peer_key(1, 9)), -1));
	peer_map_free(&m);
}

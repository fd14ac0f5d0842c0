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

/*
 * A map for millions (the DFM's farm-node pairs) starts small and doubles
 * as entries come: 100,000 keys, every one found after each growth, the
 * table at most half full, deletes still exact; its max still refuses.
 */
Test(peer_map, grows_to_its_max)
{
	const uint32_t n = 100000;
	struct peer_map m;

	cr_assert(eq(int, peer_map_init(&m, 1u << 22), 0));
	cr_assert(le(u32, m.mask + 1, 2 * PEER_MAP_START), "starts small");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t key = ((uint64_t)(i % 1024) << 32) | (0xc6120000u + i / 1024);
		cr_assert(peer_map_put(&m, key, i));
		cr_assert(le(u32, 2 * m.n, m.mask + 1));
		if ((i & (i + 1)) == 0) /* after each power of two: every key so far */
			for (uint32_t j = 0; j <= i; j++)
				cr_assert(eq(i64,
					     peer_map_get(&m,
							  ((uint64_t)(j % 1024) << 32) | (0xc6120000u + j / 1024)),
					     j));
	}
	for (uint32_t i = 0; i < n; i += 2)
		peer_map_del(&m, ((uint64_t)(i % 1024) << 32) | (0xc6120000u + i / 1024));
	for (uint32_t i = 0; i < n; i++)
		cr_assert(eq(i64, peer_map_get(&m, ((uint64_t)(i % 1024) << 32) | (0xc6120000u + i / 1024)),
			     i % 2 ? (int64_t)i : -1));
	cr_assert(eq(u32, m.n, n / 2));
	peer_map_free(&m);

	cr_assert(eq(int, peer_map_init(&m, 5000), 0));
	for (uint32_t i = 0; i < 5000; i++)
		cr_assert(peer_map_put(&m, i, i));
	cr_assert(not(peer_map_put(&m, 5000, 5000)), "its max");
	peer_map_free(&m);
}

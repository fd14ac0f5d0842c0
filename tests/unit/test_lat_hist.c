// SPDX-License-Identifier: GPL-2.0-only
/* The sink's latency histogram: buckets, bounds and percentiles. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "base/lat_hist.h"

/* Every value lies in its bucket, within 12.5% above its low end. */
Test(lat_hist, every_value_in_its_bucket)
{
	for (uint64_t v = 0; v < 100000; v++) {
		uint32_t b = xevb_lat_bucket(v);
		cr_assert(lt(u32, b, XEVB_LAT_BUCKETS));
		cr_assert(le(u64, xevb_lat_bucket_low(b), v), "value %llu", (unsigned long long)v);
		cr_assert(gt(u64, xevb_lat_bucket_low(b + 1), v), "value %llu", (unsigned long long)v);
		cr_assert(le(u64, (xevb_lat_bucket_low(b + 1) - xevb_lat_bucket_low(b)) * 8,
			     xevb_lat_bucket_low(b) + 8));
	}
	cr_assert(eq(u32, xevb_lat_bucket(UINT64_MAX), XEVB_LAT_BUCKETS - 1));
	for (uint32_t b = 1; b < XEVB_LAT_BUCKETS; b++)
		cr_assert(gt(u64, xevb_lat_bucket_low(b), xevb_lat_bucket_low(b - 1)));
}

Test(lat_hist, percentiles_bound_the_true_value)
{
	static struct xevb_lat_hist h;

	cr_assert(eq(u64, xevb_lat_quantile(&h, 0.99), 0));
	/* 1..1000 us: p50 500 us, p99 990 us, max 1000 us */
	for (int64_t us = 1; us <= 1000; us++)
		xevb_lat_add(&h, us * 1000);
	xevb_lat_add(&h, -5); /* a clock step back counts as 0 */
	cr_assert(eq(u64, h.total, 1001));
	uint64_t p50 = xevb_lat_quantile(&h, 0.5), p99 = xevb_lat_quantile(&h, 0.99);
	uint64_t p100 = xevb_lat_quantile(&h, 1.0);
	cr_assert(all(ge(u64, p50, 500000), le(u64, p50, 500000 * 9 / 8)), "p50 %llu", (unsigned long long)p50);
	cr_assert(all(ge(u64, p99, 990000), le(u64, p99, 990000 * 9 / 8)), "p99 %llu", (unsigned long long)p99);
	cr_assert(all(ge(u64, p100, 1000000), le(u64, p100, 1000000 * 9 / 8)));
	cr_assert(eq(u64, xevb_lat_quantile(&h, 0.0001), 0), "the lowest value is the 0 of the step back");
}

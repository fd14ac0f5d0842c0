/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A latency histogram for percentiles at a per-event cost of one count:
 * log-linear buckets, 8 per power of two (an upper bound at most 12.5% above
 * the true value), from 1 ns to 2^64 ns, in a fixed 4 KiB array.
 */
#ifndef XEVB_LAT_HIST_H
#define XEVB_LAT_HIST_H

#include <stdint.h>

#define XEVB_LAT_SUB_BITS 3
#define XEVB_LAT_SUB      (1u << XEVB_LAT_SUB_BITS)
#define XEVB_LAT_BUCKETS  ((64 - XEVB_LAT_SUB_BITS + 1) * XEVB_LAT_SUB)

struct xevb_lat_hist {
	uint64_t n[XEVB_LAT_BUCKETS];
	uint64_t total;
};

static inline uint32_t xevb_lat_bucket(uint64_t ns)
{
	uint32_t p;

	if (ns < XEVB_LAT_SUB)
		return (uint32_t)ns;
	p = 63u - (uint32_t)__builtin_clzll(ns); /* >= XEVB_LAT_SUB_BITS */
	return (p - XEVB_LAT_SUB_BITS + 1) * XEVB_LAT_SUB +
	       (uint32_t)((ns >> (p - XEVB_LAT_SUB_BITS)) & (XEVB_LAT_SUB - 1));
}

/* The smallest value of bucket b. */
static inline uint64_t xevb_lat_bucket_low(uint32_t b)
{
	uint32_t p = b / XEVB_LAT_SUB, sub = b % XEVB_LAT_SUB;

	if (p == 0)
		return sub;
	return (uint64_t)(XEVB_LAT_SUB + sub) << (p - 1);
}

static inline void xevb_lat_add(struct xevb_lat_hist *h, int64_t ns)
{
	h->n[xevb_lat_bucket(ns > 0 ? (uint64_t)ns : 0)]++;
	h->total++;
}

/*
 * The q-quantile (0 < q <= 1) as the upper end of its bucket (the next
 * bucket's low end, minus 1): never below the true value. 0 when empty.
 */
static inline uint64_t xevb_lat_quantile(const struct xevb_lat_hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->total)
		return 0;
	want = (uint64_t)(q * (double)h->total + 0.999999);
	if (want < 1)
		want = 1;
	for (uint32_t b = 0; b < XEVB_LAT_BUCKETS; b++) {
		seen += h->n[b];
		if (seen >= want)
			return b + 1 < XEVB_LAT_BUCKETS ? xevb_lat_bucket_low(b + 1) - 1 : UINT64_MAX;
	}
	return UINT64_MAX;
}

#endif

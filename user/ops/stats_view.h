/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb stats` beyond the summary: every counter as a flat name/value
 * list (snapshot, AF_XDP sockets per queue, the XDP program's per-CPU
 * counters read from its map), printed with per-second rates.
 */
#ifndef XEVB_CMD_STATS_VIEW_H
#define XEVB_CMD_STATS_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ops/report.h"

#define STATS_MAX_CPUS 256

struct stats_percpu {
	int ncpu; /* 0: not available */
	struct xevb_xdp_ctr v[XEVB_XDP__SLOTS][STATS_MAX_CPUS];
};

struct stats_kv {
	char name[64];
	uint64_t v;
};

/* Find the counters map of the XDP program on dev (this namespace) and read it. */
int stats_percpu_read(const char *dev, struct stats_percpu *pc, char *why, size_t whylen);
/* Every counter, flat; returns the count (at most max). */
size_t stats_flatten(const struct xevb_snapshot *s, const struct stats_percpu *pc, struct stats_kv *out,
		     size_t max);
/* Per-queue sockets and per-CPU XDP tables, after xevb_report_summary. */
void stats_print_detail(FILE *f, const struct xevb_snapshot *s, const struct stats_percpu *pc);
/* A flattened snapshot (stats_flatten): kv[0..n). */
struct stats_list {
	const struct stats_kv *kv;
	size_t n;
};
/*
 * name value rate/s for each counter of cur, rates against prev over dt
 * seconds (prev.kv NULL: no rates); text shows the non-zero ones, json all.
 */
void stats_print_all(FILE *f, struct stats_list cur, struct stats_list prev, double dt, bool json);

#endif

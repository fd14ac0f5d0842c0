/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A builder's statistics in one snapshot: builder core, XDP program,
 * AF_XDP sockets, socket path and output. The builder publishes it once a
 * second in /run/xevb/<netns>-<ifname>.stats (a mapped file, so `xevb
 * stats` reads a running builder without asking it anything), and prints
 * it as the final summary.
 */
#ifndef XEVB_REPORT_H
#define XEVB_REPORT_H

#include <stdio.h>
#include "evb/builder.h"
#include "out/output.h"
#include <xevb/shed.h>
#include <xevb/xdp_stats.h>
#include "rx/xsk_rx.h"

#define XEVB_SNAP_MAGIC 0x58455653u /* "XEVS" */
/*
 * 2: drop reason FUTURE, jumps, seq_resets; 3: XDP slots shed,
 * shed_ref_source; shed_*; 4: no rx_digest*, no XDP slot trim_failed;
 * 5: wire format 1.1: XDP slots segment, malformed_segment_*, drop reason
 * PARTIAL, segs_* and the segmented fragments' counters; 6: rx_ipfrag_*;
 * 7: shed_guard_*; 8: the counters laid out by their table (counters.h).
 */
#define XEVB_SNAP_VERSION 8

struct xevb_snapshot {
	uint32_t magic;
	uint32_t version;
	int32_t pid;
	uint32_t xdp_mode; /* 1: AF_XDP path, 0: socket path */
	uint64_t start_ns; /* CLOCK_MONOTONIC */
	uint64_t update_ns;
	uint64_t seq; /* odd while being written */
	char ifname[32];
	uint32_t n_queues;
	uint32_t n_sources;
	/* The receive loop's counters (include/xevb/counters.h) */
	XEVB_RX_COUNTERS(XEVB_CTR_FIELD)
	struct xevb_xdp_ctr xdp[XEVB_XDP__SLOTS];
	struct xevb_xsk_stats xsk[XEVB_XSK_MAX_QUEUES];
	struct xevb_output_stats out;
	struct xevb_builder_stats core;
	/*
	 * Whole-event shedding (shed.h): 0 when off (--tune no-shed=1, --dfm, or no
	 * XDP program). On the socket path it means the steering program runs
	 * in pass mode in front of the socket, and xdp[] holds its counters.
	 */
	uint32_t shed_on;
	uint32_t shed_accept;     /* level for new blocks now, of 65536 */
	uint32_t shed_min_accept; /* lowest level set */
	uint32_t shed_ref_source; /* the source the shed_ref_source slot counts */
	uint64_t shed_cuts, shed_raises;
	uint64_t shed_cuts_by[XEVB_SHED_CUT__N]; /* by cause (shed.h) */
	/* The XDP ring guard (shed.h): its limit (0: off) and the blocks it judged. */
	uint32_t shed_guard_limit;
	uint32_t shed_guard_pad;
	uint64_t shed_guard_refused, shed_guard_admitted, shed_guard_vouched;
};

/* One line of rates between two snapshots, xdp-bench style. */
void xevb_report_line(FILE *f, const struct xevb_snapshot *now, const struct xevb_snapshot *prev);
/* The whole picture, with the accounting check. */
void xevb_report_summary(FILE *f, const struct xevb_snapshot *s);
void xevb_report_json(FILE *f, const struct xevb_snapshot *s);

#endif

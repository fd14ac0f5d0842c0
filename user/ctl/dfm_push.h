/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Push mode: the sources' copy of the DFM's assignments. New blocks to a
 * builder the sources can name by id (listed in BUILDERS, its id unique)
 * go as ROUTE, a dense table of 708 blocks a datagram; anything else
 * (a re-assignment off a dead builder, a builder not yet listed, a block
 * of another size) as copies of the ASSIGN records, 72 a datagram. A
 * re-assignment leaves only after every block pending before it, so a
 * source never learns an event's first builder after its second. No
 * socket: the messages leave through the send callback (one call sends
 * to every live source process).
 */
#ifndef XEVB_DFM_PUSH_H
#define XEVB_DFM_PUSH_H

#include <stdbool.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"
#include "ctl/dfm.h"

/* A builder the BUILDERS list named, by its index at the DFM (what ROUTE names). */
struct dfm_push_name {
	uint32_t addr;
	uint16_t port;
	bool now, before; /* in the list being built; in the one before */
	bool routable;    /* in both lists, at the same address and port */
};

struct dfm_push {
	struct xevb_ctl_msg route; /* pending ROUTE */
	struct xevb_ctl_msg copy;  /* pending ASSIGN copies */
	uint64_t first_ns;         /* when the oldest pending block came */
	uint32_t block;            /* events per block of the run */
	uint64_t routes, copies;   /* messages sent (each to every source) */
	uint64_t route_blocks, copy_blocks;
	void (*send)(void *ctx, struct xevb_ctl_msg *m);
	void *ctx;
	bool assign_only; /* --no-route: ASSIGN copies only */
	struct dfm_push_name name[XEVB_DFM_MAX_BUILDERS];
};

void dfm_push_init(struct dfm_push *p, uint32_t block, void (*send)(void *, struct xevb_ctl_msg *), void *ctx);
/*
 * The BUILDERS list as it is built: begin, each builder listed (its index
 * at the DFM), end. A builder becomes routable once two lists in a row
 * named it at one address and port: a source that lost one list part
 * still maps the index (it keeps a name for 2 s), and an index given to a
 * newcomer is not routed until the sources can have heard so.
 */
void dfm_push_list_begin(struct dfm_push *p);
void dfm_push_list_add(struct dfm_push *p, uint32_t bi, uint32_t addr, uint16_t port);
void dfm_push_list_end(struct dfm_push *p);

bool dfm_push_routable(const struct dfm_push *p, uint32_t bi);

/* One ASSIGN (not a RETRY) for the sources, to builder bi (its index at the DFM). */
void dfm_push_add(struct dfm_push *p, const struct xevb_ctl_assign *as, uint32_t bi, uint64_t now);
/* Send what is pending (before a CLEAR, at the flush interval, at the end). */
void dfm_push_flush(struct dfm_push *p);
/* Something pending for interval_ns or longer. */
bool dfm_push_due(const struct dfm_push *p, uint64_t now, uint64_t interval_ns);

#endif

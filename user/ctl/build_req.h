/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The builder's requests to the sources (pull mode, and re-asks in either
 * mode): the source processes the DFM's SOURCES names, and one REQUEST
 * datagram pending per process, filled record by record (a block stays
 * one record) and sent when full or at the flush that ends a tick.
 */
#ifndef XEVB_BUILD_REQ_H
#define XEVB_BUILD_REQ_H

#include <netinet/in.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"
#include "ctl/ctl_sock.h"
#include "evb/builder.h"

#define BUILD_REQ_MAX_SRCP 256

struct build_srcp { /* a source process, from the DFM's SOURCES */
	struct sockaddr_in sa;
	uint16_t first_id, n_ids;
	struct xevb_ctl_msg rq; /* REQUESTs pending for it */
	uint64_t unsolicited;   /* fragments of events nobody requested, of its ids (pull) */
};

struct build_req {
	struct build_srcp src[BUILD_REQ_MAX_SRCP];
	uint32_t n_srcp;
	uint64_t requests_sent;     /* REQUEST datagrams */
	uint64_t no_source_for;     /* a missing source_id no source process announced */
	uint64_t unsolicited_other; /* unsolicited fragments of ids no source process announced */
};

/* The DFM's SOURCES: each process by its address and port, its ids updated. */
void build_req_on_sources(struct build_req *rq, const struct xevb_ctl_msg *m);
/* Ask every source process for count events from first (flags: XEVB_CTL_RQ_*). */
void build_req_all(struct build_req *rq, struct xevb_ctl_io *io, uint32_t first, uint16_t count, uint8_t flags);
/* Re-ask event for the n source ids in miss: one record per source process however many of its ids. */
void build_req_missing(struct build_req *rq, struct xevb_ctl_io *io, uint32_t event, const uint16_t *miss, int n);
/* Pull: the fragments of an event nobody requested, counted by the source process their ids belong to. */
void build_req_unsolicited(struct build_req *rq, const struct xevb_event *ev);
/* Send every pending REQUEST. */
void build_req_flush(struct build_req *rq, struct xevb_ctl_io *io);

#endif

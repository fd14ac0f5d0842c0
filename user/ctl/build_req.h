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
#include <stdbool.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"
#include "ctl/ctl_sock.h"
#include "ctl/peer_map.h"
#include "evb/builder.h"

/* One source process per source id at most (ids 0..4095). */
#define BUILD_REQ_MAX_SRCP 4096

struct build_srcp { /* a source process, from the DFM's SOURCES */
	struct sockaddr_in sa;
	uint16_t first_id, n_ids;
	bool pending;           /* on the list of processes with REQUESTs to send */
	struct xevb_ctl_msg rq; /* REQUESTs pending for it */
	uint64_t unsolicited;   /* fragments of events nobody requested, of its ids (pull) */
};

/* Sized at start (build_req_init): the pages of processes never named stay untouched. */
struct build_req {
	struct build_srcp *src;
	uint32_t n_srcp;
	struct peer_map map;        /* processes by address and port */
	uint16_t *owner;            /* by source id: 1 + its process, 0: none announced */
	uint32_t *pend, n_pend;     /* processes with REQUESTs pending */
	uint64_t requests_sent;     /* REQUEST datagrams */
	uint64_t no_source_for;     /* a missing source_id no source process announced */
	uint64_t srcp_full;         /* SOURCES records beyond the table, ignored */
	uint64_t unsolicited_other; /* unsolicited fragments of ids no source process announced */
};

/* 0, or -1 (out of memory). */
int build_req_init(struct build_req *rq);
void build_req_free(struct build_req *rq);
/* A part of the DFM's SOURCES: each process by its address and port, its ids updated. */
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

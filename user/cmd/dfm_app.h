/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb dfm`'s state, shared by its event loop (cmd_dfm.c) and its end-of-run
 * summary (dfm_summary.c): the DFM's rules and books, the source processes,
 * the queues of messages out.
 */
#ifndef XEVB_CMD_DFM_APP_H
#define XEVB_CMD_DFM_APP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include "ctl/ctl_batch.h"
#include "ctl/ctl_sock.h"
#include "ctl/dfm.h"
#include "ctl/dfm_books.h"
#include "ctl/dfm_push.h"
#include "ctl/peer_map.h"
#include "cmd/cmd_opts.h"
#include "cmd/dfm_fanout.h"
#include "cmd/dfm_live.h"

/* Datagrams a list of n records of rlen bytes takes (sealed or not): lists span datagrams. */
#define LIST_PARTS(n, rlen) ((n) / ((XEVB_CTL_MAX_LEN - 24 - XEVB_CTL_HLEN) / (rlen)) + 1)

struct src_peer {
	struct sockaddr_in sa;
	uint32_t epoch;
	uint16_t first_id, n_ids;
	uint64_t last_ns, status_n, answered;
	uint32_t held, credits;
	bool alive;
};

struct dfm_app {
	struct xevb_ctl_io io;
	struct xevb_dfm *d;
	bool pull;
	struct src_peer src[DFM_MAX_SOURCES];
	uint32_t n_src;
	struct peer_map srcmap;                          /* source processes by address and port */
	struct xevb_ctl_msg bmsg[XEVB_DFM_MAX_BUILDERS]; /* ASSIGNs pending per builder */
	struct dfm_push push;                            /* push: the sources' copy (ROUTE, ASSIGN) */
	uint64_t src_timeouts, unexpected;
	uint32_t hb_n;                                /* heartbeats sent */
	uint64_t src_per_addr, src_full, src_expired; /* source STATUS refused / dead entries reused */
	uint32_t max_per_addr;                        /* --max-per-address */
	/* Push: the copy of the assignments for the sources leaves when full
	   or this long after its first block (--push-us), not every round:
	   each copy is one datagram per source process. */
	uint64_t push_ns;
	bool sources_changed;
	bool books_closed;              /* the run is over and the farm nodes' counts are in */
	struct dfm_books_verdict books; /* ... and who is named for what (dfm_books.h) */
	uint64_t all_gone_ns;           /* since when no builder is alive (0: some is) */
	bool builders_left;             /* every builder left mid-run: the run failed */
	/* The lists of the last heartbeat, each in as many datagrams as it takes. */
	struct xevb_ctl_msg src_list[LIST_PARTS(DFM_MAX_SOURCES, XEVB_CTL_SRC_RLEN)];
	struct xevb_ctl_msg bld_list[LIST_PARTS(XEVB_DFM_MAX_BUILDERS, XEVB_CTL_BLD_RLEN)];
	uint32_t n_src_list, n_bld_list;
	struct dfm_fanout fan;   /* to every source: a slice a round */
	struct dfm_fanout bfan;  /* to every builder: heartbeats (probes) and the SOURCES lists */
	struct xevb_ctl_txq txq; /* datagrams leave in batches (sendmmsg) at the end of a round */
	struct xevb_ctl_rxq rxq; /* and come in batches (recvmmsg) */
	struct dfm_live live;    /* checks of silent builders' hosts */
	/* For the summary: where the run's ids began, and whether it took over from a dead DFM. */
	uint32_t first_event, prev_epoch;
	bool resumed;
};

uint32_t dfm_alive_builders(const struct dfm_app *a);
uint32_t dfm_alive_sources(const struct dfm_app *a);
/* The statistics line (--interval): t seconds into the run; *last_trig: the count at the line before. */
void dfm_stats_line(struct dfm_app *a, double t, uint64_t *last_trig);
/* The end of the run: the books, latencies, builders and control counts; --json also on stdout. */
void dfm_summary(struct dfm_app *a, double el, bool ok, bool json);

#endif

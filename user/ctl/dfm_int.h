/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The data-flow manager's state, for its own files only (dfm.c: the
 * events and the builders; dfm_farm.c: the books at the farm nodes, what
 * they received and what the builders say they sent them). Everyone
 * else goes through dfm.h.
 */
#ifndef XEVB_DFM_INT_H
#define XEVB_DFM_INT_H

#include <stdint.h>
#include "ctl/dfm.h"
#include "ctl/dfm_slots.h"
#include "ctl/peer_map.h"

/* What one farm node received from one builder address, and the next pair of that farm node. */
struct farm_pair {
	uint32_t sink, baddr, next; /* next: index + 1, 0: the last */
	uint64_t events;            /* this incarnation's cumulative count */
	uint64_t earlier;           /* what its earlier incarnations received */
};

/* What one builder says it sent one farm-node address, and the next pair of that builder. */
struct fwd_pair {
	uint32_t bi, saddr, next; /* next: index + 1, 0: the last */
	uint64_t events;          /* this incarnation's cumulative count */
	uint64_t earlier;         /* what its earlier incarnations sent */
};

/* What every farm node together received from one address (summed as reports come). */
struct farm_addr {
	uint32_t addr, last_bi, gen;
	uint64_t total, left;
};

struct xevb_dfm {
	struct xevb_dfm_cfg cfg;
	uint32_t mask;
	struct dfm_slot *slots;
	uint32_t oldest, next;
	struct dfm_side side;            /* stragglers moved out of the window */
	uint32_t *rq;                    /* events waiting for re-assignment, FIFO */
	uint32_t rq_head, rq_n, rq_mask; /* entries; an event no longer waiting is skipped */
	uint32_t n_wait;                 /* events waiting (SLOT_WAIT) */
	uint32_t *clr;                   /* finished events not yet cleared */
	uint32_t clr_n, clr_cap;
	uint64_t clr_first_ns;
	uint64_t last_scan_ns;
	uint64_t watch_from; /* silence counts from here at the earliest (xevb_dfm_behind) */
	struct xevb_dfm_builder b[XEVB_DFM_MAX_BUILDERS];
	uint32_t nb;
	struct peer_map bmap; /* builders by address and port */
	struct xevb_dfm_sink *sk;
	uint32_t *sk_pairs; /* per farm node: its first pair (index + 1) */
	uint32_t nsk;
	uint32_t nsk_reporting; /* farm nodes that reported at least once */
	struct peer_map skmap;  /* farm nodes by address and port */
	struct farm_pair *pair;
	uint32_t npair, pair_cap;
	struct peer_map pairmap; /* (farm node, builder address) -> pair */
	struct farm_addr *fa;
	uint32_t nfa, fa_gen;
	struct peer_map famap; /* address -> farm_addr */
	uint64_t received_all; /* every farm node, every address */
	struct fwd_pair *fwd;
	uint32_t *b_fwd; /* per builder: its first pair (index + 1) */
	uint32_t nfwd, fwd_cap;
	struct peer_map fwdmap; /* (builder, farm-node address) -> pair */
	struct xevb_dfm_stats st;
	uint64_t clk_t0;      /* xevb_dfm_trigger_clock */
	double clk_period_ns; /* 0: the trigger time is the step's */
	struct xevb_dfm_lat_stats lat[XEVB_DFM_LAT__COUNT];
};

/* The builder at addr:port, or -1. */
int dfm_find_builder(const struct xevb_dfm *d, uint32_t addr, uint16_t port);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control handlers of `xevb source --dfm` (source_dfm.c): ROUTE,
 * ASSIGN, REQUEST (with re-asks), CLEAR, BUILDERS, STATUS and BYE, the held-event
 * table and the builders whose REQUESTs are answered. No socket: the data
 * goes out through the send callback, so tests and fuzzers drive the same
 * handlers the command does.
 */
#ifndef XEVB_SOURCE_CTL_H
#define XEVB_SOURCE_CTL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"

/* Builder addresses known at once (listed, and learned from ASSIGNs): two
   per builder of a DFM's largest table, hashed in a table twice that size. */
#define SRC_CTL_MAX_BUILDERS 2048
#define SRC_CTL_BLD_SLOTS    (2 * SRC_CTL_MAX_BUILDERS)
/* A builder is answered until this long after the DFM last named it: its
   list comes in parts (one datagram each) every 500 ms, so 4 lists in a row
   may be lost. */
#define SRC_CTL_BLD_TTL_NS 2000000000ull
/* Re-asks for events we do not hold, answered per REQUEST at most: the
   answer to a forged REQUEST stays bounded (no amplification). */
#define SRC_CTL_MAX_UNHELD_PER_REQUEST 1024

struct src_ctl_held {
	uint32_t event;
	uint8_t state;
};

struct src_ctl_cfg {
	struct sockaddr_in dfm; /* the DFM: its address and port */
	const char *dfm_name;   /* as given, for messages */
	uint32_t hold;          /* held-event table entries (power of 2) */
	/* Send our fragments of events evs[0..n) to addr (RESEND when resend). */
	void (*send)(void *ctx, uint32_t addr, const uint32_t *evs, uint32_t n, bool resend);
	void *ctx;
};

struct src_ctl {
	struct src_ctl_cfg cfg;
	uint32_t dfm_epoch;
	bool pull_seen, bye;
	struct src_ctl_held *h;
	uint32_t mask, n_held, max_held;
	/* Whose REQUESTs we answer: the builders the DFM listed (BUILDERS) and
	   the addresses ASSIGNs sent us to (port 0: any port there) within
	   SRC_CTL_BLD_TTL_NS; open addressing by (addr, port), an expired
	   entry is reused in place. */
	struct src_ctl_bld {
		uint32_t addr; /* 0: never used */
		uint16_t port;
		uint64_t seen_ns;
	} bld[SRC_CTL_BLD_SLOTS];
	uint32_t n_bld;      /* slots used (live or expired) */
	uint64_t learned_ns; /* the newest list or ASSIGN: the entries' age counts from it */
	uint64_t bld_full;   /* a builder not remembered: every slot live */
	/* Builder ids to addresses, from BUILDERS, for ROUTE (push): open
	   addressing by id, an entry named within SRC_CTL_BLD_TTL_NS. */
	struct src_ctl_rid {
		uint32_t addr; /* 0: never used */
		uint16_t id;
		uint64_t seen_ns;
	} rid[SRC_CTL_BLD_SLOTS];
	uint64_t rid_full;      /* an id not remembered: every slot live */
	uint64_t routes;        /* ROUTE messages taken */
	uint64_t route_unknown; /* ROUTE blocks naming no route index we know (not held, not sent) */
	/* counters */
	uint64_t assigns, assigned_events, requests, requested_events, answered_events;
	uint64_t hold_overflow, not_held, cleared, clear_unknown, released_restart, dfm_restarts, reask_unheld;
	uint64_t unexpected;
	uint64_t rq_unknown;          /* REQUESTs refused: not from a builder we know */
	uint64_t not_dfm;             /* messages as the DFM, not from its address and port */
	uint64_t reask_unheld_capped; /* unheld re-asks over the per-REQUEST bound, not answered */
	uint64_t assign_again;        /* events ASSIGNed again (re-assigned off a dead builder): sent again */
	uint64_t warn_ns;
	uint32_t mark;         /* the DFM's clear mark, as last applied */
	bool mark_set;         /* one applied since the DFM (re)started */
	uint64_t cleared_mark; /* of cleared: by the mark (their CLEAR lost, or none came) */
};

/* 0, or -1 after a message (out of memory). */
int src_ctl_init(struct src_ctl *sc, const struct src_ctl_cfg *cfg);
void src_ctl_free(struct src_ctl *sc);
/* One message the control endpoint took (decoded, opened, admitted), from from. */
void src_ctl_on_msg(struct src_ctl *sc, const struct xevb_ctl_msg *m, const struct sockaddr_in *from);
/* Whether a REQUEST from addr:port (network order) would be answered. */
bool src_ctl_known_builder(const struct src_ctl *sc, uint32_t addr, uint16_t port);
/* Builders the DFM lists, answered now (a scan: for summaries). */
uint32_t src_ctl_builders_known(const struct src_ctl *sc);
/* The hold table's books (tests, fuzzers); false with what disagrees in msg. */
bool src_ctl_check(const struct src_ctl *sc, char *msg, size_t cap);

#endif

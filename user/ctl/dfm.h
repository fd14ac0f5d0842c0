/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The data-flow manager's logic, free of sockets and clocks so that every
 * rule can be unit tested: it triggers events, assigns them in blocks to
 * builders that have credit and are not Busy (weighted by their credits),
 * collects DONE, batches clears for the sources, detects dead builders
 * (silence longer than dead_ns, or a new epoch) and re-assigns their events
 * (push and pull: the sources hold the data until CLEAR), and keeps the books:
 *
 *   triggered = complete + incomplete + sum(lost[reason]) - no_data_recovered + outstanding
 *
 * (no_data_recovered: events given up as no_data, then built after all:
 * counted lost and then complete or incomplete, as every counter here
 * only grows)
 * at every moment (xevb_dfm_check), outstanding = 0 after xevb_dfm_stop.
 * Messages leave through the callbacks; the caller batches and sends them.
 *
 * The books close at the farm nodes: they report (RECEIVED) how many events
 * each builder address delivered to them, and xevb_dfm_reconcile sets every
 * builder's received and not_delivered = DONE (complete + incomplete) that
 * no farm node got. Farm nodes know builders by IPv4 address only: builders
 * sharing an address are reconciled together. The counts are summed per
 * address as the reports come, so reconciling costs O(builders), not
 * O(farm nodes x builders).
 */
#ifndef XEVB_DFM_H
#define XEVB_DFM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/lat_hist.h"
#include "ctl/ctl_proto.h"
#include "ctl/liveness.h"

#define XEVB_DFM_MAX_BUILDERS 1024
#define XEVB_DFM_MAX_SINKS    4096
/* (farm node, builder address) pairs whose counts the DFM keeps (every
   builder at every farm node; memory taken as pairs appear, 48 bytes
   each), and the addresses they name. */
#define XEVB_DFM_MAX_FARM_PAIRS (XEVB_DFM_MAX_BUILDERS * XEVB_DFM_MAX_SINKS)
#define XEVB_DFM_MAX_FARM_ADDRS (1u << 14)

enum xevb_dfm_lost {
	XEVB_LOST_BUILDER_DEAD =
		0, /* never since dead builders' events are re-assigned in push too; kept in the books' format */
	XEVB_LOST_NO_DATA, /* the builder got no fragment at all */
	XEVB_LOST_NO_DONE, /* no DONE after every retry, builder alive */
	XEVB_LOST_AT_STOP, /* still outstanding when the DFM stopped */
	XEVB_LOST__COUNT
};

struct xevb_dfm_cfg {
	bool pull;
	uint32_t block; /* events per assignment, 1..1024 (the packing) */
	uint32_t first_event, run;
	uint32_t table;          /* events in flight at most; power of 2 */
	uint64_t dead_ns;        /* silence after which a builder is dead */
	uint64_t retry_ns;       /* resend ASSIGN to a builder when no DONE by then */
	uint64_t retry_first_ns; /* the first RETRY sooner (0: at retry_ns), see xevb_dfm_poll */
	uint32_t max_retries;    /* then, at retry_ns, the event is lost (NO_DONE) */
	uint32_t clear_group;    /* events per CLEAR batch (ClearGroupSize) */
	uint32_t max_per_addr;   /* builders alive at one IP address at most (0: 8) */
	uint64_t clear_flush_ns; /* a partial batch leaves after this long */
	void (*send_assign)(void *ctx, uint32_t builder, const struct xevb_ctl_assign *a);
	void (*send_clear)(void *ctx, const struct xevb_ctl_range *r, uint32_t n);
	/* Optional: a datagram to builder bi silent for probe_ns (every probe_ns
	   at most): if its process is gone, its host answers port unreachable
	   (xevb_dfm_unreachable) long before dead_ns. */
	void (*probe)(void *ctx, uint32_t builder);
	uint64_t probe_ns;
	/* Optional: a builder that listens (XEVB_CTL_ST_LISTEN) silent for
	   dead_ns has its host asked (ctl/liveness.h), every poll until it
	   answers: PENDING or UP keep it alive until hung_ns of silence,
	   REFUSED or NO_ANSWER make it dead. check_end: it spoke or died. */
	enum xevb_live (*check)(void *ctx, uint32_t builder, uint64_t now);
	void (*check_end)(void *ctx, uint32_t builder);
	uint64_t hung_ns;
	void *ctx;
};

struct xevb_dfm_builder {
	uint32_t addr; /* network order */
	uint16_t port; /* host order */
	uint16_t id;
	uint32_t epoch;
	uint32_t credits;
	uint32_t outstanding;
	bool busy, alive;
	bool listens;  /* it says its control port takes TCP (XEVB_CTL_ST_LISTEN) */
	bool checking; /* silent past dead_ns, its host being asked (cfg.check) */
	bool found_up; /* ... and its host answered in this silence */
	uint64_t last_ns;
	int64_t wrr;
	uint64_t assigned, complete, incomplete, no_data, lost, reassigned_away;
	uint64_t no_data_recovered; /* of no_data: built after all, in complete or incomplete too */
	uint64_t deaths, rejoins, restarts, busy_on, retries;
	uint64_t max_silent_ns; /* the longest it went unheard while alive (what --dead-ms must exceed) */
	uint64_t stalls;        /* silences past dead_ns its host answered for, and it spoke again */
	uint64_t probe_ns;      /* last probe sent (cfg.probe) */
	uint64_t dead_after_ns; /* at its last death: how long it had been silent */
	/* Set by xevb_dfm_reconcile: events of its address the farm nodes
	   received, and DONE ones none of them did (so far; at the end: lost). */
	uint64_t received, not_delivered;
	/* What it says it sent the farm nodes (FORWARDED), all of them, its
	   incarnations together; fwd_reports 0: it never said. */
	uint64_t sent, fwd_reports;
	uint32_t fwd_epoch;
};

/* A farm node that reports RECEIVED, and its latest counts per builder address. */
struct xevb_dfm_sink {
	uint32_t addr; /* network order */
	uint16_t port; /* host order */
	uint32_t epoch;
	uint64_t last_ns, reports, restarts;
	uint32_t n;         /* builder addresses it reported (at most XEVB_DFM_MAX_BUILDERS) */
	uint64_t untracked; /* records beyond its addresses or the pair table, dropped */
	bool expected;      /* a farm node of the run configuration: it must report */
	uint16_t id;        /* its configured id (expected only) */
};

struct xevb_dfm_stats {
	uint64_t triggered, complete, incomplete, lost[XEVB_LOST__COUNT];
	uint64_t outstanding;
	uint64_t reassigned;       /* events moved off a dead builder */
	uint64_t retries;          /* ASSIGNs sent again */
	uint64_t done_unknown;     /* DONE for an event not outstanding (late or repeated) */
	uint64_t done_foreign;     /* DONE from a builder the event is not assigned to */
	uint64_t done_repeated;    /* DONE again for an event its builder finished (a RETRY crossed the first) */
	uint64_t done_late_dead;   /* DONE from a builder taken for dead, before its event went elsewhere */
	uint64_t stragglers;       /* events moved to the side table (open while the window moved on) */
	uint64_t dead_silent;      /* builders taken for dead: silent for dead_ns */
	uint64_t dead_unreachable; /* ... their port unreachable (the process is gone) */
	/* Of dead_silent, for builders that listen: what their host answered. */
	uint64_t dead_refused;      /* a reset: the process is gone */
	uint64_t dead_no_answer;    /* nothing: the host is gone (or cut off) */
	uint64_t dead_hung;         /* the host answered, the process said nothing for hung_ns */
	uint64_t stalls;            /* silences past dead_ns the host answered for, and the builder spoke again */
	uint64_t done_unknown_peer; /* DONE from no builder we know */
	uint64_t no_data_recovered; /* of lost NO_DATA: built after all, counted in complete or incomplete too */
	uint64_t stall_no_credit;   /* step found no builder able to take a block */
	uint64_t stall_table;       /* step found the side table full (a quarter of --table stragglers) */
	uint64_t clear_msgs, cleared;
	uint64_t builders_full;     /* STATUS refused: too many builders */
	uint64_t builders_per_addr; /* STATUS refused: --max-per-address builders alive at that address */
	uint64_t builders_expired;  /* dead entries that never took an event, given to a newcomer */
	/* The farm nodes' books (xevb_dfm_reconcile). */
	uint64_t received;         /* events the farm nodes received from our builders */
	uint64_t received_unknown; /* ... from addresses that are no builder of ours */
	uint64_t not_delivered;    /* DONE, never received at a farm node */
	uint64_t sinks_full;       /* RECEIVED refused: too many farm nodes */
	uint64_t fwd_unknown_peer; /* FORWARDED from no builder we know (or an old incarnation) */
	uint64_t fwd_untracked;    /* FORWARDED records beyond the pair table */
};

/*
 * Latencies, per event, in log-linear histograms (lat_hist.h):
 * trigger-to-ASSIGN from the event's trigger (its due time on the trigger
 * clock, xevb_dfm_trigger_clock; without one, the step that triggered it)
 * until its first ASSIGN left for the builder (xevb_dfm_assign_sent), and
 * ASSIGN-to-DONE from then until the DFM read the DONE that finished it
 * (retries and re-assignments included in that wait).
 */
enum xevb_dfm_lat { XEVB_DFM_LAT_TRIGGER_ASSIGN = 0, XEVB_DFM_LAT_ASSIGN_DONE, XEVB_DFM_LAT__COUNT };

struct xevb_dfm_lat_stats {
	struct xevb_lat_hist h; /* ns */
	uint64_t sum_ns;
};

struct xevb_dfm;

struct xevb_dfm *xevb_dfm_new(const struct xevb_dfm_cfg *cfg);
void xevb_dfm_free(struct xevb_dfm *d);

/* A builder's STATUS (heartbeat, credits, Busy). Returns its index or -1. */
int xevb_dfm_on_status(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
		       const struct xevb_ctl_status *st, uint64_t now);
/* The builder at addr:port (port host order): its index, or -1 when none. */
int xevb_dfm_builder_at(const struct xevb_dfm *d, uint32_t addr, uint16_t port);
/* A builder's DONE records. */
void xevb_dfm_on_done(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
		      const struct xevb_ctl_done *r, uint32_t n, uint64_t now);
/* A farm node's RECEIVED records: cumulative counts per builder address. */
void xevb_dfm_on_received(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
			  const struct xevb_ctl_received *r, uint32_t n, uint64_t now);
/*
 * A builder's FORWARDED records: cumulative counts of what it sent per
 * farm-node address (the third number of the books, beside DONE and
 * RECEIVED), taken from its current incarnation only.
 */
void xevb_dfm_on_forwarded(struct xevb_dfm *d, uint32_t addr, uint16_t port, const struct xevb_ctl_hdr *h,
			   const struct xevb_ctl_forwarded *r, uint32_t n);
/*
 * A farm node of the run configuration: it must report RECEIVED for the
 * books to close (its entry exists from the start, reports 0 until it does).
 */
void xevb_dfm_expect_sink(struct xevb_dfm *d, uint32_t addr, uint16_t port, uint16_t id);
/* What farm node ki received from builder address baddr (its incarnations together). */
uint64_t xevb_dfm_sink_from(const struct xevb_dfm *d, uint32_t ki, uint32_t baddr);
/* What every farm node together received from builder address baddr. */
uint64_t xevb_dfm_received_from(const struct xevb_dfm *d, uint32_t baddr);
/* What builder bi says it sent farm-node address saddr; -1 when it never named that address. */
int64_t xevb_dfm_builder_to(const struct xevb_dfm *d, uint32_t bi, uint32_t saddr);
/*
 * The farm-node addresses builder bi named in its FORWARDED, one by one:
 * it = 0 gives the first, then the cursor it returned gives the next; 0
 * at the end. Fills saddr and events.
 */
uint32_t xevb_dfm_builder_fwd(const struct xevb_dfm *d, uint32_t bi, uint32_t it, uint32_t *saddr,
			      uint64_t *events);
/* A datagram to addr:port met ICMP port unreachable: a builder there is dead now. */
void xevb_dfm_unreachable(struct xevb_dfm *d, uint32_t addr, uint16_t port, uint64_t now);
/* A builder said BYE: dead now, its events handled as for a death. */
void xevb_dfm_on_bye(struct xevb_dfm *d, uint32_t addr, uint16_t port, uint64_t now);

/*
 * Re-assign what waits for a builder (pull), then trigger up to max_new new
 * events, whole blocks only, each block to one eligible builder. Returns the
 * events newly triggered.
 */
uint32_t xevb_dfm_step(struct xevb_dfm *d, uint64_t now, uint32_t max_new);
/*
 * The trigger's clock, for trigger-to-ASSIGN: with rate_hz > 0 the k-th
 * event this DFM triggers (k from 0) fell due at t0_ns + (k + 1) / rate_hz,
 * however long it then waited for a builder; with 0, at the step.
 */
void xevb_dfm_trigger_clock(struct xevb_dfm *d, uint64_t t0_ns, double rate_hz);
/*
 * The ASSIGN a (as given to send_assign) left for its builder at now:
 * trigger-to-ASSIGN of its events taken (first assignments; a retry keeps
 * the first send as the start of ASSIGN-to-DONE).
 */
void xevb_dfm_assign_sent(struct xevb_dfm *d, const struct xevb_ctl_assign *a, uint64_t now);
const struct xevb_dfm_lat_stats *xevb_dfm_latency(const struct xevb_dfm *d, enum xevb_dfm_lat which);
const char *xevb_dfm_lat_name(enum xevb_dfm_lat l);
/*
 * The clear mark for the sources' heartbeat: every event before it has
 * left the books and its CLEAR has gone out (a lost CLEAR is repaired by
 * the mark; one still batched holds the mark back, so it is not cleared
 * twice).
 */
uint32_t xevb_dfm_clear_mark(const struct xevb_dfm *d);
/* Could a block be assigned now (some builder alive, not Busy, with credit)? */
bool xevb_dfm_can_assign(const struct xevb_dfm *d);
/*
 * Deaths, retries, clear batches. Call every few milliseconds. A builder
 * silent (no STATUS, no DONE) for dead_ns while the DFM was polling is
 * dead. An event without DONE is asked again (RETRY) after
 * max(retry_first_ns, 2 x p99 ASSIGN-to-DONE), then after twice that,
 * and so on up to retry_ns; after max_retries RETRYs at retry_ns it is
 * lost as no_done.
 */
void xevb_dfm_poll(struct xevb_dfm *d, uint64_t now);
/* The caller left datagrams unread: silence since is not the builders'. */
void xevb_dfm_behind(struct xevb_dfm *d, uint64_t now);
/* End of run: everything outstanding is lost AT_STOP, clears flushed. */
void xevb_dfm_stop(struct xevb_dfm *d);

/*
 * The books at the farm nodes from their latest reports: every builder's
 * received and not_delivered, and the totals in the stats. Returns the
 * events not delivered (0 also when no farm node reports: see n_sinks).
 */
uint64_t xevb_dfm_reconcile(struct xevb_dfm *d);

const struct xevb_dfm_stats *xevb_dfm_stats(const struct xevb_dfm *d);
uint32_t xevb_dfm_n_sinks(const struct xevb_dfm *d);
/* Farm nodes that reported RECEIVED at least once (a count kept, not a scan: RECEIVED comes 10 a second each). */
uint32_t xevb_dfm_n_reporting(const struct xevb_dfm *d);
const struct xevb_dfm_sink *xevb_dfm_sink(const struct xevb_dfm *d, uint32_t i);
uint32_t xevb_dfm_n_builders(const struct xevb_dfm *d);
const struct xevb_dfm_builder *xevb_dfm_builder(const struct xevb_dfm *d, uint32_t i);
/* The books balance (see above); on false, msg says how. */
bool xevb_dfm_check(const struct xevb_dfm *d, char *msg, size_t len);
const char *xevb_dfm_lost_name(enum xevb_dfm_lost r);

#endif

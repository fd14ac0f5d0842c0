/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The end of a run's books at the farm nodes (docs/dfm.md, "Books that
 * close at the farm nodes"). Three numbers per builder address and farm
 * node: the DFM's DONE (its own count), what the builder says it sent
 * there (FORWARDED) and what the farm node says it received (RECEIVED).
 * A discrepancy names the party whose number disagrees with the other
 * two, not the honest one; a farm node of the run configuration that
 * never reports, or one that reports more than was built, leaves the
 * books open, and that is an error too.
 */
#ifndef XEVB_DFM_BOOKS_H
#define XEVB_DFM_BOOKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ctl/dfm.h"

/* Exit statuses of `xevb dfm` this verdict gives (0: the books closed). */
#define DFM_RC_NOT_DELIVERED 4 /* events DONE that did not reach a farm node: the party named */
#define DFM_RC_BOOKS_OPEN    5 /* the books could not be closed: a farm node silent or over-reporting */

struct dfm_books_verdict {
	uint32_t expected, reporting; /* farm nodes of the configuration; farm nodes that reported */
	uint32_t silent;              /* expected farm nodes that never reported */
	uint32_t over;                /* farm nodes named for reporting more than was built or sent */
	uint32_t under;               /* farm nodes named for reporting less than they were sent */
	uint32_t builder_short;       /* builders named for sending less than they reported DONE */
	uint32_t builder_unchecked;   /* builders named without a count of their own (no FORWARDED) */
	bool trusted;                 /* only configured farm nodes counted (a run configuration) */
	int rc;                       /* 0, DFM_RC_NOT_DELIVERED or DFM_RC_BOOKS_OPEN */
};

/*
 * The farm nodes' counts agree with the DONEs and with what the builders
 * say they sent, and every expected farm node reported: no need to wait
 * longer for the last reports. Call after xevb_dfm_reconcile.
 */
bool dfm_books_settled(const struct xevb_dfm *d);

/*
 * The verdict, each party named on stderr with the three numbers (call
 * after xevb_dfm_reconcile). configured: the DFM started from a run
 * configuration (its farm nodes only report); require: an open run whose
 * books are not closed at trusted farm nodes fails too (--require-books).
 */
void dfm_books_judge(const struct xevb_dfm *d, bool configured, bool require, struct dfm_books_verdict *v);

/* Farm nodes that have reported (a run configuration's are listed from the start). */
uint32_t dfm_books_reporting(const struct xevb_dfm *d);
/* A run configuration's farm nodes (NULL: none): each must report for the books to close. */
struct xevb_runcfg;
void dfm_books_expect(struct xevb_dfm *d, const struct xevb_runcfg *rc);
/*
 * Before xevb_dfm_stop: events still outstanding when the drain ended mean
 * the run stalled; says so, naming the builders that hold them.
 */
void dfm_books_say_stalled(const struct xevb_dfm *d);
/* A builder's BYE mid-run: who, and what becomes of the events it held (before xevb_dfm_on_bye). */
void dfm_books_say_bye(const struct xevb_dfm *d, uint32_t addr, uint16_t port, bool pull);
/*
 * No builder alive for grace_ns (since: when that began, 0 while some is):
 * true once, said with the books of the moment; the run then fails.
 */
bool dfm_books_all_left(const struct xevb_dfm *d, uint64_t now, uint64_t grace_ns, uint64_t *since);
/* "farm_nodes":{...}: the farm nodes' books and the verdict, as JSON. */
void dfm_books_json(const struct xevb_dfm *d, const struct dfm_books_verdict *v, bool closed, FILE *f);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The DFM's events in flight (dfm.c's own, not an interface): a slot per
 * event, and the side table of stragglers, the events still open when
 * the window of ids in flight moved past the table's size: a hash by
 * event id (open addressing, linear probing, backward-shift deletion)
 * with room for a quarter of the table, at most half full. Sized at the
 * start; no allocation after.
 */
#ifndef XEVB_DFM_SLOTS_H
#define XEVB_DFM_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

enum { SLOT_FREE = 0, SLOT_ASSIGNED, SLOT_WAIT }; /* WAIT: for a new builder */

struct dfm_slot {
	uint32_t event;
	int16_t builder;
	uint8_t state;
	uint8_t sent;        /* its ASSIGN has left (xevb_dfm_assign_sent) */
	uint16_t retries;    /* RETRYs sent to its builder */
	uint16_t no_data_by; /* free: 1 + the builder that gave it up as NO_DATA; 0: none */
	uint16_t done_by;    /* free: 1 + the builder whose DONE finished it; waiting: 1 + the one it left */
	uint8_t moved;       /* re-assigned: t is no longer its first assignment */
	uint64_t t;          /* its last ASSIGN (first, re-assignment or retry) */
	uint64_t lat_t;      /* the trigger time until the ASSIGN leaves, then that send's */
};

struct dfm_side {
	struct dfm_slot *t;
	uint32_t mask, bits, n, cap;
	uint32_t *ids; /* dfm_side_ids */
};

/* Room for table / 4 stragglers (table a power of 2, >= 4); 0, or -1 (no memory). */
int dfm_side_init(struct dfm_side *s, uint32_t table);
void dfm_side_free(struct dfm_side *s);
struct dfm_slot *dfm_side_find(struct dfm_side *s, uint32_t ev);
/* A copy of x (its event not in yet; the caller checks n < cap). */
void dfm_side_put(struct dfm_side *s, const struct dfm_slot *x);
/* x, an entry of s, leaves; the entries after it may move. */
void dfm_side_del(struct dfm_side *s, struct dfm_slot *x);
bool dfm_side_has(const struct dfm_side *s, const struct dfm_slot *x);
/* The ids in s now, in s->ids: for scans that finish events (which moves entries). */
uint32_t dfm_side_ids(struct dfm_side *s);
/* Entries in use, counted (the books' check). */
uint32_t dfm_side_count(const struct dfm_side *s);

#endif

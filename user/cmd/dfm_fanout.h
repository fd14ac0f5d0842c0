/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The DFM's messages to every source process (push routes, CLEARs, the
 * heartbeat and its lists), sent a slice a round instead of all at once:
 * one message to 320 sources is 320 datagrams, a millisecond of sending,
 * and a trigger that waits for it is a millisecond late. Each round sends
 * at most a budget of datagrams, in order: a message reaches every source
 * before the next one starts, so no source sees a CLEAR before the route
 * of its events, nor a heartbeat's clear mark before the CLEARs it covers.
 */
#ifndef XEVB_DFM_FANOUT_H
#define XEVB_DFM_FANOUT_H

#include <stdbool.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"

enum dfm_fan_kind {
	DFM_FAN_MSG,    /* m, the same to every source */
	DFM_FAN_STATUS, /* the heartbeat: m's STATUS with each source's own peer_epoch */
};

struct dfm_fan_item {
	struct xevb_ctl_msg m;
	uint32_t next; /* the next source index it goes to */
	uint8_t kind;
};

struct dfm_fanout {
	struct dfm_fan_item *q;
	uint32_t head, n, cap;
	uint64_t msgs, sent, full; /* messages queued, datagrams sent, times the queue was full */
	/* Send it to source i (if alive); n_dest: the sources now. */
	void (*send)(void *ctx, uint32_t i, struct dfm_fan_item *it);
	uint32_t (*n_dest)(void *ctx);
	void *ctx;
};

int dfm_fanout_init(struct dfm_fanout *f, uint32_t cap, void (*send)(void *, uint32_t, struct dfm_fan_item *),
		    uint32_t (*n_dest)(void *), void *ctx);
void dfm_fanout_free(struct dfm_fanout *f);
/* A slot at the tail for a message of kind, to fill before the next call (a full queue sends its oldest first). */
struct dfm_fan_item *dfm_fanout_add(struct dfm_fanout *f, enum dfm_fan_kind kind);
/* Up to budget datagrams, oldest message first: how many went. */
uint32_t dfm_fanout_run(struct dfm_fanout *f, uint32_t budget);
/* Everything queued (the end of the run). */
void dfm_fanout_drain(struct dfm_fanout *f);

static inline bool dfm_fanout_busy(const struct dfm_fanout *f)
{
	return f->n != 0;
}

#endif

// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb sink --process-rate HZ`: events held as if a slow trigger were
 * processing them one after the other (sink.h). The farm node's library
 * gives a builder its credit back when the event is done, and goes Busy
 * above busy-high x credits held: holding events here is what makes a slow
 * farm node, as a real one would be, without a model of its own.
 */
#include <stdlib.h>
#include "emu/sink.h"

void sink_hold_init(struct sink_hold *h, double rate)
{
	*h = (struct sink_hold){ .rate = rate };
}

void sink_hold_free(struct sink_hold *h)
{
	free(h->q);
	h->q = NULL;
	h->cap = h->n = h->head = 0;
}

/* Twice the room, the held entries moved to its start; false out of memory. */
static bool grow(struct sink_hold *h)
{
	size_t cap = h->cap ? 2 * h->cap : 1024;
	const void **q = malloc(cap * sizeof(*q));

	if (!q)
		return false;
	for (size_t i = 0; i < h->n; i++)
		q[i] = h->q[(h->head + i) % h->cap];
	free(h->q);
	h->q = q;
	h->cap = cap;
	h->head = 0;
	return true;
}

bool sink_hold_push(struct sink_hold *h, const void *p, uint64_t now)
{
	if (h->n == h->cap && !grow(h))
		return false;
	/* An idle processor starts on the event now: idle time is not saved up. */
	if (!h->n)
		h->t_proc = now;
	h->q[(h->head + h->n++) % h->cap] = p;
	return true;
}

/* ns one event takes. */
static uint64_t per_event_ns(const struct sink_hold *h)
{
	return (uint64_t)(1e9 / h->rate);
}

const void *sink_hold_pop(struct sink_hold *h, uint64_t now)
{
	const void *p;

	if (!h->n || now - h->t_proc < per_event_ns(h))
		return NULL;
	p = h->q[h->head];
	h->head = (h->head + 1) % h->cap;
	h->n--;
	h->t_proc += per_event_ns(h);
	return p;
}

uint64_t sink_hold_wait_ns(const struct sink_hold *h, uint64_t now)
{
	uint64_t at;

	if (!h->n)
		return UINT64_MAX;
	at = h->t_proc + per_event_ns(h);
	return at > now ? at - now : 0;
}

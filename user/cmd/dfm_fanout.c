// SPDX-License-Identifier: GPL-2.0-only
/* The DFM's messages to every source process, a slice a round (dfm_fanout.h). */
#include <stdlib.h>
#include "cmd/dfm_fanout.h"

int dfm_fanout_init(struct dfm_fanout *f, uint32_t cap, void (*send)(void *, uint32_t, struct dfm_fan_item *),
		    uint32_t (*n_dest)(void *), void *ctx)
{
	*f = (struct dfm_fanout){ .cap = cap, .send = send, .n_dest = n_dest, .ctx = ctx };
	f->q = calloc(cap, sizeof(*f->q));
	return f->q ? 0 : -1;
}

void dfm_fanout_free(struct dfm_fanout *f)
{
	free(f->q);
	f->q = NULL;
	f->n = 0;
}

struct dfm_fan_item *dfm_fanout_add(struct dfm_fanout *f, enum dfm_fan_kind kind)
{
	struct dfm_fan_item *it;

	if (f->n == f->cap) {
		uint32_t n = f->n;

		f->full++;
		while (f->n == n)
			dfm_fanout_run(f, f->n_dest(f->ctx) + 1);
	}
	it = &f->q[(f->head + f->n++) % f->cap];
	it->next = 0;
	it->kind = (uint8_t)kind;
	f->msgs++;
	return it;
}

uint32_t dfm_fanout_run(struct dfm_fanout *f, uint32_t budget)
{
	uint32_t sent = 0, n_dest = f->n_dest(f->ctx);

	while (f->n && sent < budget) {
		struct dfm_fan_item *it = &f->q[f->head];

		while (it->next < n_dest && sent < budget) {
			f->send(f->ctx, it->next++, it);
			sent++;
		}
		if (it->next < n_dest)
			break;
		f->head = (f->head + 1) % f->cap;
		f->n--;
	}
	f->sent += sent;
	return sent;
}

void dfm_fanout_drain(struct dfm_fanout *f)
{
	while (f->n)
		dfm_fanout_run(f, UINT32_MAX / 2);
}

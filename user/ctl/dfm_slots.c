// SPDX-License-Identifier: GPL-2.0-only
/* The DFM's side table of stragglers (dfm_slots.h). */
#include <stdlib.h>
#include <string.h>
#include "ctl/dfm_slots.h"

int dfm_side_init(struct dfm_side *s, uint32_t table)
{
	memset(s, 0, sizeof(*s));
	s->cap = table / 4;
	s->bits = (uint32_t)__builtin_ctz(table) - 1;
	s->mask = (1u << s->bits) - 1;
	s->t = calloc(s->mask + 1, sizeof(*s->t));
	s->ids = calloc(s->cap ? s->cap : 1, sizeof(*s->ids));
	return s->t && s->ids ? 0 : -1;
}

void dfm_side_free(struct dfm_side *s)
{
	free(s->t);
	free(s->ids);
	s->t = NULL;
	s->ids = NULL;
}

static uint32_t home(const struct dfm_side *s, uint32_t ev)
{
	return (ev * 0x9e3779b1u) >> (32 - s->bits);
}

struct dfm_slot *dfm_side_find(struct dfm_side *s, uint32_t ev)
{
	if (!s->n)
		return NULL;
	for (uint32_t i = home(s, ev);; i = (i + 1) & s->mask) {
		struct dfm_slot *x = &s->t[i];
		if (x->state == SLOT_FREE)
			return NULL;
		if (x->event == ev)
			return x;
	}
}

void dfm_side_put(struct dfm_side *s, const struct dfm_slot *x)
{
	uint32_t i = home(s, x->event);

	while (s->t[i].state != SLOT_FREE)
		i = (i + 1) & s->mask;
	s->t[i] = *x;
	s->n++;
}

/* An entry after the hole moves back into it unless its home lies after the hole. */
void dfm_side_del(struct dfm_side *s, struct dfm_slot *x)
{
	uint32_t i = (uint32_t)(x - s->t);

	for (uint32_t j = (i + 1) & s->mask; s->t[j].state != SLOT_FREE; j = (j + 1) & s->mask) {
		uint32_t h = home(s, s->t[j].event);
		if (((j - h) & s->mask) >= ((j - i) & s->mask)) {
			s->t[i] = s->t[j];
			i = j;
		}
	}
	memset(&s->t[i], 0, sizeof(s->t[i]));
	s->n--;
}

bool dfm_side_has(const struct dfm_side *s, const struct dfm_slot *x)
{
	return x >= s->t && x <= s->t + s->mask;
}

uint32_t dfm_side_ids(struct dfm_side *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= s->mask && n < s->n; i++)
		if (s->t[i].state != SLOT_FREE)
			s->ids[n++] = s->t[i].event;
	return n;
}

uint32_t dfm_side_count(const struct dfm_side *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= s->mask; i++)
		n += s->t[i].state != SLOT_FREE;
	return n;
}

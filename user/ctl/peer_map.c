// SPDX-License-Identifier: GPL-2.0-only
/* Peers by key (peer_map.h). */
#include <stdlib.h>
#include "ctl/peer_map.h"

static uint32_t home(const struct peer_map *m, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & m->mask;
}

int peer_map_init(struct peer_map *m, uint32_t max)
{
	uint32_t size = 16;

	while (size < 2ull * (max < PEER_MAP_START ? max : PEER_MAP_START))
		size *= 2;
	m->slot = calloc(size, sizeof(*m->slot));
	m->mask = size - 1;
	m->n = 0;
	m->max = max;
	return m->slot ? 0 : -1;
}

/* Twice the slots, every entry moved to its new home: false when out of memory (the map stays). */
static bool grow(struct peer_map *m)
{
	uint32_t size = (m->mask + 1) * 2;
	struct peer_map_slot *old = m->slot, *slot = calloc(size, sizeof(*slot));
	uint32_t old_size = m->mask + 1;

	if (!slot)
		return false;
	m->slot = slot;
	m->mask = size - 1;
	for (uint32_t i = 0; i < old_size; i++) {
		uint32_t j;

		if (!old[i].val)
			continue;
		for (j = home(m, old[i].key); slot[j].val; j = (j + 1) & m->mask)
			;
		slot[j] = old[i];
	}
	free(old);
	return true;
}

void peer_map_free(struct peer_map *m)
{
	free(m->slot);
	m->slot = NULL;
	m->n = 0;
}

/* The slot of key, or the empty slot that ends its probe. */
static uint32_t probe(const struct peer_map *m, uint64_t key)
{
	uint32_t i = home(m, key);

	/* At most half full: an empty slot always ends the probe. */
	while (m->slot[i].val && m->slot[i].key != key)
		i = (i + 1) & m->mask;
	return i;
}

int64_t peer_map_get(const struct peer_map *m, uint64_t key)
{
	uint32_t i = probe(m, key);

	return m->slot[i].val ? (int64_t)m->slot[i].val - 1 : -1;
}

bool peer_map_put(struct peer_map *m, uint64_t key, uint32_t idx)
{
	uint32_t i = probe(m, key);

	if (!m->slot[i].val) {
		if (m->n >= m->max)
			return false;
		/* At most half full: the probe always ends. */
		if (m->n + 1 > (m->mask + 1) / 2) {
			if (!grow(m))
				return false;
			i = probe(m, key);
		}
		m->n++;
		m->slot[i].key = key;
	}
	m->slot[i].val = idx + 1;
	return true;
}

void peer_map_del(struct peer_map *m, uint64_t key)
{
	uint32_t i = probe(m, key), j = i;

	if (!m->slot[i].val)
		return;
	m->n--;
	/* Backward shift: move up every later entry of the run that may sit in the hole. */
	for (;;) {
		uint32_t h;

		m->slot[i].val = 0;
		for (;;) {
			j = (j + 1) & m->mask;
			if (!m->slot[j].val)
				return;
			h = home(m, m->slot[j].key);
			/* j may move to i unless its home lies cyclically in (i, j]. */
			if (i <= j ? (h <= i || h > j) : (h <= i && h > j))
				break;
		}
		m->slot[i] = m->slot[j];
		i = j;
	}
}

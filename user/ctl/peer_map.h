/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Peers by key (an IPv4 address and a port, or any two 32-bit words): an
 * open-addressing hash from the key to the peer's index in its owner's
 * table, at most half full, so a lookup costs the same with 10 peers or
 * 4096. Sized at start for up to PEER_MAP_START entries, it doubles as
 * entries come, up to its max: a table of peers never grows during a run,
 * one of (farm node, builder) pairs (millions at most, a few hundred
 * thousand in a large run) takes memory for the pairs that exist. Linear
 * probing, backward-shift deletion (no tombstones: a table that churns
 * stays as fast as a fresh one).
 */
#ifndef XEVB_PEER_MAP_H
#define XEVB_PEER_MAP_H

#include <stdbool.h>
#include <stdint.h>

#define PEER_MAP_START 4096 /* entries a map has room for at start (fewer when its max is smaller) */

struct peer_map {
	struct peer_map_slot {
		uint64_t key;
		uint32_t val; /* the index + 1; 0: the slot is empty */
	} * slot;
	uint32_t mask, n, max;
};

/* The key of an IPv4 address (network order) and a port. */
static inline uint64_t peer_key(uint32_t addr, uint16_t port)
{
	return ((uint64_t)addr << 16) | port;
}

/* A map for up to max entries; 0, or -1 (out of memory). */
int peer_map_init(struct peer_map *m, uint32_t max);
void peer_map_free(struct peer_map *m);
/* The index of key, or -1. */
int64_t peer_map_get(const struct peer_map *m, uint64_t key);
/* Map key to idx (replacing what it mapped to); false when the map holds max entries (or cannot grow). */
bool peer_map_put(struct peer_map *m, uint64_t key, uint32_t idx);
/* Forget key (nothing when absent). */
void peer_map_del(struct peer_map *m, uint64_t key);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/* The wire-format test vectors (tests/vectors: the format's published vectors, see tests/vectors/README.md). */
#ifndef XEVB_TEST_VECTORS_H
#define XEVB_TEST_VECTORS_H

#include <stddef.h>
#include <stdint.h>
#include "wire/mep_write.h"

#define VEC_MAX_FRAGS 64

enum vec_verdict { VEC_MEP, VEC_SEGMENT, VEC_MALFORMED, VEC_IP_FRAGMENT, VEC_OTHER };

struct vec_frag {
	uint32_t event_id;
	uint16_t source_id;
	uint16_t length;
	uint32_t crc32c;
	/* VEC_SEGMENT: length and crc32c are the whole fragment's */
	uint16_t seg_offset;
	uint16_t seg_bytes;
};

struct vector {
	char name[64];
	enum vec_verdict verdict;
	unsigned n_frags;
	struct vec_frag frags[VEC_MAX_FRAGS];
	uint8_t *frame;
	size_t len;
};

/* Loads every vector listed in index.tsv; aborts with a message on error. */
struct vector *vectors_load(size_t *count);
void vectors_free(struct vector *v, size_t count);
const char *vectors_dir(void);

/*
 * A suite over every vector: .init = vectors_setup loads them into vecs,
 * .fini = vectors_teardown frees them.
 */
extern struct vector *vecs;
extern size_t nvecs;
void vectors_setup(void);
void vectors_teardown(void);
/* The loaded vector of that name; fails the test when index.tsv has none. */
const struct vector *vectors_find(const char *name);
/* The addresses, IP protocol and run number the spec's vectors were written with. */
struct xevb_mep_params vectors_params(void);

/*
 * Tags the Ethernet frame of len bytes in buf with an 802.1Q header (VLAN
 * vid) after its MAC addresses; buf must have room for 4 bytes more.
 * Returns the tagged frame's length.
 */
size_t vectors_tag_vlan(uint8_t *buf, size_t len, uint16_t vid);

#endif

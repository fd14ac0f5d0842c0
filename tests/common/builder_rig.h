/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test rig for the builder core: a frame pool that tracks which frames the
 * builder holds (and poisons a frame the moment it comes back), MEP frames
 * written with the MEP writer and parsed with xevb_classify, and a record
 * of every emitted event, checked as it is emitted: every fragment's frame
 * still held, its payload and CRC intact, sources ascending.
 */
#ifndef XEVB_TEST_BUILDER_RIG_H
#define XEVB_TEST_BUILDER_RIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "evb/builder.h"
#include <xevb/mep_parse.h>

#define RIG_FRAME_SIZE 65536 /* room for 1024 records */
#define RIG_SRC_WORDS  (XEVB_MAX_SOURCES / 64)

struct rig_event {
	uint32_t event_id;
	uint8_t flags;
	uint16_t n_frags;
	uint16_t n_expected;
	uint64_t open_ns;
	uint32_t wire_size;
	uint64_t present[RIG_SRC_WORDS]; /* bit per source_id */
};

struct rig {
	struct xevb_builder *b;
	struct xevb_builder_cfg cfg;
	uint16_t sources[XEVB_MAX_SOURCES];
	struct xevb_parse_cfg pcfg;
	uint32_t n_frames;
	uint8_t *frames; /* n_frames * RIG_FRAME_SIZE */
	bool *held;      /* given to the builder, not released yet */
	uint32_t *len;   /* bytes written in each frame */
	uint32_t *free_list;
	uint32_t n_free;
	uint64_t releases;
	uint32_t seq[XEVB_MAX_SOURCES];
	uint64_t now;
	struct rig_event *ev;
	size_t n_ev, cap_ev;
	bool use_udp;
	/* Every k-th MEP of consecutive ids goes in without its refs (0: never). */
	uint32_t refless_every;
	uint64_t sent;
	uint8_t shed_run; /* pi->shed_run of the MEPs sent (as from a vouched XDP meta) */
};

/* Payload byte i of the fragment of (source, event): ties content to both. */
static inline uint8_t rig_byte(uint16_t src, uint32_t ev, uint32_t i)
{
	return (uint8_t)(src * 7u + ev * 13u + i * 31u + (i >> 8));
}

/* Length of the fragment of (source, event): varied, 0 included. */
static inline uint16_t rig_len(uint16_t src, uint32_t ev)
{
	return (uint16_t)((src * 5u + ev * 3u) % 41u);
}

/* cfg: sources/n_sources/window/timeout/policy/run set by the caller. */
void rig_init(struct rig *r, const uint16_t *sources, uint32_t n_sources, uint32_t window, uint32_t n_frames,
	      const struct xevb_builder_cfg *extra);
/* Flush, check the invariant, assert every frame came back, free. */
void rig_fini(struct rig *r);
/* rig_fini of a builder that already holds no frame (everything built or dropped before the flush). */
void rig_fini_none_held(struct rig *r);

/*
 * One MEP from source src carrying events ids[0..n-1] (increasing), built,
 * parsed and handed to the builder at r->now. Returns the frame index.
 */
uint32_t rig_send(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, const uint32_t *ids, uint32_t n);
/*
 * Same, but the builder is handed only records from..from+count-1 of the
 * MEP (the rest of the frame as written), as a multi-worker share.
 */
uint32_t rig_send_part(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, const uint32_t *ids, uint32_t n,
		       uint32_t from, uint32_t count);
/* Same with consecutive ids first..first+n-1. */
uint32_t rig_send_range(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, uint32_t first, uint32_t n);

/*
 * One SEGMENT packet (wire format 1.1) from src: bytes seg_off..seg_off +
 * seg_bytes - 1 of event's frag_len-byte fragment (rig_byte content, its
 * CRC over all frag_len bytes), handed to xevb_builder_add_segment at
 * r->now. Returns the frame index.
 */
uint32_t rig_send_segment(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, uint32_t event,
			  uint16_t frag_len, uint16_t seg_off, uint16_t seg_bytes);
/* The same with crc32c as given (the right one: rig_send_segment). */
uint32_t rig_send_segment_crc(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, uint32_t event,
			      uint16_t frag_len, uint16_t seg_off, uint16_t seg_bytes, uint32_t crc);

void rig_check(struct rig *r);
const struct rig_event *rig_find(const struct rig *r, uint32_t event_id);
bool rig_has(const struct rig_event *e, uint16_t src);
uint32_t rig_frames_held(const struct rig *r);

#endif

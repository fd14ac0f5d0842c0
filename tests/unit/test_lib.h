/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers of the libxevb tests (test_lib_*.c): events encoded by the
 * tools' own encoder (user/wire/event_codec.c), as `xevb build` sends them,
 * and scratch directories.
 */
#ifndef XEVB_TEST_LIB_H
#define XEVB_TEST_LIB_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "evb/builder.h"
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include "wire/event_codec.h"
#include <xevb/xevb.h>

#define TL_MAXS 64
#define TL_HDR  8 /* frame bytes before a payload: its CRC sits in the 4 before */

/* Criterion's cr_assert takes no expression that starts with a parenthesis. */
static inline bool tl_has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

/* Payload byte j of source sid in event ev: what tl_check_payload expects. */
static inline uint8_t tl_byte(uint32_t ev, uint16_t sid, uint32_t j)
{
	return (uint8_t)(ev * 7u + sid * 13u + j);
}

/*
 * Event ev_id of run with n sources (ids sids[i], or i when sids is NULL),
 * source i carrying lens[i] bytes (or 4 * i + 1 when lens is NULL), present
 * unless bit i of absent is set. malloc'ed; *len its size.
 */
static inline uint8_t *tl_encode(uint32_t run, uint32_t ev_id, uint32_t n, const uint16_t *sids,
				 const uint16_t *lens, uint64_t absent, size_t *len)
{
	static uint8_t frames[TL_MAXS][TL_HDR + 1024];
	static const uint8_t *fdata[TL_MAXS];
	uint16_t ids[TL_MAXS];
	struct xevb_frag_slot slots[TL_MAXS];
	struct xevb_event ev = { .event_id = ev_id, .run_number = run, .n_expected = (uint16_t)n };
	uint8_t *buf;
	size_t cap = 64 + n * (12 + 1024 + 8);

	cr_assert(n <= TL_MAXS);
	for (uint32_t i = 0; i < n; i++) {
		uint16_t l = lens ? lens[i] : (uint16_t)(4 * i + 1);
		ids[i] = sids ? sids[i] : (uint16_t)i;
		cr_assert(l <= 1024);
		for (uint32_t j = 0; j < l; j++)
			frames[i][TL_HDR + j] = tl_byte(ev_id, ids[i], j);
		xevb_st32(frames[i] + TL_HDR - 4, xevb_crc32c(0, frames[i] + TL_HDR, l));
		fdata[i] = frames[i];
		slots[i] = (struct xevb_frag_slot){ .frame_idx = (absent >> i) & 1 ? UINT32_MAX : i,
						    .payload_off = TL_HDR,
						    .length = l };
		ev.n_frags += !((absent >> i) & 1);
	}
	ev.flags = ev.n_frags < n ? XEVB_EVT_F_INCOMPLETE : 0;
	ev.source_ids = ids;
	ev.frags = slots;
	ev.frame_data = fdata;
	buf = malloc(cap);
	cr_assert(buf != NULL);
	cr_assert(eq(int, xevb_event_encode_into(&ev, 1700000000000000000ull + ev_id, buf, cap, len), 0));
	return buf;
}

/* Every payload of a view is what tl_encode put there. */
static inline void tl_check_payloads(const struct xevb_ev *ev)
{
	struct xevb_ev_frag f;

	for (uint32_t i = 0; i < ev->n_frags; i++) {
		cr_assert(eq(int, xevb_ev_frag(ev, i, &f), 0));
		for (uint32_t j = 0; j < f.length; j++)
			cr_assert(eq(u8, f.payload[j], tl_byte(ev->event_id, f.source_id, j)),
				  "event %u source %u byte %u", ev->event_id, f.source_id, j);
	}
}

/* A fresh directory under TMPDIR (or /tmp), in dir. */
static inline void tl_tmpdir(char *dir, size_t len)
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, len, "%s/xevb-lib-XXXXXX", t && *t ? t : "/tmp");
	cr_assert(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
}

static inline void tl_rmdir(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(eq(int, system(cmd), 0));
}

#endif

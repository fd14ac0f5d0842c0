// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness for the builder core behind the parser. The input is a
 * 4-byte configuration and then a sequence of steps, each fed to
 * xevb_classify + xevb_builder_add_mep with a fake clock:
 *
 *   cfg[0]  bit 7: synthetic mode; bits 0-1: sources {0..n-1}, n = 1 + bits
 *   cfg[1]  window 1..8 (low 3 bits + 1); bit 3: adopt_run
 *   cfg[2]  timeout in units of 16 ns (0: none); bit 7: discard policy
 *   cfg[3]  bit 0: MEPs of consecutive ids go in without their refs (as
 *           from the XDP metadata path); other bits ignored
 *   step    ctl byte: bits 0-5 advance the clock by 16 ns each, bit 6 poll,
 *           bit 7 flush; then
 *           raw mode: a 2-byte little-endian length and that many bytes of
 *             Ethernet frame (any content; usually rejected by the parser),
 *           synthetic mode: 4 bytes describing a valid MEP (source 0..7,
 *             flags, run 1 or 2, 1..8 events from 0xffffff00 + a 16-bit
 *             offset, with gaps), written with the MEP writer; with bit 6
 *             of the first byte, a valid SEGMENT packet (wire format 1.1)
 *             of the first of those events instead.
 *
 * Valid segments, in both modes, go to xevb_builder_add_segment.
 *
 * Every frame goes through a pool that knows which frames the builder holds;
 * emit checks each fragment lies in a held frame (and in synthetic mode that
 * its CRC matches). After every step xevb_builder_check must hold; after the
 * input the builder is flushed and every frame must be back, exactly once.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evb/builder.h"
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"
#include "fuzz_fail.h"

#define FRAME_SIZE 9216
#define N_FRAMES   40 /* 8 events x 4 sources, the one being added, spare */

static uint8_t frames[N_FRAMES][FRAME_SIZE];
static uint32_t frame_len[N_FRAMES];
static bool held[N_FRAMES];
static uint32_t free_list[N_FRAMES], n_free;
static bool synthetic, refless;

#define FAIL(...) FUZZ_FAIL("fuzz_builder", __VA_ARGS__)

static void on_release(void *ctx, uint32_t f)
{
	(void)ctx;
	if (f >= N_FRAMES || !held[f])
		FAIL("frame %u released twice or never given", f);
	held[f] = false;
	memset(frames[f], 0xee, frame_len[f]);
	free_list[n_free++] = f;
}

/* A fragment put together from segments: pieces in held frames, 0..length once, its CRC. */
static void check_pieces(const struct xevb_event *ev, uint32_t i)
{
	const struct xevb_frag_pieces *fp = &ev->pieces[i];
	uint32_t at = 0, crc = 0;

	for (uint32_t k = 0; k < fp->n; k++) {
		const struct xevb_seg_piece *p = &fp->p[k];

		if (p->frame_idx >= N_FRAMES || !held[p->frame_idx])
			FAIL("event %u: a piece in a released frame", ev->event_id);
		if (p->seg_offset != at || (uint32_t)p->payload_off + p->bytes > frame_len[p->frame_idx])
			FAIL("event %u: piece %u at %u+%u, expected at %u", ev->event_id, k, p->seg_offset,
			     p->bytes, at);
		crc = xevb_crc32c(crc, ev->frame_data[p->frame_idx] + p->payload_off, p->bytes);
		at += p->bytes;
	}
	if (at != ev->frags[i].length || !fp->n)
		FAIL("event %u: pieces cover %u of %u bytes", ev->event_id, at, ev->frags[i].length);
	if (synthetic && crc != xevb_event_crc(ev, i))
		FAIL("event %u source %u: segmented payload changed", ev->event_id, ev->source_ids[i]);
}

static void on_emit(void *ctx, const struct xevb_event *ev)
{
	uint32_t got = 0;

	(void)ctx;
	for (uint32_t i = 0; i < ev->n_expected; i++) {
		const struct xevb_frag_slot *fs = &ev->frags[i];

		if (i && ev->source_ids[i] <= ev->source_ids[i - 1])
			FAIL("sources not ascending");
		if (fs->frame_idx == UINT32_MAX)
			continue;
		got++;
		if (xevb_event_npieces(ev, i)) {
			check_pieces(ev, i);
			continue;
		}
		if (fs->frame_idx >= N_FRAMES || !held[fs->frame_idx])
			FAIL("event %u: fragment in a released frame", ev->event_id);
		if ((uint32_t)fs->payload_off + fs->length > frame_len[fs->frame_idx] || fs->payload_off < 4)
			FAIL("event %u: fragment outside its frame", ev->event_id);
		const uint8_t *p = xevb_event_payload(ev, i);
		uint32_t crc = xevb_crc32c(0, p, fs->length); /* reads every byte */
		if (synthetic && crc != xevb_event_crc(ev, i))
			FAIL("event %u source %u: payload changed", ev->event_id, ev->source_ids[i]);
	}
	if (got != ev->n_frags || (got == ev->n_expected) == !!(ev->flags & XEVB_EVT_F_INCOMPLETE))
		FAIL("event %u: %u fragments, n_frags %u, flags %u", ev->event_id, got, ev->n_frags, ev->flags);
	if (xevb_event_wire_size(ev) < sizeof(struct xevb_evt_hdr))
		FAIL("wire size");
}

static void check(struct xevb_builder *b)
{
	char msg[256];

	if (!xevb_builder_check(b, msg, sizeof(msg)))
		FAIL("invariant: %s", msg);
	if (xevb_builder_stats(b)->frames_held != N_FRAMES - n_free)
		FAIL("frames_held %llu, pool says %u", (unsigned long long)xevb_builder_stats(b)->frames_held,
		     N_FRAMES - n_free);
}

/*
 * A segment, from its 4 bytes: d[0] as for a MEP (bit 6 set); the fragment
 * of event 0xffffff00 + d[2] / 8 (among the MEPs' events) is 4 * (1 +
 * d[3] % 32) + d[1] % 4 bytes, the segment starts at word d[1] / 4 (modulo
 * the fragment's words) and has 1 + d[2] % 8 words, or what is left.
 * Content and CRC as a MEP's fragment would have them, so the same
 * fragment from several segments agrees unless its length differs. The
 * record is written with the segment's bytes and then made a segment
 * (seg_patch): this does not depend on how the writer segments.
 */
static uint32_t seg_event(const uint8_t *d)
{
	return 0xffffff00u + (d[2] >> 3);
}

static uint32_t seg_frag_len(const uint8_t *d)
{
	return 4u * (1u + d[3] % 32u) + d[1] % 4u;
}

static uint32_t seg_offset(const uint8_t *d)
{
	return 4u * ((uint32_t)(d[1] >> 2) % ((seg_frag_len(d) + 3) / 4u));
}

static uint8_t synth_byte(uint32_t e, uint16_t src, uint32_t i)
{
	return (uint8_t)(e * 31 + src * 7 + i);
}

static void seg_params(struct xevb_mep_params *p, const uint8_t *d)
{
	static uint16_t len1;
	static uint8_t spay[32];
	static const uint8_t *spays[1] = { spay };
	static uint32_t eid;
	uint32_t off = seg_offset(d), room = seg_frag_len(d) - off, bytes = 4u * (1u + (d[2] & 7));

	eid = seg_event(d);
	len1 = (uint16_t)(bytes < room ? bytes : room);
	for (uint32_t k = 0; k < len1; k++)
		spay[k] = synth_byte(eid, p->source_id, off + k);
	p->n_frags = 1;
	p->event_id = &eid;
	p->frag_len = &len1;
	p->payload = spays;
}

static void seg_patch(uint8_t *buf, size_t len, const uint8_t *d)
{
	/* Raw IPv4, no options, no UDP: the writer's layout for these params. */
	uint8_t *mep = buf + XEVB_ETH_HLEN + 20, *rec = mep + XEVB_MEP_HLEN, whole[132];
	uint32_t flen = seg_frag_len(d), off = seg_offset(d), crc;

	if (len < XEVB_ETH_HLEN + 20 + XEVB_MEP_HLEN + XEVB_REC_HLEN)
		FAIL("synthetic segment frame too short");
	for (uint32_t k = 0; k < flen; k++)
		whole[k] = synth_byte(seg_event(d), d[0] & 7, k);
	crc = xevb_crc32c(0, whole, flen);
	mep[3] |= XEVB_MEP_F_SEGMENT;
	xevb_st16(rec + 4, (uint16_t)flen);
	xevb_st16(rec + 6, (uint16_t)off);
	xevb_st32(rec + 8, crc);
}

/* Four bytes -> one valid MEP (or segment) frame in buf; its length. */
static size_t synth_frame(uint8_t *buf, const uint8_t *d, uint32_t *seq)
{
	static uint32_t ids[8];
	static uint8_t pay[8][24];
	static const uint8_t *pays[8];
	static uint16_t lens[8];
	uint32_t n = 1 + (d[1] & 7), e = 0xffffff00u + (d[2] | (uint32_t)d[3] << 8);
	uint16_t src = d[0] & 7;
	struct xevb_mep_params p = {
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.source_id = src,
		.flags = (d[0] >> 3) & (XEVB_MEP_F_RESEND | XEVB_MEP_F_END_OF_RUN),
		.run_number = 1 + ((d[0] >> 5) & 1),
		.packet_seq = seq[src]++,
		.event_id = ids,
		.n_frags = n,
		.frag_len = lens,
		.payload = pays,
	};
	ssize_t len;

	for (uint32_t j = 0; j < n; j++) {
		ids[j] = e;
		e += 1 + ((d[1] >> (3 + j % 5)) & 1);
		lens[j] = (uint16_t)((d[2] + j * 7) % 24);
		for (uint32_t k = 0; k < lens[j]; k++)
			pay[j][k] = synth_byte(ids[j], src, k);
		pays[j] = pay[j];
	}
	if (d[0] & 0x40)
		seg_params(&p, d);
	len = xevb_write_frame(buf, FRAME_SIZE, &p);
	if (len <= 0)
		FAIL("MEP writer refused a synthetic frame");
	if (d[0] & 0x40)
		seg_patch(buf, (size_t)len, d);
	return (size_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t sources[] = { 0, 1, 2, 3 };
	static struct xevb_frag_ref refs[XEVB_MAX_FRAGS_PER_MEP];
	const struct xevb_parse_cfg pcfg = { .udp_port = XEVB_DEFAULT_UDP_PORT,
					     .ip_proto = XEVB_DEFAULT_IP_PROTO };
	uint32_t seq[8] = { 0 };
	struct xevb_builder_cfg cfg = { 0 };
	struct xevb_builder *b;
	uint64_t now = 1000;
	size_t off = 4;

	if (size < 4)
		return 0;
	synthetic = data[0] & 0x80;
	cfg.sources = sources;
	cfg.n_sources = 1 + (data[0] & 3);
	cfg.window = 1 + (data[1] & 7);
	cfg.adopt_run = data[1] & 8;
	cfg.run_number = 1;
	cfg.timeout_ns = (uint64_t)(data[2] & 0x7f) * 16;
	cfg.timeout_policy = data[2] & 0x80 ? XEVB_TIMEOUT_DISCARD : XEVB_TIMEOUT_EMIT_INCOMPLETE;
	cfg.n_frames = N_FRAMES;
	refless = data[3] & 1;
	cfg.emit = on_emit;
	cfg.frame_release = on_release;
	n_free = N_FRAMES;
	for (uint32_t i = 0; i < N_FRAMES; i++) {
		free_list[i] = i;
		held[i] = false;
	}
	b = xevb_builder_new(&cfg);
	if (!b)
		FAIL("xevb_builder_new");

	while (off < size) {
		uint8_t ctl = data[off++];
		size_t len;
		uint32_t f;

		now += (uint64_t)(ctl & 0x3f) * 16;
		if (ctl & 0x40)
			xevb_builder_poll(b, now);
		if (ctl & 0x80)
			xevb_builder_flush(b);
		if (synthetic ? size - off < 4 : size - off < 2)
			break;
		if (n_free == 0)
			FAIL("frame pool empty: the builder holds every frame");
		f = free_list[--n_free];
		if (synthetic) {
			len = synth_frame(frames[f], data + off, seq);
			off += 4;
		} else {
			len = data[off] | (size_t)data[off + 1] << 8;
			off += 2;
			if (len > size - off)
				len = size - off;
			if (len > FRAME_SIZE)
				len = FRAME_SIZE;
			memcpy(frames[f], data + off, len);
			off += len;
		}
		frame_len[f] = (uint32_t)len;
		struct xevb_pkt_info pi;
		int res = xevb_classify(frames[f], frames[f] + len, (uint32_t)len, &pcfg, &pi, refs);
		if (synthetic && res != ((data[off - 4] & 0x40) ? XEVB_RES_SEGMENT : XEVB_RES_MEP))
			FAIL("synthetic frame misparsed: verdict %d", res);
		if (res == XEVB_RES_SEGMENT) {
			uint64_t before = xevb_builder_stats(b)->segs_received;

			held[f] = true;
			xevb_builder_add_segment(b, f, frames[f], &pi, refs, now);
			if (xevb_builder_stats(b)->segs_received != before + 1)
				FAIL("segment not counted once");
			check(b);
			continue;
		}
		if (res != XEVB_RES_MEP) {
			free_list[n_free++] = f; /* never the builder's */
			check(b);
			continue;
		}
		if (synthetic && pi.n_frags == 0)
			FAIL("synthetic frame misparsed");
		held[f] = true;
		xevb_builder_add_mep(b, f, frames[f], &pi, refless && pi.consec ? NULL : refs, now);
		check(b);
	}
	xevb_builder_flush(b);
	check(b);
	for (uint32_t i = 0; i < N_FRAMES; i++)
		if (held[i])
			FAIL("frame %u leaked after flush", i);
	if (xevb_builder_stats(b)->open_events || xevb_builder_stats(b)->frames_held)
		FAIL("open events or frames left after flush");
#ifdef FUZZ_BUILDER_DEBUG /* for a plain driver: what an input exercised */
	const struct xevb_builder_stats *st = xevb_builder_stats(b);
	fprintf(stderr, "rx %llu in %llu drops %llu/%llu/%llu/%llu/%llu/%llu events %llu/%llu/%llu/%llu eor %d\n",
		(unsigned long long)st->frags_received, (unsigned long long)st->frags_in_events,
		(unsigned long long)st->drops[0], (unsigned long long)st->drops[1],
		(unsigned long long)st->drops[2], (unsigned long long)st->drops[3],
		(unsigned long long)st->drops[4], (unsigned long long)st->drops[5],
		(unsigned long long)st->events_opened, (unsigned long long)st->events_complete,
		(unsigned long long)st->events_incomplete, (unsigned long long)st->events_discarded,
		st->run_ended);
	fprintf(stderr, "segments %llu: in %llu whole %llu dup %llu mismatched %llu dropped %llu partial %llu\n",
		(unsigned long long)st->segs_received, (unsigned long long)st->segs_in_frags,
		(unsigned long long)st->seg_frags_whole, (unsigned long long)st->segs_drops[XEVB_SEG_DUPLICATE],
		(unsigned long long)st->segs_drops[XEVB_SEG_MISMATCHED],
		(unsigned long long)st->segs_drops[XEVB_SEG_FRAG_DROPPED],
		(unsigned long long)st->segs_drops[XEVB_SEG_PARTIAL]);
#endif
	xevb_builder_free(b);
	return 0;
}

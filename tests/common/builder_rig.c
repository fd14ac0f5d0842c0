// SPDX-License-Identifier: GPL-2.0-only
/* Test rig for the builder core: see builder_rig.h. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include "wire/event_codec.h"
#include "wire/mep_write.h"
#include "builder_rig.h"

static uint8_t *frame_at(const struct rig *r, uint32_t f)
{
	return r->frames + (size_t)f * RIG_FRAME_SIZE;
}

static void on_release(void *ctx, uint32_t f)
{
	struct rig *r = ctx;

	cr_assert(lt(u32, f, r->n_frames), "released frame %u out of range", f);
	cr_assert(r->held[f], "frame %u released twice or never given", f);
	r->held[f] = false;
	/* Poison: a fragment still referenced would now fail its check. */
	memset(frame_at(r, f), 0xee, r->len[f]);
	r->free_list[r->n_free++] = f;
	r->releases++;
}

/* The CRC-32C of the first len bytes of the fragment of (source, event). */
static uint32_t rig_crc(uint16_t src, uint32_t ev, uint32_t len)
{
	uint8_t buf[256];
	uint32_t crc = 0;

	for (uint32_t at = 0; at < len; at += sizeof(buf)) {
		uint32_t n = len - at < sizeof(buf) ? len - at : (uint32_t)sizeof(buf);

		for (uint32_t k = 0; k < n; k++)
			buf[k] = rig_byte(src, ev, at + k);
		crc = xevb_crc32c(crc, buf, n);
	}
	return crc;
}

/*
 * A fragment that came in segments: pieces in held frames, one after the
 * other from 0 to its length, every byte the source's, the CRC the whole
 * fragment's.
 */
static void check_pieces(const struct rig *r, const struct xevb_event *ev, uint32_t i)
{
	const struct xevb_frag_pieces *fp = &ev->pieces[i];
	const struct xevb_frag_slot *fs = &ev->frags[i];
	uint16_t sid = ev->source_ids[i];
	uint32_t at = 0, crc = 0;

	cr_assert(gt(u32, fp->n, 0));
	cr_assert(eq(u32, fs->frame_idx, fp->p[0].frame_idx), "event %u source %u: first piece", ev->event_id,
		  sid);
	cr_assert(eq(u16, fs->payload_off, fp->p[0].payload_off));
	for (uint32_t k = 0; k < fp->n; k++) {
		const struct xevb_seg_piece *p = &fp->p[k];
		const uint8_t *b;

		cr_assert(lt(u32, p->frame_idx, r->n_frames));
		cr_assert(r->held[p->frame_idx], "event %u source %u piece %u: frame %u already released",
			  ev->event_id, sid, k, p->frame_idx);
		cr_assert(eq(u16, p->seg_offset, at), "event %u source %u piece %u: a gap or overlap",
			  ev->event_id, sid, k);
		b = ev->frame_data[p->frame_idx] + p->payload_off;
		for (uint32_t j = 0; j < p->bytes; j++)
			cr_assert(eq(u8, b[j], rig_byte(sid, ev->event_id, at + j)), "event %u source %u byte %u",
				  ev->event_id, sid, at + j);
		crc = xevb_crc32c(crc, b, p->bytes);
		at += p->bytes;
	}
	cr_assert(eq(u32, at, fs->length), "event %u source %u: pieces cover %u of %u", ev->event_id, sid, at,
		  fs->length);
	cr_assert(eq(u32, crc, xevb_event_crc(ev, i)), "event %u source %u: CRC", ev->event_id, sid);
}

/* An event with pieces: both encoders give the same bytes, which decode to the fragments. */
static void check_encoding(const struct xevb_event *ev)
{
	size_t cap = xevb_event_wire_size(ev), total = 0, iov_total, nf = 0;
	size_t sl = XEVB_EVT_SCRATCH_MAX(ev->n_expected), niov_max = XEVB_EVT_IOV_MAX_SEG(ev->n_expected);
	uint8_t *flat = malloc(cap), *viaiov = malloc(cap), *scratch = malloc(sl);
	struct iovec *iov = calloc(niov_max, sizeof(*iov));
	struct xevb_decoded_event de;
	struct xevb_decoded_frag df;
	const uint8_t *pos = NULL;
	char err[128];
	int n;

	cr_assert(flat && viaiov && scratch && iov);
	cr_assert(eq(int, xevb_event_encode_into(ev, 7, flat, cap, &total), 0));
	cr_assert(eq(sz, total, cap));
	n = xevb_event_encode(ev, 7, scratch, sl, iov, niov_max, &iov_total);
	cr_assert(gt(int, n, 0));
	cr_assert(eq(sz, iov_total, cap));
	for (int k = 0, at = 0; k < n; at += (int)iov[k].iov_len, k++)
		memcpy(viaiov + at, iov[k].iov_base, iov[k].iov_len);
	cr_assert(eq(int, memcmp(flat, viaiov, cap), 0), "event %u: the two encoders differ", ev->event_id);
	cr_assert(eq(int, xevb_event_decode_verify(flat, cap, XEVB_VERIFY_CRC, &de, err, sizeof(err)), 0),
		  "event %u: %s", ev->event_id, err);
	while (xevb_event_next_frag(&de, &pos, &df)) {
		for (uint32_t k = 0; k < df.length; k++)
			cr_assert(eq(u8, df.payload[k], rig_byte(df.source_id, ev->event_id, k)),
				  "event %u source %u: encoded byte %u", ev->event_id, df.source_id, k);
		nf++;
	}
	cr_assert(eq(sz, nf, ev->n_frags));
	free(flat);
	free(viaiov);
	free(scratch);
	free(iov);
}

static void on_emit(void *ctx, const struct xevb_event *ev)
{
	struct rig *r = ctx;
	struct rig_event *re;
	uint32_t got = 0;

	if (r->n_ev == r->cap_ev) {
		r->cap_ev = r->cap_ev ? 2 * r->cap_ev : 256;
		r->ev = realloc(r->ev, r->cap_ev * sizeof(*r->ev));
		cr_assert(not(eq(ptr, r->ev, NULL)));
	}
	re = &r->ev[r->n_ev++];
	memset(re, 0, sizeof(*re));
	re->event_id = ev->event_id;
	re->flags = ev->flags;
	re->n_frags = ev->n_frags;
	re->n_expected = ev->n_expected;
	re->open_ns = ev->open_ns;
	re->wire_size = xevb_event_wire_size(ev);
	/* The builder's running sum: set whenever a fragment is in, and exact. */
	cr_assert(eq(int, ev->frag_wire_bytes != 0, ev->n_frags != 0),
		  "event %u: frag_wire_bytes %u with %u fragments", ev->event_id, ev->frag_wire_bytes,
		  ev->n_frags);
	cr_assert(eq(u32, xevb_event_wire_size_fast(ev), re->wire_size),
		  "event %u (%u of %u fragments, flags %u): O(1) size != walked size", ev->event_id, ev->n_frags,
		  ev->n_expected, ev->flags);
	cr_assert(eq(u32, ev->n_expected, r->cfg.n_sources));
	for (uint32_t i = 0; i < ev->n_expected; i++) {
		uint16_t sid = ev->source_ids[i];
		const struct xevb_frag_slot *fs = &ev->frags[i];

		if (i > 0)
			cr_assert(gt(u16, sid, ev->source_ids[i - 1]), "sources not ascending");
		if (fs->frame_idx == UINT32_MAX)
			continue;
		cr_assert(lt(u32, fs->frame_idx, r->n_frames));
		cr_assert(r->held[fs->frame_idx], "event %u source %u: frame %u already released", ev->event_id,
			  sid, fs->frame_idx);
		cr_assert(eq(ptr, (void *)ev->frame_data[fs->frame_idx], frame_at(r, fs->frame_idx)));
		if (xevb_event_npieces(ev, i)) {
			check_pieces(r, ev, i);
			re->present[sid / 64] |= 1ull << (sid % 64);
			got++;
			continue;
		}
		cr_assert(eq(u16, fs->length, rig_len(sid, ev->event_id)), "event %u source %u length",
			  ev->event_id, sid);
		const uint8_t *p = xevb_event_payload(ev, i);
		for (uint32_t k = 0; k < fs->length; k++)
			cr_assert(eq(u8, p[k], rig_byte(sid, ev->event_id, k)),
				  "event %u source %u payload byte %u", ev->event_id, sid, k);
		cr_assert(eq(u32, xevb_event_crc(ev, i), xevb_crc32c(0, p, fs->length)));
		re->present[sid / 64] |= 1ull << (sid % 64);
		got++;
	}
	cr_assert(eq(u32, got, ev->n_frags), "event %u: n_frags %u, %u present", ev->event_id, ev->n_frags, got);
	cr_assert(eq(int, !!(ev->flags & XEVB_EVT_F_INCOMPLETE), got != ev->n_expected),
		  "event %u: INCOMPLETE flag vs %u/%u fragments", ev->event_id, got, ev->n_expected);
	if (ev->pieces)
		check_encoding(ev);
}

void rig_init(struct rig *r, const uint16_t *sources, uint32_t n_sources, uint32_t window, uint32_t n_frames,
	      const struct xevb_builder_cfg *extra)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->sources, sources, n_sources * sizeof(*sources));
	if (extra)
		r->cfg = *extra;
	if (!r->cfg.run_number)
		r->cfg.run_number = 1; /* the rig's default run; tests send run 1 */
	r->cfg.sources = r->sources;
	r->cfg.n_sources = n_sources;
	r->cfg.window = window;
	r->cfg.n_frames = n_frames;
	r->cfg.emit = on_emit;
	r->cfg.frame_release = on_release;
	r->cfg.ctx = r;
	r->pcfg.udp_port = XEVB_DEFAULT_UDP_PORT;
	r->pcfg.ip_proto = XEVB_DEFAULT_IP_PROTO;
	r->n_frames = n_frames;
	r->frames = malloc((size_t)n_frames * RIG_FRAME_SIZE);
	r->held = calloc(n_frames, sizeof(*r->held));
	r->len = calloc(n_frames, sizeof(*r->len));
	r->free_list = malloc(n_frames * sizeof(*r->free_list));
	cr_assert(r->frames && r->held && r->len && r->free_list);
	/* Pop order 0, 1, 2...: tests can predict frame indices. */
	for (uint32_t i = 0; i < n_frames; i++)
		r->free_list[i] = n_frames - 1 - i;
	r->n_free = n_frames;
	r->b = xevb_builder_new(&r->cfg);
	cr_assert(not(eq(ptr, r->b, NULL)), "xevb_builder_new failed");
}

void rig_check(struct rig *r)
{
	char msg[256];

	cr_assert(xevb_builder_check(r->b, msg, sizeof(msg)), "invariant: %s", msg);
	cr_assert(eq(u64, rig_frames_held(r), xevb_builder_stats(r->b)->frames_held));
}

void rig_fini_none_held(struct rig *r)
{
	cr_assert(eq(u32, rig_frames_held(r), 0), "%u frames still held before the flush", rig_frames_held(r));
	rig_fini(r);
}

void rig_fini(struct rig *r)
{
	rig_check(r);
	xevb_builder_flush(r->b);
	rig_check(r);
	cr_assert(eq(u64, xevb_builder_stats(r->b)->open_events, 0));
	cr_assert(eq(u32, r->n_free, r->n_frames), "frames leaked: %u of %u back", r->n_free, r->n_frames);
	xevb_builder_free(r->b);
	free(r->frames);
	free(r->held);
	free(r->len);
	free(r->free_list);
	free(r->ev);
	memset(r, 0, sizeof(*r));
}

uint32_t rig_send(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, const uint32_t *ids, uint32_t n)
{
	return rig_send_part(r, src, flags, run, ids, n, 0, n);
}

/* The header of the rig's next MEP from src (its packet_seq counted); the records are the caller's. */
static struct xevb_mep_params mep_params(struct rig *r, uint16_t src, uint8_t flags, uint32_t run)
{
	struct xevb_mep_params p = {
		.saddr = 0x0a000001,
		.daddr = 0x0a000002,
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.udp_dport = r->use_udp ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = src,
		.flags = flags,
		.run_number = run,
		.packet_seq = r->seq[src]++,
	};

	return p;
}

/* A free frame of the pool, for the next MEP; fails the test when none is left. */
static uint32_t take_frame(struct rig *r)
{
	cr_assert(gt(u32, r->n_free, 0), "frame pool empty: %u frames held", rig_frames_held(r));
	return r->free_list[--r->n_free];
}

uint32_t rig_send_part(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, const uint32_t *ids, uint32_t n,
		       uint32_t from, uint32_t count)
{
	static struct xevb_frag_ref refs[XEVB_MAX_FRAGS_PER_MEP];
	static uint16_t lens[XEVB_MAX_FRAGS_PER_MEP];
	static uint8_t pay[XEVB_MAX_FRAGS_PER_MEP][64];
	static const uint8_t *pays[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_mep_params p = mep_params(r, src, flags, run);
	struct xevb_pkt_info pi;
	uint32_t f;
	ssize_t len;
	int res;

	for (uint32_t j = 0; j < n; j++) {
		lens[j] = rig_len(src, ids[j]);
		for (uint32_t k = 0; k < lens[j]; k++)
			pay[j][k] = rig_byte(src, ids[j], k);
		pays[j] = pay[j];
	}
	p.event_id = ids;
	p.n_frags = n;
	p.frag_len = lens;
	p.payload = pays;
	f = take_frame(r);
	cr_assert(not(r->held[f]));
	len = xevb_write_frame(frame_at(r, f), RIG_FRAME_SIZE, &p);
	cr_assert(gt(sz, (size_t)len, 0), "xevb_write_frame");
	res = xevb_classify(frame_at(r, f), frame_at(r, f) + len, (uint32_t)len, &r->pcfg, &pi, refs);
	cr_assert(eq(int, res, XEVB_RES_MEP));
	r->held[f] = true;
	r->len[f] = (uint32_t)len;
	r->sent++;
	pi.shed_run = r->shed_run;
	if (from || count != n) {
		/* A share of the MEP, as a multi-worker hand-off passes it. */
		cr_assert(le(u32, from + count, n));
		pi.n_frags = (uint16_t)count;
		pi.first_event_id = refs[from].event_id;
		pi.consec = 0;
		xevb_builder_add_mep(r->b, f, frame_at(r, f), &pi, refs + from, r->now);
		return f;
	}
	xevb_builder_add_mep(r->b, f, frame_at(r, f), &pi,
			     pi.consec && r->refless_every && r->sent % r->refless_every == 0 ? NULL : refs,
			     r->now);
	return f;
}

uint32_t rig_send_segment(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, uint32_t event,
			  uint16_t frag_len, uint16_t seg_off, uint16_t seg_bytes)
{
	return rig_send_segment_crc(r, src, flags, run, event, frag_len, seg_off, seg_bytes,
				    rig_crc(src, event, frag_len));
}

uint32_t rig_send_segment_crc(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, uint32_t event,
			      uint16_t frag_len, uint16_t seg_off, uint16_t seg_bytes, uint32_t crc)
{
	static uint8_t pay[65536];
	const uint8_t *pays[1] = { pay };
	struct xevb_mep_params p = mep_params(r, src, flags & ~XEVB_MEP_F_SEGMENT, run);
	static struct xevb_frag_ref ref;
	struct xevb_pkt_info pi;
	uint8_t *fr, *rec;
	uint32_t f;
	ssize_t len;

	p.event_id = &event;
	p.n_frags = 1;
	p.frag_len = &seg_bytes;
	p.payload = pays;
	for (uint32_t k = 0; k < seg_bytes; k++)
		pay[k] = rig_byte(src, event, seg_off + k);
	f = take_frame(r);
	fr = frame_at(r, f);
	/* A one-record MEP made a segment: independent of how the writer segments. */
	len = xevb_write_frame(fr, RIG_FRAME_SIZE, &p);
	cr_assert(gt(sz, (size_t)len, 0), "xevb_write_frame");
	cr_assert(eq(int, xevb_classify(fr, fr + len, (uint32_t)len, &r->pcfg, &pi, NULL), XEVB_RES_MEP));
	rec = fr + pi.mep_off + XEVB_MEP_HLEN;
	fr[pi.mep_off + 3] |= XEVB_MEP_F_SEGMENT;
	xevb_st16(rec + 4, frag_len);
	xevb_st16(rec + 6, seg_off);
	xevb_st32(rec + 8, crc);
	cr_assert(eq(int, xevb_classify(fr, fr + len, (uint32_t)len, &r->pcfg, &pi, &ref), XEVB_RES_SEGMENT),
		  "segment %u+%u of %u", seg_off, seg_bytes, frag_len);
	r->held[f] = true;
	r->len[f] = (uint32_t)len;
	r->sent++;
	pi.shed_run = r->shed_run;
	xevb_builder_add_segment(r->b, f, fr, &pi, &ref, r->now);
	return f;
}

uint32_t rig_send_range(struct rig *r, uint16_t src, uint8_t flags, uint32_t run, uint32_t first, uint32_t n)
{
	static uint32_t ids[XEVB_MAX_FRAGS_PER_MEP];

	for (uint32_t j = 0; j < n; j++)
		ids[j] = first + j;
	return rig_send(r, src, flags, run, ids, n);
}

const struct rig_event *rig_find(const struct rig *r, uint32_t event_id)
{
	for (size_t i = 0; i < r->n_ev; i++)
		if (r->ev[i].event_id == event_id)
			return &r->ev[i];
	return NULL;
}

bool rig_has(const struct rig_event *e, uint16_t src)
{
	return e->present[src / 64] >> (src % 64) & 1;
}

uint32_t rig_frames_held(const struct rig *r)
{
	return r->n_frames - r->n_free;
}

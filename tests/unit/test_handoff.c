// SPDX-License-Identifier: GPL-2.0-only
/*
 * Multi-queue receive: the SPSC hand-off ring (order, capacity, wrap, two
 * threads) and event ownership (owner function, splitting a MEP by owner,
 * and the owner's walk over a frame: every record reaches exactly one
 * owner, with the fields the parser saw).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "rx/handoff.h"
#include "wire/mep_write.h"
#include "../common/builder_rig.h"

TestSuite(handoff, .timeout = 60);

Test(handoff, spsc_rejects_bad_sizes)
{
	struct xevb_spsc r;

	cr_assert(eq(int, xevb_spsc_init(&r, 0, 4), -EINVAL));
	cr_assert(eq(int, xevb_spsc_init(&r, 12, 4), -EINVAL));
	cr_assert(eq(int, xevb_spsc_init(&r, 16, 0), -EINVAL));
	cr_assert(eq(int, xevb_spsc_init(&r, 16, 4), 0));
	xevb_spsc_free(&r);
}

Test(handoff, spsc_fifo_capacity_and_wrap)
{
	struct xevb_spsc r;
	uint32_t next_in = 0, next_out = 0;

	cr_assert(eq(int, xevb_spsc_init(&r, 8, sizeof(uint32_t)), 0));
	/* Nothing is visible before publish. */
	*(uint32_t *)xevb_spsc_slot(&r) = next_in++;
	xevb_spsc_push(&r);
	cr_assert(eq(u32, xevb_spsc_peek(&r, 64), 0));
	cr_assert(xevb_spsc_empty(&r));
	cr_assert(xevb_spsc_publish(&r));
	cr_assert(not(xevb_spsc_publish(&r))); /* nothing new */
	cr_assert(eq(u32, xevb_spsc_peek(&r, 64), 1));
	/* Fill to capacity: the 9th slot is refused, never overwritten. */
	for (int i = 0; i < 7; i++) {
		*(uint32_t *)xevb_spsc_slot(&r) = next_in++;
		xevb_spsc_push(&r);
	}
	cr_assert(eq(ptr, xevb_spsc_slot(&r), NULL));
	xevb_spsc_publish(&r);
	cr_assert(eq(u32, xevb_spsc_peek(&r, 64), 8));
	cr_assert(eq(u32, xevb_spsc_peek(&r, 3), 3));
	/* Many laps, odd batch sizes: strict FIFO. */
	for (int lap = 0; lap < 10000; lap++) {
		uint32_t n = xevb_spsc_peek(&r, 1 + lap % 5);
		for (uint32_t i = 0; i < n; i++)
			cr_assert(eq(u32, *(uint32_t *)xevb_spsc_at(&r, i), next_out++));
		xevb_spsc_release(&r, n);
		for (int k = 0; k < 1 + lap % 4; k++) {
			uint32_t *p = xevb_spsc_slot(&r);
			if (!p)
				break;
			*p = next_in++;
			xevb_spsc_push(&r);
		}
		xevb_spsc_publish(&r);
		cr_assert(le(u32, next_in - next_out, 8));
	}
	cr_assert(gt(u32, next_out, 10000));
	xevb_spsc_free(&r);
}

#define N_ITEMS 2000000u

static void *producer(void *arg)
{
	struct xevb_spsc *r = arg;
	uint32_t v = 0;

	while (v < N_ITEMS) {
		uint32_t b = 0;
		struct xevb_ho_ent *e;

		while (b < 32 && v < N_ITEMS && (e = xevb_spsc_slot(r))) {
			*e = (struct xevb_ho_ent){ .frame_idx = v,
						   .rec_off = (uint16_t)v,
						   .n_walk = (uint16_t)(v >> 16) };
			xevb_spsc_push(r);
			v++;
			b++;
		}
		xevb_spsc_publish(r);
	}
	return NULL;
}

Test(handoff, spsc_two_threads_in_order)
{
	struct xevb_spsc r;
	pthread_t th;
	uint32_t want = 0;

	cr_assert(eq(int, xevb_spsc_init(&r, 256, sizeof(struct xevb_ho_ent)), 0));
	cr_assert(eq(int, pthread_create(&th, NULL, producer, &r), 0));
	while (want < N_ITEMS) {
		uint32_t n = xevb_spsc_peek(&r, 64);
		for (uint32_t i = 0; i < n; i++) {
			const struct xevb_ho_ent *e = xevb_spsc_at(&r, i);
			/* Whole entries only: never a torn or stale one. */
			if (e->frame_idx != want || e->rec_off != (uint16_t)want ||
			    e->n_walk != (uint16_t)(want >> 16))
				cr_fatal("entry %u: got idx %u rec_off %u n_walk %u", want, e->frame_idx,
					 e->rec_off, e->n_walk);
			want++;
		}
		xevb_spsc_release(&r, n);
	}
	pthread_join(th, NULL);
	cr_assert(eq(u32, xevb_spsc_peek(&r, 64), 0));
	xevb_spsc_free(&r);
}

Test(handoff, owner_by_block)
{
	cr_assert(eq(u32, xevb_owner(0, 10, 2), 0));
	cr_assert(eq(u32, xevb_owner(1023, 10, 2), 0));
	cr_assert(eq(u32, xevb_owner(1024, 10, 2), 1));
	cr_assert(eq(u32, xevb_owner(2048, 10, 2), 0));
	cr_assert(eq(u32, xevb_owner(5, 0, 3), 2));
	/*
	 * Every owner gets the same share of n * 2^shift consecutive ids; across
	 * the 2^32 wrap only for n a power of 2 (otherwise one owner gets two
	 * blocks in a row there: uneven for a moment, still a function of the id).
	 */
	for (uint32_t n = 1; n <= 5; n++) {
		uint32_t cnt[5] = { 0 }, base = (n & (n - 1)) ? 4096 * 3 * 5 : 0xffffff00u;
		for (uint32_t k = 0; k < n * 64; k++)
			cnt[xevb_owner(base + k, 6, n)]++;
		for (uint32_t w = 0; w < n; w++)
			cr_assert(eq(u32, cnt[w], 64));
	}
}

static void refs(struct xevb_frag_ref *f, const uint32_t *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		f[i] = (struct xevb_frag_ref){ .event_id = ids[i] };
}

/* One owner's part of a plan: count records, from first to last, filtered by owner or not. */
static void assert_part(const struct xevb_ho_part *p, uint16_t count, uint16_t first, uint16_t last, bool filter)
{
	cr_assert(eq(u16, p->count, count));
	cr_assert(eq(u16, p->first, first));
	cr_assert(eq(u16, p->last, last));
	cr_assert(eq(int, p->filter, filter));
}

Test(handoff, plan_one_block_goes_whole)
{
	struct xevb_frag_ref f[4];
	struct xevb_ho_part p[XEVB_HO_MAX_WORKERS];
	uint32_t ids[] = { 1024 + 3, 1024 + 4, 1024 + 5, 1024 + 9 };

	refs(f, ids, 4);
	cr_assert(eq(u32, xevb_owner_plan(f, 4, 10, 2, p), 1));
	cr_assert(eq(u16, p[0].count, 0));
	assert_part(&p[1], 4, 0, 3, false);
}

Test(handoff, plan_split_at_block_boundary)
{
	struct xevb_frag_ref f[5];
	struct xevb_ho_part p[XEVB_HO_MAX_WORKERS];
	uint32_t ids[] = { 62, 63, 64, 65, 66 };

	refs(f, ids, 5);
	cr_assert(eq(u32, xevb_owner_plan(f, 5, 6, 2, p), 2));
	assert_part(&p[0], 2, 0, 1, false);
	assert_part(&p[1], 3, 2, 4, false);
}

Test(handoff, plan_interleaved_needs_filter)
{
	struct xevb_frag_ref f[6];
	struct xevb_ho_part p[XEVB_HO_MAX_WORKERS];
	uint32_t ids[] = { 10, 11, 12, 13, 14, 15 }; /* block 1: owners alternate */

	refs(f, ids, 6);
	cr_assert(eq(u32, xevb_owner_plan(f, 6, 0, 2, p), 2));
	assert_part(&p[0], 3, 0, 4, true);
	assert_part(&p[1], 3, 1, 5, true);
	/* Four workers, six ids: two owners get two, two get one. */
	cr_assert(eq(u32, xevb_owner_plan(f, 6, 0, 4, p), 4));
	cr_assert(eq(u16, (uint16_t)(p[0].count + p[1].count + p[2].count + p[3].count), 6));
}

/*
 * A random MEP split among owners: n records (some event_ids across the
 * 2^32 wrap, gaps now and then), written, parsed and planned over nw
 * owners of 2^shift-event blocks.
 */
struct random_mep {
	uint32_t n, shift, nw;
	struct xevb_pkt_info pi;
	struct xevb_frag_ref fr[1024];
	struct xevb_ho_part p[XEVB_HO_MAX_WORKERS];
	uint8_t frame[65536];
};

static void random_mep_plan(struct random_mep *m, uint64_t *rnd, int t, uint32_t run, uint32_t seq)
{
	static uint32_t ids[1024];
	static uint16_t lens[1024];
	const struct xevb_parse_cfg pcfg = { .udp_port = 23900, .ip_proto = 253 };
	struct xevb_mep_params mp = {
		.ip_proto = 253, .run_number = run, .saddr = 0x0101a8c6, .daddr = 0x0102a8c6
	};
	uint32_t e;
	ssize_t len;

	*rnd = *rnd * 6364136223846793005ull + 1442695040888963407ull;
	m->n = 1 + (uint32_t)(*rnd >> 33) % 40;
	m->shift = (uint32_t)(*rnd >> 20) % 8;
	m->nw = 1 + (uint32_t)(*rnd >> 10) % 4;
	e = (uint32_t)(*rnd >> 40) | (t % 7 == 0 ? 0xffffff00u : 0);
	for (uint32_t i = 0; i < m->n; i++) {
		ids[i] = e;
		lens[i] = (uint16_t)((*rnd >> (i % 32)) % 37);
		e += 1 + (i % 5 == 4 ? (uint32_t)(*rnd >> 50) % 300 : 0);
	}
	mp.udp_dport = t % 2 ? 23900 : 0;
	mp.source_id = (uint16_t)(t % 4096);
	mp.packet_seq = seq;
	mp.flags = t % 3 == 0 ? XEVB_MEP_F_END_OF_RUN : 0;
	mp.event_id = ids;
	mp.n_frags = m->n;
	mp.frag_len = lens;
	len = xevb_write_frame(m->frame, sizeof(m->frame), &mp);
	cr_assert(gt(sz, (size_t)len, 0));
	cr_assert(eq(int, xevb_classify(m->frame, m->frame + len, (uint32_t)len, &pcfg, &m->pi, m->fr),
		     XEVB_RES_MEP));
	xevb_owner_plan(m->fr, m->n, m->shift, m->nw, m->p);
}

/* Owner w's share (wp, its k records in mine) is exactly what the parser saw of its events. */
static void assert_share(const struct random_mep *m, uint32_t w, const struct xevb_pkt_info *wp,
			 const struct xevb_frag_ref *mine, uint32_t k)
{
	cr_assert(eq(u32, k, m->p[w].count));
	cr_assert(eq(u16, wp->n_frags, (uint16_t)k));
	cr_assert(eq(u16, wp->source_id, m->pi.source_id));
	cr_assert(eq(u32, wp->run_number, m->pi.run_number));
	cr_assert(eq(u32, wp->packet_seq, m->pi.packet_seq));
	cr_assert(eq(u8, wp->flags, m->pi.flags));
	for (uint32_t j = 0, i = 0; j < k; j++, i++) {
		while (xevb_owner(m->fr[i].event_id, m->shift, m->nw) != w)
			i++;
		cr_assert(eq(u32, mine[j].event_id, m->fr[i].event_id));
		cr_assert(eq(u32, mine[j].crc32c, m->fr[i].crc32c));
		cr_assert(eq(u16, mine[j].payload_off, m->fr[i].payload_off));
		cr_assert(eq(u16, mine[j].length, m->fr[i].length));
	}
}

/*
 * Random MEPs through the writer and the parser; every owner walks its
 * share as a worker would: each record reaches exactly one owner, the
 * owner of its event, with event_id, CRC, offset and length as parsed.
 */
Test(handoff, walk_gives_each_record_to_its_owner)
{
	static struct random_mep m;
	static struct xevb_frag_ref mine[1024];
	uint64_t rnd = 12345;

	for (int t = 0; t < 2000; t++) {
		uint32_t seen = 0;

		random_mep_plan(&m, &rnd, t, 7, (uint32_t)t);
		for (uint32_t w = 0; w < m.nw; w++) {
			const struct xevb_ho_part *p = &m.p[w];
			struct xevb_ho_ent ent = {
				.frame_idx = 0,
				.mep_off = m.pi.mep_off,
				.rec_off = p->count ? (uint16_t)(m.fr[p->first].payload_off - XEVB_REC_HLEN) : 0,
				.n_walk = p->count ? (uint16_t)(p->last - p->first + 1) : 0,
				.flags = p->filter ? XEVB_HO_F_FILTER : 0,
			};
			struct xevb_pkt_info wp;
			uint32_t k = xevb_ho_walk(m.frame, &ent, m.shift, m.nw, w, &wp, mine);

			assert_share(&m, w, &wp, mine, k);
			seen += k;
		}
		cr_assert(eq(u32, seen, m.n));
	}
}

/*
 * The dense hand-off: random MEPs packed for every owner through a small
 * ref ring (so refs wrap around it, and some shares find it full and fall
 * back to the walk), then unpacked as the owner does: each record reaches
 * exactly one owner, with the fields the parser saw, and the owner reads
 * the MEP header fields from the entry.
 */
Test(handoff, pack_unpack_dense_refs_or_walk)
{
	static struct random_mep m;
	static struct xevb_frag_ref scratch[1024];
	struct xevb_spsc refs;
	uint64_t rnd = 777;
	uint32_t dense = 0, walked = 0, wrapped = 0, cursor = 0;

	cr_assert(eq(int, xevb_spsc_init(&refs, 64, sizeof(struct xevb_frag_ref)), 0));
	for (int t = 0; t < 3000; t++) {
		uint32_t seen = 0, nent = 0;
		struct xevb_ho_ent ent[XEVB_HO_MAX_WORKERS];

		random_mep_plan(&m, &rnd, t, 9, (uint32_t)t * 77u);
		/* The producer packs every share first (refs queue up), then the owners unpack in order. */
		for (uint32_t w = 0; w < m.nw; w++) {
			if (!m.p[w].count && !(m.pi.flags & XEVB_MEP_F_END_OF_RUN))
				continue;
			if (xevb_ho_pack(&ent[w], &refs, 5, &m.pi, m.fr, &m.p[w], m.shift, m.nw, w))
				dense++;
			else
				walked++;
			nent++;
		}
		cr_assert(gt(u32, nent, 0));
		for (uint32_t w = 0; w < m.nw; w++) {
			struct xevb_pkt_info wp;
			const struct xevb_frag_ref *mine;

			if (!m.p[w].count && !(m.pi.flags & XEVB_MEP_F_END_OF_RUN))
				continue;
			cr_assert(eq(u32, ent[w].frame_idx, 5));
			mine = xevb_ho_unpack(m.frame, &ent[w], &refs, &cursor, m.shift, m.nw, w, &wp, scratch);
			wrapped += mine == scratch && (ent[w].flags & XEVB_HO_F_REFS);
			assert_share(&m, w, &wp, mine, m.p[w].count);
			cr_assert(eq(u16, wp.mep_off, m.pi.mep_off));
			if (m.p[w].count)
				cr_assert(eq(u32, wp.first_event_id, mine[0].event_id));
			seen += m.p[w].count;
		}
		cr_assert(eq(u32, seen, m.n));
		/* The owner lets the refs go every third MEP only (a batch): the ring fills up at times. */
		if (t % 3 == 2) {
			xevb_spsc_release(&refs, cursor);
			cursor = 0;
		}
	}
	/* All three ways were taken: dense, dense across the wrap, walked (ring full). */
	cr_assert(gt(u32, dense, 1000));
	cr_assert(gt(u32, wrapped, 10));
	cr_assert(gt(u32, walked, 10));
	xevb_spsc_free(&refs);
}

/*
 * An owner's builder (rx_counts_packets): it counts fragments, events and
 * END_OF_RUN as usual, but no packet and no packet_seq gap (the receiving
 * worker does), and its accounting check still holds per source.
 */
Test(handoff, owner_builder_leaves_packets_to_the_receiver)
{
	static struct rig R;
	static const uint16_t src[] = { 3, 9 };
	struct xevb_builder_cfg extra = { .rx_counts_packets = true };
	uint32_t ids[] = { 100, 102 };
	char msg[256];

	rig_init(&R, src, 2, 64, 16, &extra);
	rig_send_range(&R, 3, 0, 1, 100, 3);
	R.seq[3] += 5; /* a gap the receiver would count: not ours */
	rig_send(&R, 9, XEVB_MEP_F_END_OF_RUN, 1, ids, 2);
	rig_send_range(&R, 3, XEVB_MEP_F_END_OF_RUN, 1, 101, 1);
	{
		const struct xevb_builder_stats *st = xevb_builder_stats(R.b);
		cr_assert(eq(u64, st->packets, 0));
		cr_assert(eq(u64, st->src[3].packets, 0));
		cr_assert(eq(u64, st->src[3].seq_gaps, 0));
		cr_assert(eq(u64, st->frags_received, 6));
		cr_assert(eq(u64, st->src[3].frags_received, 4));
		cr_assert(eq(u64, st->drops[XEVB_DROP_DUPLICATE], 1));
		cr_assert(eq(u64, st->events_complete, 2)); /* 100 and 102 */
		cr_assert(st->run_ended);                   /* 101 flushed incomplete */
		cr_assert(eq(u64, st->events_incomplete, 1));
		cr_assert(xevb_builder_check(R.b, msg, sizeof(msg)), "%s", msg);
	}
	rig_fini(&R);
}

/*
 * The owner's side of a whole-MEP share, as a worker hands it over: the
 * MEP validated without refs, the entry packed with nothing in the ref
 * ring, unpacked without reading the frame (NULL) or the ref ring.
 */
static uint32_t send_whole(struct rig *r, struct xevb_spsc *ring, struct xevb_spsc *refs, uint16_t src,
			   uint8_t flags, uint32_t first, uint32_t n, uint32_t *singles)
{
	static uint32_t ids[XEVB_MAX_FRAGS_PER_MEP];
	static uint16_t lens[XEVB_MAX_FRAGS_PER_MEP];
	static uint8_t pay[XEVB_MAX_FRAGS_PER_MEP][64];
	static const uint8_t *pays[XEVB_MAX_FRAGS_PER_MEP];
	static struct xevb_frag_ref fr[XEVB_MAX_FRAGS_PER_MEP], scratch[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_mep_params p = {
		.saddr = 0x0a000001,
		.daddr = 0x0a000002,
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.source_id = src,
		.flags = flags,
		.run_number = 1,
		.packet_seq = r->seq[src]++,
		.event_id = ids,
		.n_frags = n,
		.frag_len = lens,
		.payload = pays,
	};
	struct xevb_pkt_info pi, wp;
	const struct xevb_frag_ref *mine;
	uint32_t f, head = refs->prod_head, cursor = 0;
	uint8_t *frame;
	ssize_t len;

	for (uint32_t j = 0; j < n; j++) {
		ids[j] = first + j;
		lens[j] = rig_len(src, ids[j]);
		for (uint32_t k = 0; k < lens[j]; k++)
			pay[j][k] = rig_byte(src, ids[j], k);
		pays[j] = pay[j];
	}
	cr_assert(gt(u32, r->n_free, 0));
	f = r->free_list[--r->n_free];
	frame = r->frames + (size_t)f * RIG_FRAME_SIZE;
	len = xevb_write_frame(frame, RIG_FRAME_SIZE, &p);
	cr_assert(gt(sz, (size_t)len, 0));
	cr_assert(eq(int, xevb_classify(frame, frame + len, (uint32_t)len, &r->pcfg, &pi, NULL), XEVB_RES_MEP));
	cr_assert(eq(u8, pi.consec, 1));
	r->held[f] = true;
	r->len[f] = (uint32_t)len;
	r->sent++;

	xevb_ho_pack_whole(xevb_spsc_slot(ring), f, &pi,
			   n == 1 ? xevb_ld16(frame + pi.mep_off + XEVB_MEP_HLEN + 4) : 0);
	xevb_spsc_push(ring);
	cr_assert(xevb_spsc_publish(ring));
	cr_assert(eq(u32, refs->prod_head, head), "a whole share wrote refs");

	cr_assert(eq(u32, xevb_spsc_peek(ring, 8), 1));
	const struct xevb_ho_ent *e = xevb_spsc_at(ring, 0);
	cr_assert(eq(u16, e->flags, XEVB_HO_F_WHOLE));
	cr_assert(eq(u32, e->frame_idx, f));
	mine = xevb_ho_unpack(NULL, e, refs, &cursor, 10, 2, 1, &wp, scratch);
	cr_assert(eq(u32, cursor, 0));
	cr_assert(eq(u16, wp.mep_off, pi.mep_off));
	cr_assert(eq(u16, wp.mep_len, pi.mep_len));
	cr_assert(eq(u16, wp.source_id, pi.source_id));
	cr_assert(eq(u32, wp.run_number, pi.run_number));
	cr_assert(eq(u32, wp.packet_seq, pi.packet_seq));
	cr_assert(eq(u8, wp.flags, pi.flags));
	cr_assert(eq(u16, wp.n_frags, pi.n_frags));
	cr_assert(eq(u32, wp.first_event_id, first));
	cr_assert(eq(u8, wp.consec, 1));
	if (n == 1) {
		/* A run of one: its ref from the entry, as the parser would give it. */
		cr_assert(eq(ptr, (void *)mine, scratch));
		cr_assert(eq(int, xevb_classify(frame, frame + len, (uint32_t)len, &r->pcfg, &pi, fr),
			     XEVB_RES_MEP));
		cr_assert(eq(u32, mine[0].event_id, fr[0].event_id));
		cr_assert(eq(u16, mine[0].payload_off, fr[0].payload_off));
		cr_assert(eq(u16, mine[0].length, fr[0].length));
		(*singles)++;
	} else {
		cr_assert(eq(ptr, (void *)mine, NULL));
	}
	xevb_builder_add_mep(r->b, f, frame, &wp, mine, r->now);
	xevb_spsc_release(ring, 1);
	return f;
}

/*
 * Whole-MEP shares without refs: an owner fed only hand-off entries builds
 * exactly what a builder fed the parsed MEPs with their refs builds (same
 * events, flags, fragments, sizes, counters), over runs that join, MEPs of
 * one record, lost and duplicated MEPs, timeouts and END_OF_RUN; the rig
 * checks every payload and CRC in the frames as each event is emitted.
 */
Test(handoff, whole_share_without_refs_builds_the_same)
{
	static struct rig A, B;
	static const uint16_t src[] = { 2, 5, 11 };
	struct xevb_builder_cfg extra = { .rx_counts_packets = true, .timeout_ns = 1000 };
	struct xevb_spsc ring, refs;
	uint64_t rnd = 4242;
	uint32_t e = 0xfffff000u, singles = 0; /* crosses the 2^32 wrap on the way */
	char msg[256];

	rig_init(&A, src, 3, 256, 1024, &extra);
	rig_init(&B, src, 3, 256, 1024, &extra);
	cr_assert(eq(int, xevb_spsc_init(&ring, 8, sizeof(struct xevb_ho_ent)), 0));
	cr_assert(eq(int, xevb_spsc_init(&refs, 64, sizeof(struct xevb_frag_ref)), 0));
	for (int t = 0; t < 400; t++) {
		uint32_t n;

		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		n = (rnd >> 33) % 4 == 0 ? 1 : 1 + (uint32_t)(rnd >> 35) % 30;
		for (uint32_t k = 0; k < 3; k++) {
			uint16_t s = src[(k + (uint32_t)(rnd >> 20)) % 3]; /* sources in varying order */
			uint32_t m = n, at = e;

			if ((rnd >> (24 + k)) % 23 == 0)
				continue; /* lost: events time out */
			if ((rnd >> (30 + k)) % 29 == 0 && n > 2)
				m = n - 1; /* another packing: no run to join */
			if ((rnd >> (40 + k)) % 31 == 0 && n > 2)
				at = e + 1, m = n - 1; /* shifted first id */
			rig_send_range(&A, s, 0, 1, at, m);
			send_whole(&B, &ring, &refs, s, 0, at, m, &singles);
			if ((rnd >> (50 + k)) % 37 == 0) { /* a duplicate */
				rig_send_range(&A, s, 0, 1, at, m);
				send_whole(&B, &ring, &refs, s, 0, at, m, &singles);
			}
		}
		e += n;
		A.now += 100;
		B.now += 100;
		xevb_builder_poll(A.b, A.now);
		xevb_builder_poll(B.b, B.now);
	}
	for (uint32_t k = 0; k < 3; k++) {
		rig_send_range(&A, src[k], XEVB_MEP_F_END_OF_RUN, 1, e, 5);
		send_whole(&B, &ring, &refs, src[k], XEVB_MEP_F_END_OF_RUN, e, 5, &singles);
	}
	{
		const struct xevb_builder_stats *a = xevb_builder_stats(A.b), *b = xevb_builder_stats(B.b);

		cr_assert(b->run_ended);
		cr_assert(gt(u64, b->meps_grouped, 300));
		cr_assert(gt(u32, singles, 50));
		cr_assert(gt(u64, b->events_incomplete, 10));
		cr_assert(gt(u64, b->drops[XEVB_DROP_DUPLICATE], 0));
		cr_assert(eq(u64, b->frags_received, a->frags_received));
		cr_assert(eq(u64, b->frags_in_events, a->frags_in_events));
		for (int r = 0; r < XEVB_DROP__COUNT; r++)
			cr_assert(eq(u64, b->drops[r], a->drops[r]), "drop reason %d", r);
		cr_assert(eq(u64, b->events_opened, a->events_opened));
		cr_assert(eq(u64, b->events_complete, a->events_complete));
		cr_assert(eq(u64, b->events_incomplete, a->events_incomplete));
		cr_assert(eq(u64, b->meps_grouped, a->meps_grouped));
		cr_assert(eq(u64, b->groups_split, a->groups_split));
		cr_assert(xevb_builder_check(B.b, msg, sizeof(msg)), "%s", msg);
	}
	cr_assert(eq(sz, B.n_ev, A.n_ev));
	for (size_t i = 0; i < A.n_ev; i++) {
		const struct rig_event *x = &A.ev[i], *y = &B.ev[i];

		cr_assert(eq(u32, y->event_id, x->event_id), "event %zu", i);
		cr_assert(eq(u8, y->flags, x->flags), "event %u", x->event_id);
		cr_assert(eq(u16, y->n_frags, x->n_frags), "event %u", x->event_id);
		cr_assert(eq(u32, y->wire_size, x->wire_size), "event %u", x->event_id);
		cr_assert(eq(int, memcmp(y->present, x->present, sizeof(x->present)), 0), "event %u", x->event_id);
	}
	xevb_spsc_free(&ring);
	xevb_spsc_free(&refs);
	rig_fini(&A);
	rig_fini(&B);
}

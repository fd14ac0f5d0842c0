// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's workers (user/rx/engine_dispatch.c, engine_workers.c) on
 * AF_XDP queues in memory (fake_xsk.h): MEPs delivered to the queues'
 * RX rings, each worker serving its queue in its own thread, events
 * owned in blocks by worker. Every event is built once, whole, by its
 * owner, with its bytes; every share handed over is taken; every frame
 * goes back to its own queue's fill ring exactly once; the hand-off
 * counters are exactly what the MEPs' ids call for.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <pthread.h>
#include <string.h>
#include "../common/fake_xsk.h"
#include "base/cli.h"
#include "out/output.h"
#include "rx/engine_workers.h"
#include "rx/handoff.h"
#include "wire/crc32c.h"
#include "wire/mep_write.h"

#define NQ     2
#define FPQ    256
#define FSIZE  2048
#define RXS    256
#define NSRC   3
#define NEV    96 /* events 0..NEV-1 */
#define SHIFT  2  /* blocks of 4 ids */
#define MAXREC 8
/* Segmented runs: source 3's fragment of every event 8k + 5 is this long, in MEPs of SEG_BUDGET bytes. */
#define SEG_LEN    3000
#define SEG_BUDGET 1400

static struct fake_xsk f;
static const uint16_t sources[NSRC] = { 1, 2, 3 };

struct sent_mep {
	uint32_t q, first, n;
	bool eor;
};

/* What the test expects of the engine, from the MEPs it delivers. */
struct plan {
	struct sent_mep mep[NEV * NSRC];
	uint32_t n_mep, per_q[NQ], chunk[NQ], seg_packets;
	uint64_t ho_sent, ho_whole, split, eor_notices;
};

static struct {
	pthread_mutex_t lk;
	uint32_t built[NEV];
	uint32_t bad_bytes, incomplete, pieced;
} got = { .lk = PTHREAD_MUTEX_INITIALIZER };

static uint8_t pay_byte(uint16_t src, uint32_t ev, uint32_t i)
{
	return (uint8_t)(src * 7u + ev * 13u + i * 31u);
}

static bool seg_on;

static bool segmented(uint16_t src, uint32_t ev)
{
	return seg_on && src == sources[2] && ev % 8 == 5;
}

static uint16_t pay_len(uint16_t src, uint32_t ev)
{
	return segmented(src, ev) ? SEG_LEN : (uint16_t)(4 + (src * 5u + ev * 3u) % 37u);
}

/* A fragment put together from segments: every byte once, in its place. */
static uint32_t bad_pieces(const struct xevb_event *ev, uint32_t i)
{
	const struct xevb_frag_pieces *fp = &ev->pieces[i];
	uint32_t bad = 0, total = 0;

	for (uint32_t j = 0; j < fp->n; j++) {
		const struct xevb_seg_piece *sp = &fp->p[j];
		const uint8_t *p = ev->frame_data[sp->frame_idx] + sp->payload_off;

		for (uint32_t k = 0; k < sp->bytes; k++)
			bad += p[k] != pay_byte(ev->source_ids[i], ev->event_id, sp->seg_offset + k);
		total += sp->bytes;
	}
	return bad + (total != SEG_LEN);
}

/* The hook in front of the output: every event as the owner's builder emits it, its bytes checked. */
static void on_event(void *ctx, const struct xevb_event *ev)
{
	(void)ctx;
	pthread_mutex_lock(&got.lk);
	if (ev->event_id < NEV)
		got.built[ev->event_id]++;
	if ((ev->flags & XEVB_EVT_F_INCOMPLETE) || ev->n_frags != NSRC)
		got.incomplete++;
	for (uint32_t i = 0; i < ev->n_expected; i++) {
		const struct xevb_frag_slot *s = &ev->frags[i];
		const uint8_t *p;

		if (s->frame_idx == UINT32_MAX || s->length != pay_len(ev->source_ids[i], ev->event_id)) {
			got.bad_bytes++;
			continue;
		}
		if (ev->pieces && ev->pieces[i].n) {
			got.bad_bytes += bad_pieces(ev, i);
			got.pieced++;
			continue;
		}
		p = ev->frame_data[s->frame_idx] + s->payload_off;
		for (uint32_t k = 0; k < s->length; k++)
			got.bad_bytes += p[k] != pay_byte(ev->source_ids[i], ev->event_id, k);
	}
	pthread_mutex_unlock(&got.lk);
}

/* The share counters the dispatch rules call for when worker r receives this MEP. */
static void expect_shares(struct plan *pl, uint32_t r, uint32_t first, uint32_t n, bool eor)
{
	uint32_t count[NQ] = { 0 }, owners = 0;

	for (uint32_t k = 0; k < n; k++)
		count[xevb_owner(first + k, SHIFT, NQ)]++;
	for (uint32_t o = 0; o < NQ; o++)
		owners += count[o] > 0;
	if (!eor && owners == 1) {
		/* One block, or blocks of one owner: whole to its owner, or built where it came in. */
		bool one_block = !((first ^ (first + n - 1)) >> SHIFT);

		if (count[r] == n)
			return;
		pl->ho_sent++;
		pl->ho_whole += one_block;
		return;
	}
	pl->split += owners > 1;
	for (uint32_t o = 0; o < NQ; o++) {
		if (o == r || (!count[o] && !eor))
			continue;
		pl->ho_sent++;
		pl->eor_notices += !count[o];
	}
}

/* One MEP of events first..first+n-1 from source src into queue q's next chunk. */
static void deliver(struct plan *pl, uint32_t q, uint16_t src, uint32_t seq, uint32_t first, uint32_t n, bool eor)
{
	static uint8_t pay[MAXREC][64];
	const uint8_t *pays[MAXREC];
	uint16_t lens[MAXREC];
	uint8_t frame[FSIZE];
	struct xevb_mep_params p = {
		.saddr = 0x0a000001,
		.daddr = 0x0a000002,
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.source_id = src,
		.flags = eor ? XEVB_MEP_F_END_OF_RUN : 0,
		.run_number = 1,
		.packet_seq = seq,
		.first_event_id = first,
		.n_frags = n,
		.frag_len = lens,
		.payload = pays,
	};
	ssize_t len;

	cr_assert(le(u32, n, MAXREC));
	for (uint32_t k = 0; k < n; k++) {
		lens[k] = pay_len(src, first + k);
		for (uint32_t i = 0; i < lens[k]; i++)
			pay[k][i] = pay_byte(src, first + k, i);
		pays[k] = pay[k];
	}
	len = xevb_write_frame(frame, sizeof(frame), &p);
	cr_assert(gt(sz, (size_t)len, 0));
	cr_assert(lt(u32, pl->chunk[q], FPQ));
	fx_deliver_frame(&f, q, pl->chunk[q]++, frame, (uint32_t)len);
	pl->mep[pl->n_mep++] = (struct sent_mep){ q, first, n, eor };
	pl->per_q[q]++;
	expect_shares(pl, q, first, n, eor);
}

/* The segments of source src's fragment of event e (each a packet) into queue q. */
static void deliver_segments(struct plan *pl, uint32_t q, uint16_t src, uint32_t *seq, uint32_t e)
{
	static uint8_t pay[SEG_LEN], frame[FSIZE];
	const uint8_t *pays[1] = { pay };
	uint32_t n = xevb_seg_count(SEG_LEN, SEG_BUDGET), stride = xevb_seg_stride(SEG_BUDGET);

	for (uint32_t i = 0; i < SEG_LEN; i++)
		pay[i] = pay_byte(src, e, i);
	cr_assert(gt(u32, n, 1));
	for (uint32_t k = 0; k < n; k++) {
		struct xevb_mep_params p = {
			.saddr = 0x0a000001,
			.daddr = 0x0a000002,
			.ip_proto = XEVB_DEFAULT_IP_PROTO,
			.source_id = src,
			.flags = XEVB_MEP_F_SEGMENT,
			.run_number = 1,
			.packet_seq = (*seq)++,
			.first_event_id = e,
			.n_frags = 1,
			.frag_size = SEG_LEN,
			.payload = pays,
			.seg_offset = (uint16_t)(k * stride),
			.seg_budget = SEG_BUDGET,
			.seg_crc32c = xevb_crc32c(0, pay, SEG_LEN),
		};
		ssize_t len = xevb_write_frame(frame, sizeof(frame), &p);

		cr_assert(gt(sz, (size_t)len, 0));
		cr_assert(lt(u32, pl->chunk[q], FPQ));
		fx_deliver_frame(&f, q, pl->chunk[q]++, frame, (uint32_t)len);
		pl->n_mep++;
		pl->per_q[q]++;
		pl->seg_packets++;
		/* A segment goes whole to its event's owner, unless it came in there. */
		pl->ho_sent += xevb_owner(e, SHIFT, NQ) != q;
	}
}

/*
 * Each source cuts the events its own way: source 1 in MEPs of 4 aligned
 * to the blocks (whole), source 2 in 3s (split across blocks), source 3
 * one by one. A source's MEPs all come in on one queue (as RSS hashes its
 * address), sources 1 and 3 on queue 0, source 2 on queue 1: the order
 * END_OF_RUN relies on, behind the source's data on every path (its
 * queue, then one hand-off ring), holds. Each source's last MEP carries
 * END_OF_RUN; source 3 skips a packet_seq once, and with seg_on sends its
 * fragment of every event 8k + 5 in segments.
 */
static void deliver_run(struct plan *pl)
{
	static const uint32_t step[NSRC] = { 4, 3, 1 }, queue[NSRC] = { 0, 1, 0 };

	for (uint32_t s = 0; s < NSRC; s++) {
		uint32_t seq = 100;

		for (uint32_t e = 0; e < NEV; e += step[s]) {
			uint32_t n = e + step[s] > NEV ? NEV - e : step[s];

			if (s == 2 && e == 40)
				seq++; /* a packet lost before us: a gap, no event lacks it */
			if (segmented(sources[s], e))
				deliver_segments(pl, queue[s], sources[s], &seq, e);
			else
				deliver(pl, queue[s], sources[s], seq++, e, n, e + n == NEV);
		}
	}
}

struct stop_when {
	uint32_t want[NQ];
	uint64_t deadline;
};

/* Worker 0's duties: stop once every delivered descriptor was taken (bounded by a deadline). */
static bool duties(void *ctx, uint64_t now)
{
	struct stop_when *sw = ctx;

	for (uint32_t q = 0; q < NQ; q++)
		if (fx_rx_released(&f, q) < sw->want[q])
			return now > sw->deadline;
	/* Taken is not built: the rings between the workers drain at the stop. */
	return true;
}

static struct bw *start(uint32_t n_workers, struct xevb_output *out, struct stop_when *sw)
{
	static const int no_cpu[1] = { -1 };
	struct xevb_builder_cfg bc = {
		.sources = sources,
		.n_sources = NSRC,
		.window = 256,
		.timeout_ns = 10000000000ull,
		.run_number = 1,
	};
	struct bw_cfg c = {
		.xsk = &f.x,
		.n_workers = n_workers,
		.cpus = no_cpu,
		.n_cpus = 1,
		.owner_shift = SHIFT,
		.bcfg = bc,
		.pcfg = { .ip_proto = XEVB_DEFAULT_IP_PROTO },
		.out = out,
		.n_sources = NSRC,
		.poll_ms = 1,
		.wake_fd = -1,
		.rx_ring = RXS,
		.emit = on_event,
		.duties = duties,
		.duties_ctx = sw,
	};

	cr_assert(eq(int, xevb_output_open(out, &(struct xevb_output_opts){ .max_sources = NSRC }), 0));
	return bw_start(&c);
}

/* Every chunk delivered to queue q back in its fill ring once, none twice, nothing else. */
static void assert_fill_rings(const struct plan *pl)
{
	for (uint32_t q = 0; q < NQ; q++) {
		uint64_t addr[FPQ];
		uint8_t seen[FPQ] = { 0 };
		uint32_t n = fx_fill_take(&f, q, addr, FPQ);

		cr_assert(eq(u32, n, pl->per_q[q]), "queue %u: %u frames back of %u", q, n, pl->per_q[q]);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t c = (uint32_t)(addr[i] / FSIZE);

			cr_assert(lt(u32, c, pl->chunk[q]));
			cr_assert(eq(u8, seen[c]++, 0), "queue %u: chunk %u back twice", q, c);
		}
	}
}

static void run_engine(uint32_t n_workers, struct plan *pl, bool segments)
{
	struct xevb_output out;
	struct stop_when sw = { .deadline = xevb_now_ns() + 30000000000ull };
	struct bw *bw;
	struct bw_totals t;
	char msg[256];

	memset(&got.built, 0, sizeof(got.built));
	got.bad_bytes = got.incomplete = got.pieced = 0;
	seg_on = segments;
	fx_init(&f, NQ, FPQ, FSIZE, RXS, 0, 0);
	deliver_run(pl);
	for (uint32_t q = 0; q < NQ; q++)
		sw.want[q] = pl->per_q[q];
	bw = start(n_workers, &out, &sw);
	cr_assert(not(eq(ptr, bw, NULL)));
	cr_assert(bw_run(bw));
	bw_stop(bw);
	cr_assert(bw_check(bw, msg, sizeof(msg)), "%s", msg);
	for (uint32_t e = 0; e < NEV; e++)
		cr_assert(eq(u32, got.built[e], 1), "event %u built %u times", e, got.built[e]);
	cr_assert(eq(u32, got.incomplete, 0));
	cr_assert(eq(u32, got.bad_bytes, 0));
	cr_assert(eq(u32, got.pieced, segments ? NEV / 8 : 0), "every segmented fragment put together");
	bw_totals(bw, &t);
	cr_assert(t.core.run_ended, "every worker's builder saw END_OF_RUN from every source");
	if (n_workers > 1) {
		uint64_t sent = 0, whole = 0, split = 0, notices = 0, frames = 0;

		for (uint32_t i = 0; i < n_workers; i++) {
			const struct bw_worker_stats *st = bw_worker_stats(bw, i);

			sent += st->ho_sent;
			whole += st->ho_whole;
			split += st->split_meps;
			notices += st->eor_notices;
			frames += st->rx_frames;
			cr_assert(eq(u64, st->rx_frames, pl->per_q[i]), "worker %u serves queue %u only", i, i);
		}
		cr_assert(eq(u64, frames, pl->n_mep));
		/* Blocks of 4 ids alternate between the two owners: each builds half the events. */
		for (uint32_t i = 0; i < n_workers; i++) {
			struct bw_worker_view v;

			cr_assert(bw_worker_view(bw, i, &v));
			cr_assert(eq(u64, v.core->events_complete, NEV / 2), "worker %u", i);
		}
		cr_assert(eq(u64, sent, pl->ho_sent));
		cr_assert(eq(u64, whole, pl->ho_whole));
		cr_assert(eq(u64, split, pl->split));
		cr_assert(eq(u64, notices, pl->eor_notices));
		cr_assert(eq(u64, t.rx_frames, pl->n_mep));
		/* The receiver counts a source's packets and gaps: its owners see only part of them. */
		cr_assert(eq(u64, t.core.src[sources[0]].packets, NEV / 4));
		cr_assert(
			eq(u64, t.core.src[sources[2]].packets, NEV + pl->seg_packets - (segments ? NEV / 8 : 0)));
		cr_assert(eq(u64, t.core.src[sources[2]].seq_gaps, 1));
		cr_assert(eq(u64, t.core.src[sources[1]].seq_gaps, 0));
	}
	bw_free(bw);
	xevb_output_close(&out);
	assert_fill_rings(pl);
	fx_free(&f);
}

/* Two workers, a queue each: shares handed over whole, split, and as END_OF_RUN notices. */
Test(engine_dispatch, two_workers_build_each_event_once_at_its_owner, .timeout = 120)
{
	static struct plan pl;

	memset(&pl, 0, sizeof(pl));
	run_engine(2, &pl, false);
	cr_assert(gt(u64, pl.ho_whole, 0));
	cr_assert(gt(u64, pl.split, 0));
	cr_assert(gt(u64, pl.eor_notices, 0));
}

/* One worker serving both queues: nothing handed over, the same events, every frame back. */
Test(engine_dispatch, one_worker_builds_everything, .timeout = 120)
{
	static struct plan pl;

	memset(&pl, 0, sizeof(pl));
	run_engine(1, &pl, false);
}

/* Source 3's big fragments in segments, each handed whole to its event's owner and put together there. */
Test(engine_dispatch, two_workers_segments_built_at_their_owner, .timeout = 120)
{
	static struct plan pl;

	memset(&pl, 0, sizeof(pl));
	run_engine(2, &pl, true);
	cr_assert(eq(u32, pl.seg_packets, NEV / 8 * xevb_seg_count(SEG_LEN, SEG_BUDGET)));
}

Test(engine_dispatch, one_worker_segments, .timeout = 120)
{
	static struct plan pl;

	memset(&pl, 0, sizeof(pl));
	run_engine(1, &pl, true);
}

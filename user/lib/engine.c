// SPDX-License-Identifier: GPL-2.0-only
/*
 * The receive engine (engine.h): the one-worker loop, in the calling
 * thread, over AF_XDP (with or without the XDP program's meta) or the
 * kernel socket; more workers through engine_workers.c.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xevb/cli.h>
#include <xevb/engine.h>
#include <xevb/probes.h>
#include <xevb/stall_drain.h>
#include <xevb/xsk_meta.h>
#include "engine_workers.h"

#define RX_BATCH     XEVB_ENGINE_RX_BATCH
#define RX_BATCH_MAX XEVB_ENGINE_RX_BATCH_MAX

static void emit_cb(void *ctx, const struct xevb_event *ev)
{
	struct xevb_engine *e = ctx;

	if (e->h.emit)
		e->h.emit(e->h.ctx, ev);
	else
		xevb_output_emit(&e->out, ev);
}

/* --no-forward: runs of events are counted whole, never made one by one. */
static void emit_run_cb(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes)
{
	struct xevb_engine *e = ctx;

	xevb_output_emit_run(&e->out, first, n, wire_bytes);
}

static void release_now(void *ctx, uint32_t idx)
{
	struct xevb_engine *e = ctx;

	if (!e->c.xdp)
		xevb_sock_release(&e->sock, idx);
	else if (__builtin_expect(idx >= e->ipfrag_base, 0))
		xevb_sock_release(&e->ipfrag, idx - e->ipfrag_base);
	else
		xevb_xsk_release(&e->xsk, idx);
}

static void release_cb(void *ctx, uint32_t idx)
{
	struct xevb_engine *e = ctx;
	/* --tune zerocopy=1: a send may still read the frame; it comes back later. */
	if (e->out.zc && xevb_output_hold(&e->out, idx))
		return;
	release_now(ctx, idx);
}

void xevb_engine_release_held(void *ctx, uint32_t idx)
{
	struct xevb_engine *e = ctx;

	/* More workers: the frame may be another's, whose fill ring only its thread touches. */
	if (e->bw)
		bw_release_held(e->bw, idx);
	else
		release_now(ctx, idx);
}

#define PREFETCH_AHEAD 2

static inline void prefetch_frame(const uint8_t *p, uint32_t len)
{
	for (uint32_t off = 0; off < len; off += 64)
		__builtin_prefetch(p + off, 0, 3);
}

/*
 * Meta prefetch: the meta sits in the line before the frame; the headers,
 * MEP header and first record in the frame's first one or two lines.
 */
#define META_AHEAD 4

static inline void prefetch_meta(const uint8_t *p)
{
	__builtin_prefetch(p - XEVB_XDP_META_LEN, 1, 3);
	__builtin_prefetch(p + 64, 0, 3);
}

/*
 * The full parser, then the builder; a frame that is no MEP goes back at
 * once (socket path: malformed packets land here; AF_XDP: only a bypassed
 * program lets one through, XDP judged every frame). A segment (wire
 * format 1.1) is the builder's to count (xevb_builder_add_segment).
 */
/* A frame xevb_classify judged res (pi, frags): into the core, or released and counted. */
static inline void add_parsed(struct xevb_engine *e, uint32_t idx, const uint8_t *data, int res,
			      const struct xevb_pkt_info *pi, const struct xevb_frag_ref *frags, uint64_t now)
{
	if (res == XEVB_RES_MEP) {
		xevb_builder_add_mep(e->b, idx, data, pi, frags, now);
		return;
	}
	if (res == XEVB_RES_SEGMENT) {
		xevb_builder_add_segment(e->b, idx, data, pi, frags, now);
		return;
	}
	e->rx_not_mep++;
	release_cb(e, idx);
}

static inline void parse_and_add(struct xevb_engine *e, uint32_t idx, const uint8_t *data, uint32_t len,
				 uint64_t now, struct xevb_frag_ref *frags)
{
	struct xevb_pkt_info pi;
	int res = xevb_classify(data, data + len, len, &e->pcfg, &pi, frags);

	/* Socket mode: a datagram over the MTU was IP-fragmented, no XDP program saw it whole. */
	if (!e->c.xdp && e->sock.mtu && len > e->sock.mtu && xevb_sock_src_refused(&e->sock, res, &pi, len)) {
		release_cb(e, idx);
		return;
	}
	add_parsed(e, idx, data, res, &pi, frags, now);
}

/*
 * AF_XDP with XDP meta: the parse result the program left in front of a
 * consecutive MEP, booked without a walk over its records (frags NULL);
 * any other frame through the full parser.
 */
static void handle_batch_meta(struct xevb_engine *e, uint32_t n, const uint32_t *idx, const uint8_t **data,
			      const uint32_t *len, uint64_t now, struct xevb_frag_ref *frags)
{
	for (uint32_t i = 0; i < n && i < META_AHEAD; i++)
		if (idx[i] < e->xsk.n_umem)
			prefetch_meta(data[i]);
	for (uint32_t i = 0; i < n; i++) {
		struct xevb_pkt_info pi;
		int res = -1;

		if (i + META_AHEAD < n && idx[i + META_AHEAD] < e->xsk.n_umem)
			prefetch_meta(data[i + META_AHEAD]);
		e->rx_bytes += len[i];
		/* Bounce buffers (jumbo frames) have no headroom, and never a meta. */
		if (idx[i] < e->xsk.n_umem) {
			res = xevb_xsk_meta_pi(data[i], len[i], e->meta_cookie, &pi);
			/* The UMEM is ours, writable: the chunk goes back without it. */
			xevb_xsk_meta_clear((uint8_t *)(uintptr_t)data[i]);
		}
		if (res == XEVB_RES_MEP) {
			e->rx_meta++;
			xevb_builder_add_mep(e->b, idx[i], data[i], &pi, NULL, now);
			continue;
		}
		e->rx_meta_fallback++;
		/* The parser reads every record: fetch the rest of the frame now. */
		prefetch_frame(data[i], len[i]);
		parse_and_add(e, idx[i], data[i], len[i], now, frags);
	}
	e->rx_frames += n;
	e->batches++;
}

static void handle_batch(struct xevb_engine *e, uint32_t n, const uint32_t *idx, const uint8_t **data,
			 const uint32_t *len, uint64_t now)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];

	XEVB_PROBE(batch_received, n, now);
	if (e->c.bare) {
		/* The receive ceiling: what the ring loop costs without the builder. */
		for (uint32_t i = 0; i < n; i++) {
			e->rx_bytes += len[i]; /* socket path; AF_XDP: replaced in snapshot() */
			release_cb(e, idx[i]);
		}
		e->rx_frames += n;
		e->batches++;
		return;
	}
	if (e->meta_cookie) {
		handle_batch_meta(e, n, idx, data, len, now, frags);
		return;
	}
	/*
	 * The kernel's copy into the UMEM leaves the frames in memory, not in
	 * our cache (and the RX ring holds thousands of frames): every record
	 * header the parser reads would be a stall. Fetch PREFETCH_AHEAD frames
	 * ahead so their lines arrive while earlier frames are built.
	 */
	for (uint32_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
		prefetch_frame(data[i], len[i]);
	for (uint32_t i = 0; i < n; i++) {
		if (i + PREFETCH_AHEAD < n)
			prefetch_frame(data[i + PREFETCH_AHEAD], len[i + PREFETCH_AHEAD]);
		e->rx_bytes += len[i];
		parse_and_add(e, idx[i], data[i], len[i], now, frags);
	}
	e->rx_frames += n;
	e->batches++;
}

/*
 * XDP path: datagrams the kernel reassembled from IPv4 fragments, through
 * the same parser and builder core as every frame (their frame indices
 * follow the AF_XDP ones).
 */
static uint32_t rx_ipfrag(struct xevb_engine *e, uint64_t now)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];
	uint32_t idx[XEVB_SOCK_BATCH], len[XEVB_SOCK_BATCH];
	const uint8_t *data[XEVB_SOCK_BATCH];
	int n = xevb_sock_rx(&e->ipfrag, idx, data, len);

	static bool warned;

	if (n <= 0) {
		if (n < 0 && !warned) {
			warned = true;
			xevb_warn(
				"receiving reassembled IPv4 datagrams failed: %s; IP-fragmented MEPs may be lost "
				"(the kernel counts them: nstat -a IpReasmOKs)",
				strerror(-n));
		}
		return 0;
	}
	for (int i = 0; i < n; i++) {
		uint32_t f = idx[i] + e->ipfrag_base;
		struct xevb_pkt_info pi;
		int res = xevb_classify(data[i], data[i] + len[i], len[i], &e->pcfg, &pi, frags);

		/* XDP never saw this MEP whole: --bind-src is judged here. */
		if (xevb_sock_src_refused(&e->ipfrag, res, &pi, len[i])) {
			release_cb(e, f);
			continue;
		}
		add_parsed(e, f, data[i], res, &pi, frags, now);
	}
	return (uint32_t)n;
}

void xevb_engine_pin(int cpu, uint32_t w)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		xevb_warn("worker %u: cannot pin to CPU %d; running unpinned", w, cpu);
}

void xevb_engine_bind_core(struct xevb_engine *e, struct xevb_builder_cfg *bc, bool emit_runs)
{
	bc->emit = emit_cb;
	bc->frame_release = release_cb;
	bc->ctx = e;
	bc->emit_run = emit_runs ? emit_run_cb : NULL;
}

static int poll_ms_for(uint32_t timeout_ms)
{
	return timeout_ms && timeout_ms < 200 ? (int)(timeout_ms / 2 + 1) : 100;
}

/* Worker 0's duties with more workers: shedding, the command's, the run's end. */
static bool worker0_duties(void *ctx, uint64_t now)
{
	struct xevb_engine *e = ctx;

	xevb_engine_shed_tick(e, now);
	if (*e->stop || (e->h.duties && e->h.duties(e->h.ctx, now)))
		return true;
	return e->c.exit_eor && bw_run_ended(e->bw);
}

/* --workers N: worker 0 in this thread (with the duties), the others in theirs. */
static bool run_workers(struct xevb_engine *e, const volatile sig_atomic_t *stop)
{
	const struct xevb_engine_cfg *c = &e->c;
	struct bw_cfg wc = {
		.xsk = &e->xsk,
		.n_workers = c->n_workers,
		.cpus = c->cpus,
		.n_cpus = c->n_cpus,
		.owner_shift = c->owner_shift,
		.bcfg = e->bcfg,
		.pcfg = e->pcfg,
		.meta_cookie = e->meta_cookie,
		.busy = c->busy,
		.bare = c->bare,
		.out = &e->out,
		.sinks = c->sinks,
		.n_sinks = c->n_sinks,
		.file = c->file,
		.n_sources = c->n_sources,
		.poll_ms = poll_ms_for(c->timeout_ms),
		.rx_ring = c->rx_ring,
		.wait_us = c->wait_us,
		.ipfrag = e->ipfrag_on ? &e->ipfrag : NULL,
		.duties = worker0_duties,
		.duties_ctx = e,
	};

	e->stop = stop;
	e->bw = bw_start(&wc);
	if (!e->bw)
		return false;
	if (e->h.mx)
		bw_metrics(e->bw, e->h.mx);
	bw_run(e->bw);
	bw_stop(e->bw);
	return true;
}

/* The one-worker loop's state between turns. */
struct one_loop {
	uint32_t idx[RX_BATCH_MAX], len[RX_BATCH_MAX];
	const uint8_t *data[RX_BATCH_MAX];
	/* Every queue, the reassembled datagrams' socket and the hooks' (the DFM's). */
	struct pollfd pfd[XEVB_XSK_MAX_QUEUES + 2];
	uint32_t npfd;
	int poll_ms;
	bool worked;
	struct xevb_stall_drain sd;
	uint32_t full_batch;
	uint32_t ipfrag_turn;
};

static void one_loop_init(struct xevb_engine *e, struct one_loop *L)
{
	const struct xevb_engine_cfg *c = &e->c;

	memset(L, 0, sizeof(*L));
	L->poll_ms = poll_ms_for(c->timeout_ms);
	L->sd.timeout_ns = (uint64_t)c->timeout_ms * 1000000ull;
	L->full_batch = c->xdp ? c->rx_batch * c->n_queues : XEVB_SOCK_BATCH;
	if (c->xdp)
		for (uint32_t q = 0; q < c->n_queues; q++)
			L->pfd[L->npfd++] = (struct pollfd){ .fd = e->xsk.q[q].fd, .events = POLLIN };
	if (e->ipfrag_on)
		L->pfd[L->npfd++] = (struct pollfd){ .fd = e->ipfrag.fd, .events = POLLIN };
	if (!c->xdp)
		L->pfd[L->npfd++] = (struct pollfd){ .fd = e->sock.fd, .events = POLLIN };
	if (e->h.fd >= 0)
		L->pfd[L->npfd++] = (struct pollfd){ .fd = e->h.fd, .events = POLLIN };
	if (e->h.poll_max_ms > 0 && L->poll_ms > e->h.poll_max_ms)
		L->poll_ms = e->h.poll_max_ms;
}

/* One batch from every queue; the reassembled datagrams now and then. */
static uint32_t one_rx_xdp(struct xevb_engine *e, struct one_loop *L, uint64_t now)
{
	const struct xevb_engine_cfg *c = &e->c;
	uint32_t got = 0;

	for (uint32_t q = 0; q < c->n_queues; q++) {
		uint32_t n;

		if (c->busy)
			xevb_xsk_kick(&e->xsk, q);
		n = xevb_xsk_rx(&e->xsk, q, c->rx_batch, L->idx, L->data, L->len);
		if (!n)
			continue;
		handle_batch(e, n, L->idx, L->data, L->len, now);
		xevb_xsk_rx_done(&e->xsk, q, n);
		got += n;
	}
	/*
	 * IP-fragmented MEPs are rare: a recvmmsg per turn would cost
	 * every batch a system call. Every 8th turn, and the turn
	 * after a wake-up; they wait in the socket meanwhile.
	 */
	if (e->ipfrag_on && (++L->ipfrag_turn & 7) == 0)
		got += rx_ipfrag(e, now);
	return got;
}

/* One batch from the kernel socket; false when receiving failed. */
static bool one_rx_sock(struct xevb_engine *e, struct one_loop *L, uint64_t now, uint32_t *got)
{
	int n = xevb_sock_rx(&e->sock, L->idx, L->data, L->len);

	if (n < 0) {
		xevb_err("receive failed: %s", strerror(-n));
		return false;
	}
	if (n > 0)
		handle_batch(e, (uint32_t)n, L->idx, L->data, L->len, now);
	*got = (uint32_t)(n > 0 ? n : 0);
	return true;
}

/* Nothing came: nap (--tune wait-us, after work) or sleep in poll(). */
static void one_idle(struct xevb_engine *e, struct one_loop *L)
{
	if (xevb_engine_nap(e->c.wait_us, L->worked))
		return;
	e->polls++;
	/* What a farm node's socket did not take yet goes out within 1 ms. */
	poll(L->pfd, L->npfd, xevb_output_backlog_bytes(&e->out) ? 1 : L->poll_ms);
	L->ipfrag_turn = 7;
}

/* One worker: receive, build, forward, keep time, in this thread (until receiving fails). */
static void run_one(struct xevb_engine *e, const volatile sig_atomic_t *stop)
{
	static struct one_loop L;
	const struct xevb_engine_cfg *c = &e->c;

	one_loop_init(e, &L);
	/* Pinned only when --tune cpus says where: by default the one worker runs where it is put. */
	if (c->n_cpus)
		xevb_engine_pin(c->cpus[0], 0);
	while (!*stop) {
		uint64_t now = xevb_now_ns();
		uint32_t got = 0;

		e->xsk.guard_now = now;
		xevb_stall_drain_begin(&L.sd, now);
		if (c->xdp)
			got = one_rx_xdp(e, &L, now);
		else if (!one_rx_sock(e, &L, now, &got))
			break;
		if (!xevb_stall_draining(&L.sd, got >= L.full_batch, now))
			xevb_builder_poll(e->b, now);
		xevb_engine_shed_tick(e, now);
		if (e->h.duties && e->h.duties(e->h.ctx, now))
			break;
		/* What this batch built goes to the farm nodes now, not at 64 KiB. */
		xevb_output_flush(&e->out);
		if (c->xdp)
			xevb_xsk_flush(&e->xsk);
		if (c->exit_eor && xevb_builder_stats(e->b)->run_ended)
			break;
		if (!got && !c->busy)
			one_idle(e, &L);
		L.worked = got > 0;
	}
}

bool xevb_engine_run(struct xevb_engine *e, const volatile sig_atomic_t *stop)
{
	if (e->c.n_workers > 1 && (!e->c.xdp || e->h.emit)) {
		/* Never another loop than asked for: say why, and what to give instead. */
		xevb_err(
			"%u workers need the XDP path (socket mode has one socket) and no DFM (one conversation): "
			"give --workers 1",
			e->c.n_workers);
		return false;
	}
	if (e->c.n_workers > 1)
		return run_workers(e, stop);
	run_one(e, stop);
	return true;
}

/*
 * What already sits in the RX rings was counted by the XDP program:
 * take it in before the stop flush, so that to_xsk = rx_frames + the
 * kernel's drops holds exactly once the traffic has stopped.
 */
static void drain_rings(struct xevb_engine *e)
{
	const struct xevb_engine_cfg *c = &e->c;
	uint32_t idx[RX_BATCH], len[RX_BATCH], n;
	const uint8_t *data[RX_BATCH];
	uint64_t now = xevb_now_ns();

	for (uint32_t q = 0; q < c->n_queues; q++)
		for (uint32_t k = 0; k < c->rx_ring / RX_BATCH + 1; k++) {
			n = xevb_xsk_rx(&e->xsk, q, RX_BATCH, idx, data, len);
			if (!n)
				break;
			handle_batch(e, n, idx, data, len, now);
			xevb_xsk_rx_done(&e->xsk, q, n);
		}
	/* The reassembled datagrams the kernel queued for us, as many as the frames take. */
	for (uint32_t k = 0; e->ipfrag_on && k < XEVB_ENGINE_IPFRAG_FRAMES / XEVB_SOCK_BATCH + 1; k++)
		if (!rx_ipfrag(e, now))
			break;
}

void xevb_engine_stop(struct xevb_engine *e, bool discard)
{
	if (e->bw) {
		bw_stop(e->bw);
	} else {
		uint64_t open_at_stop;

		if (e->c.xdp)
			drain_rings(e);
		/*
		 * Whatever is still open leaves as a timeout would, by --timeout-policy:
		 * emitted INCOMPLETE or discarded and counted. Nothing is dropped
		 * silently at stop.
		 */
		open_at_stop = xevb_builder_stats(e->b)->open_events;
		xevb_builder_expire_all(e->b);
		xevb_info("stop: %llu open event(s) %s (--timeout-policy %s)", (unsigned long long)open_at_stop,
			  discard ? "discarded and counted" : "emitted INCOMPLETE", discard ? "discard" : "emit");
	}
	/* Frames still read by zerocopy sends come back before the final flush (workers: in their stop). */
	if (!e->bw)
		xevb_output_drain(&e->out);
	if (e->c.xdp)
		xevb_xsk_flush(&e->xsk);
	/* What a farm node never acknowledged is counted, not taken as delivered. */
	xevb_output_settle(&e->out, 2000000000ull);
}

bool xevb_engine_check(struct xevb_engine *e, char *msg, size_t len)
{
	return e->bw ? bw_check(e->bw, msg, len) : xevb_builder_check(e->b, msg, len);
}

void xevb_engine_json(struct xevb_engine *e, FILE *f)
{
	if (e->bw)
		bw_json(e->bw, f);
}

void xevb_engine_free(struct xevb_engine *e)
{
	bw_free(e->bw);
	e->bw = NULL;
	if (e->b)
		xevb_builder_free(e->b);
	e->b = NULL;
}

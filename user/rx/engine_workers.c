// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's workers' life (engine_workers.h): setup, threads, turns,
 * the stop, DFM ASSIGNs for workers 1.., their counters. How a frame
 * reaches the owner of its events is engine_dispatch.c's.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "base/cli.h"
#include "base/counters.h"
#include "rx/engine.h"
#include "rx/handoff.h"
#include "base/probes.h"
#include "rx/sock_rx.h"
#include "evb/stall_drain.h"
#include "rx/xsk_meta.h"
#include "rx/engine_workers.h"
#include "rx/engine_workers_int.h"

static void answer_stats(struct worker *w)
{
	uint32_t req = __atomic_load_n(&w->req, __ATOMIC_ACQUIRE);

	if (req == w->ack)
		return;
	memcpy(w->pub_core, xevb_builder_stats(w->b), sizeof(*w->pub_core));
	memcpy(w->pub_rsrc, w->rsrc, sizeof(*w->rsrc) * XEVB_MAX_SOURCES);
	w->pub_st = w->st;
	if (!w->bw->c.file)
		w->pub_out = w->out->st;
	__atomic_store_n(&w->ack, req, __ATOMIC_RELEASE);
}

static bool inbound_pending(struct worker *w)
{
	struct bw *bw = w->bw;

	for (uint32_t s = 0; s < bw->n; s++)
		if (s != w->id && (!xevb_spsc_empty(&bw->ho[s][w->id]) || !xevb_spsc_empty(&bw->ret[s][w->id])))
			return true;
	return __atomic_load_n(&w->req, __ATOMIC_ACQUIRE) != w->ack;
}

/* More workers: shares or frames out at others, or events open, want a turn within LAZY_POLL_MS. */
static int idle_poll_ms(const struct worker *w)
{
	const struct bw *bw = w->bw;
	bool busy_out = bw->n > 1 && (w->st.ho_sent != w->st.ret_recv || w->st.ret_sent != w->st.ho_recv ||
				      xevb_builder_stats(w->b)->open_events);

	/* What a farm node's socket did not take yet goes out within 1 ms. */
	if (w->out && xevb_output_backlog_bytes(w->out))
		return 1;
	return busy_out && w->poll_ms > LAZY_POLL_MS ? LAZY_POLL_MS : w->poll_ms;
}

/* Nothing came: nap (--tune wait-us, after work) or sleep in poll() until a queue, a peer or the DFM wakes us. */
static void idle(struct worker *w)
{
	const struct bw_cfg *c = &w->bw->c;
	struct pollfd pfd[XEVB_XSK_MAX_QUEUES + 3];
	uint32_t n = 0;

	/* A worker woken by the first frame takes a few frames per wake-up: after work, nap first. */
	if (xevb_engine_nap(w->bw->c.wait_us, w->worked)) {
		w->worked = false;
		w->st.naps++;
		return;
	}
	__atomic_store_n(&w->sleeping, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!inbound_pending(w) && !__atomic_load_n(&w->bw->stop, __ATOMIC_ACQUIRE)) {
		for (uint32_t i = 0; i < w->n_q; i++)
			pfd[n++] = (struct pollfd){ .fd = c->xsk->q[w->q[i]].fd, .events = POLLIN };
		if (w->id == 0 && c->sock)
			pfd[n++] = (struct pollfd){ .fd = c->sock->fd, .events = POLLIN };
		if (w->id == 0 && c->wake_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = c->wake_fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = w->efd, .events = POLLIN };
		w->st.polls++;
		if (poll(pfd, n, idle_poll_ms(w)) > 0 && (pfd[n - 1].revents & POLLIN)) {
			uint64_t v;
			(void)!read(w->efd, &v, sizeof(v));
		}
		/* Woken: the reassembled datagrams' socket is read in the next turn. */
		w->sock_turn = 7;
	}
	__atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
}

static void flush_fill(struct worker *w)
{
	for (uint32_t i = 0; i < w->n_q; i++)
		xevb_xsk_flush_q(w->bw->c.xsk, w->q[i]);
}

static void worker_pin(struct worker *w)
{
	xevb_engine_pin(w->cpu, w->id);
}

/* More workers writing one output (a file, or the DFM's farm nodes): under the lock. */
static inline bool shared_out(const struct bw *bw)
{
	return bw->n > 1 && (bw->c.file || bw->c.emit);
}

/*
 * The turn's events to the farm nodes now, not at 64 KiB; a shared output
 * by worker 0 (a run file once a second: what came before a quiet spell).
 */
static void turn_flush(struct worker *w, uint64_t now)
{
	struct bw *bw = w->bw;
	bool maintain = now >= w->next_maint;

	if (maintain)
		w->next_maint = now + 1000000000ull;
	if (!shared_out(bw)) {
		xevb_output_flush(w->out);
		if (maintain)
			xevb_output_maintain(w->out, now);
		return;
	}
	if (w->id || (bw->c.file && !maintain))
		return;
	pthread_mutex_lock(&bw->out_lock);
	xevb_output_flush(w->out);
	if (maintain)
		xevb_output_maintain(w->out, now);
	pthread_mutex_unlock(&bw->out_lock);
}

/* A fresh builder core for w (a restarted DFM numbers events afresh); the old one flushed and checked. */
static bool worker_core_reset(struct worker *w)
{
	struct xevb_builder *nb = xevb_builder_new(&w->bcfg);
	char msg[256];

	if (!nb) {
		xevb_err(
			"worker %u: cannot create a fresh builder core for the restarted DFM (%s): the old one goes "
			"on",
			w->id, strerror(errno));
		return false;
	}
	xevb_builder_flush(w->b);
	if (!xevb_builder_check(w->b, msg, sizeof(msg)))
		xevb_err("worker %u: accounting check of the core before the DFM restart FAILED: %s", w->id, msg);
	xevb_builder_free(w->b);
	w->b = nb;
	return true;
}

/* Workers 1.. under a DFM: the resets and ASSIGNs worker 0 left in our box, in their order. */
static void take_assigns(struct worker *w)
{
	struct assign_box *b = w->box;
	uint32_t n, resets;

	if (__atomic_load_n(&b->n, __ATOMIC_ACQUIRE) == 0 &&
	    __atomic_load_n(&b->resets, __ATOMIC_ACQUIRE) == w->resets_done)
		return;
	pthread_mutex_lock(&b->lk);
	n = b->n;
	memcpy(w->box_taken, b->ent, n * sizeof(*b->ent));
	b->n = 0;
	resets = b->resets;
	pthread_mutex_unlock(&b->lk);
	if (resets != w->resets_done) {
		worker_core_reset(w);
		w->resets_done = resets;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct assign_ent *a = &w->box_taken[i];

		xevb_builder_assigned(w->b, a->first, a->count);
		if (a->set_run)
			xevb_builder_set_run(w->b, a->run);
	}
}

/* Workers 1.. under a DFM, every WORKER_TICK_NS: the DFM's scan of our events (re-asks), under the lock. */
static void worker_dfm_tick(struct worker *w, uint64_t now)
{
	struct bw *bw = w->bw;

	take_assigns(w);
	if (!bw->c.worker_tick || now < w->next_tick)
		return;
	w->next_tick = now + WORKER_TICK_NS;
	pthread_mutex_lock(&bw->out_lock);
	bw->c.worker_tick(bw->c.hook_ctx, w->id, w->b, now);
	pthread_mutex_unlock(&bw->out_lock);
}

/* A worker's turns until the stop; worker 0 ends them when its duties say so. */
static void worker_turns(struct worker *w)
{
	struct bw *bw = w->bw;
	uint64_t now;

	bw_this_worker = w;
	while (!__atomic_load_n(&bw->stop, __ATOMIC_ACQUIRE)) {
		uint32_t got = 0, rx = 0;

		now = xevb_now_ns();
		bw->c.xsk->guard_now = now; /* every worker's: any recent clock will do */
		if (w->box)
			worker_dfm_tick(w, now);
		xevb_stall_drain_begin(&w->sd, now);
		bw_rx_all(w, now, &rx, 1);
		got = rx;
		got += bw_drain_handoffs(w, now, 4);
		got += bw_drain_returns(w);
		if (!xevb_stall_draining(&w->sd, w->full_batch && rx >= w->full_batch, now))
			xevb_builder_poll(w->b, now);
		/* Worker 0, the calling thread: the engine's duties (statistics, shedding, the DFM, the run's end). */
		if (w->id == 0 && (w->failed || bw->c.duties(bw->c.duties_ctx, now)))
			break;
		turn_flush(w, now);
		bw_publish_all(w);
		flush_fill(w);
		answer_stats(w);
		if (xevb_builder_stats(w->b)->run_ended != (bool)w->run_ended)
			__atomic_store_n(&w->run_ended, xevb_builder_stats(w->b)->run_ended, __ATOMIC_RELEASE);
		if (!got && !bw->c.busy)
			idle(w);
		else
			w->worked = got > 0;
	}
}

/*
 * Stop. A: what sits in our RX rings was counted by the XDP program:
 * take it in. B (every share is now in a ring): build what was handed
 * to us, then time out what is open. C (every return is in a ring):
 * give the frames back to the fill rings.
 */
static void worker_stop(struct worker *w)
{
	struct bw *bw = w->bw;
	uint32_t got = 0;
	uint64_t now = xevb_now_ns();

	bw_rx_all(w, now, &got, bw->c.rx_ring / bw->c.rx_batch + 1);
	bw_publish_all(w);
	pthread_barrier_wait(&bw->bar);
	now = xevb_now_ns();
	while (bw_drain_handoffs(w, now, UINT32_MAX))
		;
	w->open_at_stop = xevb_builder_stats(w->b)->open_events;
	xevb_builder_expire_all(w->b);
	/* Zero copy: what this worker's sends still hold comes back before the returns are drained. */
	if (!shared_out(bw)) {
		xevb_output_drain(w->out);
	} else if (w->id == 0 && !bw->c.file) {
		/* The DFM's connections, every worker's sends: every frame they hold, from worker 0. */
		pthread_mutex_lock(&bw->out_lock);
		xevb_output_drain(w->out);
		pthread_mutex_unlock(&bw->out_lock);
	}
	bw_publish_all(w);
	pthread_barrier_wait(&bw->bar);
	bw_drain_returns(w);
	flush_fill(w);
}

/* Workers 1..n-1, each in its thread. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;

	worker_pin(w);
	worker_turns(w);
	if (!w->bw->abort)
		worker_stop(w);
	return NULL;
}

/* Every worker out of its loop, a sleeping one woken. */
static void signal_stop(struct bw *bw)
{
	__atomic_store_n(&bw->stop, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < bw->n; i++) {
		uint64_t one = 1;
		(void)!write(bw->w[i].efd, &one, sizeof(one));
	}
}

static int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/*
 * Worker i: its queues, CPU, window and builder core (over every frame
 * index nf), its end of the rings, and its output (worker 0's and a
 * file's are the caller's; the others connect to the farm nodes).
 */
static bool worker_setup(struct bw *bw, uint32_t i, uint32_t nf)
{
	const struct bw_cfg *c = &bw->c;
	struct worker *w = &bw->w[i];
	struct xevb_builder_cfg bc = c->bcfg;
	uint32_t win = c->bcfg.window;

	w->bw = bw;
	w->id = i;
	w->efd = -1;
	/* One worker is pinned only when --tune cpus says where: by default it runs where it is put. */
	w->cpu = c->n_cpus ? c->cpus[i % c->n_cpus] : bw->n > 1 ? (int)(i % (uint32_t)online_cpus()) : -1;
	/* Worker 0 keeps the DFM's time, the others their re-asks: at most poll_max_ms asleep. */
	w->poll_ms = (i == 0 || c->emit) && c->poll_max_ms > 0 && c->poll_ms > c->poll_max_ms ? c->poll_max_ms :
												c->poll_ms;
	for (uint32_t q = i; q < c->xsk->n_queues; q += bw->n)
		w->q[w->n_q++] = q;
	/* Each owner sees 1/n of the ids in any stretch: keep the window's reach. */
	for (uint32_t k = 1; k < bw->n; k <<= 1)
		win = win < (1u << 19) ? win * 2 : win;
	bc.window = win;
	/* Any owner may hold frames of any queue: the pool's bound is shared. */
	bc.max_frames_held = c->bcfg.max_frames_held / bw->n;
	w->window = win;
	bc.n_frames = nf;
	bc.emit = bw_emit_cb;
	bc.emit_run = c->emit_runs ? bw_emit_run_cb : NULL;
	bc.frame_release = bw_builder_release_cb;
	bc.ctx = w;
	/* More workers: an owner sees part of a source's packets; the receiver counts them (rx_note). */
	bc.rx_counts_packets = bw->n > 1;
	w->bcfg = bc;
	w->b = xevb_builder_new(&bc);
	w->sd.timeout_ns = bc.timeout_ns;
	w->full_batch = c->rx_batch * w->n_q + (i == 0 && c->sock_main ? XEVB_SOCK_BATCH : 0);
	w->fref = calloc(nf, 1);
	w->rsrc = calloc(XEVB_MAX_SOURCES, sizeof(*w->rsrc));
	w->pub_rsrc = calloc(XEVB_MAX_SOURCES, sizeof(*w->pub_rsrc));
	w->pub_core = calloc(1, sizeof(*w->pub_core));
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!w->b || !w->fref || !w->rsrc || !w->pub_rsrc || !w->pub_core || w->efd < 0) {
		xevb_err("worker %u: cannot set up its builder or rings: %s", i, strerror(errno));
		return false;
	}
	if (i > 0 && c->emit) {
		w->box = calloc(1, sizeof(*w->box));
		w->box_taken = calloc(ASSIGN_BOX, sizeof(*w->box_taken));
		if (!w->box || !w->box_taken) {
			xevb_err("worker %u: cannot allocate its ASSIGN box: %s", i, strerror(ENOMEM));
			return false;
		}
		pthread_mutex_init(&w->box->lk, NULL);
	}
	/* Worker 0's output is the caller's; a file and the DFM's farm nodes are everyone's. */
	if (i == 0 || c->file || c->emit) {
		w->out = c->out;
		return true;
	}
	{
		/* Paced and zero copy as worker 0's. */
		struct xevb_output_opts oo = c->out->opts;

		oo.sinks = c->sinks;
		oo.n_sinks = c->n_sinks;
		oo.file = NULL;
		oo.max_sources = c->n_sources;
		oo.connect_wait_ns = 5000000000ull;
		if (xevb_output_open(&w->own_out, &oo))
			return false;
	}
	w->own_out_open = true;
	w->out = &w->own_out;
	/* Zero copy: frames held by this worker's sends come back through it (worker 0's: bw_release_held). */
	return xevb_output_set_release(&w->own_out, bw_release_cb, w, nf) == 0;
}

/* Every worker's thread; false when one cannot start (those running are joined). */
static bool start_threads(struct bw *bw)
{
	for (uint32_t i = 1; i < bw->n; i++) {
		int err = pthread_create(&bw->w[i].th, NULL, worker_main, &bw->w[i]);

		if (err) {
			xevb_err("cannot start worker thread %u: %s", i, strerror(err));
			/* The barriers at stop need every worker: those running skip them. */
			bw->abort = true;
			__atomic_store_n(&bw->stop, 1, __ATOMIC_RELEASE);
			for (uint32_t k = 1; k < i; k++)
				pthread_join(bw->w[k].th, NULL);
			bw->stopped = true;
			return false;
		}
		bw->w[i].started = true;
	}
	return true;
}

static void log_workers(const struct bw *bw)
{
	if (bw->n == 1)
		return; /* one worker: nothing to tell apart */
	for (uint32_t i = 0; i < bw->n; i++) {
		char cpus[16] = "any";
		if (bw->w[i].cpu >= 0)
			snprintf(cpus, sizeof(cpus), "%d", bw->w[i].cpu);
		xevb_info(
			"worker %u: %u queue(s) from index %u, CPU %s, window %u; events owned in blocks of %u ids",
			i, bw->w[i].n_q, bw->w[i].q[0], cpus, bw->w[i].window, 1u << bw->c.owner_shift);
	}
}

bool bw_run(struct bw *bw)
{
	struct worker *w = &bw->w[0];

	if (!start_threads(bw))
		return false;
	bw->running = true;
	log_workers(bw);
	worker_pin(w);
	worker_turns(w);
	signal_stop(bw);
	worker_stop(w);
	bw->ran = true;
	return true;
}

struct bw *bw_start(const struct bw_cfg *c)
{
	struct bw *bw;
	/* Every frame index: UMEM chunks, then the jumbo frames' bounce buffers (multi-buffer MTU). */
	uint32_t nf = c->xsk->n_umem + c->xsk->bounce_per_q * c->xsk->n_queues, cap = 1, rcap;
	uint32_t sock_base = nf;

	/* Socket mode has no queues: worker 0 receives, the others build what it hands them. */
	if (c->n_workers < 1 || c->n_workers > XEVB_HO_MAX_WORKERS ||
	    (c->xsk->n_queues && c->n_workers > c->xsk->n_queues)) {
		xevb_err("--workers %u: give 1..%d workers, at most one per queue (--queues)", c->n_workers,
			 XEVB_HO_MAX_WORKERS);
		return NULL;
	}
	bw = calloc(1, sizeof(*bw));
	if (!bw)
		goto oom;
	bw->c = *c;
	bw->n = c->n_workers;
	if (!bw->c.rx_batch || bw->c.rx_batch > RX_BATCH_MAX)
		bw->c.rx_batch = bw->c.rx_batch ? RX_BATCH_MAX : XEVB_ENGINE_RX_BATCH;
	/* The socket's frames and big buffers follow the AF_XDP ones. */
	bw->sock_base = c->sock ? sock_base : UINT32_MAX;
	if (c->sock)
		nf += c->sock->n_frames + c->sock->n_big;
	{
		pthread_mutexattr_t ma;

		/* Recursive: the DFM's tick holds it, and worker 0's core emits from inside the tick. */
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&bw->out_lock, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	pthread_barrier_init(&bw->bar, NULL, bw->n);
	while (cap < nf)
		cap <<= 1;
	for (uint32_t q = 0; q < c->xsk->n_queues; q++)
		bw->q_worker[q] = q % bw->n;
	/*
	 * Frag refs: 8 a frame in flight, at most 2^19 (6 MB) per receiving
	 * worker. A share whose refs do not fit is walked by its owner
	 * instead (slower, same result): never a wait.
	 */
	rcap = cap * 8 < cap ? cap : cap * 8;
	while (rcap > 1024 && rcap * (bw->n - 1) > (1u << 19))
		rcap >>= 1;
	/* A share pins its frame until the owner returns it: rings of every frame never fill. */
	for (uint32_t a = 0; a < bw->n; a++)
		for (uint32_t b = 0; b < bw->n; b++)
			if (a != b && (xevb_spsc_init(&bw->ho[a][b], cap, sizeof(struct xevb_ho_ent)) ||
				       xevb_spsc_init(&bw->ret[a][b], cap, sizeof(uint32_t)) ||
				       xevb_spsc_init(&bw->refs[a][b], rcap, sizeof(struct xevb_frag_ref))))
				goto oom;
	for (uint32_t i = 0; i < bw->n; i++)
		if (!worker_setup(bw, i, nf))
			goto fail;
	return bw;
oom:
	xevb_err("cannot allocate the hand-off rings (%u frames): %s", nf, strerror(ENOMEM));
fail:
	if (bw)
		bw_free(bw);
	return NULL;
}

/* The counters by their table; the run and END_OF_RUN are the workers' together. */
static void merge_core(struct xevb_builder_stats *m, const struct xevb_builder_stats *s, bool first)
{
	xevb_builder_counters_add(m, s);
	if (s->run_known && !m->run_known) {
		m->run_known = true;
		m->run_number = s->run_number;
	}
	m->run_ended = first ? s->run_ended : m->run_ended && s->run_ended;
	for (uint32_t i = 0; i < XEVB_MAX_SOURCES; i++)
		m->src[i].end_of_run |= s->src[i].end_of_run;
}

static void merge_rx(struct xevb_builder_stats *m, const struct rx_src *rs)
{
	for (uint32_t i = 0; i < XEVB_MAX_SOURCES; i++) {
		if (!rs[i].seen)
			continue;
		m->src[i].seen = true;
		m->src[i].packets += rs[i].packets;
		m->src[i].seq_gaps += rs[i].seq_gaps;
		m->src[i].last_seq = rs[i].last_seq;
		m->packets += rs[i].packets;
	}
}

void bw_totals(struct bw *bw, struct bw_totals *t)
{
	/* One worker answers in this thread (the duties'): its counters are read as they are. */
	bool live = bw->running && !bw->stopped && bw->n > 1;
	struct xevb_builder_stats *m = &bw->merged;

	memset(t, 0, sizeof(*t));
	t->has_out = !bw->c.file;
	if (live) {
		for (uint32_t i = 0; i < bw->n; i++) {
			struct worker *w = &bw->w[i];
			__atomic_store_n(&w->req, w->req + 1, __ATOMIC_RELEASE);
			bw_wake(w);
		}
		/* Asked by worker 0's duties, in its thread: it answers here. */
		answer_stats(&bw->w[0]);
		for (uint32_t i = 0; i < bw->n; i++) {
			struct worker *w = &bw->w[i];
			/*
			 * Bounded: worker 0 waits here instead of taking its
			 * queues in, so a worker busy in a long batch (or not
			 * scheduled) answers late, and its last answer is used.
			 */
			for (int t = 0;
			     t < SNAP_WAIT_US / 50 && __atomic_load_n(&w->ack, __ATOMIC_ACQUIRE) != w->req; t++)
				usleep(50);
		}
	}
	memset(m, 0, sizeof(*m));
	for (uint32_t i = 0; i < bw->n; i++) {
		struct worker *w = &bw->w[i];
		const struct bw_worker_stats *st = live ? &w->pub_st : &w->st;
		const struct xevb_output_stats *os = live ? &w->pub_out : &w->out->st;

		merge_core(m, live ? w->pub_core : xevb_builder_stats(w->b), i == 0);
		merge_rx(m, live ? w->pub_rsrc : w->rsrc);
		t->rx_frames += st->rx_frames;
		t->rx_bytes += st->rx_bytes;
		t->rx_not_mep += st->rx_not_mep;
		t->batches += st->batches;
		t->polls += st->polls;
		t->rx_meta += st->rx_meta;
		t->rx_meta_fallback += st->rx_meta_fallback;
		if (!bw->c.file)
			xevb_output_stats_add(&t->out, os);
	}
	t->core = *m;
}

struct xevb_builder *bw_core(struct bw *bw)
{
	return bw->n == 1 ? bw->w[0].b : NULL;
}

struct xevb_builder *bw_core0(struct bw *bw)
{
	return bw->w[0].b;
}

bool bw_core_reset(struct bw *bw)
{
	for (uint32_t i = 1; i < bw->n; i++) {
		struct assign_box *b = bw->w[i].box;

		if (!b)
			continue;
		pthread_mutex_lock(&b->lk);
		b->n = 0; /* the old numbering's: the fresh core must not see them */
		__atomic_store_n(&b->resets, b->resets + 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&b->lk);
	}
	return worker_core_reset(&bw->w[0]);
}

void bw_assign(struct bw *bw, uint32_t first, uint32_t count, uint32_t run, bool set_run)
{
	for (uint32_t i = 1; i < bw->n; i++) {
		struct assign_box *b = bw->w[i].box;

		if (!b)
			continue;
		pthread_mutex_lock(&b->lk);
		if (b->n < ASSIGN_BOX) {
			b->ent[b->n] = (struct assign_ent){ first, count, run, set_run };
			__atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELEASE);
		} else {
			struct assign_ent *l = &b->ent[ASSIGN_BOX - 1];

			if (xevb_seq_after(first + count, l->first + l->count))
				l->count = first + count - l->first;
			l->run = run;
			l->set_run |= set_run;
			b->merged++;
		}
		pthread_mutex_unlock(&b->lk);
	}
}

void bw_lock(struct bw *bw)
{
	if (bw->n > 1)
		pthread_mutex_lock(&bw->out_lock);
}

void bw_unlock(struct bw *bw)
{
	if (bw->n > 1)
		pthread_mutex_unlock(&bw->out_lock);
}

bool bw_rx_totals(const struct bw *bw, uint64_t *frames, uint64_t *bytes)
{
	if (bw->n != 1)
		return false;
	*frames = bw->w[0].st.rx_frames;
	*bytes = bw->w[0].st.rx_bytes;
	return true;
}

uint64_t bw_open_at_stop(const struct bw *bw)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < bw->n; i++)
		n += bw->w[i].open_at_stop;
	return n;
}

bool bw_run_ended(struct bw *bw)
{
	for (uint32_t i = 0; i < bw->n; i++)
		if (!__atomic_load_n(&bw->w[i].run_ended, __ATOMIC_ACQUIRE))
			return false;
	return true;
}

void bw_stop(struct bw *bw)
{
	uint64_t open = 0;

	if (bw->stopped)
		return;
	/* Worker 0 never ran its stop (bw_run): the others must not wait for it at the barriers. */
	if (!bw->ran)
		bw->abort = true;
	signal_stop(bw);
	for (uint32_t i = 0; i < bw->n; i++)
		if (bw->w[i].started)
			pthread_join(bw->w[i].th, NULL);
	bw->stopped = true;
	/* The caller settles worker 0's output (the shared one); these are ours. */
	for (uint32_t i = 0; i < bw->n; i++)
		if (bw->w[i].own_out_open)
			xevb_output_settle(&bw->w[i].own_out, 2000000000ull);
	for (uint32_t i = 0; i < bw->n; i++)
		open += xevb_builder_stats(bw->w[i].b)->open_events;
	if (open)
		xevb_warn("stop: %llu event(s) still open after the expiry", (unsigned long long)open);
	if (bw->n > 1)
		xevb_info(
			"stop: %u workers drained their rings and timed out their open events by --timeout-policy",
			bw->n);
}

bool bw_check(struct bw *bw, char *msg, size_t len)
{
	char m[200];

	for (uint32_t i = 0; i < bw->n; i++)
		if (!xevb_builder_check(bw->w[i].b, m, sizeof(m))) {
			snprintf(msg, len, "worker %u: %s", i, m);
			return false;
		}
	if (bw->stopped) {
		uint64_t sent = 0, recv = 0, rs = 0, rr = 0;
		for (uint32_t i = 0; i < bw->n; i++) {
			sent += bw->w[i].st.ho_sent;
			recv += bw->w[i].st.ho_recv;
			rs += bw->w[i].st.ret_sent;
			rr += bw->w[i].st.ret_recv;
		}
		if (sent != recv || rs != rr) {
			snprintf(msg, len,
				 "hand-off: %llu shares sent, %llu taken; %llu frames returned, %llu taken back",
				 (unsigned long long)sent, (unsigned long long)recv, (unsigned long long)rs,
				 (unsigned long long)rr);
			return false;
		}
	}
	return true;
}

bool bw_worker_view(const struct bw *bw, uint32_t i, struct bw_worker_view *v)
{
	const struct worker *w;

	if (i >= bw->n)
		return false;
	w = &bw->w[i];
	memset(v, 0, sizeof(*v));
	v->cpu = w->cpu;
	v->n_q = w->n_q;
	for (uint32_t k = 0; k < w->n_q; k++) {
		v->queue_id[k] = bw->c.xsk->q[w->q[k]].queue_id;
		v->queue_rx[k] = w->st.q_rx[w->q[k]];
	}
	v->assigns_merged = w->box ? w->box->merged : 0;
	v->st = &w->st;
	v->core = xevb_builder_stats(w->b);
	return true;
}

bool bw_rx_source_seen(const struct bw *bw, uint32_t i, uint32_t src)
{
	return i < bw->n && src < XEVB_MAX_SOURCES && bw->w[i].rsrc[src].seen;
}

uint32_t bw_n_workers(const struct bw *bw)
{
	return bw->n;
}

const struct bw_worker_stats *bw_worker_stats(const struct bw *bw, uint32_t i)
{
	return i < bw->n ? &bw->w[i].st : NULL;
}

void bw_free(struct bw *bw)
{
	if (!bw)
		return;
	if (!bw->stopped) {
		bool any = false;
		for (uint32_t i = 0; i < bw->n; i++)
			any |= bw->w[i].started;
		if (any)
			bw_stop(bw);
	}
	for (uint32_t i = 0; i < bw->n; i++) {
		struct worker *w = &bw->w[i];
		if (w->own_out_open)
			xevb_output_close(&w->own_out);
		if (w->b)
			xevb_builder_free(w->b);
		if (w->efd >= 0)
			close(w->efd);
		if (w->box)
			pthread_mutex_destroy(&w->box->lk);
		free(w->box);
		free(w->box_taken);
		free(w->fref);
		free(w->rsrc);
		free(w->pub_rsrc);
		free(w->pub_core);
	}
	for (uint32_t a = 0; a < XEVB_HO_MAX_WORKERS; a++)
		for (uint32_t b = 0; b < XEVB_HO_MAX_WORKERS; b++) {
			xevb_spsc_free(&bw->ho[a][b]);
			xevb_spsc_free(&bw->ret[a][b]);
			xevb_spsc_free(&bw->refs[a][b]);
		}
	pthread_barrier_destroy(&bw->bar);
	pthread_mutex_destroy(&bw->out_lock);
	free(bw);
}

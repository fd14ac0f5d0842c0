// SPDX-License-Identifier: GPL-2.0-only
/*
 * The receive engine (engine.h): its set-up, run and stop around the
 * workers' loop (engine_workers.c), which serves one worker and many.
 */
#include <pthread.h>
#include <sched.h>
#include "base/cli.h"
#include "rx/engine.h"
#include "rx/engine_workers.h"

void xevb_engine_release_held(void *ctx, uint32_t idx)
{
	struct xevb_engine *e = ctx;

	/* The frame may be another worker's, whose fill ring only its thread touches. */
	bw_release_held(e->bw, idx);
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

static int poll_ms_for(uint32_t timeout_ms)
{
	return timeout_ms && timeout_ms < 200 ? (int)(timeout_ms / 2 + 1) : 100;
}

/* Worker 0's duties: shedding, the command's, the run's end. */
static bool worker0_duties(void *ctx, uint64_t now)
{
	struct xevb_engine *e = ctx;

	xevb_engine_shed_tick(e, now);
	if (*e->stop || (e->h.duties && e->h.duties(e->h.ctx, now)))
		return true;
	return e->c.exit_eor && bw_run_ended(e->bw);
}

bool xevb_engine_start(struct xevb_engine *e)
{
	const struct xevb_engine_cfg *c = &e->c;
	struct bw_cfg wc = {
		.xsk = &e->xsk,
		.n_workers = c->n_workers ? c->n_workers : 1,
		.cpus = c->cpus,
		.n_cpus = c->n_cpus,
		.owner_shift = c->owner_shift,
		.bcfg = e->bcfg,
		.pcfg = e->pcfg,
		.meta_cookie = e->meta_cookie,
		.busy = c->busy,
		.bare = c->bare,
		.emit_runs = c->emit_runs && !e->h.emit,
		.rx_batch = c->rx_batch,
		.out = &e->out,
		.sinks = c->sinks,
		.n_sinks = c->n_sinks,
		.file = c->file,
		.n_sources = c->n_sources,
		.poll_ms = poll_ms_for(c->timeout_ms),
		.poll_max_ms = e->h.poll_max_ms,
		.wake_fd = e->h.fd,
		.rx_ring = c->rx_ring,
		.wait_us = c->wait_us,
		.sock = !c->xdp      ? &e->sock :
			e->ipfrag_on ? &e->ipfrag :
				       NULL,
		.sock_main = !c->xdp,
		.emit = e->h.emit,
		.hook_ctx = e->h.ctx,
		.worker_tick = e->h.worker_tick,
		.duties = worker0_duties,
		.duties_ctx = e,
	};

	e->bw = bw_start(&wc);
	return e->bw != NULL;
}

bool xevb_engine_run(struct xevb_engine *e, const volatile sig_atomic_t *stop)
{
	e->stop = stop;
	return bw_run(e->bw);
}

struct xevb_builder *xevb_engine_core(struct xevb_engine *e)
{
	return e->bw ? bw_core(e->bw) : NULL;
}

struct xevb_builder *xevb_engine_core0(struct xevb_engine *e)
{
	return bw_core0(e->bw);
}

bool xevb_engine_core_reset(struct xevb_engine *e)
{
	return bw_core_reset(e->bw);
}

void xevb_engine_assign(struct xevb_engine *e, uint32_t first, uint32_t count, uint32_t run, bool set_run)
{
	bw_assign(e->bw, first, count, run, set_run);
}

void xevb_engine_lock(struct xevb_engine *e)
{
	bw_lock(e->bw);
}

void xevb_engine_unlock(struct xevb_engine *e)
{
	bw_unlock(e->bw);
}

void xevb_engine_stop(struct xevb_engine *e, bool discard)
{
	bw_stop(e->bw);
	/*
	 * Whatever was still open left as a timeout would, by --timeout-policy:
	 * emitted INCOMPLETE or discarded and counted. Nothing is dropped
	 * silently at stop.
	 */
	if (e->c.n_workers <= 1)
		xevb_info("stop: %llu open event(s) %s (--timeout-policy %s)",
			  (unsigned long long)bw_open_at_stop(e->bw),
			  discard ? "discarded and counted" : "emitted INCOMPLETE", discard ? "discard" : "emit");
	if (e->c.xdp)
		xevb_xsk_flush(&e->xsk);
	/* What a farm node never acknowledged is counted, not taken as delivered. */
	xevb_output_settle(&e->out, 2000000000ull);
}

bool xevb_engine_check(struct xevb_engine *e, char *msg, size_t len)
{
	return bw_check(e->bw, msg, len);
}

void xevb_engine_free(struct xevb_engine *e)
{
	bw_free(e->bw);
	e->bw = NULL;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's workers (engine.h, --workers 1..N): one receive loop per
 * group of AF_XDP queues (worker 0 also takes the kernel socket's
 * datagrams), each with its own builder core, events owned by event_id
 * block (user/rx/handoff.h). Worker 0 runs in the calling
 * thread and keeps time: the engine's duties and shedding. One worker is
 * the same loop with nothing to hand over.
 */
#ifndef XEVB_ENGINE_WORKERS_H
#define XEVB_ENGINE_WORKERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "evb/builder.h"
#include <xevb/mep_parse.h>
#include "out/output.h"
#include "rx/xsk_rx.h"

struct xevb_sock;

struct bw_cfg {
	struct xevb_xsk *xsk;         /* open (socket mode: no queues); queue i served by worker i % n_workers */
	uint32_t n_workers;           /* 1..XEVB_HO_MAX_WORKERS, <= xsk->n_queues when it has queues */
	const int *cpus;              /* [n_cpus]: worker w on cpus[w % n_cpus]; -1: not pinned */
	uint32_t n_cpus;              /* 0: worker w on online CPU w % count */
	uint32_t owner_shift;         /* events per ownership block: 2^shift */
	struct xevb_builder_cfg bcfg; /* template; emit/frame_release/ctx are ours */
	struct xevb_parse_cfg pcfg;
	uint32_t meta_cookie; /* non-zero: the XDP program writes XDP meta (xsk_meta.h) */
	bool busy, bare;
	bool emit_runs;           /* build only: runs of events counted whole (not with emit) */
	uint32_t rx_batch;        /* frames per AF_XDP receive, <= XEVB_ENGINE_RX_BATCH_MAX */
	struct xevb_output *out;  /* opened by the caller: worker 0's, or everyone's (file) */
	const char *const *sinks; /* the others open their own connections to these */
	uint32_t n_sinks;
	bool file; /* out writes a file: shared, under a mutex */
	uint32_t n_sources;
	int poll_ms;
	int poll_max_ms;  /* > 0: worker 0 sleeps at most this long (its duties keep time) */
	int wake_fd;      /* >= 0: wakes worker 0's poll() too (the DFM's socket) */
	uint32_t wait_us; /* after a turn that did work, nap this long before sleeping in poll() */
	uint32_t rx_ring;
	/*
	 * Open, or NULL: a kernel socket, received by worker 0 and each frame
	 * handed to its events' owner; its frame indices follow the AF_XDP
	 * ones. sock_main: the socket path's own socket (every turn, its
	 * frames counted as received); else the XDP path's socket of the
	 * kernel's reassembled IPv4 datagrams (IP-fragmented MEPs, now and then).
	 */
	struct xevb_sock *sock;
	bool sock_main;
	/*
	 * When set, events go here instead of the output (--dfm: its control
	 * endpoint in front, one for every worker: out is shared, and emits,
	 * worker 0's flushes and worker_tick hold the engine's lock, bw_lock).
	 */
	void (*emit)(void *ctx, const struct xevb_event *ev);
	void *hook_ctx;
	/* More workers under a DFM: workers 1.. every millisecond or so, with their builder core (re-asks). */
	void (*worker_tick)(void *ctx, uint32_t w, const struct xevb_builder *b, uint64_t now);
	/* Worker 0's turn, in the calling thread (bw_run): the engine's duties; true: stop. */
	bool (*duties)(void *ctx, uint64_t now);
	void *duties_ctx;
};

/* One worker's counters (its thread writes them; readers see them as they are). */
struct bw_worker_stats {
	uint64_t rx_frames, rx_bytes, rx_not_mep, batches, polls, rx_meta, rx_meta_fallback;
	uint64_t ho_sent, ho_recv, ho_walked, ho_whole, refs_windows, split_meps, eor_notices, ret_sent, ret_recv,
		ring_full_waits, wakes, naps;
	uint64_t q_rx[XEVB_XSK_MAX_QUEUES];
};

struct bw;

/* Every worker's builder, rings and output; no thread yet. NULL after a message. */
struct bw *bw_start(const struct bw_cfg *c);
/*
 * Workers 1..n-1 start in their threads, worker 0 runs in the calling one
 * until its duties say stop (or receiving failed); then every worker
 * drains and stops. False: a thread could not start (after a message).
 */
bool bw_run(struct bw *bw);
/* One worker: its builder, else NULL. */
struct xevb_builder *bw_core(struct bw *bw);
/* Worker 0's builder: the DFM steers it in worker 0's thread (bw_assign: the others). */
struct xevb_builder *bw_core0(struct bw *bw);
/*
 * Fresh builder cores, the old ones flushed and checked (a DFM restart):
 * worker 0's now, the others' at the start of their next turn, before any
 * later bw_assign. False: worker 0's could not be made (the old one stays).
 */
bool bw_core_reset(struct bw *bw);
/* An ASSIGN for workers 1.. (worker 0's core has it from the DFM): taken at the start of their turns. */
void bw_assign(struct bw *bw, uint32_t first, uint32_t count, uint32_t run, bool set_run);
/* The lock of the shared output and the DFM's state (recursive); nothing with one worker. */
void bw_lock(struct bw *bw);
void bw_unlock(struct bw *bw);
/* One worker: the frames and bytes it received so far (the calling thread's); false with more. */
bool bw_rx_totals(const struct bw *bw, uint64_t *frames, uint64_t *bytes);
/* The events still open when the workers stopped (before their expiry). */
uint64_t bw_open_at_stop(const struct bw *bw);
/* The workers' receive, output and (merged) builder counters, summed; what ops/engine_stats.c
   puts in a statistics snapshot. out is filled only when has_out (no --output file). */
struct bw_totals {
	uint64_t rx_frames, rx_bytes, rx_not_mep, batches, polls, rx_meta, rx_meta_fallback;
	struct xevb_builder_stats core;
	bool has_out;
	struct xevb_output_stats out;
};
/* The totals now; while running, from worker 0's duties only (it asks the others and waits, bounded). */
void bw_totals(struct bw *bw, struct bw_totals *t);
bool bw_run_ended(struct bw *bw);
/* After bw_run: join workers 1..n-1 and settle their outputs (without bw_run: they stop at once). */
void bw_stop(struct bw *bw);
/* A frame worker 0's output held (zero copy) back to its queue's worker, in worker 0's thread. */
void bw_release_held(struct bw *bw, uint32_t idx);
/* Every worker's accounting invariant, then the merged one. */
bool bw_check(struct bw *bw, char *msg, size_t len);
/* Worker i as operators see it (ops/engine_stats.c prints it); its counters are its thread's, read as they are. */
struct bw_worker_view {
	int cpu;                                /* -1: not pinned */
	uint32_t n_q;                           /* its queues: */
	uint32_t queue_id[XEVB_XSK_MAX_QUEUES]; /* ids on the interface */
	uint64_t queue_rx[XEVB_XSK_MAX_QUEUES]; /* frames taken from each */
	uint64_t assigns_merged;                /* a DFM's ASSIGNs stretched into the last of its box */
	const struct bw_worker_stats *st;
	const struct xevb_builder_stats *core;
};
/* False: no worker i. */
bool bw_worker_view(const struct bw *bw, uint32_t i, struct bw_worker_view *v);
/* Whether worker i received packets of source src. */
bool bw_rx_source_seen(const struct bw *bw, uint32_t i, uint32_t src);
/* Worker i's own counters (0..bw_n_workers-1): they live as long as bw, written by its thread. */
uint32_t bw_n_workers(const struct bw *bw);
const struct bw_worker_stats *bw_worker_stats(const struct bw *bw, uint32_t i);
void bw_free(struct bw *bw);

#endif

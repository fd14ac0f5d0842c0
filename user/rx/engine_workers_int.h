/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The workers' private state (engine_workers.h), shared by engine_dispatch.c
 * (frames to their events' owners: the hot path) and engine_workers.c (the
 * workers' life: setup, threads, turns, stop, counters). Only these two
 * include it.
 */
#ifndef XEVB_ENGINE_WORKERS_INT_H
#define XEVB_ENGINE_WORKERS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "rx/engine.h"
#include "rx/handoff.h"
#include "rx/sock_rx.h"
#include "evb/stall_drain.h"
#include "rx/engine_workers.h"

#define RX_BATCH_MAX   XEVB_ENGINE_RX_BATCH_MAX
#define HO_BATCH       64
#define PREFETCH_AHEAD 2
/*
 * A sleeping owner is woken (eventfd) only once this many entries wait for
 * it; fewer wait at most LAZY_POLL_MS, its poll() timeout while anything is
 * in flight. A wake-up is a context switch each side (microseconds in a
 * VM): waking per batch would cost more than building the frames.
 */
#define WAKE_BACKLOG 64
/* Statistics: worker 0 waits this long at most for another worker's answer (a ring of 4096 takes 4 ms at 1 Mpps). */
#define SNAP_WAIT_US 1000
#define LAZY_POLL_MS 1
/*
 * Refs on demand. A whole MEP goes without refs, and its owner's builder
 * books it as a run without reading the frame. A MEP that fits no run
 * (events already partly open, late, timed out: heavy loss) the builder
 * must take record by record, and without refs it reads the records from
 * the frame, lines the other core wrote. So each owner counts, per
 * REFS_WINDOW multi-record shares, those its builder could not book whole;
 * above 1 in REFS_FALLBACK_DIV it asks its senders for refs again
 * (want_refs), until a window shows the runs are back.
 */
#define REFS_WINDOW       1024
#define REFS_FALLBACK_DIV 8

struct rx_src { /* receive-side, per source */
	uint64_t packets, seq_gaps;
	uint32_t last_seq;
	bool seen;
};

/*
 * A DFM's ASSIGNs for workers 1.. (worker 0's core takes them in the DFM's
 * tick, in its thread): a box each, taken at the start of a turn. A worker
 * that has not run for ASSIGN_BOX of them has the last entry stretched to
 * reach the newest (merged: counted).
 */
#define ASSIGN_BOX     1024
#define WORKER_TICK_NS 1000000ull

struct assign_ent {
	uint32_t first, count, run, set_run;
};

struct assign_box {
	pthread_mutex_t lk;
	uint32_t n;      /* entries waiting: read without the lock first */
	uint32_t resets; /* fresh cores asked for (a restarted DFM): entries before one are dropped */
	uint64_t merged;
	struct assign_ent ent[ASSIGN_BOX];
};

struct worker {
	struct bw *bw;
	uint32_t id;
	pthread_t th;
	bool started;
	int cpu;
	uint32_t q[XEVB_XSK_MAX_QUEUES], n_q;
	struct xevb_builder *b;
	struct xevb_output *out, own_out;
	bool own_out_open;
	int efd;
	uint32_t sleeping;
	uint32_t run_ended;
	struct xevb_stall_drain sd; /* timeouts wait for the ring after a gap */
	uint32_t full_batch;        /* frames a turn takes when its rings are full */
	int poll_ms;
	bool failed; /* receiving failed: worker 0 ends the run */
	uint32_t sock_turn;
	bool worked;                  /* the last turn did work: an empty turn naps before it sleeps */
	struct assign_box *box;       /* workers 1.. under a DFM */
	struct assign_ent *box_taken; /* [ASSIGN_BOX] */
	uint32_t resets_done;
	uint64_t next_tick;
	uint8_t *fref; /* shares still out, per frame of our queues */
	struct bw_worker_stats st;
	struct rx_src *rsrc; /* [XEVB_MAX_SOURCES] */
	struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_frag_ref part[XEVB_MAX_FRAGS_PER_MEP];
	uint64_t next_maint;
	uint32_t window;
	uint64_t open_at_stop;
	struct xevb_builder_cfg bcfg; /* its builder's: a DFM restart makes it afresh */
	/* statistics hand-over to the main thread */
	uint32_t req, ack;
	struct xevb_builder_stats *pub_core;
	struct rx_src *pub_rsrc;
	struct bw_worker_stats pub_st;
	struct xevb_output_stats pub_out;
	_Alignas(64) uint32_t want_refs; /* senders read it per MEP; it changes once a window at most */
	_Alignas(64) uint32_t ho_multi, ho_fallback;
};

struct bw {
	struct bw_cfg c;
	struct worker w[XEVB_HO_MAX_WORKERS];
	uint32_t n;
	uint32_t q_worker[XEVB_XSK_MAX_QUEUES];
	struct xevb_spsc ho[XEVB_HO_MAX_WORKERS][XEVB_HO_MAX_WORKERS];   /* [from][to] */
	struct xevb_spsc ret[XEVB_HO_MAX_WORKERS][XEVB_HO_MAX_WORKERS];  /* [from][to] */
	struct xevb_spsc refs[XEVB_HO_MAX_WORKERS][XEVB_HO_MAX_WORKERS]; /* [from][to]: the shares' frag refs */
	pthread_mutex_t out_lock;
	pthread_barrier_t bar;
	uint32_t stop;
	bool abort;   /* set before stop when not every worker started, or worker 0 never ran */
	bool running; /* bw_run started the threads: statistics are asked for, not read */
	bool ran;     /* worker 0 ran its turns and its stop (bw_run) */
	bool stopped;
	struct xevb_builder_stats merged;
	/* The kernel socket's frames (c.sock): indices from sock_base, received by worker 0. */
	uint32_t sock_base;
};

/* engine_dispatch.c: what the workers' life (engine_workers.c) calls of the hot path. */
extern __thread struct worker *bw_this_worker;
void bw_emit_cb(void *ctx, const struct xevb_event *ev);
void bw_emit_run_cb(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes);
bool bw_wake(struct worker *peer);
void bw_publish_all(struct worker *w);
uint32_t bw_drain_returns(struct worker *w);
void bw_release_cb(void *ctx, uint32_t idx);
void bw_builder_release_cb(void *ctx, uint32_t idx);
uint32_t bw_drain_handoffs(struct worker *w, uint64_t now, uint32_t max_batches);
void bw_rx_all(struct worker *w, uint64_t now, uint32_t *got, uint32_t rounds);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's workers (engine.h, --workers N > 1): one receive thread per
 * group of AF_XDP queues, each with its own builder core, events owned by
 * event_id block (user/include/xevb/handoff.h). The calling thread keeps
 * time: the engine's duties and shedding.
 */
#ifndef XEVB_ENGINE_WORKERS_H
#define XEVB_ENGINE_WORKERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <xevb/builder.h>
#include <xevb/mep_parse.h>
#include <xevb/output.h>
#include <xevb/xsk_rx.h>

struct xevb_snapshot;
struct xevb_sock;
struct xevb_metrics;

struct bw_cfg {
	struct xevb_xsk *xsk;         /* open; queue i served by worker i % n_workers */
	uint32_t n_workers;           /* 1..XEVB_HO_MAX_WORKERS, <= xsk->n_queues */
	const int *cpus;              /* [n_cpus]: worker w on cpus[w % n_cpus]; -1: not pinned */
	uint32_t n_cpus;              /* 0: worker w on online CPU w % count */
	uint32_t owner_shift;         /* events per ownership block: 2^shift */
	struct xevb_builder_cfg bcfg; /* template; emit/frame_release/ctx are ours */
	struct xevb_parse_cfg pcfg;
	uint32_t meta_cookie; /* non-zero: the XDP program writes XDP meta (xsk_meta.h) */
	bool busy, bare;
	struct xevb_output *out;  /* opened by the caller: worker 0's, or everyone's (file) */
	const char *const *sinks; /* the others open their own connections to these */
	uint32_t n_sinks;
	bool file; /* out writes a file: shared, under a mutex */
	uint32_t n_sources;
	int poll_ms;
	uint32_t wait_us; /* after a turn that did work, nap this long before sleeping in poll() */
	uint32_t rx_ring;
	/*
	 * Open, or NULL: the kernel's reassembled IPv4 datagrams (IP-fragmented
	 * MEPs), received by worker 0 and handed to their events' owners like
	 * any frame; its frame indices follow the AF_XDP ones.
	 */
	struct xevb_sock *ipfrag;
	/* Worker 0's turn, in the calling thread (bw_run): the engine's duties; true: stop. */
	bool (*duties)(void *ctx, uint64_t now);
	void *duties_ctx;
};

struct bw;

/* Workers 1..n-1 start in their threads; NULL after a message. */
struct bw *bw_start(const struct bw_cfg *c);
/* Worker 0 in the calling thread until its duties say stop; then every worker drains and stops. */
void bw_run(struct bw *bw);
/* Fill the receive, output and (merged) builder fields of s; while running, from worker 0's duties only. */
void bw_snapshot(struct bw *bw, struct xevb_snapshot *s);
bool bw_run_ended(struct bw *bw);
/* After bw_run: join workers 1..n-1 and settle their outputs (without bw_run: they stop at once). */
void bw_stop(struct bw *bw);
/* A frame worker 0's output held (zero copy) back to its queue's worker, in worker 0's thread. */
void bw_release_held(struct bw *bw, uint32_t idx);
/* Every worker's accounting invariant, then the merged one. */
bool bw_check(struct bw *bw, char *msg, size_t len);
/* {"workers":[...]} on one line. */
void bw_json(struct bw *bw, FILE *f);
/* Per-worker counters on the metrics page. */
void bw_metrics(struct bw *bw, struct xevb_metrics *mx);
void bw_free(struct bw *bw);

#endif

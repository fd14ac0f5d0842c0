/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The receive engine of `xevb build`: takes frames in (AF_XDP queues behind
 * the XDP program, with or without its meta, or a kernel socket; the
 * reassembled IPv4 datagrams' socket now and then), hands them to the
 * builder core, flushes the output, refills the rings, sheds whole events
 * under overload, and waits by one policy (--tune wait-us) when nothing
 * comes. One loop serves any number of workers (engine_workers.c).
 * Worker 0 runs in the calling thread and also does the periodic duties
 * (statistics, shedding, the DFM): one worker costs no extra thread or
 * wake-up, and has nothing to hand over. Workers 1..N-1 are threads;
 * every worker owns the events of its id blocks; worker 0 also takes the
 * kernel socket's datagrams and hands each to its events' owner.
 *
 * The command sets the engine up (sockets, loader, output, core) and gives
 * it its periodic duties (statistics, the DFM) as hooks; the engine owns
 * the loop and the counters of what it received.
 */
#ifndef XEVB_ENGINE_H
#define XEVB_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "evb/builder.h"
#include "rx/loader.h"
#include <xevb/mep_parse.h>
#include "out/output.h"
#include <xevb/shed.h>
#include "rx/sock_rx.h"
#include "rx/xsk_rx.h"

#define XEVB_ENGINE_RX_BATCH     64
#define XEVB_ENGINE_RX_BATCH_MAX 256
#define XEVB_ENGINE_MAX_CPUS     256
/* XDP path: frames of the device MTU's datagram on the reassembled datagrams' socket (big buffers aside). */
#define XEVB_ENGINE_IPFRAG_FRAMES 256
#define XEVB_ENGINE_SHED_TICK_NS  2000000ull

struct bw;

struct xevb_engine_cfg {
	bool xdp;       /* AF_XDP queues; else the kernel socket */
	bool bare;      /* receive and release, build nothing */
	bool busy;      /* spin instead of sleeping in poll() */
	bool exit_eor;  /* end when every builder saw END_OF_RUN from every source */
	bool emit_runs; /* build only: runs of events counted whole, never made one by one */
	uint32_t n_queues, rx_batch, rx_ring;
	uint32_t timeout_ms; /* the builder's event timeout */
	uint32_t wait_us;    /* after a turn that did work, nap this long before sleeping in poll() */
	/* Workers: 1 runs in the calling thread; more own events in blocks of 2^owner_shift ids. */
	uint32_t n_workers, owner_shift;
	const int *cpus; /* [n_cpus]: worker w on cpus[w % n_cpus] */
	uint32_t n_cpus;
	const char *const *sinks; /* workers 1.. open their own connections to these */
	uint32_t n_sinks;
	bool file; /* the output writes a file: shared by the workers */
	uint32_t n_sources;
};

struct xevb_engine_hooks {
	void *ctx;
	/*
	 * Worker 0, in the calling thread, every turn: after the builder's
	 * poll and before the output's flush (one worker), after the flush
	 * (more): the statistics, the DFM. True: the run ends.
	 */
	bool (*duties)(void *ctx, uint64_t now);
	/*
	 * When set, events go here instead of the output (--dfm: its control
	 * endpoint in front). More workers call it under the engine's lock
	 * (xevb_engine_lock), and their output is the one the hooks write to.
	 */
	void (*emit)(void *ctx, const struct xevb_event *ev);
	/* More workers under a DFM: workers 1.., about every millisecond, under the lock: b is theirs (re-asks). */
	void (*worker_tick)(void *ctx, uint32_t w, const struct xevb_builder *b, uint64_t now);
	int fd;          /* >= 0: wakes worker 0's poll() too (the DFM's socket) */
	int poll_max_ms; /* > 0: worker 0 sleeps at most this long (re-asks keep time) */
};

/* The shedding controller's state between ticks (shed.h). */
struct xevb_engine_shed {
	bool on;
	struct xevb_shed ctl;
	uint64_t next_ns;
	uint64_t kdrops;      /* the receive sockets' drop counters at the last tick */
	uint64_t rx;          /* frames received at the last tick (one worker) */
	uint64_t out_bytes;   /* output bytes sent at the last tick */
	uint64_t out_dropped; /* events dropped for backlog at the last tick */
};

struct xevb_engine {
	struct xevb_engine_cfg c;
	struct xevb_engine_hooks h;
	/* Socket mode: the steering program in pass mode in front of the socket (it sheds). */
	bool pass_xdp;
	struct xevb_loader ld;
	struct xevb_xsk xsk;
	struct xevb_sock sock;
	/*
	 * XDP path: IPv4-fragmented MEPs go to the kernel (verdict
	 * ip_fragment); its reassembled datagrams come from this socket,
	 * their frames numbered from ipfrag_base in the builder's index space.
	 */
	bool ipfrag_on;
	uint32_t ipfrag_base;
	struct xevb_sock ipfrag;
	struct xevb_builder_cfg bcfg; /* every worker's builder core's, but for its callbacks */
	struct xevb_output out;
	struct xevb_parse_cfg pcfg;
	uint32_t meta_cookie; /* non-zero: the XDP program writes XDP meta (xdp_meta.h) */
	struct xevb_engine_shed shed;
	struct bw *bw;                     /* the workers (xevb_engine_start) */
	const volatile sig_atomic_t *stop; /* xevb_engine_run's */
};

/*
 * The wait policy (--tune wait-us), every worker's: after a turn that did
 * work (worked), an empty turn naps wait_us and returns true; otherwise
 * false, and the caller sleeps in poll(). A poll() wake-up per NAPI run
 * is a context switch each side (the NAPI thread may share our core) for
 * a few frames; after a nap the next turn finds a batch.
 */
static inline bool xevb_engine_nap(uint32_t wait_us, bool worked)
{
	struct timespec ts = { 0, (long)wait_us * 1000 };

	if (!wait_us || !worked)
		return false;
	nanosleep(&ts, NULL);
	return true;
}

/* The calling thread on cpu (worker w's, --tune cpus); cpu < 0: left as it is. */
void xevb_engine_pin(int cpu, uint32_t w);

/* A frame the output held (zero copy) back to the ring or socket it came from, or to its worker. */
void xevb_engine_release_held(void *ctx, uint32_t idx);
/*
 * Whole-event shedding (shed.h) against the loader's gate: the lowest of
 * sources counts the events shed; XDP mode also starts the ring guard.
 */
void xevb_engine_shed_start(struct xevb_engine *e, const uint16_t *sources, int n_sources);
/* One step of the controller: the receive queue's fill and the kernel's drops since the last. */
void xevb_engine_shed_step(struct xevb_engine *e, uint64_t now);

/* The loops, every turn: a step every XEVB_ENGINE_SHED_TICK_NS. */
static inline void xevb_engine_shed_tick(struct xevb_engine *e, uint64_t now)
{
	if (e->shed.on && now >= e->shed.next_ns)
		xevb_engine_shed_step(e, now);
}
/*
 * The workers and their builder cores, after the receive path is open
 * (AF_XDP queues or the socket): counters can be read from here on. False
 * after a message.
 */
bool xevb_engine_start(struct xevb_engine *e);
/* One worker: its builder core (the DFM steers it), else NULL. */
struct xevb_builder *xevb_engine_core(struct xevb_engine *e);
/* Worker 0's builder core: a DFM steers it from the duties (worker 0's thread), under the lock. */
struct xevb_builder *xevb_engine_core0(struct xevb_engine *e);
/*
 * Fresh builder cores, the old ones flushed and checked (a restarted DFM):
 * worker 0's now, the others' before their next ASSIGN. False: worker
 * 0's could not be made (the old one goes on).
 */
bool xevb_engine_core_reset(struct xevb_engine *e);
/* An ASSIGN of the DFM for workers 1.. (worker 0's core got it from the DFM's tick). */
void xevb_engine_assign(struct xevb_engine *e, uint32_t first, uint32_t count, uint32_t run, bool set_run);
/* More workers: the lock of the shared output and the hooks' state (recursive); one worker: nothing. */
void xevb_engine_lock(struct xevb_engine *e);
void xevb_engine_unlock(struct xevb_engine *e);
/*
 * Receive, build and forward until *stop, the duties hook says so, the
 * run ended (c.exit_eor) or receiving failed (after a message). False: it
 * could not start (after a message); nothing to stop then.
 */
bool xevb_engine_run(struct xevb_engine *e, const volatile sig_atomic_t *stop);
/*
 * After the run: what sits in the rings is taken in, what is still open
 * leaves by the timeout policy (discard: counted), held frames come back,
 * the output settles.
 */
void xevb_engine_stop(struct xevb_engine *e, bool discard);
/* Every builder's accounting invariant, and the hand-offs' (more workers). */
bool xevb_engine_check(struct xevb_engine *e, char *msg, size_t len);
void xevb_engine_free(struct xevb_engine *e);

#endif

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's receive loop, for one worker or many, with event ownership
 * (engine_workers.h, handoff.h).
 *
 * Each worker thread serves its AF_XDP queues: it classifies every frame,
 * counts packets and packet_seq gaps per source (an owner sees only part of
 * a source's packets), and splits each MEP by owner. Its own share goes
 * straight into its builder; the others' shares go as frame references
 * over the hand-off ring of that owner. The receiving worker keeps, per
 * frame, how many shares are still out (fref); owners give frames back
 * over a return ring, and only the receiving worker touches its queues'
 * fill rings. No lock, no syscall per packet: a sleeping worker is woken
 * through its eventfd only when someone publishes to it while it sleeps.
 *
 * END_OF_RUN reaches every worker: an EOR MEP sends every worker a share,
 * empty if none of its events are in it, so every builder learns that the
 * source has ended (FIFO per ring keeps it behind that source's earlier
 * packets from the same queue).
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

/* The queue a frame index belongs to: a UMEM chunk, or a jumbo frame's bounce buffer (xsk_rx.h). */
static inline uint32_t frame_queue(const struct bw *bw, uint32_t idx)
{
	const struct xevb_xsk *x = bw->c.xsk;

	if (__builtin_expect(idx >= x->n_umem, 0))
		return (idx - x->n_umem) / x->bounce_per_q;
	return idx / x->frames_per_q;
}

/* The worker that received a frame, and gets it back. */
static inline uint32_t frame_worker(const struct bw *bw, uint32_t idx)
{
	if (__builtin_expect(idx >= bw->sock_base, 0))
		return 0;
	return bw->q_worker[frame_queue(bw, idx)];
}

static inline const uint8_t *frame_at(const struct bw *bw, uint32_t idx)
{
	if (__builtin_expect(idx >= bw->sock_base, 0))
		return bw->c.sock->frame_data[idx - bw->sock_base];
	return bw->c.xsk->frame_data[idx];
}

/* A frame back to the socket it came from; the receiving worker's thread only. */
static inline void own_release(struct bw *bw, uint32_t idx)
{
	if (__builtin_expect(idx >= bw->sock_base, 0))
		xevb_sock_release(bw->c.sock, idx - bw->sock_base);
	else
		xevb_xsk_release(bw->c.xsk, idx);
}

static void emit_cb(void *ctx, const struct xevb_event *ev)
{
	struct worker *w = ctx;

	if (w->bw->c.emit && w->bw->n == 1) {
		w->bw->c.emit(w->bw->c.hook_ctx, ev); /* the DFM's thread */
	} else if (w->bw->c.emit) {
		pthread_mutex_lock(&w->bw->out_lock);
		w->bw->c.emit(w->bw->c.hook_ctx, ev);
		pthread_mutex_unlock(&w->bw->out_lock);
	} else if (w->bw->c.file && w->bw->n > 1) {
		pthread_mutex_lock(&w->bw->out_lock);
		xevb_output_emit(w->out, ev);
		pthread_mutex_unlock(&w->bw->out_lock);
	} else {
		xevb_output_emit(w->out, ev);
	}
}

/* Build-only: a run of events counted whole (the output is not shared then). */
static void emit_run_cb(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes)
{
	struct worker *w = ctx;

	xevb_output_emit_run(w->out, first, n, wire_bytes);
}

static inline void local_unref(struct worker *w, uint32_t idx)
{
	if (--w->fref[idx] == 0)
		own_release(w->bw, idx);
}

static bool wake(struct worker *peer)
{
	uint64_t one = 1;

	/* Pairs with the fence in idle(): either it sees our entries, or we see it asleep. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&peer->sleeping, __ATOMIC_RELAXED))
		return false;
	(void)!write(peer->efd, &one, sizeof(one));
	return true;
}

static inline uint32_t backlog(const struct xevb_spsc *r)
{
	return r->prod_head - __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
}

static void publish_all(struct worker *w)
{
	struct bw *bw = w->bw;

	for (uint32_t o = 0; o < bw->n; o++) {
		bool any;

		if (o == w->id)
			continue;
		any = xevb_spsc_publish(&bw->ho[w->id][o]);
		any |= xevb_spsc_publish(&bw->ret[w->id][o]);
		if (any &&
		    (backlog(&bw->ho[w->id][o]) >= WAKE_BACKLOG || backlog(&bw->ret[w->id][o]) >= WAKE_BACKLOG))
			w->st.wakes += wake(&bw->w[o]);
	}
}

static uint32_t drain_returns(struct worker *w)
{
	struct bw *bw = w->bw;
	uint32_t total = 0;

	for (uint32_t s = 0; s < bw->n; s++) {
		struct xevb_spsc *r = &bw->ret[s][w->id];
		uint32_t n;

		if (s == w->id)
			continue;
		while ((n = xevb_spsc_peek(r, 256))) {
			for (uint32_t i = 0; i < n; i++)
				local_unref(w, *(const uint32_t *)xevb_spsc_at(r, i));
			xevb_spsc_release(r, n);
			total += n;
		}
	}
	w->st.ret_recv += total;
	return total;
}

/* A ring sized to every frame cannot fill up; if it ever did, wait, never drop. */
static __attribute__((noinline, cold)) void *slot_wait_full(struct worker *w, struct xevb_spsc *r, uint32_t to)
{
	void *p;

	while (!(p = xevb_spsc_slot(r))) {
		w->st.ring_full_waits++;
		xevb_spsc_publish(r);
		wake(&w->bw->w[to]);
		drain_returns(w);
		sched_yield();
	}
	return p;
}

static inline void *slot_wait(struct worker *w, struct xevb_spsc *r, uint32_t to)
{
	void *p = xevb_spsc_slot(r);

	return __builtin_expect(p != NULL, 1) ? p : slot_wait_full(w, r, to);
}

static void release_cb(void *ctx, uint32_t idx)
{
	struct worker *w = ctx;
	struct bw *bw = w->bw;
	uint32_t rw;

	/* One worker: every frame is its own, and nobody else holds a share. */
	if (bw->n == 1) {
		own_release(bw, idx);
		return;
	}
	rw = frame_worker(bw, idx);
	if (rw == w->id) {
		local_unref(w, idx);
		return;
	}
	*(uint32_t *)slot_wait(w, &bw->ret[w->id][rw], rw) = idx;
	xevb_spsc_push(&bw->ret[w->id][rw]);
	w->st.ret_sent++;
}

/* The builder's release: --tune zerocopy=1 holds a frame a send may still read; it comes back later. */
/* The worker this thread runs: a shared output's sends are reaped by whichever worker holds its lock. */
static __thread struct worker *this_worker;

static void builder_release_cb(void *ctx, uint32_t idx)
{
	struct worker *w = ctx;

	if (w->out->zc) {
		bool held;

		/* The DFM's farm node connections are every worker's: under the lock. */
		if (w->out == w->bw->c.out && w->bw->n > 1)
			pthread_mutex_lock(&w->bw->out_lock);
		held = xevb_output_hold(w->out, idx);
		if (w->out == w->bw->c.out && w->bw->n > 1)
			pthread_mutex_unlock(&w->bw->out_lock);
		if (held)
			return;
	}
	release_cb(ctx, idx);
}

void bw_release_held(struct bw *bw, uint32_t idx)
{
	/* From the reaping thread's worker: its rings are the ones it may push to. */
	release_cb(this_worker && this_worker->bw == bw ? this_worker : &bw->w[0], idx);
}

/* More workers: an owner sees part of a source's packets, so the receiver counts them (one: its builder). */
static inline void rx_note(struct worker *w, const struct xevb_pkt_info *pi)
{
	struct rx_src *s = &w->rsrc[pi->source_id];

	if (w->bw->n == 1)
		return;

	s->packets++;
	if (__builtin_expect(!s->seen, 0)) {
		s->seen = true;
		s->last_seq = pi->packet_seq;
	} else if (xevb_seq_after(pi->packet_seq, s->last_seq)) {
		s->seq_gaps += pi->packet_seq - s->last_seq - 1;
		s->last_seq = pi->packet_seq;
	}
}

static inline void prefetch_frame(const uint8_t *p, uint32_t len)
{
	for (uint32_t off = 0; off < len; off += 64)
		__builtin_prefetch(p + off, 0, 3);
}

/*
 * One worker: every event is its own, the frame needs no share count. A
 * run goes without refs; anything else is parsed for them first.
 */
static bool dispatch_own(struct worker *w, uint32_t idx, const uint8_t *data, uint32_t len,
			 const struct xevb_pkt_info *pi, bool have_frags, uint64_t now)
{
	if (!have_frags && !(pi->consec && pi->n_frags > 1)) {
		struct xevb_pkt_info again;

		/* Validated a moment ago: only a frame changed under us fails here. */
		if (xevb_mep_parse(data, data + len, pi->mep_off, pi->mep_len, &again, w->frags) != XEVB_RES_MEP)
			return false;
		have_frags = true;
	}
	xevb_builder_add_mep(w->b, idx, data, pi, have_frags ? w->frags : NULL, now);
	return true;
}

/*
 * Route a validated MEP (pi) by owner. have_frags: w->frags holds its
 * refs; without them (classified without, or described by the XDP
 * program), a MEP of consecutive ids in one owner block is routed by
 * first_event_id alone and goes whole, without refs, to its owner's
 * builder; anything else (split, a gap in the ids, END_OF_RUN) is parsed
 * for its refs first. Returns false if the frame is not a MEP after all.
 */
static bool dispatch(struct worker *w, uint32_t idx, const uint8_t *data, uint32_t len, struct xevb_pkt_info *pi,
		     bool have_frags, uint64_t now)
{
	struct bw *bw = w->bw;
	struct xevb_ho_part parts[XEVB_HO_MAX_WORKERS];
	uint32_t n = pi->n_frags, nw = bw->n, owners, shift = bw->c.owner_shift, e0 = pi->first_event_id;
	bool eor = pi->flags & XEVB_MEP_F_END_OF_RUN;

	if (nw == 1)
		return dispatch_own(w, idx, data, len, pi, have_frags, now);
	/* One block: first and last id agree above the shift (a MEP across the 2^32 wrap does not). */
	if (__builtin_expect(pi->consec && !eor && n && !((e0 ^ (e0 + n - 1)) >> shift), 1)) {
		uint32_t o = xevb_owner(e0, shift, nw);
		struct xevb_spsc *r;

		if (o != w->id && have_frags && __atomic_load_n(&bw->w[o].want_refs, __ATOMIC_RELAXED))
			goto with_refs;

		uint16_t len1 = n == 1 ? xevb_ld16(data + pi->mep_off + XEVB_MEP_HLEN + 4) : 0;

		w->fref[idx] = 1;
		if (o == w->id) {
			const struct xevb_frag_ref *f = have_frags ? w->frags : NULL;

			/* A run of one goes fragment by fragment: its ref, from the line the parser just read. */
			if (!f && n == 1) {
				w->frags[0] = (struct xevb_frag_ref){
					.event_id = e0,
					.length = len1,
					.payload_off = (uint16_t)(pi->mep_off + XEVB_MEP_HLEN + XEVB_REC_HLEN)
				};
				f = w->frags;
			}
			xevb_builder_add_mep(w->b, idx, data, pi, f, now);
			return true;
		}
		r = &bw->ho[w->id][o];
		xevb_ho_pack_whole(slot_wait(w, r, o), idx, pi, len1);
		xevb_spsc_push(r);
		w->st.ho_sent++;
		w->st.ho_whole++;
		return true;
	}
with_refs:
	if (!have_frags) {
		struct xevb_pkt_info again;

		/* Validated a moment ago: only a frame changed under us fails here. */
		if (xevb_mep_parse(data, data + len, pi->mep_off, pi->mep_len, &again, w->frags) != XEVB_RES_MEP)
			return false;
	}
	owners = xevb_owner_plan(w->frags, n, bw->c.owner_shift, nw, parts);
	if (owners > 1)
		w->st.split_meps++;
	if (!eor && owners == 1 && parts[w->id].count == n) {
		w->fref[idx] = 1;
		xevb_builder_add_mep(w->b, idx, data, pi, w->frags, now);
		return true;
	}
	w->fref[idx] = (uint8_t)(eor ? nw : owners);
	for (uint32_t o = 0; o < nw; o++) {
		const struct xevb_ho_part *p = &parts[o];

		if (!p->count && !eor)
			continue;
		if (o == w->id) {
			struct xevb_pkt_info lp = *pi;
			const struct xevb_frag_ref *f = w->frags + p->first;

			lp.n_frags = p->count;
			if (p->filter) {
				uint32_t k = 0;
				for (uint32_t i = p->first; i <= p->last; i++)
					if (xevb_owner(w->frags[i].event_id, bw->c.owner_shift, nw) == o)
						w->part[k++] = w->frags[i];
				f = w->part;
			}
			if (p->count)
				lp.first_event_id = f[0].event_id;
			xevb_builder_add_mep(w->b, idx, data, &lp, f, now);
		} else {
			struct xevb_spsc *r = &bw->ho[w->id][o];
			struct xevb_ho_ent *e = slot_wait(w, r, o);

			if (!xevb_ho_pack(e, &bw->refs[w->id][o], idx, pi, w->frags, p, bw->c.owner_shift, nw, o))
				w->st.ho_walked++;
			xevb_spsc_push(r);
			w->st.ho_sent++;
			if (!p->count)
				w->st.eor_notices++;
		}
	}
	return true;
}

/* A validated segment's one ref, from the record header the parser just read. */
static inline void segment_ref(const uint8_t *data, const struct xevb_pkt_info *pi, struct xevb_frag_ref *ref)
{
	*ref = (struct xevb_frag_ref){
		.event_id = pi->first_event_id,
		.crc32c = xevb_ld32(data + pi->mep_off + XEVB_MEP_HLEN + 8),
		.payload_off = (uint16_t)(pi->mep_off + XEVB_MEP_HLEN + XEVB_REC_HLEN),
		.length = pi->seg_bytes,
	};
}

/*
 * A segment (wire format 1.1) goes to the owner of its event, as a MEP of
 * one record goes whole (the owner parses its record header again, a line
 * it reads anyway). Its END_OF_RUN concerns every worker: the others get
 * the notice a MEP's would send, each holding the frame until its builder
 * has read it.
 */
static void segment_rx(struct worker *w, uint32_t idx, const uint8_t *data, const struct xevb_pkt_info *pi,
		       uint64_t now)
{
	struct bw *bw = w->bw;
	const struct xevb_ho_part none = { 0 };
	uint32_t nw = bw->n, owner = xevb_owner(pi->first_event_id, bw->c.owner_shift, nw);
	bool eor = pi->flags & XEVB_MEP_F_END_OF_RUN;
	struct xevb_frag_ref ref;

	w->fref[idx] = (uint8_t)(eor ? nw : 1);
	for (uint32_t o = 0; o < nw; o++) {
		struct xevb_spsc *r = &bw->ho[w->id][o];

		if (o == w->id || (o != owner && !eor))
			continue;
		if (o == owner)
			xevb_ho_pack_whole(slot_wait(w, r, o), idx, pi, pi->seg_bytes);
		else
			xevb_ho_pack(slot_wait(w, r, o), &bw->refs[w->id][o], idx, pi, NULL, &none,
				     bw->c.owner_shift, nw, o);
		xevb_spsc_push(r);
		w->st.ho_sent++;
		w->st.eor_notices += o != owner;
	}
	if (owner == w->id) {
		segment_ref(data, pi, &ref);
		xevb_builder_add_segment(w->b, idx, data, pi, &ref, now);
	} else if (eor) {
		/* This worker's builder must see the END_OF_RUN too: a notice of no fragment. */
		struct xevb_pkt_info lp = *pi;

		lp.n_frags = 0;
		xevb_builder_add_mep(w->b, idx, data, &lp, w->frags, now);
	}
}

/* A segment handed over by the worker that received it (segment_rx). */
static void segment_owned(struct worker *w, uint32_t idx, const uint8_t *frame, const struct xevb_pkt_info *pi,
			  uint64_t now)
{
	struct xevb_pkt_info sp;
	struct xevb_frag_ref ref;

	/* Validated by the receiver: only a frame changed under us fails here. */
	if (xevb_mep_parse(frame, frame + pi->mep_off + pi->mep_len, pi->mep_off, pi->mep_len, &sp, &ref) !=
	    XEVB_RES_SEGMENT) {
		release_cb(w, idx);
		return;
	}
	sp.packet_seq = pi->packet_seq;
	xevb_builder_add_segment(w->b, idx, frame, &sp, &ref, now);
}

/* One received frame: classified, its source's packets noted, handed to its event's owner. */
static inline void rx_frame(struct worker *w, uint32_t idx, const uint8_t *data, uint32_t len, bool refs,
			    uint64_t now)
{
	struct bw *bw = w->bw;
	struct xevb_pkt_info pi;
	int res;

	/* Validate without writing refs unless an owner wants them: most MEPs need none (dispatch). */
	if (refs)
		res = xevb_classify(data, data + len, len, &bw->c.pcfg, &pi, w->frags);
	else
		res = xevb_classify(data, data + len, len, &bw->c.pcfg, &pi, NULL);
	/* Frames received; the reassembled datagrams' socket counts its own. */
	if (__builtin_expect(idx < bw->sock_base || bw->c.sock_main, 1))
		w->st.rx_bytes += len;
	/*
	 * No XDP program saw a socket's datagram (the socket path's, and the
	 * reassembled ones beside XDP): --bind-src and --allow-src are judged here.
	 */
	if (__builtin_expect(idx >= bw->sock_base, 0) && xevb_sock_src_refused(bw->c.sock, res, &pi, data, len)) {
		own_release(bw, idx);
		return;
	}
	if (res == XEVB_RES_SEGMENT) {
		rx_note(w, &pi);
		segment_rx(w, idx, data, &pi, now);
		return;
	}
	if (res != XEVB_RES_MEP) {
		/* XDP judged it already: does not happen unless the program is bypassed (or the kernel's socket). */
		w->st.rx_not_mep++;
		own_release(bw, idx);
		return;
	}
	rx_note(w, &pi);
	if (!dispatch(w, idx, data, len, &pi, refs, now)) {
		w->st.rx_not_mep++;
		own_release(bw, idx);
	}
}

static bool owners_want_refs(const struct worker *w)
{
	bool refs = false;

	for (uint32_t o = 0; o < w->bw->n; o++)
		refs |= o != w->id && __atomic_load_n(&w->bw->w[o].want_refs, __ATOMIC_RELAXED);
	return refs;
}

/* The meta sits in the line before the frame; the MEP header and first record in its first lines. */
#define META_AHEAD 4

static inline void prefetch_meta(const uint8_t *p)
{
	__builtin_prefetch(p - XEVB_XDP_META_LEN, 1, 3);
	__builtin_prefetch(p + 64, 0, 3);
}

/*
 * With XDP meta: a consecutive MEP the program described is routed by
 * its first_event_id without a walk over its records (dispatch without
 * refs); any other frame (no meta, a bounce buffer) through the parser,
 * and every frame while an owner wants refs (its builder could not book
 * whole MEPs: the parser writes them). The meta is cleared either way.
 */
static void handle_rx_meta(struct worker *w, uint32_t n, const uint32_t *idx, const uint8_t **data,
			   const uint32_t *len, bool refs, uint64_t now)
{
	struct bw *bw = w->bw;
	uint32_t n_umem = bw->c.xsk->n_umem;

	for (uint32_t i = 0; i < n && i < META_AHEAD; i++)
		if (idx[i] < n_umem)
			prefetch_meta(data[i]);
	for (uint32_t i = 0; i < n; i++) {
		struct xevb_pkt_info pi;
		int res = -1;

		if (i + META_AHEAD < n && idx[i + META_AHEAD] < n_umem)
			prefetch_meta(data[i + META_AHEAD]);
		if (idx[i] < n_umem) {
			if (!refs)
				res = xevb_xsk_meta_pi(data[i], len[i], bw->c.meta_cookie, &pi);
			/* The UMEM is ours, writable: the chunk goes back without it. */
			xevb_xsk_meta_clear((uint8_t *)(uintptr_t)data[i]);
		}
		if (res != XEVB_RES_MEP) {
			w->st.rx_meta_fallback++;
			prefetch_frame(data[i], len[i]);
			rx_frame(w, idx[i], data[i], len[i], refs, now);
			continue;
		}
		w->st.rx_meta++;
		w->st.rx_bytes += len[i];
		rx_note(w, &pi);
		if (!dispatch(w, idx[i], data[i], len[i], &pi, false, now)) {
			w->st.rx_not_mep++;
			own_release(bw, idx[i]);
		}
	}
}

/* A batch of received frames (AF_XDP, or the socket path's own socket), each to its events' owner. */
static void handle_rx(struct worker *w, uint32_t n, const uint32_t *idx, const uint8_t **data, const uint32_t *len,
		      uint64_t now)
{
	struct bw *bw = w->bw;
	bool refs;

	XEVB_PROBE(batch_received, n, now);
	w->st.rx_frames += n;
	w->st.batches++;
	if (bw->c.bare) {
		/* The receive ceiling: what the ring loop costs without the builder. */
		for (uint32_t i = 0; i < n; i++) {
			w->st.rx_bytes += len[i];
			own_release(bw, idx[i]);
		}
		return;
	}
	refs = owners_want_refs(w);
	if (bw->c.meta_cookie) {
		handle_rx_meta(w, n, idx, data, len, refs, now);
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
		rx_frame(w, idx[i], data[i], len[i], refs, now);
	}
}

static void sock_rx_failed(struct worker *w, int err)
{
	static bool warned;

	if (w->bw->c.sock_main) {
		xevb_err("receive failed: %s", strerror(-err));
		w->failed = true;
	} else if (!warned) {
		warned = true;
		xevb_warn(
			"receiving reassembled IPv4 datagrams failed: %s; IP-fragmented MEPs may be lost "
			"(the kernel counts them: nstat -a IpReasmOKs)",
			strerror(-err));
	}
}

/*
 * Worker 0: the kernel socket. The socket path's own is a receive queue
 * like an AF_XDP ring; the datagrams the kernel reassembled from IPv4
 * fragments (counted by their socket) go each to its events' owner.
 */
static uint32_t rx_sock(struct worker *w, uint64_t now)
{
	struct bw *bw = w->bw;
	uint32_t idx[XEVB_SOCK_BATCH], len[XEVB_SOCK_BATCH];
	const uint8_t *data[XEVB_SOCK_BATCH];
	int n = xevb_sock_rx(bw->c.sock, idx, data, len);
	bool refs;

	if (n <= 0) {
		if (n < 0)
			sock_rx_failed(w, n);
		return 0;
	}
	for (int i = 0; i < n; i++)
		idx[i] += bw->sock_base;
	if (bw->c.sock_main) {
		handle_rx(w, (uint32_t)n, idx, data, len, now);
		return (uint32_t)n;
	}
	refs = owners_want_refs(w);
	for (int i = 0; i < n; i++)
		rx_frame(w, idx[i], data[i], len[i], refs, now);
	return (uint32_t)n;
}

static inline void prefetch_share(const struct bw *bw, const struct xevb_ho_ent *e, const struct xevb_spsc *refs,
				  uint32_t *pf)
{
	const uint8_t *buf = refs->buf;
	uint32_t bytes = (refs->mask + 1) * (uint32_t)sizeof(struct xevb_frag_ref), off, len;

	if (e->flags & XEVB_HO_F_WHOLE)
		return; /* the entry is all the owner reads */
	if (!(e->flags & XEVB_HO_F_REFS)) {
		prefetch_frame(frame_at(bw, e->frame_idx) + e->rec_off, e->span);
		return;
	}
	off = ((refs->cons_tail + *pf) & refs->mask) * (uint32_t)sizeof(struct xevb_frag_ref);
	len = e->n_walk * (uint32_t)sizeof(struct xevb_frag_ref);
	*pf += e->n_walk;
	for (uint32_t k = 0; k < len; k += 64)
		__builtin_prefetch(buf + (off + k) % bytes, 0, 3);
	if (len)
		__builtin_prefetch(buf + (off + len - 1) % bytes, 0, 3);
}

/* A multi-record share built (fell back: not booked as a run). See REFS_WINDOW. */
static inline void refs_note(struct worker *w, bool fell_back)
{
	uint32_t want;

	w->ho_fallback += fell_back;
	if (++w->ho_multi < REFS_WINDOW)
		return;
	want = w->ho_fallback * REFS_FALLBACK_DIV > w->ho_multi;
	if (want != w->want_refs)
		__atomic_store_n(&w->want_refs, want, __ATOMIC_RELAXED);
	w->st.refs_windows += want;
	w->ho_multi = w->ho_fallback = 0;
}

static uint32_t drain_handoffs(struct worker *w, uint64_t now, uint32_t max_batches)
{
	struct bw *bw = w->bw;
	const struct xevb_builder_stats *bs = xevb_builder_stats(w->b);
	uint64_t grouped;
	uint32_t total = 0;

	for (uint32_t s = 0; s < bw->n; s++) {
		struct xevb_spsc *r = &bw->ho[s][w->id], *refs = &bw->refs[s][w->id];
		uint32_t n;

		if (s == w->id)
			continue;
		for (uint32_t b = 0; b < max_batches && (n = xevb_spsc_peek(r, HO_BATCH)); b++) {
			uint32_t cur = 0;

			uint32_t pf = 0; /* refs of the shares prefetched so far */

			/* The refs (or a walk's records) sit in the other core's cache: ask for their lines early. */
			for (uint32_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
				prefetch_share(bw, xevb_spsc_at(r, i), refs, &pf);
			for (uint32_t i = 0; i < n; i++) {
				const struct xevb_ho_ent *e = xevb_spsc_at(r, i);
				const uint8_t *frame = frame_at(bw, e->frame_idx);
				const struct xevb_frag_ref *f;
				struct xevb_pkt_info pi;

				if (i + PREFETCH_AHEAD < n)
					prefetch_share(bw, xevb_spsc_at(r, i + PREFETCH_AHEAD), refs, &pf);
				f = xevb_ho_unpack(frame, e, refs, &cur, bw->c.owner_shift, bw->n, w->id, &pi,
						   w->part);
				if (__builtin_expect((pi.flags & XEVB_MEP_F_SEGMENT) && pi.n_frags, 0)) {
					segment_owned(w, e->frame_idx, frame, &pi, now);
					continue;
				}
				grouped = bs->meps_grouped;
				xevb_builder_add_mep(w->b, e->frame_idx, frame, &pi, f, now);
				if (pi.n_frags > 1)
					refs_note(w, bs->meps_grouped == grouped);
			}
			/* The builder copied what it keeps of the refs: their slots are free. */
			xevb_spsc_release(refs, cur);
			xevb_spsc_release(r, n);
			total += n;
		}
	}
	w->st.ho_recv += total;
	return total;
}

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

static void rx_all(struct worker *w, uint64_t now, uint32_t *got, uint32_t rounds)
{
	const struct bw_cfg *c = &w->bw->c;
	uint32_t idx[RX_BATCH_MAX], len[RX_BATCH_MAX];
	const uint8_t *data[RX_BATCH_MAX];

	for (uint32_t i = 0; i < w->n_q; i++) {
		uint32_t qi = w->q[i];
		for (uint32_t k = 0; k < rounds; k++) {
			uint32_t n;

			if (c->busy)
				xevb_xsk_kick(c->xsk, qi); /* preferred busy polling: we run the NAPI */
			n = xevb_xsk_rx(c->xsk, qi, c->rx_batch, idx, data, len);
			if (!n)
				break;
			handle_rx(w, n, idx, data, len, now);
			xevb_xsk_rx_done(c->xsk, qi, n);
			w->st.q_rx[qi] += n;
			*got += n;
		}
	}
	/* IP-fragmented MEPs are rare: their socket every 8th turn, not a system call a batch. */
	if (w->id == 0 && c->sock && (c->sock_main || (!c->bare && (rounds > 1 || (++w->sock_turn & 7) == 0))))
		for (uint32_t k = 0; k < rounds; k++) {
			uint32_t n = rx_sock(w, now);

			if (!n)
				break;
			*got += n;
		}
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

	this_worker = w;
	while (!__atomic_load_n(&bw->stop, __ATOMIC_ACQUIRE)) {
		uint32_t got = 0, rx = 0;

		now = xevb_now_ns();
		bw->c.xsk->guard_now = now; /* every worker's: any recent clock will do */
		if (w->box)
			worker_dfm_tick(w, now);
		xevb_stall_drain_begin(&w->sd, now);
		rx_all(w, now, &rx, 1);
		got = rx;
		got += drain_handoffs(w, now, 4);
		got += drain_returns(w);
		if (!xevb_stall_draining(&w->sd, w->full_batch && rx >= w->full_batch, now))
			xevb_builder_poll(w->b, now);
		/* Worker 0, the calling thread: the engine's duties (statistics, shedding, the DFM, the run's end). */
		if (w->id == 0 && (w->failed || bw->c.duties(bw->c.duties_ctx, now)))
			break;
		turn_flush(w, now);
		publish_all(w);
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

	rx_all(w, now, &got, bw->c.rx_ring / bw->c.rx_batch + 1);
	publish_all(w);
	pthread_barrier_wait(&bw->bar);
	now = xevb_now_ns();
	while (drain_handoffs(w, now, UINT32_MAX))
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
	publish_all(w);
	pthread_barrier_wait(&bw->bar);
	drain_returns(w);
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
	bc.emit = emit_cb;
	bc.emit_run = c->emit_runs ? emit_run_cb : NULL;
	bc.frame_release = builder_release_cb;
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
	if (xevb_output_open(&w->own_out, c->sinks, c->n_sinks, NULL, c->n_sources, 5000000000ull))
		return false;
	w->own_out_open = true;
	w->out = &w->own_out;
	/* Zero copy: frames held by this worker's sends come back through it (worker 0's: bw_release_held). */
	return xevb_output_set_release(&w->own_out, release_cb, w, nf) == 0;
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
			wake(w);
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

/* A worker's builder: every counter of the core's rows of the table, as JSON members. */
static void json_core(FILE *f, const struct xevb_builder_stats *b)
{
	char name[64];

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		if (c->part != XEVB_PART_CORE)
			continue;
		for (uint32_t k = 0; k < c->n; k++)
			fprintf(f, ",\"%s\":%llu", xevb_counter_name(c, k, true, name, sizeof(name)),
				(unsigned long long)xevb_counter_at(c, b, k));
	}
}

void bw_json(struct bw *bw, FILE *f)
{
	fprintf(f, "{\"workers\":[");
	for (uint32_t i = 0; i < bw->n; i++) {
		const struct worker *w = &bw->w[i];
		const struct xevb_builder_stats *b = xevb_builder_stats(w->b);
		bool first = true;

		fprintf(f, "%s{\"worker\":%u,\"cpu\":%d,\"queues\":[", i ? "," : "", i, w->cpu);
		for (uint32_t k = 0; k < w->n_q; k++)
			fprintf(f, "%s{\"queue\":%u,\"rx_frames\":%llu}", k ? "," : "",
				bw->c.xsk->q[w->q[k]].queue_id, (unsigned long long)w->st.q_rx[w->q[k]]);
		fprintf(f,
			"],\"rx_frames\":%llu,\"rx_bytes\":%llu,\"polls\":%llu,\"handoff_sent\":%llu,"
			"\"handoff_received\":%llu,\"handoff_walked\":%llu,\"handoff_whole\":%llu,\"refs_wanted_windows\":%llu,\"split_meps\":%llu,\"eor_notices\":%llu,\"returns_sent\":%llu,"
			"\"returns_received\":%llu,\"ring_full_waits\":%llu,\"wakes\":%llu,\"naps\":%llu,"
			"\"assigns_merged\":%llu,\"run_ended\":%s",
			(unsigned long long)w->st.rx_frames, (unsigned long long)w->st.rx_bytes,
			(unsigned long long)w->st.polls, (unsigned long long)w->st.ho_sent,
			(unsigned long long)w->st.ho_recv, (unsigned long long)w->st.ho_walked,
			(unsigned long long)w->st.ho_whole, (unsigned long long)w->st.refs_windows,
			(unsigned long long)w->st.split_meps, (unsigned long long)w->st.eor_notices,
			(unsigned long long)w->st.ret_sent, (unsigned long long)w->st.ret_recv,
			(unsigned long long)w->st.ring_full_waits, (unsigned long long)w->st.wakes,
			(unsigned long long)w->st.naps, (unsigned long long)(w->box ? w->box->merged : 0),
			b->run_ended ? "true" : "false");
		json_core(f, b);
		fprintf(f, ",\"rx_sources\":[");
		for (uint32_t s = 0; s < XEVB_MAX_SOURCES; s++)
			if (w->rsrc[s].seen) {
				fprintf(f, "%s%u", first ? "" : ",", s);
				first = false;
			}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
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

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
#include "rx/engine_workers_int.h"

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

void bw_emit_cb(void *ctx, const struct xevb_event *ev)
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
void bw_emit_run_cb(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes)
{
	struct worker *w = ctx;

	xevb_output_emit_run(w->out, first, n, wire_bytes);
}

static inline void local_unref(struct worker *w, uint32_t idx)
{
	if (--w->fref[idx] == 0)
		own_release(w->bw, idx);
}

bool bw_wake(struct worker *peer)
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

void bw_publish_all(struct worker *w)
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
			w->st.wakes += bw_wake(&bw->w[o]);
	}
}

uint32_t bw_drain_returns(struct worker *w)
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
		bw_wake(&w->bw->w[to]);
		bw_drain_returns(w);
		sched_yield();
	}
	return p;
}

static inline void *slot_wait(struct worker *w, struct xevb_spsc *r, uint32_t to)
{
	void *p = xevb_spsc_slot(r);

	return __builtin_expect(p != NULL, 1) ? p : slot_wait_full(w, r, to);
}

void bw_release_cb(void *ctx, uint32_t idx)
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
__thread struct worker *bw_this_worker;

void bw_builder_release_cb(void *ctx, uint32_t idx)
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
	bw_release_cb(ctx, idx);
}

void bw_release_held(struct bw *bw, uint32_t idx)
{
	/* From the reaping thread's worker: its rings are the ones it may push to. */
	bw_release_cb(bw_this_worker && bw_this_worker->bw == bw ? bw_this_worker : &bw->w[0], idx);
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
		bw_release_cb(w, idx);
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

uint32_t bw_drain_handoffs(struct worker *w, uint64_t now, uint32_t max_batches)
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

void bw_rx_all(struct worker *w, uint64_t now, uint32_t *got, uint32_t rounds)
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

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's whole-event shedding (shed.h): the controller fed every
 * XEVB_ENGINE_SHED_TICK_NS with the receive queue's fill, the kernel's
 * drops and the output's backlog, and the XDP program's ring guard kept
 * exact.
 */
#include "base/cli.h"
#include "rx/engine.h"
#include "base/probes.h"
#include <xevb/shed.h>
#include "rx/engine_workers.h"

#define SOCK_SHED_RING 8192u /* frames: the socket queue as the controller sees it (shed_queue) */

/* The AF_XDP sockets' drops: the builder did not keep up (XDP_STATISTICS, a getsockopt each). */
static uint64_t shed_xsk_drops(struct xevb_engine *e)
{
	struct xevb_xsk_stats st;
	uint64_t n = 0;

	for (uint32_t q = 0; q < e->xsk.n_queues; q++)
		if (!xevb_xsk_stats(&e->xsk, q, &st))
			n += st.rx_dropped + st.rx_ring_full + st.rx_fill_ring_empty_descs;
	return n;
}

/*
 * The kernel counts a socket's queue in truesize, not in frames: about a
 * power-of-two buffer for the frame and the skb's own overhead (a
 * 1164-byte frame takes 2304 bytes on veth). The controller compares the
 * queue's growth with the frames we took, so give it frames.
 */
static uint32_t sock_truesize(const struct xevb_engine *e)
{
	uint64_t frames = 0, bytes = 0;
	uint64_t avg = e->bw && bw_rx_totals(e->bw, &frames, &bytes) && frames ? bytes / frames : 1514;
	uint64_t buf = 512;

	while (buf < avg + 384 && buf < (1u << 16)) /* + headroom and skb_shared_info */
		buf <<= 1;
	return (uint32_t)buf + 256; /* + struct sk_buff */
}

/*
 * The receive queue the controller watches, and the kernel's drop counter
 * (a running total) in front of it: the AF_XDP RX rings (two loads a
 * queue), or the kernel socket's buffer (SO_MEMINFO, one getsockopt).
 */
static uint64_t shed_queue(struct xevb_engine *e, struct xevb_shed_in *in)
{
	struct xevb_sock_queue sq;
	uint32_t ts;

	if (e->c.xdp) {
		for (uint32_t q = 0; q < e->xsk.n_queues; q++) {
			uint32_t size;

			in->ring_used += xevb_xsk_rx_queued(&e->xsk, q, &size);
			in->ring_size += size;
		}
		return shed_xsk_drops(e);
	}
	if (xevb_sock_queue(&e->sock, &sq))
		return e->shed.kdrops; /* no reading: no pressure seen this tick */
	ts = sock_truesize(e);
	in->ring_used = sq.queued / ts;
	in->ring_size = sq.size / ts;
	/*
	 * The controller reads half full as pressure and under 1/8 as calm:
	 * the socket's buffer holds ~55k frames, which let a backlog of tens
	 * of milliseconds build before a cut and the builder idle for as long
	 * after it (13-18% of its core at 1.5-10x offered). Judged as a ring
	 * of SOCK_SHED_RING frames, it is as quick as an AF_XDP ring.
	 */
	if (in->ring_size > SOCK_SHED_RING)
		in->ring_size = SOCK_SHED_RING;
	return sq.drops;
}

/*
 * The guard's count of frames waiting in each queue's RX ring made exact
 * again: frames the kernel dropped on the way never reached the ring, and
 * a release raced by a worker is a few frames off. Every shedding tick.
 */
static void guard_resync(struct xevb_engine *e, uint64_t now)
{
	struct xevb_shed_gate *g = e->ld.shed_gate;

	for (uint32_t q = 0; q < e->xsk.n_queues; q++) {
		uint32_t qid = e->xsk.q[q].queue_id, size, queued;
		uint64_t steered, have;

		if (qid >= e->xsk.guard_queues)
			continue;
		/* Steered first: a frame steered in between only makes the guard stricter. */
		steered = __atomic_load_n(&g->steered[qid], __ATOMIC_RELAXED);
		queued = xevb_xsk_rx_queued(&e->xsk, q, &size);
		have = __atomic_load_n(&g->released[qid], __ATOMIC_RELAXED);
		__atomic_fetch_add(&g->released[qid], steered - queued - have, __ATOMIC_RELAXED);
		/* One worker ticks and reads the ring: it is running (more workers tick elsewhere). */
		if (xevb_engine_core(e))
			__atomic_store_n(&g->released_ns[qid], now, __ATOMIC_RELAXED);
	}
}

/*
 * 3/4 of what a queue's ring can take: its RX ring, or the UMEM frames
 * the fill ring can still offer when open events hold the rest (zero
 * copy: a frame stays with its event), whichever is less. And the level
 * past which a new block would not fit even if the builder is running:
 * all of that room but one block's frames. Every tick.
 */
static void guard_set_limit(struct xevb_engine *e)
{
	const struct xevb_builder *core = xevb_engine_core(e);
	const struct xevb_builder_stats *st = core ? xevb_builder_stats(core) : NULL;
	uint64_t held = st ? st->frames_held / e->xsk.n_queues : 0;
	uint64_t room = e->xsk.frames_per_q > held ? e->xsk.frames_per_q - held : 0;
	uint64_t limit, full, block = 0;
	uint32_t ring;

	xevb_xsk_rx_queued(&e->xsk, 0, &ring);
	if (room > ring)
		room = ring;
	/*
	 * Frames a block brings: its ids x sources / fragments a MEP, and at
	 * least a MEP per source (a MEP longer than a block decides for the
	 * blocks it spans). Room for two of them is enough for the blocks
	 * already admitted; where blocks are that small, refuse only that
	 * close to a full ring.
	 */
	if (st && st->frags_received) {
		block = ((uint64_t)e->c.n_sources << XEVB_SHED_BLOCK_SHIFT) * st->packets / st->frags_received;
		if (block < e->c.n_sources)
			block = e->c.n_sources;
	}
	limit = room / 4 * 3;
	if (block && room > 2 * block && room - 2 * block > limit)
		limit = room - 2 * block;
	full = block && room > block ? room - block : 0;
	/* Never 0, which would turn the guard off. */
	e->ld.shed_gate->guard_limit = limit ? (uint32_t)limit : 1;
	e->ld.shed_gate->guard_full = full > limit ? (uint32_t)full : 0;
}

/*
 * XDP mode: the program refuses new blocks whole while more than 3/4 of a
 * queue's RX ring waits (shed.h, "ring guard"): the rest of the ring takes
 * the blocks already admitted. Not with multi-buffer frames, whose
 * descriptors and frames differ in number.
 */
static void guard_start(struct xevb_engine *e)
{
	if (!e->c.xdp || e->xsk.sg || !e->xsk.n_queues)
		return;
	e->xsk.guard_released = (uint64_t *)e->ld.shed_gate->released;
	e->xsk.guard_released_ns = (uint64_t *)e->ld.shed_gate->released_ns;
	e->xsk.guard_now = xevb_now_ns();
	e->xsk.guard_queues = XEVB_GUARD_QUEUES;
	guard_resync(e, e->xsk.guard_now);
	guard_set_limit(e);
}

/*
 * Unless --tune no-shed=1 or bare=1, or --dfm: the lowest source counts the events
 * shed. XDP mode, or socket mode with the program in pass mode.
 */
void xevb_engine_shed_start(struct xevb_engine *e, const uint16_t *sources, int n_sources)
{
	struct xevb_shed_in in = { 0 };
	uint32_t ref = UINT32_MAX;

	if (!e->ld.shed_gate)
		return;
	for (int i = 0; i < n_sources; i++)
		if (sources[i] < ref)
			ref = sources[i];
	e->ld.shed_gate->ref_source = ref;
	/*
	 * Output that backs up past half the farm nodes' buffers is pressure
	 * too: shedding in XDP costs less than building events to drop them.
	 */
	struct xevb_shed_cfg sc = { .backlog_max = (uint64_t)e->out.n_sinks * XEVB_OUT_SEND_BUF / 2 };

	xevb_shed_init(&e->shed.ctl, &sc);
	e->shed.kdrops = shed_queue(e, &in);
	e->shed.on = true;
	guard_start(e);
}

/*
 * One step of the shedding controller, every XEVB_ENGINE_SHED_TICK_NS: the receive
 * queue's fill and the kernel's drops since the last step.
 */
void xevb_engine_shed_step(struct xevb_engine *e, uint64_t now)
{
	struct xevb_shed_in in = { 0 };
	uint32_t accept;
	uint64_t kd, rx, rx_bytes;

	e->shed.next_ns = now + XEVB_ENGINE_SHED_TICK_NS;
	if (e->xsk.guard_released) {
		guard_resync(e, now);
		guard_set_limit(e);
	}
	kd = shed_queue(e, &in);
	/* The socket's counter is 32 bits: the difference survives its wrap. */
	in.drops = e->c.xdp ? kd - e->shed.kdrops : (uint32_t)(kd - e->shed.kdrops);
	e->shed.kdrops = kd;
	/* What the one worker served (more workers' frames are not counted in this thread). */
	if (e->bw && bw_rx_totals(e->bw, &rx, &rx_bytes)) {
		in.consumed = rx - e->shed.rx;
		e->shed.rx = rx;
	}
	in.backlog = xevb_output_backlog_bytes(&e->out);
	in.out_sent = e->out.st.bytes - e->shed.out_bytes;
	e->shed.out_bytes = e->out.st.bytes;
	in.out_dropped = e->out.st.dropped_backlog - e->shed.out_dropped;
	e->shed.out_dropped = e->out.st.dropped_backlog;
	accept = xevb_shed_tick(&e->shed.ctl, e->ld.shed_gate, &in);
	if (XEVB_PROBE_ENABLED(shed_tick)) {
		unsigned cut = e->shed.ctl.last_cut;

		/* In registers: the probe's operands cannot name a static plus an offset. */
		__asm__ volatile("" : "+r"(accept), "+r"(cut));
		XEVB_PROBE(shed_tick, accept, cut, in.ring_used, in.consumed, in.backlog, in.out_sent);
	}
}
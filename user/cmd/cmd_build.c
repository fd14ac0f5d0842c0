// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb build: the gateway. Receives MEPs (AF_XDP behind the XDP steering
 * program, or a kernel socket), builds events, forwards them to farm nodes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <xevb/builder.h>
#include <xevb/cli.h>
#include <xevb/loader.h>
#include <xevb/mep_parse.h>
#include <xevb/metrics.h>
#include <xevb/notify.h>
#include <xevb/output.h>
#include <xevb/privdrop.h>
#include <xevb/probes.h>
#include <xevb/shape_ctl.h>
#include <xevb/report.h>
#include <xevb/runcfg.h>
#include <xevb/shed.h>
#include <xevb/stall_drain.h>
#include <xevb/sock_rx.h>
#include <xevb/xsk_meta.h>
#include <xevb/xsk_rx.h>
#include "build_ctl.h"
#include "build_opts.h"
#include "build_workers.h"
#include "cmds.h"

#define RX_BATCH     BUILD_RX_BATCH
#define RX_BATCH_MAX BUILD_RX_BATCH_MAX

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct build {
	const struct build_cfg *cfg;
	bool xdp;
	bool generic; /* XDP attached in generic (skb) mode */
	bool bare;
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
	struct xevb_builder *b;
	struct xevb_output out;
	struct xevb_parse_cfg pcfg;
	struct xevb_snapshot *snap; /* mapped stats file */
	struct xevb_snapshot local;
	struct build_ctl *bctl; /* --dfm */
	struct bw *bw;          /* --workers > 1 */
	char snap_path[256];
	uint64_t rx_frames, rx_bytes, rx_not_mep, batches, polls;
	uint64_t rx_meta, rx_meta_fallback;
	uint32_t meta_cookie; /* non-zero: the XDP program writes XDP meta (xdp_meta.h) */
	bool unpriv;          /* privileges dropped: the watcher cleans up */
	pid_t watcher;
	int watcher_fd;
	const char *dev;
	/* Whole-event shedding (shed.h): the controller, fed every SHED_TICK_NS */
	bool shed_on;
	struct xevb_shed shed;
	uint64_t shed_next_ns;
	uint64_t shed_kdrops;      /* the receive sockets' drop counters at the last tick */
	uint64_t shed_rx;          /* rx_frames at the last tick (one worker) */
	uint64_t shed_out_bytes;   /* output bytes sent at the last tick */
	uint64_t shed_out_dropped; /* events dropped for backlog at the last tick */
	struct xevb_builder_cfg bcfg;
	uint32_t queues[XEVB_XSK_MAX_QUEUES];
	int cpus[XEVB_HO_MAX_CPUS];
	struct xevb_privs privs; /* who the data path runs as; user[0] 0: stays as it is */
	struct xevb_metrics *mx;
	struct xevb_snapshot prev; /* at the last statistics line */
	uint32_t interval;         /* statistics line period, s; 0: none */
	uint64_t t_start, t_next;
};

#define SHED_TICK_NS   2000000ull
#define SOCK_SHED_RING 8192u /* frames: the socket queue as the controller sees it (shed_queue) */
/* XDP path: frames of the device MTU's datagram on the reassembled datagrams' socket (big buffers aside). */
#define IPFRAG_FRAMES 256

/* In the root watcher as it starts: the builder's connections are not its own. */
static void watcher_start(void *ctx)
{
	struct build *bd = ctx;

	xevb_output_close(&bd->out);
}

/* In the root watcher, once the builder is gone. */
static void watcher_cleanup(void *ctx)
{
	struct build *bd = ctx;
	char path[256];

	if (bd->xdp || bd->pass_xdp)
		xevb_loader_detach(&bd->ld);
	if (!xevb_run_path(bd->dev, "stats", path, sizeof(path)))
		unlink(path);
}

/*
 * Frames open events may hold: the rest must cover a full RX ring (AF_XDP:
 * the fill ring refills it) or a receive batch (socket), or the kernel
 * drops packets at random and every event is torn; the builder evicts its
 * oldest events instead (user/include/xevb/builder.h, max_frames_held).
 */
static uint32_t frames_for_events(bool socket_mode, uint32_t frames, uint32_t rx_ring, uint32_t n_queues)
{
	if (socket_mode)
		return frames - frames / 4;
	return (frames > rx_ring * 2 ? frames - rx_ring : frames / 2) * n_queues;
}

/*
 * At stop: events evicted before their timeout mean the window or the
 * frame pool ran out first at the rate seen. Say how long each lasted, so
 * the operator can tell a lagging source (raise them) from loss.
 */
static void explain_evictions(const struct xevb_builder_stats *st, uint64_t elapsed_ns, uint32_t window,
			      uint32_t timeout_ms, uint32_t max_frames_held)
{
	double rate = elapsed_ns ? (double)st->events_opened * 1e9 / (double)elapsed_ns : 0;
	double done = (double)(st->events_complete + st->events_incomplete + st->events_discarded);

	if (!st->events_evicted || rate <= 0)
		return;
	xevb_warn(
		"%llu event(s) (%.2f%% of those built) left before their --timeout-ms %u: at %.0f events/s "
		"the window of %u ids lasts %.0f ms (and %u frames may be held by open events); if no "
		"packet was lost before the builder (seq_gaps, XDP and socket drops 0), a source lags the "
		"others by more than that: raise --window and --tune frames",
		(unsigned long long)st->events_evicted, done ? 100.0 * (double)st->events_evicted / done : 0,
		timeout_ms, rate, window, 1000.0 * window / rate, max_frames_held);
}

/*
 * At stop: no fragment was of this builder's run. It is never taken from
 * the data (docs/hardening.md), so a run other than the default needs saying.
 */
static void explain_wrong_run(const struct xevb_builder_stats *st)
{
	if (!st->drops[XEVB_DROP_WRONG_RUN] || st->frags_in_events)
		return;
	xevb_warn(
		"all %llu fragment(s) were of another run than %u: give --run N, the run the sources send "
		"(or [run] number in the run configuration); the builder never takes it from the data",
		(unsigned long long)st->drops[XEVB_DROP_WRONG_RUN], st->run_number);
}

/*
 * At stop, DFM mode: fragments came in behind the window while events were
 * re-asked. The answers to a re-ask come after --tune reask-ms and the sources'
 * own delay; when the window lasts less at the rate seen, they find their
 * event gone (late) and the DFM learns it as lost. Say which knob.
 */
static void explain_late_reasks(const struct xevb_builder_stats *st, uint64_t elapsed_ns, uint32_t window,
				uint64_t reask_ns, uint64_t reasked)
{
	double rate = elapsed_ns ? (double)st->events_opened * 1e9 / (double)elapsed_ns : 0;
	double lasts_ms = rate > 0 ? 1000.0 * window / rate : 0;

	if (!reasked || !st->drops[XEVB_DROP_LATE] || rate <= 0)
		return;
	xevb_warn(
		"%llu fragment(s) came after their event had left, and %llu event(s) were re-asked: at %.0f "
		"events/s the window of %u ids lasts %.0f ms; re-sent fragments that come later than that (after "
		"--tune reask-ms=%llu and the sources' answer time) find their event gone and it is lost to the DFM: "
		"keep both under %.0f ms, or raise --window",
		(unsigned long long)st->drops[XEVB_DROP_LATE], (unsigned long long)reasked, rate, window, lasts_ms,
		(unsigned long long)(reask_ns / 1000000), lasts_ms);
}

static void emit_cb(void *ctx, const struct xevb_event *ev)
{
	struct build *bd = ctx;
	if (bd->bctl)
		build_ctl_emit(bd->bctl, ev);
	else
		xevb_output_emit(&bd->out, ev);
}

/* --no-forward: runs of events are counted whole, never made one by one. */
static void emit_run_cb(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes)
{
	struct build *bd = ctx;

	xevb_output_emit_run(&bd->out, first, n, wire_bytes);
}

static void release_now(void *ctx, uint32_t idx)
{
	struct build *bd = ctx;
	if (!bd->xdp)
		xevb_sock_release(&bd->sock, idx);
	else if (__builtin_expect(idx >= bd->ipfrag_base, 0))
		xevb_sock_release(&bd->ipfrag, idx - bd->ipfrag_base);
	else
		xevb_xsk_release(&bd->xsk, idx);
}

static void release_cb(void *ctx, uint32_t idx)
{
	struct build *bd = ctx;
	/* --tune zerocopy=1: a send may still read the frame; it comes back later. */
	if (bd->out.zc && xevb_output_hold(&bd->out, idx))
		return;
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
static inline void add_parsed(struct build *bd, uint32_t idx, const uint8_t *data, int res,
			      const struct xevb_pkt_info *pi, const struct xevb_frag_ref *frags, uint64_t now)
{
	if (res == XEVB_RES_MEP) {
		xevb_builder_add_mep(bd->b, idx, data, pi, frags, now);
		return;
	}
	if (res == XEVB_RES_SEGMENT) {
		xevb_builder_add_segment(bd->b, idx, data, pi, frags, now);
		return;
	}
	bd->rx_not_mep++;
	release_cb(bd, idx);
}

static inline void parse_and_add(struct build *bd, uint32_t idx, const uint8_t *data, uint32_t len, uint64_t now,
				 struct xevb_frag_ref *frags)
{
	struct xevb_pkt_info pi;
	int res = xevb_classify(data, data + len, len, &bd->pcfg, &pi, frags);

	/* Socket mode: a datagram over the MTU was IP-fragmented, no XDP program saw it whole. */
	if (!bd->xdp && bd->sock.mtu && len > bd->sock.mtu && xevb_sock_src_refused(&bd->sock, res, &pi, len)) {
		release_cb(bd, idx);
		return;
	}
	add_parsed(bd, idx, data, res, &pi, frags, now);
}

/*
 * AF_XDP with XDP meta: the parse result the program left in front of a
 * consecutive MEP, booked without a walk over its records (frags NULL);
 * any other frame through the full parser.
 */
static void handle_batch_meta(struct build *bd, uint32_t n, const uint32_t *idx, const uint8_t **data,
			      const uint32_t *len, uint64_t now, struct xevb_frag_ref *frags)
{
	for (uint32_t i = 0; i < n && i < META_AHEAD; i++)
		if (idx[i] < bd->xsk.n_umem)
			prefetch_meta(data[i]);
	for (uint32_t i = 0; i < n; i++) {
		struct xevb_pkt_info pi;
		int res = -1;

		if (i + META_AHEAD < n && idx[i + META_AHEAD] < bd->xsk.n_umem)
			prefetch_meta(data[i + META_AHEAD]);
		bd->rx_bytes += len[i];
		/* Bounce buffers (jumbo frames) have no headroom, and never a meta. */
		if (idx[i] < bd->xsk.n_umem) {
			res = xevb_xsk_meta_pi(data[i], len[i], bd->meta_cookie, &pi);
			/* The UMEM is ours, writable: the chunk goes back without it. */
			xevb_xsk_meta_clear((uint8_t *)(uintptr_t)data[i]);
		}
		if (res == XEVB_RES_MEP) {
			bd->rx_meta++;
			xevb_builder_add_mep(bd->b, idx[i], data[i], &pi, NULL, now);
			continue;
		}
		bd->rx_meta_fallback++;
		/* The parser reads every record: fetch the rest of the frame now. */
		prefetch_frame(data[i], len[i]);
		parse_and_add(bd, idx[i], data[i], len[i], now, frags);
	}
	bd->rx_frames += n;
	bd->batches++;
}

static void handle_batch(struct build *bd, uint32_t n, const uint32_t *idx, const uint8_t **data,
			 const uint32_t *len, uint64_t now)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];

	XEVB_PROBE(batch_received, n, now);
	if (bd->bare) {
		/* The receive ceiling: what the ring loop costs without the builder. */
		for (uint32_t i = 0; i < n; i++) {
			bd->rx_bytes += len[i]; /* socket path; AF_XDP: replaced in snapshot() */
			release_cb(bd, idx[i]);
		}
		bd->rx_frames += n;
		bd->batches++;
		return;
	}
	if (bd->meta_cookie) {
		handle_batch_meta(bd, n, idx, data, len, now, frags);
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
		bd->rx_bytes += len[i];
		parse_and_add(bd, idx[i], data[i], len[i], now, frags);
	}
	bd->rx_frames += n;
	bd->batches++;
}

/*
 * XDP path: datagrams the kernel reassembled from IPv4 fragments, through
 * the same parser and builder core as every frame (their frame indices
 * follow the AF_XDP ones).
 */
static uint32_t rx_ipfrag(struct build *bd, uint64_t now)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];
	uint32_t idx[XEVB_SOCK_BATCH], len[XEVB_SOCK_BATCH];
	const uint8_t *data[XEVB_SOCK_BATCH];
	int n = xevb_sock_rx(&bd->ipfrag, idx, data, len);

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
		uint32_t f = idx[i] + bd->ipfrag_base;
		struct xevb_pkt_info pi;
		int res = xevb_classify(data[i], data[i] + len[i], len[i], &bd->pcfg, &pi, frags);

		/* XDP never saw this MEP whole: --bind-src is judged here. */
		if (xevb_sock_src_refused(&bd->ipfrag, res, &pi, len[i])) {
			release_cb(bd, f);
			continue;
		}
		add_parsed(bd, f, data[i], res, &pi, frags, now);
	}
	return (uint32_t)n;
}

/* The AF_XDP sockets' drops: the builder did not keep up (XDP_STATISTICS, a getsockopt each). */
static uint64_t shed_xsk_drops(struct build *bd)
{
	struct xevb_xsk_stats st;
	uint64_t n = 0;

	for (uint32_t q = 0; q < bd->xsk.n_queues; q++)
		if (!xevb_xsk_stats(&bd->xsk, q, &st))
			n += st.rx_dropped + st.rx_ring_full + st.rx_fill_ring_empty_descs;
	return n;
}

/*
 * The kernel counts a socket's queue in truesize, not in frames: about a
 * power-of-two buffer for the frame and the skb's own overhead (a
 * 1164-byte frame takes 2304 bytes on veth). The controller compares the
 * queue's growth with the frames we took, so give it frames.
 */
static uint32_t sock_truesize(const struct build *bd)
{
	uint64_t avg = bd->rx_frames ? bd->rx_bytes / bd->rx_frames : 1514;
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
static uint64_t shed_queue(struct build *bd, struct xevb_shed_in *in)
{
	struct xevb_sock_queue sq;
	uint32_t ts;

	if (bd->xdp) {
		for (uint32_t q = 0; q < bd->xsk.n_queues; q++) {
			uint32_t size;

			in->ring_used += xevb_xsk_rx_queued(&bd->xsk, q, &size);
			in->ring_size += size;
		}
		return shed_xsk_drops(bd);
	}
	if (xevb_sock_queue(&bd->sock, &sq))
		return bd->shed_kdrops; /* no reading: no pressure seen this tick */
	ts = sock_truesize(bd);
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
static void guard_resync(struct build *bd, uint64_t now)
{
	struct xevb_shed_gate *g = bd->ld.shed_gate;

	for (uint32_t q = 0; q < bd->xsk.n_queues; q++) {
		uint32_t qid = bd->xsk.q[q].queue_id, size, queued;
		uint64_t steered, have;

		if (qid >= bd->xsk.guard_queues)
			continue;
		/* Steered first: a frame steered in between only makes the guard stricter. */
		steered = __atomic_load_n(&g->steered[qid], __ATOMIC_RELAXED);
		queued = xevb_xsk_rx_queued(&bd->xsk, q, &size);
		have = __atomic_load_n(&g->released[qid], __ATOMIC_RELAXED);
		__atomic_fetch_add(&g->released[qid], steered - queued - have, __ATOMIC_RELAXED);
		/* The one loop that ticks also reads the ring: it is running (workers tick elsewhere). */
		if (!bd->bw)
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
static void guard_set_limit(struct build *bd)
{
	const struct xevb_builder_stats *st = bd->bw ? NULL : xevb_builder_stats(bd->b);
	uint64_t held = st ? st->frames_held / bd->xsk.n_queues : 0;
	uint64_t room = bd->xsk.frames_per_q > held ? bd->xsk.frames_per_q - held : 0;
	uint64_t limit, full, block = 0;
	uint32_t ring;

	xevb_xsk_rx_queued(&bd->xsk, 0, &ring);
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
		block = ((uint64_t)bd->local.n_sources << XEVB_SHED_BLOCK_SHIFT) * st->packets /
			st->frags_received;
		if (block < bd->local.n_sources)
			block = bd->local.n_sources;
	}
	limit = room / 4 * 3;
	if (block && room > 2 * block && room - 2 * block > limit)
		limit = room - 2 * block;
	full = block && room > block ? room - block : 0;
	/* Never 0, which would turn the guard off. */
	bd->ld.shed_gate->guard_limit = limit ? (uint32_t)limit : 1;
	bd->ld.shed_gate->guard_full = full > limit ? (uint32_t)full : 0;
}

/*
 * XDP mode: the program refuses new blocks whole while more than 3/4 of a
 * queue's RX ring waits (shed.h, "ring guard"): the rest of the ring takes
 * the blocks already admitted. Not with multi-buffer frames, whose
 * descriptors and frames differ in number.
 */
static void guard_start(struct build *bd)
{
	if (!bd->xdp || bd->xsk.sg || !bd->xsk.n_queues)
		return;
	bd->xsk.guard_released = (uint64_t *)bd->ld.shed_gate->released;
	bd->xsk.guard_released_ns = (uint64_t *)bd->ld.shed_gate->released_ns;
	bd->xsk.guard_now = xevb_now_ns();
	bd->xsk.guard_queues = XEVB_GUARD_QUEUES;
	guard_resync(bd, bd->xsk.guard_now);
	guard_set_limit(bd);
}

/*
 * Unless --tune no-shed=1 or bare=1, or --dfm: the lowest source counts the events
 * shed. XDP mode, or socket mode with the program in pass mode.
 */
static void shed_start(struct build *bd, const uint16_t *sources, int n_sources)
{
	struct xevb_shed_in in = { 0 };
	uint32_t ref = UINT32_MAX;

	if (!bd->ld.shed_gate)
		return;
	for (int i = 0; i < n_sources; i++)
		if (sources[i] < ref)
			ref = sources[i];
	bd->ld.shed_gate->ref_source = ref;
	/*
	 * Output that backs up past half the farm nodes' buffers is pressure
	 * too: shedding in XDP costs less than building events to drop them.
	 */
	struct xevb_shed_cfg sc = { .backlog_max = (uint64_t)bd->out.n_sinks * XEVB_OUT_SEND_BUF / 2 };

	xevb_shed_init(&bd->shed, &sc);
	bd->shed_kdrops = shed_queue(bd, &in);
	bd->shed_on = true;
	guard_start(bd);
}

/*
 * One step of the shedding controller, every SHED_TICK_NS: the receive
 * queue's fill and the kernel's drops since the last step.
 */
static void shed_tick(struct build *bd, uint64_t now)
{
	struct xevb_shed_in in = { 0 };
	uint32_t accept;
	uint64_t kd;

	if (!bd->shed_on || now < bd->shed_next_ns)
		return;
	bd->shed_next_ns = now + SHED_TICK_NS;
	if (bd->xsk.guard_released) {
		guard_resync(bd, now);
		guard_set_limit(bd);
	}
	kd = shed_queue(bd, &in);
	/* The socket's counter is 32 bits: the difference survives its wrap. */
	in.drops = bd->xdp ? kd - bd->shed_kdrops : (uint32_t)(kd - bd->shed_kdrops);
	bd->shed_kdrops = kd;
	/* What this loop served (with workers their frames are not counted here). */
	if (!bd->bw) {
		in.consumed = bd->rx_frames - bd->shed_rx;
		bd->shed_rx = bd->rx_frames;
	}
	in.backlog = xevb_output_backlog_bytes(&bd->out);
	in.out_sent = bd->out.st.bytes - bd->shed_out_bytes;
	bd->shed_out_bytes = bd->out.st.bytes;
	in.out_dropped = bd->out.st.dropped_backlog - bd->shed_out_dropped;
	bd->shed_out_dropped = bd->out.st.dropped_backlog;
	accept = xevb_shed_tick(&bd->shed, bd->ld.shed_gate, &in);
	if (XEVB_PROBE_ENABLED(shed_tick)) {
		unsigned cut = bd->shed.last_cut;

		/* In registers: the probe's operands cannot name a static plus an offset. */
		__asm__ volatile("" : "+r"(accept), "+r"(cut));
		XEVB_PROBE(shed_tick, accept, cut, in.ring_used, in.consumed, in.backlog, in.out_sent);
	}
}

/*
 * Socket mode: the steering program in pass mode in front of the socket,
 * so that overload sheds whole events (the same controller as XDP mode)
 * instead of overflowing the socket's buffer at random. Where it cannot be
 * attached the builder runs on without it, and says what that costs.
 */
static void sock_shed_start(struct build *bd, const char *dev, bool generic, bool force, const uint16_t *sources,
			    int n_sources)
{
	struct xevb_loader_cfg lc = {
		.ifname = dev,
		.mode = generic ? XEVB_XDP_GENERIC : XEVB_XDP_NATIVE,
		.ip_proto = bd->pcfg.ip_proto,
		.udp_port = bd->pcfg.udp_port,
		.force = force,
		.pass = true,
	};

	if (xevb_loader_attach(&bd->ld, &lc) || !bd->ld.shed_gate) {
		if (bd->ld.prog)
			xevb_loader_detach(&bd->ld);
		xevb_warn(
			"socket mode without shedding: the XDP program could not be attached to %s (see "
			"above). Offered more than it can take, this builder loses frames at random in the "
			"socket's buffer, which tears events; --tune no-shed=1 runs so without this warning",
			dev);
		return;
	}
	bd->pass_xdp = true;
	shed_start(bd, sources, n_sources);
}

/*
 * XDP path: the kernel socket beside AF_XDP for IPv4-fragmented MEPs (the
 * program passes every fragment to the kernel; only reassembled datagrams
 * reach this socket, every whole MEP is redirected before it, but for
 * those the program passes on purpose: no socket on their queue, jumbo
 * frames). Bound to the device: another builder's traffic is not ours.
 * Frames of the device MTU's datagram, and big buffers for the rest.
 * Without it the builder runs on, the fragments only counted.
 */
static void open_ipfrag(struct build *bd, bool udp, uint32_t proto, uint32_t udp_port)
{
	struct xevb_sock_cfg sc = {
		.udp = udp,
		.ip_proto = (uint8_t)proto,
		.udp_port = (uint16_t)udp_port,
		.ifname = bd->dev,
		.n_frames = IPFRAG_FRAMES,
		.frame_size = xevb_sock_frame_size_for(bd->dev),
		.n_big = XEVB_SOCK_BIG_FRAMES,
		.mtu = xevb_dev_mtu(bd->dev),
		.rcvbuf = 16 << 20,
	};

	if (xevb_sock_open(&bd->ipfrag, &sc)) {
		bd->ipfrag_on = false;
		xevb_warn(
			"no socket for IPv4-fragmented MEPs beside AF_XDP (above): they are only counted "
			"(XDP verdict ip_fragment); free the %s on %s to build them",
			udp ? "UDP port" : "protocol", bd->dev);
		return;
	}
	xevb_info(
		"IPv4-fragmented MEPs: reassembled by the kernel, received on a %s socket beside AF_XDP "
		"(%u buffers of %u bytes)",
		udp ? "UDP" : "raw IPv4", XEVB_SOCK_BIG_FRAMES, XEVB_SOCK_BIG_SIZE);
}

static void snapshot(struct build *bd, struct xevb_snapshot *s)
{
	s->update_ns = xevb_now_ns();
	s->rx_frames = bd->rx_frames;
	s->rx_bytes = bd->rx_bytes;
	s->rx_not_mep = bd->rx_not_mep;
	s->batches = bd->batches;
	s->polls = bd->polls;
	s->rx_meta = bd->rx_meta;
	s->rx_meta_fallback = bd->rx_meta_fallback;
	{
		const struct xevb_sock *ks = bd->xdp ? &bd->ipfrag : &bd->sock;

		s->rx_ipfrag_datagrams = ks->ipfrag_datagrams;
		s->rx_ipfrag_bytes = ks->ipfrag_bytes;
		s->rx_ipfrag_copied = ks->big_copied;
	}
	s->out = bd->out.st;
	s->core = *xevb_builder_stats(bd->b);
	if (bd->bw)
		bw_snapshot(bd->bw, s);
	if (bd->xdp || bd->pass_xdp)
		xevb_xdp_counters_read(bd->ld.counters_fd, s->xdp);
	if (bd->ipfrag_on || !bd->xdp) {
		/* IP-fragmented MEPs refused by --bind-src / --allow-src in user space count where XDP counts the others. */
		const struct xevb_sock *ks = bd->xdp ? &bd->ipfrag : &bd->sock;

		s->xdp[XEVB_XDP_SRC_MISMATCH].packets += ks->src_mismatch_packets;
		s->xdp[XEVB_XDP_SRC_MISMATCH].bytes += ks->src_mismatch_bytes;
		s->xdp[XEVB_XDP_SRC_MISMATCH].frags += ks->src_mismatch_frags;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].packets += ks->src_unknown_packets;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].bytes += ks->src_unknown_bytes;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].frags += ks->src_unknown_frags;
	}
	s->shed_on = bd->shed_on;
	s->shed_accept = bd->shed.accept;
	s->shed_min_accept = bd->shed.min_accept;
	s->shed_ref_source = bd->shed_on ? bd->ld.shed_gate->ref_source : 0;
	s->shed_cuts = bd->shed.cuts;
	s->shed_raises = bd->shed.raises;
	memcpy(s->shed_cuts_by, bd->shed.cuts_by, sizeof(s->shed_cuts_by));
	if (bd->shed_on && bd->ld.shed_gate->guard_limit) {
		s->shed_guard_limit = bd->ld.shed_gate->guard_limit;
		s->shed_guard_refused = bd->ld.shed_gate->guard_refused;
		s->shed_guard_admitted = bd->ld.shed_gate->guard_admitted;
		s->shed_guard_vouched = bd->ld.shed_gate->guard_vouched;
	}
	if (bd->xdp) {
		struct xevb_sock_queue iq;

		/* --bare never reads a frame: take the bytes per frame the program redirected. */
		if (bd->bare && s->xdp[XEVB_XDP_TO_XSK].packets)
			s->rx_bytes = (uint64_t)((double)s->xdp[XEVB_XDP_TO_XSK].bytes /
						 (double)s->xdp[XEVB_XDP_TO_XSK].packets * (double)s->rx_frames);
		for (uint32_t q = 0; q < bd->xsk.n_queues; q++)
			xevb_xsk_stats(&bd->xsk, q, &s->xsk[q]);
		/* The reassembled datagrams' socket: its queue is the only one there is. */
		if (bd->ipfrag_on && !xevb_sock_queue(&bd->ipfrag, &iq) && iq.drops > bd->ipfrag.kernel_drops)
			bd->ipfrag.kernel_drops = iq.drops;
		s->sock_kernel_drops = bd->ipfrag.kernel_drops;
		s->sock_truncated = bd->ipfrag.truncated;
	} else {
		struct xevb_sock_queue sq;

		/* The cmsg total moves only with a packet read; after the last one, ask. */
		if (!xevb_sock_queue(&bd->sock, &sq) && sq.drops > bd->sock.kernel_drops)
			bd->sock.kernel_drops = sq.drops;
		s->sock_kernel_drops = bd->sock.kernel_drops;
		s->sock_truncated = bd->sock.truncated;
	}
}

static void publish(struct build *bd)
{
	if (!bd->snap)
		return;
	__atomic_store_n(&bd->snap->seq, bd->local.seq + 1, __ATOMIC_RELEASE);
	uint64_t seq = bd->local.seq + 2;
	memcpy(bd->snap, &bd->local, sizeof(bd->local));
	__atomic_store_n(&bd->snap->seq, seq, __ATOMIC_RELEASE);
	bd->local.seq = seq;
}

static void open_snapshot_file(struct build *bd, const char *ifname)
{
	int fd;

	if (xevb_run_path(ifname, "stats", bd->snap_path, sizeof(bd->snap_path)))
		return;
	mkdir("/run/xevb", 0700);
	fd = open(bd->snap_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct xevb_snapshot))) {
		xevb_warn("no live statistics for 'xevb stats': %s: %s", bd->snap_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		bd->snap_path[0] = 0;
		return;
	}
	bd->snap = mmap(NULL, sizeof(struct xevb_snapshot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (bd->snap == MAP_FAILED)
		bd->snap = NULL;
}

/*
 * With privileges and neither --user nor --keep-privileges: as root, the
 * data path runs as nobody with no capability, as --user nobody would.
 * Where root cannot switch user (a service's capability set without
 * CAP_SETUID and CAP_SETGID, or no user nobody), or a non-root user was given
 * capabilities, it keeps its uid and still gives up every capability.
 */
static int default_privs(struct xevb_privs *privs)
{
	bool nobody = getpwnam("nobody") != NULL;

	if (geteuid() == 0 && nobody && xevb_privs_can_switch())
		return xevb_privs_lookup("nobody", privs);
	if (geteuid() == 0)
		xevb_warn(
			"%s: after set-up the data path stays uid 0 with no capability (give it CAP_SETUID "
			"and CAP_SETGID%s to run as nobody, or --keep-privileges to keep every capability)",
			nobody ? "no CAP_SETUID/CAP_SETGID" : "no user 'nobody'",
			nobody ? "" : " and a user nobody");
	xevb_privs_keep_uid(privs);
	return 0;
}

/* Who the data path runs as after set-up: false (usage error) when --user names no one. */
static bool build_privileges(const struct build_cfg *cfg, struct xevb_privs *privs)
{
	if (cfg->user && xevb_privs_lookup(cfg->user, privs))
		return false;
	if (!cfg->user && !cfg->keep_privs && (geteuid() == 0 || xevb_privs_held()) && default_privs(privs))
		return false;
	if (geteuid() != 0)
		xevb_warn(
			"not running as root: attaching XDP and raw sockets need CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW");
	return true;
}

/* The builder core's configuration: frame indices, bounds, callbacks. */
static struct xevb_builder_cfg core_cfg(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	bool socket_mode = !bd->xdp;
	uint32_t frames = cfg->frames, nq = cfg->n_queues;
	struct xevb_builder_cfg bc = {
		.sources = cfg->sources,
		.n_sources = cfg->n_sources,
		.window = cfg->window,
		.n_frames = socket_mode ?
				    frames + XEVB_SOCK_BIG_FRAMES :
				    frames * nq + xevb_xsk_extra_frames(cfg->dev, frames, cfg->frame_size, nq),
		.timeout_ns = (uint64_t)cfg->timeout_ms * 1000000ull,
		.timeout_policy = cfg->policy == BUILD_POLICY_DISCARD ? XEVB_TIMEOUT_DISCARD :
									XEVB_TIMEOUT_EMIT_INCOMPLETE,
		/* Never adopted from the data: one spoofed MEP would set it (hardening.md). */
		.run_number = cfg->run,
		.emit = emit_cb,
		.frame_release = release_cb,
		.ctx = bd,
		.emit_run = cfg->nofwd && !cfg->cc.dfm ? emit_run_cb : NULL,
		.max_frames_held = frames_for_events(socket_mode, frames, cfg->rx_ring, nq),
		/* Under a DFM, its BYE ends the run, not a flag in the data. */
		.end_of_run_counted_only = cfg->cc.dfm != NULL,
		.await_first_assign = cfg->cc.dfm != NULL,
	};

	if (bd->ipfrag_on) {
		bd->ipfrag_base = bc.n_frames;
		bc.n_frames += IPFRAG_FRAMES + XEVB_SOCK_BIG_FRAMES;
		bc.max_frames_held += frames_for_events(true, IPFRAG_FRAMES + XEVB_SOCK_BIG_FRAMES, 0, 1);
	} else {
		bd->ipfrag_base = UINT32_MAX;
	}
	return bc;
}

/* The options into bd and the builder core: false (exit status 1) when the core cannot be made. */
static bool core_setup(struct build *bd, const struct build_cfg *cfg)
{
	bd->cfg = cfg;
	bd->xdp = cfg->mode == BUILD_MODE_XDP;
	bd->bare = cfg->bare;
	bd->dev = cfg->dev;
	bd->generic = cfg->xdp_mode != BUILD_XDP_NATIVE;
	bd->interval = xevb_common_interval(&cfg->co);
	for (uint32_t q = 0; q < cfg->n_queues; q++)
		bd->queues[q] = cfg->queues[q];
	for (uint32_t i = 0; i < cfg->n_cpus; i++)
		bd->cpus[i] = cfg->cpus[i];
	if (cfg->sink_pacing)
		xevb_output_set_pacing(cfg->sink_pacing / 8);
	if (cfg->zerocopy)
		xevb_output_set_zerocopy(true);
	bd->ipfrag.fd = -1;
	bd->ipfrag_on = bd->xdp && !bd->bare;
	bd->pcfg.ip_proto = (uint8_t)cfg->proto;
	bd->pcfg.udp_port = (uint16_t)cfg->udp_port;
	if (!bd->xdp) {
		if (cfg->udp)
			bd->pcfg.ip_proto = 0;
		else
			bd->pcfg.udp_port = 0;
	}
	bd->bcfg = core_cfg(bd);
	if (bd->xdp && cfg->frames <= 2 * cfg->rx_ring)
		xevb_warn(
			"--tune frames=%u is not above twice --tune rx-ring=%u: open events may hold only %u "
			"frames a queue before the oldest are evicted; give frames at least "
			"2 x rx-ring plus what the window holds",
			cfg->frames, cfg->rx_ring, cfg->frames / 2);
	bd->b = xevb_builder_new(&bd->bcfg);
	if (!bd->b) {
		xevb_err("cannot create the builder: %s", strerror(errno));
		return false;
	}
	return true;
}

/* Farm nodes (or the file) and, with --dfm, the control endpoint in front of them. */
static bool output_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	struct build_ctl_cfg cc = cfg->cc;

	if (xevb_output_open(&bd->out, cfg->sinks, cfg->n_sinks, cfg->output, cfg->n_sources, 5000000000ull))
		return false;
	if (xevb_output_set_release(&bd->out, release_now, bd, bd->bcfg.n_frames))
		return false;
	if (!cc.dfm)
		return true;
	cc.fixed_run = cfg->have_run;
	if (cfg->timeout_ms && (uint64_t)cfg->timeout_ms * 1000000ull < cc.reask_ns * (cc.max_reasks + 1ull))
		xevb_warn("--timeout-ms %u ends events before their %u re-asks of %llu ms are spent",
			  cfg->timeout_ms, cc.max_reasks, (unsigned long long)(cc.reask_ns / 1000000));
	bd->bctl = build_ctl_new(&cc, &bd->out);
	return bd->bctl != NULL;
}

/* The root process that detaches XDP and removes the stats file once we are gone. */
static bool spawn_watcher(struct build *bd)
{
	bd->watcher = xevb_privs_spawn_watcher(&bd->watcher_fd, watcher_start, watcher_cleanup, bd);
	if (bd->watcher < 0) {
		xevb_err("cannot fork the clean-up process: %s", strerror((int)-bd->watcher));
		bd->watcher = 0;
		return false;
	}
	return true;
}

static bool socket_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	struct xevb_sock_cfg sc = {
		.udp = cfg->udp,
		.ip_proto = (uint8_t)cfg->proto,
		.udp_port = (uint16_t)cfg->udp_port,
		.n_frames = cfg->frames,
		.frame_size = cfg->frame_size,
		.rcvbuf = 64 << 20,
		.n_big = XEVB_SOCK_BIG_FRAMES,
		.mtu = xevb_dev_mtu(cfg->dev),
	};

	if (xevb_sock_open(&bd->sock, &sc))
		return false;
	bd->sock.src_bind = cfg->have_bind ? cfg->bind_src : NULL;
	bd->sock.src_allow = cfg->allow_src;
	bd->sock.n_src_allow = cfg->n_allow;
	/* Before the line saying the socket is open: scripts wait for it. */
	if (!cfg->no_shed && !bd->bare && !cfg->cc.dfm)
		sock_shed_start(bd, cfg->dev, bd->generic, cfg->force, cfg->sources, (int)cfg->n_sources);
	xevb_info("receiving %s on a kernel socket (recvmmsg, batches of %d)", cfg->udp ? "UDP" : "raw IPv4",
		  XEVB_SOCK_BATCH);
	return true;
}

static void xdp_loader_cfg(const struct build *bd, struct xevb_loader_cfg *lc)
{
	const struct build_cfg *cfg = bd->cfg;

	*lc = (struct xevb_loader_cfg){
		.ifname = cfg->dev,
		.mode = bd->generic ? XEVB_XDP_GENERIC : XEVB_XDP_NATIVE,
		.ip_proto = (uint8_t)cfg->proto,
		.udp_port = (uint16_t)cfg->udp_port,
		.force = cfg->force,
		.source_ids = cfg->xdp_filter ? cfg->sources : NULL,
		.n_source_ids = cfg->xdp_filter ? cfg->n_sources : 0,
		.src_addrs = cfg->n_allow ? cfg->allow_src : NULL,
		.n_src_addrs = cfg->n_allow,
		.src_bind = cfg->have_bind ? cfg->bind_src : NULL,
		/* Only the one-worker loop reads it; workers parse (build_workers.c). */
		.xdp_meta = !cfg->no_meta && cfg->n_workers == 1,
	};
}

static bool xdp_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	struct xevb_loader_cfg lc;
	struct xevb_xsk_cfg xc = {
		.ifname = cfg->dev,
		.queues = bd->queues,
		.n_queues = cfg->n_queues,
		.frames_per_q = cfg->frames,
		.frame_size = cfg->frame_size,
		.rx_size = cfg->rx_ring,
		.force_copy = cfg->copy,
		.busy_budget = cfg->busy ? (cfg->busy_budget ? cfg->busy_budget : cfg->rx_batch) : 0,
		.no_hugepages = cfg->no_huge,
	};

	xdp_loader_cfg(bd, &lc);
	if (xevb_loader_attach(&bd->ld, &lc))
		return false;
	bd->meta_cookie = bd->ld.meta_cookie;
	/* Before the UMEM exists: fork must never copy pinned pages. */
	if (bd->privs.user[0] && !spawn_watcher(bd))
		return false;
	xc.xsks_map_fd = bd->ld.xsks_fd;
	if (xevb_xsk_open(&bd->xsk, &xc))
		return false;
	/* Under a DFM its credits and Busy flag pace the sources instead. */
	if (!cfg->no_shed && !bd->bare && !cfg->cc.dfm)
		shed_start(bd, cfg->sources, (int)cfg->n_sources);
	if (bd->ipfrag_on) {
		open_ipfrag(bd, cfg->udp, cfg->proto, cfg->udp_port);
		bd->ipfrag.src_bind = cfg->have_bind ? cfg->bind_src : NULL;
		bd->ipfrag.src_allow = cfg->allow_src;
		bd->ipfrag.n_src_allow = cfg->n_allow;
	}
	for (uint32_t q = 0; q < cfg->n_queues; q++)
		xevb_info("AF_XDP socket on %s queue %u: %s mode, %u frames of %u bytes%s, %s", cfg->dev,
			  bd->queues[q], bd->xsk.q[q].zerocopy ? "zero-copy" : "copy", cfg->frames,
			  cfg->frame_size, bd->xsk.q[q].hugepages ? " (huge pages)" : "",
			  cfg->busy ? "busy polling" : "poll()");
	return true;
}

/* Before any privilege drop: a negative nice or SCHED_FIFO needs CAP_SYS_NICE. */
static void sched_setup(const struct build_cfg *cfg)
{
	if (cfg->set_nice && setpriority(PRIO_PROCESS, 0, cfg->nice))
		xevb_warn("--tune nice=%d: %s (needs CAP_SYS_NICE below 0)", cfg->nice, strerror(errno));
	if (cfg->fifo) {
		struct sched_param sp = { .sched_priority = (int)cfg->fifo };
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			xevb_warn("--tune fifo=%u: %s (needs CAP_SYS_NICE)", cfg->fifo, strerror(errno));
	}
}

/* After set-up: the data path runs with no capability (and --tune selftest-privs=1 checks it). */
static bool drop_privileges(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	int probe[XEVB_PROBE__COUNT];
	struct xevb_probe_ctx pc = {
		.ifindex = bd->xdp ? bd->ld.ifindex : 0,
		.xsks_fd = bd->xdp ? bd->ld.xsks_fd : -1,
		.counters_fd = bd->xdp ? bd->ld.counters_fd : -1,
		.prog_id = bd->xdp ? bd->ld.prog_id : 0,
	};

	if (bd->xdp) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		if (!bpf_obj_get_info_by_fd(pc.counters_fd, &mi, &mlen))
			pc.map_id = mi.id;
	}
	/* Half-dropped is unsafe: stop; the watcher still cleans up. */
	bd->unpriv = true;
	if (xevb_privs_drop(&bd->privs))
		return false;
	xevb_info("running as %s (uid %u) with no capability; XDP is detached by helper pid %d at exit",
		  bd->privs.user, (unsigned)bd->privs.uid, (int)bd->watcher);
	if (cfg->selftest)
		xevb_privs_probe(&pc, probe);
	/* Asked for by name: the line scripts check; by default the log line says it. */
	if (cfg->user || cfg->selftest)
		xevb_privs_json(stdout, &bd->privs, cfg->selftest ? probe : NULL);
	return true;
}

/* The statistics file and page, the first snapshot, and READY for a service manager. */
static bool stats_start(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	const char *metrics = cfg->co.metrics;

	bd->local.magic = XEVB_SNAP_MAGIC;
	bd->local.version = XEVB_SNAP_VERSION;
	bd->local.pid = getpid();
	bd->local.xdp_mode = bd->xdp;
	snprintf(bd->local.ifname, sizeof(bd->local.ifname), "%s", cfg->dev);
	bd->local.n_queues = bd->xdp ? cfg->n_queues : 0;
	bd->local.n_sources = cfg->n_sources;
	bd->t_start = xevb_now_ns();
	bd->local.start_ns = bd->t_start;
	snapshot(bd, &bd->local);
	bd->prev = bd->local;
	publish(bd);
	if (metrics && (!bd->snap || !(bd->mx = xevb_metrics_start(metrics)) ||
			xevb_metrics_render(bd->mx, xevb_metrics_render_snapshot, bd->snap)))
		return false;
	/* Attached, bound, statistics published: a service manager may start what depends on us. */
	xevb_notify_ready("building on %s (%s)", cfg->dev, bd->xdp ? "XDP + AF_XDP" : "kernel socket");
	bd->t_next = bd->t_start + 1000000000ull;
	return true;
}

/* Everything after the core: output, receive path, watcher, statistics. False: exit status 1. */
static bool build_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;

	if (!output_setup(bd))
		return false;
	if (!(bd->xdp ? xdp_setup(bd) : socket_setup(bd)))
		return false;
	/* No UMEM on the socket path: forking here copies nothing pinned. */
	if (bd->privs.user[0] && !bd->xdp && !spawn_watcher(bd))
		return false;
	sched_setup(cfg);
	open_snapshot_file(bd, cfg->dev);
	if (cfg->co.metrics && !bd->snap &&
	    (bd->snap = mmap(NULL, sizeof(*bd->snap), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
			     0)) == MAP_FAILED)
		bd->snap = NULL;
	if (bd->privs.user[0] && !drop_privileges(bd))
		return false;
	return stats_start(bd);
}

/* Once a second: the statistics published, and every --interval a line. */
static void tick_second(struct build *bd, uint64_t now, bool maintain)
{
	snapshot(bd, &bd->local);
	publish(bd);
	if (bd->interval && (now - bd->t_start) / 1000000000ull % bd->interval == 0) {
		xevb_report_line(stderr, &bd->local, &bd->prev);
		bd->prev = bd->local;
	}
	if (maintain)
		xevb_output_maintain(&bd->out, now);
	bd->t_next += 1000000000ull;
	if (bd->t_next < now)
		bd->t_next = now + 1000000000ull;
}

static bool duration_over(const struct build *bd, uint64_t now)
{
	return bd->cfg->co.duration_ns && now - bd->t_start >= bd->cfg->co.duration_ns;
}

static int poll_ms_for(uint32_t timeout_ms)
{
	return timeout_ms && timeout_ms < 200 ? (int)(timeout_ms / 2 + 1) : 100;
}

/* --workers N: they do the data path; this thread publishes and reports. */
static bool run_workers(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	struct bw_cfg wc = {
		.xsk = &bd->xsk,
		.n_workers = cfg->n_workers,
		.cpus = bd->cpus,
		.n_cpus = cfg->n_cpus,
		.owner_shift = (uint32_t)__builtin_ctz(cfg->owner_block),
		.bcfg = bd->bcfg,
		.pcfg = bd->pcfg,
		.busy = cfg->busy,
		.bare = bd->bare,
		.out = &bd->out,
		.sinks = cfg->sinks,
		.n_sinks = cfg->n_sinks,
		.file = cfg->output != NULL,
		.n_sources = cfg->n_sources,
		.poll_ms = poll_ms_for(cfg->timeout_ms),
		.rx_ring = cfg->rx_ring,
		.wait_us = cfg->wait_us,
		.ipfrag = bd->ipfrag_on ? &bd->ipfrag : NULL,
	};

	if (bd->out.zc) {
		/* Held frames come back through the output, not yet through the workers' return rings. */
		xevb_err(
			"--tune zerocopy=1 does not work with --workers > 1 yet (held frames would come back through the output, not the workers' return rings): give --workers 1 or drop zerocopy");
		return false;
	}
	bd->bw = bw_start(&wc);
	if (!bd->bw)
		return false;
	if (bd->mx)
		bw_metrics(bd->bw, bd->mx);
	while (!stop) {
		uint64_t now = xevb_now_ns();

		if (now >= bd->t_next)
			tick_second(bd, now, false);
		if (duration_over(bd, now))
			break;
		if (cfg->exit_eor && bw_run_ended(bd->bw))
			break;
		shed_tick(bd, now);
		usleep(bd->shed_on ? SHED_TICK_NS / 1000 : 5000);
	}
	bw_stop(bd->bw);
	return true;
}

/* The one-worker loop's state between turns. */
struct one_loop {
	uint32_t idx[RX_BATCH_MAX], len[RX_BATCH_MAX];
	const uint8_t *data[RX_BATCH_MAX];
	/* Every queue, the reassembled datagrams' socket and the DFM's. */
	struct pollfd pfd[XEVB_XSK_MAX_QUEUES + 2];
	uint32_t npfd;
	int poll_ms;
	bool worked;
	struct xevb_stall_drain sd;
	uint32_t full_batch;
	uint32_t ipfrag_turn;
};

static void one_loop_init(struct build *bd, struct one_loop *L)
{
	const struct build_cfg *cfg = bd->cfg;

	memset(L, 0, sizeof(*L));
	L->poll_ms = poll_ms_for(cfg->timeout_ms);
	L->sd.timeout_ns = (uint64_t)cfg->timeout_ms * 1000000ull;
	L->full_batch = bd->xdp ? cfg->rx_batch * cfg->n_queues : XEVB_SOCK_BATCH;
	if (bd->xdp)
		for (uint32_t q = 0; q < cfg->n_queues; q++)
			L->pfd[L->npfd++] = (struct pollfd){ .fd = bd->xsk.q[q].fd, .events = POLLIN };
	if (bd->ipfrag_on)
		L->pfd[L->npfd++] = (struct pollfd){ .fd = bd->ipfrag.fd, .events = POLLIN };
	if (!bd->xdp)
		L->pfd[L->npfd++] = (struct pollfd){ .fd = bd->sock.fd, .events = POLLIN };
	if (bd->bctl) {
		L->pfd[L->npfd++] = (struct pollfd){ .fd = build_ctl_fd(bd->bctl), .events = POLLIN };
		if (L->poll_ms > 5)
			L->poll_ms = 5; /* re-asks and heartbeats keep time */
	}
}

/* One batch from every queue; the reassembled datagrams now and then. */
static uint32_t one_rx_xdp(struct build *bd, struct one_loop *L, uint64_t now)
{
	const struct build_cfg *cfg = bd->cfg;
	uint32_t got = 0;

	for (uint32_t q = 0; q < cfg->n_queues; q++) {
		uint32_t n;

		if (cfg->busy)
			xevb_xsk_kick(&bd->xsk, q);
		n = xevb_xsk_rx(&bd->xsk, q, cfg->rx_batch, L->idx, L->data, L->len);
		if (!n)
			continue;
		handle_batch(bd, n, L->idx, L->data, L->len, now);
		xevb_xsk_rx_done(&bd->xsk, q, n);
		got += n;
	}
	/*
	 * IP-fragmented MEPs are rare: a recvmmsg per turn would cost
	 * every batch a system call. Every 8th turn, and the turn
	 * after a wake-up; they wait in the socket meanwhile.
	 */
	if (bd->ipfrag_on && (++L->ipfrag_turn & 7) == 0)
		got += rx_ipfrag(bd, now);
	return got;
}

/* One batch from the kernel socket; false when receiving failed. */
static bool one_rx_sock(struct build *bd, struct one_loop *L, uint64_t now, uint32_t *got)
{
	int n = xevb_sock_rx(&bd->sock, L->idx, L->data, L->len);

	if (n < 0) {
		xevb_err("receive failed: %s", strerror(-n));
		return false;
	}
	if (n > 0)
		handle_batch(bd, (uint32_t)n, L->idx, L->data, L->len, now);
	*got = (uint32_t)(n > 0 ? n : 0);
	return true;
}

/* The DFM's messages and timers; true when the loop ends (run finished, or no core). */
static bool one_dfm(struct build *bd, uint64_t now)
{
	build_ctl_tick(bd->bctl, bd->b, now);
	if (build_ctl_take_reset(bd->bctl)) {
		/* A restarted DFM numbers events afresh: so does a fresh core. */
		char msg[256];
		xevb_builder_flush(bd->b);
		if (!xevb_builder_check(bd->b, msg, sizeof(msg)))
			xevb_err("accounting check of the core before the DFM restart FAILED: %s", msg);
		xevb_builder_free(bd->b);
		bd->b = xevb_builder_new(&bd->bcfg);
		if (!bd->b) {
			xevb_err("cannot create the builder again: %s", strerror(errno));
			return true;
		}
	}
	return bd->cfg->exit_eor && build_ctl_finished(bd->bctl);
}

/* Nothing came: nap (--tune wait-us, after work) or sleep in poll(). */
static void one_idle(struct build *bd, struct one_loop *L)
{
	/*
	 * wait-us: a poll() wake-up per NAPI run is a context switch
	 * each side (the NAPI thread may share our core) for a few
	 * frames; after work, nap instead and take a batch next turn.
	 */
	if (bd->cfg->wait_us && L->worked) {
		struct timespec ts = { 0, (long)bd->cfg->wait_us * 1000 };

		nanosleep(&ts, NULL);
		return;
	}
	bd->polls++;
	/* What a farm node's socket did not take yet goes out within 1 ms. */
	poll(L->pfd, L->npfd, xevb_output_backlog_bytes(&bd->out) ? 1 : L->poll_ms);
	L->ipfrag_turn = 7;
}

/* One worker: receive, build, forward, keep time, in this thread. */
static void run_one(struct build *bd)
{
	static struct one_loop L;
	const struct build_cfg *cfg = bd->cfg;

	one_loop_init(bd, &L);
	while (!stop) {
		uint64_t now = xevb_now_ns();
		uint32_t got = 0;

		bd->xsk.guard_now = now;
		xevb_stall_drain_begin(&L.sd, now);
		if (bd->xdp)
			got = one_rx_xdp(bd, &L, now);
		else if (!one_rx_sock(bd, &L, now, &got))
			break;
		if (!xevb_stall_draining(&L.sd, got >= L.full_batch, now))
			xevb_builder_poll(bd->b, now);
		shed_tick(bd, now);
		if (bd->bctl && one_dfm(bd, now))
			break;
		/* What this batch built goes to the farm nodes now, not at 64 KiB. */
		xevb_output_flush(&bd->out);
		if (bd->xdp)
			xevb_xsk_flush(&bd->xsk);
		if (now >= bd->t_next)
			tick_second(bd, now, true);
		if (duration_over(bd, now) || (cfg->exit_eor && xevb_builder_stats(bd->b)->run_ended))
			break;
		if (!got && !cfg->busy)
			one_idle(bd, &L);
		L.worked = got > 0;
	}
}

/*
 * What already sits in the RX rings was counted by the XDP program:
 * take it in before the stop flush, so that to_xsk = rx_frames + the
 * kernel's drops holds exactly once the traffic has stopped.
 */
static void drain_rings(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	uint32_t idx[RX_BATCH], len[RX_BATCH], n;
	const uint8_t *data[RX_BATCH];
	uint64_t now = xevb_now_ns();

	for (uint32_t q = 0; q < cfg->n_queues; q++)
		for (uint32_t k = 0; k < cfg->rx_ring / RX_BATCH + 1; k++) {
			n = xevb_xsk_rx(&bd->xsk, q, RX_BATCH, idx, data, len);
			if (!n)
				break;
			handle_batch(bd, n, idx, data, len, now);
			xevb_xsk_rx_done(&bd->xsk, q, n);
		}
	/* The reassembled datagrams the kernel queued for us, as many as the frames take. */
	for (uint32_t k = 0; bd->ipfrag_on && k < IPFRAG_FRAMES / XEVB_SOCK_BATCH + 1; k++)
		if (!rx_ipfrag(bd, now))
			break;
}

static void report_busy_poll(struct build *bd)
{
	for (uint32_t q = 0; q < bd->cfg->n_queues; q++) {
		uint32_t id = xevb_xsk_napi_id(&bd->xsk, q);
		if (id)
			xevb_info("queue %u: busy polling drove NAPI %u", bd->queues[q], id);
		else
			xevb_warn(
				"queue %u: the socket has no NAPI id: busy polling could not drive the "
				"device's NAPI (veth before its XDP queues get ids?); it only spun",
				bd->queues[q]);
	}
}

/* After the loop: what is in the rings and still open leaves, counted; the output settles. */
static void build_stop(struct build *bd)
{
	bool discard = bd->cfg->policy == BUILD_POLICY_DISCARD;

	if (bd->xdp && !bd->bw)
		drain_rings(bd);
	if (bd->xdp && bd->cfg->busy)
		report_busy_poll(bd);
	/*
	 * Whatever is still open leaves as a timeout would, by --timeout-policy:
	 * emitted INCOMPLETE or discarded and counted. Nothing is dropped
	 * silently at stop.
	 */
	if (!bd->bw) {
		uint64_t open_at_stop = xevb_builder_stats(bd->b)->open_events;

		xevb_builder_expire_all(bd->b);
		xevb_info("stop: %llu open event(s) %s (--timeout-policy %s)", (unsigned long long)open_at_stop,
			  discard ? "discarded and counted" : "emitted INCOMPLETE", discard ? "discard" : "emit");
	}
	/* Frames still read by zerocopy sends come back before the final flush. */
	xevb_output_drain(&bd->out);
	if (bd->xdp)
		xevb_xsk_flush(&bd->xsk);
	/* What a farm node never acknowledged is counted, not taken as delivered. */
	xevb_output_settle(&bd->out, 2000000000ull);
	snapshot(bd, &bd->local);
	publish(bd);
}

/* The summary, the warnings that explain it, JSON; the exit status: 3 when the books do not close. */
static int build_report(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	char msg[256];
	bool ok = bd->bw ? bw_check(bd->bw, msg, sizeof(msg)) : xevb_builder_check(bd->b, msg, sizeof(msg));

	xevb_report_summary(stderr, &bd->local);
	explain_wrong_run(&bd->local.core);
	if (!bd->bw)
		explain_evictions(xevb_builder_stats(bd->b), xevb_now_ns() - bd->t_start, cfg->window,
				  cfg->timeout_ms, bd->bcfg.max_frames_held);
	if (!bd->bw && bd->bctl)
		explain_late_reasks(xevb_builder_stats(bd->b), xevb_now_ns() - bd->t_start, cfg->window,
				    cfg->cc.reask_ns, build_ctl_reasked(bd->bctl));
	if (!ok)
		xevb_err("accounting check FAILED: %s", msg);
	else
		fprintf(stderr, "accounting: every fragment received is in an event or counted by reason\n");
	if (bd->bctl) {
		build_ctl_summary(bd->bctl, stderr);
		if (cfg->co.json) {
			printf("{\"dfm_ctl\":");
			build_ctl_json(bd->bctl, stdout);
			printf("}\n");
		}
	}
	if (cfg->co.json && bd->bw)
		bw_json(bd->bw, stdout);
	if (cfg->co.json)
		xevb_report_json(stdout, &bd->local);
	return ok ? 0 : 3;
}

static void end_watcher(struct build *bd)
{
	if (bd->watcher <= 0)
		return;
	if (bd->unpriv) {
		xevb_privs_end_watcher(bd->watcher, bd->watcher_fd, 5000);
	} else {
		/* Still root: we cleaned up above; the watcher must not again. */
		kill(bd->watcher, SIGKILL);
		waitpid(bd->watcher, NULL, 0);
		close(bd->watcher_fd);
	}
}

static void build_teardown(struct build *bd)
{
	xevb_metrics_stop(bd->mx);
	bw_free(bd->bw);
	if (bd->xdp) {
		xevb_xsk_close(&bd->xsk);
		if (bd->ipfrag_on)
			xevb_sock_close(&bd->ipfrag);
		/* Unprivileged: detaching would fail; the root watcher does it. */
		if (!bd->unpriv)
			xevb_loader_detach(&bd->ld);
	} else {
		xevb_sock_close(&bd->sock);
		if (bd->pass_xdp && !bd->unpriv)
			xevb_loader_detach(&bd->ld);
	}
	build_ctl_free(bd->bctl);
	xevb_output_close(&bd->out);
	if (bd->b)
		xevb_builder_free(bd->b);
	if (bd->snap) {
		munmap(bd->snap, sizeof(*bd->snap));
		if (!bd->unpriv)
			unlink(bd->snap_path);
	}
	end_watcher(bd);
}

int cmd_build(int argc, char **argv)
{
	static struct build_cfg cfg;
	static struct build bd;
	int rc;

	if ((rc = xevb_runcfg_start_opts(&argc, &argv, XEVB_RC_BUILD, &build_cmd)) > 1)
		return rc;
	rc = build_opts_parse(argc, argv, &cfg);
	if (rc >= 0)
		return rc;
	if (!build_privileges(&cfg, &bd.privs))
		return 2;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (!core_setup(&bd, &cfg))
		return 1;
	rc = 1;
	if (build_setup(&bd)) {
		if (bd.xdp && cfg.n_workers > 1) {
			if (run_workers(&bd))
				rc = -1;
		} else {
			run_one(&bd);
			rc = -1;
		}
	}
	if (rc < 0) {
		build_stop(&bd);
		rc = build_report(&bd);
	}
	build_teardown(&bd);
	return rc;
}

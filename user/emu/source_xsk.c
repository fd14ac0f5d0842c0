// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source --mode xsk`: the generator on an AF_XDP socket's TX ring.
 *
 * Live frames (BPF_PROG_RUN, XDP_TX) enter a veth peer's 256-frame ring
 * with no back-pressure: when the receiver's NAPI runs on its own core, as
 * a NIC's does, a burst over the ring is dropped at random before any XDP
 * program sees it. AF_XDP TX goes through the driver's transmit function
 * instead, and veth's (kernel 6.16 on) stops its queue when the peer's
 * ring is full, provided the device has a qdisc: the kick then fails with
 * EAGAIN, the descriptors stay in our TX ring and we send them again, as
 * a link with flow control (802.3x pause) would hold the sender. Nothing
 * is lost on the way; a receiver that cannot keep up loses frames only
 * where a gateway's would: in its own RX ring or socket.
 *
 * Every UMEM frame holds the template once; a send stamps what varies
 * (source, packet_seq, flags, the records' event ids, and with
 * --src-addr-base the address and IP checksum), as bpf/xevb_gen.bpf.c does
 * for live frames. Frames come back through the completion ring.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/mep_write.h"
#include <xevb/wire.h>
#include "rx/xsk_rx.h"
#include "emu/source.h"

#define XSK_FRAMES     4096
#define XSK_FRAME_SIZE 4096
#define XSK_RING       2048
#define XSK_BATCH      64
/* Paced: a debt beyond this many frames (the sender was descheduled) is forgiven, not sent in one burst. */
#define XSK_CATCHUP 256
/* Draining the TX ring at the end: at most this long. */
#define XSK_DRAIN_NS 1000000000ull
/* Segments: at most 46 a fragment (65535 bytes at MTU 1500), each at most 3 chunks of payload (MTU 9000). */
#define XSK_MAX_SEGS   64
#define XSK_SEG_CHUNKS 3
#define XSK_HDR_MAX    128
/* The chunks at the UMEM's end that hold the segments' payloads, shared by every packet. */
#define XSK_SHARED 192

struct xsk_src {
	uint32_t saddr; /* network order */
	uint16_t source_id;
	uint16_t ip_csum; /* the IPv4 header's checksum with saddr (whole records: one length, id 0) */
};

/*
 * Segment k of every fragment: its headers (Ethernet to the record's,
 * stamped per packet) and its payload, the same bytes in every fragment
 * (one fixed length), kept once in shared chunks that every packet's
 * descriptors point to: the kernel copies from them, nothing is written
 * per packet but the headers.
 */
struct xsk_seg {
	uint8_t hdr[XSK_HDR_MAX];
	uint32_t n_chunks;
	uint64_t addr[XSK_SEG_CHUNKS];
	uint32_t len[XSK_SEG_CHUNKS];
	uint32_t ip_len; /* the IPv4 datagram's bytes */
};

struct xsk_gen {
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp;
	uint8_t *area;
	size_t area_len;
	int fd;
	uint64_t free_addr[XSK_FRAMES];
	uint32_t n_free, n_own; /* frames of our own (headers, or whole MEPs): free now, in all */
	uint64_t shared_base;   /* addresses from here on are shared payload chunks */
	/* the template */
	uint8_t frame[XSK_FRAME_SIZE];
	uint32_t len, mep_off, rec_stride, pack;
	bool per_src_addr;
	struct xsk_src src[XEVB_MAX_SOURCES];
	uint32_t n_src;
	/* segments (wire format 1.1): nseg a fragment, 0 when records go whole */
	uint32_t nseg, hdr_len;
	struct xsk_seg seg[XSK_MAX_SEGS];
	uint8_t *seg_frames; /* xevb_write_segments' output, while planning, seg_slot bytes a segment */
	size_t seg_slot;
	/* the next packet: segment k of source index s of block blk */
	uint32_t s, k;
	uint64_t blk, eor_block, end_block; /* end_block: the first block not to send (UINT64_MAX: none) */
	uint32_t first_event;
	uint64_t ip_bytes; /* IPv4 bytes sent */
};

/*
 * --pack 1 and a record over the MTU: the fragment goes as segments of the
 * MTU (multi-buffer frames above a chunk, XDP_USE_SG), written once here.
 * 0, or -1 after a message.
 */
static int xsk_plan_segments(const struct src_cfg *c, struct xsk_gen *g, struct xevb_mep_params *p, int mtu)
{
	size_t budget = (size_t)mtu - XEVB_WR_IP_HLEN - (c->udp_port ? XEVB_WR_UDP_HLEN : 0);
	size_t slot = (size_t)mtu + XEVB_WR_ETH_HLEN, lens[XSK_MAX_SEGS];
	ssize_t n;

	g->nseg = xevb_seg_count(c->fmin, budget);
	if (!g->nseg || g->nseg > XSK_MAX_SEGS || slot > XSK_SEG_CHUNKS * XSK_FRAME_SIZE) {
		xevb_err(
			"--mode xsk: fragments of %u bytes at MTU %d make %u segments: at most %d segments of at "
			"most %d bytes",
			c->fmin, mtu, g->nseg, XSK_MAX_SEGS, XSK_SEG_CHUNKS * XSK_FRAME_SIZE);
		return -1;
	}
	g->seg_slot = slot;
	g->seg_frames = calloc(g->nseg, slot);
	if (!g->seg_frames)
		return -1;
	/* The emulator's payload: its CRC, once per run (every fragment is alike). */
	xevb_emu_fill(g->seg_frames, c->fmin);
	p->seg_crc32c = xevb_crc32c(0, g->seg_frames, c->fmin);
	p->flags = XEVB_MEP_F_SEGMENT;
	p->seg_budget = (uint16_t)budget;
	n = xevb_write_segments(g->seg_frames, slot, XSK_MAX_SEGS, lens, p, xevb_write_frame);
	if (n != (ssize_t)g->nseg) {
		xevb_err("--mode xsk: cannot write the segments of a %u-byte fragment: %s", c->fmin,
			 strerror(errno));
		return -1;
	}
	g->hdr_len = (uint32_t)g->mep_off + 16 + 12;
	for (uint32_t k = 0; k < g->nseg; k++) {
		memcpy(g->seg[k].hdr, g->seg_frames + k * slot, g->hdr_len);
		g->seg[k].len[0] = (uint32_t)lens[k] - g->hdr_len; /* chunked when the UMEM is filled */
		g->seg[k].ip_len = (uint32_t)lens[k] - XEVB_WR_ETH_HLEN;
	}
	xevb_info("fragments of %u bytes go as %u segments of up to %u bytes (MTU %d), AF_XDP multi-buffer frames",
		  c->fmin, g->nseg, xevb_seg_stride(budget), mtu);
	return 0;
}

/* The template(s) and the per-source fields; 0 or -1 after a message. */
static int xsk_plan(const struct src_cfg *c, struct xsk_gen *g)
{
	struct xevb_mep_params p;
	size_t budget;
	ssize_t n;
	int mtu;

	if (src_frame_params(c, &p, &mtu))
		return -1;
	g->mep_off = XEVB_WR_ETH_HLEN + XEVB_WR_IP_HLEN + (c->udp_port ? XEVB_WR_UDP_HLEN : 0);
	g->rec_stride = 12 + XEVB_PAD4((uint32_t)c->fmin);
	g->pack = c->pack;
	g->first_event = c->first_event;
	g->per_src_addr = c->saddr_base != 0;
	g->n_src = (uint32_t)c->n_src;
	budget = (size_t)mtu - (g->mep_off - XEVB_WR_ETH_HLEN);
	if (c->pack == 1 && xevb_seg_needed(c->fmin, budget)) {
		if (xsk_plan_segments(c, g, &p, mtu))
			return -1;
	} else {
		n = xevb_write_frame(g->frame, sizeof(g->frame), &p);
		if (n < 0 || (size_t)n - XEVB_WR_ETH_HLEN > (size_t)mtu) {
			xevb_err(
				"--pack %u x --frag-size %u does not fit one frame of %s (MTU %d, at most %d bytes): "
				"lower --pack or --frag-size (fragments larger than a packet go as segments with "
				"--pack 1)",
				c->pack, c->fmin, c->dev, mtu, XSK_FRAME_SIZE);
			return -1;
		}
		g->len = (uint32_t)n;
	}
	for (uint32_t i = 0; i < g->n_src; i++) {
		uint8_t ip[XEVB_WR_IP_HLEN];
		uint32_t sa = c->saddr_base ? htonl(c->saddr_base + i) : p.saddr;

		memcpy(ip, g->frame + XEVB_WR_ETH_HLEN, sizeof(ip));
		memcpy(ip + 12, &sa, 4);
		ip[10] = ip[11] = 0;
		g->src[i] =
			(struct xsk_src){ .saddr = sa, .source_id = c->ids[i], .ip_csum = xevb_ip_csum(ip, 20) };
	}
	return 0;
}

/*
 * Segments: each one's payload into shared chunks at the UMEM's end, the
 * rest of the frames for headers. Whole records: the template into every
 * frame.
 */
static void xsk_fill(struct xsk_gen *g)
{
	uint32_t own = XSK_FRAMES;

	if (g->nseg) {
		uint32_t next = XSK_FRAMES - XSK_SHARED;
		size_t slot = g->seg_slot;

		own = next;
		g->shared_base = (uint64_t)next * XSK_FRAME_SIZE;
		for (uint32_t k = 0; k < g->nseg; k++) {
			struct xsk_seg *sg = &g->seg[k];
			uint32_t left = sg->len[0], off = 0;

			for (sg->n_chunks = 0; left; sg->n_chunks++) {
				uint32_t take = left < XSK_FRAME_SIZE ? left : XSK_FRAME_SIZE;

				sg->addr[sg->n_chunks] = (uint64_t)next++ * XSK_FRAME_SIZE;
				sg->len[sg->n_chunks] = take;
				memcpy(g->area + sg->addr[sg->n_chunks],
				       g->seg_frames + k * slot + g->hdr_len + off, take);
				off += take;
				left -= take;
			}
		}
		free(g->seg_frames);
		g->seg_frames = NULL;
	}
	for (uint32_t i = 0; i < own; i++) {
		if (!g->nseg)
			memcpy(g->area + (size_t)i * XSK_FRAME_SIZE, g->frame, g->len);
		g->free_addr[g->n_free++] = (uint64_t)i * XSK_FRAME_SIZE;
	}
	g->n_own = own;
}

/* The UMEM and a TX-only socket on queue 0 of --dev; 0 or -1 after a message. */
static int xsk_open(const struct src_cfg *c, struct xsk_gen *g)
{
	struct xsk_umem_config ucfg = {
		.fill_size = XSK_RING,
		.comp_size = XSK_RING,
		.frame_size = XSK_FRAME_SIZE,
	};
	struct xsk_socket_config scfg = {
		.tx_size = XSK_RING,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = g->nseg ? XDP_USE_SG : 0,
	};
	int err;

	g->area_len = (size_t)XSK_FRAMES * XSK_FRAME_SIZE;
	g->area = mmap(NULL, g->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->area == MAP_FAILED) {
		g->area = NULL;
		xevb_err("cannot map %zu bytes for the UMEM: %s", g->area_len, strerror(errno));
		return -1;
	}
	err = xsk_umem__create(&g->umem, g->area, g->area_len, &g->fill, &g->comp, &ucfg);
	if (err) {
		xevb_err("cannot register the UMEM: %s (needs root / CAP_NET_RAW)", strerror(-err));
		return -1;
	}
	err = xsk_socket__create(&g->xsk, c->dev, 0, g->umem, NULL, &g->tx, &scfg);
	if (err) {
		xevb_err("cannot open an AF_XDP socket on %s queue 0: %s (kernel with AF_XDP%s? is --dev here?)",
			 c->dev, strerror(-err), g->nseg ? " and multi-buffer TX (6.6+)" : "");
		return -1;
	}
	g->fd = xsk_socket__fd(g->xsk);
	xsk_fill(g);
	return 0;
}

/* Frames the kernel is done with, back to the free list (shared payload chunks stay); how many. */
static uint32_t xsk_reclaim(struct xsk_gen *g)
{
	uint32_t idx, n = xsk_ring_cons__peek(&g->comp, XSK_RING, &idx);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = *xsk_ring_cons__comp_addr(&g->comp, idx + i);

		if (!g->nseg || addr < g->shared_base)
			g->free_addr[g->n_free++] = addr;
	}
	if (n)
		xsk_ring_cons__release(&g->comp, n);
	return n;
}

/*
 * Let the kernel send what the TX ring holds (in copy mode a call sends a
 * few dozen frames). EAGAIN: more waits, or the device is full (a stopped
 * queue: back-pressure); either way the frames stay in the ring for the
 * next call. EBUSY: the device dropped a frame, having no queue to hold
 * it in.
 */
static void xsk_kick(struct xsk_gen *g, struct src_stats *st)
{
	if (sendto(g->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno == EBUSY)
		st->tx_dropped++;
}

/* The next packet's position: segment, source, block. */
static inline void xsk_step(struct xsk_gen *g)
{
	if (g->nseg && ++g->k < g->nseg)
		return;
	g->k = 0;
	if (++g->s == g->n_src) {
		g->s = 0;
		g->blk++;
	}
}

/* The next whole-record packet into the frame at p: what varies from the template. */
static inline void xsk_stamp(struct xsk_gen *g, uint8_t *p)
{
	const struct xsk_src *s = &g->src[g->s];
	uint8_t *mep = p + g->mep_off, *rec = mep + 16;
	uint32_t ev = g->first_event + (uint32_t)g->blk * g->pack;

	mep[3] = g->blk == g->eor_block ? XEVB_MEP_F_END_OF_RUN : 0;
	xevb_st16(mep + 4, s->source_id);
	xevb_st32(mep + 12, (uint32_t)g->blk);
	if (g->per_src_addr) {
		memcpy(p + XEVB_WR_ETH_HLEN + 12, &s->saddr, 4);
		xevb_st16(p + XEVB_WR_ETH_HLEN + 10, s->ip_csum);
	}
	for (uint32_t r = 0; r < g->pack; r++, rec += g->rec_stride)
		xevb_st32(rec, ev + r);
}

/*
 * The next segment's headers into the frame at p: its template, then the
 * source, packet_seq (the source's packets so far), the event id, the IPv4
 * id (packet_seq's low 16 bits, as the live generator) and checksum.
 */
static inline void xsk_stamp_seg(struct xsk_gen *g, uint8_t *p)
{
	const struct xsk_src *s = &g->src[g->s];
	uint8_t *ip = p + XEVB_WR_ETH_HLEN, *mep = p + g->mep_off;
	uint32_t seq = (uint32_t)(g->blk * g->nseg + g->k);

	memcpy(p, g->seg[g->k].hdr, g->hdr_len);
	mep[3] = XEVB_MEP_F_SEGMENT | (g->blk == g->eor_block ? XEVB_MEP_F_END_OF_RUN : 0);
	xevb_st16(mep + 4, s->source_id);
	xevb_st32(mep + 12, seq);
	xevb_st32(mep + 16, g->first_event + (uint32_t)g->blk);
	memcpy(ip + 12, &s->saddr, 4);
	xevb_st16(ip + 4, (uint16_t)seq);
	ip[10] = ip[11] = 0;
	xevb_st16(ip + 10, xevb_ip_csum(ip, XEVB_WR_IP_HLEN));
}

/* Descriptors the next packet takes: one, or a segment's header and its payload chunks. */
static inline uint32_t xsk_descs(const struct xsk_gen *g, uint32_t k)
{
	return g->nseg ? 1 + g->seg[k].n_chunks : 1;
}

/* One packet's descriptors from idx on, in the frame at addr; how many. */
static inline uint32_t xsk_put(struct xsk_gen *g, uint32_t idx, uint64_t addr)
{
	struct xdp_desc *d = xsk_ring_prod__tx_desc(&g->tx, idx);
	const struct xsk_seg *sg;

	if (!g->nseg) {
		xsk_stamp(g, g->area + addr);
		*d = (struct xdp_desc){ .addr = addr, .len = g->len };
		g->ip_bytes += g->len - XEVB_WR_ETH_HLEN;
		return 1;
	}
	sg = &g->seg[g->k];
	xsk_stamp_seg(g, g->area + addr);
	*d = (struct xdp_desc){ .addr = addr, .len = g->hdr_len, .options = XDP_PKT_CONTD };
	for (uint32_t i = 0; i < sg->n_chunks; i++) {
		d = xsk_ring_prod__tx_desc(&g->tx, idx + 1 + i);
		*d = (struct xdp_desc){ .addr = sg->addr[i],
					.len = sg->len[i],
					.options = i + 1 < sg->n_chunks ? XDP_PKT_CONTD : 0 };
	}
	g->ip_bytes += sg->ip_len;
	return 1 + sg->n_chunks;
}

/* Up to want packets onto the TX ring (a packet's descriptors all at once); how many went. */
static uint32_t xsk_queue(struct xsk_gen *g, uint32_t want, struct src_stats *st)
{
	uint32_t idx, n = 0, descs = 0, k = g->k;

	if (want > g->n_free)
		want = g->n_free;
	for (uint32_t i = 0; i < want; i++) {
		descs += xsk_descs(g, k);
		k = g->nseg && k + 1 < g->nseg ? k + 1 : 0;
	}
	/* libxdp reserves all or nothing: then at least one packet. */
	if (want && xsk_ring_prod__reserve(&g->tx, descs, &idx) != descs) {
		want = 1;
		descs = xsk_descs(g, g->k);
		if (xsk_ring_prod__reserve(&g->tx, descs, &idx) != descs)
			return 0;
	}
	for (; n < want; n++) {
		idx += xsk_put(g, idx, g->free_addr[--g->n_free]);
		xsk_step(g);
	}
	if (n) {
		xsk_ring_prod__submit(&g->tx, descs);
		st->packets += n;
	}
	return n;
}

/* How many packets may go now: the pacing's due count (fps 0: no pacing), the end, a batch. */
static uint32_t xsk_due(struct xsk_gen *g, double fps, uint64_t t0, uint64_t *base, const struct src_stats *st)
{
	uint64_t per_src = g->nseg ? g->nseg : 1;
	uint64_t left = g->end_block == UINT64_MAX ? UINT64_MAX :
						     ((g->end_block - g->blk) * g->n_src - g->s) * per_src - g->k;
	uint64_t n = left < XSK_BATCH ? left : XSK_BATCH;

	if (fps > 0) {
		uint64_t due = *base + (uint64_t)((double)(xevb_now_ns() - t0) / 1e9 * fps);

		if (due > st->packets + XSK_CATCHUP) {
			*base -= due - st->packets - XSK_CATCHUP;
			due = st->packets + XSK_CATCHUP;
		}
		if (due <= st->packets)
			return 0;
		if (due - st->packets < n)
			n = due - st->packets;
	}
	return (uint32_t)n;
}

/*
 * The stop flag or the deadline: the block under way is finished (every
 * source sends it), then one more, flagged END_OF_RUN, closes the run.
 * The end must come within XSK_DRAIN_NS of this, even if the receiver
 * stopped taking frames.
 */
static void xsk_check_stop(const struct src_cfg *c, struct xsk_gen *g, uint64_t deadline, uint64_t *give_up)
{
	uint64_t now;

	if (g->end_block != UINT64_MAX)
		return;
	now = xevb_now_ns();
	if (!src_stop && !(deadline && now >= deadline))
		return;
	g->end_block = g->blk + (g->s || g->k ? 1 : 0);
	if (c->eor)
		g->eor_block = g->end_block++;
	*give_up = now + XSK_DRAIN_NS;
}

/*
 * Send until the end block, a signal or --duration; then wait for the TX
 * ring to empty. A turn with packets due but every frame in flight and
 * none back is a wait: the receiver holds us (tx_waits).
 */
static void xsk_send(const struct src_cfg *c, struct xsk_gen *g, struct src_stats *st)
{
	double fps = c->rate > 0 ? c->rate / c->pack * (double)g->n_src * (g->nseg ? g->nseg : 1) : 0;
	uint64_t deadline = c->duration > 0 ? st->t_start + (uint64_t)(c->duration * 1e9) : 0, base = 0, t_end;
	uint64_t give_up = UINT64_MAX;

	while (g->blk < g->end_block) {
		uint32_t back, want, went = 0;

		xsk_check_stop(c, g, deadline, &give_up);
		if (give_up != UINT64_MAX && xevb_now_ns() > give_up) {
			xevb_warn(
				"the receiver took nothing for 1 s after the end: the run ends without its last frames");
			st->aborted = true;
			break;
		}
		back = xsk_reclaim(g);
		want = xsk_due(g, fps, st->t_start, &base, st);
		if (want)
			went = xsk_queue(g, want, st);
		if (want && !went && !back)
			st->tx_waits++;
		if (went || g->n_free < g->n_own)
			xsk_kick(g, st);
		else if (fps > 0 && fps < 20000)
			usleep(50); /* slow rates: no need to spin between frames */
	}
	t_end = xevb_now_ns() + XSK_DRAIN_NS;
	while (g->n_free < g->n_own && xevb_now_ns() < t_end) {
		xsk_kick(g, st);
		xsk_reclaim(g);
	}
	if (g->n_free < g->n_own)
		xevb_warn("%u frames still in the kernel after 1 s: the device does not drain (is it up?)",
			  g->n_own - g->n_free);
}

/* The counters from what went: whole blocks (a stop ends one), segments counted as the live generator does. */
static void xsk_stats(const struct src_cfg *c, const struct xsk_gen *g, struct src_stats *st)
{
	uint64_t per_src = g->nseg ? g->nseg : 1;

	st->bytes = g->ip_bytes;
	st->blocks = st->packets / ((uint64_t)g->n_src * per_src);
	st->events = st->blocks * c->pack;
	st->eor_packets = g->eor_block < g->blk ? g->n_src * per_src : 0;
	st->frags = st->valid_frags = st->packets / per_src * c->pack;
	if (g->nseg) {
		st->segments = st->seg_valid = st->packets;
		st->seg_frags = st->frags;
	}
}

/* Descriptors the kernel refused as invalid: frames that never left (XDP_STATISTICS). */
static uint64_t xsk_invalid_descs(const struct xsk_gen *g)
{
	struct xdp_statistics xs;
	socklen_t len = sizeof(xs);

	if (getsockopt(g->fd, SOL_XDP, XDP_STATISTICS, &xs, &len))
		return 0;
	return xs.tx_invalid_descs;
}

static void xsk_close(struct xsk_gen *g)
{
	free(g->seg_frames);
	if (g->xsk)
		xsk_socket__delete(g->xsk);
	if (g->umem)
		xsk_umem__delete(g->umem);
	if (g->area)
		munmap(g->area, g->area_len);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int source_run_xsk(const struct src_cfg *c, struct src_stats *st)
{
	static struct xsk_gen g;
	uint64_t c0;
	int rc = 1;

	memset(&g, 0, sizeof(g));
	g.eor_block = g.end_block = UINT64_MAX;
	if (c->events) {
		g.end_block = c->events / c->pack;
		if (c->eor && g.end_block)
			g.eor_block = g.end_block - 1;
	}
	if (xsk_plan(c, &g) || xsk_open(c, &g))
		goto out;
	c0 = thread_cpu_ns();
	st->t_start = xevb_now_ns();
	xsk_send(c, &g, st);
	st->t_end = xevb_now_ns();
	st->cpu_ns = thread_cpu_ns() - c0;
	xsk_stats(c, &g, st);
	st->tx_dropped += xsk_invalid_descs(&g);
	if (st->tx_dropped)
		xevb_warn(
			"the kernel dropped %llu frames on the way out: give %s a qdisc (tc qdisc add dev %s root "
			"pfifo) so that a full peer holds the sender instead",
			(unsigned long long)st->tx_dropped, c->dev, c->dev);
	rc = 0;
out:
	xsk_close(&g);
	return rc;
}

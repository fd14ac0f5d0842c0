// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include "base/cli.h"
#include "base/probes.h"
#include "rx/xsk_rx.h"

/* The kernel starts a received frame this far into its chunk (copy mode). */
#define XSK_RX_HEADROOM 256
/* Ethernet + one VLAN tag on top of the MTU. */
#define XSK_L2_OVERHEAD 18

static uint32_t dev_mtu(const char *ifname)
{
	char path[128], buf[32];
	uint32_t mtu = 1500;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ifname);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			mtu = (uint32_t)strtoul(buf, NULL, 10);
		fclose(f);
	}
	return mtu;
}

/* Bounce buffers per queue for a device MTU, or 0 when frames fit a chunk. */
static uint32_t sg_bounce_per_q(uint32_t mtu, uint32_t frames_per_q, uint32_t frame_size, uint32_t *bounce_size)
{
	uint32_t room = frame_size - XSK_RX_HEADROOM, max = mtu + XSK_L2_OVERHEAD, descs, n;

	if (max <= room)
		return 0;
	descs = (max + room - 1) / room;
	/* As many jumbo frames as the UMEM holds: the builder may hold them all. */
	n = frames_per_q / descs;
	if (n < 64)
		n = 64;
	*bounce_size = (max + 63) & ~63u;
	return n;
}

uint32_t xevb_xsk_frame_size_for_mtu(uint32_t mtu)
{
	return mtu + XSK_L2_OVERHEAD <= 2048 - XSK_RX_HEADROOM ? 2048 : 4096;
}

uint32_t xevb_xsk_frame_size_for(const char *ifname)
{
	return xevb_xsk_frame_size_for_mtu(dev_mtu(ifname));
}

/* Socket mode: a whole datagram of the device's MTU in one frame (at least 4096). */
uint32_t xevb_dev_mtu(const char *ifname)
{
	return dev_mtu(ifname);
}

uint32_t xevb_sock_frame_size_for(const char *ifname)
{
	uint32_t need = dev_mtu(ifname) + 64, fs = 4096;

	while (fs < need && fs < 65536)
		fs <<= 1;
	return fs;
}

uint32_t xevb_xsk_extra_frames(const char *ifname, uint32_t frames_per_q, uint32_t frame_size, uint32_t n_queues)
{
	uint32_t bs;

	return sg_bounce_per_q(dev_mtu(ifname), frames_per_q, frame_size, &bs) * n_queues;
}

struct rings {
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
};

/* The queue's UMEM area (huge pages where the system has them) and its registration; 0 or -errno (said why). */
static int map_umem(struct xevb_xsk_q *q, struct rings *r, const struct xevb_xsk_cfg *cfg)
{
	size_t area_len = (size_t)cfg->frames_per_q * cfg->frame_size;
	struct xsk_umem_config ucfg = {
		/* Room for every frame: a frame is either in the fill ring, in
		 * flight, or held by the builder, so the fill ring never limits. */
		.fill_size = cfg->frames_per_q,
		.comp_size = 64,
		.frame_size = cfg->frame_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	int err;

	/* Huge pages cut TLB misses on the UMEM where the system has them. */
	q->area = cfg->no_hugepages ? MAP_FAILED :
				      mmap(NULL, area_len, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	q->hugepages = q->area != MAP_FAILED;
	if (q->area == MAP_FAILED)
		q->area = mmap(NULL, area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
			       -1, 0);
	if (q->area == MAP_FAILED) {
		q->area = NULL;
		xevb_err("cannot map %zu bytes of UMEM: %s (lower --tune frames)", area_len, strerror(errno));
		return -ENOMEM;
	}
	err = xsk_umem__create(&q->umem, q->area, area_len, &r->fill, &r->comp, &ucfg);
	if (err)
		xevb_err("cannot register the UMEM for queue %u: %s", q->queue_id, strerror(-err));
	return err;
}

/* Multi-buffer AF_XDP: the queue's buffers for jumbo frames, all free; 0 or -ENOMEM (said why). */
static int map_bounce(struct xevb_xsk *x, struct xevb_xsk_q *q)
{
	size_t blen = (size_t)x->bounce_per_q * x->bounce_size;

	q->first_bounce = x->n_umem + (uint32_t)(q - x->q) * x->bounce_per_q;
	q->bounce_free = calloc(x->bounce_per_q, sizeof(*q->bounce_free));
	q->bounce = mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (q->bounce == MAP_FAILED)
		q->bounce = NULL;
	if (!q->bounce || !q->bounce_free) {
		xevb_err("cannot map %zu bytes of jumbo-frame buffers for queue %u (lower --tune frames)", blen,
			 q->queue_id);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < x->bounce_per_q; i++) {
		uint32_t fi = q->first_bounce + x->bounce_per_q - 1 - i;

		q->bounce_free[q->n_bounce_free++] = fi;
		x->frame_data[fi] = q->bounce + (size_t)(fi - q->first_bounce) * x->bounce_size;
	}
	return 0;
}

/* The AF_XDP socket bound to the queue, over its UMEM; 0 or -errno (said why, and what to check). */
static int create_socket(struct xevb_xsk *x, struct xevb_xsk_q *q, struct rings *r, const struct xevb_xsk_cfg *cfg)
{
	struct xsk_socket_config scfg = {
		.rx_size = cfg->rx_size,
		.tx_size = 0,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = (cfg->force_copy ? XDP_COPY : 0) | (x->sg ? XDP_USE_SG : 0),
	};
	struct xdp_options opts;
	socklen_t optlen = sizeof(opts);
	int err = xsk_socket__create(&q->xsk, cfg->ifname, q->queue_id, q->umem, &r->rx, NULL, &scfg);

	/*
	 * A builder killed a moment ago leaves the queue to the kernel's
	 * deferred clean-up of its socket (the pool lets go of the queue in a
	 * work item, after the process is gone): busy for some ms more. A
	 * restart waits that out, 2 s at most, instead of failing.
	 */
	for (int i = 0; i < 200 && err == -EBUSY; i++) {
		usleep(10000);
		err = xsk_socket__create(&q->xsk, cfg->ifname, q->queue_id, q->umem, &r->rx, NULL, &scfg);
	}

	if (err && x->sg && err == -EINVAL) {
		xevb_err(
			"cannot bind an AF_XDP socket with XDP_USE_SG on %s queue %u: %s. The MTU "
			"(%u) does not fit a %u-byte frame, and multi-buffer AF_XDP needs kernel 6.6+: "
			"lower the MTU to %u, or use --mode socket",
			cfg->ifname, q->queue_id, strerror(-err), dev_mtu(cfg->ifname), cfg->frame_size,
			cfg->frame_size - XSK_RX_HEADROOM - XSK_L2_OVERHEAD);
		return err;
	}
	if (err) {
		if (err == -EINVAL || err == -ENOENT)
			xevb_err(
				"cannot bind an AF_XDP socket to %s queue %u: %s (does the device have "
				"that queue? ethtool -l / numrxqueues)",
				cfg->ifname, q->queue_id, strerror(-err));
		else
			xevb_err("cannot create the AF_XDP socket on %s queue %u: %s", cfg->ifname, q->queue_id,
				 strerror(-err));
		return err;
	}
	q->fd = xsk_socket__fd(q->xsk);
	if (!getsockopt(q->fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen))
		q->zerocopy = opts.flags & XDP_OPTIONS_ZEROCOPY;
	return 0;
}

/* The kernel polls the NAPI in our recvfrom instead of its own context; 0 or -errno (said why). */
static int enable_busy_poll(struct xevb_xsk_q *q, uint32_t busy_budget)
{
	int one = 1, usecs = 20, budget = (int)busy_budget;

	if (setsockopt(q->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) ||
	    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs)) ||
	    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget))) {
		int err = -errno;
		xevb_err("cannot enable busy polling on queue %u: %s (needs CAP_NET_ADMIN for the budget)",
			 q->queue_id, strerror(errno));
		return err;
	}
	q->busy = true;
	return 0;
}

/* Every frame of the queue into the fill ring, the socket into the XSKMAP: it receives from now on. */
static int start_queue(struct xevb_xsk *x, struct xevb_xsk_q *q, struct rings *r, const struct xevb_xsk_cfg *cfg)
{
	uint32_t fidx, key = q->queue_id;
	int err;

	if (xsk_ring_prod__reserve(&r->fill, cfg->frames_per_q, &fidx) != cfg->frames_per_q) {
		xevb_err("fill ring smaller than the frame count");
		return -ENOSPC;
	}
	for (uint32_t i = 0; i < cfg->frames_per_q; i++)
		*xsk_ring_prod__fill_addr(&r->fill, fidx + i) = (uint64_t)i << x->frame_shift;
	xsk_ring_prod__submit(&r->fill, cfg->frames_per_q);

	if (bpf_map_update_elem(cfg->xsks_map_fd, &key, &q->fd, 0)) {
		err = -errno;
		xevb_err("cannot put the socket of queue %u into the XSKMAP: %s", q->queue_id, strerror(errno));
		return err;
	}
	return 0;
}

static int setup_queue(struct xevb_xsk *x, struct xevb_xsk_q *q, const struct xevb_xsk_cfg *cfg)
{
	struct rings *r = calloc(1, sizeof(*r));
	int err;

	q->rings = r;
	q->pending = calloc(cfg->frames_per_q, sizeof(*q->pending));
	if (!r || !q->pending)
		return -ENOMEM;
	if ((err = map_umem(q, r, cfg)))
		return err;
	if (x->sg && (err = map_bounce(x, q)))
		return err;
	if ((err = create_socket(x, q, r, cfg)))
		return err;
	if (cfg->busy_budget && (err = enable_busy_poll(q, cfg->busy_budget)))
		return err;
	return start_queue(x, q, r, cfg);
}

int xevb_xsk_open(struct xevb_xsk *x, const struct xevb_xsk_cfg *cfg)
{
	int err;

	memset(x, 0, sizeof(*x));
	if (cfg->n_queues == 0 || cfg->n_queues > XEVB_XSK_MAX_QUEUES ||
	    (cfg->frames_per_q & (cfg->frames_per_q - 1)) ||
	    (cfg->frame_size != 2048 && cfg->frame_size != 4096)) {
		xevb_err("bad AF_XDP settings: 1..%d queues, power-of-2 frame count, frame size 2048 or 4096",
			 XEVB_XSK_MAX_QUEUES);
		return -EINVAL;
	}
	x->n_queues = cfg->n_queues;
	x->frames_per_q = cfg->frames_per_q;
	x->frame_shift = cfg->frame_size == 4096 ? 12 : 11;
	x->n_umem = cfg->n_queues * cfg->frames_per_q;
	x->bounce_per_q =
		sg_bounce_per_q(dev_mtu(cfg->ifname), cfg->frames_per_q, cfg->frame_size, &x->bounce_size);
	x->sg = x->bounce_per_q > 0;
	x->frame_data =
		calloc((size_t)x->n_umem + (size_t)x->bounce_per_q * cfg->n_queues, sizeof(*x->frame_data));
	if (!x->frame_data)
		return -ENOMEM;
	for (uint32_t i = 0; i < cfg->n_queues; i++) {
		struct xevb_xsk_q *q = &x->q[i];
		q->queue_id = cfg->queues[i];
		q->first_idx = i * cfg->frames_per_q;
		q->fd = -1;
		err = setup_queue(x, q, cfg);
		if (err) {
			xevb_xsk_close(x);
			return err;
		}
	}
	return 0;
}

void xevb_xsk_close(struct xevb_xsk *x)
{
	for (uint32_t i = 0; i < x->n_queues; i++) {
		struct xevb_xsk_q *q = &x->q[i];
		if (q->xsk)
			xsk_socket__delete(q->xsk);
		if (q->umem)
			xsk_umem__delete(q->umem);
		if (q->area)
			munmap(q->area, (size_t)x->frames_per_q << x->frame_shift);
		if (q->sg_packets || q->sg_stalls)
			xevb_info(
				"queue %u: %llu jumbo frames gathered from %llu descriptors, %llu waits "
				"for a free jumbo buffer",
				q->queue_id, (unsigned long long)q->sg_packets, (unsigned long long)q->sg_descs,
				(unsigned long long)q->sg_stalls);
		if (q->bounce)
			munmap(q->bounce, (size_t)x->bounce_per_q * x->bounce_size);
		free(q->bounce_free);
		free(q->rings);
		free(q->pending);
		memset(q, 0, sizeof(*q));
	}
	free(x->frame_data);
	x->frame_data = NULL;
	x->n_queues = 0;
}

/*
 * Multi-buffer receive: whole frames only. A frame whose last descriptor
 * is not yet in this peek stays for the next call; with no free bounce
 * buffer the ring is left as it is (the kernel counts what overflows).
 */
static uint32_t xsk_rx_sg(struct xevb_xsk *x, struct xevb_xsk_q *q, uint32_t max, uint32_t *idx,
			  const uint8_t **data, uint32_t *len)
{
	struct rings *r = q->rings;
	/* Enough descriptors for the longest frame even when max is small. */
	uint32_t first, n = xsk_ring_cons__peek(&r->rx, max < 64 ? 64 : max, &first);
	uint32_t i = 0, pk = 0;

	while (i < n && pk < max) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&r->rx, first + i);
		uint32_t j = i, fi, total = 0, bi;
		uint8_t *dst;

		if (!(d->options & XDP_PKT_CONTD)) {
			fi = q->first_idx + (uint32_t)(d->addr >> x->frame_shift);
			idx[pk] = fi;
			data[pk] = q->area + d->addr;
			x->frame_data[fi] = data[pk];
			len[pk++] = d->len;
			i++;
			continue;
		}
		while (j < n && (xsk_ring_cons__rx_desc(&r->rx, first + j)->options & XDP_PKT_CONTD))
			j++;
		if (j == n)
			break; /* the rest of this frame is not here yet */
		if (!q->n_bounce_free) {
			q->sg_stalls++;
			break;
		}
		bi = q->bounce_free[--q->n_bounce_free];
		dst = (uint8_t *)x->frame_data[bi];
		for (uint32_t k = i; k <= j; k++) {
			const struct xdp_desc *dk = xsk_ring_cons__rx_desc(&r->rx, first + k);
			uint32_t take = dk->len;

			/* Longer than any frame the MTU allows: keep what fits, the
			 * parser then rejects it by its IP length, and counts it. */
			if (take > x->bounce_size - total)
				take = x->bounce_size - total;
			memcpy(dst + total, q->area + dk->addr, take);
			total += take;
			q->pending[q->n_pending++] = (uint32_t)(dk->addr >> x->frame_shift) << x->frame_shift;
		}
		q->sg_packets++;
		q->sg_descs += j - i + 1;
		idx[pk] = bi;
		data[pk] = dst;
		len[pk++] = total;
		i = j + 1;
	}
	/* Peek moved past what stays in the ring: the next peek starts at i. */
	if (i < n)
		xsk_ring_cons__cancel(&r->rx, n - i);
	q->rx_descs = i;
	return pk;
}

uint32_t xevb_xsk_rx(struct xevb_xsk *x, uint32_t qi, uint32_t max, uint32_t *idx, const uint8_t **data,
		     uint32_t *len)
{
	struct xevb_xsk_q *q = &x->q[qi];
	struct rings *r = q->rings;
	uint32_t first, n;

	if (x->sg)
		return xsk_rx_sg(x, q, max, idx, data, len);
	n = xsk_ring_cons__peek(&r->rx, max, &first);

	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&r->rx, first + i);
		uint64_t addr = d->addr;
		uint32_t fi = q->first_idx + (uint32_t)(addr >> x->frame_shift);

		idx[i] = fi;
		data[i] = q->area + addr;
		x->frame_data[fi] = data[i];
		len[i] = d->len;
	}
	return n;
}

void xevb_xsk_rx_done(struct xevb_xsk *x, uint32_t qi, uint32_t n)
{
	struct rings *r = x->q[qi].rings;
	uint32_t qid = x->q[qi].queue_id;

	if (x->sg)
		n = x->q[qi].rx_descs;
	xsk_ring_cons__release(&r->rx, n);
	/* Workers release their own queues while the main loop resynchronises it. */
	if (x->guard_released && qid < x->guard_queues) {
		__atomic_fetch_add(&x->guard_released[qid], n, __ATOMIC_RELAXED);
		__atomic_store_n(&x->guard_released_ns[qid], x->guard_now, __ATOMIC_RELAXED);
	}
}

uint32_t xevb_xsk_rx_queued(const struct xevb_xsk *x, uint32_t qi, uint32_t *ring_size)
{
	const struct rings *r = x->q[qi].rings;
	/* The kernel's producer index, read as the ring's consumer would. */
	uint32_t prod = __atomic_load_n(r->rx.producer, __ATOMIC_ACQUIRE);

	*ring_size = r->rx.size;
	return prod - __atomic_load_n(r->rx.consumer, __ATOMIC_RELAXED);
}

/* One queue only: with one worker per queue, each fills its own ring. */
void xevb_xsk_flush_q(struct xevb_xsk *x, uint32_t qi)
{
	struct xevb_xsk_q *q = &x->q[qi];
	struct rings *r = q->rings;
	uint32_t fidx, n = q->n_pending;

	/* Cannot fail: the ring has room for every frame of the UMEM. */
	if (!n || xsk_ring_prod__reserve(&r->fill, n, &fidx) != n)
		return;
	for (uint32_t k = 0; k < n; k++)
		*xsk_ring_prod__fill_addr(&r->fill, fidx + k) = q->pending[k];
	xsk_ring_prod__submit(&r->fill, n);
	XEVB_PROBE(frames_recycled, q->queue_id, n);
	q->n_pending = 0;
}

void xevb_xsk_flush(struct xevb_xsk *x)
{
	for (uint32_t i = 0; i < x->n_queues; i++)
		xevb_xsk_flush_q(x, i);
}

void xevb_xsk_kick(struct xevb_xsk *x, uint32_t qi)
{
	if (x->q[qi].busy)
		recvfrom(x->q[qi].fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

uint32_t xevb_xsk_napi_id(const struct xevb_xsk *x, uint32_t qi)
{
	uint32_t id = 0;
	socklen_t len = sizeof(id);

	if (getsockopt(x->q[qi].fd, SOL_SOCKET, SO_INCOMING_NAPI_ID, &id, &len))
		return 0;
	return id;
}

int xevb_xsk_stats(const struct xevb_xsk *x, uint32_t qi, struct xevb_xsk_stats *s)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);

	memset(s, 0, sizeof(*s));
	if (getsockopt(x->q[qi].fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		return -errno;
	s->rx_dropped = st.rx_dropped;
	s->rx_invalid_descs = st.rx_invalid_descs;
	s->rx_ring_full = st.rx_ring_full;
	s->rx_fill_ring_empty_descs = st.rx_fill_ring_empty_descs;
	return 0;
}

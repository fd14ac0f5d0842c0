// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include <xevb/cli.h>
#include <xevb/probes.h>
#include <xevb/xsk_rx.h>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

struct rings {
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
};

static int setup_queue(struct xevb_xsk *x, struct xevb_xsk_q *q, const struct xevb_xsk_cfg *cfg)
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
	struct xsk_socket_config scfg = {
		.rx_size = cfg->rx_size,
		.tx_size = 0,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = cfg->force_copy ? XDP_COPY : 0,
	};
	struct rings *r = calloc(1, sizeof(*r));
	struct xdp_options opts;
	socklen_t optlen = sizeof(opts);
	uint32_t fidx, key;
	int err;

	q->rings = r;
	q->pending = calloc(cfg->frames_per_q, sizeof(*q->pending));
	if (!r || !q->pending)
		return -ENOMEM;
	/* Huge pages cut TLB misses on the UMEM where the system has them. */
	q->area = cfg->no_hugepages ? MAP_FAILED :
		mmap(NULL, area_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	q->hugepages = q->area != MAP_FAILED;
	if (q->area == MAP_FAILED)
		q->area = mmap(NULL, area_len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (q->area == MAP_FAILED) {
		q->area = NULL;
		xevb_err("cannot map %zu bytes of UMEM: %s (lower --frames)", area_len, strerror(errno));
		return -ENOMEM;
	}
	err = xsk_umem__create(&q->umem, q->area, area_len, &r->fill, &r->comp, &ucfg);
	if (err) {
		xevb_err("cannot register the UMEM for queue %u: %s", q->queue_id, strerror(-err));
		return err;
	}
	err = xsk_socket__create(&q->xsk, cfg->ifname, q->queue_id, q->umem, &r->rx, NULL, &scfg);
	if (err) {
		if (err == -EINVAL || err == -ENOENT)
			xevb_err("cannot bind an AF_XDP socket to %s queue %u: %s (does the device have "
				 "that queue? ethtool -l / numrxqueues)", cfg->ifname, q->queue_id, strerror(-err));
		else
			xevb_err("cannot create the AF_XDP socket on %s queue %u: %s", cfg->ifname,
				 q->queue_id, strerror(-err));
		return err;
	}
	q->fd = xsk_socket__fd(q->xsk);
	if (!getsockopt(q->fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen))
		q->zerocopy = opts.flags & XDP_OPTIONS_ZEROCOPY;
	if (cfg->busy_budget) {
		/* The kernel polls the NAPI in our recvfrom instead of its own context. */
		int one = 1, usecs = 20, budget = (int)cfg->busy_budget;

		if (setsockopt(q->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) ||
		    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs)) ||
		    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget))) {
			err = -errno;
			xevb_err("cannot enable busy polling on queue %u: %s (needs CAP_NET_ADMIN for the budget)",
				 q->queue_id, strerror(errno));
			return err;
		}
		q->busy = true;
	}

	if (xsk_ring_prod__reserve(&r->fill, cfg->frames_per_q, &fidx) != cfg->frames_per_q) {
		xevb_err("fill ring smaller than the frame count");
		return -ENOSPC;
	}
	for (uint32_t i = 0; i < cfg->frames_per_q; i++)
		*xsk_ring_prod__fill_addr(&r->fill, fidx + i) = (uint64_t)i << x->frame_shift;
	xsk_ring_prod__submit(&r->fill, cfg->frames_per_q);

	key = q->queue_id;
	if (bpf_map_update_elem(cfg->xsks_map_fd, &key, &q->fd, 0)) {
		err = -errno;
		xevb_err("cannot put the socket of queue %u into the XSKMAP: %s", q->queue_id, strerror(errno));
		return err;
	}
	return 0;
}

int xevb_xsk_open(struct xevb_xsk *x, const struct xevb_xsk_cfg *cfg)
{
	int err;

	memset(x, 0, sizeof(*x));
	if (cfg->n_queues == 0 || cfg->n_queues > XEVB_XSK_MAX_QUEUES ||
	    (cfg->frames_per_q & (cfg->frames_per_q - 1)) || (cfg->frame_size != 2048 && cfg->frame_size != 4096)) {
		xevb_err("bad AF_XDP settings: 1..%d queues, power-of-2 frame count, frame size 2048 or 4096",
			 XEVB_XSK_MAX_QUEUES);
		return -EINVAL;
	}
	x->n_queues = cfg->n_queues;
	x->frames_per_q = cfg->frames_per_q;
	x->frame_shift = cfg->frame_size == 4096 ? 12 : 11;
	x->frame_data = calloc((size_t)cfg->n_queues * cfg->frames_per_q, sizeof(*x->frame_data));
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
		free(q->rings);
		free(q->pending);
		memset(q, 0, sizeof(*q));
	}
	free(x->frame_data);
	x->frame_data = NULL;
	x->n_queues = 0;
}

uint32_t xevb_xsk_rx(struct xevb_xsk *x, uint32_t qi, uint32_t max, uint32_t *idx,
		     const uint8_t **data, uint32_t *len)
{
	struct xevb_xsk_q *q = &x->q[qi];
	struct rings *r = q->rings;
	uint32_t first, n = xsk_ring_cons__peek(&r->rx, max, &first);

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
	xsk_ring_cons__release(&r->rx, n);
}

void xevb_xsk_flush(struct xevb_xsk *x)
{
	for (uint32_t i = 0; i < x->n_queues; i++) {
		struct xevb_xsk_q *q = &x->q[i];
		struct rings *r = q->rings;
		uint32_t fidx, n = q->n_pending;

		if (!n)
			continue;
		/* Cannot fail: the ring has room for every frame of the UMEM. */
		if (xsk_ring_prod__reserve(&r->fill, n, &fidx) != n)
			continue;
		for (uint32_t k = 0; k < n; k++)
			*xsk_ring_prod__fill_addr(&r->fill, fidx + k) = q->pending[k];
		xsk_ring_prod__submit(&r->fill, n);
		XEVB_PROBE(frames_recycled, q->queue_id, n);
		q->n_pending = 0;
	}
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

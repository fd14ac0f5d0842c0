// SPDX-License-Identifier: GPL-2.0-only
/* An AF_XDP receive set without a kernel (fake_xsk.h). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "fake_xsk.h"

static void fx_rings_init(struct fake_xsk *f, struct fx_q *fq, uint32_t frames_per_q)
{
	fq->rx_desc = calloc(f->rx_size, sizeof(*fq->rx_desc));
	fq->fill_addr = calloc(frames_per_q, sizeof(*fq->fill_addr));
	cr_assert(fq->rx_desc && fq->fill_addr);
	fq->r.rx = (struct xsk_ring_cons){ .mask = f->rx_size - 1,
					   .size = f->rx_size,
					   .producer = &fq->rx_prod,
					   .consumer = &fq->rx_cons,
					   .ring = fq->rx_desc,
					   .flags = &fq->flags };
	/* As libxdp sets a producer ring up: its cached consumer a ring ahead. */
	fq->r.fill = (struct xsk_ring_prod){ .cached_cons = frames_per_q,
					     .mask = frames_per_q - 1,
					     .size = frames_per_q,
					     .producer = &fq->fill_prod,
					     .consumer = &fq->fill_cons,
					     .ring = fq->fill_addr,
					     .flags = &fq->flags };
}

/* As xsk_rx.c's map_bounce: the queue's jumbo buffers, all free, the lowest index taken first. */
static void fx_bounce_init(struct xevb_xsk *x, struct xevb_xsk_q *q)
{
	q->first_bounce = x->n_umem + (uint32_t)(q - x->q) * x->bounce_per_q;
	q->bounce = calloc(x->bounce_per_q, x->bounce_size);
	q->bounce_free = calloc(x->bounce_per_q, sizeof(*q->bounce_free));
	cr_assert(q->bounce && q->bounce_free);
	for (uint32_t i = 0; i < x->bounce_per_q; i++) {
		uint32_t fi = q->first_bounce + x->bounce_per_q - 1 - i;

		q->bounce_free[q->n_bounce_free++] = fi;
		x->frame_data[fi] = q->bounce + (size_t)(fi - q->first_bounce) * x->bounce_size;
	}
}

void fx_init(struct fake_xsk *f, uint32_t n_queues, uint32_t frames_per_q, uint32_t frame_size, uint32_t rx_size,
	     uint32_t bounce_per_q, uint32_t bounce_size)
{
	struct xevb_xsk *x = &f->x;

	memset(f, 0, sizeof(*f));
	cr_assert(n_queues >= 1 && n_queues <= XEVB_XSK_MAX_QUEUES);
	f->frame_size = frame_size;
	f->rx_size = rx_size;
	x->n_queues = n_queues;
	x->frames_per_q = frames_per_q;
	x->frame_shift = frame_size == 4096 ? 12 : 11;
	x->n_umem = n_queues * frames_per_q;
	x->bounce_per_q = bounce_per_q;
	x->bounce_size = bounce_size;
	x->sg = bounce_per_q > 0;
	x->frame_data = calloc((size_t)x->n_umem + (size_t)bounce_per_q * n_queues, sizeof(*x->frame_data));
	cr_assert(x->frame_data != NULL);
	for (uint32_t i = 0; i < n_queues; i++) {
		struct xevb_xsk_q *q = &x->q[i];

		q->queue_id = 10 + i;
		q->first_idx = i * frames_per_q;
		q->area = aligned_alloc(4096, (size_t)frames_per_q * frame_size);
		q->pending = calloc(frames_per_q, sizeof(*q->pending));
		q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		cr_assert(q->area && q->pending && q->fd >= 0);
		memset(q->area, 0, (size_t)frames_per_q * frame_size);
		fx_rings_init(f, &f->fq[i], frames_per_q);
		q->rings = &f->fq[i].r;
		if (x->sg)
			fx_bounce_init(x, q);
	}
	x->guard_released = f->guard_released;
	x->guard_released_ns = f->guard_released_ns;
	x->guard_queues = XEVB_XSK_MAX_QUEUES;
}

void fx_free(struct fake_xsk *f)
{
	for (uint32_t i = 0; i < f->x.n_queues; i++) {
		struct xevb_xsk_q *q = &f->x.q[i];

		free(q->area);
		free(q->pending);
		free(q->bounce);
		free(q->bounce_free);
		close(q->fd);
		free(f->fq[i].rx_desc);
		free(f->fq[i].fill_addr);
	}
	free(f->x.frame_data);
	memset(f, 0, sizeof(*f));
}

void fx_deliver(struct fake_xsk *f, uint32_t qi, uint64_t addr, uint32_t len, uint32_t options)
{
	struct fx_q *fq = &f->fq[qi];

	cr_assert(lt(u32, fq->rx_prod - fq->rx_cons, f->rx_size), "fake RX ring of queue %u full", qi);
	fq->rx_desc[fq->rx_prod & (f->rx_size - 1)] =
		(struct xdp_desc){ .addr = addr, .len = len, .options = options };
	__atomic_store_n(&fq->rx_prod, fq->rx_prod + 1, __ATOMIC_RELEASE);
}

void fx_deliver_frame(struct fake_xsk *f, uint32_t qi, uint32_t c, const uint8_t *bytes, uint32_t len)
{
	uint64_t addr = (uint64_t)c << f->x.frame_shift;

	cr_assert(le(u32, len, f->frame_size));
	memcpy(f->x.q[qi].area + addr, bytes, len);
	fx_deliver(f, qi, addr, len, 0);
}

uint32_t fx_fill_take(struct fake_xsk *f, uint32_t qi, uint64_t *addr, uint32_t max)
{
	struct fx_q *fq = &f->fq[qi];
	uint32_t n = 0, mask = f->x.frames_per_q - 1;

	while (n < max && fq->fill_cons != __atomic_load_n(&fq->fill_prod, __ATOMIC_ACQUIRE))
		addr[n++] = fq->fill_addr[fq->fill_cons++ & mask];
	return n;
}

uint32_t fx_rx_released(const struct fake_xsk *f, uint32_t qi)
{
	return __atomic_load_n(&f->fq[qi].rx_cons, __ATOMIC_ACQUIRE);
}

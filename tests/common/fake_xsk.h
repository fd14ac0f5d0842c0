/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An AF_XDP receive set (struct xevb_xsk) without a kernel: each queue's
 * UMEM in plain memory and its RX and fill rings in memory this rig plays
 * the kernel's side of. xsk_rx.c's ring handling and the engine's workers
 * run on it unchanged; tests deliver descriptors and read back what went
 * to the fill rings. No socket, no interface, no privilege.
 */
#ifndef XEVB_TEST_FAKE_XSK_H
#define XEVB_TEST_FAKE_XSK_H

#include <stdint.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>
#include "rx/xsk_rx.h"

/* xsk_rx.c's struct rings, member for member: q->rings points at one. */
struct fx_rings {
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
};

struct fx_q {
	struct fx_rings r;
	uint32_t rx_prod, rx_cons, fill_prod, fill_cons, flags;
	struct xdp_desc *rx_desc; /* [rx_size] */
	uint64_t *fill_addr;      /* [frames_per_q] */
};

struct fake_xsk {
	struct xevb_xsk x;
	struct fx_q fq[XEVB_XSK_MAX_QUEUES];
	uint32_t frame_size, rx_size;
	uint64_t guard_released[XEVB_XSK_MAX_QUEUES], guard_released_ns[XEVB_XSK_MAX_QUEUES];
};

/*
 * n_queues queues (queue ids 10, 11, ...), frames_per_q chunks of
 * frame_size each, RX rings of rx_size. bounce_per_q > 0: multi-buffer
 * (x->sg), that many jumbo buffers of bounce_size a queue, all free.
 * The fill rings start empty (the kernel's side owns no chunk yet); each
 * queue's fd is an eventfd nobody signals, for the engine's poll().
 */
void fx_init(struct fake_xsk *f, uint32_t n_queues, uint32_t frames_per_q, uint32_t frame_size, uint32_t rx_size,
	     uint32_t bounce_per_q, uint32_t bounce_size);
void fx_free(struct fake_xsk *f);
/* The kernel's side: a descriptor into queue qi's RX ring (options: XDP_PKT_CONTD or 0). */
void fx_deliver(struct fake_xsk *f, uint32_t qi, uint64_t addr, uint32_t len, uint32_t options);
/* A frame's bytes into chunk c of queue qi (at the chunk's start), then delivered. */
void fx_deliver_frame(struct fake_xsk *f, uint32_t qi, uint32_t c, const uint8_t *bytes, uint32_t len);
/* The kernel's side: up to max addresses the fill ring holds, taken (oldest first). */
uint32_t fx_fill_take(struct fake_xsk *f, uint32_t qi, uint64_t *addr, uint32_t max);
/* RX descriptors the user side released so far (the ring's consumer index). */
uint32_t fx_rx_released(const struct fake_xsk *f, uint32_t qi);

#endif

// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_XDP receive (user/rx/xsk_rx.c) on rings in memory (fake_xsk.h): what
 * a batch takes from the RX ring, what goes back to which fill ring and
 * when, the ring guard's count, and multi-buffer frames gathered into
 * jumbo buffers, whole or not at all.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include "../common/fake_xsk.h"
#include "rx/xsk_rx.h"

#define FPQ   16 /* frames a queue */
#define FSIZE 2048
#define RXS   8

static struct fake_xsk f;

static void rx_fini(void)
{
	fx_free(&f);
}

TestSuite(xsk_rx, .fini = rx_fini);

/* A batch: global indices (queue 1's from FPQ), the frame starts, the lengths; released only at rx_done. */
Test(xsk_rx, batch_maps_descriptors_to_global_frames)
{
	uint32_t idx[RXS], len[RXS], size;
	const uint8_t *data[RXS];
	uint32_t n;

	fx_init(&f, 2, FPQ, FSIZE, RXS, 0, 0);
	fx_deliver(&f, 1, 5 * FSIZE, 100, 0);
	fx_deliver(&f, 1, 0, 60, 0);
	fx_deliver(&f, 1, 15 * FSIZE, 1500, 0);
	cr_assert(eq(u32, xevb_xsk_rx_queued(&f.x, 1, &size), 3));
	cr_assert(eq(u32, size, RXS));
	cr_assert(eq(u32, xevb_xsk_rx_queued(&f.x, 0, &size), 0));
	n = xevb_xsk_rx(&f.x, 1, RXS, idx, data, len);
	cr_assert(eq(u32, n, 3));
	cr_assert(eq(u32, idx[0], FPQ + 5));
	cr_assert(eq(u32, idx[1], FPQ + 0));
	cr_assert(eq(u32, idx[2], FPQ + 15));
	cr_assert(eq(u32, len[0], 100));
	cr_assert(eq(u32, len[1], 60));
	cr_assert(eq(u32, len[2], 1500));
	for (uint32_t i = 0; i < n; i++) {
		cr_assert(eq(ptr, (void *)data[i], f.x.q[1].area + (size_t)(idx[i] - FPQ) * FSIZE));
		cr_assert(eq(ptr, (void *)f.x.frame_data[idx[i]], (void *)data[i]));
	}
	/* Taken, not yet released: the kernel may not reuse the slots. */
	cr_assert(eq(u32, fx_rx_released(&f, 1), 0));
	cr_assert(eq(u32, xevb_xsk_rx(&f.x, 1, RXS, idx, data, len), 0), "a peeked descriptor twice");
	f.x.guard_now = 777;
	xevb_xsk_rx_done(&f.x, 1, n);
	cr_assert(eq(u32, fx_rx_released(&f, 1), 3));
	cr_assert(eq(u64, f.guard_released[11], 3), "the ring guard counts by queue id");
	cr_assert(eq(u64, f.guard_released_ns[11], 777));
	cr_assert(eq(u64, f.guard_released[10], 0));
	cr_assert(eq(u32, xevb_xsk_rx_queued(&f.x, 1, &size), 0));
}

/* At most max a batch; the rest waits in the ring, in order, across the ring's wrap. */
Test(xsk_rx, batch_bounded_and_in_order_across_the_wrap)
{
	uint32_t idx[RXS], len[RXS], next = 0, got = 0;
	const uint8_t *data[RXS];

	fx_init(&f, 1, FPQ, FSIZE, RXS, 0, 0);
	for (uint32_t round = 0; round < 5; round++) {
		for (uint32_t k = 0; k < 6; k++)
			fx_deliver(&f, 0, (uint64_t)((round * 6 + k) % FPQ) * FSIZE, 64 + round * 6 + k, 0);
		for (uint32_t n; (n = xevb_xsk_rx(&f.x, 0, 4, idx, data, len));) {
			cr_assert(le(u32, n, 4));
			for (uint32_t i = 0; i < n; i++, next++) {
				cr_assert(eq(u32, idx[i], next % FPQ));
				cr_assert(eq(u32, len[i], 64 + next));
			}
			xevb_xsk_rx_done(&f.x, 0, n);
			got += n;
		}
	}
	cr_assert(eq(u32, got, 30));
	cr_assert(eq(u32, fx_rx_released(&f, 0), 30));
}

/* Releases wait until the flush, then go to their own queue's fill ring as chunk addresses, in order. */
Test(xsk_rx, release_goes_to_its_queues_fill_ring_at_flush)
{
	uint64_t addr[FPQ];

	fx_init(&f, 2, FPQ, FSIZE, RXS, 0, 0);
	xevb_xsk_release(&f.x, 3);
	xevb_xsk_release(&f.x, FPQ + 7);
	xevb_xsk_release(&f.x, 0);
	xevb_xsk_release(&f.x, FPQ + 15);
	cr_assert(eq(u32, fx_fill_take(&f, 0, addr, FPQ), 0), "nothing before the flush");
	xevb_xsk_flush_q(&f.x, 1);
	cr_assert(eq(u32, fx_fill_take(&f, 0, addr, FPQ), 0), "queue 1's flush fills only its ring");
	cr_assert(eq(u32, fx_fill_take(&f, 1, addr, FPQ), 2));
	cr_assert(eq(u64, addr[0], 7 * FSIZE));
	cr_assert(eq(u64, addr[1], 15 * FSIZE));
	cr_assert(eq(u32, f.x.q[1].n_pending, 0));
	cr_assert(eq(u32, f.x.q[0].n_pending, 2));
	xevb_xsk_flush(&f.x);
	cr_assert(eq(u32, fx_fill_take(&f, 0, addr, FPQ), 2));
	cr_assert(eq(u64, addr[0], 3 * FSIZE));
	cr_assert(eq(u64, addr[1], 0));
	/* An empty flush moves nothing. */
	xevb_xsk_flush(&f.x);
	cr_assert(eq(u32, f.fq[0].fill_prod, 2));
	cr_assert(eq(u32, f.fq[1].fill_prod, 2));
}

/* Every chunk of a queue in flight at once (the UMEM's worth) fits its fill ring at one flush. */
Test(xsk_rx, whole_umem_back_in_one_flush)
{
	uint64_t addr[FPQ];

	fx_init(&f, 1, FPQ, FSIZE, RXS, 0, 0);
	for (uint32_t i = 0; i < FPQ; i++)
		xevb_xsk_release(&f.x, FPQ - 1 - i);
	xevb_xsk_flush(&f.x);
	cr_assert(eq(u32, fx_fill_take(&f, 0, addr, FPQ), FPQ));
	for (uint32_t i = 0; i < FPQ; i++)
		cr_assert(eq(u64, addr[i], (uint64_t)(FPQ - 1 - i) * FSIZE));
}

#define BSIZE 4096

static void fill_chunk(uint32_t c, uint8_t seed, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		f.x.q[0].area[(size_t)c * FSIZE + i] = (uint8_t)(seed + i);
}

/* Multi-buffer: a frame in three descriptors gathered into a jumbo buffer; its chunks go back at once. */
Test(xsk_rx, jumbo_frame_gathered_chunks_returned)
{
	uint32_t idx[RXS], len[RXS];
	const uint8_t *data[RXS];
	uint64_t addr[FPQ];
	uint32_t n;

	fx_init(&f, 1, FPQ, FSIZE, RXS, 2, BSIZE);
	fill_chunk(1, 0x10, 80);
	fill_chunk(4, 0x20, 1500);
	fill_chunk(5, 0x30, 1500);
	fill_chunk(6, 0x40, 700);
	fx_deliver(&f, 0, 1 * FSIZE, 80, 0);
	fx_deliver(&f, 0, 4 * FSIZE, 1500, XDP_PKT_CONTD);
	fx_deliver(&f, 0, 5 * FSIZE, 1500, XDP_PKT_CONTD);
	fx_deliver(&f, 0, 6 * FSIZE, 700, 0);
	n = xevb_xsk_rx(&f.x, 0, RXS, idx, data, len);
	cr_assert(eq(u32, n, 2));
	cr_assert(eq(u32, idx[0], 1));
	cr_assert(eq(u32, len[0], 80));
	cr_assert(eq(u32, idx[1], f.x.q[0].first_bounce), "the first free jumbo buffer");
	cr_assert(eq(u32, len[1], 3700));
	cr_assert(eq(ptr, (void *)data[1], (void *)f.x.frame_data[idx[1]]));
	for (uint32_t i = 0; i < 3700; i++) {
		uint8_t want = i < 1500 ? (uint8_t)(0x20 + i) :
			       i < 3000 ? (uint8_t)(0x30 + i - 1500) :
					  (uint8_t)(0x40 + i - 3000);
		cr_assert(eq(u8, data[1][i], want), "byte %u", i);
	}
	cr_assert(eq(u32, f.x.q[0].n_bounce_free, 1));
	cr_assert(eq(u64, f.x.q[0].sg_packets, 1));
	cr_assert(eq(u64, f.x.q[0].sg_descs, 3));
	/* rx_done releases the descriptors taken (4), not the frames (2). */
	xevb_xsk_rx_done(&f.x, 0, n);
	cr_assert(eq(u32, fx_rx_released(&f, 0), 4));
	/* The gathered chunks are free already; the buffer comes back with the frame. */
	xevb_xsk_flush(&f.x);
	cr_assert(eq(u32, fx_fill_take(&f, 0, addr, FPQ), 3));
	cr_assert(eq(u64, addr[0], 4 * FSIZE));
	cr_assert(eq(u64, addr[2], 6 * FSIZE));
	xevb_xsk_release(&f.x, idx[1]);
	cr_assert(eq(u32, f.x.q[0].n_bounce_free, 2));
	xevb_xsk_flush(&f.x);
	cr_assert(eq(u32, fx_fill_take(&f, 0, addr, FPQ), 0), "a jumbo buffer is no chunk");
}

/*
 * A batch's peek may end inside a frame (the kernel publishes whole
 * frames, but a peek takes at most max(max, 64) descriptors): the frame
 * stays in the ring, whole, and is the next batch's first.
 */
#define RXL 128

Test(xsk_rx, jumbo_frame_cut_by_the_peek_waits)
{
	uint32_t idx[RXL], len[RXL];
	const uint8_t *data[RXL];
	uint32_t n;

	fx_init(&f, 1, RXL, FSIZE, RXL, 2, BSIZE);
	for (uint32_t c = 0; c < 62; c++)
		fx_deliver(&f, 0, (uint64_t)c * FSIZE, 60 + c, 0);
	for (uint32_t c = 62; c < 65; c++)
		fx_deliver(&f, 0, (uint64_t)c * FSIZE, 1000, c < 64 ? XDP_PKT_CONTD : 0);
	n = xevb_xsk_rx(&f.x, 0, 64, idx, data, len);
	cr_assert(eq(u32, n, 62));
	cr_assert(eq(u32, len[61], 121));
	cr_assert(eq(u32, f.x.q[0].n_bounce_free, 2), "no buffer taken for the frame left in the ring");
	xevb_xsk_rx_done(&f.x, 0, n);
	cr_assert(eq(u32, fx_rx_released(&f, 0), 62), "only the whole frames' descriptors");
	n = xevb_xsk_rx(&f.x, 0, 64, idx, data, len);
	cr_assert(eq(u32, n, 1));
	cr_assert(eq(u32, len[0], 3000));
	cr_assert(eq(u32, idx[0], f.x.q[0].first_bounce));
	xevb_xsk_rx_done(&f.x, 0, n);
	cr_assert(eq(u32, fx_rx_released(&f, 0), 65));
}

/* No free jumbo buffer: the frame stays in the ring (counted as a wait), nothing taken past it. */
Test(xsk_rx, jumbo_frame_without_buffer_waits)
{
	uint32_t idx[RXS], len[RXS];
	const uint8_t *data[RXS];

	fx_init(&f, 1, FPQ, FSIZE, RXS, 2, BSIZE);
	f.x.q[0].n_bounce_free = 0;
	fx_deliver(&f, 0, 3 * FSIZE, 1500, XDP_PKT_CONTD);
	fx_deliver(&f, 0, 4 * FSIZE, 20, 0);
	fx_deliver(&f, 0, 5 * FSIZE, 64, 0);
	cr_assert(eq(u32, xevb_xsk_rx(&f.x, 0, RXS, idx, data, len), 0));
	cr_assert(eq(u64, f.x.q[0].sg_stalls, 1));
	xevb_xsk_rx_done(&f.x, 0, 0);
	cr_assert(eq(u32, fx_rx_released(&f, 0), 0));
	cr_assert(eq(u32, f.x.q[0].n_pending, 0), "no chunk given back for a frame not taken");
	f.x.q[0].n_bounce_free = 2;
	cr_assert(eq(u32, xevb_xsk_rx(&f.x, 0, RXS, idx, data, len), 2));
	cr_assert(eq(u32, len[0], 1520));
	cr_assert(eq(u32, idx[1], 5));
}

/* Longer than a jumbo buffer: what fits is kept (the parser refuses it by its IP length), no overrun. */
Test(xsk_rx, jumbo_frame_over_the_buffer_cut)
{
	uint32_t idx[RXS], len[RXS];
	const uint8_t *data[RXS];

	fx_init(&f, 1, FPQ, FSIZE, RXS, 2, BSIZE);
	for (uint32_t c = 0; c < 3; c++)
		fx_deliver(&f, 0, (uint64_t)c * FSIZE, 1800, c < 2 ? XDP_PKT_CONTD : 0);
	cr_assert(eq(u32, xevb_xsk_rx(&f.x, 0, RXS, idx, data, len), 1));
	cr_assert(eq(u32, len[0], BSIZE));
	cr_assert(eq(u32, f.x.q[0].n_pending, 3));
}

/* The chunk size for an MTU: 2048 while a frame of it fits one with the receive headroom. */
Test(xsk_rx, frame_size_for_mtu)
{
	cr_assert(eq(u32, xevb_xsk_frame_size_for_mtu(1500), 2048));
	cr_assert(eq(u32, xevb_xsk_frame_size_for_mtu(9000), 4096));
	cr_assert(eq(u32, xevb_xsk_frame_size_for_mtu(3000), 4096));
}

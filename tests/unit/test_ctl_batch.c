// SPDX-License-Identifier: GPL-2.0-only
/* Batched control datagrams (user/ctl/ctl_batch.h) over loopback: nothing lost, duplicated or reordered. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "ctl/ctl_batch.h"

static uint16_t port_of(const struct xevb_ctl_io *io)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof(sa);

	getsockname(io->fd, (struct sockaddr *)&sa, &l);
	return ntohs(sa.sin_port);
}

/* 150 CLEARs (more than two batches) queued, then flushed; read back in batches, in order, counted by type. */
Test(ctl_batch, queued_sends_and_batched_reads)
{
	static struct xevb_ctl_txq tq;
	static struct xevb_ctl_rxq rq;
	struct xevb_ctl_io tx, rx;
	struct xevb_ctl_msg m = { .h = { .type = XEVB_CTL_CLEAR, .n_recs = 1 } }, got;
	struct sockaddr_in to, from;
	uint32_t lo = htonl(INADDR_LOOPBACK), n = 0;

	cr_assert(eq(int, xevb_ctl_open(&tx, lo, 0, XEVB_ROLE_DFM, 0), 0));
	cr_assert(eq(int, xevb_ctl_open(&rx, lo, 0, XEVB_ROLE_SOURCE, 0), 0));
	tx.txq = &tq;
	rx.rxq = &rq;
	to = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = lo, .sin_port = htons(port_of(&rx)) };
	for (uint32_t i = 0; i < 150; i++) {
		m.u.clear[0] = (struct xevb_ctl_range){ .first_event = i, .count = 1 };
		cr_assert(eq(int, xevb_ctl_send(&tx, &to, &m), 0));
	}
	/* Two full batches left on their own; the rest waits for the flush. */
	cr_assert(eq(u64, tq.datagrams, 128));
	cr_assert(eq(u32, tq.n, 22));
	xevb_ctl_flush(&tx);
	cr_assert(eq(u64, tx.tx, 150));
	cr_assert(eq(u64, tx.tx_type[XEVB_CTL_CLEAR], 150));
	while (xevb_ctl_recv(&rx, &got, &from)) {
		cr_assert(eq(u32, got.u.clear[0].first_event, n));
		cr_assert(eq(u16, ntohs(from.sin_port), port_of(&tx)));
		n++;
	}
	cr_assert(eq(u32, n, 150));
	cr_assert(ge(u64, rq.datagrams, 150));
	cr_assert(lt(u64, rq.calls, 150), "read in batches: %llu calls", (unsigned long long)rq.calls);
	xevb_ctl_close(&tx);
	xevb_ctl_close(&rx);
}

// SPDX-License-Identifier: GPL-2.0-only
/* Batched control datagrams (ctl_batch.h). */
#include <errno.h>
#include <string.h>
#include "ctl/ctl_batch.h"

/*
 * With IP_RECVERR an ICMP error an earlier datagram met fails the next
 * call once: that call's datagrams were not refused, try them again.
 */
static bool stale_icmp(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH;
}

void xevb_ctl_flush(struct xevb_ctl_io *io)
{
	struct xevb_ctl_txq *q = io->txq;
	uint32_t done = 0, stale = 0;

	if (!q || !q->n)
		return;
	for (uint32_t i = 0; i < q->n; i++) {
		q->mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &q->to[i],
							  .msg_namelen = sizeof(q->to[i]),
							  .msg_iov = &q->iov[i],
							  .msg_iovlen = 1 } };
	}
	while (done < q->n) {
		int r = sendmmsg(io->fd, q->mm + done, q->n - done, 0);
		if (r < 0 && (errno == EINTR || (stale_icmp(errno) && stale++ < XEVB_CTL_BATCH)))
			continue;
		if (r <= 0) {
			/* The socket buffer is full (or worse): what did not leave is counted, as with sendto. */
			io->tx_err += q->n - done;
			break;
		}
		q->calls++;
		q->datagrams += (uint32_t)r;
		for (int k = 0; k < r; k++) {
			io->tx++;
			io->tx_type[q->type[done + (uint32_t)k]]++;
		}
		done += (uint32_t)r;
	}
	q->n = 0;
}

int xevb_ctl_txq_put(struct xevb_ctl_io *io, const struct sockaddr_in *to, const uint8_t *buf, size_t len,
		     uint8_t type)
{
	struct xevb_ctl_txq *q = io->txq;
	uint32_t i;

	if (q->n == XEVB_CTL_BATCH)
		xevb_ctl_flush(io);
	i = q->n++;
	memcpy(q->buf[i], buf, len);
	q->iov[i] = (struct iovec){ .iov_base = q->buf[i], .iov_len = len };
	q->to[i] = *to;
	q->type[i] = type;
	return 0;
}

/* Read what is waiting, up to a batch; false when nothing is. */
static bool refill(struct xevb_ctl_io *io, struct xevb_ctl_rxq *q)
{
	int r, stale = 0;

	for (uint32_t i = 0; i < XEVB_CTL_BATCH; i++) {
		q->iov[i] = (struct iovec){ .iov_base = q->buf[i], .iov_len = sizeof(q->buf[i]) };
		q->mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &q->from[i],
							  .msg_namelen = sizeof(q->from[i]),
							  .msg_iov = &q->iov[i],
							  .msg_iovlen = 1,
							  .msg_control = q->ctl[i].b,
							  .msg_controllen = sizeof(q->ctl[i].b) } };
	}
	do
		r = recvmmsg(io->fd, q->mm, XEVB_CTL_BATCH, MSG_DONTWAIT, NULL);
	while (r < 0 && (errno == EINTR || (stale_icmp(errno) && stale++ < XEVB_CTL_BATCH)));
	if (r <= 0)
		return false;
	q->n = (uint32_t)r;
	q->next = 0;
	q->calls++;
	q->datagrams += (uint32_t)r;
	return true;
}

int xevb_ctl_rxq_recv(struct xevb_ctl_io *io, struct xevb_ctl_msg *m, struct sockaddr_in *from)
{
	struct xevb_ctl_rxq *q = io->rxq;

	for (;;) {
		struct msghdr *mh;
		uint32_t dst = 0, i;

		if (q->next == q->n && !refill(io, q))
			return 0;
		i = q->next++;
		mh = &q->mm[i].msg_hdr;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
				dst = ((const struct in_pktinfo *)CMSG_DATA(c))->ipi_addr.s_addr;
		*from = q->from[i];
		if (xevb_ctl_take(io, q->buf[i], q->mm[i].msg_len, dst, from, m))
			return 1;
	}
}

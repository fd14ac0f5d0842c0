/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Batched control datagrams (the DFM's fan-out): with a send queue on an
 * endpoint, xevb_ctl_send encodes (and seals) each message at once but the
 * datagrams leave together, up to XEVB_CTL_BATCH per sendmmsg, when the
 * queue is full or at xevb_ctl_flush; with a receive queue, xevb_ctl_recv
 * takes up to XEVB_CTL_BATCH datagrams per recvmmsg. One system call per
 * datagram was the DFM's cost (~7 us out, ~10 us in, against 0.015 us of
 * its own work per event).
 */
#ifndef XEVB_CTL_BATCH_H
#define XEVB_CTL_BATCH_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include "ctl/ctl_sock.h"

#define XEVB_CTL_BATCH 64

struct xevb_ctl_txq {
	uint32_t n;
	uint64_t calls, datagrams; /* sendmmsg calls, datagrams they took */
	struct sockaddr_in to[XEVB_CTL_BATCH];
	uint8_t type[XEVB_CTL_BATCH];
	struct iovec iov[XEVB_CTL_BATCH];
	struct mmsghdr mm[XEVB_CTL_BATCH];
	uint8_t buf[XEVB_CTL_BATCH][XEVB_CTL_MAX_LEN];
};

struct xevb_ctl_rxq {
	uint32_t n, next;
	uint64_t calls, datagrams; /* recvmmsg calls that brought something, datagrams */
	struct sockaddr_in from[XEVB_CTL_BATCH];
	struct iovec iov[XEVB_CTL_BATCH];
	struct mmsghdr mm[XEVB_CTL_BATCH];
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct in_pktinfo))];
	} ctl[XEVB_CTL_BATCH];
	uint8_t buf[XEVB_CTL_BATCH][XEVB_CTL_MAX_LEN + 1];
};

/* Queue buf[0..len) (a message of type, encoded and sealed) for to; the queue leaves when full. 0, or -1. */
int xevb_ctl_txq_put(struct xevb_ctl_io *io, const struct sockaddr_in *to, const uint8_t *buf, size_t len,
		     uint8_t type);
/* Send what is queued (nothing without a queue). */
void xevb_ctl_flush(struct xevb_ctl_io *io);
/* xevb_ctl_recv through the receive queue. */
int xevb_ctl_rxq_recv(struct xevb_ctl_io *io, struct xevb_ctl_msg *m, struct sockaddr_in *from);

#endif

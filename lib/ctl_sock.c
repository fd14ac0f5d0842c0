// SPDX-License-Identifier: LGPL-2.1-or-later
/* Taking a control datagram, the farm node's and the tools': see shared/xl_ctl_sock.h. */
#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"
#include "shared/xl_ctl_sock.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t xl_ctl_new_epoch(void)
{
	uint64_t t = clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 20) ^ clock_ns(CLOCK_MONOTONIC);
	uint32_t e = (uint32_t)(t ^ (t >> 32)) * 2654435761u;

	return e ? e : 1;
}

ssize_t xl_ctl_recvmsg(int fd, uint8_t *buf, size_t cap, struct sockaddr_in *from, uint32_t *dst)
{
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct in_pktinfo))];
	} cm;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = { .msg_name = from,
			     .msg_namelen = sizeof(*from),
			     .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b) };
	ssize_t n = recvmsg(fd, &mh, 0);

	if (n < 0)
		return -errno;
	*dst = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
			*dst = ((const struct in_pktinfo *)CMSG_DATA(c))->ipi_addr.s_addr;
	return n;
}

enum xevb_ctl_err xl_ctl_unsealed(const uint8_t *buf, size_t n, bool keyed, struct xevb_ctl_msg *m)
{
	if (keyed && n > 2 && buf[2] == XEVB_CTL_VERSION)
		return XEVB_CTL_E_UNAUTH;
	if (!keyed && xl_ctl_sealed(buf, n))
		return XEVB_CTL_E_NO_KEY;
	return xl_ctl_decode(buf, n, m);
}

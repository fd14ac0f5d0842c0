// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include <xevb/cli.h>
#include <xevb/mep_parse.h>
#include <xevb/sock_rx.h>

/* Synthetic headers in front of the data: Ethernet, and IPv4 + UDP for UDP. */
#define RAW_ROOM 14
#define UDP_ROOM (14 + 20 + 8)

int xevb_sock_open(struct xevb_sock *s, const struct xevb_sock_cfg *cfg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1, err;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->udp = cfg->udp;
	s->udp_port = cfg->udp_port;
	s->n_frames = cfg->n_frames;
	s->frame_size = cfg->frame_size;
	s->hdr_room = cfg->udp ? UDP_ROOM : RAW_ROOM;
	s->area = mmap(NULL, (size_t)cfg->n_frames * cfg->frame_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	s->frame_data = calloc(cfg->n_frames, sizeof(*s->frame_data));
	s->free_stack = calloc(cfg->n_frames, sizeof(*s->free_stack));
	if (s->area == MAP_FAILED || !s->frame_data || !s->free_stack) {
		if (s->area == MAP_FAILED)
			s->area = NULL;
		xevb_err("cannot allocate %u frames of %u bytes (lower --frames)", cfg->n_frames, cfg->frame_size);
		xevb_sock_close(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cfg->n_frames; i++) {
		uint8_t *f = s->area + (size_t)i * cfg->frame_size;
		s->frame_data[i] = f;
		s->free_stack[s->n_free++] = cfg->n_frames - 1 - i;
		memset(f, 0, s->hdr_room);
		xevb_st16(f + 12, XEVB_ETH_P_IP);
		if (cfg->udp) {
			f[14] = 0x45;
			f[14 + 9] = XEVB_IPPROTO_UDP;
			xevb_st16(f + 14 + 20 + 2, cfg->udp_port);
		}
	}

	s->fd = socket(AF_INET, cfg->udp ? SOCK_DGRAM : SOCK_RAW, cfg->udp ? IPPROTO_UDP : cfg->ip_proto);
	if (s->fd < 0) {
		err = -errno;
		if (errno == EPERM)
			xevb_err("a raw IP socket needs root or CAP_NET_RAW");
		else
			xevb_err("cannot open the receive socket: %s", strerror(errno));
		xevb_sock_close(s);
		return err;
	}
	if (cfg->rcvbuf &&
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &cfg->rcvbuf, sizeof(cfg->rcvbuf)) &&
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &cfg->rcvbuf, sizeof(cfg->rcvbuf)))
		xevb_warn("cannot set the socket buffer to %d bytes: %s", cfg->rcvbuf, strerror(errno));
	setsockopt(s->fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	if (cfg->udp) {
		sa.sin_port = htons(cfg->udp_port);
		sa.sin_addr.s_addr = cfg->bind_addr;
		if (bind(s->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			err = -errno;
			xevb_err("cannot bind UDP port %u: %s", cfg->udp_port, strerror(errno));
			xevb_sock_close(s);
			return err;
		}
	}
	return 0;
}

void xevb_sock_close(struct xevb_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->area)
		munmap(s->area, (size_t)s->n_frames * s->frame_size);
	free(s->frame_data);
	free(s->free_stack);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

int xevb_sock_queue(const struct xevb_sock *s, struct xevb_sock_queue *q)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	if (getsockopt(s->fd, SOL_SOCKET, SO_MEMINFO, mi, &len))
		return -errno;
	if (len < sizeof(mi))
		return -EPROTO;
	q->queued = mi[SK_MEMINFO_RMEM_ALLOC];
	q->size = mi[SK_MEMINFO_RCVBUF];
	q->drops = mi[SK_MEMINFO_DROPS];
	return 0;
}

int xevb_sock_rx(struct xevb_sock *s, uint32_t *idx, const uint8_t **data, uint32_t *len)
{
	static __thread struct mmsghdr msgs[XEVB_SOCK_BATCH];
	static __thread struct iovec iov[XEVB_SOCK_BATCH];
	static __thread struct sockaddr_in from[XEVB_SOCK_BATCH];
	static __thread char ctl[XEVB_SOCK_BATCH][CMSG_SPACE(sizeof(uint32_t))];
	uint32_t want = s->n_free < XEVB_SOCK_BATCH ? s->n_free : XEVB_SOCK_BATCH;
	int n;

	if (!want)
		return 0;   /* every frame is held by open events: the socket queue absorbs */
	for (uint32_t i = 0; i < want; i++) {
		uint32_t fi = s->free_stack[s->n_free - 1 - i];
		iov[i].iov_base = (uint8_t *)s->frame_data[fi] + s->hdr_room;
		iov[i].iov_len = s->frame_size - s->hdr_room;
		msgs[i].msg_hdr = (struct msghdr){
			.msg_name = &from[i], .msg_namelen = sizeof(from[i]),
			.msg_iov = &iov[i], .msg_iovlen = 1,
			.msg_control = ctl[i], .msg_controllen = sizeof(ctl[i]),
		};
	}
	n = recvmmsg(s->fd, msgs, want, MSG_DONTWAIT, NULL);
	if (n <= 0)
		return n < 0 && errno != EAGAIN && errno != EINTR ? -errno : 0;
	for (int i = 0; i < n; i++) {
		uint32_t fi = s->free_stack[s->n_free - 1 - i];
		uint8_t *f = (uint8_t *)s->frame_data[fi];
		uint32_t got = msgs[i].msg_len;
		struct msghdr *mh = &msgs[i].msg_hdr;

		if (mh->msg_flags & MSG_TRUNC)
			s->truncated++;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
				uint32_t drops;
				memcpy(&drops, CMSG_DATA(c), sizeof(drops));
				s->kernel_drops = drops;  /* the kernel's running total */
			}
		if (s->udp) {
			/* Rebuild the headers the kernel consumed. */
			xevb_st16(f + 14 + 2, (uint16_t)(got + 28));
			memcpy(f + 14 + 12, &from[i].sin_addr.s_addr, 4);
			xevb_st16(f + 14 + 20, ntohs(from[i].sin_port));
			xevb_st16(f + 14 + 20 + 4, (uint16_t)(got + 8));
		}
		idx[i] = fi;
		data[i] = f;
		len[i] = got + s->hdr_room;
	}
	s->n_free -= (uint32_t)n;
	return n;
}

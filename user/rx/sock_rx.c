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
#include "base/cli.h"
#include <xevb/mep_parse.h>
#include "rx/sock_rx.h"

/* Synthetic headers in front of the data: Ethernet, and IPv4 + UDP for UDP. */
#define RAW_ROOM 14
#define UDP_ROOM (14 + 20 + 8)

/* The synthetic headers, written once: the kernel fills the rest per datagram. */
static void init_headers(uint8_t *f, uint32_t hdr_room, bool udp, uint16_t udp_port)
{
	memset(f, 0, hdr_room);
	xevb_st16(f + 12, XEVB_ETH_P_IP);
	if (udp) {
		f[14] = 0x45;
		f[14 + 9] = XEVB_IPPROTO_UDP;
		xevb_st16(f + 14 + 20 + 2, udp_port);
	}
}

static size_t big_area_bytes(uint32_t n_big)
{
	return (size_t)n_big * XEVB_SOCK_BIG_SIZE;
}

int xevb_sock_open(struct xevb_sock *s, const struct xevb_sock_cfg *cfg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	uint32_t n_idx = cfg->n_frames + cfg->n_big;
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->udp = cfg->udp;
	s->udp_port = cfg->udp_port;
	s->n_frames = cfg->n_frames;
	s->frame_size = cfg->frame_size;
	s->mtu = cfg->mtu;
	s->hdr_room = cfg->udp ? UDP_ROOM : RAW_ROOM;
	s->area = mmap(NULL, (size_t)cfg->n_frames * cfg->frame_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	s->frame_data = calloc(n_idx, sizeof(*s->frame_data));
	s->free_stack = calloc(cfg->n_frames, sizeof(*s->free_stack));
	if (s->area == MAP_FAILED || !s->frame_data || !s->free_stack) {
		if (s->area == MAP_FAILED)
			s->area = NULL;
		xevb_err("cannot allocate %u frames of %u bytes (lower --tune frames)", cfg->n_frames,
			 cfg->frame_size);
		xevb_sock_close(s);
		return -ENOMEM;
	}
	if (cfg->n_big) {
		s->big_area = mmap(NULL, big_area_bytes(cfg->n_big), PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		s->big_free = calloc(cfg->n_big, sizeof(*s->big_free));
		if (s->big_area == MAP_FAILED || !s->big_free) {
			if (s->big_area == MAP_FAILED)
				s->big_area = NULL;
			xevb_err("cannot allocate %u buffers of %u bytes for reassembled datagrams", cfg->n_big,
				 XEVB_SOCK_BIG_SIZE);
			xevb_sock_close(s);
			return -ENOMEM;
		}
		s->n_big = cfg->n_big;
	}
	for (uint32_t i = 0; i < cfg->n_frames; i++) {
		uint8_t *f = s->area + (size_t)i * cfg->frame_size;
		s->frame_data[i] = f;
		s->free_stack[s->n_free++] = cfg->n_frames - 1 - i;
		init_headers(f, s->hdr_room, cfg->udp, cfg->udp_port);
	}
	for (uint32_t i = 0; i < s->n_big; i++) {
		uint8_t *f = s->big_area + (size_t)i * XEVB_SOCK_BIG_SIZE;
		s->frame_data[cfg->n_frames + i] = f;
		s->big_free[s->n_big_free++] = cfg->n_frames + s->n_big - 1 - i;
		init_headers(f, s->hdr_room, cfg->udp, cfg->udp_port);
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
	if (cfg->rcvbuf && setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &cfg->rcvbuf, sizeof(cfg->rcvbuf)) &&
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &cfg->rcvbuf, sizeof(cfg->rcvbuf)))
		xevb_warn("cannot set the socket buffer to %d bytes: %s", cfg->rcvbuf, strerror(errno));
	if (cfg->ifname &&
	    setsockopt(s->fd, SOL_SOCKET, SO_BINDTODEVICE, cfg->ifname, (socklen_t)strlen(cfg->ifname) + 1)) {
		err = -errno;
		xevb_err("cannot bind the receive socket to %s: %s", cfg->ifname, strerror(errno));
		xevb_sock_close(s);
		return err;
	}
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
	if (s->big_area)
		munmap(s->big_area, big_area_bytes(s->n_big));
	free(s->big_free);
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

/*
 * A datagram longer than its frame went on into the big buffer big: its
 * head (the frame's bytes) goes in front, so the datagram is contiguous.
 */
static uint8_t *join_spilled(struct xevb_sock *s, const uint8_t *f, uint32_t big)
{
	uint8_t *b = (uint8_t *)s->frame_data[big];
	uint32_t head = s->frame_size - s->hdr_room;

	memcpy(b + s->hdr_room, f + s->hdr_room, head);
	s->big_copied += head;
	return b;
}

int xevb_sock_rx(struct xevb_sock *s, uint32_t *idx, const uint8_t **data, uint32_t *len)
{
	static __thread struct mmsghdr msgs[XEVB_SOCK_BATCH];
	static __thread struct iovec iov[XEVB_SOCK_BATCH][2];
	static __thread struct sockaddr_in from[XEVB_SOCK_BATCH];
	static __thread uint32_t back[XEVB_SOCK_BATCH], big_back[XEVB_SOCK_BATCH];
	uint32_t want = s->n_free < XEVB_SOCK_BATCH ? s->n_free : XEVB_SOCK_BATCH;
	uint32_t head = s->frame_size - s->hdr_room;
	uint32_t bigs = s->n_big_free < want ? s->n_big_free : want, n_back = 0, n_big_back = 0;
	int n;

	/*
	 * Where datagrams may outgrow a frame, read no more of them than there
	 * are big buffers to take their tails: a datagram read without one
	 * would be cut, while in the socket queue it waits whole.
	 */
	if (s->n_big && bigs < want)
		want = bigs;
	if (!want)
		return 0; /* every frame is held by open events: the socket queue absorbs */
	for (uint32_t i = 0; i < want; i++) {
		uint32_t fi = s->free_stack[s->n_free - 1 - i];
		iov[i][0].iov_base = (uint8_t *)s->frame_data[fi] + s->hdr_room;
		iov[i][0].iov_len = head;
		if (i < bigs) {
			/* What does not fit the frame lands where it would in a big buffer. */
			iov[i][1].iov_base =
				(uint8_t *)s->frame_data[s->big_free[s->n_big_free - 1 - i]] + s->hdr_room + head;
			iov[i][1].iov_len = XEVB_SOCK_BIG_SIZE - s->hdr_room - head;
		}
		/*
		 * No control data (the drops are read with SO_MEMINFO each tick),
		 * and a sender's address only where UDP took the header that held
		 * it: each costs the kernel a copy per datagram.
		 */
		msgs[i].msg_hdr = (struct msghdr){
			.msg_name = s->udp ? &from[i] : NULL,
			.msg_namelen = s->udp ? sizeof(from[i]) : 0,
			.msg_iov = iov[i],
			.msg_iovlen = i < bigs ? 2 : 1,
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
		uint32_t ip_len = s->udp ? got + 28 : got;

		if (mh->msg_flags & MSG_TRUNC)
			s->truncated++;
		if (ip_len > s->mtu) {
			s->ipfrag_datagrams++;
			s->ipfrag_bytes += got;
		}
		if (__builtin_expect(got > head, 0) && (uint32_t)i < bigs) {
			uint32_t bi = s->big_free[s->n_big_free - 1 - i];

			f = join_spilled(s, f, bi);
			back[n_back++] = fi; /* the frame held only the head: free again */
			fi = bi;
		} else if ((uint32_t)i < bigs) {
			big_back[n_big_back++] = s->big_free[s->n_big_free - 1 - i];
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
	/* Offered big buffers past the last message were not touched. */
	for (uint32_t i = (uint32_t)n; i < bigs; i++)
		big_back[n_big_back++] = s->big_free[s->n_big_free - 1 - i];
	s->n_free -= (uint32_t)n;
	s->n_big_free -= bigs;
	for (uint32_t i = 0; i < n_back; i++)
		s->free_stack[s->n_free++] = back[i];
	for (uint32_t i = 0; i < n_big_back; i++)
		s->big_free[s->n_big_free++] = big_back[i];
	return n;
}

// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "wire/event_codec.h"
#include "out/output_zc.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif
#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif

/* Outstanding send ids per connection, and header slots: powers of 2. */
#define ID_RING  4096u
#define N_SLOTS  1024u
#define DONE_BIT (1ull << 63)
/* A full ring waits this long in all for completions, then sends copied. */
#define WAIT_STEPS 20
#define WAIT_MS    1

struct zc_sink {
	int fd;                 /* -1: nothing to reap */
	uint32_t next;          /* the kernel's next id on this socket */
	uint32_t done;          /* ids before this one have completed */
	uint64_t ring[ID_RING]; /* id -> global send number, DONE_BIT once completed */
	uint32_t len[ID_RING];  /* id -> bytes the kernel took in that send */
};

struct xevb_zc {
	uint32_t n_sinks;
	struct zc_sink *s;
	uint64_t g; /* global sends issued, numbered from 1 */
	uint64_t w; /* every send numbered below w has completed */
	uint8_t *slots;
	size_t slot_len;
	uint64_t slot_tag[N_SLOTS];
	uint64_t since_reap;
	/* held frames, in release order: each waits for sends up to its tag */
	uint32_t *q_idx;
	uint64_t *q_tag;
	uint32_t q_cap, q_head, q_len;
	void (*release)(void *, uint32_t);
	void *ctx;
	struct xevb_zc_stats st;
};

struct xevb_zc *xevb_zc_new(uint32_t n_sinks, size_t slot_len)
{
	struct xevb_zc *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->n_sinks = n_sinks;
	z->s = calloc(n_sinks ? n_sinks : 1, sizeof(*z->s));
	z->slot_len = (slot_len + 63) & ~(size_t)63;
	z->slots = malloc(z->slot_len * N_SLOTS);
	if (!z->s || !z->slots) {
		xevb_zc_free(z);
		return NULL;
	}
	for (uint32_t i = 0; i < n_sinks; i++)
		z->s[i].fd = -1;
	z->w = 1;
	return z;
}

void xevb_zc_free(struct xevb_zc *z)
{
	if (!z)
		return;
	free(z->s);
	free(z->slots);
	free(z->q_idx);
	free(z->q_tag);
	free(z);
}

int xevb_zc_sockopt(int fd)
{
	int one = 1;

	return setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) ? -errno : 0;
}

int xevb_zc_set_release(struct xevb_zc *z, void (*fn)(void *, uint32_t), void *ctx, uint32_t max_frames)
{
	z->release = fn;
	z->ctx = ctx;
	z->q_cap = max_frames;
	z->q_idx = calloc(max_frames, sizeof(*z->q_idx));
	z->q_tag = calloc(max_frames, sizeof(*z->q_tag));
	return z->q_idx && z->q_tag ? 0 : -ENOMEM;
}

const struct xevb_zc_stats *xevb_zc_stats(const struct xevb_zc *z)
{
	return &z->st;
}

static void recompute_w(struct xevb_zc *z)
{
	uint64_t w = z->g + 1;

	for (uint32_t i = 0; i < z->n_sinks; i++) {
		struct zc_sink *s = &z->s[i];
		if (s->next != s->done) {
			uint64_t g0 = s->ring[s->done & (ID_RING - 1)] & ~DONE_BIT;
			if (g0 < w)
				w = g0;
		}
	}
	z->w = w;
}

static void release_ready(struct xevb_zc *z)
{
	while (z->q_len && z->q_tag[z->q_head] < z->w) {
		uint32_t idx = z->q_idx[z->q_head];
		z->q_head = z->q_head + 1 == z->q_cap ? 0 : z->q_head + 1;
		z->q_len--;
		z->release(z->ctx, idx);
	}
}

/* Completions of one socket; ids outside [done, next) are ignored (hostile-safe). */
static void reap_sink(struct xevb_zc *z, struct zc_sink *s)
{
	char cbuf[128];

	while (s->fd >= 0 && s->next != s->done) {
		struct msghdr msg = { .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm;

		if (recvmsg(s->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			struct sock_extended_err *e = (struct sock_extended_err *)CMSG_DATA(cm);
			uint32_t lo, hi;

			if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
				continue;
			if (e->ee_errno != 0 || e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			lo = e->ee_info;
			hi = e->ee_data;
			for (uint32_t id = lo; id - lo <= hi - lo; id++) {
				if (id - s->done >= s->next - s->done)
					continue;
				if (!(s->ring[id & (ID_RING - 1)] & DONE_BIT)) {
					s->ring[id & (ID_RING - 1)] |= DONE_BIT;
					z->st.completions++;
					/* The kernel's hint, for the whole range it reports. */
					if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) {
						z->st.copied++;
						z->st.bytes_copied += s->len[id & (ID_RING - 1)];
					}
				}
				if (id == hi)
					break;
			}
		}
		while (s->done != s->next && (s->ring[s->done & (ID_RING - 1)] & DONE_BIT))
			s->done++;
	}
}

void xevb_zc_reap(struct xevb_zc *z)
{
	for (uint32_t i = 0; i < z->n_sinks; i++)
		reap_sink(z, &z->s[i]);
	z->since_reap = 0;
	recompute_w(z);
	release_ready(z);
}

/* Reap until cond holds, waiting for the error queues at most WAIT_STEPS ms. */
static bool wait_until(struct xevb_zc *z, bool (*cond)(struct xevb_zc *, void *), void *arg)
{
	struct pollfd pfd[64];

	xevb_zc_reap(z);
	for (int k = 0; k < WAIT_STEPS && !cond(z, arg); k++) {
		uint32_t n = 0;

		z->st.waits++;
		for (uint32_t i = 0; i < z->n_sinks && n < 64; i++)
			if (z->s[i].fd >= 0 && z->s[i].next != z->s[i].done)
				pfd[n++] = (struct pollfd){ .fd = z->s[i].fd, .events = 0 };
		if (!n)
			break;
		/* The error queue shows as POLLERR, asked for or not. */
		poll(pfd, n, WAIT_MS);
		xevb_zc_reap(z);
	}
	return cond(z, arg);
}

static bool slot_free(struct xevb_zc *z, void *arg)
{
	(void)arg;
	return z->slot_tag[(z->g + 1) & (N_SLOTS - 1)] < z->w;
}

uint8_t *xevb_zc_slot(struct xevb_zc *z)
{
	uint32_t k = (uint32_t)((z->g + 1) & (N_SLOTS - 1));

	if (!slot_free(z, NULL) && !wait_until(z, slot_free, NULL))
		return NULL;
	return z->slots + (size_t)k * z->slot_len;
}

static bool ids_free(struct xevb_zc *z, void *arg)
{
	struct zc_sink *s = arg;

	(void)z;
	/* Room for a whole event even if every iovec chunk took an id. */
	return s->next - s->done + 64 < ID_RING;
}

int xevb_zc_send(struct xevb_zc *z, uint32_t sink, int fd, struct iovec *iov, size_t n, bool slot)
{
	struct zc_sink *s = &z->s[sink];
	uint64_t g;
	int flags = MSG_ZEROCOPY | MSG_NOSIGNAL;

	if (s->fd != fd) {
		/* A new connection: its ids start from 0 again. */
		s->fd = fd;
		s->next = s->done = 0;
	}
	if (!ids_free(z, s) && !wait_until(z, ids_free, s))
		flags = MSG_NOSIGNAL;
	if (!slot && flags != MSG_NOSIGNAL)
		flags = MSG_NOSIGNAL; /* headers in the shared scratch: copy */
	if (!(flags & MSG_ZEROCOPY))
		z->st.fallback++;
	g = ++z->g;
	if (slot)
		z->slot_tag[g & (N_SLOTS - 1)] = g;
	while (n) {
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = n > IOV_MAX ? IOV_MAX : n };
		ssize_t w;

		if (iov->iov_len == 0) {
			iov++;
			n--;
			continue;
		}
		w = sendmsg(fd, &msg, flags);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS && (flags & MSG_ZEROCOPY)) {
				/* optmem full of notifications: copy the rest. */
				flags &= ~MSG_ZEROCOPY;
				z->st.fallback++;
				continue;
			}
			return -errno;
		}
		if (w == 0)
			return -EIO;
		if (flags & MSG_ZEROCOPY) {
			s->ring[s->next & (ID_RING - 1)] = g;
			s->len[s->next & (ID_RING - 1)] = (uint32_t)w;
			s->next++;
			z->st.sends++;
			z->st.bytes += (uint64_t)w;
		}
		xevb_iov_advance(&iov, &n, (size_t)w);
	}
	/* Nothing outstanding before: w = g now, as it must. */
	if (++z->since_reap >= 32)
		xevb_zc_reap(z);
	return 0;
}

void xevb_zc_sink_lost(struct xevb_zc *z, uint32_t sink)
{
	struct zc_sink *s = &z->s[sink];

	s->done = s->next;
	s->fd = -1;
	recompute_w(z);
	release_ready(z);
}

bool xevb_zc_hold(struct xevb_zc *z, uint32_t frame_idx)
{
	uint32_t tail;

	if (z->g < z->w || !z->q_cap)
		return false; /* nothing in flight: release now */
	if (z->q_len == z->q_cap) {
		/* Cannot happen (a frame is held once); never lose one. */
		xevb_zc_drain(z, 100);
		return false;
	}
	tail = z->q_head + z->q_len;
	if (tail >= z->q_cap)
		tail -= z->q_cap;
	z->q_idx[tail] = frame_idx;
	z->q_tag[tail] = z->g;
	z->q_len++;
	z->st.held++;
	if (z->q_len > z->q_cap / 4)
		xevb_zc_reap(z);
	return true;
}

static bool all_done(struct xevb_zc *z, void *arg)
{
	(void)arg;
	return z->w > z->g;
}

void xevb_zc_drain(struct xevb_zc *z, int timeout_ms)
{
	for (int t = 0; t < timeout_ms / (WAIT_STEPS * WAIT_MS) + 1 && !all_done(z, NULL); t++)
		wait_until(z, all_done, NULL);
	/* Whatever is still in flight goes with its connection: stop waiting. */
	for (uint32_t i = 0; i < z->n_sinks; i++)
		z->s[i].done = z->s[i].next;
	recompute_w(z);
	release_ready(z);
}

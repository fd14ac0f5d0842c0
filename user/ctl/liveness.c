// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/log.h"
#include "ctl/liveness.h"

/*
 * The DFM asks (two handshakes) at most every --dead-ms while a builder is
 * silent, and a stalled builder accepts nothing: a full queue would drop
 * the next SYNs, and no answer is a death. SOMAXCONN (4096 on this kernel)
 * lasts 400 s of a stall at --dead-ms 200; the builder empties it every
 * 100 ms when it runs.
 */
#define LISTEN_BACKLOG SOMAXCONN
#define ACCEPT_MAX     256

int xevb_live_listen(uint32_t addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons(port) };
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, LISTEN_BACKLOG)) {
		xevb_warn(
			"control port %u: no TCP listener beside it (%s): the DFM cannot tell this builder "
			"stalled from gone, and takes it for dead after --dead-ms of silence; free TCP port %u",
			port, strerror(errno), port);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

void xevb_live_accept(int fd)
{
	for (int i = 0; fd >= 0 && i < ACCEPT_MAX; i++) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			break;
		close(c);
	}
}

void xevb_live_check_init(struct xevb_live_check *c)
{
	for (int i = 0; i < XEVB_LIVE_TRIES; i++)
		c->fd[i] = -1;
	c->t0 = 0;
	c->refused = false;
}

void xevb_live_check_end(struct xevb_live_check *c)
{
	for (int i = 0; i < XEVB_LIVE_TRIES; i++)
		if (c->fd[i] >= 0)
			close(c->fd[i]);
	xevb_live_check_init(c);
}

/* One handshake under way: its socket, or -1 (the refusal or failure in *err). */
static int connect_one(const struct sockaddr_in *to, int *err)
{
	/* No lingering: a check's socket is closed with a reset, leaving no TIME_WAIT behind. */
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	*err = 0;
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) == 0 || errno == EINPROGRESS)
		return fd;
	*err = errno;
	close(fd);
	return -1;
}

bool xevb_live_check_start(struct xevb_live_check *c, const struct sockaddr_in *to, uint64_t now)
{
	int made = 0, err;

	xevb_live_check_end(c);
	for (int i = 0; i < XEVB_LIVE_TRIES; i++) {
		c->fd[i] = connect_one(to, &err);
		made += c->fd[i] >= 0 || err == ECONNREFUSED;
		c->refused |= err == ECONNREFUSED;
	}
	c->t0 = now ? now : 1;
	return made > 0;
}

static enum xevb_live verdict(int err)
{
	if (!err)
		return XEVB_LIVE_UP;
	return err == ECONNREFUSED ? XEVB_LIVE_REFUSED : XEVB_LIVE_NO_ANSWER;
}

enum xevb_live xevb_live_check_poll(struct xevb_live_check *c, uint64_t now, uint64_t timeout_ns)
{
	struct pollfd p[XEVB_LIVE_TRIES];
	enum xevb_live v = XEVB_LIVE_PENDING;
	int n = 0, failed = 0;

	if (c->refused)
		v = XEVB_LIVE_REFUSED;
	for (int i = 0; i < XEVB_LIVE_TRIES; i++)
		if (c->fd[i] >= 0)
			p[n++] = (struct pollfd){ .fd = c->fd[i], .events = POLLOUT };
	if (v == XEVB_LIVE_PENDING && n && poll(p, (nfds_t)n, 0) > 0) {
		for (int i = 0; i < n && v != XEVB_LIVE_UP; i++) {
			int err = 0;
			socklen_t len = sizeof(err);
			if (!(p[i].revents & (POLLOUT | POLLERR | POLLHUP)))
				continue;
			if (getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &len))
				err = errno;
			/* One answer of the host's decides; a failure of ours waits for the other try. */
			if (!err || err == ECONNREFUSED)
				v = verdict(err);
			else
				failed++;
		}
	}
	if (v == XEVB_LIVE_PENDING && (failed == n || now - c->t0 >= timeout_ns))
		v = XEVB_LIVE_NO_ANSWER;
	if (v != XEVB_LIVE_PENDING)
		xevb_live_check_end(c);
	return v;
}

const char *xevb_live_name(enum xevb_live v)
{
	static const char *const names[] = { "pending", "up", "refused", "no_answer" };
	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

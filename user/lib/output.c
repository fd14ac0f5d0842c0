// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xevb/cli.h>
#include <xevb/event_codec.h>
#include <xevb/output.h>
#include <xevb/output_zc.h>
#include "tcp_acked.h"

#define RETRY_NS 1000000000ull
/* Events tracked in flight per connection (8 B each): far more than a 4 MiB send buffer holds. */
#define ENDS_CAP (1u << 17)

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	unsigned long port;
	char *end;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, colon - s);
	host[colon - s] = 0;
	port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port > 65535)
		return -1;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static uint64_t pacing_Bps;

void xevb_output_set_pacing(uint64_t bytes_per_s)
{
	pacing_Bps = bytes_per_s;
}

static bool zerocopy;

void xevb_output_set_zerocopy(bool on)
{
	zerocopy = on;
}

static int try_connect(struct xevb_sink_conn *c)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	int sndbuf = 4 << 20;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (pacing_Bps && setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &pacing_Bps, sizeof(pacing_Bps)))
		xevb_warn("farm node %s: SO_MAX_PACING_RATE: %s (sending unpaced)", c->name, strerror(errno));
	if (zerocopy && xevb_zc_sockopt(fd))
		xevb_warn("farm node %s: SO_ZEROCOPY: %s (MSG_ZEROCOPY needs kernel 4.14+; sending "
			  "copied)", c->name, strerror(errno));
	if (connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr))) {
		int err = -errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	c->conn_bytes = 0;
	c->ends_head = c->ends_n = 0;
	c->ack_base = 0;
	/* Whatever the kernel counts for the handshake is not ours. */
	xevb_tcp_bytes_acked(fd, &c->ack_base);
	if (!c->ends)
		c->ends = malloc(sizeof(*c->ends) * ENDS_CAP);
	return 0;
}

/* Forget the events the peer's TCP has acknowledged. */
static void ends_trim(struct xevb_sink_conn *c)
{
	uint64_t acked;

	if (!c->ends_n || xevb_tcp_bytes_acked(c->fd, &acked))
		return;
	acked -= c->ack_base;
	while (c->ends_n && c->ends[c->ends_head] <= acked) {
		c->ends_head = (c->ends_head + 1) % ENDS_CAP;
		c->ends_n--;
	}
}

static void ends_push(struct xevb_output *o, struct xevb_sink_conn *c, uint64_t end)
{
	if (c->ends_n == ENDS_CAP)
		ends_trim(c);
	if (!c->ends || c->ends_n == ENDS_CAP) {
		o->st.ack_untracked++;
		if (!c->ends)
			return;
		c->ends_head = (c->ends_head + 1) % ENDS_CAP;
		c->ends_n--;
	}
	c->ends[(c->ends_head + c->ends_n) % ENDS_CAP] = end;
	c->ends_n++;
}

/* The connection is gone: what its peer had not acknowledged is lost with it. */
static void conn_fail(struct xevb_output *o, struct xevb_sink_conn *c, int err)
{
	uint32_t lost;
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (!err && !getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len))
		err = soerr;
	ends_trim(c);
	lost = c->ends_n;
	c->lost_in_flight += lost;
	o->st.lost_in_flight += lost;
	if (err == ECONNRESET)
		o->st.peer_resets++;
	xevb_warn("farm node %s: %s; dropping the connection (%u event(s) written but not acknowledged "
		  "by it counted lost_in_flight%s); reconnecting every second", c->name,
		  err ? strerror(err) : "connection closed by the farm node", lost,
		  err == ECONNRESET ? "; it reset the connection: it died with acknowledged data it had "
				      "not read, lost there" : "");
	/* What zerocopy sends it had in flight are no longer waited for. */
	if (o->zc)
		xevb_zc_sink_lost(o->zc, (uint32_t)(c - o->sinks));
	close(c->fd);
	c->fd = -1;
	c->ends_n = 0;
	c->failures++;
	c->next_retry_ns = xevb_now_ns() + RETRY_NS;
}

/* Closed or reset by the peer (a dead farm node says so only this way). */
static bool conn_gone(const struct xevb_sink_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLERR | POLLHUP));
}

int xevb_output_open(struct xevb_output *o, const char *const *sinks, uint32_t n_sinks,
		     const char *file, uint32_t max_sources, uint64_t connect_wait_ns)
{
	uint64_t deadline = xevb_now_ns() + connect_wait_ns;

	memset(o, 0, sizeof(*o));
	o->file_fd = -1;
	if (n_sinks > XEVB_MAX_SINKS) {
		xevb_err("at most %d farm nodes", XEVB_MAX_SINKS);
		return -EINVAL;
	}
	o->scratch_len = XEVB_EVT_SCRATCH_MAX(max_sources);
	o->iov_max = XEVB_EVT_IOV_MAX(max_sources);
	o->scratch = malloc(o->scratch_len);
	o->iov = calloc(o->iov_max, sizeof(*o->iov));
	if (!o->scratch || !o->iov)
		return -ENOMEM;
	o->discard = !n_sinks && !file;
	if (zerocopy && n_sinks) {
		o->zc = xevb_zc_new(n_sinks, o->scratch_len);
		if (!o->zc)
			return -ENOMEM;
	}
	if (file) {
		o->file_fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (o->file_fd < 0) {
			int err = -errno;
			xevb_err("cannot write %s: %s", file, strerror(errno));
			return err;
		}
	}
	for (uint32_t i = 0; i < n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];
		c->fd = -1;
		snprintf(c->name, sizeof(c->name), "%s", sinks[i]);
		if (parse_addr(sinks[i], &c->addr)) {
			xevb_err("--sink '%s' is not ADDR:PORT (e.g. 198.18.3.1:5000)", sinks[i]);
			return -EINVAL;
		}
	}
	o->n_sinks = n_sinks;
	/* Farm nodes may start a moment after us: wait for each, bounded. */
	for (uint32_t i = 0; i < n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];
		int err;
		while ((err = try_connect(c)) && xevb_now_ns() < deadline)
			nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
		if (err)
			xevb_warn("farm node %s not reachable (%s); will retry every second", c->name,
				  strerror(-err));
		else
			xevb_info("connected to farm node %s", c->name);
	}
	return 0;
}

int xevb_output_set_release(struct xevb_output *o, void (*fn)(void *, uint32_t), void *ctx,
			    uint32_t max_frames)
{
	return o->zc ? xevb_zc_set_release(o->zc, fn, ctx, max_frames) : 0;
}

bool xevb_output_hold(struct xevb_output *o, uint32_t frame_idx)
{
	return o->zc && xevb_zc_hold(o->zc, frame_idx);
}

void xevb_output_drain(struct xevb_output *o)
{
	const struct xevb_zc_stats *z;

	if (!o->zc)
		return;
	xevb_zc_drain(o->zc, 1000);
	z = xevb_zc_stats(o->zc);
	xevb_info("MSG_ZEROCOPY: %llu sends, %llu completed (%llu of them copied by the kernel after "
		  "all), %llu events sent copied, %llu waits, %llu frame releases deferred",
		  (unsigned long long)z->sends, (unsigned long long)z->completions,
		  (unsigned long long)z->copied, (unsigned long long)z->fallback,
		  (unsigned long long)z->waits, (unsigned long long)z->held);
}

void xevb_output_close(struct xevb_output *o)
{
	if (o->zc) {
		xevb_zc_free(o->zc);
		o->zc = NULL;
	}
	for (uint32_t i = 0; i < o->n_sinks; i++) {
		if (o->sinks[i].fd >= 0)
			close(o->sinks[i].fd);
		free(o->sinks[i].ends);
		o->sinks[i].ends = NULL;
	}
	if (o->file_fd >= 0)
		close(o->file_fd);
	free(o->scratch);
	free(o->iov);
	o->scratch = NULL;
	o->iov = NULL;
	o->n_sinks = 0;
	o->file_fd = -1;
}

uint32_t xevb_output_connected(const struct xevb_output *o)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < o->n_sinks; i++)
		n += o->sinks[i].fd >= 0;
	return n;
}

void xevb_output_maintain(struct xevb_output *o, uint64_t now_ns)
{
	if (o->zc)
		xevb_zc_reap(o->zc);
	for (uint32_t i = 0; i < o->n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];
		if (c->fd >= 0) {
			if (conn_gone(c))
				conn_fail(o, c, 0);
			else
				ends_trim(c);
		}
		if (c->fd >= 0 || now_ns < c->next_retry_ns)
			continue;
		if (try_connect(c) == 0) {
			xevb_info("%sconnected to farm node %s", c->failures ? "re" : "", c->name);
			if (c->failures) {
				c->reconnects++;
				o->st.reconnects++;
			}
		} else {
			c->next_retry_ns = now_ns + RETRY_NS;
		}
	}
}

void xevb_output_settle(struct xevb_output *o, uint64_t wait_ns)
{
	uint64_t deadline = xevb_now_ns() + wait_ns;

	for (uint32_t i = 0; i < o->n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];
		if (c->fd < 0)
			continue;
		for (;;) {
			ends_trim(c);
			if (!c->ends_n)
				break;
			if (conn_gone(c) || xevb_now_ns() >= deadline) {
				conn_fail(o, c, conn_gone(c) ? 0 : ETIMEDOUT);
				break;
			}
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		}
	}
}

void xevb_output_emit_run(struct xevb_output *o, const struct xevb_event *first,
			  uint32_t n_events, uint64_t wire_bytes)
{
	(void)first;
	o->st.events += n_events;
	o->st.bytes += wire_bytes;
}

void xevb_output_emit(struct xevb_output *o, const struct xevb_event *ev)
{
	size_t total;
	int n, err, fd = -1;
	struct xevb_sink_conn *c = NULL;
	bool zc_slot;

	if (o->discard) {
		o->st.events++;
		o->st.bytes += xevb_event_wire_size_fast(ev);   /* no walk over a cold row */
		return;
	}
	{
		/* Zerocopy: headers must outlive the call, as the payloads do. */
		uint8_t *slot = o->zc && o->file_fd < 0 ? xevb_zc_slot(o->zc) : NULL;

		zc_slot = slot != NULL;
		n = xevb_event_encode(ev, xevb_realtime_ns(), slot ? slot : o->scratch, o->scratch_len,
				      o->iov, o->iov_max, &total);
	}
	if (n < 0) {
		o->st.encode_errors++;
		return;
	}
	if (o->file_fd >= 0) {
		fd = o->file_fd;
	} else {
		for (uint32_t k = 0; k < o->n_sinks; k++) {
			struct xevb_sink_conn *s = &o->sinks[(o->rr + k) % o->n_sinks];
			if (s->fd >= 0) {
				c = s;
				o->rr = (o->rr + k + 1) % o->n_sinks;
				break;
			}
		}
		if (!c) {
			o->st.dropped_no_sink++;
			return;
		}
		fd = c->fd;
	}
	if (o->zc && c)
		err = xevb_zc_send(o->zc, (uint32_t)(c - o->sinks), fd, o->iov, (size_t)n, zc_slot);
	else
		err = xevb_writev_all(fd, o->iov, (size_t)n);
	if (err) {
		o->st.dropped_error++;
		if (c)
			conn_fail(o, c, -err);
		return;
	}
	o->st.events++;
	o->st.bytes += total;
	if (c) {
		c->events++;
		c->bytes += total;
		c->conn_bytes += total;
		ends_push(o, c, c->conn_bytes);
	}
}

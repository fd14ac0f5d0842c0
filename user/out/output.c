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
#include "base/cli.h"
#include "wire/event_codec.h"
#include "out/output.h"
#include "out/output_file.h"
#include "out/output_zc.h"
#include "out/tcp_acked.h"

#define RETRY_NS 1000000000ull
/* xevb_output_settle: the whole drain at most this many stall bounds. */
#define SETTLE_CAP 15u
/*
 * A farm node's send buffer, and how full it gets before a send: a few
 * hundred L1 events go to the kernel in one call instead of one writev of
 * ~250 iovecs each.
 */
#define SEND_BUF XEVB_OUT_SEND_BUF
#define FLUSH_AT (64u << 10)
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

static int try_connect(const struct xevb_output *o, struct xevb_sink_conn *c)
{
	uint64_t pacing_Bps = o->opts.pacing_Bps;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	int sndbuf = 4 << 20;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (pacing_Bps && setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &pacing_Bps, sizeof(pacing_Bps)))
		xevb_warn("farm node %s: SO_MAX_PACING_RATE: %s (sending unpaced)", c->name, strerror(errno));
	if (o->opts.zerocopy && xevb_zc_sockopt(fd))
		xevb_warn(
			"farm node %s: SO_ZEROCOPY: %s (MSG_ZEROCOPY needs kernel 4.14+; sending "
			"copied)",
			c->name, strerror(errno));
	if (connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr))) {
		int err = -errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	c->conn_bytes = c->written_end = 0;
	c->ends_head = c->ends_n = c->ends_unsent = 0;
	c->buf_head = c->buf_len = 0;
	c->blocked = false;
	c->ack_base = 0;
	/* Whatever the kernel counts for the handshake is not ours. */
	xevb_tcp_bytes_acked(fd, &c->ack_base);
	return 0;
}

/* The MSG_ZEROCOPY byte counts into the output's counters (after sends and reaps). */
static void zc_counted(struct xevb_output *o)
{
	const struct xevb_zc_stats *z = xevb_zc_stats(o->zc);

	o->st.bytes_zerocopy = z->bytes;
	o->st.bytes_kernel_copied = z->bytes_copied;
}

/* Forget the events the peer's TCP has acknowledged. */
static void ends_trim(struct xevb_sink_conn *c)
{
	uint64_t acked;

	if (!c->ends_n || xevb_tcp_bytes_acked(c->fd, &acked))
		return;
	acked -= c->ack_base;
	while (c->ends_n > c->ends_unsent && c->ends[c->ends_head] <= acked) {
		c->ends_head = (c->ends_head + 1) % ENDS_CAP;
		c->ends_n--;
	}
}

static void ends_push(struct xevb_output *o, struct xevb_sink_conn *c, uint64_t end)
{
	if (c->ends_n == ENDS_CAP)
		ends_trim(c);
	/* Only a written event may be forgotten (one still buffered is always tracked). */
	if (c->ends_n == ENDS_CAP && c->ends_n > c->ends_unsent) {
		o->st.ack_untracked++;
		c->ends_head = (c->ends_head + 1) % ENDS_CAP;
		c->ends_n--;
	}
	c->ends[(c->ends_head + c->ends_n) % ENDS_CAP] = end;
	c->ends_n++;
	c->ends_unsent++;
}

static size_t conn_unsent(const struct xevb_sink_conn *c)
{
	return c->buf_len - c->buf_head;
}

/* Events whose last byte the kernel has now taken: written whole. */
static void mark_written(struct xevb_output *o, struct xevb_sink_conn *c)
{
	while (c->ends_unsent) {
		uint64_t end = c->ends[(c->ends_head + c->ends_n - c->ends_unsent) % ENDS_CAP];
		uint64_t bytes = end - c->written_end;

		if (end > c->conn_bytes)
			break;
		c->written_end = end;
		c->ends_unsent--;
		c->events++;
		c->bytes += bytes;
		o->st.events++;
		o->st.bytes += bytes;
	}
}

/* The connection is gone: what its peer had not acknowledged is lost with it. */
static void conn_fail(struct xevb_output *o, struct xevb_sink_conn *c, int err)
{
	uint32_t lost, unsent;
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (!err && !getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len))
		err = soerr;
	mark_written(o, c);
	ends_trim(c);
	lost = c->ends_n - c->ends_unsent;
	unsent = c->ends_unsent;
	c->lost_in_flight += lost;
	o->st.lost_in_flight += lost;
	/* Still in our buffer (or handed over in part): never written whole. */
	o->st.dropped_error += unsent;
	if (err == ECONNRESET)
		o->st.peer_resets++;
	xevb_warn(
		"farm node %s: %s; dropping the connection (%u event(s) written but not acknowledged "
		"by it counted lost_in_flight, %u not yet written counted dropped_error%s); reconnecting "
		"every second",
		c->name, err ? strerror(err) : "connection closed by the farm node", lost, unsent,
		err == ECONNRESET ? "; it reset the connection: it died with acknowledged data it "
				    "had not read, lost there" :
				    "");
	/* What zerocopy sends it had in flight are no longer waited for. */
	if (o->zc)
		xevb_zc_sink_lost(o->zc, (uint32_t)(c - o->sinks));
	close(c->fd);
	c->fd = -1;
	c->ends_n = c->ends_unsent = 0;
	c->buf_head = c->buf_len = 0;
	c->failures++;
	c->next_retry_ns = xevb_now_ns() + RETRY_NS;
}

/* Closed or reset by the peer (a dead farm node says so only this way). */
static bool conn_gone(const struct xevb_sink_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLERR | POLLHUP));
}

/*
 * Hand the kernel what it takes of the buffer now. Never waits
 * (MSG_DONTWAIT): a full socket marks the connection blocked until the
 * next batch; an error fails it (counted there).
 */
static void conn_send(struct xevb_output *o, struct xevb_sink_conn *c, int flags)
{
	while (c->buf_head < c->buf_len) {
		size_t left = c->buf_len - c->buf_head;
		ssize_t w = send(c->fd, c->buf + c->buf_head, left, flags | MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->blocked = true;
			break;
		}
		if (w <= 0) {
			conn_fail(o, c, w < 0 ? errno : EIO);
			return;
		}
		c->buf_head += (uint32_t)w;
		c->conn_bytes += (uint64_t)w;
		if ((size_t)w < left && (flags & MSG_DONTWAIT)) {
			c->blocked = true; /* the socket is full: the next try is next batch */
			break;
		}
	}
	if (c->buf_head == c->buf_len)
		c->buf_head = c->buf_len = 0;
	mark_written(o, c);
}

/* Room for need more bytes, sending (once a batch) and compacting for it. */
static bool conn_room(struct xevb_output *o, struct xevb_sink_conn *c, size_t need)
{
	size_t unsent;

	if (c->fd < 0)
		return false;
	if (SEND_BUF - c->buf_len >= need)
		return true;
	if (!c->blocked)
		conn_send(o, c, MSG_DONTWAIT);
	if (c->fd < 0)
		return false;
	unsent = conn_unsent(c);
	if (SEND_BUF - unsent < need)
		return false;
	if (c->buf_head) {
		memmove(c->buf, c->buf + c->buf_head, unsent);
		c->buf_head = 0;
		c->buf_len = (uint32_t)unsent;
	}
	return true;
}

/* The event's bytes are at the buffer's end now: track it, send at FLUSH_AT. */
static void conn_queued(struct xevb_output *o, struct xevb_sink_conn *c, size_t bytes)
{
	c->buf_len += (uint32_t)bytes;
	ends_push(o, c, c->conn_bytes + conn_unsent(c));
	if (conn_unsent(c) >= FLUSH_AT && !c->blocked)
		conn_send(o, c, MSG_DONTWAIT);
}

/*
 * Blocking, as before batching (events over SEND_BUF, MSG_ZEROCOPY): what
 * is buffered goes first, then iov. -errno: the connection failed and the
 * event is counted dropped_error.
 */
static int conn_write_through(struct xevb_output *o, struct xevb_sink_conn *c, struct iovec *iov, size_t n,
			      size_t total, bool zc_slot)
{
	int err = 0;

	if (conn_unsent(c))
		conn_send(o, c, 0);
	if (c->fd < 0)
		err = -EPIPE;
	else if (o->zc) {
		err = xevb_zc_send(o->zc, (uint32_t)(c - o->sinks), c->fd, iov, n, zc_slot);
		zc_counted(o);
	} else
		err = xevb_writev_all(c->fd, iov, n);
	if (err) {
		o->st.dropped_error++;
		if (c->fd >= 0)
			conn_fail(o, c, -err);
		return err;
	}
	c->conn_bytes += total;
	ends_push(o, c, c->conn_bytes);
	mark_written(o, c);
	return 0;
}

int xevb_output_open(struct xevb_output *o, const struct xevb_output_opts *opts)
{
	const char *const *sinks = opts->sinks;
	const struct xevb_out_file *file = opts->file;
	uint32_t n_sinks = opts->n_sinks, max_sources = opts->max_sources;
	uint64_t deadline = xevb_now_ns() + opts->connect_wait_ns;
	int err;

	memset(o, 0, sizeof(*o));
	o->opts = *opts;
	if (n_sinks > XEVB_MAX_SINKS) {
		xevb_err("at most %d farm nodes", XEVB_MAX_SINKS);
		return -EINVAL;
	}
	o->scratch_len = XEVB_EVT_SCRATCH_MAX(max_sources);
	o->iov_max = XEVB_EVT_IOV_MAX_SEG(max_sources); /* segments: a payload may be many pieces */
	o->scratch = malloc(o->scratch_len);
	o->iov = calloc(o->iov_max, sizeof(*o->iov));
	if (!o->scratch || !o->iov)
		return -ENOMEM;
	o->discard = !n_sinks && !file;
	if (opts->zerocopy && n_sinks) {
		o->zc = xevb_zc_new(n_sinks, o->scratch_len);
		if (!o->zc)
			return -ENOMEM;
	}
	if (file && (err = xevb_outfile_open(o, file)))
		return err;
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
	for (uint32_t i = 0; i < n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];
		c->ends = malloc(sizeof(*c->ends) * ENDS_CAP);
		c->buf = o->zc ? NULL : malloc(SEND_BUF);
		if (!c->ends || (!o->zc && !c->buf))
			return -ENOMEM;
	}
	/* Farm nodes may start a moment after us: wait for each, bounded. */
	for (uint32_t i = 0; i < n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];
		while ((err = try_connect(o, c)) && xevb_now_ns() < deadline)
			nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
		if (err)
			xevb_warn("farm node %s not reachable (%s); will retry every second", c->name,
				  strerror(-err));
		else
			xevb_info("connected to farm node %s", c->name);
	}
	return 0;
}

int xevb_output_set_release(struct xevb_output *o, void (*fn)(void *, uint32_t), void *ctx, uint32_t max_frames)
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
	zc_counted(o);
	z = xevb_zc_stats(o->zc);
	xevb_info(
		"MSG_ZEROCOPY: %llu sends, %llu completed (%llu of them copied by the kernel after "
		"all), %llu events sent copied, %llu waits, %llu frame releases deferred",
		(unsigned long long)z->sends, (unsigned long long)z->completions, (unsigned long long)z->copied,
		(unsigned long long)z->fallback, (unsigned long long)z->waits, (unsigned long long)z->held);
}

/* The connections and buffers; the run file is the callers'. */
static void close_conns(struct xevb_output *o)
{
	if (o->zc) {
		xevb_zc_free(o->zc);
		o->zc = NULL;
	}
	for (uint32_t i = 0; i < o->n_sinks; i++) {
		if (o->sinks[i].fd >= 0)
			close(o->sinks[i].fd);
		free(o->sinks[i].ends);
		free(o->sinks[i].buf);
		o->sinks[i].ends = NULL;
		o->sinks[i].buf = NULL;
	}
	free(o->scratch);
	free(o->iov);
	o->scratch = NULL;
	o->iov = NULL;
	o->n_sinks = 0;
}

void xevb_output_close(struct xevb_output *o)
{
	close_conns(o);
	if (o->fw)
		xevb_outfile_close(o, false);
}

void xevb_output_close_inherited(struct xevb_output *o)
{
	close_conns(o);
	/* The builder's writer: not flushed, not finished, not freed here (its memory goes with us). */
	o->fw = NULL;
}

void xevb_output_remove_empty_file(struct xevb_output *o)
{
	if (o->fw)
		xevb_outfile_close(o, true);
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
	/* Events that came before a quiet spell reach the file within a second. */
	if (o->fw)
		xevb_outfile_flush(o, xevb_realtime_ns());
	if (o->zc) {
		xevb_zc_reap(o->zc);
		zc_counted(o);
	}
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
		if (try_connect(o, c) == 0) {
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

/* What a connection still owes at stop: bytes unsent plus events unacknowledged. */
static uint64_t conn_owed(const struct xevb_sink_conn *c)
{
	return conn_unsent(c) + c->ends_n;
}

void xevb_output_settle(struct xevb_output *o, uint64_t wait_ns)
{
	/*
	 * wait_ns bounds a stall, not the drain: a farm node that keeps taking
	 * what we owe (slow, on a loaded host) gets the time it needs, up to
	 * SETTLE_CAP stalls' worth in all; one that stops for wait_ns loses the rest.
	 */
	uint64_t cap = xevb_now_ns() + SETTLE_CAP * wait_ns;

	for (uint32_t i = 0; i < o->n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];
		uint64_t owed = UINT64_MAX, deadline = 0;

		if (c->fd < 0)
			continue;
		for (;;) {
			uint64_t now;

			if (conn_unsent(c))
				conn_send(o, c, MSG_DONTWAIT);
			if (c->fd < 0)
				break;
			ends_trim(c);
			if (!c->ends_n)
				break;
			now = xevb_now_ns();
			if (conn_owed(c) < owed) {
				owed = conn_owed(c);
				deadline = now + wait_ns < cap ? now + wait_ns : cap;
			}
			if (conn_gone(c) || now >= deadline) {
				conn_fail(o, c, conn_gone(c) ? 0 : ETIMEDOUT);
				break;
			}
			if (conn_unsent(c))
				poll(&(struct pollfd){ .fd = c->fd, .events = POLLOUT }, 1, 10);
			else
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		}
	}
}

void xevb_output_flush(struct xevb_output *o)
{
	/* Completions reaped while frames were held count here too. */
	if (o->zc)
		zc_counted(o);
	for (uint32_t i = 0; i < o->n_sinks; i++) {
		struct xevb_sink_conn *c = &o->sinks[i];

		c->blocked = false;
		if (c->fd >= 0 && conn_unsent(c))
			conn_send(o, c, MSG_DONTWAIT);
	}
}

uint64_t xevb_output_backlog_bytes(const struct xevb_output *o)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < o->n_sinks; i++)
		n += conn_unsent(&o->sinks[i]);
	return n;
}

uint64_t xevb_output_backlog_events(const struct xevb_output *o)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < o->n_sinks; i++)
		n += o->sinks[i].ends_unsent;
	return n;
}

void xevb_output_emit_run(struct xevb_output *o, const struct xevb_event *first, uint32_t n_events,
			  uint64_t wire_bytes)
{
	(void)first;
	o->st.events += n_events;
	o->st.bytes += wire_bytes;
}

/* Encode into the buffer of c (room checked). 0, or -errno (counted). */
static int emit_buffered(struct xevb_output *o, struct xevb_sink_conn *c, const struct xevb_event *ev)
{
	size_t total;
	int err =
		xevb_event_encode_into(ev, xevb_realtime_ns(), c->buf + c->buf_len, SEND_BUF - c->buf_len, &total);

	if (err) {
		o->st.encode_errors++;
		return err;
	}
	o->st.bytes_copied += total;
	conn_queued(o, c, total);
	return 0;
}

/*
 * Encoded as iovecs and written at once: to the run file (c NULL; the
 * writer gathers events and writes them in large pieces), or through c.
 */
static int emit_iov(struct xevb_output *o, struct xevb_sink_conn *c, const struct xevb_event *ev)
{
	/* Zerocopy: headers must outlive the call, as the payloads do. */
	uint8_t *slot = o->zc && c ? xevb_zc_slot(o->zc) : NULL;
	uint64_t now = xevb_realtime_ns();
	size_t total;
	int n = xevb_event_encode(ev, now, slot ? slot : o->scratch, o->scratch_len, o->iov, o->iov_max, &total);

	if (n < 0) {
		o->st.encode_errors++;
		return n;
	}
	if (c)
		return conn_write_through(o, c, o->iov, (size_t)n, total, slot != NULL);
	return xevb_outfile_write(o, o->iov, n, total, now);
}

static bool through_buffer(const struct xevb_output *o, size_t need)
{
	return !o->zc && need <= SEND_BUF;
}

/* An event for a farm node not connected: counted, not sent. */
static int drop_no_sink(struct xevb_output *o)
{
	o->st.dropped_no_sink++;
	return -ENOTCONN;
}

/* An event with no room in c's send buffer: its connection failed meanwhile, or the buffer is full. */
static int drop_no_room(struct xevb_output *o, const struct xevb_sink_conn *c)
{
	if (c->fd < 0)
		return drop_no_sink(o);
	o->st.dropped_backlog++;
	return -ENOBUFS;
}

bool xevb_output_has_room(struct xevb_output *o, uint32_t k, size_t bytes)
{
	struct xevb_sink_conn *c = &o->sinks[k];

	return c->fd >= 0 && (!through_buffer(o, bytes) || conn_room(o, c, bytes));
}

int xevb_output_emit_to(struct xevb_output *o, uint32_t k, const struct xevb_event *ev)
{
	struct xevb_sink_conn *c = &o->sinks[k];
	size_t need = xevb_event_wire_size_fast(ev);

	if (!through_buffer(o, need)) {
		if (c->fd < 0)
			return drop_no_sink(o);
		return emit_iov(o, c, ev);
	}
	if (!conn_room(o, c, need))
		return drop_no_room(o, c);
	return emit_buffered(o, c, ev);
}

int xevb_output_write_to(struct xevb_output *o, uint32_t k, const uint8_t *event, size_t len)
{
	struct xevb_sink_conn *c = &o->sinks[k];

	if (c->fd < 0)
		return drop_no_sink(o);
	if (!through_buffer(o, len)) {
		struct iovec iov = { (void *)event, len };
		return conn_write_through(o, c, &iov, 1, len, false);
	}
	if (!conn_room(o, c, len))
		return drop_no_room(o, c);
	memcpy(c->buf + c->buf_len, event, len);
	o->st.bytes_copied += len;
	conn_queued(o, c, len);
	return 0;
}

void xevb_output_emit(struct xevb_output *o, const struct xevb_event *ev)
{
	size_t need;
	bool any = false;

	if (o->discard) {
		o->st.events++;
		o->st.bytes += xevb_event_wire_size_fast(ev); /* no walk over a cold row */
		return;
	}
	if (o->fw) {
		emit_iov(o, NULL, ev);
		return;
	}
	/* Round robin over the farm nodes connected and with room (no division: per event). */
	need = xevb_event_wire_size_fast(ev);
	for (uint32_t k = 0, i = o->rr; k < o->n_sinks; k++, i = i + 1 == o->n_sinks ? 0 : i + 1) {
		struct xevb_sink_conn *c = &o->sinks[i];

		if (c->fd < 0)
			continue;
		any = true;
		if (through_buffer(o, need) && !conn_room(o, c, need))
			continue;
		o->rr = i + 1 == o->n_sinks ? 0 : i + 1;
		if (through_buffer(o, need))
			emit_buffered(o, c, ev);
		else
			emit_iov(o, c, ev);
		return;
	}
	if (any && xevb_output_connected(o))
		o->st.dropped_backlog++;
	else
		o->st.dropped_no_sink++;
}

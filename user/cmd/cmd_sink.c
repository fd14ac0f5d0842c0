// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb sink: a farm-node emulator. Takes built events from any number of
 * builder connections (or from a file written by `xevb build --output`),
 * checks each one strictly (format, CRC-32C, emulator content, duplicate
 * delivery) and counts what it saw. Every byte received is hostile: a
 * broken stream costs its connection and a counted error, never the sink.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/cli.h"
#include "ctl/ctl_sock.h"
#include "wire/event_codec.h"
#include "evb/evid_window.h"
#include "base/lat_hist.h"
#include "ops/metrics.h"
#include "base/notify.h"
#include "base/probes.h"
#include "ctl/runcfg.h"
#include "cmd/cmds.h"
#include "emu/sink.h"
#include "ctl/sink_ctl.h"
#include "emu/sink_runfile.h"

/* Error kinds beyond the decoder's own. */
enum {
	SE_DUP = XEVB_EVT_E__COUNT, /* an event id delivered twice in the run */
	SE_SOURCES,                 /* n_expected differs from --expect-sources */
	SE_READ,                    /* the connection or file failed */
	SE_BUFFER,                  /* an event would take the buffers past --max-buffer-total */
	SE_STALLED,                 /* a partial event held longer than --partial-timeout-ms */
	SE__COUNT
};

static const char *err_name(int k)
{
	switch (k) {
	case SE_DUP:
		return "duplicate_event";
	case SE_SOURCES:
		return "wrong_n_expected";
	case SE_READ:
		return "read_error";
	case SE_BUFFER:
		return "buffer_limit";
	case SE_STALLED:
		return "partial_timeout";
	default:
		return xevb_evt_err_name(k);
	}
}

#define READ_CHUNK         (256 * 1024)
#define MAX_CONNS          1024
#define MAX_LOGGED         20
#define READS_PER_WAKEUP   16             /* then let the other connections have a turn */
#define SHRINK_ABOVE       (1u << 20)     /* an empty buffer larger than this goes back to its first size */
#define ACCEPT_RETRY_NS    1000000000ull  /* at the descriptor limit: try accept() again after */
#define LIMIT_MSG_EVERY_NS 10000000000ull /* one message per kind of refusal at most this often */

struct conn {
	int fd;
	uint32_t ip; /* IPv4 peer, network order (credits are per builder) */
	char peer[64];
	uint64_t events;
	size_t charged;            /* rd.cap as counted in sink.buffered */
	uint64_t partial_since_ns; /* 0, or since when it holds part of an event */
	uint32_t slot;             /* its place in sink.conns */
	struct xevb_evt_reader rd;
};

/* Connections refused as they arrive, by reason. */
enum { REFUSE_MAX_CONNS, REFUSE_BUFFER, REFUSE__COUNT };
static const char *const refuse_names[REFUSE__COUNT] = { "max_conns", "buffer_total" };

struct sink {
	struct sink_cfg o;         /* the options */
	uint32_t stats_interval_s; /* 0: no statistics line (or --quiet) */
	unsigned verify;           /* XEVB_VERIFY_* */
	struct sink_ctl *ctl;      /* --ctl-port */
	/* --progress-file: events taken, in a shared mapping (survives SIGKILL) */
	volatile uint64_t *progress;

	/* counters */
	uint64_t events, complete, incomplete, frags, missing_frags, bytes;
	uint64_t err[SE__COUNT];
	uint64_t errors;
	uint64_t too_old;
	uint64_t conns_total, conns_dropped;
	uint32_t conns_open;
	uint64_t conns_refused[REFUSE__COUNT];
	uint64_t buffered, buffered_max; /* connection buffers' capacity now and at most */
	/* listening socket; accept() paused at the descriptor limit */
	int lfd, ep;
	bool accept_paused;
	uint64_t accept_retry_ns;
	uint64_t fd_limit_hits, fd_limit_logged;
	uint64_t next_msg_ns[REFUSE__COUNT + 1]; /* the last one: descriptor limit */
	struct conn **conns;                     /* the conns_open connections, for the partial-event check */
	uint64_t next_partial_check;
	uint64_t lat_n;
	double lat_sum_ns;
	int64_t lat_max_ns;
	struct xevb_lat_hist lat; /* for percentiles */
	struct xevb_evid_window win;

	/* time */
	uint64_t t0, deadline, next_stats;
	uint64_t last_events, last_bytes;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void note_err(struct sink *s, int kind, const char *where, const char *msg)
{
	s->err[kind]++;
	s->errors++;
	if (s->errors <= MAX_LOGGED)
		xevb_err("%s: %s: %s", where, err_name(kind), msg);
	if (s->errors == MAX_LOGGED)
		xevb_err("further errors are counted, not logged");
}

static bool expectation_met(const struct sink *s)
{
	return s->o.expect_events && s->events >= s->o.expect_events;
}

/* One whole event off a stream. -1: its structure is broken, drop the stream. */
static int sink_event(struct sink *s, const uint8_t *buf, size_t len, const char *where)
{
	struct xevb_decoded_event d;
	char msg[192], vmsg[192];
	int rc, vrc = 0;

	/* Structure and payloads in one walk: a bad payload is counted, a bad structure ends the stream. */
	rc = xevb_event_decode_verify(buf, len, s->verify, &d, vmsg, sizeof(vmsg));
	if (rc == -XEVB_EVT_E_CRC || rc == -XEVB_EVT_E_CONTENT) {
		vrc = rc;
		rc = 0;
	}
	if (rc) {
		note_err(s, -rc, where, vmsg);
		return -1;
	}
	s->events++;
	if (s->progress)
		*s->progress = s->events;
	XEVB_PROBE(sink_event, d.event_id, d.n_frags, len, d.flags);
	s->bytes += len;
	s->frags += d.n_frags;
	s->missing_frags += (uint32_t)d.n_expected - d.n_frags;
	if (d.flags & XEVB_EVT_F_INCOMPLETE)
		s->incomplete++;
	else
		s->complete++;
	if (s->o.expect_sources && d.n_expected != s->o.expect_sources) {
		snprintf(msg, sizeof(msg), "event %u: n_expected %u, expected %u", d.event_id, d.n_expected,
			 s->o.expect_sources);
		note_err(s, SE_SOURCES, where, msg);
	}
	if (vrc)
		note_err(s, -vrc, where, vmsg);
	switch (xevb_evid_window_add(&s->win, d.run_number, d.event_id)) {
	case XEVB_EVID_DUP:
		snprintf(msg, sizeof(msg), "event %u of run %u delivered again", d.event_id, d.run_number);
		note_err(s, SE_DUP, where, msg);
		break;
	case XEVB_EVID_TOO_OLD:
		s->too_old++;
		break;
	default:
		break;
	}
	if (d.build_ns) {
		int64_t lat = (int64_t)(xevb_realtime_ns() - d.build_ns);
		s->lat_n++;
		s->lat_sum_ns += (double)lat;
		if (lat > s->lat_max_ns)
			s->lat_max_ns = lat;
		xevb_lat_add(&s->lat, lat);
	}
	return 0;
}

/* Cut every whole event out of the reader. -1: drop the stream. */
static int sink_drain(struct sink *s, struct xevb_evt_reader *rd, const char *where)
{
	const uint8_t *ev;
	size_t len;
	int rc;

	while ((rc = xevb_evt_reader_next(rd, &ev, &len)) == 1)
		if (sink_event(s, ev, len, where))
			return -1;
	if (rc < 0) {
		char msg[96];
		const uint8_t *p = rd->buf + rd->head;
		if (rc == -XEVB_EVT_E_MAGIC)
			snprintf(msg, sizeof(msg), "stream out of step: bytes %02x %02x %02x %02x", p[0],
				 rd->tail - rd->head > 1 ? p[1] : 0, rd->tail - rd->head > 2 ? p[2] : 0,
				 rd->tail - rd->head > 3 ? p[3] : 0);
		else
			snprintf(msg, sizeof(msg), "total_length %u (limit %u)",
				 rd->tail - rd->head >= 20 ? xevb_ld32(p + 16) : 0, rd->max_len);
		note_err(s, -rc, where, msg);
		return -1;
	}
	return 0;
}

static void print_stats(struct sink *s, uint64_t now)
{
	double dt = (double)s->stats_interval_s;
	uint64_t ev = s->events - s->last_events, by = s->bytes - s->last_bytes;

	fprintf(stderr, "%s: %.1fs: %.0f ev/s %.2f MB/s complete %llu incomplete %llu errors %llu conns %u\n",
		xevb_prog, (double)(now - s->t0) / 1e9, (double)ev / dt, (double)by / dt / 1e6,
		(unsigned long long)s->complete, (unsigned long long)s->incomplete, (unsigned long long)s->errors,
		s->conns_open);
	s->last_events = s->events;
	s->last_bytes = s->bytes;
}

static void tick(struct sink *s, uint64_t now)
{
	if (!s->stats_interval_s)
		return;
	while (now >= s->next_stats) {
		print_stats(s, now);
		s->next_stats += (uint64_t)s->stats_interval_s * 1000000000ull;
	}
}

static bool time_is_up(const struct sink *s, uint64_t now)
{
	return s->deadline && now >= s->deadline;
}

/* ---- --input FILE ---- */

static void run_file(struct sink *s)
{
	struct xevb_evt_reader rd;
	const char *where = s->o.input;
	int fd;

	/* A run file: its events through libxevb's reader (sink_runfile.h). */
	if (strcmp(where, "-") && xevb_sink_runfile(s, where, s->o.max_event, sink_event, note_err, SE_READ))
		return;
	if (!strcmp(s->o.input, "-")) {
		fd = STDIN_FILENO;
		where = "stdin";
	} else {
		fd = open(s->o.input, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			note_err(s, SE_READ, where, strerror(errno));
			return;
		}
	}
	if (xevb_evt_reader_init(&rd, s->o.max_event)) {
		note_err(s, SE_READ, where, "out of memory");
		goto out;
	}
	for (;;) {
		uint64_t now = xevb_now_ns();
		size_t avail;
		uint8_t *p;
		ssize_t n;

		tick(s, now);
		if (stop_signal || expectation_met(s) || time_is_up(s, now))
			break;
		p = xevb_evt_reader_space(&rd, READ_CHUNK, &avail);
		if (!p) {
			note_err(s, SE_READ, where, "out of memory");
			break;
		}
		n = read(fd, p, avail);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			note_err(s, SE_READ, where, strerror(errno));
			break;
		}
		if (n == 0) {
			if (xevb_evt_reader_pending(&rd)) {
				char msg[64];
				snprintf(msg, sizeof(msg), "%zu bytes of a partial event at the end",
					 xevb_evt_reader_pending(&rd));
				note_err(s, XEVB_EVT_E_EOF, where, msg);
			}
			break;
		}
		xevb_evt_reader_commit(&rd, (size_t)n);
		if (sink_drain(s, &rd, where))
			break;
	}
	xevb_evt_reader_free(&rd);
out:
	if (fd != STDIN_FILENO)
		close(fd);
}

/* ---- --listen ADDR:PORT ---- */

/* true at most once per LIMIT_MSG_EVERY_NS for this kind of message. */
static bool msg_due(struct sink *s, int kind, uint64_t now)
{
	if (now < s->next_msg_ns[kind])
		return false;
	s->next_msg_ns[kind] = now + LIMIT_MSG_EVERY_NS;
	return true;
}

/* The buffer total follows every change of a connection's buffer size. */
static void conn_charge(struct sink *s, struct conn *c)
{
	s->buffered = s->buffered - c->charged + c->rd.cap;
	c->charged = c->rd.cap;
	if (s->buffered > s->buffered_max)
		s->buffered_max = s->buffered;
}

static void accept_resume(struct sink *s)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };

	if (!s->accept_paused)
		return;
	if (epoll_ctl(s->ep, EPOLL_CTL_MOD, s->lfd, &e) == 0)
		s->accept_paused = false;
}

/*
 * Out of descriptors: a level-triggered listening socket would wake us for
 * the same pending connection for ever. Stop watching it until a
 * connection closes or ACCEPT_RETRY_NS passes; the kernel's backlog holds
 * the newcomers meanwhile.
 */
static void accept_pause(struct sink *s, int err)
{
	struct epoll_event e = { .events = 0, .data.ptr = NULL };
	uint64_t now = xevb_now_ns();

	s->fd_limit_hits++;
	s->accept_paused = epoll_ctl(s->ep, EPOLL_CTL_MOD, s->lfd, &e) == 0;
	s->accept_retry_ns = now + ACCEPT_RETRY_NS;
	if (msg_due(s, REFUSE__COUNT, now)) {
		struct rlimit rl = { 0 };
		getrlimit(RLIMIT_NOFILE, &rl);
		xevb_warn(
			"accept: %s with %u connections open (ulimit -n %llu): not accepting until one "
			"closes (%llu times so far; raise ulimit -n for more builders; said at most every %llu s)",
			strerror(err), s->conns_open, (unsigned long long)rl.rlim_cur,
			(unsigned long long)s->fd_limit_hits, LIMIT_MSG_EVERY_NS / 1000000000ull);
		s->fd_limit_logged = s->fd_limit_hits;
	}
}

static void conn_close(struct sink *s, struct conn *c, bool dropped)
{
	xevb_info("%s: %s after %llu events", c->peer, dropped ? "dropped" : "closed",
		  (unsigned long long)c->events);
	if (dropped)
		s->conns_dropped++;
	close(c->fd); /* also leaves the epoll set */
	xevb_evt_reader_free(&c->rd);
	s->buffered -= c->charged;
	s->conns[c->slot] = s->conns[s->conns_open - 1];
	s->conns[c->slot]->slot = c->slot;
	free(c);
	s->conns_open--;
	accept_resume(s); /* a descriptor is free again */
}

/* Room to read into, within the connection's share of --max-buffer-total. */
static uint8_t *conn_space(struct sink *s, struct conn *c, size_t *avail)
{
	uint8_t *p;

	c->rd.cap_max = c->rd.cap + (s->o.max_buffer_total - s->buffered);
	p = xevb_evt_reader_space(&c->rd, xevb_evt_reader_read_size(&c->rd, READ_CHUNK), avail);
	if (p) {
		conn_charge(s, c);
		return p;
	}
	if (errno == ENOBUFS) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "an event of %zu bytes would take the buffers past "
			 "--max-buffer-total %llu (%llu held by %u connections)",
			 c->rd.want, (unsigned long long)s->o.max_buffer_total, (unsigned long long)s->buffered,
			 s->conns_open);
		note_err(s, SE_BUFFER, c->peer, msg);
	} else {
		note_err(s, SE_READ, c->peer, "out of memory");
	}
	return NULL;
}

/* Since when the connection holds part of an event, after a read. */
static void conn_note_partial(struct conn *c, uint64_t now)
{
	if (!xevb_evt_reader_pending(&c->rd))
		c->partial_since_ns = 0;
	else if (!c->partial_since_ns)
		c->partial_since_ns = now;
}

/*
 * A peer that starts an event and never finishes it would hold its share of
 * --max-buffer-total for ever: past --partial-timeout-ms it is closed.
 */
static void close_stalled(struct sink *s, uint64_t now)
{
	if (!s->o.partial_timeout_ns || now < s->next_partial_check)
		return;
	s->next_partial_check = now + s->o.partial_timeout_ns / 4;
	for (uint32_t i = s->conns_open; i-- > 0;) {
		struct conn *c = s->conns[i];
		char msg[128];

		if (!c->partial_since_ns || now - c->partial_since_ns < s->o.partial_timeout_ns)
			continue;
		snprintf(msg, sizeof(msg), "%zu bytes of an event of %zu held for over %llu ms",
			 xevb_evt_reader_pending(&c->rd), c->rd.want,
			 (unsigned long long)(s->o.partial_timeout_ns / 1000000));
		note_err(s, SE_STALLED, c->peer, msg);
		conn_close(s, c, true);
	}
}

static void conn_read(struct sink *s, struct conn *c, uint64_t now)
{
	for (int i = 0; i < READS_PER_WAKEUP; i++) {
		uint64_t before = s->events;
		size_t avail;
		uint8_t *p = conn_space(s, c, &avail);
		ssize_t n;

		if (!p) {
			conn_close(s, c, true);
			return;
		}
		n = read(c->fd, p, avail);
		if (n > 0) {
			xevb_evt_reader_commit(&c->rd, (size_t)n);
			if (sink_drain(s, &c->rd, c->peer)) {
				c->events += s->events - before;
				conn_close(s, c, true);
				return;
			}
			c->events += s->events - before;
			if (s->ctl)
				sink_ctl_events(s->ctl, c->ip, s->events - before);
			conn_note_partial(c, now);
			/* A large event's buffer goes back to the total once it is taken. */
			if (c->rd.cap > SHRINK_ABOVE && !xevb_evt_reader_pending(&c->rd)) {
				xevb_evt_reader_shrink(&c->rd, SHRINK_ABOVE);
				conn_charge(s, c);
			}
			if (expectation_met(s))
				return;
			/* A short read emptied the socket: back to epoll (level-triggered, so
			 * nothing is missed) instead of a read that would say EAGAIN. */
			if ((size_t)n < avail)
				return;
			continue;
		}
		if (n == 0) {
			bool partial = xevb_evt_reader_pending(&c->rd) > 0;
			if (partial) {
				char msg[64];
				snprintf(msg, sizeof(msg), "closed inside an event (%zu bytes held)",
					 xevb_evt_reader_pending(&c->rd));
				note_err(s, XEVB_EVT_E_EOF, c->peer, msg);
			}
			conn_close(s, c, partial);
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		note_err(s, SE_READ, c->peer, strerror(errno));
		conn_close(s, c, true);
		return;
	}
}

static void peer_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%u", a, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%u", a, port);
	} else {
		snprintf(buf, len, "peer");
	}
}

/* A connection we cannot take: closed at once, counted, said at most every 10 s. */
static void refuse(struct sink *s, int fd, int why)
{
	uint64_t now = xevb_now_ns();

	close(fd);
	s->conns_refused[why]++;
	if (!msg_due(s, why, now))
		return;
	if (why == REFUSE_MAX_CONNS)
		xevb_warn("%u connections open, the most a farm node takes: refusing more (%llu so far)",
			  MAX_CONNS, (unsigned long long)s->conns_refused[why]);
	else
		xevb_warn(
			"connection buffers hold %llu of --max-buffer-total %llu bytes: refusing new "
			"connections (%llu so far)",
			(unsigned long long)s->buffered, (unsigned long long)s->o.max_buffer_total,
			(unsigned long long)s->conns_refused[why]);
}

static void accept_all(struct sink *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP };
		struct conn *c;
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				accept_pause(s, errno);
			else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				xevb_warn("accept: %s", strerror(errno));
			return;
		}
		if (s->conns_open >= MAX_CONNS) {
			refuse(s, fd, REFUSE_MAX_CONNS);
			continue;
		}
		if (s->buffered + XEVB_EVT_READER_CAP0 > s->o.max_buffer_total) {
			refuse(s, fd, REFUSE_BUFFER);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c || xevb_evt_reader_init(&c->rd, s->o.max_event)) {
			free(c);
			close(fd);
			xevb_warn("out of memory: refusing a connection");
			continue;
		}
		c->fd = fd;
		c->slot = s->conns_open;
		if (ss.ss_family == AF_INET)
			c->ip = ((const struct sockaddr_in *)&ss)->sin_addr.s_addr;
		if (s->ctl)
			sink_ctl_conn(s->ctl, c->ip);
		peer_name(&ss, c->peer, sizeof(c->peer));
		e.data.ptr = c;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &e)) {
			xevb_warn("epoll_ctl: %s", strerror(errno));
			xevb_evt_reader_free(&c->rd);
			free(c);
			close(fd);
			continue;
		}
		conn_charge(s, c);
		s->conns[s->conns_open++] = c;
		s->conns_total++;
		xevb_info("%s: connected", c->peer);
	}
}

static int write_ready_file(const char *path, const struct sockaddr_storage *ss)
{
	char name[96], tmp[4096];
	FILE *f;

	peer_name(ss, name, sizeof(name));
	/* Written aside and renamed, so a waiting script never reads half a line. */
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", name);
	if (fclose(f) || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The listening socket, bound (its address back in *ss) and in s->lfd; -1 (said why) on failure. */
static int listen_socket(struct sink *s, struct sockaddr_storage *ss, socklen_t sl)
{
	int one = 1;

	s->lfd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0) {
		xevb_err("socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->lfd, (struct sockaddr *)ss, sl) || listen(s->lfd, 128)) {
		xevb_err("listen on %s: %s", s->o.listen, strerror(errno));
		return -1;
	}
	sl = sizeof(*ss);
	getsockname(s->lfd, (struct sockaddr *)ss, &sl);
	return 0;
}

/* --ctl-port: credits and Busy for the builders on the listening address, polled with the connections. */
static int ctl_start(struct sink *s, const struct sockaddr_storage *ss)
{
	uint32_t a = ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_addr.s_addr : 0;
	struct epoll_event ce = { .events = EPOLLIN, .data.ptr = &s->ctl };

	s->ctl = sink_ctl_new(a, (uint16_t)s->o.ctl_port, (uint16_t)s->o.id, s->o.credits, s->o.process_rate,
			      s->o.busy_high, s->o.busy_low);
	if (!s->ctl || epoll_ctl(s->ep, EPOLL_CTL_ADD, sink_ctl_fd(s->ctl), &ce))
		return -1;
	if (s->o.dfm.sin_port)
		sink_ctl_report_to(s->ctl, &s->o.dfm);
	return 0;
}

/* Socket, epoll, control socket, --ready-file; then tell who waits that we listen. */
static int listen_setup(struct sink *s, struct sockaddr_storage *ss, socklen_t sl)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };
	char name[96];

	if (listen_socket(s, ss, sl))
		return -1;
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	if (s->ep < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &e)) {
		xevb_err("epoll: %s", strerror(errno));
		return -1;
	}
	if (s->o.ctl_port && ctl_start(s, ss))
		return -1;
	if (s->o.ready_file && write_ready_file(s->o.ready_file, ss)) {
		xevb_err("--ready-file %s: %s", s->o.ready_file, strerror(errno));
		return -1;
	}
	peer_name(ss, name, sizeof(name));
	xevb_info("listening on %s", name);
	xevb_notify_ready("listening on %s", name);
	return 0;
}

/* The timers due now (accept retry, control ticks); how long epoll may sleep after. */
static uint64_t run_timers(struct sink *s, uint64_t now)
{
	uint64_t wait_ns = 1000000000ull;

	if (s->o.partial_timeout_ns && s->conns_open && s->next_partial_check - now < wait_ns)
		wait_ns = s->next_partial_check - now;
	if (s->stats_interval_s && s->next_stats - now < wait_ns)
		wait_ns = s->next_stats - now;
	if (s->deadline && s->deadline - now < wait_ns)
		wait_ns = s->deadline - now;
	if (s->accept_paused) {
		if (now >= s->accept_retry_ns)
			accept_resume(s); /* a descriptor may have freed elsewhere */
		else if (s->accept_retry_ns - now < wait_ns)
			wait_ns = s->accept_retry_ns - now;
	}
	if (s->ctl) {
		sink_ctl_tick(s->ctl, now);
		if (wait_ns > 5000000ull)
			wait_ns = 5000000ull;
	}
	return wait_ns;
}

/* Until stopped, the expected events are in or --duration is up; -1 when epoll fails. */
static int listen_loop(struct sink *s)
{
	struct epoll_event evs[64];
	sigset_t block, orig;
	int rc = 0;

	/* Signals only arrive inside epoll_pwait: no stop request slips past the check. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &orig);
	sigdelset(&orig, SIGINT);
	sigdelset(&orig, SIGTERM);

	for (;;) {
		uint64_t now = xevb_now_ns(), wait_ns;
		int n;

		tick(s, now);
		if (stop_signal || expectation_met(s) || time_is_up(s, now))
			break;
		close_stalled(s, now);
		wait_ns = run_timers(s, now);
		n = epoll_pwait(s->ep, evs, 64, (int)((wait_ns + 999999) / 1000000), &orig);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			xevb_err("epoll_wait: %s", strerror(errno));
			rc = -1;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr)
				accept_all(s);
			else if (evs[i].data.ptr == &s->ctl)
				sink_ctl_rx(s->ctl, now);
			else
				conn_read(s, evs[i].data.ptr, now);
			/* A connection freed here is named at most once per batch. */
		}
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return rc;
}

static int run_listen(struct sink *s)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc;

	if (sink_resolve("listen", s->o.listen, &ss, &sl))
		return -1;
	s->conns = calloc(MAX_CONNS, sizeof(*s->conns));
	if (!s->conns) {
		xevb_err("out of memory for the connection table");
		return -1;
	}
	rc = listen_setup(s, &ss, sl) ? -1 : listen_loop(s);
	/* Connections still open are left to exit(): their counts are final. */
	if (s->ep >= 0)
		close(s->ep);
	if (s->lfd >= 0)
		close(s->lfd);
	free(s->conns); /* the connections themselves are left to exit() */
	s->conns = NULL;
	return rc;
}

/* ---- summary ---- */

static void summary(const struct sink *s, uint64_t now, bool ok)
{
	double el = (double)(now - s->t0) / 1e9;
	double evps = el > 0 ? (double)s->events / el : 0, mbps = el > 0 ? (double)s->bytes / el / 1e6 : 0;
	double lat_avg = s->lat_n ? s->lat_sum_ns / (double)s->lat_n / 1e3 : 0;
	double lat_max = (double)s->lat_max_ns / 1e3;
	double lat_p50 = (double)xevb_lat_quantile(&s->lat, 0.5) / 1e3;
	double lat_p99 = (double)xevb_lat_quantile(&s->lat, 0.99) / 1e3;
	bool first = true;

	if (s->o.co.json) {
		printf("{\"events\":%llu,\"complete\":%llu,\"incomplete\":%llu,\"fragments\":%llu,"
		       "\"missing_fragments\":%llu,\"bytes\":%llu,\"duplicates\":%llu,"
		       "\"unchecked_old\":%llu,\"connections\":%llu,\"connections_dropped\":%llu,"
		       "\"connections_refused\":{\"%s\":%llu,\"%s\":%llu},\"accept_fd_limit\":%llu,"
		       "\"buffer_max_bytes\":%llu,\"errors\":%llu,\"error_kinds\":{",
		       (unsigned long long)s->events, (unsigned long long)s->complete,
		       (unsigned long long)s->incomplete, (unsigned long long)s->frags,
		       (unsigned long long)s->missing_frags, (unsigned long long)s->bytes,
		       (unsigned long long)s->err[SE_DUP], (unsigned long long)s->too_old,
		       (unsigned long long)s->conns_total, (unsigned long long)s->conns_dropped,
		       refuse_names[REFUSE_MAX_CONNS], (unsigned long long)s->conns_refused[REFUSE_MAX_CONNS],
		       refuse_names[REFUSE_BUFFER], (unsigned long long)s->conns_refused[REFUSE_BUFFER],
		       (unsigned long long)s->fd_limit_hits, (unsigned long long)s->buffered_max,
		       (unsigned long long)s->errors);
		for (int k = 1; k < SE__COUNT; k++)
			if (s->err[k]) {
				printf("%s\"%s\":%llu", first ? "" : ",", err_name(k),
				       (unsigned long long)s->err[k]);
				first = false;
			}
		printf("},\"elapsed_s\":%.3f,\"events_per_s\":%.1f,\"MB_per_s\":%.3f,"
		       "\"latency_us\":{\"avg\":%.1f,\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
		       "\"expect_events\":%llu,\"signal\":%d,\"result\":\"%s\"}\n",
		       el, evps, mbps, lat_avg, lat_p50, lat_p99, lat_max, (unsigned long long)s->o.expect_events,
		       (int)stop_signal, ok ? "ok" : "fail");
	} else {
		printf("events:              %llu (complete %llu, incomplete %llu)\n",
		       (unsigned long long)s->events, (unsigned long long)s->complete,
		       (unsigned long long)s->incomplete);
		printf("fragments:           %llu (missing %llu)\n", (unsigned long long)s->frags,
		       (unsigned long long)s->missing_frags);
		printf("bytes:               %llu\n", (unsigned long long)s->bytes);
		printf("duplicates:          %llu (older than the window, unchecked: %llu)\n",
		       (unsigned long long)s->err[SE_DUP], (unsigned long long)s->too_old);
		printf("connections:         %llu (dropped %llu)\n", (unsigned long long)s->conns_total,
		       (unsigned long long)s->conns_dropped);
		printf("refused:             %llu at the connection limit, %llu at --max-buffer-total; "
		       "accept() at the descriptor limit %llu times\n",
		       (unsigned long long)s->conns_refused[REFUSE_MAX_CONNS],
		       (unsigned long long)s->conns_refused[REFUSE_BUFFER], (unsigned long long)s->fd_limit_hits);
		printf("buffers:             %llu bytes at most (--max-buffer-total %llu)\n",
		       (unsigned long long)s->buffered_max, (unsigned long long)s->o.max_buffer_total);
		printf("errors:              %llu\n", (unsigned long long)s->errors);
		for (int k = 1; k < SE__COUNT; k++)
			if (s->err[k])
				printf("  %-18s %llu\n", err_name(k), (unsigned long long)s->err[k]);
		printf("elapsed:             %.3f s, %.1f events/s, %.3f MB/s\n", el, evps, mbps);
		printf("latency from build:  avg %.1f us, p50 <= %.1f us, p99 <= %.1f us, max %.1f us\n", lat_avg,
		       lat_p50, lat_p99, lat_max);
		if (s->o.expect_events)
			printf("expected events:     %llu (%s)\n", (unsigned long long)s->o.expect_events,
			       expectation_met(s) ? "reached" : "NOT reached");
		printf("result:              %s\n", ok ? "ok" : "FAIL");
	}
	fflush(stdout);
}

/* ---- --metrics: read in the server thread while the loop counts ---- */

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static void sink_metrics(struct xevb_mbuf *b, void *arg)
{
	const struct sink *s = arg;
	uint64_t lat_n = LD(s->lat_n);
	char l[64];

	xevb_metric_one(b, "xevb_sink_events_total", "counter", "Built events received and decoded.",
			LD(s->events));
	xevb_metric_one(b, "xevb_sink_events_complete_total", "counter", "Events received complete.",
			LD(s->complete));
	xevb_metric_one(b, "xevb_sink_events_incomplete_total", "counter", "Events received flagged INCOMPLETE.",
			LD(s->incomplete));
	xevb_metric_one(b, "xevb_sink_fragments_total", "counter", "Fragments in the events received.",
			LD(s->frags));
	xevb_metric_one(b, "xevb_sink_missing_fragments_total", "counter",
			"Fragments missing from incomplete events.", LD(s->missing_frags));
	xevb_metric_one(b, "xevb_sink_bytes_total", "counter", "Bytes of the events received.", LD(s->bytes));
	xevb_metric_one(b, "xevb_sink_unchecked_old_events_total", "counter",
			"Events older than the duplicate window (not checked for duplicates).", LD(s->too_old));
	xevb_metric_family(b, "xevb_sink_errors_total", "counter",
			   "Broken or duplicated events and failed reads, by kind.");
	for (int k = 1; k < SE__COUNT; k++) {
		snprintf(l, sizeof(l), "kind=\"%s\"", err_name(k));
		xevb_metric_u64(b, "xevb_sink_errors_total", l, LD(s->err[k]));
	}
	xevb_metric_one(b, "xevb_sink_connections_total", "counter", "Builder connections accepted.",
			LD(s->conns_total));
	xevb_metric_one(b, "xevb_sink_connections_dropped_total", "counter",
			"Connections dropped on a broken stream.", LD(s->conns_dropped));
	xevb_metric_one(b, "xevb_sink_connections_open", "gauge", "Builder connections open now.",
			LD(s->conns_open));
	xevb_metric_family(b, "xevb_sink_connections_refused_total", "counter",
			   "Connections closed as they arrived, by reason (connection limit, buffer total).");
	for (int r = 0; r < REFUSE__COUNT; r++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", refuse_names[r]);
		xevb_metric_u64(b, "xevb_sink_connections_refused_total", l, LD(s->conns_refused[r]));
	}
	xevb_metric_one(b, "xevb_sink_accept_fd_limit_total", "counter",
			"Times accept() found no free descriptor (accepting paused until one frees).",
			LD(s->fd_limit_hits));
	xevb_metric_one(b, "xevb_sink_buffer_bytes", "gauge",
			"Bytes the connections' buffers hold now (allocated).", LD(s->buffered));
	xevb_metric_one(b, "xevb_sink_buffer_limit_bytes", "gauge", "--max-buffer-total.", s->o.max_buffer_total);
	xevb_metric_family(b, "xevb_sink_latency_seconds", "summary",
			   "Time from the builder's emit (build_ns, CLOCK_REALTIME) to decoding here.");
	xevb_metric_f64(b, "xevb_sink_latency_seconds_sum", NULL, s->lat_sum_ns / 1e9);
	xevb_metric_u64(b, "xevb_sink_latency_seconds_count", NULL, lat_n);
	xevb_metric_family(b, "xevb_sink_latency_max_seconds", "gauge", "Longest latency from build seen so far.");
	xevb_metric_f64(b, "xevb_sink_latency_max_seconds", NULL, (double)LD(s->lat_max_ns) / 1e9);
}

/* --progress-file: the events taken, in a shared mapping; 0, or -1 (said why). */
static int map_progress(struct sink *s, const char *path)
{
	/* A store per event into a shared file mapping: no syscall, and the
	 * page cache keeps it whatever becomes of us. */
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	void *m = MAP_FAILED;

	if (fd >= 0 && ftruncate(fd, sizeof(uint64_t)) == 0)
		m = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		xevb_err("--progress-file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	s->progress = m;
	return 0;
}

/* The results: was every event right and every expected one there; the summaries. */
static bool sink_report(struct sink *s)
{
	bool ok = s->errors == 0 && (!s->o.expect_events || expectation_met(s));

	if (s->o.expect_events && !expectation_met(s))
		xevb_err("expected %llu events, got %llu", (unsigned long long)s->o.expect_events,
			 (unsigned long long)s->events);
	if (s->ctl) {
		sink_ctl_final(s->ctl);
		sink_ctl_summary(s->ctl, s->o.co.json ? stdout : stderr, s->o.co.json);
		sink_ctl_free(s->ctl);
	}
	summary(s, xevb_now_ns(), ok);
	return ok;
}

/* Receive from the socket or the file, with --metrics; the exit status. */
static int sink_run(struct sink *s, const char *metrics)
{
	struct xevb_metrics *mx = NULL;
	int rc = 1;

	if (metrics && (!(mx = xevb_metrics_start(metrics)) || xevb_metrics_render(mx, sink_metrics, s)))
		goto out;
	s->t0 = xevb_now_ns();
	s->next_stats = s->t0 + (uint64_t)s->stats_interval_s * 1000000000ull;
	if (s->o.co.duration_ns)
		s->deadline = s->t0 + s->o.co.duration_ns;
	if (s->o.listen) {
		if (run_listen(s))
			goto out;
	} else {
		run_file(s);
	}
	rc = sink_report(s) ? 0 : 1;
out:
	xevb_metrics_stop(mx);
	xevb_evid_window_free(&s->win);
	return rc;
}

int cmd_sink(int argc, char **argv)
{
	static struct sink s; /* its options and counters: kilobytes */
	struct sigaction sa = { .sa_handler = on_signal };
	int rc;

	if (argc >= 2 && !strcmp(argv[1], "--selftest-send"))
		return sink_selftest_send(argc - 1, argv + 1);
	if ((rc = xevb_runcfg_start_opts(&argc, &argv, XEVB_RC_SINK, &sink_cmd)) > 1)
		return rc;
	if ((rc = sink_opts_parse(argc, argv, &s.o)) >= 0)
		return rc;
	s.lfd = s.ep = -1;
	s.stats_interval_s = xevb_common_interval(&s.o.co);
	s.verify = s.o.no_content ? XEVB_VERIFY_CRC : XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT;
	if (s.o.progress && map_progress(&s, s.o.progress))
		return 1;
	/* Connection buffers each in a mapping of their own, unmapped when freed: glibc
	 * would otherwise raise its threshold after the first large event and keep
	 * freed buffers in its heap, so the process would hold more than
	 * --max-buffer-total. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (xevb_evid_window_init(&s.win, s.o.dup_window)) {
		xevb_err("out of memory");
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return sink_run(&s, s.o.co.metrics);
}

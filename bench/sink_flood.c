// SPDX-License-Identifier: GPL-2.0-only
/*
 * A feeder faster than the builder, to measure `xevb sink` alone: a ring of
 * valid built events (the project's encoder over emulator payloads and
 * their CRCs, as the builder sends them) is encoded once, then written to
 * one TCP connection as fast as the socket takes it, in --write-size
 * writes. The event ids move on by the ring's length every pass, so the
 * sink sees every id once; each event is stamped with the time of the
 * write that starts it, so the sink's latency figures mean something.
 * The stream ends on an event boundary. Prints one JSON object.
 *
 * --check-cost: no socket; times the sink's check of the ring in user
 * space alone (xevb_event_decode_verify, every byte, as `xevb sink` does;
 * and decode then verify, two walks), over a 256 KiB window of events
 * like the sink's read buffer: ns per event, one JSON object.
 *
 *   l1:  126 sources x 32 B fragments (5,576-byte events)
 *   hlt: 323 sources x 100 B fragments (36,208-byte events)
 *
 * --dest twice (and --slice-ms): two sinks fed in turn, --slice-ms of
 * writes to one, then to the other, each its own ring and ids, so that
 * two sinks on one core are measured over the same seconds of a host
 * whose speed drifts (scripts/bench/bench-sink-ab.sh). write only.
 *
 * --send says how each chunk goes (issue 18: the mechanisms measured side by
 * side): write (write(2), as the builder's send(2) of its buffer), uring (an
 * io_uring IORING_OP_SEND, one in flight, as the builder would replace its
 * send) or uring-zc (IORING_OP_SEND_ZC from the ring registered as a fixed
 * buffer: the kernel sends from these pages and says when it is done with
 * them; "zc_copied" counts the sends it copied after all). The last two
 * need liburing at build time.
 *
 * usage: sink_flood --dest ADDR:PORT [--dest ADDR:PORT [--slice-ms MS]]
 *        [--case l1|hlt] [--duration S] [--events N] [--ring-bytes B]
 *        [--write-size B] [--run R] [--send write|uring|uring-zc]
 *        [--rate EVENTS_PER_S]
 *        sink_flood --check-cost [--case l1|hlt] [--events N]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "evb/builder.h"
#include <xevb/bytes.h>
#include "base/cli.h"
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/event_codec.h"
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

struct flood_case {
	const char *name;
	uint16_t n_src;
	uint16_t frag_len;
};

static const struct flood_case cases[] = {
	{ "l1", 126, 32 },
	{ "hlt", 323, 100 },
};

/* The ring: n events back to back, ev_off[i] the start of event i. */
struct ring {
	uint8_t *buf;
	size_t len;
	size_t *ev_off;
	uint32_t n;
	size_t ev_bytes;
};

static void die(const char *what, const char *why)
{
	fprintf(stderr, "sink_flood: %s: %s\n", what, why);
	exit(1);
}

/* Every source's fragment is the same emulator payload in one fake frame. */
static void ring_build(struct ring *r, const struct flood_case *c, size_t ring_bytes, uint32_t run)
{
	uint16_t *sids = calloc(c->n_src, sizeof(*sids));
	struct xevb_frag_slot *slots = calloc(c->n_src, sizeof(*slots));
	uint8_t *frame = malloc(4u + c->frag_len);
	const uint8_t *frame_data[1] = { frame };
	struct xevb_event ev = {
		.run_number = run,
		.n_expected = c->n_src,
		.n_frags = c->n_src,
		.source_ids = sids,
		.frags = slots,
		.frame_data = frame_data,
	};

	if (!sids || !slots || !frame)
		die("ring", "out of memory");
	xevb_emu_fill(frame + 4, c->frag_len);
	xevb_st32(frame, xevb_crc32c(0, frame + 4, c->frag_len));
	for (uint16_t i = 0; i < c->n_src; i++) {
		sids[i] = i;
		slots[i] = (struct xevb_frag_slot){ .frame_idx = 0, .payload_off = 4, .length = c->frag_len };
	}
	r->ev_bytes = XEVB_EVT_HLEN + (size_t)c->n_src * (XEVB_EVT_REC_HLEN + XEVB_PAD4(c->frag_len));
	r->n = (uint32_t)(ring_bytes / r->ev_bytes) ? (uint32_t)(ring_bytes / r->ev_bytes) : 1;
	r->len = (size_t)r->n * r->ev_bytes;
	r->buf = malloc(r->len);
	r->ev_off = calloc(r->n, sizeof(*r->ev_off));
	if (!r->buf || !r->ev_off)
		die("ring", "out of memory");
	for (uint32_t i = 0; i < r->n; i++) {
		size_t got;
		int rc;

		r->ev_off[i] = (size_t)i * r->ev_bytes;
		rc = xevb_event_encode_into(&ev, 0, r->buf + r->ev_off[i], r->len - r->ev_off[i], &got);
		if (rc || got != r->ev_bytes)
			die("encode", rc ? strerror(-rc) : "unexpected event size");
	}
	free(sids);
	free(slots);
	free(frame);
}

static int connect_to(const char *dest)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(dest, ':');
	uint32_t port;
	int fd;

	if (!colon || (size_t)(colon - dest) >= sizeof(host))
		die(dest, "not IPv4ADDR:PORT");
	memcpy(host, dest, (size_t)(colon - dest));
	host[colon - dest] = 0;
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || !xevb_parse_u32("dest", colon + 1, 1, 65535, &port))
		die(dest, "not IPv4ADDR:PORT");
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die(dest, strerror(errno));
	return fd;
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write", w < 0 ? strerror(errno) : "connection closed");
		p += w;
		n -= (size_t)w;
	}
}

enum send_kind { SEND_WRITE, SEND_URING, SEND_URING_ZC };
static const char *const send_names[] = { "write", "uring", "uring-zc" };

/* Where the chunks go, and how (--send). */
struct sender {
	enum send_kind kind;
	int fd;
	uint64_t calls;     /* sends that completed */
	uint64_t zc_notifs; /* SEND_ZC: buffers the kernel gave back */
	uint64_t zc_copied; /* ... of which it had copied after all */
#ifdef HAVE_LIBURING
	struct io_uring ring;
	uint32_t notifs_due; /* SEND_ZC buffers the kernel still holds */
	size_t want;         /* bytes of the send in flight */
#endif
};

#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#ifdef HAVE_LIBURING
static void uring_open(struct sender *s, const struct ring *r)
{
	struct iovec iov = { r->buf, r->len };
	int err = io_uring_queue_init(8, &s->ring, 0);

	if (err)
		die("io_uring_queue_init", strerror(-err));
	if (s->kind == SEND_URING_ZC && (err = io_uring_register_buffers(&s->ring, &iov, 1)))
		die("io_uring_register_buffers", strerror(-err));
}

/* One completion: a send's result (all of it or fatal) or a SEND_ZC notification. */
static void uring_reap(struct sender *s, bool *sent)
{
	struct io_uring_cqe *cqe;
	int err = io_uring_wait_cqe(&s->ring, &cqe);

	if (err)
		die("io_uring_wait_cqe", strerror(-err));
	if (cqe->flags & IORING_CQE_F_NOTIF) {
		s->notifs_due--;
		s->zc_notifs++;
		s->zc_copied += (uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED ? 1 : 0;
	} else {
		if (cqe->res < 0)
			die("io_uring send", strerror(-cqe->res));
		if ((size_t)cqe->res != s->want)
			die("io_uring send", "short send: the stream would lose its event boundaries");
		if (cqe->flags & IORING_CQE_F_MORE)
			s->notifs_due++;
		*sent = true;
	}
	io_uring_cqe_seen(&s->ring, cqe);
}

/* n bytes at p (inside the registered ring) in one send, waited for; MSG_WAITALL: all or an error. */
static void uring_send(struct sender *s, const uint8_t *p, size_t n)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
	bool sent = false;

	if (!sqe)
		die("io_uring", "no submission entry");
	s->want = n;
	if (s->kind == SEND_URING_ZC)
		io_uring_prep_send_zc_fixed(sqe, s->fd, p, n, MSG_WAITALL, IORING_SEND_ZC_REPORT_USAGE, 0);
	else
		io_uring_prep_send(sqe, s->fd, p, n, MSG_WAITALL);
	if (io_uring_submit(&s->ring) != 1)
		die("io_uring_submit", strerror(errno));
	while (!sent)
		uring_reap(s, &sent);
}

/* Every buffer back from the kernel: before the ring's bytes are written again. */
static void uring_drain(struct sender *s)
{
	bool sent = false;

	while (s->notifs_due)
		uring_reap(s, &sent);
}
#endif

static void sender_open(struct sender *s, const struct ring *r)
{
#ifdef HAVE_LIBURING
	if (s->kind != SEND_WRITE)
		uring_open(s, r);
#else
	(void)r;
	if (s->kind != SEND_WRITE)
		die("--send", "built without liburing (scripts/install-deps.sh installs it)");
#endif
}

static void sender_send(struct sender *s, const uint8_t *p, size_t n)
{
	s->calls++;
#ifdef HAVE_LIBURING
	if (s->kind != SEND_WRITE) {
		uring_send(s, p, n);
		return;
	}
#endif
	write_all(s->fd, p, n);
}

/* Before the ring is stamped again: the kernel must hold none of its pages. */
static void sender_wrap(struct sender *s)
{
#ifdef HAVE_LIBURING
	if (s->kind == SEND_URING_ZC)
		uring_drain(s);
#else
	(void)s;
#endif
}

static void sender_close(struct sender *s)
{
	sender_wrap(s);
#ifdef HAVE_LIBURING
	if (s->kind != SEND_WRITE)
		io_uring_queue_exit(&s->ring);
#endif
	close(s->fd);
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* ns per event of checking n events of the ring, in passes over its first window bytes. */
static double check_ns(const struct ring *r, uint64_t n, size_t window, bool one_walk)
{
	const unsigned all = XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT;
	uint32_t per = (uint32_t)(window / r->ev_bytes) ? (uint32_t)(window / r->ev_bytes) : 1;
	struct xevb_decoded_event d;
	uint64_t done = 0, t0;
	char err[160];
	int bad = 0;

	per = per < r->n ? per : r->n;
	t0 = xevb_now_ns();
	while (done < n) {
		for (uint32_t i = 0; i < per; i++) {
			const uint8_t *ev = r->buf + r->ev_off[i];
			if (one_walk) {
				bad |= xevb_event_decode_verify(ev, r->ev_bytes, all, &d, err, sizeof(err));
			} else {
				bad |= xevb_event_decode(ev, r->ev_bytes, &d, err, sizeof(err));
				bad |= xevb_event_verify(&d, all, err, sizeof(err));
			}
		}
		done += per;
	}
	if (bad)
		die("check", err);
	return (double)(xevb_now_ns() - t0) / (double)done;
}

static int check_cost(const struct flood_case *c, uint64_t n)
{
	struct ring r;
	double two, one;

	ring_build(&r, c, 4u << 20, 1);
	if (n == UINT64_MAX)
		n = (1u << 30) / r.ev_bytes; /* 1 GiB checked */
	for (uint32_t i = 0; i < r.n; i++)
		xevb_st32(r.buf + r.ev_off[i] + 12, i);
	check_ns(&r, n / 10 + 1, 256u << 10, true); /* warm-up: the tables, the caches */
	two = check_ns(&r, n, 256u << 10, false);
	one = check_ns(&r, n, 256u << 10, true);
	printf("{\"case\":\"%s\",\"sources\":%u,\"fragment_bytes\":%u,\"event_bytes\":%zu,\"events\":%llu,"
	       "\"decode_then_verify_ns_per_event\":%.1f,\"one_walk_ns_per_event\":%.1f}\n",
	       c->name, c->n_src, c->frag_len, r.ev_bytes, (unsigned long long)n, two, one);
	free(r.buf);
	free(r.ev_off);
	return 0;
}

/*
 * --rate: sleep while ahead of `rate` events a second, so that two sinks
 * are compared at the same load (flat out, the TCP window's dynamics
 * decide the rate and with it the CPU per event).
 */
static void pace(uint64_t t0, uint64_t sent, uint64_t rate)
{
	uint64_t due = t0 + (uint64_t)((double)sent * 1e9 / (double)rate);
	struct timespec ts;

	if (xevb_now_ns() >= due)
		return;
	ts.tv_sec = (time_t)(due / 1000000000ull);
	ts.tv_nsec = (long)(due % 1000000000ull);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* One destination's stream: its ring, where it is in it, its ids. */
struct stream {
	struct ring r;
	struct sender snd;
	size_t pos;
	uint32_t patched, next_id;
	uint64_t sent;
};

/* One write of at most wsize bytes, every event that starts in it numbered and stamped first. */
static void stream_write(struct stream *s, size_t wsize, uint64_t max_events)
{
	struct ring *r = &s->r;
	size_t w = r->len - s->pos < wsize ? r->len - s->pos : wsize;
	uint64_t stamp = xevb_realtime_ns();

	while (s->patched < r->n && r->ev_off[s->patched] < s->pos + w && s->sent < max_events) {
		uint8_t *h = r->buf + r->ev_off[s->patched++];
		xevb_st32(h + 12, s->next_id++);
		xevb_st64(h + 24, stamp);
		s->sent++;
	}
	if (s->sent == max_events && s->patched < r->n && r->ev_off[s->patched] < s->pos + w)
		w = r->ev_off[s->patched] - s->pos; /* the last event wanted ends here */
	sender_send(&s->snd, r->buf + s->pos, w);
	s->pos += w;
	if (s->pos == r->len) {
		sender_wrap(&s->snd);
		s->pos = 0;
		s->patched = 0;
	}
}

/* Finish the event the last write cut, so the stream ends whole. */
static void stream_close(struct stream *s)
{
	if (s->pos % s->r.ev_bytes)
		sender_send(&s->snd, s->r.buf + s->pos, s->r.ev_bytes - s->pos % s->r.ev_bytes);
	sender_close(&s->snd);
	free(s->r.buf);
	free(s->r.ev_off);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dest", required_argument, 0, 'd' },       { "case", required_argument, 0, 'c' },
		{ "duration", required_argument, 0, 't' },   { "events", required_argument, 0, 'n' },
		{ "ring-bytes", required_argument, 0, 'r' }, { "write-size", required_argument, 0, 'w' },
		{ "run", required_argument, 0, 'R' },        { "check-cost", no_argument, 0, 'C' },
		{ "send", required_argument, 0, 'S' },       { "rate", required_argument, 0, 'p' },
		{ "slice-ms", required_argument, 0, 'l' },   { 0 },
	};
	const struct flood_case *c = &cases[0];
	const char *dest[2] = { NULL, NULL };
	uint64_t max_events = UINT64_MAX, ring_bytes = 8u << 20, wsize = 64u << 10, secs = 3, rate = 0;
	uint64_t slice_ms = 200, t0, deadline, slice_end, now;
	uint32_t run = 1, n_dest = 0, cur = 0;
	enum send_kind kind = SEND_WRITE;
	struct stream st[2] = { 0 };
	struct rusage ru;
	bool cost = false;
	int o;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		bool ok = true;
		switch (o) {
		case 'd':
			ok = n_dest < 2;
			if (ok)
				dest[n_dest++] = optarg;
			break;
		case 'c':
			ok = false;
			for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
				if (!strcmp(optarg, cases[i].name)) {
					c = &cases[i];
					ok = true;
				}
			break;
		case 't':
			ok = xevb_parse_u64("duration", optarg, 1, 3600, &secs);
			break;
		case 'n':
			ok = xevb_parse_u64("events", optarg, 1, UINT64_MAX, &max_events);
			break;
		case 'r':
			ok = xevb_parse_u64("ring-bytes", optarg, 1, 1u << 30, &ring_bytes);
			break;
		case 'w':
			ok = xevb_parse_u64("write-size", optarg, 1, 1u << 24, &wsize);
			break;
		case 'R':
			ok = xevb_parse_u32("run", optarg, 0, UINT32_MAX, &run);
			break;
		case 'p':
			ok = xevb_parse_u64("rate", optarg, 1, 100000000, &rate);
			break;
		case 'l':
			ok = xevb_parse_u64("slice-ms", optarg, 1, 60000, &slice_ms);
			break;
		case 'C':
			cost = true;
			break;
		case 'S':
			ok = false;
			for (size_t i = 0; i < sizeof(send_names) / sizeof(send_names[0]); i++)
				if (!strcmp(optarg, send_names[i])) {
					kind = (enum send_kind)i;
					ok = true;
				}
			break;
		default:
			ok = false;
		}
		if (!ok) {
			fprintf(stderr,
				"usage: sink_flood --dest ADDR:PORT [--dest ADDR:PORT [--slice-ms MS]] [--case l1|hlt]\n"
				"       [--duration S] [--events N] [--ring-bytes B] [--write-size B] [--run R]\n"
				"       [--send write|uring|uring-zc] [--rate EVENTS_PER_S]\n"
				"       sink_flood --check-cost [--case l1|hlt] [--events N]\n");
			return 2;
		}
	}
	if (cost)
		return check_cost(c, max_events);
	if (!n_dest)
		die("--dest", "missing (the sink's IPv4ADDR:PORT)");
	if (n_dest == 2 && (rate || kind != SEND_WRITE))
		die("--dest twice", "takes neither --rate nor --send other than write");
	signal(SIGPIPE, SIG_IGN);
	for (uint32_t i = 0; i < n_dest; i++) {
		ring_build(&st[i].r, c, ring_bytes, run);
		st[i].snd = (struct sender){ .kind = kind, .fd = connect_to(dest[i]) };
		sender_open(&st[i].snd, &st[i].r);
	}
	t0 = xevb_now_ns();
	deadline = t0 + secs * 1000000000ull;
	slice_end = t0 + slice_ms * 1000000ull;
	for (now = t0; now < deadline && st[cur].sent < max_events; now = xevb_now_ns()) {
		if (n_dest == 2 && now >= slice_end) {
			cur ^= 1;
			slice_end = now + slice_ms * 1000000ull;
		}
		stream_write(&st[cur], wsize, max_events);
		if (rate)
			pace(t0, st[cur].sent, rate);
	}
	for (uint32_t i = 0; i < n_dest; i++)
		stream_close(&st[i]);
	now = xevb_now_ns();
	getrusage(RUSAGE_SELF, &ru);
	{
		double el = (double)(now - t0) / 1e9;
		uint64_t sent = st[0].sent + st[1].sent;
		uint64_t calls = st[0].snd.calls + st[1].snd.calls;
		printf("{\"case\":\"%s\",\"sources\":%u,\"fragment_bytes\":%u,\"event_bytes\":%zu,"
		       "\"ring_events\":%u,\"write_size\":%llu,\"events\":%llu,\"dest_events\":[%llu,%llu],"
		       "\"bytes\":%llu,\"elapsed_s\":%.3f,\"events_per_s\":%.1f,\"gbps\":%.3f,"
		       "\"cpu_user_s\":%.3f,\"cpu_sys_s\":%.3f,\"send\":\"%s\",\"sends\":%llu,"
		       "\"zc_notifs\":%llu,\"zc_copied\":%llu}\n",
		       c->name, c->n_src, c->frag_len, st[0].r.ev_bytes, st[0].r.n, (unsigned long long)wsize,
		       (unsigned long long)sent, (unsigned long long)st[0].sent, (unsigned long long)st[1].sent,
		       (unsigned long long)(sent * st[0].r.ev_bytes), el, (double)sent / el,
		       (double)sent * (double)st[0].r.ev_bytes * 8 / el / 1e9, tv_s(ru.ru_utime),
		       tv_s(ru.ru_stime), send_names[kind], (unsigned long long)calls,
		       (unsigned long long)st[0].snd.zc_notifs, (unsigned long long)st[0].snd.zc_copied);
	}
	return 0;
}

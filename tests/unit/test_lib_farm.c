// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxevb's farm-node receiver against a builder played by the test: EVNT
 * records from the tools' encoder over a local TCP connection, STATUS
 * messages from the tools' control codec (user/ctl/ctl_proto.c,
 * ctl_auth.c) on a UDP socket, as `xevb build --sink` sends them. Every
 * wait is bounded in time and waits on a condition.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/clock.h"
#include "ctl/ctl_auth.h"
#include "ctl/ctl_proto.h"
#include "test_lib.h"

TestSuite(lib_farm, .timeout = 60);

#define WAIT_NS   (10ull * 1000000000ull) /* the most any condition is waited for */
#define BLD_EPOCH 0x1234567u
#define LOCALHOST htonl(INADDR_LOOPBACK)

struct rig {
	struct xevb_farm *f;
	int tcp;                /* the builder's event connection */
	int udp;                /* the builder's control socket */
	int dfm;                /* the DFM's control socket (-1: none) */
	struct sockaddr_in ctl; /* the farm node's control address */
	uint32_t seq;
	struct xevb_ctl_auth *auth; /* a key: seal and open */
	uint32_t next_event;
};

static void quiet(void *ctx, enum xevb_lib_log_level lv, const char *msg)
{
	(void)ctx;
	if (lv <= XEVB_LIB_LOG_WARN)
		fprintf(stderr, "  (libxevb: %s)\n", msg);
}

static int udp_socket(struct sockaddr_in *me)
{
	socklen_t sl = sizeof(*me);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	cr_assert(ge(int, fd, 0));
	*me = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = LOCALHOST };
	cr_assert(eq(int, bind(fd, (struct sockaddr *)me, sizeof(*me)), 0));
	cr_assert(eq(int, getsockname(fd, (struct sockaddr *)me, &sl), 0));
	return fd;
}

static void connect_builder(struct rig *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = LOCALHOST,
				  .sin_port = htons(xevb_farm_port(r->f)) };

	r->tcp = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(ge(int, r->tcp, 0));
	cr_assert(eq(int, connect(r->tcp, (struct sockaddr *)&sa, sizeof(sa)), 0));
}

/* A farm node on 127.0.0.1 (any ports), a builder connected to it; o may change the options. */
static void rig_open(struct rig *r, struct xevb_farm_opts *o)
{
	char err[XEVB_ERRBUF_SIZE] = "";

	memset(r, 0, sizeof(*r));
	o->listen = o->listen ? o->listen : "127.0.0.1:0";
	o->flags |= XEVB_FARM_CTL_ANY_PORT;
	o->log_fn = quiet;
	r->f = xevb_farm_open(o, err);
	cr_assert(r->f != NULL, "%s", err);
	r->ctl = (struct sockaddr_in){ .sin_family = AF_INET,
				       .sin_addr.s_addr = LOCALHOST,
				       .sin_port = htons(xevb_farm_ctl_port(r->f)) };
	r->udp = udp_socket(&(struct sockaddr_in){ 0 });
	r->dfm = -1;
	connect_builder(r);
}

static void rig_close(struct rig *r)
{
	xevb_farm_close(r->f);
	close(r->tcp);
	close(r->udp);
	if (r->dfm >= 0)
		close(r->dfm);
	free(r->auth);
}

/* The builder's STATUS to the farm node, as build_ctl.c sends it every 100 ms. */
static void builder_status(struct rig *r, uint64_t sent)
{
	struct xevb_ctl_msg m = { .h = { .type = XEVB_CTL_STATUS,
					 .role = XEVB_ROLE_BUILDER,
					 .sender_id = 1,
					 .epoch = BLD_EPOCH,
					 .seq = ++r->seq,
					 .n_recs = 1 } };
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	m.u.status.done_total = sent;
	len = xevb_ctl_encode(&m, buf, sizeof(buf));
	cr_assert(gt(sz, len, 0));
	if (r->auth)
		len = xevb_ctl_auth_seal(r->auth, buf, len, sizeof(buf), r->ctl.sin_addr.s_addr, r->ctl.sin_port,
					 xevb_ctl_auth_now());
	cr_assert(eq(int, (int)sendto(r->udp, buf, len, 0, (struct sockaddr *)&r->ctl, sizeof(r->ctl)), (int)len));
}

/*
 * The next control message on fd that passes want (NULL: any), the farm
 * node working meanwhile: true with m filled, false after WAIT_NS.
 */
static bool ctl_wait(struct rig *r, int fd, struct xevb_ctl_msg *m,
		     bool (*want)(const struct xevb_ctl_msg *, void *), void *ctx)
{
	uint64_t end = xevb_now_ns() + WAIT_NS;
	uint8_t buf[XEVB_CTL_MAX_LEN + 64];

	while (xevb_now_ns() < end) {
		struct sockaddr_in me = { 0 };
		socklen_t sl = sizeof(me);
		ssize_t n;

		xevb_farm_poll(r->f, 2);
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			continue;
		getsockname(fd, (struct sockaddr *)&me, &sl);
		if (r->auth)
			cr_assert(eq(int,
				     xevb_ctl_auth_open(r->auth, buf, (size_t)n, LOCALHOST, me.sin_port,
							xevb_ctl_auth_now(), m),
				     XEVB_CTL_OK));
		else
			cr_assert(eq(int, xevb_ctl_decode(buf, (size_t)n, m), XEVB_CTL_OK));
		cr_assert(eq(u8, m->h.role, XEVB_ROLE_SINK));
		if (!want || want(m, ctx))
			return true;
	}
	return false;
}

static bool status_done(const struct xevb_ctl_msg *m, void *ctx)
{
	return m->h.type == XEVB_CTL_STATUS && m->u.status.done_total == *(uint64_t *)ctx;
}

static bool status_busy(const struct xevb_ctl_msg *m, void *ctx)
{
	return m->h.type == XEVB_CTL_STATUS && !!(m->u.status.flags & XEVB_CTL_ST_BUSY) == *(bool *)ctx;
}

/* n events (ids next_event..) from the builder, each in pieces of at most piece bytes (0: whole). */
static void send_events(struct rig *r, uint32_t n, uint32_t nsrc, size_t piece)
{
	for (uint32_t i = 0; i < n; i++) {
		size_t len, at = 0;
		uint32_t id = r->next_event++;
		uint8_t *b = tl_encode(9, id, nsrc, NULL, NULL, (id + 1) % 3 ? 0 : 0x2, &len);
		while (at < len) {
			size_t k = piece && len - at > piece ? piece : len - at;
			cr_assert(eq(int, (int)write(r->tcp, b + at, k), (int)k));
			at += k;
			/* Read as we go: the test is the builder and the farm node in one thread. */
			xevb_farm_process(r->f);
		}
		free(b);
	}
}

/* Take n events (waiting for them), check each, keep their views in evs. */
static void take_events(struct rig *r, uint32_t n, uint32_t first_id, const struct xevb_ev **evs)
{
	uint64_t end = xevb_now_ns() + WAIT_NS;
	uint32_t got = 0;

	while (got < n && xevb_now_ns() < end) {
		const struct xevb_ev *ev;
		int rc = xevb_farm_next(r->f, &ev);
		cr_assert(ge(int, rc, 0), "%s", xevb_farm_error(r->f));
		if (!rc) {
			xevb_farm_poll(r->f, 5);
			continue;
		}
		cr_assert(eq(u32, ev->event_id, first_id + got));
		cr_assert(eq(u32, ev->run_number, 9));
		cr_assert(eq(u32, ev->builder_addr, LOCALHOST));
		tl_check_payloads(ev);
		evs[got++] = ev;
	}
	cr_assert(eq(u32, got, n), "events arrived: %u of %u", got, n);
}

/* event_check: every event offered is counted; those with a source 2 of 9 bytes said no to. */
static unsigned offered;
static int reject_nine(void *ctx, const struct xevb_ev *ev)
{
	struct xevb_ev_frag f;

	(void)ctx;
	offered++;
	cr_assert(eq(u32, ev->builder_addr, htonl(INADDR_LOOPBACK)), "the view is whole when checked");
	return !xevb_ev_find(ev, 2, &f) && f.length == 9;
}

Test(lib_farm, events_views_and_credits_to_the_builder)
{
	XEVB_OPTS(xevb_farm_opts, o, .credits = 8, .event_check = reject_nine);
	const struct xevb_ev *evs[8];
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct xevb_ctl_msg m;
	struct xevb_ev_frag fr;
	struct rig r;
	uint64_t two = 2, zero = 0;

	rig_open(&r, &o);
	/* The builder speaks: credits come back at once, with its epoch. */
	builder_status(&r, 0);
	cr_assert(ctl_wait(&r, r.udp, &m, status_done, &zero), "no STATUS from the farm node");
	cr_assert(eq(u32, m.u.status.credits, 8));
	cr_assert(eq(u32, m.u.status.peer_epoch, BLD_EPOCH));
	cr_assert(eq(u32, m.u.status.flags, 0));

	send_events(&r, 5, 6, 0);
	take_events(&r, 5, 0, evs);
	/* Zero copy: the fragments point into the event's bytes, which stay put. */
	cr_assert(eq(int, xevb_ev_frag(evs[1], 2, &fr), 0));
	cr_assert(ge(ptr, (void *)fr.payload, (void *)evs[1]->data));
	cr_assert(le(ptr, (void *)(fr.payload + fr.length), (void *)(evs[1]->data + evs[1]->length)));
	cr_assert(eq(u16, evs[2]->n_frags, 5), "event 2 lacks source 1");
	cr_assert(eq(int, xevb_ev_missing(evs[2], 0), 1));
	/* The caller's check ran in the decoder: each event offered once, source 2's 9 bytes said no to. */
	for (int i = 0; i < 5; i++)
		cr_assert(ne(u32, evs[i]->flags & XEVB_EV_CHECK_BAD, 0), "event %d", i);
	cr_assert(eq(u32, offered, 5));
	/* Two of eight done: a quarter of the credits, back at once. */
	xevb_farm_done(r.f, evs[0]);
	xevb_farm_done(r.f, evs[1]);
	cr_assert(ctl_wait(&r, r.udp, &m, status_done, &two), "no STATUS with done_total 2");
	cr_assert(eq(u32, m.u.status.load, 3));
	for (int i = 2; i < 5; i++)
		xevb_farm_done(r.f, evs[i]);
	cr_assert(eq(int, xevb_farm_stats(r.f, &st), 0));
	cr_assert(eq(u64, st.events, 5));
	cr_assert(eq(u64, st.done, 5));
	cr_assert(eq(u64, st.held, 0));
	cr_assert(eq(u64, st.incomplete, 1));
	cr_assert(eq(u64, st.conns_open, 1));
	cr_assert(eq(u32, st.n_builders, 1));
	struct xevb_farm_builder b = { .sz = sizeof(b) };
	cr_assert(eq(int, xevb_farm_builder(r.f, 0, &b), 0));
	cr_assert(eq(u32, b.addr, LOCALHOST));
	cr_assert(eq(u64, b.events, 5));
	cr_assert(eq(u64, b.conn_done, 5));
	cr_assert(eq(u32, b.epoch, BLD_EPOCH));
	cr_assert(eq(int, xevb_farm_builder(r.f, 1, &b), -ENOENT));
	rig_close(&r);
}

/* The offsets of ev's records as a walk from record to record finds them: what its index must hold. */
static void walk_offsets(const struct xevb_ev *ev, uint32_t *offs)
{
	size_t off = XEVB_EVT_HLEN;

	for (uint32_t i = 0; i < ev->n_frags; i++) {
		offs[i] = (uint32_t)off;
		off += XEVB_EVT_REC_HLEN + XEVB_PAD4(xevb_ld32(ev->data + off + 4));
	}
}

static void index_is_right(const struct xevb_ev *ev)
{
	uint32_t want[TL_MAXS];
	const uint32_t *got = xevb_ev_offsets(ev);

	walk_offsets(ev, want);
	for (uint32_t i = 0; i < ev->n_frags; i++)
		cr_assert(eq(u32, got[i], want[i]), "event %u record %u", ev->event_id, i);
	tl_check_payloads(ev);
}

/* event_check: the index of every other event asked for in the decoder, its address kept. */
static const uint32_t *checked_offs[8];
static int index_in_check(void *ctx, const struct xevb_ev *ev)
{
	(void)ctx;
	if (ev->event_id % 2 == 0 && ev->event_id < 8)
		checked_offs[ev->event_id] = xevb_ev_offsets(ev);
	return 0;
}

static void *offsets_thread(void *ev)
{
	return (void *)xevb_ev_offsets(ev);
}

/*
 * A farm node's views write their fragment index when first asked for (in
 * the caller's check or later, by any of the threads it hands a view to):
 * the index is right, stays where it was first given for as long as the
 * view, and a view used again for another event gets that event's.
 */
Test(lib_farm, a_views_fragment_index_is_written_when_asked_for)
{
	XEVB_OPTS(xevb_farm_opts, o, .credits = 16, .event_check = index_in_check);
	const struct xevb_ev *evs[8];
	pthread_t th[4];
	void *got[4];
	struct rig r;

	rig_open(&r, &o);
	send_events(&r, 4, 7, 0);
	take_events(&r, 4, 0, evs);
	for (int i = 0; i < 4; i++) {
		const uint32_t *early = checked_offs[i];
		cr_assert(eq(int, i % 2 == 0, early != NULL), "event %d: asked for in the check", i);
		if (i == 3) {
			/* Never asked for yet: four threads ask at once, all get the one index. */
			for (int t = 0; t < 4; t++)
				cr_assert(
					eq(int, pthread_create(&th[t], NULL, offsets_thread, (void *)evs[i]), 0));
			for (int t = 0; t < 4; t++) {
				cr_assert(eq(int, pthread_join(th[t], &got[t]), 0));
				cr_assert(eq(ptr, got[t], got[0]));
			}
		}
		index_is_right(evs[i]);
		if (early)
			cr_assert(eq(ptr, (void *)xevb_ev_offsets(evs[i]), (void *)early), "event %d", i);
	}
	for (int i = 0; i < 4; i++)
		xevb_farm_done(r.f, evs[i]);
	/* The same views again, for events of more and of fewer sources. */
	send_events(&r, 2, 12, 0);
	send_events(&r, 2, 3, 0);
	take_events(&r, 4, 4, evs);
	for (int i = 0; i < 4; i++) {
		cr_assert(eq(u16, evs[i]->n_expected, i < 2 ? 12 : 3));
		index_is_right(evs[i]);
		xevb_farm_done(r.f, evs[i]);
	}
	rig_close(&r);
}

Test(lib_farm, busy_and_not_busy_go_out_at_once)
{
	XEVB_OPTS(xevb_farm_opts, o, .credits = 8); /* Busy above 10 held, not-Busy below 1 */
	const struct xevb_ev *evs[12];
	struct xevb_ctl_msg m;
	struct rig r;
	bool on = true, off = false;

	rig_open(&r, &o);
	builder_status(&r, 0);
	cr_assert(ctl_wait(&r, r.udp, &m, status_busy, &off));
	{
		struct xevb_farm_stats st = { .sz = sizeof(st) };
		xevb_farm_stats(r.f, &st);
		cr_assert(eq(u32, st.busy_mark_high, 10));
		cr_assert(eq(u32, st.busy_mark_low, 1));
	}
	send_events(&r, 11, 4, 0);
	take_events(&r, 11, 0, evs);
	cr_assert(ctl_wait(&r, r.udp, &m, status_busy, &on), "no Busy STATUS");
	for (int i = 0; i < 11; i++)
		xevb_farm_done(r.f, evs[i]);
	cr_assert(ctl_wait(&r, r.udp, &m, status_busy, &off), "no not-Busy STATUS");
	cr_assert(eq(u64, m.u.status.done_total, 11));
	/* The caller's own Busy. */
	cr_assert(eq(int, xevb_farm_set_busy(r.f, XEVB_BUSY_ON), 0));
	cr_assert(ctl_wait(&r, r.udp, &m, status_busy, &on));
	cr_assert(eq(int, xevb_farm_set_busy(r.f, XEVB_BUSY_AUTO), 0));
	cr_assert(ctl_wait(&r, r.udp, &m, status_busy, &off));
	cr_assert(eq(int, xevb_farm_set_busy(r.f, 7), -EINVAL));
	rig_close(&r);
}

static bool received_n(const struct xevb_ctl_msg *m, void *ctx)
{
	return m->h.type == XEVB_CTL_RECEIVED && m->h.n_recs == 1 && m->u.received[0].events == *(uint64_t *)ctx;
}

Test(lib_farm, received_goes_to_the_dfm)
{
	struct sockaddr_in dfm;
	int dfd = udp_socket(&dfm);
	char dfm_s[64];
	const struct xevb_ev *evs[7];
	struct xevb_ctl_msg m;
	struct rig r;
	uint64_t seven = 7;

	snprintf(dfm_s, sizeof(dfm_s), "127.0.0.1:%u", ntohs(dfm.sin_port));
	XEVB_OPTS(xevb_farm_opts, o, .dfm = dfm_s);
	rig_open(&r, &o);
	r.dfm = dfd;
	/* Before any event, and with the caller only waiting on the descriptor: an empty RECEIVED. */
	{
		struct pollfd p = { .fd = xevb_farm_fd(r.f), .events = POLLIN };
		uint8_t buf[XEVB_CTL_MAX_LEN];
		cr_assert(eq(int, poll(&p, 1, 5000), 1), "the descriptor is readable at once");
		xevb_farm_process(r.f);
		struct pollfd q = { .fd = dfd, .events = POLLIN };
		cr_assert(eq(int, poll(&q, 1, 5000), 1));
		ssize_t n = recv(dfd, buf, sizeof(buf), 0);
		cr_assert(eq(int, xevb_ctl_decode(buf, (size_t)n, &m), XEVB_CTL_OK));
		cr_assert(eq(u8, m.h.type, XEVB_CTL_RECEIVED));
	}
	send_events(&r, 7, 3, 0);
	/* Received, not yet done: RECEIVED counts what arrived. */
	take_events(&r, 7, 0, evs);
	cr_assert(ctl_wait(&r, r.dfm, &m, received_n, &seven), "no RECEIVED of 7 events");
	cr_assert(eq(u32, m.u.received[0].builder_addr, LOCALHOST));
	for (int i = 0; i < 7; i++)
		xevb_farm_done(r.f, evs[i]);
	rig_close(&r);
}

Test(lib_farm, events_in_pieces_and_across_buffers_stay_put)
{
	XEVB_OPTS(xevb_farm_opts, o, .credits = 4000);
	static const struct xevb_ev *evs[3000];
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct rig r;

	rig_open(&r, &o);
	/* Byte by byte, then in odd pieces. */
	send_events(&r, 1, 5, 1);
	send_events(&r, 2, 7, 13);
	take_events(&r, 3, 0, evs);
	for (int i = 0; i < 3; i++)
		xevb_farm_done(r.f, evs[i]);
	/* 3000 events of about 3.7 kB: 11 buffers of 1 MiB, all held at once, none moved. */
	send_events(&r, 3000, 40, 0);
	take_events(&r, 3000, 3, evs);
	for (int i = 0; i < 3000; i++)
		tl_check_payloads(evs[i]);
	cr_assert(eq(int, xevb_farm_stats(r.f, &st), 0));
	cr_assert(ge(u64, st.buffer_bytes, 3u << 20));
	for (int i = 0; i < 3000; i++)
		xevb_farm_done(r.f, evs[i]);
	cr_assert(eq(int, xevb_farm_stats(r.f, &st), 0));
	cr_assert(le(u64, st.buffer_bytes, 1u << 21), "buffers go back as events are done: %llu",
		  (unsigned long long)st.buffer_bytes);
	rig_close(&r);
}

Test(lib_farm, reading_pauses_at_max_buffer_and_resumes_on_done)
{
	XEVB_OPTS(xevb_farm_opts, o, .max_event = 65536, .max_buffer = (1u << 20) + 65536);
	static const struct xevb_ev *evs[4000];
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	uint64_t end = xevb_now_ns() + WAIT_NS;
	uint32_t got = 0;
	struct rig r;
	int fl;

	rig_open(&r, &o);
	/*
	 * 4000 events of about 500 bytes (2 MB) into a budget of one 1 MiB
	 * buffer: the test writes without blocking, as it is the farm node too.
	 */
	fl = fcntl(r.tcp, F_GETFL);
	fcntl(r.tcp, F_SETFL, fl | O_NONBLOCK);
	{
		size_t len, at;
		uint8_t *all = malloc(4000 * 1024), *b;
		size_t total = 0;
		for (uint32_t i = 0; i < 4000; i++) {
			b = tl_encode(9, i, 12, NULL, NULL, (i + 1) % 3 ? 0 : 0x2, &len);
			cr_assert(le(sz, len, 1024));
			memcpy(all + total, b, len);
			total += len;
			free(b);
		}
		at = 0;
		/* Hold every event: the farm node must stop reading, not grow. */
		while (at < total && xevb_now_ns() < end) {
			ssize_t n = write(r.tcp, all + at, total - at);
			if (n > 0)
				at += (size_t)n;
			const struct xevb_ev *ev;
			while (xevb_farm_next(r.f, &ev) == 1)
				evs[got++] = ev;
			xevb_farm_stats(r.f, &st);
			cr_assert(le(u64, st.buffer_bytes, o.max_buffer));
			if (st.read_pauses && n <= 0)
				break;
			xevb_farm_poll(r.f, 1);
		}
		cr_assert(gt(u64, st.read_pauses, 0), "reading never paused");
		cr_assert(lt(u32, got, 4000));
		/* Done with everything as it comes: the rest arrives. */
		while (got < 4000 && xevb_now_ns() < end) {
			const struct xevb_ev *ev;
			for (uint32_t i = 0; i < got; i++)
				if (evs[i]) {
					tl_check_payloads(evs[i]);
					xevb_farm_done(r.f, evs[i]);
					evs[i] = NULL;
				}
			if (at < total) {
				ssize_t n = write(r.tcp, all + at, total - at);
				if (n > 0)
					at += (size_t)n;
			}
			xevb_farm_poll(r.f, 1);
			while (xevb_farm_next(r.f, &ev) == 1) {
				cr_assert(eq(u32, ev->event_id, got));
				evs[got++] = ev;
			}
		}
		free(all);
	}
	cr_assert(eq(u32, got, 4000));
	rig_close(&r);
}

Test(lib_farm, a_broken_stream_costs_its_connection_only)
{
	XEVB_OPTS(xevb_farm_opts, o);
	const struct xevb_ev *evs[2];
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	uint64_t end = xevb_now_ns() + WAIT_NS;
	struct rig r;
	int bad;

	rig_open(&r, &o);
	bad = r.tcp;
	connect_builder(&r);
	cr_assert(eq(int, (int)write(bad, "GARBAGE!", 8), 8));
	send_events(&r, 2, 3, 0);
	take_events(&r, 2, 0, evs);
	do {
		xevb_farm_poll(r.f, 5);
		xevb_farm_stats(r.f, &st);
	} while (st.conns_broken < 1 && xevb_now_ns() < end);
	cr_assert(eq(u64, st.conns_broken, 1));
	cr_assert(eq(u64, st.broken[XEVB_BROKEN_MAGIC], 1), "counted by kind");
	cr_assert(eq(u64, st.conns_open, 1));
	cr_assert(eq(u64, st.conns_total, 2));
	xevb_farm_done(r.f, evs[0]);
	xevb_farm_done(r.f, evs[1]);
	close(bad);
	rig_close(&r);
}

static void key_file(char *path, size_t len, const char *dir, uint8_t fill)
{
	char hex[65];
	FILE *f;

	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", (uint8_t)(fill + i)); /* one byte repeated is no key */
	snprintf(path, len, "%s/run.key", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	fprintf(f, "%s\n", hex);
	fclose(f);
	cr_assert(eq(int, chmod(path, 0600), 0));
}

Test(lib_farm, sealed_with_the_run_key)
{
	char dir[256], key[512];
	uint8_t k[32];
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct xevb_ctl_msg m;
	struct rig r;
	uint64_t zero = 0;

	tl_tmpdir(dir, sizeof(dir));
	key_file(key, sizeof(key), dir, 0xab);
	for (int i = 0; i < 32; i++)
		k[i] = (uint8_t)(0xab + i);
	XEVB_OPTS(xevb_farm_opts, o, .key_file = key);
	rig_open(&r, &o);
	/* Unsealed: refused. */
	builder_status(&r, 0);
	r.auth = malloc(sizeof(*r.auth));
	xevb_ctl_auth_init(r.auth, k);
	/* We are builder 1: the farm node answers on their pair's link. */
	cr_assert(eq(int, xevb_ctl_auth_bind(r.auth, XEVB_ROLE_BUILDER, 1, 1, key, sizeof(key)), 0), "%s", key);
	builder_status(&r, 0);
	cr_assert(ctl_wait(&r, r.udp, &m, status_done, &zero), "no sealed STATUS back");
	cr_assert(eq(u32, m.u.status.peer_epoch, BLD_EPOCH));
	xevb_farm_stats(r.f, &st);
	cr_assert(eq(u64, st.ctl_refused, 1));
	cr_assert(eq(u64, st.ctl_refused_by[XEVB_CTL_REFUSED_UNAUTH], 1), "refused by reason: unauthenticated");
	cr_assert(eq(str, (char *)xevb_ctl_refused_name(XEVB_CTL_REFUSED_UNAUTH), "unauthenticated"));
	rig_close(&r);

	/* A key file others may read is refused, saying so. */
	char err[XEVB_ERRBUF_SIZE] = "";
	chmod(key, 0644);
	XEVB_OPTS(xevb_farm_opts, o2, .listen = "127.0.0.1:0", .key_file = key, .flags = XEVB_FARM_CTL_ANY_PORT);
	cr_assert(eq(ptr, xevb_farm_open(&o2, err), NULL));
	cr_assert(tl_has(err, "chmod 600"), "%s", err);
	tl_rmdir(dir);
}

/* A member key file of role and id (the hex of 0x5a + i): what `xevb key derive` writes. */
static void member_file(const char *path, const char *role, unsigned id)
{
	FILE *f = fopen(path, "w");

	cr_assert(f != NULL);
	fprintf(f, "xevb-member-key %s %u ", role, id);
	for (int i = 0; i < 32; i++)
		fprintf(f, "%02x", (uint8_t)(0x5a + i));
	fputc('\n', f);
	fclose(f);
	cr_assert(eq(int, chmod(path, 0600), 0));
}

/* The farm node takes its own member key only: another role's, another farm node's and a bundle are refused, saying so. */
Test(lib_farm, member_key_files)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE];
	struct xevb_farm *f;
	FILE *b;

	tl_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/member.key", dir);
	XEVB_OPTS(xevb_farm_opts, o, .listen = "127.0.0.1:0", .key_file = path, .id = 3,
		  .flags = XEVB_FARM_CTL_ANY_PORT);
	member_file(path, "sink", 3);
	f = xevb_farm_open(&o, err);
	cr_assert(f != NULL, "%s", err);
	xevb_farm_close(f);
	member_file(path, "source", 3);
	cr_assert(eq(ptr, xevb_farm_open(&o, err), NULL));
	cr_assert(tl_has(err, "not a farm node's member key"), "%s", err);
	member_file(path, "sink", 4);
	cr_assert(eq(ptr, xevb_farm_open(&o, err), NULL));
	cr_assert(tl_has(err, "the member key of farm node 4, but we are farm node 3"), "%s", err);
	b = fopen(path, "w");
	cr_assert(b != NULL);
	for (int i = 0; i < 4; i++) /* longer than any key: the bundle is named before its size */
		fprintf(b, "xevb-key-bundle builder 1 %064d\n", 0);
	fclose(b);
	cr_assert(eq(ptr, xevb_farm_open(&o, err), NULL));
	cr_assert(tl_has(err, "a builder's key bundle: a farm node takes its own member key"), "%s", err);
	tl_rmdir(dir);
}

Test(lib_farm, run_configuration_membership_and_settings)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE] = "";
	struct sockaddr_in bctl;
	int bfd = udp_socket(&bctl);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct xevb_ctl_msg m;
	struct rig r;
	uint64_t zero = 0;
	FILE *f;

	tl_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/run.ini", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	fprintf(f,
		"; a farm node and one builder\n[run]\nnumber = 9\n\n[dfm]\naddress = 127.0.0.1:1\n\n"
		"[builder 1]\naddress = 127.0.0.1\nctl_port = %u\n\n[sink]\ncredits = 5 ; for all\n\n"
		"[sink 3]\naddress = 127.0.0.1\nport = 5000\n",
		ntohs(bctl.sin_port));
	fclose(f);
	XEVB_OPTS(xevb_farm_opts, o, .run_config = path, .id = 3);
	rig_open(&r, &o);
	/* From a port the file does not name: not a member. */
	builder_status(&r, 0);
	/* From the builder's configured port: admitted, the file's credits. */
	close(r.udp);
	r.udp = bfd;
	builder_status(&r, 0);
	cr_assert(ctl_wait(&r, r.udp, &m, status_done, &zero));
	cr_assert(eq(u32, m.u.status.credits, 5));
	cr_assert(eq(u16, m.h.sender_id, 3));
	xevb_farm_stats(r.f, &st);
	cr_assert(eq(u64, st.ctl_refused, 1));
	cr_assert(eq(u64, st.ctl_refused_by[XEVB_CTL_REFUSED_NOT_MEMBER], 1), "refused by reason: not_member");
	rig_close(&r);

	XEVB_OPTS(xevb_farm_opts, o2, .run_config = path, .id = 4, .listen = "127.0.0.1:0");
	cr_assert(eq(ptr, xevb_farm_open(&o2, err), NULL));
	cr_assert(tl_has(err, "no [sink 4]"), "%s", err);
	tl_rmdir(dir);
}

Test(lib_farm, open_errors_say_what_failed)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	XEVB_OPTS(xevb_farm_opts, o, .listen = "not-an-address");
	XEVB_OPTS(xevb_farm_opts, none);

	cr_assert(eq(ptr, xevb_farm_open(&o, err), NULL));
	cr_assert(eq(int, errno, EINVAL));
	cr_assert(tl_has(err, "not-an-address"), "%s", err);
	cr_assert(eq(ptr, xevb_farm_open(&none, err), NULL));
	cr_assert(tl_has(err, "where to listen"), "%s", err);
	o.listen = "192.0.2.1:5000"; /* not on this host */
	cr_assert(eq(ptr, xevb_farm_open(&o, err), NULL));
	cr_assert(tl_has(err, "192.0.2.1:5000"), "%s", err);
}

Test(lib_farm, the_descriptor_wakes_the_callers_poll)
{
	XEVB_OPTS(xevb_farm_opts, o);
	const struct xevb_ev *ev;
	struct rig r;
	struct pollfd p;
	uint64_t end = xevb_now_ns() + WAIT_NS;
	int got = 0;

	rig_open(&r, &o);
	xevb_farm_process(r.f); /* the accept */
	send_events(&r, 1, 2, 0);
	p = (struct pollfd){ .fd = xevb_farm_fd(r.f), .events = POLLIN };
	while (!got && xevb_now_ns() < end) {
		cr_assert(ge(int, poll(&p, 1, 1000), 0));
		if (p.revents & POLLIN)
			got = xevb_farm_next(r.f, &ev);
	}
	cr_assert(eq(int, got, 1));
	xevb_farm_done(r.f, ev);
	rig_close(&r);
}

Test(lib_farm, a_stalled_partial_event_costs_its_connection)
{
	XEVB_OPTS(xevb_farm_opts, o, .partial_timeout_ms = 200, .flags = XEVB_FARM_NO_CTL);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	uint64_t end = xevb_now_ns() + WAIT_NS;
	struct rig r;
	size_t len;
	uint8_t *b = tl_encode(9, 0, 3, NULL, NULL, 0, &len);

	rig_open(&r, &o);
	cr_assert(eq(u16, xevb_farm_ctl_port(r.f), 0));
	cr_assert(eq(int, (int)write(r.tcp, b, len / 2), (int)(len / 2)));
	free(b);
	/* The caller only waits on the descriptor: the timer wakes it for the check. */
	do {
		struct pollfd p = { .fd = xevb_farm_fd(r.f), .events = POLLIN };
		poll(&p, 1, 500);
		xevb_farm_process(r.f);
		xevb_farm_stats(r.f, &st);
	} while (st.conns_broken < 1 && xevb_now_ns() < end);
	cr_assert(eq(u64, st.conns_broken, 1));
	cr_assert(eq(u64, st.broken[XEVB_BROKEN_STALLED], 1));
	cr_assert(eq(u64, st.conns_open, 0));
	rig_close(&r);
}

/*
 * A busy stream whose reads never end on an event boundary holds part of
 * an event after every read: it is not stalled while events complete.
 */
Test(lib_farm, a_stream_that_always_ends_mid_event_is_not_stalled)
{
	XEVB_OPTS(xevb_farm_opts, o, .partial_timeout_ms = 1000, .flags = XEVB_FARM_NO_CTL);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	uint8_t *b[2];
	size_t len[2];
	uint32_t taken = 0, n = 45;
	struct rig r;

	rig_open(&r, &o);
	b[0] = tl_encode(9, 0, 3, NULL, NULL, 0, &len[0]);
	cr_assert(eq(int, (int)write(r.tcp, b[0], len[0] / 2), (int)(len[0] / 2)));
	/*
	 * Every 50 ms for 2.25 s, an event's end and the next one's start in
	 * one write: the check runs once a second, so the old clock (never
	 * reset) was past the timeout by the second check; only a gap of 1 s
	 * between writes would be a stall.
	 */
	for (uint32_t id = 0; id < n; id++) {
		uint8_t buf[2048];
		size_t rest = len[id & 1] - len[id & 1] / 2, k = rest;
		uint64_t until = xevb_now_ns() + 50000000ull;
		const struct xevb_ev *ev;

		b[(id + 1) & 1] = tl_encode(9, id + 1, 3, NULL, NULL, 0, &len[(id + 1) & 1]);
		cr_assert(le(u64, rest + len[(id + 1) & 1], sizeof(buf)));
		memcpy(buf, b[id & 1] + len[id & 1] / 2, rest);
		if (id + 1 < n) {
			memcpy(buf + rest, b[(id + 1) & 1], len[(id + 1) & 1] / 2);
			k += len[(id + 1) & 1] / 2;
		}
		cr_assert(eq(int, (int)send(r.tcp, buf, k, MSG_NOSIGNAL), (int)k),
			  "the farm node closed the connection after %u events", taken);
		free(b[id & 1]);
		while (xevb_now_ns() < until) {
			xevb_farm_poll(r.f, 5);
			while (xevb_farm_next(r.f, &ev) == 1) {
				cr_assert(eq(u32, ev->event_id, taken++));
				xevb_farm_done(r.f, ev);
			}
		}
	}
	free(b[n & 1]);
	xevb_farm_stats(r.f, &st);
	cr_assert(eq(u64, st.conns_broken, 0), "closed as stalled while its events kept completing");
	cr_assert(eq(u32, taken, n));
	cr_assert(eq(u64, st.conns_open, 1));
	rig_close(&r);
}

/* Waits (bounded) until the handle's stats pass ok. */
static void stats_until(struct rig *r, struct xevb_farm_stats *st, bool (*ok)(const struct xevb_farm_stats *))
{
	uint64_t end = xevb_now_ns() + WAIT_NS;

	do {
		xevb_farm_poll(r->f, 5);
		xevb_farm_stats(r->f, st);
	} while (!ok(st) && xevb_now_ns() < end);
}

static bool one_broken(const struct xevb_farm_stats *st)
{
	return st->conns_broken >= 1;
}

/* A claim of an event of len bytes (its 20 first bytes, as sink_attack.py sends them) and 1 KiB of it. */
static void claim(int fd, uint32_t len)
{
	uint8_t h[20 + 1024] = { 'E', 'V', 'N', 'T', 1 };

	h[16] = (uint8_t)(len >> 24);
	h[17] = (uint8_t)(len >> 16);
	h[18] = (uint8_t)(len >> 8);
	h[19] = (uint8_t)len;
	cr_assert(eq(int, (int)write(fd, h, sizeof(h)), (int)sizeof(h)));
}

/* 1 KiB more of a claimed event: a buffer grows for the claim on a read after the one that saw it. */
static void claim_more(int fd)
{
	static const uint8_t zero[1024];

	cr_assert(eq(int, (int)write(fd, zero, sizeof(zero)), (int)sizeof(zero)));
}

static bool two_buffers(const struct xevb_farm_stats *st)
{
	return st->conns_open == 2 && st->buffer_bytes >= 2u << 20;
}

Test(lib_farm, an_event_the_buffers_cannot_hold_with_none_held_ends_its_connection)
{
	/* Room for one 1 MiB buffer and one largest event: two claims of 2 MiB cannot both grow. */
	XEVB_OPTS(xevb_farm_opts, o, .max_event = 2u << 20, .max_buffer = 3u << 20, .flags = XEVB_FARM_NO_CTL);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	const struct xevb_ev *ev;
	struct rig r;
	int first;

	rig_open(&r, &o);
	first = r.tcp;
	connect_builder(&r);
	claim(first, 2u << 20);
	claim(r.tcp, 2u << 20);
	stats_until(&r, &st, two_buffers);
	claim_more(first);
	claim_more(r.tcp);
	/* Nothing held by the caller: waiting for room could last for ever, so one of them goes. */
	stats_until(&r, &st, one_broken);
	cr_assert(eq(u64, st.broken[XEVB_BROKEN_BUFFER], 1), "buffer_limit %llu",
		  (unsigned long long)st.broken[XEVB_BROKEN_BUFFER]);
	cr_assert(eq(u64, st.conns_open, 1));
	cr_assert(eq(u64, st.read_pauses, 0));
	cr_assert(le(u64, st.buffer_bytes_max, o.max_buffer));
	cr_assert(ge(u64, st.buffer_bytes_max, 2u << 20), "the claim that fits grew: %llu",
		  (unsigned long long)st.buffer_bytes_max);
	cr_assert(eq(int, xevb_farm_next(r.f, &ev), 0));
	close(first);
	rig_close(&r);
}

static bool paused(const struct xevb_farm_stats *st)
{
	return st->read_pauses >= 1;
}

static bool two_open(const struct xevb_farm_stats *st)
{
	return st->conns_open == 2 && st->held == 0;
}

Test(lib_farm, a_paused_connection_goes_on_when_another_closes)
{
	/* Two 1 MiB buffers fit; the third connection's does not while an event is held. */
	XEVB_OPTS(xevb_farm_opts, o, .max_event = 65536, .max_buffer = (2u << 20) + 65536,
		  .flags = XEVB_FARM_NO_CTL);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	const struct xevb_ev *evs[1];
	int fds[3];
	struct rig r;

	rig_open(&r, &o);
	fds[0] = r.tcp;
	send_events(&r, 1, 2, 0);
	take_events(&r, 1, 0, evs); /* held: pausing, not closing, is the answer to a shortage now */
	for (int i = 1; i < 3; i++) {
		connect_builder(&r);
		fds[i] = r.tcp;
		claim(fds[i], 4096);
		stats_until(&r, &st, i == 1 ? two_buffers : paused);
	}
	cr_assert(eq(u64, st.read_pauses, 1));
	cr_assert(eq(u64, st.conns_broken, 0));
	/* The second connection's peer goes: its buffer frees, the paused one is read, finds its peer's claim. */
	close(fds[1]);
	xevb_farm_done(r.f, evs[0]);
	stats_until(&r, &st, two_open);
	cr_assert(eq(u64, st.conns_open, 2), "%llu open", (unsigned long long)st.conns_open);
	cr_assert(eq(u64, st.broken[XEVB_BROKEN_TRUNCATED], 1), "the closed one held part of an event");
	close(fds[0]);
	rig_close(&r);
}

static bool max_refused(const struct xevb_farm_stats *st)
{
	return st->conns_refused_max >= 1;
}

Test(lib_farm, connections_past_max_conns_are_refused_and_counted)
{
	XEVB_OPTS(xevb_farm_opts, o, .max_conns = 1, .flags = XEVB_FARM_NO_CTL);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct rig r;
	int first;

	rig_open(&r, &o);
	xevb_farm_process(r.f);
	first = r.tcp;
	connect_builder(&r);
	stats_until(&r, &st, max_refused);
	cr_assert(eq(u64, st.conns_refused_max, 1));
	cr_assert(eq(u64, st.conns_refused, 1));
	cr_assert(eq(u64, st.accept_fd_limit, 0));
	cr_assert(eq(u64, st.conns_open, 1));
	close(first);
	rig_close(&r);
}

static bool one_open(const struct xevb_farm_stats *st)
{
	return st->conns_open == 1;
}

static bool fd_limited(const struct xevb_farm_stats *st)
{
	return st->accept_fd_limit >= 1;
}

Test(lib_farm, out_of_descriptors_accepting_pauses_and_counts)
{
	XEVB_OPTS(xevb_farm_opts, o, .flags = XEVB_FARM_NO_CTL);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct rlimit rl;
	struct rig r;
	int spare;

	rig_open(&r, &o);
	/* The lowest free descriptor taken and made the last allowed: accept() finds none. */
	spare = open("/dev/null", O_RDONLY);
	cr_assert(ge(int, spare, 0));
	cr_assert(eq(int, getrlimit(RLIMIT_NOFILE, &rl), 0));
	rl.rlim_cur = (rlim_t)spare + 1;
	cr_assert(eq(int, setrlimit(RLIMIT_NOFILE, &rl), 0));
	stats_until(&r, &st, fd_limited);
	cr_assert(ge(u64, st.accept_fd_limit, 1));
	cr_assert(eq(u64, st.conns_refused, st.accept_fd_limit));
	cr_assert(eq(u64, st.conns_open, 0));
	/* A descriptor frees: within a second the builder waiting in the backlog is taken. */
	close(spare);
	stats_until(&r, &st, one_open);
	cr_assert(eq(u64, st.conns_open, 1));
	rig_close(&r);
}

/* One event of len bytes (a multiple of 4, at least 48): one source, a zero payload. */
static uint8_t *big_event(uint32_t id, uint32_t len)
{
	uint8_t *b = calloc(1, len);
	uint32_t plen = len - 44;

	cr_assert(b != NULL);
	memcpy(b, "EVNT", 4);
	b[4] = 1;
	b[7] = 1;  /* n_frags */
	b[11] = 9; /* run */
	xevb_st32(b + 12, id);
	xevb_st32(b + 16, len);
	b[21] = 1; /* n_expected */
	xevb_st32(b + 36, plen);
	xevb_st32(b + 40, xevb_crc32c(0, b + 44, plen));
	return b;
}

Test(lib_farm, a_buffer_grows_in_place_for_a_large_event)
{
	/*
	 * 4 MiB of buffers: another connection's 1 MiB and a 3 MiB event. The
	 * event's connection grows its 1 MiB buffer in place (2 MiB more: 4 in
	 * all), where a new buffer beside the old one (5) would not fit.
	 */
	XEVB_OPTS(xevb_farm_opts, o, .max_event = 3u << 20, .max_buffer = 4u << 20, .flags = XEVB_FARM_NO_CTL);
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	uint64_t end = xevb_now_ns() + WAIT_NS;
	const uint32_t len = 3u << 20;
	uint8_t *b = big_event(0, len);
	const struct xevb_ev *ev = NULL;
	size_t at = 0;
	struct rig r;
	int other;

	rig_open(&r, &o);
	other = r.tcp;
	claim(other, 4096); /* part of a small event: its 1 MiB buffer stays */
	connect_builder(&r);
	fcntl(r.tcp, F_SETFL, fcntl(r.tcp, F_GETFL) | O_NONBLOCK);
	while (!ev && xevb_now_ns() < end) {
		ssize_t n = at < len ? write(r.tcp, b + at, len - at) : 0;
		if (n > 0)
			at += (size_t)n;
		xevb_farm_poll(r.f, 1);
		if (xevb_farm_next(r.f, &ev) != 1)
			ev = NULL;
	}
	cr_assert(ev != NULL, "the 3 MiB event did not arrive");
	cr_assert(eq(u32, ev->length, len));
	xevb_farm_stats(r.f, &st);
	cr_assert(eq(u64, st.conns_broken, 0));
	cr_assert(eq(u64, st.conns_open, 2));
	cr_assert(le(u64, st.buffer_bytes_max, o.max_buffer));
	xevb_farm_done(r.f, ev);
	free(b);
	close(other);
	rig_close(&r);
}

/* Poll the farm node until its run_end has all of want (WAIT_NS at most); the flags then. */
static uint32_t run_end_until(struct rig *r, uint32_t want)
{
	uint64_t end = xevb_now_ns() + WAIT_NS;
	uint32_t e;

	while (((e = xevb_farm_run_end(r->f)) & want) != want && xevb_now_ns() < end)
		xevb_farm_poll(r->f, 5);
	return e;
}

Test(lib_farm, the_streams_end_when_every_builder_closed_in_order)
{
	XEVB_OPTS(xevb_farm_opts, o);
	const struct xevb_ev *evs[3];
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct rig r;
	int cut;

	rig_open(&r, &o);
	cr_assert(eq(u32, xevb_farm_run_end(r.f), 0), "a run with no builder yet goes on");
	/* A second connection cut inside an event: no end while it is the last. */
	cut = r.tcp;
	connect_builder(&r);
	send_events(&r, 3, 3, 0);
	cr_assert(eq(int, (int)write(cut, "EVNT", 4), 4));
	close(cut);
	take_events(&r, 3, 0, evs);
	for (int i = 0; i < 3; i++)
		xevb_farm_done(r.f, evs[i]);
	/* The cut one closed first: the builder's last stream is the one closed in order. */
	stats_until(&r, &st, one_broken);
	cr_assert(eq(u32, xevb_farm_run_end(r.f), 0), "a cut stream is no end");
	close(r.tcp);
	cr_assert(eq(u32, run_end_until(&r, XEVB_END_RUN), XEVB_END_STREAMS | XEVB_END_RUN),
		  "no DFM: the run ends with the streams");
	xevb_farm_stats(r.f, &st);
	cr_assert(eq(u64, st.conns_ended, 1));
	cr_assert(eq(u64, st.broken[XEVB_BROKEN_TRUNCATED], 1));
	cr_assert(eq(u32, st.run_end, XEVB_END_STREAMS | XEVB_END_RUN));
	/* A builder that connects again: its stream is open, the run stays over. */
	connect_builder(&r);
	send_events(&r, 1, 3, 0);
	take_events(&r, 1, 3, evs);
	cr_assert(eq(u32, xevb_farm_run_end(r.f), XEVB_END_RUN));
	xevb_farm_done(r.f, evs[0]);
	rig_close(&r);
}

/* The DFM's BYE to the farm node, from fd. */
static void dfm_bye(struct rig *r, int fd)
{
	struct xevb_ctl_msg m = { .h = { .type = XEVB_CTL_BYE, .role = XEVB_ROLE_DFM, .epoch = 7, .seq = 1 } };
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len = xevb_ctl_encode(&m, buf, sizeof(buf));

	cr_assert(gt(sz, len, 0));
	cr_assert(eq(int, (int)sendto(fd, buf, len, 0, (struct sockaddr *)&r->ctl, sizeof(r->ctl)), (int)len));
}

Test(lib_farm, the_dfm_ends_the_run_once_the_streams_have)
{
	struct sockaddr_in dfm, other;
	int dfd = udp_socket(&dfm), ofd = udp_socket(&other);
	const struct xevb_ev *evs[2];
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	char dfm_s[64];
	struct rig r;

	snprintf(dfm_s, sizeof(dfm_s), "127.0.0.1:%u", ntohs(dfm.sin_port));
	XEVB_OPTS(xevb_farm_opts, o, .dfm = dfm_s);
	rig_open(&r, &o);
	r.dfm = dfd;
	send_events(&r, 2, 3, 0);
	take_events(&r, 2, 0, evs);
	/* A BYE from elsewhere is not the DFM's. */
	dfm_bye(&r, ofd);
	xevb_farm_stats(r.f, &st);
	for (uint64_t end = xevb_now_ns() + WAIT_NS; !st.ctl_unexpected && xevb_now_ns() < end;
	     xevb_farm_stats(r.f, &st))
		xevb_farm_poll(r.f, 5);
	cr_assert(eq(u64, st.ctl_unexpected, 1));
	cr_assert(eq(u64, st.ctl_not_from_dfm, 1), "the BYE from elsewhere dropped as not_from_dfm");
	cr_assert(eq(u64, st.ctl_wrong_role, 0));
	cr_assert(eq(u32, xevb_farm_run_end(r.f), 0));
	dfm_bye(&r, dfd);
	cr_assert(eq(u32, run_end_until(&r, XEVB_END_DFM), XEVB_END_DFM),
		  "the DFM's end, the builder still connected: not over yet");
	close(r.tcp);
	cr_assert(eq(u32, run_end_until(&r, XEVB_END_RUN), XEVB_END_DFM | XEVB_END_STREAMS | XEVB_END_RUN));
	xevb_farm_done(r.f, evs[0]);
	xevb_farm_done(r.f, evs[1]);
	close(ofd);
	rig_close(&r);
}

Test(lib_farm, after_the_dfms_end_a_silent_open_stream_ends_the_run_at_end_wait)
{
	struct sockaddr_in dfm;
	int dfd = udp_socket(&dfm);
	char dfm_s[64];
	struct rig r;

	snprintf(dfm_s, sizeof(dfm_s), "127.0.0.1:%u", ntohs(dfm.sin_port));
	XEVB_OPTS(xevb_farm_opts, o, .dfm = dfm_s, .end_wait_ms = 50);
	rig_open(&r, &o);
	r.dfm = dfd;
	dfm_bye(&r, dfd);
	/* The connection stays open and silent: over after end_wait_ms, the stream not ended. */
	cr_assert(eq(u32, run_end_until(&r, XEVB_END_RUN), XEVB_END_DFM | XEVB_END_RUN));
	rig_close(&r);
}

Test(lib_farm, a_run_configuration_at_the_tools_limits)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE] = "";
	struct xevb_farm *f;
	FILE *fp;

	tl_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/run.ini", dir);
	fp = fopen(path, "w");
	cr_assert(fp != NULL);
	fprintf(fp, "[run]\nnumber = 9\n[dfm]\naddress = 127.0.0.1:1\n");
	/* 1024 builders, 4096 source processes and 4096 farm nodes: what dfm, build and source take. */
	for (int i = 1; i <= 1024; i++)
		fprintf(fp, "[builder %d]\naddress = 127.%d.%d.1\n", i, i / 256, i % 256);
	for (int i = 0; i < 4096; i++)
		fprintf(fp, "[source %d]\naddress = 127.1.%d.%d\nsource_ids = %d\n", i, i / 256, i % 256, i);
	for (int i = 0; i < 4096; i++)
		fprintf(fp, "[sink %d]\naddress = 127.0.0.1\nport = 5000\n", i);
	fclose(fp);
	XEVB_OPTS(xevb_farm_opts, o, .run_config = path, .id = 4095, .listen = "127.0.0.1:0",
		  .flags = XEVB_FARM_CTL_ANY_PORT, .log_fn = quiet);
	f = xevb_farm_open(&o, err);
	cr_assert(f != NULL, "%s", err);
	xevb_farm_close(f);
	tl_rmdir(dir);
}

/* The farm node's refusal names are the builders' and sources' (one JSON key, one label, for one reason). */
Test(lib_farm, refusal_reasons_named_as_the_tools_name_them)
{
	for (int r = 1; r < XEVB_CTL_E__COUNT; r++)
		cr_assert(eq(str, (char *)xevb_ctl_refused_name(r), (char *)xevb_ctl_err_name(r)), "reason %d", r);
	cr_assert(eq(str, (char *)xevb_ctl_refused_name(XEVB_CTL_REFUSED_NOT_MEMBER), "not_member"));
	cr_assert(eq(ptr, (void *)xevb_ctl_refused_name(0), NULL));
	cr_assert(eq(ptr, (void *)xevb_ctl_refused_name(XEVB_CTL_REFUSED__COUNT), NULL));
	cr_assert(eq(ptr, (void *)xevb_ctl_refused_name(-1), NULL));
}

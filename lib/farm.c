// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The farm-node handle: one epoll set holds the listening socket, the
 * builder connections, the control socket and a timer, and is the
 * descriptor the caller polls. process() does what is due; next() hands
 * out whole events in arrival order; done() gives their credit back.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "farm.h"

#define TAG_LISTEN  ((void *)1)
#define TAG_CTL     ((void *)2)
#define TAG_TIMER   ((void *)3)
#define DEF_CREDITS 64
#define DEF_CONNS   1024
#define DEF_BUFFER  (256ull << 20)

/* Defaults for what the caller left zero; the run configuration fills first. */
static int settle_opts(struct xevb_farm *f, char *err)
{
	struct xevb_farm_opts *o = &f->o;

	if (!o->credits)
		o->credits = DEF_CREDITS;
	if (o->busy_high <= 0)
		o->busy_high = 1.2;
	if (o->busy_low <= 0)
		o->busy_low = 0.2;
	if (!o->max_event)
		o->max_event = XL_EVT_MAX_LEN;
	if (!o->max_conns)
		o->max_conns = DEF_CONNS;
	if (!o->max_buffer)
		o->max_buffer = DEF_BUFFER;
	if (!o->ctl_port)
		o->ctl_port = XEVB_CTL_SINK_PORT;
	if (!o->partial_timeout_ms)
		o->partial_timeout_ms = 10000;
	if (!o->end_wait_ms)
		o->end_wait_ms = 5000;
	if (o->max_event < XL_EVT_HLEN || o->max_buffer < (uint64_t)o->max_event + XL_CHUNK) {
		xl_fmt(err, XEVB_ERRBUF_SIZE,
		       "farm: max_buffer %llu must hold at least one largest event (max_event %u) and a 1 MiB "
		       "buffer",
		       (unsigned long long)o->max_buffer, o->max_event);
		return -EINVAL;
	}
	if (!o->listen) {
		xl_fmt(err, XEVB_ERRBUF_SIZE,
		       "farm: where to listen? give listen \"ADDR:PORT\" (or a run_config)");
		return -EINVAL;
	}
	if (xl_parse_addr(o->listen, &f->addr, &f->port, true)) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "farm: listen '%s' is not IPv4 ADDR:PORT such as 198.18.3.1:5000",
		       o->listen);
		return -EINVAL;
	}
	if (o->dfm && xl_parse_addr(o->dfm, &f->dfm.sin_addr.s_addr, &f->dfm.sin_port, false)) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "farm: dfm '%s' is not ADDR:PORT such as 198.18.4.1:23901", o->dfm);
		return -EINVAL;
	}
	f->dfm.sin_family = AF_INET;
	f->dfm.sin_port = htons(f->dfm.sin_port);
	f->ctl_on = !(o->flags & XEVB_FARM_NO_CTL);
	f->chk = (struct xl_check){ .verify = (o->flags & XEVB_FARM_VERIFY_CRC) ? XL_VERIFY_CRC : 0,
				    .fn = o->event_check,
				    .ctx = o->check_ctx };
	if (!f->ctl_on && (o->dfm || o->key_file)) {
		xl_fmt(err, XEVB_ERRBUF_SIZE,
		       "farm: dfm and key_file need the control protocol (no XEVB_FARM_NO_CTL)");
		return -EINVAL;
	}
	return 0;
}

static int listen_on(struct xevb_farm *f, char *err)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = f->addr, .sin_port = htons(f->port) };
	socklen_t sl = sizeof(sa);
	int one = 1;

	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->lfd < 0) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "farm: socket: %s", strerror(errno));
		return -errno;
	}
	setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(f->lfd, 128)) {
		int e = errno;
		xl_fmt(err, XEVB_ERRBUF_SIZE,
		       "farm: listening on %s: %s (is the address on this host? the port free?)", f->o.listen,
		       strerror(e));
		return -e;
	}
	getsockname(f->lfd, (struct sockaddr *)&sa, &sl);
	f->port = ntohs(sa.sin_port);
	return 0;
}

static int watch(struct xevb_farm *f, int fd, void *tag, char *err)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = tag };

	if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &e)) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "farm: epoll: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int open_ctl(struct xevb_farm *f, char *err)
{
	int rc;

	f->ctl.log = &f->log;
	rc = xl_ctl_open(&f->ctl, f->addr, (f->o.flags & XEVB_FARM_CTL_ANY_PORT) ? 0 : f->o.ctl_port, f->o.id, err,
			 XEVB_ERRBUF_SIZE);
	if (rc)
		return rc;
	if (f->o.key_file && (rc = xl_ctl_load_key(&f->ctl, f->o.key_file, err, XEVB_ERRBUF_SIZE)))
		return rc;
	f->ctl.run = f->o.run;
	if ((rc = xl_ctl_bind(&f->ctl, err, XEVB_ERRBUF_SIZE)))
		return rc;
	if (!f->o.key_file)
		xl_log(&f->log, XEVB_LIB_LOG_WARN,
		       "control port %u: no key, control messages are not authenticated: %s (give every process of "
		       "the run the same key: %s; make one with: (umask 077; head -c 32 /dev/urandom > run.key))",
		       ntohs(f->ctl.port),
		       f->members ? "a host that forges a configured peer's address passes as that peer" :
				    "any host that reaches this port passes as a peer",
		       f->members ? "key_file = run.key in [run] of the run configuration" :
				    "the key_file option");
	f->ctl.members = f->members;
	f->ctl.n_members = f->n_members;
	xl_farm_busy_init(f);
	return watch(f, f->ctl.fd, TAG_CTL, err);
}

/* Sockets, epoll and timer, once the options are settled. */
static int start(struct xevb_farm *f, char *err)
{
	int rc;

	f->conns = calloc(f->o.max_conns, sizeof(*f->conns));
	if (!f->conns) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "farm: out of memory");
		return -ENOMEM;
	}
	f->ep = epoll_create1(EPOLL_CLOEXEC);
	f->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (f->ep < 0 || f->tfd < 0) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "farm: epoll or timer: %s", strerror(errno));
		return -errno;
	}
	if ((rc = listen_on(f, err)) || (rc = watch(f, f->lfd, TAG_LISTEN, err)) ||
	    (rc = watch(f, f->tfd, TAG_TIMER, err)))
		return rc;
	if (f->ctl_on && (rc = open_ctl(f, err)))
		return rc;
	/* Due at once: the first RECEIVED tells the DFM we are here before any builder connects. */
	timerfd_settime(f->tfd, 0, &(struct itimerspec){ .it_value.tv_nsec = 1 }, NULL);
	xl_log(&f->log, XEVB_LIB_LOG_INFO, "listening on port %u; %s", f->port,
	       f->ctl_on ? "credits and Busy over the control protocol" : "no control protocol");
	return 0;
}

XEVB_API struct xevb_farm *xevb_farm_open(const struct xevb_farm_opts *opts, char *errbuf)
{
	struct xevb_farm *f = calloc(1, sizeof(*f));
	char listen[64] = "", dfm[64] = "", key[1024] = "";
	int rc = -ENOMEM;

	if (!f) {
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "farm: out of memory");
		goto fail;
	}
	f->ep = f->lfd = f->tfd = f->ctl.fd = -1;
	f->st.sz = sizeof(f->st);
	if ((rc = xl_opts_copy(&f->o, sizeof(f->o), opts, errbuf, XEVB_ERRBUF_SIZE)))
		goto fail;
	f->log = (struct xl_log){ f->o.log_fn, f->o.log_ctx };
	if (f->o.run_config &&
	    (rc = xl_runcfg_apply(f, &f->o, listen, sizeof(listen), dfm, sizeof(dfm), key, sizeof(key), errbuf)))
		goto fail;
	if ((rc = settle_opts(f, errbuf)) || (rc = start(f, errbuf)))
		goto fail;
	/* The caller's strings need not outlive this call. */
	f->o.listen = f->o.dfm = f->o.key_file = f->o.run_config = NULL;
	return f;
fail:
	xevb_farm_close(f);
	errno = -rc;
	return NULL;
}

XEVB_API void xevb_farm_close(struct xevb_farm *f)
{
	struct xl_ev *e, *next;

	if (!f)
		return;
	/* Twice: a datagram, and the DFM waits for it to close its books. */
	if (f->ctl.fd >= 0 && f->dfm.sin_port) {
		xl_farm_received(f);
		xl_farm_received(f);
	}
	f->closing = true;
	while (f->n_conns)
		xl_farm_conn_close(f, f->conns[0], 0, NULL);
	/* Queued views and those still out with the caller hold their chunks. */
	for (e = f->all_evs; e; e = next) {
		next = e->all;
		if (e->state != XL_EV_FREE)
			xl_chunk_put(f, e->chunk);
		xl_ev_release(e);
		free(e);
	}
	xl_farm_drop_spares(f);
	xl_ctl_close(&f->ctl);
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->tfd >= 0)
		close(f->tfd);
	if (f->ep >= 0)
		close(f->ep);
	free(f->conns);
	free(f->builders);
	free(f->members);
	free(f);
}

/* The timer: the next beat, or sooner when credits wait to go back. */
static void arm_timer(struct xevb_farm *f)
{
	uint64_t quarter = (f->o.credits + 3) / 4, at = f->next_hb;
	struct itimerspec its = { 0 };

	for (uint32_t i = 0; i < f->n_builders; i++)
		if (f->builders[i].known && f->builders[i].conn_done - f->builders[i].reported >= quarter &&
		    f->next_push < at)
			at = f->next_push;
	if (at == f->timer_ns)
		return;
	f->timer_ns = at;
	its.it_value.tv_sec = (time_t)(at / 1000000000ull);
	its.it_value.tv_nsec = (long)(at % 1000000000ull);
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	timerfd_settime(f->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void dispatch(struct xevb_farm *f, void *tag)
{
	uint64_t ticks;

	if (tag == TAG_LISTEN) {
		xl_farm_accept(f);
	} else if (tag == TAG_CTL) {
		xl_farm_ctl_rx(f);
	} else if (tag == TAG_TIMER) {
		if (read(f->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
			xl_log(&f->log, XEVB_LIB_LOG_WARN, "timer: %s", strerror(errno));
		f->timer_ns = 0; /* fired: arm it again */
	} else {
		xl_farm_read(f, tag);
	}
}

/* Wait up to timeout_ms on the set, then handle what is ready. */
static int run(struct xevb_farm *f, int timeout_ms)
{
	struct epoll_event evs[64];
	uint64_t now;
	int n;

	n = epoll_wait(f->ep, evs, 64, timeout_ms);
	if (n < 0 && errno != EINTR) {
		xl_fmt(f->err, sizeof(f->err), "epoll_wait: %s", strerror(errno));
		return -errno;
	}
	/* A connection closed by an earlier entry is not in a later one: epoll forgets closed fds. */
	for (int i = 0; i < n; i++)
		dispatch(f, evs[i].data.ptr);
	now = xl_mono_ns();
	for (int i = 0; i < n && (f->run_end & XEVB_END_DFM); i++)
		if (evs[i].data.ptr != TAG_LISTEN && evs[i].data.ptr != TAG_CTL && evs[i].data.ptr != TAG_TIMER)
			f->rx_ns = now;
	xl_farm_check(f, now);
	xl_farm_tick(f, now);
	xl_farm_run_end(f, now);
	arm_timer(f);
	return f->ready_n > INT32_MAX ? INT32_MAX : (int)f->ready_n;
}

XEVB_API int xevb_farm_process(struct xevb_farm *f)
{
	return run(f, 0);
}

XEVB_API int xevb_farm_poll(struct xevb_farm *f, int timeout_ms)
{
	if (f->ready_n)
		timeout_ms = 0;
	return run(f, timeout_ms);
}

XEVB_API int xevb_farm_next(struct xevb_farm *f, const struct xevb_ev **ev)
{
	struct xl_ev *e;
	int rc;

	if (!f->ready_head && (rc = run(f, 0)) <= 0)
		return rc;
	e = f->ready_head;
	f->ready_head = e->next;
	if (!f->ready_head)
		f->ready_tail = NULL;
	f->ready_n--;
	e->state = XL_EV_OUT;
	e->pub.seq = f->seq++;
	f->st.events++;
	f->st.bytes += e->pub.length;
	f->st.frags += e->pub.n_frags;
	f->st.missing_frags += e->pub.n_missing;
	if (e->pub.flags & XEVB_EV_INCOMPLETE)
		f->st.incomplete++;
	else
		f->st.complete++;
	if (e->pub.flags & XEVB_EV_CRC_BAD)
		f->st.crc_bad++;
	*ev = &e->pub;
	return 1;
}

XEVB_API void xevb_farm_done(struct xevb_farm *f, const struct xevb_ev *ev)
{
	struct xl_ev *e = (struct xl_ev *)ev;
	struct xl_builder *b;
	bool resume = false;

	if (!ev || e->state != XL_EV_OUT) {
		xl_log(&f->log, XEVB_LIB_LOG_ERROR,
		       "xevb_farm_done: event %u is not out with the caller (done twice?)", ev ? ev->event_id : 0);
		return;
	}
	b = &f->builders[e->builder];
	b->done++;
	/* Only the builder's current connection counts: it starts afresh on a new one. */
	if (e->conn_gen == b->gen)
		b->conn_done++;
	e->state = XL_EV_FREE;
	/* A chunk freed, or left to its connection alone (which may then reuse it): paused reads may go on. */
	if (((struct xl_chunk *)e->chunk)->refs <= 2 && f->n_paused)
		resume = true;
	xl_chunk_put(f, e->chunk);
	e->chunk = NULL;
	e->next = f->free_evs;
	f->free_evs = e;
	f->st.held--;
	f->st.done++;
	if (resume)
		xl_farm_resume(f);
	/*
	 * Busy clears, or a quarter of a builder's credits is back: STATUS goes
	 * out now (or at the next push). Else nothing is due that the timer
	 * does not bring: no clock read, no walk over the builders per event.
	 */
	if (f->ctl_on && ((f->busy && f->st.held < f->busy_low) ||
			  (b->known && b->conn_done - b->reported >= (f->o.credits + 3) / 4))) {
		xl_farm_tick(f, xl_mono_ns());
		arm_timer(f);
	}
}

XEVB_API int xevb_farm_set_busy(struct xevb_farm *f, int mode)
{
	if (mode != XEVB_BUSY_AUTO && mode != XEVB_BUSY_ON && mode != XEVB_BUSY_OFF) {
		xl_fmt(f->err, sizeof(f->err), "set_busy: mode %d (XEVB_BUSY_AUTO, _ON or _OFF)", mode);
		return -EINVAL;
	}
	f->busy_mode = mode;
	xl_farm_tick(f, xl_mono_ns());
	return 0;
}

XEVB_API int xevb_farm_fd(const struct xevb_farm *f)
{
	return f->ep;
}

XEVB_API uint16_t xevb_farm_port(const struct xevb_farm *f)
{
	return f->port;
}

XEVB_API uint16_t xevb_farm_ctl_port(const struct xevb_farm *f)
{
	return f->ctl_on ? ntohs(f->ctl.port) : 0;
}

XEVB_API uint32_t xevb_farm_run_end(const struct xevb_farm *f)
{
	return f->run_end;
}

XEVB_API int xevb_farm_stats(const struct xevb_farm *f, struct xevb_farm_stats *st)
{
	return xl_stats_copy(st, &f->st, sizeof(f->st));
}

XEVB_API int xevb_farm_builder(const struct xevb_farm *f, uint32_t i, struct xevb_farm_builder *out)
{
	const struct xl_builder *b;
	struct xevb_farm_builder r;

	if (i >= f->n_builders)
		return out->sz ? -ENOENT : -EINVAL;
	b = &f->builders[i];
	r = (struct xevb_farm_builder){ .sz = sizeof(r),
					.addr = b->ip,
					.ctl_port = b->known ? ntohs(b->ctl.sin_port) : 0,
					.conns_open = (uint16_t)b->conns_open,
					.epoch = b->epoch,
					.connections = b->connections,
					.events = b->events,
					.done = b->done,
					.conn_done = b->conn_done };
	return xl_stats_copy(out, &r, sizeof(r));
}

XEVB_API const char *xevb_farm_error(const struct xevb_farm *f)
{
	return f->err;
}

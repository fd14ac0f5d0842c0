// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb dfm: the data-flow manager. Emulates the trigger (a clock at --rate,
 * or as fast as the builders' credits allow), assigns events in blocks to
 * builders (user/ctl/dfm.c has the rules), tells the sources where to send
 * (push) or lets the builders ask them (pull), batches clears, and keeps
 * the books: triggered = complete + incomplete + lost by reason, and closes
 * them at the farm nodes (`xevb sink --dfm`): events DONE that no farm node
 * received are not_delivered, per builder, and the exit status says so.
 * Protocol: docs/control-protocol.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/cli.h"
#include "ctl/ctl_batch.h"
#include "ctl/ctl_sock.h"
#include "ctl/dfm.h"
#include "ctl/dfm_books.h"
#include "ctl/dfm_push.h"
#include "ctl/peer_map.h"
#include "base/notify.h"
#include "ctl/runcfg.h"
#include "cmd/cmd_opts.h"
#include "cmd/cmds.h"
#include "cmd/dfm_app.h"
#include "cmd/dfm_fanout.h"
#include "cmd/dfm_state.h"
#include "ops/dfm_metrics.h"

#define HEARTBEAT_NS 100000000ull
/* A builder silent this long (two of its 10 ms heartbeats) gets a STATUS
   every PROBE_NS: if its process is gone, port unreachable comes back. */
#define PROBE_NS 20000000ull
/* The lists (SOURCES, BUILDERS) go with every 5th heartbeat, and at once when one changes. */
#define LISTS_EVERY 5
/* Datagrams read a round, and sent to the sources a round (dfm_fanout.h), before the trigger's turn again. */
#define RECV_BUDGET        512
#define FAN_BUDGET         32
#define FAN_QUEUE          256 /* messages to every source waiting their turn */
#define WAIT_MIN_NS        200000ull
#define TRIGGER_EVERY      64
#define PUSH_NS_PER_SOURCE 30000ull
#define PUSH_NS_MAX        10000000ull
/*
 * Event ids reserved per write of --state. Small, so that a successor starts
 * just past the dead DFM's last ids: ids far ahead would alias the old
 * events still open in the builders' windows (slot = id mod window). At
 * 100 kHz that is ~100 writes (write + rename, no fsync) per second.
 */
#define STATE_CHUNK 1024u

static struct sockaddr_in builder_sa(const struct xevb_dfm_builder *b)
{
	return (struct sockaddr_in){ .sin_family = AF_INET,
				     .sin_addr.s_addr = b->addr,
				     .sin_port = htons(b->port) };
}

static void flush_builder(struct dfm_app *a, uint32_t bi)
{
	struct xevb_ctl_msg *m = &a->bmsg[bi];
	struct sockaddr_in sa;
	uint64_t now;

	if (!m->h.n_recs)
		return;
	sa = builder_sa(xevb_dfm_builder(a->d, bi));
	now = xevb_now_ns();
	if (!xevb_ctl_send(&a->io, &sa, m))
		for (uint32_t i = 0; i < m->h.n_recs; i++)
			xevb_dfm_assign_sent(a->d, &m->u.assign[i], now);
	m->h.n_recs = 0;
}

static void push_to_sources(void *ctx, struct xevb_ctl_msg *m)
{
	struct dfm_app *a = ctx;

	dfm_fanout_add(&a->fan, DFM_FAN_MSG)->m = *m;
}

/* A queued message to source i (dfm_fanout.h); the heartbeat with its own peer_epoch. */
static void fan_send(void *ctx, uint32_t i, struct dfm_fan_item *it)
{
	struct dfm_app *a = ctx;

	if (!a->src[i].alive)
		return;
	if (it->kind == DFM_FAN_STATUS)
		it->m.u.status.peer_epoch = a->src[i].epoch;
	xevb_ctl_send(&a->io, &a->src[i].sa, &it->m);
}

static uint32_t fan_dest(void *ctx)
{
	return ((struct dfm_app *)ctx)->n_src;
}

static void send_assign(void *ctx, uint32_t bi, const struct xevb_ctl_assign *as)
{
	struct dfm_app *a = ctx;
	struct xevb_ctl_msg *m = &a->bmsg[bi];

	m->h.type = XEVB_CTL_ASSIGN;
	m->u.assign[m->h.n_recs++] = *as;
	if (m->h.n_recs == xevb_ctl_max_recs(XEVB_CTL_ASSIGN))
		flush_builder(a, bi);
	/* Push: the sources learn each block's builder (retries stay between DFM and builder). */
	if (!a->pull && !(as->flags & XEVB_CTL_AS_RETRY))
		dfm_push_add(&a->push, as, bi, xevb_now_ns());
}

/* Our STATUS to builder bi: the heartbeat, or a probe of a silent one. */
static void send_probe(void *ctx, uint32_t bi)
{
	struct dfm_app *a = ctx;
	const struct xevb_dfm_builder *b = xevb_dfm_builder(a->d, bi);
	struct sockaddr_in sa = builder_sa(b);
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	m.u.status = (struct xevb_ctl_status){ .flags = a->pull ? XEVB_CTL_ST_PULL : 0,
					       .peer_epoch = b->epoch,
					       .load = b->outstanding,
					       .credits = b->credits };
	xevb_ctl_send(&a->io, &sa, &m);
}

static enum xevb_live live_check(void *ctx, uint32_t bi, uint64_t now)
{
	return dfm_live_check(&((struct dfm_app *)ctx)->live, bi, now);
}

static void live_end(void *ctx, uint32_t bi)
{
	dfm_live_end(&((struct dfm_app *)ctx)->live, bi);
}

/* A queued message to builder i: the heartbeat is its probe (its own STATUS), else the message. */
static void bfan_send(void *ctx, uint32_t i, struct dfm_fan_item *it)
{
	struct dfm_app *a = ctx;
	struct sockaddr_in sa;

	if (it->kind == DFM_FAN_STATUS) {
		send_probe(a, i);
		return;
	}
	sa = builder_sa(xevb_dfm_builder(a->d, i));
	xevb_ctl_send(&a->io, &sa, &it->m);
}

static uint32_t bfan_dest(void *ctx)
{
	return xevb_dfm_n_builders(((struct dfm_app *)ctx)->d);
}

/* Datagrams that met port unreachable: a builder whose process is gone is dead now. */
static void unreachable(struct dfm_app *a, uint64_t now)
{
	struct sockaddr_in to;

	while (xevb_ctl_unreachable(&a->io, &to))
		xevb_dfm_unreachable(a->d, to.sin_addr.s_addr, ntohs(to.sin_port), now);
}

static void send_clear(void *ctx, const struct xevb_ctl_range *r, uint32_t n)
{
	struct dfm_app *a = ctx;
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_CLEAR, .h.n_recs = (uint16_t)n };

	if (!n)
		return;
	/* Assignments first: a source must never see a clear before the event. */
	dfm_push_flush(&a->push);
	memcpy(m.u.clear, r, n * sizeof(*r));
	dfm_fanout_add(&a->fan, DFM_FAN_MSG)->m = m;
}

static struct src_peer *find_source(struct dfm_app *a, const struct sockaddr_in *from)
{
	int64_t i = peer_map_get(&a->srcmap, peer_key(from->sin_addr.s_addr, from->sin_port));

	return i >= 0 ? &a->src[i] : NULL;
}

/*
 * An entry for a new source process: not more than --max-per-address alive
 * at one address (one host cannot lock the others out), a free entry or
 * the one dead longest; NULL (counted) when refused.
 */
static struct src_peer *new_source_entry(struct dfm_app *a, uint32_t addr)
{
	struct src_peer *best = NULL;
	uint32_t at = 0;

	for (uint32_t i = 0; i < a->n_src; i++)
		at += a->src[i].alive && a->src[i].sa.sin_addr.s_addr == addr;
	if (at >= a->max_per_addr) {
		a->src_per_addr++;
		return NULL;
	}
	if (a->n_src < DFM_MAX_SOURCES)
		return &a->src[a->n_src++];
	for (uint32_t i = 0; i < a->n_src; i++)
		if (!a->src[i].alive && (!best || a->src[i].last_ns < best->last_ns))
			best = &a->src[i];
	if (!best) {
		a->src_full++;
		return NULL;
	}
	a->src_expired++;
	a->sources_changed = true;
	peer_map_del(&a->srcmap, peer_key(best->sa.sin_addr.s_addr, best->sa.sin_port));
	return best;
}

static void on_source_status(struct dfm_app *a, const struct xevb_ctl_msg *m, const struct sockaddr_in *from,
			     uint64_t now)
{
	struct src_peer *p = find_source(a, from);

	if (!p) {
		p = new_source_entry(a, from->sin_addr.s_addr);
		if (!p)
			return;
		memset(p, 0, sizeof(*p));
		p->sa = *from;
		peer_map_put(&a->srcmap, peer_key(from->sin_addr.s_addr, from->sin_port), (uint32_t)(p - a->src));
		a->sources_changed = true;
		xevb_info("source process %s:%u joined (source_ids %u-%u)", inet_ntoa(from->sin_addr),
			  ntohs(from->sin_port), m->u.status.first_id,
			  m->u.status.first_id + m->u.status.n_ids - 1);
	}
	if (!p->alive || p->epoch != m->h.epoch || p->first_id != m->u.status.first_id ||
	    p->n_ids != m->u.status.n_ids)
		a->sources_changed = true;
	p->alive = true;
	p->epoch = m->h.epoch;
	p->first_id = m->u.status.first_id;
	p->n_ids = m->u.status.n_ids;
	p->last_ns = now;
	p->status_n++;
	p->held = m->u.status.load;
	p->credits = m->u.status.credits;
	p->answered = m->u.status.done_total;
}

/* A farm node's counts per builder (the decoder let only farm nodes send it). */
static void on_received(struct dfm_app *a, const struct xevb_ctl_msg *m, const struct sockaddr_in *from,
			uint64_t now)
{
	uint32_t before = dfm_books_reporting(a->d);

	xevb_dfm_on_received(a->d, from->sin_addr.s_addr, ntohs(from->sin_port), &m->h, m->u.received, m->h.n_recs,
			     now);
	if (dfm_books_reporting(a->d) > before)
		xevb_info("farm node %s:%u reports what it receives (RECEIVED)", inet_ntoa(from->sin_addr),
			  ntohs(from->sin_port));
}

/* A builder's DONE or FORWARDED from no builder, or an earlier incarnation: dropped (dfm.c counts it too). */
static void builder_drop(struct dfm_app *a, const struct xevb_ctl_msg *m, const struct sockaddr_in *from)
{
	int bi = xevb_dfm_builder_at(a->d, from->sin_addr.s_addr, ntohs(from->sin_port));

	if (bi < 0 || xevb_dfm_builder(a->d, (uint32_t)bi)->epoch != m->h.epoch)
		xevb_ctl_dropped(&a->io, bi < 0 ? XEVB_CTL_DROP_UNKNOWN_PEER : XEVB_CTL_DROP_WRONG_EPOCH);
}

/* A type or role the DFM takes nothing from (a farm node's STATUS, ...). */
static void unexpected(struct dfm_app *a)
{
	a->unexpected++;
	xevb_ctl_dropped(&a->io, XEVB_CTL_DROP_WRONG_ROLE);
}

static void handle(struct dfm_app *a, const struct xevb_ctl_msg *m, const struct sockaddr_in *from, uint64_t now)
{
	uint16_t port = ntohs(from->sin_port);

	switch (m->h.type) {
	case XEVB_CTL_STATUS:
		if (m->h.role == XEVB_ROLE_BUILDER) {
			int before = (int)xevb_dfm_n_builders(a->d);
			int bi = xevb_dfm_on_status(a->d, from->sin_addr.s_addr, port, &m->h, &m->u.status, now);
			if (bi >= before)
				xevb_info("builder %s:%u joined with %u credits", inet_ntoa(from->sin_addr), port,
					  m->u.status.credits);
			if (bi >= 0 && before != (int)xevb_dfm_n_builders(a->d))
				a->sources_changed = true;
		} else if (m->h.role == XEVB_ROLE_SOURCE) {
			on_source_status(a, m, from, now);
		} else {
			unexpected(a);
		}
		break;
	case XEVB_CTL_DONE:
		builder_drop(a, m, from);
		xevb_dfm_on_done(a->d, from->sin_addr.s_addr, port, &m->h, m->u.done, m->h.n_recs, now);
		break;
	case XEVB_CTL_RECEIVED:
		on_received(a, m, from, now);
		break;
	case XEVB_CTL_FORWARDED:
		builder_drop(a, m, from);
		xevb_dfm_on_forwarded(a->d, from->sin_addr.s_addr, port, &m->h, m->u.forwarded, m->h.n_recs);
		break;
	case XEVB_CTL_BYE:
		if (m->h.role == XEVB_ROLE_BUILDER && xevb_dfm_builder_at(a->d, from->sin_addr.s_addr, port) < 0) {
			xevb_ctl_dropped(&a->io, XEVB_CTL_DROP_UNKNOWN_PEER);
		} else if (m->h.role == XEVB_ROLE_BUILDER) {
			dfm_books_say_bye(a->d, from->sin_addr.s_addr, port, a->pull);
			xevb_dfm_on_bye(a->d, from->sin_addr.s_addr, port, now);
		} else if (m->h.role == XEVB_ROLE_SOURCE && find_source(a, from)) {
			find_source(a, from)->alive = false;
		} else {
			xevb_ctl_dropped(&a->io, m->h.role == XEVB_ROLE_SOURCE ? XEVB_CTL_DROP_UNKNOWN_PEER :
										 XEVB_CTL_DROP_WRONG_ROLE);
		}
		break;
	default:
		unexpected(a);
		break;
	}
}

/* Append one record to a list in parts; the number of parts in use. */
static struct xevb_ctl_msg *list_next(struct xevb_ctl_msg *parts, uint32_t *n, uint8_t type)
{
	struct xevb_ctl_msg *m = *n ? &parts[*n - 1] : NULL;

	if (!m || m->h.n_recs == xevb_ctl_max_recs(type)) {
		m = &parts[(*n)++];
		m->h = (struct xevb_ctl_hdr){ .type = type };
	}
	return m;
}

/* The builders alive, for the sources (they answer REQUESTs from these only), in parts. */
static void builder_list(struct dfm_app *a)
{
	a->n_bld_list = 0;
	dfm_push_list_begin(&a->push);
	for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++) {
		const struct xevb_dfm_builder *b = xevb_dfm_builder(a->d, i);
		struct xevb_ctl_msg *m;
		if (!b->alive)
			continue;
		m = list_next(a->bld_list, &a->n_bld_list, XEVB_CTL_BUILDERS);
		/* The third field is our index for it: what ROUTE names (ids given with --id may repeat). */
		m->u.builders[m->h.n_recs++] =
			(struct xevb_ctl_bldinfo){ .addr = b->addr, .port = b->port, .id = (uint16_t)i };
		dfm_push_list_add(&a->push, i, b->addr, b->port);
	}
	dfm_push_list_end(&a->push);
}

/* The source processes alive, for the builders (whom to ask), in parts; silent ones declared dead first. */
static void source_list(struct dfm_app *a, uint64_t now)
{
	a->n_src_list = 0;
	for (uint32_t i = 0; i < a->n_src; i++) {
		struct src_peer *p = &a->src[i];
		struct xevb_ctl_msg *m;
		if (p->alive && now - p->last_ns > 3000000000ull) {
			p->alive = false;
			a->src_timeouts++;
			a->sources_changed = true;
			xevb_warn("source process %s:%u silent for 3 s: no more ASSIGN or CLEAR to it",
				  inet_ntoa(p->sa.sin_addr), ntohs(p->sa.sin_port));
		}
		if (!p->alive)
			continue;
		m = list_next(a->src_list, &a->n_src_list, XEVB_CTL_SOURCES);
		m->u.src[m->h.n_recs++] = (struct xevb_ctl_srcinfo){ .addr = p->sa.sin_addr.s_addr,
								     .port = ntohs(p->sa.sin_port),
								     .first_id = p->first_id,
								     .n_ids = p->n_ids };
	}
}

/* Heartbeats to everyone; with lists, the source list to the builders and the builder list to the sources. */
static void heartbeat(struct dfm_app *a, uint64_t now, bool lists)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	uint32_t mark = xevb_dfm_clear_mark(a->d);

	builder_list(a);
	source_list(a, now);
	/* The clear mark: a CLEAR lost on the way costs the source nothing. */
	m.u.status = (struct xevb_ctl_status){ .flags = (a->pull ? XEVB_CTL_ST_PULL : 0) | XEVB_CTL_ST_CLEARED,
					       .done_total = mark };
	dfm_fanout_add(&a->fan, DFM_FAN_STATUS)->m = m;
	for (uint32_t k = 0; lists && k < a->n_bld_list; k++)
		dfm_fanout_add(&a->fan, DFM_FAN_MSG)->m = a->bld_list[k];
	dfm_fanout_add(&a->bfan, DFM_FAN_STATUS);
	for (uint32_t k = 0; lists && k < a->n_src_list; k++)
		dfm_fanout_add(&a->bfan, DFM_FAN_MSG)->m = a->src_list[k];
}

/* --metrics: the books, for the next scrapes. */
static void metrics_publish(struct dfm_metrics *mx, struct dfm_app *a, uint64_t now, bool started, bool draining,
			    bool force)
{
	struct dfm_metrics_app ma = { .io = &a->io,
				      .unexpected = a->unexpected,
				      .src_timeouts = a->src_timeouts,
				      .push_msgs = a->push.routes + a->push.copies,
				      .sources = a->n_src,
				      .pull = a->pull,
				      .started = started,
				      .draining = draining,
				      .books_closed = a->books_closed };

	if (!mx)
		return;
	ma.sources_alive = dfm_alive_sources(a);
	dfm_metrics_publish(mx, a->d, &ma, now, force);
}

/* Once at start: who may take part (a run configuration), or that anyone may. */
static void announce_membership(void)
{
	const struct xevb_runcfg *rc = xevb_runcfg_current();

	if (!rc) {
		xevb_warn(
			"no --config: open membership; any host that sends STATUS as a builder is given events "
			"(start from a run configuration to admit only its peers: docs/run-config.md)");
		return;
	}
	xevb_info(
		"run configuration %s: admitting %u builder(s), %u source process(es) and %u farm node(s) "
		"only; other senders are refused and counted",
		rc->path, rc->n_builders, rc->n_sources, rc->n_sinks);
}

/*
 * The end of the run: builders' DONEs are final; the farm nodes' last
 * counts (every 100 ms, and at their exit) may still be on the way. Wait
 * for them until every builder's DONEs are accounted for, at most wait_ms.
 * Only RECEIVED counts now: everything else is the run that is over.
 */
static void wait_farm_books(struct dfm_app *a, uint32_t wait_ms)
{
	uint64_t end = xevb_now_ns() + wait_ms * 1000000ull;

	if (!xevb_dfm_n_sinks(a->d))
		return;
	while (xevb_dfm_reconcile(a->d), !dfm_books_settled(a->d) && xevb_now_ns() < end) {
		struct pollfd pfd = { .fd = a->io.fd, .events = POLLIN };
		struct xevb_ctl_msg m;
		struct sockaddr_in from;

		poll(&pfd, 1, 10);
		while (xevb_ctl_recv(&a->io, &m, &from)) {
			if (m.h.type == XEVB_CTL_RECEIVED) {
				on_received(a, &m, &from, xevb_now_ns());
			} else if (m.h.type == XEVB_CTL_FORWARDED) { /* a builder's last counts, at its exit */
				builder_drop(a, &m, &from);
				xevb_dfm_on_forwarded(a->d, from.sin_addr.s_addr, ntohs(from.sin_port), &m.h,
						      m.u.forwarded, m.h.n_recs);
			}
		}
	}
	a->books_closed = true;
}

/* The command line (cmd_opts.h), and what the run keeps of --state. */
struct dfm_opts {
	struct dfm_cfg c;
	uint32_t reserved, prev_epoch; /* --state: ids reserved on disk below this; the predecessor's epoch */
	bool resumed;
};

/* Where the run is: waiting for its peers, triggering, then draining. */
struct dfm_phase {
	uint64_t now, t0, next_hb, next_line, trig_stop_ns, end_ns, last_trig;
	bool started, draining;
};

/* --state: start past the ids a predecessor reserved; 0, or 1 when the file cannot be used. */
static int state_resume(struct dfm_opts *o)
{
	int r;

	if (!o->c.state)
		return 0;
	r = dfm_state_read(o->c.state, &o->reserved, &o->prev_epoch);
	if (r < 0) {
		xevb_err("--state %s: %s (remove it to number events from --first-event)", o->c.state,
			 strerror(errno));
		return 1;
	}
	if (r > 0) {
		o->c.dc.first_event = o->reserved;
		o->resumed = true;
		xevb_info("--state %s: the previous DFM (epoch %08x) reserved ids below %u: starting there",
			  o->c.state, o->prev_epoch, o->reserved);
	}
	o->reserved = o->c.dc.first_event;
	return 0;
}

/* The DFM, its control socket and --metrics; 0, or 1 (said why) with nothing left open. */
static int dfm_open(struct dfm_app *a, struct dfm_opts *o, struct dfm_metrics **mx)
{
	a->max_per_addr = o->c.dc.max_per_addr;
	a->push_ns = o->c.push_ns;
	a->pull = o->c.dc.pull;
	dfm_push_init(&a->push, o->c.dc.block, push_to_sources, a);
	a->push.assign_only = o->c.no_route;
	o->c.dc.send_assign = send_assign;
	o->c.dc.send_clear = send_clear;
	o->c.dc.probe = send_probe;
	o->c.dc.probe_ns = PROBE_NS;
	o->c.dc.check = live_check;
	o->c.dc.check_end = live_end;
	o->c.dc.ctx = a;
	a->d = xevb_dfm_new(&o->c.dc);
	dfm_live_init(&a->live, a->d, o->c.dc.dead_ns, o->c.dc.hung_ns);
	if (a->d && (peer_map_init(&a->srcmap, DFM_MAX_SOURCES) ||
		     dfm_fanout_init(&a->fan, FAN_QUEUE, fan_send, fan_dest, a) ||
		     dfm_fanout_init(&a->bfan, FAN_QUEUE, bfan_send, bfan_dest, a))) {
		xevb_dfm_free(a->d);
		a->d = NULL;
		errno = ENOMEM;
	}
	if (!a->d) {
		xevb_err("cannot create the DFM: %s (--pack must not exceed --table)", strerror(errno));
		return 1;
	}
	dfm_books_expect(a->d, xevb_runcfg_current());
	if (xevb_ctl_open(&a->io, o->c.lsa.sin_addr.s_addr, ntohs(o->c.lsa.sin_port), XEVB_ROLE_DFM, 0)) {
		xevb_dfm_free(a->d);
		return 1;
	}
	if (xevb_ctl_watch_unreachable(&a->io))
		xevb_warn("IP_RECVERR: %s: a dead builder is found by its silence only", strerror(errno));
	a->io.txq = &a->txq;
	a->io.rxq = &a->rxq;
	if (o->c.co.metrics && !(*mx = dfm_metrics_start(o->c.co.metrics))) {
		xevb_ctl_close(&a->io);
		xevb_dfm_free(a->d);
		return 1;
	}
	return 0;
}

/* Before the trigger: false once the peers have been waited for too long. */
static bool wait_for_peers(struct dfm_app *a, const struct dfm_opts *o, struct dfm_phase *ph)
{
	uint64_t now = ph->now;

	if (dfm_alive_builders(a) >= o->c.wait_b && dfm_alive_sources(a) >= o->c.wait_s) {
		/* One heartbeat round so every builder has the source list first. */
		heartbeat(a, now, true);
		ph->started = true;
		ph->t0 = now;
		if (o->c.rate > 0)
			xevb_dfm_trigger_clock(a->d, now, o->c.rate);
		ph->next_line = now + 1000000000ull;
		xevb_info("%u builder(s), %u source process(es): triggering", dfm_alive_builders(a),
			  dfm_alive_sources(a));
	} else if (now - ph->t0 > o->c.wait_ms * 1000000ull) {
		xevb_err(
			"after %u ms only %u of %u builders and %u of %u source processes reported: "
			"are they started with --dfm pointing here?",
			o->c.wait_ms, dfm_alive_builders(a), o->c.wait_b, dfm_alive_sources(a), o->c.wait_s);
		return false;
	}
	return true;
}

/* --state: never hand out an id that is not reserved on disk yet; reserve the next chunk in time. */
static uint64_t reserve_ids(struct dfm_app *a, struct dfm_opts *o, uint64_t want)
{
	uint32_t next = o->c.dc.first_event + (uint32_t)xevb_dfm_stats(a->d)->triggered;

	if (o->reserved - next < STATE_CHUNK / 2) {
		if (dfm_state_write(o->c.state, o->reserved + STATE_CHUNK, a->io.epoch)) {
			xevb_err("--state %s: cannot write: %s; stopping the trigger", o->c.state,
				 strerror(errno));
			xevb_stop = 1;
		} else {
			o->reserved += STATE_CHUNK;
		}
	}
	if (want > o->reserved - next)
		want = o->reserved - next;
	return want;
}

/* Trigger what --rate, --events and --state allow now; start draining at the end. */
static void trigger(struct dfm_app *a, struct dfm_opts *o, struct dfm_phase *ph)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(a->d);
	uint64_t now = ph->now;
	uint64_t want = o->c.events ? o->c.events - s->triggered : UINT32_MAX;

	if (o->c.rate > 0) {
		uint64_t due = (uint64_t)((double)(now - ph->t0) * o->c.rate / 1e9);
		want = due > s->triggered ? (due - s->triggered < want ? due - s->triggered : want) : 0;
	}
	if (o->c.state)
		want = reserve_ids(a, o, want);
	/* The trigger is held back while no builder can take a block: never dropped. */
	xevb_dfm_step(a->d, now, (uint32_t)(want > UINT32_MAX ? UINT32_MAX : want));
	if (xevb_stop || (o->c.events && s->triggered + o->c.dc.block > o->c.events) ||
	    (o->c.co.duration_ns && now - ph->t0 >= o->c.co.duration_ns)) {
		ph->draining = true;
		ph->trig_stop_ns = now;
		ph->end_ns = now + o->c.drain_ms * 1000000ull;
		xevb_info("trigger stopped after %llu events; draining", (unsigned long long)s->triggered);
	}
}

/*
 * How long the sources' copy waits for more blocks: --push-us, and with
 * many source processes longer (PUSH_NS_PER_SOURCE each, up to
 * PUSH_NS_MAX), since each copy is a datagram to every one of them: 320
 * sources every 2 ms were 160,000 datagrams a second, half the DFM's core
 * at 500,000 events/s; every 9.6 ms they are a fifth of that.
 */
static uint64_t push_wait_ns(const struct dfm_app *a)
{
	uint64_t per_src = (uint64_t)a->n_src * PUSH_NS_PER_SOURCE;

	per_src = per_src < PUSH_NS_MAX ? per_src : PUSH_NS_MAX;
	return a->push_ns > per_src || !a->push_ns ? a->push_ns : per_src;
}

/* The messages out after a round: assignments, heartbeats, metrics, the statistics line. */
static void send_round(struct dfm_app *a, const struct dfm_opts *o, struct dfm_phase *ph, struct dfm_metrics *mx)
{
	uint64_t now = ph->now;

	xevb_dfm_poll(a->d, now);
	for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++)
		flush_builder(a, i);
	/* Signed: the first block may have come after the round's clock was read. */
	if (dfm_push_due(&a->push, now, ph->draining ? 0 : push_wait_ns(a)))
		dfm_push_flush(&a->push);
	if (now >= ph->next_hb) {
		heartbeat(a, now, ++a->hb_n % LISTS_EVERY == 0);
		ph->next_hb = now + HEARTBEAT_NS;
		xevb_dfm_reconcile(a->d); /* received / in flight to the farm nodes, for --metrics */
	}
	dfm_fanout_run(&a->fan, FAN_BUDGET);
	dfm_fanout_run(&a->bfan, FAN_BUDGET);
	metrics_publish(mx, a, now, ph->started, ph->draining, false);
	if (ph->started && xevb_common_interval(&o->c.co) && now >= ph->next_line) {
		dfm_stats_line(a, (double)(now - ph->t0) / 1e9, &ph->last_trig);
		ph->next_line += xevb_common_interval(&o->c.co) * 1000000000ull;
	}
	xevb_ctl_flush(&a->io);
}

/* No builder left for --dead-ms while the run needs them: it stops at once, and failed. */
static void watch_builders(struct dfm_app *a, const struct dfm_opts *o, struct dfm_phase *ph)
{
	if (!ph->started || a->builders_left || (ph->draining && !xevb_dfm_stats(a->d)->outstanding) ||
	    !dfm_books_all_left(a->d, ph->now, o->c.dc.dead_ns, &a->all_gone_ns))
		return;
	a->builders_left = true;
	if (!ph->draining)
		ph->trig_stop_ns = ph->now;
	ph->draining = true;
	ph->end_ns = ph->now;
}

/*
 * Until the next round: none while datagrams wait unread or messages to
 * the sources are queued; with --rate until the next block is due (at
 * least WAIT_MIN_NS, at most 1 ms), so a block is assigned when due, not
 * up to a tick later.
 */
static void wait_round(struct dfm_app *a, const struct dfm_opts *o, const struct dfm_phase *ph, int budget)
{
	struct pollfd pfd = { .fd = a->io.fd, .events = POLLIN };
	bool running = ph->started && !ph->draining;
	uint64_t w = running && (o->c.rate > 0 || xevb_dfm_can_assign(a->d)) ? 1000000 : 5000000;
	struct timespec ts;

	if (!budget || dfm_fanout_busy(&a->fan) || dfm_fanout_busy(&a->bfan))
		return;
	if (running && o->c.rate > 0) {
		uint64_t next = xevb_dfm_stats(a->d)->triggered + o->c.dc.block;
		uint64_t due = ph->t0 + (uint64_t)((double)next * 1e9 / o->c.rate), now = xevb_now_ns();
		/* Not sooner than WAIT_MIN_NS: a round costs system calls, blocks wait at most that. */
		w = due <= now + WAIT_MIN_NS ? WAIT_MIN_NS : due - now < w ? due - now : w;
	}
	ts = (struct timespec){ .tv_sec = 0, .tv_nsec = (long)w };
	/* Paced, the trigger sets the pace: what comes meanwhile waits in the socket (a round a datagram costs more). */
	ppoll(&pfd, running && o->c.rate > 0 ? 0 : 1, &ts, NULL);
}

/*
 * The blocks due while a round reads: assigned and their ASSIGNs queued
 * between every TRIGGER_EVERY datagrams read, not after all of them (a
 * round may read hundreds: a millisecond).
 */
static void trigger_between(struct dfm_app *a, struct dfm_opts *o, struct dfm_phase *ph)
{
	if (!ph->started || ph->draining)
		return;
	ph->now = xevb_now_ns();
	trigger(a, o, ph);
	for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++)
		flush_builder(a, i);
}

/* One round of the run: false when it is over (drained, given up, or Ctrl-C twice). */
static bool dfm_round(struct dfm_app *a, struct dfm_opts *o, struct dfm_phase *ph, struct dfm_metrics *mx)
{
	struct xevb_ctl_msg m;
	struct sockaddr_in from;
	int budget = RECV_BUDGET;

	ph->now = xevb_now_ns();
	/* Each message stamped as read (ASSIGN-to-DONE; a builder's silence is
	   judged against it); the round goes on at the time after reading. */
	while (budget > 0 && xevb_ctl_recv(&a->io, &m, &from)) {
		if (budget-- % TRIGGER_EVERY == 0)
			trigger_between(a, o, ph);
		handle(a, &m, &from, xevb_now_ns());
	}
	ph->now = xevb_now_ns();
	unreachable(a, ph->now);
	if (!budget) /* datagrams left unread: no builder is silent for it */
		xevb_dfm_behind(a->d, ph->now);
	watch_builders(a, o, ph);
	if (a->sources_changed) {
		heartbeat(a, ph->now, true);
		a->sources_changed = false;
		ph->next_hb = ph->now + HEARTBEAT_NS;
	}
	if (!ph->started) {
		if (!wait_for_peers(a, o, ph))
			return false;
	} else if (!ph->draining) {
		trigger(a, o, ph);
	} else {
		xevb_dfm_step(a->d, ph->now, 0); /* re-assignments still go out */
	}
	send_round(a, o, ph, mx);
	if (ph->draining && (xevb_dfm_stats(a->d)->outstanding == 0 || ph->now >= ph->end_ns || xevb_stop > 1))
		return false;
	wait_round(a, o, ph, budget);
	return true;
}

/*
 * Tell everyone the run is over (BYE twice: it is a datagram), the farm
 * nodes that report too: they end once the builders' streams have.
 */
static void say_bye(struct dfm_app *a)
{
	struct xevb_ctl_msg bye = { .h.type = XEVB_CTL_BYE };

	dfm_fanout_drain(&a->fan);
	dfm_fanout_drain(&a->bfan);
	for (int k = 0; k < 2; k++) {
		for (uint32_t i = 0; i < a->n_src; i++)
			xevb_ctl_send(&a->io, &a->src[i].sa, &bye);
		for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++) {
			struct sockaddr_in sa = builder_sa(xevb_dfm_builder(a->d, i));
			xevb_ctl_send(&a->io, &sa, &bye);
		}
		for (uint32_t i = 0; i < xevb_dfm_n_sinks(a->d); i++) {
			const struct xevb_dfm_sink *k = xevb_dfm_sink(a->d, i);
			struct sockaddr_in sa = { .sin_family = AF_INET,
						  .sin_addr.s_addr = k->addr,
						  .sin_port = htons(k->port) };
			xevb_ctl_send(&a->io, &sa, &bye);
		}
	}
	xevb_ctl_flush(&a->io);
}

/* Close the books, report them, free everything; the exit status. */
static int dfm_finish(struct dfm_app *a, const struct dfm_opts *o, const struct dfm_phase *ph,
		      struct dfm_metrics *mx)
{
	uint64_t now, stalled = xevb_dfm_stats(a->d)->outstanding;
	char msg[256];
	bool ok;

	/* Events still outstanding when the drain ended: the run stalled (or was cut short twice). */
	if (!a->builders_left)
		dfm_books_say_stalled(a->d);
	xevb_dfm_stop(a->d);
	now = xevb_now_ns();
	say_bye(a);
	if (ph->started) {
		wait_farm_books(a, o->c.books_ms);
		xevb_dfm_reconcile(a->d);
		dfm_books_judge(a->d, xevb_runcfg_current() != NULL, o->c.require_books, &a->books);
	}
	a->first_event = o->c.dc.first_event;
	a->resumed = o->resumed;
	a->prev_epoch = o->prev_epoch;
	ok = xevb_dfm_check(a->d, msg, sizeof(msg));
	if (!ok)
		xevb_err("accounting check FAILED: %s", msg);
	dfm_summary(a, ph->started ? (double)((ph->trig_stop_ns ? ph->trig_stop_ns : now) - ph->t0) / 1e9 : 0, ok,
		    o->c.co.json);
	metrics_publish(mx, a, xevb_now_ns(), ph->started, true, true);
	dfm_metrics_stop(mx);
	xevb_ctl_close(&a->io);
	xevb_dfm_free(a->d);
	dfm_fanout_free(&a->fan);
	dfm_fanout_free(&a->bfan);
	return !ph->started ? 1 : !ok ? 3 : a->builders_left || stalled ? 6 : a->books.rc;
}

int cmd_dfm(int argc, char **argv)
{
	static struct dfm_app a;
	struct dfm_opts o = { 0 };
	struct dfm_phase ph = { 0 };
	struct dfm_metrics *mx = NULL;
	int c;

	if ((c = xevb_runcfg_start_opts(&argc, &argv, XEVB_RC_DFM, &dfm_cmd)) > 1)
		return c;
	if ((c = dfm_opts_parse(argc, argv, &o.c)) >= 0)
		return c;
	if (state_resume(&o) || dfm_open(&a, &o, &mx))
		return 1;
	xevb_stop_on_signals();
	announce_membership();
	xevb_info("%s mode, epoch %08x, listening on %s:%u; waiting for %u builder(s) and %u source process(es)",
		  a.pull ? "pull" : "push", a.io.epoch, inet_ntoa(o.c.lsa.sin_addr), ntohs(o.c.lsa.sin_port),
		  o.c.wait_b, o.c.wait_s);
	xevb_notify_ready("listening on %s:%u", inet_ntoa(o.c.lsa.sin_addr), ntohs(o.c.lsa.sin_port));

	ph.t0 = ph.now = xevb_now_ns();
	ph.next_hb = ph.now;
	ph.next_line = ph.now + 1000000000ull;
	while (dfm_round(&a, &o, &ph, mx))
		;
	return dfm_finish(&a, &o, &ph, mx);
}

// SPDX-License-Identifier: GPL-2.0-only
/* The builder's control plane (build_ctl.h, docs/control-protocol.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/cli.h"
#include "base/json.h"
#include "ctl/ctl_sock.h"
#include "ctl/liveness.h"
#include "wire/event_codec.h"
#include "ctl/flowctl.h"
#include "rx/handoff.h"
#include "ctl/build_ctl.h"
#include "ctl/build_fwd.h"
#include "ctl/build_req.h"

#define HB_NS 100000000ull /* STATUS to the farm nodes */
/* STATUS to the DFM this often, unless a DONE left meanwhile (as good a
   sign of life): the DFM takes a builder silent for --dead-ms (200) dead. */
#define HB_DFM_NS 10000000ull
#define SCAN_NS   5000000ull
/* The event table grows (doubling) when an ASSIGN finds its slot held by an
   event still open: at 100 k events/s a 4096-entry table wraps in 40 ms,
   before the first re-ask of an event that lost a frame. Bounded: 2 MB. */
#define EV_TABLE_MAX (1u << 16)
/*
 * Before the DFM's first ASSIGN nothing is assigned: an event built then
 * (push: its fragments beat the ASSIGN) is held, encoded, at most
 * PRE_HOLD_NS and PRE_HOLD_MAX of them, and forwarded when an ASSIGN names
 * it; otherwise it is dropped and counted (pre_dropped). Data sent before
 * the run (a host that seeds ids ahead of the DFM) never reaches a farm
 * node that way, and the core forgets the window it placed.
 */
#define PRE_HOLD_NS  250000000ull
#define PRE_HOLD_MAX 1024u

enum { E_FREE = 0, E_ASSIGNED, E_DONE };

struct ev_ent {
	uint32_t event;
	uint8_t state, reasks, status, early;
	uint8_t old; /* assigned by a DFM that has since restarted */
	uint16_t n_missing;
	uint64_t t_assign, t_ask;
};

struct pre_ev { /* an event built before the first ASSIGN (PRE_HOLD_NS) */
	uint8_t *buf;
	size_t len;
	uint64_t t;
	uint32_t event;
	uint16_t n_frags, n_missing;
	uint8_t status;
};

struct build_ctl {
	struct build_ctl_cfg cfg;
	struct xevb_ctl_io io;
	int live_fd; /* TCP on the control port: the DFM's check of a silent builder (ctl/liveness.h) */
	struct sockaddr_in dfm;
	uint32_t dfm_epoch;
	bool pull, bye, reset;
	/* A DFM restart: the old epoch's open events finish here (no DONE: nobody
	   knows them), unless the new DFM numbers events afresh, which needs a
	   fresh core; its first ASSIGN then waits in stash until the reset. */
	bool restart_pending, stash_valid, finalize;
	uint32_t hi_next; /* one past the highest event id assigned */
	struct xevb_ctl_msg stash;
	struct ev_ent *ev;
	uint32_t mask, n_assigned;
	struct build_req req; /* the requests and re-asks to the sources */
	struct build_fwd fwd; /* forwarding by farm-node credit, with the backlog */
	struct xevb_busy busy;
	struct xevb_ctl_msg done;
	uint64_t next_hb, next_sink_hb, last_dfm_ns;
	uint64_t next_scan[XEVB_HO_MAX_WORKERS]; /* per builder core */
	/* counters */
	uint64_t assigned_events, assign_dups, retry_redone, reask_events;
	uint64_t done_sent[XEVB_DONE__COUNT], unassigned_built, abandoned, dfm_restarts, core_resets;
	uint64_t unexpected, assign_overflow, built_early, table_grown;
	uint64_t built_after_no_data; /* given up as no_data, then built: DONE sent again with the outcome */
	uint64_t assigned_busy;       /* taken while Busy: in flight when it was declared */
	/* Before the first ASSIGN: held, then forwarded or dropped (events, their fragments). */
	bool assigned_once;
	struct pre_ev pre[PRE_HOLD_MAX];
	uint32_t n_pre;
	uint64_t pre_held, pre_forwarded, pre_dropped, pre_dropped_frags;
	/* Pull: built, never requested, dropped (events; their fragments by source: req). */
	uint64_t unsolicited;
	/* Epochs ended by a DFM restart: assigned = done + overflow + open; open =
	   built_complete + built_incomplete + lost_no_data + lost_slot. */
	uint64_t base_assigned, base_done, base_overflow, base_redone, base_after_no_data;
	uint64_t rs_assigned, rs_done, rs_overflow, rs_open, rs_complete, rs_incomplete, rs_no_data, rs_slot;
};

static void flush_done(struct build_ctl *bc)
{
	if (!bc->done.h.n_recs)
		return;
	bc->done.h.type = XEVB_CTL_DONE;
	xevb_ctl_send(&bc->io, &bc->dfm, &bc->done);
	bc->done.h.n_recs = 0;
}

static void add_done(struct build_ctl *bc, uint32_t ev, uint8_t status, uint16_t n_missing)
{
	bc->done.u.done[bc->done.h.n_recs++] =
		(struct xevb_ctl_done){ ev, status == XEVB_DONE_COMPLETE ? 0 : (n_missing ? n_missing : 1),
					status };
	bc->done_sent[status]++;
	if (bc->done.h.n_recs == xevb_ctl_max_recs(XEVB_CTL_DONE))
		flush_done(bc);
}

static void status_to_dfm(struct build_ctl *bc)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	m.u.status =
		(struct xevb_ctl_status){ .credits = bc->cfg.credits,
					  .flags = (bc->busy.busy ? XEVB_CTL_ST_BUSY : 0) |
						   (bc->live_fd >= 0 ? XEVB_CTL_ST_LISTEN : 0),
					  .done_total = bc->done_sent[0] + bc->done_sent[1] + bc->done_sent[2],
					  .peer_epoch = bc->dfm_epoch,
					  .load = bc->n_assigned + bc->fwd.bl_n };
	xevb_ctl_send(&bc->io, &bc->dfm, &m);
}

static int cmp_sink_addr(const void *a, const void *b)
{
	uint32_t x = ntohl(((const struct xevb_ctl_forwarded *)a)->sink_addr);
	uint32_t y = ntohl(((const struct xevb_ctl_forwarded *)b)->sink_addr);

	return (x > y) - (x < y);
}

/*
 * What we sent each farm-node address, cumulative (FORWARDED): events
 * written whole to its connections, less those we know were lost with a
 * broken one. The DFM holds the farm nodes' RECEIVED against it, so a
 * farm node that under- or over-reports is named, not us.
 */
static void forwarded_to_dfm(struct build_ctl *bc)
{
	static struct xevb_ctl_forwarded all[XEVB_MAX_SINKS]; /* under the engine's lock, as every tick */
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_FORWARDED };
	const struct xevb_output *o = bc->fwd.out;
	uint32_t n = 0, k = 0, max = xevb_ctl_max_recs(XEVB_CTL_FORWARDED);

	for (uint32_t i = 0; i < o->n_sinks; i++)
		if (o->sinks[i].addr.sin_addr.s_addr)
			all[n++] = (struct xevb_ctl_forwarded){ o->sinks[i].addr.sin_addr.s_addr,
								o->sinks[i].events - o->sinks[i].lost_in_flight };
	/* One record per address (farm nodes sharing one are summed), then as many datagrams as it takes. */
	qsort(all, n, sizeof(*all), cmp_sink_addr);
	for (uint32_t i = 0; i < n; i++)
		if (k && all[k - 1].sink_addr == all[i].sink_addr)
			all[k - 1].events += all[i].events;
		else
			all[k++] = all[i];
	for (uint32_t i = 0; i < k || !i; i += max) {
		m.h.n_recs = (uint16_t)(k - i < max ? k - i : max);
		memcpy(m.u.forwarded, all + i, m.h.n_recs * sizeof(*all));
		xevb_ctl_send(&bc->io, &bc->dfm, &m);
		if (!k)
			break;
	}
}

static void update_busy(struct build_ctl *bc)
{
	if (xevb_busy_update(&bc->busy, bc->n_assigned + bc->fwd.bl_n))
		status_to_dfm(bc);
}

struct build_ctl *build_ctl_new(const struct build_ctl_cfg *cfg, struct xevb_output *out)
{
	struct build_ctl *bc = calloc(1, sizeof(*bc));
	/* Events of a builder are spread over an id span several times its
	   credits (blocks interleave across builders, re-asks keep events open
	   long): like the core's default window, 4096 ids at least. */
	uint32_t size = 4096;

	if (!bc)
		return NULL;
	bc->cfg = *cfg;
	bc->io.fd = -1;
	bc->live_fd = -1;
	if (xevb_ctl_parse_addr(cfg->dfm, &bc->dfm)) {
		xevb_err("--dfm: '%s' is not ADDR:PORT such as 198.18.4.1:23901", cfg->dfm);
		goto fail;
	}
	while (size < 4 * cfg->credits)
		size <<= 1;
	bc->mask = size - 1;
	bc->ev = calloc(size, sizeof(*bc->ev));
	if (!bc->ev || build_req_init(&bc->req) || build_fwd_init(&bc->fwd, out, cfg->backlog, cfg->sink_ctl_port))
		goto fail;
	xevb_busy_init(&bc->busy, cfg->credits, cfg->busy_high, cfg->busy_low);
	if (cfg->tx_hook) {
		if (xevb_ctl_init(&bc->io, XEVB_ROLE_BUILDER, cfg->id))
			goto fail;
		bc->io.tx_hook = cfg->tx_hook;
		bc->io.tx_ctx = cfg->tx_ctx;
	} else if (xevb_ctl_open(&bc->io, 0, cfg->ctl_port, XEVB_ROLE_BUILDER, cfg->id)) {
		goto fail;
	} else {
		bc->live_fd = xevb_live_listen(0, cfg->ctl_port);
	}
	xevb_info(
		"control plane: DFM %s, %u credits, Busy above %u / not-Busy below %u held events, "
		"re-ask after %llu ms up to %u times, control port %u",
		cfg->dfm, cfg->credits, bc->busy.high, bc->busy.low, (unsigned long long)(cfg->reask_ns / 1000000),
		cfg->max_reasks, cfg->ctl_port);
	/*
	 * No STATUS yet: the first tick (next_hb 0) sends it from the receive
	 * loop, once the receive path is open. Credits announced earlier bring
	 * fragments no socket takes, and their events are re-asked later.
	 */
	return bc;
fail:
	build_ctl_free(bc);
	return NULL;
}

void build_ctl_free(struct build_ctl *bc)
{
	if (!bc)
		return;
	if (bc->io.fd >= 0 || bc->io.tx_hook) {
		struct xevb_ctl_msg bye = { .h.type = XEVB_CTL_BYE };
		flush_done(bc);
		/* The output has settled: these are the final counts (twice: datagrams). */
		forwarded_to_dfm(bc);
		forwarded_to_dfm(bc);
		xevb_ctl_send(&bc->io, &bc->dfm, &bye);
		xevb_ctl_close(&bc->io);
	}
	if (bc->live_fd >= 0)
		close(bc->live_fd);
	build_fwd_free(&bc->fwd);
	build_req_free(&bc->req);
	for (uint32_t i = 0; i < bc->n_pre; i++)
		free(bc->pre[i].buf);
	free(bc->ev);
	free(bc);
}

int build_ctl_fd(const struct build_ctl *bc)
{
	return bc->io.fd;
}

bool build_ctl_take_reset(struct build_ctl *bc)
{
	bool r = bc->reset;
	if (r)
		bc->core_resets++;
	bc->reset = false;
	return r;
}

bool build_ctl_finished(const struct build_ctl *bc)
{
	return bc->bye && bc->n_assigned == 0 && bc->fwd.bl_n == 0;
}

/* ---- messages from the DFM ---- */

static uint64_t done_total(const struct build_ctl *bc)
{
	return bc->done_sent[0] + bc->done_sent[1] + bc->done_sent[2];
}

static void dfm_epoch_seen(struct build_ctl *bc, uint32_t epoch)
{
	uint32_t open = 0;

	if (bc->dfm_epoch == epoch)
		return;
	if (bc->dfm_epoch) {
		/* Its successor knows nothing of the old epoch: what is finished is
		   forgotten, what is open finishes here and is counted, not reported. */
		for (uint32_t i = 0; i <= bc->mask; i++) {
			struct ev_ent *x = &bc->ev[i];
			if (x->state == E_ASSIGNED) {
				if (!x->old)
					open++;
				x->old = 1;
			} else if (x->state == E_DONE) {
				*x = (struct ev_ent){ 0 };
			}
		}
		bc->rs_assigned += bc->assigned_events - bc->base_assigned;
		bc->rs_done += done_total(bc) - bc->base_done;
		bc->rs_overflow += bc->assign_overflow - bc->base_overflow;
		bc->base_overflow = bc->assign_overflow;
		bc->rs_open += open;
		bc->abandoned += open;
		bc->done.h.n_recs = 0; /* DONEs for the dead DFM */
		bc->base_assigned = bc->assigned_events;
		bc->base_done = done_total(bc);
		bc->base_redone = bc->retry_redone;
		bc->base_after_no_data = bc->built_after_no_data;
		bc->dfm_restarts++;
		bc->restart_pending = true;
		bc->bye = false;
		xevb_warn("the DFM restarted (epoch %08x -> %08x): %u event(s) of the old one still open here",
			  bc->dfm_epoch, epoch, open);
	}
	bc->dfm_epoch = epoch;
}

/* An old-epoch event leaves: built (complete or not) or lost by reason. */
static void old_done(struct build_ctl *bc, struct ev_ent *x, int how)
{
	if (how == XEVB_DONE_COMPLETE)
		bc->rs_complete++;
	else if (how == XEVB_DONE_INCOMPLETE)
		bc->rs_incomplete++;
	else if (how == XEVB_DONE_NO_DATA)
		bc->rs_no_data++;
	else
		bc->rs_slot++;
	*x = (struct ev_ent){ 0 };
	bc->n_assigned--;
}

/* After the core reset: whatever old event the flush did not emit had no fragment. */
static void finalize_reset(struct build_ctl *bc)
{
	for (uint32_t i = 0; i <= bc->mask; i++) {
		struct ev_ent *x = &bc->ev[i];
		if (x->state == E_ASSIGNED && x->old)
			old_done(bc, x, XEVB_DONE_NO_DATA);
	}
	memset(bc->ev, 0, (size_t)(bc->mask + 1) * sizeof(*bc->ev));
	bc->n_assigned = 0;
	bc->finalize = false;
}

/*
 * Double the event table, every entry kept: the entries of one old slot go
 * to slot i or i + old size, so none collide. False when at its bound or
 * out of memory (the caller then counts an overflow).
 */
static bool grow_table(struct build_ctl *bc)
{
	uint32_t size = bc->mask + 1, nsize = size * 2;
	struct ev_ent *nev;

	if (nsize > EV_TABLE_MAX || !(nev = calloc(nsize, sizeof(*nev))))
		return false;
	for (uint32_t i = 0; i < size; i++)
		if (bc->ev[i].state != E_FREE)
			nev[bc->ev[i].event & (nsize - 1)] = bc->ev[i];
	free(bc->ev);
	bc->ev = nev;
	bc->mask = nsize - 1;
	if (!bc->table_grown++)
		xevb_info(
			"events stay open over more than %u assigned ids (lost frames waiting for re-asks "
			"at a high rate): the event table grows to %u (at most %u)",
			size, nsize, EV_TABLE_MAX);
	return true;
}

/* ---- events built before the first ASSIGN (PRE_HOLD_NS) ---- */

/* Held entries [0, n) leave, counted dropped. */
static void pre_drop(struct build_ctl *bc, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(bc->pre[i].buf);
		bc->pre_dropped++;
		bc->pre_dropped_frags += bc->pre[i].n_frags;
		bc->fwd.out->st.dropped_unassigned++;
	}
	memmove(bc->pre, bc->pre + n, (bc->n_pre - n) * sizeof(bc->pre[0]));
	bc->n_pre -= n;
}

/* Those whose first fragment came more than PRE_HOLD_NS ago leave (held in the order they were built). */
static void pre_expire(struct build_ctl *bc, uint64_t now)
{
	uint32_t n = 0;

	while (n < bc->n_pre && (int64_t)(now - bc->pre[n].t) > (int64_t)PRE_HOLD_NS)
		n++;
	if (n)
		pre_drop(bc, n);
}

/* ev, built before any ASSIGN: held (true), or false when the output takes no encoded event. */
static bool pre_hold(struct build_ctl *bc, const struct xevb_event *ev)
{
	struct xevb_output *o = bc->fwd.out;
	size_t need = xevb_event_wire_size_fast(ev);
	struct pre_ev *p = &bc->pre[bc->n_pre];

	if (o->discard || o->fw || !o->n_sinks)
		return false;
	if (bc->n_pre == PRE_HOLD_MAX || !(p->buf = malloc(need)) ||
	    xevb_event_encode_into(ev, xevb_realtime_ns(), p->buf, need, &p->len)) {
		if (bc->n_pre < PRE_HOLD_MAX)
			free(p->buf);
		bc->pre_dropped++;
		bc->pre_dropped_frags += ev->n_frags;
		o->st.dropped_unassigned++;
		return true;
	}
	p->t = ev->open_ns; /* the caller's clock, as the tick's */
	p->event = ev->event_id;
	p->n_frags = ev->n_frags;
	p->status = (ev->flags & XEVB_EVT_F_INCOMPLETE) ? XEVB_DONE_INCOMPLETE : XEVB_DONE_COMPLETE;
	p->n_missing = (uint16_t)(ev->n_expected - ev->n_frags);
	bc->n_pre++;
	bc->pre_held++;
	return true;
}

/* After an ASSIGN: the held events it made ours go on, each with its DONE. */
static void pre_release(struct build_ctl *bc)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < bc->n_pre; i++) {
		struct pre_ev *p = &bc->pre[i];
		struct ev_ent *x = &bc->ev[p->event & bc->mask];

		if (x->state != E_ASSIGNED || x->event != p->event || x->old) {
			bc->pre[k++] = *p;
			continue;
		}
		x->state = E_DONE;
		x->status = p->status;
		x->n_missing = p->n_missing;
		bc->n_assigned--;
		add_done(bc, p->event, p->status, p->n_missing);
		bc->unassigned_built++;
		bc->built_early++;
		bc->pre_forwarded++;
		build_fwd_encoded(&bc->fwd, p->buf, p->len);
	}
	bc->n_pre = k;
}

/*
 * The first ASSIGN: what waited longer than PRE_HOLD_NS, and in pull mode
 * all (nothing was requested yet), is dropped; when anything was, the
 * window the core placed from it is forgotten, so the run's own fragments
 * of those ids build their events.
 */
static void pre_first_assign(struct build_ctl *bc, struct xevb_builder *b, bool pull, uint64_t now)
{
	bc->assigned_once = true;
	pre_expire(bc, now);
	if (pull && bc->n_pre)
		pre_drop(bc, bc->n_pre);
	if (bc->pre_dropped)
		xevb_builder_forget_window(b);
}

/* b: the builder core, whose window follows what the DFM assigns. */
static void on_assign(struct build_ctl *bc, struct xevb_builder *b, const struct xevb_ctl_msg *m, uint64_t now)
{
	if (bc->restart_pending && m->h.n_recs) {
		bc->restart_pending = false;
		if (bc->hi_next && (int32_t)(m->u.assign[0].first_event - bc->hi_next) < 0) {
			/* The new DFM numbers afresh: the core starts afresh before this
			   ASSIGN is taken (the caller resets it, the next tick goes on). */
			bc->stash = *m;
			bc->stash_valid = true;
			bc->reset = true;
			bc->finalize = true;
			return;
		}
	}
	if (!bc->assigned_once && m->h.n_recs)
		pre_first_assign(bc, b, m->u.assign[0].flags & XEVB_CTL_AS_PULL, now);
	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		const struct xevb_ctl_assign *a = &m->u.assign[r];
		bool first_ask = false;

		bc->pull = a->flags & XEVB_CTL_AS_PULL;
		if (!bc->hi_next || (int32_t)(a->first_event + a->count - bc->hi_next) > 0)
			bc->hi_next = a->first_event + a->count;
		xevb_builder_set_pull(b, bc->pull);
		xevb_builder_assigned(b, a->first_event, a->count);
		if (!bc->cfg.fixed_run)
			xevb_builder_set_run(b, a->run);
		if (bc->cfg.on_assign)
			bc->cfg.on_assign(bc->cfg.assign_ctx, a->first_event, a->count, a->run,
					  !bc->cfg.fixed_run);
		for (uint32_t j = 0; j < a->count; j++) {
			uint32_t e = a->first_event + j;
			struct ev_ent *x = &bc->ev[e & bc->mask];
			if (x->state == E_ASSIGNED && x->old) {
				/* An old-epoch event still open in the slot a new one needs. */
				old_done(bc, x, -1);
			}
			if (x->state != E_FREE && x->event == e) {
				/* Ours already: a retry. Finished? Then its DONE got lost: again. */
				if (x->state == E_DONE) {
					add_done(bc, e, x->status, x->n_missing);
					if (x->early) {
						x->early = 0;
						bc->assigned_events++;
						bc->built_early++;
					} else {
						bc->retry_redone++;
					}
				} else {
					bc->assign_dups++;
				}
				continue;
			}
			while (x->state == E_ASSIGNED && x->event != e && grow_table(bc))
				x = &bc->ev[e & bc->mask];
			if (x->state == E_ASSIGNED) {
				/* Still open over EV_TABLE_MAX ids: it loses its re-asks. */
				bc->assign_overflow++;
				bc->n_assigned--;
			}
			*x = (struct ev_ent){ .event = e, .state = E_ASSIGNED, .t_assign = now, .t_ask = now };
			if (bc->busy.busy)
				bc->assigned_busy++;
			bc->n_assigned++;
			bc->assigned_events++;
			first_ask = true;
		}
		if (first_ask && bc->pull)
			build_req_all(&bc->req, &bc->io, a->first_event, a->count, 0);
	}
	if (bc->n_pre)
		pre_release(bc);
	update_busy(bc);
}

void build_ctl_emit(struct build_ctl *bc, const struct xevb_event *ev)
{
	struct ev_ent *x = &bc->ev[ev->event_id & bc->mask];

	if (x->state == E_ASSIGNED && x->event == ev->event_id && x->old) {
		old_done(bc, x, (ev->flags & XEVB_EVT_F_INCOMPLETE) ? XEVB_DONE_INCOMPLETE : XEVB_DONE_COMPLETE);
	} else if (x->state == E_ASSIGNED && x->event == ev->event_id) {
		bool inc = ev->flags & XEVB_EVT_F_INCOMPLETE;
		x->state = E_DONE;
		x->status = inc ? XEVB_DONE_INCOMPLETE : XEVB_DONE_COMPLETE;
		x->n_missing = (uint16_t)(ev->n_expected - ev->n_frags);
		bc->n_assigned--;
		add_done(bc, ev->event_id, x->status, x->n_missing);
	} else if (x->state == E_DONE && x->event == ev->event_id && x->status == XEVB_DONE_NO_DATA) {
		/* Its re-asks were spent before its data came: the DFM counted it
		   lost and learns the outcome now. A second DONE for the event:
		   done_sent counts both (counters only grow), the books take
		   built_after_no_data off. */
		x->status = (ev->flags & XEVB_EVT_F_INCOMPLETE) ? XEVB_DONE_INCOMPLETE : XEVB_DONE_COMPLETE;
		x->n_missing = (uint16_t)(ev->n_expected - ev->n_frags);
		add_done(bc, ev->event_id, x->status, x->n_missing);
		bc->built_after_no_data++;
	} else if (!bc->assigned_once && pre_hold(bc, ev)) {
		return; /* nothing assigned yet: held a while, or dropped */
	} else if (bc->pull) {
		/* Nobody asked for it: not ours to forward, whoever sent it. */
		bc->unsolicited++;
		bc->fwd.out->st.dropped_unsolicited++;
		build_req_unsolicited(&bc->req, ev);
		return;
	} else {
		/* Push: the fragments can beat the ASSIGN here. Remember the outcome,
		   the ASSIGN then gets its DONE at once. */
		bc->unassigned_built++;
		if (x->state != E_ASSIGNED)
			*x = (struct ev_ent){ .event = ev->event_id,
					      .state = E_DONE,
					      .early = 1,
					      .status = (ev->flags & XEVB_EVT_F_INCOMPLETE) ?
								XEVB_DONE_INCOMPLETE :
								XEVB_DONE_COMPLETE,
					      .n_missing = (uint16_t)(ev->n_expected - ev->n_frags) };
	}
	build_fwd_event(&bc->fwd, ev);
	update_busy(bc);
}

/* ---- messages in ---- */

void build_ctl_on_msg(struct build_ctl *bc, struct xevb_builder *b, const struct xevb_ctl_msg *m,
		      const struct sockaddr_in *from, uint64_t now)
{
	if (m->h.role == XEVB_ROLE_DFM) {
		/* Its address and its port: another process on its host is not the DFM. */
		if (from->sin_addr.s_addr != bc->dfm.sin_addr.s_addr || from->sin_port != bc->dfm.sin_port) {
			bc->unexpected++;
			xevb_ctl_dropped(&bc->io, XEVB_CTL_DROP_NOT_FROM_DFM);
			return;
		}
		dfm_epoch_seen(bc, m->h.epoch);
		bc->last_dfm_ns = now;
		switch (m->h.type) {
		case XEVB_CTL_STATUS:
			bc->pull = m->u.status.flags & XEVB_CTL_ST_PULL;
			/* The DFM lost track of us (restart, or declared us dead): hello again. */
			if (m->u.status.peer_epoch != bc->io.epoch)
				status_to_dfm(bc);
			break;
		case XEVB_CTL_ASSIGN:
			on_assign(bc, b, m, now);
			break;
		case XEVB_CTL_SOURCES:
			build_req_on_sources(&bc->req, m);
			break;
		case XEVB_CTL_BYE:
			if (!bc->bye)
				xevb_info(
					"BYE from the DFM %s:%u (epoch %08x): the run is over; %u assigned event(s) "
					"still open here, %u waiting for a farm node",
					inet_ntoa(from->sin_addr), ntohs(from->sin_port), m->h.epoch,
					bc->n_assigned, bc->fwd.bl_n);
			bc->bye = true;
			break;
		default:
			bc->unexpected++;
			break;
		}
	} else if (m->h.role == XEVB_ROLE_SINK && m->h.type == XEVB_CTL_STATUS) {
		if (!build_fwd_on_status(&bc->fwd, m, from, bc->io.epoch, now)) {
			bc->unexpected++;
			xevb_ctl_dropped(&bc->io, XEVB_CTL_DROP_UNKNOWN_PEER);
		} else if (m->u.status.peer_epoch != bc->io.epoch) {
			xevb_ctl_dropped(&bc->io, XEVB_CTL_DROP_WRONG_EPOCH);
		}
	} else {
		bc->unexpected++;
		xevb_ctl_dropped(&bc->io, XEVB_CTL_DROP_WRONG_ROLE);
	}
}

/* ---- the tick ---- */

/* The events core owner builds (b): re-asked while they miss fragments, given up when spent. */
static void scan(struct build_ctl *bc, const struct xevb_builder *b, uint32_t owner, uint64_t now)
{
	uint16_t miss[XEVB_MAX_SOURCES];
	uint64_t give_up = bc->cfg.reask_ns * (bc->cfg.max_reasks + 1ull);
	uint32_t n_owners = bc->cfg.n_owners > 1 ? bc->cfg.n_owners : 1;

	for (uint32_t i = 0; i <= bc->mask; i++) {
		struct ev_ent *x = &bc->ev[i];
		int n;

		if (x->state != E_ASSIGNED || now - x->t_ask < bc->cfg.reask_ns)
			continue;
		if (n_owners > 1 && xevb_owner(x->event, bc->cfg.owner_shift, n_owners) != owner)
			continue;
		n = xevb_builder_missing(b, x->event, miss, XEVB_MAX_SOURCES);
		if (x->reasks < bc->cfg.max_reasks && bc->req.n_srcp) {
			x->reasks++;
			x->t_ask = now;
			bc->reask_events++;
			if (n < 0) /* nothing arrived: ask every source again */
				build_req_all(&bc->req, &bc->io, x->event, 1, XEVB_CTL_RQ_REASK);
			else
				build_req_missing(&bc->req, &bc->io, x->event, miss, n);
			continue;
		}
		if (n < 0 && now - x->t_assign >= give_up && x->old) {
			old_done(bc, x, XEVB_DONE_NO_DATA);
		} else if (n < 0 && now - x->t_assign >= give_up) {
			/* Re-asks spent and not one fragment: the DFM learns it as lost, no_data. */
			x->state = E_DONE;
			x->status = XEVB_DONE_NO_DATA;
			x->n_missing = 1;
			bc->n_assigned--;
			add_done(bc, x->event, XEVB_DONE_NO_DATA, 1);
		}
		/* Open and spent: the builder's own timeout emits it incomplete. */
	}
	update_busy(bc);
}

void build_ctl_scan_owner(struct build_ctl *bc, const struct xevb_builder *b, uint32_t owner, uint64_t now)
{
	if (owner >= XEVB_HO_MAX_WORKERS || now < bc->next_scan[owner])
		return;
	scan(bc, b, owner, now);
	bc->next_scan[owner] = now + SCAN_NS;
	/* Its re-asks go out now: the tick that flushes them runs in another thread. */
	build_req_flush(&bc->req, &bc->io);
}

void build_ctl_tick(struct build_ctl *bc, struct xevb_builder *b, uint64_t now)
{
	struct xevb_ctl_msg m;
	struct sockaddr_in from;
	int budget = 256;

	if (bc->finalize && !bc->reset) {
		finalize_reset(bc);
		if (bc->stash_valid) {
			bc->stash_valid = false;
			on_assign(bc, b, &bc->stash, now);
		}
	}
	while (budget-- > 0 && !bc->reset && xevb_ctl_recv(&bc->io, &m, &from))
		build_ctl_on_msg(bc, b, &m, &from, now);
	if (bc->n_pre)
		pre_expire(bc, now);
	if (now >= bc->next_scan[0]) {
		scan(bc, b, 0, now);
		bc->next_scan[0] = now + SCAN_NS;
	}
	if (now >= bc->next_hb) {
		status_to_dfm(bc);
		bc->next_hb = now + HB_DFM_NS;
	}
	if (now >= bc->next_sink_hb) {
		forwarded_to_dfm(bc); /* every 100 ms: counts, no sign of life */
		xevb_live_accept(bc->live_fd);
		build_fwd_heartbeat(&bc->fwd, &bc->io, now, bc->cfg.sink_dead_ns);
		bc->next_sink_hb = now + HB_NS;
	}
	build_fwd_drain(&bc->fwd);
	build_req_flush(&bc->req, &bc->io);
	if (bc->done.h.n_recs)
		bc->next_hb = now + HB_DFM_NS;
	/*
	 * The events built go to the kernel before their DONEs leave: a
	 * builder killed in between has its events delivered (the kernel
	 * sends what its socket holds) or built again elsewhere (their DONE
	 * never left), never counted done and lost.
	 */
	if (bc->done.h.n_recs && !bc->fwd.out->discard && !bc->fwd.out->fw)
		xevb_output_flush(bc->fwd.out);
	flush_done(bc);
}

struct xevb_ctl_io *build_ctl_io(struct build_ctl *bc)
{
	return &bc->io;
}

bool build_ctl_check(const struct build_ctl *bc, char *msg, size_t cap)
{
	uint32_t size = bc->mask + 1, assigned = 0, old = 0;
	uint64_t rs_left = bc->rs_complete + bc->rs_incomplete + bc->rs_no_data + bc->rs_slot;
	uint64_t epoch_assigned = bc->assigned_events - bc->base_assigned;
	uint64_t epoch_done = done_total(bc) - bc->base_done - (bc->retry_redone - bc->base_redone) -
			      (bc->built_after_no_data - bc->base_after_no_data);
	uint64_t epoch_overflow = bc->assign_overflow - bc->base_overflow;

	if (size & bc->mask || (size > EV_TABLE_MAX && bc->table_grown)) {
		snprintf(msg, cap, "event table of %u entries (grown %llu times, at most %u)", size,
			 (unsigned long long)bc->table_grown, EV_TABLE_MAX);
		return false;
	}
	for (uint32_t i = 0; i < size; i++) {
		const struct ev_ent *x = &bc->ev[i];
		if (x->state != E_FREE && !xevb_ctl_slot_ok(i, x->event, x->state, E_DONE, bc->mask, msg, cap))
			return false;
		if (x->state == E_ASSIGNED) {
			assigned++;
			old += x->old;
		}
	}
	if (assigned != bc->n_assigned) {
		snprintf(msg, cap, "%u events assigned and open in the table, n_assigned %u", assigned,
			 bc->n_assigned);
		return false;
	}
	if (rs_left > bc->rs_open || bc->rs_open - rs_left != old) {
		snprintf(msg, cap, "open at DFM restarts %llu, %llu of them left, %u still in the table",
			 (unsigned long long)bc->rs_open, (unsigned long long)rs_left, old);
		return false;
	}
	if (epoch_assigned != epoch_done + epoch_overflow + (assigned - old)) {
		snprintf(msg, cap, "this DFM epoch: assigned %llu != done %llu + overflow %llu + open %u",
			 (unsigned long long)epoch_assigned, (unsigned long long)epoch_done,
			 (unsigned long long)epoch_overflow, assigned - old);
		return false;
	}
	return build_fwd_check(&bc->fwd, msg, cap);
}

uint64_t build_ctl_reasked(const struct build_ctl *bc)
{
	return bc->reask_events;
}

/*
 * The figures the summary and the JSON both begin with, in that order: mode,
 * assigned, dups, overflow, table size and growths, DONE complete, incomplete
 * and no_data, re-sent, built early, never assigned, open at DFM restart,
 * restarts.
 */
#define CTL_HEAD_ARGS(bc) \
	(bc)->pull ? "pull" : "push", (unsigned long long)(bc)->assigned_events, \
		(unsigned long long)(bc)->assign_dups, (unsigned long long)(bc)->assign_overflow, (bc)->mask + 1, \
		(unsigned long long)(bc)->table_grown, (unsigned long long)(bc)->done_sent[0], \
		(unsigned long long)(bc)->done_sent[1], (unsigned long long)(bc)->done_sent[2], \
		(unsigned long long)(bc)->retry_redone, (unsigned long long)(bc)->built_early, \
		(unsigned long long)((bc)->unassigned_built - (bc)->built_early), \
		(unsigned long long)(bc)->abandoned, (unsigned long long)(bc)->dfm_restarts

/* Pull: the unsolicited fragments by the source process (address) their ids belong to. */
static void unsolicited_lines(const struct build_ctl *bc, FILE *f)
{
	char a[INET_ADDRSTRLEN];

	for (uint32_t i = 0; i < bc->req.n_srcp; i++) {
		const struct build_srcp *p = &bc->req.src[i];

		if (!p->unsolicited)
			continue;
		inet_ntop(AF_INET, &p->sa.sin_addr, a, sizeof(a));
		fprintf(f, "  unsolicited fragments of source %s:%u (ids %u-%u): %llu\n", a, ntohs(p->sa.sin_port),
			p->first_id, p->first_id + p->n_ids - 1, (unsigned long long)p->unsolicited);
	}
	if (bc->req.unsolicited_other)
		fprintf(f, "  unsolicited fragments of ids no source announced: %llu\n",
			(unsigned long long)bc->req.unsolicited_other);
}

/* The JSON of the events built before the first ASSIGN and of those nobody requested. */
static void unsolicited_json(const struct build_ctl *bc, FILE *f)
{
	char a[INET_ADDRSTRLEN];

	fprintf(f,
		",\"pre_held\":%llu,\"pre_forwarded\":%llu,\"pre_dropped\":%llu,\"pre_dropped_frags\":%llu,"
		"\"unsolicited\":%llu,\"unsolicited_other_frags\":%llu,\"unsolicited_frags\":{",
		(unsigned long long)bc->pre_held, (unsigned long long)bc->pre_forwarded,
		(unsigned long long)bc->pre_dropped, (unsigned long long)bc->pre_dropped_frags,
		(unsigned long long)bc->unsolicited, (unsigned long long)bc->req.unsolicited_other);
	for (uint32_t i = 0, n = 0; i < bc->req.n_srcp; i++) {
		const struct build_srcp *p = &bc->req.src[i];

		if (!p->unsolicited)
			continue; /* thousands of processes: name only those that sent any */
		inet_ntop(AF_INET, &p->sa.sin_addr, a, sizeof(a));
		fprintf(f, "%s\"%s:%u\":%llu", n++ ? "," : "", a, ntohs(p->sa.sin_port),
			(unsigned long long)p->unsolicited);
	}
	fprintf(f, "}");
}

void build_ctl_summary(const struct build_ctl *bc, FILE *f)
{
	fprintf(f,
		"dfm control: %s mode; assigned %llu events (dup %llu, overflow %llu; table %u, grown %llu "
		"times), DONE complete %llu "
		"incomplete %llu no_data %llu (re-sent %llu), built before the ASSIGN %llu, never assigned %llu, open at DFM "
		"restart %llu (%llu restarts: then built complete %llu, incomplete %llu, lost no_data %llu, "
		"lost slot %llu)\n  requests %llu messages, re-asks %llu events; forwarded %llu, "
		"backlogged %llu (max %llu, overflow %llu), errors %llu; Busy %llu times; control refused %llu, "
		"unexpected %llu; built after no_data %llu\n",
		CTL_HEAD_ARGS(bc), (unsigned long long)bc->rs_complete, (unsigned long long)bc->rs_incomplete,
		(unsigned long long)bc->rs_no_data, (unsigned long long)bc->rs_slot,
		(unsigned long long)bc->req.requests_sent, (unsigned long long)bc->reask_events,
		(unsigned long long)bc->fwd.fwd_events, (unsigned long long)bc->fwd.fwd_backlogged,
		(unsigned long long)bc->fwd.backlog_max, (unsigned long long)bc->fwd.backlog_overflow,
		(unsigned long long)bc->fwd.fwd_errors, (unsigned long long)bc->busy.n_busy,
		(unsigned long long)bc->io.rx_bad_total, (unsigned long long)bc->unexpected,
		(unsigned long long)bc->built_after_no_data);
	fprintf(f,
		"  before the first ASSIGN: held %llu events, forwarded %llu, dropped %llu (%llu fragments); "
		"unsolicited (pull, never requested) %llu events\n",
		(unsigned long long)bc->pre_held, (unsigned long long)bc->pre_forwarded,
		(unsigned long long)bc->pre_dropped, (unsigned long long)bc->pre_dropped_frags,
		(unsigned long long)bc->unsolicited);
	unsolicited_lines(bc, f);
	for (uint32_t i = 0; i < bc->fwd.out->n_sinks; i++)
		fprintf(f,
			"  farm node %s: credits %u, sent %llu, acknowledged %llu, deaths %llu, rejoins %llu, "
			"Busy %llu times%s\n",
			bc->fwd.out->sinks[i].name, bc->fwd.sink[i].credits,
			(unsigned long long)bc->fwd.sink[i].sent_total, (unsigned long long)bc->fwd.sink[i].done,
			(unsigned long long)bc->fwd.sink[i].deaths, (unsigned long long)bc->fwd.sink[i].rejoins,
			(unsigned long long)bc->fwd.sink[i].busy_on,
			bc->fwd.sink[i].heard ? "" : " (never answered)");
}

void build_ctl_json(const struct build_ctl *bc, FILE *f)
{
	char q[XEVB_JSON_QLEN(sizeof(bc->fwd.out->sinks[0].name))];

	fprintf(f,
		"{\"mode\":\"%s\",\"assigned\":%llu,\"assign_dups\":%llu,\"assign_overflow\":%llu,"
		"\"table_size\":%u,\"table_grown\":%llu,\"done_complete\":%llu,"
		"\"done_incomplete\":%llu,\"done_no_data\":%llu,\"done_resent\":%llu,\"built_early\":%llu,"
		"\"unassigned_built\":%llu,"
		"\"abandoned\":%llu,\"dfm_restarts\":%llu,\"core_resets\":%llu,\"requests\":%llu,"
		"\"reask_events\":%llu,\"forwarded\":%llu,\"backlogged\":%llu,\"backlog_max\":%llu,"
		"\"backlog_overflow\":%llu,\"forward_errors\":%llu,\"busy_on\":%llu,\"busy_off\":%llu,"
		"\"busy_high\":%u,\"busy_low\":%u,\"assigned_busy\":%llu,\"ctl_refused\":%llu,"
		"\"ctl_unexpected\":%llu,\"built_after_no_data\":%llu,"
		"\"restart\":{\"assigned\":%llu,\"done\":%llu,\"overflow\":%llu,\"open\":%llu,"
		"\"built_complete\":%llu,\"built_incomplete\":%llu,\"lost_no_data\":%llu,\"lost_slot\":%llu,"
		"\"still_open\":%llu},\"sinks\":[",
		CTL_HEAD_ARGS(bc), (unsigned long long)bc->core_resets, (unsigned long long)bc->req.requests_sent,
		(unsigned long long)bc->reask_events, (unsigned long long)bc->fwd.fwd_events,
		(unsigned long long)bc->fwd.fwd_backlogged, (unsigned long long)bc->fwd.backlog_max,
		(unsigned long long)bc->fwd.backlog_overflow, (unsigned long long)bc->fwd.fwd_errors,
		(unsigned long long)bc->busy.n_busy, (unsigned long long)bc->busy.n_clear, bc->busy.high,
		bc->busy.low, (unsigned long long)bc->assigned_busy, (unsigned long long)bc->io.rx_bad_total,
		(unsigned long long)bc->unexpected, (unsigned long long)bc->built_after_no_data,
		(unsigned long long)bc->rs_assigned, (unsigned long long)bc->rs_done,
		(unsigned long long)bc->rs_overflow, (unsigned long long)bc->rs_open,
		(unsigned long long)bc->rs_complete, (unsigned long long)bc->rs_incomplete,
		(unsigned long long)bc->rs_no_data, (unsigned long long)bc->rs_slot,
		(unsigned long long)(bc->rs_open - bc->rs_complete - bc->rs_incomplete - bc->rs_no_data -
				     bc->rs_slot));
	/* A farm node's name is the text of its --sink option: escaped. */
	for (uint32_t i = 0; i < bc->fwd.out->n_sinks; i++)
		fprintf(f,
			"%s{\"name\":%s,\"credits\":%u,\"sent\":%llu,\"acked\":%llu,\"deaths\":%llu,"
			"\"rejoins\":%llu,\"busy_on\":%llu}",
			i ? "," : "",
			xevb_json_qn(q, sizeof(q), bc->fwd.out->sinks[i].name, sizeof(bc->fwd.out->sinks[i].name)),
			bc->fwd.sink[i].credits, (unsigned long long)bc->fwd.sink[i].sent_total,
			(unsigned long long)bc->fwd.sink[i].done, (unsigned long long)bc->fwd.sink[i].deaths,
			(unsigned long long)bc->fwd.sink[i].rejoins, (unsigned long long)bc->fwd.sink[i].busy_on);
	fprintf(f, "],\"source_processes\":%u,\"no_source_for\":%llu", bc->req.n_srcp,
		(unsigned long long)bc->req.no_source_for);
	unsolicited_json(bc, f);
	fprintf(f, ",\"ctl_not_admitted\":");
	xevb_ctl_admit_json(&bc->io, f);
	fputc(',', f);
	xevb_ctl_refused_json(&bc->io, f);
	fprintf(f, "}");
}

// SPDX-License-Identifier: GPL-2.0-only
/* The builder's forwarding under farm-node credits (build_fwd.h, docs/control-protocol.md). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include "base/cli.h"
#include "ctl/build_fwd.h"
#include "ctl/flowctl.h"
#include "wire/event_codec.h"

int build_fwd_init(struct build_fwd *f, struct xevb_output *out, uint32_t backlog, uint16_t sink_ctl_port)
{
	f->out = out;
	f->backlog = backlog;
	f->bl = calloc(backlog ? backlog : 1, sizeof(*f->bl));
	if (!f->bl || peer_map_init(&f->by_addr, out->n_sinks))
		return -1;
	for (uint32_t i = 0; i < out->n_sinks; i++) {
		f->sink[i].ctl = out->sinks[i].addr;
		f->sink[i].ctl.sin_port = htons(sink_ctl_port);
		f->sink[i].fd = out->sinks[i].fd;
		if (peer_map_get(&f->by_addr, out->sinks[i].addr.sin_addr.s_addr) < 0)
			peer_map_put(&f->by_addr, out->sinks[i].addr.sin_addr.s_addr, i);
	}
	return 0;
}

void build_fwd_free(struct build_fwd *f)
{
	if (f->bl)
		for (uint32_t i = 0; i < f->bl_n; i++)
			free(f->bl[(f->bl_head + i) % f->backlog].buf);
	free(f->bl);
	f->bl = NULL;
	peer_map_free(&f->by_addr);
}

bool build_fwd_on_status(struct build_fwd *f, const struct xevb_ctl_msg *m, const struct sockaddr_in *from,
			 uint32_t our_epoch, uint64_t now)
{
	int64_t i = peer_map_get(&f->by_addr, from->sin_addr.s_addr);

	if (i >= 0) {
		struct build_sinkc *s = &f->sink[i];
		/* Only counts about this incarnation of us are usable. */
		if (m->u.status.peer_epoch != our_epoch)
			return true;
		s->epoch = m->h.epoch;
		if (!s->alive && s->heard)
			s->rejoins++;
		s->heard = s->alive = true;
		f->credit_mode = true;
		s->credits = m->u.status.credits;
		s->done = m->u.status.done_total;
		if ((m->u.status.flags & XEVB_CTL_ST_BUSY) && !s->busy)
			s->busy_on++;
		s->busy = m->u.status.flags & XEVB_CTL_ST_BUSY;
		s->last_ns = now;
		return true;
	}
	return false;
}

/* A farm node with credit, not Busy, and room in its send buffer for bytes; or -1. */
static int pick_sink(struct build_fwd *f, size_t bytes)
{
	uint32_t w[XEVB_MAX_SINKS];

	for (uint32_t i = 0; i < f->out->n_sinks; i++) {
		struct build_sinkc *s = &f->sink[i];
		if (f->out->sinks[i].fd != s->fd) {
			/* A new connection: the farm node counts afresh on it. */
			s->fd = f->out->sinks[i].fd;
			s->base = s->sent;
			s->done = 0;
		}
		uint64_t out = s->sent - s->base > s->done ? s->sent - s->base - s->done : 0;
		w[i] = s->alive && !s->busy && out < s->credits && xevb_output_has_room(f->out, i, bytes) ?
			       s->credits :
			       0;
	}
	return xevb_wrr_pick(f->wrr, w, f->out->n_sinks);
}

/* The output engine took the event for farm node k (err 0), or counted why not. */
static void sent_to(struct build_fwd *f, int k, int err)
{
	if (err) {
		f->fwd_errors++;
		return;
	}
	f->sink[k].sent++;
	f->sink[k].sent_total++;
	f->fwd_events++;
}

void build_fwd_drain(struct build_fwd *f)
{
	while (f->bl_n) {
		struct build_held_ev *h = &f->bl[f->bl_head];
		int k = pick_sink(f, h->len);
		if (k < 0)
			break;
		sent_to(f, k, xevb_output_write_to(f->out, (uint32_t)k, h->buf, h->len));
		free(h->buf);
		h->buf = NULL;
		f->bl_head = (f->bl_head + 1) % f->backlog;
		f->bl_n--;
	}
}

/* No farm node can take ev: hold an encoded copy (its frames go back right after emit). */
static void hold(struct build_fwd *f, const struct xevb_event *ev, size_t need)
{
	struct xevb_output *o = f->out;
	struct build_held_ev *h;

	if (f->bl_n == f->backlog) {
		f->backlog_overflow++;
		o->st.dropped_no_sink++;
		return;
	}
	h = &f->bl[(f->bl_head + f->bl_n) % f->backlog];
	h->buf = malloc(need);
	if (!h->buf) {
		f->backlog_overflow++;
		o->st.dropped_no_sink++;
		return;
	}
	if (xevb_event_encode_into(ev, xevb_realtime_ns(), h->buf, need, &h->len)) {
		free(h->buf);
		h->buf = NULL;
		o->st.encode_errors++;
		return;
	}
	f->bl_n++;
	f->fwd_backlogged++;
	if (f->bl_n > f->backlog_max)
		f->backlog_max = f->bl_n;
}

void build_fwd_event(struct build_fwd *f, const struct xevb_event *ev)
{
	struct xevb_output *o = f->out;
	size_t need;
	int k;

	if (!f->credit_mode || o->discard || o->fw) {
		xevb_output_emit(o, ev);
		return;
	}
	need = xevb_event_wire_size_fast(ev);
	k = f->bl_n ? -1 : pick_sink(f, need); /* keep the order: backlog first */
	if (k >= 0)
		sent_to(f, k, xevb_output_emit_to(o, (uint32_t)k, ev));
	else
		hold(f, ev, need);
}

bool build_fwd_encoded(struct build_fwd *f, uint8_t *buf, size_t len)
{
	struct xevb_output *o = f->out;
	int k;

	if (o->discard || o->fw || !o->n_sinks) {
		free(buf);
		return false;
	}
	if (!f->credit_mode) {
		k = (int)(f->fwd_rr++ % o->n_sinks);
		if (xevb_output_write_to(o, (uint32_t)k, buf, len))
			f->fwd_errors++;
		free(buf);
		return true;
	}
	k = f->bl_n ? -1 : pick_sink(f, len);
	if (k >= 0) {
		sent_to(f, k, xevb_output_write_to(o, (uint32_t)k, buf, len));
		free(buf);
		return true;
	}
	if (f->bl_n == f->backlog) {
		f->backlog_overflow++;
		o->st.dropped_no_sink++;
		free(buf);
		return true;
	}
	f->bl[(f->bl_head + f->bl_n) % f->backlog] = (struct build_held_ev){ .buf = buf, .len = len };
	f->bl_n++;
	f->fwd_backlogged++;
	if (f->bl_n > f->backlog_max)
		f->backlog_max = f->bl_n;
	return true;
}

void build_fwd_heartbeat(struct build_fwd *f, struct xevb_ctl_io *io, uint64_t now, uint64_t dead_ns)
{
	struct xevb_ctl_msg h = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	for (uint32_t i = 0; i < f->out->n_sinks; i++) {
		struct build_sinkc *s = &f->sink[i];
		if (s->alive && now - s->last_ns > dead_ns) {
			s->alive = false;
			s->deaths++;
			xevb_warn("farm node %s silent for %llu ms: no more events to it until it answers",
				  f->out->sinks[i].name, (unsigned long long)(dead_ns / 1000000));
		}
		h.u.status = (struct xevb_ctl_status){ .peer_epoch = s->epoch, .done_total = s->sent - s->base };
		xevb_ctl_send(io, &s->ctl, &h);
	}
}

bool build_fwd_check(const struct build_fwd *f, char *msg, size_t cap)
{
	if (f->bl_n > f->backlog || (f->backlog && f->bl_head >= f->backlog)) {
		snprintf(msg, cap, "backlog %u (head %u) over its bound %u", f->bl_n, f->bl_head, f->backlog);
		return false;
	}
	for (uint32_t i = 0; i < f->out->n_sinks; i++)
		if (f->sink[i].sent < f->sink[i].base || f->sink[i].sent > f->sink[i].sent_total) {
			snprintf(msg, cap, "farm node %u: sent %llu, since its connection %llu, in all %llu", i,
				 (unsigned long long)f->sink[i].sent, (unsigned long long)f->sink[i].base,
				 (unsigned long long)f->sink[i].sent_total);
			return false;
		}
	return true;
}

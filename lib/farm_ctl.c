// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The farm node's credits and Busy (docs/control-protocol.md), which
 * `xevb sink --ctl-port` runs on (the rules of its former sink_ctl.c,
 * relicensed here), with one change of meaning: a credit comes back when
 * the caller is done with the event, not when it arrives. Each builder
 * learns, in STATUS, how many of the events it sent on its current
 * connection are done (done_total) with its own epoch (peer_epoch); it
 * keeps at most credits events in flight to us. Busy follows the events
 * held (received, not done) with hysteresis; RECEIVED tells the DFM what
 * arrived from each builder address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "farm.h"

#define MAX_BUILDERS 1024

uint32_t xl_farm_builder(struct xevb_farm *f, uint32_t ip)
{
	struct xl_builder *b;

	for (uint32_t i = 0; i < f->n_builders; i++)
		if (f->builders[i].ip == ip)
			return i;
	if (f->n_builders == f->cap_builders) {
		uint32_t cap = f->cap_builders ? 2 * f->cap_builders : 16;
		if (cap > MAX_BUILDERS)
			return UINT32_MAX;
		b = realloc(f->builders, cap * sizeof(*b));
		if (!b)
			return UINT32_MAX;
		f->builders = b;
		f->cap_builders = cap;
	}
	b = &f->builders[f->n_builders];
	memset(b, 0, sizeof(*b));
	b->ip = ip;
	f->st.n_builders = ++f->n_builders;
	return f->n_builders - 1;
}

void xl_farm_busy_init(struct xevb_farm *f)
{
	double h = ceil(f->o.busy_high * f->o.credits), l = floor(f->o.busy_low * f->o.credits);

	if (l > h)
		l = h;
	f->busy_high = h > UINT32_MAX ? UINT32_MAX : (uint32_t)h;
	f->busy_low = l < 0 ? 0 : (uint32_t)l;
	f->st.busy_mark_high = f->busy_high;
	f->st.busy_mark_low = f->busy_low;
}

static void send_status(struct xevb_farm *f, struct xl_builder *b)
{
	struct xevb_ctl_status s = { .credits = f->o.credits,
				     .flags = f->busy ? XEVB_CTL_ST_BUSY : 0,
				     .done_total = b->conn_done,
				     .peer_epoch = b->epoch,
				     .load = f->st.held > UINT32_MAX ? UINT32_MAX : (uint32_t)f->st.held };

	if (!xl_ctl_send_status(&f->ctl, &b->ctl, b->id, &s))
		f->st.status_sent++;
	b->reported = b->conn_done;
}

/* The DFM's end of run: only from the DFM we report to (a BYE from elsewhere is not ours to take). */
static void dfm_bye(struct xevb_farm *f, const struct sockaddr_in *from)
{
	if (!f->dfm.sin_port || from->sin_addr.s_addr != f->dfm.sin_addr.s_addr ||
	    from->sin_port != f->dfm.sin_port) {
		f->ctl.unexpected++;
		f->st.ctl_not_from_dfm++;
		return;
	}
	if (!(f->run_end & XEVB_END_DFM)) {
		char ip[INET_ADDRSTRLEN];
		xl_log(&f->log, XEVB_LIB_LOG_INFO,
		       "BYE from the DFM %s:%u: the run is over; taking what the builders still send",
		       inet_ntop(AF_INET, &from->sin_addr, ip, sizeof(ip)), ntohs(from->sin_port));
	}
	f->run_end |= XEVB_END_DFM;
	f->rx_ns = xl_mono_ns();
}

/*
 * Every builder that connected closed in order, none connected, nothing
 * queued: the streams ended. With a DFM the run is over at its word once
 * no builder is connected, or none has sent for end_wait_ms.
 */
void xl_farm_run_end(struct xevb_farm *f, uint64_t now)
{
	uint32_t e = f->run_end & XEVB_END_DFM;
	bool ended = f->st.conns_total && !f->n_conns && !f->ready_n;

	for (uint32_t i = 0; ended && i < f->n_builders; i++)
		ended = f->builders[i].ended || !f->builders[i].connections;
	if (ended)
		e |= XEVB_END_STREAMS;
	if (!f->dfm.sin_port || !f->ctl_on)
		e |= ended ? XEVB_END_RUN : 0;
	else if ((e & XEVB_END_DFM) && !f->ready_n &&
		 (!f->n_conns || (!f->n_paused && now - f->rx_ns >= (uint64_t)f->o.end_wait_ms * 1000000ull)))
		e |= XEVB_END_RUN; /* a connection not read for want of room is not quiet: it waits on us */
	/* Over is over: a builder that connects afterwards is another run's. */
	e |= f->run_end & XEVB_END_RUN;
	f->run_end = e;
	f->st.run_end = e;
}

void xl_farm_ctl_rx(struct xevb_farm *f)
{
	struct xevb_ctl_hdr h;
	struct xevb_ctl_status s;
	struct sockaddr_in from;

	while (xl_ctl_recv(&f->ctl, &h, &s, &from)) {
		uint32_t i;
		struct xl_builder *b;
		if (h.type == XEVB_CTL_BYE) {
			dfm_bye(f, &from);
			continue;
		}
		i = xl_farm_builder(f, from.sin_addr.s_addr);
		if (i == UINT32_MAX) {
			f->st.ctl_builders_full++;
			continue;
		}
		b = &f->builders[i];
		b->ctl = from;
		b->id = h.sender_id;
		b->epoch = h.epoch;
		/* A builder heard for the first time gets its credits at once. */
		if (!b->known) {
			b->known = true;
			send_status(f, b);
		}
	}
	f->st.ctl_refused = f->ctl.refused;
	f->st.ctl_unexpected = f->ctl.unexpected;
	f->st.ctl_wrong_role = f->ctl.wrong_role;
	memcpy(f->st.ctl_refused_by, f->ctl.refused_by, sizeof(f->st.ctl_refused_by));
}

/* RECEIVED to the DFM: every builder's count since we started (cumulative: a lost report costs nothing). */
void xl_farm_received(struct xevb_farm *f)
{
	struct xevb_ctl_received r[XL_CTL_RECV_MAX];
	uint32_t n = 0;
	bool sent = false;

	if (!f->ctl_on || !f->dfm.sin_port)
		return;
	for (uint32_t i = 0; i < f->n_builders; i++) {
		r[n++] = (struct xevb_ctl_received){ f->builders[i].ip, f->builders[i].events };
		if (n == XL_CTL_RECV_MAX) {
			f->st.received_sent += !xl_ctl_send_received(&f->ctl, &f->dfm, r, n);
			n = 0;
			sent = true;
		}
	}
	/* No record at all still tells the DFM a farm node is there and got nothing. */
	if (n || !sent)
		f->st.received_sent += !xl_ctl_send_received(&f->ctl, &f->dfm, r, n);
}

static bool busy_update(struct xevb_farm *f)
{
	bool was = f->busy;

	if (f->busy_mode == XEVB_BUSY_ON)
		f->busy = true;
	else if (f->busy_mode == XEVB_BUSY_OFF)
		f->busy = false;
	else if (!f->busy && f->st.held > f->busy_high)
		f->busy = true;
	else if (f->busy && f->st.held < f->busy_low)
		f->busy = false;
	if (f->busy == was)
		return false;
	if (f->busy)
		f->st.busy_on++;
	else
		f->st.busy_off++;
	f->st.busy = f->busy;
	return true;
}

void xl_farm_tick(struct xevb_farm *f, uint64_t now)
{
	bool changed, beat = now >= f->next_hb, push = now >= f->next_push;
	uint64_t quarter = (f->o.credits + 3) / 4;

	if (!f->ctl_on) {
		/* No protocol: the beat only keeps the timer (stalled connections) going. */
		if (beat)
			f->next_hb = now + XL_HB_NS;
		return;
	}
	changed = busy_update(f);
	/* Everyone at once on a change and on the beat; credits back early once a quarter is done. */
	for (uint32_t i = 0; i < f->n_builders; i++) {
		struct xl_builder *b = &f->builders[i];
		if (b->known && (changed || beat || (push && b->conn_done - b->reported >= quarter)))
			send_status(f, b);
	}
	if (beat) {
		xl_farm_received(f);
		f->next_hb = now + XL_HB_NS;
	}
	if (push)
		f->next_push = now + XL_PUSH_NS;
}

// SPDX-License-Identifier: GPL-2.0-only
/* The engine's counters into a statistics snapshot (report.h): receive, output, shedding, builder. */
#include <stdio.h>
#include <string.h>
#include "base/cli.h"
#include "base/counters.h"
#include "ops/engine_stats.h"
#include "rx/engine_workers.h"

/* The workers' receive, output and builder counters into s. */
static void totals_into(struct bw *bw, struct xevb_snapshot *s)
{
	struct bw_totals t;

	bw_totals(bw, &t);
	s->rx_frames = t.rx_frames;
	s->rx_bytes = t.rx_bytes;
	s->rx_not_mep = t.rx_not_mep;
	s->batches = t.batches;
	s->polls = t.polls;
	s->rx_meta = t.rx_meta;
	s->rx_meta_fallback = t.rx_meta_fallback;
	if (t.has_out)
		s->out = t.out;
	s->core = t.core;
}

void xevb_engine_snapshot(struct xevb_engine *e, struct xevb_snapshot *s)
{
	s->update_ns = xevb_now_ns();
	{
		const struct xevb_sock *ks = e->c.xdp ? &e->ipfrag : &e->sock;

		s->rx_ipfrag_datagrams = ks->ipfrag_datagrams;
		s->rx_ipfrag_bytes = ks->ipfrag_bytes;
		s->rx_ipfrag_copied = ks->big_copied;
	}
	s->out = e->out.st;
	if (e->bw)
		totals_into(e->bw, s);
	if (e->c.xdp || e->pass_xdp)
		xevb_xdp_counters_read(e->ld.counters_fd, s->xdp);
	else
		memset(s->xdp, 0, sizeof(s->xdp)); /* the socket's refusals below are totals, not increments */
	if (e->ipfrag_on || !e->c.xdp) {
		/* Datagrams of a socket refused by --bind-src / --allow-src count where XDP counts the others. */
		const struct xevb_sock *ks = e->c.xdp ? &e->ipfrag : &e->sock;

		s->xdp[XEVB_XDP_SRC_MISMATCH].packets += ks->src_mismatch_packets;
		s->xdp[XEVB_XDP_SRC_MISMATCH].bytes += ks->src_mismatch_bytes;
		s->xdp[XEVB_XDP_SRC_MISMATCH].frags += ks->src_mismatch_frags;
		s->xdp[XEVB_XDP_SRC_MAC_MISMATCH].packets += ks->src_mac_packets;
		s->xdp[XEVB_XDP_SRC_MAC_MISMATCH].bytes += ks->src_mac_bytes;
		s->xdp[XEVB_XDP_SRC_MAC_MISMATCH].frags += ks->src_mac_frags;
		s->xdp[XEVB_XDP_SRC_VLAN_MISMATCH].packets += ks->src_vlan_packets;
		s->xdp[XEVB_XDP_SRC_VLAN_MISMATCH].bytes += ks->src_vlan_bytes;
		s->xdp[XEVB_XDP_SRC_VLAN_MISMATCH].frags += ks->src_vlan_frags;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].packets += ks->src_unknown_packets;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].bytes += ks->src_unknown_bytes;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].frags += ks->src_unknown_frags;
	}
	s->shed_on = e->shed.on;
	s->shed_accept = e->shed.ctl.accept;
	s->shed_min_accept = e->shed.ctl.min_accept;
	s->shed_ref_source = e->shed.on ? e->ld.shed_gate->ref_source : 0;
	s->shed_cuts = e->shed.ctl.cuts;
	s->shed_raises = e->shed.ctl.raises;
	memcpy(s->shed_cuts_by, e->shed.ctl.cuts_by, sizeof(s->shed_cuts_by));
	if (e->shed.on && e->ld.shed_gate->guard_limit) {
		s->shed_guard_limit = e->ld.shed_gate->guard_limit;
		s->shed_guard_refused = e->ld.shed_gate->guard_refused;
		s->shed_guard_admitted = e->ld.shed_gate->guard_admitted;
		s->shed_guard_vouched = e->ld.shed_gate->guard_vouched;
	}
	if (e->c.xdp) {
		struct xevb_sock_queue iq;

		/* --bare never reads a frame: take the bytes per frame the program redirected. */
		if (e->c.bare && s->xdp[XEVB_XDP_TO_XSK].packets)
			s->rx_bytes = (uint64_t)((double)s->xdp[XEVB_XDP_TO_XSK].bytes /
						 (double)s->xdp[XEVB_XDP_TO_XSK].packets * (double)s->rx_frames);
		for (uint32_t q = 0; q < e->xsk.n_queues; q++)
			xevb_xsk_stats(&e->xsk, q, &s->xsk[q]);
		/* The reassembled datagrams' socket: its queue is the only one there is. */
		if (e->ipfrag_on && !xevb_sock_queue(&e->ipfrag, &iq) && iq.drops > e->ipfrag.kernel_drops)
			e->ipfrag.kernel_drops = iq.drops;
		s->sock_kernel_drops = e->ipfrag.kernel_drops;
		s->sock_truncated = e->ipfrag.truncated;
	} else {
		struct xevb_sock_queue sq;

		/* The kernel's running total (SO_MEMINFO): never let a failed read move it back. */
		if (!xevb_sock_queue(&e->sock, &sq) && sq.drops > e->sock.kernel_drops)
			e->sock.kernel_drops = sq.drops;
		s->sock_kernel_drops = e->sock.kernel_drops;
		s->sock_truncated = e->sock.truncated;
	}
}
void xevb_engine_metrics(struct xevb_engine *e, struct xevb_metrics *mx)
{
	char lab[32];

	if (!e->bw || e->c.n_workers <= 1)
		return;
	for (uint32_t i = 0; i < bw_n_workers(e->bw); i++) {
		const struct bw_worker_stats *st = bw_worker_stats(e->bw, i);

		snprintf(lab, sizeof(lab), "worker=\"%u\"", i);
		xevb_metrics_counter(mx, "xevb_worker_rx_frames_total",
				     "Frames taken from the AF_XDP rings, per worker.", lab, &st->rx_frames);
		xevb_metrics_counter(mx, "xevb_worker_handoff_sent_total",
				     "MEP shares handed to another worker (the owner of their events).", lab,
				     &st->ho_sent);
		xevb_metrics_counter(mx, "xevb_worker_handoff_received_total",
				     "MEP shares taken from other workers.", lab, &st->ho_recv);
		xevb_metrics_counter(mx, "xevb_worker_split_meps_total",
				     "MEPs whose events belong to more than one worker.", lab, &st->split_meps);
		xevb_metrics_counter(mx, "xevb_worker_polls_total", "Times the worker slept in poll().", lab,
				     &st->polls);
	}
}

/* A worker's builder: every counter of the core's rows of the table, as JSON members. */
static void json_core(FILE *f, const struct xevb_builder_stats *b)
{
	char name[64];

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		if (c->part != XEVB_PART_CORE)
			continue;
		for (uint32_t k = 0; k < c->n; k++)
			fprintf(f, ",\"%s\":%llu", xevb_counter_name(c, k, true, name, sizeof(name)),
				(unsigned long long)xevb_counter_at(c, b, k));
	}
}

static void json_worker(FILE *f, const struct bw *bw, uint32_t i, const struct bw_worker_view *v)
{
	const struct bw_worker_stats *st = v->st;
	bool first = true;

	fprintf(f, "%s{\"worker\":%u,\"cpu\":%d,\"queues\":[", i ? "," : "", i, v->cpu);
	for (uint32_t k = 0; k < v->n_q; k++)
		fprintf(f, "%s{\"queue\":%u,\"rx_frames\":%llu}", k ? "," : "", v->queue_id[k],
			(unsigned long long)v->queue_rx[k]);
	fprintf(f,
		"],\"rx_frames\":%llu,\"rx_bytes\":%llu,\"polls\":%llu,\"handoff_sent\":%llu,"
		"\"handoff_received\":%llu,\"handoff_walked\":%llu,\"handoff_whole\":%llu,\"refs_wanted_windows\":%llu,\"split_meps\":%llu,\"eor_notices\":%llu,\"returns_sent\":%llu,"
		"\"returns_received\":%llu,\"ring_full_waits\":%llu,\"wakes\":%llu,\"naps\":%llu,"
		"\"assigns_merged\":%llu,\"run_ended\":%s",
		(unsigned long long)st->rx_frames, (unsigned long long)st->rx_bytes, (unsigned long long)st->polls,
		(unsigned long long)st->ho_sent, (unsigned long long)st->ho_recv,
		(unsigned long long)st->ho_walked, (unsigned long long)st->ho_whole,
		(unsigned long long)st->refs_windows, (unsigned long long)st->split_meps,
		(unsigned long long)st->eor_notices, (unsigned long long)st->ret_sent,
		(unsigned long long)st->ret_recv, (unsigned long long)st->ring_full_waits,
		(unsigned long long)st->wakes, (unsigned long long)st->naps, (unsigned long long)v->assigns_merged,
		v->core->run_ended ? "true" : "false");
	json_core(f, v->core);
	fprintf(f, ",\"rx_sources\":[");
	for (uint32_t s = 0; s < XEVB_MAX_SOURCES; s++)
		if (bw_rx_source_seen(bw, i, s)) {
			fprintf(f, "%s%u", first ? "" : ",", s);
			first = false;
		}
	fprintf(f, "]}");
}

void xevb_engine_json(struct xevb_engine *e, FILE *f)
{
	struct bw_worker_view v;

	if (e->c.n_workers <= 1)
		return;
	fprintf(f, "{\"workers\":[");
	for (uint32_t i = 0; bw_worker_view(e->bw, i, &v); i++)
		json_worker(f, e->bw, i, &v);
	fprintf(f, "]}\n");
}

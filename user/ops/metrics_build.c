// SPDX-License-Identifier: GPL-2.0-only
/*
 * A builder's metrics page, from the snapshot it publishes once a second
 * (user/ops/report.h): the scrape copies it under its sequence count,
 * so the receive loop never waits for, or even notices, a scrape.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/counters.h"
#include "ops/metrics.h"
#include "evb/names.h"
#include "ops/report.h"

int xevb_snapshot_copy(const struct xevb_snapshot *m, struct xevb_snapshot *out)
{
	for (int tries = 0; tries < 100; tries++) {
		uint64_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			usleep(1000);
			continue;
		}
		memcpy(out, m, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&m->seq, __ATOMIC_ACQUIRE) == s1)
			return 0;
	}
	return -1;
}

#define C(name, help, v) xevb_metric_one(b, name, "counter", help, v)
#define G(name, help, v) xevb_metric_one(b, name, "gauge", help, v)

/* A row of the counter table: its samples for one source (per source) or the builder. */
static void counter_samples(struct xevb_mbuf *b, const struct xevb_snapshot *s, const struct xevb_counter *c,
			    const char *name, uint32_t source_id)
{
	char l[96];

	for (uint32_t k = 0; k < c->n; k++) {
		xevb_counter_labels(c, source_id, k, l, sizeof(l));
		xevb_metric_u64(b, name, l, xevb_counter_value(c, s, source_id, k));
	}
}

/* Every row of the counter table of this scope; rows of one family follow each other. */
static void table_families(struct xevb_mbuf *b, const struct xevb_snapshot *s, enum xevb_counter_scope scope)
{
	const char *family = NULL;

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];
		const char *help, *name;

		if (c->scope != scope)
			continue;
		name = xevb_counter_prom(c, s->xdp_mode, &help);
		if (!family || strcmp(family, name))
			xevb_metric_family(b, name, c->kind == XEVB_GAUGE ? "gauge" : "counter", help);
		family = name;
		if (scope == XEVB_SCOPE_TOTAL)
			counter_samples(b, s, c, name, 0);
		else
			for (uint32_t id = 0; id < XEVB_MAX_SOURCES; id++)
				if (s->core.src[id].seen)
					counter_samples(b, s, c, name, id);
	}
}

/* The steering program's verdicts: packets, bytes and fragments. */
static void render_xdp_verdicts(struct xevb_mbuf *b, const struct xevb_snapshot *s)
{
	char l[96];

	static const char *const h[3] = {
		"Packets by verdict of the XDP steering program (summed over CPUs).",
		"Bytes by verdict of the XDP steering program (summed over CPUs).",
		"Fragment records carried by valid MEPs, by verdict of the XDP program.",
	};
	static const char *const n[3] = {
		"xevb_xdp_packets_total",
		"xevb_xdp_bytes_total",
		"xevb_xdp_fragments_total",
	};
	for (int k = 0; k < 3; k++) {
		xevb_metric_family(b, n[k], "counter", h[k]);
		for (unsigned v = 0; v < XEVB_XDP__SLOTS; v++) {
			const struct xevb_xdp_ctr *x = &s->xdp[v];
			snprintf(l, sizeof(l), "verdict=\"%s\"", xevb_slot_name(v));
			xevb_metric_u64(b, n[k], l, k == 0 ? x->packets : k == 1 ? x->bytes : x->frags);
		}
	}
}

/* Whole-event shedding: the level, what was shed, the controller's cuts. */
static void render_shed(struct xevb_mbuf *b, const struct xevb_snapshot *s)
{
	G("xevb_shed_accept", "Whole-event shedding: fraction of event id blocks let through, of 65536.",
	  s->shed_accept);
	C("xevb_shed_meps_total", "MEPs shed whole by the XDP program.", s->xdp[XEVB_XDP_SHED].packets);
	C("xevb_shed_fragments_total", "Fragments in the MEPs shed by the XDP program.",
	  s->xdp[XEVB_XDP_SHED].frags);
	C("xevb_shed_events_total", "Events shed (the reference source's shed fragments).",
	  s->xdp[XEVB_XDP_SHED_REF].frags);
	xevb_metric_family(b, "xevb_shed_cuts_total", "counter",
			   "Times the shedding controller lowered the level, by cause.");
	for (unsigned k = 0; k < XEVB_SHED_CUT__N; k++) {
		char l[32];

		snprintf(l, sizeof(l), "cause=\"%s\"", xevb_shed_cause_name(k));
		xevb_metric_u64(b, "xevb_shed_cuts_total", l, s->shed_cuts_by[k]);
	}
}

/* The AF_XDP sockets' drop counters, per queue. */
static void render_xsk(struct xevb_mbuf *b, const struct xevb_snapshot *s)
{
	char l[96];

	static const struct {
		const char *name, *help;
		size_t off;
	} xs[] = {
		{ "xevb_xsk_rx_dropped_total",
		  "AF_XDP: frames dropped for lack of room (XDP_STATISTICS rx_dropped).",
		  offsetof(struct xevb_xsk_stats, rx_dropped) },
		{ "xevb_xsk_rx_invalid_descs_total", "AF_XDP: invalid RX descriptors (XDP_STATISTICS).",
		  offsetof(struct xevb_xsk_stats, rx_invalid_descs) },
		{ "xevb_xsk_rx_ring_full_total", "AF_XDP: times the RX ring was full (XDP_STATISTICS).",
		  offsetof(struct xevb_xsk_stats, rx_ring_full) },
		{ "xevb_xsk_fill_ring_empty_total", "AF_XDP: times the fill ring was empty (XDP_STATISTICS).",
		  offsetof(struct xevb_xsk_stats, rx_fill_ring_empty_descs) },
	};
	for (size_t k = 0; k < sizeof(xs) / sizeof(xs[0]); k++) {
		xevb_metric_family(b, xs[k].name, "counter", xs[k].help);
		for (uint32_t q = 0; q < s->n_queues && q < XEVB_XSK_MAX_QUEUES; q++) {
			snprintf(l, sizeof(l), "queue=\"%u\"", q);
			xevb_metric_u64(b, xs[k].name, l,
					*(const uint64_t *)((const char *)&s->xsk[q] + xs[k].off));
		}
	}
}

/* The interface's name is any bytes the kernel accepted (and the snapshot's, bounded): escaped. */
static void render_info(struct xevb_mbuf *b, const struct xevb_snapshot *s)
{
	char q[XEVB_PROM_QLEN(sizeof(s->ifname))], l[sizeof(q) + 32];

	xevb_metric_family(b, "xevb_build_info", "gauge", "The builder: interface and receive path.");
	snprintf(l, sizeof(l), "ifname=%s,path=\"%s\"", xevb_prom_qn(q, sizeof(q), s->ifname, sizeof(s->ifname)),
		 s->xdp_mode ? "xdp" : "socket");
	xevb_metric_u64(b, "xevb_build_info", l, 1);
}

void xevb_metrics_render_snapshot(struct xevb_mbuf *b, void *arg)
{
	struct xevb_snapshot *s = malloc(sizeof(*s));
	const struct xevb_builder_stats *c;
	char l[96];

	if (!s) {
		b->oom = true;
		return;
	}
	if (xevb_snapshot_copy(arg, s) || s->magic != XEVB_SNAP_MAGIC) {
		/* Being rewritten for 100 ms: say so rather than invent numbers. */
		G("xevb_build_snapshot_valid", "1 if the builder's statistics could be read.", 0);
		free(s);
		return;
	}
	c = &s->core;
	G("xevb_build_snapshot_valid", "1 if the builder's statistics could be read.", 1);
	render_info(b, s);
	xevb_metric_family(b, "xevb_build_uptime_seconds", "gauge", "Seconds since the builder started.");
	xevb_metric_f64(b, "xevb_build_uptime_seconds", NULL, (double)(s->update_ns - s->start_ns) / 1e9);
	G("xevb_build_sources", "Source ids the builder expects.", s->n_sources);

	/* shed_on on the socket path: the steering program runs in pass mode in front of it. */
	if (s->xdp_mode || s->shed_on)
		render_xdp_verdicts(b, s);
	if (s->shed_on)
		render_shed(b, s);
	if (s->xdp_mode)
		render_xsk(b, s);
	table_families(b, s, XEVB_SCOPE_TOTAL);
	G("xevb_run_number", "Run number being built.", c->run_number);
	G("xevb_run_ended", "1 once every source has ended the run.", c->run_ended);

	table_families(b, s, XEVB_SCOPE_SOURCE);
	xevb_metric_family(b, "xevb_source_end_of_run", "gauge", "1 once the source sent END_OF_RUN.");
	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++) {
		if (!c->src[id].seen)
			continue;
		snprintf(l, sizeof(l), "source=\"%u\"", id);
		xevb_metric_u64(b, "xevb_source_end_of_run", l, c->src[id].end_of_run);
	}
	free(s);
}

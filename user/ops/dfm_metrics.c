// SPDX-License-Identifier: GPL-2.0-only
/* The DFM's Prometheus page (dfm_metrics.h). */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "ops/metrics.h"
#include "ops/dfm_metrics.h"

#define PUBLISH_NS 100000000ull

struct dfm_copy {
	struct xevb_dfm_stats st;
	struct xevb_dfm_builder b[XEVB_DFM_MAX_BUILDERS];
	uint32_t nb, nsk;
	struct dfm_metrics_app app;
	struct xevb_ctl_io io; /* its counters only */
	struct xevb_dfm_lat_stats lat[XEVB_DFM_LAT__COUNT];
	bool published;
};

struct dfm_metrics {
	struct xevb_metrics *mx;
	pthread_mutex_t lock;
	uint64_t next_ns;
	struct dfm_copy c; /* guarded by lock */
	struct dfm_copy r; /* the server thread's copy while it renders */
};

static void fam(struct xevb_mbuf *b, const char *name, const char *type, const char *help)
{
	xevb_metric_family(b, name, type, help);
}

/* A per-builder family: one sample per builder, labelled builder="INDEX". */
#define PER_BUILDER(name, type, help, expr) \
	do { \
		fam(b, name, type, help); \
		for (uint32_t i = 0; i < c->nb; i++) { \
			const struct xevb_dfm_builder *x = &c->b[i]; \
			snprintf(l, sizeof(l), "builder=\"%u\"", i); \
			xevb_metric_u64(b, name, l, (uint64_t)(expr)); \
		} \
	} while (0)

static void render_phase(struct xevb_mbuf *b, const struct dfm_copy *c)
{
	fam(b, "xevb_dfm_info", "gauge", "The DFM's mode (push or pull); always 1.");
	xevb_metric_u64(b, "xevb_dfm_info", c->app.pull ? "mode=\"pull\"" : "mode=\"push\"", 1);
	fam(b, "xevb_dfm_state", "gauge",
	    "1 for the DFM's current phase: waiting for peers, triggering, draining.");
	xevb_metric_u64(b, "xevb_dfm_state", "state=\"waiting\"", !c->app.started);
	xevb_metric_u64(b, "xevb_dfm_state", "state=\"triggering\"", c->app.started && !c->app.draining);
	xevb_metric_u64(b, "xevb_dfm_state", "state=\"draining\"", c->app.draining);
}

static void render_books(struct xevb_mbuf *b, const struct dfm_copy *c)
{
	const struct xevb_dfm_stats *s = &c->st;
	char l[160];

	xevb_metric_one(b, "xevb_dfm_events_triggered_total", "counter",
			"Events triggered (assigned a first time).", s->triggered);
	xevb_metric_one(b, "xevb_dfm_events_complete_total", "counter", "Events a builder reported DONE complete.",
			s->complete);
	xevb_metric_one(b, "xevb_dfm_events_incomplete_total", "counter",
			"Events a builder reported DONE incomplete.", s->incomplete);
	fam(b, "xevb_dfm_events_lost_total", "counter", "Events lost, by reason.");
	for (int r = 0; r < XEVB_LOST__COUNT; r++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", xevb_dfm_lost_name(r));
		xevb_metric_u64(b, "xevb_dfm_events_lost_total", l, s->lost[r]);
	}
	xevb_metric_one(b, "xevb_dfm_events_outstanding", "gauge",
			"Events triggered and not finished yet (assigned, or waiting for a builder).",
			s->outstanding);
	xevb_metric_one(b, "xevb_dfm_events_reassigned_total", "counter",
			"Events moved off a dead builder to another (pull).", s->reassigned);
	xevb_metric_one(b, "xevb_dfm_assign_retries_total", "counter", "ASSIGNs sent again for want of a DONE.",
			s->retries);
	fam(b, "xevb_dfm_done_ignored_total", "counter", "DONE records not counted, by reason.");
	xevb_metric_u64(b, "xevb_dfm_done_ignored_total", "reason=\"unknown_event\"", s->done_unknown);
	xevb_metric_u64(b, "xevb_dfm_done_ignored_total", "reason=\"foreign_builder\"", s->done_foreign);
	xevb_metric_u64(b, "xevb_dfm_done_ignored_total", "reason=\"unknown_peer\"", s->done_unknown_peer);
	xevb_metric_one(
		b, "xevb_dfm_no_data_recovered_total", "counter",
		"Events lost as no_data, then built after all: in complete or incomplete too, by their late DONE.",
		s->no_data_recovered);
	fam(b, "xevb_dfm_trigger_stalls_total", "counter",
	    "Trigger steps held back, by reason (no builder with credit and not Busy; in-flight table full).");
	xevb_metric_u64(b, "xevb_dfm_trigger_stalls_total", "reason=\"no_credit\"", s->stall_no_credit);
	xevb_metric_u64(b, "xevb_dfm_trigger_stalls_total", "reason=\"table_full\"", s->stall_table);
	xevb_metric_one(b, "xevb_dfm_clear_messages_total", "counter", "CLEAR batches sent to the sources.",
			s->clear_msgs);
	xevb_metric_one(b, "xevb_dfm_events_cleared_total", "counter", "Events the sources were told to release.",
			s->cleared);
	fam(b, "xevb_dfm_builders_refused_total", "counter",
	    "Builder STATUS messages of newcomers refused: the table was full, or --max-per-address builders "
	    "were alive at that address.");
	xevb_metric_u64(b, "xevb_dfm_builders_refused_total", "reason=\"table_full\"", s->builders_full);
	xevb_metric_u64(b, "xevb_dfm_builders_refused_total", "reason=\"per_address\"", s->builders_per_addr);
}

static void render_builders(struct xevb_mbuf *b, const struct dfm_copy *c)
{
	char l[160];

	xevb_metric_one(b, "xevb_dfm_builders", "gauge", "Builders known (alive or not).", c->nb);
	fam(b, "xevb_dfm_builder_info", "gauge", "A builder's address and id, by the DFM's index; always 1.");
	for (uint32_t i = 0; i < c->nb; i++) {
		struct in_addr ia = { c->b[i].addr };
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &ia, a, sizeof(a));
		snprintf(l, sizeof(l), "builder=\"%u\",addr=\"%s:%u\",id=\"%u\"", i, a, c->b[i].port, c->b[i].id);
		xevb_metric_u64(b, "xevb_dfm_builder_info", l, 1);
	}
	PER_BUILDER("xevb_dfm_builder_alive", "gauge", "1 while the builder is alive (heard within --dead-ms).",
		    x->alive);
	PER_BUILDER("xevb_dfm_builder_stalled", "gauge",
		    "1 while the builder is silent past --dead-ms but its host answers (stalled, not dead, until "
		    "--hung-ms).",
		    x->alive && x->checking && x->found_up);
	PER_BUILDER("xevb_dfm_builder_stalls_total", "counter",
		    "Silences past --dead-ms its host answered for, after which the builder spoke again.",
		    x->stalls);
	PER_BUILDER("xevb_dfm_builder_busy", "gauge", "1 while the builder says it is Busy.", x->busy);
	PER_BUILDER("xevb_dfm_builder_busy_transitions_total", "counter",
		    "Times the builder turned Busy (not-Busy to Busy).", x->busy_on);
	PER_BUILDER("xevb_dfm_builder_credits", "gauge", "Events the builder accepts in flight (its last STATUS).",
		    x->credits);
	PER_BUILDER("xevb_dfm_builder_events_outstanding", "gauge", "Events assigned to the builder, no DONE yet.",
		    x->outstanding);
	PER_BUILDER("xevb_dfm_builder_events_assigned_total", "counter",
		    "Events assigned to the builder (first assignments and re-assignments).", x->assigned);
	PER_BUILDER("xevb_dfm_builder_events_complete_total", "counter", "Events the builder reported complete.",
		    x->complete);
	PER_BUILDER("xevb_dfm_builder_events_incomplete_total", "counter",
		    "Events the builder reported incomplete.", x->incomplete);
	PER_BUILDER("xevb_dfm_builder_events_no_data_total", "counter",
		    "Events the builder got no fragment of (lost as no_data).", x->no_data);
	PER_BUILDER("xevb_dfm_builder_events_lost_total", "counter",
		    "Events lost on this builder for another reason (builder_dead, no_done, at_stop).", x->lost);
	PER_BUILDER("xevb_dfm_builder_events_reassigned_away_total", "counter",
		    "Events taken off this builder when it died (pull).", x->reassigned_away);
	PER_BUILDER("xevb_dfm_builder_assign_retries_total", "counter", "ASSIGNs resent to this builder.",
		    x->retries);
	PER_BUILDER("xevb_dfm_builder_events_received_total", "counter",
		    "Events of this builder's address the farm nodes reported receiving (xevb sink --dfm).",
		    x->received);
	PER_BUILDER("xevb_dfm_builder_events_not_delivered", "gauge",
		    "Events the builder reported DONE that no farm node has received: in flight during the run, "
		    "lost once the books are closed.",
		    x->not_delivered);
	PER_BUILDER("xevb_dfm_builder_deaths_total", "counter", "Times the builder was declared dead.", x->deaths);
	PER_BUILDER("xevb_dfm_builder_rejoins_total", "counter", "Times a dead builder came back.", x->rejoins);
	PER_BUILDER("xevb_dfm_builder_restarts_total", "counter", "New epochs seen (the builder restarted).",
		    x->restarts);
}

static void render_farm_and_sources(struct xevb_mbuf *b, const struct dfm_copy *c)
{
	const struct xevb_dfm_stats *s = &c->st;

	xevb_metric_one(b, "xevb_dfm_farm_nodes_reporting", "gauge",
			"Farm nodes that report what they receive (0: the books cannot close at the farm nodes).",
			c->nsk);
	xevb_metric_one(b, "xevb_dfm_farm_events_received_total", "counter",
			"Events the farm nodes received from this DFM's builders.", s->received);
	xevb_metric_one(b, "xevb_dfm_farm_events_received_unknown_total", "counter",
			"Events the farm nodes received from addresses that are no builder of this DFM.",
			s->received_unknown);
	xevb_metric_one(b, "xevb_dfm_events_not_delivered", "gauge",
			"Events DONE that no farm node has received (at the end of the run: not delivered).",
			s->not_delivered);
	xevb_metric_one(b, "xevb_dfm_books_closed", "gauge",
			"1 once the run is over and the farm nodes' last counts are reconciled.",
			c->app.books_closed);
	xevb_metric_one(b, "xevb_dfm_farm_nodes_refused_total", "counter",
			"RECEIVED reports refused: the farm-node table was full.", s->sinks_full);
	xevb_metric_one(b, "xevb_dfm_source_processes", "gauge", "Source processes alive (heard within 3 s).",
			c->app.sources_alive);
	xevb_metric_one(b, "xevb_dfm_source_processes_known", "gauge", "Source processes ever heard from.",
			c->app.sources);
	xevb_metric_one(b, "xevb_dfm_source_timeouts_total", "counter", "Source processes declared silent.",
			c->app.src_timeouts);
	xevb_metric_one(b, "xevb_dfm_push_assign_messages_total", "counter",
			"ROUTE and ASSIGN messages to every source process (push).", c->app.push_msgs);
}

static void render_control(struct xevb_mbuf *b, const struct dfm_copy *c)
{
	char l[160];

	xevb_metric_one(b, "xevb_dfm_control_messages_sent_total", "counter", "Control messages sent.", c->io.tx);
	xevb_metric_one(b, "xevb_dfm_control_send_errors_total", "counter",
			"Control messages that failed to send.", c->io.tx_err);
	xevb_metric_one(b, "xevb_dfm_control_messages_received_total", "counter",
			"Valid control messages received.", c->io.rx);
	fam(b, "xevb_dfm_control_messages_refused_total", "counter",
	    "Control messages refused by validation, by reason.");
	for (int e = 1; e < XEVB_CTL_E__COUNT; e++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", xevb_ctl_err_name(e));
		xevb_metric_u64(b, "xevb_dfm_control_messages_refused_total", l, c->io.rx_bad[e]);
	}
	fam(b, "xevb_dfm_control_messages_not_admitted_total", "counter",
	    "Valid control messages refused by membership (a run configuration), by reason.");
	for (int r = 1; r < XEVB_ADMIT__COUNT; r++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", xevb_ctl_admit_name(r));
		xevb_metric_u64(b, "xevb_dfm_control_messages_not_admitted_total", l, c->io.rx_refused[r]);
	}
	fam(b, "xevb_dfm_control_messages_dropped_total", "counter",
	    "Control messages admitted (MAC and membership), then dropped by the DFM's rules, by reason "
	    "(unknown_peer: no builder or source we know; wrong_epoch: a builder's old incarnation; wrong_role: "
	    "a type that role does not send the DFM).");
	for (int r = 0; r < XEVB_CTL_DROP__COUNT; r++) {
		if (r == XEVB_CTL_DROP_NOT_FROM_DFM)
			continue; /* we are the DFM */
		snprintf(l, sizeof(l), "reason=\"%s\"", xevb_ctl_drop_name(r));
		xevb_metric_u64(b, "xevb_dfm_control_messages_dropped_total", l, c->io.rx_dropped[r]);
	}
	xevb_metric_one(b, "xevb_dfm_membership_configured", "gauge",
			"1 when a run configuration names the peers (only they are admitted), 0 when open.",
			c->io.members != NULL);
	xevb_metric_one(b, "xevb_dfm_control_messages_unexpected_total", "counter",
			"Valid control messages the DFM has no use for (wrong type or role).", c->app.unexpected);
}

static const double quantiles[] = { 0.5, 0.9, 0.99, 0.999 };

static void render_latency(struct xevb_mbuf *b, const struct dfm_copy *c)
{
	static const char *const name[XEVB_DFM_LAT__COUNT] = { "xevb_dfm_trigger_to_assign_seconds",
							       "xevb_dfm_assign_to_done_seconds" };
	static const char *const help[XEVB_DFM_LAT__COUNT] = {
		"From an event's trigger (its due time at --rate; the step that triggered it at --rate 0) until "
		"its first ASSIGN left for the builder; quantiles are bucket upper bounds (at most 12.5% high).",
		"From an event's ASSIGN leaving for the builder until the DFM read the DONE that finished it "
		"(retries and re-assignments included); quantiles are bucket upper bounds (at most 12.5% high).",
	};
	char n[96], l[64];

	for (int w = 0; w < XEVB_DFM_LAT__COUNT; w++) {
		const struct xevb_dfm_lat_stats *s = &c->lat[w];

		fam(b, name[w], "summary", help[w]);
		for (size_t q = 0; q < sizeof(quantiles) / sizeof(quantiles[0]); q++) {
			snprintf(l, sizeof(l), "quantile=\"%g\"", quantiles[q]);
			xevb_metric_f64(b, name[w], l, (double)xevb_lat_quantile(&s->h, quantiles[q]) / 1e9);
		}
		snprintf(n, sizeof(n), "%s_sum", name[w]);
		xevb_metric_f64(b, n, NULL, (double)s->sum_ns / 1e9);
		snprintf(n, sizeof(n), "%s_count", name[w]);
		xevb_metric_u64(b, n, NULL, s->h.total);
	}
}

/* The server thread's page: a copy of the books taken under the lock, rendered outside it. */
static void render(struct xevb_mbuf *b, void *arg)
{
	struct dfm_metrics *m = arg;
	const struct dfm_copy *c = &m->r;

	pthread_mutex_lock(&m->lock);
	m->r = m->c;
	pthread_mutex_unlock(&m->lock);
	render_phase(b, c);
	render_books(b, c);
	render_builders(b, c);
	render_farm_and_sources(b, c);
	render_control(b, c);
	render_latency(b, c);
}

struct dfm_metrics *dfm_metrics_start(const char *spec)
{
	struct dfm_metrics *m = calloc(1, sizeof(*m));

	if (!m) {
		xevb_err("--metrics: out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	if (!(m->mx = xevb_metrics_start(spec)) || xevb_metrics_render(m->mx, render, m)) {
		dfm_metrics_stop(m);
		return NULL;
	}
	return m;
}

void dfm_metrics_publish(struct dfm_metrics *m, const struct xevb_dfm *d, const struct dfm_metrics_app *app,
			 uint64_t now, bool force)
{
	if (!m || (!force && now < m->next_ns))
		return;
	m->next_ns = now + PUBLISH_NS;
	pthread_mutex_lock(&m->lock);
	m->c.st = *xevb_dfm_stats(d);
	m->c.nb = xevb_dfm_n_builders(d);
	m->c.nsk = 0; /* those that reported (configured farm nodes are listed from the start) */
	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		m->c.nsk += xevb_dfm_sink(d, i)->reports > 0;
	for (uint32_t i = 0; i < m->c.nb; i++)
		m->c.b[i] = *xevb_dfm_builder(d, i);
	for (int l = 0; l < XEVB_DFM_LAT__COUNT; l++)
		m->c.lat[l] = *xevb_dfm_latency(d, l);
	m->c.app = *app;
	m->c.app.io = NULL;
	memcpy(&m->c.io, app->io, sizeof(m->c.io));
	m->c.published = true;
	pthread_mutex_unlock(&m->lock);
}

void dfm_metrics_stop(struct dfm_metrics *m)
{
	if (!m)
		return;
	xevb_metrics_stop(m->mx); /* joins the server thread first */
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void dfm_latency_json(const struct xevb_dfm *d, FILE *f)
{
	fprintf(f, "\"latency_us\":{");
	for (int w = 0; w < XEVB_DFM_LAT__COUNT; w++) {
		const struct xevb_dfm_lat_stats *s = xevb_dfm_latency(d, w);

		fprintf(f, "%s\"%s\":{\"events\":%llu,\"mean\":%.1f", w ? "," : "", xevb_dfm_lat_name(w),
			(unsigned long long)s->h.total,
			s->h.total ? (double)s->sum_ns / (double)s->h.total / 1e3 : 0);
		fprintf(f, ",\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f}",
			(double)xevb_lat_quantile(&s->h, 0.5) / 1e3, (double)xevb_lat_quantile(&s->h, 0.9) / 1e3,
			(double)xevb_lat_quantile(&s->h, 0.99) / 1e3,
			(double)xevb_lat_quantile(&s->h, 0.999) / 1e3,
			(double)xevb_lat_quantile(&s->h, 1.0) / 1e3);
	}
	fputc('}', f);
}

void dfm_latency_text(const struct xevb_dfm *d, FILE *f)
{
	const struct xevb_dfm_lat_stats *t = xevb_dfm_latency(d, XEVB_DFM_LAT_TRIGGER_ASSIGN);
	const struct xevb_dfm_lat_stats *a = xevb_dfm_latency(d, XEVB_DFM_LAT_ASSIGN_DONE);

	fprintf(f,
		"  latency: trigger to ASSIGN p50 %.1f p99 %.1f us (%llu events); ASSIGN to DONE p50 %.1f p99 %.1f us "
		"(%llu events)\n",
		(double)xevb_lat_quantile(&t->h, 0.5) / 1e3, (double)xevb_lat_quantile(&t->h, 0.99) / 1e3,
		(unsigned long long)t->h.total, (double)xevb_lat_quantile(&a->h, 0.5) / 1e3,
		(double)xevb_lat_quantile(&a->h, 0.99) / 1e3, (unsigned long long)a->h.total);
}

void dfm_ctl_types_json(const struct xevb_ctl_io *io, FILE *f)
{
	for (int dir = 0; dir < 2; dir++) {
		const uint64_t *n = dir ? io->rx_type : io->tx_type;

		fprintf(f, "%s\"%s_by_type\":{", dir ? "," : "", dir ? "received" : "sent");
		for (int t = 1; t < XEVB_CTL__TYPES; t++)
			fprintf(f, "%s\"%s\":%llu", t > 1 ? "," : "", xevb_ctl_type_name((uint8_t)t),
				(unsigned long long)n[t]);
		fputc('}', f);
	}
}

void dfm_ctl_reasons_json(const struct xevb_ctl_io *io, FILE *f)
{
	fprintf(f, ",\"refused_by_reason\":{");
	for (int e = 1; e < XEVB_CTL_E__COUNT; e++)
		fprintf(f, "%s\"%s\":%llu", e > 1 ? "," : "", xevb_ctl_err_name(e),
			(unsigned long long)io->rx_bad[e]);
	fprintf(f, "},\"dropped\":{");
	for (int r = 0; r < XEVB_CTL_DROP__COUNT; r++)
		fprintf(f, "%s\"%s\":%llu", r ? "," : "", xevb_ctl_drop_name(r),
			(unsigned long long)io->rx_dropped[r]);
	fprintf(f, "},");
}

void dfm_ctl_text(const struct xevb_ctl_io *io, uint64_t unexpected, FILE *f)
{
	fprintf(f,
		"  control: sent %llu (errors %llu), received %llu, refused %llu, unexpected %llu; "
		"membership %s: not admitted %llu (",
		(unsigned long long)io->tx, (unsigned long long)io->tx_err, (unsigned long long)io->rx,
		(unsigned long long)io->rx_bad_total, (unsigned long long)unexpected,
		io->members ? "configured" : "open", (unsigned long long)io->rx_refused_total);
	for (int r = 1; r < XEVB_ADMIT__COUNT; r++)
		fprintf(f, "%s%s %llu", r > 1 ? ", " : "", xevb_ctl_admit_name(r),
			(unsigned long long)io->rx_refused[r]);
	fprintf(f, "); dropped after the MAC (");
	for (int r = 0; r < XEVB_CTL_DROP__COUNT; r++)
		fprintf(f, "%s%s %llu", r ? ", " : "", xevb_ctl_drop_name(r),
			(unsigned long long)io->rx_dropped[r]);
	fprintf(f, ")\n");
}

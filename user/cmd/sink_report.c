// SPDX-License-Identifier: GPL-2.0-only
/*
 * What `xevb sink` reports (sink_report.h): the statistics line, the
 * summary at the end in text or JSON, the credits and Busy of the control
 * protocol, the metrics page. The counts of connections, broken streams
 * and buffers are libxevb's (xevb_farm_stats, xevb_farm_builder); the
 * faults of the byte check and the latency are the emulator's.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include "base/cli.h"
#include "cmd/sink_report.h"
#include "ctl/runcfg.h"

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* An error kind's name: the library's reasons, then the checks' faults. */
static const char *broken_name(int k, char *buf, size_t len)
{
	const char *n = xevb_broken_name(k);

	if (n)
		return n;
	snprintf(buf, len, "kind_%d", k); /* a reason of a newer library */
	return buf;
}

uint64_t sink_errors(const struct sink *s)
{
	uint64_t n = sink_check_faults(&s->chk);

	for (int k = 1; k < XEVB_BROKEN_SLOTS; k++)
		n += LD(s->v.broken[k]);
	return n;
}

static void print_stats(struct sink *s, uint64_t now)
{
	double dt = (double)s->stats_interval_s;
	uint64_t events = LD(s->v.events), bytes = LD(s->v.bytes);

	fprintf(stderr, "%s: %.1fs: %.0f ev/s %.2f MB/s complete %llu incomplete %llu errors %llu conns %llu\n",
		xevb_prog, (double)(now - s->t0) / 1e9, (double)(events - s->last_events) / dt,
		(double)(bytes - s->last_bytes) / dt / 1e6, (unsigned long long)LD(s->v.complete),
		(unsigned long long)LD(s->v.incomplete), (unsigned long long)sink_errors(s),
		(unsigned long long)LD(s->v.conns_open));
	s->last_events = events;
	s->last_bytes = bytes;
}

void sink_tick(struct sink *s, uint64_t now)
{
	if (!s->stats_interval_s)
		return;
	while (now >= s->next_stats) {
		print_stats(s, now);
		s->next_stats += (uint64_t)s->stats_interval_s * 1000000000ull;
	}
}

/* ---- the credits and Busy (the control protocol) ---- */

static const char *const ctl_drop_name[3] = { "not_from_dfm", "wrong_role", "builders_full" };

/* "ctl_refused_by_reason":{...},"ctl_dropped":{...}: every reason, as the builders and sources say it. */
static void ctl_reasons_json(const struct xevb_farm_stats *st)
{
	const uint64_t drop[3] = { st->ctl_not_from_dfm, st->ctl_wrong_role, st->ctl_builders_full };

	printf("\"ctl_refused_by_reason\":{");
	for (int r = 1; r < XEVB_CTL_REFUSED__COUNT; r++)
		printf("%s\"%s\":%llu", r > 1 ? "," : "", xevb_ctl_refused_name(r),
		       (unsigned long long)st->ctl_refused_by[r]);
	printf("},\"ctl_dropped\":{");
	for (int d = 0; d < 3; d++)
		printf("%s\"%s\":%llu", d ? "," : "", ctl_drop_name[d], (unsigned long long)drop[d]);
	printf("}");
}

static void ctl_json(const struct sink *s, const struct xevb_farm_stats *st)
{
	struct xevb_farm_builder b = { .sz = sizeof(b) };
	char a[INET_ADDRSTRLEN];

	printf("{\"sink_ctl\":{\"credits\":%u,\"received\":%llu,\"processed\":%llu,\"queue_max\":%llu,"
	       "\"busy_on\":%llu,\"busy_off\":%llu,\"busy_high\":%u,\"busy_low\":%u,\"received_busy\":%llu,"
	       "\"ctl_refused\":%llu,\"ctl_unexpected\":%llu,\"status_sent\":%llu,\"dfm_reports\":%llu,"
	       "\"builders\":[",
	       s->o.credits, (unsigned long long)st->events, (unsigned long long)st->done,
	       (unsigned long long)s->queue_max, (unsigned long long)st->busy_on, (unsigned long long)st->busy_off,
	       st->busy_mark_high, st->busy_mark_low, (unsigned long long)s->received_busy,
	       (unsigned long long)st->ctl_refused, (unsigned long long)st->ctl_unexpected,
	       (unsigned long long)st->status_sent, (unsigned long long)st->received_sent);
	for (uint32_t i = 0; xevb_farm_builder(s->farm, i, &b) == 0; i++) {
		inet_ntop(AF_INET, &b.addr, a, sizeof(a));
		printf("%s{\"addr\":\"%s\",\"events\":%llu,\"done\":%llu,\"connections\":%u}", i ? "," : "", a,
		       (unsigned long long)b.events, (unsigned long long)b.done, b.connections);
	}
	printf("],\"ctl_not_admitted\":{\"membership\":\"%s\",\"not_member\":%llu},",
	       xevb_runcfg_current() ? "configured" : "open",
	       (unsigned long long)st->ctl_refused_by[XEVB_CTL_REFUSED_NOT_MEMBER]);
	ctl_reasons_json(st);
	printf("}}\n");
}

static void ctl_summary(const struct sink *s, bool json)
{
	const struct xevb_farm_stats *st = &s->st;

	if (json) {
		ctl_json(s, st);
		return;
	}
	fprintf(stderr,
		"credits: %u per builder; held at most %llu; Busy %llu times (above %u held), not-Busy %llu "
		"times (below %u), %llu events arrived while Busy; control refused %llu, unexpected %llu; "
		"RECEIVED to the DFM %llu\n",
		s->o.credits, (unsigned long long)s->queue_max, (unsigned long long)st->busy_on,
		st->busy_mark_high, (unsigned long long)st->busy_off, st->busy_mark_low,
		(unsigned long long)s->received_busy, (unsigned long long)st->ctl_refused,
		(unsigned long long)st->ctl_unexpected, (unsigned long long)st->received_sent);
}

/* ---- the summary ---- */

/* "name":count of every error kind seen, comma separated. */
static void json_error_kinds(const struct sink *s)
{
	bool first = true;
	char buf[32];

	for (int k = 1; k < XEVB_BROKEN_SLOTS; k++)
		if (s->v.broken[k]) {
			printf("%s\"%s\":%llu", first ? "" : ",", broken_name(k, buf, sizeof(buf)),
			       (unsigned long long)s->v.broken[k]);
			first = false;
		}
	for (int f = 0; f < SF__COUNT; f++)
		if (s->chk.fault[f]) {
			printf("%s\"%s\":%llu", first ? "" : ",", sink_fault_name(f),
			       (unsigned long long)s->chk.fault[f]);
			first = false;
		}
}

/* Elapsed seconds, events/s, MB/s and the latency from build in us (avg, p50, p99, max). */
struct rates {
	double el, evps, mbps, lat[4];
};

static struct rates rates(const struct sink *s, uint64_t now)
{
	const struct sink_check *k = &s->chk;
	struct rates r = { .el = (double)(now - s->t0) / 1e9 };

	r.evps = r.el > 0 ? (double)s->v.events / r.el : 0;
	r.mbps = r.el > 0 ? (double)s->v.bytes / r.el / 1e6 : 0;
	r.lat[0] = k->lat_n ? k->lat_sum_ns / (double)k->lat_n / 1e3 : 0;
	r.lat[1] = (double)xevb_lat_quantile(&k->lat, 0.5) / 1e3;
	r.lat[2] = (double)xevb_lat_quantile(&k->lat, 0.99) / 1e3;
	r.lat[3] = (double)k->lat_max_ns / 1e3;
	return r;
}

/* How the run ended, for the summary: "dfm", "streams", or "" (stopped, --duration, --expect-events). */
static const char *run_end_name(const struct sink *s)
{
	return !s->ended ? "" : (s->ended & XEVB_END_DFM) ? "dfm" : "streams";
}

/* The run ended, but with builders still connected: their streams did not end (nothing says all arrived). */
static bool ended_open(const struct sink *s)
{
	return s->ended && s->v.conns_open;
}

static void summary_json(const struct sink *s, const struct rates *r, bool ok)
{
	const struct sink_view *v = &s->v;

	printf("{\"events\":%llu,\"complete\":%llu,\"incomplete\":%llu,\"fragments\":%llu,"
	       "\"missing_fragments\":%llu,\"bytes\":%llu,\"duplicates\":%llu,"
	       "\"unchecked_old\":%llu,\"connections\":%llu,\"connections_dropped\":%llu,"
	       "\"connections_refused\":{\"max_conns\":%llu,\"other\":%llu},\"accept_fd_limit\":%llu,"
	       "\"buffer_max_bytes\":%llu,\"read_pauses\":%llu,\"errors\":%llu,\"error_kinds\":{",
	       (unsigned long long)v->events, (unsigned long long)v->complete, (unsigned long long)v->incomplete,
	       (unsigned long long)v->frags, (unsigned long long)v->missing_frags, (unsigned long long)v->bytes,
	       (unsigned long long)s->chk.fault[SF_DUP], (unsigned long long)s->chk.too_old,
	       (unsigned long long)v->conns_total, (unsigned long long)v->conns_dropped,
	       (unsigned long long)v->refused_max, (unsigned long long)v->refused_other,
	       (unsigned long long)v->accept_fd_limit, (unsigned long long)v->buffer_max,
	       (unsigned long long)v->read_pauses, (unsigned long long)sink_errors(s));
	json_error_kinds(s);
	printf("},\"elapsed_s\":%.3f,\"events_per_s\":%.1f,\"MB_per_s\":%.3f,"
	       "\"latency_us\":{\"avg\":%.1f,\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
	       "\"expect_events\":%llu,\"signal\":%d,\"run_end\":\"%s\",\"result\":\"%s\"}\n",
	       r->el, r->evps, r->mbps, r->lat[0], r->lat[1], r->lat[2], r->lat[3],
	       (unsigned long long)s->o.expect_events, (int)sink_stop_signal, run_end_name(s), ok ? "ok" : "fail");
}

static void summary_text(const struct sink *s, const struct rates *r, bool ok)
{
	const struct sink_view *v = &s->v;
	char buf[32];

	printf("events:              %llu (complete %llu, incomplete %llu)\n", (unsigned long long)v->events,
	       (unsigned long long)v->complete, (unsigned long long)v->incomplete);
	printf("fragments:           %llu (missing %llu)\n", (unsigned long long)v->frags,
	       (unsigned long long)v->missing_frags);
	printf("bytes:               %llu\n", (unsigned long long)v->bytes);
	printf("duplicates:          %llu (older than the window, unchecked: %llu)\n",
	       (unsigned long long)s->chk.fault[SF_DUP], (unsigned long long)s->chk.too_old);
	printf("connections:         %llu (dropped %llu)\n", (unsigned long long)v->conns_total,
	       (unsigned long long)v->conns_dropped);
	printf("refused:             %llu at the connection limit, %llu other; accept() at the descriptor "
	       "limit %llu times\n",
	       (unsigned long long)v->refused_max, (unsigned long long)v->refused_other,
	       (unsigned long long)v->accept_fd_limit);
	printf("buffers:             %llu bytes at most (--max-buffer-total %llu); reading paused %llu times\n",
	       (unsigned long long)v->buffer_max, (unsigned long long)s->o.max_buffer_total,
	       (unsigned long long)v->read_pauses);
	printf("errors:              %llu\n", (unsigned long long)sink_errors(s));
	for (int k = 1; k < XEVB_BROKEN_SLOTS; k++)
		if (v->broken[k])
			printf("  %-18s %llu\n", broken_name(k, buf, sizeof(buf)),
			       (unsigned long long)v->broken[k]);
	for (int f = 0; f < SF__COUNT; f++)
		if (s->chk.fault[f])
			printf("  %-18s %llu\n", sink_fault_name(f), (unsigned long long)s->chk.fault[f]);
	printf("elapsed:             %.3f s, %.1f events/s, %.3f MB/s\n", r->el, r->evps, r->mbps);
	printf("latency from build:  avg %.1f us, p50 <= %.1f us, p99 <= %.1f us, max %.1f us\n", r->lat[0],
	       r->lat[1], r->lat[2], r->lat[3]);
	if (s->o.expect_events)
		printf("expected events:     %llu (%s)\n", (unsigned long long)s->o.expect_events,
		       sink_expectation_met(s) ? "reached" : "NOT reached");
	if (s->ended)
		printf("run ended:           %s%s\n", run_end_name(s),
		       ended_open(s) ? " (builders still connected)" : ", every builder's stream closed");
	printf("result:              %s\n", ok ? "ok" : "FAIL");
}

bool sink_report(struct sink *s)
{
	bool ok = sink_errors(s) == 0 && (!s->o.expect_events || sink_expectation_met(s)) && !ended_open(s);
	struct rates r = rates(s, xevb_now_ns());

	if (s->o.expect_events && !sink_expectation_met(s))
		xevb_err("expected %llu events, got %llu", (unsigned long long)s->o.expect_events,
			 (unsigned long long)s->taken);
	if (ended_open(s))
		xevb_err(
			"the DFM ended the run, but %llu builder connection(s) stayed open with nothing sent for "
			"the library's end wait: events may be missing (do the builders run with --exit-on-eor?)",
			(unsigned long long)s->v.conns_open);
	else if (s->ended)
		xevb_info("the run ended (%s): every builder's stream closed", run_end_name(s));
	if (s->farm && s->o.ctl_port)
		ctl_summary(s, s->o.co.json);
	if (s->o.co.json)
		summary_json(s, &r, ok);
	else
		summary_text(s, &r, ok);
	fflush(stdout);
	return ok;
}

/* ---- --metrics: read in the server thread while the loop counts ---- */

static void metrics_errors(struct xevb_mbuf *b, const struct sink *s)
{
	char l[64], buf[32];

	xevb_metric_family(b, "xevb_sink_errors_total", "counter",
			   "Broken streams (by the rule broken), wrong or duplicated events, by kind.");
	for (int k = 1; k < XEVB_BROKEN_SLOTS; k++)
		if (k < XEVB_BROKEN__COUNT || LD(s->v.broken[k])) {
			snprintf(l, sizeof(l), "kind=\"%s\"", broken_name(k, buf, sizeof(buf)));
			xevb_metric_u64(b, "xevb_sink_errors_total", l, LD(s->v.broken[k]));
		}
	for (int f = 0; f < SF__COUNT; f++) {
		snprintf(l, sizeof(l), "kind=\"%s\"", sink_fault_name(f));
		xevb_metric_u64(b, "xevb_sink_errors_total", l, LD(s->chk.fault[f]));
	}
}

static void metrics_conns(struct xevb_mbuf *b, const struct sink *s)
{
	xevb_metric_one(b, "xevb_sink_connections_total", "counter", "Builder connections accepted.",
			LD(s->v.conns_total));
	xevb_metric_one(b, "xevb_sink_connections_dropped_total", "counter",
			"Connections dropped on a broken stream.", LD(s->v.conns_dropped));
	xevb_metric_one(b, "xevb_sink_connections_open", "gauge", "Builder connections open now.",
			LD(s->v.conns_open));
	xevb_metric_family(b, "xevb_sink_connections_refused_total", "counter",
			   "Connections closed as they arrived, by reason (connection limit, other).");
	xevb_metric_u64(b, "xevb_sink_connections_refused_total", "reason=\"max_conns\"", LD(s->v.refused_max));
	xevb_metric_u64(b, "xevb_sink_connections_refused_total", "reason=\"other\"", LD(s->v.refused_other));
	xevb_metric_one(b, "xevb_sink_accept_fd_limit_total", "counter",
			"Times accept() found no free descriptor (accepting paused until one frees).",
			LD(s->v.accept_fd_limit));
	xevb_metric_one(b, "xevb_sink_buffer_bytes", "gauge", "Bytes the receive buffers hold now (allocated).",
			LD(s->v.buffer_bytes));
	xevb_metric_one(b, "xevb_sink_buffer_limit_bytes", "gauge", "--max-buffer-total.", s->o.max_buffer_total);
}

static void metrics_control(struct xevb_mbuf *b, const struct sink *s)
{
	char l[64];

	xevb_metric_family(b, "xevb_sink_control_messages_refused_total", "counter",
			   "Control messages refused (malformed, not authenticated, not a member), by reason.");
	for (int r = 1; r < XEVB_CTL_REFUSED__COUNT; r++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", xevb_ctl_refused_name(r));
		xevb_metric_u64(b, "xevb_sink_control_messages_refused_total", l, LD(s->v.ctl_refused[r]));
	}
	xevb_metric_family(b, "xevb_sink_control_messages_dropped_total", "counter",
			   "Control messages taken (sealed right, from a member), then dropped by the farm node's "
			   "rules, by reason.");
	for (int d = 0; d < 3; d++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", ctl_drop_name[d]);
		xevb_metric_u64(b, "xevb_sink_control_messages_dropped_total", l, LD(s->v.ctl_dropped[d]));
	}
}

void sink_metrics(struct xevb_mbuf *b, void *arg)
{
	const struct sink *s = arg;

	xevb_metric_one(b, "xevb_sink_events_total", "counter", "Built events received and decoded.",
			LD(s->v.events));
	xevb_metric_one(b, "xevb_sink_events_complete_total", "counter", "Events received complete.",
			LD(s->v.complete));
	xevb_metric_one(b, "xevb_sink_events_incomplete_total", "counter", "Events received flagged INCOMPLETE.",
			LD(s->v.incomplete));
	xevb_metric_one(b, "xevb_sink_fragments_total", "counter", "Fragments in the events received.",
			LD(s->v.frags));
	xevb_metric_one(b, "xevb_sink_missing_fragments_total", "counter",
			"Fragments missing from incomplete events.", LD(s->v.missing_frags));
	xevb_metric_one(b, "xevb_sink_bytes_total", "counter", "Bytes of the events received.", LD(s->v.bytes));
	xevb_metric_one(b, "xevb_sink_unchecked_old_events_total", "counter",
			"Events older than the duplicate window (not checked for duplicates).",
			LD(s->chk.too_old));
	metrics_errors(b, s);
	metrics_conns(b, s);
	metrics_control(b, s);
	xevb_metric_family(b, "xevb_sink_latency_seconds", "summary",
			   "Time from the builder's emit (build_ns, CLOCK_REALTIME) to decoding here.");
	xevb_metric_f64(b, "xevb_sink_latency_seconds_sum", NULL, s->chk.lat_sum_ns / 1e9);
	xevb_metric_u64(b, "xevb_sink_latency_seconds_count", NULL, LD(s->chk.lat_n));
	xevb_metric_family(b, "xevb_sink_latency_max_seconds", "gauge", "Longest latency from build seen so far.");
	xevb_metric_f64(b, "xevb_sink_latency_max_seconds", NULL, (double)LD(s->chk.lat_max_ns) / 1e9);
}

// SPDX-License-Identifier: GPL-2.0-only
/* `xevb dfm`'s statistics line and end-of-run summary, text and --json (dfm_app.h). */
#include <arpa/inet.h>
#include <stdio.h>
#include "base/cli.h"
#include "ctl/runcfg.h"
#include "ops/dfm_metrics.h"
#include "cmd/dfm_app.h"

uint32_t dfm_alive_builders(const struct dfm_app *a)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++)
		n += xevb_dfm_builder(a->d, i)->alive;
	return n;
}

uint32_t dfm_alive_sources(const struct dfm_app *a)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < a->n_src; i++)
		n += a->src[i].alive;
	return n;
}

void dfm_stats_line(struct dfm_app *a, double t, uint64_t *last_trig)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(a->d);
	uint64_t lost = 0, busy = 0;

	for (int r = 0; r < XEVB_LOST__COUNT; r++)
		lost += s->lost[r];
	for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++)
		busy += xevb_dfm_builder(a->d, i)->busy;
	fprintf(stderr,
		"%s: %.1fs: triggered %llu (+%llu/s) complete %llu incomplete %llu lost %llu "
		"outstanding %llu reassigned %llu | builders %u alive, %llu busy | sources %u\n",
		xevb_prog, t, (unsigned long long)s->triggered, (unsigned long long)(s->triggered - *last_trig),
		(unsigned long long)s->complete, (unsigned long long)s->incomplete, (unsigned long long)lost,
		(unsigned long long)s->outstanding, (unsigned long long)s->reassigned, dfm_alive_builders(a),
		(unsigned long long)busy, dfm_alive_sources(a));
	*last_trig = s->triggered;
}

/* Events lost in the books: by every reason, but those built after all. */
static uint64_t lost_total(const struct xevb_dfm_stats *s)
{
	uint64_t lost = 0;

	for (int r = 0; r < XEVB_LOST__COUNT; r++)
		lost += s->lost[r];
	return lost - s->no_data_recovered;
}

/* The balance first (triggered = complete + incomplete + lost + outstanding), then the rates. */
static void summary_books_text(const struct dfm_app *a, double el, bool ok)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(a->d);

	fprintf(stderr,
		"%s: %s mode, %.3f s: triggered %llu = complete %llu + incomplete %llu + lost %llu "
		"(",
		xevb_prog, a->pull ? "pull" : "push", el, (unsigned long long)s->triggered,
		(unsigned long long)s->complete, (unsigned long long)s->incomplete,
		(unsigned long long)lost_total(s));
	for (int r = 0; r < XEVB_LOST__COUNT; r++)
		fprintf(stderr, "%s%s %llu", r ? ", " : "", xevb_dfm_lost_name(r), (unsigned long long)s->lost[r]);
	fprintf(stderr, ", less no_data built after all %llu) + outstanding %llu: %s\n",
		(unsigned long long)s->no_data_recovered, (unsigned long long)s->outstanding,
		ok ? "accounting ok" : "ACCOUNTING FAILED");
	fprintf(stderr,
		"  %.0f events/s; reassigned %llu, retries %llu, DONE unknown %llu foreign %llu "
		"unknown-peer %llu; stalls: no credit %llu, table %llu; clears %llu msgs, %llu events\n",
		el > 0 ? (double)s->triggered / el : 0, (unsigned long long)s->reassigned,
		(unsigned long long)s->retries, (unsigned long long)s->done_unknown,
		(unsigned long long)s->done_foreign, (unsigned long long)s->done_unknown_peer,
		(unsigned long long)s->stall_no_credit, (unsigned long long)s->stall_table,
		(unsigned long long)s->clear_msgs, (unsigned long long)s->cleared);
}

static void summary_builders_text(const struct dfm_app *a)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(a->d);

	for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++) {
		const struct xevb_dfm_builder *b = xevb_dfm_builder(a->d, i);
		struct in_addr ia = { b->addr };
		fprintf(stderr,
			"  builder %s:%u id %u: credits %u assigned %llu complete %llu incomplete %llu "
			"no_data %llu lost %llu reassigned-away %llu deaths %llu rejoins %llu restarts %llu "
			"busy %llu retries %llu%s",
			inet_ntoa(ia), b->port, b->id, b->credits, (unsigned long long)b->assigned,
			(unsigned long long)b->complete, (unsigned long long)b->incomplete,
			(unsigned long long)b->no_data, (unsigned long long)b->lost,
			(unsigned long long)b->reassigned_away, (unsigned long long)b->deaths,
			(unsigned long long)b->rejoins, (unsigned long long)b->restarts,
			(unsigned long long)b->busy_on, (unsigned long long)b->retries, b->alive ? "" : " (dead)");
		if (xevb_dfm_n_sinks(a->d))
			fprintf(stderr,
				"; at the farm nodes: received %llu, not delivered %llu, it says it sent %llu%s",
				(unsigned long long)b->received, (unsigned long long)b->not_delivered,
				(unsigned long long)b->sent, b->fwd_reports ? "" : " (never said)");
		fputc('\n', stderr);
	}
	if (xevb_dfm_n_sinks(a->d))
		fprintf(stderr,
			"  farm nodes: %u reporting (%u configured, %u of them silent); received %llu from our builders "
			"(%llu from others); DONE but never received: not_delivered %llu\n",
			a->books.reporting, a->books.expected, a->books.silent, (unsigned long long)s->received,
			(unsigned long long)s->received_unknown, (unsigned long long)s->not_delivered);
	else
		fprintf(stderr,
			"  farm nodes: none reported (xevb sink --dfm ADDR:PORT of this DFM): the books "
			"could not be closed at the farm nodes\n");
}

/* The JSON object up to its "builders" array: the books, the control socket, the peers refused. */
static void summary_books_json(const struct dfm_app *a, double el)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(a->d);

	printf("{\"mode\":\"%s\",\"elapsed_s\":%.3f,\"triggered\":%llu,\"complete\":%llu,\"incomplete\":%llu,"
	       "\"lost\":{",
	       a->pull ? "pull" : "push", el, (unsigned long long)s->triggered, (unsigned long long)s->complete,
	       (unsigned long long)s->incomplete);
	for (int r = 0; r < XEVB_LOST__COUNT; r++)
		printf("%s\"%s\":%llu", r ? "," : "", xevb_dfm_lost_name(r), (unsigned long long)s->lost[r]);
	printf("},\"liveness\":{\"checks\":%llu,\"stalls\":%llu,\"dead_refused\":%llu,\"dead_no_answer\":%llu,"
	       "\"dead_hung\":%llu",
	       (unsigned long long)a->live.asked, (unsigned long long)s->stalls,
	       (unsigned long long)s->dead_refused, (unsigned long long)s->dead_no_answer,
	       (unsigned long long)s->dead_hung);
	printf("},\"lost_total\":%llu,\"outstanding\":%llu,\"reassigned\":%llu,\"retries\":%llu,"
	       "\"done_unknown\":%llu,\"done_foreign\":%llu,\"done_unknown_peer\":%llu,"
	       "\"no_data_recovered\":%llu,\"stall_no_credit\":%llu,\"stall_table\":%llu,"
	       "\"done_repeated\":%llu,\"done_late_dead\":%llu,\"stragglers\":%llu,"
	       "\"dead_silent\":%llu,\"dead_unreachable\":%llu,"
	       "\"clear_msgs\":%llu,\"cleared\":%llu,"
	       "\"events_per_s\":%.1f,\"ctl\":{\"sent\":%llu,\"send_errors\":%llu,\"test_dropped\":%llu,"
	       "\"unreachable\":%llu,\"received\":%llu,"
	       "\"refused\":%llu,\"unexpected\":%llu,\"not_admitted\":",
	       (unsigned long long)lost_total(s), (unsigned long long)s->outstanding,
	       (unsigned long long)s->reassigned, (unsigned long long)s->retries,
	       (unsigned long long)s->done_unknown, (unsigned long long)s->done_foreign,
	       (unsigned long long)s->done_unknown_peer, (unsigned long long)s->no_data_recovered,
	       (unsigned long long)s->stall_no_credit, (unsigned long long)s->stall_table,
	       (unsigned long long)s->done_repeated, (unsigned long long)s->done_late_dead,
	       (unsigned long long)s->stragglers, (unsigned long long)s->dead_silent,
	       (unsigned long long)s->dead_unreachable, (unsigned long long)s->clear_msgs,
	       (unsigned long long)s->cleared, el > 0 ? (double)s->triggered / el : 0,
	       (unsigned long long)a->io.tx, (unsigned long long)a->io.tx_err,
	       (unsigned long long)a->io.test_dropped, (unsigned long long)a->io.unreachable,
	       (unsigned long long)a->io.rx, (unsigned long long)a->io.rx_bad_total,
	       (unsigned long long)a->unexpected);
	xevb_ctl_admit_json(&a->io, stdout);
	dfm_ctl_reasons_json(&a->io, stdout);
	dfm_ctl_types_json(&a->io, stdout);
	printf("},");
	dfm_latency_json(a->d, stdout);
	printf(",\"peers_refused\":{\"builders_per_address\":%llu,\"builders_table_full\":%llu,"
	       "\"sources_per_address\":%llu,\"sources_table_full\":%llu},\"peers_expired\":{\"builders\":%llu,"
	       "\"sources\":%llu},\"builders\":[",
	       (unsigned long long)s->builders_per_addr, (unsigned long long)s->builders_full,
	       (unsigned long long)a->src_per_addr, (unsigned long long)a->src_full,
	       (unsigned long long)s->builders_expired, (unsigned long long)a->src_expired);
}

static void summary_builders_json(const struct dfm_app *a)
{
	for (uint32_t i = 0; i < xevb_dfm_n_builders(a->d); i++) {
		const struct xevb_dfm_builder *b = xevb_dfm_builder(a->d, i);
		struct in_addr ia = { b->addr };
		printf("%s{\"addr\":\"%s\",\"port\":%u,\"id\":%u,\"credits\":%u,\"assigned\":%llu,\"complete\":%llu,"
		       "\"incomplete\":%llu,\"no_data\":%llu,\"lost\":%llu,\"reassigned_away\":%llu,"
		       "\"deaths\":%llu,\"rejoins\":%llu,\"restarts\":%llu,\"busy_on\":%llu,\"retries\":%llu,"
		       "\"received\":%llu,\"not_delivered\":%llu,\"forwarded\":%llu,\"forwarded_reports\":%llu,"
		       "\"max_silent_ms\":%.1f,\"dead_after_ms\":%.1f,\"listens\":%s,\"stalls\":%llu,"
		       "\"alive\":%s}",
		       i ? "," : "", inet_ntoa(ia), b->port, b->id, b->credits, (unsigned long long)b->assigned,
		       (unsigned long long)b->complete, (unsigned long long)b->incomplete,
		       (unsigned long long)b->no_data, (unsigned long long)b->lost,
		       (unsigned long long)b->reassigned_away, (unsigned long long)b->deaths,
		       (unsigned long long)b->rejoins, (unsigned long long)b->restarts,
		       (unsigned long long)b->busy_on, (unsigned long long)b->retries,
		       (unsigned long long)b->received, (unsigned long long)b->not_delivered,
		       (unsigned long long)b->sent, (unsigned long long)b->fwd_reports,
		       (double)b->max_silent_ns / 1e6, (double)b->dead_after_ns / 1e6,
		       b->listens ? "true" : "false", (unsigned long long)b->stalls, b->alive ? "true" : "false");
	}
}

/* The JSON object after its "builders" array: the farm nodes' books and how the run began. */
static void summary_farm_json(const struct dfm_app *a, bool ok)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(a->d);

	printf("],");
	dfm_books_json(a->d, &a->books, a->books_closed, stdout);
	printf(",\"not_delivered\":%llu,\"run_failed\":%s", (unsigned long long)s->not_delivered,
	       a->builders_left || s->lost[XEVB_LOST_AT_STOP] ? "true" : "false");
	printf(",\"sources\":%u,\"epoch\":\"%08x\",\"first_event\":%u,\"resumed\":%s,\"previous_epoch\":\"%08x\","
	       "\"accounting_ok\":%s}\n",
	       a->n_src, a->io.epoch, a->first_event, a->resumed ? "true" : "false", a->prev_epoch,
	       ok ? "true" : "false");
}

void dfm_summary(struct dfm_app *a, double el, bool ok, bool json)
{
	summary_books_text(a, el, ok);
	dfm_latency_text(a->d, stderr);
	summary_builders_text(a);
	dfm_ctl_text(&a->io, a->unexpected, stderr);
	if (!json)
		return;
	summary_books_json(a, el);
	summary_builders_json(a);
	summary_farm_json(a, ok);
	fflush(stdout);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The counter table (user/base/counters.h) against every output made
 * from it: with each counter of a snapshot set to a value no other has,
 * each one must be in the JSON report, on the Prometheus page, in
 * `xevb stats --all` under its name and in the summary, with its value;
 * the worker merge adds
 * every one of them; the accounting check names a per-source counter that
 * does not add up to its total.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/counters.h"
#include "ops/metrics.h"
#include "ops/report.h"
#include "ops/stats_view.h"
#include "../common/capture.h"

TestSuite(counters, .timeout = 60);

static const uint32_t seen_sources[] = { 3, 4095 };
#define N_SEEN (sizeof(seen_sources) / sizeof(seen_sources[0]))

static uint64_t *slot(const struct xevb_counter *c, struct xevb_snapshot *s, uint32_t id, uint32_t k)
{
	char *base = c->part == XEVB_PART_SOURCE ? (char *)&s->core.src[id] :
		     c->part == XEVB_PART_CORE   ? (char *)&s->core :
		     c->part == XEVB_PART_OUTPUT ? (char *)&s->out :
						   (char *)s;

	return (uint64_t *)(base + c->off) + k;
}

/* Every counter its own value: 1000003, 1000010, ... (no one a prefix of another's). */
static struct xevb_snapshot *distinct_snapshot(uint32_t xdp_mode)
{
	struct xevb_snapshot *s = calloc(1, sizeof(*s));
	uint64_t v = 1000003;

	cr_assert(not(eq(ptr, s, NULL)));
	s->magic = XEVB_SNAP_MAGIC;
	s->version = XEVB_SNAP_VERSION;
	s->xdp_mode = xdp_mode;
	s->n_queues = 1;
	strcpy(s->ifname, "eth0");
	for (size_t n = 0; n < N_SEEN; n++)
		s->core.src[seen_sources[n]].seen = true;
	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		for (size_t n = 0; n < (c->scope == XEVB_SCOPE_SOURCE ? N_SEEN : 1); n++)
			for (uint32_t k = 0; k < c->n; k++, v += 7)
				*slot(c, s, seen_sources[n], k) = v;
	}
	return s;
}

static void report_json(FILE *f, const void *s)
{
	xevb_report_json(f, s);
}

static void report_summary(FILE *f, const void *s)
{
	xevb_report_summary(f, s);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The JSON object of source id: from its key to the first closing brace (its counters are flat). */
static char *source_object(const char *json, uint32_t id)
{
	char key[32];
	const char *p = strstr(json, "\"source\":{"), *q, *end;

	cr_assert(not(eq(ptr, (void *)p, NULL)), "no \"source\" object in %s", json);
	snprintf(key, sizeof(key), "\"%u\":{", id);
	q = strstr(p, key);
	cr_assert(not(eq(ptr, (void *)q, NULL)), "no source %u in the JSON", id);
	end = strchr(q, '}');
	cr_assert(not(eq(ptr, (void *)end, NULL)));
	return strndup(q, (size_t)(end - q));
}

Test(counters, every_counter_in_the_json_with_its_value)
{
	struct xevb_snapshot *s = distinct_snapshot(1);
	char *json = capture_text(report_json, s), name[64], want[128];
	size_t checked = 0;

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		for (size_t n = 0; n < (c->scope == XEVB_SCOPE_SOURCE ? N_SEEN : 1); n++) {
			uint32_t id = seen_sources[n];
			char *in = c->scope == XEVB_SCOPE_SOURCE ? source_object(json, id) : strdup(json);

			for (uint32_t k = 0; k < c->n; k++, checked++) {
				if (c->n == 1)
					snprintf(name, sizeof(name), "%s", c->json);
				else
					snprintf(name, sizeof(name), "%s_%s", c->json, c->elem(k));
				snprintf(want, sizeof(want), "\"%s\":%" PRIu64 ",", name, *slot(c, s, id, k));
				if (!count(in, want)) /* the last member of an object */
					want[strlen(want) - 1] = 0;
				cr_expect(eq(sz, count(in, want), 1), "JSON: %s once (source %u)", want, id);
			}
			free(in);
		}
	}
	cr_expect(gt(sz, checked, 100));
	free(json);
	free(s);
}

static char *page_of(struct xevb_snapshot *s)
{
	struct xevb_mbuf b = { 0 };

	xevb_metrics_render_snapshot(&b, s);
	cr_assert(eq(int, b.oom, false));
	cr_assert(not(eq(ptr, b.p, NULL)));
	return b.p;
}

/* The labels of a sample, written out here from the row, not by the renderer's helper. */
static void labels_of(const struct xevb_counter *c, uint32_t id, uint32_t k, char *l, size_t len)
{
	char own[64] = "";

	if (c->n > 1)
		snprintf(own, sizeof(own), "%s=\"%s\"", c->label, c->elem(k));
	else if (c->label)
		snprintf(own, sizeof(own), "%s", c->label);
	if (c->scope == XEVB_SCOPE_SOURCE)
		snprintf(l, len, "{source=\"%u\"%s%s}", id, *own ? "," : "", own);
	else
		snprintf(l, len, *own ? "{%s}" : "%s", own);
}

static void check_page(uint32_t xdp_mode)
{
	struct xevb_snapshot *s = distinct_snapshot(xdp_mode);
	char *page = page_of(s), l[128], want[256];

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];
		const char *help, *name = xevb_counter_prom(c, xdp_mode, &help);

		cr_expect(xevb_metric_name_ok(name), "%s: a valid metric name", name);
		if (help) {
			snprintf(want, sizeof(want), "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
				 c->kind == XEVB_GAUGE ? "gauge" : "counter");
			cr_expect(eq(sz, count(page, want), 1), "Prometheus: %s once", want);
		} else {
			cr_expect(i > 0 && !strcmp(xevb_counters[i - 1].prom, c->prom),
				  "%s: a row without help follows a row of its family", c->json);
		}
		if (c->kind == XEVB_COUNTER)
			cr_expect(not(eq(ptr, strstr(name, "_total"), NULL)),
				  "%s: a counter's name ends in _total", name);
		if (!strcmp(c->unit, "bytes"))
			cr_expect(not(eq(ptr, strstr(name, "_bytes"), NULL)), "%s: counts bytes and says so",
				  name);
		for (size_t n = 0; n < (c->scope == XEVB_SCOPE_SOURCE ? N_SEEN : 1); n++)
			for (uint32_t k = 0; k < c->n; k++) {
				labels_of(c, seen_sources[n], k, l, sizeof(l));
				snprintf(want, sizeof(want), "\n%s%s %" PRIu64 "\n", name, l,
					 *slot(c, s, seen_sources[n], k));
				cr_expect(eq(sz, count(page, want), 1), "Prometheus: %s once", want + 1);
			}
	}
	free(page);
	free(s);
}

Test(counters, every_counter_on_the_prometheus_page_socket_path)
{
	check_page(0);
}

Test(counters, every_counter_on_the_prometheus_page_xdp_path)
{
	check_page(1);
}

Test(counters, every_counter_in_xevb_stats_with_its_value)
{
	struct xevb_snapshot *s = distinct_snapshot(0);
	static struct stats_kv kv[4096];
	size_t n_kv = stats_flatten(s, NULL, kv, 4096), found = 0;
	char name[96];

	cr_assert(lt(sz, n_kv, 4096));
	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		for (size_t n = 0; n < (c->scope == XEVB_SCOPE_SOURCE ? N_SEEN : 1); n++)
			for (uint32_t k = 0; k < c->n; k++) {
				size_t hits = 0;

				if (c->scope == XEVB_SCOPE_SOURCE)
					snprintf(name, sizeof(name), "source.%u.", seen_sources[n]);
				else
					name[0] = 0;
				snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s%s", c->stats,
					 c->n > 1 ? "." : "", c->n > 1 ? c->elem(k) : "");
				for (size_t j = 0; j < n_kv; j++)
					if (!strcmp(kv[j].name, name)) {
						hits++;
						cr_expect(eq(u64, kv[j].v, *slot(c, s, seen_sources[n], k)),
							  "xevb stats: %s", name);
					}
				cr_expect(eq(sz, hits, 1), "xevb stats: %s once", name);
				found++;
			}
	}
	cr_expect(gt(sz, found, 100));
	free(s);
}

/* value in text as a number of its own: after a space or '(', before a non-digit. */
static size_t count_number(const char *text, uint64_t value)
{
	char want[32];
	size_t n = 0, len = (size_t)snprintf(want, sizeof(want), "%" PRIu64, value);

	for (const char *p = strstr(text, want); p; p = strstr(p + 1, want))
		n += p > text && (p[-1] == ' ' || p[-1] == '(') && !(p[len] >= '0' && p[len] <= '9');
	return n;
}

static void check_summary(uint32_t xdp_mode)
{
	struct xevb_snapshot *s = distinct_snapshot(xdp_mode);
	char *text = capture_text(report_summary, s);

	cr_expect(eq(ptr, strstr(text, "?}"), NULL), "a summary line names a counter not in the table:\n%s", text);
	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		for (size_t n = 0; n < (c->scope == XEVB_SCOPE_SOURCE ? N_SEEN : 1); n++)
			for (uint32_t k = 0; k < c->n; k++)
				cr_expect(eq(sz, count_number(text, *slot(c, s, seen_sources[n], k)), 1),
					  "summary: %s (source %u, element %u) = %" PRIu64 " once", c->json,
					  seen_sources[n], k, *slot(c, s, seen_sources[n], k));
	}
	free(text);
	free(s);
}

Test(counters, every_counter_in_the_summary_socket_path)
{
	check_summary(0);
}

Test(counters, every_counter_in_the_summary_xdp_path)
{
	check_summary(1);
}

Test(counters, the_merge_adds_every_counter)
{
	struct xevb_snapshot *a = distinct_snapshot(1), *b = distinct_snapshot(1), *m = calloc(1, sizeof(*m));

	cr_assert(not(eq(ptr, m, NULL)));
	xevb_builder_counters_add(&m->core, &a->core);
	xevb_builder_counters_add(&m->core, &b->core);
	xevb_output_stats_add(&m->out, &a->out);
	xevb_output_stats_add(&m->out, &b->out);
	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];
		/* The receive loop's rows are the receive loop's to add (engine_workers.c). */
		if (c->part == XEVB_PART_RX)
			continue;
		for (size_t n = 0; n < (c->scope == XEVB_SCOPE_SOURCE ? N_SEEN : 1); n++)
			for (uint32_t k = 0; k < c->n; k++)
				cr_expect(eq(u64, *slot(c, m, seen_sources[n], k),
					     2 * *slot(c, a, seen_sources[n], k)),
					  "merge: %s (source %u, element %u)", c->json, seen_sources[n], k);
	}
	for (size_t n = 0; n < N_SEEN; n++)
		cr_expect(m->core.src[seen_sources[n]].seen == true);
	cr_expect(m->core.src[0].seen == false);
	free(a);
	free(b);
	free(m);
}

Test(counters, the_check_names_a_per_source_counter_off_its_total)
{
	struct xevb_builder_stats *st = calloc(1, sizeof(*st));
	struct xevb_source_stats sum = { 0 };

	cr_assert(not(eq(ptr, st, NULL)));
	st->src[3].seen = true;
	st->src[3].frags_received = st->frags_received = 5;
	st->src[3].segs_drops[XEVB_SEG_PARTIAL] = 2;
	st->src[3].seq_gaps = 9; /* no total: nothing to compare */
	xevb_source_stats_add(&sum, &st->src[3]);
	cr_expect(eq(str, (char *)xevb_source_sums_differ(st, &sum), "segs_drops"));
	st->segs_drops[XEVB_SEG_PARTIAL] = 2;
	cr_expect(eq(ptr, (void *)xevb_source_sums_differ(st, &sum), NULL));
	free(st);
}

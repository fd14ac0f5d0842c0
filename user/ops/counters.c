// SPDX-License-Identifier: GPL-2.0-only
/*
 * The counter table (user/base/counters.h) as descriptors, and what is
 * generated from its rows: names, values, the merge of several builders'
 * statistics, the per-source sums of the accounting check.
 */
#include <stdio.h>
#include <string.h>
#include "base/counters.h"
#include "evb/names.h"
#include "ops/report.h"

#define SNAP_OFF(member) offsetof(struct xevb_snapshot, member)

#define ROW(scope_, part_, type, f, n_, elem_, unit_, kind_, json_, stats_, prom_, label_, help_) \
	{ .json = json_, \
	  .stats = stats_, \
	  .prom = prom_, \
	  .label = label_, \
	  .help = help_, \
	  .unit = unit_, \
	  .kind = XEVB_##kind_, \
	  .scope = scope_, \
	  .part = part_, \
	  .n = n_, \
	  .elem = elem_, \
	  .off = offsetof(type, f) },
#define TOTAL(...)                ROW(XEVB_SCOPE_TOTAL, __VA_ARGS__)
#define RX_ROW(f, ...)            TOTAL(XEVB_PART_RX, struct xevb_snapshot, f, 1, NULL, __VA_ARGS__)
#define CORE_ROW(f, ...)          TOTAL(XEVB_PART_CORE, struct xevb_builder_stats, f, 1, NULL, __VA_ARGS__)
#define CORE_ARR(f, n, elem, ...) TOTAL(XEVB_PART_CORE, struct xevb_builder_stats, f, n, elem, __VA_ARGS__)
#define OUT_ROW(f, ...)           TOTAL(XEVB_PART_OUTPUT, struct xevb_output_stats, f, 1, NULL, __VA_ARGS__)
/* A per-source row has one name for the JSON and `xevb stats`. */
#define SOURCE(f, n_, elem_, unit_, kind_, name_, prom_, label_, help_) \
	ROW(XEVB_SCOPE_SOURCE, XEVB_PART_SOURCE, struct xevb_source_stats, f, n_, elem_, unit_, kind_, name_, \
	    name_, prom_, label_, help_)
#define SRC_ROW(f, total, ...)          SOURCE(f, 1, NULL, __VA_ARGS__)
#define SRC_ARR(f, total, n, elem, ...) SOURCE(f, n, elem, __VA_ARGS__)

const struct xevb_counter xevb_counters[XEVB_N_COUNTERS] = { XEVB_RX_COUNTERS(RX_ROW) XEVB_CORE_COUNTERS(
	CORE_ROW, CORE_ARR) XEVB_OUTPUT_COUNTERS(OUT_ROW) XEVB_SOURCE_COUNTERS(SRC_ROW, SRC_ARR) };

const size_t xevb_n_counters = XEVB_N_COUNTERS;

const char *xevb_counter_prom(const struct xevb_counter *c, bool xdp_path, const char **help)
{
	static const struct {
		size_t off;
		const char *prom, *help;
	} xdp_names[] = {
#define XDP_NAME(f, prom_, help_) { SNAP_OFF(f), prom_, help_ },
		XEVB_RX_XDP_NAMES(XDP_NAME)
#undef XDP_NAME
	};

	*help = c->help;
	if (!xdp_path || c->part != XEVB_PART_RX)
		return c->prom;
	for (size_t i = 0; i < sizeof(xdp_names) / sizeof(xdp_names[0]); i++)
		if (xdp_names[i].off == c->off) {
			*help = xdp_names[i].help;
			return xdp_names[i].prom;
		}
	return c->prom;
}

uint64_t xevb_counter_at(const struct xevb_counter *c, const void *part, uint32_t k)
{
	uint64_t v;

	memcpy(&v, (const char *)part + c->off + (size_t)k * sizeof(uint64_t), sizeof(v));
	return v;
}

uint64_t xevb_counter_value(const struct xevb_counter *c, const struct xevb_snapshot *s, uint32_t source,
			    uint32_t k)
{
	switch (c->part) {
	case XEVB_PART_CORE:
		return xevb_counter_at(c, &s->core, k);
	case XEVB_PART_OUTPUT:
		return xevb_counter_at(c, &s->out, k);
	case XEVB_PART_SOURCE:
		return xevb_counter_at(c, &s->core.src[source], k);
	default:
		return xevb_counter_at(c, s, k);
	}
}

const char *xevb_counter_name(const struct xevb_counter *c, uint32_t k, bool json, char *buf, size_t len)
{
	const char *name = json ? c->json : c->stats;

	if (c->n == 1)
		return name;
	snprintf(buf, len, "%s%c%s", name, json ? '_' : '.', c->elem(k));
	return buf;
}

void xevb_counter_labels(const struct xevb_counter *c, uint32_t source, uint32_t k, char *buf, size_t len)
{
	int n = 0;

	buf[0] = 0;
	if (c->scope == XEVB_SCOPE_SOURCE)
		n = snprintf(buf, len, "source=\"%u\"", source);
	if (n < 0 || (size_t)n >= len)
		return;
	if (c->n > 1)
		snprintf(buf + n, len - (size_t)n, "%s%s=\"%s\"", n ? "," : "", c->label, c->elem(k));
	else if (c->label)
		snprintf(buf + n, len - (size_t)n, "%s%s", n ? "," : "", c->label);
}

#define ADD_FIELD(f, ...) m->f += s->f;
#define ADD_ARRAY(f, n, ...) \
	for (size_t k = 0; k < (n); k++) \
		m->f[k] += s->f[k];
#define ADD_SARRAY(f, total, n, ...) ADD_ARRAY(f, n)

void xevb_source_stats_add(struct xevb_source_stats *m, const struct xevb_source_stats *s)
{
	XEVB_SOURCE_COUNTERS(ADD_FIELD, ADD_SARRAY)
}

void xevb_output_stats_add(struct xevb_output_stats *m, const struct xevb_output_stats *s)
{
	XEVB_OUTPUT_COUNTERS(ADD_FIELD)
}

void xevb_builder_counters_add(struct xevb_builder_stats *m, const struct xevb_builder_stats *s)
{
	XEVB_CORE_COUNTERS(ADD_FIELD, ADD_ARRAY)
	for (uint32_t i = 0; i < XEVB_MAX_SOURCES; i++)
		if (s->src[i].seen) {
			m->src[i].seen = true;
			xevb_source_stats_add(&m->src[i], &s->src[i]);
		}
}

/* A per-source row with a total (total 1) compares with it; one without has nothing to. */
#define SUM_DIFFERS_1(f) \
	if (memcmp(&sum->f, &st->f, sizeof(st->f))) \
		return #f;
#define SUM_DIFFERS_0(f)
#define SUM_ROW(f, total, ...) SUM_DIFFERS_##total(f)

const char *xevb_source_sums_differ(const struct xevb_builder_stats *st, const struct xevb_source_stats *sum)
{
	XEVB_SOURCE_COUNTERS(SUM_ROW, SUM_ROW)
	return NULL;
}

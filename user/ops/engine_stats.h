/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What operators read of a running engine: its counters as a statistics
 * snapshot (report.h), and each worker's counters on the metrics page and
 * in the JSON summary. The
 * engine (rx/) exposes them; this layer names and prints them.
 */
#ifndef XEVB_ENGINE_STATS_H
#define XEVB_ENGINE_STATS_H

#include "ops/metrics.h"
#include "ops/report.h"
#include "rx/engine.h"

/* The receive, output, shedding and (merged) builder fields of s. */
void xevb_engine_snapshot(struct xevb_engine *e, struct xevb_snapshot *s);
/* More workers: each one's counters on the page, labelled worker="N" (nothing with one). */
void xevb_engine_metrics(struct xevb_engine *e, struct xevb_metrics *mx);
/* More workers: {"workers":[...]} on one line, each worker's counters; nothing with one. */
void xevb_engine_json(struct xevb_engine *e, FILE *f);

#endif

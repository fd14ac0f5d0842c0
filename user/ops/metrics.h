/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Prometheus text-format metrics over HTTP (`--metrics ADDR:PORT`), served
 * from a thread of its own so the data path never waits for a scrape.
 *
 * Any command can use it:
 *   struct xevb_metrics *m = xevb_metrics_start("9100");   // 127.0.0.1:9100
 *   xevb_metrics_counter(m, "xevb_dfm_assigned_events_total", "Events assigned.",
 *                        "node=\"3\"", &dfm->node[3].assigned);
 *   xevb_metrics_render(m, my_render, ctx);   // or a callback for the rest
 *   ...
 *   xevb_metrics_stop(m);
 *
 * Registered values are read in the server thread with relaxed atomic
 * loads while their owner updates them (one writer, naturally aligned
 * 64-bit words: no torn reads on the targets we build for). A render
 * callback runs in the server thread too: it must only read what is safe
 * to read concurrently (a published snapshot, atomics). Registration takes
 * a mutex; scrapes hold it while rendering; the data path never does.
 *
 * Names follow the conventions: xevb_<what>_<unit>, _total for counters,
 * base units (seconds, bytes); labels like reason="late",source="12".
 */
#ifndef XEVB_METRICS_H
#define XEVB_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xevb_snapshot;

/* A growing text buffer for one scrape. */
struct xevb_mbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

void xevb_mbuf_printf(struct xevb_mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "# HELP name help" and "# TYPE name type" (counter, gauge, summary, untyped). */
void xevb_metric_family(struct xevb_mbuf *b, const char *name, const char *type, const char *help);
/* "name{labels} value"; labels NULL or "" for none. */
void xevb_metric_u64(struct xevb_mbuf *b, const char *name, const char *labels, uint64_t v);
void xevb_metric_f64(struct xevb_mbuf *b, const char *name, const char *labels, double v);
/* A whole family with one unlabelled sample. */
void xevb_metric_one(struct xevb_mbuf *b, const char *name, const char *type, const char *help, uint64_t v);

typedef void (*xevb_metrics_render_fn)(struct xevb_mbuf *b, void *ctx);

struct xevb_metrics;

/* Clients served at once; one more takes the slot of the oldest. */
#define XEVB_METRICS_CLIENTS 32

/*
 * spec: "PORT" (127.0.0.1), "ADDR:PORT" (IPv4 or "localhost"). Binds and
 * listens before returning, so a bad address or a taken port is an error
 * at start, with a message; NULL then.
 */
struct xevb_metrics *xevb_metrics_start(const char *spec);
/* The bound port (useful with port 0). */
uint16_t xevb_metrics_port(const struct xevb_metrics *m);
void xevb_metrics_stop(struct xevb_metrics *m);

/* 0, or -1 with a message (bad name, out of memory). Strings are copied. */
int xevb_metrics_counter(struct xevb_metrics *m, const char *name, const char *help, const char *labels,
			 const uint64_t *value);
int xevb_metrics_gauge(struct xevb_metrics *m, const char *name, const char *help, const char *labels,
		       const uint64_t *value);
int xevb_metrics_render(struct xevb_metrics *m, xevb_metrics_render_fn fn, void *ctx);

/* The whole page of a builder from its published snapshot (user/ops/metrics_build.c). */
void xevb_metrics_render_snapshot(struct xevb_mbuf *b, void *snapshot);
/* A consistent copy of a snapshot that its builder may be writing (seqlock). */
int xevb_snapshot_copy(const struct xevb_snapshot *m, struct xevb_snapshot *out);

bool xevb_metric_name_ok(const char *name);
/* labels: NULL, "" or name="value" pairs joined by commas, each value as xevb_prom_q writes it. */
bool xevb_metric_labels_ok(const char *labels);

/*
 * s, up to its NUL or max bytes, as a quoted label value for a "%s" in a
 * label format (ifname=%s): backslash, double quote and newline escaped,
 * a byte that starts no valid UTF-8 sequence replaced by U+FFFD, so any
 * bytes give a page that parses. Into buf (len bytes, NUL-terminated);
 * returns buf. Too small a buf cuts between two whole characters and still
 * closes the quotes; XEVB_PROM_QLEN(strlen(s)) never cuts.
 */
#define XEVB_PROM_QLEN(n) (3 * (n) + 3)
const char *xevb_prom_qn(char *buf, size_t len, const char *s, size_t max);
const char *xevb_prom_q(char *buf, size_t len, const char *s);

#endif

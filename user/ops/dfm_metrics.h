/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb dfm --metrics [ADDR:]PORT`: the DFM's counters as a Prometheus page.
 * The control loop publishes a copy of its books (at most every 100 ms, and
 * once more at the end) under a mutex; the metrics thread renders from that
 * copy, so a scrape never reads the DFM's tables while the loop changes them.
 */
#ifndef XEVB_DFM_METRICS_H
#define XEVB_DFM_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ctl/ctl_sock.h"
#include "ctl/dfm.h"

/* What the DFM command knows beyond the library's books. */
struct dfm_metrics_app {
	const struct xevb_ctl_io *io;
	uint64_t unexpected, src_timeouts, push_msgs;
	uint32_t sources, sources_alive;
	bool pull, started, draining;
	bool books_closed; /* the run is over, the farm nodes' counts reconciled */
};

struct dfm_metrics;

/* NULL with a message when the endpoint cannot start (bad address, port taken). */
struct dfm_metrics *dfm_metrics_start(const char *spec);
/* Copy the books for the next scrapes; cheap when called again within 100 ms unless force. */
void dfm_metrics_publish(struct dfm_metrics *m, const struct xevb_dfm *d, const struct dfm_metrics_app *app,
			 uint64_t now, bool force);
void dfm_metrics_stop(struct dfm_metrics *m);

/* The latency histograms' percentiles (xevb_dfm_latency): "latency_us":{...} for --json, a line for the summary. */
void dfm_latency_json(const struct xevb_dfm *d, FILE *f);
void dfm_latency_text(const struct xevb_dfm *d, FILE *f);
/* "sent_by_type":{"STATUS":N,...},"received_by_type":{...}: the control messages by type, for --json. */
void dfm_ctl_types_json(const struct xevb_ctl_io *io, FILE *f);
/* ,"refused_by_reason":{...},"dropped":{...}, (in the DFM's "ctl" object): every reason. */
void dfm_ctl_reasons_json(const struct xevb_ctl_io *io, FILE *f);
/* The summary's control line: sent, received, refused, unexpected; not admitted and dropped by reason. */
void dfm_ctl_text(const struct xevb_ctl_io *io, uint64_t unexpected, FILE *f);

#endif

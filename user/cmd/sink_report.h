/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb sink`'s state (cmd_sink.c runs it) and what it reports
 * (sink_report.c): the statistics line, the end-of-run summary in text or
 * JSON, the credits summary, the metrics page.
 */
#ifndef XEVB_CMD_SINK_REPORT_H
#define XEVB_CMD_SINK_REPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <xevb/xevb.h>
#include "emu/sink.h"
#include "ops/metrics.h"

/*
 * The counts the summary, the statistics line and the metrics page show:
 * with --listen the library's (published after each batch), with --input
 * counted here. The metrics thread reads them with relaxed loads.
 */
struct sink_view {
	uint64_t events, complete, incomplete, frags, missing_frags, bytes;
	uint64_t conns_total, conns_dropped, conns_open;
	uint64_t refused_max, refused_other, accept_fd_limit;
	uint64_t buffer_bytes, buffer_max, read_pauses;
	uint64_t broken[XEVB_BROKEN_SLOTS]; /* broken streams (or the file) by reason, enum xevb_broken */
	uint64_t ctl_refused[XEVB_CTL_REFUSED_SLOTS]; /* control datagrams refused by reason, enum xevb_ctl_refused */
	uint64_t ctl_dropped[3]; /* ... taken, then dropped: not_from_dfm, wrong_role, builders_full */
};

struct sink {
	struct sink_cfg o;           /* the options */
	uint32_t stats_interval_s;   /* 0: no statistics line (or --quiet) */
	struct sink_check chk;       /* the emulator's checks of each event */
	struct sink_hold hold;       /* --process-rate */
	volatile uint64_t *progress; /* --progress-file: events taken, in a shared mapping (survives SIGKILL) */
	struct xevb_farm *farm;      /* --listen */
	struct xevb_farm_stats st;   /* the library's, at the last batch */
	struct sink_view v;
	uint64_t taken; /* events taken and checked: the expectation's count */
	uint64_t received_busy, queue_max;
	uint32_t busy;  /* the handle was Busy at the last batch */
	uint32_t ended; /* the library's XEVB_END_* when the run's end ended the loop, else 0 */
	uint64_t t0, deadline, next_stats, last_events, last_bytes;
};

extern volatile sig_atomic_t sink_stop_signal;
bool sink_expectation_met(const struct sink *s);
/* The statistics lines due at now. */
void sink_tick(struct sink *s, uint64_t now);
/* Every error found, of the library and the checks. */
uint64_t sink_errors(const struct sink *s);
/* The summaries (the credits' first, with the control protocol); true when the run is ok. */
bool sink_report(struct sink *s);
/* --metrics: the page, rendered in the server's thread. */
void sink_metrics(struct xevb_mbuf *b, void *arg);

#endif

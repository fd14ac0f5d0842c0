/* SPDX-License-Identifier: GPL-2.0-only */
/* Pieces shared by `xevb sink`, its option table and its hidden test feeder. */
#ifndef XEVB_CMD_SINK_H
#define XEVB_CMD_SINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "base/cli.h"

/* What the command line asks (sink_opts.c fills it from the table). */
struct sink_cfg {
	struct xevb_common_opts co;
	const char *listen;
	const char *input;
	const char *ready_file;
	const char *progress; /* --progress-file */
	uint64_t expect_events;
	uint32_t expect_sources;
	bool no_content; /* CRCs only */
	uint32_t dup_window;
	uint32_t max_event;
	uint64_t max_buffer_total;   /* all connections' buffers together, bytes */
	uint64_t partial_timeout_ns; /* 0: a partial event may be held for ever */
	/* --ctl-port: credits and Busy for builders (sink_ctl.c) */
	uint32_t ctl_port, credits, id;
	double process_rate, busy_high, busy_low;
	struct sockaddr_in dfm; /* --dfm: report RECEIVED there (port 0: no) */
};

extern const struct xevb_cfg_cmd sink_cmd;
/* c filled and checked: -1 when the command should run, else its exit status (0 after --help). */
int sink_opts_parse(int argc, char **argv, struct sink_cfg *c);

/* "ADDR:PORT", "[v6addr]:PORT" or "host:PORT" (numeric port). 0 or -1 with a message. */
int sink_resolve(const char *opt, const char *hostport, struct sockaddr_storage *ss, socklen_t *len);

/* xevb sink --selftest-send DEST N [options]: argv[0] is "--selftest-send". */
int sink_selftest_send(int argc, char **argv);
extern const struct xevb_cfg_cmd sink_feed_cmd; /* its options */

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The options as data (cli.h) of `xevb dfm`, `xevb shape`, `xevb doctor`
 * and `xevb stats`: each command's config struct, the table that fills
 * it (dfm_opts.c, shape_opts.c, doctor_opts.c, stats_opts.c), and the
 * checks of its options together.
 */
#ifndef XEVB_CMD_OPTS_H
#define XEVB_CMD_OPTS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include "base/cli.h"
#include "ctl/dfm.h"
#include "ops/doctor.h"
#include "ops/shape_ctl.h"

/* The DFM's source-process table. */
#define DFM_MAX_SOURCES 4096

struct dfm_cfg {
	struct xevb_common_opts co;
	struct xevb_dfm_cfg dc; /* pack, first event, run, table, timers, pull (--mode) */
	struct sockaddr_in lsa; /* --listen */
	uint64_t events;        /* 0: until --duration or Ctrl-C */
	double rate;            /* events/s; 0: as fast as credits allow */
	uint32_t drain_ms, books_ms, wait_b, wait_s, wait_ms;
	const char *state;  /* --state FILE */
	uint64_t push_ns;   /* --push-us: the sources' copy of the ASSIGNs waits this long for more blocks */
	bool no_route;      /* --no-route: ASSIGN copies to the sources, not ROUTE (sources that predate it) */
	bool require_books; /* open membership: not closing the books at trusted farm nodes fails the run */
};

struct shape_cfg {
	struct xevb_shape_rule r; /* all but the mode, which is an enum of its own type */
	const char *dev;
	uint32_t mode; /* enum xevb_shape_mode_req */
	bool have_dst, have_rate, json;
};

struct doctor_cfg {
	struct xevb_doctor_plan plan; /* all but the count of queues and the IP protocol (their types differ) */
	uint32_t n_queues, ip_proto;
	const char *dev;
	const char *config; /* a run configuration: its sources' MACs checked */
	bool json;
};

struct stats_cfg {
	const char *dev;
	bool json, watch, all;
	uint32_t count;
};

extern const struct xevb_cfg_cmd dfm_cmd, shape_cmd, doctor_cmd, stats_cmd;

/*
 * argv into cfg and the options checked together. -1: run; else the exit
 * status (0 after --help, 2 a usage error; the message is printed).
 */
int dfm_opts_parse(int argc, char **argv, struct dfm_cfg *cfg);
/* shape: argv[0] is the action (set, list or clear), the options follow. */
int shape_opts_parse(int argc, char **argv, struct shape_cfg *cfg);
int doctor_opts_parse(int argc, char **argv, struct doctor_cfg *cfg);
int stats_opts_parse(int argc, char **argv, struct stats_cfg *cfg);

#endif

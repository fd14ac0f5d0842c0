// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb dfm`'s option table (cli.h, options as data): the control socket,
 * the trigger, the peers and their timers, the end of the run. A run
 * configuration (--config) arrives as these options, before the explicit
 * ones (runcfg.h).
 */
#include <stddef.h>
#include <string.h>
#include "ctl/ctl_proto.h"
#include "ctl/ctl_sock.h"
#include "ctl/runcfg.h"
#include "cmd/cmd_opts.h"

#define STR_(x)  #x
#define STR(x)   STR_(x)
#define F(field) offsetof(struct dfm_cfg, field)

static bool parse_listen(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	if (xevb_ctl_parse_addr(arg, (struct sockaddr_in *)((char *)cfg + o->off))) {
		xevb_err("--%s: '%s' is not ADDR:PORT such as 198.18.4.1:23901", label, arg);
		return false;
	}
	return true;
}

static bool parse_mode(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	bool *pull = (bool *)((char *)cfg + o->off);

	if (strcmp(arg, "push") && strcmp(arg, "pull")) {
		xevb_err("--%s: push or pull, not '%s'", label, arg);
		return false;
	}
	*pull = !strcmp(arg, "pull");
	return true;
}

#define S_CTL  "Control"
#define S_TRG  "Trigger"
#define S_PEER "Peers"
#define S_END  "End of run"
#define S_RUN  "Running"

static const char *const sections[] = { S_CTL, S_TRG, S_PEER, S_END, S_RUN, NULL };

static const struct xevb_cfg_opt opts[] = {
	{ "config", 0, XEVB_T_FUNC, "FILE", .section = S_CTL, .parse = xevb_runcfg_cfg_row,
	  .help = "start from a run configuration (docs/run-config.md): its DFM, builders, sources "
		  "and farm nodes, and only they are admitted; explicit options override it" },
	{ "listen", 0, XEVB_T_FUNC, "ADDR:PORT", F(lsa), .def = "0.0.0.0:" STR(XEVB_CTL_DFM_PORT),
	  .section = S_CTL, .parse = parse_listen, .help = "control socket" },
	{ "mode", 0, XEVB_T_FUNC, "push|pull", F(dc.pull), .def = "push", .section = S_CTL, .parse = parse_mode,
	  .help = "push: sources send where told; pull: builders ask the sources" },
	{ "max-per-address", 0, XEVB_T_U32, "N", F(dc.max_per_addr), 0, 0, 1, DFM_MAX_SOURCES, .def = "8",
	  .section = S_CTL,
	  .help = "builders, and source processes, alive at one IP address at most: one host cannot fill the "
		  "tables" },
	XEVB_CFG_KEY_FILE(S_CTL, struct dfm_cfg, co),
	{ "rate", 0, XEVB_T_DOUBLE, "HZ", F(rate), 0, 0, 0, 1e8, .def = "0", .section = S_TRG,
	  .help = "trigger rate in events/s; 0 = as fast as credits allow" },
	{ "events", 0, XEVB_T_U64, "N", F(events), 0, 0, 1, 1ull << 40, .section = S_TRG,
	  .help = "events to trigger (default: until --duration or Ctrl-C)" },
	XEVB_CFG_DURATION(S_TRG, struct dfm_cfg, co),
	{ "pack", 0, XEVB_T_U32, "N", F(dc.block), 0, 0, 1, 1024, .def = "10", .section = S_TRG,
	  .help = "events per assignment; sources pack them in one MEP" },
	{ "first-event", 0, XEVB_T_U32, "N", F(dc.first_event), 0, 0, 0, UINT32_MAX, .def = "0", .section = S_TRG,
	  .help = "first event_id; --state overrides it when the file exists" },
	{ "state", 0, XEVB_T_STR, "FILE", F(state), .section = S_TRG,
	  .help = "reserve event_ids ahead in FILE; a restarted DFM resumes past them (no id reused)" },
	{ "run", 0, XEVB_T_U32, "N", F(dc.run), 0, 0, 0, UINT32_MAX, .def = "1", .section = S_TRG,
	  .help = "run number" },
	{ "table", 0, XEVB_T_U32, "N", F(dc.table), 0, 0, 64, 1u << 24, .def = "65536", .section = S_TRG,
	  .flags = XEVB_F_POW2, .help = "ids in flight span N at most (power of 2); N/4 more left behind" },
	{ "wait-builders", 0, XEVB_T_U32, "N", F(wait_b), 0, 0, 1, XEVB_DFM_MAX_BUILDERS, .def = "1",
	  .section = S_PEER, .help = "trigger only once N builders have reported" },
	{ "wait-sources", 0, XEVB_T_U32, "N", F(wait_s), 0, 0, 0, DFM_MAX_SOURCES, .def = "1", .section = S_PEER,
	  .help = "... and N source processes" },
	{ "wait-ms", 0, XEVB_T_U32, "MS", F(wait_ms), 0, 0, 100, 600000, .def = "10000", .section = S_PEER,
	  .help = "give up if they have not after MS" },
	{ "dead-ms", 0, XEVB_T_U64, "MS", F(dc.dead_ns), 0, 0, 10, 600000, 1000000, .def = "200",
	  .section = S_PEER, .help = "a builder silent this long is dead (it speaks every 10 ms)" },
	{ "hung-ms", 0, XEVB_T_U64, "MS", F(dc.hung_ns), 0, 0, 0, 3600000, 1000000, .def = "2000",
	  .section = S_PEER,
	  .help = "a silent builder whose host still answers (a TCP handshake on its control port) is stalled, "
		  "not dead, until silent this long (not above --dead-ms: silence alone decides)" },
	{ "retry-ms", 0, XEVB_T_U64, "MS", F(dc.retry_ns), 0, 0, 1, 600000, 1000000, .def = "1000",
	  .section = S_PEER, .help = "resend an ASSIGN with no DONE every MS at most" },
	{ "retry-first-ms", 0, XEVB_T_U64, "MS", F(dc.retry_first_ns), 0, 0, 0, 600000, 1000000, .def = "10",
	  .section = S_PEER,
	  .help = "the first resend after MS (or twice the p99 ASSIGN-to-DONE), doubling up to --retry-ms; 0: "
		  "every --retry-ms" },
	{ "max-retries", 0, XEVB_T_U32, "N", F(dc.max_retries), 0, 0, 0, 255, .def = "5", .section = S_PEER,
	  .help = "then, at --retry-ms, the event is lost as no_done" },
	{ "push-us", 0, XEVB_T_U64, "US", F(push_ns), 0, 0, 0, 100000, 1000, .def = "2000", .section = S_PEER,
	  .help = "push: the sources' copy of the assignments leaves when full (708 blocks as ROUTE) or this "
		  "long after its first block (0: every round); one datagram per source process each time, so "
		  "with many it waits longer: 30 us per source process, up to 10 ms" },
	{ "no-route", 0, XEVB_T_FLAG, NULL, F(no_route), .section = S_PEER,
	  .help = "push: copy the ASSIGNs to the sources (72 blocks a datagram), not ROUTE tables: for sources "
		  "that predate ROUTE" },
	{ "clear-group", 0, XEVB_T_U32, "N", F(dc.clear_group), 0, 0, 1, 65536, .def = "16384", .section = S_PEER,
	  .help = "events per CLEAR batch to the sources at most (a batch also leaves after 20 ms; keep it "
		  "below the sources' --hold)" },
	{ "drain-ms", 0, XEVB_T_U32, "MS", F(drain_ms), 0, 0, 0, 600000, .def = "5000", .section = S_END,
	  .help = "at the end, wait this long for outstanding DONEs" },
	{ "books-ms", 0, XEVB_T_U32, "MS", F(books_ms), 0, 0, 0, 600000, .def = "2000", .section = S_END,
	  .help = "then up to MS for the farm nodes' last counts, to close the books" },
	{ "require-books", 0, XEVB_T_FLAG, NULL, F(require_books), .section = S_END,
	  .help = "fail (exit 5) when the books cannot be closed at configured farm nodes (without --config: "
		  "always)" },
	XEVB_CFG_INTERVAL(S_RUN, struct dfm_cfg, co),
	XEVB_CFG_QUIET(S_RUN, struct dfm_cfg, co),
	XEVB_CFG_JSON(S_RUN, struct dfm_cfg, co),
	XEVB_CFG_METRICS(S_RUN, struct dfm_cfg, co),
	XEVB_CFG_VERBOSE(S_RUN, struct dfm_cfg, co),
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "dfm",
	.summary =
		"Data-flow manager: trigger events, assign them to builders by credit, Busy-aware;\n"
		"push (sources send where told) or pull (builders request, re-ask the missing).\n"
		"Farm nodes started with --dfm report what they received: events DONE that none received\n"
		"are not_delivered. Exit status: 0 books closed, 1 peers never came, 3 accounting failed,\n"
		"4 events not delivered to any farm node (the party named), 5 books not closed at the farm nodes\n"
		"(a configured one silent, one over-reporting), 6 the run failed (all builders left, or it stalled).",
	.usage = "[--mode push|pull] [--rate HZ] [--events N] [options]",
	.examples =
		"  xevb dfm --listen 198.18.4.1:23901 --mode push --rate 5000 --events 20000 --wait-builders 2 --wait-sources 3\n"
		"  xevb dfm --mode pull --events 100000 --pack 1 --json     # as fast as credits allow\n"
		"  (builders: xevb build ... --dfm 198.18.4.1:23901; sources: xevb source --dfm 198.18.4.1:23901 ...;\n"
		"   farm nodes: xevb sink --listen 198.18.3.1:5000 --dfm 198.18.4.1:23901)\n",
};

const struct xevb_cfg_cmd dfm_cmd = { .help = &help, .opts = opts, .sections = sections };

int dfm_opts_parse(int argc, char **argv, struct dfm_cfg *cfg)
{
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->co = (struct xevb_common_opts)XEVB_COMMON_OPTS_INIT;
	cfg->dc.clear_flush_ns = 20000000ull; /* a partial CLEAR batch leaves after 20 ms */
	rc = xevb_cfg_parse(&dfm_cmd, argc, argv, cfg);
	if (rc >= 0)
		return rc;
	/* Control keys are bound to the run: a message of another run does not open. */
	xevb_ctl_set_run(cfg->dc.run);
	if (cfg->co.key_file && (xevb_ctl_set_key_file(cfg->co.key_file) || xevb_ctl_key_for(XEVB_ROLE_DFM, 0)))
		return 2;
	/* A conflict, refused before the control socket opens (the DFM would refuse it later). */
	if (cfg->dc.block > cfg->dc.table) {
		xevb_err("--pack %u must not exceed --table %u: give a smaller --pack or a larger --table",
			 cfg->dc.block, cfg->dc.table);
		return 2;
	}
	if (!cfg->events && !cfg->co.duration_ns)
		xevb_info("no --events or --duration: triggering until Ctrl-C");
	return -1;
}

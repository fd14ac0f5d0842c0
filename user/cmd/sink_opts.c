// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb sink`'s option table (cli.h, options as data): each row fills
 * struct sink_cfg, checked as it is read; the options that only make sense
 * together are checked once all are read.
 */
#include <stddef.h>
#include <string.h>
#include "ctl/ctl_proto.h"
#include "ctl/ctl_sock.h"
#include "wire/event_codec.h"
#include "ctl/runcfg.h"
#include "emu/sink.h"

#define F(field) offsetof(struct sink_cfg, field)

static bool parse_dfm(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	if (xevb_ctl_parse_addr(arg, (struct sockaddr_in *)((char *)cfg + o->off))) {
		xevb_err("--%s: '%s' is not ADDR:PORT such as 198.18.4.1:23901", label, arg);
		return false;
	}
	return true;
}

#define S_IN  "Input"
#define S_CHK "Checks"
#define S_LIM "Limits"
#define S_CTL "Credits and the data-flow manager"
#define S_RUN "Run"

static const char *const sections[] = { S_IN, S_CHK, S_LIM, S_CTL, S_RUN, NULL };

static const struct xevb_cfg_opt opts[] = {
	{ "listen", 0, XEVB_T_STR, "ADDR:PORT", F(listen), .section = S_IN,
	  .help = "accept builder connections over TCP (port 0: any)" },
	{ "input", 0, XEVB_T_STR, "FILE", F(input), .section = S_IN,
	  .help = "read events from FILE (- for stdin): a run file, or what build --output writes" },
	{ "ready-file", 0, XEVB_T_STR, "PATH", F(ready_file), .section = S_IN,
	  .help = "write the bound ADDR:PORT to PATH once listening" },

	{ "expect-events", 0, XEVB_T_U64, "N", F(expect_events), 0, 0, 1, (double)UINT64_MAX, .section = S_CHK,
	  .help = "stop after N events; fail if fewer arrive" },
	{ "expect-sources", 0, XEVB_T_U32, "N", F(expect_sources), 0, 0, 1, XEVB_MAX_SOURCES, .section = S_CHK,
	  .help = "every event must have n_expected == N" },
	{ "no-content-check", 0, XEVB_T_FLAG, NULL, F(no_content), .section = S_CHK,
	  .help = "check CRCs only, not the emulator pattern" },
	{ "dup-window", 0, XEVB_T_U32, "N", F(dup_window), 0, 0, 64, 1u << 30, .def = "1048576", .section = S_CHK,
	  .help = "event ids remembered for duplicate checks" },

	/* 64 MiB (XEVB_EVT_MAX_LEN) and 256 MiB */
	{ "max-event-size", 0, XEVB_T_U32, "BYTES", F(max_event), 0, 0, XEVB_EVT_HLEN, UINT32_MAX,
	  .def = "67108864", .section = S_LIM,
	  .help = "a longer total_length is refused: counted too_big, connection closed" },
	{ "max-buffer-total", 0, XEVB_T_U64, "BYTES", F(max_buffer_total), 0, 0, 1u << 20, 1ull << 40,
	  .def = "268435456", .section = S_LIM,
	  .help = "all connections' buffers together, held events included; past it a connection is not read "
		  "until events are done, or closed (buffer_limit) when none is held" },
	{ "partial-timeout-ms", 0, XEVB_T_U64, "MS", F(partial_timeout_ns), 0, 0, 0, 3600000, 1000000,
	  .def = "10000", .section = S_LIM,
	  .help = "a connection holding part of an event this long is closed, counted partial_timeout; 0: never" },

	{ "ctl-port", 0, XEVB_T_U32, "N", F(ctl_port), 0, 0, 1, 65535, .section = S_CTL,
	  .help = "grant builders credits over the control protocol on this UDP port (23904)" },
	{ "credits", 0, XEVB_T_U32, "N", F(credits), 0, 0, 1, 1u << 20, .def = "64", .section = S_CTL,
	  .help = "--ctl-port: events in flight per builder" },
	{ "process-rate", 0, XEVB_T_DOUBLE, "HZ", F(process_rate), 0, 0, 0, 1e9, .section = S_CTL,
	  .help = "hold each event as if processing took 1/HZ s, one after the other: done (its credit "
		  "back) then (default at once)" },
	{ "busy-high", 0, XEVB_T_DOUBLE, "X", F(busy_high), 0, 0, 0, 1e9, .def = "1.2", .section = S_CTL,
	  .help = "--ctl-port: Busy above X x credits events held (received, not done)" },
	{ "busy-low", 0, XEVB_T_DOUBLE, "X", F(busy_low), 0, 0, 0, 1e9, .def = "0.2", .section = S_CTL,
	  .help = "--ctl-port: not-Busy below X x credits" },
	{ "dfm", 0, XEVB_T_FUNC, "ADDR:PORT", F(dfm), .section = S_CTL, .parse = parse_dfm,
	  .help = "report the events received from each builder to the DFM (it closes its "
		  "books here); implies --ctl-port 23904 unless given" },
	XEVB_CFG_CONFIG(S_CTL),
	{ "id", 0, XEVB_T_U32, "N", F(id), 0, 0, 0, 65535, .def = "0", .section = S_CTL,
	  .help = "with --config: run as its [sink N]; our id in control messages" },
	XEVB_CFG_KEY_FILE(S_CTL, struct sink_cfg, co),

	{ "run-end", 0, XEVB_T_ENUM, "auto|streams|none", F(run_end), .words = "auto|streams|none", .def = "auto",
	  .section = S_RUN,
	  .help = "--listen: end when the run has: auto, at the DFM's end of run (with --dfm or a run "
		  "configuration's [dfm]) once the builders' streams have ended; streams, also without a DFM, "
		  "once every builder that connected closed its stream in order; none, only when stopped" },
	XEVB_CFG_DURATION(S_RUN, struct sink_cfg, co),
	XEVB_CFG_INTERVAL(S_RUN, struct sink_cfg, co),
	{ "stats-interval", 0, XEVB_T_U32, "SEC", F(co.interval_s), 0, 0, 0, 3600, .section = S_RUN,
	  .help = "the same as --interval (its older name)" },
	XEVB_CFG_QUIET(S_RUN, struct sink_cfg, co),
	XEVB_CFG_JSON(S_RUN, struct sink_cfg, co),
	XEVB_CFG_METRICS(S_RUN, struct sink_cfg, co),
	{ "progress-file", 0, XEVB_T_STR, "PATH", F(progress), .section = S_RUN,
	  .help = "keep the count of events taken in PATH (8 bytes, host order), "
		  "exact even after SIGKILL" },
	XEVB_CFG_VERBOSE(S_RUN, struct sink_cfg, co),
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "sink",
	.summary =
		"Farm-node emulator: receive built events, check every byte, count them.\n"
		"Exits 1 on any corrupt or duplicated event, or when --expect-events is not reached.",
	.usage = "--listen ADDR:PORT | --input FILE [options]",
	.examples =
		"  xevb sink --listen 127.0.0.1:24000 --expect-events 100000 --duration 60\n"
		"  xevb sink --input run42.evt --json\n"
		"  xevb sink --listen 198.18.3.1:5000 --ctl-port 23904 --credits 32 --process-rate 2000\n"
		"  xevb sink --listen 198.18.3.1:5000 --dfm 198.18.4.1:23901 --duration 60\n"
		"  xevb sink --config run.ini --id 0 --json\n",
};

const struct xevb_cfg_cmd sink_cmd = { .help = &help, .opts = opts, .sections = sections };

/* The options that only make sense together; -1 when they do, else 2 (said why). */
static int check_options(struct sink_cfg *c)
{
	if (!c->listen == !c->input) {
		xevb_err("give exactly one of --listen and --input (try --help)");
		return 2;
	}
	if (c->dfm.sin_port && !c->listen) {
		xevb_err("--dfm goes with --listen (a farm node reports what builders sent it)");
		return 2;
	}
	if (c->dfm.sin_port && !c->ctl_port)
		c->ctl_port = XEVB_CTL_SINK_PORT;
	if ((uint64_t)c->max_event + SINK_LIB_CHUNK > c->max_buffer_total) {
		xevb_err(
			"--max-buffer-total %llu cannot hold one event of --max-event-size %u and a 1 MiB receive "
			"buffer: raise it to at least %llu or lower --max-event-size",
			(unsigned long long)c->max_buffer_total, c->max_event,
			(unsigned long long)c->max_event + SINK_LIB_CHUNK);
		return 2;
	}
	if (c->ready_file && !c->listen) {
		xevb_err("--ready-file goes with --listen");
		return 2;
	}
	return -1;
}

int sink_opts_parse(int argc, char **argv, struct sink_cfg *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->co = (struct xevb_common_opts)XEVB_COMMON_OPTS_INIT;
	rc = xevb_cfg_parse(&sink_cmd, argc, argv, c);
	if (rc >= 0)
		return rc;
	if (c->co.key_file && xevb_ctl_set_key_file(c->co.key_file))
		return 2;
	return check_options(c);
}

// SPDX-License-Identifier: GPL-2.0-only
/* `xevb stats`'s option table (cli.h, options as data). */
#include <stddef.h>
#include <string.h>
#include "cmd/cmd_opts.h"

#define F(field) offsetof(struct stats_cfg, field)

#define S_BLD "Builder"
#define S_OUT "Output"

static const char *const sections[] = { S_BLD, S_OUT, NULL };

static const struct xevb_cfg_opt opts[] = {
	{ "dev", 'd', XEVB_T_STR, "IFACE", F(dev), .flags = XEVB_F_REQUIRED, .section = S_BLD,
	  .help = "interface of the builder (required)" },
	{ "json", 'j', XEVB_T_FLAG, NULL, F(json), .section = S_OUT, .help = "one JSON object per report" },
	{ "watch", 'w', XEVB_T_FLAG, NULL, F(watch), .section = S_OUT,
	  .help = "a line of rates every second (until SIGINT or --count)" },
	{ "count", 'c', XEVB_T_U32, "N", F(count), 0, 0, 1, 1u << 30, .section = S_OUT,
	  .help = "with --watch or --all: stop after N reports" },
	{ "all", 'a', XEVB_T_FLAG, NULL, F(all), .section = S_OUT,
	  .help = "every counter (per-queue sockets, per-CPU XDP) with its rate, each second" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "stats",
	.summary =
		"Show the counters of the builder running on IFACE (in this network namespace), from its "
		"statistics file in /run/xevb, or XEVB_RUN_DIR as the builder had it.",
	.usage = "--dev IFACE [--json] [--watch [--count N]]",
	.examples =
		"  xevb stats --dev eth0\n  xevb stats --dev eth0 --watch --count 10\n"
		"  xevb stats --dev eth0 --all --json --count 5\n",
};

const struct xevb_cfg_cmd stats_cmd = { .help = &help, .opts = opts, .sections = sections };

int stats_opts_parse(int argc, char **argv, struct stats_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	return xevb_cfg_parse(&stats_cmd, argc, argv, cfg);
}

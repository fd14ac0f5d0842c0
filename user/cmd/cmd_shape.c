// SPDX-License-Identifier: GPL-2.0-only
/* `xevb shape set|list|clear`: per-destination rates on an interface. */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <xevb/cli.h>
#include <xevb/shape_ctl.h>
#include "cmds.h"

enum {
	O_DEV = 'd',
	O_DST = 256,
	O_RATE,
	O_PROTO,
	O_PORT,
	O_BURST,
	O_LIMIT,
	O_OVERHEAD,
	O_MODE,
	O_HORIZON,
	O_JSON,
};

static const struct xevb_opt opts[] = {
	{ "dev", O_DEV, "IFACE", "interface whose egress is shaped (required)" },
	{ "dst", O_DST, "ADDR", "destination IPv4 address (set: required; clear: one rule)" },
	{ "rate", O_RATE, "RATE", "set: bits/s of Ethernet frames, e.g. 200mbit, 1.5gbit" },
	{ "proto", O_PROTO, "udp|tcp|N", "only this IP protocol to --dst (default: any)" },
	{ "port", O_PORT, "N", "only this destination port (with --proto udp or tcp)" },
	{ "burst", O_BURST, "BYTES", "HTB burst (default 2 ms at the rate, at least 4 frames)" },
	{ "limit", O_LIMIT, "BYTES", "leaf bfifo bytes (default max(4 x wmem_max, 100 ms at the rate))" },
	{ "overhead", O_OVERHEAD, "BYTES", "added to each frame's length (24: preamble, FCS, gap)" },
	{ "mode", O_MODE, "auto|htb|edt", "first set on IFACE: HTB classes or EDT + fq (default auto)" },
	{ "horizon", O_HORIZON, "MS", "edt: drop packets due later than this (default 2000)" },
	{ "json", O_JSON, NULL, "list: one JSON object" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "shape",
	.summary =
		"Per-destination egress rates with a tc-bpf classifier: set adds or changes a rule\n"
		"(no reload), list shows rules and counters, clear removes one rule or, without\n"
		"--dst, everything xevb added to IFACE. Mode auto: EDT with sch_fq if the kernel\n"
		"has it, else one HTB class per destination.",
	.usage = "set|list|clear --dev IFACE [--dst ADDR] [--rate RATE] [options]",
	.examples =
		"  xevb shape set --dev eth0 --dst 198.18.2.1 --rate 200mbit\n"
		"  xevb shape set --dev eth0 --dst 198.18.2.1 --rate 1gbit     # change\n"
		"  xevb shape list --dev eth0\n"
		"  xevb shape clear --dev eth0 --dst 198.18.2.1\n"
		"  xevb shape clear --dev eth0\n",
};

/* The command line: the rule, the device and the flags. */
struct shape_opts {
	struct xevb_shape_rule r;
	const char *dev;
	bool have_dst, have_rate, json;
};

static int parse_dst(const char *arg, struct shape_opts *o)
{
	struct in_addr a;

	if (inet_pton(AF_INET, arg, &a) != 1) {
		xevb_err("--dst: '%s' is not an IPv4 address such as 198.18.2.1", arg);
		return 2;
	}
	o->r.daddr = a.s_addr;
	o->have_dst = true;
	return -1;
}

static int parse_proto(const char *arg, struct xevb_shape_rule *r)
{
	uint32_t u;

	if (!strcmp(arg, "udp"))
		r->proto = 17;
	else if (!strcmp(arg, "tcp"))
		r->proto = 6;
	else if (xevb_parse_u32("proto", arg, 1, 255, &u))
		r->proto = (uint8_t)u;
	else
		return 2;
	return -1;
}

static int parse_mode(const char *arg, struct xevb_shape_rule *r)
{
	if (!strcmp(arg, "auto"))
		r->mode = XEVB_SHAPE_AUTO;
	else if (!strcmp(arg, "htb"))
		r->mode = XEVB_SHAPE_FORCE_HTB;
	else if (!strcmp(arg, "edt"))
		r->mode = XEVB_SHAPE_FORCE_EDT;
	else {
		xevb_err("--mode: '%s' is not auto, htb or edt", arg);
		return 2;
	}
	return -1;
}

/* One option: -1 when taken, else the exit status. */
static int shape_option(int c, const char *arg, struct shape_opts *o)
{
	struct xevb_shape_rule *r = &o->r;
	uint32_t u;

	switch (c) {
	case O_DEV:
		o->dev = arg;
		break;
	case O_DST:
		return parse_dst(arg, o);
	case O_RATE:
		if (!xevb_shape_parse_rate("rate", arg, &r->rate_bps))
			return 2;
		o->have_rate = true;
		break;
	case O_PROTO:
		return parse_proto(arg, r);
	case O_PORT:
		if (!xevb_parse_u32("port", arg, 1, 65535, &u))
			return 2;
		r->dport = (uint16_t)u;
		break;
	case O_BURST:
		if (!xevb_parse_u32("burst", arg, 1500, 1u << 30, &r->burst))
			return 2;
		break;
	case O_LIMIT:
		if (!xevb_parse_u32("limit", arg, 3000, 1u << 30, &r->limit))
			return 2;
		break;
	case O_OVERHEAD:
		if (!xevb_parse_u32("overhead", arg, 0, 256, &r->overhead))
			return 2;
		break;
	case O_MODE:
		return parse_mode(arg, r);
	case O_HORIZON:
		if (!xevb_parse_u32("horizon", arg, 1, 60000, &u))
			return 2;
		r->horizon_ns = (uint64_t)u * 1000000ull;
		break;
	case O_JSON:
		o->json = true;
		break;
	case 'h':
		xevb_opt_usage(opts, &help);
		return 0;
	default:
		return 2;
	}
	return -1;
}

/* The options after the action: -1 when they make sense together, else the exit status. */
static int parse_options(int argc, char **argv, struct shape_opts *o)
{
	const char *arg;
	int c, r;

	while ((c = xevb_opt_next(argc, argv, opts, &help, &arg)) != -1)
		if ((r = shape_option(c, arg, o)) >= 0)
			return r;
	if (optind < argc) {
		xevb_err("unexpected argument '%s' (try 'xevb shape --help')", argv[optind]);
		return 2;
	}
	if (!o->dev) {
		xevb_err("--dev IFACE is required (try 'xevb shape --help')");
		return 2;
	}
	if (o->r.dport && o->r.proto != 6 && o->r.proto != 17) {
		xevb_err("--port needs --proto udp or --proto tcp");
		return 2;
	}
	return -1;
}

static int run_action(const char *verb, const struct shape_opts *o)
{
	int err;

	if (!strcmp(verb, "set")) {
		if (!o->have_dst || !o->have_rate) {
			xevb_err("set needs --dst ADDR and --rate RATE");
			return 2;
		}
		err = xevb_shape_set(o->dev, &o->r);
	} else if (!strcmp(verb, "list")) {
		err = xevb_shape_list(o->dev, stdout, o->json);
	} else if (!strcmp(verb, "clear")) {
		err = xevb_shape_clear(o->dev, o->have_dst ? &o->r : NULL);
	} else {
		xevb_err("unknown action '%s': set, list or clear", verb);
		return 2;
	}
	return err ? 1 : 0;
}

int cmd_shape(int argc, char **argv)
{
	struct shape_opts o = { 0 };
	const char *verb;
	int c;

	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			xevb_opt_usage(opts, &help);
			return 0;
		}
		xevb_err("which action: set, list or clear? (try 'xevb shape --help')");
		return 2;
	}
	verb = argv[1];
	if ((c = parse_options(argc - 1, argv + 1, &o)) >= 0)
		return c;
	return run_action(verb, &o);
}

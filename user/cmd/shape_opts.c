// SPDX-License-Identifier: GPL-2.0-only
/* `xevb shape`'s option table (cli.h, options as data): the rule and the shaper it goes into. */
#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>
#include "cmd/cmd_opts.h"

#define F(field) offsetof(struct shape_cfg, field)

static bool parse_dst(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct in_addr a;

	(void)o;
	if (inet_pton(AF_INET, arg, &a) != 1) {
		xevb_err("--%s: '%s' is not an IPv4 address such as 198.18.2.1", label, arg);
		return false;
	}
	((struct shape_cfg *)cfg)->r.daddr = a.s_addr;
	return true;
}

static bool parse_rate(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	return xevb_shape_parse_rate(label, arg, (uint64_t *)((char *)cfg + o->off));
}

/* udp, tcp or a protocol number. */
static bool parse_proto(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct xevb_shape_rule *r = &((struct shape_cfg *)cfg)->r;
	uint32_t u;

	(void)o;
	if (!strcmp(arg, "udp"))
		r->proto = 17;
	else if (!strcmp(arg, "tcp"))
		r->proto = 6;
	else if (xevb_parse_u32(label, arg, 1, 255, &u))
		r->proto = (uint8_t)u;
	else
		return false;
	return true;
}

#define S_RULE "Rule"
#define S_SHP  "Shaper"
#define S_OUT  "Output"

static const char *const sections[] = { S_RULE, S_SHP, S_OUT, NULL };

static const struct xevb_cfg_opt opts[] = {
	{ "dev", 'd', XEVB_T_STR, "IFACE", F(dev), .flags = XEVB_F_REQUIRED, .section = S_RULE,
	  .help = "interface whose egress is shaped (required)" },
	{ "dst", 0, XEVB_T_FUNC, "ADDR", 0, F(have_dst), .section = S_RULE, .parse = parse_dst,
	  .flags = XEVB_F_GIVEN, .help = "destination IPv4 address (set: required; clear: one rule)" },
	{ "rate", 0, XEVB_T_FUNC, "RATE", F(r.rate_bps), F(have_rate), .section = S_RULE, .parse = parse_rate,
	  .flags = XEVB_F_GIVEN, .help = "set: bits/s of Ethernet frames, e.g. 200mbit, 1.5gbit" },
	{ "proto", 0, XEVB_T_FUNC, "udp|tcp|N", .section = S_RULE, .parse = parse_proto,
	  .help = "only this IP protocol to --dst (default: any)" },
	{ "port", 0, XEVB_T_U16, "N", F(r.dport), 0, 0, 1, 65535, .section = S_RULE,
	  .help = "only this destination port (with --proto udp or tcp)" },
	{ "burst", 0, XEVB_T_U32, "BYTES", F(r.burst), 0, 0, 1500, 1u << 30, .section = S_SHP,
	  .help = "HTB burst (default 2 ms at the rate, at least 4 frames)" },
	{ "limit", 0, XEVB_T_U32, "BYTES", F(r.limit), 0, 0, 3000, 1u << 30, .section = S_SHP,
	  .help = "leaf bfifo bytes (default max(4 x wmem_max, 100 ms at the rate))" },
	{ "overhead", 0, XEVB_T_U32, "BYTES", F(r.overhead), 0, 0, 0, 256, .section = S_SHP,
	  .help = "added to each frame's length (24: preamble, FCS, gap)" },
	{ "mode", 0, XEVB_T_ENUM, "auto|htb|edt", F(mode), .words = "auto|htb|edt", .def = "auto",
	  .section = S_SHP, .help = "first set on IFACE: HTB classes or EDT + fq" },
	{ "horizon", 0, XEVB_T_U64, "MS", F(r.horizon_ns), 0, 0, 1, 60000, 1000000, .section = S_SHP,
	  .help = "edt: drop packets due later than this (default 2000)" },
	{ "json", 0, XEVB_T_FLAG, NULL, F(json), .section = S_OUT, .help = "list: one JSON object" },
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

const struct xevb_cfg_cmd shape_cmd = { .help = &help, .opts = opts, .sections = sections };

int shape_opts_parse(int argc, char **argv, struct shape_cfg *cfg)
{
	static const enum xevb_shape_mode_req modes[] = { XEVB_SHAPE_AUTO, XEVB_SHAPE_FORCE_HTB,
							  XEVB_SHAPE_FORCE_EDT };
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	rc = xevb_cfg_parse(&shape_cmd, argc, argv, cfg);
	if (rc >= 0)
		return rc;
	if (cfg->r.dport && cfg->r.proto != 6 && cfg->r.proto != 17) {
		xevb_err("--port needs --proto udp or --proto tcp");
		return 2;
	}
	cfg->r.mode = modes[cfg->mode];
	return -1;
}

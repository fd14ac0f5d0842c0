// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb dump`'s option table (cli.h, options as data): where the events
 * come from (run files, or builders over TCP as a farm node), which are
 * shown and how. The options that only make sense together are checked
 * once all are read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/dump_opts.h"

#define F(field) offsetof(struct dump_cfg, field)

/* "A.B.C.D:PORT", port in min_port..65535: what the library takes. */
static bool addr_ok(const char *s, unsigned long min_port)
{
	const char *colon = strrchr(s, ':');
	char host[INET_ADDRSTRLEN];
	struct in_addr a;
	unsigned long port;
	char *end;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host) || !colon[1])
		return false;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	return !*end && !errno && port >= min_port && port <= 65535 && colon[1] != '-' &&
	       inet_pton(AF_INET, host, &a) == 1;
}

static bool parse_listen(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	if (!addr_ok(arg, 0)) {
		xevb_err(
			"--%s: '%s' is not IPv4-ADDR:PORT such as 198.18.3.1:5000 (port 0..65535, 0: any free one)",
			label, arg);
		return false;
	}
	*(const char **)((char *)cfg + o->off) = arg;
	return true;
}

static bool parse_dfm(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	if (!addr_ok(arg, 1)) {
		xevb_err("--%s: '%s' is not IPv4-ADDR:PORT such as 198.18.4.1:23901 (port 1..65535)", label, arg);
		return false;
	}
	*(const char **)((char *)cfg + o->off) = arg;
	return true;
}

static bool parse_u32_part(const char *s, const char **end, uint32_t *v)
{
	unsigned long long x;
	char *e;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoull(s, &e, 10);
	if (errno || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	*end = e;
	return true;
}

/* --events A-B, A (that one) or A- (from A on). */
static bool parse_events(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct dump_filter *f = (struct dump_filter *)((char *)cfg + o->off);
	const char *e = arg;
	uint32_t lo, hi;

	if (!parse_u32_part(arg, &e, &lo))
		goto bad;
	hi = lo;
	if (*e == '-') {
		hi = UINT32_MAX;
		if (e[1] && !parse_u32_part(e + 1, &e, &hi))
			goto bad;
		if (*e == '-')
			e++;
	}
	if (*e)
		goto bad;
	if (lo > hi) {
		xevb_err("--%s: '%s' starts after it ends: give A-B with A <= B", label, arg);
		return false;
	}
	f->ev_lo = lo;
	f->ev_hi = hi;
	return true;
bad:
	xevb_err("--%s: '%s' is not an event id range A-B, A or A- (ids 0..%u)", label, arg, UINT32_MAX);
	return false;
}

#define S_IN  "Input"
#define S_FM  "As a farm node (--listen)"
#define S_SEL "Which events"
#define S_OUT "Output"
#define S_END "End"

static const char *const sections[] = { S_IN, S_FM, S_SEL, S_OUT, S_END, NULL };

static const struct xevb_cfg_opt opts[] = {
	{ "input", 'r', XEVB_T_STRS, "FILE", F(inputs), F(n_inputs), DUMP_MAX_INPUTS, .section = S_IN,
	  .help = "read a run file (or a plain event stream from an older build --output); "
		  "repeat for several, read in the order given" },
	{ "listen", 'l', XEVB_T_FUNC, "ADDR:PORT", F(listen), .section = S_IN, .parse = parse_listen,
	  .help = "be a farm node: take events from builders (their --sink ADDR:PORT) over TCP; port 0: any" },

	{ "credits", 0, XEVB_T_U32, "N", F(credits), F(credits_given), 0, 1, 1u << 20, .def = "64",
	  .section = S_FM, .flags = XEVB_F_GIVEN, .help = "events in flight per builder (control protocol)" },
	{ "ctl-port", 0, XEVB_T_U32, "N", F(ctl_port), F(ctl_port_given), 0, 0, 65535, .section = S_FM,
	  .flags = XEVB_F_GIVEN,
	  .help = "control protocol's UDP port on the listening address (default 23904, what builders send "
		  "their STATUS to; 0: any free one)" },
	{ "no-ctl", 0, XEVB_T_FLAG, NULL, F(no_ctl), .section = S_FM,
	  .help = "no control protocol: no credits, no Busy (builders forward round robin)" },
	{ "dfm", 0, XEVB_T_FUNC, "ADDR:PORT", F(dfm), .section = S_FM, .parse = parse_dfm,
	  .help = "report RECEIVED to the data-flow manager (its books close here)" },
	XEVB_CFG_KEY_FILE(S_FM, struct dump_cfg, co),
	{ "config", 0, XEVB_T_STR, "FILE", F(config), .section = S_FM,
	  .help = "take address, ports, credits, DFM and key from a run configuration's [sink ID] "
		  "(docs/run-config.md); explicit options override it" },
	{ "id", 0, XEVB_T_U32, "N", F(id), F(id_given), 0, 0, 65535, .section = S_FM, .flags = XEVB_F_GIVEN,
	  .help = "with --config: run as its [sink N] (default 0)" },
	{ "ready-file", 0, XEVB_T_STR, "PATH", F(ready_file), .section = S_FM,
	  .help = "write the bound ADDR:PORT to PATH once listening" },

	{ "events", 'e', XEVB_T_FUNC, "A-B", F(flt), .section = S_SEL, .parse = parse_events,
	  .help = "only event ids A..B (A: that one; A-: from A on)" },
	{ "source-id", 's', XEVB_T_IDS, "LIST", F(src_ids), F(n_src_ids), XEVB_MAX_SOURCES, 0, XEVB_MAX_SOURCE_ID,
	  .section = S_SEL,
	  .help = "only events with a fragment from one of these sources (\"0-7,9\"); --fragments shows "
		  "only theirs" },
	{ "missing", 0, XEVB_T_IDS, "LIST", F(miss_ids), F(n_miss_ids), XEVB_MAX_SOURCES, 0, XEVB_MAX_SOURCE_ID,
	  .section = S_SEL, .help = "only events from which one of these sources is missing" },
	{ "incomplete-only", 'i', XEVB_T_FLAG, NULL, F(flt.incomplete_only), .section = S_SEL,
	  .help = "only events built incomplete (at timeout)" },

	{ "json", 'j', XEVB_T_FLAG, NULL, F(fmt.json), .section = S_OUT,
	  .help = "one JSON object per event and line (JSON Lines)" },
	{ "fragments", 'f', XEVB_T_FLAG, NULL, F(fmt.fragments), .section = S_OUT,
	  .help = "each fragment too: source_id, length, CRC-32C, payload in hex" },
	{ "snap", 0, XEVB_T_U32, "N", F(fmt.snap), F(snap_given), 0, 0, UINT32_MAX, .def = "64", .section = S_OUT,
	  .flags = XEVB_F_GIVEN, .help = "--fragments: at most N payload bytes per fragment (0: all)" },
	{ "verify", 0, XEVB_T_FLAG, NULL, F(fmt.verify), .section = S_OUT,
	  .help = "check every payload of the events shown against its CRC-32C; a bad one is marked and fails "
		  "the exit status" },
	{ "time", 't', XEVB_T_ENUM, "iso|ns", F(fmt.time), .words = "iso|ns", .def = "iso", .section = S_OUT,
	  .help = "build time as ISO 8601 UTC with nanoseconds, or as ns since 1970" },
	{ "quiet", 'q', XEVB_T_FLAG, NULL, F(quiet), .section = S_OUT,
	  .help = "nothing on stderr but problems (no file header, no summary)" },
	XEVB_CFG_VERBOSE(S_OUT, struct dump_cfg, co),

	{ "count", 'c', XEVB_T_U64, "N", F(count), 0, 0, 1, (double)UINT64_MAX, .section = S_END,
	  .help = "stop after showing N events (the rest of the input unread)" },
	XEVB_CFG_DURATION(S_END, struct dump_cfg, co),
	{ "until-close", 0, XEVB_T_FLAG, NULL, F(until_close), .section = S_END,
	  .help = "--listen: stop once every builder that connected has closed its connection" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "dump",
	.summary =
		"Show built events from run files or from builders, one line each or JSON Lines, like tcpdump.\n"
		"Run files are read with libxevb's reader; with --listen it is a farm node (credits, Busy and "
		"RECEIVED as libxevb speaks them) that builders forward to.\n"
		"Exit status: 0 the input was whole (every file closed with its trailer, or a plain stream ending "
		"at an event boundary; every builder stream ended between events), 1 it was not (cut, corrupt, a "
		"broken stream, a bad CRC under --verify: the reason on stderr, after every whole event before "
		"it), 2 a usage error.",
	.usage = "--input FILE... | --listen ADDR:PORT [options]",
	.examples =
		"  xevb dump --input run/xevb-run00000042-0000.xevb\n"
		"  xevb dump -r run42.xevb --events 1000-1099 --fragments --snap 32\n"
		"  xevb dump -r run42.xevb --incomplete-only --missing 7 --json\n"
		"  xevb dump --listen 198.18.3.1:5000 --count 10 --verify\n"
		"  xevb dump --listen 127.0.0.1:24000 --no-ctl --until-close --source-id 0-3\n",
};

const struct xevb_cfg_cmd dump_cmd = { .help = &help, .opts = opts, .sections = sections };

/* The options that only make sense together; -1 when they do, else 2 (said why). */
static int check_options(const struct dump_cfg *c)
{
	bool listen = c->listen || c->config;

	if (!c->n_inputs == !listen) {
		xevb_err(
			"give --input FILE (one or more) or --listen ADDR:PORT (or --config FILE), not %s "
			"(try --help)",
			listen ? "both" : "neither");
		return 2;
	}
	if (!listen && (c->credits_given || c->ctl_port_given || c->no_ctl || c->dfm || c->co.key_file ||
			c->id_given || c->ready_file || c->until_close || c->co.duration_ns)) {
		xevb_err(
			"--credits, --ctl-port, --no-ctl, --dfm, --key-file, --id, --ready-file, --duration and "
			"--until-close go with --listen (a farm node's)");
		return 2;
	}
	if (c->no_ctl && (c->ctl_port_given || c->dfm || c->co.key_file)) {
		xevb_err("--no-ctl turns the control protocol off: --ctl-port, --dfm and --key-file need it");
		return 2;
	}
	if (c->id_given && !c->config) {
		xevb_err("--id names our [sink N] in a run configuration: it goes with --config");
		return 2;
	}
	if (c->snap_given && !c->fmt.fragments) {
		xevb_err("--snap limits the payload bytes of --fragments: give --fragments too");
		return 2;
	}
	return -1;
}

static void id_bitmap(uint8_t *map, const uint16_t *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		map[ids[i] / 8] |= (uint8_t)(1u << (ids[i] % 8));
}

int dump_opts_parse(int argc, char **argv, struct dump_cfg *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->co = (struct xevb_common_opts)XEVB_COMMON_OPTS_INIT;
	c->flt.ev_hi = UINT32_MAX;
	rc = xevb_cfg_parse(&dump_cmd, argc, argv, c);
	if (rc >= 0)
		return rc;
	rc = check_options(c);
	if (rc >= 0)
		return rc;
	id_bitmap(c->flt.src, c->src_ids, c->n_src_ids);
	id_bitmap(c->flt.miss, c->miss_ids, c->n_miss_ids);
	c->flt.have_src = c->n_src_ids > 0;
	c->flt.have_miss = c->n_miss_ids > 0;
	c->fmt.flt = &c->flt;
	return -1;
}

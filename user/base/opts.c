// SPDX-License-Identifier: GPL-2.0-only
/* The first option system: getopt over a struct xevb_opt table, and the options every command shares (cli.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"

int xevb_opt_next(int argc, char **argv, const struct xevb_opt *opts, const struct xevb_cmd_help *h,
		  const char **arg)
{
	static struct option lo[128];
	static char so[256];
	static const struct xevb_opt *built;
	int n = 0, c;

	if (built != opts) {
		char *s = so;
		*s++ = '+'; /* stop at the first non-option */
		*s++ = ':'; /* report a missing argument as ':' */
		for (const struct xevb_opt *o = opts; o->name && n < 126; o++, n++) {
			lo[n] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, o->key };
			if (o->key > 0 && o->key < 256) {
				*s++ = (char)o->key;
				if (o->arg)
					*s++ = ':';
			}
		}
		lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
		lo[n] = (struct option){ 0 };
		*s++ = 'h';
		*s = 0;
		built = opts;
		optind = 1;
	}
	c = getopt_long(argc, argv, so, lo, NULL);
	*arg = optarg;
	if (c == '?' || c == ':') {
		if (c == ':')
			fprintf(stderr, "xevb %s: option '%s' needs an argument\n", h->name, argv[optind - 1]);
		else
			fprintf(stderr, "xevb %s: unknown option '%s'\n", h->name, argv[optind - 1]);
		fprintf(stderr, "Try 'xevb %s --help'.\n", h->name);
		return '?';
	}
	if (c == -1)
		built = NULL;
	return c;
}

/* [ADDR:]PORT: the port checked now, not after the device is attached. */
static bool metrics_port_ok(const char *arg)
{
	const char *colon = strrchr(arg, ':');
	uint32_t port;

	return xevb_parse_u32("metrics", colon ? colon + 1 : arg, 1, 65535, &port);
}

int xevb_common_opt(int key, const char *arg, struct xevb_common_opts *c)
{
	switch (key) {
	case XEVB_O_JSON:
		c->json = true;
		return 1;
	case XEVB_O_QUIET:
		c->quiet = true;
		return 1;
	case XEVB_O_VERBOSE:
		xevb_log_level = XEVB_LOG_DEBUG;
		return 1;
	case XEVB_O_METRICS:
		c->metrics = arg;
		return metrics_port_ok(arg) ? 1 : -1;
	case XEVB_O_KEY_FILE:
		c->key_file = arg;
		return 1;
	case XEVB_O_DURATION:
		return xevb_parse_duration(arg, &c->duration_ns) ? 1 : -1;
	case XEVB_O_INTERVAL:
		return xevb_parse_u32("interval", arg, 0, 3600, &c->interval_s) ? 1 : -1;
	default:
		return 0;
	}
}

uint32_t xevb_common_interval(const struct xevb_common_opts *c)
{
	return c->quiet ? 0 : c->interval_s;
}

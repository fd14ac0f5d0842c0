// SPDX-License-Identifier: GPL-2.0-only
/* `xevb shape set|list|clear`: per-destination rates on an interface. */
#include <stdio.h>
#include <string.h>
#include "base/cli.h"
#include "ops/shape_ctl.h"
#include "cmd/cmd_opts.h"
#include "cmd/cmds.h"

static int run_action(const char *verb, const struct shape_cfg *o)
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
	struct shape_cfg o;
	const char *verb;
	int c;

	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			xevb_cfg_usage(stdout, &shape_cmd);
			return 0;
		}
		xevb_err("which action: set, list or clear? (try 'xevb shape --help')");
		return 2;
	}
	verb = argv[1];
	if ((c = shape_opts_parse(argc - 1, argv + 1, &o)) >= 0)
		return c;
	return run_action(verb, &o);
}

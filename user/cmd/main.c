// SPDX-License-Identifier: GPL-2.0-only
/* xevb: one tool, one subcommand per job. */
#include <stdio.h>
#include <string.h>
#include <xevb/cli.h>
#include "cmds.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	XEVB_CMDS
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: xevb COMMAND [options]   (xevb COMMAND --help for each)\n\n"
		   "xevb: an XDP/AF_XDP event builder for data acquisition.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
}

int main(int argc, char **argv)
{
	static char prog[64];

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name)) {
			snprintf(prog, sizeof(prog), "xevb %s", cmds[i].name);
			xevb_prog = prog;
			return cmds[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "xevb: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

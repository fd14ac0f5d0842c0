// SPDX-License-Identifier: GPL-2.0-only
/* xevb: one tool, one subcommand per job. */
#include <stdio.h>
#include <string.h>
#include "base/cli.h"
#include "cmd/cmds.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = { XEVB_CMDS };
#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: xevb COMMAND [options]   (xevb COMMAND --help for each)\n\n"
		"xevb: an XDP/AF_XDP event builder for data acquisition.\n\nCommands:\n");
	for (size_t i = 0; i < N_CMDS; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
}

/* xevb(1): the commands, each with its own page. */
static void man_index(FILE *f)
{
	fprintf(f,
		".TH XEVB 1 \"\" \"xevb %s\" \"xevb manual\"\n"
		".SH NAME\nxevb \\- an XDP/AF_XDP event builder for data acquisition\n"
		".SH SYNOPSIS\n.B xevb\n.I COMMAND\n[options]\n"
		".SH DESCRIPTION\n",
		XEVB_VERSION);
	xevb_roff_puts(f,
		       "xevb gathers the fragments that a detector's read-out links send for every "
		       "triggered event, builds complete events and forwards them to farm nodes. "
		       "An XDP program steers the data into AF_XDP sockets; every fragment is "
		       "accounted for exactly once.\n");
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; i < N_CMDS; i++) {
		fprintf(f, ".TP\n.BR xevb\\-%s (1)\n", cmds[i].name);
		xevb_roff_puts(f, cmds[i].summary);
		fputc('\n', f);
	}
	fputs(".SH EXIT STATUS\n0 success, 1 a run-time failure, 2 a usage error "
	      "(an unknown or invalid option), 3 (build) the accounting check failed; "
	      "dump: 1 the input was not whole.\n",
	      f);
}

/*
 * Hidden: `xevb help-man` prints xevb(1), `help-man --list` the commands,
 * `help-man CMD` that command's page, made by its own --help from its
 * option table (cli.h). The Makefile generates the installed pages so.
 */
static int help_man(int argc, char **argv)
{
	if (argc < 2) {
		man_index(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < N_CMDS; i++)
			printf("%s\n", cmds[i].name);
		return 0;
	}
	for (size_t i = 0; i < N_CMDS; i++)
		if (!strcmp(argv[1], cmds[i].name)) {
			char *help_argv[] = { argv[1], "--help", NULL };
			int rc;

			xevb_help_format = XEVB_HELP_MAN;
			rc = cmds[i].fn(2, help_argv);
			if (rc == 0 && xevb_help_pages != 1) {
				fprintf(stderr,
					"xevb help-man: 'xevb %s --help' printed no page from an option "
					"table: make it call xevb_opt_usage (user/base/cli.c)\n",
					argv[1]);
				return 1;
			}
			return rc;
		}
	fprintf(stderr, "xevb help-man: unknown command '%s' (xevb help-man --list)\n", argv[1]);
	return 2;
}

int main(int argc, char **argv)
{
	static char prog[64];

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "help-man"))
		return help_man(argc - 1, argv + 1);
	for (size_t i = 0; i < N_CMDS; i++)
		if (!strcmp(argv[1], cmds[i].name)) {
			snprintf(prog, sizeof(prog), "xevb %s", cmds[i].name);
			xevb_prog = prog;
			return cmds[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "xevb: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

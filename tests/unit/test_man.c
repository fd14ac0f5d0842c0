// SPDX-License-Identifier: GPL-2.0-only
/* Man pages from an option table (xevb help-man): the roff, byte for byte. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include "base/cli.h"
#include "../common/capture.h"

static void puts_fn(FILE *f, const void *s)
{
	xevb_roff_puts(f, s);
}

Test(man, roff_escapes_minus_backslash_and_requests)
{
	char *s = capture_text(puts_fn, ".x -y \\z\n'quote\nmid.dot 'mid");

	cr_assert(eq(str, s, "\\&.x \\-y \\ez\n\\&'quote\nmid.dot 'mid"));
	free(s);
}

static const struct xevb_opt opts[] = {
	{ "dev", 'd', "IFACE", "interface -- the one" },
	{ "no-x", 300, NULL, ".starts with a dot \\ and a backslash" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "demo",
	.summary = "Do a thing.\nSecond line.",
	.usage = "--dev IFACE [options]",
	.examples = "  xevb demo --dev eth0 \\\n      --no-x\n",
};

static void page_fn(FILE *f, const void *h)
{
	xevb_opt_man(f, opts, h);
}

Test(man, page_from_the_option_table)
{
	char *s = capture_text(page_fn, &help);

	cr_assert(eq(str, s,
		     ".TH XEVB-DEMO 1 \"\" \"xevb " XEVB_VERSION "\" \"xevb manual\"\n"
		     ".SH NAME\nxevb\\-demo \\- Do a thing\n"
		     ".SH SYNOPSIS\n.B xevb demo\n\\-\\-dev IFACE [options]\n"
		     ".SH DESCRIPTION\nDo a thing.\nSecond line.\n"
		     ".SH OPTIONS\n"
		     ".TP\n\\fB\\-d\\fR, \\fB\\-\\-dev\\fR \\fIIFACE\\fR\ninterface \\-\\- the one\n"
		     ".TP\n\\fB\\-\\-no\\-x\\fR\n\\&.starts with a dot \\e and a backslash\n"
		     ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nprint the options and exit\n"
		     ".SH EXAMPLES\n.nf\n  xevb demo \\-\\-dev eth0 \\e\n      \\-\\-no\\-x\n.fi\n"
		     ".SH SEE ALSO\n.BR xevb (1)\n"));
	free(s);
}

/* A sub-command's help ("sink --selftest-send") names the page after its command. */
Test(man, page_named_after_the_first_word)
{
	static const struct xevb_cmd_help sub = {
		.name = "sink --selftest-send",
		.summary = "Send events",
		.usage = "DEST N",
	};
	char *s = capture_text(page_fn, &sub);

	cr_assert(eq(int, strncmp(s, ".TH XEVB-SINK 1 ", 16), 0), "%s", s);
	cr_assert(not(eq(ptr, strstr(s, ".SH NAME\nxevb\\-sink \\- Send events\n"), NULL)), "%s", s);
	cr_assert(eq(ptr, strstr(s, ".SH EXAMPLES"), NULL));
	free(s);
}

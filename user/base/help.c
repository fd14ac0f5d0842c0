// SPDX-License-Identifier: GPL-2.0-only
/* --help text and man pages (roff), from the same option tables the parser reads (cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"

/* The help lines of --tune and --help-tune, which no table row carries. */
static const char cfg_tune_help[] = "set a tuning key (repeatable; --help-tune lists them)";
static const char cfg_help_tune_help[] = "list the tuning keys, their defaults and ranges";

enum xevb_help_format xevb_help_format = XEVB_HELP_TEXT;
unsigned xevb_help_pages;

void xevb_roff_puts(FILE *f, const char *s)
{
	bool line_start = true;

	for (; *s; s++) {
		/* A line starting with . or ' would be a roff request. */
		if (line_start && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f); /* a minus sign: options stay copy-pastable */
		else
			fputc(*s, f);
		line_start = *s == '\n';
	}
}

/* "xevb build" -> "build": the page is named after the command's first word. */
static size_t cmd_word_len(const char *name)
{
	return strcspn(name, " ");
}

static void man_header(FILE *f, const struct xevb_cmd_help *h)
{
	size_t n = cmd_word_len(h->name), first_line = strcspn(h->summary, "\n");
	char title[64];

	snprintf(title, sizeof(title), "XEVB-%.*s", (int)n, h->name);
	for (char *c = title; *c; c++)
		if (*c >= 'a' && *c <= 'z')
			*c = (char)(*c - 'a' + 'A');
	fprintf(f, ".TH %s 1 \"\" \"xevb %s\" \"xevb manual\"\n", title, XEVB_VERSION);
	fprintf(f, ".SH NAME\nxevb\\-%.*s \\- ", (int)n, h->name);
	/* NAME is one line: the summary's first, without its full stop. */
	if (first_line && h->summary[first_line - 1] == '.')
		first_line--;
	char *line = strndup(h->summary, first_line);
	if (line) {
		xevb_roff_puts(f, line);
		free(line);
	}
	fprintf(f, "\n.SH SYNOPSIS\n.B xevb %.*s\n", (int)n, h->name);
	xevb_roff_puts(f, h->usage);
	fputs("\n.SH DESCRIPTION\n", f);
	xevb_roff_puts(f, h->summary);
	fputc('\n', f);
}

static void man_option(FILE *f, int key, const char *name, const char *arg, const char *help)
{
	fputs(".TP\n", f);
	if (key > 0 && key < 256)
		fprintf(f, "\\fB\\-%c\\fR, ", key);
	fputs("\\fB\\-\\-", f);
	xevb_roff_puts(f, name);
	fputs("\\fR", f);
	if (arg) {
		fputs(" \\fI", f);
		xevb_roff_puts(f, arg);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	xevb_roff_puts(f, help);
	fputc('\n', f);
}

void xevb_opt_man(FILE *f, const struct xevb_opt *opts, const struct xevb_cmd_help *h)
{
	man_header(f, h);
	fputs(".SH OPTIONS\n", f);
	for (const struct xevb_opt *o = opts; o->name; o++)
		man_option(f, o->key, o->name, o->arg, o->help);
	man_option(f, 'h', "help", NULL, "print the options and exit");
	if (h->examples && *h->examples) {
		fputs(".SH EXAMPLES\n.nf\n", f);
		xevb_roff_puts(f, h->examples);
		fputs(".fi\n", f);
	}
	fputs(".SH SEE ALSO\n.BR xevb (1)\n", f);
}

/* "-d|--dev" as a case pattern. */
static void completion_pattern(FILE *f, int key, const char *name)
{
	fputs("\t\t", f);
	if (key > 0 && key < 256)
		fprintf(f, "-%c|", key);
	fprintf(f, "--%s)", name);
}

static void opt_completion(FILE *f, const struct xevb_opt *opts)
{
	/* An option's argument: nothing to offer but the shell's default (files). */
	for (const struct xevb_opt *o = opts; o->name; o++)
		if (o->arg) {
			completion_pattern(f, o->key, o->name);
			fputs(" return ;;\n", f);
		}
	fputs("\t\t*) w=\"", f);
	for (const struct xevb_opt *o = opts; o->name; o++)
		fprintf(f, "--%s ", o->name);
	fputs("--help\" ;;\n", f);
}

void xevb_opt_usage(const struct xevb_opt *opts, const struct xevb_cmd_help *h)
{
	if (xevb_help_format == XEVB_HELP_COMPLETION) {
		opt_completion(stdout, opts);
		xevb_help_pages++;
		return;
	}
	if (xevb_help_format == XEVB_HELP_MAN) {
		xevb_opt_man(stdout, opts, h);
		xevb_help_pages++;
		return;
	}
	printf("Usage: xevb %s %s\n\n%s\n\nOptions:\n", h->name, h->usage, h->summary);
	for (const struct xevb_opt *o = opts; o->name; o++) {
		char left[64];
		if (o->key > 0 && o->key < 256)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->key, o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		printf("  %-30s %s\n", left, o->help);
	}
	printf("  %-30s %s\n", "-h, --help", "this text");
	if (h->examples && *h->examples)
		printf("\nExamples:\n%s", h->examples);
}

/* "-d, --dev IFACE" or "    --window N": the left column. */
static void cfg_left(char *buf, size_t len, int key, const char *name, const char *arg)
{
	if (key > 0 && key < 256)
		snprintf(buf, len, "-%c, --%s%s%s", key, name, arg ? " " : "", arg ? arg : "");
	else
		snprintf(buf, len, "    --%s%s%s", name, arg ? " " : "", arg ? arg : "");
}

/* The help text and, for a row with one, its default. */
static void cfg_help_text(char *buf, size_t len, const struct xevb_cfg_opt *o)
{
	if (o->def && o->type != XEVB_T_FLAG)
		snprintf(buf, len, "%s (default %s)", o->help, o->def);
	else
		snprintf(buf, len, "%s", o->help);
}

static void cfg_usage_text(FILE *f, const struct xevb_cfg_cmd *c)
{
	const struct xevb_cmd_help *h = c->help;
	char left[80], text[512];

	fprintf(f, "Usage: xevb %s %s\n\n%s\n", h->name, h->usage, h->summary);
	for (const char *const *sec = c->sections; *sec; sec++) {
		bool heading = false;

		for (const struct xevb_cfg_opt *o = c->opts; o->name; o++) {
			if ((o->flags & XEVB_F_TUNE) || strcmp(o->section, *sec))
				continue;
			if (!heading)
				fprintf(f, "\n%s:\n", *sec);
			heading = true;
			cfg_left(left, sizeof(left), o->key, o->name, o->arg);
			cfg_help_text(text, sizeof(text), o);
			fprintf(f, "  %-30s %s\n", left, text);
		}
	}
	fprintf(f, "\nHelp:\n");
	if (xevb_cfg_has_tune(c)) {
		fprintf(f, "  %-30s %s\n", "    --tune KEY=VALUE", cfg_tune_help);
		fprintf(f, "  %-30s %s\n", "    --help-tune", cfg_help_tune_help);
	}
	fprintf(f, "  %-30s %s\n", "-h, --help", "this text");
	if (h->examples && *h->examples)
		fprintf(f, "\nExamples:\n%s", h->examples);
}

/* A tune key: an indented paragraph, not .TP, which is an option's (one .TP per --help line). */
static void man_tune_key(FILE *f, const struct xevb_cfg_opt *o, const char *text)
{
	fputs(".IP \"\\fB", f);
	xevb_roff_puts(f, o->name);
	fputs("\\fR=\\fI", f);
	xevb_roff_puts(f, o->arg ? o->arg : "0|1");
	fputs("\\fR\"\n", f);
	xevb_roff_puts(f, text);
	fputc('\n', f);
}

static void cfg_man(FILE *f, const struct xevb_cfg_cmd *c)
{
	char text[512];

	man_header(f, c->help);
	fputs(".SH OPTIONS\n", f);
	for (const char *const *sec = c->sections; *sec; sec++) {
		bool heading = false;

		for (const struct xevb_cfg_opt *o = c->opts; o->name; o++) {
			if ((o->flags & XEVB_F_TUNE) || strcmp(o->section, *sec))
				continue;
			if (!heading) {
				fputs(".SS ", f);
				xevb_roff_puts(f, *sec);
				fputc('\n', f);
			}
			heading = true;
			cfg_help_text(text, sizeof(text), o);
			man_option(f, o->key, o->name, o->arg, text);
		}
	}
	fputs(".SS Help\n", f);
	if (xevb_cfg_has_tune(c)) {
		man_option(f, 0, "tune", "KEY=VALUE", cfg_tune_help);
		man_option(f, 0, "help-tune", NULL, cfg_help_tune_help);
	}
	man_option(f, 'h', "help", NULL, "print the options and exit");
	if (xevb_cfg_has_tune(c)) {
		fputs(".SH TUNING KEYS\nGiven as \\fB\\-\\-tune\\fR \\fIKEY\\fR=\\fIVALUE\\fR "
		      "(flags: 1 or 0).\n",
		      f);
		for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
			if (o->flags & XEVB_F_TUNE) {
				cfg_help_text(text, sizeof(text), o);
				man_tune_key(f, o, text);
			}
	}
	if (c->help->examples && *c->help->examples) {
		fputs(".SH EXAMPLES\n.nf\n", f);
		xevb_roff_puts(f, c->help->examples);
		fputs(".fi\n", f);
	}
	fputs(".SH SEE ALSO\n.BR xevb (1)\n", f);
}

/* An enum row's values ("a|b" -> "a b"), or the tune keys as "key=". */
static void cfg_completion_arg(FILE *f, const struct xevb_cfg_cmd *c, const struct xevb_cfg_opt *o)
{
	if (o->type == XEVB_T_ENUM && o->words) {
		fputs(" w=\"", f);
		for (const char *w = o->words; *w; w++)
			fputc(*w == '|' ? ' ' : *w, f);
		fputs("\" ;;\n", f);
		return;
	}
	(void)c;
	fputs(" return ;;\n", f);
}

static void cfg_completion(FILE *f, const struct xevb_cfg_cmd *c)
{
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		if (!(o->flags & XEVB_F_TUNE) && o->arg) {
			completion_pattern(f, o->key, o->name);
			cfg_completion_arg(f, c, o);
		}
	if (xevb_cfg_has_tune(c)) {
		fputs("\t\t--tune) w=\"", f);
		for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
			if (o->flags & XEVB_F_TUNE)
				fprintf(f, "%s= ", o->name);
		fputs("\" ;;\n", f);
	}
	fputs("\t\t*) w=\"", f);
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		if (!(o->flags & XEVB_F_TUNE))
			fprintf(f, "--%s ", o->name);
	if (xevb_cfg_has_tune(c))
		fputs("--tune --help-tune ", f);
	fputs("--help\" ;;\n", f);
}

void xevb_cfg_usage(FILE *f, const struct xevb_cfg_cmd *c)
{
	if (xevb_help_format == XEVB_HELP_COMPLETION) {
		cfg_completion(f, c);
		xevb_help_pages++;
		return;
	}
	if (xevb_help_format == XEVB_HELP_MAN) {
		cfg_man(f, c);
		xevb_help_pages++;
		return;
	}
	cfg_usage_text(f, c);
}

void xevb_cfg_usage_tune(FILE *f, const struct xevb_cfg_cmd *c)
{
	char left[80], text[512];

	fprintf(f,
		"Tuning keys of xevb %s: --tune KEY=VALUE, repeatable (flags: 1 or 0).\n"
		"Experiments and measurements; a gateway runs well without them.\n",
		c->help->name);
	for (const char *const *sec = c->sections; *sec; sec++) {
		bool heading = false;

		for (const struct xevb_cfg_opt *o = c->opts; o->name; o++) {
			if (!(o->flags & XEVB_F_TUNE) || strcmp(o->section, *sec))
				continue;
			if (!heading)
				fprintf(f, "\n%s:\n", *sec);
			heading = true;
			snprintf(left, sizeof(left), "%s=%s", o->name, o->arg ? o->arg : "0|1");
			cfg_help_text(text, sizeof(text), o);
			fprintf(f, "  %-30s %s\n", left, text);
		}
	}
}

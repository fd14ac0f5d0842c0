// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xevb/cli.h>
#include <xevb/ctl_sock.h>

int xevb_log_level = XEVB_LOG_INFO;
const char *xevb_prog = "xevb";
enum xevb_help_format xevb_help_format = XEVB_HELP_TEXT;
unsigned xevb_help_pages;

void xevb_log(enum xevb_log_level lvl, const char *fmt, ...)
{
	static const char *const tag[] = { "error: ", "warning: ", "", "debug: " };
	va_list ap;

	if ((int)lvl > xevb_log_level)
		return;
	fprintf(stderr, "%s: %s", xevb_prog, tag[lvl]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

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
			fputs("\\-", f);   /* a minus sign: options stay copy-pastable */
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

void xevb_opt_usage(const struct xevb_opt *opts, const struct xevb_cmd_help *h)
{
	if (xevb_help_format == XEVB_HELP_MAN) {
		xevb_opt_man(stdout, opts, h);
		xevb_help_pages++;
		return;
	}
	printf("Usage: xevb %s %s\n\n%s\n\nOptions:\n", h->name, h->usage, h->summary);
	for (const struct xevb_opt *o = opts; o->name; o++) {
		char left[64];
		if (o->key > 0 && o->key < 256)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->key, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		printf("  %-30s %s\n", left, o->help);
	}
	printf("  %-30s %s\n", "-h, --help", "this text");
	if (h->examples && *h->examples)
		printf("\nExamples:\n%s", h->examples);
}

int xevb_opt_next(int argc, char **argv, const struct xevb_opt *opts,
		  const struct xevb_cmd_help *h, const char **arg)
{
	static struct option lo[128];
	static char so[256];
	static const struct xevb_opt *built;
	int n = 0, c;

	if (built != opts) {
		char *s = so;
		*s++ = '+';  /* stop at the first non-option */
		*s++ = ':';  /* report a missing argument as ':' */
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

static bool parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= 0 && v <= (double)(1u << 30))) {
		xevb_err("--duration: '%s' is not a number of seconds such as 30 or 2.5 (0: no limit)", s);
		return false;
	}
	*ns = (uint64_t)(v * 1e9);
	return true;
}

int xevb_common_opt(int key, const char *arg, struct xevb_common_opts *c)
{
	switch (key) {
	case XEVB_O_JSON: c->json = true; return 1;
	case XEVB_O_QUIET: c->quiet = true; return 1;
	case XEVB_O_VERBOSE: xevb_log_level = XEVB_LOG_DEBUG; return 1;
	case XEVB_O_METRICS: c->metrics = arg; return 1;
	case XEVB_O_KEY_FILE: return xevb_ctl_set_key_file(arg) ? -1 : 1;
	case XEVB_O_DURATION: return parse_duration(arg, &c->duration_ns) ? 1 : -1;
	case XEVB_O_INTERVAL: return xevb_parse_u32("interval", arg, 0, 3600, &c->interval_s) ? 1 : -1;
	default: return 0;
	}
}

uint32_t xevb_common_interval(const struct xevb_common_opts *c)
{
	return c->quiet ? 0 : c->interval_s;
}

bool xevb_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max)
		goto bad;
	*out = v;
	return true;
bad:
	xevb_err("--%s: '%s' is not a number in %llu..%llu", opt, s ? s : "",
		 (unsigned long long)min, (unsigned long long)max);
	return false;
}

bool xevb_parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (!xevb_parse_u64(opt, s, min, max, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

int xevb_parse_id_list(const char *opt, const char *s, uint16_t *ids, int max)
{
	static uint8_t seen[65536];
	char *dup = strdup(s), *save = NULL;
	int n = 0;

	memset(seen, 0, sizeof(seen));
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(t, '-'), *e1, *e2;
		unsigned long a, b;
		a = strtoul(t, &e1, 10);
		if (dash) {
			b = strtoul(dash + 1, &e2, 10);
			if (e1 != dash || *e2 || dash == t)
				goto bad;
		} else {
			b = a;
			if (*e1 || e1 == t)
				goto bad;
		}
		if (a > b || b > 65535)
			goto bad;
		for (unsigned long v = a; v <= b; v++)
			seen[v] = 1;
	}
	for (unsigned v = 0; v < 65536; v++)
		if (seen[v]) {
			if (n == max) {
				xevb_err("--%s: more than %d ids", opt, max);
				free(dup);
				return -1;
			}
			ids[n++] = (uint16_t)v;
		}
	free(dup);
	if (n == 0)
		goto bad2;
	return n;
bad:
	free(dup);
bad2:
	xevb_err("--%s: '%s' is not a list of ids such as 0-125 or 1,4,9-12", opt, s);
	return -1;
}

bool xevb_parse_si(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		goto bad;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': v *= 1e3; end++; break;
	case 'm': case 'M': v *= 1e6; end++; break;
	case 'g': case 'G': v *= 1e9; end++; break;
	default: goto bad;
	}
	/* allow a unit word after the multiplier: "200mbit", "1Gbps" */
	if (*end && strcmp(end, "bit") && strcmp(end, "bps") && strcmp(end, "b") && strcmp(end, "B"))
		goto bad;
	*out = v;
	return true;
bad:
	xevb_err("--%s: '%s' is not a number such as 200m or 1.5G", opt, s);
	return false;
}

uint64_t xevb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t xevb_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

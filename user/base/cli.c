// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/cli.h"

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
		return 1;
	case XEVB_O_KEY_FILE:
		c->key_file = arg;
		return 1;
	case XEVB_O_DURATION:
		return parse_duration(arg, &c->duration_ns) ? 1 : -1;
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
	xevb_err("--%s: '%s' is not a number in %llu..%llu", opt, s ? s : "", (unsigned long long)min,
		 (unsigned long long)max);
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

bool xevb_mac_parse(const char *s, uint8_t mac[6])
{
	if (strlen(s) != 17)
		return false;
	for (int i = 0; i < 6; i++) {
		const char *p = s + 3 * i;
		char hex[3] = { p[0], p[1], 0 };

		if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) || (i < 5 && p[2] != ':'))
			return false;
		mac[i] = (uint8_t)strtoul(hex, NULL, 16);
	}
	/* The group bit: no frame comes from a multicast or broadcast address. */
	return !(mac[0] & 1) && (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]);
}

const char *xevb_mac_str(const uint8_t mac[6], char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	return buf;
}

bool xevb_parse_si(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		goto bad;
	switch (*end) {
	case 0:
		break;
	case 'k':
	case 'K':
		v *= 1e3;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1e6;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1e9;
		end++;
		break;
	default:
		goto bad;
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

/* Options as data (cli.h, struct xevb_cfg_opt). */

static void *cfg_field(void *cfg, size_t off)
{
	return (char *)cfg + off;
}

static bool cfg_range(const struct xevb_cfg_opt *o, const char *arg, const char *label, uint64_t *v)
{
	/* (double)UINT64_MAX is 2^64, which no uint64_t holds. */
	uint64_t max = o->max >= 0x1p64 ? UINT64_MAX : (uint64_t)o->max;

	return xevb_parse_u64(label, arg, (uint64_t)o->min, max, v);
}

static bool cfg_int(const struct xevb_cfg_opt *o, const char *arg, const char *label, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (end == arg || *end || errno || v < (long)o->min || v > (long)o->max) {
		xevb_err("--%s: '%s' is not a whole number in %ld..%ld", label, arg, (long)o->min, (long)o->max);
		return false;
	}
	*out = (int)v;
	return true;
}

static bool cfg_double(const struct xevb_cfg_opt *o, const char *arg, const char *label, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno || !(v >= o->min && v <= o->max)) {
		xevb_err("--%s: '%s' is not a number in %g..%g", label, arg, o->min, o->max);
		return false;
	}
	*out = v;
	return true;
}

static bool cfg_bool(const char *arg, const char *label, bool *out)
{
	if (!arg || !strcmp(arg, "1") || !strcmp(arg, "yes") || !strcmp(arg, "on") || !strcmp(arg, "true")) {
		*out = true;
		return true;
	}
	if (!strcmp(arg, "0") || !strcmp(arg, "no") || !strcmp(arg, "off") || !strcmp(arg, "false")) {
		*out = false;
		return true;
	}
	xevb_err("--%s: '%s' is not 1 or 0 (yes/no, on/off)", label, arg);
	return false;
}

/* ENUM: the index of arg among the row's '|'-separated words. */
static bool cfg_enum(const struct xevb_cfg_opt *o, const char *arg, const char *label, uint32_t *out)
{
	size_t n = strlen(arg);
	uint32_t i = 0;

	for (const char *w = o->words; *w; i++) {
		size_t len = strcspn(w, "|");

		if (len == n && !strncmp(w, arg, n)) {
			*out = i;
			return true;
		}
		w += len + (w[len] == '|');
	}
	xevb_err("--%s: '%s' is not one of %s", label, arg, o->words);
	return false;
}

static bool cfg_ids(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	uint16_t *ids = cfg_field(cfg, o->off);
	int n = xevb_parse_id_list(label, arg, ids, (int)o->max_n);

	if (n < 0)
		return false;
	if (ids[n - 1] > (uint32_t)o->max) {
		xevb_err("--%s: ids go up to %u, not %u", label, (unsigned)o->max, ids[n - 1]);
		return false;
	}
	*(uint32_t *)cfg_field(cfg, o->n_off) = (uint32_t)n;
	return true;
}

static bool cfg_strs(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	const char **list = cfg_field(cfg, o->off);
	uint32_t *n = cfg_field(cfg, o->n_off);

	if (*n == o->max_n) {
		xevb_err("at most %u --%s", o->max_n, label);
		return false;
	}
	list[(*n)++] = arg;
	return true;
}

static bool cfg_u64(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	uint64_t v;

	if (!cfg_range(o, arg, label, &v))
		return false;
	if ((o->flags & XEVB_F_POW2) && (v & (v - 1))) {
		xevb_err("--%s: %s is not a power of 2 (such as %llu)", label, arg,
			 (unsigned long long)(o->def ? strtoull(o->def, NULL, 0) : 1024));
		return false;
	}
	switch (o->type) {
	case XEVB_T_U16:
		*(uint16_t *)cfg_field(cfg, o->off) = (uint16_t)v;
		break;
	case XEVB_T_U32:
		*(uint32_t *)cfg_field(cfg, o->off) = (uint32_t)v;
		break;
	default:
		*(uint64_t *)cfg_field(cfg, o->off) = v * (o->scale ? o->scale : 1);
		break;
	}
	return true;
}

static bool cfg_store(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	switch (o->type) {
	case XEVB_T_FLAG:
		return cfg_bool(arg, label, cfg_field(cfg, o->off));
	case XEVB_T_U16:
	case XEVB_T_U32:
	case XEVB_T_U64:
		return cfg_u64(o, cfg, arg, label);
	case XEVB_T_INT:
		return cfg_int(o, arg, label, cfg_field(cfg, o->off));
	case XEVB_T_DOUBLE:
		return cfg_double(o, arg, label, cfg_field(cfg, o->off));
	case XEVB_T_STR:
		*(const char **)cfg_field(cfg, o->off) = arg;
		return true;
	case XEVB_T_ENUM:
		return cfg_enum(o, arg, label, cfg_field(cfg, o->off));
	case XEVB_T_IDS:
		return cfg_ids(o, cfg, arg, label);
	case XEVB_T_STRS:
		return cfg_strs(o, cfg, arg, label);
	case XEVB_T_FUNC:
		return o->parse(o, cfg, arg, label);
	}
	return false;
}

bool xevb_cfg_set(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	if (!cfg_store(o, cfg, arg, label))
		return false;
	if (o->flags & XEVB_F_GIVEN)
		*(bool *)cfg_field(cfg, o->n_off) = true;
	return true;
}

bool xevb_cfg_common(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	(void)label;
	return xevb_common_opt(o->key, arg, cfg_field(cfg, o->off)) > 0;
}

bool xevb_cfg_defaults(const struct xevb_cfg_cmd *c, void *cfg)
{
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++) {
		if (!o->def)
			continue;
		/* A default is not "given": GIVEN tells the user's choice from it. */
		if (!cfg_store(o, cfg, o->def, o->name)) {
			xevb_err("--%s: its default '%s' is not valid (a bug)", o->name, o->def);
			return false;
		}
	}
	return true;
}

const struct xevb_cfg_opt *xevb_cfg_find(const struct xevb_cfg_cmd *c, const char *name)
{
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

static const struct xevb_cfg_opt *cfg_find_tune(const struct xevb_cfg_cmd *c, const char *key, size_t len)
{
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		if ((o->flags & XEVB_F_TUNE) && strlen(o->name) == len && !strncmp(o->name, key, len))
			return o;
	return NULL;
}

bool xevb_cfg_tune(const struct xevb_cfg_cmd *c, void *cfg, const char *kv)
{
	const char *eq = strchr(kv, '=');
	const struct xevb_cfg_opt *o;
	char label[80];

	if (!eq || eq == kv) {
		xevb_err("--tune: '%s' is not KEY=VALUE (xevb %s --help-tune lists the keys)", kv, c->help->name);
		return false;
	}
	o = cfg_find_tune(c, kv, (size_t)(eq - kv));
	if (!o) {
		xevb_err("--tune: no key '%.*s' (xevb %s --help-tune lists the keys)", (int)(eq - kv), kv,
			 c->help->name);
		return false;
	}
	snprintf(label, sizeof(label), "tune %s", o->name);
	return xevb_cfg_set(o, cfg, eq + 1, label);
}

static bool cfg_has_tune(const struct xevb_cfg_cmd *c)
{
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		if (o->flags & XEVB_F_TUNE)
			return true;
	return false;
}

/* The keys getopt returns beyond a row's short option: 1000 + its index; --tune and --help-tune after. */
#define CFG_KEY_BASE      1000
#define CFG_KEY_TUNE      999
#define CFG_KEY_HELP_TUNE 998

static const char cfg_tune_help[] = "set a tuning key (repeatable; --help-tune lists them)";
static const char cfg_help_tune_help[] = "list the tuning keys, their defaults and ranges";

static int cfg_getopt_table(const struct xevb_cfg_cmd *c, struct option *lo, size_t max_lo, char *so)
{
	size_t n = 0;
	char *s = so;

	*s++ = '+'; /* stop at the first non-option */
	*s++ = ':'; /* report a missing argument as ':' */
	for (const struct xevb_cfg_opt *o = c->opts; o->name && n + 4 < max_lo; o++) {
		bool has_arg = o->arg != NULL;

		if (o->flags & XEVB_F_TUNE)
			continue;
		lo[n++] = (struct option){ o->name, has_arg ? required_argument : no_argument, NULL,
					   CFG_KEY_BASE + (int)(o - c->opts) };
		if (o->key > 0 && o->key < 256) {
			*s++ = (char)o->key;
			if (has_arg)
				*s++ = ':';
		}
	}
	if (cfg_has_tune(c)) {
		lo[n++] = (struct option){ "tune", required_argument, NULL, CFG_KEY_TUNE };
		lo[n++] = (struct option){ "help-tune", no_argument, NULL, CFG_KEY_HELP_TUNE };
	}
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n] = (struct option){ 0 };
	*s++ = 'h';
	*s = 0;
	return (int)n;
}

/* A short option's row. */
static const struct xevb_cfg_opt *cfg_short(const struct xevb_cfg_cmd *c, int key)
{
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		if (o->key == key && !(o->flags & XEVB_F_TUNE))
			return o;
	return NULL;
}

/* XEVB_F_NEXT_NUM: the word after the option, taken when it is a number (getopt does not permute: '+'). */
static const char *cfg_next_num(int argc, char **argv)
{
	if (optind < argc && isdigit((unsigned char)argv[optind][0]))
		return argv[optind++];
	return NULL;
}

/* One getopt result: -1 to go on, else the exit status. */
static int cfg_one(const struct xevb_cfg_cmd *c, void *cfg, int k, const char *arg, int argc, char **argv)
{
	const struct xevb_cfg_opt *o = k >= CFG_KEY_BASE ? &c->opts[k - CFG_KEY_BASE] : cfg_short(c, k);

	if (k == 'h') {
		xevb_cfg_usage(stdout, c);
		return 0;
	}
	if (k == CFG_KEY_HELP_TUNE) {
		xevb_cfg_usage_tune(stdout, c);
		return 0;
	}
	if (k == CFG_KEY_TUNE)
		return xevb_cfg_tune(c, cfg, arg) ? -1 : 2;
	if (k == '?' || k == ':' || !o) {
		if (k == ':')
			fprintf(stderr, "xevb %s: option '%s' needs an argument\n", c->help->name,
				argv[optind - 1]);
		else
			fprintf(stderr, "xevb %s: unknown option '%s'\n", c->help->name, argv[optind - 1]);
		fprintf(stderr, "Try 'xevb %s --help'.\n", c->help->name);
		return 2;
	}
	if (o->flags & XEVB_F_NEXT_NUM)
		arg = cfg_next_num(argc, argv);
	else if (!o->arg)
		arg = NULL;
	return xevb_cfg_set(o, cfg, arg, o->name) ? -1 : 2;
}

/* A required row that was not given: its string, list or GIVEN bool is still empty. */
static bool cfg_missing(const struct xevb_cfg_opt *o, void *cfg)
{
	if (o->type == XEVB_T_STR)
		return !*(const char **)cfg_field(cfg, o->off);
	if (o->type == XEVB_T_IDS || o->type == XEVB_T_STRS)
		return !*(uint32_t *)cfg_field(cfg, o->n_off);
	return (o->flags & XEVB_F_GIVEN) && !*(bool *)cfg_field(cfg, o->n_off);
}

/* -1, or 2 after naming the first required row not given. */
static int cfg_required(const struct xevb_cfg_cmd *c, void *cfg)
{
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		if ((o->flags & XEVB_F_REQUIRED) && cfg_missing(o, cfg)) {
			xevb_err("--%s is required (try --help)", o->name);
			return 2;
		}
	return -1;
}

int xevb_cfg_parse(const struct xevb_cfg_cmd *c, int argc, char **argv, void *cfg)
{
	struct option lo[160];
	char so[256];
	int k, rc = -1;

	if (!xevb_cfg_defaults(c, cfg))
		return 2;
	cfg_getopt_table(c, lo, sizeof(lo) / sizeof(lo[0]), so);
	optind = 0; /* getopt starts afresh, even after a parse that stopped at an error */
	while (rc < 0 && (k = getopt_long(argc, argv, so, lo, NULL)) != -1)
		rc = cfg_one(c, cfg, k, optarg, argc, argv);
	if (rc < 0 && optind < argc) {
		xevb_err("unexpected argument '%s' (try --help)", argv[optind]);
		rc = 2;
	}
	return rc < 0 ? cfg_required(c, cfg) : rc;
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
	if (cfg_has_tune(c)) {
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
	if (cfg_has_tune(c)) {
		man_option(f, 0, "tune", "KEY=VALUE", cfg_tune_help);
		man_option(f, 0, "help-tune", NULL, cfg_help_tune_help);
	}
	man_option(f, 'h', "help", NULL, "print the options and exit");
	if (cfg_has_tune(c)) {
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

void xevb_cfg_usage(FILE *f, const struct xevb_cfg_cmd *c)
{
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

unsigned xevb_cfg_n_options(const struct xevb_cfg_cmd *c)
{
	unsigned n = 1; /* --help */

	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		n += !(o->flags & XEVB_F_TUNE);
	return n + (cfg_has_tune(c) ? 2 : 0);
}

volatile sig_atomic_t xevb_stop;

static void stop_on_signal(int sig)
{
	(void)sig;
	if (xevb_stop < 2)
		xevb_stop++;
}

void xevb_stop_on_signals(void)
{
	signal(SIGINT, stop_on_signal);
	signal(SIGTERM, stop_on_signal);
}

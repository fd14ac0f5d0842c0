// SPDX-License-Identifier: GPL-2.0-only
/* Options as data: a command's table fills its config struct, checked as it is parsed (cli.h). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"

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
	int n = xevb_parse_id_list_max(label, arg, ids, (int)o->max_n, (unsigned)o->max);

	if (n < 0)
		return false;
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

bool xevb_cfg_has_tune(const struct xevb_cfg_cmd *c)
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
	if (xevb_cfg_has_tune(c)) {
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

unsigned xevb_cfg_n_options(const struct xevb_cfg_cmd *c)
{
	unsigned n = 1; /* --help */

	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		n += !(o->flags & XEVB_F_TUNE);
	return n + (xevb_cfg_has_tune(c) ? 2 : 0);
}

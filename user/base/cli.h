/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Table-driven options for the xevb subcommands: one table gives getopt
 * its options and --help its text, so the two never drift apart.
 */
#ifndef XEVB_CLI_H
#define XEVB_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/signals.h"

struct xevb_opt {
	const char *name; /* long option, without "--" */
	int key;          /* returned by xevb_opt_next; a char for -x, or >= 256 */
	const char *arg;  /* NULL: a flag; otherwise the argument's placeholder */
	const char *help;
};

struct xevb_cmd_help {
	const char *name;     /* "build" */
	const char *summary;  /* one line */
	const char *usage;    /* "--dev IFACE [options]" */
	const char *examples; /* lines, each an example command */
};

/*
 * The flags the run commands share (build, dfm, sink, source): one entry
 * each, so the name, argument, help and parsing are the same everywhere.
 * Put the XEVB_OPT_* entries a command has in its table and hand every key
 * to xevb_common_opt first.
 */
enum {
	XEVB_O_VERBOSE = 'v', /* -v too, as build has always taken it */
	XEVB_O_JSON = 0x1000,
	XEVB_O_QUIET,
	XEVB_O_DURATION,
	XEVB_O_INTERVAL,
	XEVB_O_METRICS,
	XEVB_O_KEY_FILE,
};
#define XEVB_OPT_JSON \
	{ \
		"json", XEVB_O_JSON, NULL, "final summary as one JSON object on stdout" \
	}
#define XEVB_OPT_QUIET \
	{ \
		"quiet", XEVB_O_QUIET, NULL, "no statistics line while running (the summary at the end stays)" \
	}
#define XEVB_OPT_VERBOSE \
	{ \
		"verbose", XEVB_O_VERBOSE, NULL, "debug messages" \
	}
#define XEVB_OPT_DURATION \
	{ \
		"duration", XEVB_O_DURATION, "SEC", \
			"stop after SEC seconds, fractions allowed (default 0: until Ctrl-C)" \
	}
#define XEVB_OPT_INTERVAL \
	{ \
		"interval", XEVB_O_INTERVAL, "SEC", "statistics line every SEC seconds (default 1, 0 = off)" \
	}
#define XEVB_OPT_METRICS \
	{ \
		"metrics", XEVB_O_METRICS, "[ADDR:]PORT", \
			"serve Prometheus metrics over HTTP (default address 127.0.0.1)" \
	}

#define XEVB_OPT_KEY_FILE \
	{ \
		"key-file", XEVB_O_KEY_FILE, "FILE", \
			"authenticate every control message with this run's key (32 bytes; docs/control-protocol.md)" \
	}

struct xevb_common_opts {
	bool json, quiet;
	uint64_t duration_ns; /* 0: no limit */
	uint32_t interval_s;  /* statistics line period; 0 (or quiet): none */
	const char *metrics;
	/* --key-file: the command hands it to the control plane after parsing
	   (xevb_ctl_set_key_file), before it drops privileges. */
	const char *key_file;
};
/* Defaults: no JSON, not quiet, no limit, a line a second, no metrics. */
#define XEVB_COMMON_OPTS_INIT \
	{ \
		.interval_s = 1 \
	}

/*
 * 1: key is a shared flag, taken into c (--verbose sets xevb_log_level);
 * 0: not a shared flag; -1: a bad argument (the message is printed).
 */
int xevb_common_opt(int key, const char *arg, struct xevb_common_opts *c);
/* The statistics period the flags ask for: 0 when quiet. */
uint32_t xevb_common_interval(const struct xevb_common_opts *c);

/*
 * getopt_long over the table; returns the key, -1 at the end, '?' on a bad
 * option (after printing what was wrong and how to get help), 'h' for
 * --help. *arg receives the option's argument.
 */
int xevb_opt_next(int argc, char **argv, const struct xevb_opt *opts, const struct xevb_cmd_help *h,
		  const char **arg);
void xevb_opt_usage(const struct xevb_opt *opts, const struct xevb_cmd_help *h);

/*
 * Options as data: a command's options and its --tune keys in one table
 * of typed rows, each naming the field of the command's config struct it
 * fills (offsetof). One parser fills the struct from the defaults and then
 * argv, checking every value against its row; --help prints the options
 * grouped by section, --help-tune the tune keys, `xevb help-man` the page.
 * A table with tune rows gets --tune KEY=VALUE (repeatable) and
 * --help-tune by itself.
 */
enum xevb_cfg_type {
	XEVB_T_FLAG,   /* bool; an option takes no argument, a tune key 0 or 1 */
	XEVB_T_U16,    /* uint16_t in [min, max] */
	XEVB_T_U32,    /* uint32_t in [min, max] */
	XEVB_T_U64,    /* uint64_t: a number in [min, max], stored times scale (ms -> ns) */
	XEVB_T_INT,    /* int in [min, max] (negative allowed) */
	XEVB_T_DOUBLE, /* double in [min, max] */
	XEVB_T_STR,    /* const char *, the argument itself */
	XEVB_T_ENUM,   /* uint32_t: the index of the argument among words ("a|b|c") */
	XEVB_T_IDS,    /* "0-7,9": uint16_t[max_n] at off, ids up to max; the uint32_t count at n_off */
	XEVB_T_STRS,   /* repeatable: const char *[max_n] at off, the uint32_t count at n_off */
	XEVB_T_FUNC,   /* parse() does it */
};

enum {
	/* The command does not run without it: a STR, IDS or STRS row, or one with GIVEN. */
	XEVB_F_REQUIRED = 16,
	XEVB_F_TUNE = 1,  /* a --tune KEY, not an option of its own */
	XEVB_F_POW2 = 2,  /* U32: a power of 2 */
	XEVB_F_GIVEN = 4, /* the bool at n_off is set when the row is given (not by its default) */
	/*
	 * An option without arg whose argument is optional: the next word when
	 * it starts with a digit ("--udp 23900"), else NULL ("--udp").
	 */
	XEVB_F_NEXT_NUM = 8,
};

struct xevb_cfg_opt;
/* XEVB_T_FUNC: take arg into cfg; false after a message naming label (the option as written). */
typedef bool (*xevb_cfg_parse_fn)(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label);

struct xevb_cfg_opt {
	const char *name; /* long option without "--", or the tune key */
	int key;          /* short option (a char), or 0 */
	enum xevb_cfg_type type;
	const char *arg;     /* the argument's placeholder; NULL for a flag */
	size_t off, n_off;   /* the field in the config; IDS/STRS count or GIVEN bool */
	uint32_t max_n;      /* IDS/STRS: room in the array */
	double min, max;     /* numbers: the range (max >= 2^64: UINT64_MAX); IDS: the highest id */
	uint64_t scale;      /* U64: stored = given x scale (0: 1) */
	const char *words;   /* ENUM: the values, '|'-separated */
	const char *def;     /* the default, as one would write it; NULL: none, or the help says */
	const char *section; /* --help's heading (tune keys: --help-tune's) */
	const char *help;
	unsigned flags;          /* XEVB_F_* */
	xevb_cfg_parse_fn parse; /* XEVB_T_FUNC; also the common flags' (key = XEVB_O_*) */
};

struct xevb_cfg_cmd {
	const struct xevb_cmd_help *help;
	const struct xevb_cfg_opt *opts; /* ends with { 0 } */
	const char *const *sections;     /* --help's headings in order, NULL-terminated */
};

/*
 * The shared flags (XEVB_OPT_* above) as rows: cfg_field is the config
 * struct's struct xevb_common_opts member.
 */
bool xevb_cfg_common(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label);
#define XEVB_CFG_COMMON(nm, k, a, sec, h, type_, field) \
	{ \
		.name = nm, .key = k, .type = XEVB_T_FUNC, .arg = a, .off = offsetof(type_, field), \
		.section = sec, .help = h, .parse = xevb_cfg_common \
	}
#define XEVB_CFG_JSON(sec, type_, f) \
	XEVB_CFG_COMMON("json", XEVB_O_JSON, NULL, sec, "final summary as one JSON object on stdout", type_, f)
#define XEVB_CFG_QUIET(sec, type_, f) \
	XEVB_CFG_COMMON("quiet", XEVB_O_QUIET, NULL, sec, \
			"no statistics line while running (the summary at the end stays)", type_, f)
#define XEVB_CFG_VERBOSE(sec, type_, f) \
	XEVB_CFG_COMMON("verbose", XEVB_O_VERBOSE, NULL, sec, "debug messages", type_, f)
#define XEVB_CFG_DURATION(sec, type_, f) \
	XEVB_CFG_COMMON("duration", XEVB_O_DURATION, "SEC", sec, \
			"stop after SEC seconds, fractions allowed (default 0: until Ctrl-C)", type_, f)
#define XEVB_CFG_INTERVAL(sec, type_, f) \
	XEVB_CFG_COMMON("interval", XEVB_O_INTERVAL, "SEC", sec, \
			"statistics line every SEC seconds (default 1, 0 = off)", type_, f)
#define XEVB_CFG_METRICS(sec, type_, f) \
	XEVB_CFG_COMMON("metrics", XEVB_O_METRICS, "[ADDR:]PORT", sec, \
			"serve Prometheus metrics over HTTP (default address 127.0.0.1)", type_, f)
#define XEVB_CFG_KEY_FILE(sec, type_, f) \
	XEVB_CFG_COMMON( \
		"key-file", XEVB_O_KEY_FILE, "FILE", sec, \
		"authenticate every control message with this run's key (32 bytes; docs/control-protocol.md)", \
		type_, f)

/*
 * The defaults into cfg, then argv (getopt_long over the options; --tune
 * KEY=VALUE through the tune rows). Returns -1 when the command should run
 * (no argument left over, every XEVB_F_REQUIRED row given), else its exit
 * status: 0 after --help or --help-tune, 2 after a message naming what was
 * wrong.
 */
int xevb_cfg_parse(const struct xevb_cfg_cmd *c, int argc, char **argv, void *cfg);
/* Every row's default into cfg: false (and a message) if one is not valid, a bug. */
bool xevb_cfg_defaults(const struct xevb_cfg_cmd *c, void *cfg);
/* One row's value, checked; label names it in a message ("--window", "--tune rx-ring"). */
bool xevb_cfg_set(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label);
/* "KEY=VALUE" by the tune rows. */
bool xevb_cfg_tune(const struct xevb_cfg_cmd *c, void *cfg, const char *kv);
/* The row of an option or tune key by name, or NULL. */
const struct xevb_cfg_opt *xevb_cfg_find(const struct xevb_cfg_cmd *c, const char *name);
/* --help (or, under help-man, the page) and --help-tune. */
void xevb_cfg_usage(FILE *f, const struct xevb_cfg_cmd *c);
void xevb_cfg_usage_tune(FILE *f, const struct xevb_cfg_cmd *c);
/* The options --help lists, --help itself included. */
unsigned xevb_cfg_n_options(const struct xevb_cfg_cmd *c);

/*
 * Man pages from the same tables: `xevb help-man CMD` sets
 * xevb_help_format to XEVB_HELP_MAN and runs `CMD --help`, so
 * xevb_opt_usage prints the page (roff) instead of the text, and counts
 * it in xevb_help_pages. XEVB_VERSION goes in the pages' footer.
 */
#define XEVB_VERSION "0.1"
/*
 * XEVB_HELP_COMPLETION: `CMD --help` prints the body of the command's
 * bash completion (`xevb help-completion`): a case on the word before
 * the cursor, enum rows their values, every option in the default arm.
 */
enum xevb_help_format { XEVB_HELP_TEXT, XEVB_HELP_MAN, XEVB_HELP_COMPLETION };
extern enum xevb_help_format xevb_help_format;
extern unsigned xevb_help_pages;
void xevb_opt_man(FILE *f, const struct xevb_opt *opts, const struct xevb_cmd_help *h);
/* Text for roff: backslashes, minus signs and control characters at a line's start escaped. */
void xevb_roff_puts(FILE *f, const char *s);

/* Whether the command has --tune keys (it then has --tune and --help-tune). */
bool xevb_cfg_has_tune(const struct xevb_cfg_cmd *c);

#endif

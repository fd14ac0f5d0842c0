/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Table-driven options for the xevb subcommands: one table gives getopt
 * its options and --help its text, so the two never drift apart.
 */
#ifndef XEVB_CLI_H
#define XEVB_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct xevb_opt {
	const char *name;     /* long option, without "--" */
	int key;              /* returned by xevb_opt_next; a char for -x, or >= 256 */
	const char *arg;      /* NULL: a flag; otherwise the argument's placeholder */
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
	XEVB_O_VERBOSE = 'v',   /* -v too, as build has always taken it */
	XEVB_O_JSON = 0x1000,
	XEVB_O_QUIET,
	XEVB_O_DURATION,
	XEVB_O_INTERVAL,
	XEVB_O_METRICS,
	XEVB_O_KEY_FILE,
};
#define XEVB_OPT_JSON     { "json", XEVB_O_JSON, NULL, "final summary as one JSON object on stdout" }
#define XEVB_OPT_QUIET    { "quiet", XEVB_O_QUIET, NULL, \
			    "no statistics line while running (the summary at the end stays)" }
#define XEVB_OPT_VERBOSE  { "verbose", XEVB_O_VERBOSE, NULL, "debug messages" }
#define XEVB_OPT_DURATION { "duration", XEVB_O_DURATION, "SEC", \
			    "stop after SEC seconds, fractions allowed (default 0: until Ctrl-C)" }
#define XEVB_OPT_INTERVAL { "interval", XEVB_O_INTERVAL, "SEC", "statistics line every SEC seconds (default 1, 0 = off)" }
#define XEVB_OPT_METRICS  { "metrics", XEVB_O_METRICS, "[ADDR:]PORT", \
			    "serve Prometheus metrics over HTTP (default address 127.0.0.1)" }

#define XEVB_OPT_KEY_FILE { "key-file", XEVB_O_KEY_FILE, "FILE", \
			    "authenticate every control message with this run's key (32 bytes; docs/control-protocol.md)" }

struct xevb_common_opts {
	bool json, quiet;
	uint64_t duration_ns;   /* 0: no limit */
	uint32_t interval_s;    /* statistics line period; 0 (or quiet): none */
	const char *metrics;
};
/* Defaults: no JSON, not quiet, no limit, a line a second, no metrics. */
#define XEVB_COMMON_OPTS_INIT { .interval_s = 1 }

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
int xevb_opt_next(int argc, char **argv, const struct xevb_opt *opts,
		  const struct xevb_cmd_help *h, const char **arg);
void xevb_opt_usage(const struct xevb_opt *opts, const struct xevb_cmd_help *h);

/*
 * Man pages from the same tables: `xevb help-man CMD` sets
 * xevb_help_format to XEVB_HELP_MAN and runs `CMD --help`, so
 * xevb_opt_usage prints the page (roff) instead of the text, and counts
 * it in xevb_help_pages. XEVB_VERSION goes in the pages' footer.
 */
#define XEVB_VERSION "0.1"
enum xevb_help_format { XEVB_HELP_TEXT, XEVB_HELP_MAN };
extern enum xevb_help_format xevb_help_format;
extern unsigned xevb_help_pages;
void xevb_opt_man(FILE *f, const struct xevb_opt *opts, const struct xevb_cmd_help *h);
/* Text for roff: backslashes, minus signs and control characters at a line's start escaped. */
void xevb_roff_puts(FILE *f, const char *s);

/* Strict number parsing: false (and a message naming the option) on junk. */
bool xevb_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out);
bool xevb_parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* "0-125", "3,7,9-12": fills ids (ascending, unique); returns the count or -1. */
int xevb_parse_id_list(const char *opt, const char *s, uint16_t *ids, int max);
/* "1.5G", "200m", "64k": bits or bytes with SI suffixes. */
bool xevb_parse_si(const char *opt, const char *s, double *out);

/* Logging to stderr: "xevb build: error: ..." */
enum xevb_log_level { XEVB_LOG_ERR, XEVB_LOG_WARN, XEVB_LOG_INFO, XEVB_LOG_DEBUG };
extern int xevb_log_level;
extern const char *xevb_prog;   /* "xevb build" */
void xevb_log(enum xevb_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define xevb_err(...)  xevb_log(XEVB_LOG_ERR, __VA_ARGS__)
#define xevb_warn(...) xevb_log(XEVB_LOG_WARN, __VA_ARGS__)
#define xevb_info(...) xevb_log(XEVB_LOG_INFO, __VA_ARGS__)
#define xevb_dbg(...)  xevb_log(XEVB_LOG_DEBUG, __VA_ARGS__)

/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
uint64_t xevb_now_ns(void);
uint64_t xevb_realtime_ns(void);

#endif

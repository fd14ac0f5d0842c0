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

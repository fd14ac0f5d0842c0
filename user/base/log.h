/* SPDX-License-Identifier: GPL-2.0-only */
/* Messages to stderr, prefixed with the program ("xevb build: error: ..."). */
#ifndef XEVB_LOG_H
#define XEVB_LOG_H

/* Logging to stderr: "xevb build: error: ..." */
enum xevb_log_level { XEVB_LOG_ERR, XEVB_LOG_WARN, XEVB_LOG_INFO, XEVB_LOG_DEBUG };
extern int xevb_log_level;
extern const char *xevb_prog; /* "xevb build" */
void xevb_log(enum xevb_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define xevb_err(...)  xevb_log(XEVB_LOG_ERR, __VA_ARGS__)
#define xevb_warn(...) xevb_log(XEVB_LOG_WARN, __VA_ARGS__)
#define xevb_info(...) xevb_log(XEVB_LOG_INFO, __VA_ARGS__)
#define xevb_dbg(...)  xevb_log(XEVB_LOG_DEBUG, __VA_ARGS__)

#endif

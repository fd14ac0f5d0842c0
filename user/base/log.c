// SPDX-License-Identifier: GPL-2.0-only
/* Messages to stderr (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include "base/log.h"

int xevb_log_level = XEVB_LOG_INFO;
const char *xevb_prog = "xevb";

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

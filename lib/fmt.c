// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xl_fmt alone in its object, which exports nothing: the xevb tools link
 * it with lib/shared/'s pieces (trusted.c) without taking in util.c's
 * public symbols.
 */
#include <stdio.h>
#include "internal.h"

void xl_fmt(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

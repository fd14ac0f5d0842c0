// SPDX-License-Identifier: LGPL-2.1-or-later
/* Small pieces every part of libxevb uses: messages, options, clocks, addresses. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "internal.h"

XEVB_API const char *xevb_lib_version(void)
{
	return XL_STR(XEVB_LIB_MAJOR) "." XL_STR(XEVB_LIB_MINOR) "." XL_STR(XEVB_LIB_PATCH);
}

int xl_opts_copy(void *ours, size_t ours_sz, const void *theirs, char *err, size_t errlen)
{
	size_t sz;

	memset(ours, 0, ours_sz);
	if (!theirs)
		return 0;
	memcpy(&sz, theirs, sizeof(sz));
	if (sz < sizeof(size_t)) {
		xl_fmt(err, errlen, "options: sz is %zu: declare them with XEVB_OPTS() (it sets sz)", sz);
		return -EINVAL;
	}
	/* A newer caller's fields that we do not know must be zero (not asked for). */
	for (size_t i = ours_sz; i < sz; i++)
		if (((const uint8_t *)theirs)[i]) {
			xl_fmt(err, errlen,
			       "options: byte %zu is set, a field this libxevb %s does not know (its struct has "
			       "%zu bytes): use a newer libxevb, or leave the field zero",
			       i, xevb_lib_version(), ours_sz);
			return -EINVAL;
		}
	memcpy(ours, theirs, sz < ours_sz ? sz : ours_sz);
	memcpy(ours, &ours_sz, sizeof(ours_sz));
	return 0;
}

int xl_stats_copy(void *theirs, const void *ours, size_t ours_sz)
{
	size_t sz;

	memcpy(&sz, theirs, sizeof(sz));
	if (sz < sizeof(size_t))
		return -EINVAL;
	/* Fields we do not have read as zero. */
	if (sz > ours_sz)
		memset((uint8_t *)theirs + ours_sz, 0, sz - ours_sz);
	memcpy((uint8_t *)theirs + sizeof(size_t), (const uint8_t *)ours + sizeof(size_t),
	       (sz < ours_sz ? sz : ours_sz) - sizeof(size_t));
	return 0;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t xl_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t xl_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

int xl_parse_addr(const char *s, uint32_t *addr, uint16_t *port, bool any_port)
{
	char host[64];
	const char *colon = s ? strrchr(s, ':') : NULL;
	unsigned long p;
	char *end;
	struct in_addr a;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host) || !colon[1])
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (*end || errno || p > 65535 || (p == 0 && !any_port))
		return -1;
	if (inet_pton(AF_INET, host, &a) != 1)
		return -1;
	*addr = a.s_addr;
	*port = (uint16_t)p;
	return 0;
}

void xl_log(const struct xl_log *l, enum xevb_lib_log_level lv, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!l->fn && lv > XEVB_LIB_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->fn)
		l->fn(l->ctx, lv, msg);
	else
		fprintf(stderr, "libxevb: %s%s\n", lv == XEVB_LIB_LOG_ERROR ? "error: " : "", msg);
}

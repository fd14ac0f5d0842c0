// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>
#include "ops/http_req.h"

static bool head_ended(const char *buf, size_t len)
{
	return memmem(buf, len, "\r\n\r\n", 4) || memmem(buf, len, "\n\n", 2);
}

static bool starts(const char *buf, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(buf, prefix, n);
}

enum xevb_http_req xevb_http_req_match(const char *buf, size_t len, bool at_end)
{
	if (!at_end && len < XEVB_HTTP_REQ_MAX && !head_ended(buf, len))
		return XEVB_HTTP_INCOMPLETE;
	if (starts(buf, len, "GET /metrics ") || starts(buf, len, "GET /metrics?") || starts(buf, len, "GET / "))
		return XEVB_HTTP_METRICS;
	if (starts(buf, len, "GET "))
		return XEVB_HTTP_NOT_FOUND;
	return XEVB_HTTP_BAD_METHOD;
}

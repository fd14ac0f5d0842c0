// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metrics endpoint's request matcher on arbitrary bytes: no crash, no
 * read past the input (an exact-size copy for ASan), a valid answer, and
 * one that does not change once given: a head that ended decides the same
 * whatever follows it, and at the end of the input nothing is left
 * undecided.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ops/http_req.h"

static void check(const char *buf, size_t len, enum xevb_http_req full)
{
	enum xevb_http_req r = xevb_http_req_match(buf, len, false);

	if (r > XEVB_HTTP_BAD_METHOD)
		abort();
	if (r != XEVB_HTTP_INCOMPLETE && r != full)
		abort();
	if (r == XEVB_HTTP_INCOMPLETE && len >= XEVB_HTTP_REQ_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy;
	enum xevb_http_req full;

	if (size > XEVB_HTTP_REQ_MAX)
		size = XEVB_HTTP_REQ_MAX; /* the server never holds more */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	full = xevb_http_req_match(copy, size, true);
	if (full == XEVB_HTTP_INCOMPLETE || full > XEVB_HTTP_BAD_METHOD)
		abort();
	if (full == XEVB_HTTP_METRICS && (size < 6 || memcmp(copy, "GET /", 5)))
		abort();
	check(copy, size, full);
	check(copy, size / 2, full);
	if (size)
		check(copy, size - 1, full);
	free(copy);
	return 0;
}

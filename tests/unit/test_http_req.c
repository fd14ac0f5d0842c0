// SPDX-License-Identifier: GPL-2.0-only
/* The metrics endpoint's request matcher (user/ops/http_req.c). */
#include <string.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "ops/http_req.h"

static enum xevb_http_req match(const char *s, bool at_end)
{
	return xevb_http_req_match(s, strlen(s), at_end);
}

/* A request head (a C string), whether the client has closed its side, and the verdict. */
struct req_case {
	const char *head;
	bool at_end;
	enum xevb_http_req want;
};

static void expect_verdicts(const struct req_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(eq(int, match(c[i].head, c[i].at_end), c[i].want), "case %zu: \"%s\"", i, c[i].head);
}

#define EXPECT_VERDICTS(cases) expect_verdicts(cases, sizeof(cases) / sizeof((cases)[0]))

static const struct req_case served[] = {
	{ "GET /metrics HTTP/1.1\r\nHost: a\r\n", false, XEVB_HTTP_INCOMPLETE },
	{ "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", false, XEVB_HTTP_METRICS },
	{ "GET /metrics?name[]=x HTTP/1.1\n\n", false, XEVB_HTTP_METRICS },
	{ "GET / HTTP/1.0\n\n", false, XEVB_HTTP_METRICS },
	/* The client closed its side: what is there decides. */
	{ "GET /metrics HTTP/1.1\r\n", true, XEVB_HTTP_METRICS },
};

static const struct req_case refused[] = {
	{ "GET /metricsx HTTP/1.1\r\n\r\n", false, XEVB_HTTP_NOT_FOUND },
	{ "GET /metrics\r\n\r\n", false, XEVB_HTTP_NOT_FOUND },
	{ "HEAD /metrics HTTP/1.1\r\n\r\n", false, XEVB_HTTP_BAD_METHOD },
	{ "get /metrics HTTP/1.1\r\n\r\n", false, XEVB_HTTP_BAD_METHOD },
	{ "", true, XEVB_HTTP_BAD_METHOD },
	{ "GET /met", true, XEVB_HTTP_NOT_FOUND },
};

Test(http_req, serves_metrics_and_root_once_the_head_ends)
{
	EXPECT_VERDICTS(served);
}

Test(http_req, refuses_everything_else)
{
	EXPECT_VERDICTS(refused);
}

Test(http_req, nul_bytes_and_a_full_buffer)
{
	static char buf[XEVB_HTTP_REQ_MAX];
	static const char req[] = "GET /metrics HTTP/1.1\r\nX: a\0b\r\n\r\n";

	/* A NUL is a byte like any other: the blank line after it still ends the head. */
	cr_assert(eq(int, xevb_http_req_match(req, sizeof(req) - 1, false), XEVB_HTTP_METRICS));
	cr_assert(eq(int, xevb_http_req_match(req, sizeof(req) - 3, false), XEVB_HTTP_INCOMPLETE));
	/* A head that never ends is decided when the buffer is full. */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "GET /metrics ", 13);
	cr_assert(eq(int, xevb_http_req_match(buf, sizeof(buf) - 1, false), XEVB_HTTP_INCOMPLETE));
	cr_assert(eq(int, xevb_http_req_match(buf, sizeof(buf), false), XEVB_HTTP_METRICS));
}

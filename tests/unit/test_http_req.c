// SPDX-License-Identifier: GPL-2.0-only
/* The metrics endpoint's request matcher (user/lib/http_req.c). */
#include <string.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/http_req.h>

static enum xevb_http_req match(const char *s, bool at_end)
{
	return xevb_http_req_match(s, strlen(s), at_end);
}

Test(http_req, serves_metrics_and_root_once_the_head_ends)
{
	cr_assert(eq(int, match("GET /metrics HTTP/1.1\r\nHost: a\r\n", false), XEVB_HTTP_INCOMPLETE));
	cr_assert(eq(int, match("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", false), XEVB_HTTP_METRICS));
	cr_assert(eq(int, match("GET /metrics?name[]=x HTTP/1.1\n\n", false), XEVB_HTTP_METRICS));
	cr_assert(eq(int, match("GET / HTTP/1.0\n\n", false), XEVB_HTTP_METRICS));
	/* The client closed its side: what is there decides. */
	cr_assert(eq(int, match("GET /metrics HTTP/1.1\r\n", true), XEVB_HTTP_METRICS));
}

Test(http_req, refuses_everything_else)
{
	cr_assert(eq(int, match("GET /metricsx HTTP/1.1\r\n\r\n", false), XEVB_HTTP_NOT_FOUND));
	cr_assert(eq(int, match("GET /metrics\r\n\r\n", false), XEVB_HTTP_NOT_FOUND));
	cr_assert(eq(int, match("HEAD /metrics HTTP/1.1\r\n\r\n", false), XEVB_HTTP_BAD_METHOD));
	cr_assert(eq(int, match("get /metrics HTTP/1.1\r\n\r\n", false), XEVB_HTTP_BAD_METHOD));
	cr_assert(eq(int, match("", true), XEVB_HTTP_BAD_METHOD));
	cr_assert(eq(int, match("GET /met", true), XEVB_HTTP_NOT_FOUND));
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

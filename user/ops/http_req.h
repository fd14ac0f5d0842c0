/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The metrics endpoint's HTTP request matcher (user/ops/http_req.c). Every
 * byte of a request is hostile: the head's end is found and the request
 * line matched against what we serve, nothing is parsed further.
 */
#ifndef XEVB_HTTP_REQ_H
#define XEVB_HTTP_REQ_H

#include <stdbool.h>
#include <stddef.h>

#define XEVB_HTTP_REQ_MAX 4096 /* bytes of a request head we read, at most */

enum xevb_http_req {
	XEVB_HTTP_INCOMPLETE, /* the head has not ended yet: read more */
	XEVB_HTTP_METRICS,    /* GET /metrics, /metrics?..., or / */
	XEVB_HTTP_NOT_FOUND,  /* GET of anything else */
	XEVB_HTTP_BAD_METHOD, /* not a GET */
};

/*
 * What the len bytes read so far ask for. The head ends at a blank line;
 * at_end (the client closed its side, or XEVB_HTTP_REQ_MAX bytes are in)
 * decides on what is there. Never reads past buf + len; NULs are bytes
 * like any other.
 */
enum xevb_http_req xevb_http_req_match(const char *buf, size_t len, bool at_end);

#endif

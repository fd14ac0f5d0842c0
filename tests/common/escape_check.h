/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Strict readers of what the escapers write, written apart from them (a
 * test of an escaper by its own decoder would prove nothing): a reference
 * UTF-8 decoder, a JSON string parser and a Prometheus label-value parser.
 */
#ifndef XEVB_TEST_ESCAPE_CHECK_H
#define XEVB_TEST_ESCAPE_CHECK_H

#include <stddef.h>

/* Bytes of the valid UTF-8 sequence at s (n bytes there), 0 if none: by decoding the code point. */
size_t ref_utf8_seq(const unsigned char *s, size_t n);
/* s (n bytes, or to its NUL) with each byte that starts no valid sequence replaced by U+FFFD; malloc'd. */
char *replace_invalid(const char *s, size_t n);
/* The text of the JSON string q ("..." and nothing after), malloc'd; NULL if q is not one (RFC 8259). */
char *json_decode(const char *q);
/* The text of the quoted label value q, malloc'd; NULL if the text format would refuse it. */
char *prom_decode(const char *q);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * JSON strings from any bytes: the one escaper every --json output uses for
 * a string it did not write itself (interface names, farm nodes as given on
 * the command line, user names, anything the kernel or a file hands back;
 * doctor's details, which quote them). The result parses
 * whatever the input: '"' and '\' are escaped, control characters become
 * \n, \t, ... or \u00XX, and a byte that does not start a valid UTF-8
 * sequence becomes \ufffd (U+FFFD, the replacement character), so a strict
 * parser (python's json) never sees invalid UTF-8.
 *
 * Names from the program's own tables (counter names, verdicts, reasons) are
 * written as they are: a unit test holds them to plain identifiers
 * (tests/unit/test_json_outputs.c); so is what the program prints from
 * numbers, addresses by inet_ntop among them.
 */
#ifndef XEVB_JSON_H
#define XEVB_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Room for a quoted, escaped string of n input bytes: 6 per byte ("\u00XX", "\ufffd"), two quotes, NUL. */
#define XEVB_JSON_QLEN(n) (6 * (n) + 3)

/*
 * The length of the valid UTF-8 sequence at s (1 to 4 bytes, at most n), 0
 * if none starts there (a stray continuation byte, an overlong form, a
 * surrogate, beyond U+10FFFF, a sequence cut short, or NUL).
 */
size_t xevb_utf8_seq(const unsigned char *s, size_t n);

/* s, up to its NUL or max bytes, as a quoted JSON string. */
void xevb_json_strn(FILE *f, const char *s, size_t max);
void xevb_json_str(FILE *f, const char *s);

/*
 * The same into buf (len bytes, NUL-terminated), for a "%s" in a longer
 * format; returns buf. Too small a buf cuts the string between two whole
 * characters and still closes the quotes; XEVB_JSON_QLEN(strlen(s)) never
 * cuts. s NULL is written as null (as "" in a buf too small for it).
 */
const char *xevb_json_qn(char *buf, size_t len, const char *s, size_t max);
const char *xevb_json_q(char *buf, size_t len, const char *s);

#endif

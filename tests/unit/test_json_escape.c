// SPDX-License-Identifier: GPL-2.0-only
/*
 * The two escapers every output uses for a string it did not write itself
 * (user/base/json.h, xevb_prom_q in user/ops/metrics.h), fed hostile bytes:
 * quotes, backslashes, every control character, every invalid UTF-8 form
 * (stray continuation bytes, overlong forms, surrogates, beyond U+10FFFF,
 * cut sequences). Each result is checked by a strict decoder written here
 * independently of the escapers: it must parse, and give back the input
 * with each byte that starts no valid UTF-8 sequence replaced by U+FFFD.
 * The UTF-8 check itself is held exhaustively to a reference decoder.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/json.h"
#include "ops/metrics.h"
#include "../common/capture.h"
#include "../common/escape_check.h"

TestSuite(json_escape, .timeout = 60);

/* Every input the tests below feed through both escapers. */
static const char *const hostile[] = {
	"",
	"eth0",
	"q\"x",
	"a\\b",
	"\\",
	"\"",
	"\\\"",
	"\"\\\"\\",
	"line\nbreak",
	"cr\rtab\tbs\bff\f",
	"\x01\x02\x1f\x7f",
	"\xff",
	"\xfe\xfe",
	"\x80",
	"a\x80z",
	"\xc0\xaf",         /* overlong '/' */
	"\xc1\xbf",         /* overlong */
	"\xe0\x80\xaf",     /* overlong, 3 bytes */
	"\xf0\x80\x80\xaf", /* overlong, 4 bytes */
	"\xed\xa0\x80",     /* a surrogate (U+D800) */
	"\xed\xbf\xbf",     /* U+DFFF */
	"\xf4\x90\x80\x80", /* U+110000 */
	"\xf5\x80\x80\x80",
	"\xc3",                     /* cut */
	"\xe2\x82",                 /* cut */
	"\xf0\x9f\x98",             /* cut */
	"\xc3\xa9t\xc3\xa9",        /* été: valid */
	"\xe2\x82\xac",             /* €: valid */
	"\xf0\x9f\x98\x80",         /* U+1F600: valid */
	"\xef\xbf\xbd",             /* U+FFFD itself */
	"\xe2\x80\xa8\xe2\x80\xa9", /* U+2028, U+2029: valid JSON */
	"\xf4\x8f\xbf\xbf",         /* U+10FFFF: valid */
	"ifname=\"x\"} 1\n# x",
	"\xc3\x28\xa0\xa1\xe2\x28\xa1",
};
#define N_HOSTILE (sizeof(hostile) / sizeof(hostile[0]))

/* The UTF-8 check against the reference on every 1- and 2-byte string. */
Test(json_escape, utf8_seq_agrees_with_the_reference_on_short_strings)
{
	unsigned char s[5] = { 0 };

	for (unsigned a = 0; a < 256; a++) {
		s[0] = (unsigned char)a;
		s[1] = 0;
		cr_assert(eq(sz, xevb_utf8_seq(s, 1), ref_utf8_seq(s, 1)), "byte %02x", a);
		for (unsigned b = 0; b < 256; b++) {
			s[1] = (unsigned char)b;
			cr_assert(eq(sz, xevb_utf8_seq(s, 2), ref_utf8_seq(s, 2)), "bytes %02x %02x", a, b);
		}
	}
}

/* ... on every 3-byte string that starts a 3- or 4-byte sequence, and 4-byte ones by their edges. */
Test(json_escape, utf8_seq_agrees_with_the_reference_on_long_sequences)
{
	static const unsigned char edges[] = { 0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff };
	unsigned char s[5] = { 0 };

	for (unsigned a = 0xe0; a < 256; a++)
		for (unsigned b = 0; b < 256; b++)
			for (unsigned c = 0; c < 256; c++) {
				s[0] = (unsigned char)a, s[1] = (unsigned char)b, s[2] = (unsigned char)c,
				s[3] = 0;
				if (xevb_utf8_seq(s, 3) != ref_utf8_seq(s, 3))
					cr_fail("bytes %02x %02x %02x", a, b, c);
			}
	for (unsigned a = 0xf0; a < 256; a++)
		for (unsigned b = 0; b < 256; b++)
			for (size_t c = 0; c < sizeof(edges); c++)
				for (size_t d = 0; d < sizeof(edges); d++) {
					s[0] = (unsigned char)a, s[1] = (unsigned char)b, s[2] = edges[c],
					s[3] = edges[d];
					cr_assert(eq(sz, xevb_utf8_seq(s, 4), ref_utf8_seq(s, 4)),
						  "bytes %02x %02x %02x %02x", a, b, edges[c], edges[d]);
				}
}

/* s through the JSON escaper (buffer and stream) must parse back to s with U+FFFD for bad bytes. */
static void check_json(const char *s, size_t n)
{
	char buf[XEVB_JSON_QLEN(64)], *want = replace_invalid(s, n), *got, *streamed = NULL;
	size_t slen = 0;
	FILE *f = open_memstream(&streamed, &slen);

	cr_assert(n <= 64);
	xevb_json_qn(buf, sizeof(buf), s, n);
	got = json_decode(buf);
	cr_assert(not(eq(ptr, got, NULL)), "not a JSON string: %s", buf);
	cr_assert(eq(str, got, want), "JSON %s", buf);
	cr_assert(not(eq(ptr, f, NULL)));
	xevb_json_strn(f, s, n);
	fclose(f);
	cr_assert(eq(str, streamed, buf), "the stream and the buffer writers differ");
	free(want);
	free(got);
	free(streamed);
}

/* s through the label escaper must be a label value that parses back to s with U+FFFD for bad bytes. */
static void check_prom(const char *s, size_t n)
{
	char buf[XEVB_PROM_QLEN(64)], labels[sizeof(buf) + 8], *want = replace_invalid(s, n), *got;

	cr_assert(n <= 64);
	xevb_prom_qn(buf, sizeof(buf), s, n);
	snprintf(labels, sizeof(labels), "x=%s", buf);
	cr_assert(xevb_metric_labels_ok(labels), "not a label: %s", labels);
	got = prom_decode(buf);
	cr_assert(not(eq(ptr, got, NULL)), "not a label value: %s", buf);
	cr_assert(eq(str, got, want), "label value %s", buf);
	free(want);
	free(got);
}

Test(json_escape, hostile_strings_give_json_that_parses)
{
	char buf[64];

	for (size_t i = 0; i < N_HOSTILE; i++)
		check_json(hostile[i], strlen(hostile[i]));
	cr_assert(eq(str, (char *)xevb_json_q(buf, sizeof(buf), "q\"x"), "\"q\\\"x\""));
	cr_assert(eq(str, (char *)xevb_json_q(buf, sizeof(buf), "a\\b\n\x01"), "\"a\\\\b\\n\\u0001\""));
	cr_assert(eq(str,
		     (char *)xevb_json_q(buf, sizeof(buf),
					 "\xff"
					 "a"),
		     "\"\\ufffda\""));
	cr_assert(eq(str, (char *)xevb_json_q(buf, sizeof(buf), "\xc3\xa9"), "\"\xc3\xa9\""));
	cr_assert(eq(str, (char *)xevb_json_q(buf, sizeof(buf), NULL), "null"));
}

Test(json_escape, hostile_strings_give_label_values_that_parse)
{
	char buf[64];

	for (size_t i = 0; i < N_HOSTILE; i++)
		check_prom(hostile[i], strlen(hostile[i]));
	cr_assert(eq(str, (char *)xevb_prom_q(buf, sizeof(buf), "q\"x"), "\"q\\\"x\""));
	cr_assert(eq(str, (char *)xevb_prom_q(buf, sizeof(buf), "a\\b\n"), "\"a\\\\b\\n\""));
	cr_assert(eq(str,
		     (char *)xevb_prom_q(buf, sizeof(buf),
					 "\xff"
					 "a"),
		     "\"\xef\xbf\xbd"
		     "a\""));
}

/* Random bytes, biased to the ones that matter (quotes, backslashes, controls, high bytes). */
Test(json_escape, random_bytes_give_output_that_parses)
{
	static const unsigned char pick[] = { '"',  '\\', '\n', '\r', '\t', 0x01, 0x1f, 0x7f, 0x80, 0xbf, 0xc2,
					      0xc0, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 'a',  0xa0, 0x90 };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char s[65];

	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(round % 65);

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			s[i] = (char)(x & 1 ? pick[(x >> 8) % sizeof(pick)] : (x >> 16) % 255 + 1);
		}
		s[n] = 0;
		check_json(s, n);
		check_prom(s, n);
	}
}

/* A bound stops at max bytes: a name in a fixed array without its NUL (a hostile snapshot file). */
Test(json_escape, the_bound_stops_at_max_bytes)
{
	char name[4] = { 'a', 'b', 'c', 'd' }, buf[32];

	cr_assert(eq(str, (char *)xevb_json_qn(buf, sizeof(buf), name, sizeof(name)), "\"abcd\""));
	cr_assert(eq(str, (char *)xevb_prom_qn(buf, sizeof(buf), name, sizeof(name)), "\"abcd\""));
	/* A bound inside a sequence cuts it: U+FFFD, never a read past it. */
	cr_assert(eq(str, (char *)xevb_json_qn(buf, sizeof(buf), "\xc3\xa9", 1), "\"\\ufffd\""));
}

/* Too small a buffer cuts between whole characters and still closes the quotes. */
Test(json_escape, a_small_buffer_cuts_between_characters)
{
	for (size_t i = 0; i < N_HOSTILE; i++) {
		const char *s = hostile[i];
		char full[XEVB_JSON_QLEN(64)], pfull[XEVB_PROM_QLEN(64)], cut[sizeof(full)];
		char *dfull = json_decode(xevb_json_q(full, sizeof(full), s));
		char *pdfull = prom_decode(xevb_prom_q(pfull, sizeof(pfull), s));

		for (size_t len = 3; len <= strlen(full) + 1; len++) {
			char *d = json_decode(xevb_json_q(cut, len, s));

			cr_assert(not(eq(ptr, d, NULL)), "cut to %zu: %s", len, cut);
			cr_assert(lt(sz, strlen(cut), len));
			cr_assert(eq(int, strncmp(dfull, d, strlen(d)), 0), "cut to %zu: not a prefix", len);
			free(d);
		}
		for (size_t len = 3; len <= strlen(pfull) + 1; len++) {
			char *d = prom_decode(xevb_prom_q(cut, len, s));

			cr_assert(not(eq(ptr, d, NULL)), "cut to %zu: %s", len, cut);
			cr_assert(lt(sz, strlen(cut), len));
			cr_assert(eq(int, strncmp(pdfull, d, strlen(d)), 0), "cut to %zu: not a prefix", len);
			free(d);
		}
		free(dfull);
		free(pdfull);
	}
}

Test(json_escape, labels_ok_takes_only_escaped_pairs)
{
	static const char *const good[] = { NULL,       "",
					    "a=\"\"",   "a=\"x\",b_2=\"\\\\\\\"\\n\"",
					    "a=\"x\",", "a=\"\xc3\xa9\"" };
	static const char *const bad[] = { "a",          "a=x",        "a=\"x",    "a=\"q\"x\"",     "a=\"a\\b\"",
					   "a=\"a\nb\"", "a=\"\xff\"", "1a=\"x\"", "a=\"x\"b=\"y\"", "a=\"x\",,",
					   "=\"x\"",     "a=\"x\\\"" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert(xevb_metric_labels_ok(good[i]), "refused: %s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(not(xevb_metric_labels_ok(bad[i])), "taken: %s", bad[i]);
}

/* HELP text: a backslash and a newline escaped, as the exposition format says. */
Test(json_escape, help_text_is_escaped)
{
	struct xevb_mbuf b = { 0 };

	xevb_metric_family(&b, "xevb_x", "gauge", "a\\b\nc");
	cr_assert(not(b.oom));
	cr_assert(eq(str, b.p, "# HELP xevb_x a\\\\b\\nc\n# TYPE xevb_x gauge\n"));
	free(b.p);
}

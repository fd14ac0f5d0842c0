// SPDX-License-Identifier: GPL-2.0-only
/*
 * JSON strings from any bytes (base/json.h). One routine, json_char(),
 * turns the next input character into its output text; the stream and the
 * buffer writers only loop over it, so they cannot disagree.
 */
#include <string.h>
#include "base/json.h"

/* Continuation bytes s[1..n-1] all 10xxxxxx. */
static int cont(const unsigned char *s, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return 1;
}

size_t xevb_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = n ? s[0] : 0;
	size_t len;

	if (c >= 0x01 && c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0; /* NUL, a continuation byte, C0/C1 (overlong), F5..FF */
	if (n < len || !cont(s, len))
		return 0;
	/* The second byte's range rules out overlong forms, surrogates and > U+10FFFF. */
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return len;
}

/*
 * The next character of s (n bytes left, n > 0) as JSON text in out (at
 * most 6 bytes, not NUL-terminated): its length; *used: the input it took.
 */
static size_t json_char(const unsigned char *s, size_t n, char out[8], size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	static const char short_esc[0x20] = {
		['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r'
	};
	size_t len = xevb_utf8_seq(s, n);
	unsigned char c = s[0];

	*used = len ? len : 1;
	if (!len) {
		memcpy(out, "\\ufffd", 6);
		return 6;
	}
	if (c == '"' || c == '\\') {
		out[0] = '\\';
		out[1] = (char)c;
		return 2;
	}
	if (c >= 0x20) {
		memcpy(out, s, len);
		return len;
	}
	if (short_esc[c]) {
		out[0] = '\\';
		out[1] = short_esc[c];
		return 2;
	}
	memcpy(out, "\\u00", 4);
	out[4] = hex[c >> 4];
	out[5] = hex[c & 15];
	return 6;
}

void xevb_json_strn(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n, used;
	char out[8];

	if (!s) {
		fputs("null", f);
		return;
	}
	n = strnlen(s, max);
	fputc('"', f);
	while (n) {
		fwrite(out, 1, json_char(p, n, out, &used), f);
		p += used;
		n -= used;
	}
	fputc('"', f);
}

void xevb_json_str(FILE *f, const char *s)
{
	xevb_json_strn(f, s, SIZE_MAX);
}

const char *xevb_json_qn(char *buf, size_t len, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n, used, k = 0, w;
	char out[8];

	if (len < 3) { /* not even "" */
		if (len)
			buf[0] = 0;
		return buf;
	}
	if (!s) {
		snprintf(buf, len, "%s", len > 4 ? "null" : "\"\"");
		return buf;
	}
	n = strnlen(s, max);
	buf[k++] = '"';
	while (n) {
		w = json_char(p, n, out, &used);
		if (k + w + 2 > len) /* the closing quote and the NUL */
			break;
		memcpy(buf + k, out, w);
		k += w;
		p += used;
		n -= used;
	}
	buf[k++] = '"';
	buf[k] = 0;
	return buf;
}

const char *xevb_json_q(char *buf, size_t len, const char *s)
{
	return xevb_json_qn(buf, len, s, SIZE_MAX);
}

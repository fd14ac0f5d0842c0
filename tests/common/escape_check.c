// SPDX-License-Identifier: GPL-2.0-only
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "escape_check.h"

size_t ref_utf8_seq(const unsigned char *s, size_t n)
{
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len;
	uint32_t cp;

	if (!n || !s[0])
		return 0;
	if (s[0] < 0x80)
		return 1;
	len = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (!len || len > n)
		return 0;
	cp = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

char *replace_invalid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out, *o;

	n = strnlen(s, n);
	out = o = malloc(3 * n + 1);
	while (out && n) {
		size_t len = ref_utf8_seq(p, n);

		if (len) {
			memcpy(o, p, len);
			o += len;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			len = 1;
		}
		p += len;
		n -= len;
	}
	if (out)
		*o = 0;
	return out;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 :
				      -1;
}

/* Code point cp (no surrogates) as UTF-8 at o: past it. */
static char *put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* The escape after a backslash at *pp (JSON): its text at o, past it; NULL if not one. */
static char *json_escape_at(const char **pp, char *o)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *p = *pp, *k = *p ? strchr(from, *p) : NULL;
	uint32_t cp = 0;

	if (k) {
		*o++ = to[k - from];
		*pp = p + 1;
		return o;
	}
	if (*p++ != 'u')
		return NULL;
	for (int i = 0; i < 4; i++) {
		int v = hexval(*p++);
		if (v < 0)
			return NULL;
		cp = cp << 4 | (uint32_t)v;
	}
	if (cp >= 0xd800 && cp <= 0xdfff) /* the escapers never write a pair: one alone is invalid */
		return NULL;
	*pp = p;
	return put_utf8(o, cp);
}

char *json_decode(const char *q)
{
	size_t n = strlen(q);
	char *out = malloc(n + 1), *o = out;
	const char *p = q;

	if (!out || *p++ != '"')
		goto bad;
	while (*p != '"') {
		size_t len = ref_utf8_seq((const unsigned char *)p, strnlen(p, 4));

		if (!len || (unsigned char)*p < 0x20)
			goto bad;
		if (*p == '\\') {
			p++;
			if (!(o = json_escape_at(&p, o)))
				goto bad;
			continue;
		}
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	if (p[1])
		goto bad;
	*o = 0;
	return out;
bad:
	free(out);
	return NULL;
}

char *prom_decode(const char *q)
{
	size_t n = strlen(q);
	char *out = malloc(n + 1), *o = out;
	const char *p = q;

	if (!out || *p++ != '"')
		goto bad;
	while (*p != '"') {
		size_t len = ref_utf8_seq((const unsigned char *)p, strnlen(p, 4));

		if (!len || *p == '\n')
			goto bad;
		if (*p == '\\') {
			if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
				goto bad;
			*o++ = p[1] == 'n' ? '\n' : p[1];
			p += 2;
			continue;
		}
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	if (p[1])
		goto bad;
	*o = 0;
	return out;
bad:
	free(out);
	return NULL;
}

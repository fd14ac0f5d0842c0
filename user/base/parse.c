// SPDX-License-Identifier: GPL-2.0-only
/* Strict parsing of option values (parse.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/log.h"
#include "base/parse.h"

bool xevb_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= 0 && v <= (double)(1u << 30))) {
		xevb_err("--duration: '%s' is not a number of seconds such as 30 or 2.5 (0: no limit)", s);
		return false;
	}
	*ns = (uint64_t)(v * 1e9);
	return true;
}

bool xevb_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max)
		goto bad;
	*out = v;
	return true;
bad:
	xevb_err("--%s: '%s' is not a number in %llu..%llu", opt, s ? s : "", (unsigned long long)min,
		 (unsigned long long)max);
	return false;
}

bool xevb_parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (!xevb_parse_u64(opt, s, min, max, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

int xevb_parse_id_list(const char *opt, const char *s, uint16_t *ids, int max)
{
	static uint8_t seen[65536];
	char *dup = strdup(s), *save = NULL;
	int n = 0;

	memset(seen, 0, sizeof(seen));
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(t, '-'), *e1, *e2;
		unsigned long a, b;
		a = strtoul(t, &e1, 10);
		if (dash) {
			b = strtoul(dash + 1, &e2, 10);
			if (e1 != dash || *e2 || dash == t)
				goto bad;
		} else {
			b = a;
			if (*e1 || e1 == t)
				goto bad;
		}
		if (a > b || b > 65535)
			goto bad;
		for (unsigned long v = a; v <= b; v++)
			seen[v] = 1;
	}
	for (unsigned v = 0; v < 65536; v++)
		if (seen[v]) {
			if (n == max) {
				xevb_err("--%s: more than %d ids", opt, max);
				free(dup);
				return -1;
			}
			ids[n++] = (uint16_t)v;
		}
	free(dup);
	if (n == 0)
		goto bad2;
	return n;
bad:
	free(dup);
bad2:
	xevb_err("--%s: '%s' is not a list of ids such as 0-125 or 1,4,9-12", opt, s);
	return -1;
}

bool xevb_mac_parse(const char *s, uint8_t mac[6])
{
	if (strlen(s) != 17)
		return false;
	for (int i = 0; i < 6; i++) {
		const char *p = s + 3 * i;
		char hex[3] = { p[0], p[1], 0 };

		if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) || (i < 5 && p[2] != ':'))
			return false;
		mac[i] = (uint8_t)strtoul(hex, NULL, 16);
	}
	/* The group bit: no frame comes from a multicast or broadcast address. */
	return !(mac[0] & 1) && (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]);
}

const char *xevb_mac_str(const uint8_t mac[6], char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	return buf;
}

bool xevb_parse_si(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		goto bad;
	switch (*end) {
	case 0:
		break;
	case 'k':
	case 'K':
		v *= 1e3;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1e6;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1e9;
		end++;
		break;
	default:
		goto bad;
	}
	/* allow a unit word after the multiplier: "200mbit", "1Gbps" */
	if (*end && strcmp(end, "bit") && strcmp(end, "bps") && strcmp(end, "b") && strcmp(end, "B"))
		goto bad;
	*out = v;
	return true;
bad:
	xevb_err("--%s: '%s' is not a number such as 200m or 1.5G", opt, s);
	return false;
}

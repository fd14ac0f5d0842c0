// SPDX-License-Identifier: GPL-2.0-only
/* Strict parsing of option values (parse.h). */
#include <arpa/inet.h>
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

/* One "A" or "A-B" of a list into [*lo, *hi]: 0, 1 on bad syntax, 2 after a message with the reason. */
static int id_range(const char *opt, char *t, unsigned long max_id, unsigned long *lo, unsigned long *hi)
{
	char *dash = strchr(t, '-'), *e1, *e2;

	*lo = strtoul(t, &e1, 10);
	*hi = *lo;
	if (dash) {
		*hi = strtoul(dash + 1, &e2, 10);
		if (e1 != dash || *e2 || dash == t || e2 == dash + 1)
			return 1;
	} else if (*e1 || e1 == t) {
		return 1;
	}
	if (*lo > *hi) {
		xevb_err("--%s: range %s runs backwards: give LOW-HIGH (%lu-%lu)", opt, t, *hi, *lo);
		return 2;
	}
	if (*hi > max_id) {
		xevb_err("--%s: id %lu in '%s' is out of range: ids go from 0 to %lu", opt, *hi, t, max_id);
		return 2;
	}
	return 0;
}

int xevb_parse_id_list_max(const char *opt, const char *s, uint16_t *ids, int max, unsigned max_id)
{
	static uint8_t seen[65536];
	char *dup = strdup(s), *save = NULL;
	int n = 0;

	if (!dup)
		return -1;
	if (max_id > 65535)
		max_id = 65535;
	memset(seen, 0, sizeof(seen));
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned long a, b;
		int rc = id_range(opt, t, max_id, &a, &b);

		if (rc) {
			free(dup);
			if (rc == 2)
				return -1;
			goto bad;
		}
		for (unsigned long v = a; v <= b; v++)
			seen[v] = 1;
	}
	free(dup);
	for (unsigned v = 0; v <= max_id; v++)
		if (seen[v]) {
			if (n == max) {
				xevb_err("--%s: more than %d ids", opt, max);
				return -1;
			}
			ids[n++] = (uint16_t)v;
		}
	if (n == 0)
		goto bad;
	return n;
bad:
	xevb_err("--%s: '%s' is not a list of ids such as 0-125 or 1,4,9-12 (ids 0 to %u)", opt, s, max_id);
	return -1;
}

/* The ids index arrays of max entries (XEVB_MAX_SOURCES: 0..4095). */
int xevb_parse_id_list(const char *opt, const char *s, uint16_t *ids, int max)
{
	return xevb_parse_id_list_max(opt, s, ids, max, max > 0 ? (unsigned)max - 1 : 0);
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

bool xevb_neigh_line(const char *line, const char *dev, uint32_t *addr, uint8_t mac[6])
{
	char ip[32], hw[32], mask[32], ifname[32];
	unsigned type, flags;
	struct in_addr a;

	if (sscanf(line, "%31s 0x%x 0x%x %31s %31s %31s", ip, &type, &flags, hw, mask, ifname) != 6)
		return false;
	/* 0x2: ATF_COM (linux/if_arp.h), the entry has a hardware address. */
	if (!(flags & 0x2) || strcmp(ifname, dev) || inet_pton(AF_INET, ip, &a) != 1 || !xevb_mac_parse(hw, mac))
		return false;
	*addr = a.s_addr;
	return true;
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

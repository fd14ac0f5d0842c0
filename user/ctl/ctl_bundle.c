// SPDX-License-Identifier: GPL-2.0-only
/*
 * A builder's key bundle (ctl_auth.h, docs/control-protocol.md "Keys"): its
 * member key and the link keys of the edge members it talks to, so that a
 * builder holds no key that speaks for another member.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/ctl_auth.h"

void xevb_ctl_links_free(struct xevb_ctl_link *links, uint32_t n)
{
	if (links)
		sodium_memzero(links, (size_t)n * sizeof(*links));
	free(links);
}

static int link_cmp(const void *x, const void *y)
{
	const struct xevb_ctl_link *a = x, *b = y;

	return a->role != b->role ? (int)a->role - (int)b->role : (int)a->id - (int)b->id;
}

/* 64 hex digits to 32 bytes that are not one byte repeated (all zero): false if not. */
static bool hex_key(const char *hex, uint8_t key[XEVB_CTL_KEY_LEN])
{
	size_t i;

	if (strlen(hex) != 2 * XEVB_CTL_KEY_LEN ||
	    sodium_hex2bin(key, XEVB_CTL_KEY_LEN, hex, 2 * XEVB_CTL_KEY_LEN, NULL, NULL, NULL))
		return false;
	for (i = 1; i < XEVB_CTL_KEY_LEN && key[i] == key[0]; i++)
		;
	return i < XEVB_CTL_KEY_LEN;
}

struct bundle_rd {
	const uint8_t *b;
	size_t n, at;
	unsigned line;
	char text[XEVB_BUNDLE_LINE + 1];
	char *err;
	size_t len;
};

/* The next line, without its newline, in r->text: 1, 0 at the end, -1 (err) when cut or too long. */
static int next_line(struct bundle_rd *r)
{
	const uint8_t *nl;
	size_t l;

	if (r->at >= r->n)
		return 0;
	r->line++;
	nl = memchr(r->b + r->at, '\n', r->n - r->at);
	l = nl ? (size_t)(nl - (r->b + r->at)) : r->n - r->at;
	if (l > XEVB_BUNDLE_LINE || !nl) {
		snprintf(r->err, r->len, "line %u: %s", r->line,
			 nl ? "longer than a bundle's line" : "cut short (no newline): the bundle is truncated");
		return -1;
	}
	memcpy(r->text, r->b + r->at, l);
	r->text[l] = 0;
	r->at += l + 1;
	return 1;
}

static int bad(struct bundle_rd *r, const char *what)
{
	snprintf(r->err, r->len, "line %u: %s", r->line, what);
	sodium_memzero(r->text, sizeof(r->text));
	return -1;
}

/* The first line: "xevb-key-bundle builder ID HEX64". */
static int bundle_head(struct bundle_rd *r, uint16_t *id, uint8_t key[XEVB_CTL_KEY_LEN])
{
	char role[16], hex[2 * XEVB_CTL_KEY_LEN + 2], tail;
	unsigned long v;
	int got;

	if (next_line(r) <= 0)
		return r->line ? -1 : bad(r, "empty: not a key bundle");
	got = sscanf(r->text, XEVB_BUNDLE_TAG " %15s %lu %65s %c", role, &v, hex, &tail);
	if (got != 3 || v > UINT16_MAX)
		return bad(r, "not '" XEVB_BUNDLE_TAG " builder ID HEX64'");
	if (strcmp(role, "builder"))
		return bad(r, "a bundle is a builder's; a source or farm node is given its member key");
	if (!hex_key(hex, key))
		return bad(r, "the builder's key is not 64 hex digits of a random key");
	*id = (uint16_t)v;
	sodium_memzero(hex, sizeof(hex));
	return 0;
}

/* One "link source|sink ID HEX64" into l; 1, or 0 at "end N" (*end = N), or -1. */
static int bundle_link(struct bundle_rd *r, struct xevb_ctl_link *l, unsigned long *end)
{
	char role[16], hex[2 * XEVB_CTL_KEY_LEN + 2], tail;
	unsigned long v;
	int got;

	if ((got = next_line(r)) <= 0)
		return got ? -1 : bad(r, "no 'end N' line: the bundle is truncated");
	if (sscanf(r->text, "end %lu %c", end, &tail) == 1)
		return 0;
	got = sscanf(r->text, "link %15s %lu %65s %c", role, &v, hex, &tail);
	if (got != 3 || v > UINT16_MAX)
		return bad(r, "not 'link source|sink ID HEX64' nor 'end N'");
	l->role = !strcmp(role, "source") ? XEVB_ROLE_SOURCE : !strcmp(role, "sink") ? XEVB_ROLE_SINK : 0;
	if (!l->role)
		return bad(r, "a link is to a source or a sink (farm node), not to the DFM or a builder");
	l->id = (uint16_t)v;
	if (!hex_key(hex, l->k))
		return bad(r, "the link key is not 64 hex digits of a random key");
	sodium_memzero(hex, sizeof(hex));
	return 1;
}

/* Every link up to "end N", counted, sorted, each member once; 0 or -1. */
static int bundle_links(struct bundle_rd *r, struct xevb_ctl_link *l, uint32_t *n)
{
	unsigned long end = 0;
	int got;

	*n = 0;
	while ((got = bundle_link(r, &l[*n], &end)) == 1)
		if (++*n > XEVB_BUNDLE_MAX)
			return bad(r, "more links than a run configuration has sources and farm nodes");
	if (got < 0)
		return -1;
	if (end != *n)
		return bad(r, "'end' counts another number of links: the bundle is truncated or altered");
	if (r->at != r->n)
		return r->line++, bad(r, "text after 'end'");
	qsort(l, *n, sizeof(*l), link_cmp);
	for (uint32_t i = 1; i < *n; i++)
		if (!link_cmp(&l[i - 1], &l[i])) {
			snprintf(r->err, r->len, "%s %u has two links: one link per member",
				 xevb_ctl_role_name(l[i].role), l[i].id);
			return -1;
		}
	return 0;
}

int xevb_ctl_bundle_parse(const uint8_t *b, size_t n, uint16_t *id, uint8_t key[XEVB_CTL_KEY_LEN],
			  struct xevb_ctl_link **links, uint32_t *n_links, char *err, size_t len)
{
	struct bundle_rd r = { .b = b, .n = n, .err = err, .len = len };
	struct xevb_ctl_link *l = NULL;

	*links = NULL;
	*n_links = 0;
	if (bundle_head(&r, id, key))
		goto fail;
	l = calloc(XEVB_BUNDLE_MAX + 1, sizeof(*l));
	if (!l) {
		snprintf(err, len, "out of memory for the bundle's links");
		goto fail;
	}
	if (bundle_links(&r, l, n_links))
		goto fail;
	*links = l;
	if (*n_links < XEVB_BUNDLE_MAX) {
		struct xevb_ctl_link *small = calloc(*n_links ? *n_links : 1, sizeof(*l));
		if (small) {
			memcpy(small, l, *n_links * sizeof(*l));
			xevb_ctl_links_free(l, XEVB_BUNDLE_MAX + 1);
			*links = small;
		}
	}
	sodium_memzero(r.text, sizeof(r.text));
	return 0;
fail:
	xevb_ctl_links_free(l, XEVB_BUNDLE_MAX + 1);
	sodium_memzero(key, XEVB_CTL_KEY_LEN);
	sodium_memzero(r.text, sizeof(r.text));
	*n_links = 0;
	return -1;
}

// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/wire.h>
#include "vectors.h"

const char *vectors_dir(void)
{
	const char *d = getenv("XEVB_VECTORS");
	return d && *d ? d : "tests/vectors";
}

static void die(const char *what, const char *name)
{
	fprintf(stderr, "vectors: %s: %s (dir %s; run from the repository top or set XEVB_VECTORS)\n", what, name,
		vectors_dir());
	exit(2);
}

static void load_hex(struct vector *v)
{
	char path[512];
	FILE *f;
	int c, hi = -1;
	size_t cap = 1024;

	snprintf(path, sizeof(path), "%s/%s.hex", vectors_dir(), v->name);
	f = fopen(path, "r");
	if (!f)
		die("cannot open", path);
	v->frame = malloc(cap);
	v->len = 0;
	while ((c = fgetc(f)) != EOF) {
		if (isspace(c))
			continue;
		if (!isxdigit(c))
			die("bad hex digit in", path);
		int d = isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10);
		if (hi < 0) {
			hi = d;
			continue;
		}
		if (v->len == cap)
			v->frame = realloc(v->frame, cap *= 2);
		v->frame[v->len++] = (uint8_t)(hi << 4 | d);
		hi = -1;
	}
	fclose(f);
	if (hi >= 0)
		die("odd number of hex digits in", path);
}

static void parse_frags(struct vector *v, char *s)
{
	char *save = NULL;

	v->n_frags = 0;
	if (!strcmp(s, "-"))
		return;
	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned eid, sid, len, crc, seg_off = 0, seg_bytes = 0;
		int want = v->verdict == VEC_SEGMENT ? 6 : 4;
		if (v->n_frags == VEC_MAX_FRAGS ||
		    sscanf(t, "%x:%u:%u:%x:%u:%u", &eid, &sid, &len, &crc, &seg_off, &seg_bytes) != want)
			die("bad fragment list for", v->name);
		v->frags[v->n_frags++] = (struct vec_frag){ eid, (uint16_t)sid,     (uint16_t)len,
							    crc, (uint16_t)seg_off, (uint16_t)seg_bytes };
	}
}

struct vector *vectors_load(size_t *count)
{
	char path[512], line[8192];
	struct vector *vs = NULL;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/index.tsv", vectors_dir());
	f = fopen(path, "r");
	if (!f)
		die("cannot open", path);
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *name, *verdict, *frags;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		name = strtok_r(line, "\t\n", &save);
		verdict = strtok_r(NULL, "\t\n", &save);
		frags = strtok_r(NULL, "\t\n", &save);
		if (!name || !verdict || !frags)
			die("bad index line", line);
		vs = realloc(vs, (n + 1) * sizeof(*vs));
		struct vector *v = &vs[n++];
		memset(v, 0, sizeof(*v));
		snprintf(v->name, sizeof(v->name), "%s", name);
		if (!strcmp(verdict, "mep"))
			v->verdict = VEC_MEP;
		else if (!strcmp(verdict, "segment"))
			v->verdict = VEC_SEGMENT;
		else if (!strcmp(verdict, "malformed"))
			v->verdict = VEC_MALFORMED;
		else if (!strcmp(verdict, "ip_fragment"))
			v->verdict = VEC_IP_FRAGMENT;
		else if (!strcmp(verdict, "other"))
			v->verdict = VEC_OTHER;
		else
			die("unknown verdict", verdict);
		parse_frags(v, frags);
		load_hex(v);
	}
	fclose(f);
	*count = n;
	return vs;
}

void vectors_free(struct vector *v, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(v[i].frame);
	free(v);
}

struct vector *vecs;
size_t nvecs;

void vectors_setup(void)
{
	vecs = vectors_load(&nvecs);
}

const struct vector *vectors_find(const char *name)
{
	for (size_t i = 0; i < nvecs; i++)
		if (!strcmp(vecs[i].name, name))
			return &vecs[i];
	cr_fatal("vector %s is not in %s/index.tsv", name, vectors_dir());
	return NULL;
}

struct xevb_mep_params vectors_params(void)
{
	struct xevb_mep_params p = {
		.dst_mac = { 2, 0, 0, 0, 0, 2 },
		.src_mac = { 2, 0, 0, 0, 0, 1 },
		.saddr = htonl(0xc6120101),
		.daddr = htonl(0xc6120002),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.run_number = 1042,
	};

	return p;
}

void vectors_teardown(void)
{
	vectors_free(vecs, nvecs);
	vecs = NULL;
	nvecs = 0;
}

size_t vectors_tag_vlan(uint8_t *buf, size_t len, uint16_t vid)
{
	memmove(buf + 16, buf + 12, len - 12);
	buf[12] = 0x81;
	buf[13] = 0x00;
	buf[14] = (uint8_t)(vid >> 8);
	buf[15] = (uint8_t)vid;
	return len + 4;
}

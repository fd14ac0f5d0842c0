// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a farm node takes from a run configuration (docs/run-config.md):
 * its own [sink N] (and [sink] defaults): address, port, ctl_port,
 * credits, busy_high, busy_low; the DFM's address from [dfm]; the key
 * file from [run]; and every [builder N] (and the DFM) as the members
 * whose control messages are admitted. The tools check the whole file
 * (user/ctl/runcfg.c); this reader splits lines the same way (INI as
 * libinih reads it) and checks what it takes, naming the file and line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "farm.h"

#define MAX_MEMBERS 1024

struct sec {
	bool defined;
	uint32_t addr;
	uint16_t port, ctl_port;
	uint32_t credits;
	double busy_high, busy_low;
};

struct cfg {
	const char *path;
	unsigned line;
	char kind[16];
	long id; /* -1: a kind's defaults */
	uint16_t want_id;
	struct sec me, def_sink, def_builder;
	char dfm[64], key[1024];
	struct xl_member m[MAX_MEMBERS];
	uint32_t n;
	/* builders seen, before their defaults are known: [builder N] without ctl_port gets [builder]'s */
	bool port_given[MAX_MEMBERS];
	char *err;
};

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

static int bad(struct cfg *c, const char *key, const char *v, const char *want)
{
	char sec[32] = "";

	if (c->id >= 0)
		snprintf(sec, sizeof(sec), " %ld", c->id);
	xl_fmt(c->err, XEVB_ERRBUF_SIZE, "%s:%u: [%s%s] %s: '%s' is not %s", c->path, c->line, c->kind, sec, key,
	       v, want);
	return -EINVAL;
}

static int num(struct cfg *c, const char *key, const char *v, double min, double max, double *out)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end || d < min || d > max) {
		char want[64];
		snprintf(want, sizeof(want), "a number in %g..%g", min, max);
		return bad(c, key, v, want);
	}
	*out = d;
	return 0;
}

/* key = v in a [sink] or [builder] section. */
static int peer_key(struct cfg *c, struct sec *s, const char *key, const char *v)
{
	double d;
	int rc = 0;

	if (!strcmp(key, "address")) {
		struct in_addr a;
		if (inet_pton(AF_INET, v, &a) != 1)
			return bad(c, key, v, "an IPv4 address");
		s->addr = a.s_addr;
	} else if (!strcmp(key, "port") || !strcmp(key, "ctl_port")) {
		if (!(rc = num(c, key, v, 1, 65535, &d)))
			*(key[0] == 'p' ? &s->port : &s->ctl_port) = (uint16_t)d;
	} else if (!strcmp(key, "credits")) {
		if (!(rc = num(c, key, v, 1, 1u << 20, &d)))
			s->credits = (uint32_t)d;
	} else if (!strcmp(key, "busy_high") || !strcmp(key, "busy_low")) {
		if (!(rc = num(c, key, v, 0, 100, &d)))
			*(key[5] == 'h' ? &s->busy_high : &s->busy_low) = d;
	}
	return rc;
}

static int section(struct cfg *c, char *name)
{
	char *sp;

	c->id = -1;
	sp = strchr(name, ' ');
	if (sp) {
		char *end;
		*sp = 0;
		c->id = strtol(sp + 1, &end, 10);
		if (*end || c->id < 0 || c->id > 65535)
			return bad(c, "section", sp + 1, "a number 0..65535");
	}
	snprintf(c->kind, sizeof(c->kind), "%s", name);
	if (!strcmp(c->kind, "builder") && c->id >= 0) {
		if (c->n == MAX_MEMBERS)
			return bad(c, "section", name, "within the 1024 builders this library takes");
		c->m[c->n++] = (struct xl_member){ .role = XL_ROLE_BUILDER, .id = (uint16_t)c->id };
	}
	if (!strcmp(c->kind, "sink") && c->id == c->want_id)
		c->me.defined = true;
	return 0;
}

static int key_value(struct cfg *c, char *key, char *v)
{
	struct sec tmp = { 0 };
	int rc;

	if (!strcmp(c->kind, "run") && !strcmp(key, "key_file"))
		snprintf(c->key, sizeof(c->key), "%s", v);
	else if (!strcmp(c->kind, "dfm") && !strcmp(key, "address"))
		snprintf(c->dfm, sizeof(c->dfm), "%s", v);
	else if (!strcmp(c->kind, "sink") && c->id < 0)
		return peer_key(c, &c->def_sink, key, v);
	else if (!strcmp(c->kind, "sink") && c->id == c->want_id)
		return peer_key(c, &c->me, key, v);
	else if (!strcmp(c->kind, "builder") && c->id < 0)
		return peer_key(c, &c->def_builder, key, v);
	else if (!strcmp(c->kind, "builder")) {
		struct xl_member *m = &c->m[c->n - 1];
		tmp.ctl_port = m->port;
		if ((rc = peer_key(c, &tmp, key, v)))
			return rc;
		if (tmp.addr)
			m->addr = tmp.addr;
		if (!strcmp(key, "ctl_port")) {
			m->port = tmp.ctl_port;
			c->port_given[c->n - 1] = true;
		}
	}
	return 0;
}

/* One line of the file. */
static int line(struct cfg *c, char *s)
{
	char *eq, *semi;

	if (*s == ' ' || *s == '\t') /* a continuation: no key of ours continues */
		return 0;
	s = trim(s);
	if (!*s || *s == ';' || *s == '#')
		return 0;
	if (*s == '[') {
		char *end = strchr(s, ']');
		if (!end)
			return bad(c, "section", s, "a section name in [ ]");
		*end = 0;
		return section(c, trim(s + 1));
	}
	eq = strchr(s, '=');
	if (!eq)
		return bad(c, "line", s, "key = value");
	*eq = 0;
	semi = strstr(eq + 1, " ;");
	if (semi)
		*semi = 0;
	return key_value(c, trim(s), trim(eq + 1));
}

static int read_file(struct cfg *c)
{
	char buf[512];
	FILE *fp = fopen(c->path, "re");
	int rc = 0;

	if (!fp) {
		int e = errno;
		xl_fmt(c->err, XEVB_ERRBUF_SIZE, "run configuration %s: %s", c->path, strerror(e));
		return -e;
	}
	while (!rc && fgets(buf, sizeof(buf), fp)) {
		c->line++;
		rc = line(c, buf);
	}
	fclose(fp);
	if (!rc && !c->me.defined) {
		xl_fmt(c->err, XEVB_ERRBUF_SIZE,
		       "run configuration %s: no [sink %u]: which farm node is this? give id", c->path,
		       c->want_id);
		return -ENOENT;
	}
	return rc;
}

/* The file's members, with the DFM and the builders' default control ports. */
static int make_members(struct xevb_farm *f, struct cfg *c)
{
	uint32_t n = 0;

	f->members = calloc(c->n + 1, sizeof(*f->members));
	if (!f->members)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->n; i++) {
		f->members[n] = c->m[i];
		if (!c->port_given[i])
			f->members[n].port = c->def_builder.ctl_port ? c->def_builder.ctl_port : 23902;
		n++;
	}
	if (c->dfm[0]) {
		uint32_t a;
		uint16_t p;
		if (xl_parse_addr(c->dfm, &a, &p, false)) {
			xl_fmt(c->err, XEVB_ERRBUF_SIZE,
			       "run configuration %s: [dfm] address '%s' is not ADDR:PORT", c->path, c->dfm);
			return -EINVAL;
		}
		f->members[n++] = (struct xl_member){ .addr = a, .port = p, .role = XL_ROLE_DFM, .id = 0 };
	}
	f->n_members = n;
	return 0;
}

#define PICK(a, b) ((a) ? (a) : (b))

int xl_runcfg_apply(struct xevb_farm *f, struct xevb_farm_opts *o, char *listen, size_t listen_len, char *dfm,
		    size_t dfm_len, char *key, size_t key_len, char *err)
{
	struct cfg *c = calloc(1, sizeof(*c));
	struct in_addr a;
	int rc;

	if (!c)
		return -ENOMEM;
	c->path = o->run_config;
	c->want_id = o->id;
	c->err = err;
	c->id = -1;
	if ((rc = read_file(c)) || (rc = make_members(f, c)))
		goto out;
	if (!o->listen && c->me.addr) {
		a.s_addr = c->me.addr;
		snprintf(listen, listen_len, "%s:%u", inet_ntoa(a),
			 PICK(c->me.port, PICK(c->def_sink.port, 5000)));
		o->listen = listen;
	}
	o->ctl_port = PICK(o->ctl_port, PICK(c->me.ctl_port, c->def_sink.ctl_port));
	o->credits = PICK(o->credits, PICK(c->me.credits, c->def_sink.credits));
	o->busy_high = PICK(o->busy_high, PICK(c->me.busy_high, c->def_sink.busy_high));
	o->busy_low = PICK(o->busy_low, PICK(c->me.busy_low, c->def_sink.busy_low));
	if (!o->dfm && c->dfm[0]) {
		snprintf(dfm, dfm_len, "%s", c->dfm);
		o->dfm = dfm;
	}
	if (!o->key_file && c->key[0]) {
		snprintf(key, key_len, "%s", c->key);
		o->key_file = key;
	}
out:
	free(c);
	return rc;
}

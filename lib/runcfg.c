// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a farm node takes from a run configuration (docs/run-config.md):
 * its own [sink N] (and [sink] defaults): address, port, ctl_port,
 * credits, busy_high, busy_low, key_file (our member key); the DFM's
 * address from [dfm]; the key file (the master) and number from [run]; and every [builder N] (and the DFM) as the members
 * whose control messages are admitted. The tools check the whole file
 * (user/ctl/runcfg.c); this reader splits lines the same way (INI as
 * libinih reads it) and checks what it takes, naming the file and line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "farm.h"
#include "shared/xl_trusted.h"

/* The tools' bounds (user/ctl/runcfg.h: 1024 builders, 4096 source processes and farm nodes, 4 MiB; inih's line). */
#define MAX_MEMBERS  1024
#define MAX_SECTIONS 10240
#define MAX_BYTES    (4u << 20)
#define MAX_LINE     198

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
	char dfm[64], key[1024], my_key[1024];
	uint32_t run; /* [run] number; 0: not given */
	struct xl_member m[MAX_MEMBERS];
	uint32_t n;
	/* builders seen, before their defaults are known: [builder N] without ctl_port gets [builder]'s */
	bool port_given[MAX_MEMBERS];
	char *err;
	bool after_key; /* a key since the last section line: an indented line continues its value */
	/* every section so far: a section may appear once */
	struct seen {
		char kind[16];
		long id;
		unsigned line;
	} seen[MAX_SECTIONS];
	uint32_t n_seen;
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

/* The kind and id of a section seen before: refused on its line, named as written. */
static int once(struct cfg *c, const char *written)
{
	for (uint32_t i = 0; i < c->n_seen; i++)
		if (c->seen[i].id == c->id && !strcmp(c->seen[i].kind, c->kind)) {
			xl_fmt(c->err, XEVB_ERRBUF_SIZE,
			       "%s:%u: [%s]: section given twice (first on line %u): one section per name, its keys "
			       "together in it",
			       c->path, c->line, written, c->seen[i].line);
			return -EINVAL;
		}
	if (c->n_seen == MAX_SECTIONS) {
		xl_fmt(c->err, XEVB_ERRBUF_SIZE, "%s:%u: more than %u sections", c->path, c->line, MAX_SECTIONS);
		return -EINVAL;
	}
	snprintf(c->seen[c->n_seen].kind, sizeof(c->seen[0].kind), "%s", c->kind);
	c->seen[c->n_seen].id = c->id;
	c->seen[c->n_seen++].line = c->line;
	return 0;
}

static int section(struct cfg *c, char *name)
{
	char written[64], *sp;
	int rc;

	snprintf(written, sizeof(written), "%s", name);
	if (!*name) {
		xl_fmt(c->err, XEVB_ERRBUF_SIZE,
		       "%s:%u: '[]': a section needs a name: [run], [dfm], [builder N], ...", c->path, c->line);
		return -EINVAL;
	}
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
	if ((rc = once(c, written)))
		return rc;
	if (!strcmp(c->kind, "builder") && c->id >= 0) {
		if (c->n == MAX_MEMBERS)
			return bad(c, "section", name, "within the 1024 builders this library takes");
		c->m[c->n++] = (struct xl_member){ .role = XEVB_ROLE_BUILDER, .id = (uint16_t)c->id };
	}
	if (!strcmp(c->kind, "sink") && c->id == c->want_id)
		c->me.defined = true;
	return 0;
}

static int key_value(struct cfg *c, char *key, char *v)
{
	struct sec tmp = { 0 };
	int rc;

	double d;

	if (!strcmp(c->kind, "run") && !strcmp(key, "key_file"))
		snprintf(c->key, sizeof(c->key), "%s", v);
	else if (!strcmp(c->kind, "run") && !strcmp(key, "number")) {
		if ((rc = num(c, key, v, 0, UINT32_MAX, &d)))
			return rc;
		c->run = (uint32_t)d;
	} else if (!strcmp(c->kind, "sink") && c->id == c->want_id && !strcmp(key, "key_file"))
		snprintf(c->my_key, sizeof(c->my_key), "%s", v);
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

/* One line of the file, as inih reads it (the tools' reader). */
static int line(struct cfg *c, char *s)
{
	bool indented;
	char *eq, *semi;

	if (c->line == 1 && !strncmp(s, "\xef\xbb\xbf", 3))
		s += 3;
	indented = *s == ' ' || *s == '\t';
	s = trim(s);
	if (!*s || *s == ';' || *s == '#')
		return 0;
	if (indented && c->after_key) /* a continuation: no key of ours continues */
		return 0;
	if (*s == '[') {
		char *end = strchr(s, ']');
		if (!end) {
			xl_fmt(c->err, XEVB_ERRBUF_SIZE, "%s:%u: '%s': a section line is [NAME], closed by ]",
			       c->path, c->line, s);
			return -EINVAL;
		}
		*end = 0;
		c->after_key = false;
		return section(c, s + 1);
	}
	eq = strchr(s, '=');
	if (!eq)
		return bad(c, "line", s, "key = value");
	*eq = 0;
	semi = strstr(eq + 1, " ;");
	if (semi)
		*semi = 0;
	c->after_key = true;
	return key_value(c, trim(s), trim(eq + 1));
}

/* The next line of buf[*pos..n) into out (NUL-terminated): 0, or -EINVAL when it is too long or not text. */
static int next_line(struct cfg *c, const char *buf, size_t n, size_t *pos, char *out)
{
	const char *at = buf + *pos, *nl = memchr(at, '\n', n - *pos);
	size_t len = nl ? (size_t)(nl - at) : n - *pos;

	*pos += len + (nl ? 1 : 0);
	c->line++;
	if (memchr(at, 0, len)) {
		xl_fmt(c->err, XEVB_ERRBUF_SIZE, "%s:%u: a NUL byte: a run configuration is text", c->path,
		       c->line);
		return -EINVAL;
	}
	if (len > MAX_LINE) {
		xl_fmt(c->err, XEVB_ERRBUF_SIZE, "%s:%u: line longer than %d characters", c->path, c->line,
		       MAX_LINE);
		return -EINVAL;
	}
	memcpy(out, at, len);
	out[len] = 0;
	return 0;
}

static int read_file(struct cfg *c)
{
	char *buf = malloc(MAX_BYTES), text[MAX_LINE + 1];
	size_t pos = 0;
	ssize_t n;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	n = xl_tf_read(XL_TF_CONFIG, c->path, buf, MAX_BYTES, c->err, XEVB_ERRBUF_SIZE);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	while (!rc && pos < (size_t)n)
		if (!(rc = next_line(c, buf, (size_t)n, &pos, text)))
			rc = line(c, text);
	free(buf);
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
		f->members[n++] = (struct xl_member){ .addr = a, .port = p, .role = XEVB_ROLE_DFM, .id = 0 };
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
	if (!o->key_file && (c->my_key[0] || c->key[0])) {
		snprintf(key, key_len, "%s", c->my_key[0] ? c->my_key : c->key);
		o->key_file = key;
	}
	if (!o->run)
		o->run = c->run;
out:
	free(c);
	return rc;
}

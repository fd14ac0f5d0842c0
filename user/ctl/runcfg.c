// SPDX-License-Identifier: GPL-2.0-only
/*
 * Run configuration files (user/ctl/runcfg.h). libinih splits the file
 * into (section, key, value); we count its lines through our own reader so
 * every value can be blamed on its line, check each value against the rule
 * of its key as it comes, and check the whole (required keys, unique
 * endpoints, disjoint source ids) at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "ctl/runcfg.h"
#include "ctl/trusted_file.h"
#include <xevb/xdp_stats.h>

enum kind { K_RUN = 1, K_DFM = 2, K_BUILDER = 4, K_SOURCE = 8, K_SINK = 16 };
enum vtype { V_UINT, V_POW2, V_REAL, V_WORD, V_FLAG, V_TEXT };

/* A setting: which sections may hold it, which commands take it, as which option. */
struct rule {
	uint8_t kinds, cmds;
	const char *key, *opt;
	enum vtype type;
	double min, max;
	const char *words; /* V_WORD: the accepted values, '|'-separated */
};

#define ALL_RUN (XEVB_RC_DFM | XEVB_RC_BUILD | XEVB_RC_SOURCE)

static const struct rule rules[] = {
	{ K_RUN, XEVB_RC_DFM, "mode", "mode", V_WORD, 0, 0, "push|pull" },
	{ K_RUN, ALL_RUN, "number", "run", V_UINT, 0, UINT32_MAX, NULL },
	{ K_RUN | K_BUILDER | K_SOURCE | K_SINK, ALL_RUN | XEVB_RC_SINK, "key_file", "key-file", V_TEXT, 0, 0,
	  NULL },
	{ K_RUN, XEVB_RC_DFM, "events", "events", V_UINT, 1, 1099511627776.0, NULL },
	{ K_RUN, XEVB_RC_DFM, "duration", "duration", V_UINT, 1, 1u << 30, NULL },
	{ K_RUN, XEVB_RC_DFM, "rate", "rate", V_REAL, 0, 1e8, NULL },
	{ K_RUN, XEVB_RC_DFM, "pack", "pack", V_UINT, 1, 1024, NULL },
	{ K_RUN, XEVB_RC_DFM, "first_event", "first-event", V_UINT, 0, UINT32_MAX, NULL },
	{ K_DFM, XEVB_RC_DFM, "dead_ms", "dead-ms", V_UINT, 10, 600000, NULL },
	{ K_DFM, XEVB_RC_DFM, "hung_ms", "hung-ms", V_UINT, 0, 3600000, NULL },
	{ K_DFM, XEVB_RC_DFM, "retry_ms", "retry-ms", V_UINT, 1, 600000, NULL },
	{ K_DFM, XEVB_RC_DFM, "retry_first_ms", "retry-first-ms", V_UINT, 0, 600000, NULL },
	{ K_DFM, XEVB_RC_DFM, "max_retries", "max-retries", V_UINT, 0, 255, NULL },
	{ K_DFM, XEVB_RC_DFM, "clear_group", "clear-group", V_UINT, 1, 65536, NULL },
	{ K_DFM, XEVB_RC_DFM, "drain_ms", "drain-ms", V_UINT, 0, 600000, NULL },
	{ K_DFM, XEVB_RC_DFM, "books_ms", "books-ms", V_UINT, 0, 600000, NULL },
	{ K_DFM, XEVB_RC_DFM, "table", "table", V_POW2, 64, 1u << 24, NULL },
	{ K_DFM, XEVB_RC_DFM, "wait_builders", "wait-builders", V_UINT, 1, XEVB_RUNCFG_MAX_BUILDERS, NULL },
	{ K_DFM, XEVB_RC_DFM, "wait_sources", "wait-sources", V_UINT, 0, XEVB_RUNCFG_MAX_SOURCES, NULL },
	{ K_DFM, XEVB_RC_DFM, "wait_ms", "wait-ms", V_UINT, 100, 600000, NULL },
	{ K_DFM, XEVB_RC_DFM, "state", "state", V_TEXT, 0, 0, NULL },
	{ K_BUILDER | K_SOURCE, XEVB_RC_BUILD | XEVB_RC_SOURCE, "interface", "dev", V_TEXT, 0, 0, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "receive", "mode", V_WORD, 0, 0, "xdp|socket" },
	{ K_BUILDER | K_SOURCE, XEVB_RC_BUILD | XEVB_RC_SOURCE, "udp", "udp", V_FLAG, 0, 0, NULL },
	{ K_BUILDER | K_SINK, XEVB_RC_BUILD | XEVB_RC_SINK, "credits", "credits", V_UINT, 1, 1u << 20, NULL },
	{ K_BUILDER | K_SINK, XEVB_RC_BUILD | XEVB_RC_SINK, "busy_high", "busy-high", V_REAL, 0, 100, NULL },
	{ K_BUILDER | K_SINK, XEVB_RC_BUILD | XEVB_RC_SINK, "busy_low", "busy-low", V_REAL, 0, 100, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "reask_ms", "reask-ms", V_UINT, 1, 600000, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "max_reasks", "max-reasks", V_UINT, 0, 255, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "sink_dead_ms", "sink-dead-ms", V_UINT, 10, 600000, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "backlog", "backlog", V_UINT, 1, 1u << 20, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "timeout_ms", "timeout-ms", V_UINT, 0, 3600000, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "window", "window", V_UINT, 1, 1u << 20, NULL },
	{ K_BUILDER, XEVB_RC_BUILD, "exit_on_eor", "exit-on-eor", V_FLAG, 0, 0, NULL },
	{ K_SOURCE, XEVB_RC_SOURCE, "data_path", "mode", V_WORD, 0, 0, "socket|live" },
	{ K_SOURCE, XEVB_RC_SOURCE, "frag_size", "frag-size", V_TEXT, 0, 0, NULL },
	{ K_SOURCE, XEVB_RC_SOURCE, "hold", "hold", V_POW2, 16, 1u << 24, NULL },
	{ K_SINK, XEVB_RC_SINK, "process_rate", "process-rate", V_REAL, 0, 1e9, NULL },
	{ K_BUILDER | K_SOURCE | K_SINK, XEVB_RC_BUILD | XEVB_RC_SOURCE | XEVB_RC_SINK, "duration", "duration",
	  V_UINT, 1, 1u << 30, NULL },
	{ K_DFM | K_BUILDER | K_SINK, XEVB_RC_DFM | XEVB_RC_BUILD | XEVB_RC_SINK, "metrics", "metrics", V_TEXT, 0,
	  0, NULL },
};
#define N_RULES  (sizeof(rules) / sizeof(rules[0]))
#define SEC_NAME 50 /* inih's MAX_SECTION: it cuts longer section names there */

/* The sections' kinds: name, and the keys each knows beyond its rules (for "unknown key" messages). */
static const struct {
	const char *name;
	enum kind k;
	const char *keys;
} kinds[] = {
	{ "run", K_RUN, "" },
	{ "dfm", K_DFM, "address" },
	{ "builder", K_BUILDER, "address, ctl_port" },
	{ "source", K_SOURCE, "address, ctl_port, source_ids, mac, vlan" },
	{ "sink", K_SINK, "address, port, ctl_port" },
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* k's row in kinds (k is always one of them: section() set it). */
static size_t kind_row(enum kind k)
{
	size_t i = 0;

	while (i + 1 < N_KINDS && kinds[i].k != k)
		i++;
	return i;
}

static const char *structural_keys(enum kind k)
{
	return kinds[kind_row(k)].keys;
}

static const char *kind_name(enum kind k)
{
	return kinds[kind_row(k)].name;
}

struct parse {
	struct xevb_runcfg *c;
	const char *buf; /* the file, read whole (trusted_file.h) */
	size_t size, pos;
	unsigned line;
	unsigned header_line; /* the last "[section]" line read */
	bool after_key;       /* a key since that line: an indented line continues its value */
	char *err;
	size_t len;
	unsigned err_line;
	/* the section of each member (c->member[i]), for messages about it */
	const struct xevb_runcfg_sec
		*msec[1 + XEVB_RUNCFG_MAX_BUILDERS + XEVB_RUNCFG_MAX_SOURCES + XEVB_RUNCFG_MAX_SINKS];
	/* the current section, looked up again only when its name changes */
	char sec_name[SEC_NAME];
	enum kind kind;
	struct xevb_runcfg_sec *sec;
};

static void fail(struct parse *p, const char *sec, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Keep the first error only: "FILE:LINE: [section] key: message". */
static void fail(struct parse *p, const char *sec, const char *key, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err_line)
		return;
	p->err_line = p->line ? p->line : 1;
	if (*sec)
		n = snprintf(p->err, p->len, "%s:%u: [%s]%s%s: ", p->c->path, p->err_line, sec, key ? " " : "",
			     key ? key : "");
	else
		n = snprintf(p->err, p->len, "%s:%u: ", p->c->path, p->err_line);
	if (n < 0 || (size_t)n >= p->len)
		return;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->len - (size_t)n, fmt, ap);
	va_end(ap);
}

/* "builder 3" -> K_BUILDER, sec of id 3 (a new one if first seen); "builder" -> its defaults. */
static struct xevb_runcfg_sec *section(struct parse *p, const char *name, enum kind *kind)
{
	struct xevb_runcfg *c = p->c;
	char word[16];
	unsigned long id;
	char *end;
	int n = 0;

	if (!*name) {
		fail(p, "", NULL, "a key before any section: start with [run], [dfm], [builder N], ...");
		return NULL;
	}
	if (sscanf(name, "%15s %n", word, &n) != 1)
		goto unknown;
	for (size_t i = 0; i < N_KINDS; i++) {
		struct xevb_runcfg_sec *arr, *def;
		uint32_t *count, max;

		if (strcmp(word, kinds[i].name))
			continue;
		*kind = kinds[i].k;
		if (*kind == K_RUN || *kind == K_DFM) {
			if (name[n])
				goto unknown;
			return *kind == K_RUN ? &c->run : &c->dfm;
		}
		arr = *kind == K_BUILDER ? c->builder : *kind == K_SOURCE ? c->source : c->sink;
		def = *kind == K_BUILDER ? &c->def_builder : *kind == K_SOURCE ? &c->def_source : &c->def_sink;
		count = *kind == K_BUILDER ? &c->n_builders : *kind == K_SOURCE ? &c->n_sources : &c->n_sinks;
		max = *kind == K_BUILDER ? XEVB_RUNCFG_MAX_BUILDERS :
		      *kind == K_SOURCE  ? XEVB_RUNCFG_MAX_SOURCES :
					   XEVB_RUNCFG_MAX_SINKS;
		if (!name[n])
			return def;
		errno = 0;
		id = strtoul(name + n, &end, 10);
		if (*end || errno || id > 65535 || name[n] == '-' || name[n] == '+') {
			fail(p, name, NULL, "'%s' is not an id: expected [%s N] with N in 0..65535", name + n,
			     word);
			return NULL;
		}
		for (uint32_t j = 0; j < *count; j++)
			if (arr[j].id == id)
				return &arr[j];
		if (*count == max) {
			fail(p, name, NULL, "more than %u [%s N] sections", max, word);
			return NULL;
		}
		arr[*count].id = (uint16_t)id;
		return &arr[(*count)++];
	}
unknown:
	fail(p, name, NULL,
	     "unknown section: expected [run], [dfm], [builder N], [source N], [sink N], "
	     "or [builder], [source], [sink] for every one's defaults");
	return NULL;
}

/*
 * A "[section]" line, as inih will read it: resolved here, since inih calls
 * us per key only: two sections of one name would be merged silently, and
 * with nothing between them (or a section without keys) we would not even
 * see the second. An indented line after a key continues its value, as in
 * inih. A section may appear once.
 */
static void header(struct parse *p, const char *line)
{
	const char *start = line, *end;
	char name[SEC_NAME];
	size_t n;

	if (p->line == 1 && !strncmp(start, "\xef\xbb\xbf", 3))
		start += 3;
	start += strspn(start, " \t\r\n\v\f");
	if (*start != '[' || (start > line && p->after_key))
		return;
	p->after_key = false;
	p->header_line = p->line;
	for (end = start + 1; *end && *end != ']'; end++)
		if (*end == ';' && (end[-1] == ' ' || end[-1] == '\t'))
			break;
	if (*end != ']') {
		fail(p, "", NULL, "'%.*s': a section line is [NAME], closed by ]", (int)strcspn(start, "\r\n"),
		     start);
		return;
	}
	n = (size_t)(end - start - 1) < sizeof(name) - 1 ? (size_t)(end - start - 1) : sizeof(name) - 1;
	memcpy(name, start + 1, n);
	name[n] = 0;
	snprintf(p->sec_name, sizeof(p->sec_name), "%s", name);
	if (!*name) {
		fail(p, "", NULL, "'[]': a section needs a name: [run], [dfm], [builder N], ...");
		p->sec = NULL;
		return;
	}
	p->sec = section(p, name, &p->kind);
	if (!p->sec)
		return;
	if (p->sec->defined) {
		fail(p, name, NULL,
		     "section given twice (first on line %u): one section per name, its keys together in it",
		     p->sec->line);
		p->sec = NULL;
		return;
	}
	p->sec->defined = true;
	p->sec->line = p->line;
}

/*
 * Our ini_reader: the next line of the file (read whole), counted so the
 * handler knows its line; section lines resolved first (header()).
 */
static char *read_line(char *str, int num, void *stream)
{
	struct parse *p = stream;
	const char *at = p->buf + p->pos, *nl;
	size_t n;

	if (p->pos >= p->size)
		return NULL;
	nl = memchr(at, '\n', p->size - p->pos);
	n = nl ? (size_t)(nl - at) + 1 : p->size - p->pos;
	p->pos += n;
	p->line++;
	if (n > (size_t)num - 1) {
		/* inih would take the rest of the line as a line of its own. */
		fail(p, "", NULL, "line longer than %d characters", num - 2);
		str[0] = 0;
		return str;
	}
	memcpy(str, at, n);
	str[n] = 0;
	header(p, str);
	return str;
}

static bool parse_ip(const char *v, uint32_t *addr)
{
	struct in_addr a;

	if (inet_pton(AF_INET, v, &a) != 1 || !a.s_addr)
		return false;
	*addr = a.s_addr;
	return true;
}

static bool parse_port(const char *v, uint16_t *port)
{
	unsigned long u;
	char *end;

	errno = 0;
	u = strtoul(v, &end, 10);
	if (!*v || *end || errno || u == 0 || u > 65535 || *v == '-' || *v == '+')
		return false;
	*port = (uint16_t)u;
	return true;
}

/*
 * A source process's mac and vlan (where known): what a builder binds its
 * ids to beside the address. Every source has its own MAC; a VLAN may be
 * every source's ([source]).
 */
static bool source_l2(struct parse *p, const char *sname, const char *key, const char *v, bool is_default)
{
	struct xevb_runcfg_sec *s = p->sec;
	unsigned *line = key[0] == 'm' ? &s->mac_line : &s->vlan_line;
	char *end;
	unsigned long u;

	if (*line) {
		fail(p, sname, key, "given twice (first on line %u)", *line);
	} else if (key[0] == 'm') {
		if (is_default)
			fail(p, sname, key,
			     "every source process has its own Ethernet address: give it in [source N]");
		else if (!xevb_mac_parse(v, s->mac))
			fail(p, sname, key,
			     "'%s' is not the source host's Ethernet address: expected a unicast MAC "
			     "such as 02:00:00:00:00:01 (ip link show names it)",
			     v);
	} else {
		errno = 0;
		u = strtoul(v, &end, 10);
		if (!*v || *end || errno || *v == '-' || *v == '+' || u < 1 || u > XEVB_VLAN_ID_MAX)
			fail(p, sname, key,
			     "'%s' is not a VLAN id: expected the 802.1Q id the source's MEPs "
			     "arrive tagged with, 1..%d",
			     v, XEVB_VLAN_ID_MAX);
		else
			s->vlan = (uint16_t)u;
	}
	*line = p->line;
	return true;
}

/* address, ctl_port, port, source_ids, mac, vlan: the keys that describe the peer itself. */
static bool structural(struct parse *p, const char *sname, const char *key, const char *v)
{
	struct xevb_runcfg_sec *s = p->sec;
	bool is_default = s == &p->c->def_builder || s == &p->c->def_source || s == &p->c->def_sink;

	if (!strcmp(key, "address") && p->kind != K_RUN) {
		if (is_default) {
			fail(p, sname, key, "every %s has its own address: give it in [%s N]", kind_name(p->kind),
			     kind_name(p->kind));
		} else if (s->addr_line) {
			fail(p, sname, key, "given twice (first on line %u)", s->addr_line);
		} else if (p->kind == K_DFM) {
			struct sockaddr_in sa;
			if (xevb_ctl_parse_addr(v, &sa) || !sa.sin_addr.s_addr) {
				fail(p, sname, key,
				     "'%s' is not ADDR:PORT: expected the DFM's IPv4 address and "
				     "control port, e.g. 198.18.4.1:%u",
				     v, XEVB_CTL_DFM_PORT);
			} else {
				s->addr = sa.sin_addr.s_addr;
				s->ctl_port = ntohs(sa.sin_port);
			}
		} else if (!parse_ip(v, &s->addr)) {
			fail(p, sname, key,
			     "'%s' is not an IPv4 address: expected the host's address, e.g. 198.18.2.1 "
			     "(the port is ctl_port)",
			     v);
		}
		s->addr_line = p->line;
		return true;
	}
	if ((!strcmp(key, "ctl_port") && (p->kind & (K_BUILDER | K_SOURCE | K_SINK))) ||
	    (!strcmp(key, "port") && p->kind == K_SINK)) {
		uint16_t *dst = key[0] == 'c' ? &s->ctl_port : &s->data_port;
		if (*dst)
			fail(p, sname, key, "given twice");
		else if (!parse_port(v, dst))
			fail(p, sname, key, "'%s' is not a port: expected 1..65535", v);
		if (key[0] == 'c')
			s->port_line = p->line;
		return true;
	}
	if (!strcmp(key, "source_ids") && p->kind == K_SOURCE) {
		unsigned a, b;
		int n = 0;
		if (is_default)
			fail(p, sname, key,
			     "every source process has its own source ids: give them in [source N]");
		else if (s->ids_line)
			fail(p, sname, key, "given twice (first on line %u)", s->ids_line);
		else if (!((sscanf(v, "%u-%u%n", &a, &b, &n) == 2 && !v[n]) ||
			   (sscanf(v, "%u%n", &a, &n) == 1 && !v[n] && (b = a, 1))) ||
			 a > b || b > 4095)
			fail(p, sname, key,
			     "'%s' is not a range of source ids: expected FIRST-LAST (or one id) "
			     "within 0-4095, e.g. 0-7 (the protocol gives a source process one range)",
			     v);
		else {
			s->first_id = (uint16_t)a;
			s->n_ids = (uint16_t)(b - a + 1);
		}
		s->ids_line = p->line;
		return true;
	}
	if ((!strcmp(key, "mac") || !strcmp(key, "vlan")) && p->kind == K_SOURCE)
		return source_l2(p, sname, key, v, is_default);
	return false;
}

static bool word_ok(const char *words, const char *v)
{
	size_t n = strlen(v);

	for (const char *w = words; *w;) {
		const char *bar = strchr(w, '|');
		size_t wl = bar ? (size_t)(bar - w) : strlen(w);
		if (wl == n && !strncmp(w, v, n))
			return true;
		w += wl + (bar ? 1 : 0);
	}
	return false;
}

/* Check v against rule r; the value kept is the option's argument ("" for a flag that is off). */
static bool value_ok(struct parse *p, const char *sname, const struct rule *r, const char *v, char *out)
{
	char *end;
	double d;

	switch (r->type) {
	case V_UINT:
	case V_POW2: {
		unsigned long long u;
		errno = 0;
		u = strtoull(v, &end, 10);
		if (!*v || *end || errno || *v == '-' || *v == '+' || (double)u < r->min || (double)u > r->max) {
			fail(p, sname, r->key, "'%s' is not a whole number in %.0f..%.0f", v, r->min, r->max);
			return false;
		}
		if (r->type == V_POW2 && (u & (u - 1))) {
			fail(p, sname, r->key, "'%s' is not a power of 2 in %.0f..%.0f", v, r->min, r->max);
			return false;
		}
		break;
	}
	case V_REAL:
		errno = 0;
		d = strtod(v, &end);
		if (!*v || *end || errno || !isfinite(d) || d < r->min || d > r->max) {
			fail(p, sname, r->key, "'%s' is not a number in %g..%g", v, r->min, r->max);
			return false;
		}
		break;
	case V_WORD:
		if (!word_ok(r->words, v)) {
			fail(p, sname, r->key, "'%s' is not one of %s", v, r->words);
			return false;
		}
		break;
	case V_FLAG:
		if (strcmp(v, "true") && strcmp(v, "false")) {
			fail(p, sname, r->key, "'%s' is not true or false", v);
			return false;
		}
		if (!strcmp(v, "false"))
			v = "";
		break;
	case V_TEXT:
		if (!*v || strchr(v, ' ')) {
			fail(p, sname, r->key, "'%s': expected one word", v);
			return false;
		}
		break;
	}
	if (strlen(v) >= XEVB_RUNCFG_VAL_LEN) {
		fail(p, sname, r->key, "longer than %d characters", XEVB_RUNCFG_VAL_LEN - 1);
		return false;
	}
	strcpy(out, v);
	return true;
}

static void unknown_key(struct parse *p, const char *sname, const char *key)
{
	char known[512];
	size_t n = (size_t)snprintf(known, sizeof(known), "%s", structural_keys(p->kind));

	for (size_t i = 0; i < N_RULES && n < sizeof(known); i++)
		if (rules[i].kinds & p->kind)
			n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", n ? ", " : "", rules[i].key);
	fail(p, sname, key, "unknown key (known in [%s]: %s)", kind_name(p->kind), known);
}

static int on_key(void *user, const char *sname, const char *key, const char *v)
{
	struct parse *p = user;
	struct xevb_runcfg_sec *s;

	p->after_key = true;
	if (p->err_line)
		return 1; /* the first error is the one reported; inih reads on */
	if (!p->sec || strcmp(p->sec_name, sname)) {
		snprintf(p->sec_name, sizeof(p->sec_name), "%s", sname);
		p->sec = section(p, sname, &p->kind);
		if (!p->sec)
			return 0;
	}
	s = p->sec;
	if (!s->defined) {
		s->defined = true;
		s->line = p->header_line ? p->header_line : p->line;
	}
	if (structural(p, sname, key, v))
		return !p->err_line;
	for (size_t i = 0; i < N_RULES; i++) {
		const struct rule *r = &rules[i];
		if (!(r->kinds & p->kind) || strcmp(r->key, key))
			continue;
		for (uint32_t j = 0; j < s->n_opt; j++)
			if (s->opt[j].rule == i) {
				fail(p, sname, key, "given twice (first on line %u)", s->opt[j].line);
				return 0;
			}
		if (s->n_opt == XEVB_RUNCFG_MAX_OPTS) {
			fail(p, sname, key, "more than %d settings in one section", XEVB_RUNCFG_MAX_OPTS);
			return 0;
		}
		if (!value_ok(p, sname, r, v, s->opt[s->n_opt].val))
			return 0;
		s->opt[s->n_opt].rule = (uint8_t)i;
		s->opt[s->n_opt++].line = p->line;
		return 1;
	}
	unknown_key(p, sname, key);
	return 0;
}

static uint16_t default_port(enum kind k)
{
	return k == K_BUILDER ? XEVB_CTL_BUILDER_PORT : k == K_SOURCE ? XEVB_CTL_SOURCE_PORT : XEVB_CTL_SINK_PORT;
}

static void add_member(struct parse *p, const struct xevb_runcfg_sec *s, uint8_t role, uint16_t id)
{
	struct xevb_runcfg *c = p->c;

	p->msec[c->members.n] = s;
	c->member[c->members.n++] = (struct xevb_ctl_member){ .addr = s->addr,
							      .port = s->ctl_port,
							      .role = role,
							      .id = id,
							      .first_id = s->first_id,
							      .n_ids = s->n_ids };
}

/* "builder 2" for a member's section, "dfm" for the DFM. */
static const char *member_name(const struct xevb_ctl_member *m, const struct xevb_runcfg_sec *s, char *buf,
			       size_t len)
{
	static const char *const k[XEVB_ROLE__COUNT] = { "?", "dfm", "builder", "source", "sink" };

	if (m->role == XEVB_ROLE_DFM)
		return "dfm";
	snprintf(buf, len, "%s %u", k[m->role], s->id);
	return buf;
}

/* A peer section is complete; default ports filled in; its member entry added. */
static bool peer_ok(struct parse *p, struct xevb_runcfg_sec *s, enum kind k, const struct xevb_runcfg_sec *def)
{
	char name[32];

	snprintf(name, sizeof(name), "%s %u", kind_name(k), s->id);
	p->line = s->line;
	if (!s->addr) {
		fail(p, name, "address", "missing: every %s needs the IPv4 address of its host", kind_name(k));
		return false;
	}
	if (k == K_SOURCE && !s->n_ids) {
		fail(p, name, "source_ids", "missing: which source ids this process sends, e.g. 0-7");
		return false;
	}
	if (!s->ctl_port)
		s->ctl_port = def->ctl_port ? def->ctl_port : default_port(k);
	if (k == K_SINK && !s->data_port)
		s->data_port = def->data_port ? def->data_port : 5000;
	add_member(p, s,
		   k == K_BUILDER ? XEVB_ROLE_BUILDER :
		   k == K_SOURCE  ? XEVB_ROLE_SOURCE :
				    XEVB_ROLE_SINK,
		   k == K_SOURCE ? s->first_id : s->id);
	return true;
}

/* Members i and j share an address:port: they could not be told apart. */
static bool same_endpoint(struct parse *p, uint32_t i, uint32_t j)
{
	const struct xevb_ctl_member *a = &p->c->member[i], *b = &p->c->member[j];
	char na[32], nb[32], ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->addr, ip, sizeof(ip));
	p->line = p->msec[i]->port_line ? p->msec[i]->port_line : p->msec[i]->addr_line;
	fail(p, member_name(a, p->msec[i], na, sizeof(na)), "ctl_port",
	     "%s:%u is also the "
	     "control endpoint of [%s] (line %u): every process of the run needs its own "
	     "address:port",
	     ip, a->port, member_name(b, p->msec[j], nb, sizeof(nb)), p->msec[j]->line);
	return false;
}

/* Source processes i and j claim the same source id. */
static bool ids_overlap(struct parse *p, uint32_t i, uint32_t j)
{
	const struct xevb_ctl_member *a = &p->c->member[i], *b = &p->c->member[j];
	char na[32], nb[32];

	p->line = p->msec[i]->ids_line;
	fail(p, member_name(a, p->msec[i], na, sizeof(na)), "source_ids",
	     "%u-%u overlaps "
	     "%u-%u of [%s] (line %u): every source id belongs to one process",
	     a->first_id, a->first_id + a->n_ids - 1, b->first_id, b->first_id + b->n_ids - 1,
	     member_name(b, p->msec[j], nb, sizeof(nb)), p->msec[j]->ids_line);
	return false;
}

/*
 * Two peers on one address:port could not be told apart; two source
 * processes must not share an id. The members' map (admission by hash) is
 * built on the way: O(members), whatever the size of the run.
 */
static bool peers_distinct(struct parse *p)
{
	struct xevb_runcfg *c = p->c;
	static uint16_t owner[4096]; /* 1 + the member owning a source id */

	if (peer_map_init(&c->member_map, c->members.n)) {
		fail(p, "run", NULL, "out of memory for %u members", c->members.n);
		return false;
	}
	memset(owner, 0, sizeof(owner));
	for (uint32_t i = 0; i < c->members.n; i++) {
		const struct xevb_ctl_member *a = &c->member[i];
		uint64_t key = peer_key(a->addr, a->port);
		int64_t j = peer_map_get(&c->member_map, key);

		if (j >= 0)
			return same_endpoint(p, i, (uint32_t)j);
		peer_map_put(&c->member_map, key, i);
		for (uint32_t id = a->first_id;
		     a->role == XEVB_ROLE_SOURCE && id < a->first_id + a->n_ids && id < 4096; id++) {
			if (owner[id])
				return ids_overlap(p, i, owner[id] - 1u);
			owner[id] = (uint16_t)(i + 1);
		}
	}
	c->members.map = &c->member_map;
	return true;
}

/* Peers line by line: errors found here name the peer's own section. */
static bool check_whole(struct parse *p)
{
	struct xevb_runcfg *c = p->c;
	unsigned last = p->line;

	if (!c->dfm.addr) {
		p->line = c->dfm.defined ? c->dfm.line : last;
		fail(p, "dfm", "address",
		     "missing: the run needs its DFM's ADDR:PORT, e.g. address = 198.18.4.1:%u",
		     XEVB_CTL_DFM_PORT);
		return false;
	}
	c->members.m = c->member;
	c->members.n = 0;
	add_member(p, &c->dfm, XEVB_ROLE_DFM, 0);
	if (!c->n_builders) {
		p->line = last;
		fail(p, "builder N", NULL, "no builder: the run needs at least one [builder N] section");
		return false;
	}
	for (uint32_t i = 0; i < c->n_builders; i++)
		if (!peer_ok(p, &c->builder[i], K_BUILDER, &c->def_builder))
			return false;
	for (uint32_t i = 0; i < c->n_sources; i++)
		if (!peer_ok(p, &c->source[i], K_SOURCE, &c->def_source))
			return false;
	for (uint32_t i = 0; i < c->n_sinks; i++) {
		if (!peer_ok(p, &c->sink[i], K_SINK, &c->def_sink))
			return false;
		if (c->sink[i].ctl_port != c->sink[0].ctl_port) {
			char name[32];
			snprintf(name, sizeof(name), "sink %u", c->sink[i].id);
			p->line = c->sink[i].port_line;
			fail(p, name, "ctl_port",
			     "%u differs from [sink %u]'s %u: a builder talks to every farm node "
			     "on one control port",
			     c->sink[i].ctl_port, c->sink[0].id, c->sink[0].ctl_port);
			return false;
		}
	}
	p->line = last;
	return peers_distinct(p);
}

/* The file, read whole after trusted_file.h's checks; a NUL byte makes it no text file. */
static char *read_whole(const char *path, size_t *size, char *err, size_t len)
{
	char *buf = malloc(XEVB_RUNCFG_MAX_BYTES);
	const char *nul;
	ssize_t n;

	if (!buf) {
		snprintf(err, len, "%s: out of memory", path);
		return NULL;
	}
	n = xevb_tf_read(XEVB_TF_CONFIG, path, buf, XEVB_RUNCFG_MAX_BYTES, err, len);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	nul = memchr(buf, 0, (size_t)n);
	if (nul) {
		unsigned line = 1;
		for (const char *q = buf; q < nul; q++)
			line += *q == '\n';
		snprintf(err, len, "%s:%u: a NUL byte: a run configuration is text (docs/run-config.md)", path,
			 line);
		free(buf);
		return NULL;
	}
	*size = (size_t)n;
	return buf;
}

struct xevb_runcfg *xevb_runcfg_load(const char *path, char *err, size_t len)
{
	struct xevb_runcfg *c = calloc(1, sizeof(*c));
	struct parse p = { .c = c, .err = err, .len = len };
	char *buf;
	int r;

	if (len)
		err[0] = 0;
	if (!c) {
		snprintf(err, len, "%s: out of memory", path);
		return NULL;
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	buf = read_whole(path, &p.size, err, len);
	if (!buf) {
		free(c);
		return NULL;
	}
	p.buf = buf;
	r = ini_parse_stream(read_line, &p, on_key, &p);
	free(buf);
	if (r > 0 && !p.err_line) {
		/* inih's own complaint: a line that is neither [section] nor key = value. */
		p.line = (unsigned)r;
		fail(&p, "", NULL, "not an INI line: expected [section], key = value, or a comment (; or #)");
	}
	if (!p.err_line && r == 0)
		check_whole(&p);
	if (p.err_line || r) {
		if (!p.err_line)
			snprintf(err, len, "%s: cannot read it (inih error %d)", path, r);
		xevb_runcfg_free(c);
		return NULL;
	}
	return c;
}

void xevb_runcfg_free(struct xevb_runcfg *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->n_strs; i++)
		free(c->strs[i]);
	peer_map_free(&c->member_map);
	free(c);
}

const struct xevb_runcfg_sec *xevb_runcfg_find(const struct xevb_runcfg *c, enum xevb_runcfg_cmd cmd, uint16_t id)
{
	const struct xevb_runcfg_sec *arr = cmd == XEVB_RC_BUILD  ? c->builder :
					    cmd == XEVB_RC_SOURCE ? c->source :
					    cmd == XEVB_RC_SINK   ? c->sink :
								    NULL;
	uint32_t n = cmd == XEVB_RC_BUILD  ? c->n_builders :
		     cmd == XEVB_RC_SOURCE ? c->n_sources :
		     cmd == XEVB_RC_SINK   ? c->n_sinks :
					     0;

	for (uint32_t i = 0; i < n; i++)
		if (arr[i].id == id)
			return &arr[i];
	return NULL;
}

/* The argument vector being built: strings kept in c, a bound on their count. */
struct argv_out {
	struct xevb_runcfg *c;
	char **argv;
	int n, max;
	bool full;
};

static void arg(struct argv_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void arg(struct argv_out *o, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (o->n == o->max || o->c->n_strs == sizeof(o->c->strs) / sizeof(o->c->strs[0])) {
		o->full = true;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s) {
		o->full = true;
		return;
	}
	o->c->strs[o->c->n_strs++] = s;
	o->argv[o->n++] = s;
}

static void ip_port(struct argv_out *o, const char *opt, uint32_t addr, uint16_t port)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &addr, ip, sizeof(ip));
	arg(o, "--%s", opt);
	arg(o, "%s:%u", ip, port);
}

/*
 * One setting as the command takes it: "--opt VAL" ("--opt" for a flag),
 * or "--tune opt=VAL" where the command's option table (c->opts) makes it
 * a tuning key.
 */
static void opt_val(struct argv_out *o, const char *opt, const char *val, bool flag)
{
	const struct xevb_cfg_opt *row = o->c->opts ? xevb_cfg_find(o->c->opts, opt) : NULL;

	if (row && (row->flags & XEVB_F_TUNE)) {
		arg(o, "--tune");
		arg(o, "%s=%s", opt, flag ? "1" : val);
		return;
	}
	arg(o, "--%s", opt);
	if (!flag)
		arg(o, "%s", val);
}

/* A section's settings that cmd takes, as its options. */
static void sec_opts(struct argv_out *o, const struct xevb_runcfg_sec *s, enum xevb_runcfg_cmd cmd)
{
	for (uint32_t i = 0; i < s->n_opt; i++) {
		const struct rule *r = &rules[s->opt[i].rule];
		if (!(r->cmds & cmd) || (r->type == V_FLAG && !s->opt[i].val[0]))
			continue;
		opt_val(o, r->opt, s->opt[i].val, r->type == V_FLAG);
	}
}

/* Every source process's ids, "0-7,8-15": what a builder expects. */
static void all_source_ids(struct argv_out *o, const struct xevb_runcfg *c)
{
	char list[XEVB_RUNCFG_MAX_SOURCES * 12] = "";
	size_t n = 0;

	for (uint32_t i = 0; i < c->n_sources && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%u-%u", i ? "," : "", c->source[i].first_id,
				      c->source[i].first_id + c->source[i].n_ids - 1);
	arg(o, "--sources");
	arg(o, "%s", list);
}

/*
 * Each source process's ids bound to its address, and its MAC and VLAN
 * where the file gives them, for the builder's XDP filter.
 */
static void bind_source_ids(struct argv_out *o, const struct xevb_runcfg *c)
{
	char ip[INET_ADDRSTRLEN], mac[24] = "", mac_s[18], vlan[16];

	for (uint32_t i = 0; i < c->n_sources; i++) {
		const struct xevb_runcfg_sec *s = &c->source[i];
		const struct xevb_runcfg_sec *vs = s->vlan_line ? s : &c->def_source;

		if (!s->addr)
			continue;
		inet_ntop(AF_INET, &s->addr, ip, sizeof(ip));
		mac[0] = vlan[0] = 0;
		if (s->mac_line)
			snprintf(mac, sizeof(mac), ",mac=%s", xevb_mac_str(s->mac, mac_s));
		if (vs->vlan_line)
			snprintf(vlan, sizeof(vlan), ",vlan=%u", vs->vlan);
		arg(o, "--bind-src");
		arg(o, "%u-%u=%s%s%s", s->first_id, s->first_id + s->n_ids - 1, ip, mac, vlan);
	}
}

int xevb_runcfg_args(struct xevb_runcfg *c, enum xevb_runcfg_cmd cmd, uint16_t id, char **argv, int max, char *err,
		     size_t len)
{
	struct argv_out o = { .c = c, .argv = argv, .max = max };
	const struct xevb_runcfg_sec *s = NULL;

	if (cmd != XEVB_RC_DFM && !(s = xevb_runcfg_find(c, cmd, id))) {
		const char *k = cmd == XEVB_RC_BUILD ? "builder" : cmd == XEVB_RC_SOURCE ? "source" : "sink";
		snprintf(err, len, "%s: no [%s %u] section: --id must name one of its %ss", c->path, k, id, k);
		return -1;
	}
	sec_opts(&o, &c->run, cmd);
	switch (cmd) {
	case XEVB_RC_DFM:
		ip_port(&o, "listen", c->dfm.addr, c->dfm.ctl_port);
		arg(&o, "--wait-builders");
		arg(&o, "%u", c->n_builders);
		arg(&o, "--wait-sources");
		arg(&o, "%u", c->n_sources);
		sec_opts(&o, &c->dfm, cmd);
		break;
	case XEVB_RC_BUILD:
		ip_port(&o, "dfm", c->dfm.addr, c->dfm.ctl_port);
		arg(&o, "--id");
		arg(&o, "%u", id);
		arg(&o, "--ctl-port");
		arg(&o, "%u", s->ctl_port);
		if (c->n_sources) {
			all_source_ids(&o, c);
			bind_source_ids(&o, c);
		}
		for (uint32_t i = 0; i < c->n_sinks; i++)
			ip_port(&o, "sink", c->sink[i].addr, c->sink[i].data_port);
		if (c->n_sinks) {
			char port[8];

			snprintf(port, sizeof(port), "%u", c->sink[0].ctl_port);
			opt_val(&o, "sink-ctl-port", port, false);
		}
		sec_opts(&o, &c->def_builder, cmd);
		break;
	case XEVB_RC_SOURCE:
		ip_port(&o, "dfm", c->dfm.addr, c->dfm.ctl_port);
		arg(&o, "--ctl-port");
		arg(&o, "%u", s->ctl_port);
		arg(&o, "--source-ids");
		arg(&o, "%u-%u", s->first_id, s->first_id + s->n_ids - 1);
		sec_opts(&o, &c->def_source, cmd);
		break;
	case XEVB_RC_SINK:
		ip_port(&o, "listen", s->addr, s->data_port);
		/* It tells the DFM what each builder delivered: the books close at the farm nodes. */
		ip_port(&o, "dfm", c->dfm.addr, c->dfm.ctl_port);
		arg(&o, "--ctl-port");
		arg(&o, "%u", s->ctl_port);
		arg(&o, "--id");
		arg(&o, "%u", id);
		sec_opts(&o, &c->def_sink, cmd);
		break;
	}
	if (s)
		sec_opts(&o, s, cmd);
	if (o.full) {
		snprintf(err, len, "%s: too many options for one command line", c->path);
		return -1;
	}
	return o.n;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metrics endpoint (user/ops/metrics.h): one thread serving up to
 * XEVB_METRICS_CLIENTS clients at once, each with one deadline for its
 * whole request. Every byte of a request is hostile: the request line is
 * matched (http_req.c), never parsed further.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "base/cli.h"
#include "base/json.h"
#include "ops/http_req.h"
#include "ops/metrics.h"

#define REQ_DEADLINE_MS 2000 /* a whole exchange, request and reply */
#define REQ_GRACE_MS    250  /* a client this new keeps its slot: a scrape needs far less */
#define PAGE_MAX        (64u << 20)

enum drop_reason { DROP_DEADLINE, DROP_EVICTED, DROP__COUNT };
static const char *const drop_names[DROP__COUNT] = { "deadline", "evicted" };

enum item_kind { ITEM_COUNTER, ITEM_GAUGE, ITEM_RENDER };

struct item {
	enum item_kind kind;
	char *name, *help, *labels;
	const uint64_t *value;
	xevb_metrics_render_fn fn;
	void *ctx;
};

struct xevb_metrics {
	int lfd;
	int stop_pipe[2];
	uint16_t port;
	pthread_t thr;
	bool running;
	pthread_mutex_t lock;
	struct item *items;
	size_t n_items, cap_items;
	uint64_t scrapes, bad_requests;
	uint64_t dropped[DROP__COUNT]; /* clients closed unanswered, by reason */
	struct client *clients;        /* XEVB_METRICS_CLIENTS slots, the server thread's */
};

/* ---- text ---- */

void xevb_mbuf_printf(struct xevb_mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 16384;
		while (cap - b->len <= (size_t)n)
			cap *= 2;
		char *p = cap <= PAGE_MAX ? realloc(b->p, cap) : NULL;
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

/* A HELP line ends at its newline: a backslash and a newline in the text are escaped. */
void xevb_metric_family(struct xevb_mbuf *b, const char *name, const char *type, const char *help)
{
	xevb_mbuf_printf(b, "# HELP %s ", name);
	for (size_t n; *help; help += n) {
		n = strcspn(help, "\\\n");
		xevb_mbuf_printf(b, "%.*s", (int)n, help);
		if (help[n])
			xevb_mbuf_printf(b, "%s", help[n++] == '\n' ? "\\n" : "\\\\");
	}
	xevb_mbuf_printf(b, "\n# TYPE %s %s\n", name, type);
}

void xevb_metric_u64(struct xevb_mbuf *b, const char *name, const char *labels, uint64_t v)
{
	if (labels && *labels)
		xevb_mbuf_printf(b, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
	else
		xevb_mbuf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

void xevb_metric_f64(struct xevb_mbuf *b, const char *name, const char *labels, double v)
{
	if (labels && *labels)
		xevb_mbuf_printf(b, "%s{%s} %.9g\n", name, labels, v);
	else
		xevb_mbuf_printf(b, "%s %.9g\n", name, v);
}

void xevb_metric_one(struct xevb_mbuf *b, const char *name, const char *type, const char *help, uint64_t v)
{
	xevb_metric_family(b, name, type, help);
	xevb_metric_u64(b, name, NULL, v);
}

bool xevb_metric_name_ok(const char *name)
{
	if (!name || !*name ||
	    !(name[0] == '_' || name[0] == ':' || (name[0] >= 'a' && name[0] <= 'z') ||
	      (name[0] >= 'A' && name[0] <= 'Z')))
		return false;
	for (const char *c = name; *c; c++)
		if (!(*c == '_' || *c == ':' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

/*
 * The next character of s (n > 0 bytes left) as label-value text in out:
 * its length; *used: the input it took.
 */
static size_t prom_char(const unsigned char *s, size_t n, char out[4], size_t *used)
{
	size_t len = xevb_utf8_seq(s, n);

	*used = len ? len : 1;
	if (!len) {
		memcpy(out, "\xef\xbf\xbd", 3); /* U+FFFD: a label value must be UTF-8 */
		return 3;
	}
	if (s[0] == '\\' || s[0] == '"' || s[0] == '\n') {
		out[0] = '\\';
		out[1] = s[0] == '\n' ? 'n' : (char)s[0];
		return 2;
	}
	memcpy(out, s, len);
	return len;
}

const char *xevb_prom_qn(char *buf, size_t len, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strnlen((const char *)p, max), used, k = 0, w;
	char out[4];

	if (len < 3) { /* not even "" */
		if (len)
			buf[0] = 0;
		return buf;
	}
	buf[k++] = '"';
	while (n) {
		w = prom_char(p, n, out, &used);
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

const char *xevb_prom_q(char *buf, size_t len, const char *s)
{
	return xevb_prom_qn(buf, len, s, SIZE_MAX);
}

/* A quoted label value at *p: past it, or NULL if it is not one. */
static const char *label_value_end(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		size_t len = xevb_utf8_seq((const unsigned char *)p, 4);

		if (!len || *p == '\n')
			return NULL;
		if (*p == '\\') {
			if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
				return NULL;
			len = 2;
		}
		p += len;
	}
	return p + 1;
}

bool xevb_metric_labels_ok(const char *labels)
{
	const char *p = labels;

	if (!p || !*p)
		return true;
	while (*p) {
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			return false;
		while (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9'))
			p++;
		if (*p++ != '=' || !(p = label_value_end(p)))
			return false;
		if (*p == ',')
			p++;
		else if (*p)
			return false;
	}
	return true;
}

/* ---- registry ---- */

static int add_item(struct xevb_metrics *m, struct item it)
{
	int rc = -1;

	pthread_mutex_lock(&m->lock);
	if (m->n_items == m->cap_items) {
		size_t cap = m->cap_items ? m->cap_items * 2 : 32;
		struct item *p = realloc(m->items, cap * sizeof(*p));
		if (!p)
			goto out;
		m->items = p;
		m->cap_items = cap;
	}
	m->items[m->n_items++] = it;
	rc = 0;
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int add_value(struct xevb_metrics *m, enum item_kind kind, const char *name, const char *help,
		     const char *labels, const uint64_t *value)
{
	struct item it = { .kind = kind, .value = value };

	if (!xevb_metric_name_ok(name) || !value) {
		xevb_err("metrics: '%s' is not a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", name ? name : "");
		return -1;
	}
	if (!xevb_metric_labels_ok(labels)) {
		xevb_err(
			"metrics: %s: labels '%s' are not name=\"value\" pairs with \\, \" and newline escaped "
			"(xevb_prom_q)",
			name, labels);
		return -1;
	}
	it.name = strdup(name);
	it.help = strdup(help ? help : name);
	it.labels = labels && *labels ? strdup(labels) : NULL;
	if (!it.name || !it.help || (labels && *labels && !it.labels) || add_item(m, it)) {
		free(it.name);
		free(it.help);
		free(it.labels);
		xevb_err("metrics: out of memory registering %s", name);
		return -1;
	}
	return 0;
}

int xevb_metrics_counter(struct xevb_metrics *m, const char *name, const char *help, const char *labels,
			 const uint64_t *value)
{
	return add_value(m, ITEM_COUNTER, name, help, labels, value);
}

int xevb_metrics_gauge(struct xevb_metrics *m, const char *name, const char *help, const char *labels,
		       const uint64_t *value)
{
	return add_value(m, ITEM_GAUGE, name, help, labels, value);
}

int xevb_metrics_render(struct xevb_metrics *m, xevb_metrics_render_fn fn, void *ctx)
{
	struct item it = { .kind = ITEM_RENDER, .fn = fn, .ctx = ctx };

	if (!fn || add_item(m, it)) {
		xevb_err("metrics: cannot register a render callback");
		return -1;
	}
	return 0;
}

/* One family per name: HELP/TYPE once, before the first of its samples. */
static void render_page(struct xevb_metrics *m, struct xevb_mbuf *b)
{
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_items; i++) {
		const struct item *it = &m->items[i];
		bool first = true;

		if (it->kind == ITEM_RENDER) {
			it->fn(b, it->ctx);
			continue;
		}
		for (size_t j = 0; j < i; j++)
			if (m->items[j].kind != ITEM_RENDER && !strcmp(m->items[j].name, it->name))
				first = false;
		if (!first)
			continue;
		xevb_metric_family(b, it->name, it->kind == ITEM_COUNTER ? "counter" : "gauge", it->help);
		for (size_t j = i; j < m->n_items; j++) {
			const struct item *o = &m->items[j];
			if (o->kind != ITEM_RENDER && !strcmp(o->name, it->name))
				xevb_metric_u64(b, o->name, o->labels,
						__atomic_load_n(o->value, __ATOMIC_RELAXED));
		}
	}
	pthread_mutex_unlock(&m->lock);
	xevb_metric_one(b, "xevb_metrics_scrapes_total", "counter", "Scrapes of this endpoint served.",
			++m->scrapes);
	xevb_metric_one(b, "xevb_metrics_bad_requests_total", "counter",
			"Requests to this endpoint that were refused.", m->bad_requests);
	xevb_metric_family(b, "xevb_metrics_clients_dropped_total", "counter",
			   "Clients closed unanswered: past the deadline for a whole request, or evicted "
			   "by a newcomer with every slot taken.");
	for (int r = 0; r < DROP__COUNT; r++) {
		char l[32];
		snprintf(l, sizeof(l), "reason=\"%s\"", drop_names[r]);
		xevb_metric_u64(b, "xevb_metrics_clients_dropped_total", l, m->dropped[r]);
	}
}

/* ---- HTTP ---- */

/*
 * Each client is served in a slot of its own from one poll() loop, with one
 * deadline for the whole exchange (request head in, reply out), so a client
 * that drips bytes delays nobody else. With every slot taken, a newcomer
 * takes the slot of the oldest client once that one has had REQ_GRACE_MS;
 * until then newcomers wait in the listen backlog (bounded by the kernel).
 * So clients that reconnect as fast as they are evicted cannot evict a
 * real scrape before it is answered, and it waits at most a grace period
 * for each slot's turn.
 */
struct client {
	int fd; /* -1: a free slot */
	uint64_t deadline_ms;
	size_t got; /* request bytes in req */
	char *out;  /* the whole reply, once the request is matched */
	size_t out_len, out_off;
	char req[XEVB_HTTP_REQ_MAX];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
}

static void client_drop(struct xevb_metrics *m, struct client *c, enum drop_reason why)
{
	m->dropped[why]++;
	client_close(c);
}

/* The reply, head and body in one buffer: sent as the socket takes it. */
static void client_reply(struct client *c, const char *status, const char *ctype, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, ctype, len);

	c->out = malloc((size_t)n + len);
	if (!c->out)
		return; /* nothing to send: the caller closes */
	memcpy(c->out, head, (size_t)n);
	memcpy(c->out + n, body, len);
	c->out_len = (size_t)n + len;
	c->out_off = 0;
}

static void client_answer(struct xevb_metrics *m, struct client *c, enum xevb_http_req what)
{
	if (what == XEVB_HTTP_METRICS) {
		struct xevb_mbuf b = { 0 };

		render_page(m, &b);
		if (b.oom) {
			static const char msg[] = "out of memory rendering the metrics\n";
			client_reply(c, "500 Internal Server Error", "text/plain", msg, sizeof(msg) - 1);
		} else {
			client_reply(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8", b.p ? b.p : "",
				     b.len);
		}
		free(b.p);
		return;
	}
	m->bad_requests++;
	if (what == XEVB_HTTP_NOT_FOUND) {
		static const char msg[] = "not found: the metrics are at /metrics\n";
		client_reply(c, "404 Not Found", "text/plain", msg, sizeof(msg) - 1);
	} else {
		static const char msg[] = "only GET /metrics\n";
		client_reply(c, "405 Method Not Allowed", "text/plain", msg, sizeof(msg) - 1);
	}
}

/* Readable: take what is there; once the head is in, the reply is ready to go. */
static void client_read(struct xevb_metrics *m, struct client *c)
{
	enum xevb_http_req what;
	bool at_end = false;
	ssize_t r = recv(c->fd, c->req + c->got, sizeof(c->req) - c->got, MSG_DONTWAIT);

	if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (r < 0) {
		client_close(c);
		return;
	}
	if (r == 0)
		at_end = true;
	c->got += (size_t)r;
	what = xevb_http_req_match(c->req, c->got, at_end);
	if (what == XEVB_HTTP_INCOMPLETE)
		return;
	if (!c->got) {
		client_close(c); /* connected and left: nothing to answer */
		return;
	}
	client_answer(m, c, what);
	if (!c->out)
		client_close(c);
}

static void client_write(struct client *c)
{
	ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (w <= 0) {
		client_close(c); /* the client went away: its loss */
		return;
	}
	c->out_off += (size_t)w;
	if (c->out_off == c->out_len)
		client_close(c);
}

/* A free slot, else the oldest client's (it may not be past its grace yet). */
static struct client *client_slot(struct client *cl)
{
	struct client *oldest = &cl[0];

	for (int i = 0; i < XEVB_METRICS_CLIENTS; i++) {
		if (cl[i].fd < 0)
			return &cl[i];
		if (cl[i].deadline_ms < oldest->deadline_ms)
			oldest = &cl[i];
	}
	return oldest;
}

/* When a newcomer may have the slot: now, or once the oldest's grace ends. */
static uint64_t slot_free_at(struct client *c)
{
	return c->fd < 0 ? 0 : c->deadline_ms - REQ_DEADLINE_MS + REQ_GRACE_MS;
}

static void accept_one(struct xevb_metrics *m, struct client *c, uint64_t now)
{
	int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (c->fd >= 0)
		client_drop(m, c, DROP_EVICTED);
	c->fd = fd;
	c->got = 0;
	c->deadline_ms = now + REQ_DEADLINE_MS;
}

static void *server(void *arg)
{
	struct xevb_metrics *m = arg;
	struct client *cl = m->clients;
	struct pollfd pfd[2 + XEVB_METRICS_CLIENTS];
	sigset_t all;

	/* Signals are the main thread's business (its stop flag, its poll). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (int i = 0; i < XEVB_METRICS_CLIENTS; i++)
		cl[i].fd = -1;
	for (;;) {
		uint64_t now = now_ms(), next = now + 60000, free_at;
		struct client *slot;
		int n = 2;

		pfd[1] = (struct pollfd){ .fd = m->stop_pipe[0], .events = POLLIN };
		for (int i = 0; i < XEVB_METRICS_CLIENTS; i++) {
			struct client *c = &cl[i];

			if (c->fd >= 0 && now >= c->deadline_ms)
				client_drop(m, c, DROP_DEADLINE);
			if (c->fd < 0) {
				pfd[n++] = (struct pollfd){ .fd = -1 };
				continue;
			}
			if (c->deadline_ms < next)
				next = c->deadline_ms;
			pfd[n++] = (struct pollfd){ .fd = c->fd, .events = c->out ? POLLOUT : POLLIN };
		}
		/* Newcomers wait in the backlog while no slot can be had. */
		slot = client_slot(cl);
		free_at = slot_free_at(slot);
		pfd[0] = (struct pollfd){ .fd = free_at <= now ? m->lfd : -1, .events = POLLIN };
		if (free_at > now && free_at < next)
			next = free_at;
		if (poll(pfd, (nfds_t)n, (int)(next - now)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		for (int i = 0; i < XEVB_METRICS_CLIENTS; i++) {
			struct client *c = &cl[i];
			short re = pfd[2 + i].revents;

			if (c->fd < 0 || !re)
				continue;
			if (c->out)
				client_write(c);
			else
				client_read(m, c);
		}
		if (pfd[0].revents & POLLIN)
			accept_one(m, client_slot(cl), now_ms());
	}
	for (int i = 0; i < XEVB_METRICS_CLIENTS; i++)
		client_close(&cl[i]);
	return NULL;
}

static int parse_spec(const char *spec, struct sockaddr_in *sa)
{
	char host[64] = "127.0.0.1";
	const char *colon = strrchr(spec, ':'), *port_s = spec;
	char *end;
	unsigned long port;

	if (colon) {
		size_t hl = (size_t)(colon - spec);
		if (hl == 0 || hl >= sizeof(host))
			return -1;
		memcpy(host, spec, hl);
		host[hl] = 0;
		port_s = colon + 1;
	}
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (!*port_s || *end || errno || port > 65535)
		return -1;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

struct xevb_metrics *xevb_metrics_start(const char *spec)
{
	struct xevb_metrics *m;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int one = 1, err;

	if (!spec || parse_spec(spec, &sa)) {
		xevb_err("--metrics '%s': give PORT (loopback) or IPV4ADDR:PORT", spec ? spec : "");
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		xevb_err("metrics: out of memory");
		return NULL;
	}
	m->stop_pipe[0] = m->stop_pipe[1] = -1;
	pthread_mutex_init(&m->lock, NULL);
	m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); /* poll()ed, never waited on */
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(m->lfd, 64) ||
	    getsockname(m->lfd, (struct sockaddr *)&sa, &sl)) {
		xevb_err("--metrics %s: cannot listen: %s (port taken? another address?)", spec, strerror(errno));
		goto fail;
	}
	m->port = ntohs(sa.sin_port);
	m->clients = calloc(XEVB_METRICS_CLIENTS, sizeof(*m->clients));
	if (!m->clients) {
		xevb_err("metrics: out of memory");
		goto fail;
	}
	if (pipe2(m->stop_pipe, O_CLOEXEC)) {
		xevb_err("metrics: pipe: %s", strerror(errno));
		goto fail;
	}
	err = pthread_create(&m->thr, NULL, server, m);
	if (err) {
		xevb_err("metrics: cannot start the server thread: %s", strerror(err));
		goto fail;
	}
	m->running = true;
	{
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &sa.sin_addr, a, sizeof(a));
		xevb_info("metrics on http://%s:%u/metrics", a, m->port);
	}
	return m;
fail:
	xevb_metrics_stop(m);
	return NULL;
}

uint16_t xevb_metrics_port(const struct xevb_metrics *m)
{
	return m->port;
}

void xevb_metrics_stop(struct xevb_metrics *m)
{
	if (!m)
		return;
	if (m->running) {
		ssize_t w = write(m->stop_pipe[1], "x", 1);
		(void)w;
		pthread_join(m->thr, NULL);
	}
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->stop_pipe[0] >= 0)
		close(m->stop_pipe[0]);
	if (m->stop_pipe[1] >= 0)
		close(m->stop_pipe[1]);
	for (size_t i = 0; i < m->n_items; i++) {
		free(m->items[i].name);
		free(m->items[i].help);
		free(m->items[i].labels);
	}
	free(m->items);
	free(m->clients);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

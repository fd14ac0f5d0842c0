// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metrics endpoint (include/xevb/metrics.h): one thread, one
 * connection at a time, bounded reads with a timeout. Every byte of a
 * request is hostile: the request line is matched, never parsed further.
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
#include <unistd.h>
#include <xevb/cli.h>
#include <xevb/metrics.h>

#define REQ_MAX      4096
#define IO_TIMEOUT_S 2
#define PAGE_MAX     (64u << 20)

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

void xevb_metric_family(struct xevb_mbuf *b, const char *name, const char *type, const char *help)
{
	xevb_mbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
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
	if (!name || !*name || !(name[0] == '_' || name[0] == ':' ||
				 (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
		return false;
	for (const char *c = name; *c; c++)
		if (!(*c == '_' || *c == ':' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
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

static int add_value(struct xevb_metrics *m, enum item_kind kind, const char *name,
		     const char *help, const char *labels, const uint64_t *value)
{
	struct item it = { .kind = kind, .value = value };

	if (!xevb_metric_name_ok(name) || !value) {
		xevb_err("metrics: '%s' is not a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", name ? name : "");
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

int xevb_metrics_counter(struct xevb_metrics *m, const char *name, const char *help,
			 const char *labels, const uint64_t *value)
{
	return add_value(m, ITEM_COUNTER, name, help, labels, value);
}

int xevb_metrics_gauge(struct xevb_metrics *m, const char *name, const char *help,
		       const char *labels, const uint64_t *value)
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
	xevb_metric_one(b, "xevb_metrics_scrapes_total", "counter",
			"Scrapes of this endpoint served.", ++m->scrapes);
	xevb_metric_one(b, "xevb_metrics_bad_requests_total", "counter",
			"Requests to this endpoint that were refused.", m->bad_requests);
}

/* ---- HTTP ---- */

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;  /* the client went away or stalled: its loss */
		p += w;
		n -= (size_t)w;
	}
}

static void reply(int fd, const char *status, const char *ctype, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, ctype, len);
	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

static void serve(struct xevb_metrics *m, int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	char req[REQ_MAX + 1];
	size_t got = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* Up to the end of the head; a client that never ends it times out. */
	while (got < REQ_MAX) {
		ssize_t r = recv(fd, req + got, REQ_MAX - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		req[got] = 0;
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[got] = 0;
	if (!strncmp(req, "GET /metrics ", 13) || !strncmp(req, "GET / ", 6) ||
	    !strncmp(req, "GET /metrics?", 13)) {
		struct xevb_mbuf b = { 0 };

		render_page(m, &b);
		if (b.oom) {
			static const char msg[] = "out of memory rendering the metrics\n";
			reply(fd, "500 Internal Server Error", "text/plain", msg, sizeof(msg) - 1);
		} else {
			reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", b.p ? b.p : "", b.len);
		}
		free(b.p);
		return;
	}
	m->bad_requests++;
	if (!strncmp(req, "GET ", 4)) {
		static const char msg[] = "not found: the metrics are at /metrics\n";
		reply(fd, "404 Not Found", "text/plain", msg, sizeof(msg) - 1);
	} else {
		static const char msg[] = "only GET /metrics\n";
		reply(fd, "405 Method Not Allowed", "text/plain", msg, sizeof(msg) - 1);
	}
}

static void *server(void *arg)
{
	struct xevb_metrics *m = arg;
	sigset_t all;

	/* Signals are the main thread's business (its stop flag, its poll). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = m->lfd, .events = POLLIN },
			{ .fd = m->stop_pipe[0], .events = POLLIN },
		};
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		if (pfd[0].revents & POLLIN) {
			int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				serve(m, fd);
				close(fd);
			}
		}
	}
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
	m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(m->lfd, 16) ||
	    getsockname(m->lfd, (struct sockaddr *)&sa, &sl)) {
		xevb_err("--metrics %s: cannot listen: %s (port taken? another address?)", spec, strerror(errno));
		goto fail;
	}
	m->port = ntohs(sa.sin_port);
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
	pthread_mutex_destroy(&m->lock);
	free(m);
}

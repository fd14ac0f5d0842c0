// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Builder connections: accept, read into chunks, cut whole events out
 * where they lie (farm.h says how the buffers work). Every byte is
 * hostile: a stream that breaks a rule of the wire format costs its
 * connection, counted and logged, never the handle.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "farm.h"

#define READS_PER_WAKEUP 16 /* then the other connections have a turn */
/*
 * Full reads that brought events before the caller has them: the caller
 * checks each read's events while they are still in cache. Two (1 MiB
 * between the copy and the check) cost 1.3% more CPU per event flat out,
 * measured side by side (scripts/bench/bench-sink-ab.sh).
 */
#define FULL_READS 1
/*
 * Bytes a read asks for at most: what the old sink's reader took at
 * saturation (its buffer grew to 512 KiB). Flat out, a read of 256 KiB
 * made the farm node slower than one of 512 KiB (docs/benchmarks.md):
 * each read costs more than its copy, while 512 KiB of destination is as
 * warm as 256 KiB.
 */
#define READ_MAX     (512u * 1024)
#define MOVE_MAX     (64u * 1024) /* a partial event moved to its buffer's front at most (or when it must) */
#define MOVE_SHARE   8            /* ... and only when the bytes before it are this many times its size */
#define LOG_FIRST    20
#define LOG_EVERY_NS 10000000000ull

void xl_chunk_put(struct xevb_farm *f, struct xl_chunk *ch)
{
	if (--ch->refs)
		return;
	/*
	 * A 1 MiB chunk is kept for the next one a connection needs: a fresh
	 * one costs a mapping and a page fault for each of its pages, more
	 * than reading and checking the events in it. Counted against
	 * max_buffer still (not in buffer_bytes, the chunks in use); freed
	 * when room is short.
	 */
	f->st.buffer_bytes -= ch->cap;
	if (ch->cap == XL_CHUNK && f->n_spares < XL_SPARES && !f->closing) {
		ch->next_spare = f->spares;
		f->spares = ch;
		f->n_spares++;
		return;
	}
	free(ch);
}

void xl_farm_drop_spares(struct xevb_farm *f)
{
	while (f->spares) {
		struct xl_chunk *ch = f->spares;
		f->spares = ch->next_spare;
		f->n_spares--;
		free(ch);
	}
}

/* true at most once a LOG_EVERY_NS per *last (a hostile peer must not flood the log). */
static bool log_due(uint64_t *last)
{
	uint64_t now = xl_mono_ns();

	if (*last && now - *last < LOG_EVERY_NS)
		return false;
	*last = now;
	return true;
}

/* A broken stream, counted by kind: the first ones logged, then one a LOG_EVERY_NS. */
static void stream_error(struct xevb_farm *f, struct xl_conn *c, int kind, const char *msg)
{
	f->st.conns_broken++;
	f->st.broken[kind < XEVB_BROKEN_SLOTS ? kind : 0]++;
	if (++f->stream_logged > LOG_FIRST && !log_due(&f->stream_log_ns))
		return;
	xl_log(&f->log, XEVB_LIB_LOG_WARN, "%s: %s: %s; connection closed after %llu events (%llu broken so far)",
	       c->name, xevb_broken_name(kind), msg, (unsigned long long)c->events,
	       (unsigned long long)f->st.conns_broken);
}

static void accept_resume(struct xevb_farm *f)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = (void *)1 };

	if (f->accept_paused && !epoll_ctl(f->ep, EPOLL_CTL_MOD, f->lfd, &e))
		f->accept_paused = false;
}

/*
 * Out of descriptors: a level-triggered listening socket would wake the
 * caller's loop for ever. It is not watched until a connection closes or
 * a second passes; the kernel's backlog holds the newcomers meanwhile.
 */
static void accept_pause(struct xevb_farm *f, int err)
{
	struct epoll_event e = { .events = 0, .data.ptr = (void *)1 };

	f->st.conns_refused++;
	f->st.accept_fd_limit++;
	/* Tried again every second (xl_farm_check): said once a LOG_EVERY_NS. */
	if (log_due(&f->fd_log_ns))
		xl_log(&f->log, XEVB_LIB_LOG_WARN,
		       "accept: %s with %u connections open: not accepting until one closes (raise ulimit -n; "
		       "%llu times so far, said at most every %llu s)",
		       strerror(err), f->n_conns, (unsigned long long)f->st.accept_fd_limit,
		       LOG_EVERY_NS / 1000000000ull);
	f->accept_paused = !epoll_ctl(f->ep, EPOLL_CTL_MOD, f->lfd, &e);
}

void xl_farm_check(struct xevb_farm *f, uint64_t now)
{
	uint64_t limit = (uint64_t)f->o.partial_timeout_ms * 1000000ull;

	if (now < f->next_check)
		return;
	f->next_check = now + 1000000000ull;
	accept_resume(f);
	for (uint32_t i = f->n_conns; i-- > 0;) {
		struct xl_conn *c = f->conns[i];
		char msg[128];
		if (!c->partial_since || now - c->partial_since < limit)
			continue;
		snprintf(msg, sizeof(msg), "%zu bytes of an event held for over %u ms (partial_timeout_ms)",
			 c->tail - c->head, f->o.partial_timeout_ms);
		xl_farm_conn_close(f, c, XEVB_BROKEN_STALLED, msg);
	}
}

void xl_farm_conn_close(struct xevb_farm *f, struct xl_conn *c, int kind, const char *why)
{
	if (kind)
		stream_error(f, c, kind, why);
	else
		xl_log(&f->log, XEVB_LIB_LOG_INFO, "%s: closed after %llu events", c->name,
		       (unsigned long long)c->events);
	close(c->fd); /* also leaves the epoll set */
	f->builders[c->builder].ended = !kind;
	f->st.conns_ended += !kind;
	if (c->ch)
		xl_chunk_put(f, c->ch);
	f->builders[c->builder].conns_open--;
	f->conns[c->slot] = f->conns[f->n_conns - 1];
	f->conns[c->slot]->slot = c->slot;
	f->n_conns--;
	f->st.conns_open--;
	if (c->paused)
		f->n_paused--;
	free(c);
	accept_resume(f); /* a descriptor is free again */
	/* Its buffers are free: connections paused for room may go on (not while the handle closes). */
	if (f->n_paused && !f->closing)
		xl_farm_resume(f);
}

static void pause_conn(struct xevb_farm *f, struct xl_conn *c)
{
	c->partial_since = 0; /* held back by us, not stalled */
	if (c->paused)
		return;
	epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
	c->paused = true;
	f->n_paused++;
	f->st.read_pauses++;
}

/* Something was freed: read paused connections again (make_room pauses them again if still short). */
void xl_farm_resume(struct xevb_farm *f)
{
	for (uint32_t i = 0; i < f->n_conns; i++) {
		struct xl_conn *c = f->conns[i];
		struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
		if (c->paused && !epoll_ctl(f->ep, EPOLL_CTL_ADD, c->fd, &e)) {
			c->paused = false;
			f->n_paused--;
		}
	}
}

/*
 * No room for size bytes more in the buffers: pause the connection while
 * the caller holds events (done() frees room), else close it. Then only
 * connections' partial events fill the buffers, and their peers may never
 * finish them (a hostile host claiming large events): waiting could last
 * for ever, so the one that needs more goes. true: there is room.
 */
static bool room_for(struct xevb_farm *f, struct xl_conn *c, size_t more)
{
	char msg[192];

	if (f->st.buffer_bytes + (uint64_t)f->n_spares * XL_CHUNK + more <= f->o.max_buffer)
		return true;
	xl_farm_drop_spares(f);
	if (f->st.buffer_bytes + more <= f->o.max_buffer)
		return true;
	if (f->st.held) {
		pause_conn(f, c);
		return false;
	}
	snprintf(msg, sizeof(msg),
		 "an event of %zu bytes: the buffers hold %llu of max_buffer %llu in partial events, none held "
		 "by the caller",
		 c->want, (unsigned long long)f->st.buffer_bytes, (unsigned long long)f->o.max_buffer);
	xl_farm_conn_close(f, c, XEVB_BROKEN_BUFFER, msg);
	return false;
}

static void count_buffer(struct xevb_farm *f, size_t added)
{
	f->st.buffer_bytes += added;
	if (f->st.buffer_bytes > f->st.buffer_bytes_max)
		f->st.buffer_bytes_max = f->st.buffer_bytes;
}

/*
 * Room to read into: the current chunk while it has room for the partial
 * event (its length known: exactly that; else 4 KiB more), else a larger
 * one. A chunk no event points into grows where it is (a large one's
 * pages are moved, not copied) and counts only what it adds; one with
 * events in it stays for them, the partial event copied to a new one. A
 * chunk grown for an event is exactly its size: it goes with the event.
 * false: paused or closed (room_for), or out of memory (closed).
 */
static bool make_room(struct xevb_farm *f, struct xl_conn *c)
{
	size_t held = c->tail - c->head, need = c->want ? c->want : held + 4096, size;
	size_t own = c->ch && c->ch->refs == 1 ? c->ch->cap : 0;
	struct xl_chunk *nc;

	/*
	 * Nobody else looks into the chunk: the partial event to its front,
	 * so that reads land on the same bytes, still in cache (the kernel's
	 * copy into lines it must first fetch cost 12% more system time per
	 * event flat out), unless moving it would copy more than a share of
	 * what was read (short reads of large events). A large one (over
	 * MOVE_MAX) stays where it is while the chunk has room for it.
	 */
	if (own && c->head &&
	    ((held <= MOVE_MAX && c->head >= MOVE_SHARE * held) || c->ch->cap - c->head < need)) {
		memmove(c->ch->data, c->ch->data + c->head, held);
		c->head = 0;
		c->tail = held;
	}
	if (c->ch && c->ch->cap - c->head >= need && c->tail < c->ch->cap)
		return true;
	size = need > XL_CHUNK ? need : XL_CHUNK;
	if (!own && size == XL_CHUNK && f->spares) {
		nc = f->spares;
		f->spares = nc->next_spare;
		f->n_spares--;
		count_buffer(f, XL_CHUNK);
	} else {
		if (!room_for(f, c, size - own))
			return false;
		nc = own ? realloc(c->ch, sizeof(*nc) + size) : malloc(sizeof(*nc) + size);
		if (!nc) {
			xl_farm_conn_close(f, c, XEVB_BROKEN_NOMEM, "out of memory for a receive buffer");
			return false;
		}
		count_buffer(f, size - own);
	}
	nc->cap = size;
	if (!own) {
		nc->refs = 1;
		if (c->ch) {
			memcpy(nc->data, c->ch->data + c->head, held);
			xl_chunk_put(f, c->ch);
		}
		c->head = 0;
		c->tail = held;
	}
	c->ch = nc;
	return true;
}

static struct xl_ev *new_ev(struct xevb_farm *f)
{
	struct xl_ev *e = f->free_evs;

	if (e) {
		f->free_evs = e->next;
		return e;
	}
	/* Whole cache lines: a view is 2 lines, not 3 where it straddles them (about 190 out at a time). */
	e = aligned_alloc(64, (sizeof(*e) + 63) & ~(size_t)63);
	if (e) {
		memset(e, 0, sizeof(*e));
		/*
		 * Its fragment index written only when asked for: about 190 views
		 * are out at a time flat out (1 MiB of L1 events), and writing
		 * each one's index (504 bytes an L1 event) missed L1 about 10 times
		 * an event for a caller that did not look (`xevb sink`).
		 */
		e->lazy = true;
		e->all = f->all_evs;
		f->all_evs = e;
	}
	return e;
}

/*
 * One whole event at c->head, tl bytes: decoded and queued. 0, or the
 * rule the stream broke (enum xevb_broken, msg says how).
 */
static int take_event(struct xevb_farm *f, struct xl_conn *c, uint32_t tl, char *msg, size_t len)
{
	struct xl_ev *e = new_ev(f);
	struct xl_builder *b = &f->builders[c->builder];
	int rc;

	if (!e) {
		snprintf(msg, len, "out of memory for an event view");
		return XEVB_BROKEN_NOMEM;
	}
	e->pub.builder_addr = c->ip; /* before the decoder: the caller's check sees where it came from */
	e->pub.builder_port = c->port;
	rc = xl_ev_decode(e, c->ch->data + c->head, tl, f->chk.verify || f->chk.fn ? &f->chk : NULL, msg, len);
	if (rc) {
		rc = rc == -EBADMSG ? e->broken : XEVB_BROKEN_NOMEM;
		e->next = f->free_evs;
		f->free_evs = e;
		return rc;
	}
	e->chunk = c->ch;
	c->ch->refs++;
	e->builder = c->builder;
	e->conn_gen = c->gen;
	e->next = NULL;
	e->state = XL_EV_QUEUED;
	if (f->ready_tail)
		f->ready_tail->next = e;
	else
		f->ready_head = e;
	f->ready_tail = e;
	f->ready_n++;
	f->st.held++;
	b->events++;
	c->events++;
	c->head += tl;
	return 0;
}

/* Every whole event in the buffer. false: the stream broke a rule (the connection is closed). */
static bool cut_events(struct xevb_farm *f, struct xl_conn *c)
{
	static const uint8_t evnt[4] = { 0x45, 0x56, 0x4E, 0x54 };
	char msg[XL_ERR_LEN];
	int kind;

	for (;;) {
		const uint8_t *p = c->ch->data + c->head;
		size_t avail = c->tail - c->head;
		uint32_t tl;

		c->want = 0;
		if (!avail)
			break;
		/* Garbage shows in its first bytes, before a length is trusted. */
		if (memcmp(p, evnt, avail < 4 ? avail : 4)) {
			snprintf(msg, sizeof(msg), "stream out of step: bytes %02x %02x... where an event starts",
				 p[0], avail > 1 ? p[1] : 0);
			kind = XEVB_BROKEN_MAGIC;
			break;
		}
		if (avail < 20)
			return true;
		tl = xl_ld32(p + 16);
		if (tl < XL_EVT_HLEN || tl > f->o.max_event) {
			snprintf(msg, sizeof(msg), "total_length %u (32..%u, max_event)", tl, f->o.max_event);
			kind = tl < XL_EVT_HLEN ? XEVB_BROKEN_TOTAL_LEN : XEVB_BROKEN_TOO_BIG;
			break;
		}
		if (avail < tl) {
			c->want = tl;
			return true;
		}
		if ((kind = take_event(f, c, tl, msg, sizeof(msg))))
			break;
	}
	if (c->head == c->tail) {
		if (c->ch->refs == 1)
			c->head = c->tail = 0;
		return true;
	}
	xl_farm_conn_close(f, c, kind, msg);
	return false;
}

void xl_farm_read(struct xevb_farm *f, struct xl_conn *c)
{
	int full_reads = 0;

	for (int i = 0; i < READS_PER_WAKEUP; i++) {
		size_t avail;
		ssize_t n;

		if (!make_room(f, c))
			return;
		avail = c->ch->cap - c->tail;
		if (avail > READ_MAX)
			avail = READ_MAX;
		n = read(c->fd, c->ch->data + c->tail, avail);
		if (n > 0) {
			uint64_t before = c->events;
			c->tail += (size_t)n;
			if (!cut_events(f, c))
				return;
			/*
			 * Since when it holds part of the same event (a paused connection
			 * is not stalled: not counted). A busy stream's reads mostly end
			 * inside an event: one that completed an event made progress.
			 */
			if (c->tail == c->head)
				c->partial_since = 0;
			else if (!c->partial_since || c->events != before)
				c->partial_since = xl_mono_ns();
			/*
			 * A short read emptied the socket: back to the caller. A full one
			 * reads on (a few times, then the events go to the caller first:
			 * level-triggered, nothing is missed): a wait per read cost the
			 * farm node a system call and often a wakeup per 100 KB.
			 */
			if ((size_t)n < avail || (c->events != before && ++full_reads >= FULL_READS))
				return;
			continue;
		}
		if (n == 0) {
			char msg[96];
			if (c->tail > c->head) {
				f->st.truncated++;
				snprintf(msg, sizeof(msg), "closed inside an event (%zu bytes of it held)",
					 c->tail - c->head);
			}
			xl_farm_conn_close(f, c, c->tail > c->head ? XEVB_BROKEN_TRUNCATED : 0, msg);
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			xl_farm_conn_close(f, c, XEVB_BROKEN_READ, strerror(errno));
		return;
	}
}

static void add_conn(struct xevb_farm *f, int fd, const struct sockaddr_in *sa)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP };
	uint32_t b = xl_farm_builder(f, sa->sin_addr.s_addr);
	struct xl_conn *c = calloc(1, sizeof(*c));
	char a[INET_ADDRSTRLEN];

	if (!c || b == UINT32_MAX) {
		xl_log(&f->log, XEVB_LIB_LOG_WARN, "refusing a connection: %s",
		       c ? "too many builders" : "out of memory");
		free(c);
		close(fd);
		f->st.conns_refused++;
		return;
	}
	c->fd = fd;
	c->ip = sa->sin_addr.s_addr;
	c->port = ntohs(sa->sin_port);
	c->builder = b;
	inet_ntop(AF_INET, &sa->sin_addr, a, sizeof(a));
	snprintf(c->name, sizeof(c->name), "%s:%u", a, c->port);
	e.data.ptr = c;
	if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &e)) {
		xl_log(&f->log, XEVB_LIB_LOG_WARN, "%s: epoll: %s: connection refused", c->name, strerror(errno));
		free(c);
		close(fd);
		return;
	}
	/* A new connection: the builder counts afresh on it, and so do we. */
	c->gen = ++f->builders[b].gen;
	f->builders[b].conn_done = f->builders[b].reported = 0;
	f->builders[b].conns_open++;
	f->builders[b].connections++;
	f->builders[b].ended = false;
	c->slot = f->n_conns;
	f->conns[f->n_conns++] = c;
	f->st.conns_total++;
	f->st.conns_open++;
	xl_log(&f->log, XEVB_LIB_LOG_INFO, "%s: builder connected", c->name);
}

void xl_farm_accept(struct xevb_farm *f)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(f->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				accept_pause(f, errno);
			else if (errno != EAGAIN && errno != EWOULDBLOCK)
				xl_log(&f->log, XEVB_LIB_LOG_WARN, "accept: %s", strerror(errno));
			return;
		}
		if (f->n_conns >= f->o.max_conns) {
			close(fd);
			f->st.conns_refused++;
			f->st.conns_refused_max++;
			if (log_due(&f->max_log_ns))
				xl_log(&f->log, XEVB_LIB_LOG_WARN,
				       "%u builder connections open, max_conns: refusing more (%llu so far, said at "
				       "most every %llu s)",
				       f->n_conns, (unsigned long long)f->st.conns_refused_max,
				       LOG_EVERY_NS / 1000000000ull);
			continue;
		}
		add_conn(f, fd, &sa);
	}
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The output engine (user/out/output.c) against real TCP listeners on
 * 127.0.0.1: batched sends byte-identical to the zero-copy encoder's
 * stream, partial writes, full buffers, a farm node gone mid-run, flush;
 * MSG_ZEROCOPY (--tune zerocopy=1) with segmented fragments.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include "wire/event_codec.h"
#include "out/output.h"
#include "out/output_zc.h"

static void no_sigpipe(void)
{
	signal(SIGPIPE, SIG_IGN);
}

TestSuite(output, .timeout = 60, .init = no_sigpipe);

#define FRAME_HDR 22
#define MAX_SRC   4096
#define MAX_LEN   128

/* Events over fake frames, each one regenerated identically from its number. */
struct fake {
	uint32_t n_src, max_len;
	uint8_t *frames;
	const uint8_t *frame_data[MAX_SRC];
	uint16_t sids[MAX_SRC];
	struct xevb_frag_slot slots[MAX_SRC];
	struct xevb_event ev;
};

static struct fake *fake_new(uint32_t n_src, uint32_t max_len)
{
	struct fake *f = calloc(1, sizeof(*f));

	cr_assert(f != NULL);
	f->n_src = n_src;
	f->max_len = max_len;
	f->frames = malloc((size_t)n_src * (FRAME_HDR + MAX_LEN));
	cr_assert(f->frames != NULL);
	for (uint32_t i = 0; i < n_src; i++) {
		f->frame_data[i] = f->frames + (size_t)i * (FRAME_HDR + MAX_LEN);
		f->sids[i] = (uint16_t)i;
	}
	return f;
}

static void fake_free(struct fake *f)
{
	free(f->frames);
	free(f);
}

/* Event k: lengths 0..max_len (odd ones too), every 7th misses a source or two. */
static const struct xevb_event *fake_event(struct fake *f, uint32_t k)
{
	uint16_t got = 0;

	for (uint32_t i = 0; i < f->n_src; i++) {
		uint8_t *fr = f->frames + (size_t)i * (FRAME_HDR + MAX_LEN);
		uint32_t len = (k * 31u + i * 17u) % (f->max_len + 1);
		bool missing = k % 7 == 3 && (i == k % f->n_src || i == (k * 5 + 1) % f->n_src);

		for (uint32_t b = 0; b < FRAME_HDR + MAX_LEN; b++)
			fr[b] = (uint8_t)(k * 131u + i * 7u + b);
		xevb_st32(fr + FRAME_HDR - 4, xevb_crc32c(0, fr + FRAME_HDR, len));
		f->slots[i] = (struct xevb_frag_slot){ .frame_idx = missing ? UINT32_MAX : i,
						       .payload_off = FRAME_HDR,
						       .length = (uint16_t)len };
		got += !missing;
	}
	f->ev = (struct xevb_event){
		.event_id = k,
		.run_number = 77,
		.flags = got < f->n_src ? XEVB_EVT_F_INCOMPLETE : 0,
		.n_expected = (uint16_t)f->n_src,
		.n_frags = got,
		.source_ids = f->sids,
		.frags = f->slots,
		.frame_data = f->frame_data,
	};
	return &f->ev;
}

/* What the zero-copy encoder + writev would have sent for event k, stamped build_ns. */
static size_t reference_bytes(struct fake *f, uint32_t k, uint64_t build_ns, uint8_t *out, size_t cap)
{
	static uint8_t scratch[XEVB_EVT_SCRATCH_MAX(MAX_SRC)];
	static struct iovec iov[XEVB_EVT_IOV_MAX(MAX_SRC)];
	size_t total = 0, off = 0;
	int n = xevb_event_encode(fake_event(f, k), build_ns, scratch, sizeof(scratch), iov,
				  XEVB_EVT_IOV_MAX(MAX_SRC), &total);

	cr_assert(gt(int, n, 0));
	cr_assert(le(sz, total, cap));
	for (int i = 0; i < n; i++) {
		memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return total;
}

/* ---- farm nodes: a listener and a reader thread each ---- */

struct node {
	int lfd, fd;
	char addr[32];
	pthread_t th;
	uint8_t *buf;
	size_t cap;
	size_t got;       /* atomically read by the test */
	int slow;         /* small reads with pauses */
	int hold;         /* do not read while set */
	int stop;         /* stop reading, close (a farm node that dies) */
	uint32_t checked; /* events found intact by join_and_check */
};

static void node_listen(struct node *n, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	memset(n, 0, sizeof(*n));
	n->lfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(ge(int, n->lfd, 0));
	if (rcvbuf)
		setsockopt(n->lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	cr_assert(eq(int, bind(n->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0));
	cr_assert(eq(int, listen(n->lfd, 4), 0));
	cr_assert(eq(int, getsockname(n->lfd, (struct sockaddr *)&sa, &len), 0));
	snprintf(n->addr, sizeof(n->addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	n->cap = 64u << 20;
	n->buf = malloc(n->cap);
	cr_assert(n->buf != NULL);
}

static void *node_main(void *arg)
{
	struct node *n = arg;

	for (;;) {
		size_t want = n->cap - n->got;
		ssize_t r;

		if (__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE))
			break;
		if (__atomic_load_n(&n->hold, __ATOMIC_ACQUIRE)) {
			usleep(1000);
			continue;
		}
		if (n->slow && want > 777)
			want = 777;
		r = recv(n->fd, n->buf + n->got, want, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			break;
		if (r < 0) {
			usleep(200);
			continue;
		}
		__atomic_store_n(&n->got, n->got + (size_t)r, __ATOMIC_RELEASE);
		if (n->slow)
			usleep(50);
	}
	return NULL;
}

/* After xevb_output_open connected: take the connection, start reading. */
static void node_start(struct node *n)
{
	n->fd = accept(n->lfd, NULL, NULL);
	cr_assert(ge(int, n->fd, 0));
	cr_assert(eq(int, pthread_create(&n->th, NULL, node_main, n), 0));
}

static void node_join(struct node *n)
{
	pthread_join(n->th, NULL);
	close(n->fd);
	close(n->lfd);
}

/*
 * Every event in n's stream: whole, valid, byte-identical to the reference
 * encoding, event ids ascending; seen[] marks each (never twice). Returns
 * the count.
 */
static uint32_t node_check(struct node *n, struct fake *f, uint8_t *seen, uint32_t n_events)
{
	static uint8_t ref[1u << 20];
	size_t off = 0;
	uint32_t count = 0;
	int64_t last = -1;

	while (off < n->got) {
		struct xevb_decoded_event d;
		char err[160] = "";
		uint32_t tl;
		size_t rl;

		cr_assert(ge(sz, n->got - off, (size_t)XEVB_EVT_HLEN), "%s: stream ends inside a header", n->addr);
		tl = xevb_ld32(n->buf + off + 16);
		cr_assert(le(sz, (size_t)tl, n->got - off), "%s: stream ends inside an event", n->addr);
		cr_assert(eq(int, xevb_event_decode(n->buf + off, tl, &d, err, sizeof(err)), 0), "%s", err);
		cr_assert(lt(u32, d.event_id, n_events));
		cr_assert(gt(i64, (int64_t)d.event_id, last), "%s: event %u after %lld", n->addr, d.event_id,
			  (long long)last);
		last = d.event_id;
		cr_assert(eq(u8, seen[d.event_id], 0), "event %u twice", d.event_id);
		seen[d.event_id] = 1;
		rl = reference_bytes(f, d.event_id, d.build_ns, ref, sizeof(ref));
		cr_assert(eq(sz, rl, (size_t)tl));
		cr_assert(eq(int, memcmp(ref, n->buf + off, tl), 0), "event %u: bytes differ", d.event_id);
		off += tl;
		count++;
	}
	return count;
}

static void open_output_zc(struct xevb_output *o, struct node *nodes, uint32_t n_nodes, uint32_t max_src,
			   bool zerocopy)
{
	const char *names[8];
	struct xevb_output_opts oo = {
		.sinks = names,
		.n_sinks = n_nodes,
		.max_sources = max_src,
		.connect_wait_ns = 1000000000ull,
		.zerocopy = zerocopy,
	};

	for (uint32_t i = 0; i < n_nodes; i++)
		names[i] = nodes[i].addr;
	cr_assert(eq(int, xevb_output_open(o, &oo), 0));
	cr_assert(eq(u32, xevb_output_connected(o), n_nodes));
}

static void open_output(struct xevb_output *o, struct node *nodes, uint32_t n_nodes, uint32_t max_src)
{
	open_output_zc(o, nodes, n_nodes, max_src, false);
}

/* n farm nodes listening, the output connected to each, every node's reader started. */
static void open_to_nodes(struct xevb_output *o, struct node *nodes, uint32_t n, uint32_t max_src)
{
	for (uint32_t i = 0; i < n; i++)
		node_listen(&nodes[i], 0);
	open_output(o, nodes, n, max_src);
	for (uint32_t i = 0; i < n; i++)
		node_start(&nodes[i]);
}

/* The output closed: every node's reader joined and its stream checked (node_check); the events in total. */
static uint32_t join_and_check(struct node *nodes, uint32_t n, struct fake *f, uint8_t *seen, uint32_t n_events)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < n; i++) {
		node_join(&nodes[i]);
		nodes[i].checked = node_check(&nodes[i], f, seen, n_events);
		total += nodes[i].checked;
		free(nodes[i].buf);
	}
	return total;
}

/* Emitted = written + dropped by reason + still buffered. */
static void check_identity(const struct xevb_output *o, uint64_t emitted)
{
	cr_assert(eq(u64,
		     o->st.events + o->st.dropped_no_sink + o->st.dropped_error + o->st.dropped_backlog +
			     o->st.encode_errors + xevb_output_backlog_events(o),
		     emitted));
}

/* ---- tests ---- */

Test(output, encode_into_equals_encode)
{
	static uint8_t a[1u << 20], b[1u << 20];
	struct fake *f = fake_new(126, 40);
	size_t la, lb;

	for (uint32_t k = 0; k < 500; k++) {
		la = reference_bytes(f, k, 0x1122334455667788ull + k, a, sizeof(a));
		memset(b, 0xa5, la + 8);
		cr_assert(eq(int, xevb_event_encode_into(fake_event(f, k), 0x1122334455667788ull + k, b, la, &lb),
			     0));
		cr_assert(eq(sz, lb, la));
		cr_assert(eq(sz, (size_t)xevb_event_wire_size_fast(&f->ev), la));
		cr_assert(eq(int, memcmp(a, b, la), 0), "event %u", k);
		cr_assert(eq(int, xevb_event_encode_into(&f->ev, 1, b, la - 1, &lb), -ENOSPC));
	}
	fake_free(f);
}

/*
 * A flush, then, while half a send buffer still waits, more flushes (for
 * at most 5 s): a builder's receive loop goes on while the farm nodes
 * read, where this loop would outrun a farm node's thread that is not
 * scheduled and have events dropped for a full buffer (dropped_backlog,
 * by design: tested apart).
 */
static void flush_paced(struct xevb_output *o)
{
	xevb_output_flush(o);
	for (int w = 0; w < 5000 && xevb_output_backlog_bytes(o) > XEVB_OUT_SEND_BUF / 2; w++) {
		usleep(1000);
		xevb_output_flush(o);
	}
}

/* 1, 2 and 4 farm nodes, 126 sources like L1, a flush every 32 events. */
Test(output, batched_byte_exact_round_robin)
{
	static const uint32_t fan[] = { 1, 2, 4 };
	enum { N = 6000 };

	for (uint32_t t = 0; t < 3; t++) {
		struct node nodes[4];
		struct xevb_output o;
		struct fake *f = fake_new(126, 40);
		uint8_t *seen = calloc(N, 1);
		uint64_t bytes = 0;

		open_to_nodes(&o, nodes, fan[t], 126);
		for (uint32_t k = 0; k < N; k++) {
			xevb_output_emit(&o, fake_event(f, k));
			bytes += xevb_event_wire_size_fast(&f->ev);
			if (k % 32 == 31)
				flush_paced(&o);
		}
		xevb_output_settle(&o, 5000000000ull);
		cr_assert(eq(u64, o.st.events, N));
		cr_assert(eq(u64, o.st.bytes, bytes));
		/* Every event went through a send buffer: every byte copied once. */
		cr_assert(eq(u64, o.st.bytes_copied, bytes));
		cr_assert(eq(u64,
			     o.st.dropped_no_sink + o.st.dropped_error + o.st.dropped_backlog +
				     o.st.lost_in_flight + o.st.encode_errors,
			     0));
		xevb_output_close(&o);
		cr_assert(eq(u32, join_and_check(nodes, fan[t], f, seen, N), N));
		for (uint32_t i = 0; i < fan[t]; i++)
			cr_assert(eq(u32, nodes[i].checked, N / fan[t]), "farm node %u of %u", i, fan[t]);
		free(seen);
		fake_free(f);
	}
}

/*
 * A tiny socket buffer and a slow reader: the kernel takes part of a send;
 * every byte still arrives, in order. The emitter waits for room (as build
 * control does) so that nothing is dropped.
 */
Test(output, partial_writes_keep_every_byte)
{
	enum { N = 3000 };
	struct node n;
	struct xevb_output o;
	struct fake *f = fake_new(126, 40);
	uint8_t *seen = calloc(N, 1);
	int small = 4096;
	uint32_t full = 0;

	node_listen(&n, small);
	open_output(&o, &n, 1, 126);
	setsockopt(o.sinks[0].fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	n.slow = 1;
	node_start(&n);
	for (uint32_t k = 0; k < N; k++) {
		const struct xevb_event *ev = fake_event(f, k);
		uint32_t waits = 0;

		while (!xevb_output_has_room(&o, 0, xevb_event_wire_size_fast(ev))) {
			xevb_output_flush(&o);
			usleep(100);
			cr_assert(lt(u32, ++waits, 200000));
			full += waits == 1;
		}
		cr_assert(eq(int, xevb_output_emit_to(&o, 0, ev), 0));
		if (k % 16 == 15)
			xevb_output_flush(&o);
	}
	cr_assert(gt(u32, full, 0), "the buffer never filled: the test did not exercise partial writes");
	xevb_output_settle(&o, 20000000000ull);
	cr_assert(eq(u64, o.st.events, N));
	cr_assert(eq(u64, o.st.dropped_backlog + o.st.dropped_error + o.st.lost_in_flight, 0));
	xevb_output_close(&o);
	node_join(&n);
	cr_assert(eq(u32, node_check(&n, f, seen, N), N));
	free(n.buf);
	free(seen);
	fake_free(f);
}

/*
 * A hung farm node (reads nothing): its buffers fill, the other takes the
 * events; with both hung, events are dropped and counted dropped_backlog,
 * never waited for. Once they read again, everything kept arrives.
 */
Test(output, full_buffers_go_elsewhere_then_drop)
{
	enum { N1 = 3000, N = 5000 };
	struct node nodes[2];
	struct xevb_output o;
	struct fake *f = fake_new(126, 40);
	uint8_t *seen = calloc(N, 1);
	int small = 8192;
	uint32_t k = 0;

	for (int i = 0; i < 2; i++) {
		node_listen(&nodes[i], small);
		nodes[i].hold = 1;
	}
	open_output(&o, nodes, 2, 126);
	for (int i = 0; i < 2; i++) {
		setsockopt(o.sinks[i].fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		node_start(&nodes[i]);
	}
	__atomic_store_n(&nodes[1].hold, 0, __ATOMIC_RELEASE);
	/* Node 0 hung, node 1 reading (and waited for): node 0's buffer fills, node 1 takes the rest. */
	for (; k < N1; k++) {
		xevb_output_emit(&o, fake_event(f, k));
		if (k % 32 != 31)
			continue;
		xevb_output_flush(&o);
		for (int t = 0; t < 100000 && o.sinks[1].buf_len != o.sinks[1].buf_head; t++) {
			usleep(50);
			xevb_output_flush(&o);
		}
	}
	cr_assert(eq(u64, o.st.dropped_backlog, 0));
	cr_assert(gt(u64, xevb_output_backlog_bytes(&o), 200u << 10), "node 0's buffer is not full");
	cr_assert(gt(u64, o.sinks[1].events, N1 * 9 / 10));
	/* Both hung: bounded, then dropped and counted. */
	__atomic_store_n(&nodes[1].hold, 1, __ATOMIC_RELEASE);
	for (; k < N; k++) {
		xevb_output_emit(&o, fake_event(f, k));
		if (k % 32 == 31)
			xevb_output_flush(&o);
	}
	cr_assert(gt(u64, o.st.dropped_backlog, 0));
	cr_assert(le(u64, xevb_output_backlog_bytes(&o), 2 * (256u << 10)));
	check_identity(&o, N);
	__atomic_store_n(&nodes[0].hold, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&nodes[1].hold, 0, __ATOMIC_RELEASE);
	xevb_output_settle(&o, 20000000000ull);
	cr_assert(eq(u64, xevb_output_backlog_bytes(&o), 0));
	cr_assert(eq(u64, o.st.events + o.st.dropped_backlog, N));
	cr_assert(eq(u64, o.st.dropped_error + o.st.lost_in_flight + o.st.dropped_no_sink, 0));
	xevb_output_close(&o);
	cr_assert(eq(u64, join_and_check(nodes, 2, f, seen, N), o.st.events));
	free(seen);
	fake_free(f);
}

/*
 * Four farm nodes; one closes its connection mid-run (having read all it
 * was sent). Events written to it after that are lost in flight, those
 * still buffered dropped_error; the others take the rest. Every event
 * emitted is delivered or counted, exactly.
 */
Test(output, farm_node_closed_mid_batch)
{
	enum { N1 = 2000, N2 = 6000 };
	struct node nodes[4];
	struct xevb_output o;
	struct fake *f = fake_new(126, 40);
	uint8_t *seen = calloc(N1 + N2, 1);
	uint64_t delivered = 0;
	uint32_t k = 0;

	open_to_nodes(&o, nodes, 4, 126);
	for (; k < N1; k++)
		xevb_output_emit(&o, fake_event(f, k));
	xevb_output_flush(&o);
	cr_assert(eq(u64, xevb_output_backlog_bytes(&o), 0));
	/* Node 2 has read everything sent to it: then it goes away. */
	for (int t = 0; t < 5000 && __atomic_load_n(&nodes[2].got, __ATOMIC_ACQUIRE) < o.sinks[2].conn_bytes; t++)
		usleep(1000);
	cr_assert(eq(u64, (uint64_t)nodes[2].got, o.sinks[2].conn_bytes));
	__atomic_store_n(&nodes[2].stop, 1, __ATOMIC_RELEASE);
	pthread_join(nodes[2].th, NULL);
	close(nodes[2].fd);
	for (; k < N1 + N2; k++) {
		xevb_output_emit(&o, fake_event(f, k));
		if (k % 100 == 99) {
			xevb_output_flush(&o);
			usleep(200); /* let node 2's reset come back */
		}
	}
	xevb_output_settle(&o, 5000000000ull);
	cr_assert(eq(u32, xevb_output_connected(&o), 3));
	check_identity(&o, N1 + N2);
	cr_assert(eq(u64, xevb_output_backlog_events(&o), 0));
	cr_assert(gt(u64, o.st.lost_in_flight + o.st.dropped_error, 0));
	cr_assert(eq(u64, o.st.dropped_backlog, 0));
	xevb_output_close(&o);
	for (int i = 0; i < 4; i++) {
		if (i != 2)
			node_join(&nodes[i]);
		else
			close(nodes[i].lfd);
		delivered += node_check(&nodes[i], f, seen, N1 + N2);
		free(nodes[i].buf);
	}
	/* Written = delivered + lost in flight (node 2 read all it acknowledged). */
	cr_assert(eq(u64, o.st.events, delivered + o.st.lost_in_flight), "written %llu, delivered %llu, lost %llu",
		  (unsigned long long)o.st.events, (unsigned long long)delivered,
		  (unsigned long long)o.st.lost_in_flight);
	free(seen);
	fake_free(f);
}

/* A trickle: an event waits in the buffer until the batch ends, not longer. */
Test(output, flush_hands_everything_to_the_kernel)
{
	enum { N = 200 };
	struct node nodes[2];
	struct xevb_output o;
	struct fake *f = fake_new(126, 40);
	uint8_t *seen = calloc(N, 1);

	open_to_nodes(&o, nodes, 2, 126);
	for (uint32_t k = 0; k < N; k++) {
		xevb_output_emit(&o, fake_event(f, k));
		/* Batched: under 64 KiB it waits for the batch's end... */
		cr_assert(eq(u64, xevb_output_backlog_events(&o), 1));
		cr_assert(eq(u64, o.st.events, k));
		xevb_output_flush(&o);
		/* ...and no longer. */
		cr_assert(eq(u64, xevb_output_backlog_bytes(&o), 0));
		cr_assert(eq(u64, xevb_output_backlog_events(&o), 0));
		cr_assert(eq(u64, o.st.events, k + 1));
	}
	xevb_output_settle(&o, 5000000000ull);
	xevb_output_close(&o);
	cr_assert(eq(u32, join_and_check(nodes, 2, f, seen, N), N));
	free(seen);
	fake_free(f);
}

/* An event over the buffer goes through at once, in order with what was buffered. */
Test(output, oversize_event_in_order)
{
	enum { N = 9 };
	struct node n;
	struct xevb_output o;
	struct fake *f = fake_new(MAX_SRC, MAX_LEN);
	uint8_t *seen = calloc(N, 1);
	uint64_t buffered = 0, bytes = 0;

	node_listen(&n, 0);
	open_output(&o, &n, 1, MAX_SRC);
	node_start(&n);
	for (uint32_t k = 0; k < N; k++) {
		/* Events 0, 3, 6: all 4096 sources (~300 KiB); the others 8. */
		f->n_src = k % 3 == 0 ? MAX_SRC : 8;
		xevb_output_emit(&o, fake_event(f, k));
		bytes += xevb_event_wire_size_fast(&f->ev);
		buffered += k % 3 ? xevb_event_wire_size_fast(&f->ev) : 0;
	}
	xevb_output_settle(&o, 5000000000ull);
	cr_assert(eq(u64, o.st.events, N));
	cr_assert(eq(u64, o.st.bytes, bytes));
	/* The oversize ones went out with writev from their frames: not copied. */
	cr_assert(eq(u64, o.st.bytes_copied, buffered));
	cr_assert(gt(u64, buffered, 0));
	xevb_output_close(&o);
	node_join(&n);
	{
		/* node_check regenerates each event: the source count follows the id. */
		size_t off = 0;
		for (uint32_t k = 0; k < N; k++) {
			struct node one = n;
			f->n_src = k % 3 == 0 ? MAX_SRC : 8;
			one.buf = n.buf + off;
			one.got = xevb_ld32(n.buf + off + 16);
			cr_assert(le(sz, off + one.got, n.got));
			cr_assert(eq(u32, node_check(&one, f, seen, N), 1));
			cr_assert(eq(u8, seen[k], 1), "event %u out of order", k);
			off += one.got;
		}
		cr_assert(eq(sz, off, n.got));
	}
	free(n.buf);
	free(seen);
	fake_free(f);
}

/* ---- zerocopy (--tune): segmented fragments sent from the frames they arrived in ---- */

#define ZC_SRC    4
#define ZC_PIECES 5
#define ZC_STRIDE 3400 /* a live frame's segment at MTU 9000 */
#define ZC_FRAME  (FRAME_HDR + ZC_STRIDE)
#define ZC_EVENTS 48
#define ZC_FRAMES (ZC_EVENTS * ZC_SRC * ZC_PIECES)

/* Events whose every fragment arrived in ZC_PIECES segments, one frame each. */
struct zc_fake {
	uint8_t *frames;
	const uint8_t *frame_data[ZC_FRAMES];
	uint16_t sids[ZC_SRC];
	struct xevb_frag_slot slots[ZC_SRC];
	struct xevb_seg_piece p[ZC_SRC][ZC_PIECES];
	struct xevb_frag_pieces fp[ZC_SRC];
	struct xevb_event ev;
};

static uint32_t zc_frame(uint32_t k, uint32_t i, uint32_t j)
{
	return (k * ZC_SRC + i) * ZC_PIECES + j;
}

/* Fragment i of event k: 4 * stride + 1..3 bytes (padding), its bytes a function of (k, i, offset). */
static uint32_t zc_len(uint32_t k, uint32_t i)
{
	return (ZC_PIECES - 1) * ZC_STRIDE + 1 + (k + i) % 3;
}

/* Event k over z's frames; fill: write its frames' bytes first. */
static const struct xevb_event *zc_event(struct zc_fake *z, uint32_t k, bool fill)
{
	for (uint32_t i = 0; i < ZC_SRC; i++) {
		uint32_t len = zc_len(k, i), crc = 0;

		for (uint32_t j = 0; j < ZC_PIECES; j++) {
			uint32_t idx = zc_frame(k, i, j), off = j * ZC_STRIDE;
			uint16_t bytes = (uint16_t)(j + 1 < ZC_PIECES ? ZC_STRIDE : len - off);
			uint8_t *fr = z->frames + (size_t)idx * ZC_FRAME;

			if (fill)
				for (uint32_t b = 0; b < bytes; b++)
					fr[FRAME_HDR + b] =
						(uint8_t)(k * 131u + i * 7u + (off + b) * 13u + ((off + b) >> 8));
			z->frame_data[idx] = fr;
			z->p[i][j] = (struct xevb_seg_piece){ .frame_idx = idx,
							      .payload_off = FRAME_HDR,
							      .seg_offset = (uint16_t)off,
							      .bytes = bytes };
		}
		for (uint32_t j = 0; j < ZC_PIECES; j++)
			crc = xevb_crc32c(crc, z->frame_data[zc_frame(k, i, j)] + FRAME_HDR, z->p[i][j].bytes);
		/* Every segment carries the fragment's CRC; the event reads the first one's. */
		if (fill)
			xevb_st32(z->frames + (size_t)zc_frame(k, i, 0) * ZC_FRAME + FRAME_HDR - 4, crc);
		z->sids[i] = (uint16_t)(10 + i);
		z->slots[i] = (struct xevb_frag_slot){ .frame_idx = zc_frame(k, i, 0),
						       .payload_off = FRAME_HDR,
						       .length = (uint16_t)len };
		z->fp[i] = (struct xevb_frag_pieces){ .n = ZC_PIECES, .p = z->p[i] };
	}
	z->ev = (struct xevb_event){ .event_id = k,
				     .run_number = 77,
				     .n_expected = ZC_SRC,
				     .n_frags = ZC_SRC,
				     .source_ids = z->sids,
				     .frags = z->slots,
				     .frame_data = z->frame_data,
				     .pieces = z->fp };
	return &z->ev;
}

static struct zc_fake *zc_fake_new(void)
{
	struct zc_fake *z = calloc(1, sizeof(*z));

	cr_assert(z != NULL);
	z->frames = malloc((size_t)ZC_FRAMES * ZC_FRAME);
	cr_assert(z->frames != NULL);
	return z;
}

static void zc_fake_free(struct zc_fake *z)
{
	free(z->frames);
	free(z);
}

/* The builder's frame release: each frame once, and poisoned at once (reused). */
struct zc_released {
	struct zc_fake *z;
	uint8_t n[ZC_FRAMES];
};

static void zc_release(void *ctx, uint32_t idx)
{
	struct zc_released *r = ctx;

	cr_assert(lt(u32, idx, ZC_FRAMES));
	r->n[idx]++;
	memset(r->z->frames + (size_t)idx * ZC_FRAME, 0xee, ZC_FRAME);
}

/*
 * 48 events of 4 fragments in 5 segments each (~16 kB, as at MTU 9000 from
 * the live generator) through --tune zerocopy=1: every byte at the farm node as
 * encoded from the frames, though each frame is overwritten the moment it
 * comes back; no byte copied by user space, every one sent by reference;
 * every frame back exactly once.
 */
Test(output, zerocopy_segments_copy_nothing)
{
	static uint8_t ref[1u << 18];
	static struct zc_released rel;
	struct zc_fake *z = zc_fake_new(), *pristine = zc_fake_new();
	struct node n;
	struct xevb_output o;
	uint64_t bytes = 0;
	size_t off = 0;
	uint32_t count = 0;

	memset(&rel, 0, sizeof(rel));
	rel.z = z;
	node_listen(&n, 0);
	open_output_zc(&o, &n, 1, ZC_SRC, true);
	cr_assert(o.zc != NULL);
	cr_assert(eq(int, xevb_output_set_release(&o, zc_release, &rel, ZC_FRAMES), 0));
	node_start(&n);
	for (uint32_t k = 0; k < ZC_EVENTS; k++) {
		xevb_output_emit(&o, zc_event(z, k, true));
		bytes += xevb_event_wire_size_fast(&z->ev);
		/* As the builder does once the event left: each frame back, or held by the output. */
		for (uint32_t f = zc_frame(k, 0, 0); f < zc_frame(k + 1, 0, 0); f++)
			if (!xevb_output_hold(&o, f))
				zc_release(&rel, f);
		xevb_output_flush(&o);
	}
	xevb_output_drain(&o);
	xevb_output_settle(&o, 5000000000ull);
	cr_assert(eq(u64, o.st.events, ZC_EVENTS));
	cr_assert(eq(u64, o.st.bytes, bytes));
	cr_assert(eq(u64, o.st.bytes_copied, 0), "user space copied %llu bytes",
		  (unsigned long long)o.st.bytes_copied);
	cr_assert(eq(u64, o.st.bytes_zerocopy, bytes), "every byte by reference");
	cr_assert(le(u64, o.st.bytes_kernel_copied, o.st.bytes_zerocopy));
	cr_assert(eq(u64, xevb_zc_stats(o.zc)->fallback, 0));
	for (uint32_t f = 0; f < ZC_FRAMES; f++)
		cr_assert(eq(u8, rel.n[f], 1), "frame %u released %u times", f, rel.n[f]);
	xevb_output_close(&o);
	node_join(&n);
	cr_assert(eq(sz, n.got, (size_t)bytes));
	/* Each event as encoded from untouched frames, stamped with the time it carries. */
	while (off < n.got) {
		struct xevb_decoded_event d;
		char err[160] = "";
		uint32_t tl = xevb_ld32(n.buf + off + 16);
		static uint8_t scratch[XEVB_EVT_SCRATCH_MAX(ZC_SRC)];
		struct iovec iov[XEVB_EVT_IOV_MAX_SEG(ZC_SRC)];
		size_t total = 0, rl = 0;
		int niov;

		cr_assert(le(sz, (size_t)tl, n.got - off));
		cr_assert(eq(int, xevb_event_decode(n.buf + off, tl, &d, err, sizeof(err)), 0), "%s", err);
		cr_assert(eq(u32, d.event_id, count), "events in order");
		niov = xevb_event_encode(zc_event(pristine, d.event_id, true), d.build_ns, scratch,
					 sizeof(scratch), iov, XEVB_EVT_IOV_MAX_SEG(ZC_SRC), &total);
		cr_assert(gt(int, niov, 0));
		for (int i = 0; i < niov; i++) {
			memcpy(ref + rl, iov[i].iov_base, iov[i].iov_len);
			rl += iov[i].iov_len;
		}
		cr_assert(eq(sz, rl, (size_t)tl));
		cr_assert(eq(int, memcmp(ref, n.buf + off, tl), 0), "event %u: bytes differ", d.event_id);
		off += tl;
		count++;
	}
	cr_assert(eq(u32, count, ZC_EVENTS));
	free(n.buf);
	zc_fake_free(z);
	zc_fake_free(pristine);
}

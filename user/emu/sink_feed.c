// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb sink --selftest-send DEST N`: a stand-in for the builder's output
 * stage, for testing a sink (or a farm node) without a builder. Builds
 * events over fake frames exactly as the builder hands them out, encodes
 * them with the zero-copy encoder and writes them to a TCP connection or
 * to stdout, optionally with one deliberate corruption.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/event_codec.h"
#include "emu/sink.h"

int sink_resolve(const char *opt, const char *hostport, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char host[256];
	const char *colon = strrchr(hostport, ':');
	size_t hl;
	int rc;

	if (!colon || colon == hostport || !colon[1])
		goto bad;
	hl = (size_t)(colon - hostport);
	if (hostport[0] == '[' && colon[-1] == ']') {
		hostport++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		goto bad;
	memcpy(host, hostport, hl);
	host[hl] = 0;
	rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc) {
		xevb_err("--%s: %s: %s", opt, host, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
bad:
	xevb_err("--%s: '%s' is not ADDR:PORT", opt, hostport);
	return -1;
}

enum corrupt { C_NONE, C_MAGIC, C_CRC, C_CONTENT, C_RESERVED, C_DUP, C_TRUNCATE, C_CRC_FIELD };

/* What to send: the command line. */
struct feed_opts {
	uint32_t n_src, first, run, max_len, inc_every;
	uint64_t n, c_at;
	uint32_t kind; /* --corrupt: enum corrupt - 1 */
	bool have_kind, have_c_at;
	enum corrupt c;
};

#define F(field) offsetof(struct feed_opts, field)
#define S_FEED   "Events"

static const char *const feed_sections[] = { S_FEED, NULL };

static const struct xevb_cfg_opt feed_opts[] = {
	{ "sources", 0, XEVB_T_U32, "S", F(n_src), 0, 0, 1, XEVB_MAX_SOURCES, .def = "4", .section = S_FEED,
	  .help = "source ids 0..S-1 per event, S up to 4096" },
	{ "first-event", 0, XEVB_T_U32, "ID", F(first), 0, 0, 0, UINT32_MAX, .def = "0", .section = S_FEED,
	  .help = "event_id of the first event" },
	{ "run", 0, XEVB_T_U32, "R", F(run), 0, 0, 0, UINT32_MAX, .def = "1", .section = S_FEED,
	  .help = "run number" },
	{ "max-len", 0, XEVB_T_U32, "BYTES", F(max_len), 0, 0, 0, 65535, .def = "200", .section = S_FEED,
	  .help = "fragment payloads 0..BYTES long" },
	{ "incomplete-every", 0, XEVB_T_U32, "K", F(inc_every), 0, 0, 0, UINT32_MAX, .section = S_FEED,
	  .help = "every K-th event misses one or two sources (0: never)" },
	{ "corrupt", 0, XEVB_T_ENUM, "KIND", F(kind), F(have_kind),
	  .words = "magic|crc|content|reserved|dup|truncate|crc-field", .section = S_FEED, .flags = XEVB_F_GIVEN,
	  .help = "magic|crc|content|reserved|dup|truncate|crc-field, once" },
	{ "corrupt-at", 0, XEVB_T_U64, "I", F(c_at), F(have_c_at), 0, 0, (double)UINT64_MAX, .section = S_FEED,
	  .flags = XEVB_F_GIVEN, .help = "index of the corrupted event (default N/2)" },
	{ 0 },
};

static const struct xevb_cmd_help feed_help = {
	.name = "sink --selftest-send",
	.summary = "Send N emulated built events to DEST (ADDR:PORT over TCP, or - for stdout).",
	.usage = "DEST N [options]",
	.examples =
		"  xevb sink --selftest-send 127.0.0.1:24000 1000 --sources 8 --incomplete-every 10\n"
		"  xevb sink --selftest-send - 100 > events.bin\n",
};

struct feed {
	uint32_t n_src;
	uint16_t max_len;
	uint16_t *sids;
	struct xevb_frag_slot *slots;
	uint8_t **frames;
	const uint8_t **frame_data;
	uint8_t *scratch;
	size_t scratch_len;
	struct iovec *iov;
	size_t iov_max;
};

/* Event number k of the sequence; deterministic, so tests can predict counts. */
static void make_event(struct feed *f, uint32_t k, uint32_t id, uint32_t run, uint32_t inc_every,
		       struct xevb_event *ev)
{
	bool inc = inc_every && k % inc_every == inc_every - 1;
	uint16_t got = 0;

	for (uint32_t i = 0; i < f->n_src; i++) {
		uint16_t len = (uint16_t)((k * 31u + i * 17u) % (f->max_len + 1u));
		bool missing = inc && (i == k % f->n_src || (f->n_src >= 3 && i == (k + 1) % f->n_src));

		xevb_st32(f->frames[i], xevb_crc32c(0, f->frames[i] + 4, len));
		f->slots[i] = (struct xevb_frag_slot){
			.frame_idx = missing ? UINT32_MAX : i,
			.payload_off = 4,
			.length = len,
		};
		got += !missing;
	}
	*ev = (struct xevb_event){
		.event_id = id,
		.run_number = run,
		.flags = got < f->n_src ? XEVB_EVT_F_INCOMPLETE : 0,
		.n_expected = (uint16_t)f->n_src,
		.n_frags = got,
		.source_ids = f->sids,
		.frags = f->slots,
		.frame_data = f->frame_data,
	};
}

static int write_flat(int fd, const uint8_t *p, size_t n)
{
	struct iovec v = { (void *)p, n };
	return xevb_writev_all(fd, &v, 1);
}

/* Apply one corruption to a flat copy of the event; returns bytes to send. */
static size_t corrupt_flat(enum corrupt c, uint8_t *buf, size_t len)
{
	struct xevb_decoded_event d;
	struct xevb_decoded_frag fr;
	const uint8_t *pos = NULL;
	char err[128];

	if (c == C_MAGIC) {
		buf[0] ^= 0xff;
		return len;
	}
	if (c == C_TRUNCATE)
		return len / 2;
	if (c == C_RESERVED) {
		buf[XEVB_EVT_HLEN + 3] = 0x5a; /* first record's reserved field */
		return len;
	}
	if (xevb_event_decode(buf, len, &d, err, sizeof(err)))
		return len;
	while (xevb_event_next_frag(&d, &pos, &fr)) {
		uint8_t *p = (uint8_t *)fr.payload;
		if (!fr.length)
			continue;
		if (c == C_CRC_FIELD) { /* right bytes, a wrong CRC in the record */
			p[-3] ^= 0x10;
			break;
		}
		p[fr.length / 2] ^= 0x01;
		if (c == C_CONTENT) /* a right CRC over wrong bytes */
			xevb_st32(p - 4, xevb_crc32c(0, p, fr.length));
		break;
	}
	return len;
}

static int feed_run(struct feed *f, int fd, uint64_t n, uint32_t first, uint32_t run, uint32_t inc_every,
		    enum corrupt c, uint64_t c_at, uint64_t *bytes, uint64_t *sent)
{
	for (uint64_t k = 0; k < n; k++) {
		struct xevb_event ev;
		size_t total;
		int niov, rc, reps = 1;

		make_event(f, (uint32_t)k, first + (uint32_t)k, run, inc_every, &ev);
		if (c != C_NONE && k == c_at && c != C_DUP) {
			uint8_t *flat;
			size_t off = 0, send;
			niov = xevb_event_encode(&ev, xevb_realtime_ns(), f->scratch, f->scratch_len, f->iov,
						 f->iov_max, &total);
			if (niov < 0)
				return niov;
			flat = malloc(total);
			if (!flat)
				return -ENOMEM;
			for (int i = 0; i < niov; i++) {
				memcpy(flat + off, f->iov[i].iov_base, f->iov[i].iov_len);
				off += f->iov[i].iov_len;
			}
			send = corrupt_flat(c, flat, total);
			rc = write_flat(fd, flat, send);
			free(flat);
			if (rc)
				return rc;
			*bytes += send;
			if (c == C_TRUNCATE)
				return 0; /* the stream ends inside the event */
			++*sent;
			continue;
		}
		if (c == C_DUP && k == c_at)
			reps = 2;
		while (reps--) {
			niov = xevb_event_encode(&ev, xevb_realtime_ns(), f->scratch, f->scratch_len, f->iov,
						 f->iov_max, &total);
			if (niov < 0)
				return niov;
			rc = xevb_writev_all(fd, f->iov, (size_t)niov);
			if (rc)
				return rc;
			*bytes += total;
			++*sent;
		}
	}
	return 0;
}

const struct xevb_cfg_cmd sink_feed_cmd = { .help = &feed_help, .opts = feed_opts, .sections = feed_sections };

/* The options after DEST N (argv[0] is N); -1: go on, else the exit status. */
static int parse_feed_options(int argc, char **argv, struct feed_opts *o)
{
	int rc = xevb_cfg_parse(&sink_feed_cmd, argc, argv, o);

	if (rc >= 0)
		return rc;
	o->c = o->have_kind ? (enum corrupt)(o->kind + 1) : C_NONE;
	if (!o->have_c_at)
		o->c_at = o->n / 2;
	if (o->c != C_NONE && o->c_at >= o->n) {
		xevb_err("--corrupt-at %llu: only %llu events", (unsigned long long)o->c_at,
			 (unsigned long long)o->n);
		return 2;
	}
	return -1;
}

/* DEST: stdout for "-", else a TCP connection; the descriptor, or -2 / -1 for exit status 2 / 1. */
static int feed_connect(const char *dest)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd;

	if (!strcmp(dest, "-"))
		return STDOUT_FILENO;
	if (sink_resolve("selftest-send", dest, &ss, &sl))
		return -2;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl)) {
		xevb_err("connect %s: %s", dest, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The fake frames and the encoder's buffers, sized once for n_src sources; false when out of memory. */
static bool feed_alloc(struct feed *f, uint32_t n_src, uint32_t max_len)
{
	f->n_src = n_src;
	f->max_len = (uint16_t)max_len;
	f->sids = calloc(n_src, sizeof(*f->sids));
	f->slots = calloc(n_src, sizeof(*f->slots));
	f->frames = calloc(n_src, sizeof(*f->frames));
	f->frame_data = calloc(n_src, sizeof(*f->frame_data));
	f->scratch_len = XEVB_EVT_SCRATCH_MAX(n_src);
	f->scratch = malloc(f->scratch_len);
	f->iov_max = XEVB_EVT_IOV_MAX(n_src);
	f->iov = calloc(f->iov_max, sizeof(*f->iov));
	if (!f->sids || !f->slots || !f->frames || !f->frame_data || !f->scratch || !f->iov)
		return false;
	for (uint32_t i = 0; i < n_src; i++) {
		f->sids[i] = (uint16_t)i;
		f->frames[i] = malloc(4 + max_len);
		if (!f->frames[i])
			return false;
		xevb_emu_fill(f->frames[i] + 4, max_len);
		f->frame_data[i] = f->frames[i];
	}
	return true;
}

static void feed_free(struct feed *f)
{
	if (f->frames)
		for (uint32_t i = 0; i < f->n_src; i++)
			free(f->frames[i]);
	free(f->sids);
	free(f->slots);
	free(f->frames);
	free(f->frame_data);
	free(f->scratch);
	free(f->iov);
}

int sink_selftest_send(int argc, char **argv)
{
	struct feed_opts o = { 0 };
	uint64_t bytes = 0, sent = 0;
	struct feed f = { 0 };
	const char *dest;
	int fd, rc = 1;

	if (argc < 3 || (argv[1][0] == '-' && argv[1][1] == '-')) {
		xevb_cfg_usage(stdout, &sink_feed_cmd);
		return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	dest = argv[1];
	if (!xevb_parse_u64("selftest-send", argv[2], 0, UINT64_MAX, &o.n))
		return 2;
	/* argv[0] is now N, which getopt skips as the program name */
	if ((rc = parse_feed_options(argc - 2, argv + 2, &o)) >= 0)
		return rc;
	fd = feed_connect(dest);
	if (fd < 0)
		return -fd;
	signal(SIGPIPE, SIG_IGN);

	rc = 1;
	if (feed_alloc(&f, o.n_src, o.max_len)) {
		rc = feed_run(&f, fd, o.n, o.first, o.run, o.inc_every, o.c, o.c_at, &bytes, &sent);
		if (rc) {
			xevb_err("sending to %s: %s", dest, strerror(-rc));
			rc = 1;
		} else {
			xevb_info("sent %llu whole events, %llu bytes", (unsigned long long)sent,
				  (unsigned long long)bytes);
		}
	}
	if (fd != STDOUT_FILENO)
		close(fd);
	feed_free(&f);
	return rc;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb sink: a farm-node emulator on libxevb. With --listen it is a farm
 * node of the library (an xevb_farm handle: builder connections, the
 * strict decoder, credits, Busy, RECEIVED to the DFM, the run's key and
 * membership); with --input it reads a file through the library's reader
 * (a run file, or the plain event stream `xevb build --output` writes).
 * What it adds is the emulator's: every byte of each event checked
 * (sink_check.c: CRC-32C, the source pattern, duplicates, sources), the
 * processing rate (sink_hold.c: events held, done later), the expectation
 * and the counts, the summary and the metrics page (sink_report.c). So
 * every test of `xevb sink` is a test of the library.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xevb/xevb.h>
#include "base/cli.h"
#include "base/clock.h"
#include "base/notify.h"
#include "base/probes.h"
#include "ctl/runcfg.h"
#include "cmd/cmds.h"
#include "cmd/sink_report.h"
#include "emu/sink.h"

#define WAIT_MAX_NS 100000000ull /* the loop looks at the clock and the stop flag at least this often */

volatile sig_atomic_t sink_stop_signal;

static void on_signal(int sig)
{
	sink_stop_signal = sig;
}

bool sink_expectation_met(const struct sink *s)
{
	return s->o.expect_events && s->taken >= s->o.expect_events;
}

static bool time_is_up(const struct sink *s, uint64_t now)
{
	return s->deadline && now >= s->deadline;
}

/* The library's messages, as ours. */
static void lib_log(void *ctx, enum xevb_lib_log_level lv, const char *msg)
{
	(void)ctx;
	switch (lv) {
	case XEVB_LIB_LOG_ERROR:
		xevb_err("%s", msg);
		break;
	case XEVB_LIB_LOG_WARN:
		xevb_warn("%s", msg);
		break;
	case XEVB_LIB_LOG_INFO:
		xevb_info("%s", msg);
		break;
	default:
		xevb_dbg("%s", msg);
		break;
	}
}

/* A view of the library as the tools' decoder's result: what the byte check walks. */
static void as_decoded(const struct xevb_ev *ev, struct xevb_decoded_event *d)
{
	*d = (struct xevb_decoded_event){
		.flags = (uint8_t)ev->flags,
		.n_frags = ev->n_frags,
		.n_expected = ev->n_expected,
		.run_number = ev->run_number,
		.event_id = ev->event_id,
		.total_length = ev->length,
		.build_ns = ev->build_ns,
		.records = ev->data + XEVB_EVT_HLEN,
		/* The decoder checked that the missing list (2 bytes an id, to 4) ends the event. */
		.missing = ev->data + ev->length - XEVB_PAD4(2u * ev->n_missing),
	};
}

/* libxevb's event_check: every payload of a sound event, while its bytes are in cache. */
static int event_bad(void *ctx, const struct xevb_ev *ev)
{
	struct xevb_decoded_event d;

	as_decoded(ev, &d);
	return sink_payloads_bad(ctx, &d);
}

/* Every event taken, from a builder or a file: counted towards the expectation and checked. */
static void take(struct sink *s, const struct xevb_ev *ev, const struct sink_where *w)
{
	struct xevb_decoded_event d;

	s->taken++;
	if (s->progress)
		*s->progress = s->taken;
	XEVB_PROBE(sink_event, ev->event_id, ev->n_frags, ev->length, ev->flags);
	as_decoded(ev, &d);
	sink_check_event(&s->chk, &d, ev->flags & XEVB_EV_CHECK_BAD, w);
}

/* ---- --input FILE ---- */

/* The counts of an event read from a file (a farm handle counts its own). */
static void count_event(struct sink *s, const struct xevb_ev *ev)
{
	s->v.events++;
	s->v.bytes += ev->length;
	s->v.frags += ev->n_frags;
	s->v.missing_frags += ev->n_missing;
	if (ev->flags & XEVB_EV_INCOMPLETE)
		s->v.incomplete++;
	else
		s->v.complete++;
}

static void file_fault(struct sink *s, int kind, const struct sink_where *w, const char *msg)
{
	s->v.broken[kind]++;
	sink_note(w, xevb_broken_name(kind), msg);
}

/*
 * stdin as a file the reader can map: itself when it is one, else (a
 * pipe) copied into an anonymous file. The path, or NULL (said why).
 */
static const char *stdin_path(char *buf, size_t len)
{
	struct stat st;
	char chunk[1 << 16];
	ssize_t n;
	int fd;

	if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(buf, len, "/proc/self/fd/%d", STDIN_FILENO);
		return buf;
	}
	fd = memfd_create("xevb-sink-stdin", MFD_CLOEXEC);
	if (fd < 0) {
		xevb_err("stdin: memfd_create: %s", strerror(errno));
		return NULL;
	}
	while ((n = read(STDIN_FILENO, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && write(fd, chunk, (size_t)n) != n) {
			xevb_err("stdin: keeping it in memory: %s", strerror(errno));
			return NULL;
		}
	if (n < 0) {
		xevb_err("stdin: %s", strerror(errno));
		return NULL;
	}
	snprintf(buf, len, "/proc/self/fd/%d", fd); /* left open: the reader opens it by name */
	return buf;
}

/* How the file ended, when it was read to its end: what was wrong with it counted. */
static void file_end(struct sink *s, const struct xevb_file_reader *r, const struct sink_where *w)
{
	const struct xevb_file_info *i = xevb_file_reader_info(r);

	if (i->state == XEVB_FILE_CORRUPT)
		file_fault(s, i->broken ? (int)i->broken : XEVB_BROKEN_FILE, w, xevb_file_reader_error(r));
	else if (i->state == XEVB_FILE_CUT || (i->state == XEVB_FILE_RAW && i->cut_bytes))
		file_fault(s, XEVB_BROKEN_TRUNCATED, w, xevb_file_reader_error(r));
}

static void run_file(struct sink *s)
{
	XEVB_OPTS(xevb_file_reader_opts, ro, .max_event = s->o.max_event, .event_check = event_bad,
		  .check_ctx = &s->chk);
	struct sink_where w = { .name = strcmp(s->o.input, "-") ? s->o.input : "stdin" };
	char err[XEVB_ERRBUF_SIZE], path[64];
	const char *p = strcmp(s->o.input, "-") ? s->o.input : stdin_path(path, sizeof(path));
	struct xevb_file_reader *r;
	const struct xevb_ev *ev;
	struct stat st;
	int rc;

	if (!p) {
		s->v.broken[XEVB_BROKEN_READ]++;
		return;
	}
	/* An empty stream holds no event, and nothing wrong: as before run files. */
	if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
		return;
	r = xevb_file_reader_open(p, &ro, err);
	if (!r) {
		file_fault(s, errno == EBADMSG ? XEVB_BROKEN_FILE : XEVB_BROKEN_READ, &w, err);
		return;
	}
	for (;;) {
		uint64_t now = xevb_now_ns();

		sink_tick(s, now);
		if (sink_stop_signal || sink_expectation_met(s) || time_is_up(s, now))
			break;
		rc = xevb_file_reader_next(r, &ev);
		if (rc != 1) {
			file_end(s, r, &w);
			break;
		}
		count_event(s, ev);
		take(s, ev, &w);
	}
	xevb_file_reader_close(r);
}

/* ---- --listen ADDR:PORT ---- */

/* --listen as the library takes it, "A.B.C.D:PORT", in buf; -1 (said why) when it cannot be. */
static int listen_ipv4(const char *listen, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	const struct sockaddr_in *in = (const void *)&ss;
	socklen_t sl;
	char a[INET_ADDRSTRLEN];

	if (sink_resolve("listen", listen, &ss, &sl))
		return -1;
	if (ss.ss_family != AF_INET) {
		xevb_err("--listen %s: a farm node (libxevb) listens on IPv4 only: give an IPv4 address", listen);
		return -1;
	}
	inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
	snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
	return 0;
}

/*
 * The farm handle for the options: the listening address, the control
 * protocol (--ctl-port, --dfm, the key, and with --config its membership)
 * or none, credits, Busy marks, limits. 0, or 1 / 2 (said why): the exit status.
 */
static int farm_open(struct sink *s, char *addr, size_t addr_len)
{
	const struct xevb_runcfg *rc = xevb_runcfg_current();
	char err[XEVB_ERRBUF_SIZE], dfm[32] = "", a[INET_ADDRSTRLEN];
	XEVB_OPTS(xevb_farm_opts, fo, .listen = addr, .credits = s->o.credits, .busy_high = s->o.busy_high,
		  .busy_low = s->o.busy_low, .max_event = s->o.max_event, .max_buffer = s->o.max_buffer_total,
		  .log_fn = lib_log, .event_check = event_bad, .check_ctx = &s->chk);

	if (listen_ipv4(s->o.listen, addr, addr_len))
		return 2;
	/* 0 is "never" here, the library's default there: a partial event then waits 49 days. */
	fo.partial_timeout_ms = s->o.partial_timeout_ns ? (uint32_t)(s->o.partial_timeout_ns / 1000000) :
							  UINT32_MAX;
	if (!s->o.ctl_port) {
		fo.flags |= XEVB_FARM_NO_CTL;
	} else {
		fo.ctl_port = (uint16_t)s->o.ctl_port;
		fo.id = (uint16_t)s->o.id;
		fo.key_file = s->o.co.key_file;
		if (s->o.dfm.sin_port) {
			inet_ntop(AF_INET, &s->o.dfm.sin_addr, a, sizeof(a));
			snprintf(dfm, sizeof(dfm), "%s:%u", a, ntohs(s->o.dfm.sin_port));
			fo.dfm = dfm;
		}
		/* Run from a run configuration: its builders and DFM are the only peers admitted. */
		if (rc)
			fo.run_config = rc->path;
	}
	s->farm = xevb_farm_open(&fo, err);
	if (!s->farm) {
		xevb_err("%s", err);
		return 1;
	}
	return 0;
}

/* The bound address in PATH, written aside and renamed so that a waiting script never reads half a line. */
static int write_ready_file(const char *path, const char *name)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", name);
	if (fclose(f) || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The library's counts for the summary, the statistics line and the metrics thread, after each batch. */
static void publish(struct sink *s)
{
	struct xevb_farm_stats st = { .sz = sizeof(st) };

#define PUB(field, val) __atomic_store_n(&s->v.field, (val), __ATOMIC_RELAXED)
	xevb_farm_stats(s->farm, &st);
	PUB(events, st.events);
	PUB(complete, st.complete);
	PUB(incomplete, st.incomplete);
	PUB(frags, st.frags);
	PUB(missing_frags, st.missing_frags);
	PUB(bytes, st.bytes);
	PUB(conns_total, st.conns_total);
	PUB(conns_dropped, st.conns_broken);
	PUB(conns_open, st.conns_open);
	PUB(refused_max, st.conns_refused_max);
	PUB(refused_other, st.conns_refused - st.conns_refused_max - st.accept_fd_limit);
	PUB(accept_fd_limit, st.accept_fd_limit);
	PUB(buffer_bytes, st.buffer_bytes);
	PUB(buffer_max, st.buffer_bytes_max);
	PUB(read_pauses, st.read_pauses);
	for (int k = 0; k < XEVB_BROKEN_SLOTS; k++)
		PUB(broken[k], st.broken[k]);
	for (int k = 0; k < XEVB_CTL_REFUSED_SLOTS; k++)
		PUB(ctl_refused[k], st.ctl_refused_by[k]);
	PUB(ctl_dropped[0], st.ctl_not_from_dfm);
	PUB(ctl_dropped[1], st.ctl_wrong_role);
	PUB(ctl_dropped[2], st.ctl_builders_full);
#undef PUB
	s->busy = st.busy;
	if (st.held > s->queue_max)
		s->queue_max = st.held;
	s->st = st;
}

/* The n events the handle made ready, taken and checked; done at once or held (--process-rate). */
static void take_ready(struct sink *s, int n, uint64_t now)
{
	const struct xevb_ev *ev;

	/* next() never looks for I/O while events are ready: n of them, no system call. */
	while (n-- > 0 && !sink_expectation_met(s) && xevb_farm_next(s->farm, &ev) > 0) {
		struct sink_where w = { .addr = ev->builder_addr, .port = ev->builder_port };

		take(s, ev, &w);
		s->received_busy += s->busy;
		if (!s->hold.rate || !sink_hold_push(&s->hold, ev, now))
			xevb_farm_done(s->farm, ev);
	}
}

/* How long to wait for the handle's descriptor: until the next statistics line, deadline or release. */
static uint64_t wait_ns(const struct sink *s, uint64_t now)
{
	uint64_t w = WAIT_MAX_NS, h = sink_hold_wait_ns(&s->hold, now);

	if (s->stats_interval_s && s->next_stats - now < w)
		w = s->next_stats - now;
	if (s->deadline && s->deadline - now < w)
		w = s->deadline - now;
	return h < w ? h : w;
}

/*
 * The run is over (--run-end) and every event of it processed (none held
 * for --process-rate): the library's XEVB_END_* then, else 0.
 */
static uint32_t run_over(const struct sink *s)
{
	uint32_t e = xevb_farm_run_end(s->farm);

	if (s->o.run_end == SINK_END_NONE || s->st.held || !(e & XEVB_END_RUN))
		return 0;
	/* auto: only a DFM's word; a builder's stream can end and come back (a restart). */
	return s->o.run_end == SINK_END_STREAMS || (e & XEVB_END_DFM) ? e : 0;
}

/*
 * Until stopped, the expected events are in, --duration is up or the run is
 * over; -1 when the handle fails. One system call a wakeup, the handle's
 * own wait (xevb_farm_poll), as the sink did before it was a user of the
 * library: a ppoll on its descriptor first cost one more each time (7% of
 * the sink's CPU at 200,000 L1 events/s). A stop signal ends the wait
 * (EINTR); one that comes between the check and the wait is seen within
 * WAIT_MAX_NS.
 */
static int listen_loop(struct sink *s)
{
	for (;;) {
		uint64_t now = xevb_now_ns(), w;
		const void *ev;
		int n;

		sink_tick(s, now);
		if (sink_stop_signal || sink_expectation_met(s) || time_is_up(s, now))
			break;
		while ((ev = sink_hold_pop(&s->hold, now)))
			xevb_farm_done(s->farm, ev);
		w = wait_ns(s, now);
		n = xevb_farm_poll(s->farm, (int)((w + 999999) / 1000000));
		if (n < 0) {
			xevb_err("%s", xevb_farm_error(s->farm));
			return -1;
		}
		take_ready(s, n, xevb_now_ns());
		publish(s);
		if ((s->ended = run_over(s)))
			break;
	}
	return 0;
}

/* Listen, tell who waits that we do, receive; the exit status so far (0 or 1, 2). */
static int run_listen(struct sink *s)
{
	char addr[64], name[80];
	int rc = farm_open(s, addr, sizeof(addr));

	if (rc)
		return rc;
	snprintf(name, sizeof(name), "%.*s:%u", (int)(strrchr(addr, ':') - addr), addr, xevb_farm_port(s->farm));
	if (s->o.ready_file && write_ready_file(s->o.ready_file, name)) {
		xevb_err("--ready-file %s: %s", s->o.ready_file, strerror(errno));
		return 1;
	}
	publish(s);
	if (s->o.ctl_port)
		xevb_info(
			"credits: %u events in flight per builder; processing %s; control port %u; Busy above "
			"%u, not-Busy below %u events held",
			s->o.credits, s->o.process_rate > 0 ? "emulated" : "instant", xevb_farm_ctl_port(s->farm),
			s->st.busy_mark_high, s->st.busy_mark_low);
	xevb_info("listening on %s", name);
	xevb_notify_ready("listening on %s", name);
	return listen_loop(s) ? 1 : 0;
}

/* --progress-file: the events taken, in a shared mapping; 0, or -1 (said why). */
static int map_progress(struct sink *s, const char *path)
{
	/* A store per event into a shared file mapping: no syscall, and the
	 * page cache keeps it whatever becomes of us. */
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	void *m = MAP_FAILED;

	if (fd >= 0 && ftruncate(fd, sizeof(uint64_t)) == 0)
		m = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		xevb_err("--progress-file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	s->progress = m;
	return 0;
}

/* Receive from builders or the file, with --metrics; the exit status. */
static int sink_run(struct sink *s)
{
	struct xevb_metrics *mx = NULL;
	int rc = 1;

	if (s->o.co.metrics &&
	    (!(mx = xevb_metrics_start(s->o.co.metrics)) || xevb_metrics_render(mx, sink_metrics, s)))
		goto out;
	s->t0 = xevb_now_ns();
	s->next_stats = s->t0 + (uint64_t)s->stats_interval_s * 1000000000ull;
	if (s->o.co.duration_ns)
		s->deadline = s->t0 + s->o.co.duration_ns;
	if (s->o.listen) {
		rc = run_listen(s);
		if (rc == 2 || !s->farm)
			goto out;
		publish(s);
	} else {
		run_file(s);
		rc = 0;
	}
	rc = sink_report(s) && !rc ? 0 : 1;
out:
	xevb_metrics_stop(mx);
	xevb_farm_close(s->farm); /* the final RECEIVED, if not yet sent */
	s->farm = NULL;
	sink_hold_free(&s->hold);
	sink_check_free(&s->chk);
	return rc;
}

int cmd_sink(int argc, char **argv)
{
	static struct sink s; /* its options and counters: kilobytes */
	struct sigaction sa = { .sa_handler = on_signal };
	int rc;

	if (argc >= 2 && !strcmp(argv[1], "--selftest-send"))
		return sink_selftest_send(argc - 1, argv + 1);
	if ((rc = xevb_runcfg_start_opts(&argc, &argv, XEVB_RC_SINK, &sink_cmd)) > 1)
		return rc;
	if ((rc = sink_opts_parse(argc, argv, &s.o)) >= 0)
		return rc;
	s.stats_interval_s = xevb_common_interval(&s.o.co);
	if (s.o.progress && map_progress(&s, s.o.progress))
		return 1;
	/* Receive buffers each in a mapping of their own, unmapped when freed: glibc
	 * would otherwise raise its threshold after the first large buffer and keep
	 * freed ones in its heap, so the process would hold more than
	 * --max-buffer-total. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (sink_check_init(&s.chk, s.o.dup_window, !s.o.no_content, s.o.expect_sources))
		return 1;
	sink_hold_init(&s.hold, s.o.process_rate);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return sink_run(&s);
}

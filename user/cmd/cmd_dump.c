// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb dump: built events from run files or from builders, shown one line
 * each (dump_fmt.c), on libxevb (lib/, docs/consumer.md): its file reader
 * for --input, its farm node for --listen. The exit status says whether
 * the input was whole: 0 yes, 1 no (cut, corrupt, a broken stream, a bad
 * CRC under --verify), 2 a usage error.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "cmd/cmds.h"
#include "cmd/dump_opts.h"

/* What was read and shown, over all inputs. */
struct dump_run {
	const struct dump_cfg *c;
	uint64_t read, shown, crc_bad;
	uint32_t bad_event; /* the first event shown with a bad CRC */
	int bad_source;     /* and its first bad source */
	bool done;          /* --count reached */
};

/* One event read: shown when it passes the filters. */
static void take(struct dump_run *r, const struct xevb_ev *ev)
{
	const struct dump_cfg *c = r->c;
	struct dump_check chk;

	r->read++;
	if (!dump_match(&c->flt, ev))
		return;
	dump_verify(&c->fmt, ev, &chk);
	if (chk.bad_source >= 0 && !r->crc_bad++) {
		r->bad_event = ev->event_id;
		r->bad_source = chk.bad_source;
	}
	dump_event(stdout, &c->fmt, ev, &chk);
	r->shown++;
	r->done = c->count && r->shown >= c->count;
}

/* The builder name from a file header, for a terminal: anything but printable ASCII as '?'. */
static void printable(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = 0;
}

static void file_header(const struct xevb_file_reader *rd, const char *path)
{
	const struct xevb_file_info *fi = xevb_file_reader_info(rd);
	char t[48], name[40];

	if (!fi->format_version) {
		xevb_info("reading %s: a plain event stream (no header, no trailer to check)", path);
		return;
	}
	dump_time(t, sizeof(t), DUMP_TIME_ISO, fi->start_ns);
	printable(name, sizeof(name), fi->builder_name);
	xevb_info("reading %s: run %u file %u, builder %u (%s), %u sources, started %s", path, fi->run_number,
		  fi->seq, fi->builder_id, name, fi->n_sources, t);
}

/* How the file ended: 0 whole, 1 not (said why). rc: the reader's last return. */
static int file_end(const struct dump_run *r, const struct xevb_file_reader *rd, const char *path, int rc)
{
	const struct xevb_file_info *fi = xevb_file_reader_info(rd);

	if (r->done && fi->state == XEVB_FILE_READING) {
		xevb_info("%s: stopped at --count %llu; the rest not read", path, (unsigned long long)r->c->count);
		return 0;
	}
	switch (fi->state) {
	case XEVB_FILE_CLOSED:
		xevb_info("%s: closed cleanly, %llu events%s", path, (unsigned long long)fi->events,
			  fi->trailer_flags & XEVB_FILE_T_CONTINUED ? " (the run continues in the next file)" :
								      "");
		return 0;
	case XEVB_FILE_RAW:
		if (!fi->cut_bytes) {
			xevb_info("%s: %llu events, ending at an event boundary", path,
				  (unsigned long long)fi->events);
			return 0;
		}
		break;
	case XEVB_FILE_CUT:
	case XEVB_FILE_CORRUPT:
		break;
	default:
		xevb_err("%s: reading stopped after %llu events: %s", path, (unsigned long long)fi->events,
			 rc < 0 ? strerror(-rc) : "unknown state");
		return 1;
	}
	/* A plain stream that ends inside an event was cut, whatever the reader calls its kind. */
	xevb_err("input not whole (%s): %s", fi->state == XEVB_FILE_RAW ? "cut" : xevb_file_state_name(fi->state),
		 xevb_file_reader_error(rd));
	return 1;
}

static int dump_file(struct dump_run *r, const char *path)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	struct xevb_file_reader *rd = xevb_file_reader_open(path, NULL, err);
	const struct xevb_ev *ev;
	int rc = 0, whole;

	if (!rd) {
		fflush(stdout);
		xevb_err("%s", err);
		return 1;
	}
	file_header(rd, path);
	while (!r->done && (rc = xevb_file_reader_next(rd, &ev)) == 1)
		take(r, ev);
	/* Every whole event is out before the message about what follows them. */
	fflush(stdout);
	whole = file_end(r, rd, path, rc);
	xevb_file_reader_close(rd);
	return whole;
}

/* libxevb's messages (a builder connected, a stream broke) as ours. */
static void lib_log(void *ctx, enum xevb_lib_log_level lv, const char *msg)
{
	static const enum xevb_log_level map[] = { XEVB_LOG_ERR, XEVB_LOG_WARN, XEVB_LOG_INFO, XEVB_LOG_DEBUG };

	(void)ctx;
	xevb_log(map[(unsigned)lv < 4 ? lv : XEVB_LIB_LOG_DEBUG], "%s", msg);
}

/* --ready-file: "ADDR:PORT" (the port alone when the address came from --config), whole or not at all. */
static int write_ready(const struct dump_cfg *c, uint16_t port)
{
	const char *colon = c->listen ? strrchr(c->listen, ':') : NULL;
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", c->ready_file);
	f = fopen(tmp, "w");
	if (!f ||
	    fprintf(f, "%.*s%s%u\n", colon ? (int)(colon - c->listen) : 0, colon ? c->listen : "",
		    colon ? ":" : "", port) < 0 ||
	    fclose(f) || rename(tmp, c->ready_file)) {
		xevb_err("--ready-file %s: %s", c->ready_file, strerror(errno));
		return -1;
	}
	return 0;
}

static struct xevb_farm *farm_open(const struct dump_cfg *c)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	uint32_t flags = c->no_ctl ? XEVB_FARM_NO_CTL : 0;
	struct xevb_farm *f;

	if (c->ctl_port_given && !c->ctl_port)
		flags |= XEVB_FARM_CTL_ANY_PORT;
	/* Zero where not given: the library's default, or the run configuration's. */
	XEVB_OPTS(xevb_farm_opts, o, .listen = c->listen, .flags = flags,
		  .credits = c->credits_given ? c->credits : 0, .ctl_port = (uint16_t)c->ctl_port,
		  .id = (uint16_t)c->id, .dfm = c->dfm, .key_file = c->co.key_file, .run_config = c->config,
		  .log_fn = lib_log);
	f = xevb_farm_open(&o, err);
	if (!f) {
		/* The library names its option fields; say ours too. */
		xevb_err("%s%s", err,
			 strstr(err, "control port") ?
				 " (xevb dump: --ctl-port N, 0 for any free one, or --no-ctl)" :
				 "");
		return NULL;
	}
	if (c->ready_file && write_ready(c, xevb_farm_port(f))) {
		xevb_farm_close(f);
		return NULL;
	}
	/* The library has said the port it listens on; the control port is ours to tell. */
	if (xevb_farm_ctl_port(f) && (c->credits_given || !c->config))
		xevb_info("control protocol on UDP port %u, %u credits per builder", xevb_farm_ctl_port(f),
			  c->credits);
	else if (xevb_farm_ctl_port(f))
		xevb_info("control protocol on UDP port %u, credits as %s says", xevb_farm_ctl_port(f), c->config);
	return f;
}

/* Every builder that connected has gone, and nothing is left to show. */
static bool all_closed(const struct xevb_farm *f)
{
	struct xevb_farm_stats st = { .sz = sizeof(st) };

	return !xevb_farm_stats(f, &st) && st.conns_total && !st.conns_open;
}

/* Events until --count, --duration, a signal or (--until-close) the last builder gone. */
static int listen_loop(struct dump_run *r, struct xevb_farm *f)
{
	uint64_t end = r->c->co.duration_ns ? xevb_now_ns() + r->c->co.duration_ns : 0;
	const struct xevb_ev *ev;
	int rc = 0;

	xevb_stop_on_signals();
	while (!xevb_stop && !r->done) {
		uint64_t now = xevb_now_ns();
		int wait = 100;

		if (end && now >= end)
			break;
		if (end && end - now < 100000000u)
			wait = (int)((end - now) / 1000000u) + 1;
		rc = xevb_farm_poll(f, wait);
		while (rc >= 0 && !r->done && (rc = xevb_farm_next(f, &ev)) == 1) {
			take(r, ev);
			xevb_farm_done(f, ev);
		}
		/* A line as soon as its event is in, for someone watching (or a pipe to grep). */
		fflush(stdout);
		if (rc < 0 && rc != -EINTR) {
			xevb_err("the farm node failed: %s", xevb_farm_error(f));
			return 1;
		}
		if (r->c->until_close && rc == 0 && all_closed(f))
			break;
	}
	return 0;
}

static int dump_listen(struct dump_run *r)
{
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct xevb_farm *f = farm_open(r->c);
	int rc;

	if (!f)
		return 1;
	rc = listen_loop(r, f);
	fflush(stdout);
	xevb_farm_stats(f, &st);
	xevb_info("%llu builder connections, %llu events received, %llu shown", (unsigned long long)st.conns_total,
		  (unsigned long long)st.events, (unsigned long long)r->shown);
	if (st.conns_broken) {
		xevb_err(
			"input not whole: %llu of %llu builder connections broke (%llu closed inside an event): "
			"the messages above say why",
			(unsigned long long)st.conns_broken, (unsigned long long)st.conns_total,
			(unsigned long long)st.truncated);
		rc = 1;
	}
	xevb_farm_close(f);
	return rc;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_cfg *c = calloc(1, sizeof(*c));
	struct dump_run r = { .bad_source = -1 };
	int rc = 0;

	if (!c) {
		xevb_err("out of memory");
		return 1;
	}
	rc = dump_opts_parse(argc, argv, c);
	if (rc >= 0)
		goto out;
	if (c->quiet && xevb_log_level == XEVB_LOG_INFO)
		xevb_log_level = XEVB_LOG_WARN;
	r.c = c;
	rc = 0;
	if (c->n_inputs) {
		for (uint32_t i = 0; i < c->n_inputs && !r.done; i++)
			rc |= dump_file(&r, c->inputs[i]);
		xevb_info("%llu events read, %llu shown", (unsigned long long)r.read, (unsigned long long)r.shown);
	} else {
		rc = dump_listen(&r);
	}
	fflush(stdout);
	if (r.crc_bad) {
		xevb_err(
			"input not whole: a bad payload CRC-32C in %llu of the events shown (the first: event %u, "
			"source %d)",
			(unsigned long long)r.crc_bad, r.bad_event, r.bad_source);
		rc = 1;
	}
out:
	free(c);
	return rc;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A farm node on libxevb (docs/consumer.md): take events
 * from the builders, check each payload's CRC, hold up to --hold of them
 * (as trigger software would while it decides), write them to run files
 * with --output, and say what arrived as one JSON line. With --read it
 * reads run files instead and says how each ended.
 *
 *   xevb-farm-example --listen 198.18.3.1:5000 --dfm 198.18.4.1:23901 --events 20000
 *   xevb-farm-example --config run.ini --id 0 --output /data/run --duration 60
 *   xevb-farm-example --read /data/run/xevb-run00000001-0000.xevb
 *
 * Built against the installed library: cc farm_node.c $(pkg-config --cflags --libs xevb)
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xevb/xevb.h>

struct args {
	const char *listen, *dfm, *key, *config, *output, *ready;
	unsigned id, credits, hold;
	unsigned long long events;
	double duration;
	uint32_t run;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void log_line(void *ctx, enum xevb_lib_log_level lv, const char *msg)
{
	(void)ctx;
	if (lv <= XEVB_LIB_LOG_INFO)
		fprintf(stderr, "farm-example: %s\n", msg);
}

/* s as a JSON string (quotes and control bytes escaped). */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	putchar('"');
}

/* What the header and trailer say, and what was read: the rest of a --read line. */
static void print_info(const struct xevb_file_info *fi)
{
	printf(",\"version\":%u,\"builder_id\":%u,\"builder\":", fi->format_version, fi->builder_id);
	json_str(fi->builder_name ? fi->builder_name : "");
	printf(",\"sources\":[");
	for (unsigned i = 0; i < fi->n_sources; i++)
		printf("%s%u", i ? "," : "", fi->sources[i]);
	printf("],\"start_ns\":%llu,\"end_ns\":%llu,\"bytes\":%llu,\"cut_bytes\":%llu,\"trailer_events\":%llu}\n",
	       (unsigned long long)fi->start_ns, (unsigned long long)fi->end_ns, (unsigned long long)fi->bytes,
	       (unsigned long long)fi->cut_bytes, (unsigned long long)fi->trailer_events);
}

/*
 * --read FILE...: each file's header, events and how it ended, a JSON
 * line each. 0 when every file closed cleanly.
 */
static int read_files(int n, char **paths)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		char err[XEVB_ERRBUF_SIZE];
		XEVB_OPTS(xevb_file_reader_opts, o, .flags = XEVB_FR_VERIFY_CRC);
		struct xevb_file_reader *r = xevb_file_reader_open(paths[i], &o, err);
		const struct xevb_file_info *fi;
		const struct xevb_ev *ev;
		unsigned long long crc_bad = 0;

		if (!r) {
			fprintf(stderr, "farm-example: %s\n", err);
			bad = 1;
			continue;
		}
		while (xevb_file_reader_next(r, &ev) == 1)
			crc_bad += !!(ev->flags & XEVB_EV_CRC_BAD);
		fi = xevb_file_reader_info(r);
		printf("{\"file\":");
		json_str(paths[i]);
		printf(",\"state\":\"%s\",\"run\":%u,\"seq\":%u,\"events\":%llu,\"crc_bad\":%llu,\"continued\":%s",
		       xevb_file_state_name(fi->state), fi->run_number, fi->seq, (unsigned long long)fi->events,
		       crc_bad, fi->trailer_flags & XEVB_FILE_T_CONTINUED ? "true" : "false");
		print_info(fi);
		if (fi->state != XEVB_FILE_CLOSED) {
			fprintf(stderr, "farm-example: %s\n", xevb_file_reader_error(r));
			bad = 1;
		}
		xevb_file_reader_close(r);
	}
	return bad;
}

/* Done with the oldest held events until at most keep are held. */
static void release(struct xevb_farm *f, const struct xevb_ev **held, unsigned *n, unsigned keep)
{
	unsigned drop = *n > keep ? *n - keep : 0;

	for (unsigned i = 0; i < drop; i++)
		xevb_farm_done(f, held[i]);
	memmove(held, held + drop, (*n - drop) * sizeof(*held));
	*n -= drop;
}

static int take(struct xevb_farm *f, struct xevb_file_writer *w, const struct args *a, const struct xevb_ev **held,
		unsigned *n_held, unsigned long long *got, unsigned long long *crc_bad)
{
	const struct xevb_ev *ev;
	int rc;

	while ((rc = xevb_farm_next(f, &ev)) == 1) {
		(*got)++;
		if (xevb_ev_verify(ev, NULL))
			(*crc_bad)++;
		if (w && xevb_file_writer_write(w, ev->data, ev->length)) {
			fprintf(stderr, "farm-example: %s\n", xevb_file_writer_error(w));
			return -1;
		}
		held[(*n_held)++] = ev;
		release(f, held, n_held, a->hold);
		if (a->events && *got >= a->events)
			break;
	}
	return rc < 0 ? rc : 0;
}

static void summary(struct xevb_farm *f, unsigned long long got, unsigned long long crc_bad,
		    unsigned long long files)
{
	struct xevb_farm_stats st = { .sz = sizeof(st) };

	xevb_farm_stats(f, &st);
	printf("{\"events\":%llu,\"complete\":%llu,\"incomplete\":%llu,\"bytes\":%llu,\"crc_bad\":%llu,"
	       "\"done\":%llu,\"conns\":%llu,\"conns_broken\":%llu,\"status_sent\":%llu,\"received_sent\":%llu,"
	       "\"busy_on\":%llu,\"ctl_refused\":%llu,\"files\":%llu}\n",
	       got, (unsigned long long)st.complete, (unsigned long long)st.incomplete,
	       (unsigned long long)st.bytes, crc_bad, (unsigned long long)st.done,
	       (unsigned long long)st.conns_total, (unsigned long long)st.conns_broken,
	       (unsigned long long)st.status_sent, (unsigned long long)st.received_sent,
	       (unsigned long long)st.busy_on, (unsigned long long)st.ctl_refused, files);
}

static int run(const struct args *a)
{
	char err[XEVB_ERRBUF_SIZE];
	XEVB_OPTS(xevb_farm_opts, o, .listen = a->listen, .dfm = a->dfm, .key_file = a->key,
		  .run_config = a->config, .id = (uint16_t)a->id, .credits = a->credits,
		  .flags = XEVB_FARM_VERIFY_CRC, .log_fn = log_line);
	XEVB_OPTS(xevb_file_writer_opts, wo, .dir = a->output, .run_number = a->run, .max_events = 5000);
	struct xevb_file_writer_stats ws = { .sz = sizeof(ws) };
	struct xevb_farm *f = xevb_farm_open(&o, err);
	struct xevb_file_writer *w = NULL;
	const struct xevb_ev **held = calloc(a->hold + 1, sizeof(*held));
	unsigned long long got = 0, crc_bad = 0;
	unsigned n_held = 0;
	double end = now_s() + a->duration;
	int rc = 0;

	if (!f || !held) {
		fprintf(stderr, "farm-example: %s\n", f ? "out of memory" : err);
		return 2;
	}
	if (a->output && !(w = xevb_file_writer_open(&wo, err))) {
		fprintf(stderr, "farm-example: %s\n", err);
		return 2;
	}
	if (a->ready) {
		FILE *rf = fopen(a->ready, "w");
		if (rf) {
			fprintf(rf, "%u\n", xevb_farm_port(f));
			fclose(rf);
		}
	}
	while (!stop && now_s() < end && !(a->events && got >= a->events) && !rc) {
		struct pollfd p = { .fd = xevb_farm_fd(f), .events = POLLIN };
		poll(&p, 1, 100); /* the caller's own loop: any other descriptors would go here too */
		rc = take(f, w, a, held, &n_held, &got, &crc_bad);
	}
	release(f, held, &n_held, 0);
	xevb_farm_process(f); /* the last credits go back */
	if (w) {
		xevb_file_writer_stats(w, &ws);
		if (xevb_file_writer_close(w))
			rc = -1;
	}
	summary(f, got, crc_bad, ws.files);
	xevb_farm_close(f);
	free(held);
	return rc || (a->events && got < a->events) ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", 1, 0, 'l' },   { "dfm", 1, 0, 'd' },
		{ "key-file", 1, 0, 'k' }, { "config", 1, 0, 'c' },
		{ "id", 1, 0, 'i' },       { "credits", 1, 0, 'C' },
		{ "events", 1, 0, 'n' },   { "duration", 1, 0, 't' },
		{ "output", 1, 0, 'o' },   { "run", 1, 0, 'r' },
		{ "hold", 1, 0, 'H' },     { "ready-file", 1, 0, 'R' },
		{ "read", 0, 0, 'F' },     { 0, 0, 0, 0 },
	};
	struct args a = { .duration = 60, .hold = 16 };
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'l':
			a.listen = optarg;
			break;
		case 'd':
			a.dfm = optarg;
			break;
		case 'k':
			a.key = optarg;
			break;
		case 'c':
			a.config = optarg;
			break;
		case 'i':
			a.id = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'C':
			a.credits = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			a.events = strtoull(optarg, NULL, 10);
			break;
		case 't':
			a.duration = strtod(optarg, NULL);
			break;
		case 'o':
			a.output = optarg;
			break;
		case 'r':
			a.run = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'H':
			a.hold = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'R':
			a.ready = optarg;
			break;
		case 'F':
			return read_files(argc - optind, argv + optind);
		default:
			fprintf(stderr,
				"usage: %s --listen ADDR:PORT | --config FILE --id N [--dfm ADDR:PORT] "
				"[--key-file F] [--events N] [--duration S] [--output DIR --run N] [--hold N]\n"
				"       %s --read FILE...\n",
				argv[0], argv[0]);
			return 2;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return run(&a);
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The C reader, as the Python reader is measured against it
 * (python/bench/bench_reader.py): every event of a run file through
 * xevb_file_reader_next, every fragment looked at through xevb_ev_frag
 * (its first byte summed, so that the payload is touched as a consumer
 * would), or with -n none (the events alone, as Python's "events" mode).
 * Prints one JSON line: events, fragments, seconds (wall and CPU), events
 * per second.
 *
 *   c_reader [-n] FILE [PASSES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xevb/xevb.h>

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One pass over the file: events read, or -1. */
static long long one_pass(const char *path, int walk, unsigned long long *frags, unsigned long long *sum)
{
	char err[XEVB_ERRBUF_SIZE];
	struct xevb_file_reader *r = xevb_file_reader_open(path, NULL, err);
	const struct xevb_ev *ev;
	struct xevb_ev_frag f;
	long long n = 0;
	int rc;

	if (!r) {
		fprintf(stderr, "c_reader: %s\n", err);
		return -1;
	}
	while ((rc = xevb_file_reader_next(r, &ev)) == 1) {
		for (uint32_t i = 0; walk && i < ev->n_frags; i++) {
			xevb_ev_frag(ev, i, &f);
			*sum += f.length ? f.payload[0] : 0;
		}
		*frags += ev->n_frags;
		n++;
	}
	if (rc < 0) {
		fprintf(stderr, "c_reader: %s\n", xevb_file_reader_error(r));
		n = -1;
	}
	xevb_file_reader_close(r);
	return n;
}

int main(int argc, char **argv)
{
	unsigned long long frags = 0, sum = 0;
	int walk = !(argc > 1 && !strcmp(argv[1], "-n"));
	int passes;
	long long events = 0, n;
	double w0, c0, w, c;

	argv += !walk;
	argc -= !walk;
	passes = argc > 2 ? atoi(argv[2]) : 1;
	if (argc < 2 || passes < 1) {
		fprintf(stderr, "usage: c_reader [-n] FILE [PASSES]\n");
		return 2;
	}
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	for (int p = 0; p < passes; p++) {
		if ((n = one_pass(argv[1], walk, &frags, &sum)) < 0)
			return 1;
		events += n;
	}
	w = now(CLOCK_MONOTONIC) - w0;
	c = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("{\"events\": %lld, \"fragments\": %llu, \"wall_s\": %.6f, \"cpu_s\": %.6f, \"events_per_s\": %.0f, "
	       "\"checksum\": %llu}\n",
	       events, frags, w, c, events / w, sum);
	return 0;
}

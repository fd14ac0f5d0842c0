// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The C reader, as the Python reader is measured against it
 * (python/bench/bench_reader.py): every event of a run file through
 * xevb_file_reader_next, and then, by mode:
 *
 *   (none)  every fragment looked at through xevb_ev_frag (its first byte
 *           summed, so that the payload is touched as a consumer would)
 *   -x      every fragment through the fragment index (xevb_ev_offsets):
 *           a loop, no call per fragment
 *   -n      the events alone (as Python's "events" mode)
 *
 * and, to show what bounds the reader, the same file without it:
 *
 *   -l      the floor of one core reading the file: one load from each
 *           64-byte line of the mapped file (the mapping's page faults
 *           included), the events found by their total_length
 *   -t      the bytes summed 8 bytes at a time (a loop bound by its adds,
 *           not by memory: compare -l)
 *   -k      the file checksum alone: CRC-32C of every event's bytes
 *           (xevb_ev_crc32c), what the reader adds to the decoder (-n
 *           less -k: the decoder's strict checks)
 *
 * Prints one JSON line: events, fragments, seconds (wall and CPU), events
 * per second.
 *
 *   c_reader [-n|-x|-l|-t|-k] FILE [PASSES]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xevb/xevb.h>

struct acc {
	unsigned long long frags, sum;
};

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One pass through the library's reader: events read, or -1. */
static long long reader_pass(const char *path, char mode, struct acc *a)
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
		if (mode == 'f')
			for (uint32_t i = 0; i < ev->n_frags; i++) {
				xevb_ev_frag(ev, i, &f);
				a->sum += f.length ? f.payload[0] : 0;
			}
		else if (mode == 'x') {
			const uint32_t *off = xevb_ev_offsets(ev);
			/* A record: source_id, reserved, length, crc32c (12 bytes), then the payload. */
			for (uint32_t i = 0; i < ev->n_frags; i++)
				a->sum += ev->data[off[i] + 12];
		}
		a->frags += ev->n_frags;
		n++;
	}
	if (rc < 0) {
		fprintf(stderr, "c_reader: %s\n", xevb_file_reader_error(r));
		n = -1;
	}
	xevb_file_reader_close(r);
	return n;
}

/* The event at p (run file: after its header), or NULL at the trailer or the end. */
static const uint8_t *next_event(const uint8_t *p, const uint8_t *end, uint32_t *len)
{
	if (end - p < 32 || memcmp(p, "EVNT", 4))
		return NULL;
	*len = be32(p + 16);
	return *len >= 32 && *len <= (size_t)(end - p) ? p : NULL;
}

/* One pass over the mapped file without the reader (-l, -t, -k): events, or -1. */
static long long raw_pass(const char *path, char mode, struct acc *a)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	const uint8_t *m, *p, *end;
	long long n = 0;
	uint32_t len;

	if (fd < 0 || fstat(fd, &st) ||
	    (m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		perror(path);
		return -1;
	}
	close(fd);
	end = m + st.st_size;
	/* A run file's header: 64 bytes and 2 a configured source, to 8 bytes. */
	p = memcmp(m, "XEVF", 4) ? m : m + ((64 + 2 * ((uint32_t)m[26] << 8 | m[27]) + 7) & ~7u);
	for (; (p = next_event(p, end, &len)); p += len, n++) {
		if (mode == 'l') {
			uint64_t s = 0, w;
			for (uint32_t i = 0; i + 8 <= len; i += 64) {
				memcpy(&w, p + i, 8);
				s += w;
			}
			a->sum += s;
		} else if (mode == 't') {
			uint64_t s = 0, w;
			for (uint32_t i = 0; i + 8 <= len; i += 8) {
				memcpy(&w, p + i, 8);
				s += w;
			}
			a->sum += s;
		} else {
			a->sum += xevb_ev_crc32c(0, p, len);
		}
	}
	munmap((void *)m, st.st_size);
	return n;
}

int main(int argc, char **argv)
{
	struct acc a = { 0 };
	char mode = 'f';
	int passes;
	long long events = 0, n;
	double w0, c0, w, c;

	if (argc > 1 && argv[1][0] == '-' && strchr("nxltk", argv[1][1]) && !argv[1][2]) {
		mode = argv[1][1];
		argv++;
		argc--;
	}
	passes = argc > 2 ? atoi(argv[2]) : 1;
	if (argc < 2 || passes < 1) {
		fprintf(stderr, "usage: c_reader [-n|-x|-l|-t|-k] FILE [PASSES]\n");
		return 2;
	}
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	for (int p = 0; p < passes; p++) {
		n = strchr("ltk", mode) ? raw_pass(argv[1], mode, &a) : reader_pass(argv[1], mode, &a);
		if (n < 0)
			return 1;
		events += n;
	}
	w = now(CLOCK_MONOTONIC) - w0;
	c = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("{\"events\": %lld, \"fragments\": %llu, \"wall_s\": %.6f, \"cpu_s\": %.6f, \"events_per_s\": %.0f, "
	       "\"events_per_cpu_s\": %.0f, \"checksum\": %llu}\n",
	       events, a.frags, w, c, events / w, events / c, a.sum);
	return 0;
}

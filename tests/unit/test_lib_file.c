// SPDX-License-Identifier: GPL-2.0-only
/* libxevb: event views, the run-file writer and reader (wire-format.md section 4). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_lib.h"

TestSuite(lib_file, .timeout = 30);

static const uint16_t sources[] = { 3, 5, 7, 9, 11, 13 };

/* Event i of the tests: 6 sources, every fifth incomplete (sources 1 and 4 missing). */
static uint8_t *event_i(uint32_t i, size_t *len)
{
	uint16_t lens[6] = { 0, 1, 2, 3, (uint16_t)(100 + i), 512 };

	return tl_encode(42, 1000 + i, 6, sources, lens, i % 5 == 4 ? 0x12 : 0, len);
}

static struct xevb_file_writer *writer(const char *dir, uint64_t max_events, uint64_t max_bytes, uint32_t flags)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	XEVB_OPTS(xevb_file_writer_opts, o, .dir = dir, .run_number = 42, .builder_id = 7, .builder_name = "bld-7",
		  .sources = sources, .n_sources = 6, .max_events = max_events, .max_bytes = max_bytes,
		  .flags = flags | XEVB_FW_NO_FSYNC);
	struct xevb_file_writer *w = xevb_file_writer_open(&o, err);

	cr_assert(w != NULL, "open: %s", err);
	return w;
}

static void write_events(struct xevb_file_writer *w, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < from + n; i++) {
		size_t len;
		uint8_t *b = event_i(i, &len);
		cr_assert(eq(int, xevb_file_writer_write(w, b, len), 0), "%s", xevb_file_writer_error(w));
		free(b);
	}
}

static void name_of(char *buf, size_t len, const char *dir, uint32_t seq)
{
	snprintf(buf, len, "%s/xevb-run00000042-%04u.xevb", dir, seq);
}

/* Reads path whole: returns the events read, checks each against event_i(first + k). */
static uint64_t read_all(const char *path, uint32_t first, enum xevb_file_state want, uint32_t flags)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	XEVB_OPTS(xevb_file_reader_opts, o, .flags = flags);
	struct xevb_file_reader *r = xevb_file_reader_open(path, &o, err);
	const struct xevb_file_info *fi;
	const struct xevb_ev *ev;
	uint64_t n = 0;
	int rc;

	cr_assert(r != NULL, "%s", err);
	while ((rc = xevb_file_reader_next(r, &ev)) == 1) {
		size_t len;
		uint8_t *b = event_i(first + (uint32_t)n, &len);
		cr_assert(eq(u32, ev->event_id, 1000 + first + n));
		cr_assert(eq(u64, ev->seq, n));
		cr_assert(eq(sz, ev->length, len));
		cr_assert(eq(int, memcmp(ev->data, b, len), 0));
		cr_assert(eq(int, xevb_ev_verify(ev, NULL), 0));
		tl_check_payloads(ev);
		free(b);
		n++;
	}
	fi = xevb_file_reader_info(r);
	cr_assert(eq(int, fi->state, want), "%s: state %s (%s), want %s", path, xevb_file_state_name(fi->state),
		  xevb_file_reader_error(r), xevb_file_state_name(want));
	cr_assert(eq(int, rc, want == XEVB_FILE_CORRUPT ? -EBADMSG : 0));
	cr_assert(eq(u64, fi->events, n));
	xevb_file_reader_close(r);
	return n;
}

Test(lib_file, round_trip_header_events_trailer)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE];
	struct xevb_file_writer *w;
	struct xevb_file_reader *r;
	const struct xevb_file_info *fi;
	const struct xevb_ev *ev;
	uint64_t t0 = 0;

	tl_tmpdir(dir, sizeof(dir));
	w = writer(dir, 0, 0, 0);
	name_of(path, sizeof(path), dir, 0);
	cr_assert(eq(str, (char *)xevb_file_writer_path(w), path));
	write_events(w, 0, 100);
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	cr_assert(eq(u64, read_all(path, 0, XEVB_FILE_CLOSED, 0), 100));

	r = xevb_file_reader_open(path, NULL, err);
	cr_assert(r != NULL, "%s", err);
	fi = xevb_file_reader_info(r);
	cr_assert(eq(u32, fi->format_version, 1));
	cr_assert(eq(u32, fi->run_number, 42));
	cr_assert(eq(u32, fi->seq, 0));
	cr_assert(eq(u16, fi->builder_id, 7));
	cr_assert(eq(str, (char *)fi->builder_name, "bld-7"));
	cr_assert(eq(u16, fi->n_sources, 6));
	for (int i = 0; i < 6; i++)
		cr_assert(eq(u16, fi->sources[i], sources[i]));
	cr_assert(gt(u64, fi->start_ns, 1600000000ull * 1000000000ull));
	while (xevb_file_reader_next(r, &ev) == 1)
		t0++;
	cr_assert(eq(u64, t0, 100));
	cr_assert(eq(int, fi->state, XEVB_FILE_CLOSED));
	cr_assert(eq(u64, fi->trailer_events, 100));
	cr_assert(eq(u64, fi->trailer_bytes, fi->bytes));
	cr_assert(eq(u32, fi->trailer_checksum, fi->checksum));
	cr_assert(eq(u32, fi->trailer_flags, XEVB_FILE_T_CLEAN));
	cr_assert(ge(u64, fi->end_ns, fi->start_ns));
	xevb_file_reader_close(r);
	tl_rmdir(dir);
}

Test(lib_file, rotation_by_events_run_numbered_names)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE];
	struct xevb_file_writer *w;
	struct xevb_file_writer_stats st = { .sz = sizeof(st) };

	tl_tmpdir(dir, sizeof(dir));
	w = writer(dir, 10, 0, 0);
	write_events(w, 0, 25);
	cr_assert(eq(int, xevb_file_writer_stats(w, &st), 0));
	cr_assert(eq(u64, st.files, 3));
	cr_assert(eq(u32, st.seq, 2));
	cr_assert(eq(u64, st.file_events, 5));
	cr_assert(eq(u64, st.events, 25));
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	for (uint32_t s = 0; s < 3; s++) {
		struct xevb_file_reader *r;
		const struct xevb_ev *ev;
		name_of(path, sizeof(path), dir, s);
		cr_assert(eq(u64, read_all(path, 10 * s, XEVB_FILE_CLOSED, 0), s < 2 ? 10 : 5));
		r = xevb_file_reader_open(path, NULL, err);
		cr_assert(r != NULL, "%s", err);
		while (xevb_file_reader_next(r, &ev) == 1)
			;
		cr_assert(eq(u32, xevb_file_reader_info(r)->seq, s));
		cr_assert(eq(u32, xevb_file_reader_info(r)->trailer_flags,
			     XEVB_FILE_T_CLEAN | (s < 2 ? XEVB_FILE_T_CONTINUED : 0)));
		xevb_file_reader_close(r);
	}
	name_of(path, sizeof(path), dir, 3);
	cr_assert(ne(int, access(path, F_OK), 0), "no empty fourth file");
	tl_rmdir(dir);
}

Test(lib_file, rotation_by_size_keeps_each_file_under_the_limit)
{
	char dir[256], path[512];
	struct xevb_file_writer *w;
	uint64_t total = 0;
	uint32_t s;

	tl_tmpdir(dir, sizeof(dir));
	w = writer(dir, 0, 8192, 0);
	write_events(w, 0, 40);
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	for (s = 0;; s++) {
		struct stat st;
		name_of(path, sizeof(path), dir, s);
		if (stat(path, &st))
			break;
		cr_assert(le(i64, st.st_size, 8192), "%s: %lld bytes", path, (long long)st.st_size);
		total += read_all(path, (uint32_t)total, XEVB_FILE_CLOSED, 0);
	}
	cr_assert(gt(u32, s, 2));
	cr_assert(eq(u64, total, 40));
	tl_rmdir(dir);
}

Test(lib_file, an_existing_file_is_never_overwritten)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE] = "";
	const char junk[] = "precious";
	char back[16] = "";
	struct xevb_file_writer *w;
	int fd;

	tl_tmpdir(dir, sizeof(dir));
	name_of(path, sizeof(path), dir, 0);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert(ge(int, fd, 0));
	cr_assert(eq(sz, (size_t)write(fd, junk, sizeof(junk)), sizeof(junk)));
	close(fd);

	XEVB_OPTS(xevb_file_writer_opts, o, .dir = dir, .run_number = 42, .flags = XEVB_FW_NO_FSYNC);
	w = xevb_file_writer_open(&o, err);
	cr_assert(eq(ptr, w, NULL));
	cr_assert(eq(int, errno, EEXIST));
	cr_assert(tl_has(err, path) && tl_has(err, "exists"), "%s", err);
	fd = open(path, O_RDONLY);
	cr_assert(eq(sz, (size_t)read(fd, back, sizeof(back)), sizeof(junk)));
	close(fd);
	cr_assert(eq(str, back, (char *)junk));

	/* Or the next free name, when asked. */
	o.flags |= XEVB_FW_NEXT_NAME;
	w = xevb_file_writer_open(&o, err);
	cr_assert(w != NULL, "%s", err);
	name_of(path, sizeof(path), dir, 1);
	cr_assert(eq(str, (char *)xevb_file_writer_path(w), path));
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	cr_assert(eq(u64, read_all(path, 0, XEVB_FILE_CLOSED, 0), 0));

	/* An exact path too. */
	XEVB_OPTS(xevb_file_writer_opts, x, .path = path, .run_number = 42, .flags = XEVB_FW_NO_FSYNC);
	cr_assert(eq(ptr, xevb_file_writer_open(&x, err), NULL));
	cr_assert(eq(int, errno, EEXIST));
	tl_rmdir(dir);
}

/* The file's bytes [0, n) only, as a crash would leave them. */
static void cut_to(const char *path, off_t n)
{
	cr_assert(eq(int, truncate(path, n), 0));
}

Test(lib_file, a_file_cut_mid_event_reads_to_the_last_whole_event)
{
	char dir[256], path[512];
	struct xevb_file_writer *w;
	struct stat st;
	size_t len;
	uint8_t *b;
	uint64_t end7;

	tl_tmpdir(dir, sizeof(dir));
	w = writer(dir, 0, 0, 0);
	name_of(path, sizeof(path), dir, 0);
	write_events(w, 0, 7);
	cr_assert(eq(int, xevb_file_writer_flush(w), 0));
	cr_assert(eq(int, stat(path, &st), 0));
	end7 = (uint64_t)st.st_size;
	write_events(w, 7, 3);
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	b = event_i(7, &len);
	free(b);

	/* At event 8's end less one byte, inside its payload, inside its header (shorter each time). */
	off_t cuts[] = { (off_t)(end7 + len - 1), (off_t)end7 + (off_t)len / 2, (off_t)end7 + 10 };
	for (size_t c = 0; c < 3; c++) {
		char err[XEVB_ERRBUF_SIZE];
		struct xevb_file_reader *r;
		const struct xevb_ev *ev;
		cut_to(path, cuts[c]);
		cr_assert(eq(u64, read_all(path, 0, XEVB_FILE_CUT, 0), 7));
		r = xevb_file_reader_open(path, NULL, err);
		while (xevb_file_reader_next(r, &ev) == 1)
			;
		cr_assert(eq(u64, xevb_file_reader_info(r)->cut_bytes, (uint64_t)cuts[c] - end7));
		cr_assert(tl_has(xevb_file_reader_error(r), "cut"), "%s", xevb_file_reader_error(r));
		xevb_file_reader_close(r);
	}
	/* Cut exactly after event 7: no partial event, still no trailer. */
	cut_to(path, (off_t)end7);
	cr_assert(eq(u64, read_all(path, 0, XEVB_FILE_CUT, 0), 7));
	tl_rmdir(dir);
}

Test(lib_file, a_writer_killed_leaves_a_file_read_as_cut)
{
	char dir[256], path[512];
	pid_t pid;
	int st;

	tl_tmpdir(dir, sizeof(dir));
	name_of(path, sizeof(path), dir, 0);
	pid = fork();
	cr_assert(ge(int, pid, 0));
	if (pid == 0) {
		struct xevb_file_writer *w = writer(dir, 0, 0, 0);
		write_events(w, 0, 5);
		xevb_file_writer_flush(w);
		raise(SIGKILL);
		_exit(1);
	}
	cr_assert(eq(int, waitpid(pid, &st, 0), pid));
	cr_assert(eq(int, WIFSIGNALED(st) ? 1 : 0, 1));
	cr_assert(eq(u64, read_all(path, 0, XEVB_FILE_CUT, 0), 5));
	tl_rmdir(dir);
}

/* Where event i starts in the file (a header with 6 sources: 80 bytes). */
static off_t event_start(uint32_t i)
{
	off_t at = 64 + 16;
	size_t len;

	for (uint32_t k = 0; k < i; k++) {
		free(event_i(k, &len));
		at += (off_t)len;
	}
	return at;
}

/* Byte 412 of event 10's last payload (source 13, 512 bytes; a complete event). */
static off_t inside_event_10(void)
{
	return event_start(11) - 100;
}

static void flip_bit(const char *path, off_t at)
{
	uint8_t c;
	int fd = open(path, O_RDWR);

	cr_assert(ge(int, fd, 0));
	cr_assert(eq(int, (int)pread(fd, &c, 1, at), 1));
	c ^= 0x10;
	cr_assert(eq(int, (int)pwrite(fd, &c, 1, at), 1));
	close(fd);
}

/* Reads path whole: the events read and how many had a bad CRC. */
static uint64_t count_events(const char *path, uint32_t flags, uint64_t *bad, enum xevb_file_state want,
			     const char *why)
{
	char err[XEVB_ERRBUF_SIZE];
	XEVB_OPTS(xevb_file_reader_opts, o, .flags = flags);
	struct xevb_file_reader *r = xevb_file_reader_open(path, &o, err);
	const struct xevb_ev *ev;
	uint64_t n = 0;

	cr_assert(r != NULL, "%s", err);
	*bad = 0;
	while (xevb_file_reader_next(r, &ev) == 1) {
		n++;
		*bad += !!(ev->flags & XEVB_EV_CRC_BAD);
	}
	cr_assert(eq(int, xevb_file_reader_info(r)->state, want), "%s",
		  xevb_file_state_name(xevb_file_reader_info(r)->state));
	cr_assert(tl_has(xevb_file_reader_error(r), why), "%s", xevb_file_reader_error(r));
	xevb_file_reader_close(r);
	return n;
}

/* Why the reader found path corrupt (xevb_file_info.broken), once read to its end. */
static uint32_t broken_of(const char *path)
{
	char err[XEVB_ERRBUF_SIZE];
	struct xevb_file_reader *r = xevb_file_reader_open(path, NULL, err);
	const struct xevb_ev *ev;
	uint32_t why;

	cr_assert(r != NULL, "%s", err);
	while (xevb_file_reader_next(r, &ev) == 1)
		;
	why = xevb_file_reader_info(r)->broken;
	xevb_file_reader_close(r);
	return why;
}

Test(lib_file, a_corrupted_checksum_is_reported)
{
	char dir[256], path[512];
	struct xevb_file_writer *w;
	struct stat st;
	uint64_t bad;

	tl_tmpdir(dir, sizeof(dir));
	w = writer(dir, 0, 0, 0);
	name_of(path, sizeof(path), dir, 0);
	write_events(w, 0, 20);
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	flip_bit(path, inside_event_10());
	/* Every event still reads (the structure is intact); the trailer's checksum tells. */
	cr_assert(eq(u64, count_events(path, 0, &bad, XEVB_FILE_CORRUPT, "checksum mismatch"), 20));
	cr_assert(eq(u64, bad, 0));
	cr_assert(eq(u32, broken_of(path), XEVB_BROKEN_FILE));
	/* With CRC checks the event itself says so too. */
	cr_assert(
		eq(u64, count_events(path, XEVB_FR_VERIFY_CRC, &bad, XEVB_FILE_CORRUPT, "checksum mismatch"), 20));
	cr_assert(eq(u64, bad, 1));
	flip_bit(path, inside_event_10());

	/* A damaged trailer, and bytes after it. */
	cr_assert(eq(int, stat(path, &st), 0));
	flip_bit(path, st.st_size - 30);
	cr_assert(eq(u64, count_events(path, 0, &bad, XEVB_FILE_CORRUPT, "trailer's checksum"), 20));
	flip_bit(path, st.st_size - 30);
	cr_assert(eq(u64, count_events(path, 0, &bad, XEVB_FILE_CLOSED, ""), 20));
	cr_assert(eq(int, truncate(path, st.st_size + 8), 0));
	cr_assert(eq(u64, count_events(path, 0, &bad, XEVB_FILE_CORRUPT, "after the trailer"), 20));
	tl_rmdir(dir);
}

Test(lib_file, a_broken_event_stops_the_reader)
{
	char dir[256], path[512];
	struct xevb_file_writer *w;
	uint64_t bad;

	tl_tmpdir(dir, sizeof(dir));
	w = writer(dir, 0, 0, 0);
	name_of(path, sizeof(path), dir, 0);
	write_events(w, 0, 20);
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	/* Event 10's reserved field (header bytes 22-23) set. */
	flip_bit(path, event_start(10) + 23);
	cr_assert(eq(u64, count_events(path, 0, &bad, XEVB_FILE_CORRUPT, "event at byte"), 10));
	cr_assert(eq(u32, broken_of(path), XEVB_BROKEN_RESERVED));
	tl_rmdir(dir);
}

/* event_check: counts the events offered, says no to those with a payload of length *ctx. */
static unsigned offered;
static int reject_length(void *ctx, const struct xevb_ev *ev)
{
	struct xevb_ev_frag f;
	int bad = 0;

	offered++;
	for (uint32_t i = 0; i < ev->n_frags; i++) {
		cr_assert(eq(int, xevb_ev_frag(ev, i, &f), 0));
		cr_assert(eq(u32, f.crc32c, xevb_ev_crc32c(0, f.payload, f.length)),
			  "the record's CRC comes along");
		bad |= f.length == *(uint32_t *)ctx;
	}
	return bad;
}

Test(lib_file, the_callers_event_check_runs_in_the_decoder)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE];
	uint32_t bad_len =
		100; /* the fifth payload of event 1000 only (event_i: lengths 0, 1, 2, 3, 100 + i, 512) */
	const struct xevb_ev *ev;
	struct xevb_file_reader *r;
	size_t len;
	FILE *f;

	tl_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/old.evt", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	for (uint32_t i = 0; i < 4; i++) {
		uint8_t *b = event_i(i, &len);
		cr_assert(eq(sz, fwrite(b, 1, len, f), len));
		free(b);
	}
	fclose(f);
	XEVB_OPTS(xevb_file_reader_opts, o, .event_check = reject_length, .check_ctx = &bad_len);
	r = xevb_file_reader_open(path, &o, err);
	cr_assert(r != NULL, "%s", err);
	offered = 0;
	while (xevb_file_reader_next(r, &ev) == 1) {
		/* Flagged, not refused. */
		cr_assert(eq(u32, ev->flags & XEVB_EV_CHECK_BAD, ev->event_id == 1000 ? XEVB_EV_CHECK_BAD : 0),
			  "event %u", ev->event_id);
		cr_assert(eq(u32, ev->flags & XEVB_EV_CRC_BAD, 0));
	}
	cr_assert(eq(u64, xevb_file_reader_info(r)->events, 4));
	cr_assert(eq(u32, offered, 4));
	xevb_file_reader_close(r);
	tl_rmdir(dir);
}

Test(lib_file, a_plain_event_stream_reads_as_raw)
{
	char dir[256], path[512];
	uint64_t bad;
	size_t len;
	FILE *f;

	tl_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/old.evt", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	for (uint32_t i = 0; i < 5; i++) {
		uint8_t *b = event_i(i, &len);
		cr_assert(eq(sz, fwrite(b, 1, len, f), len));
		free(b);
	}
	fclose(f);
	cr_assert(eq(u64, read_all(path, 0, XEVB_FILE_RAW, 0), 5));
	cr_assert(eq(u64, count_events(path, 0, &bad, XEVB_FILE_RAW, ""), 5));
	tl_rmdir(dir);
}

Test(lib_file, not_a_run_file_says_so)
{
	char dir[256], path[512], err[XEVB_ERRBUF_SIZE] = "";
	FILE *f;

	tl_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/x", dir);
	f = fopen(path, "w");
	fputs("hello, world\n", f);
	fclose(f);
	cr_assert(eq(ptr, xevb_file_reader_open(path, NULL, err), NULL));
	cr_assert(tl_has(err, "not a run file"), "%s", err);
	f = fopen(path, "w");
	fclose(f);
	cr_assert(eq(ptr, xevb_file_reader_open(path, NULL, err), NULL));
	cr_assert(tl_has(err, "empty"), "%s", err);
	tl_rmdir(dir);
}

Test(lib_file, writer_refuses_what_is_not_an_event)
{
	char dir[256];
	struct xevb_file_writer *w;
	uint8_t junk[64] = { 0 };
	size_t len;
	uint8_t *b;

	tl_tmpdir(dir, sizeof(dir));
	w = writer(dir, 0, 0, XEVB_FW_VERIFY);
	cr_assert(eq(int, xevb_file_writer_write(w, junk, sizeof(junk)), -EINVAL));
	cr_assert(tl_has(xevb_file_writer_error(w), "not an encoded event"), "%s", xevb_file_writer_error(w));
	b = event_i(0, &len);
	b[22] = 1; /* reserved */
	cr_assert(eq(int, xevb_file_writer_write(w, b, len), -EINVAL));
	cr_assert(tl_has(xevb_file_writer_error(w), "reserved"), "%s", xevb_file_writer_error(w));
	b[22] = 0;
	/* In pieces, as the builder's zero-copy encoder hands it over. */
	struct iovec iov[3] = { { b, 5 }, { b + 5, 40 }, { b + 45, len - 45 } };
	cr_assert(eq(int, xevb_file_writer_writev(w, iov, 3), 0), "%s", xevb_file_writer_error(w));
	free(b);
	cr_assert(eq(int, xevb_file_writer_close(w), 0));
	tl_rmdir(dir);
}

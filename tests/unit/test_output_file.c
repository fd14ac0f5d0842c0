// SPDX-License-Identifier: GPL-2.0-only
/*
 * The output's run files (user/out/output_file.c, `xevb build --output`),
 * read back with libxevb's reader: the header (run, builder id and name,
 * start time, sources), every event and the trailer; rotation's names and
 * counts; an existing file refused and untouched, or the next name taken;
 * a process killed mid-run leaves a cut file read to its last whole
 * event; a failed start leaves no empty file; the existing files the
 * option checks look for; the directory check.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include <xevb/xevb.h>
#include "base/clock.h"
#include "wire/crc32c.h"
#include "out/output.h"
#include "out/output_file.h"
#include "../common/cli_rig.h"

TestSuite(output_file, .timeout = 60);

#define N_SRC     6
#define FRAME_HDR 22
#define MAX_LEN   200
#define RUN       42

static const uint16_t sids[N_SRC] = { 0, 1, 2, 5, 9, 4095 };
static uint8_t frames[N_SRC][FRAME_HDR + MAX_LEN];
static const uint8_t *frame_data[N_SRC];
static struct xevb_frag_slot slots[N_SRC];
static struct xevb_event ev;
static char dir[256];

static void make_dir(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/xevb-outfile-XXXXXX", t && *t ? t : "/tmp");
	cr_assert(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
}

static void remove_dir(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(eq(int, system(cmd), 0));
}

/* Payload byte b of source i in event k. */
static uint8_t pay(uint32_t k, uint32_t i, uint32_t b)
{
	return (uint8_t)(k * 131u + i * 7u + b);
}

/* Event k: payload lengths 0..MAX_LEN; every 5th misses source 2. */
static const struct xevb_event *event_k(uint32_t k)
{
	uint16_t got = 0;

	for (uint32_t i = 0; i < N_SRC; i++) {
		uint32_t len = (k * 31u + i * 17u) % (MAX_LEN + 1);
		bool missing = k % 5 == 3 && i == 2;

		frame_data[i] = frames[i];
		for (uint32_t b = 0; b < len; b++)
			frames[i][FRAME_HDR + b] = pay(k, i, b);
		xevb_st32(frames[i] + FRAME_HDR - 4, xevb_crc32c(0, frames[i] + FRAME_HDR, len));
		slots[i] = (struct xevb_frag_slot){ .frame_idx = missing ? UINT32_MAX : i,
						    .payload_off = FRAME_HDR,
						    .length = (uint16_t)len };
		got += !missing;
	}
	ev = (struct xevb_event){ .event_id = k,
				  .run_number = RUN,
				  .flags = got < N_SRC ? XEVB_EVT_F_INCOMPLETE : 0,
				  .n_expected = N_SRC,
				  .n_frags = got,
				  .source_ids = sids,
				  .frags = slots,
				  .frame_data = frame_data };
	return &ev;
}

static struct xevb_out_file file_cfg(const char *path, bool is_dir)
{
	return (struct xevb_out_file){ .path = path,
				       .dir = is_dir,
				       .run_number = RUN,
				       .builder_id = 3,
				       .builder_name = "evb-test-3",
				       .sources = sids,
				       .n_sources = N_SRC,
				       .no_fsync = true };
}

static void open_ok(struct xevb_output *o, const struct xevb_out_file *f)
{
	cr_assert(eq(int, xevb_output_open(o, &(struct xevb_output_opts){ .file = f, .max_sources = N_SRC }), 0));
	cr_assert(not(eq(ptr, o->fw, NULL)));
}

static void emit_range(struct xevb_output *o, uint32_t first, uint32_t n)
{
	for (uint32_t k = first; k < first + n; k++)
		xevb_output_emit(o, event_k(k));
}

/* Every event of f read back: ids from first on, each payload as sent; the reader's info. */
static const struct xevb_file_info *read_back(struct xevb_file_reader **r, const char *path, uint32_t first,
					      uint64_t *n_read)
{
	char err[XEVB_ERRBUF_SIZE];
	XEVB_OPTS(xevb_file_reader_opts, ro, .flags = XEVB_FR_VERIFY_CRC);
	const struct xevb_ev *e;
	uint32_t k = first;

	*r = xevb_file_reader_open(path, &ro, err);
	cr_assert(not(eq(ptr, *r, NULL)), "%s", err);
	while (xevb_file_reader_next(*r, &e) == 1) {
		struct xevb_ev_frag fr;
		cr_assert(eq(u32, e->event_id, k));
		cr_assert(eq(u32, e->run_number, RUN));
		cr_assert(eq(u32, e->flags & XEVB_EV_CRC_BAD, 0));
		cr_assert(eq(u32, e->n_missing, k % 5 == 3 ? 1u : 0u));
		cr_assert(eq(int, xevb_ev_find(e, 5, &fr), 0));
		cr_assert(eq(u32, fr.length, (k * 31u + 3 * 17u) % (MAX_LEN + 1)));
		for (uint32_t b = 0; b < fr.length; b++)
			cr_assert(eq(u8, fr.payload[b], pay(k, 3, b)));
		k++;
	}
	*n_read = k - first;
	return xevb_file_reader_info(*r);
}

static void name_of(char *buf, size_t len, const char *prefix, uint32_t seq)
{
	snprintf(buf, len, "%s/%s-run%08u-%04u.xevb", dir, prefix, RUN, seq);
}

/* The header says who wrote it, when, for which run and sources; the trailer closes the books. */
Test(output_file, header_events_trailer_read_back)
{
	struct xevb_output o;
	struct xevb_file_reader *r;
	const struct xevb_file_info *fi;
	char path[300];
	uint64_t t0, t1, n;
	struct xevb_out_file f;

	make_dir();
	snprintf(path, sizeof(path), "%s/run.xevb", dir);
	f = file_cfg(path, false);
	t0 = xevb_realtime_ns();
	open_ok(&o, &f);
	emit_range(&o, 0, 300);
	cr_assert(eq(u64, o.st.events, 300));
	xevb_output_close(&o);
	t1 = xevb_realtime_ns();
	fi = read_back(&r, path, 0, &n);
	cr_assert(eq(u64, n, 300));
	cr_assert(eq(int, fi->state, XEVB_FILE_CLOSED), "%s", xevb_file_reader_error(r));
	cr_assert(eq(u32, fi->format_version, 1));
	cr_assert(eq(u32, fi->run_number, RUN));
	cr_assert(eq(u32, fi->seq, 0));
	cr_assert(eq(u16, fi->builder_id, 3));
	cr_assert(eq(str, (char *)fi->builder_name, "evb-test-3"));
	cr_assert(eq(u16, fi->n_sources, N_SRC));
	for (uint32_t i = 0; i < N_SRC; i++)
		cr_assert(eq(u16, fi->sources[i], sids[i]));
	cr_assert(ge(u64, fi->start_ns, t0));
	cr_assert(le(u64, fi->start_ns, fi->end_ns));
	cr_assert(le(u64, fi->end_ns, t1));
	cr_assert(eq(u64, fi->trailer_events, 300));
	cr_assert(eq(u64, fi->trailer_bytes, fi->bytes));
	cr_assert(eq(u32, fi->trailer_flags, XEVB_FILE_T_CLEAN));
	cr_assert(eq(u64, fi->bytes, o.st.bytes));
	cr_assert(eq(u64, o.st.bytes_copied, o.st.bytes), "every byte copied once into the writer's buffer");
	xevb_file_reader_close(r);
	remove_dir();
}

/* Rotation by event count: run-numbered names in order, the counts, CONTINUED on all but the last. */
Test(output_file, rotation_by_events_names_and_counts)
{
	static const uint64_t want[] = { 40, 40, 40, 17 };
	struct xevb_output o;
	struct xevb_file_reader *r;
	struct xevb_out_file f;
	char path[300];
	uint64_t n;

	make_dir();
	f = file_cfg(dir, true);
	f.prefix = "b3";
	f.max_events = 40;
	open_ok(&o, &f);
	emit_range(&o, 0, 137);
	xevb_output_close(&o);
	for (uint32_t s = 0; s < 4; s++) {
		const struct xevb_file_info *fi;

		name_of(path, sizeof(path), "b3", s);
		fi = read_back(&r, path, s * 40, &n);
		cr_assert(eq(int, fi->state, XEVB_FILE_CLOSED), "%s: %s", path, xevb_file_reader_error(r));
		cr_assert(eq(u32, fi->seq, s));
		cr_assert(eq(u64, n, want[s]));
		cr_assert(eq(u32, fi->trailer_flags, XEVB_FILE_T_CLEAN | (s < 3 ? XEVB_FILE_T_CONTINUED : 0)));
		cr_assert(eq(str, (char *)fi->builder_name, "evb-test-3"));
		xevb_file_reader_close(r);
	}
	name_of(path, sizeof(path), "b3", 4);
	cr_assert(ne(int, access(path, F_OK), 0), "a fifth file %s", path);
	remove_dir();
}

/* Rotation by size: no file over the limit, every event in one of them, in order. */
Test(output_file, rotation_by_bytes_keeps_each_file_under_the_limit)
{
	struct xevb_output o;
	struct xevb_file_reader *r;
	struct xevb_out_file f;
	char path[300];
	uint64_t n, total = 0;
	uint32_t s;
	struct stat st;

	make_dir();
	f = file_cfg(dir, true);
	f.max_bytes = 65536;
	open_ok(&o, &f);
	emit_range(&o, 0, 2000);
	xevb_output_close(&o);
	for (s = 0;; s++) {
		name_of(path, sizeof(path), "xevb", s);
		if (stat(path, &st))
			break;
		cr_assert(le(i64, st.st_size, 65536), "%s: %lld bytes", path, (long long)st.st_size);
		cr_assert(eq(int, read_back(&r, path, (uint32_t)total, &n)->state, XEVB_FILE_CLOSED));
		xevb_file_reader_close(r);
		total += n;
	}
	cr_assert(ge(u32, s, 5), "2000 events of ~700 bytes in %u files", s);
	cr_assert(eq(u64, total, 2000));
	remove_dir();
}

static char logbuf[4096];

struct open_call {
	struct xevb_output *o;
	const struct xevb_out_file *f;
};

static int call_open(void *arg)
{
	struct open_call *c = arg;

	return xevb_output_open(c->o, &(struct xevb_output_opts){ .file = c->f, .max_sources = N_SRC });
}

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	cr_assert(not(eq(ptr, fp, NULL)));
	fputs(text, fp);
	fclose(fp);
}

static void assert_text(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *fp = fopen(path, "r");

	cr_assert(not(eq(ptr, fp, NULL)));
	cr_assert(not(eq(ptr, fgets(buf, sizeof(buf), fp), NULL)));
	fclose(fp);
	cr_assert(eq(str, buf, (char *)text));
}

/* A file that exists is refused, untouched, the message naming it and the way out; or the next name is taken. */
Test(output_file, existing_file_refused_or_next_name)
{
	struct xevb_output o;
	struct xevb_file_reader *r;
	struct xevb_out_file f;
	struct open_call c = { &o, &f };
	char path[300], next[320];
	uint64_t n;

	make_dir();
	snprintf(path, sizeof(path), "%s/run.xevb", dir);
	write_text(path, "the previous run\n");
	f = file_cfg(path, false);
	cr_assert(eq(int, cli_capture(call_open, &c, logbuf, sizeof(logbuf)), -EEXIST));
	xevb_output_close(&o);
	cr_assert(not(eq(ptr, strstr(logbuf, path), NULL)), "%s", logbuf);
	cr_assert(not(eq(ptr, strstr(logbuf, "--tune output-next-name=1"), NULL)), "%s", logbuf);
	assert_text(path, "the previous run\n");
	f.next_name = true;
	open_ok(&o, &f);
	emit_range(&o, 0, 10);
	xevb_output_close(&o);
	assert_text(path, "the previous run\n");
	snprintf(next, sizeof(next), "%s.1", path);
	cr_assert(eq(int, read_back(&r, next, 0, &n)->state, XEVB_FILE_CLOSED));
	cr_assert(eq(u64, n, 10));
	xevb_file_reader_close(r);

	/* A directory: the first file number taken is refused; the next one written. */
	f = file_cfg(dir, true);
	name_of(path, sizeof(path), "xevb", 0);
	write_text(path, "seq 0 of an earlier start\n");
	cr_assert(eq(int, cli_capture(call_open, &c, logbuf, sizeof(logbuf)), -EEXIST));
	xevb_output_close(&o);
	cr_assert(not(eq(ptr, strstr(logbuf, path), NULL)), "%s", logbuf);
	f.next_name = true;
	open_ok(&o, &f);
	emit_range(&o, 0, 3);
	xevb_output_close(&o);
	assert_text(path, "seq 0 of an earlier start\n");
	name_of(next, sizeof(next), "xevb", 1);
	cr_assert(eq(int, read_back(&r, next, 0, &n)->state, XEVB_FILE_CLOSED));
	cr_assert(eq(u32, xevb_file_reader_info(r)->seq, 1));
	xevb_file_reader_close(r);
	remove_dir();
}

/*
 * A writer killed (SIGKILL) after a quiet spell's flush and more events:
 * the file has no trailer, the reader calls it cut and reads every event
 * that reached the kernel, in order; the events still buffered are lost.
 */
Test(output_file, killed_writer_leaves_a_cut_file_read_to_the_last_whole_event)
{
	struct xevb_file_reader *r;
	const struct xevb_file_info *fi;
	char path[300];
	uint64_t n;
	int status;
	pid_t pid;

	make_dir();
	snprintf(path, sizeof(path), "%s/run.xevb", dir);
	pid = fork();
	cr_assert(ge(int, pid, 0));
	if (pid == 0) {
		struct xevb_output o;
		struct xevb_out_file f = file_cfg(path, false);

		if (xevb_output_open(&o, &(struct xevb_output_opts){ .file = &f, .max_sources = N_SRC }))
			_exit(1);
		emit_range(&o, 0, 250);
		xevb_output_maintain(&o, 0); /* what a quiet second does */
		emit_range(&o, 250, 20);
		raise(SIGKILL);
		_exit(2);
	}
	cr_assert(eq(int, waitpid(pid, &status, 0), pid));
	cr_assert(eq(int, WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, 1), "status %#x", status);
	fi = read_back(&r, path, 0, &n);
	cr_assert(eq(int, fi->state, XEVB_FILE_CUT), "%s", xevb_file_reader_error(r));
	/* The flush took 250; the 20 after it reached the kernel only if 100 ms passed meanwhile. */
	cr_assert(ge(u64, n, 250));
	cr_assert(le(u64, n, 270));
	cr_assert(eq(u32, fi->run_number, RUN));
	cr_assert(eq(u16, fi->builder_id, 3));
	xevb_file_reader_close(r);
	remove_dir();
}

/* A start that failed leaves no empty file to refuse the next one; a file with events stays. */
Test(output_file, failed_start_removes_only_an_empty_file)
{
	struct xevb_output o;
	struct xevb_out_file f;
	char path[300];

	make_dir();
	snprintf(path, sizeof(path), "%s/run.xevb", dir);
	f = file_cfg(path, false);
	open_ok(&o, &f);
	xevb_output_remove_empty_file(&o);
	xevb_output_close(&o);
	cr_assert(ne(int, access(path, F_OK), 0), "%s is still there", path);
	open_ok(&o, &f);
	emit_range(&o, 0, 1);
	xevb_output_remove_empty_file(&o);
	xevb_output_close(&o);
	cr_assert(eq(int, access(path, F_OK), 0), "%s was removed with an event in it", path);
	remove_dir();
}

/* The names the option checks look for are the writer's. */
Test(output_file, first_name_is_the_writers)
{
	struct xevb_output o;
	struct xevb_out_file f;
	char name[300];

	make_dir();
	f = file_cfg(dir, true);
	cr_assert(xevb_outfile_first_name(&f, name, sizeof(name)));
	open_ok(&o, &f);
	cr_assert(eq(str, (char *)xevb_file_writer_path(o.fw), name));
	xevb_output_close(&o);
	f.prefix = "evb7";
	cr_assert(xevb_outfile_first_name(&f, name, sizeof(name)));
	open_ok(&o, &f);
	cr_assert(eq(str, (char *)xevb_file_writer_path(o.fw), name));
	xevb_output_close(&o);
	cr_assert(not(xevb_outfile_first_name(&f, name, 10)));
	remove_dir();
}

/* A file of the run that exists: the file itself, or any file number of the run in the directory. */
Test(output_file, existing_files_of_the_run)
{
	struct xevb_out_file f;
	char name[300], want[300];

	make_dir();
	f = file_cfg(dir, true);
	cr_assert(not(xevb_outfile_existing(&f, name, sizeof(name))));
	for (const char *const *n =
		     (const char *const[]){ "xevb-run00000041-0000.xevb", "b1-run00000042-0000.xevb",
					    "xevb-run00000042-0001.xevb.tmp", "xevb-run00000042-1.xevb", NULL };
	     *n; n++) {
		snprintf(want, sizeof(want), "%s/%s", dir, *n);
		write_text(want, "not of the run\n");
	}
	cr_assert(not(xevb_outfile_existing(&f, name, sizeof(name))), "%s", name);
	name_of(want, sizeof(want), "xevb", 12);
	write_text(want, "a later file of the run\n");
	name_of(want, sizeof(want), "xevb", 3);
	write_text(want, "a later file of the run\n");
	cr_assert(xevb_outfile_existing(&f, name, sizeof(name)));
	cr_assert(eq(str, name, want));
	f.prefix = "b1";
	cr_assert(xevb_outfile_existing(&f, name, sizeof(name)));
	snprintf(want, sizeof(want), "%s/b1-run00000042-0000.xevb", dir);
	cr_assert(eq(str, name, want));
	snprintf(want, sizeof(want), "%s/run.xevb", dir);
	f = file_cfg(want, false);
	cr_assert(not(xevb_outfile_existing(&f, name, sizeof(name))));
	write_text(want, "x\n");
	cr_assert(xevb_outfile_existing(&f, name, sizeof(name)));
	cr_assert(eq(str, name, want));
	remove_dir();
}

/* Whether the data path's user can create files where rotation will: the owner's bits, others', the kernel's word. */
Test(output_file, directory_writable_by_the_data_paths_user)
{
	char sub[300];

	make_dir();
	cr_assert(eq(int, chmod(dir, 0700), 0));
	cr_assert(xevb_outfile_dir_writable(dir, geteuid(), getegid(), false));
	cr_assert(not(xevb_outfile_dir_writable(dir, 65534, 65534, false)));
	cr_assert(eq(int, chmod(dir, 0703), 0));
	cr_assert(xevb_outfile_dir_writable(dir, 65534, 65534, false));
	snprintf(sub, sizeof(sub), "%s/no-such-dir", dir);
	cr_assert(not(xevb_outfile_dir_writable(sub, geteuid(), getegid(), false)));
	if (geteuid() == 0) {
		/* As the user itself: a writable directory under a parent it cannot enter is no use. */
		snprintf(sub, sizeof(sub), "%s/open", dir);
		cr_assert(eq(int, mkdir(sub, 0777), 0));
		cr_assert(eq(int, chmod(sub, 0777), 0));
		cr_assert(eq(int, chmod(dir, 0700), 0));
		cr_assert(not(xevb_outfile_dir_writable(sub, 65534, 65534, true)));
		cr_assert(eq(int, chmod(dir, 0711), 0));
		cr_assert(xevb_outfile_dir_writable(sub, 65534, 65534, true));
		cr_assert(xevb_outfile_dir_writable(dir, 0, 0, true));
	}
	remove_dir();
}

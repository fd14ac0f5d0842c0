// SPDX-License-Identifier: GPL-2.0-only
/*
 * --output through libxevb's run-file writer (docs/wire-format.md section
 * 4, docs/consumer.md): the library is linked into xevb, so the builder
 * writes exactly the files the library reads.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xevb/xevb.h>
#include "base/log.h"
#include "out/output_file.h"

bool xevb_outfile_first_name(const struct xevb_out_file *f, char *buf, size_t len)
{
	int n;

	/* The library's names, wire-format.md section 4 (the first file of a run is seq 0). */
	if (f->dir)
		n = snprintf(buf, len, "%s/%s-run%08u-%04u.xevb", f->path, f->prefix ? f->prefix : "xevb",
			     f->run_number, 0u);
	else
		n = snprintf(buf, len, "%s", f->path);
	return n >= 0 && (size_t)n < len;
}

/* Is name one of the run's files: PREFIX-runRRRRRRRR- then digits and ".xevb"? */
static bool of_the_run(const char *name, const char *start)
{
	size_t n = strlen(start), digits = strspn(name + n, "0123456789");

	return !strncmp(name, start, n) && digits >= 4 && !strcmp(name + n + digits, ".xevb");
}

bool xevb_outfile_existing(const struct xevb_out_file *f, char *buf, size_t len)
{
	char start[300], first[256] = "";
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (!f->dir)
		return xevb_outfile_first_name(f, buf, len) && !lstat(buf, &st);
	snprintf(start, sizeof(start), "%s-run%08u-", f->prefix ? f->prefix : "xevb", f->run_number);
	d = opendir(f->path);
	if (!d)
		return false;
	/* The lowest file number, as a listing shows them. */
	while ((de = readdir(d)))
		if (of_the_run(de->d_name, start) && (!first[0] || strcmp(de->d_name, first) < 0))
			snprintf(first, sizeof(first), "%s", de->d_name);
	closedir(d);
	return first[0] && snprintf(buf, len, "%s/%s", f->path, first) < (int)len;
}

/* The writer's options from ours. */
static void writer_opts(const struct xevb_out_file *f, struct xevb_file_writer_opts *wo)
{
	wo->run_number = f->run_number;
	wo->builder_id = f->builder_id;
	wo->builder_name = f->builder_name;
	wo->sources = f->sources;
	wo->n_sources = (uint16_t)f->n_sources;
	wo->flags = (f->next_name ? XEVB_FW_NEXT_NAME : 0) | (f->no_fsync ? XEVB_FW_NO_FSYNC : 0);
	if (f->dir) {
		wo->dir = f->path;
		wo->prefix = f->prefix;
		wo->max_bytes = f->max_bytes;
		wo->max_events = f->max_events;
	} else {
		wo->path = f->path;
	}
}

int xevb_outfile_open(struct xevb_output *o, const struct xevb_out_file *f)
{
	char err[XEVB_ERRBUF_SIZE] = "", name[PATH_MAX];
	XEVB_OPTS(xevb_file_writer_opts, wo);
	int e;

	writer_opts(f, &wo);
	o->fw = xevb_file_writer_open(&wo, err);
	if (!o->fw) {
		e = errno ? errno : EIO;
		if (e == EEXIST && xevb_outfile_first_name(f, name, sizeof(name)))
			xevb_err(
				"--output: %s exists, and a run file is never overwritten: move it away, or give "
				"--tune output-next-name=1 to write the next free name",
				name);
		else
			xevb_err("--output: %s", err);
		return -e;
	}
	o->fw_files = 1;
	o->fw_flush_ns = 0;
	o->fw_failed = false;
	xevb_info("writing run file %s (run %u, builder %u, %u sources%s)", xevb_file_writer_path(o->fw),
		  f->run_number, f->builder_id, f->n_sources,
		  f->dir && (f->max_bytes || f->max_events) ? ", rotated" : "");
	return 0;
}

/* The writer failed (disk full, I/O error): said once; the file reads as cut from there. */
static void write_failed(struct xevb_output *o)
{
	if (o->fw_failed)
		return;
	o->fw_failed = true;
	xevb_err(
		"--output: %s; the file reads as cut after its last whole event, and later events are counted "
		"dropped_error",
		xevb_file_writer_error(o->fw));
}

void xevb_outfile_flush(struct xevb_output *o, uint64_t now_ns)
{
	struct xevb_file_writer_stats st = { .sz = sizeof(st) };

	o->fw_flush_ns = now_ns;
	if (xevb_file_writer_flush(o->fw))
		write_failed(o);
	if (!xevb_file_writer_stats(o->fw, &st) && st.files != o->fw_files) {
		o->fw_files = st.files;
		xevb_info("run file %s started (file %llu of this builder's run)", xevb_file_writer_path(o->fw),
			  (unsigned long long)st.files);
	}
}

int xevb_outfile_write(struct xevb_output *o, const struct iovec *iov, int n, size_t total, uint64_t now_ns)
{
	int err = xevb_file_writer_writev(o->fw, iov, n);

	if (err) {
		o->st.dropped_error++;
		write_failed(o);
		return err;
	}
	o->st.events++;
	o->st.bytes += total;
	/* Into the writer's buffer, every piece (the largest is a frame's). */
	o->st.bytes_copied += total;
	/* A step back of the clock flushes too, rather than waiting for it. */
	if (now_ns - o->fw_flush_ns >= XEVB_OUTFILE_FLUSH_NS || now_ns < o->fw_flush_ns)
		xevb_outfile_flush(o, now_ns);
	return 0;
}

void xevb_outfile_close(struct xevb_output *o, bool remove_empty)
{
	struct xevb_file_writer_stats st = { .sz = sizeof(st) };
	char path[PATH_MAX];
	int rc;

	xevb_file_writer_stats(o->fw, &st);
	snprintf(path, sizeof(path), "%s", xevb_file_writer_path(o->fw));
	rc = xevb_file_writer_close(o->fw);
	o->fw = NULL;
	if (remove_empty && !st.events && st.files == 1 && !unlink(path)) {
		xevb_info("run file %s removed: the builder did not start, it held no event", path);
		return;
	}
	if (rc)
		xevb_err(
			"run file %s could not be finished (%s): it reads as cut, every whole event in it readable",
			path, strerror(-rc));
	else
		xevb_info("run file %s closed: %llu events, %llu bytes in %llu file(s) of this run", path,
			  (unsigned long long)st.events, (unsigned long long)st.bytes,
			  (unsigned long long)st.files);
}

/* By the mode bits alone (the owner's, the group's, others'). */
static bool mode_allows(const char *dir, uid_t uid, gid_t gid)
{
	struct stat st;
	mode_t need = S_IWOTH | S_IXOTH;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return false;
	if (st.st_uid == uid)
		need = S_IWUSR | S_IXUSR;
	else if (st.st_gid == gid)
		need = S_IWGRP | S_IXGRP;
	return (st.st_mode & need) == need;
}

bool xevb_outfile_dir_writable(const char *dir, uid_t uid, gid_t gid, bool switch_user)
{
	int status;
	pid_t pid;

	if (!switch_user)
		return mode_allows(dir, uid, gid);
	/* Asked of the kernel as that user, as the drop makes it (no supplementary groups): ACLs and parents count. */
	pid = fork();
	if (pid == 0)
		_exit(setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid) ||
		      access(dir, W_OK | X_OK));
	if (pid < 0)
		return mode_allows(dir, uid, gid);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return mode_allows(dir, uid, gid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

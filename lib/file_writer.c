// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The run-file writer (wire-format.md section 4): a header, the events as
 * they are sent on the stream, a trailer. Files are created with O_EXCL,
 * so an existing file is never overwritten; events are copied into a
 * buffer and written in large pieces; what a crash leaves is a file
 * without a trailer, which the reader recognises as cut.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

#define BUF_SIZE  (1u << 20)
#define MAX_TRIES 100000 /* names tried for XEVB_FW_NEXT_NAME */
#define PATH_LEN  4096

struct xevb_file_writer {
	struct xevb_file_writer_opts o;
	char dir[PATH_LEN - 512], prefix[256], path[PATH_LEN], name[XL_FILE_NAME_LEN];
	uint16_t *sources;
	uint32_t hlen;
	int fd;
	uint32_t seq;
	uint64_t file_events, file_bytes, events, bytes, files;
	uint32_t crc; /* CRC-32C of the current file's event bytes */
	uint8_t *buf;
	size_t buf_len;
	bool broken, exact; /* exact: o.path names the file */
	char err[XL_ERR_LEN];
};

static int fail_errno(struct xevb_file_writer *w, int e, const char *what)
{
	xl_fmt(w->err, sizeof(w->err), "%s %s: %s", what, w->path, strerror(e));
	return -e;
}

/* Write all of buf, EINTR retried. 0, or -errno (the writer is broken). */
static int write_all(struct xevb_file_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(w->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			w->broken = true;
			return fail_errno(w, e, "writing");
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

XEVB_API int xevb_file_writer_flush(struct xevb_file_writer *w)
{
	int rc;

	if (w->broken)
		return -EIO;
	if (!w->buf_len)
		return 0;
	rc = write_all(w, w->buf, w->buf_len);
	w->buf_len = 0;
	return rc;
}

static void put_header(const struct xevb_file_writer *w, uint8_t *h)
{
	memset(h, 0, w->hlen);
	xl_st32(h, XL_FILE_MAGIC);
	xl_st16(h + 4, XL_FILE_VERSION);
	xl_st16(h + 6, (uint16_t)w->hlen);
	xl_st32(h + 8, w->o.run_number);
	xl_st32(h + 12, w->seq);
	xl_st64(h + 16, xl_real_ns());
	xl_st16(h + 24, w->o.builder_id);
	xl_st16(h + 26, w->o.n_sources);
	memcpy(h + 28, w->name, XL_FILE_NAME_LEN);
	for (uint32_t i = 0; i < w->o.n_sources; i++)
		xl_st16(h + XL_FILE_HLEN + 2 * i, w->sources[i]);
	/* The header's own CRC, computed with its field zero. */
	xl_st32(h + 60, xl_crc32c(0, h, w->hlen));
}

static void make_name(struct xevb_file_writer *w, uint32_t seq, uint32_t try)
{
	if (w->exact && try)
		snprintf(w->path, sizeof(w->path), "%s.%u", w->o.path, try);
	else if (w->exact)
		snprintf(w->path, sizeof(w->path), "%s", w->o.path);
	else
		snprintf(w->path, sizeof(w->path), "%s/%s-run%08u-%04u.xevb", w->dir, w->prefix, w->o.run_number,
			 seq);
}

/* Create the file of sequence number w->seq (or the next free one) and write its header. */
static int create_file(struct xevb_file_writer *w)
{
	uint8_t h[XL_FILE_HDR_MAX];
	uint32_t try = 0;

	for (;;) {
		make_name(w, w->seq, try);
		w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (w->fd >= 0)
			break;
		if (errno != EEXIST || !(w->o.flags & XEVB_FW_NEXT_NAME) || ++try >= MAX_TRIES) {
			int e = errno;
			if (e == EEXIST)
				xl_fmt(w->err, sizeof(w->err),
				       "creating %s: the file exists, and a run file is never overwritten: move it "
				       "away, or ask for the next free name (XEVB_FW_NEXT_NAME)",
				       w->path);
			else
				fail_errno(w, e, "creating");
			return -e;
		}
		if (!w->exact)
			w->seq++;
	}
	put_header(w, h);
	w->file_events = w->file_bytes = 0;
	w->crc = 0;
	w->files++;
	return write_all(w, h, w->hlen);
}

/* fsync the file and its directory entry, unless asked not to. */
static int sync_file(struct xevb_file_writer *w)
{
	char dir[PATH_LEN], *slash;
	int dfd, rc = 0;

	if (w->o.flags & XEVB_FW_NO_FSYNC)
		return 0;
	if (fsync(w->fd))
		return fail_errno(w, errno, "fsync of");
	snprintf(dir, sizeof(dir), "%s", w->path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd))
			rc = fail_errno(w, errno, "fsync of the directory of");
		close(dfd);
	}
	return rc;
}

/* Trailer, fsync, close: the current file is finished. */
static int finish_file(struct xevb_file_writer *w, bool continued)
{
	uint8_t t[XL_TRAILER_LEN];
	int rc;

	if ((rc = xevb_file_writer_flush(w)))
		return rc;
	xl_st32(t, XL_TRAILER_MAGIC);
	xl_st32(t + 4, XEVB_FILE_T_CLEAN | (continued ? XEVB_FILE_T_CONTINUED : 0));
	xl_st64(t + 8, w->file_events);
	xl_st64(t + 16, w->file_bytes);
	xl_st64(t + 24, xl_real_ns());
	xl_st32(t + 32, w->o.run_number);
	xl_st32(t + 36, w->seq);
	xl_st32(t + 40, w->crc);
	xl_st32(t + 44, xl_crc32c(0, t, 44));
	if ((rc = write_all(w, t, sizeof(t))) || (rc = sync_file(w))) {
		w->broken = true;
		return rc;
	}
	if (close(w->fd)) {
		w->fd = -1;
		w->broken = true;
		return fail_errno(w, errno, "closing");
	}
	w->fd = -1;
	return 0;
}

XEVB_API int xevb_file_writer_rotate(struct xevb_file_writer *w)
{
	int rc;

	if (w->broken)
		return -EIO;
	if (w->exact) {
		xl_fmt(w->err, sizeof(w->err),
		       "rotate: the writer was opened with an exact path (%s): give "
		       "dir and prefix for run-numbered files instead",
		       w->o.path);
		return -EINVAL;
	}
	if ((rc = finish_file(w, true)))
		return rc;
	w->seq++;
	return create_file(w);
}

static void default_name(char *name)
{
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	memset(name, 0, XL_FILE_NAME_LEN);
	memcpy(name, host, strnlen(host, XL_FILE_NAME_LEN - 1));
}

/* Check and keep the options; 0 or -EINVAL with a message in err. */
static int take_opts(struct xevb_file_writer *w, const struct xevb_file_writer_opts *opts, char *err)
{
	int rc = xl_opts_copy(&w->o, sizeof(w->o), opts, err, XEVB_ERRBUF_SIZE);

	if (rc)
		return rc;
	if (!opts) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "file writer: no options: give at least the run number");
		return -EINVAL;
	}
	w->exact = w->o.path != NULL;
	if (w->exact && (w->o.max_bytes || w->o.max_events || w->o.dir || w->o.prefix)) {
		xl_fmt(err, XEVB_ERRBUF_SIZE,
		       "file writer: path names one file: no dir, prefix, max_bytes or max_events with it");
		return -EINVAL;
	}
	if (w->exact && strlen(w->o.path) >= PATH_LEN - 16) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "file writer: path is longer than %u bytes", PATH_LEN - 16);
		return -EINVAL;
	}
	if (w->o.n_sources > XL_MAX_SOURCES || (w->o.n_sources && !w->o.sources)) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "file writer: %u sources (0..4096, and sources must list them)",
		       w->o.n_sources);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < w->o.n_sources; i++)
		if (w->o.sources[i] > XL_MAX_SOURCE_ID || (i && w->o.sources[i] <= w->o.sources[i - 1])) {
			xl_fmt(err, XEVB_ERRBUF_SIZE,
			       "file writer: sources[%u] = %u: source ids go 0..4095, ascending, each once", i,
			       w->o.sources[i]);
			return -EINVAL;
		}
	if ((w->o.dir && strlen(w->o.dir) >= sizeof(w->dir)) ||
	    (w->o.prefix && strlen(w->o.prefix) >= sizeof(w->prefix))) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "file writer: dir (up to %zu bytes) or prefix (%zu) too long",
		       sizeof(w->dir) - 1, sizeof(w->prefix) - 1);
		return -EINVAL;
	}
	snprintf(w->dir, sizeof(w->dir), "%s", w->o.dir ? w->o.dir : ".");
	snprintf(w->prefix, sizeof(w->prefix), "%s", w->o.prefix ? w->o.prefix : "xevb");
	if (strchr(w->prefix, '/')) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "file writer: prefix '%s' has a '/': put directories in dir",
		       w->prefix);
		return -EINVAL;
	}
	return 0;
}

XEVB_API struct xevb_file_writer *xevb_file_writer_open(const struct xevb_file_writer_opts *opts, char *errbuf)
{
	struct xevb_file_writer *w = calloc(1, sizeof(*w));
	int rc = -ENOMEM;

	if (!w)
		goto fail;
	w->fd = -1;
	if ((rc = take_opts(w, opts, errbuf)))
		goto fail;
	w->sources = calloc(w->o.n_sources ? w->o.n_sources : 1, sizeof(*w->sources));
	w->buf = malloc(BUF_SIZE);
	if (!w->sources || !w->buf) {
		rc = -ENOMEM;
		goto fail;
	}
	if (w->o.n_sources)
		memcpy(w->sources, w->o.sources, w->o.n_sources * sizeof(*w->sources));
	if (w->o.builder_name) {
		memset(w->name, 0, sizeof(w->name));
		memcpy(w->name, w->o.builder_name, strnlen(w->o.builder_name, XL_FILE_NAME_LEN - 1));
	} else {
		default_name(w->name);
	}
	/* The caller's strings need not outlive this call. */
	w->o.dir = w->o.prefix = w->o.path = w->o.builder_name = NULL;
	w->o.sources = NULL;
	if (w->exact)
		w->o.path = strdup(opts->path);
	w->hlen = xl_file_hlen(w->o.n_sources);
	w->seq = w->o.first_seq;
	if ((rc = create_file(w))) {
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "%s", w->err);
		if (w->fd >= 0) {
			/* A header we could not write: do not leave a file that is not one. */
			close(w->fd);
			unlink(w->path);
		}
		goto fail;
	}
	return w;
fail:
	if (rc == -ENOMEM)
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "file writer: out of memory");
	if (w) {
		free((void *)w->o.path);
		free(w->sources);
		free(w->buf);
		free(w);
	}
	errno = -rc;
	return NULL;
}

/* A rotation due before an event of len bytes? */
static bool rotation_due(const struct xevb_file_writer *w, size_t len)
{
	if (w->exact || !w->file_events)
		return false;
	if (w->o.max_events && w->file_events >= w->o.max_events)
		return true;
	return w->o.max_bytes && w->hlen + w->file_bytes + len + XL_TRAILER_LEN > w->o.max_bytes;
}

/* Is this an event (magic, length), and with XEVB_FW_VERIFY a valid one? */
static int check_event(struct xevb_file_writer *w, const uint8_t *first, size_t first_len, const struct iovec *iov,
		       int iovcnt, size_t len)
{
	uint8_t h[20];
	size_t got = 0;

	for (int i = 0; i < iovcnt && got < sizeof(h); i++) {
		size_t n = iov[i].iov_len < sizeof(h) - got ? iov[i].iov_len : sizeof(h) - got;
		memcpy(h + got, iov[i].iov_base, n);
		got += n;
	}
	if (len < XL_EVT_HLEN || xl_ld32(h) != XL_EVT_MAGIC || xl_ld32(h + 16) != len || len > UINT32_MAX) {
		xl_fmt(w->err, sizeof(w->err),
		       "not an encoded event: %zu bytes, magic 0x%08x, total_length %u (nothing written)", len,
		       got >= 4 ? xl_ld32(h) : 0, got >= 20 ? xl_ld32(h + 16) : 0);
		return -EINVAL;
	}
	if ((w->o.flags & XEVB_FW_VERIFY) && first) {
		struct xl_ev e = { 0 };
		char msg[XL_ERR_LEN];
		int rc = xl_ev_decode(&e, first, first_len, NULL, msg, sizeof(msg));
		xl_ev_release(&e);
		if (rc) {
			xl_fmt(w->err, sizeof(w->err), "event refused (nothing written): %s", msg);
			return -EINVAL;
		}
	}
	return 0;
}

static int append(struct xevb_file_writer *w, const struct iovec *iov, int iovcnt, size_t len)
{
	int rc;

	if (rotation_due(w, len) && (rc = xevb_file_writer_rotate(w)))
		return rc;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t n = iov[i].iov_len;
		w->crc = xl_crc32c(w->crc, p, n);
		if (w->buf_len + n > BUF_SIZE && (rc = xevb_file_writer_flush(w)))
			return rc;
		if (n >= BUF_SIZE / 2) {
			if ((rc = write_all(w, p, n)))
				return rc;
			continue;
		}
		memcpy(w->buf + w->buf_len, p, n);
		w->buf_len += n;
	}
	w->file_events++;
	w->file_bytes += len;
	w->events++;
	w->bytes += len;
	return 0;
}

XEVB_API int xevb_file_writer_writev(struct xevb_file_writer *w, const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	int rc;

	if (w->broken) {
		xl_fmt(w->err, sizeof(w->err), "the writer failed before (%s is cut): open a new one", w->path);
		return -EIO;
	}
	if (iovcnt < 0 || (iovcnt && !iov))
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	rc = check_event(w, iovcnt == 1 ? iov[0].iov_base : NULL, iovcnt == 1 ? len : 0, iov, iovcnt, len);
	if (rc)
		return rc;
	/* Pieces: XEVB_FW_VERIFY needs the event in one piece to decode it. */
	if ((w->o.flags & XEVB_FW_VERIFY) && iovcnt != 1) {
		uint8_t *flat = malloc(len);
		size_t at = 0;
		if (!flat)
			return -ENOMEM;
		for (int i = 0; i < iovcnt; i++) {
			memcpy(flat + at, iov[i].iov_base, iov[i].iov_len);
			at += iov[i].iov_len;
		}
		rc = xevb_file_writer_write(w, flat, len);
		free(flat);
		return rc;
	}
	return append(w, iov, iovcnt, len);
}

XEVB_API int xevb_file_writer_write(struct xevb_file_writer *w, const void *event, size_t len)
{
	struct iovec iov = { .iov_base = (void *)event, .iov_len = len };

	return xevb_file_writer_writev(w, &iov, 1);
}

XEVB_API int xevb_file_writer_close(struct xevb_file_writer *w)
{
	int rc = 0;

	if (!w)
		return 0;
	if (w->fd >= 0 && !w->broken)
		rc = finish_file(w, false);
	else if (w->broken)
		rc = -EIO;
	if (w->fd >= 0)
		close(w->fd);
	free((void *)w->o.path);
	free(w->sources);
	free(w->buf);
	free(w);
	return rc;
}

XEVB_API const char *xevb_file_writer_path(const struct xevb_file_writer *w)
{
	return w->path;
}

XEVB_API const char *xevb_file_writer_error(const struct xevb_file_writer *w)
{
	return w->err;
}

XEVB_API int xevb_file_writer_stats(const struct xevb_file_writer *w, struct xevb_file_writer_stats *st)
{
	struct xevb_file_writer_stats s = {
		.sz = sizeof(s),
		.files = w->files,
		.events = w->events,
		.bytes = w->bytes,
		.file_events = w->file_events,
		.file_bytes = w->file_bytes,
		.seq = w->seq,
		.broken = w->broken,
	};

	return xl_stats_copy(st, &s, sizeof(s));
}

// SPDX-License-Identifier: GPL-2.0-only
/* Key and configuration files checked before they are read: see user/ctl/trusted_file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctl/trusted_file.h"

static void say(enum xevb_tf_kind kind, const char *path, char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* "key file PATH: ..." or "PATH: ..." (as a configuration's FILE:LINE errors read). */
static void say(enum xevb_tf_kind kind, const char *path, char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!len)
		return;
	n = snprintf(err, len, kind == XEVB_TF_KEY ? "key file %s: " : "%s: ", path);
	if (n < 0 || (size_t)n >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(err + n, len - (size_t)n, fmt, ap);
	va_end(ap);
}

static const char *type_name(mode_t m)
{
	return S_ISDIR(m)  ? "a directory" :
	       S_ISFIFO(m) ? "a FIFO" :
	       S_ISCHR(m)  ? "a character device" :
	       S_ISBLK(m)  ? "a block device" :
	       S_ISSOCK(m) ? "a socket" :
			     "not a regular file";
}

static const char *what(enum xevb_tf_kind kind)
{
	return kind == XEVB_TF_KEY ? "key file" : "run configuration";
}

/* A symbolic link, or what is not a regular file, is refused before it is opened. */
static bool type_ok(enum xevb_tf_kind kind, const char *path, const struct stat *st, char *err, size_t len)
{
	char to[256];
	ssize_t n;

	if (S_ISLNK(st->st_mode)) {
		n = readlink(path, to, sizeof(to) - 1);
		to[n > 0 ? n : 0] = 0;
		say(kind, path, err, len,
		    "is a symbolic link (to %s): refused, a link can be turned to another file; give the %s itself",
		    n > 0 ? to : "?", what(kind));
		return false;
	}
	if (!S_ISREG(st->st_mode)) {
		say(kind, path, err, len, "is %s, not a regular file: refused%s; give the %s itself",
		    type_name(st->st_mode), S_ISDIR(st->st_mode) ? "" : " (reading it may never end)", what(kind));
		return false;
	}
	return true;
}

/* Owned by us or root; a key for its owner alone, a configuration not writable by others. */
static bool owner_ok(enum xevb_tf_kind kind, const char *path, const struct stat *st, char *err, size_t len)
{
	bool key = kind == XEVB_TF_KEY;
	mode_t perm = st->st_mode & 07777;

	if (st->st_uid != geteuid() && st->st_uid != 0) {
		say(kind, path, err, len,
		    "owned by uid %u, neither by this user (uid %u) nor by root: another user could rewrite it; "
		    "use a copy of your own (cp, then chmod %s)",
		    (unsigned)st->st_uid, (unsigned)geteuid(), key ? "600" : "go-w");
		return false;
	}
	if (key && (perm & (S_IRWXG | S_IRWXO))) {
		say(kind, path, err, len,
		    "mode %04o: group or others may use it, a key is its owner's alone: chmod 600 %s",
		    (unsigned)perm, path);
		return false;
	}
	if (!key && (perm & (S_IWGRP | S_IWOTH))) {
		say(kind, path, err, len, "mode %04o: group or others may change it: chmod go-w %s",
		    (unsigned)perm, path);
		return false;
	}
	return true;
}

/* size: the file's (grew: it grew past cap while being read). */
static void too_big(enum xevb_tf_kind kind, const char *path, long long size, bool grew, size_t cap, char *err,
		    size_t len)
{
	char n[48];

	snprintf(n, sizeof(n), grew ? "more than %lld bytes" : "%lld bytes", size);
	if (kind == XEVB_TF_KEY)
		say(kind, path, err, len, "%s: " XEVB_KEY_FORMS " (" XEVB_KEY_HOWTO ")", n, path);
	else
		say(kind, path, err, len, "%s: larger than a run configuration can be (%zu bytes at most)", n,
		    cap);
}

/* Up to cap bytes, then one more to see whether the file grew past its bound since fstat. */
static ssize_t read_bounded(int fd, void *buf, size_t cap, bool *more)
{
	size_t n = 0;
	char extra;
	ssize_t r;

	while (n < cap) {
		r = read(fd, (char *)buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	do
		r = read(fd, &extra, 1);
	while (r < 0 && errno == EINTR);
	*more = r > 0;
	return (ssize_t)n;
}

ssize_t xevb_tf_read(enum xevb_tf_kind kind, const char *path, void *buf, size_t cap, char *err, size_t len)
{
	struct stat st;
	ssize_t n;
	bool more;
	int fd;

	if (lstat(path, &st)) {
		int e = errno;
		if (kind == XEVB_TF_KEY)
			say(kind, path, err, len,
			    "cannot open: %s (" XEVB_KEY_HOWTO
			    ", and give every process of the run the same file)",
			    strerror(e), path);
		else
			say(kind, path, err, len, "cannot open: %s", strerror(e));
		return -1;
	}
	if (!type_ok(kind, path, &st, err, len))
		return -1;
	/* Checked again on what was opened: the name may have changed hands since lstat. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		say(kind, path, err, len, "cannot open: %s",
		    errno == ELOOP ? "it is a symbolic link" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		say(kind, path, err, len, "cannot stat: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (!type_ok(kind, path, &st, err, len) || !owner_ok(kind, path, &st, err, len)) {
		close(fd);
		return -1;
	}
	if (st.st_size > (off_t)cap) {
		too_big(kind, path, (long long)st.st_size, false, cap, err, len);
		close(fd);
		return -1;
	}
	n = read_bounded(fd, buf, cap, &more);
	if (n < 0)
		say(kind, path, err, len, "cannot read: %s", strerror(errno));
	else if (more)
		too_big(kind, path, (long long)cap, true, cap, err, len);
	close(fd);
	return n < 0 || more ? -1 : n;
}

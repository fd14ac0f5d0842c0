// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The files a farm node trusts, the key file (ctl.c) and the run
 * configuration (runcfg.c), checked before a byte is read, by the rules the
 * xevb tools apply to theirs (docs/hardening.md "Key and configuration
 * files"): named directly (no symbolic link), a regular file (no FIFO,
 * device, socket or directory, whose reading may never end), owned by this
 * user or root, closed to others (a key: no group or other bit at all; a
 * configuration: not writable by group or others), and no larger than its
 * kind can be, read with that bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"
#include "shared/xl_trusted.h"

static const char *kind_name(enum xl_tf_kind kind)
{
	return kind == XL_TF_KEY ? "key file" : "run configuration";
}

static const char *file_type(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/* A link or anything but a regular file: -errno with the message, before it is opened. */
static int check_type(enum xl_tf_kind kind, const char *path, const struct stat *st, char *err, size_t errlen)
{
	char to[256];
	ssize_t n;

	if (S_ISLNK(st->st_mode)) {
		n = readlink(path, to, sizeof(to) - 1);
		to[n > 0 ? n : 0] = 0;
		xl_fmt(err, errlen,
		       "%s %s: is a symbolic link (to %s): refused, a link can be turned to another file; give the "
		       "%s itself",
		       kind_name(kind), path, n > 0 ? to : "?", kind_name(kind));
		return -ELOOP;
	}
	if (!S_ISREG(st->st_mode)) {
		xl_fmt(err, errlen, "%s %s: is %s, not a regular file: refused%s; give the %s itself",
		       kind_name(kind), path, file_type(st->st_mode),
		       S_ISDIR(st->st_mode) ? "" : " (reading it may never end)", kind_name(kind));
		return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
	}
	return 0;
}

static int check_owner(enum xl_tf_kind kind, const char *path, const struct stat *st, char *err, size_t errlen)
{
	unsigned perm = (unsigned)st->st_mode & 07777;

	if (st->st_uid != geteuid() && st->st_uid != 0) {
		xl_fmt(err, errlen,
		       "%s %s: owned by uid %u, neither by this user (uid %u) nor by root: another user could rewrite "
		       "it; use a copy of your own (cp, then chmod %s)",
		       kind_name(kind), path, (unsigned)st->st_uid, (unsigned)geteuid(),
		       kind == XL_TF_KEY ? "600" : "go-w");
		return -EPERM;
	}
	if (kind == XL_TF_KEY && (perm & 077)) {
		xl_fmt(err, errlen,
		       "key file %s: mode %04o: group or others may use it, a key is its owner's alone: chmod 600 %s",
		       path, perm, path);
		return -EPERM;
	}
	if (kind == XL_TF_CONFIG && (perm & 022)) {
		xl_fmt(err, errlen,
		       "run configuration %s: mode %04o: group or others may change it: chmod go-w %s", path, perm,
		       path);
		return -EPERM;
	}
	return 0;
}

static int too_large(enum xl_tf_kind kind, const char *path, long long size, bool grew, size_t cap, char *err,
		     size_t errlen)
{
	const char *more = grew ? "more than " : "";

	if (kind == XL_TF_KEY)
		xl_fmt(err, errlen, "key file %s: %s%lld bytes: " XL_KEY_FORMS " (" XL_KEY_HOWTO ")", path, more,
		       size, path);
	else
		xl_fmt(err, errlen,
		       "run configuration %s: %s%lld bytes: larger than a run configuration can be (%zu bytes at "
		       "most)",
		       path, more, size, cap);
	return -EFBIG;
}

/* cap bytes at most; *grew when there is more (the file grew since fstat). */
static ssize_t read_all(int fd, char *buf, size_t cap, bool *grew)
{
	size_t got = 0;
	ssize_t r;
	char one;

	while (got < cap) {
		r = read(fd, buf + got, cap - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				return -1;
			break;
		}
		got += (size_t)r;
	}
	while ((r = read(fd, &one, 1)) < 0 && errno == EINTR)
		;
	*grew = r > 0;
	return (ssize_t)got;
}

static int open_checked(enum xl_tf_kind kind, const char *path, size_t cap, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc, e;

	if (lstat(path, &st)) {
		e = errno;
		if (kind == XL_TF_KEY)
			xl_fmt(err, errlen,
			       "key file %s: cannot open: %s (" XL_KEY_HOWTO
			       ", and give every process of the run the same file)",
			       path, strerror(e), path);
		else
			xl_fmt(err, errlen, "run configuration %s: cannot open: %s", path, strerror(e));
		return -e;
	}
	if ((rc = check_type(kind, path, &st, err, errlen)))
		return rc;
	/* What was opened is checked again: the name may have changed hands since lstat. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		xl_fmt(err, errlen, "%s %s: cannot open: %s", kind_name(kind), path,
		       e == ELOOP ? "it is a symbolic link" : strerror(e));
		return -e;
	}
	if (fstat(fd, &st)) {
		e = errno;
		xl_fmt(err, errlen, "%s %s: cannot stat: %s", kind_name(kind), path, strerror(e));
		rc = -e;
	} else if (!(rc = check_type(kind, path, &st, err, errlen)) &&
		   !(rc = check_owner(kind, path, &st, err, errlen)) && st.st_size > (off_t)cap) {
		rc = too_large(kind, path, (long long)st.st_size, false, cap, err, errlen);
	}
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

ssize_t xl_tf_read(enum xl_tf_kind kind, const char *path, void *buf, size_t cap, char *err, size_t errlen)
{
	int fd = open_checked(kind, path, cap, err, errlen), e;
	ssize_t n;
	bool grew;

	if (fd < 0)
		return fd;
	n = read_all(fd, buf, cap, &grew);
	e = errno;
	close(fd);
	if (n < 0) {
		xl_fmt(err, errlen, "%s %s: cannot read: %s", kind_name(kind), path, strerror(e));
		return -e;
	}
	if (grew)
		return too_large(kind, path, (long long)cap, true, cap, err, errlen);
	return n;
}

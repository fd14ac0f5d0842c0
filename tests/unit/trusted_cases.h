/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The weak spots of key and configuration files, one list for the tools'
 * tests (test_ctl_auth.c, test_runcfg.c) and the library's
 * (test_lib_trusted.c): both must refuse the same files, each with a
 * message that says what is wrong. Each case is made in a scratch
 * directory; its refusal must contain the words given.
 */
#ifndef XEVB_TRUSTED_CASES_H
#define XEVB_TRUSTED_CASES_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A scratch directory (dir: 64 bytes at least), and its removal with everything in it. */
static inline void tc_tmpdir(char *dir, size_t len)
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, len, "%s/xevb-files-XXXXXX", t && *t ? t : "/tmp");
	cr_assert(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
}

static inline void tc_rmdir(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(eq(int, system(cmd), 0));
}

/* dir/name holding b[0..n) with mode; its path in path. */
static inline void tc_write(char *path, size_t len, const char *dir, const char *name, const void *b, size_t n,
			    mode_t mode)
{
	int fd;

	snprintf(path, len, "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0, "cannot create %s", path);
	cr_assert(eq(sz, (size_t)write(fd, b, n), n));
	close(fd);
	cr_assert(eq(int, chmod(path, mode), 0));
}

/* What the file is (or where it points), whatever it would hold. */
enum tc_what { TC_SYMLINK, TC_FIFO, TC_DIR, TC_DEV_ZERO, TC_DEV_NULL, TC_SOCKET, TC_MISSING, TC_FOREIGN, TC__N };

/*
 * Case w as a path in dir, from a good file's bytes (good[0..n), mode):
 * the words its refusal must contain, or NULL when this machine cannot
 * make the case (another owner needs root).
 */
static inline const char *tc_make(enum tc_what w, const char *dir, const void *good, size_t n, mode_t mode,
				  char *path, size_t len)
{
	char target[512];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(path, len, "%s/case%d", dir, (int)w);
	switch (w) {
	case TC_SYMLINK:
		tc_write(target, sizeof(target), dir, "target", good, n, mode);
		cr_assert(eq(int, symlink(target, path), 0));
		return "is a symbolic link";
	case TC_FIFO:
		cr_assert(eq(int, mkfifo(path, mode), 0));
		return "is a FIFO, not a regular file";
	case TC_DIR:
		cr_assert(eq(int, mkdir(path, 0700), 0));
		return "is a directory, not a regular file";
	case TC_DEV_ZERO:
		snprintf(path, len, "/dev/zero");
		return "is a character device, not a regular file";
	case TC_DEV_NULL:
		snprintf(path, len, "/dev/null");
		return "is a character device, not a regular file";
	case TC_SOCKET:
		cr_assert(lt(sz, strlen(path), sizeof(sa.sun_path)), "%s: too long for a socket", path);
		memcpy(sa.sun_path, path, strlen(path) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		cr_assert(fd >= 0);
		cr_assert(eq(int, bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0), "bind %s", path);
		close(fd);
		return "is a socket, not a regular file";
	case TC_MISSING:
		return "cannot open: No such file or directory";
	case TC_FOREIGN:
		if (geteuid() != 0)
			return NULL;
		tc_write(path, len, dir, "foreign", good, n, mode);
		cr_assert(eq(int, chown(path, 65534, 65534), 0));
		return "owned by uid 65534, neither by this user (uid 0) nor by root";
	case TC__N:
		break;
	}
	return NULL;
}

/* A key file's bytes: what refuses it (NULL: taken as key_a). */
struct tc_key {
	const char *name;
	uint8_t b[1100];
	size_t n;
	const char *want;
};

/* The 32 bytes of the good keys below. */
static const uint8_t tc_key_a[32] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
				      17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 0x80 };

static inline size_t tc_hex(uint8_t *out, const uint8_t *b, size_t n, bool upper)
{
	for (size_t i = 0; i < n; i++)
		snprintf((char *)out + 2 * i, 3, upper ? "%02X" : "%02x", b[i]);
	return 2 * n;
}

/* Every form of key file the rule decides, taken or refused; k has room for 32. Returns the count. */
static inline size_t tc_keys(struct tc_key *k)
{
	static const uint8_t zero[32], ff[32] = { [0 ... 31] = 0xff };
	size_t n = 0;

#define TC_K(nm, w) (k[n] = (struct tc_key){ .name = nm, .want = w }, &k[n++])
	struct tc_key *c = TC_K("32 raw bytes", NULL);
	memcpy(c->b, tc_key_a, 32), c->n = 32;
	c = TC_K("64 hex digits", NULL);
	c->n = tc_hex(c->b, tc_key_a, 32, false);
	c = TC_K("64 hex digits and a newline", NULL);
	c->n = tc_hex(c->b, tc_key_a, 32, true);
	c->b[c->n++] = '\n';
	c = TC_K("32 raw bytes and a newline", "33 bytes; a key is 32 random bytes");
	memcpy(c->b, tc_key_a, 32), c->b[32] = '\n', c->n = 33;
	c = TC_K("32 hex digits and a newline (16 bytes)", "32 hex digits; a key is 32 random bytes");
	c->n = tc_hex(c->b, tc_key_a, 16, false);
	c->b[c->n++] = '\n';
	c = TC_K("32 hex digits (16 bytes)", "32 hex digits (16 bytes); a key is 32 random bytes");
	c->n = tc_hex(c->b, tc_key_a, 16, false);
	c = TC_K("a passphrase", "32 bytes of text, not random; a key is 32 random bytes");
	c->n = 32, memcpy(c->b, "correct horse battery staple 42!", 32);
	c = TC_K("empty", "0 bytes; a key is 32 random bytes");
	c = TC_K("31 bytes", "31 bytes; a key is 32 random bytes");
	memcpy(c->b, tc_key_a, 31), c->n = 31;
	c = TC_K("64 characters, one not hex", "character 7 of 64 is not a hex digit; a key is 32 random bytes");
	c->n = tc_hex(c->b, tc_key_a, 32, false);
	c->b[6] = 'g';
	c = TC_K("63 hex digits", "63 hex digits; a key is 32 random bytes");
	c->n = tc_hex(c->b, tc_key_a, 32, false) - 1;
	c = TC_K("64 hex digits and CR LF", "66 bytes: a key is 32 random bytes");
	c->n = tc_hex(c->b, tc_key_a, 32, false);
	c->b[c->n++] = '\r', c->b[c->n++] = '\n';
	c = TC_K("all zero", "all 32 bytes are 0x00; a key is 32 random bytes");
	memcpy(c->b, zero, 32), c->n = 32;
	c = TC_K("all zero in hex", "all 32 bytes are 0x00; a key is 32 random bytes");
	c->n = tc_hex(c->b, zero, 32, false);
	c = TC_K("all 0xff", "all 32 bytes are 0xff; a key is 32 random bytes");
	memcpy(c->b, ff, 32), c->n = 32;
	c = TC_K("a kilobyte", "1024 bytes: a key is 32 random bytes");
	memset(c->b, 0x5a, 1024), c->n = 1024;
#undef TC_K
	return n;
}

#endif

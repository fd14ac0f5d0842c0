/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The key file and the run configuration, checked before they are read
 * (lib/trusted.c): a regular file named directly, owned by this user or
 * root, closed to others, bounded in size. One implementation for the
 * library and the xevb tools (user/ctl/trusted_file.c wraps it).
 *
 * lib/shared/: the library's internals the tools call too. The tools
 * (GPL-2.0) may use this LGPL code; the library never includes the tools'.
 * Every symbol here is hidden in libxevb.so (xl_ prefix, never exported).
 */
#ifndef XEVB_LIB_TRUSTED_H
#define XEVB_LIB_TRUSTED_H

#include <sys/types.h>
#include <stddef.h>

enum xl_tf_kind { XL_TF_KEY, XL_TF_CONFIG };

/* The key-file forms taken, and how to make one (the path), for messages: the tools' words. */
#define XL_KEY_FORMS "a key is 32 random bytes, or 64 hex digits and an optional newline"
#define XL_KEY_HOWTO "make one: (umask 077; head -c 32 /dev/urandom > %s)"

/*
 * Read path whole into buf after the checks: its length (at most cap), or
 * -errno with "key file PATH: ..." or "run configuration PATH: ..." in err,
 * saying what is wrong and what to do.
 */
ssize_t xl_tf_read(enum xl_tf_kind kind, const char *path, void *buf, size_t cap, char *err, size_t errlen);

#endif

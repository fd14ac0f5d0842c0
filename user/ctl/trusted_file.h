/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The files a run trusts, read the way a security tool reads them: the key
 * file (ctl_auth.c) and the run configuration (runcfg.c). A file is taken
 * only when it is
 *   - named directly: a symbolic link is refused (it can be turned to
 *     another file behind our back);
 *   - a regular file: a FIFO, a device, a socket or a directory is refused
 *     before it is read (reading /dev/zero or a FIFO would never end);
 *   - owned by this user (the effective uid) or by root: another user could
 *     rewrite it;
 *   - closed to others: a key has no group or other permission bit at all
 *     (chmod 600); a configuration is not writable by group or others;
 *   - not larger than its kind can be, and read with that bound.
 * Every refusal names the file, what is wrong and what to do.
 * docs/hardening.md "Key and configuration files". The code is libxevb's
 * (lib/trusted.c), which applies the same rules to a farm node's files.
 */
#ifndef XEVB_TRUSTED_FILE_H
#define XEVB_TRUSTED_FILE_H

#include <stddef.h>
#include <sys/types.h>
#include "xl_trusted.h"

enum xevb_tf_kind { XEVB_TF_KEY, XEVB_TF_CONFIG };

/* The key-file forms taken, and how to make one (the path: umask first, so it is never readable by others), for messages. */
#define XEVB_KEY_FORMS XL_KEY_FORMS
#define XEVB_KEY_HOWTO XL_KEY_HOWTO

/*
 * Read path whole into buf after the checks above: its length (at most
 * cap), or -1 with "key file PATH: ..." (a key) or "PATH: ..." (a
 * configuration) in err, saying what is wrong and what to do.
 */
ssize_t xevb_tf_read(enum xevb_tf_kind kind, const char *path, void *buf, size_t cap, char *err, size_t len);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/* What a printer writes to a FILE, as one string (tests of reports, help and man pages). */
#ifndef XEVB_TEST_CAPTURE_H
#define XEVB_TEST_CAPTURE_H

#include <stdio.h>

typedef void capture_fn(FILE *f, const void *arg);

/* The text fn(f, arg) writes, NUL-terminated; the caller frees it. Fails the test if no memory stream. */
char *capture_text(capture_fn *fn, const void *arg);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/* How a fuzz harness reports a broken invariant: one line naming it, then abort() (a crash the fuzzer keeps). */
#ifndef XEVB_FUZZ_FAIL_H
#define XEVB_FUZZ_FAIL_H

#include <stdio.h>
#include <stdlib.h>

/* FUZZ_FAIL("harness", "format", ...): "harness: message" on stderr, then abort. */
#define FUZZ_FAIL(who, ...) \
	do { \
		fprintf(stderr, who ": " __VA_ARGS__); \
		fputc('\n', stderr); \
		abort(); \
	} while (0)

#endif

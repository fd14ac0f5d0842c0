// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "capture.h"

/* noinline: GCC 12 takes the pointer open_memstream fills for one into its own local */
__attribute__((noinline)) char *capture_text(capture_fn *fn, const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(not(eq(ptr, f, NULL)), "open_memstream failed: out of memory?");
	fn(f, arg);
	fclose(f);
	return buf;
}

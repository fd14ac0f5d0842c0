// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness for the shared MEP parser: the input is one Ethernet
 * frame. ASan catches any read outside it; parse_check() the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include "parse_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int verdict;
	const char *bad = parse_check(data, size, &verdict);

	if (bad) {
		fprintf(stderr, "fuzz_parser: %s (verdict %d, %zu bytes)\n", bad, verdict, size);
		abort();
	}
	return 0;
}

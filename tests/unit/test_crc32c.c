// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include "wire/crc32c.h"

TestSuite(crc32c, .timeout = 10);

Test(crc32c, check_value)
{
	cr_assert(eq(u32, xevb_crc32c(0, "123456789", 9), 0xE3069283));
	cr_assert(eq(u32, xevb_crc32c_sw(0, "123456789", 9), 0xE3069283));
	cr_assert(eq(u32, xevb_crc32c(0, "", 0), 0));
}

Test(crc32c, incremental_equals_whole)
{
	cr_assert(eq(u32, xevb_crc32c(xevb_crc32c(0, "12345", 5), "6789", 4), 0xE3069283));
}

/* Hardware and tables agree at every length and alignment. */
Test(crc32c, hw_matches_table)
{
	unsigned char buf[1100];
	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand();
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len += 13)
			cr_assert(eq(u32, xevb_crc32c(0, buf + off, len), xevb_crc32c_sw(0, buf + off, len)),
				  "off %zu len %zu", off, len);
}

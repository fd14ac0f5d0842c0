/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CRC-32C (Castagnoli), as carried in every fragment record. The code is
 * libxevb's (lib/crc32c.c: SSE4.2, three streams side by side, or
 * slicing-by-8 tables), linked into the tools: one implementation.
 */
#ifndef XEVB_CRC32C_H
#define XEVB_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include "xl_crc32c.h"

/* Continue a CRC: pass 0 to start. crc32c("123456789") == 0xE3069283. */
static inline uint32_t xevb_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return xl_crc32c(crc, buf, len);
}

/* Table-driven version, used where SSE4.2 is missing; exposed for tests. */
static inline uint32_t xevb_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	return xl_crc32c_sw(crc, buf, len);
}

/* Non-zero when the hardware instruction is in use. */
static inline int xevb_crc32c_hw(void)
{
	return xl_crc32c_hw();
}

#endif

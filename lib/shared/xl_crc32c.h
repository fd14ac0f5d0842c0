/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CRC-32C (Castagnoli), as carried in every fragment record: one
 * implementation (lib/crc32c.c) for the library and the xevb tools
 * (user/wire/crc32c.h names it for them). lib/shared/: see xl_trusted.h.
 */
#ifndef XEVB_LIB_CRC32C_H
#define XEVB_LIB_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: pass 0 to start. crc32c("123456789") == 0xE3069283. */
uint32_t xl_crc32c(uint32_t crc, const void *buf, size_t len);

/* The table-driven way, taken where SSE4.2 is missing; for tests. */
uint32_t xl_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Non-zero when the SSE4.2 instruction is in use. */
int xl_crc32c_hw(void);

#endif

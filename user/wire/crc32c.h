/* SPDX-License-Identifier: GPL-2.0-only */
/* CRC-32C (Castagnoli), as carried in every fragment record. */
#ifndef XEVB_CRC32C_H
#define XEVB_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: pass 0 to start. crc32c("123456789") == 0xE3069283. */
uint32_t xevb_crc32c(uint32_t crc, const void *buf, size_t len);

/* Table-driven version, used where SSE4.2 is missing; exposed for tests. */
uint32_t xevb_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Non-zero when the hardware instruction is in use. */
int xevb_crc32c_hw(void);

#endif

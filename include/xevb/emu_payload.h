/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Payload content of the source emulator: byte i of every fragment is
 * xevb_emu_byte(i), whatever the event or source. Event and source are
 * carried by the headers; the content lets a farm node check, beyond the
 * CRC, that the builder delivered the right bytes in the right place, and
 * its CRC depends only on the length, so a fast generator can reuse one
 * precomputed payload (and CRC) per fragment size.
 */
#ifndef XEVB_EMU_PAYLOAD_H
#define XEVB_EMU_PAYLOAD_H

#include <linux/types.h>

static inline __u8 xevb_emu_byte(__u32 i)
{
	return (__u8)(0x5a + i * 131u + (i >> 8));
}

#ifndef __bpf__
#include <stddef.h>
#include <stdint.h>

static inline void xevb_emu_fill(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = xevb_emu_byte((uint32_t)i);
}

/* Index of the first wrong byte, or len when all are right. */
static inline size_t xevb_emu_check(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != xevb_emu_byte((uint32_t)i))
			return i;
	return len;
}
#endif

#endif

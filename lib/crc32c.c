// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CRC-32C with the SSE4.2 crc32 instruction when the CPU has it (three
 * streams side by side: about 8 bytes a cycle), slicing-by-8 tables
 * otherwise. The tools' too (lib/shared/xl_crc32c.h).
 */
#include <string.h>
#include "internal.h"

#define POLY 0x82F63B78u /* Castagnoli, reflected */

static uint32_t table[8][256];
static int hw = -1;

static void init_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY & (0u - (c & 1)));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static uint32_t sw_update(uint32_t c, const unsigned char *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= c;
		c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
		    table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		    table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

/*
 * Three streams side by side: the crc32 instruction takes 3 cycles but
 * starts one a cycle, so one chain of them runs at a third of its speed.
 * Each 3 x STREAM bytes are three CRCs (the first from the register, the
 * others from 0), joined by moving the first two over the zero bytes that
 * follow them: the register is linear, so moving it over n zero bytes is
 * a fixed 32 x 32 bit matrix, applied a byte of the register at a time
 * from tables (shift1: STREAM bytes, shift2: 2 x STREAM).
 */
#define STREAM 256
static uint32_t shift1[4][256], shift2[4][256];

/* The register moved over len zero bytes, the slow way (tables only). */
static uint32_t zeros_slow(uint32_t c, size_t len)
{
	while (len--)
		c = table[0][c & 0xff] ^ (c >> 8);
	return c;
}

static void init_shift(uint32_t t[4][256], size_t len)
{
	uint32_t bit[32];

	for (int b = 0; b < 32; b++)
		bit[b] = zeros_slow(1u << b, len);
	for (int k = 0; k < 4; k++)
		for (uint32_t v = 0; v < 256; v++) {
			uint32_t r = 0;
			for (int b = 0; b < 8; b++)
				if (v >> b & 1)
					r ^= bit[8 * k + b];
			t[k][v] = r;
		}
}

static inline uint32_t shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t hw_update(uint32_t c, const unsigned char *p, size_t len)
{
	uint64_t c64 = c;

	while (len >= 3 * STREAM) {
		uint64_t a = c64, b = 0, d = 0, w0, w1, w2;
		for (size_t i = 0; i < STREAM; i += 8) {
			memcpy(&w0, p + i, 8);
			memcpy(&w1, p + STREAM + i, 8);
			memcpy(&w2, p + 2 * STREAM + i, 8);
			a = __builtin_ia32_crc32di(a, w0);
			b = __builtin_ia32_crc32di(b, w1);
			d = __builtin_ia32_crc32di(d, w2);
		}
		c64 = shift(shift2, (uint32_t)a) ^ shift(shift1, (uint32_t)b) ^ (uint32_t)d;
		p += 3 * STREAM;
		len -= 3 * STREAM;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

__attribute__((constructor)) static void xl_crc32c_init(void)
{
	init_tables();
	init_shift(shift1, STREAM);
	init_shift(shift2, 2 * STREAM);
#if defined(__x86_64__)
	__builtin_cpu_init();
	hw = __builtin_cpu_supports("sse4.2");
#else
	hw = 0;
#endif
}

int xl_crc32c_hw(void)
{
	return hw > 0;
}

uint32_t xl_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	return ~sw_update(~crc, buf, len);
}

uint32_t xl_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (hw > 0)
		return ~hw_update(~crc, buf, len);
#endif
	return ~sw_update(~crc, buf, len);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libxevb's internal pieces: never installed. Every symbol here is hidden
 * (the library is built with -fvisibility=hidden); the xl_ prefix keeps
 * them apart from the xevb tools' own code when both are linked together.
 */
#ifndef XEVB_LIB_INTERNAL_H
#define XEVB_LIB_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xevb/xevb.h>

#define XL_EVT_MAGIC     0x45564E54u /* "EVNT" */
#define XL_EVT_VERSION   1
#define XL_EVT_F_INCOMPL 0x01u
#define XL_EVT_HLEN      32u
#define XL_EVT_REC_HLEN  12u
#define XL_MAX_SOURCE_ID 4095u
#define XL_MAX_SOURCES   4096u
#define XL_EVT_MAX_LEN   (64u << 20)
#define XL_PAD4(n)       (((uint64_t)(n) + 3u) & ~(uint64_t)3u)
#define XL_ERR_LEN       256
#define XL_STR_(x)       #x
#define XL_STR(x)        XL_STR_(x)

/* Big-endian loads and stores at any alignment. */
static inline uint16_t xl_ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t xl_ld32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t xl_ld64(const uint8_t *p)
{
	return (uint64_t)xl_ld32(p) << 32 | xl_ld32(p + 4);
}

static inline void xl_st16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void xl_st32(uint8_t *p, uint32_t v)
{
	xl_st16(p, (uint16_t)(v >> 16));
	xl_st16(p + 2, (uint16_t)v);
}

static inline void xl_st64(uint8_t *p, uint64_t v)
{
	xl_st32(p, (uint32_t)(v >> 32));
	xl_st32(p + 4, (uint32_t)v);
}

#include "shared/xl_crc32c.h"

/* util.c */
/* snprintf into err (XL_ERR_LEN bytes, or errbuf's XEVB_ERRBUF_SIZE); NULL err: nothing. */
__attribute__((format(printf, 3, 4))) void xl_fmt(char *err, size_t len, const char *fmt, ...);
/*
 * Copy the caller's options (sz first) into ours, of size ours: missing
 * fields zero. -EINVAL (message in err) when sz is 0, or the caller's
 * struct is larger and sets fields this library does not know.
 */
int xl_opts_copy(void *ours, size_t ours_sz, const void *theirs, char *err, size_t errlen);
/* Fill the caller's stats struct (sz first) from ours: the common part. */
int xl_stats_copy(void *theirs, const void *ours, size_t ours_sz);
uint64_t xl_mono_ns(void);
uint64_t xl_real_ns(void);
/* "A.B.C.D:PORT" -> network-order addr, host-order port: 0 or -1. port 0 allowed when any_port. */
int xl_parse_addr(const char *s, uint32_t *addr, uint16_t *port, bool any_port);

struct xl_log {
	xevb_log_fn fn;
	void *ctx;
};
__attribute__((format(printf, 3, 4))) void xl_log(const struct xl_log *l, enum xevb_lib_log_level lv,
						  const char *fmt, ...);

#include "shared/xl_event.h"

#endif

/* Run files (wire-format.md section 4). */
#define XL_FILE_MAGIC    0x58455646u /* "XEVF" */
#define XL_FILE_VERSION  1
#define XL_FILE_HLEN     64u /* the fixed part; the source list follows */
#define XL_FILE_NAME_LEN 32u
#define XL_TRAILER_MAGIC 0x58454E44u /* "XEND" */
#define XL_TRAILER_LEN   48u
#define XL_PAD8(n)       (((uint64_t)(n) + 7u) & ~(uint64_t)7u)
#define XL_FILE_HDR_MAX  (XL_FILE_HLEN + 2u * XL_MAX_SOURCES)

/* The header's length for n sources. */
static inline uint32_t xl_file_hlen(uint32_t n_sources)
{
	return XL_FILE_HLEN + (uint32_t)XL_PAD8(2u * n_sources);
}

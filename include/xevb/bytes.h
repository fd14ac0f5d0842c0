/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Big-endian loads and stores at any alignment, for BPF and user space.
 * MEP fields sit 2 bytes off a 4-byte boundary behind Ethernet + IPv4, so
 * user space goes through memcpy (one mov on x86, and no UBSan alignment
 * report); BPF dereferences directly, which the verifier allows for packet
 * data and which clang turns into a single load.
 */
#ifndef XEVB_BYTES_H
#define XEVB_BYTES_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define xevb_be16_to_cpu(x) __builtin_bswap16(x)
#define xevb_be32_to_cpu(x) __builtin_bswap32(x)
#define xevb_be64_to_cpu(x) __builtin_bswap64(x)
#else
#define xevb_be16_to_cpu(x) (x)
#define xevb_be32_to_cpu(x) (x)
#define xevb_be64_to_cpu(x) (x)
#endif
#define xevb_cpu_to_be16(x) xevb_be16_to_cpu(x)
#define xevb_cpu_to_be32(x) xevb_be32_to_cpu(x)
#define xevb_cpu_to_be64(x) xevb_be64_to_cpu(x)

/* BPF dereferences packet data directly; user space copies (see above). */
#ifdef __bpf__
#define xevb_raw_load(v, p)  ((v) = *(const __typeof__(v) *)(p))
#define xevb_raw_store(p, v) (*(__typeof__(v) *)(p) = (v))
#else
#define xevb_raw_load(v, p)  __builtin_memcpy(&(v), (p), sizeof(v))
#define xevb_raw_store(p, v) __builtin_memcpy((p), &(v), sizeof(v))
#endif

static __always_inline __u16 xevb_ld16(const __u8 *p)
{
	__u16 v;

	xevb_raw_load(v, p);
	return xevb_be16_to_cpu(v);
}

static __always_inline __u32 xevb_ld32(const __u8 *p)
{
	__u32 v;

	xevb_raw_load(v, p);
	return xevb_be32_to_cpu(v);
}

static __always_inline void xevb_st16(__u8 *p, __u16 v)
{
	v = xevb_cpu_to_be16(v);
	xevb_raw_store(p, v);
}

static __always_inline void xevb_st32(__u8 *p, __u32 v)
{
	v = xevb_cpu_to_be32(v);
	xevb_raw_store(p, v);
}

static __always_inline void xevb_st64(__u8 *p, __u64 v)
{
	v = xevb_cpu_to_be64(v);
	xevb_raw_store(p, v);
}

#endif /* XEVB_BYTES_H */

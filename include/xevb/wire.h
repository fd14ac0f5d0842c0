/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Data-plane wire format, version 1 with the 1.1 SEGMENT extension
 * (docs/wire-format.md).
 * Shared by the BPF programs and user space: only fixed-width UAPI types,
 * no libc. All multi-byte fields are big-endian on the wire.
 */
#ifndef XEVB_WIRE_H
#define XEVB_WIRE_H

#include <linux/types.h>

#define XEVB_DEFAULT_IP_PROTO 253
#define XEVB_DEFAULT_UDP_PORT 23900

/* ---- MEP: source -> builder ---- */
#define XEVB_MEP_MAGIC        0x4D45
#define XEVB_MEP_VERSION      1
#define XEVB_MEP_F_RESEND     0x01
#define XEVB_MEP_F_END_OF_RUN 0x02
/* 1.1: one segment of a fragment larger than a packet; n_frags = 1 and the
   record's seg_offset says where the segment's bytes start. */
#define XEVB_MEP_F_SEGMENT     0x04
#define XEVB_MEP_F_KNOWN       (XEVB_MEP_F_RESEND | XEVB_MEP_F_END_OF_RUN | XEVB_MEP_F_SEGMENT)
#define XEVB_MAX_SOURCE_ID     4095
#define XEVB_MAX_SOURCES       4096
#define XEVB_MAX_FRAGS_PER_MEP 1024
/* An IPv4 datagram can never carry more; bounds every offset we compute. */
#define XEVB_MAX_IP_PAYLOAD 65535

struct xevb_mep_hdr {
	__u16 magic;
	__u8 version;
	__u8 flags;
	__u16 source_id;
	__u16 n_frags;
	__u32 run_number;
	__u32 packet_seq;
} __attribute__((packed));

struct xevb_frag_hdr {
	__u32 event_id;
	__u16 length;
	__u16 seg_offset; /* SEGMENT: where this segment starts; otherwise 0 (was reserved) */
	__u32 crc32c;
} __attribute__((packed));

/* ---- Built event: builder -> farm node ---- */
#define XEVB_EVT_MAGIC        0x45564E54
#define XEVB_EVT_VERSION      1
#define XEVB_EVT_F_INCOMPLETE 0x01

struct xevb_evt_hdr {
	__u32 magic;
	__u8 version;
	__u8 flags;
	__u16 n_frags;
	__u32 run_number;
	__u32 event_id;
	__u32 total_length;
	__u16 n_expected;
	__u16 reserved;
	__u64 build_ns;
} __attribute__((packed));

struct xevb_evt_frag_hdr {
	__u16 source_id;
	__u16 reserved;
	__u32 length;
	__u32 crc32c;
} __attribute__((packed));

#define XEVB_OFFSETOF(t, m) __builtin_offsetof(t, m)

_Static_assert(sizeof(struct xevb_mep_hdr) == 16, "MEP header is 16 bytes");
_Static_assert(XEVB_OFFSETOF(struct xevb_mep_hdr, version) == 2, "mep.version");
_Static_assert(XEVB_OFFSETOF(struct xevb_mep_hdr, flags) == 3, "mep.flags");
_Static_assert(XEVB_OFFSETOF(struct xevb_mep_hdr, source_id) == 4, "mep.source_id");
_Static_assert(XEVB_OFFSETOF(struct xevb_mep_hdr, n_frags) == 6, "mep.n_frags");
_Static_assert(XEVB_OFFSETOF(struct xevb_mep_hdr, run_number) == 8, "mep.run_number");
_Static_assert(XEVB_OFFSETOF(struct xevb_mep_hdr, packet_seq) == 12, "mep.packet_seq");

_Static_assert(sizeof(struct xevb_frag_hdr) == 12, "fragment header is 12 bytes");
_Static_assert(XEVB_OFFSETOF(struct xevb_frag_hdr, length) == 4, "frag.length");
_Static_assert(XEVB_OFFSETOF(struct xevb_frag_hdr, seg_offset) == 6, "frag.seg_offset");
_Static_assert(XEVB_OFFSETOF(struct xevb_frag_hdr, crc32c) == 8, "frag.crc32c");

_Static_assert(sizeof(struct xevb_evt_hdr) == 32, "event header is 32 bytes");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, version) == 4, "evt.version");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, flags) == 5, "evt.flags");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, n_frags) == 6, "evt.n_frags");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, run_number) == 8, "evt.run_number");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, event_id) == 12, "evt.event_id");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, total_length) == 16, "evt.total_length");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, n_expected) == 20, "evt.n_expected");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, reserved) == 22, "evt.reserved");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_hdr, build_ns) == 24, "evt.build_ns");

_Static_assert(sizeof(struct xevb_evt_frag_hdr) == 12, "event record header is 12 bytes");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_frag_hdr, reserved) == 2, "evtf.reserved");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_frag_hdr, length) == 4, "evtf.length");
_Static_assert(XEVB_OFFSETOF(struct xevb_evt_frag_hdr, crc32c) == 8, "evtf.crc32c");

/* Records and payloads are padded to 4 bytes. */
#define XEVB_PAD4(n) (((n) + 3u) & ~3u)

/* RFC 1982 serial-number order for event_ids. */
static inline int xevb_seq_after(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0;
}

#endif /* XEVB_WIRE_H */

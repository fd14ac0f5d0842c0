/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * MEP writer: the source side of wire format 1 (docs/wire-format.md),
 * segments of section 1.1 included.
 * Used by the source emulator, by tests that need frames, and to build the
 * template the live-frames generator stamps. User space only.
 *
 * Three depths, one layout: a whole Ethernet frame, the IPv4 datagram (for
 * raw sockets with IP_HDRINCL), or the MEP alone (for raw or UDP sockets
 * where the kernel adds the headers).
 */
#ifndef XEVB_MEP_WRITE_H
#define XEVB_MEP_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XEVB_WR_ETH_HLEN 14
#define XEVB_WR_IP_HLEN  20
#define XEVB_WR_UDP_HLEN 8

struct xevb_mep_params {
	/* Ethernet and IPv4: only read by xevb_write_frame / xevb_write_ip */
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint32_t saddr;     /* network order */
	uint32_t daddr;     /* network order */
	uint8_t ip_proto;   /* raw transport; ignored when udp_dport != 0 */
	uint8_t ttl;        /* 0: 64 */
	uint16_t ip_id;     /* host order */
	uint16_t udp_dport; /* host order; non-zero selects UDP */
	uint16_t udp_sport; /* host order; 0: same as udp_dport */

	/* MEP */
	uint16_t source_id;
	uint8_t flags;
	uint32_t run_number;
	uint32_t packet_seq;
	uint32_t first_event_id;  /* record j carries first_event_id + j ... */
	const uint32_t *event_id; /* ... unless given here (n_frags ids, increasing) */
	uint32_t n_frags;         /* 1..1024 */
	const uint16_t *frag_len; /* n_frags lengths; NULL: all frag_size */
	uint16_t frag_size;
	/* Per-record payload content; NULL: the emulator payload (emu_payload.h). */
	const uint8_t *const *payload;

	/*
	 * 1.1 SEGMENT, when flags has XEVB_MEP_F_SEGMENT: the one record
	 * (n_frags 1) is a segment of a fragment of frag_size bytes, whose
	 * whole payload is payload[0] (or the emulator's). It carries the bytes
	 * from seg_offset (a multiple of 4) on, as many as a MEP of seg_budget
	 * bytes holds (xevb_seg_stride), or the rest of the fragment if that is
	 * less. seg_crc32c is the whole payload's CRC-32C: the caller computes
	 * it once per fragment, not once per segment.
	 */
	uint16_t seg_offset;
	uint16_t seg_budget; /* MEP bytes a packet may carry: MTU - IP (- UDP) headers */
	uint32_t seg_crc32c;
};

/* Bytes of MEP header + records (padding included), or 0 if over 65535 - 28. */
size_t xevb_mep_len(const struct xevb_mep_params *p);
/* Bytes xevb_write_ip / xevb_write_frame would write (0 if too big). */
size_t xevb_ip_len(const struct xevb_mep_params *p);
size_t xevb_frame_len(const struct xevb_mep_params *p);

/*
 * Each returns the bytes written, or -1 (errno EINVAL for bad parameters,
 * EMSGSIZE when cap is too small). Nothing is written past the returned
 * length; the frame is not padded to 60 bytes (the NIC or veth does that).
 */
ssize_t xevb_write_mep(uint8_t *buf, size_t cap, const struct xevb_mep_params *p);
ssize_t xevb_write_ip(uint8_t *buf, size_t cap, const struct xevb_mep_params *p);
ssize_t xevb_write_frame(uint8_t *buf, size_t cap, const struct xevb_mep_params *p);

/*
 * Segments (1.1). A sender sends a fragment as segments when its record
 * does not fit a packet (xevb_seg_needed); segment i starts at
 * i * xevb_seg_stride(budget); every segment is one packet.
 */
/* Payload bytes of every segment but the last in MEPs of at most budget
   bytes: budget - 28 rounded down to 4; 0 when not even 4 bytes fit. */
uint32_t xevb_seg_stride(size_t budget);
/* Segments of a fragment of length bytes (1..65535); 0 if budget is too small. */
uint32_t xevb_seg_count(uint32_t length, size_t budget);
/* Whether a length-byte fragment's record does not fit one budget-byte MEP. */
int xevb_seg_needed(uint32_t length, size_t budget);
/*
 * Writes all segments of p's fragment (p->seg_offset is ignored), segment
 * i into buf + i * slot at the depth of write (xevb_write_mep, _ip or
 * _frame), with packet_seq and ip_id + i, its length in lens[i]. Returns
 * the number of segments, or -1: errno EINVAL (bad parameters, a budget
 * that holds no segment), EMSGSIZE (slot too small, or more than max_segs).
 */
typedef ssize_t (*xevb_write_fn)(uint8_t *buf, size_t cap, const struct xevb_mep_params *p);
ssize_t xevb_write_segments(uint8_t *buf, size_t slot, uint32_t max_segs, size_t *lens,
			    const struct xevb_mep_params *p, xevb_write_fn write);

/*
 * RFC 1071 checksum over len bytes read as big-endian words (the checksum
 * field included as is): store the result with xevb_st16.
 */
uint16_t xevb_ip_csum(const void *hdr, size_t len);

#endif

// SPDX-License-Identifier: GPL-2.0-only
/* MEP writer: see user/wire/mep_write.h. */
#include <errno.h>
#include <string.h>
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/mep_write.h"
#include <xevb/wire.h>

#define REC_HLEN ((uint32_t)sizeof(struct xevb_frag_hdr))
#define MEP_HLEN ((uint32_t)sizeof(struct xevb_mep_hdr))

static uint16_t frag_len(const struct xevb_mep_params *p, uint32_t j)
{
	return p->frag_len ? p->frag_len[j] : p->frag_size;
}

static int is_segment(const struct xevb_mep_params *p)
{
	return p->flags & XEVB_MEP_F_SEGMENT;
}

uint32_t xevb_seg_stride(size_t budget)
{
	if (budget > XEVB_MAX_IP_PAYLOAD)
		budget = XEVB_MAX_IP_PAYLOAD;
	return budget >= MEP_HLEN + REC_HLEN + 4 ? ((uint32_t)budget - MEP_HLEN - REC_HLEN) & ~3u : 0;
}

uint32_t xevb_seg_count(uint32_t length, size_t budget)
{
	uint32_t stride = xevb_seg_stride(budget);

	if (!stride || !length || length > 65535)
		return 0;
	return (length + stride - 1) / stride;
}

int xevb_seg_needed(uint32_t length, size_t budget)
{
	return MEP_HLEN + REC_HLEN + XEVB_PAD4(length) > budget;
}

/* The segment's own payload bytes: a stride, or what is left of the fragment. */
static uint32_t seg_take(const struct xevb_mep_params *p)
{
	uint32_t left = (uint32_t)p->frag_size - p->seg_offset;
	uint32_t stride = xevb_seg_stride(p->seg_budget);

	return left < stride ? left : stride;
}

static int valid_segment(const struct xevb_mep_params *p)
{
	return p->n_frags == 1 && p->frag_size && !(p->seg_offset & 3) && p->seg_offset < p->frag_size &&
	       xevb_seg_stride(p->seg_budget);
}

static int valid(const struct xevb_mep_params *p)
{
	if (p->n_frags < 1 || p->n_frags > XEVB_MAX_FRAGS_PER_MEP || p->source_id > XEVB_MAX_SOURCE_ID ||
	    (p->flags & ~(XEVB_MEP_F_KNOWN | XEVB_MEP_F_SEGMENT)))
		return 0;
	return !is_segment(p) || valid_segment(p);
}

size_t xevb_mep_len(const struct xevb_mep_params *p)
{
	size_t len = MEP_HLEN;

	if (!valid(p))
		return 0;
	if (is_segment(p))
		return MEP_HLEN + REC_HLEN + XEVB_PAD4(seg_take(p));
	for (uint32_t j = 0; j < p->n_frags; j++)
		len += REC_HLEN + XEVB_PAD4((uint32_t)frag_len(p, j));
	/* The IPv4 total length field must hold IP + UDP headers as well. */
	if (len > XEVB_MAX_IP_PAYLOAD - XEVB_WR_IP_HLEN - XEVB_WR_UDP_HLEN)
		return 0;
	return len;
}

static size_t l4_hlen(const struct xevb_mep_params *p)
{
	return p->udp_dport ? XEVB_WR_UDP_HLEN : 0;
}

size_t xevb_ip_len(const struct xevb_mep_params *p)
{
	size_t m = xevb_mep_len(p);
	return m ? XEVB_WR_IP_HLEN + l4_hlen(p) + m : 0;
}

size_t xevb_frame_len(const struct xevb_mep_params *p)
{
	size_t m = xevb_ip_len(p);
	return m ? XEVB_WR_ETH_HLEN + m : 0;
}

uint16_t xevb_ip_csum(const void *hdr, size_t len)
{
	const uint8_t *b = hdr;
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (i < len)
		sum += (uint32_t)b[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Bytes off..off+len-1 of the emulator's payload (byte i is xevb_emu_byte(i)). */
static void emu_fill_at(uint8_t *dst, uint32_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		dst[i] = xevb_emu_byte(off + i);
}

/* The one record of a segment at r: the whole fragment's length and CRC,
   this segment's bytes, zero padding to 4. */
static void put_segment_record(uint8_t *r, const struct xevb_mep_params *p)
{
	uint32_t take = seg_take(p);
	uint8_t *pl = r + REC_HLEN;

	if (p->payload && p->payload[0])
		memcpy(pl, p->payload[0] + p->seg_offset, take);
	else
		emu_fill_at(pl, p->seg_offset, take);
	memset(pl + take, 0, XEVB_PAD4(take) - take);
	xevb_st32(r, p->event_id ? p->event_id[0] : p->first_event_id);
	xevb_st16(r + 4, p->frag_size);
	xevb_st16(r + 6, p->seg_offset);
	xevb_st32(r + 8, p->seg_crc32c);
}

/* The MEP at buf; the caller has checked that mep_len bytes fit. */
static void put_mep(uint8_t *buf, const struct xevb_mep_params *p)
{
	uint8_t *r = buf + MEP_HLEN;

	xevb_st16(buf, XEVB_MEP_MAGIC);
	buf[2] = XEVB_MEP_VERSION;
	buf[3] = p->flags;
	xevb_st16(buf + 4, p->source_id);
	xevb_st16(buf + 6, (uint16_t)p->n_frags);
	xevb_st32(buf + 8, p->run_number);
	xevb_st32(buf + 12, p->packet_seq);
	if (is_segment(p)) {
		put_segment_record(r, p);
		return;
	}
	for (uint32_t j = 0; j < p->n_frags; j++) {
		uint16_t len = frag_len(p, j);
		uint32_t padded = XEVB_PAD4((uint32_t)len);
		uint8_t *pl = r + REC_HLEN;

		if (p->payload && p->payload[j])
			memcpy(pl, p->payload[j], len);
		else
			xevb_emu_fill(pl, len);
		memset(pl + len, 0, padded - len);
		xevb_st32(r, p->event_id ? p->event_id[j] : p->first_event_id + j);
		xevb_st16(r + 4, len);
		xevb_st16(r + 6, 0);
		xevb_st32(r + 8, xevb_crc32c(0, pl, len));
		r = pl + padded;
	}
}

static ssize_t put_ip(uint8_t *buf, size_t cap, const struct xevb_mep_params *p)
{
	size_t tot = xevb_ip_len(p);
	uint8_t *l4 = buf + XEVB_WR_IP_HLEN;

	if (!tot)
		return errno = EINVAL, -1;
	if (tot > cap)
		return errno = EMSGSIZE, -1;
	buf[0] = 0x45;
	buf[1] = 0;
	xevb_st16(buf + 2, (uint16_t)tot);
	xevb_st16(buf + 4, p->ip_id);
	xevb_st16(buf + 6, 0x4000); /* DF: sources size packets to the MTU */
	buf[8] = p->ttl ? p->ttl : 64;
	buf[9] = p->udp_dport ? 17 : p->ip_proto;
	xevb_st16(buf + 10, 0);
	memcpy(buf + 12, &p->saddr, 4);
	memcpy(buf + 16, &p->daddr, 4);
	xevb_st16(buf + 10, xevb_ip_csum(buf, XEVB_WR_IP_HLEN));
	if (p->udp_dport) {
		/* UDP checksum 0: "none", allowed over IPv4; the records carry CRCs. */
		xevb_st16(l4, p->udp_sport ? p->udp_sport : p->udp_dport);
		xevb_st16(l4 + 2, p->udp_dport);
		xevb_st16(l4 + 4, (uint16_t)(tot - XEVB_WR_IP_HLEN));
		xevb_st16(l4 + 6, 0);
	}
	put_mep(l4 + l4_hlen(p), p);
	return (ssize_t)tot;
}

ssize_t xevb_write_mep(uint8_t *buf, size_t cap, const struct xevb_mep_params *p)
{
	size_t len = xevb_mep_len(p);

	if (!len)
		return errno = EINVAL, -1;
	if (len > cap)
		return errno = EMSGSIZE, -1;
	put_mep(buf, p);
	return (ssize_t)len;
}

ssize_t xevb_write_ip(uint8_t *buf, size_t cap, const struct xevb_mep_params *p)
{
	return put_ip(buf, cap, p);
}

ssize_t xevb_write_frame(uint8_t *buf, size_t cap, const struct xevb_mep_params *p)
{
	ssize_t n;

	if (cap < XEVB_WR_ETH_HLEN)
		return errno = EMSGSIZE, -1;
	memcpy(buf, p->dst_mac, 6);
	memcpy(buf + 6, p->src_mac, 6);
	xevb_st16(buf + 12, 0x0800);
	n = put_ip(buf + XEVB_WR_ETH_HLEN, cap - XEVB_WR_ETH_HLEN, p);
	return n < 0 ? n : n + XEVB_WR_ETH_HLEN;
}

ssize_t xevb_write_segments(uint8_t *buf, size_t slot, uint32_t max_segs, size_t *lens,
			    const struct xevb_mep_params *p, xevb_write_fn write)
{
	struct xevb_mep_params q = *p;
	uint32_t n = xevb_seg_count(p->frag_size, p->seg_budget);
	uint32_t stride = xevb_seg_stride(p->seg_budget);

	if (!n || !is_segment(p))
		return errno = EINVAL, -1;
	if (n > max_segs)
		return errno = EMSGSIZE, -1;
	for (uint32_t i = 0; i < n; i++) {
		ssize_t len;

		q.seg_offset = (uint16_t)(i * stride);
		q.packet_seq = p->packet_seq + i;
		q.ip_id = (uint16_t)(p->ip_id + i);
		len = write(buf + (size_t)i * slot, slot, &q);
		if (len < 0)
			return -1;
		lens[i] = (size_t)len;
	}
	return (ssize_t)n;
}

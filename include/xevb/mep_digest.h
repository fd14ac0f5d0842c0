/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The MEP digest: what the XDP program already learned while validating a
 * MEP, appended to the frame it redirects to an AF_XDP socket, so that user
 * space reads the headers' first line and the digest's one or two lines
 * instead of walking every record of a frame that has gone cold in memory
 * (docs/digest.md).
 *
 * Layout, from the end of the IP datagram (orig_len bytes into the frame),
 * in host byte order (it never leaves the host):
 *
 *     n_frags x { u16 event_id - first_event_id; u16 fragment length }
 *     trailer   { u32 first_event_id; u16 mep_off; u16 n_frags;
 *                 u16 orig_len; u16 magic }          <- last 12 bytes
 *
 * Payload offsets are not stored: they follow from the lengths by a prefix
 * sum in registers (off += 12 + pad4(len)), with no load depending on a
 * previous load.
 *
 * Trust: the program first trims every byte after the IP datagram from the
 * frames it redirects, so a frame that reaches the socket without a digest
 * ends exactly at L2 + IP total length. A digest is accepted only if the
 * frame is exactly orig_len + digest length long and orig_len is L2 + IP
 * total length read from the frame; a source cannot forge one in Ethernet
 * padding. Anything that does not check out goes to the full parser.
 */
#ifndef XEVB_MEP_DIGEST_H
#define XEVB_MEP_DIGEST_H

#include <linux/types.h>
#include "mep_parse.h"

#define XEVB_DIGEST_MAGIC      0xD161u   /* "Dg" v1 */
#define XEVB_DIGEST_MAX_FRAGS  64        /* 268 bytes of digest at most */
#define XEVB_DIGEST_ENT_LEN    4
#define XEVB_DIGEST_TRAILER_LEN 12
#define XEVB_DIGEST_LEN(n)     ((n) * XEVB_DIGEST_ENT_LEN + XEVB_DIGEST_TRAILER_LEN)
/* event_id deltas are 16 bits: a MEP spanning more ids gets no digest. */
#define XEVB_DIGEST_MAX_SPAN   0xffffu

struct xevb_digest_trailer {
	__u32 first_event_id;
	__u16 mep_off;
	__u16 n_frags;
	__u16 orig_len;
	__u16 magic;
} __attribute__((packed));

_Static_assert(sizeof(struct xevb_digest_trailer) == XEVB_DIGEST_TRAILER_LEN, "digest trailer");

#ifndef __bpf__
#include <string.h>

/*
 * The digest of the frame (len bytes, all readable), checked against the
 * frame's own headers. Fills pi and frags (payload_off, length, event_id;
 * crc32c is left 0: the builder reads each CRC from the frame when it
 * emits, xevb_event_crc) and returns XEVB_RES_MEP, or returns -1 when there
 * is no valid digest (the caller runs the full parser).
 */
static inline int xevb_digest_read(const __u8 *frame, __u32 len, const struct xevb_parse_cfg *cfg,
				   struct xevb_pkt_info *pi, struct xevb_frag_ref *frags)
{
	struct xevb_digest_trailer t;
	const __u8 *ip, *ent;
	__u32 n, orig, l3, ihl, tot, mep_off, off, prev = 0;
	__u16 proto;
	__u8 ipp;
	int is_udp;

	/* Only a program that trims what follows the datagram makes digests trustworthy. */
	if (!cfg->digest || len < XEVB_ETH_HLEN + 20 + XEVB_MEP_HLEN + XEVB_DIGEST_LEN(1))
		return -1;
	memcpy(&t, frame + len - XEVB_DIGEST_TRAILER_LEN, sizeof(t));
	n = t.n_frags;
	orig = t.orig_len;
	if (t.magic != XEVB_DIGEST_MAGIC || n == 0 || n > XEVB_DIGEST_MAX_FRAGS ||
	    orig + XEVB_DIGEST_LEN(n) != len)
		return -1;

	/* The headers, as xevb_classify reads them, within orig_len. */
	proto = xevb_ld16(frame + 12);
	l3 = XEVB_ETH_HLEN;
	if (proto == XEVB_ETH_P_8021Q) {
		proto = xevb_ld16(frame + 16);
		l3 += XEVB_VLAN_HLEN;
	}
	if (proto != XEVB_ETH_P_IP || l3 + 20 > orig)
		return -1;
	ip = frame + l3;
	ihl = (ip[0] & 0x0f) * 4u;
	if ((ip[0] >> 4) != 4 || ihl < 20 || (xevb_ld16(ip + 6) & 0x3fff))
		return -1;
	tot = xevb_ld16(ip + 2);
	if (l3 + tot != orig || tot < ihl)
		return -1;
	ipp = ip[9];
	if (cfg->ip_proto && ipp == cfg->ip_proto)
		is_udp = 0;
	else if (cfg->udp_port && ipp == XEVB_IPPROTO_UDP)
		is_udp = 1;
	else
		return -1;
	mep_off = l3 + ihl;
	if (is_udp) {
		if (mep_off + XEVB_UDP_HLEN > orig || xevb_ld16(ip + ihl + 2) != cfg->udp_port ||
		    xevb_ld16(ip + ihl + 4) != tot - ihl)
			return -1;
		mep_off += XEVB_UDP_HLEN;
	}
	if (mep_off != t.mep_off || mep_off + XEVB_MEP_HLEN > orig)
		return -1;
	if (xevb_mep_hdr_check(frame + mep_off, pi) != XEVB_RES_MEP || pi->n_frags != n)
		return -1;

	/*
	 * Offsets only grow, so one check of the end against the MEP's end
	 * bounds every record; event_ids must rise strictly from delta 0, as
	 * the parser demands.
	 */
	ent = frame + orig;
	off = mep_off + XEVB_MEP_HLEN;
	for (__u32 i = 0; i < n; i++) {
		__u32 e, d, flen;

		memcpy(&e, ent + i * XEVB_DIGEST_ENT_LEN, sizeof(e));
		d = e & 0xffff;
		flen = e >> 16;
		if (i == 0 ? d != 0 : d <= prev)
			return -1;
		frags[i].event_id = t.first_event_id + d;
		frags[i].crc32c = 0;
		frags[i].payload_off = (__u16)(off + XEVB_REC_HLEN);
		frags[i].length = (__u16)flen;
		off += XEVB_REC_HLEN + XEVB_PAD4(flen);
		prev = d;
	}
	if (off != orig)
		return -1;
	pi->saddr = xevb_cpu_to_be32(xevb_ld32(ip + 12));
	pi->daddr = xevb_cpu_to_be32(xevb_ld32(ip + 16));
	pi->is_udp = (__u8)is_udp;
	pi->mep_off = (__u16)mep_off;
	pi->mep_len = (__u16)(orig - mep_off);
	pi->first_event_id = t.first_event_id;
	return XEVB_RES_MEP;
}

/*
 * AF_XDP receive: the digest when the program left a valid one (*digest
 * set to 1), else the full parser on the whole frame (a digest that did
 * not check out is then just bytes after the IP datagram, which the parser
 * ignores). digest may be NULL.
 */
static inline int xevb_xsk_classify(const __u8 *frame, __u32 len, const struct xevb_parse_cfg *cfg,
				    struct xevb_pkt_info *pi, struct xevb_frag_ref *frags, int *digest)
{
	int res = xevb_digest_read(frame, len, cfg, pi, frags);

	if (digest)
		*digest = res == XEVB_RES_MEP;
	if (res == XEVB_RES_MEP)
		return res;
	return xevb_classify(frame, frame + len, len, cfg, pi, frags);
}
#endif /* !__bpf__ */

#endif /* XEVB_MEP_DIGEST_H */

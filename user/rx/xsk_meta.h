/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User space's side of the XDP meta (xdp_meta.h): the parse result the
 * steering program left in front of an AF_XDP frame, taken instead of
 * walking the frame's records again. Reads the 16 meta bytes, the
 * Ethernet + IP (+ UDP) headers, the MEP header and the first record's
 * event_id: one or two cache lines, where the parser reads them all.
 *
 * The meta bytes are hostile like the frame: a frame the program gave no
 * meta (non-consecutive records, adjust_meta failed, another program)
 * still has whatever an earlier frame left in its chunk. So the meta is
 * taken only when it is bound to this frame: the cookie of this load
 * folded with the frame's own packet_seq, the MEP header valid
 * (xevb_mep_hdr_check) and agreeing (n_frags, the first record's
 * event_id), IP and UDP lengths agreeing with mep_off/mep_len, the MEP
 * inside the frame. Anything else: -1, and the caller parses.
 */
#ifndef XEVB_XSK_META_H
#define XEVB_XSK_META_H

#include <stdint.h>
#include <string.h>
#include <xevb/mep_parse.h>
#include <xevb/xdp_meta.h>

/*
 * data: an AF_XDP frame with XEVB_XDP_META_LEN readable bytes before it
 * (a UMEM chunk's headroom, never a bounce buffer), len its length. Reads
 * nothing outside [data - 16, data + len). Returns XEVB_RES_MEP with pi
 * filled as xevb_classify would (consec = 1), or -1: no valid meta.
 */
static inline int xevb_xsk_meta_pi(const uint8_t *data, uint32_t len, uint32_t cookie, struct xevb_pkt_info *pi)
{
	struct xevb_xdp_meta m;
	const uint8_t *ip, *mep;
	uint32_t l3, hdrs, end, n;

	if (!cookie || len < XEVB_ETH_HLEN + 20 + XEVB_MEP_HLEN + XEVB_REC_HLEN)
		return -1;
	memcpy(&m, data - XEVB_XDP_META_LEN, sizeof(m));
	if (!(m.flags & XEVB_XDP_META_F_CONSEC) ||
	    (m.flags & ~(XEVB_XDP_META_F_CONSEC | XEVB_XDP_META_F_UDP | XEVB_XDP_META_F_VOUCHED)) ||
	    !(m.flags & XEVB_XDP_META_F_VOUCHED) != !m.reserved)
		return -1;
	l3 = XEVB_ETH_HLEN;
	if (xevb_ld16(data + 12) == XEVB_ETH_P_8021Q)
		l3 += XEVB_VLAN_HLEN;
	hdrs = l3 + 20 + ((m.flags & XEVB_XDP_META_F_UDP) ? XEVB_UDP_HLEN : 0);
	n = m.n_frags;
	end = (uint32_t)m.mep_off + m.mep_len;
	/* Offsets first: everything read below then lies inside the frame. */
	if (m.mep_off < hdrs || m.mep_off > 256 || end > len || n == 0 || n > XEVB_MAX_FRAGS_PER_MEP ||
	    m.mep_len < XEVB_MEP_HLEN + XEVB_REC_HLEN * n)
		return -1;
	if (xevb_ld16(data + l3 - 2) != XEVB_ETH_P_IP)
		return -1;
	ip = data + l3;
	/* The IP datagram ends where the MEP does, as the parser saw it. */
	if ((ip[0] >> 4) != 4 || (ip[0] & 0x0f) * 4u != m.mep_off - (hdrs - 20) || xevb_ld16(ip + 2) != end - l3 ||
	    (xevb_ld16(ip + 6) & 0x3fff))
		return -1;
	if (m.flags & XEVB_XDP_META_F_UDP) {
		if (ip[9] != XEVB_IPPROTO_UDP ||
		    xevb_ld16(data + m.mep_off - XEVB_UDP_HLEN + 4) != (uint32_t)m.mep_len + XEVB_UDP_HLEN)
			return -1;
	} else if (ip[9] == XEVB_IPPROTO_UDP) {
		return -1;
	}
	mep = data + m.mep_off;
	/* The program writes no meta for a segment: such a frame is parsed. */
	if (xevb_mep_hdr_check(mep, pi) != XEVB_RES_MEP || (pi->flags & XEVB_MEP_F_SEGMENT) || pi->n_frags != n ||
	    (m.check ^ pi->packet_seq) != cookie || xevb_ld32(mep + XEVB_MEP_HLEN) != m.first_event_id)
		return -1;
	pi->saddr = xevb_cpu_to_be32(xevb_ld32(ip + 12));
	pi->daddr = xevb_cpu_to_be32(xevb_ld32(ip + 16));
	pi->mep_off = m.mep_off;
	pi->mep_len = m.mep_len;
	pi->first_event_id = m.first_event_id;
	pi->is_udp = (m.flags & XEVB_XDP_META_F_UDP) ? 1 : 0;
	pi->consec = 1;
	pi->shed_run = m.reserved; /* with F_VOUCHED only, checked above */
	return XEVB_RES_MEP;
}

/*
 * Once read, a frame's meta must not outlive it: the chunk comes back from
 * the fill ring with the next frame, which may get none. Clearing the check
 * word (a line the reader already holds) leaves nothing to be mistaken.
 */
static inline void xevb_xsk_meta_clear(uint8_t *data)
{
	memset(data - XEVB_XDP_META_LEN, 0, sizeof(uint32_t));
}

#endif /* XEVB_XSK_META_H */

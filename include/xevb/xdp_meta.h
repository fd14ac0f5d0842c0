/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the XDP steering program learned about a MEP, handed to user space
 * in the XDP metadata area: 16 bytes right before the packet data
 * (bpf_xdp_adjust_meta). AF_XDP copy mode copies data_meta..data_end into
 * the UMEM chunk (net/xdp/xsk.c, xsk_copy_xdp), zero-copy mode leaves them
 * where the program wrote them, so user space finds this at data - 16.
 *
 * Written only for a linear MEP whose records are consecutive event ids
 * (pkt_info.consec) on its way to a socket: the builder can then book the
 * MEP as a whole without walking its records (builder.h, frags == NULL).
 *
 * Nothing here is trusted by itself: the 16 bytes before a frame may be
 * left from an earlier frame in the same chunk, or written by a program
 * that is not ours. User space takes them only when check ^ packet_seq of
 * the frame's own MEP header equals the random cookie of this load, and
 * the frame's headers agree with them (xsk_meta.h).
 */
#ifndef XEVB_XDP_META_H
#define XEVB_XDP_META_H

#include <linux/types.h>

#define XEVB_XDP_META_LEN      16
#define XEVB_XDP_META_F_CONSEC 0x01 /* records carry first_event_id, +1, ... */
#define XEVB_XDP_META_F_UDP    0x02 /* UDP transport (else raw IPv4) */
/* The blocks before this MEP's were shed by the program, a far jump to it is ours (shed.h). */
#define XEVB_XDP_META_F_VOUCHED 0x04

struct xevb_xdp_meta {
	/*
	 * cookie ^ packet_seq (host order), the cookie random per program
	 * load: ties the meta to this load and to this MEP, so stale bytes of
	 * an earlier frame in a reused chunk do not pass.
	 */
	__u32 check;
	__u32 first_event_id; /* host order, like every field here */
	__u16 mep_off;        /* MEP header, from the frame start */
	__u16 mep_len;        /* MEP header + records */
	__u16 n_frags;
	__u8 flags;    /* XEVB_XDP_META_F_* */
	__u8 reserved; /* 0 */
};

_Static_assert(sizeof(struct xevb_xdp_meta) == XEVB_XDP_META_LEN, "XDP meta is 16 bytes");
_Static_assert(__builtin_offsetof(struct xevb_xdp_meta, first_event_id) == 4, "meta.first_event_id");
_Static_assert(__builtin_offsetof(struct xevb_xdp_meta, mep_off) == 8, "meta.mep_off");
_Static_assert(__builtin_offsetof(struct xevb_xdp_meta, n_frags) == 12, "meta.n_frags");
_Static_assert(__builtin_offsetof(struct xevb_xdp_meta, flags) == 14, "meta.flags");

#endif /* XEVB_XDP_META_H */

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The verdict the parser reaches for one frame. The value doubles as the
 * index of the XDP program's per-CPU counters, so user space and BPF count
 * with one vocabulary.
 */
#ifndef XEVB_RESULT_H
#define XEVB_RESULT_H

enum xevb_result {
	XEVB_RES_OTHER = 0,   /* not DAQ traffic: the kernel's */
	XEVB_RES_MEP,         /* a valid fragment packet */
	XEVB_RES_IP_FRAGMENT, /* IPv4 fragment of DAQ traffic: kernel reassembles */
	XEVB_RES_MULTIBUF,    /* valid so far, but the MEP spans XDP frags (BPF only) */
	/*
	 * A valid SEGMENT packet (wire format 1.1): one piece of a fragment
	 * larger than a packet. A verdict of its own, not XEVB_RES_MEP: its
	 * record's length is the whole fragment's, not the bytes in this frame,
	 * so code that books MEPs must never take it for one.
	 */
	XEVB_RES_SEGMENT,
	/* malformed, by reason; everything from here on is rejected whole */
	XEVB_RES_TRUNC_IP,  /* frame ends inside the IPv4 header */
	XEVB_RES_BAD_IHL,   /* IHL below 5 */
	XEVB_RES_IP_LEN,    /* total length shorter than the header, or past the frame */
	XEVB_RES_UDP_TRUNC, /* UDP header cut short */
	XEVB_RES_UDP_LEN,   /* UDP length disagrees with the IP payload */
	XEVB_RES_SHORT_MEP, /* fewer than 16 bytes of MEP header */
	XEVB_RES_BAD_MAGIC,
	XEVB_RES_BAD_VERSION,
	XEVB_RES_BAD_FLAGS,     /* unknown flag bit */
	XEVB_RES_BAD_SOURCE,    /* source_id over 4095 */
	XEVB_RES_BAD_NFRAGS,    /* n_frags 0 or over 1024 */
	XEVB_RES_FRAGS_MISSING, /* fewer records than n_frags */
	XEVB_RES_REC_OVERRUN,   /* a record runs past the end */
	XEVB_RES_RESERVED,      /* non-zero reserved field in a record */
	XEVB_RES_EVENT_ORDER,   /* event_ids not strictly increasing */
	XEVB_RES_TRAILING,      /* bytes left over after the last record */
	XEVB_RES_SEG_NFRAGS,    /* SEGMENT with n_frags other than 1 */
	XEVB_RES_SEG_LENGTH,    /* SEGMENT of a 0-byte fragment */
	XEVB_RES_SEG_OFFSET,    /* seg_offset not a multiple of 4, or not below length */
	XEVB_RES_SEG_SIZE,      /* a segment's bytes not a positive multiple of 4 (the last: padding cut short) */
	XEVB_RES_SEG_TRAILING,  /* bytes left over after the last segment's padding */
	XEVB_RES__COUNT
};

#define XEVB_RES_FIRST_MALFORMED XEVB_RES_TRUNC_IP

static inline int xevb_res_is_malformed(unsigned int r)
{
	return r >= XEVB_RES_FIRST_MALFORMED && r < XEVB_RES__COUNT;
}

#endif /* XEVB_RESULT_H */

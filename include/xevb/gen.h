/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Shared by the live-frames generator (bpf/xevb_gen.bpf.c) and its loader. */
#ifndef XEVB_GEN_H
#define XEVB_GEN_H

#include <linux/types.h>

#define XEVB_GEN_MAX_SOURCES 4096
/* `xevb source --dfm --mode live`: MEPs (of every source) one call sends. */
#define XEVB_GEN_MAX_JOBS 4096
/* Event ids of a call's jobs, jobs x records per MEP (a power of 2). */
#define XEVB_GEN_MAX_JOB_EVS 65536
/*
 * Segments (xevb_gen_seg): the fragment's payload the program copies a
 * segment's bytes from, zero past the fragment's end so that a last
 * segment's padding comes with it. Offsets stay below 65536 and a segment
 * (one live frame) below XEVB_GEN_SEG_MAX_TAKE bytes, so every copy stays
 * inside.
 */
#define XEVB_GEN_SEG_MAX_TAKE 4096
#define XEVB_GEN_SEG_PAYLOAD  (65536 + XEVB_GEN_SEG_MAX_TAKE)

/* One emulated source, as the generator stamps it into the template. */
struct xevb_gen_src {
	__u32 saddr; /* network order */
	__u16 source_id;
	__u16 ip_csum; /* whole IPv4 header checksum with this saddr, host order */
};

/*
 * One MEP of every emulated source for the same events, to one builder (a
 * chunk of an ASSIGN block, or of a REQUEST's answer). Its event ids are
 * job_evs[slot x job_recs .. + recs - 1]: a job may hold fewer records than
 * the ring's template (a short block, an answer to a re-ask); the program
 * then trims the frame to them.
 */
struct xevb_gen_job {
	__u32 daddr;   /* network order */
	__u16 ip_csum; /* whole IPv4 header checksum with this daddr and recs, host order */
	__u8 dst_mac[6];
	__u8 flags; /* MEP flags: RESEND for a re-asked answer */
	__u8 pad;
	__u16 recs; /* records in its MEPs: 1 .. job_recs */
};

#endif

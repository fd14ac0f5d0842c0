/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Per-CPU counters of the XDP steering program. Slots 0..XEVB_RES__COUNT-1
 * count the parser's verdicts (enum xevb_result); the slots after them say
 * what became of the valid MEPs.
 */
#ifndef XEVB_XDP_STATS_H
#define XEVB_XDP_STATS_H

#include <linux/types.h>
#include "result.h"

enum xevb_xdp_slot {
	XEVB_XDP_TO_XSK = XEVB_RES__COUNT, /* redirected to an AF_XDP socket */
	XEVB_XDP_NO_XSK,      /* valid, no socket on this queue (pass mode: every MEP not shed): kernel */
	XEVB_XDP_UNKNOWN_SRC, /* valid, source not configured: dropped */
	XEVB_XDP_META_FAIL,   /* to_xsk, but no room for the XDP meta (xdp_meta.h): user space parses */
	XEVB_XDP_SHED,        /* valid, shed whole by event id block (shed.h): dropped */
	/*
	 * Of those, the MEPs of the reference source (the lowest configured
	 * source_id); its frags count the events shed,
	 * exact when every source packs alike.
	 */
	XEVB_XDP_SHED_REF,
	/* valid, its source_id bound to another address (src_bind): dropped */
	XEVB_XDP_SRC_MISMATCH,
	/* valid, from the bound address but another Ethernet source (src_bind): dropped */
	XEVB_XDP_SRC_MAC_MISMATCH,
	/* valid, bound address and MAC but another VLAN, or untagged (src_bind): dropped */
	XEVB_XDP_SRC_VLAN_MISMATCH,
	XEVB_XDP__SLOTS
};

struct xevb_xdp_ctr {
	__u64 packets;
	__u64 bytes;
	__u64 frags; /* fragment records carried (valid MEPs only) */
};

/* Flags in the program's mutable config (xevb_steer.bpf.c: filter_flags). */
#define XEVB_FILTER_SRC_IP   0x1 /* only saddrs in src_ips */
#define XEVB_FILTER_SRC_ID   0x2 /* only source_ids set in src_ids */
#define XEVB_FILTER_SRC_BIND 0x4 /* a source_id bound in src_bind only from its address */

/*
 * The src_bind map's value: what the MEPs of one source_id must come with.
 * The MAC and the VLAN are checked only when their flag is set (known).
 */
#define XEVB_BIND_MAC    0x1
#define XEVB_BIND_VLAN   0x2
#define XEVB_VLAN_ID_MAX 4094

struct xevb_src_bind {
	__u32 addr;  /* IPv4 source address, network order; 0: the id is not bound */
	__u8 mac[6]; /* Ethernet source address (XEVB_BIND_MAC) */
	__u16 vlan;  /* 802.1Q VLAN id, 1..XEVB_VLAN_ID_MAX (XEVB_BIND_VLAN), host order */
	__u8 flags;  /* XEVB_BIND_* */
	__u8 pad[3];
};

#define XEVB_XSKMAP_SIZE 64

#endif /* XEVB_XDP_STATS_H */

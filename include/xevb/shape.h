/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Per-destination shaping (bpf/xevb_shape.bpf.c, user/ops/shape*.c): the
 * maps the tc egress classifier shares with `xevb shape`.
 *
 * A destination is an IPv4 address, optionally narrowed to a protocol and
 * a destination port. Each has a slot (1..XEVB_SHAPE_MAX_DST-1): its HTB
 * class minor and its counter index. Slot 0 counts unmatched traffic.
 */
#ifndef XEVB_SHAPE_H
#define XEVB_SHAPE_H

#include <linux/types.h>

#define XEVB_SHAPE_MAX_DST 1024
/* HTB handle major ("eb:") and the tc filter's handle/priority. */
#define XEVB_SHAPE_MAJOR     0xebu
#define XEVB_SHAPE_TC_HANDLE 0xeb
#define XEVB_SHAPE_TC_PRIO   0xeb
/* Leaf bfifo handles: major LEAF_BASE + slot. */
#define XEVB_SHAPE_LEAF_BASE 0x8000u

enum xevb_shape_mode {
	XEVB_SHAPE_MODE_NONE = 0,
	XEVB_SHAPE_MODE_HTB = 1, /* skb->priority = class; HTB enforces */
	XEVB_SHAPE_MODE_EDT = 2, /* skb->tstamp from a virtual clock; fq enforces */
};

/* Key: daddr, proto and dport network order; proto 0 / dport 0 = any. */
struct xevb_shape_key {
	__u32 daddr;
	__u16 dport;
	__u8 proto;
	__u8 pad;
};

struct xevb_shape_val {
	__u64 vclock_ns; /* EDT: departure time of the next packet (CLOCK_MONOTONIC) */
	__u64 rate_bps;  /* bits/s, L2 frame + overhead */
	__u32 classid;   /* HTB: major:minor */
	__u32 slot;
	__u32 overhead; /* bytes added to every frame (e.g. 24: preamble+FCS+gap) */
	__u32 pad;
};

/* Per-destination (per-CPU) counters, indexed by slot. */
struct xevb_shape_cnt {
	__u64 packets;
	__u64 bytes;
	__u64 drop_horizon; /* EDT: departure beyond the horizon */
};

/* Drop and pass reasons (per-CPU array). */
enum xevb_shape_why {
	XEVB_SHAPE_W_MATCHED,
	XEVB_SHAPE_W_UNMATCHED, /* IPv4 with no rule: default (unlimited) */
	XEVB_SHAPE_W_NOT_IPV4,  /* passed unclassified */
	XEVB_SHAPE_W_TRUNCATED, /* IPv4 header not in the linear data: passed */
	XEVB_SHAPE_W_HORIZON,   /* dropped: EDT horizon */
	XEVB_SHAPE_W_BAD_SLOT,  /* map value out of range: passed */
	XEVB_SHAPE_W_NO_CFG,    /* program not configured: passed */
	XEVB_SHAPE_W__N,
};

/* Configuration and teardown state (one-entry array). */
struct xevb_shape_cfg {
	__u32 mode;            /* enum xevb_shape_mode */
	__u32 default_classid; /* HTB: unmatched packets (the qdisc's direct queue) */
	__u32 n_specific;      /* rules with proto or port: 0 skips those lookups */
	__u32 ifindex;
	__u64 horizon_ns;     /* EDT */
	__u32 created_clsact; /* teardown removes clsact only if we made it */
	__u32 created_root;   /* the root qdisc (htb eb: or fq) is ours */
	__u32 prog_id;
	__u32 pad;
};

#endif

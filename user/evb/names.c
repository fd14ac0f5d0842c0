// SPDX-License-Identifier: GPL-2.0-only
#include "evb/builder.h"
#include "evb/names.h"
#include <xevb/xdp_stats.h>

/* table[i], or "invalid" past its end or in a hole. */
static const char *name_in(const char *const *table, unsigned int n, unsigned int i)
{
	return i < n && table[i] ? table[i] : "invalid";
}

static const char *const names[XEVB_XDP__SLOTS] = {
	[XEVB_RES_OTHER] = "other",
	[XEVB_RES_MEP] = "mep",
	[XEVB_RES_IP_FRAGMENT] = "ip_fragment",
	[XEVB_RES_MULTIBUF] = "multibuf_to_kernel",
	[XEVB_RES_SEGMENT] = "segment",
	[XEVB_RES_TRUNC_IP] = "malformed_trunc_ip",
	[XEVB_RES_BAD_IHL] = "malformed_bad_ihl",
	[XEVB_RES_IP_LEN] = "malformed_ip_len",
	[XEVB_RES_UDP_TRUNC] = "malformed_udp_trunc",
	[XEVB_RES_UDP_LEN] = "malformed_udp_len",
	[XEVB_RES_SHORT_MEP] = "malformed_short_mep",
	[XEVB_RES_BAD_MAGIC] = "malformed_bad_magic",
	[XEVB_RES_BAD_VERSION] = "malformed_bad_version",
	[XEVB_RES_BAD_FLAGS] = "malformed_bad_flags",
	[XEVB_RES_BAD_SOURCE] = "malformed_bad_source",
	[XEVB_RES_BAD_NFRAGS] = "malformed_bad_nfrags",
	[XEVB_RES_FRAGS_MISSING] = "malformed_frags_missing",
	[XEVB_RES_REC_OVERRUN] = "malformed_rec_overrun",
	[XEVB_RES_RESERVED] = "malformed_reserved",
	[XEVB_RES_EVENT_ORDER] = "malformed_event_order",
	[XEVB_RES_TRAILING] = "malformed_trailing",
	[XEVB_RES_SEG_NFRAGS] = "malformed_segment_nfrags",
	[XEVB_RES_SEG_LENGTH] = "malformed_segment_length",
	[XEVB_RES_SEG_OFFSET] = "malformed_segment_offset",
	[XEVB_RES_SEG_SIZE] = "malformed_segment_size",
	[XEVB_RES_SEG_TRAILING] = "malformed_segment_trailing",
	[XEVB_XDP_TO_XSK] = "to_xsk",
	[XEVB_XDP_NO_XSK] = "no_xsk_to_kernel",
	[XEVB_XDP_UNKNOWN_SRC] = "unknown_source",
	[XEVB_XDP_META_FAIL] = "meta_failed",
	[XEVB_XDP_SHED] = "shed",
	[XEVB_XDP_SHED_REF] = "shed_ref_source",
	[XEVB_XDP_SRC_MISMATCH] = "src_addr_mismatch",
	[XEVB_XDP_SRC_MAC_MISMATCH] = "src_mac_mismatch",
	[XEVB_XDP_SRC_VLAN_MISMATCH] = "src_vlan_mismatch",
};

const char *xevb_slot_name(unsigned int slot)
{
	return name_in(names, XEVB_XDP__SLOTS, slot);
}

static const char *const drop_names[XEVB_DROP__COUNT] = {
	[XEVB_DROP_DUPLICATE] = "duplicate",
	[XEVB_DROP_LATE] = "late",
	[XEVB_DROP_UNKNOWN_SOURCE] = "unknown_source",
	[XEVB_DROP_WRONG_RUN] = "wrong_run",
	[XEVB_DROP_OVERFLOW] = "overflow",
	[XEVB_DROP_FUTURE] = "future",
	[XEVB_DROP_PARTIAL] = "partial",
	[XEVB_DROP_UNASSIGNED] = "unassigned",
};

const char *xevb_drop_reason_name(unsigned int r)
{
	return name_in(drop_names, XEVB_DROP__COUNT, r);
}

static const char *const seg_names[XEVB_SEG__COUNT] = {
	[XEVB_SEG_DUPLICATE] = "duplicate",
	[XEVB_SEG_MISMATCHED] = "mismatched",
	[XEVB_SEG_FRAG_DROPPED] = "fragment_dropped",
	[XEVB_SEG_PARTIAL] = "partial",
	[XEVB_SEG_TOO_MANY] = "too_many",
};

const char *xevb_seg_reason_name(unsigned int r)
{
	return name_in(seg_names, XEVB_SEG__COUNT, r);
}

// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "pkt_info_assert.h"

#define SAME(type, field) cr_assert(eq(type, got->field, want->field), "%s: " #field, what)

void pi_assert_same_header(const struct xevb_pkt_info *got, const struct xevb_pkt_info *want, const char *what)
{
	SAME(u16, source_id);
	SAME(u16, n_frags);
	SAME(u32, run_number);
	SAME(u32, packet_seq);
	SAME(u32, first_event_id);
	SAME(u8, flags);
}

void pi_assert_same_mep(const struct xevb_pkt_info *got, const struct xevb_pkt_info *want, const char *what)
{
	SAME(u32, saddr);
	SAME(u32, daddr);
	SAME(u16, mep_off);
	SAME(u16, mep_len);
	SAME(u8, is_udp);
	pi_assert_same_header(got, want, what);
}

void pi_assert_same_segment(const struct xevb_pkt_info *got, const struct xevb_pkt_info *want, const char *what)
{
	SAME(u16, source_id);
	SAME(u32, first_event_id);
	SAME(u16, seg_offset);
	SAME(u16, seg_bytes);
	SAME(u16, frag_length);
	SAME(u8, seg_last);
}

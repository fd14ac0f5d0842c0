/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Two parses of one frame (struct xevb_pkt_info, mep_parse.h) compared field
 * by field: the parser against the frags walker, the AF_XDP meta reader or
 * the XDP program. A difference fails the test naming what and the field.
 */
#ifndef XEVB_TEST_PKT_INFO_ASSERT_H
#define XEVB_TEST_PKT_INFO_ASSERT_H

#include <xevb/mep_parse.h>

/* The MEP header: source_id, n_frags, run_number, packet_seq, first_event_id, flags. */
void pi_assert_same_header(const struct xevb_pkt_info *got, const struct xevb_pkt_info *want, const char *what);
/* The header and where the MEP lies: addresses, mep_off, mep_len, is_udp. */
void pi_assert_same_mep(const struct xevb_pkt_info *got, const struct xevb_pkt_info *want, const char *what);
/* A SEGMENT packet's: source_id, first_event_id, seg_offset, seg_bytes, frag_length, seg_last. */
void pi_assert_same_segment(const struct xevb_pkt_info *got, const struct xevb_pkt_info *want, const char *what);

#endif

// SPDX-License-Identifier: GPL-2.0-only
/* The user-space parser against every wire-format vector. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "wire/crc32c.h"
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"
#include "evb/names.h"
#include "../common/vectors.h"

TestSuite(parser, .init = vectors_setup, .fini = vectors_teardown, .timeout = 10);

static const struct xevb_parse_cfg default_cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

static int classify(const struct vector *v, const struct xevb_parse_cfg *cfg, struct xevb_pkt_info *pi,
		    struct xevb_frag_ref *frags)
{
	return xevb_classify(v->frame, v->frame + v->len, (uint32_t)v->len, cfg, pi, frags);
}

/* A segment vector: its fields, and its bytes where the parser says. */
static void check_segment(const struct vector *v, int res, const struct xevb_pkt_info *pi,
			  const struct xevb_frag_ref *frags)
{
	const struct vec_frag *w = &v->frags[0];

	cr_assert(eq(int, res, XEVB_RES_SEGMENT), "%s: got %s", v->name, xevb_slot_name(res));
	cr_assert(eq(uint, v->n_frags, 1), "%s: index lists one segment", v->name);
	cr_assert(eq(uint, pi->n_frags, 1), "%s: n_frags", v->name);
	cr_assert(ne(u8, pi->flags & XEVB_MEP_F_SEGMENT, 0), "%s: flags", v->name);
	cr_assert(eq(u8, pi->consec, 0), "%s: no XDP meta for segments", v->name);
	cr_assert(eq(u32, pi->first_event_id, w->event_id), "%s: event_id", v->name);
	cr_assert(eq(u16, pi->source_id, w->source_id), "%s: source_id", v->name);
	cr_assert(eq(u16, pi->frag_length, w->length), "%s: length", v->name);
	cr_assert(eq(u16, pi->seg_offset, w->seg_offset), "%s: seg_offset", v->name);
	cr_assert(eq(u16, pi->seg_bytes, w->seg_bytes), "%s: seg_bytes", v->name);
	cr_assert(eq(u8, pi->seg_last, w->seg_offset + w->seg_bytes == w->length), "%s: last", v->name);
	cr_assert(eq(u32, frags[0].event_id, w->event_id), "%s: ref event_id", v->name);
	cr_assert(eq(u32, frags[0].crc32c, w->crc32c), "%s: ref crc32c", v->name);
	cr_assert(eq(u16, frags[0].length, w->seg_bytes), "%s: ref length = the segment's bytes", v->name);
	cr_assert(le(sz, (size_t)frags[0].payload_off + frags[0].length, v->len), "%s: in frame", v->name);
}

/* The three segments of fragment 500 joined in offset order: the CRC in each. */
Test(parser, segments_join_to_the_fragment)
{
	static const char *const parts[] = { "seg_middle", "seg_last", "seg_first" };
	uint8_t whole[3001];
	uint32_t crc = 0, covered = 0, lasts = 0;

	for (size_t p = 0; p < 3; p++)
		for (size_t i = 0; i < nvecs; i++) {
			struct xevb_frag_ref fr[1];
			struct xevb_pkt_info pi = { 0 };

			if (strcmp(vecs[i].name, parts[p]))
				continue;
			cr_assert(eq(int, classify(&vecs[i], &default_cfg, &pi, fr), XEVB_RES_SEGMENT), "%s",
				  parts[p]);
			cr_assert(eq(u16, pi.frag_length, sizeof(whole)));
			cr_assert(le(uint, pi.seg_offset + pi.seg_bytes, sizeof(whole)));
			memcpy(whole + pi.seg_offset, vecs[i].frame + fr[0].payload_off, pi.seg_bytes);
			covered += pi.seg_bytes;
			lasts += pi.seg_last;
			crc = fr[0].crc32c;
		}
	cr_assert(eq(u32, covered, sizeof(whole)), "the three segments cover the fragment once");
	cr_assert(eq(u32, lasts, 1));
	cr_assert(eq(u32, xevb_crc32c(0, whole, sizeof(whole)), crc));
}

Test(parser, every_vector_gets_its_verdict)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];

	cr_assert(gt(sz, nvecs, 30), "expected the full vector set");
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];
		struct xevb_pkt_info pi = { 0 };
		int res = classify(v, &default_cfg, &pi, frags);

		switch (v->verdict) {
		case VEC_MEP:
			cr_assert(eq(int, res, XEVB_RES_MEP), "%s: got %s", v->name, xevb_slot_name(res));
			cr_assert(eq(uint, pi.n_frags, v->n_frags), "%s: n_frags", v->name);
			for (unsigned k = 0; k < v->n_frags; k++) {
				const struct xevb_frag_ref *f = &frags[k];
				cr_assert(eq(u32, f->event_id, v->frags[k].event_id), "%s[%u] event_id", v->name,
					  k);
				cr_assert(eq(u16, pi.source_id, v->frags[k].source_id), "%s[%u] source_id",
					  v->name, k);
				cr_assert(eq(u16, f->length, v->frags[k].length), "%s[%u] length", v->name, k);
				cr_assert(eq(u32, f->crc32c, v->frags[k].crc32c), "%s[%u] crc", v->name, k);
				cr_assert(le(sz, (size_t)f->payload_off + f->length, v->len), "%s[%u] in frame",
					  v->name, k);
				/* The payload is where the parser says: its CRC matches. */
				cr_assert(eq(u32, xevb_crc32c(0, v->frame + f->payload_off, f->length),
					     v->frags[k].crc32c),
					  "%s[%u] payload crc", v->name, k);
			}
			break;
		case VEC_SEGMENT:
			check_segment(v, res, &pi, frags);
			break;
		case VEC_MALFORMED:
			cr_assert(xevb_res_is_malformed(res), "%s: got %s", v->name, xevb_slot_name(res));
			break;
		case VEC_IP_FRAGMENT:
			cr_assert(eq(int, res, XEVB_RES_IP_FRAGMENT), "%s: got %s", v->name, xevb_slot_name(res));
			break;
		case VEC_OTHER:
			cr_assert(eq(int, res, XEVB_RES_OTHER), "%s: got %s", v->name, xevb_slot_name(res));
			break;
		}
	}
}

/* Each malformed vector fails for the reason its description names. */
Test(parser, malformed_reasons)
{
	static const struct {
		const char *name;
		int res;
	} want[] = {
		{ "bad_magic", XEVB_RES_BAD_MAGIC },
		{ "bad_version", XEVB_RES_BAD_VERSION },
		{ "bad_flag", XEVB_RES_BAD_FLAGS },
		{ "zero_frags", XEVB_RES_BAD_NFRAGS },
		{ "too_many_frags", XEVB_RES_BAD_NFRAGS },
		{ "frags_missing", XEVB_RES_FRAGS_MISSING },
		{ "record_overrun", XEVB_RES_REC_OVERRUN },
		{ "trailing_bytes", XEVB_RES_TRAILING },
		{ "reserved_nonzero", XEVB_RES_RESERVED },
		{ "event_order", XEVB_RES_EVENT_ORDER },
		{ "source_too_big", XEVB_RES_BAD_SOURCE },
		{ "short_mep_header", XEVB_RES_SHORT_MEP },
		{ "ip_len_past_frame", XEVB_RES_IP_LEN },
		{ "ip_len_short", XEVB_RES_REC_OVERRUN },
		{ "ihl_below_5", XEVB_RES_BAD_IHL },
		{ "truncated_ip", XEVB_RES_TRUNC_IP },
		{ "udp_len_mismatch", XEVB_RES_UDP_LEN },
		{ "seg_two_records", XEVB_RES_SEG_NFRAGS },
		{ "seg_zero_length", XEVB_RES_SEG_LENGTH },
		{ "seg_offset_unaligned", XEVB_RES_SEG_OFFSET },
		{ "seg_offset_past_end", XEVB_RES_SEG_OFFSET },
		{ "seg_middle_unaligned", XEVB_RES_SEG_SIZE },
		{ "seg_last_extra", XEVB_RES_SEG_TRAILING },
	};
	unsigned found = 0;

	for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++)
		for (size_t i = 0; i < nvecs; i++) {
			struct xevb_pkt_info pi = { 0 };
			if (strcmp(vecs[i].name, want[w].name))
				continue;
			found++;
			int res = classify(&vecs[i], &default_cfg, &pi, NULL);
			cr_expect(eq(str, (char *)xevb_slot_name(res), (char *)xevb_slot_name(want[w].res)), "%s",
				  want[w].name);
		}
	cr_assert(eq(uint, found, sizeof(want) / sizeof(want[0])));
}

Test(parser, mep_header_fields)
{
	for (size_t i = 0; i < nvecs; i++) {
		struct xevb_pkt_info pi = { 0 };
		if (strcmp(vecs[i].name, "raw_resend_eor"))
			continue;
		cr_assert(eq(int, classify(&vecs[i], &default_cfg, &pi, NULL), XEVB_RES_MEP));
		cr_assert(eq(u8, pi.flags, XEVB_MEP_F_RESEND | XEVB_MEP_F_END_OF_RUN));
		cr_assert(eq(u32, pi.run_number, 1042));
		cr_assert(eq(u8, pi.is_udp, 0));
		return;
	}
	cr_fail("raw_resend_eor missing");
}

/* Transports are configurable: with other settings the same frames are not ours. */
Test(parser, transport_settings)
{
	const struct xevb_parse_cfg udp_only = { .udp_port = XEVB_DEFAULT_UDP_PORT, .ip_proto = 0 };
	const struct xevb_parse_cfg raw_254 = { .udp_port = 0, .ip_proto = 254 };
	const struct xevb_parse_cfg udp_53 = { .udp_port = 53, .ip_proto = 0 };

	for (size_t i = 0; i < nvecs; i++) {
		struct xevb_pkt_info pi = { 0 };
		const struct vector *v = &vecs[i];
		if (!strcmp(v->name, "raw_single")) {
			cr_assert(eq(int, classify(v, &udp_only, &pi, NULL), XEVB_RES_OTHER));
			cr_assert(eq(int, classify(v, &raw_254, &pi, NULL), XEVB_RES_OTHER));
		}
		if (!strcmp(v->name, "udp_pack4x200")) {
			cr_assert(eq(int, classify(v, &udp_only, &pi, NULL), XEVB_RES_MEP));
			cr_assert(eq(u8, pi.is_udp, 1));
			cr_assert(eq(int, classify(v, &raw_254, &pi, NULL), XEVB_RES_OTHER));
		}
		/* The vector carries a well-formed MEP to port 53: configure 53 and it is ours. */
		if (!strcmp(v->name, "other_udp_port"))
			cr_assert(eq(int, classify(v, &udp_53, &pi, NULL), XEVB_RES_MEP));
	}
}

/* Every prefix of every vector: never a read past the end, never MEP unless whole. */
Test(parser, truncations_are_never_valid)
{
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];
		for (size_t cut = 0; cut < v->len; cut++) {
			struct xevb_pkt_info pi = { 0 };
			uint8_t *copy = malloc(cut ? cut : 1);
			memcpy(copy, v->frame, cut);
			int res = xevb_classify(copy, copy + cut, (uint32_t)cut, &default_cfg, &pi, NULL);
			/* Ethernet padding may be cut away without harm, nothing else. */
			if (res == XEVB_RES_MEP)
				cr_assert(eq(int, v->verdict, VEC_MEP), "%s cut at %zu", v->name, cut);
			if (res == XEVB_RES_SEGMENT)
				cr_assert(eq(int, v->verdict, VEC_SEGMENT), "%s cut at %zu", v->name, cut);
			free(copy);
		}
	}
}

/*
 * Frames over 64 KiB (IPv4 datagrams the kernel reassembled, with the
 * socket path's synthetic Ethernet header): a record near the front is
 * found; one whose payload starts past 64 KiB has no 16-bit payload_off
 * and is refused, never referenced at a wrapped offset.
 */
Test(parser, reassembled_frames_over_64k)
{
	static uint8_t frame[65600];
	static const uint16_t one[] = { 65476 }, two[] = { 65460, 4 };
	struct xevb_mep_params p = {
		.saddr = 0x010012c6,
		.daddr = 0x010212c6,
		.udp_dport = XEVB_DEFAULT_UDP_PORT,
		.source_id = 3,
		.run_number = 1,
		.first_event_id = 100,
		.n_frags = 1,
		.frag_len = one,
	};
	struct xevb_frag_ref frags[2];
	struct xevb_pkt_info pi = { 0 };
	ssize_t len = xevb_write_frame(frame, sizeof(frame), &p);

	cr_assert(eq(sz, (size_t)len, 14 + 20 + 8 + 16 + 12 + 65476));
	cr_assert(
		eq(int, xevb_classify(frame, frame + len, (uint32_t)len, &default_cfg, &pi, frags), XEVB_RES_MEP));
	cr_assert(eq(u16, frags[0].payload_off, 14 + 20 + 8 + 16 + 12));
	cr_assert(eq(u16, frags[0].length, 65476));

	/* The largest MEP a UDP datagram holds, its second record's payload at 65542. */
	p.n_frags = 2;
	p.frag_len = two;
	len = xevb_write_frame(frame, sizeof(frame), &p);
	cr_assert(eq(sz, (size_t)len, 14 + 20 + 8 + 16 + 12 + 65460 + 12 + 4));
	cr_assert(eq(int, xevb_classify(frame, frame + len, (uint32_t)len, &default_cfg, &pi, frags),
		     XEVB_RES_REC_OVERRUN));
}

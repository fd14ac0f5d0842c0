/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What must hold for any frame the parser is given: shared by the libFuzzer
 * harness (which traps on a violation) and the regression replay test.
 */
#ifndef XEVB_TEST_PARSE_CHECK_H
#define XEVB_TEST_PARSE_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <xevb/mep_parse_ld.h>

static const struct xevb_parse_cfg parse_check_cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

/* A valid segment: every rule of wire-format 1.1, its bytes inside the frame. */
static inline const char *segment_check(const struct xevb_pkt_info *pi, const struct xevb_pkt_info *pi2,
					const struct xevb_frag_ref *frags, size_t size)
{
	const struct xevb_frag_ref *f = &frags[0];
	size_t mep_end = (size_t)pi->mep_off + pi->mep_len;

	if (!(pi->flags & XEVB_MEP_F_SEGMENT) || pi->n_frags != 1)
		return "segment without the flag or with n_frags other than 1";
	if (pi2->seg_offset != pi->seg_offset || pi2->seg_bytes != pi->seg_bytes ||
	    pi2->frag_length != pi->frag_length || pi2->seg_last != pi->seg_last)
		return "segment fields differ between the two runs";
	if (pi->frag_length == 0 || (pi->seg_offset & 3) || pi->seg_offset >= pi->frag_length)
		return "segment length or offset accepted against the rules";
	if ((uint32_t)pi->seg_offset + pi->seg_bytes > pi->frag_length || pi->seg_bytes == 0)
		return "segment bytes outside its fragment";
	if (pi->seg_last != ((uint32_t)pi->seg_offset + pi->seg_bytes == pi->frag_length))
		return "last-segment flag wrong";
	if (!pi->seg_last && (pi->seg_bytes & 3))
		return "non-last segment not a multiple of 4";
	if (f->length != pi->seg_bytes || f->event_id != pi->first_event_id)
		return "segment reference disagrees with the packet info";
	if (f->payload_off != pi->mep_off + XEVB_MEP_HLEN + XEVB_REC_HLEN)
		return "segment bytes not right after the record header";
	if ((size_t)f->payload_off + f->length > size || (size_t)f->payload_off + XEVB_PAD4(f->length) != mep_end)
		return "segment does not fill its packet exactly";
	return NULL;
}

/*
 * Classifies frame twice (without and with fragment output) and checks the
 * verdict and, for a MEP, every fragment reference. Returns NULL or what
 * broke. *verdict receives the verdict.
 */
static inline const char *parse_check(const uint8_t *frame, size_t size, int *verdict)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_pkt_info pi = { 0 }, pi2 = { 0 };
	const uint8_t *end = frame + size;
	uint32_t len = (uint32_t)size;
	size_t mep_end;
	int res, res2;

	*verdict = -1;
	if (size > XEVB_MAX_IP_PAYLOAD + 64)
		return NULL; /* longer than any Ethernet frame: not the parser's input */
	res = xevb_classify(frame, end, len, &parse_check_cfg, &pi, NULL);
	res2 = xevb_classify(frame, end, len, &parse_check_cfg, &pi2, frags);
	*verdict = res;
	if (res != res2)
		return "verdict depends on whether fragments are output";
	if (res < 0 || res >= XEVB_RES__COUNT)
		return "verdict out of range";
	if (res == XEVB_RES_MULTIBUF)
		return "multibuf outside BPF (the whole frame was given)";
	/* The XDP program's frags walker must agree wherever the MEP was reached. */
	if (res == XEVB_RES_MEP || res == XEVB_RES_SEGMENT || res >= XEVB_RES_SHORT_MEP) {
		struct xevb_ld_buf lb = { frame, len };
		struct xevb_pkt_info pw = { 0 };

		if (xevb_mep_parse_ld(&lb, pi.mep_off, pi.mep_len, &pw) != res)
			return "the multi-buffer walker disagrees with the parser";
		if (res == XEVB_RES_MEP && (pw.n_frags != pi.n_frags || pw.source_id != pi.source_id ||
					    pw.first_event_id != pi.first_event_id))
			return "the multi-buffer walker read other header fields";
		if (res == XEVB_RES_SEGMENT &&
		    (pw.source_id != pi.source_id || pw.first_event_id != pi.first_event_id ||
		     pw.seg_offset != pi.seg_offset || pw.seg_bytes != pi.seg_bytes ||
		     pw.frag_length != pi.frag_length || pw.seg_last != pi.seg_last))
			return "the multi-buffer walker read other segment fields";
	}
	if (res == XEVB_RES_SEGMENT)
		return segment_check(&pi, &pi2, frags, size);
	if (res != XEVB_RES_MEP)
		return NULL;

	if (pi.n_frags < 1 || pi.n_frags > XEVB_MAX_FRAGS_PER_MEP)
		return "n_frags outside 1..1024";
	if (pi2.n_frags != pi.n_frags || pi2.source_id != pi.source_id)
		return "header fields differ between the two runs";
	if (pi.source_id > XEVB_MAX_SOURCE_ID)
		return "source_id over 4095";
	if (pi.flags & ~XEVB_MEP_F_KNOWN)
		return "unknown flag accepted";
	mep_end = (size_t)pi.mep_off + pi.mep_len;
	if (pi.mep_off < XEVB_ETH_HLEN + 20 || mep_end > size ||
	    pi.mep_len < XEVB_MEP_HLEN + XEVB_REC_HLEN * (size_t)pi.n_frags)
		return "MEP bounds outside the frame or too short for its records";
	for (unsigned i = 0; i < pi.n_frags; i++) {
		const struct xevb_frag_ref *f = &frags[i];
		size_t lo = i ? (size_t)frags[i - 1].payload_off + XEVB_PAD4(frags[i - 1].length) + XEVB_REC_HLEN :
				(size_t)pi.mep_off + XEVB_MEP_HLEN + XEVB_REC_HLEN;

		if ((size_t)f->payload_off + f->length > size)
			return "fragment runs past the frame";
		if ((size_t)f->payload_off + XEVB_PAD4(f->length) > mep_end)
			return "fragment runs past the MEP";
		/* Records follow each other exactly: offsets strictly increase. */
		if (f->payload_off != lo)
			return "fragment payload not right after its record header";
		if (i == 0 && f->event_id != pi.first_event_id)
			return "first_event_id differs from the first record";
		if (i > 0 && !xevb_seq_after(f->event_id, frags[i - 1].event_id))
			return "event ids not increasing";
	}
	if ((size_t)frags[pi.n_frags - 1].payload_off + XEVB_PAD4(frags[pi.n_frags - 1].length) != mep_end)
		return "records do not end where the MEP ends";
	return NULL;
}

#endif

// SPDX-License-Identifier: GPL-2.0-only
/* The MEP writer: its frames parse as written and match the spec vectors. */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"
#include "evb/names.h"
#include "../common/vectors.h"

TestSuite(mep_write, .init = vectors_setup, .fini = vectors_teardown, .timeout = 10);

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

static uint8_t buf[70000];
static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];

static struct xevb_mep_params base_params(void)
{
	struct xevb_mep_params p = vectors_params();

	p.source_id = 17;
	p.packet_seq = 99;
	p.first_event_id = 5000;
	p.n_frags = 25;
	p.frag_size = 32;
	return p;
}

/* Checks the parse of a written frame against the parameters. */
static void expect_mep(const uint8_t *f, size_t len, const struct xevb_mep_params *p)
{
	struct xevb_pkt_info pi = { 0 };
	int res = xevb_classify(f, f + len, (uint32_t)len, &cfg, &pi, frags);

	cr_assert(eq(int, res, XEVB_RES_MEP), "verdict %s", xevb_slot_name(res));
	cr_assert(eq(u16, pi.source_id, p->source_id));
	cr_assert(eq(u16, pi.n_frags, (uint16_t)p->n_frags));
	cr_assert(eq(u32, pi.run_number, p->run_number));
	cr_assert(eq(u32, pi.packet_seq, p->packet_seq));
	cr_assert(eq(u8, pi.flags, p->flags));
	cr_assert(eq(u8, pi.is_udp, p->udp_dport != 0));
	cr_assert(eq(u32, pi.saddr, p->saddr));
	cr_assert(eq(u32, pi.daddr, p->daddr));
	for (uint32_t j = 0; j < p->n_frags; j++) {
		uint16_t want = p->frag_len ? p->frag_len[j] : p->frag_size;
		cr_assert(eq(u32, frags[j].event_id, p->first_event_id + j), "record %u", j);
		cr_assert(eq(u16, frags[j].length, want), "record %u", j);
		cr_assert(eq(sz, xevb_emu_check(f + frags[j].payload_off, want), (size_t)want),
			  "record %u content", j);
		cr_assert(eq(u32, frags[j].crc32c, xevb_crc32c(0, f + frags[j].payload_off, want)),
			  "record %u crc", j);
	}
	/* IPv4: DF set, header checksum verifies to zero. */
	cr_assert(eq(u16, xevb_ld16(f + 14 + 6), 0x4000));
	cr_assert(eq(u16, xevb_ip_csum(f + 14, 20), 0));
	cr_assert(eq(u16, xevb_ld16(f + 14 + 2), (uint16_t)(len - 14)));
}

Test(mep_write, raw_frame_parses_with_exact_fragments)
{
	struct xevb_mep_params p = base_params();
	ssize_t n = xevb_write_frame(buf, sizeof(buf), &p);

	cr_assert(eq(sz, (size_t)n, 14 + 20 + 16 + 25 * (12 + 32)));
	cr_assert(eq(sz, (size_t)n, xevb_frame_len(&p)));
	expect_mep(buf, (size_t)n, &p);
	cr_assert(eq(u8, buf[14 + 9], 253));
}

Test(mep_write, udp_frame_parses_and_udp_length_is_right)
{
	struct xevb_mep_params p = base_params();
	p.udp_dport = XEVB_DEFAULT_UDP_PORT;
	p.n_frags = 4;
	p.frag_size = 200;
	p.flags = XEVB_MEP_F_END_OF_RUN;
	ssize_t n = xevb_write_frame(buf, sizeof(buf), &p);

	cr_assert(gt(sz, (size_t)n, 0));
	expect_mep(buf, (size_t)n, &p);
	cr_assert(eq(u8, buf[14 + 9], 17));
	cr_assert(eq(u16, xevb_ld16(buf + 34 + 4), (uint16_t)(n - 34)));
	cr_assert(eq(u16, xevb_ld16(buf + 34), XEVB_DEFAULT_UDP_PORT));
}

Test(mep_write, odd_lengths_are_padded_and_parse)
{
	static const uint16_t lens[] = { 0, 1, 2, 3, 4, 5, 1021, 0, 7 };
	struct xevb_mep_params p = base_params();
	p.frag_len = lens;
	p.n_frags = sizeof(lens) / sizeof(lens[0]);
	p.first_event_id = 0xfffffffc; /* wraps inside the packet */
	memset(buf, 0xee, sizeof(buf));
	ssize_t n = xevb_write_frame(buf, sizeof(buf), &p);

	cr_assert(gt(sz, (size_t)n, 0));
	expect_mep(buf, (size_t)n, &p);
	/* padding bytes are zero */
	for (uint32_t j = 0; j < p.n_frags; j++)
		for (uint32_t k = lens[j]; k < XEVB_PAD4((uint32_t)lens[j]); k++)
			cr_assert(eq(u8, buf[frags[j].payload_off + k], 0), "pad of record %u", j);
	cr_assert(eq(u8, buf[n], 0xee), "nothing written past the end");
}

Test(mep_write, ip_and_mep_variants_are_the_frame_tail)
{
	static uint8_t b2[4096];
	struct xevb_mep_params p = base_params();
	ssize_t n = xevb_write_frame(buf, sizeof(buf), &p);
	ssize_t ni = xevb_write_ip(b2, sizeof(b2), &p);

	cr_assert(eq(sz, (size_t)ni, (size_t)n - 14));
	cr_assert(eq(int, memcmp(b2, buf + 14, (size_t)ni), 0));
	ssize_t nm = xevb_write_mep(b2, sizeof(b2), &p);
	cr_assert(eq(sz, (size_t)nm, (size_t)n - 34));
	cr_assert(eq(sz, (size_t)nm, xevb_mep_len(&p)));
	cr_assert(eq(int, memcmp(b2, buf + 34, (size_t)nm), 0));
	cr_assert(eq(u16, xevb_ld16(b2), XEVB_MEP_MAGIC));
}

Test(mep_write, bad_parameters_and_short_buffers_fail)
{
	struct xevb_mep_params p = base_params();

	p.n_frags = 0;
	errno = 0;
	cr_assert(eq(sz, (size_t)xevb_write_frame(buf, sizeof(buf), &p), (size_t)-1));
	cr_assert(eq(int, errno, EINVAL));
	p.n_frags = 1025;
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = base_params();
	p.source_id = 4096;
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = base_params();
	p.flags = 0x08; /* bit 3: unknown (bit 2 is SEGMENT since 1.1) */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = base_params();
	p.n_frags = 1024;
	p.frag_size = 64; /* 77 kB: more than an IPv4 datagram */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = base_params();
	memset(buf, 0xee, sizeof(buf));
	errno = 0;
	cr_assert(eq(sz, (size_t)xevb_write_frame(buf, 100, &p), (size_t)-1));
	cr_assert(eq(int, errno, EMSGSIZE));
	cr_assert(eq(u8, buf[100], 0xee));
}

/*
 * Rebuild a spec vector from the parameters read out of it (addresses,
 * ids, lengths, and its payload bytes, which are not the emulator's) and
 * compare byte for byte: the writer lays out exactly what the spec says,
 * including the CRCs it computes itself.
 */
static void reproduce(const char *name)
{
	static const uint8_t *pl[XEVB_MAX_FRAGS_PER_MEP];
	static uint16_t lens[XEVB_MAX_FRAGS_PER_MEP];
	const struct vector *v = vectors_find(name);
	const uint8_t *f = v->frame, *ip = f + 14;
	struct xevb_pkt_info pi = { 0 };
	struct xevb_mep_params p = { 0 };
	int res = xevb_classify(f, f + v->len, (uint32_t)v->len, &cfg, &pi, frags);

	cr_assert(eq(int, res, XEVB_RES_MEP), "%s", name);
	cr_assert(eq(u8, ip[0], 0x45), "%s: plain IPv4 header", name);
	memcpy(p.dst_mac, f, 6);
	memcpy(p.src_mac, f + 6, 6);
	p.saddr = pi.saddr;
	p.daddr = pi.daddr;
	p.ip_id = xevb_ld16(ip + 4);
	p.ttl = ip[8];
	if (pi.is_udp) {
		p.udp_dport = xevb_ld16(ip + 22);
		p.udp_sport = xevb_ld16(ip + 20);
	} else {
		p.ip_proto = ip[9];
	}
	p.source_id = pi.source_id;
	p.flags = pi.flags;
	p.run_number = pi.run_number;
	p.packet_seq = pi.packet_seq;
	p.first_event_id = pi.first_event_id;
	p.n_frags = pi.n_frags;
	for (unsigned j = 0; j < pi.n_frags; j++) {
		lens[j] = frags[j].length;
		pl[j] = f + frags[j].payload_off;
		cr_assert(eq(u32, frags[j].event_id, p.first_event_id + j), "%s: consecutive ids", name);
	}
	p.frag_len = lens;
	p.payload = pl;

	memset(buf, 0xee, sizeof(buf));
	ssize_t n = xevb_write_frame(buf, sizeof(buf), &p);
	size_t iplen = 14u + xevb_ld16(ip + 2);
	cr_assert(eq(sz, (size_t)n, iplen), "%s: length", name);
	for (size_t i = 0; i < iplen; i++)
		cr_assert(eq(u8, buf[i], f[i]), "%s: byte %zu", name, i);
	/* and the CRCs it computed are the ones index.tsv lists */
	for (unsigned j = 0; j < v->n_frags; j++)
		cr_assert(eq(u32, xevb_ld32(buf + frags[j].payload_off - 4), v->frags[j].crc32c), "%s: crc %u",
			  name, j);
}

Test(mep_write, reproduces_raw_single)
{
	reproduce("raw_single");
}
Test(mep_write, reproduces_raw_pack25x32)
{
	reproduce("raw_pack25x32");
}
Test(mep_write, reproduces_raw_pack10x100)
{
	reproduce("raw_pack10x100");
}
Test(mep_write, reproduces_udp_pack4x200)
{
	reproduce("udp_pack4x200");
}
Test(mep_write, reproduces_raw_padding)
{
	reproduce("raw_padding");
}
Test(mep_write, reproduces_raw_empty_frags)
{
	reproduce("raw_empty_frags");
}
Test(mep_write, reproduces_raw_wrap)
{
	reproduce("raw_wrap");
}
Test(mep_write, reproduces_raw_resend_eor)
{
	reproduce("raw_resend_eor");
}
Test(mep_write, reproduces_raw_eth_padding)
{
	reproduce("raw_eth_padding");
}
Test(mep_write, reproduces_raw_jumbo)
{
	reproduce("raw_jumbo");
}
Test(mep_write, reproduces_raw_max_source)
{
	reproduce("raw_max_source");
}

/* Explicit event_ids (a source that skipped events) go out as given. */
Test(mep_write, explicit_event_ids)
{
	static const uint32_t ids[] = { 10, 11, 13, 20, 0x7fffffff };
	struct xevb_mep_params p = base_params();
	p.event_id = ids;
	p.n_frags = 5;
	p.first_event_id = 999; /* ignored when ids are given */
	ssize_t n = xevb_write_frame(buf, sizeof(buf), &p);
	struct xevb_pkt_info pi = { 0 };

	cr_assert(gt(sz, (size_t)n, 0));
	cr_assert(eq(int, xevb_classify(buf, buf + n, (uint32_t)n, &cfg, &pi, frags), XEVB_RES_MEP));
	for (unsigned j = 0; j < 5; j++)
		cr_assert(eq(u32, frags[j].event_id, ids[j]), "record %u", j);
}

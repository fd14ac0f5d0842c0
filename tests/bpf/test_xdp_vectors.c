// SPDX-License-Identifier: GPL-2.0-only
/*
 * The XDP steering program against every wire-format vector, through
 * BPF_PROG_RUN: the action it returns and the counters it moves. The
 * expectations are written out per vector (not derived from the parser), so
 * a wrong verdict in the shared parser shows up here too.
 */
#include <arpa/inet.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/mep_parse.h>
#include "evb/names.h"
#include <xevb/shed.h> /* before the skeleton: its .data.shed holds a struct xevb_shed_gate */
#include "xevb_steer.skel.h"
#include "xdp_harness.h"
#include "../common/vectors.h"

static struct xdp_env env;

static void teardown(void)
{
	xdp_env_close(&env);
	vectors_teardown();
}

TestSuite(xdp_vectors, .init = vectors_setup, .fini = teardown, .timeout = 30);

/* Katran-style fixtures: each vector, the action and the slot it must hit. */
struct fixture {
	const char *name;
	int slot; /* the parser's verdict slot */
	uint32_t action;
};

#define MEP(n) \
	{ \
		n, XEVB_RES_MEP, XDP_PASS \
	}
#define SEG(n) \
	{ \
		n, XEVB_RES_SEGMENT, XDP_PASS \
	}
#define BAD(n, why) \
	{ \
		n, why, XDP_DROP \
	}
#define PASS(n, why) \
	{ \
		n, why, XDP_PASS \
	}

static const struct fixture fixtures[] = {
	MEP("raw_single"),
	MEP("raw_pack25x32"),
	MEP("raw_pack10x100"),
	MEP("udp_pack4x200"),
	MEP("raw_ip_options"),
	MEP("raw_empty_frags"),
	MEP("raw_padding"),
	MEP("raw_wrap"),
	MEP("raw_vlan"),
	MEP("raw_eth_padding"),
	MEP("raw_resend_eor"),
	MEP("raw_max_source"),
	/* The MEP runs into the frags: validated there record by record. */
	MEP("raw_jumbo"),
	BAD("bad_magic", XEVB_RES_BAD_MAGIC),
	BAD("bad_version", XEVB_RES_BAD_VERSION),
	BAD("bad_flag", XEVB_RES_BAD_FLAGS),
	BAD("zero_frags", XEVB_RES_BAD_NFRAGS),
	BAD("too_many_frags", XEVB_RES_BAD_NFRAGS),
	BAD("frags_missing", XEVB_RES_FRAGS_MISSING),
	BAD("record_overrun", XEVB_RES_REC_OVERRUN),
	BAD("trailing_bytes", XEVB_RES_TRAILING),
	BAD("reserved_nonzero", XEVB_RES_RESERVED),
	BAD("event_order", XEVB_RES_EVENT_ORDER),
	BAD("source_too_big", XEVB_RES_BAD_SOURCE),
	BAD("short_mep_header", XEVB_RES_SHORT_MEP),
	BAD("ip_len_past_frame", XEVB_RES_IP_LEN),
	BAD("ip_len_short", XEVB_RES_REC_OVERRUN),
	BAD("ihl_below_5", XEVB_RES_BAD_IHL),
	BAD("truncated_ip", XEVB_RES_TRUNC_IP),
	BAD("udp_len_mismatch", XEVB_RES_UDP_LEN),
	PASS("ip_frag_first", XEVB_RES_IP_FRAGMENT),
	PASS("ip_frag_later", XEVB_RES_IP_FRAGMENT),
	PASS("other_arp", XEVB_RES_OTHER),
	PASS("other_tcp", XEVB_RES_OTHER),
	PASS("other_udp_port", XEVB_RES_OTHER),
	PASS("other_icmp", XEVB_RES_OTHER),
	PASS("other_ipv6", XEVB_RES_OTHER),
	/* 1.1: segments go where MEPs go, counted in a slot of their own. */
	SEG("seg_first"),
	SEG("seg_middle"),
	SEG("seg_last"),
	SEG("seg_resend_udp"),
	SEG("seg_max_length"),
	BAD("seg_two_records", XEVB_RES_SEG_NFRAGS),
	BAD("seg_zero_length", XEVB_RES_SEG_LENGTH),
	BAD("seg_offset_unaligned", XEVB_RES_SEG_OFFSET),
	BAD("seg_offset_past_end", XEVB_RES_SEG_OFFSET),
	BAD("seg_middle_unaligned", XEVB_RES_SEG_SIZE),
	BAD("seg_last_extra", XEVB_RES_SEG_TRAILING),
};
#define N_FIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

/* Runs v and asserts the action and exactly the counters that must move. */
static void expect(const struct vector *v, uint32_t action, const int *slots, int nslots, uint64_t frags,
		   const char *ctx)
{
	struct xdp_outcome o;
	const char *bad;

	xdp_env_run(&env, v->frame, v->len, &o);
	bad = xdp_outcome_mismatch(&o, v->len, action, slots, nslots, frags);
	cr_assert(bad == NULL, "%s (%s): %s", v->name, ctx, bad);
	cr_assert(o.retval != XDP_ABORTED, "%s: XDP_ABORTED", v->name);
}

static void expect_mep_passed(const struct vector *v, const char *ctx)
{
	const int slots[] = { XEVB_RES_MEP, XEVB_XDP_NO_XSK };
	expect(v, XDP_PASS, slots, 2, v->n_frags, ctx);
}

static void expect_unknown_src(const struct vector *v, const char *ctx)
{
	const int slots[] = { XEVB_RES_MEP, XEVB_XDP_UNKNOWN_SRC };
	expect(v, XDP_DROP, slots, 2, v->n_frags, ctx);
}

/* A segment's frags column counts it only at offset 0: once per fragment. */
static uint64_t seg_frags(const struct vector *v)
{
	return v->frags[0].seg_offset == 0;
}

static void expect_seg_passed(const struct vector *v, const char *ctx)
{
	const int slots[] = { XEVB_RES_SEGMENT, XEVB_XDP_NO_XSK };
	expect(v, XDP_PASS, slots, 2, seg_frags(v), ctx);
}

static void expect_seg_unknown_src(const struct vector *v, const char *ctx)
{
	const int slots[] = { XEVB_RES_SEGMENT, XEVB_XDP_UNKNOWN_SRC };
	expect(v, XDP_DROP, slots, 2, seg_frags(v), ctx);
}

static void expect_slot(const struct vector *v, int slot, const char *ctx)
{
	expect(v, xevb_res_is_malformed((unsigned)slot) ? XDP_DROP : XDP_PASS, &slot, 1, 0, ctx);
}

Test(xdp_vectors, fixtures_cover_every_vector)
{
	cr_assert(gt(sz, nvecs, 30), "expected the full vector set");
	cr_assert(eq(sz, nvecs, N_FIXTURES), "index.tsv has %zu vectors, the fixture table %zu", nvecs,
		  N_FIXTURES);
	for (size_t f = 0; f < N_FIXTURES; f++) {
		const struct vector *v = vectors_find(fixtures[f].name);
		/* The table agrees with the verdict class index.tsv gives. */
		int s = fixtures[f].slot;
		switch (v->verdict) {
		case VEC_MEP:
			cr_assert(s == XEVB_RES_MEP || s == XEVB_RES_MULTIBUF, "%s", v->name);
			break;
		case VEC_SEGMENT:
			cr_assert(eq(int, s, XEVB_RES_SEGMENT), "%s", v->name);
			break;
		case VEC_MALFORMED:
			cr_assert(xevb_res_is_malformed((unsigned)s), "%s", v->name);
			break;
		case VEC_IP_FRAGMENT:
			cr_assert(eq(int, s, XEVB_RES_IP_FRAGMENT), "%s", v->name);
			break;
		case VEC_OTHER:
			cr_assert(eq(int, s, XEVB_RES_OTHER), "%s", v->name);
			break;
		}
	}
}

Test(xdp_vectors, every_vector_default_settings)
{
	unsigned mep = 0, seg = 0;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	for (size_t f = 0; f < N_FIXTURES; f++) {
		const struct fixture *fx = &fixtures[f];
		const struct vector *v = vectors_find(fx->name);

		if (fx->slot == XEVB_RES_MEP) {
			cr_assert(eq(int, v->verdict, VEC_MEP), "%s", v->name);
			expect_mep_passed(v, "default");
			mep++;
		} else if (fx->slot == XEVB_RES_SEGMENT) {
			cr_assert(eq(int, v->verdict, VEC_SEGMENT), "%s", v->name);
			expect_seg_passed(v, "default");
			seg++;
		} else {
			expect_slot(v, fx->slot, "default");
		}
	}
	cr_assert(eq(uint, seg, 5));
	cr_log_info("xdp_vectors: %zu vectors through BPF_PROG_RUN, %u valid MEPs, %u segments", N_FIXTURES, mep,
		    seg);
	printf("xdp_vectors: %zu vectors through BPF_PROG_RUN (%u valid MEPs, %u segments)\n", N_FIXTURES, mep,
	       seg);
}

/*
 * raw_jumbo (8 kB) does not fit the linear area of a test-run buffer
 * (a page minus headroom and skb_shared_info): the kernel puts the rest in
 * frags, and bpf_xdp_get_buff_len still reports the whole frame. The
 * frags-capable program walks the records across the frags: a valid MEP,
 * counted with the full frame length and every fragment.
 */
Test(xdp_vectors, jumbo_spans_frags)
{
	const struct vector *v;
	struct xdp_outcome o;
	const char *bad;
	const int slots[] = { XEVB_RES_MEP, XEVB_XDP_NO_XSK };

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	v = vectors_find("raw_jumbo");
	cr_assert(gt(sz, v->len, 4096), "raw_jumbo is %zu bytes, expected more than a page", v->len);
	xdp_env_run(&env, v->frame, v->len, &o);
	bad = xdp_outcome_mismatch(&o, v->len, XDP_PASS, slots, 2, v->n_frags);
	cr_assert(bad == NULL, "raw_jumbo: %s", bad);
	cr_assert(lt(u32, o.linear, (uint32_t)v->len), "raw_jumbo was not split: linear %u", o.linear);
	/* Enough of it is linear for the IP header: the verdict is not a truncation. */
	cr_assert(ge(u32, o.linear, XEVB_ETH_HLEN + 20 + XEVB_MEP_HLEN), "linear %u", o.linear);
	printf("xdp_vectors: raw_jumbo %zu bytes: %u linear, %zu in frags -> %s, %s\n", v->len, o.linear,
	       v->len - o.linear, xevb_slot_name(XEVB_RES_MEP), xdp_action_name(o.retval));
}

static void set_filter(uint32_t flags)
{
	env.skel->bss->filter_flags = flags;
}

static void allow_id(uint32_t id)
{
	uint8_t one = 1;
	cr_assert(eq(int, bpf_map_update_elem(bpf_map__fd(env.skel->maps.src_ids), &id, &one, 0), 0));
}

static void allow_ip(uint32_t saddr_be)
{
	uint8_t one = 1;
	cr_assert(eq(int, bpf_map_update_elem(bpf_map__fd(env.skel->maps.src_ips), &saddr_be, &one, 0), 0));
}

/* Source id and saddr of a valid MEP vector, as the parser reads them. */
static void source_of(const struct vector *v, uint16_t *id, uint32_t *saddr_be)
{
	static const struct xevb_parse_cfg cfg = {
		.udp_port = XEVB_DEFAULT_UDP_PORT,
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
	};
	struct xevb_pkt_info pi = { 0 };

	cr_assert(eq(int, xevb_classify(v->frame, v->frame + v->len, (uint32_t)v->len, &cfg, &pi, NULL),
		     XEVB_RES_MEP),
		  "%s", v->name);
	cr_assert(eq(u16, pi.source_id, v->frags[0].source_id), "%s", v->name);
	*id = pi.source_id;
	*saddr_be = pi.saddr;
}

/* Valid MEP vectors, raw_jumbo too: its filters act on what the frags walker read. */
static int linear_mep(const struct vector *v)
{
	return v->verdict == VEC_MEP;
}

Test(xdp_vectors, filter_by_source_id)
{
	unsigned allowed = 0, dropped = 0;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	/* raw_single is source 7, raw_max_source 4095; the others come from elsewhere. */
	allow_id(7);
	allow_id(XEVB_MAX_SOURCE_ID);
	allow_id(1000); /* set but unused: allowing more is harmless */
	set_filter(XEVB_FILTER_SRC_ID);
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];
		uint16_t id;
		uint32_t ip;

		if (!linear_mep(v))
			continue;
		source_of(v, &id, &ip);
		if (id == 7 || id == XEVB_MAX_SOURCE_ID) {
			expect_mep_passed(v, "src_id filter, allowed");
			allowed++;
		} else {
			expect_unknown_src(v, "src_id filter, not allowed");
			dropped++;
		}
	}
	cr_assert(eq(uint, allowed, 2));
	cr_assert(gt(uint, dropped, 5));

	/* Zero in the array means "not expected", as after a reconfiguration. */
	uint32_t key = 7;
	uint8_t zero = 0;
	cr_assert(eq(int, bpf_map_update_elem(bpf_map__fd(env.skel->maps.src_ids), &key, &zero, 0), 0));
	expect_unknown_src(vectors_find("raw_single"), "src_id 7 cleared");

	/* Malformed traffic is judged before the filter, whatever its source. */
	expect_slot(vectors_find("bad_magic"), XEVB_RES_BAD_MAGIC, "src_id filter");
	expect_slot(vectors_find("other_tcp"), XEVB_RES_OTHER, "src_id filter");
	expect_slot(vectors_find("ip_frag_first"), XEVB_RES_IP_FRAGMENT, "src_id filter");

	set_filter(0);
	expect_mep_passed(vectors_find("raw_pack10x100"), "filter off again");
}

Test(xdp_vectors, filter_by_source_ip)
{
	const struct vector *allowed_v = vectors_find("raw_single");
	uint16_t id;
	uint32_t allowed_ip, ip;
	unsigned same = 0, other = 0;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	source_of(allowed_v, &id, &allowed_ip);
	allow_ip(allowed_ip);
	allow_ip(htonl(0xC6120063)); /* 198.18.0.99: set but unused */
	set_filter(XEVB_FILTER_SRC_IP);
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];

		if (!linear_mep(v))
			continue;
		source_of(v, &id, &ip);
		if (ip == allowed_ip) {
			expect_mep_passed(v, "src_ip filter, allowed");
			same++;
		} else {
			expect_unknown_src(v, "src_ip filter, not allowed");
			other++;
		}
	}
	cr_assert(ge(uint, same, 1));

	/* The vectors share one saddr: the same MEP from 198.18.0.77 is unknown. */
	struct vector moved = *allowed_v;
	uint8_t frame[256];
	const uint32_t stranger = htonl(0xC612004D);
	cr_assert(le(sz, moved.len, sizeof(frame)));
	memcpy(frame, allowed_v->frame, moved.len);
	memcpy(frame + XEVB_ETH_HLEN + 12, &stranger, 4); /* the parser ignores the checksum */
	moved.frame = frame;
	source_of(&moved, &id, &ip);
	cr_assert(eq(u32, ip, stranger));
	expect_unknown_src(&moved, "src_ip filter, other saddr");
	other++;

	/* Taking the address out of the set stops its traffic too. */
	cr_assert(eq(int, bpf_map_delete_elem(bpf_map__fd(env.skel->maps.src_ips), &allowed_ip), 0));
	for (size_t i = 0; i < nvecs; i++)
		if (linear_mep(&vecs[i])) {
			expect_unknown_src(&vecs[i], "src_ip filter, saddr removed");
			other++;
		}
	cr_log_info("src_ip filter: %u allowed, %u dropped", same, other);

	/* Both filters: the saddr must be known AND the id. */
	cr_assert(eq(int,
		     bpf_map_update_elem(bpf_map__fd(env.skel->maps.src_ips), &allowed_ip, &(uint8_t){ 1 }, 0),
		     0));
	set_filter(XEVB_FILTER_SRC_IP | XEVB_FILTER_SRC_ID);
	expect_unknown_src(allowed_v, "both filters, id 7 not set");
	allow_id(7);
	expect_mep_passed(allowed_v, "both filters, id 7 set");
}

static void bind_l2(uint32_t id, const struct xevb_src_bind *b)
{
	cr_assert(eq(int, bpf_map_update_elem(bpf_map__fd(env.skel->maps.src_bind), &id, b, 0), 0));
}

static void bind_id(uint32_t id, uint32_t saddr_be)
{
	bind_l2(id, &(struct xevb_src_bind){ .addr = saddr_be });
}

/*
 * A source_id bound to an address (a run configuration's source process)
 * passes from it alone; from any other it is src_addr_mismatch, dropped.
 * Unbound ids are not judged by it.
 */
Test(xdp_vectors, filter_source_id_bound_to_address)
{
	const struct vector *v7 = vectors_find("raw_single");
	const uint32_t stranger = htonl(0xC612004D); /* 198.18.0.77 */
	const int mismatch[] = { XEVB_RES_MEP, XEVB_XDP_SRC_MISMATCH };
	struct vector moved = *v7;
	uint8_t frame[256];
	uint32_t ip7, ip;
	uint16_t id;
	unsigned other = 0;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	source_of(v7, &id, &ip7);
	cr_assert(eq(u16, id, 7));
	cr_assert(le(sz, moved.len, sizeof(frame)));
	memcpy(frame, v7->frame, moved.len);
	memcpy(frame + XEVB_ETH_HLEN + 12, &stranger, 4); /* the parser ignores the checksum */
	moved.frame = frame;

	bind_id(7, ip7);
	set_filter(XEVB_FILTER_SRC_BIND);
	expect_mep_passed(v7, "id 7 from its bound address");
	expect(&moved, XDP_DROP, mismatch, 2, moved.n_frags, "id 7 from another address");
	/* The other valid vectors' ids are unbound: they pass from anywhere. */
	for (size_t i = 0; i < nvecs; i++) {
		if (!linear_mep(&vecs[i]))
			continue;
		source_of(&vecs[i], &id, &ip);
		if (id != 7) {
			expect_mep_passed(&vecs[i], "unbound id");
			other++;
		}
	}
	cr_assert(gt(uint, other, 5));
	/* Bound to the stranger instead: now it passes and the original is refused. */
	bind_id(7, stranger);
	expect_mep_passed(&moved, "id 7 rebound to the other address");
	expect(v7, XDP_DROP, mismatch, 2, v7->n_frags, "id 7 from its old address");
	/* With the id filter too: an unknown id is unknown_source, judged first. */
	set_filter(XEVB_FILTER_SRC_ID | XEVB_FILTER_SRC_BIND);
	expect_unknown_src(v7, "id filter first");
	allow_id(7);
	expect(v7, XDP_DROP, mismatch, 2, v7->n_frags, "id known, address not its own");
	expect_mep_passed(&moved, "id known, its own address");
	set_filter(0);
	expect_mep_passed(v7, "filter off again");
}

/* A copy of vector v in buf (room for 4 more bytes), to change its Ethernet header. */
static struct vector l2_copy(const struct vector *v, uint8_t *buf, size_t room)
{
	struct vector c = *v;

	cr_assert(le(sz, v->len + XEVB_VLAN_HLEN, room));
	memcpy(buf, v->frame, v->len);
	c.frame = buf;
	return c;
}

/*
 * A source_id bound to its address, MAC and VLAN (raw_vlan's, tagged VLAN
 * 100, from 02:00:00:00:00:01): its MEPs
 * pass only with all three; from another MAC they are src_mac_mismatch,
 * from another VLAN or untagged src_vlan_mismatch, each counted once in
 * its one slot. What is not bound is not checked; unbound ids pass.
 */
Test(xdp_vectors, filter_source_id_bound_to_mac_and_vlan)
{
	const struct vector *vt = vectors_find("raw_vlan");
	const uint32_t stranger = htonl(0xC612004D); /* 198.18.0.77 */
	const int mac_bad[] = { XEVB_RES_MEP, XEVB_XDP_SRC_MAC_MISMATCH };
	const int vlan_bad[] = { XEVB_RES_MEP, XEVB_XDP_SRC_VLAN_MISMATCH };
	const int addr_bad[] = { XEVB_RES_MEP, XEVB_XDP_SRC_MISMATCH };
	uint8_t b_mac[512], b_vid[512], b_pcp[512], b_untag[512], b_addr[512];
	struct vector other_mac = l2_copy(vt, b_mac, sizeof(b_mac)), other_vid = l2_copy(vt, b_vid, sizeof(b_vid));
	struct vector pcp = l2_copy(vt, b_pcp, sizeof(b_pcp)), untagged = l2_copy(vt, b_untag, sizeof(b_untag));
	struct vector other_addr = l2_copy(vt, b_addr, sizeof(b_addr));
	struct xevb_src_bind b = { .flags = XEVB_BIND_MAC | XEVB_BIND_VLAN, .vlan = 100 };
	uint16_t id, oid;
	uint32_t ip;
	unsigned unbound = 0;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	source_of(vt, &id, &b.addr);
	cr_assert(eq(u16, xevb_ld16(vt->frame + 12), XEVB_ETH_P_8021Q));
	cr_assert(eq(u16, xevb_ld16(vt->frame + 14) & 0x0fff, 100));
	memcpy(b.mac, vt->frame + 6, 6);
	other_mac.frame[11] ^= 0x10;
	xevb_st16(other_vid.frame + 14, 101);
	xevb_st16(pcp.frame + 14, 5u << 13 | 100); /* priority 5: the VLAN id is the low 12 bits */
	memmove(untagged.frame + 12, vt->frame + 16, vt->len - 16);
	untagged.len -= XEVB_VLAN_HLEN;
	memcpy(other_addr.frame + XEVB_ETH_HLEN + XEVB_VLAN_HLEN + 12, &stranger, 4);
	source_of(&untagged, &oid, &ip);
	cr_assert(eq(u16, oid, id));

	bind_l2(id, &b);
	set_filter(XEVB_FILTER_SRC_BIND);
	expect_mep_passed(vt, "its address, MAC and VLAN");
	expect_mep_passed(&pcp, "its VLAN with a priority");
	expect(&other_mac, XDP_DROP, mac_bad, 2, vt->n_frags, "another MAC");
	expect(&other_vid, XDP_DROP, vlan_bad, 2, vt->n_frags, "VLAN 101");
	expect(&untagged, XDP_DROP, vlan_bad, 2, vt->n_frags, "untagged, a VLAN bound");
	/* The address is judged first: a stranger with the right MAC is src_addr_mismatch. */
	expect(&other_addr, XDP_DROP, addr_bad, 2, vt->n_frags, "another address");
	/* Another MAC and another VLAN: one drop, counted once, under the MAC. */
	xevb_st16(other_mac.frame + 14, 101);
	expect(&other_mac, XDP_DROP, mac_bad, 2, vt->n_frags, "another MAC and VLAN");
	xevb_st16(other_mac.frame + 14, 100);

	/* The MAC alone bound: any VLAN or none passes. */
	b.flags = XEVB_BIND_MAC;
	bind_l2(id, &b);
	expect_mep_passed(&untagged, "MAC bound, untagged");
	expect_mep_passed(&other_vid, "MAC bound, another VLAN");
	expect(&other_mac, XDP_DROP, mac_bad, 2, vt->n_frags, "MAC bound, another MAC");

	/* The VLAN alone bound: any MAC passes. */
	b.flags = XEVB_BIND_VLAN;
	bind_l2(id, &b);
	expect_mep_passed(&other_mac, "VLAN bound, another MAC");
	expect(&untagged, XDP_DROP, vlan_bad, 2, vt->n_frags, "VLAN bound, untagged");

	/* Unbound ids are not judged, whatever their MAC or VLAN. */
	b.flags = XEVB_BIND_MAC | XEVB_BIND_VLAN;
	bind_l2(id, &b);
	for (size_t i = 0; i < nvecs; i++) {
		if (!linear_mep(&vecs[i]))
			continue;
		source_of(&vecs[i], &oid, &ip);
		if (oid != id) {
			expect_mep_passed(&vecs[i], "unbound id");
			unbound++;
		}
	}
	cr_assert(gt(uint, unbound, 5));
	/* Without the flag the bindings rest. */
	set_filter(0);
	expect_mep_passed(&other_mac, "filter off");
	expect_mep_passed(&untagged, "filter off, untagged");
}

Test(xdp_vectors, empty_filter_allows_all)
{
	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	/* Maps populated but no flag set: nothing is filtered. */
	allow_id(3);
	set_filter(0);
	for (size_t i = 0; i < nvecs; i++)
		if (linear_mep(&vecs[i]))
			expect_mep_passed(&vecs[i], "no filter flags");
}

/* cfg_ip_proto=254: the raw vectors (protocol 253) are someone else's traffic. */
Test(xdp_vectors, ip_proto_254)
{
	unsigned n = 0;

	xdp_env_open(&env, 254, XEVB_DEFAULT_UDP_PORT);
	for (size_t f = 0; f < N_FIXTURES; f++) {
		const struct vector *v = vectors_find(fixtures[f].name);
		const uint8_t *ip = v->frame + XEVB_ETH_HLEN +
				    (v->frame[12] == 0x81 && v->frame[13] == 0 ? XEVB_VLAN_HLEN : 0);

		if (v->len < (size_t)(ip - v->frame) + 10 || ip[9] != XEVB_DEFAULT_IP_PROTO ||
		    v->frame[ip - v->frame - 2] != 0x08 || v->frame[ip - v->frame - 1] != 0x00) {
			/* Not raw protocol 253: UDP and non-DAQ keep their default verdicts. */
			if (fixtures[f].slot == XEVB_RES_MEP)
				expect_mep_passed(v, "ip_proto 254, udp");
			else if (fixtures[f].slot == XEVB_RES_SEGMENT)
				expect_seg_passed(v, "ip_proto 254, udp");
			else
				expect_slot(v, fixtures[f].slot, "ip_proto 254, not raw");
			continue;
		}
		expect_slot(v, XEVB_RES_OTHER, "ip_proto 254, raw 253");
		n++;
	}
	cr_assert(gt(uint, n, 20), "only %u raw vectors", n);
}

/* cfg_udp_port=53: the well-formed MEP to port 53 is ours, port 23900 is not. */
Test(xdp_vectors, udp_port_53)
{
	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, 53);
	const struct vector *v = vectors_find("other_udp_port");
	const int slots[] = { XEVB_RES_MEP, XEVB_XDP_NO_XSK };
	struct xevb_pkt_info pi = { 0 };
	const struct xevb_parse_cfg cfg = { .udp_port = 53, .ip_proto = XEVB_DEFAULT_IP_PROTO };

	cr_assert(eq(int, xevb_classify(v->frame, v->frame + v->len, (uint32_t)v->len, &cfg, &pi, NULL),
		     XEVB_RES_MEP));
	cr_assert(gt(uint, pi.n_frags, 0));
	expect(v, XDP_PASS, slots, 2, pi.n_frags, "udp_port 53");
	expect_slot(vectors_find("udp_pack4x200"), XEVB_RES_OTHER, "udp_port 53");
	expect_slot(vectors_find("udp_len_mismatch"), XEVB_RES_OTHER, "udp_port 53");
	expect_mep_passed(vectors_find("raw_single"), "udp_port 53, raw still on");
}

/* The source filters act on segments as on MEPs: an unknown source's are dropped, counted. */
Test(xdp_vectors, filters_apply_to_segments)
{
	unsigned passed = 0, dropped = 0;

	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	allow_id(21); /* seg_first, seg_middle, seg_last, seg_resend_udp; seg_max_length is 33 */
	set_filter(XEVB_FILTER_SRC_ID);
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];

		if (v->verdict != VEC_SEGMENT)
			continue;
		if (v->frags[0].source_id == 21) {
			expect_seg_passed(v, "src_id filter, allowed");
			passed++;
		} else {
			expect_seg_unknown_src(v, "src_id filter, not allowed");
			dropped++;
		}
	}
	cr_assert(eq(uint, passed, 4));
	cr_assert(eq(uint, dropped, 1));
	/* A malformed segment is judged before the filter. */
	expect_slot(vectors_find("seg_last_extra"), XEVB_RES_SEG_TRAILING, "src_id filter");
}

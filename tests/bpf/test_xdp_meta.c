// SPDX-License-Identifier: GPL-2.0-only
/*
 * The XDP meta (xevb/xdp_meta.h) the steering program puts in front of
 * frames it redirects to an AF_XDP socket, through BPF_PROG_RUN: present
 * and exactly the parser's view for every consecutive linear MEP (spec
 * vectors, random MEPs), and accepted by the user-space reader
 * (xsk_meta.h) with the load's cookie; absent for non-consecutive,
 * multi-buffer, non-MEP and malformed frames, without a socket and with
 * the meta off; the frame itself and the counters as without it.
 *
 * BPF_PROG_RUN returns data_meta..data_end in data_out and the meta's
 * length in ctx_out.data (kernel: xdp_convert_buff_to_md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "wire/mep_write.h"
#include "evb/names.h"
#include "rx/xsk_meta.h"
#include <xevb/shed.h> /* before the skeleton: its .data.shed holds a struct xevb_shed_gate */
#include "xevb_steer.skel.h"
#include "xdp_harness.h"
#include "../common/pkt_info_assert.h"
#include "../common/vectors.h"

#define COOKIE   0xc0ffee11u
#define OUT_CAP  16384
#define N_RANDOM 3000
#define SEED     0x3e7a0001ull
/* BPF_PROG_RUN's linear area on x86-64 (a page minus headroom and skb_shared_info) */
#define LINEAR 3520

static struct xdp_env env;

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

static void teardown(void)
{
	xdp_env_close(&env);
	vectors_teardown();
}

TestSuite(xdp_meta, .init = vectors_setup, .fini = teardown, .timeout = 60);

static void open_env(uint32_t cookie, bool with_socket)
{
	xdp_env_open_cfg(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT, cookie);
	if (with_socket)
		xdp_env_add_xsk(&env);
}

struct run {
	uint32_t retval;
	uint32_t meta_len; /* ctx_out.data: bytes of meta in front of the frame */
	uint32_t out_len;  /* meta + frame */
	uint8_t out[OUT_CAP + 64];
	struct xevb_xdp_ctr delta[XEVB_XDP__SLOTS];
};

static void run(const uint8_t *frame, size_t len, struct run *r)
{
	struct xevb_xdp_ctr before[XEVB_XDP__SLOTS], after[XEVB_XDP__SLOTS];
	struct xdp_md ctx_in = { .data = 0, .data_end = (__u32)len }, ctx_out = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (__u32)len, .data_out = r->out,
		    .data_size_out = sizeof(r->out), .ctx_in = &ctx_in, .ctx_size_in = sizeof(ctx_in),
		    .ctx_out = &ctx_out, .ctx_size_out = sizeof(ctx_out), .repeat = 1, );

	xdp_env_counters(&env, before);
	cr_assert(eq(int, bpf_prog_test_run_opts(env.prog_fd, &opts), 0), "BPF_PROG_RUN: %s", strerror(errno));
	xdp_env_counters(&env, after);
	r->retval = opts.retval;
	r->out_len = opts.data_size_out;
	r->meta_len = ctx_out.data;
	for (int k = 0; k < XEVB_XDP__SLOTS; k++) {
		r->delta[k].packets = after[k].packets - before[k].packets;
		r->delta[k].bytes = after[k].bytes - before[k].bytes;
		r->delta[k].frags = after[k].frags - before[k].frags;
	}
}

/* Exactly these slots moved, by one packet of len bytes and frags fragments. */
static void assert_counted(const struct run *r, size_t len, const int *slots, int n, uint64_t frags,
			   const char *what)
{
	for (int k = 0; k < XEVB_XDP__SLOTS; k++) {
		int want = 0;
		for (int s = 0; s < n; s++)
			want |= slots[s] == k;
		cr_assert(eq(u64, r->delta[k].packets, (uint64_t)want), "%s: slot %s packets", what,
			  xevb_slot_name((unsigned)k));
		cr_assert(eq(u64, r->delta[k].bytes, want ? (uint64_t)len : 0), "%s: slot %s bytes", what,
			  xevb_slot_name((unsigned)k));
		cr_assert(eq(u64, r->delta[k].frags, want ? frags : 0), "%s: slot %s frags", what,
			  xevb_slot_name((unsigned)k));
	}
}

/* The frame as it came, with the parser's view in the meta in front; the reader takes it. */
static void assert_meta(const uint8_t *in, size_t len, const struct run *r, const char *what)
{
	struct xevb_pkt_info want = { 0 }, got = { 0 };
	struct xevb_xdp_meta m;
	const uint8_t *data = r->out + XEVB_XDP_META_LEN;

	cr_assert(eq(int, xevb_classify(in, in + len, (uint32_t)len, &cfg, &want, NULL), XEVB_RES_MEP), "%s",
		  what);
	cr_assert(eq(u32, r->retval, XDP_REDIRECT), "%s: %s", what, xdp_action_name(r->retval));
	cr_assert(eq(u32, r->meta_len, XEVB_XDP_META_LEN), "%s: %u bytes of meta", what, r->meta_len);
	cr_assert(eq(u32, r->out_len, (uint32_t)len + XEVB_XDP_META_LEN), "%s", what);
	cr_assert(eq(int, memcmp(data, in, len), 0), "%s: the frame changed", what);
	memcpy(&m, r->out, sizeof(m));
	cr_assert(eq(u32, m.check, COOKIE ^ want.packet_seq), "%s", what);
	cr_assert(eq(u32, m.first_event_id, want.first_event_id), "%s", what);
	cr_assert(eq(u16, m.mep_off, want.mep_off), "%s", what);
	cr_assert(eq(u16, m.mep_len, want.mep_len), "%s", what);
	cr_assert(eq(u16, m.n_frags, want.n_frags), "%s", what);
	cr_assert(eq(u8, m.flags, XEVB_XDP_META_F_CONSEC | (want.is_udp ? XEVB_XDP_META_F_UDP : 0)), "%s", what);
	cr_assert(eq(u8, m.reserved, 0), "%s", what);

	cr_assert(eq(int, xevb_xsk_meta_pi(data, (uint32_t)len, COOKIE, &got), XEVB_RES_MEP),
		  "%s: the reader refuses the program's meta", what);
	pi_assert_same_mep(&got, &want, what);
	cr_assert(eq(u8, got.consec, 1), "%s", what);
	/* Another load's cookie never passes. */
	cr_assert(eq(int, xevb_xsk_meta_pi(data, (uint32_t)len, COOKIE + 1, &got), -1), "%s", what);
}

static void assert_no_meta(const uint8_t *in, size_t len, const struct run *r, const char *what)
{
	cr_assert(eq(u32, r->meta_len, 0), "%s: %u bytes of meta (%s)", what, r->meta_len,
		  xdp_action_name(r->retval));
	cr_assert(eq(u32, r->out_len, (uint32_t)len), "%s", what);
	cr_assert(eq(int, memcmp(r->out, in, len < LINEAR ? len : LINEAR), 0), "%s: the frame changed", what);
}

static const int to_xsk[] = { XEVB_RES_MEP, XEVB_XDP_TO_XSK };
static const int seg_to_xsk[] = { XEVB_RES_SEGMENT, XEVB_XDP_TO_XSK };

Test(xdp_meta, vectors_get_exact_meta)
{
	static struct run r;
	unsigned with = 0, without = 0, segs = 0;

	open_env(COOKIE, true);
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];
		struct xevb_pkt_info pi = { 0 };
		int res = xevb_classify(v->frame, v->frame + v->len, (uint32_t)v->len, &cfg, &pi, NULL);

		run(v->frame, v->len, &r);
		if (res == XEVB_RES_MEP && pi.consec && v->len <= LINEAR) {
			assert_counted(&r, v->len, to_xsk, 2, pi.n_frags, v->name);
			assert_meta(v->frame, v->len, &r, v->name);
			with++;
		} else {
			/* Malformed, fragments, not ours, jumbo (walked across frags), segments: no meta. */
			assert_no_meta(v->frame, v->len, &r, v->name);
			if (res == XEVB_RES_MEP)
				assert_counted(&r, v->len, to_xsk, 2, pi.n_frags, v->name);
			if (res == XEVB_RES_SEGMENT) {
				assert_counted(&r, v->len, seg_to_xsk, 2, pi.seg_offset == 0, v->name);
				segs++;
			}
			cr_assert(eq(u64, r.delta[XEVB_XDP_META_FAIL].packets, 0), "%s", v->name);
			without++;
		}
	}
	printf("xdp_meta: %u vectors with a meta, %u without\n", with, without);
	cr_assert(gt(u32, with, 10));
	cr_assert(gt(u32, without, 10));
	cr_assert(eq(u32, segs, 5), "every valid segment vector to the socket, without a meta");
}

/* splitmix64 */
static uint64_t rng = SEED;
static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A random valid MEP of n records, consecutive ids or with gaps, raw or UDP, maybe VLAN-tagged. */
static size_t random_mep(uint8_t *buf, size_t cap, uint32_t n, uint32_t max_len, bool consec)
{
	static uint32_t ids[XEVB_MAX_FRAGS_PER_MEP];
	static uint16_t lens[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_mep_params p = {
		.saddr = htonl(0xc6120100u + (uint32_t)(rnd() & 0xff)),
		.daddr = htonl(0xc6120201u),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.udp_dport = (rnd() & 1) ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = (uint16_t)(rnd() % 4096),
		.flags = (uint8_t)(rnd() % 4),
		.run_number = (uint32_t)rnd(),
		.packet_seq = (uint32_t)rnd(),
		.n_frags = n,
		.event_id = ids,
		.frag_len = lens,
	};
	uint32_t id = (uint32_t)rnd();
	ssize_t w;

	for (uint32_t i = 0; i < n; i++) {
		ids[i] = id;
		id += consec ? 1 : 1 + (uint32_t)(rnd() % 3);
		lens[i] = (uint16_t)(rnd() % (max_len + 1));
	}
	if (!consec && n > 1) {
		/* At least one gap, anywhere (the last record too). */
		uint32_t k = 1 + (uint32_t)(rnd() % (n - 1)), d = 1 + (uint32_t)(rnd() % 1000);
		for (uint32_t i = k; i < n; i++)
			ids[i] += d;
	}
	w = xevb_write_frame(buf, cap, &p);
	cr_assert(gt(sz, (size_t)(w < 0 ? 0 : w), 0), "xevb_write_frame");
	if (rnd() % 4 == 0)
		return vectors_tag_vlan(buf, (size_t)w, 5);
	return (size_t)w;
}

typedef void random_mep_check(const uint8_t *f, size_t len, uint32_t n, const struct run *r, const char *what);

/*
 * N_RANDOM random valid MEPs through the program, each checked: of 1..120
 * records with consecutive ids (consec), else of 2..101 with a gap.
 */
static void run_random_meps(bool consec, random_mep_check *check)
{
	static struct run r;
	static uint8_t f[4096];

	open_env(COOKIE, true);
	for (unsigned k = 0; k < N_RANDOM; k++) {
		uint32_t n = consec ? 1 + (uint32_t)(rnd() % 120) : 2 + (uint32_t)(rnd() % 100);
		size_t len = random_mep(f, sizeof(f), n, 3000 / n - 12 > 120 ? 120 : 3000 / n - 12, consec);
		char what[64];

		snprintf(what, sizeof(what), "%s MEP %u (%u records, %zu bytes)", consec ? "random" : "gapped", k,
			 n, len);
		run(f, len, &r);
		check(f, len, n, &r, what);
	}
}

static void check_exact_meta(const uint8_t *f, size_t len, uint32_t n, const struct run *r, const char *what)
{
	assert_counted(r, len, to_xsk, 2, n, what);
	assert_meta(f, len, r, what);
}

static void check_no_meta(const uint8_t *f, size_t len, uint32_t n, const struct run *r, const char *what)
{
	struct xevb_pkt_info pi = { 0 };

	cr_assert(eq(int, xevb_classify(f, f + len, (uint32_t)len, &cfg, &pi, NULL), XEVB_RES_MEP), "%s", what);
	cr_assert(eq(u8, pi.consec, 0), "%s", what);
	cr_assert(eq(u32, r->retval, XDP_REDIRECT), "%s", what);
	assert_counted(r, len, to_xsk, 2, n, what);
	assert_no_meta(f, len, r, what);
}

Test(xdp_meta, random_consecutive_meps_exact)
{
	run_random_meps(true, check_exact_meta);
}

Test(xdp_meta, none_for_non_consecutive)
{
	run_random_meps(false, check_no_meta);
}

/* Malformed and non-MEP frames, a MEP spanning frags: never a meta, counters as ever. */
Test(xdp_meta, none_for_multibuf_malformed_other)
{
	static struct run r;
	static uint8_t f[12000];
	unsigned seen = 0;

	open_env(COOKIE, true);
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];
		struct xevb_pkt_info pi = { 0 };

		if (xevb_classify(v->frame, v->frame + v->len, (uint32_t)v->len, &cfg, &pi, NULL) ==
			    XEVB_RES_MEP &&
		    v->len <= LINEAR)
			continue;
		run(v->frame, v->len, &r);
		assert_no_meta(v->frame, v->len, &r, v->name);
		if (!strcmp(v->name, "raw_jumbo")) {
			assert_counted(&r, v->len, to_xsk, 2, v->n_frags, v->name);
			cr_assert(eq(u32, r.retval, XDP_REDIRECT));
		}
		seen++;
	}
	cr_assert(gt(u32, seen, 15));
	/* A consecutive MEP larger than the linear area: walked across frags, no meta. */
	{
		struct xevb_mep_params p = {
			.saddr = htonl(0xc6120101u),
			.daddr = htonl(0xc6120201u),
			.ip_proto = XEVB_DEFAULT_IP_PROTO,
			.n_frags = 100,
			.frag_size = 60,
			.first_event_id = 7,
		};
		ssize_t w = xevb_write_frame(f, sizeof(f), &p);
		cr_assert(gt(sz, (size_t)w, LINEAR));
		run(f, (size_t)w, &r);
		assert_counted(&r, (size_t)w, to_xsk, 2, 100, "consecutive jumbo");
		assert_no_meta(f, (size_t)w, &r, "consecutive jumbo");
	}
	/* Not IPv4 at all. */
	memset(f, 0, 60);
	f[12] = 0x86;
	f[13] = 0xdd;
	run(f, 60, &r);
	cr_assert(eq(u32, r.retval, XDP_PASS));
	assert_no_meta(f, 60, &r, "IPv6");
}

/* No socket, or meta off: a consecutive MEP goes as it came. */
Test(xdp_meta, none_without_socket_or_cookie)
{
	static struct run r;
	static uint8_t f[4096];
	static const int no_xsk[] = { XEVB_RES_MEP, XEVB_XDP_NO_XSK };
	size_t len;

	open_env(COOKIE, false);
	len = random_mep(f, sizeof(f), 25, 32, true);
	run(f, len, &r);
	cr_assert(eq(u32, r.retval, XDP_PASS));
	assert_counted(&r, len, no_xsk, 2, 25, "no socket");
	assert_no_meta(f, len, &r, "no socket");
	xdp_env_close(&env);

	open_env(0, true);
	run(f, len, &r);
	assert_counted(&r, len, to_xsk, 2, 25, "cookie 0");
	assert_no_meta(f, len, &r, "cookie 0");
	xdp_env_close(&env);
}

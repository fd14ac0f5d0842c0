// SPDX-License-Identifier: GPL-2.0-only
/*
 * The MEP digest the XDP program appends to frames it redirects to an
 * AF_XDP socket (xevb/mep_digest.h), through BPF_PROG_RUN: present and
 * exactly what the user-space parser reads from the frame for every valid
 * linear MEP, absent where it must be (frags, too big for the chunk, too
 * many records, event_id span, no socket), bytes after the IP datagram
 * trimmed so that a forged digest never survives, counters as without it.
 *
 * An unbound AF_XDP socket in the XSKMAP is enough for bpf_redirect_map to
 * return XDP_REDIRECT; BPF_PROG_RUN (not live) then hands back the frame
 * the program left.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/if_xdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/mep_digest.h>
#include <xevb/mep_write.h>
#include <xevb/names.h>
#include <xevb/shed.h>   /* before the skeleton: its .data.shed holds a struct xevb_shed_gate */
#include "xevb_steer.skel.h"
#include "xdp_harness.h"
#include "../common/vectors.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

#define ROOM      (4096 - 256)   /* a 4 kB UMEM chunk */
#define OUT_CAP   16384
#define N_RANDOM  3000
#define SEED      0xd16e57ull
/* BPF_PROG_RUN's linear area on x86-64 (a page minus headroom and skb_shared_info) */
#define LINEAR    3520

static struct vector *vecs;
static size_t nvecs;
static struct xdp_env env;
static int xsk_fd = -1;

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
	.digest = 1,
};

static void setup(void)
{
	vecs = vectors_load(&nvecs);
}

static void teardown(void)
{
	if (xsk_fd >= 0)
		close(xsk_fd);
	xsk_fd = -1;
	if (env.skel)
		xdp_env_close(&env);
	vectors_free(vecs, nvecs);
}

TestSuite(xdp_digest, .init = setup, .fini = teardown, .timeout = 60);

static void open_env(uint32_t room, bool with_socket)
{
	__u32 key = 0;

	xdp_env_open_digest(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT, room);
	if (!with_socket)
		return;
	xsk_fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (xsk_fd < 0)
		cr_fatal("socket(AF_XDP): %s; the kernel needs CONFIG_XDP_SOCKETS", strerror(errno));
	if (bpf_map_update_elem(bpf_map__fd(env.skel->maps.xsks), &key, &xsk_fd, 0))
		cr_fatal("putting an AF_XDP socket in the XSKMAP: %s", strerror(errno));
}

struct run {
	uint32_t retval;
	uint32_t out_len;
	uint8_t out[OUT_CAP];
	struct xevb_xdp_ctr delta[XEVB_XDP__SLOTS];
};

static void run(const uint8_t *frame, size_t len, struct run *r)
{
	struct xevb_xdp_ctr before[XEVB_XDP__SLOTS], after[XEVB_XDP__SLOTS];
	struct xdp_md ctx_in = { .data = 0, .data_end = (__u32)len };
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = frame,
		.data_size_in = (__u32)len,
		.data_out = r->out,
		.data_size_out = OUT_CAP,
		.ctx_in = &ctx_in,
		.ctx_size_in = sizeof(ctx_in),
		.repeat = 1,
	);

	xdp_env_counters(&env, before);
	cr_assert(eq(int, bpf_prog_test_run_opts(env.prog_fd, &opts), 0), "BPF_PROG_RUN: %s",
		  strerror(errno));
	xdp_env_counters(&env, after);
	r->retval = opts.retval;
	r->out_len = opts.data_size_out;
	for (int k = 0; k < XEVB_XDP__SLOTS; k++) {
		r->delta[k].packets = after[k].packets - before[k].packets;
		r->delta[k].bytes = after[k].bytes - before[k].bytes;
		r->delta[k].frags = after[k].frags - before[k].frags;
	}
}

/* Counters: exactly these slots moved, by one packet of len bytes and frags fragments. */
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

/* The frame ends at the IP datagram (orig) and carries the digest of the parser's view. */
static void assert_digest(const uint8_t *in, size_t in_len, const struct run *r, const char *what)
{
	static struct xevb_frag_ref want[XEVB_MAX_FRAGS_PER_MEP], got[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_pkt_info pw = { 0 }, pg = { 0 };
	uint32_t orig;

	cr_assert(eq(int, xevb_classify(in, in + in_len, (uint32_t)in_len, &cfg, &pw, want), XEVB_RES_MEP),
		  "%s", what);
	orig = (uint32_t)pw.mep_off + pw.mep_len;
	cr_assert(eq(u32, r->retval, XDP_REDIRECT), "%s: %s", what, xdp_action_name(r->retval));
	cr_assert(eq(u32, r->out_len, orig + XEVB_DIGEST_LEN(pw.n_frags)), "%s: %u bytes out, IP ends at %u, %u records",
		  what, r->out_len, orig, pw.n_frags);
	cr_assert(eq(int, memcmp(r->out, in, orig), 0), "%s: the frame itself changed", what);
	cr_assert(eq(int, xevb_digest_read(r->out, r->out_len, &cfg, &pg, got), XEVB_RES_MEP),
		  "%s: digest not accepted", what);
	cr_assert(eq(u32, pg.saddr, pw.saddr), "%s", what);
	cr_assert(eq(u32, pg.daddr, pw.daddr), "%s", what);
	cr_assert(eq(u16, pg.mep_off, pw.mep_off), "%s", what);
	cr_assert(eq(u16, pg.mep_len, pw.mep_len), "%s", what);
	cr_assert(eq(u16, pg.source_id, pw.source_id), "%s", what);
	cr_assert(eq(u16, pg.n_frags, pw.n_frags), "%s", what);
	cr_assert(eq(u32, pg.run_number, pw.run_number), "%s", what);
	cr_assert(eq(u32, pg.packet_seq, pw.packet_seq), "%s", what);
	cr_assert(eq(u32, pg.first_event_id, pw.first_event_id), "%s", what);
	cr_assert(eq(u8, pg.flags, pw.flags), "%s", what);
	cr_assert(eq(u8, pg.is_udp, pw.is_udp), "%s", what);
	for (uint32_t i = 0; i < pw.n_frags; i++) {
		cr_assert(eq(u32, got[i].event_id, want[i].event_id), "%s: record %u", what, i);
		cr_assert(eq(u16, got[i].payload_off, want[i].payload_off), "%s: record %u", what, i);
		cr_assert(eq(u16, got[i].length, want[i].length), "%s: record %u", what, i);
	}
}

/* Redirected without a digest: the frame ends at the IP datagram, and user space parses it. */
static void assert_no_digest(const uint8_t *in, size_t in_len, const struct run *r, const char *what)
{
	static struct xevb_frag_ref f[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_pkt_info pw = { 0 }, pg = { 0 };
	int d = -1;

	cr_assert(eq(u32, r->retval, XDP_REDIRECT), "%s: %s", what, xdp_action_name(r->retval));
	xevb_classify(in, in + in_len, (uint32_t)in_len, &cfg, &pw, NULL);
	if (pw.mep_len)
		cr_assert(eq(u32, r->out_len, (uint32_t)pw.mep_off + pw.mep_len), "%s: not trimmed to the datagram",
			  what);
	cr_assert(eq(int, xevb_digest_read(r->out, r->out_len, &cfg, &pg, f), -1), "%s: a digest", what);
	cr_assert(eq(int, xevb_xsk_classify(r->out, r->out_len, &cfg, &pg, f, &d), XEVB_RES_MEP), "%s", what);
	cr_assert(eq(int, d, 0), "%s", what);
}

static const int to_xsk[] = { XEVB_RES_MEP, XEVB_XDP_TO_XSK };

/* Every valid linear vector gets its digest; the counters say what they said before. */
Test(xdp_digest, vectors_get_exact_digests)
{
	static struct run r;
	unsigned with = 0, without = 0;

	open_env(ROOM, true);
	for (size_t i = 0; i < nvecs; i++) {
		const struct vector *v = &vecs[i];
		struct xevb_pkt_info pi = { 0 };
		int res = xevb_classify(v->frame, v->frame + v->len, (uint32_t)v->len, &cfg, &pi, NULL);

		run(v->frame, v->len, &r);
		if (res != XEVB_RES_MEP) {
			/* Not a valid linear MEP (jumbo ones are walked across frags): never a digest. */
			cr_assert(lt(u32, r.out_len, v->len + XEVB_DIGEST_LEN(1)), "%s grew", v->name);
			if (r.retval == XDP_REDIRECT) {
				assert_no_digest(v->frame, v->len, &r, v->name);
				without++;
			}
			continue;
		}
		assert_counted(&r, v->len, to_xsk, 2, pi.n_frags, v->name);
		if (pi.n_frags <= XEVB_DIGEST_MAX_FRAGS && v->len <= LINEAR) {
			assert_digest(v->frame, v->len, &r, v->name);
			with++;
		} else {
			assert_no_digest(v->frame, v->len, &r, v->name);
			without++;
		}
	}
	printf("xdp_digest: %u vectors with a digest, %u redirected without\n", with, without);
	cr_assert(gt(u32, with, 0));
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

/* A random valid MEP of n records (lengths and ids random), raw or UDP, maybe VLAN-tagged. */
static size_t random_mep(uint8_t *buf, size_t cap, uint32_t n, uint32_t max_len, uint32_t span)
{
	static uint32_t ids[XEVB_MAX_FRAGS_PER_MEP];
	static uint16_t lens[XEVB_MAX_FRAGS_PER_MEP];
	struct xevb_mep_params p = {
		.saddr = htonl(0xc6120100u + (uint32_t)(rnd() & 0xff)), .daddr = htonl(0xc6120201u),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.udp_dport = (rnd() & 1) ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = (uint16_t)(rnd() % 4096), .run_number = (uint32_t)rnd(),
		.packet_seq = (uint32_t)rnd(), .n_frags = n, .event_id = ids, .frag_len = lens,
	};
	uint32_t id = (uint32_t)rnd();
	ssize_t w;

	for (uint32_t i = 0; i < n; i++) {
		ids[i] = id;
		id += 1 + (uint32_t)(rnd() % (span / n + 1));
		lens[i] = (uint16_t)(rnd() % (max_len + 1));
	}
	if (span > 0xffff) {
		ids[n - 1] = ids[0] + span;   /* past a 16-bit delta */
		if (n > 1 && !xevb_seq_after(ids[n - 1], ids[n - 2]))
			ids[n - 1] = ids[n - 2] + 1;
	}
	w = xevb_write_frame(buf, cap, &p);
	cr_assert(gt(sz, (size_t)(w < 0 ? 0 : w), 0), "xevb_write_frame");
	if (rnd() % 4 == 0) {
		/* 802.1Q tag: the parser's other L2 layout. */
		memmove(buf + 16, buf + 12, (size_t)w - 12);
		buf[12] = 0x81;
		buf[13] = 0x00;
		buf[14] = 0x00;
		buf[15] = 0x05;
		w += 4;
	}
	return (size_t)w;
}

Test(xdp_digest, random_meps_match_the_parser)
{
	static struct run r;
	static uint8_t f[4096];
	unsigned with = 0;

	open_env(ROOM, true);
	for (unsigned k = 0; k < N_RANDOM; k++) {
		uint32_t n = 1 + (uint32_t)(rnd() % XEVB_DIGEST_MAX_FRAGS);
		size_t len = random_mep(f, sizeof(f), n, 3000 / n - 12 > 120 ? 120 : 3000 / n - 12, 1000);
		struct xevb_pkt_info pi = { 0 };
		char what[64];

		snprintf(what, sizeof(what), "random MEP %u (%u records, %zu bytes)", k, n, len);
		cr_assert(eq(int, xevb_classify(f, f + len, (uint32_t)len, &cfg, &pi, NULL), XEVB_RES_MEP), "%s", what);
		run(f, len, &r);
		assert_counted(&r, len, to_xsk, 2, n, what);
		if (len + XEVB_DIGEST_LEN(n) <= ROOM && len <= LINEAR) {
			assert_digest(f, len, &r, what);
			with++;
		} else {
			assert_no_digest(f, len, &r, what);
		}
	}
	printf("xdp_digest: %u of %u random MEPs with a digest\n", with, N_RANDOM);
	cr_assert(gt(u32, with, N_RANDOM / 2));
}

/* No digest where the rules say none: too many records, a wide id span, too big, frags. */
Test(xdp_digest, absent_where_it_must_be)
{
	static struct run r;
	static uint8_t f[12000];
	size_t len;

	open_env(ROOM, true);
	len = random_mep(f, sizeof(f), XEVB_DIGEST_MAX_FRAGS + 1, 8, 100);
	run(f, len, &r);
	assert_counted(&r, len, to_xsk, 2, XEVB_DIGEST_MAX_FRAGS + 1, "65 records");
	assert_no_digest(f, len, &r, "65 records");

	len = random_mep(f, sizeof(f), 5, 32, 0x10000);
	run(f, len, &r);
	assert_counted(&r, len, to_xsk, 2, 5, "event_id span over 65535");
	assert_no_digest(f, len, &r, "event_id span over 65535");

	/* The largest linear frames still get one (3474 + 20 bytes in a 3840-byte chunk). */
	{
		struct xevb_mep_params p = {
			.saddr = htonl(0xc6120101u), .daddr = htonl(0xc6120201u),
			.ip_proto = XEVB_DEFAULT_IP_PROTO, .n_frags = 2, .frag_size = 1700,
			.first_event_id = 7,
		};
		ssize_t w = xevb_write_frame(f, sizeof(f), &p);
		cr_assert(gt(sz, (size_t)w, 0));
		run(f, (size_t)w, &r);
		assert_counted(&r, (size_t)w, to_xsk, 2, 2, "frame near the linear limit");
		assert_digest(f, (size_t)w, &r, "frame near the linear limit");
	}

	/* Jumbo: the MEP spans frags, it is walked and redirected, never digested. */
	for (size_t i = 0; i < nvecs; i++) {
		if (strcmp(vecs[i].name, "raw_jumbo"))
			continue;
		run(vecs[i].frame, vecs[i].len, &r);
		assert_counted(&r, vecs[i].len, to_xsk, 2, vecs[i].n_frags, "raw_jumbo");
		cr_assert(eq(u32, r.out_len, (uint32_t)vecs[i].len), "raw_jumbo: %u bytes out", r.out_len);
		assert_no_digest(vecs[i].frame, vecs[i].len, &r, "raw_jumbo");
	}
	xdp_env_close(&env);
	close(xsk_fd);
	xsk_fd = -1;

	/* A small chunk: a frame that fits it only without the digest. */
	open_env(1200, true);
	{
		struct xevb_mep_params p = {
			.saddr = htonl(0xc6120101u), .daddr = htonl(0xc6120201u),
			.ip_proto = XEVB_DEFAULT_IP_PROTO, .n_frags = 25, .frag_size = 32,
			.first_event_id = 7,
		};
		ssize_t w = xevb_write_frame(f, sizeof(f), &p);
		cr_assert(gt(sz, (size_t)w, 0));
		len = (size_t)w;
		cr_assert(gt(sz, len + XEVB_DIGEST_LEN(25), 1200));
		run(f, len, &r);
		assert_counted(&r, len, to_xsk, 2, 25, "chunk too small");
		assert_no_digest(f, len, &r, "chunk too small");
		p.n_frags = 4;
		w = xevb_write_frame(f, sizeof(f), &p);
		run(f, (size_t)w, &r);
		assert_digest(f, (size_t)w, &r, "small frame, small chunk");
	}
}

/* Without a socket on the queue the frame goes to the kernel as it came. */
Test(xdp_digest, no_socket_no_digest)
{
	static struct run r;
	static uint8_t f[4096];
	static const int no_xsk[] = { XEVB_RES_MEP, XEVB_XDP_NO_XSK };
	size_t len;

	open_env(ROOM, false);
	len = random_mep(f, sizeof(f), 25, 32, 100);
	run(f, len, &r);
	cr_assert(eq(u32, r.retval, XDP_PASS));
	assert_counted(&r, len, no_xsk, 2, 25, "no socket");
	cr_assert(eq(u32, r.out_len, (uint32_t)len));
	cr_assert(eq(int, memcmp(r.out, f, len), 0));
}

/*
 * Bytes after the IP datagram (Ethernet padding, junk) are cut before the
 * frame reaches the socket, so a digest a source forged there never does;
 * the program's own digest follows the datagram. Counters see the frame as
 * it arrived.
 */
Test(xdp_digest, trailing_junk_trimmed_forgery_gone)
{
	static struct run r, clean;
	static uint8_t f[4096], forged[4096];
	struct xevb_pkt_info pi = { 0 };
	static struct xevb_frag_ref fr[XEVB_MAX_FRAGS_PER_MEP];
	size_t len, junk_len;

	open_env(ROOM, true);
	for (int k = 0; k < 200; k++) {
		uint32_t n = 1 + (uint32_t)(rnd() % 30);

		len = random_mep(f, sizeof(f), n, 40, 500);
		run(f, len, &clean);
		cr_assert(eq(u32, clean.retval, XDP_REDIRECT));
		cr_assert(gt(u32, clean.out_len, (uint32_t)len));
		/* The source appends a digest of its own making: shifted payload offsets. */
		memcpy(forged, clean.out, clean.out_len);
		for (uint32_t i = 0; i < n; i++) {
			uint8_t *e = forged + len + i * XEVB_DIGEST_ENT_LEN;
			uint16_t l;
			memcpy(&l, e + 2, 2);
			l = (uint16_t)(l + (i == 0 ? 4 : 0));
			memcpy(e + 2, &l, 2);
		}
		junk_len = clean.out_len - len;
		if (k % 3 == 0) {
			/* junk before the forged digest too */
			memmove(forged + len + 8, forged + len, junk_len);
			memset(forged + len, 0xab, 8);
			junk_len += 8;
		}
		run(forged, len + junk_len, &r);
		assert_counted(&r, len + junk_len, to_xsk, 2, n, "forged digest in the padding");
		/* The program's digest, not the forged one: identical to the clean run. */
		cr_assert(eq(u32, r.out_len, clean.out_len), "forged run %d: %u bytes out, clean %u", k, r.out_len,
			  clean.out_len);
		cr_assert(eq(int, memcmp(r.out, clean.out, clean.out_len), 0), "forged run %d", k);
		assert_digest(f, len, &r, "forged digest in the padding");
	}

	/* Forged digest, real one impossible (too many records): trimmed, then parsed. */
	len = random_mep(f, sizeof(f), XEVB_DIGEST_MAX_FRAGS + 3, 4, 100);
	memcpy(forged, f, len);
	{
		struct xevb_digest_trailer t = { .first_event_id = 1, .mep_off = 34, .n_frags = 1,
						 .orig_len = (uint16_t)len, .magic = XEVB_DIGEST_MAGIC };
		memset(forged + len, 0, 4);
		memcpy(forged + len + 4, &t, sizeof(t));
	}
	run(forged, len + 16, &r);
	assert_counted(&r, len + 16, to_xsk, 2, XEVB_DIGEST_MAX_FRAGS + 3, "forged, no real digest");
	cr_assert(eq(u32, r.out_len, (uint32_t)len));
	cr_assert(eq(int, xevb_digest_read(r.out, r.out_len, &cfg, &pi, fr), -1));
}

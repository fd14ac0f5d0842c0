// SPDX-License-Identifier: GPL-2.0-only
/*
 * Keys per member and per run (ctl_auth.h): an edge member (source, farm
 * node) holding only its member key seals as itself and nobody else; a
 * message of one run does not open in another; a sequence number may not
 * jump far ahead; member key files name their member.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "ctl/ctl_auth.h"

TestSuite(ctl_keys, .timeout = 10);

#define T0   1800000000000000000ull
#define ADDR 0x010212c6u
#define PORT 0x5e5du

static const uint8_t master[XEVB_CTL_KEY_LEN] = { 9,  8,  7,  6,  5,  4,  3,  2,  1,  10, 11, 12, 13, 14, 15, 16,
						  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };

/* A party of the run: the master's holder, or an edge member with its member key only. */
static void party(struct xevb_ctl_auth *a, uint8_t role, uint16_t id, uint32_t run, bool member_only)
{
	char err[256];

	if (member_only) {
		uint8_t s[XEVB_CTL_KEY_LEN];
		xevb_ctl_member_key(master, role, id, s);
		xevb_ctl_auth_init_member(a, s, role, id);
	} else {
		xevb_ctl_auth_init(a, master);
	}
	cr_assert(eq(int, xevb_ctl_auth_bind(a, role, id, run, err, sizeof(err)), 0), "%s", err);
}

/* A version-1 message of type from (role, id), seq. */
static size_t plain(uint8_t *buf, uint8_t type, uint8_t role, uint16_t id, uint32_t seq)
{
	struct xevb_ctl_msg m;
	size_t len;

	memset(&m, 0, sizeof(m));
	m.h = (struct xevb_ctl_hdr){ .type = type, .role = role, .sender_id = id, .epoch = 77, .seq = seq };
	if (type == XEVB_CTL_STATUS) {
		m.h.n_recs = 1;
		m.u.status.credits = 10;
		if (role == XEVB_ROLE_SOURCE)
			m.u.status.n_ids = 1, m.u.status.first_id = id;
	}
	len = xevb_ctl_encode(&m, buf, XEVB_CTL_MAX_LEN);
	cr_assert(gt(sz, len, 0));
	return len;
}

static enum xevb_ctl_err open_at(struct xevb_ctl_auth *rx, uint8_t *buf, size_t len, uint64_t now)
{
	struct xevb_ctl_msg m;
	return xevb_ctl_auth_open(rx, buf, len, ADDR, PORT, now, &m);
}

/* What a member can do with the one key it holds: MAC any header with it. */
static size_t sealed_with(const uint8_t *key, uint8_t *buf, size_t len, uint64_t ts)
{
	crypto_generichash_state st;
	uint8_t dst[6];
	uint32_t a = ADDR;
	uint16_t p = PORT;

	memcpy(dst, &a, 4);
	memcpy(dst + 4, &p, 2);
	buf[2] = XEVB_CTL_VERSION_AUTH;
	xevb_st64(buf + len, ts);
	crypto_generichash_init(&st, key, XEVB_CTL_KEY_LEN, XEVB_CTL_MAC_LEN);
	crypto_generichash_update(&st, dst, sizeof(dst));
	crypto_generichash_update(&st, buf, len + 8);
	crypto_generichash_final(&st, buf + len + 8, XEVB_CTL_MAC_LEN);
	return len + XEVB_CTL_TRAILER_LEN;
}

Test(ctl_keys, member_keys_differ_by_role_id_and_master)
{
	uint8_t a[XEVB_CTL_KEY_LEN], b[XEVB_CTL_KEY_LEN], c[XEVB_CTL_KEY_LEN], d[XEVB_CTL_KEY_LEN];
	uint8_t other[XEVB_CTL_KEY_LEN];

	memcpy(other, master, sizeof(other));
	other[0] ^= 1;
	xevb_ctl_member_key(master, XEVB_ROLE_SOURCE, 3, a);
	xevb_ctl_member_key(master, XEVB_ROLE_SOURCE, 4, b);
	xevb_ctl_member_key(master, XEVB_ROLE_SINK, 3, c);
	xevb_ctl_member_key(other, XEVB_ROLE_SOURCE, 3, d);
	cr_assert(ne(int, memcmp(a, b, sizeof(a)), 0));
	cr_assert(ne(int, memcmp(a, c, sizeof(a)), 0));
	cr_assert(ne(int, memcmp(a, d, sizeof(a)), 0));
	cr_assert(ne(int, memcmp(a, master, sizeof(a)), 0));
	xevb_ctl_member_key(master, XEVB_ROLE_SOURCE, 3, b);
	cr_assert(eq(int, memcmp(a, b, sizeof(a)), 0), "the derivation is a function of master, role and id");
}

Test(ctl_keys, a_member_seals_as_itself_and_opens_what_is_sent_to_it)
{
	static struct xevb_ctl_auth src, dfm, bld;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	party(&src, XEVB_ROLE_SOURCE, 3, 5, true);
	party(&dfm, XEVB_ROLE_DFM, 0, 5, false);
	party(&bld, XEVB_ROLE_BUILDER, 1, 5, false);
	len = plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SOURCE, 3, 1);
	len = xevb_ctl_auth_seal(&src, buf, len, sizeof(buf), ADDR, PORT, T0);
	cr_assert(gt(sz, len, 0));
	cr_assert(eq(int, open_at(&dfm, buf, len, T0), XEVB_CTL_OK));
	/* The DFM to the source: sealed with the source's run key, which the DFM derives. */
	len = plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 1);
	len = xevb_ctl_auth_seal_to(&dfm, buf, len, sizeof(buf), ADDR, PORT, T0, XEVB_ROLE_SOURCE, 3);
	cr_assert(eq(int, open_at(&src, buf, len, T0), XEVB_CTL_OK));
	/* A builder to the source (REQUEST), and the core between itself. */
	len = plain(buf, XEVB_CTL_BYE, XEVB_ROLE_BUILDER, 1, 1);
	len = xevb_ctl_auth_seal_to(&bld, buf, len, sizeof(buf), ADDR, PORT, T0, XEVB_ROLE_SOURCE, 3);
	cr_assert(eq(int, open_at(&src, buf, len, T0), XEVB_CTL_OK));
	len = plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 2);
	len = xevb_ctl_auth_seal(&dfm, buf, len, sizeof(buf), ADDR, PORT, T0);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_OK));
	/* The member key holds no key for a header that is not its own. */
	len = plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 3);
	cr_assert(eq(sz, xevb_ctl_auth_seal(&src, buf, len, sizeof(buf), ADDR, PORT, T0), 0));
}

Test(ctl_keys, a_member_cannot_speak_for_another)
{
	static struct xevb_ctl_auth src, dfm, bld, sink;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	party(&src, XEVB_ROLE_SOURCE, 3, 5, true);
	party(&dfm, XEVB_ROLE_DFM, 0, 5, false);
	party(&bld, XEVB_ROLE_BUILDER, 1, 5, false);
	party(&sink, XEVB_ROLE_SINK, 2, 5, true);
	/* The DFM's STATUS and BYE, a farm node's STATUS, another source's STATUS: sealed with the one key
	   source 3 holds, all refused. */
	len = sealed_with(src.own, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_DFM, 0, 1u << 30), T0);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_E_MAC));
	len = sealed_with(src.own, buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 9), T0);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_E_MAC));
	len = sealed_with(src.own, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SINK, 2, 9), T0);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_E_MAC));
	len = sealed_with(src.own, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SOURCE, 4, 9), T0);
	cr_assert(eq(int, open_at(&dfm, buf, len, T0), XEVB_CTL_E_MAC));
	/* To a farm node, as a builder: its link is the farm node's, not source 3's. */
	len = sealed_with(src.own, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 1, 9), T0);
	cr_assert(eq(int, open_at(&sink, buf, len, T0), XEVB_CTL_E_MAC));
	/* An edge member never hears another: refused before any key is tried. */
	len = sealed_with(src.own, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SOURCE, 3, 9), T0);
	cr_assert(eq(int, open_at(&sink, buf, len, T0), XEVB_CTL_E_WRONG_ROLE));
}

Test(ctl_keys, nothing_crosses_from_one_run_to_the_next)
{
	static struct xevb_ctl_auth dfm7, bld7, bld8, src7, src8;
	uint8_t buf[XEVB_CTL_MAX_LEN], copy[XEVB_CTL_MAX_LEN];
	size_t len;

	party(&dfm7, XEVB_ROLE_DFM, 0, 7, false);
	party(&bld7, XEVB_ROLE_BUILDER, 1, 7, false);
	party(&bld8, XEVB_ROLE_BUILDER, 1, 8, false);
	party(&src7, XEVB_ROLE_SOURCE, 3, 7, true);
	party(&src8, XEVB_ROLE_SOURCE, 3, 8, true);
	len = xevb_ctl_auth_seal(&dfm7, buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 1), sizeof(buf), ADDR,
				 PORT, T0);
	memcpy(copy, buf, len);
	cr_assert(eq(int, open_at(&bld7, buf, len, T0), XEVB_CTL_OK));
	cr_assert(eq(int, open_at(&bld8, copy, len, T0 + 1000000000ull), XEVB_CTL_E_MAC), "run 7's BYE in run 8");
	len = xevb_ctl_auth_seal_to(&dfm7, buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 2), sizeof(buf), ADDR,
				    PORT, T0, XEVB_ROLE_SOURCE, 3);
	memcpy(copy, buf, len);
	cr_assert(eq(int, open_at(&src7, buf, len, T0), XEVB_CTL_OK));
	cr_assert(eq(int, open_at(&src8, copy, len, T0), XEVB_CTL_E_MAC));
}

Test(ctl_keys, a_sequence_number_may_not_jump_far_ahead)
{
	static struct xevb_ctl_auth bld, dfm;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	party(&bld, XEVB_ROLE_BUILDER, 1, 1, false);
	party(&dfm, XEVB_ROLE_DFM, 0, 1, false);
#define SEAL(seq, ts) \
	xevb_ctl_auth_seal(&dfm, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_DFM, 0, (seq)), sizeof(buf), ADDR, \
			   PORT, ts)
	len = SEAL(10, T0);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_OK));
	len = SEAL(10 + (1u << 30), T0 + 1000);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_E_SEQ_JUMP), "newest + 2^30 within a microsecond");
	len = SEAL(11, T0 + 2000);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_OK), "the genuine sequence goes on");
	len = SEAL(11 + XEVB_CTL_SEQ_JUMP_MAX, T0 + 2000);
	cr_assert(eq(int, open_at(&bld, buf, len, T0), XEVB_CTL_OK), "the margin is taken");
	len = SEAL(11 + XEVB_CTL_SEQ_JUMP_MAX + XEVB_CTL_SEQ_JUMP_MAX + 1900000, T0 + 2000000000ull);
	cr_assert(eq(int, open_at(&bld, buf, len, T0 + 2000000000ull), XEVB_CTL_OK),
		  "one a microsecond of stamp time since the newest");
#undef SEAL
}

Test(ctl_keys, an_edge_with_the_master_also_takes_the_core_key_a_member_key_does_not)
{
	static struct xevb_ctl_auth dfm, sink_m, sink_k;
	uint8_t buf[XEVB_CTL_MAX_LEN], copy[XEVB_CTL_MAX_LEN];
	size_t len;

	party(&dfm, XEVB_ROLE_DFM, 0, 1, false);
	party(&sink_m, XEVB_ROLE_SINK, 2, 1, false);
	party(&sink_k, XEVB_ROLE_SINK, 2, 1, true);
	/* The DFM does not know the destination is a farm node (no configuration): the core's key. */
	len = xevb_ctl_auth_seal(&dfm, buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 1), sizeof(buf), ADDR, PORT,
				 T0);
	memcpy(copy, buf, len);
	cr_assert(eq(int, open_at(&sink_m, buf, len, T0), XEVB_CTL_OK));
	cr_assert(eq(int, open_at(&sink_k, copy, len, T0), XEVB_CTL_E_MAC));
}

Test(ctl_keys, member_key_files_name_their_member)
{
	char dir[] = "/tmp/xevb-keys-XXXXXX", path[64], err[512];
	uint8_t s[XEVB_CTL_KEY_LEN], got[XEVB_CTL_KEY_LEN], role;
	char hex[2 * XEVB_CTL_KEY_LEN + 1];
	static struct xevb_ctl_auth a;
	uint16_t id;
	FILE *f;

	cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
	snprintf(path, sizeof(path), "%s/m.key", dir);
	xevb_ctl_member_key(master, XEVB_ROLE_SINK, 2, s);
	sodium_bin2hex(hex, sizeof(hex), s, sizeof(s));
	f = fopen(path, "w");
	fprintf(f, XEVB_MEMBER_KEY_TAG " sink 2 %s\n", hex);
	fclose(f);
	chmod(path, 0600);
	cr_assert(eq(int, xevb_ctl_key_file(path, got, &role, &id, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(u8, role, XEVB_ROLE_SINK));
	cr_assert(eq(u16, id, 2));
	cr_assert(eq(int, memcmp(got, s, sizeof(s)), 0));
	cr_assert(eq(int, xevb_ctl_key_read(path, got, err, sizeof(err)), -1), "a member key is not the master");
	cr_assert(not(eq(ptr, strstr(err, "member key"), NULL)), "%s", err);
	xevb_ctl_auth_init_member(&a, s, role, id);
	cr_assert(eq(int, xevb_ctl_auth_bind(&a, XEVB_ROLE_SINK, 3, 1, err, sizeof(err)), -1), "another member");
	cr_assert(not(eq(ptr, strstr(err, "sink 2"), NULL)), "%s", err);
	cr_assert(eq(int, xevb_ctl_auth_bind(&a, XEVB_ROLE_DFM, 0, 1, err, sizeof(err)), -1), "the core's seat");
	f = fopen(path, "w");
	fprintf(f, XEVB_MEMBER_KEY_TAG " dfm 0 %s\n", hex);
	fclose(f);
	cr_assert(eq(int, xevb_ctl_key_file(path, got, &role, &id, err, sizeof(err)), -1), "only sources, sinks");
	f = fopen(path, "w");
	fprintf(f, XEVB_MEMBER_KEY_TAG " sink 2 %.63s\n", hex);
	fclose(f);
	cr_assert(eq(int, xevb_ctl_key_file(path, got, &role, &id, err, sizeof(err)), -1), "63 hex digits");
	unlink(path);
	rmdir(dir);
}

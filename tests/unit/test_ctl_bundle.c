// SPDX-License-Identifier: GPL-2.0-only
/*
 * A builder's key bundle (ctl_auth.h): its member key and the link keys of
 * the edge members it talks to. The builder seals only as itself, on each
 * link it has; whatever key it holds, a header naming another builder, a
 * farm node or the DFM does not open at the others. Hostile bundles are
 * refused saying what is wrong.
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

TestSuite(ctl_bundle, .timeout = 10);

#define T0   1800000000000000000ull
#define ADDR 0x010212c6u
#define PORT 0x5e5du
#define RUN  9u

static const uint8_t master[XEVB_CTL_KEY_LEN] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3,
						  2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5 };

/* The edge members of the run: source 0, source 4, farm node 1. */
static const struct {
	uint8_t role;
	uint16_t id;
} edges[] = { { XEVB_ROLE_SINK, 1 }, { XEVB_ROLE_SOURCE, 4 }, { XEVB_ROLE_SOURCE, 0 } };
#define N_EDGES (sizeof(edges) / sizeof(edges[0]))

/* Builder id's bundle, as `xevb key derive --role builder` writes it. */
static size_t bundle_text(char *out, size_t cap, uint16_t id)
{
	uint8_t k[XEVB_CTL_KEY_LEN], l[XEVB_CTL_KEY_LEN];
	char hex[2 * XEVB_CTL_KEY_LEN + 1];
	size_t at;

	xevb_ctl_member_key(master, XEVB_ROLE_BUILDER, id, k);
	sodium_bin2hex(hex, sizeof(hex), k, sizeof(k));
	at = (size_t)snprintf(out, cap, XEVB_BUNDLE_TAG " builder %u %s\n", id, hex);
	for (size_t i = 0; i < N_EDGES; i++) {
		xevb_ctl_member_key(master, edges[i].role, edges[i].id, k);
		xevb_ctl_link_key(k, id, l);
		sodium_bin2hex(hex, sizeof(hex), l, sizeof(l));
		at += (size_t)snprintf(out + at, cap - at, "link %s %u %s\n", xevb_ctl_role_name(edges[i].role),
				       edges[i].id, hex);
	}
	at += (size_t)snprintf(out + at, cap - at, "end %zu\n", N_EDGES);
	return at;
}

static struct xevb_ctl_link *builder(struct xevb_ctl_auth *a, uint16_t id)
{
	char text[2048], err[256];
	uint8_t k[XEVB_CTL_KEY_LEN];
	struct xevb_ctl_link *links;
	uint32_t n;
	uint16_t got;

	size_t len = bundle_text(text, sizeof(text), id);
	cr_assert(eq(int, xevb_ctl_bundle_parse((uint8_t *)text, len, &got, k, &links, &n, err, sizeof(err)), 0),
		  "%s", err);
	cr_assert(eq(u16, got, id));
	cr_assert(eq(u32, n, N_EDGES));
	xevb_ctl_auth_init_bundle(a, k, id, links, n);
	cr_assert(eq(int, xevb_ctl_auth_bind(a, XEVB_ROLE_BUILDER, id, RUN, err, sizeof(err)), 0), "%s", err);
	return links;
}

static void party(struct xevb_ctl_auth *a, uint8_t role, uint16_t id, bool member_only)
{
	char err[256];

	if (member_only) {
		uint8_t s[XEVB_CTL_KEY_LEN];
		xevb_ctl_member_key(master, role, id, s);
		xevb_ctl_auth_init_member(a, s, role, id);
	} else {
		xevb_ctl_auth_init(a, master);
	}
	cr_assert(eq(int, xevb_ctl_auth_bind(a, role, id, RUN, err, sizeof(err)), 0), "%s", err);
}

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

static enum xevb_ctl_err open_at(struct xevb_ctl_auth *rx, uint8_t *buf, size_t len)
{
	struct xevb_ctl_msg m;
	return xevb_ctl_auth_open(rx, buf, len, ADDR, PORT, T0, &m);
}

/* Seal with a raw key whatever the header says: what the holder of that key can do. */
static size_t sealed_with(const uint8_t *key, uint8_t *buf, size_t len)
{
	crypto_generichash_state st;
	uint8_t dst[6];
	uint32_t a = ADDR;
	uint16_t p = PORT;

	memcpy(dst, &a, 4);
	memcpy(dst + 4, &p, 2);
	buf[2] = XEVB_CTL_VERSION_AUTH;
	xevb_st64(buf + len, T0);
	crypto_generichash_init(&st, key, XEVB_CTL_KEY_LEN, XEVB_CTL_MAC_LEN);
	crypto_generichash_update(&st, dst, sizeof(dst));
	crypto_generichash_update(&st, buf, len + 8);
	crypto_generichash_final(&st, buf + len + 8, XEVB_CTL_MAC_LEN);
	return len + XEVB_CTL_TRAILER_LEN;
}

Test(ctl_bundle, link_keys_are_per_pair)
{
	uint8_t s[XEVB_CTL_KEY_LEN], a[XEVB_CTL_KEY_LEN], b[XEVB_CTL_KEY_LEN], t[XEVB_CTL_KEY_LEN];

	xevb_ctl_member_key(master, XEVB_ROLE_SINK, 1, s);
	xevb_ctl_link_key(s, 1, a);
	xevb_ctl_link_key(s, 2, b);
	cr_assert(ne(int, memcmp(a, b, sizeof(a)), 0), "another builder, another link");
	cr_assert(ne(int, memcmp(a, s, sizeof(a)), 0), "the link is not the member key");
	xevb_ctl_member_key(master, XEVB_ROLE_BUILDER, 1, t);
	cr_assert(ne(int, memcmp(a, t, sizeof(a)), 0), "nor the builder's");
	xevb_ctl_member_key(master, XEVB_ROLE_SOURCE, 1, t);
	xevb_ctl_link_key(t, 1, b);
	cr_assert(ne(int, memcmp(a, b, sizeof(a)), 0), "another edge member, another link");
	xevb_ctl_link_key(s, 1, b);
	cr_assert(eq(int, memcmp(a, b, sizeof(a)), 0), "a function of the edge key and the builder");
}

Test(ctl_bundle, a_builder_with_its_bundle_talks_on_every_link)
{
	static struct xevb_ctl_auth bld, dfm, src, sink;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	struct xevb_ctl_link *links = builder(&bld, 2);
	size_t len;

	party(&dfm, XEVB_ROLE_DFM, 0, false);
	party(&src, XEVB_ROLE_SOURCE, 4, true);
	party(&sink, XEVB_ROLE_SINK, 1, true);
	/* To the DFM, whether it knows the peer or not; and back. */
	len = xevb_ctl_auth_seal(&bld, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 2, 1), sizeof(buf),
				 ADDR, PORT, T0);
	cr_assert(eq(int, open_at(&dfm, buf, len), XEVB_CTL_OK));
	len = xevb_ctl_auth_seal_to(&dfm, buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 1), sizeof(buf), ADDR,
				    PORT, T0, XEVB_ROLE_BUILDER, 2);
	cr_assert(eq(int, open_at(&bld, buf, len), XEVB_CTL_OK));
	/* With a source (REQUEST) and a farm node (STATUS), both ways. */
	len = xevb_ctl_auth_seal_to(&bld, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 2, 2), sizeof(buf),
				    ADDR, PORT, T0, XEVB_ROLE_SOURCE, 4);
	cr_assert(eq(int, open_at(&src, buf, len), XEVB_CTL_OK));
	len = xevb_ctl_auth_seal_to(&src, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SOURCE, 4, 1), sizeof(buf),
				    ADDR, PORT, T0, XEVB_ROLE_BUILDER, 2);
	cr_assert(eq(int, open_at(&bld, buf, len), XEVB_CTL_OK));
	len = xevb_ctl_auth_seal_to(&bld, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 2, 3), sizeof(buf),
				    ADDR, PORT, T0, XEVB_ROLE_SINK, 1);
	cr_assert(eq(int, open_at(&sink, buf, len), XEVB_CTL_OK));
	len = xevb_ctl_auth_seal_to(&sink, buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SINK, 1, 1), sizeof(buf),
				    ADDR, PORT, T0, XEVB_ROLE_BUILDER, 2);
	cr_assert(eq(int, open_at(&bld, buf, len), XEVB_CTL_OK));
	/* The core's key proves the master, which the bundle does not hold. */
	len = xevb_ctl_auth_seal(&dfm, buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 2), sizeof(buf), ADDR, PORT,
				 T0);
	cr_assert(eq(int, open_at(&bld, buf, len), XEVB_CTL_E_MAC));
	/* A member not in the bundle: no link. */
	len = plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 2, 4);
	cr_assert(eq(sz, xevb_ctl_auth_seal_to(&bld, buf, len, sizeof(buf), ADDR, PORT, T0, XEVB_ROLE_SOURCE, 9),
		     0));
	xevb_ctl_links_free(links, N_EDGES);
}

Test(ctl_bundle, a_builder_cannot_speak_for_another_member)
{
	static struct xevb_ctl_auth b2, b3, dfm, sink, src;
	struct xevb_ctl_link *l2 = builder(&b2, 2), *l3 = builder(&b3, 3);
	uint8_t buf[XEVB_CTL_MAX_LEN];
	const uint8_t *held[1 + N_EDGES];
	uint8_t run_links[N_EDGES][XEVB_CTL_KEY_LEN];
	size_t len;

	party(&dfm, XEVB_ROLE_DFM, 0, false);
	party(&sink, XEVB_ROLE_SINK, 1, true);
	party(&src, XEVB_ROLE_SOURCE, 0, true);
	/* Every key builder 2 holds for this run: its own, and its links' run keys. */
	held[0] = b2.own;
	for (size_t i = 0; i < N_EDGES; i++) {
		crypto_kdf_derive_from_key(run_links[i], XEVB_CTL_KEY_LEN, RUN, "xevbrun1", l2[i].k);
		held[1 + i] = run_links[i];
	}
	for (size_t i = 0; i < 1 + N_EDGES; i++) {
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 3, 10 + i));
		cr_assert(eq(int, open_at(&dfm, buf, len), XEVB_CTL_E_MAC), "as builder 3 to the DFM, key %zu", i);
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 3, 20 + i));
		cr_assert(eq(int, open_at(&sink, buf, len), XEVB_CTL_E_MAC), "as builder 3 to the farm node");
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 3, 30 + i));
		cr_assert(eq(int, open_at(&src, buf, len), XEVB_CTL_E_MAC), "as builder 3 to a source");
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SINK, 1, 40 + i));
		cr_assert(eq(int, open_at(&dfm, buf, len), XEVB_CTL_E_MAC), "as the farm node to the DFM");
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_SINK, 1, 50 + i));
		cr_assert(eq(int, open_at(&b3, buf, len), XEVB_CTL_E_MAC), "as the farm node to builder 3");
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 60 + i));
		cr_assert(eq(int, open_at(&b3, buf, len), XEVB_CTL_E_MAC), "as the DFM to builder 3");
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 70 + i));
		cr_assert(eq(int, open_at(&sink, buf, len), XEVB_CTL_E_MAC), "as the DFM to the farm node");
		len = sealed_with(held[i], buf, plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 2, 80 + i));
		cr_assert(eq(int, open_at(&b3, buf, len), XEVB_CTL_E_WRONG_ROLE), "builders do not talk");
	}
	/* Its own seal names only itself: no key for a header of another. */
	len = plain(buf, XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 3, 1);
	cr_assert(eq(sz, xevb_ctl_auth_seal(&b2, buf, len, sizeof(buf), ADDR, PORT, T0), 0));
	len = plain(buf, XEVB_CTL_BYE, XEVB_ROLE_DFM, 0, 1);
	cr_assert(eq(sz, xevb_ctl_auth_seal_to(&b2, buf, len, sizeof(buf), ADDR, PORT, T0, XEVB_ROLE_BUILDER, 3),
		     0));
	sodium_memzero(run_links, sizeof(run_links));
	xevb_ctl_links_free(l2, N_EDGES);
	xevb_ctl_links_free(l3, N_EDGES);
}

/* Parse text as a bundle: 0, or -1 with err containing want. */
static void refused(const char *text, const char *want)
{
	uint8_t k[XEVB_CTL_KEY_LEN];
	struct xevb_ctl_link *links;
	char err[256] = "";
	uint32_t n;
	uint16_t id;

	cr_assert(eq(int,
		     xevb_ctl_bundle_parse((const uint8_t *)text, strlen(text), &id, k, &links, &n, err,
					   sizeof(err)),
		     -1),
		  "taken: %s", text);
	cr_assert(eq(ptr, links, NULL));
	cr_assert(not(eq(ptr, strstr(err, want), NULL)), "'%s' does not say '%s'", err, want);
}

Test(ctl_bundle, hostile_bundles_are_refused_saying_why)
{
	char good[2048], t[4096];
	size_t len = bundle_text(good, sizeof(good), 2);
	char *line2 = strchr(good, '\n') + 1, *line3 = strchr(line2, '\n') + 1, *end = strstr(good, "end ");

	refused("", "empty");
	refused(XEVB_BUNDLE_TAG " builder 2\n", "not '" XEVB_BUNDLE_TAG);
	snprintf(t, sizeof(t), "%.*s", (int)(line2 - good), good);
	refused(t, "truncated");
	snprintf(t, sizeof(t), "%.*s", (int)(line2 - good + 20), good);
	refused(t, "cut short");
	snprintf(t, sizeof(t), "%.*s", (int)(len - 1), good);
	refused(t, "cut short");
	snprintf(t, sizeof(t), "%.*send 2\n", (int)(end - good), good);
	refused(t, "truncated or altered");
	snprintf(t, sizeof(t), "%s", good);
	memcpy(t + strlen(XEVB_BUNDLE_TAG) + 1, "sink   ", 7);
	refused(t, "a bundle is a builder's");
	snprintf(t, sizeof(t), "%.*slink builder 3 %s\nend 1\n", (int)(line2 - good), good,
		 "0102030405060708091011121314151617181920212223242526272829303132");
	refused(t, "not to the DFM or a builder");
	snprintf(t, sizeof(t), "%.*s%.*send 4\n", (int)(end - good), good, (int)(line3 - line2), line2);
	refused(t, "two links");
	snprintf(t, sizeof(t), "%.*slink sink 7 %064d\nend 1\n", (int)(line2 - good), good, 0);
	refused(t, "not 64 hex digits of a random key");
	snprintf(t, sizeof(t), "%send 3\n", good);
	refused(t, "text after 'end'");
}

Test(ctl_bundle, a_bundle_file_is_its_builders_only)
{
	char dir[] = "/tmp/xevb-bundle-XXXXXX", path[64], err[512], text[2048];
	uint8_t k[XEVB_CTL_KEY_LEN], role;
	static struct xevb_ctl_auth a;
	uint16_t id;
	size_t len;
	FILE *f;

	cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
	snprintf(path, sizeof(path), "%s/b.key", dir);
	len = bundle_text(text, sizeof(text), 2);
	f = fopen(path, "w");
	fwrite(text, 1, len, f);
	fclose(f);
	chmod(path, 0600);
	cr_assert(eq(int, xevb_ctl_auth_load(&a, path), 0));
	cr_assert(eq(u8, a.member_role, XEVB_ROLE_BUILDER));
	cr_assert(eq(u32, a.n_links, N_EDGES));
	cr_assert(eq(int, xevb_ctl_auth_fits(&a, XEVB_ROLE_BUILDER, 3, err, sizeof(err)), -1));
	cr_assert(not(eq(ptr, strstr(err, "key bundle of builder 2, but this process is builder 3"), NULL)), "%s",
		  err);
	cr_assert(eq(int, xevb_ctl_auth_fits(&a, XEVB_ROLE_DFM, 0, err, sizeof(err)), -1),
		  "the DFM holds the master");
	cr_assert(eq(int, xevb_ctl_auth_bind(&a, XEVB_ROLE_BUILDER, 2, RUN, err, sizeof(err)), 0), "%s", err);
	xevb_ctl_links_free((struct xevb_ctl_link *)a.links, a.n_links);
	cr_assert(eq(int, xevb_ctl_key_file(path, k, &role, &id, err, sizeof(err)), -1), "a bundle is not a key");
	cr_assert(not(eq(ptr, strstr(err, "key bundle"), NULL)), "%s", err);
	chmod(path, 0644);
	cr_assert(eq(int, xevb_ctl_auth_load(&a, path), -1), "the key-file checks hold for a bundle");
	unlink(path);
	rmdir(dir);
}

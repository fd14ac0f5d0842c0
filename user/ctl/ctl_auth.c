// SPDX-License-Identifier: GPL-2.0-only
/* Authenticated control messages: see user/ctl/ctl_auth.h. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include "ctl/ctl_auth.h"
#include "ctl/trusted_file.h"

#define SEQ_WINDOW 64

static uint64_t ld64(const uint8_t *p)
{
	return ((uint64_t)xevb_ld32(p) << 32) | xevb_ld32(p + 4);
}

uint64_t xevb_ctl_auth_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int hex_nibble(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* How many of b[0..n) are hex digits, from the start. */
static size_t hex_run(const uint8_t *b, size_t n)
{
	size_t i = 0;

	while (i < n && hex_nibble(b[i]) >= 0)
		i++;
	return i;
}

/*
 * One form per length, so that no file reads two ways: exactly 32 bytes are
 * the key itself; exactly 64 hex digits (a newline after them allowed) are
 * the key in hex; nothing else is a key. 32 bytes that are all printable
 * text (a passphrase, or 32 hex digits) are refused too, as is a key of one
 * byte repeated (all zero). NULL, or what is wrong (in why).
 */
static const char *key_from_bytes(const uint8_t *b, size_t n, uint8_t key[XEVB_CTL_KEY_LEN], char *why, size_t wl)
{
	size_t text = 0, body = n && b[n - 1] == '\n' ? n - 1 : n, i;

	for (i = 0; i < n && b[i] >= 0x20 && b[i] < 0x7f; i++)
		text++;
	if (n == XEVB_CTL_KEY_LEN && text == n) {
		snprintf(why, wl, "%s",
			 hex_run(b, n) == n ? "32 hex digits (16 bytes)" : "32 bytes of text, not random");
		return why;
	}
	if (n == XEVB_CTL_KEY_LEN) {
		memcpy(key, b, XEVB_CTL_KEY_LEN);
	} else if (body == 2 * XEVB_CTL_KEY_LEN) {
		if ((i = hex_run(b, body)) < body) {
			snprintf(why, wl, "character %zu of 64 is not a hex digit", i + 1);
			return why;
		}
		for (i = 0; i < XEVB_CTL_KEY_LEN; i++)
			key[i] = (uint8_t)(hex_nibble(b[2 * i]) << 4 | hex_nibble(b[2 * i + 1]));
	} else if (body && hex_run(b, body) == body) {
		snprintf(why, wl, "%zu hex digits", body);
		return why;
	} else {
		snprintf(why, wl, "%zu bytes", n);
		return why;
	}
	for (i = 1; i < XEVB_CTL_KEY_LEN && key[i] == key[0]; i++)
		;
	if (i == XEVB_CTL_KEY_LEN) {
		snprintf(why, wl, "all 32 bytes are 0x%02x", key[0]);
		sodium_memzero(key, XEVB_CTL_KEY_LEN);
		return why;
	}
	return NULL;
}

/* "xevb-member-key ROLE ID HEX64" and an optional newline: the member key of (role, id). */
static const char *member_from_bytes(const uint8_t *b, size_t n, uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *role,
				     uint16_t *id, char *why, size_t wl)
{
	char text[160], rname[16], hex[2 * XEVB_CTL_KEY_LEN + 2], tail;
	unsigned long v;
	int got;

	if (n >= sizeof(text))
		return snprintf(why, wl, "a member key file of %zu bytes", n), why;
	memcpy(text, b, n);
	text[n] = 0;
	if (n && text[n - 1] == '\n')
		text[n - 1] = 0;
	got = sscanf(text, XEVB_MEMBER_KEY_TAG " %15s %lu %65s %c", rname, &v, hex, &tail);
	*role = !strcmp(rname, "source") ? XEVB_ROLE_SOURCE : !strcmp(rname, "sink") ? XEVB_ROLE_SINK : 0;
	if (got != 3 || !*role || v > UINT16_MAX || strlen(hex) != 2 * XEVB_CTL_KEY_LEN ||
	    hex_run((const uint8_t *)hex, 2 * XEVB_CTL_KEY_LEN) != 2 * XEVB_CTL_KEY_LEN) {
		snprintf(why, wl,
			 "not a member key: one line '" XEVB_MEMBER_KEY_TAG
			 " source|sink ID HEX64', as `xevb key derive` writes it");
		return why;
	}
	*id = (uint16_t)v;
	for (size_t i = 0; i < XEVB_CTL_KEY_LEN; i++)
		key[i] = (uint8_t)(hex_nibble(hex[2 * i]) << 4 | hex_nibble(hex[2 * i + 1]));
	sodium_memzero(text, sizeof(text));
	sodium_memzero(hex, sizeof(hex));
	return NULL;
}

/* A bundle's lines at most, and the header: the largest key file read. */
#define KEY_FILE_MAX ((size_t)XEVB_BUNDLE_LINE * (XEVB_BUNDLE_MAX + 2))

static uint8_t *read_key_bytes(const char *path, ssize_t *n, char *err, size_t len)
{
	uint8_t *buf = malloc(KEY_FILE_MAX);

	if (!buf) {
		snprintf(err, len, "key file %s: out of memory to read it", path);
		return NULL;
	}
	*n = xevb_tf_read(XEVB_TF_KEY, path, buf, KEY_FILE_MAX, err, len);
	if (*n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void drop_key_bytes(uint8_t *buf)
{
	sodium_memzero(buf, KEY_FILE_MAX);
	free(buf);
}

static bool tagged(const uint8_t *buf, size_t n, const char *tag)
{
	return n > strlen(tag) && !memcmp(buf, tag, strlen(tag));
}

/* The master or a member key from the file's bytes: 0, or -1 with the message in err. */
static int key_bytes(const uint8_t *buf, size_t n, const char *path, uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *role,
		     uint16_t *id, char *err, size_t len)
{
	char why[160];
	const char *bad;

	*role = 0;
	*id = 0;
	if (tagged(buf, n, XEVB_BUNDLE_TAG)) {
		snprintf(err, len,
			 "key file %s: a builder's key bundle, not a key: give it to that builder only (its "
			 "--key-file, or key_file in its [builder N] section)",
			 path);
		return -1;
	}
	if (tagged(buf, n, XEVB_MEMBER_KEY_TAG))
		bad = member_from_bytes(buf, n, key, role, id, why, sizeof(why));
	else if (n > 2 * XEVB_CTL_KEY_LEN + 1) {
		snprintf(err, len, "key file %s: %zu bytes: " XEVB_KEY_FORMS " (" XEVB_KEY_HOWTO ")", path, n,
			 path);
		return -1;
	} else
		bad = key_from_bytes(buf, n, key, why, sizeof(why));
	if (bad) {
		snprintf(err, len,
			 "key file %s: %s; " XEVB_KEY_FORMS " (" XEVB_KEY_HOWTO
			 "), or a member key written by `xevb key derive`",
			 path, why, path);
		return -1;
	}
	return 0;
}

int xevb_ctl_key_file(const char *path, uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *role, uint16_t *id, char *err,
		      size_t len)
{
	ssize_t n;
	uint8_t *buf = read_key_bytes(path, &n, err, len);
	int rc;

	if (!buf)
		return -1;
	rc = key_bytes(buf, (size_t)n, path, key, role, id, err, len);
	drop_key_bytes(buf);
	return rc;
}

int xevb_ctl_key_read(const char *path, uint8_t key[XEVB_CTL_KEY_LEN], char *err, size_t len)
{
	uint8_t role;
	uint16_t id;

	if (xevb_ctl_key_file(path, key, &role, &id, err, len))
		return -1;
	if (!role)
		return 0;
	sodium_memzero(key, XEVB_CTL_KEY_LEN);
	snprintf(err, len,
		 "key file %s: a member key (%s %u), not the run's master key: give the master key file here",
		 path, xevb_ctl_role_name(role), id);
	return -1;
}

/* The key file's bytes into a: a bundle, a member key or the master. 0, or -1 with the message in err. */
static int load_bytes(struct xevb_ctl_auth *a, const uint8_t *buf, size_t n, const char *path, char *err,
		      size_t len)
{
	uint8_t key[XEVB_CTL_KEY_LEN], role;
	struct xevb_ctl_link *links;
	uint32_t n_links;
	uint16_t id;
	char why[256];

	if (tagged(buf, n, XEVB_BUNDLE_TAG)) {
		if (xevb_ctl_bundle_parse(buf, n, &id, key, &links, &n_links, why, sizeof(why))) {
			snprintf(err, len,
				 "key file %s: %s (a builder's key bundle, as `xevb key derive --role builder "
				 "--id N --config FILE` writes it: make it again)",
				 path, why);
			return -1;
		}
		xevb_ctl_auth_init_bundle(a, key, id, links, n_links);
	} else if (key_bytes(buf, n, path, key, &role, &id, err, len)) {
		return -1;
	} else if (role) {
		xevb_ctl_auth_init_member(a, key, role, id);
	} else {
		xevb_ctl_auth_init(a, key);
	}
	sodium_memzero(key, sizeof(key));
	return 0;
}

int xevb_ctl_auth_load(struct xevb_ctl_auth *a, const char *path)
{
	char err[512];
	ssize_t n;
	uint8_t *buf;
	int rc;

	if (sodium_init() < 0) {
		xevb_err("libsodium did not initialise: cannot authenticate control messages");
		return -1;
	}
	buf = read_key_bytes(path, &n, err, sizeof(err));
	rc = buf ? load_bytes(a, buf, (size_t)n, path, err, sizeof(err)) : -1;
	if (buf)
		drop_key_bytes(buf);
	if (rc)
		xevb_err("%s", err);
	return rc;
}

/* ---- keys (docs/control-protocol.md "Keys") ---- */

#define CTX_MEMBER "xevbmemb"
#define CTX_CORE   "xevbcore"
#define CTX_RUN    "xevbrun1"

void xevb_ctl_member_key(const uint8_t master[XEVB_CTL_KEY_LEN], uint8_t role, uint16_t id,
			 uint8_t out[XEVB_CTL_KEY_LEN])
{
	crypto_kdf_derive_from_key(out, XEVB_CTL_KEY_LEN, (uint64_t)role << 16 | id, CTX_MEMBER, master);
}

static void run_key(const uint8_t k[XEVB_CTL_KEY_LEN], uint32_t run, uint8_t out[XEVB_CTL_KEY_LEN])
{
	crypto_kdf_derive_from_key(out, XEVB_CTL_KEY_LEN, run, CTX_RUN, k);
}

static void derive_core(struct xevb_ctl_auth *a)
{
	uint8_t c[XEVB_CTL_KEY_LEN];

	memset(a->keys, 0, sizeof(a->keys));
	if (a->member_role)
		return;
	crypto_kdf_derive_from_key(c, XEVB_CTL_KEY_LEN, 0, CTX_CORE, a->key);
	run_key(c, a->run, a->core);
	sodium_memzero(c, sizeof(c));
}

void xevb_ctl_auth_init(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN])
{
	memset(a, 0, sizeof(*a));
	memcpy(a->key, key, XEVB_CTL_KEY_LEN);
	a->skew_ns = XEVB_CTL_AUTH_SKEW_NS;
	a->run = XEVB_CTL_RUN_DEFAULT;
	derive_core(a);
}

void xevb_ctl_auth_init_member(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN], uint8_t role,
			       uint16_t id)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->key, key, XEVB_CTL_KEY_LEN);
	a->skew_ns = XEVB_CTL_AUTH_SKEW_NS;
	a->run = XEVB_CTL_RUN_DEFAULT;
	a->member_role = role;
	a->member_id = id;
}

void xevb_ctl_auth_init_bundle(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN], uint16_t id,
			       const struct xevb_ctl_link *links, uint32_t n_links)
{
	xevb_ctl_auth_init_member(a, key, XEVB_ROLE_BUILDER, id);
	a->links = links;
	a->n_links = n_links;
}

/* The member key of (role, id), when we hold it: the master derives any; a member has its own only. */
static bool member_of(const struct xevb_ctl_auth *a, uint8_t role, uint16_t id, uint8_t out[XEVB_CTL_KEY_LEN])
{
	if (!a->member_role) {
		xevb_ctl_member_key(a->key, role, id, out);
		return true;
	}
	if (a->member_role != role || a->member_id != id)
		return false;
	memcpy(out, a->key, XEVB_CTL_KEY_LEN);
	return true;
}

int xevb_ctl_auth_fits(const struct xevb_ctl_auth *a, uint8_t role, uint16_t id, char *err, size_t len)
{
	if (a->member_role && role == XEVB_ROLE_DFM) {
		snprintf(err, len,
			 "the key file is the %s of %s %u, but the DFM holds the run's master key (the "
			 "file every member key is derived from): give it that",
			 a->member_role == XEVB_ROLE_BUILDER ? "key bundle" : "member key",
			 xevb_ctl_role_name(a->member_role), a->member_id);
		return -1;
	}
	if (a->member_role && (a->member_role != role || a->member_id != id)) {
		snprintf(err, len,
			 "the key file is the %s of %s %u, but this process is %s %u: give it its own "
			 "(xevb key derive --role %s --id %u%s), or the run's master key",
			 a->member_role == XEVB_ROLE_BUILDER ? "key bundle" : "member key",
			 xevb_ctl_role_name(a->member_role), a->member_id, xevb_ctl_role_name(role), id,
			 xevb_ctl_role_name(role), id, role == XEVB_ROLE_BUILDER ? " --config FILE" : "");
		return -1;
	}
	return 0;
}

int xevb_ctl_auth_bind(struct xevb_ctl_auth *a, uint8_t role, uint16_t id, uint32_t run, char *err, size_t len)
{
	uint8_t s[XEVB_CTL_KEY_LEN];

	if (xevb_ctl_auth_fits(a, role, id, err, len))
		return -1;
	a->self_role = role;
	a->self_id = id;
	a->run = run;
	derive_core(a);
	if (role && role != XEVB_ROLE_DFM && member_of(a, role, id, s)) {
		run_key(s, run, a->own);
		sodium_memzero(s, sizeof(s));
	}
	return 0;
}

static const struct xevb_ctl_link *bundle_find(const struct xevb_ctl_auth *a, uint8_t role, uint16_t id)
{
	uint32_t lo = 0, hi = a->n_links;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct xevb_ctl_link *l = &a->links[mid];
		if (l->role == role && l->id == id)
			return l;
		if (l->role < role || (l->role == role && l->id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The key, before the run, of the link between (xr, xi) and (yr, yi): with
 * the DFM, the other's member key; between an edge member and a builder,
 * KDF(edge's member key, builder). false: no such link (edge to edge,
 * within the core) or one we do not hold.
 */
static bool link_base(const struct xevb_ctl_auth *a, uint8_t xr, uint16_t xi, uint8_t yr, uint16_t yi,
		      uint8_t out[XEVB_CTL_KEY_LEN])
{
	uint8_t s[XEVB_CTL_KEY_LEN];
	const struct xevb_ctl_link *l;
	bool xe = xevb_ctl_role_edge(xr), ye = xevb_ctl_role_edge(yr);

	if (!xr || !yr || xr >= XEVB_ROLE__COUNT || yr >= XEVB_ROLE__COUNT || (xe && ye) || xr == yr)
		return false;
	if (xr == XEVB_ROLE_DFM || yr == XEVB_ROLE_DFM)
		return xr == XEVB_ROLE_DFM ? member_of(a, yr, yi, out) : member_of(a, xr, xi, out);
	if (ye) { /* x is the edge member, y the builder */
		uint8_t r = xr;
		uint16_t i = xi;
		xr = yr, xi = yi, yr = r, yi = i;
	}
	if (member_of(a, xr, xi, s)) {
		xevb_ctl_link_key(s, yi, out);
		sodium_memzero(s, sizeof(s));
		return true;
	}
	if (a->member_role == XEVB_ROLE_BUILDER && a->member_id == yi && (l = bundle_find(a, xr, xi))) {
		memcpy(out, l->k, XEVB_CTL_KEY_LEN);
		return true;
	}
	return false;
}

/*
 * The run key of the link between (xr, xi), our end (0: the DFM), and
 * (yr, yi): yr 0 is a peer we do not know, taken for the DFM, except that a
 * holder of the master seals to it with the core's key. NULL: we hold no
 * key for that link. Our own links' keys are derived once and kept.
 */
static const uint8_t *link_key(struct xevb_ctl_auth *a, uint8_t xr, uint16_t xi, uint8_t yr, uint16_t yi)
{
	uint8_t base[XEVB_CTL_KEY_LEN];
	struct xevb_ctl_run_key *e = NULL;
	bool self;

	if (!xr)
		xr = XEVB_ROLE_DFM, xi = 0;
	if (!yr && !a->member_role)
		return a->core;
	if (!yr)
		yr = XEVB_ROLE_DFM, yi = 0;
	self = xr == (a->self_role ? a->self_role : XEVB_ROLE_DFM) && xi == a->self_id;
	if (self && a->self_role && a->self_role != XEVB_ROLE_DFM && yr == XEVB_ROLE_DFM)
		return a->own;
	if (self) {
		uint32_t h =
			(uint32_t)(((uint64_t)yr << 16 | yi) * 0x9e3779b97f4a7c15ull >> 40) % XEVB_CTL_AUTH_KEYS;
		e = &a->keys[h];
		if (e->used && e->role == yr && e->id == yi)
			return e->k;
	}
	if (!link_base(a, xr, xi, yr, yi, base))
		return a->member_role ? NULL : a->core;
	if (e)
		*e = (struct xevb_ctl_run_key){ .used = 1, .role = yr, .id = yi };
	run_key(base, a->run, e ? e->k : a->scratch);
	sodium_memzero(base, sizeof(base));
	return e ? e->k : a->scratch;
}

/* The MAC binds the destination: a copy sent elsewhere does not open. */
static void mac(const uint8_t *key, uint32_t dst_addr, uint16_t dst_port, const uint8_t *buf, size_t len,
		uint8_t out[XEVB_CTL_MAC_LEN])
{
	crypto_generichash_state st;
	uint8_t dst[6];

	memcpy(dst, &dst_addr, 4);
	memcpy(dst + 4, &dst_port, 2);
	crypto_generichash_init(&st, key, XEVB_CTL_KEY_LEN, XEVB_CTL_MAC_LEN);
	crypto_generichash_update(&st, dst, sizeof(dst));
	crypto_generichash_update(&st, buf, len);
	crypto_generichash_final(&st, out, XEVB_CTL_MAC_LEN);
}

size_t xevb_ctl_auth_seal_to(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			     uint16_t dst_port, uint64_t now_ns, uint8_t peer_role, uint16_t peer_id)
{
	const uint8_t *k;

	if (len < XEVB_CTL_HLEN || len + XEVB_CTL_TRAILER_LEN > cap)
		return 0;
	k = link_key(a, buf[4], xevb_ld16(buf + 6), peer_role, peer_id);
	if (!k)
		return 0;
	buf[2] = XEVB_CTL_VERSION_AUTH;
	xevb_st64(buf + len, now_ns);
	mac(k, dst_addr, dst_port, buf, len + 8, buf + len + 8);
	return len + XEVB_CTL_TRAILER_LEN;
}

size_t xevb_ctl_auth_seal(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			  uint16_t dst_port, uint64_t now_ns)
{
	return xevb_ctl_auth_seal_to(a, buf, len, cap, dst_addr, dst_port, now_ns, 0, 0);
}

static uint32_t peer_hash(uint8_t role, uint16_t id, uint32_t epoch)
{
	uint64_t k = ((uint64_t)epoch << 24) ^ ((uint64_t)role << 16) ^ id;

	k *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(k >> 40);
}

/*
 * The incarnation's entry: found, or a free one, or the one heard from
 * longest ago within a few probes (only messages that passed the MAC get
 * here, so a forger cannot flush the table).
 */
static struct xevb_ctl_peer_seen *peer_slot(struct xevb_ctl_auth *a, const struct xevb_ctl_hdr *h, bool *fresh)
{
	uint32_t hash = peer_hash(h->role, h->sender_id, h->epoch);
	struct xevb_ctl_peer_seen *old = NULL;

	for (uint32_t i = 0; i < 8; i++) {
		struct xevb_ctl_peer_seen *p = &a->peers[(hash + i) % XEVB_CTL_AUTH_PEERS];
		if (p->used && p->role == h->role && p->id == h->sender_id && p->epoch == h->epoch) {
			*fresh = false;
			return p;
		}
		if (!p->used) {
			*fresh = true;
			return p;
		}
		if (!old || p->last_ts < old->last_ts)
			old = p;
	}
	*fresh = true;
	return old;
}

/*
 * Has this sequence number of the incarnation been taken, or does it jump
 * further ahead than the sender could have sent since its newest (one
 * message a microsecond, and a margin)? If neither, take it.
 */
static enum xevb_ctl_err seq_take(struct xevb_ctl_peer_seen *p, uint32_t seq, uint64_t ts)
{
	uint32_t back;

	if ((int32_t)(seq - p->top_seq) > 0) {
		uint32_t up = seq - p->top_seq;
		uint64_t allow = XEVB_CTL_SEQ_JUMP_MAX + (ts > p->last_ts ? (ts - p->last_ts) / 1000 : 0);
		if (up > allow)
			return XEVB_CTL_E_SEQ_JUMP;
		p->seen = up >= SEQ_WINDOW ? 1 : (p->seen << up) | 1;
		p->top_seq = seq;
	} else {
		back = p->top_seq - seq;
		if (back >= SEQ_WINDOW || (p->seen >> back) & 1)
			return XEVB_CTL_E_REPLAY;
		p->seen |= 1ull << back;
	}
	if (ts > p->last_ts)
		p->last_ts = ts;
	return XEVB_CTL_OK;
}

/*
 * The MAC under the key of the link from the header's sender to us. A
 * holder of the master also takes the core's key, which only holders of
 * the master have: a peer that does not know who we are (open membership)
 * seals so.
 */
static enum xevb_ctl_err mac_check(struct xevb_ctl_auth *a, const uint8_t *buf, size_t body, uint32_t dst_addr,
				   uint16_t dst_port)
{
	uint8_t want[XEVB_CTL_MAC_LEN];
	const uint8_t *k = link_key(a, a->self_role, a->self_id, buf[4], xevb_ld16(buf + 6));

	if (!k)
		return XEVB_CTL_E_WRONG_ROLE; /* names a member we hold no link with: not one that talks to us */
	mac(k, dst_addr, dst_port, buf, body + 8, want);
	if (!sodium_memcmp(want, buf + body + 8, XEVB_CTL_MAC_LEN))
		return XEVB_CTL_OK;
	if (!a->member_role && k != a->core) {
		mac(a->core, dst_addr, dst_port, buf, body + 8, want);
		if (!sodium_memcmp(want, buf + body + 8, XEVB_CTL_MAC_LEN))
			return XEVB_CTL_OK;
	}
	return XEVB_CTL_E_MAC;
}

enum xevb_ctl_err xevb_ctl_auth_open(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, uint32_t dst_addr,
				     uint16_t dst_port, uint64_t now_ns, struct xevb_ctl_msg *m)
{
	struct xevb_ctl_peer_seen *p;
	enum xevb_ctl_err e;
	size_t body = len - XEVB_CTL_TRAILER_LEN;
	uint64_t ts;
	bool fresh;

	if (len < XEVB_CTL_HLEN + XEVB_CTL_TRAILER_LEN)
		return XEVB_CTL_E_SHORT;
	if ((e = mac_check(a, buf, body, dst_addr, dst_port)) != XEVB_CTL_OK)
		return e;
	ts = ld64(buf + body);
	if (ts + a->skew_ns < now_ns || ts > now_ns + a->skew_ns)
		return XEVB_CTL_E_STALE;
	buf[2] = XEVB_CTL_VERSION;
	e = xevb_ctl_decode(buf, body, m);
	buf[2] = XEVB_CTL_VERSION_AUTH;
	if (e != XEVB_CTL_OK)
		return e;
	p = peer_slot(a, &m->h, &fresh);
	if (fresh) {
		*p = (struct xevb_ctl_peer_seen){ .used = 1,
						  .role = m->h.role,
						  .id = m->h.sender_id,
						  .epoch = m->h.epoch,
						  .top_seq = m->h.seq,
						  .seen = 1,
						  .last_ts = ts };
		return XEVB_CTL_OK;
	}
	return seq_take(p, m->h.seq, ts);
}

// SPDX-License-Identifier: GPL-2.0-only
/* Authenticated control messages: see user/ctl/ctl_auth.h. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
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

int xevb_ctl_key_file(const char *path, uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *role, uint16_t *id, char *err,
		      size_t len)
{
	uint8_t buf[160];
	char why[160];
	const char *bad;
	ssize_t n;

	n = xevb_tf_read(XEVB_TF_KEY, path, buf, sizeof(buf), err, len);
	if (n < 0)
		return -1;
	*role = 0;
	*id = 0;
	if ((size_t)n > strlen(XEVB_MEMBER_KEY_TAG) &&
	    !memcmp(buf, XEVB_MEMBER_KEY_TAG, strlen(XEVB_MEMBER_KEY_TAG)))
		bad = member_from_bytes(buf, (size_t)n, key, role, id, why, sizeof(why));
	else if ((size_t)n > 2 * XEVB_CTL_KEY_LEN + 1) {
		sodium_memzero(buf, sizeof(buf));
		snprintf(err, len, "key file %s: %zd bytes: " XEVB_KEY_FORMS " (" XEVB_KEY_HOWTO ")", path, n,
			 path);
		return -1;
	} else
		bad = key_from_bytes(buf, (size_t)n, key, why, sizeof(why));
	sodium_memzero(buf, sizeof(buf));
	if (bad) {
		snprintf(err, len,
			 "key file %s: %s; " XEVB_KEY_FORMS " (" XEVB_KEY_HOWTO
			 "), or a member key written by `xevb key derive`",
			 path, why, path);
		return -1;
	}
	return 0;
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

int xevb_ctl_auth_load(struct xevb_ctl_auth *a, const char *path)
{
	uint8_t key[XEVB_CTL_KEY_LEN], role;
	uint16_t id;
	char err[512];

	if (sodium_init() < 0) {
		xevb_err("libsodium did not initialise: cannot authenticate control messages");
		return -1;
	}
	if (xevb_ctl_key_file(path, key, &role, &id, err, sizeof(err))) {
		xevb_err("%s", err);
		return -1;
	}
	if (role)
		xevb_ctl_auth_init_member(a, key, role, id);
	else
		xevb_ctl_auth_init(a, key);
	sodium_memzero(key, sizeof(key));
	return 0;
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

int xevb_ctl_auth_bind(struct xevb_ctl_auth *a, uint8_t role, uint16_t id, uint32_t run, char *err, size_t len)
{
	uint8_t s[XEVB_CTL_KEY_LEN];

	if (a->member_role && (a->member_role != role || a->member_id != id)) {
		snprintf(err, len,
			 "the key file is the member key of %s %u, but this process is %s %u: give it its own "
			 "(xevb key derive --role %s --id %u), or the run's master key",
			 xevb_ctl_role_name(a->member_role), a->member_id, xevb_ctl_role_name(role), id,
			 xevb_ctl_role_name(role), id);
		return -1;
	}
	a->self_role = role;
	a->self_id = id;
	a->run = run;
	derive_core(a);
	if (xevb_ctl_role_edge(role)) {
		if (a->member_role)
			memcpy(s, a->key, sizeof(s));
		else
			xevb_ctl_member_key(a->key, role, id, s);
		run_key(s, run, a->own);
		sodium_memzero(s, sizeof(s));
	}
	return 0;
}

/* The run key of edge member (role, id), derived once (the master's holder only). */
static const uint8_t *member_run_key(struct xevb_ctl_auth *a, uint8_t role, uint16_t id)
{
	uint32_t h = (uint32_t)(((uint64_t)role << 16 | id) * 0x9e3779b97f4a7c15ull >> 40) % XEVB_CTL_AUTH_KEYS;
	struct xevb_ctl_run_key *e = &a->keys[h];
	uint8_t s[XEVB_CTL_KEY_LEN];

	if (!e->used || e->role != role || e->id != id) {
		*e = (struct xevb_ctl_run_key){ .used = 1, .role = role, .id = id };
		xevb_ctl_member_key(a->key, role, id, s);
		run_key(s, a->run, e->k);
		sodium_memzero(s, sizeof(s));
	}
	return e->k;
}

/*
 * The key of the link between (ar, ai) and (br, bi): an edge member's run
 * key when either is one (sender first), else the core's. NULL: we do not
 * hold it (a member key, and a link that is not ours).
 */
static const uint8_t *link_key(struct xevb_ctl_auth *a, uint8_t ar, uint16_t ai, uint8_t br, uint16_t bi)
{
	if (!xevb_ctl_role_edge(ar)) {
		ar = br;
		ai = bi;
	}
	if (xevb_ctl_role_edge(ar)) {
		if (a->self_role == ar && a->self_id == ai)
			return a->own;
		return a->member_role ? NULL : member_run_key(a, ar, ai);
	}
	return a->member_role ? NULL : a->core;
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
 * The MAC under the key of the link from the header's sender to us. An edge
 * member that holds the master also takes the core's key: a core peer that
 * does not know it is an edge member (open membership) seals so.
 */
static enum xevb_ctl_err mac_check(struct xevb_ctl_auth *a, const uint8_t *buf, size_t body, uint32_t dst_addr,
				   uint16_t dst_port)
{
	uint8_t want[XEVB_CTL_MAC_LEN];
	const uint8_t *k = link_key(a, buf[4], xevb_ld16(buf + 6), a->self_role, a->self_id);

	if (!k)
		return XEVB_CTL_E_WRONG_ROLE; /* names another edge member: not a link we hold, nor one that exists */
	mac(k, dst_addr, dst_port, buf, body + 8, want);
	if (!sodium_memcmp(want, buf + body + 8, XEVB_CTL_MAC_LEN))
		return XEVB_CTL_OK;
	if (xevb_ctl_role_edge(a->self_role) && !a->member_role && !xevb_ctl_role_edge(buf[4])) {
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

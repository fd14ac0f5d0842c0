// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sealed control messages, the farm node's and the tools': see
 * shared/xl_ctl_auth.h and docs/control-protocol.md "Authentication".
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include "internal.h"
#include "shared/xl_ctl_auth.h"

#define SEQ_WINDOW 64
#define CTX_MEMBER "xevbmemb"
#define CTX_CORE   "xevbcore"
#define CTX_LINK   "xevblink"
#define CTX_RUN    "xevbrun1"

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

static void from_hex(const char *hex, uint8_t key[XEVB_CTL_KEY_LEN])
{
	for (size_t i = 0; i < XEVB_CTL_KEY_LEN; i++)
		key[i] = (uint8_t)(hex_nibble(hex[2 * i]) << 4 | hex_nibble(hex[2 * i + 1]));
}

int xl_ctl_key_parse(const uint8_t *b, size_t n, uint8_t key[XEVB_CTL_KEY_LEN], char *why, size_t wl)
{
	size_t text = 0, body = n && b[n - 1] == '\n' ? n - 1 : n, i;

	for (i = 0; i < n && b[i] >= 0x20 && b[i] < 0x7f; i++)
		text++;
	if (n == XEVB_CTL_KEY_LEN && text == n) {
		xl_fmt(why, wl, "%s",
		       hex_run(b, n) == n ? "32 hex digits (16 bytes)" : "32 bytes of text, not random");
		return -EINVAL;
	}
	if (n == XEVB_CTL_KEY_LEN) {
		memcpy(key, b, XEVB_CTL_KEY_LEN);
	} else if (body == 2 * XEVB_CTL_KEY_LEN) {
		if ((i = hex_run(b, body)) < body) {
			xl_fmt(why, wl, "character %zu of 64 is not a hex digit", i + 1);
			return -EINVAL;
		}
		from_hex((const char *)b, key);
	} else if (body && hex_run(b, body) == body) {
		xl_fmt(why, wl, "%zu hex digits", body);
		return -EINVAL;
	} else {
		xl_fmt(why, wl, "%zu bytes", n);
		return -EINVAL;
	}
	for (i = 1; i < XEVB_CTL_KEY_LEN && key[i] == key[0]; i++)
		;
	if (i == XEVB_CTL_KEY_LEN) {
		xl_fmt(why, wl, "all 32 bytes are 0x%02x", key[0]);
		sodium_memzero(key, XEVB_CTL_KEY_LEN);
		return -EINVAL;
	}
	return 0;
}

int xl_ctl_member_parse(const uint8_t *b, size_t n, uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *role, uint16_t *id,
			char *why, size_t wl)
{
	char text[160], rname[16], hex[2 * XEVB_CTL_KEY_LEN + 2], tail;
	unsigned long v;
	int got, rc = -EINVAL;

	if (n >= sizeof(text))
		return xl_fmt(why, wl, "a member key file of %zu bytes", n), -EMSGSIZE;
	memcpy(text, b, n);
	text[n] = 0;
	if (n && text[n - 1] == '\n')
		text[n - 1] = 0;
	got = sscanf(text, XEVB_MEMBER_KEY_TAG " %15s %lu %65s %c", rname, &v, hex, &tail);
	*role = got < 1                  ? 0 :
		!strcmp(rname, "source") ? XEVB_ROLE_SOURCE :
		!strcmp(rname, "sink")   ? XEVB_ROLE_SINK :
					   0;
	if (got != 3 || !*role || v > UINT16_MAX || strlen(hex) != 2 * XEVB_CTL_KEY_LEN ||
	    hex_run((const uint8_t *)hex, 2 * XEVB_CTL_KEY_LEN) != 2 * XEVB_CTL_KEY_LEN) {
		xl_fmt(why, wl,
		       "not a member key: one line '" XEVB_MEMBER_KEY_TAG
		       " source|sink ID HEX64', as `xevb key derive` writes it");
	} else {
		*id = (uint16_t)v;
		from_hex(hex, key);
		rc = 0;
	}
	sodium_memzero(text, sizeof(text));
	sodium_memzero(hex, sizeof(hex));
	return rc;
}

void xl_ctl_member_key(const uint8_t master[XEVB_CTL_KEY_LEN], uint8_t role, uint16_t id,
		       uint8_t out[XEVB_CTL_KEY_LEN])
{
	crypto_kdf_derive_from_key(out, XEVB_CTL_KEY_LEN, (uint64_t)role << 16 | id, CTX_MEMBER, master);
}

void xl_ctl_link_key(const uint8_t edge_key[XEVB_CTL_KEY_LEN], uint16_t builder_id, uint8_t out[XEVB_CTL_KEY_LEN])
{
	crypto_kdf_derive_from_key(out, XEVB_CTL_KEY_LEN, (uint64_t)XEVB_ROLE_BUILDER << 16 | builder_id, CTX_LINK,
				   edge_key);
}

void xl_ctl_run_key(const uint8_t k[XEVB_CTL_KEY_LEN], uint32_t run, uint8_t out[XEVB_CTL_KEY_LEN])
{
	crypto_kdf_derive_from_key(out, XEVB_CTL_KEY_LEN, run, CTX_RUN, k);
}

void xl_ctl_core_key(const uint8_t master[XEVB_CTL_KEY_LEN], uint32_t run, uint8_t out[XEVB_CTL_KEY_LEN])
{
	uint8_t c[XEVB_CTL_KEY_LEN];

	crypto_kdf_derive_from_key(c, XEVB_CTL_KEY_LEN, 0, CTX_CORE, master);
	xl_ctl_run_key(c, run, out);
	sodium_memzero(c, sizeof(c));
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

size_t xl_ctl_seal(const uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
		   uint16_t dst_port, uint64_t now_ns)
{
	if (len < XEVB_CTL_HLEN || len + XEVB_CTL_TRAILER_LEN > cap)
		return 0;
	buf[2] = XEVB_CTL_VERSION_AUTH;
	xl_st64(buf + len, now_ns);
	mac(key, dst_addr, dst_port, buf, len + 8, buf + len + 8);
	return len + XEVB_CTL_TRAILER_LEN;
}

enum xevb_ctl_err xl_ctl_mac_check(const uint8_t key[XEVB_CTL_KEY_LEN], const uint8_t *alt, const uint8_t *buf,
				   size_t len, uint32_t dst_addr, uint16_t dst_port)
{
	size_t body = len - XEVB_CTL_TRAILER_LEN;
	uint8_t want[XEVB_CTL_MAC_LEN];

	mac(key, dst_addr, dst_port, buf, body + 8, want);
	if (!sodium_memcmp(want, buf + body + 8, XEVB_CTL_MAC_LEN))
		return XEVB_CTL_OK;
	if (alt) {
		mac(alt, dst_addr, dst_port, buf, body + 8, want);
		if (!sodium_memcmp(want, buf + body + 8, XEVB_CTL_MAC_LEN))
			return XEVB_CTL_OK;
	}
	return XEVB_CTL_E_MAC;
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
static struct xevb_ctl_peer_seen *peer_slot(struct xevb_ctl_peer_seen *peers, const struct xevb_ctl_hdr *h,
					    bool *fresh)
{
	uint32_t hash = peer_hash(h->role, h->sender_id, h->epoch);
	struct xevb_ctl_peer_seen *old = NULL;

	for (uint32_t i = 0; i < 8; i++) {
		struct xevb_ctl_peer_seen *p = &peers[(hash + i) % XEVB_CTL_AUTH_PEERS];
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

enum xevb_ctl_err xl_ctl_unseal(struct xevb_ctl_peer_seen peers[XEVB_CTL_AUTH_PEERS], uint8_t *buf, size_t len,
				uint64_t now_ns, uint64_t skew_ns, struct xevb_ctl_msg *m)
{
	size_t body = len - XEVB_CTL_TRAILER_LEN;
	struct xevb_ctl_peer_seen *p;
	enum xevb_ctl_err e;
	uint64_t ts = xl_ld64(buf + body);
	bool fresh;

	if (ts + skew_ns < now_ns || ts > now_ns + skew_ns)
		return XEVB_CTL_E_STALE;
	buf[2] = XEVB_CTL_VERSION;
	e = xl_ctl_decode(buf, body, m);
	buf[2] = XEVB_CTL_VERSION_AUTH;
	if (e != XEVB_CTL_OK)
		return e;
	p = peer_slot(peers, &m->h, &fresh);
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

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

void xevb_ctl_auth_init(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN])
{
	memset(a, 0, sizeof(*a));
	memcpy(a->key, key, XEVB_CTL_KEY_LEN);
	a->skew_ns = XEVB_CTL_AUTH_SKEW_NS;
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

int xevb_ctl_key_read(const char *path, uint8_t key[XEVB_CTL_KEY_LEN], char *err, size_t len)
{
	uint8_t buf[2 * XEVB_CTL_KEY_LEN + 1];
	char why[128];
	ssize_t n;

	n = xevb_tf_read(XEVB_TF_KEY, path, buf, sizeof(buf), err, len);
	if (n < 0)
		return -1;
	if (key_from_bytes(buf, (size_t)n, key, why, sizeof(why))) {
		sodium_memzero(buf, sizeof(buf));
		snprintf(err, len, "key file %s: %s; " XEVB_KEY_FORMS " (" XEVB_KEY_HOWTO ")", path, why, path);
		return -1;
	}
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

int xevb_ctl_auth_load(struct xevb_ctl_auth *a, const char *path)
{
	uint8_t key[XEVB_CTL_KEY_LEN];
	char err[512];

	if (sodium_init() < 0) {
		xevb_err("libsodium did not initialise: cannot authenticate control messages");
		return -1;
	}
	if (xevb_ctl_key_read(path, key, err, sizeof(err))) {
		xevb_err("%s", err);
		return -1;
	}
	xevb_ctl_auth_init(a, key);
	sodium_memzero(key, sizeof(key));
	return 0;
}

/* The MAC binds the destination: a copy sent elsewhere does not open. */
static void mac(const struct xevb_ctl_auth *a, uint32_t dst_addr, uint16_t dst_port, const uint8_t *buf,
		size_t len, uint8_t out[XEVB_CTL_MAC_LEN])
{
	crypto_generichash_state st;
	uint8_t dst[6];

	memcpy(dst, &dst_addr, 4);
	memcpy(dst + 4, &dst_port, 2);
	crypto_generichash_init(&st, a->key, XEVB_CTL_KEY_LEN, XEVB_CTL_MAC_LEN);
	crypto_generichash_update(&st, dst, sizeof(dst));
	crypto_generichash_update(&st, buf, len);
	crypto_generichash_final(&st, out, XEVB_CTL_MAC_LEN);
}

size_t xevb_ctl_auth_seal(const struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			  uint16_t dst_port, uint64_t now_ns)
{
	if (len < XEVB_CTL_HLEN || len + XEVB_CTL_TRAILER_LEN > cap)
		return 0;
	buf[2] = XEVB_CTL_VERSION_AUTH;
	xevb_st64(buf + len, now_ns);
	mac(a, dst_addr, dst_port, buf, len + 8, buf + len + 8);
	return len + XEVB_CTL_TRAILER_LEN;
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

/* Has this sequence number of the incarnation been taken? If not, take it. */
static bool replayed(struct xevb_ctl_peer_seen *p, uint32_t seq, uint64_t ts)
{
	uint32_t back;

	if ((int32_t)(seq - p->top_seq) > 0) {
		uint32_t up = seq - p->top_seq;
		p->seen = up >= SEQ_WINDOW ? 1 : (p->seen << up) | 1;
		p->top_seq = seq;
	} else {
		back = p->top_seq - seq;
		if (back >= SEQ_WINDOW || (p->seen >> back) & 1)
			return true;
		p->seen |= 1ull << back;
	}
	if (ts > p->last_ts)
		p->last_ts = ts;
	return false;
}

enum xevb_ctl_err xevb_ctl_auth_open(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, uint32_t dst_addr,
				     uint16_t dst_port, uint64_t now_ns, struct xevb_ctl_msg *m)
{
	uint8_t want[XEVB_CTL_MAC_LEN];
	struct xevb_ctl_peer_seen *p;
	enum xevb_ctl_err e;
	size_t body = len - XEVB_CTL_TRAILER_LEN;
	uint64_t ts;
	bool fresh;

	if (len < XEVB_CTL_HLEN + XEVB_CTL_TRAILER_LEN)
		return XEVB_CTL_E_SHORT;
	mac(a, dst_addr, dst_port, buf, body + 8, want);
	if (sodium_memcmp(want, buf + body + 8, XEVB_CTL_MAC_LEN))
		return XEVB_CTL_E_MAC;
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
	return replayed(p, m->h.seq, ts) ? XEVB_CTL_E_REPLAY : XEVB_CTL_OK;
}

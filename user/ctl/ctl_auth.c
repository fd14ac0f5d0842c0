// SPDX-License-Identifier: GPL-2.0-only
/* Authenticated control messages: see user/ctl/ctl_auth.h. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include "ctl/ctl_auth.h"

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

/* 32 raw bytes, or 64 hex digits; one trailing newline either way. */
static int key_from_bytes(const uint8_t *b, size_t n, uint8_t key[XEVB_CTL_KEY_LEN])
{
	if (n == XEVB_CTL_KEY_LEN || (n == XEVB_CTL_KEY_LEN + 1 && b[n - 1] == '\n')) {
		memcpy(key, b, XEVB_CTL_KEY_LEN);
		return 0;
	}
	if (n && b[n - 1] == '\n')
		n--;
	if (n != 2 * XEVB_CTL_KEY_LEN)
		return -1;
	for (size_t i = 0; i < XEVB_CTL_KEY_LEN; i++) {
		int hi = hex_nibble(b[2 * i]), lo = hex_nibble(b[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int xevb_ctl_auth_load(struct xevb_ctl_auth *a, const char *path)
{
	uint8_t buf[2 * XEVB_CTL_KEY_LEN + 2], key[XEVB_CTL_KEY_LEN];
	struct stat st;
	ssize_t n;
	int fd;

	if (sodium_init() < 0) {
		xevb_err("libsodium did not initialise: cannot authenticate control messages");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		xevb_err(
			"key file %s: %s (make one with: (umask 077; head -c 32 /dev/urandom > %s), and give every "
			"member of the run the same file)",
			path, strerror(errno), path);
		return -1;
	}
	if (fstat(fd, &st) || (st.st_mode & (S_IRWXG | S_IRWXO))) {
		xevb_err("key file %s: readable by others than its owner (chmod 600 %s)", path, path);
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || key_from_bytes(buf, (size_t)n, key)) {
		xevb_err("key file %s: want 32 bytes, raw or as 64 hex digits (got %zd bytes)", path, n);
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

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared by the harnesses of the builder's and the source's control
 * handlers (fuzz_build_ctl.c, fuzz_source_ctl.c): peers that send as the
 * DFM, a farm node or a builder would (encoded, sealed with the run's key
 * when the input says so) through the endpoint's own checks
 * (xevb_ctl_take), a log of what the handlers sent instead of a socket,
 * and a check that the counters a command reports (its JSON) only grow.
 */
#ifndef XEVB_FUZZ_CTL_FUZZ_H
#define XEVB_FUZZ_CTL_FUZZ_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/ctl_auth.h"
#include "ctl/ctl_sock.h"
#include "fuzz_fail.h"

#define CF_FAIL(...) FUZZ_FAIL("fuzz", __VA_ARGS__)

static const uint8_t cf_key[XEVB_CTL_KEY_LEN] = "0123456789abcdef0123456789abcdef";

/* A peer as the handlers see it: where it sends from, and its header. */
struct cf_peer {
	struct sockaddr_in sa;
	uint8_t role;
	uint16_t id;
	uint32_t epoch, seq;
};

static inline struct sockaddr_in cf_addr(uint32_t host_order, uint16_t port)
{
	return (struct sockaddr_in){ .sin_family = AF_INET,
				     .sin_addr.s_addr = htonl(host_order),
				     .sin_port = htons(port) };
}

/*
 * m from p, to the endpoint io (at dst, network order), as it would arrive:
 * encoded, sealed when io has a key, judged by xevb_ctl_take. 1 with m
 * decoded again (as the handlers get it), 0 when the endpoint refused it.
 */
static inline int cf_deliver(struct xevb_ctl_io *io, uint32_t dst, struct cf_peer *p, struct xevb_ctl_msg *m)
{
	static struct xevb_ctl_auth seal;
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	m->h.role = p->role;
	m->h.sender_id = p->id;
	m->h.epoch = p->epoch;
	m->h.seq = ++p->seq;
	len = xevb_ctl_encode(m, buf, sizeof(buf));
	if (!len)
		return 0;
	if (io->auth) {
		xevb_ctl_auth_init(&seal, cf_key);
		len = xevb_ctl_auth_seal(&seal, buf, len, sizeof(buf), dst, io->port, xevb_ctl_auth_now());
		if (!len)
			return 0;
	}
	return xevb_ctl_take(io, buf, len, dst, &p->sa, m);
}

/* Arbitrary bytes from p: refused, or taken as the endpoint decodes them. */
static inline int cf_deliver_raw(struct xevb_ctl_io *io, uint32_t dst, const struct cf_peer *p, const uint8_t *d,
				 size_t n, struct xevb_ctl_msg *m)
{
	uint8_t buf[XEVB_CTL_MAX_LEN + 1];

	if (n > sizeof(buf))
		n = sizeof(buf);
	memcpy(buf, d, n);
	return xevb_ctl_take(io, buf, n, dst, &p->sa, m);
}

/* What the handlers sent, decoded (opened with the key when there is one). */
#define CF_SENT_MAX 64
struct cf_sent {
	struct sockaddr_in to;
	struct xevb_ctl_msg m;
};

struct cf_log {
	bool keyed;
	const struct xevb_ctl_io *io; /* the sender: who it takes a destination for (an edge member's key) */
	struct xevb_ctl_auth open;    /* the receivers' side of the key */
	uint64_t n;                   /* sent in all */
	uint32_t n_kept;              /* in sent[], since the last cf_log_clear */
	struct cf_sent sent[CF_SENT_MAX];
};

static inline void cf_log_init(struct cf_log *l, bool keyed)
{
	memset(l, 0, sizeof(*l));
	l->keyed = keyed;
	xevb_ctl_auth_init(&l->open, cf_key);
}

/* The tx hook: every message a handler sends must decode (we encoded it). */
static inline void cf_log_tx(void *ctx, const struct sockaddr_in *to, const uint8_t *buf, size_t len)
{
	struct cf_log *l = ctx;
	static struct xevb_ctl_msg m;
	uint8_t copy[XEVB_CTL_MAX_LEN];
	enum xevb_ctl_err e;

	if (len > sizeof(copy))
		CF_FAIL("sent a datagram of %zu bytes", len);
	memcpy(copy, buf, len);
	e = l->keyed ? xevb_ctl_auth_open(&l->open, copy, len, to->sin_addr.s_addr, to->sin_port,
					  xevb_ctl_auth_now(), &m) :
		       xevb_ctl_decode(copy, len, &m);
	if (e == XEVB_CTL_E_MAC && l->io) {
		/* Sealed for an edge member the sender knows at that address: open as that member. */
		static struct xevb_ctl_auth member;
		uint8_t role;
		uint16_t id;
		char err[256];
		xevb_ctl_peer_of(l->io, to, &role, &id);
		memcpy(copy, buf, len);
		xevb_ctl_auth_init(&member, cf_key);
		if (role && !xevb_ctl_auth_bind(&member, role, id, XEVB_CTL_RUN_DEFAULT, err, sizeof(err)))
			e = xevb_ctl_auth_open(&member, copy, len, to->sin_addr.s_addr, to->sin_port,
					       xevb_ctl_auth_now(), &m);
	}
	if (e != XEVB_CTL_OK)
		CF_FAIL("sent a message its peer refuses: %s", xevb_ctl_err_name(e));
	l->n++;
	if (l->n_kept < CF_SENT_MAX)
		l->sent[l->n_kept++] = (struct cf_sent){ *to, m };
}

/*
 * The numbers of a command's JSON, in order, with their keys: a later
 * snapshot must have the same keys, and each number at least the earlier
 * one unless its key is in may_fall (a NULL-terminated list).
 */
#define CF_NUMS_MAX 256
struct cf_nums {
	uint32_t n;
	char key[CF_NUMS_MAX][32];
	unsigned long long v[CF_NUMS_MAX];
};

static inline void cf_nums_parse(const char *json, struct cf_nums *out)
{
	const char *p = json;

	out->n = 0;
	while ((p = strstr(p, "\":")) && out->n < CF_NUMS_MAX) {
		const char *k = p;
		size_t kl;

		while (k > json && k[-1] != '"')
			k--;
		kl = (size_t)(p - k);
		p += 2;
		if (*p < '0' || *p > '9')
			continue;
		if (kl >= sizeof(out->key[0]))
			kl = sizeof(out->key[0]) - 1;
		memcpy(out->key[out->n], k, kl);
		out->key[out->n][kl] = 0;
		out->v[out->n++] = strtoull(p, NULL, 10);
	}
}

static inline bool cf_may_fall(const char *key, const char *const *may_fall)
{
	for (; *may_fall; may_fall++)
		if (!strcmp(key, *may_fall))
			return true;
	return false;
}

static inline void cf_nums_grow(const struct cf_nums *a, const struct cf_nums *b, const char *const *may_fall)
{
	if (a->n != b->n)
		CF_FAIL("the JSON had %u numbers, now %u", a->n, b->n);
	for (uint32_t i = 0; i < a->n; i++) {
		if (strcmp(a->key[i], b->key[i]))
			CF_FAIL("JSON key %u was %s, now %s", i, a->key[i], b->key[i]);
		if (b->v[i] < a->v[i] && !cf_may_fall(a->key[i], may_fall))
			CF_FAIL("counter %s went down: %llu -> %llu", a->key[i], a->v[i], b->v[i]);
	}
}

/* The reasons of ctl_dropped (ctl_sock.h): a dropped message also names why. */
static inline bool cf_drop_reason(const char *key)
{
	return !strcmp(key, "not_from_dfm") || !strcmp(key, "wrong_role") || !strcmp(key, "wrong_epoch") ||
	       !strcmp(key, "unknown_peer");
}

/* Only key changed, and by exactly +by (and a drop reason by at most that); every other number is the same. */
static inline void cf_nums_only(const struct cf_nums *a, const struct cf_nums *b, const char *key, uint64_t by)
{
	if (a->n != b->n)
		CF_FAIL("the JSON had %u numbers, now %u", a->n, b->n);
	for (uint32_t i = 0; i < a->n; i++) {
		uint64_t want = a->v[i] + (strcmp(a->key[i], key) ? 0 : by);
		if (cf_drop_reason(a->key[i]) && b->v[i] >= a->v[i] && b->v[i] - a->v[i] <= by)
			continue;
		if (b->v[i] != want)
			CF_FAIL("a message not from the DFM moved %s: %llu -> %llu", a->key[i], a->v[i], b->v[i]);
	}
}

#endif

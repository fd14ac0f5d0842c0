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

uint64_t xevb_ctl_auth_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
	int bad;

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
		bad = xl_ctl_member_parse(buf, n, key, role, id, why, sizeof(why));
	else if (n > 2 * XEVB_CTL_KEY_LEN + 1) {
		snprintf(err, len, "key file %s: %zu bytes: " XEVB_KEY_FORMS " (" XEVB_KEY_HOWTO ")", path, n,
			 path);
		return -1;
	} else
		bad = xl_ctl_key_parse(buf, n, key, why, sizeof(why));
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

/* ---- keys (docs/control-protocol.md "Keys"; the schedule is xl_ctl_auth.h's) ---- */

static void derive_core(struct xevb_ctl_auth *a)
{
	memset(a->keys, 0, sizeof(a->keys));
	if (!a->member_role)
		xl_ctl_core_key(a->key, a->run, a->core);
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
		xl_ctl_member_key(a->key, role, id, out);
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
		xl_ctl_run_key(s, run, a->own);
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
		xl_ctl_link_key(s, yi, out);
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
	xl_ctl_run_key(base, a->run, e ? e->k : a->scratch);
	sodium_memzero(base, sizeof(base));
	return e ? e->k : a->scratch;
}

size_t xevb_ctl_auth_seal_to(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			     uint16_t dst_port, uint64_t now_ns, uint8_t peer_role, uint16_t peer_id)
{
	const uint8_t *k;

	if (len < XEVB_CTL_HLEN || len + XEVB_CTL_TRAILER_LEN > cap)
		return 0;
	k = link_key(a, buf[4], xevb_ld16(buf + 6), peer_role, peer_id);
	return k ? xl_ctl_seal(k, buf, len, cap, dst_addr, dst_port, now_ns) : 0;
}

size_t xevb_ctl_auth_seal(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			  uint16_t dst_port, uint64_t now_ns)
{
	return xevb_ctl_auth_seal_to(a, buf, len, cap, dst_addr, dst_port, now_ns, 0, 0);
}

/*
 * The MAC under the key of the link from the header's sender to us (one
 * naming a member we hold no link with is not one that talks to us). A
 * holder of the master also takes the core's key, which only holders of
 * the master have: a peer that does not know who we are (open membership)
 * seals so. Then the stamp, the body and the replay window.
 */
enum xevb_ctl_err xevb_ctl_auth_open(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, uint32_t dst_addr,
				     uint16_t dst_port, uint64_t now_ns, struct xevb_ctl_msg *m)
{
	const uint8_t *k;
	enum xevb_ctl_err e;

	if (len < XEVB_CTL_HLEN + XEVB_CTL_TRAILER_LEN)
		return XEVB_CTL_E_SHORT;
	k = link_key(a, a->self_role, a->self_id, buf[4], xevb_ld16(buf + 6));
	if (!k)
		return XEVB_CTL_E_WRONG_ROLE;
	e = xl_ctl_mac_check(k, !a->member_role && k != a->core ? a->core : NULL, buf, len, dst_addr, dst_port);
	return e == XEVB_CTL_OK ? xl_ctl_unseal(a->peers, buf, len, now_ns, a->skew_ns, m) : e;
}

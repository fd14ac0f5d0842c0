// SPDX-License-Identifier: LGPL-2.1-or-later
/* The farm node's control messages: see ctl.h and docs/control-protocol.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctl.h"
#include "shared/xl_trusted.h"

#define SEQ_WINDOW   64
#define SEQ_JUMP_MAX 65536u /* the tools' XEVB_CTL_SEQ_JUMP_MAX */
#define MEMBER_TAG   "xevb-member-key"
#define ROLE_CORE    0
#define SKEW_NS      (5ull * 1000000000ull)
#define LOG_FIRST    5
#define LOG_EVERY_NS 10000000000ull

/* The reasons are the public ones: the codec's (shared/xl_ctl_proto.h), then not_member. */
_Static_assert((int)XEVB_CTL_E_NOT_MEMBER == (int)XEVB_CTL_REFUSED_NOT_MEMBER &&
		       (int)XEVB_CTL_E_STALE == (int)XEVB_CTL_REFUSED_STALE &&
		       (int)XEVB_CTL_E_NOT_MEMBER + 1 == (int)XEVB_CTL_REFUSED__COUNT,
	       "enum xevb_ctl_err is enum xevb_ctl_refused");

XEVB_API const char *xevb_ctl_refused_name(int reason)
{
	return reason > 0 && reason < XEVB_CTL_REFUSED__COUNT ? xl_ctl_err_name(reason) : NULL;
}

uint32_t xl_new_epoch(void)
{
	uint64_t t = xl_real_ns() ^ ((uint64_t)getpid() << 20) ^ xl_mono_ns();
	uint32_t e = (uint32_t)(t ^ (t >> 32)) * 2654435761u;

	return e ? e : 1;
}

/* ---- authentication (docs/control-protocol.md "Authentication") ---- */

static int hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Leading hex digits of b[0..n). */
static size_t hex_digits(const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n && hex(b[i]) >= 0; i++)
		;
	return i;
}

static bool all_text(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] < 0x20 || b[i] > 0x7e)
			return false;
	return true;
}

/*
 * The tools' rule (user/ctl/ctl_auth.c), one form per length: exactly 32
 * bytes are the key, unless they are all text (a passphrase, or 32 hex
 * digits: 16 bytes); exactly 64 hex digits, a newline after them allowed,
 * are the key in hex; nothing else is a key, nor one byte repeated (all
 * zero). 0, or -EINVAL with what is wrong in why.
 */
static int key_from(const uint8_t *b, size_t n, uint8_t *key, char *why, size_t wl)
{
	size_t digits = n && b[n - 1] == '\n' ? n - 1 : n, i;

	if (n == XL_CTL_KEY_LEN && all_text(b, n)) {
		xl_fmt(why, wl, "%s",
		       hex_digits(b, n) == n ? "32 hex digits (16 bytes)" : "32 bytes of text, not random");
		return -EINVAL;
	}
	if (n == XL_CTL_KEY_LEN) {
		memcpy(key, b, XL_CTL_KEY_LEN);
	} else if (digits == 2 * XL_CTL_KEY_LEN && hex_digits(b, digits) == digits) {
		for (i = 0; i < XL_CTL_KEY_LEN; i++)
			key[i] = (uint8_t)(hex(b[2 * i]) << 4 | hex(b[2 * i + 1]));
	} else if (digits == 2 * XL_CTL_KEY_LEN) {
		xl_fmt(why, wl, "character %zu of 64 is not a hex digit", hex_digits(b, digits) + 1);
		return -EINVAL;
	} else if (digits && hex_digits(b, digits) == digits) {
		xl_fmt(why, wl, "%zu hex digits", digits);
		return -EINVAL;
	} else {
		xl_fmt(why, wl, "%zu bytes", n);
		return -EINVAL;
	}
	for (i = 1; i < XL_CTL_KEY_LEN && key[i] == key[0]; i++)
		;
	if (i < XL_CTL_KEY_LEN)
		return 0;
	xl_fmt(why, wl, "all 32 bytes are 0x%02x", key[0]);
	sodium_memzero(key, XL_CTL_KEY_LEN);
	return -EINVAL;
}

/* "xevb-member-key sink ID HEX64" and an optional newline: the member key of farm node ID. */
static int member_from(const uint8_t *b, size_t n, struct xl_ctl *c, char *why, size_t wl)
{
	char text[160], rname[16], hx[2 * XL_CTL_KEY_LEN + 2], tail;
	unsigned long v;
	int got;

	if (n >= sizeof(text))
		return xl_fmt(why, wl, "a member key file of %zu bytes", n), -EINVAL;
	memcpy(text, b, n);
	text[n] = 0;
	if (n && text[n - 1] == '\n')
		text[n - 1] = 0;
	got = sscanf(text, MEMBER_TAG " %15s %lu %65s %c", rname, &v, hx, &tail);
	if (got != 3 || strcmp(rname, "sink") || v > UINT16_MAX || strlen(hx) != 2 * XL_CTL_KEY_LEN ||
	    hex_digits((const uint8_t *)hx, 2 * XL_CTL_KEY_LEN) != 2 * XL_CTL_KEY_LEN) {
		sodium_memzero(text, sizeof(text));
		xl_fmt(why, wl,
		       "not a farm node's member key: one line '" MEMBER_TAG
		       " sink ID HEX64', as `xevb key "
		       "derive --role sink` writes it");
		return -EINVAL;
	}
	for (size_t i = 0; i < XL_CTL_KEY_LEN; i++)
		c->key[i] = (uint8_t)(hex(hx[2 * i]) << 4 | hex(hx[2 * i + 1]));
	c->member_role = XEVB_ROLE_SINK;
	c->member_id = (uint16_t)v;
	sodium_memzero(text, sizeof(text));
	sodium_memzero(hx, sizeof(hx));
	return 0;
}

/* path (a regular file) starts as a builder's key bundle: what a refusal should name. */
static bool is_bundle(const char *path)
{
	static const char tag[] = "xevb-key-bundle ";
	char head[sizeof(tag) - 1];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	bool yes;

	if (fd < 0)
		return false;
	yes = !fstat(fd, &st) && S_ISREG(st.st_mode) && read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) &&
	      !memcmp(head, tag, sizeof(head));
	close(fd);
	return yes;
}

int xl_ctl_load_key(struct xl_ctl *c, const char *path, char *err, size_t errlen)
{
	uint8_t buf[160];
	char why[160];
	ssize_t n;
	int rc;

	if (sodium_init() < 0) {
		xl_fmt(err, errlen, "libsodium did not initialise: cannot authenticate control messages");
		return -EIO;
	}
	n = xl_tf_read(XL_TF_KEY, path, buf, sizeof(buf), err, errlen);
	if (n < 0 && is_bundle(path))
		xl_fmt(err, errlen,
		       "key file %s is a builder's key bundle: a farm node takes its own member key "
		       "(xevb key derive --role sink --id N)",
		       path);
	if (n < 0)
		return (int)n;
	c->member_role = 0;
	if ((size_t)n > strlen(MEMBER_TAG) && !memcmp(buf, MEMBER_TAG, strlen(MEMBER_TAG)))
		rc = member_from(buf, (size_t)n, c, why, sizeof(why));
	else if ((size_t)n > 2 * XL_CTL_KEY_LEN + 1) {
		sodium_memzero(buf, sizeof(buf));
		xl_fmt(err, errlen, "key file %s: %zd bytes: " XL_KEY_FORMS " (" XL_KEY_HOWTO ")", path, n, path);
		return -EINVAL;
	} else
		rc = key_from(buf, (size_t)n, c->key, why, sizeof(why));
	sodium_memzero(buf, sizeof(buf));
	if (rc) {
		xl_fmt(err, errlen, "key file %s: %s; " XL_KEY_FORMS " (" XL_KEY_HOWTO "), or our member key",
		       path, why, path);
		return rc;
	}
	c->keyed = true;
	return 0;
}

/* The tools' key schedule (user/ctl/ctl_auth.c, docs/control-protocol.md "Keys"). */
int xl_ctl_bind(struct xl_ctl *c, char *err, size_t errlen)
{
	uint8_t s[XL_CTL_KEY_LEN];
	uint32_t run = c->run ? c->run : 1;

	if (!c->keyed)
		return 0;
	if (c->member_role && c->member_id != c->id) {
		xl_fmt(err, errlen,
		       "the key file is the member key of farm node %u, but we are farm node %u: give us our own "
		       "(xevb key derive --role sink --id %u), or the run's master key",
		       c->member_id, c->id, c->id);
		return -EINVAL;
	}
	if (c->member_role)
		memcpy(s, c->key, sizeof(s));
	else
		crypto_kdf_derive_from_key(s, sizeof(s), (uint64_t)XEVB_ROLE_SINK << 16 | c->id, "xevbmemb",
					   c->key);
	crypto_kdf_derive_from_key(c->own, sizeof(c->own), run, "xevbrun1", s);
	memcpy(c->mine, s, sizeof(s));
	memset(c->links, 0, sizeof(c->links));
	if (!c->member_role) {
		crypto_kdf_derive_from_key(s, sizeof(s), 0, "xevbcore", c->key);
		crypto_kdf_derive_from_key(c->core, sizeof(c->core), run, "xevbrun1", s);
	}
	sodium_memzero(s, sizeof(s));
	return 0;
}

/* Our link with builder id: KDF(KDF(our member key, builder id), run), the tools' link key. */
static const uint8_t *builder_link(struct xl_ctl *c, uint16_t id)
{
	struct xl_link *l = &c->links[id % XL_CTL_LINKS];
	uint8_t b[XL_CTL_KEY_LEN];

	if (!l->used || l->id != id) {
		*l = (struct xl_link){ .used = true, .id = id };
		crypto_kdf_derive_from_key(b, sizeof(b), (uint64_t)XEVB_ROLE_BUILDER << 16 | id, "xevblink",
					   c->mine);
		crypto_kdf_derive_from_key(l->k, sizeof(l->k), c->run ? c->run : 1, "xevbrun1", b);
		sodium_memzero(b, sizeof(b));
	}
	return l->k;
}

/* The MAC binds the destination: a copy sent elsewhere does not open. */
static void mac(const uint8_t *key, uint32_t dst_addr, uint16_t dst_port, const uint8_t *buf, size_t len,
		uint8_t *out)
{
	crypto_generichash_state st;
	uint8_t dst[6];

	memcpy(dst, &dst_addr, 4);
	memcpy(dst + 4, &dst_port, 2);
	crypto_generichash_init(&st, key, XL_CTL_KEY_LEN, XL_CTL_MAC_LEN);
	crypto_generichash_update(&st, dst, sizeof(dst));
	crypto_generichash_update(&st, buf, len);
	crypto_generichash_final(&st, out, XL_CTL_MAC_LEN);
}

static struct xl_peer_seen *peer_slot(struct xl_ctl *c, const struct xevb_ctl_hdr *h, bool *fresh)
{
	uint64_t k =
		(((uint64_t)h->epoch << 24) ^ ((uint64_t)h->role << 16) ^ h->sender_id) * 0x9e3779b97f4a7c15ull;
	uint32_t hash = (uint32_t)(k >> 40);
	struct xl_peer_seen *old = NULL;

	for (uint32_t i = 0; i < 8; i++) {
		struct xl_peer_seen *p = &c->peers[(hash + i) % XL_CTL_PEERS];
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

/* Taken already, or jumping further ahead than the sender could have sent (the tools' rule)? */
static enum xevb_ctl_err seq_take(struct xl_peer_seen *p, uint32_t seq, uint64_t ts)
{
	if ((int32_t)(seq - p->top_seq) > 0) {
		uint32_t up = seq - p->top_seq;
		if (up > SEQ_JUMP_MAX + (ts > p->last_ts ? (ts - p->last_ts) / 1000 : 0))
			return XEVB_CTL_E_SEQ_JUMP;
		p->seen = up >= SEQ_WINDOW ? 1 : (p->seen << up) | 1;
		p->top_seq = seq;
	} else {
		uint32_t back = p->top_seq - seq;
		if (back >= SEQ_WINDOW || (p->seen >> back) & 1)
			return XEVB_CTL_E_REPLAY;
		p->seen |= 1ull << back;
	}
	if (ts > p->last_ts)
		p->last_ts = ts;
	return XEVB_CTL_OK;
}

/*
 * Our link with the DFM is sealed with our run key, with a builder with
 * that link's key; nobody else talks to us. With the master we also take
 * the core's key: a builder that does not know we are a farm node (no run
 * configuration) seals so.
 */
static enum xevb_ctl_err mac_check(struct xl_ctl *c, const uint8_t *buf, size_t body, uint32_t dst)
{
	uint8_t want[XL_CTL_MAC_LEN];

	if (buf[4] != XEVB_ROLE_BUILDER && buf[4] != XEVB_ROLE_DFM)
		return XEVB_CTL_E_WRONG_ROLE;
	mac(buf[4] == XEVB_ROLE_DFM ? c->own : builder_link(c, xl_ld16(buf + 6)), dst, c->port, buf, body + 8,
	    want);
	if (!sodium_memcmp(want, buf + body + 8, XL_CTL_MAC_LEN))
		return XEVB_CTL_OK;
	if (!c->member_role) {
		mac(c->core, dst, c->port, buf, body + 8, want);
		if (!sodium_memcmp(want, buf + body + 8, XL_CTL_MAC_LEN))
			return XEVB_CTL_OK;
	}
	return XEVB_CTL_E_MAC;
}

/* The wall clock our control messages are stamped and checked by. */
static uint64_t ctl_now(const struct xl_ctl *c)
{
	return xl_real_ns() + (uint64_t)c->clock_off_ns;
}

static enum xevb_ctl_err open_sealed(struct xl_ctl *c, uint8_t *buf, size_t len, uint32_t dst,
				     struct xevb_ctl_msg *m)
{
	size_t body = len - XL_CTL_TRAILER;
	struct xl_peer_seen *p;
	uint64_t ts, now = ctl_now(c);
	enum xevb_ctl_err w;
	bool fresh;

	if (len < XEVB_CTL_HLEN + XL_CTL_TRAILER)
		return XEVB_CTL_E_SHORT;
	if ((w = mac_check(c, buf, body, dst)) != XEVB_CTL_OK)
		return w;
	ts = xl_ld64(buf + body);
	if (ts + SKEW_NS < now || ts > now + SKEW_NS)
		return XEVB_CTL_E_STALE;
	buf[2] = XEVB_CTL_VERSION;
	w = xl_ctl_decode(buf, body, m);
	buf[2] = XL_CTL_VERSION_AU;
	if (w != XEVB_CTL_OK)
		return w;
	p = peer_slot(c, &m->h, &fresh);
	if (fresh) {
		*p = (struct xl_peer_seen){ .used = 1,
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

/* ---- the socket ---- */

/*
 * Test only (tests/integration/test_books_configured.sh):
 * XEVB_TEST_CLOCK_OFFSET_MS=N (-600000..600000) puts the clock this farm
 * node stamps and checks its control messages by N ms off, as a host
 * whose clock is off would: its peers refuse what it sends (stale), and
 * it theirs.
 */
static void test_clock_init(struct xl_ctl *c)
{
	const char *e = getenv("XEVB_TEST_CLOCK_OFFSET_MS");
	char *end;
	long n;

	c->clock_off_ns = 0;
	if (!e || !*e)
		return;
	n = strtol(e, &end, 10);
	if (*end || n < -600000 || n > 600000) {
		xl_log(c->log, XEVB_LIB_LOG_WARN,
		       "XEVB_TEST_CLOCK_OFFSET_MS=%s ignored: give N ms in -600000..600000", e);
		return;
	}
	c->clock_off_ns = (int64_t)n * 1000000;
	xl_log(c->log, XEVB_LIB_LOG_WARN,
	       "XEVB_TEST_CLOCK_OFFSET_MS=%ld: the control messages' clock is %ld ms off (test only)", n, n);
}

int xl_ctl_open(struct xl_ctl *c, uint32_t addr, uint16_t port, uint16_t id, char *err, size_t errlen)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons(port) };
	socklen_t ml = sizeof(me);
	int one = 1, buf = 4 << 20;

	c->id = id;
	c->epoch = xl_new_epoch();
	test_clock_init(c);
	c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		int e = errno;
		xl_fmt(err, errlen, "control socket: %s", strerror(e));
		return -e;
	}
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(c->fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	if (bind(c->fd, (struct sockaddr *)&me, sizeof(me))) {
		int e = errno;
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &me.sin_addr, a, sizeof(a));
		xl_fmt(err, errlen,
		       "cannot bind the control port %s:%u: %s (another farm node on this host? give each its "
		       "own ctl_port, and the builders the same as --tune sink-ctl-port)",
		       a, port, strerror(e));
		close(c->fd);
		c->fd = -1;
		return -e;
	}
	getsockname(c->fd, (struct sockaddr *)&me, &ml);
	c->port = me.sin_port;
	return 0;
}

void xl_ctl_close(struct xl_ctl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	sodium_memzero(c->key, sizeof(c->key));
	sodium_memzero(c->own, sizeof(c->own));
	sodium_memzero(c->core, sizeof(c->core));
	sodium_memzero(c->mine, sizeof(c->mine));
	sodium_memzero(c->links, sizeof(c->links));
}

/* key: that of the link with the destination (NULL: the DFM's). m's header is ours. */
static int send_msg(struct xl_ctl *c, const struct sockaddr_in *to, const uint8_t *key, struct xevb_ctl_msg *m)
{
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len;

	m->h.role = XEVB_ROLE_SINK;
	m->h.sender_id = c->id;
	m->h.epoch = c->epoch;
	m->h.seq = ++c->seq;
	len = xl_ctl_encode(m, buf, sizeof(buf));
	if (len && c->keyed) {
		buf[2] = XL_CTL_VERSION_AU;
		xl_st64(buf + len, ctl_now(c));
		mac(key ? key : c->own, to->sin_addr.s_addr, to->sin_port, buf, len + 8, buf + len + 8);
		len += XL_CTL_TRAILER;
	}
	if (!len || sendto(c->fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)) != (ssize_t)len) {
		c->tx_err++;
		return -1;
	}
	c->tx++;
	return 0;
}

int xl_ctl_send_status(struct xl_ctl *c, const struct sockaddr_in *to, uint16_t builder,
		       const struct xevb_ctl_status *s)
{
	struct xevb_ctl_msg m = { .h = { .type = XEVB_CTL_STATUS, .n_recs = 1 } };

	m.u.status = *s;
	m.u.status.first_id = 0;
	m.u.status.n_ids = 0;
	return send_msg(c, to, c->keyed ? builder_link(c, builder) : NULL, &m);
}

int xl_ctl_send_received(struct xl_ctl *c, const struct sockaddr_in *to, const struct xevb_ctl_received *r,
			 uint32_t n)
{
	struct xevb_ctl_msg m = { .h = { .type = XEVB_CTL_RECEIVED, .n_recs = (uint16_t)n } };

	if (n > XL_CTL_RECV_MAX)
		return -1;
	memcpy(m.u.received, r, n * sizeof(*r));
	return send_msg(c, to, NULL, &m);
}

static bool admitted(const struct xl_ctl *c, const struct xevb_ctl_hdr *h, const struct sockaddr_in *from)
{
	if (!c->members)
		return true;
	for (uint32_t i = 0; i < c->n_members; i++) {
		const struct xl_member *m = &c->members[i];
		if (m->addr == from->sin_addr.s_addr && m->port == ntohs(from->sin_port))
			return m->role == h->role && m->id == h->sender_id;
	}
	return false;
}

/* The first refusals one by one, then one line per LOG_EVERY_NS. */
static void refused(struct xl_ctl *c, enum xevb_ctl_err w, const struct sockaddr_in *from)
{
	uint64_t now = xl_mono_ns();
	char a[INET_ADDRSTRLEN];

	c->refused++;
	c->refused_by[w]++;
	if (c->refused > LOG_FIRST && now - c->auth_warn_ns < LOG_EVERY_NS)
		return;
	c->auth_warn_ns = now;
	inet_ntop(AF_INET, &from->sin_addr, a, sizeof(a));
	xl_log(c->log, XEVB_LIB_LOG_WARN, "control message from %s:%u refused: %s (%llu refused so far%s)", a,
	       ntohs(from->sin_port), xl_ctl_err_name(w), (unsigned long long)c->refused,
	       w == XEVB_CTL_E_UNAUTH     ? "; this run has a key: give the peer the same key file" :
	       w == XEVB_CTL_E_NO_KEY     ? "; the peer authenticates: give us its key file" :
	       w == XEVB_CTL_E_STALE      ? "; a replay, or clocks more than 5 s apart: check NTP" :
	       w == XEVB_CTL_E_NOT_MEMBER ? "; not a builder of the run configuration" :
					    "");
}

static enum xevb_ctl_err take(struct xl_ctl *c, uint8_t *buf, size_t n, uint32_t dst, struct xevb_ctl_msg *m)
{
	bool sealed = n > 2 && buf[2] == XL_CTL_VERSION_AU;

	if (c->keyed)
		return sealed                              ? open_sealed(c, buf, n, dst, m) :
		       n > 2 && buf[2] == XEVB_CTL_VERSION ? XEVB_CTL_E_UNAUTH :
							     xl_ctl_decode(buf, n, m);
	return sealed ? XEVB_CTL_E_NO_KEY : xl_ctl_decode(buf, n, m);
}

int xl_ctl_recv(struct xl_ctl *c, struct xevb_ctl_hdr *h, struct xevb_ctl_status *s, struct sockaddr_in *from)
{
	struct xevb_ctl_msg m;
	uint8_t buf[XEVB_CTL_MAX_LEN + 1];
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct in_pktinfo))];
	} cm;

	for (int budget = 0; budget < 256; budget++) {
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = { .msg_name = from,
				     .msg_namelen = sizeof(*from),
				     .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b) };
		ssize_t n = recvmsg(c->fd, &mh, 0);
		uint32_t dst = 0;
		enum xevb_ctl_err w;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0;
		for (struct cmsghdr *cmh = CMSG_FIRSTHDR(&mh); cmh; cmh = CMSG_NXTHDR(&mh, cmh))
			if (cmh->cmsg_level == IPPROTO_IP && cmh->cmsg_type == IP_PKTINFO)
				dst = ((const struct in_pktinfo *)CMSG_DATA(cmh))->ipi_addr.s_addr;
		w = take(c, buf, (size_t)n, dst, &m);
		if (w == XEVB_CTL_OK && !admitted(c, &m.h, from))
			w = XEVB_CTL_E_NOT_MEMBER;
		if (w != XEVB_CTL_OK) {
			refused(c, w, from);
			continue;
		}
		if ((m.h.role == XEVB_ROLE_BUILDER && m.h.type == XEVB_CTL_STATUS) ||
		    (m.h.role == XEVB_ROLE_DFM && m.h.type == XEVB_CTL_BYE)) {
			*h = m.h;
			if (m.h.type == XEVB_CTL_STATUS)
				*s = m.u.status;
			return 1;
		}
		c->unexpected++;
		c->wrong_role++;
	}
	return 0;
}

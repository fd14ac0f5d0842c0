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

/* ---- authentication (docs/control-protocol.md "Authentication") ---- */

static bool member_tagged(const uint8_t *b, size_t n)
{
	return n > strlen(XEVB_MEMBER_KEY_TAG) && !memcmp(b, XEVB_MEMBER_KEY_TAG, strlen(XEVB_MEMBER_KEY_TAG));
}

/*
 * The key file's bytes: our member key ("xevb-member-key sink ID HEX64",
 * `xevb key derive`) or the run's master (the tools' rule, xl_ctl_auth.h).
 * 0, or -EINVAL with what is wrong in why.
 */
static int key_text(struct xl_ctl *c, const uint8_t *b, size_t n, char *why, size_t wl)
{
	uint8_t role = 0;
	int rc;

	c->member_role = 0;
	if (!member_tagged(b, n))
		return xl_ctl_key_parse(b, n, c->key, why, wl);
	rc = xl_ctl_member_parse(b, n, c->key, &role, &c->member_id, why, wl);
	if (rc == -EMSGSIZE)
		return -EINVAL;
	if (rc || role != XEVB_ROLE_SINK) {
		sodium_memzero(c->key, sizeof(c->key));
		xl_fmt(why, wl,
		       "not a farm node's member key: one line '" XEVB_MEMBER_KEY_TAG
		       " sink ID HEX64', as `xevb key derive --role sink` writes it");
		return -EINVAL;
	}
	c->member_role = XEVB_ROLE_SINK;
	return 0;
}

/* path (a regular file) starts as a builder's key bundle: what a refusal should name. */
static bool is_bundle(const char *path)
{
	static const char tag[] = XEVB_BUNDLE_TAG " ";
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
	if ((size_t)n > 2 * XEVB_CTL_KEY_LEN + 1 && !member_tagged(buf, (size_t)n)) {
		sodium_memzero(buf, sizeof(buf));
		xl_fmt(err, errlen, "key file %s: %zd bytes: " XL_KEY_FORMS " (" XL_KEY_HOWTO ")", path, n, path);
		return -EINVAL;
	}
	rc = key_text(c, buf, (size_t)n, why, sizeof(why));
	sodium_memzero(buf, sizeof(buf));
	if (rc) {
		xl_fmt(err, errlen, "key file %s: %s; " XL_KEY_FORMS " (" XL_KEY_HOWTO "), or our member key",
		       path, why, path);
		return rc;
	}
	c->keyed = true;
	return 0;
}

/* The tools' key schedule (xl_ctl_auth.h, docs/control-protocol.md "Keys"). */
int xl_ctl_bind(struct xl_ctl *c, char *err, size_t errlen)
{
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
		memcpy(c->mine, c->key, sizeof(c->mine));
	else
		xl_ctl_member_key(c->key, XEVB_ROLE_SINK, c->id, c->mine);
	xl_ctl_run_key(c->mine, run, c->own);
	memset(c->links, 0, sizeof(c->links));
	if (!c->member_role)
		xl_ctl_core_key(c->key, run, c->core);
	return 0;
}

/* Our link with builder id: KDF(KDF(our member key, builder id), run), the tools' link key. */
static const uint8_t *builder_link(struct xl_ctl *c, uint16_t id)
{
	struct xl_link *l = &c->links[id % XL_CTL_LINKS];
	uint8_t b[XEVB_CTL_KEY_LEN];

	if (!l->used || l->id != id) {
		*l = (struct xl_link){ .used = true, .id = id };
		xl_ctl_link_key(c->mine, id, b);
		xl_ctl_run_key(b, c->run ? c->run : 1, l->k);
		sodium_memzero(b, sizeof(b));
	}
	return l->k;
}

/* The wall clock our control messages are stamped and checked by. */
static uint64_t ctl_now(const struct xl_ctl *c)
{
	return xl_real_ns() + (uint64_t)c->clock_off_ns;
}

/*
 * Our link with the DFM is sealed with our run key, with a builder with
 * that link's key; nobody else talks to us. With the master we also take
 * the core's key: a builder that does not know we are a farm node (no run
 * configuration) seals so.
 */
static enum xevb_ctl_err open_sealed(struct xl_ctl *c, uint8_t *buf, size_t len, uint32_t dst,
				     struct xevb_ctl_msg *m)
{
	enum xevb_ctl_err w;

	if (len < XEVB_CTL_HLEN + XEVB_CTL_TRAILER_LEN)
		return XEVB_CTL_E_SHORT;
	if (buf[4] != XEVB_ROLE_BUILDER && buf[4] != XEVB_ROLE_DFM)
		return XEVB_CTL_E_WRONG_ROLE;
	w = xl_ctl_mac_check(buf[4] == XEVB_ROLE_DFM ? c->own : builder_link(c, xl_ld16(buf + 6)),
			     c->member_role ? NULL : c->core, buf, len, dst, c->port);
	return w == XEVB_CTL_OK ? xl_ctl_unseal(c->peers, buf, len, ctl_now(c), XEVB_CTL_AUTH_SKEW_NS, m) : w;
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
	c->epoch = xl_ctl_new_epoch();
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
	if (len && c->keyed)
		len = xl_ctl_seal(key ? key : c->own, buf, len, sizeof(buf), to->sin_addr.s_addr, to->sin_port,
				  ctl_now(c));
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
	return c->keyed && xl_ctl_sealed(buf, n) ? open_sealed(c, buf, n, dst, m) :
						   xl_ctl_unsealed(buf, n, c->keyed, m);
}

int xl_ctl_recv(struct xl_ctl *c, struct xevb_ctl_hdr *h, struct xevb_ctl_status *s, struct sockaddr_in *from)
{
	struct xevb_ctl_msg m;
	uint8_t buf[XEVB_CTL_MAX_LEN + 1];

	for (int budget = 0; budget < 256; budget++) {
		uint32_t dst;
		ssize_t n = xl_ctl_recvmsg(c->fd, buf, sizeof(buf), from, &dst);
		enum xevb_ctl_err w;

		if (n == -EINTR)
			continue;
		if (n < 0)
			return 0;
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

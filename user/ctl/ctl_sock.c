// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/cli.h"
#include "ctl/ctl_auth.h"
#include "ctl/ctl_batch.h"
#include "ctl/ctl_sock.h"
#include "ctl/flowctl.h"
#include "ctl/peer_map.h"
#include "xl_ctl_sock.h"

/* The first refusals are logged one by one, later ones at most once per this long. */
#define REFUSED_LOG_FIRST 5
#define REFUSED_LOG_NS    10000000000ull

static const struct xevb_ctl_members *default_members;
/* --key-file, loaded once while the command may still read it (before it
   drops privileges); every endpoint opened after takes a copy. */
static struct xevb_ctl_auth *default_auth;
static uint32_t default_run = XEVB_CTL_RUN_DEFAULT;

void xevb_ctl_set_run(uint32_t run)
{
	default_run = run;
}

/* Our keys for (role, id) in the run: 0, or -1 after a message (a member key of another member). */
static int bind_auth(struct xevb_ctl_auth *a, uint8_t role, uint16_t id)
{
	char err[256];

	if (!xevb_ctl_auth_bind(a, role, id, default_run, err, sizeof(err)))
		return 0;
	xevb_err("%s", err);
	return -1;
}

int xevb_ctl_set_key_file(const char *path)
{
	struct xevb_ctl_auth *a = calloc(1, sizeof(*a));

	if (!a || xevb_ctl_auth_load(a, path)) {
		free(a);
		return -1;
	}
	free(default_auth);
	default_auth = a;
	return 0;
}

int xevb_ctl_key_for(uint8_t role, uint16_t id)
{
	char err[256];

	if (!default_auth || !xevb_ctl_auth_fits(default_auth, role, id, err, sizeof(err)))
		return 0;
	xevb_err("%s", err);
	return -1;
}

bool xevb_ctl_key_is_master(void)
{
	return default_auth && !default_auth->member_role;
}

void xevb_ctl_set_members(const struct xevb_ctl_members *members)
{
	default_members = members;
}

const char *xevb_ctl_admit_name(enum xevb_ctl_admit a)
{
	static const char *const n[XEVB_ADMIT__COUNT] = {
		"ok", "not_member", "role_mismatch", "id_mismatch", "source_ids_mismatch",
	};
	return (unsigned)a < XEVB_ADMIT__COUNT ? n[a] : "?";
}

enum xevb_ctl_admit xevb_ctl_admit(const struct xevb_ctl_members *members, const struct sockaddr_in *sender,
				   const struct xevb_ctl_msg *m)
{
	const struct xevb_ctl_member *p = NULL;
	uint16_t port = ntohs(sender->sin_port);

	if (!members)
		return XEVB_ADMIT_OK;
	if (members->map) {
		int64_t i = peer_map_get(members->map, peer_key(sender->sin_addr.s_addr, port));
		p = i >= 0 ? &members->m[i] : NULL;
	}
	for (uint32_t i = 0; !members->map && i < members->n && !p; i++)
		if (members->m[i].addr == sender->sin_addr.s_addr && members->m[i].port == port)
			p = &members->m[i];
	if (!p)
		return XEVB_ADMIT_NOT_MEMBER;
	if (p->role != m->h.role)
		return XEVB_ADMIT_ROLE_MISMATCH;
	if (p->id != m->h.sender_id)
		return XEVB_ADMIT_ID_MISMATCH;
	if (p->role == XEVB_ROLE_SOURCE && m->h.type == XEVB_CTL_STATUS &&
	    (m->u.status.first_id != p->first_id || m->u.status.n_ids != p->n_ids))
		return XEVB_ADMIT_IDS_MISMATCH;
	return XEVB_ADMIT_OK;
}

void xevb_ctl_dropped(struct xevb_ctl_io *io, enum xevb_ctl_drop why)
{
	if ((unsigned)why < XEVB_CTL_DROP__COUNT)
		io->rx_dropped[why]++;
}

const char *xevb_ctl_drop_name(enum xevb_ctl_drop why)
{
	static const char *const n[XEVB_CTL_DROP__COUNT] = { "not_from_dfm", "wrong_role", "wrong_epoch",
							     "unknown_peer" };
	return (unsigned)why < XEVB_CTL_DROP__COUNT ? n[why] : "?";
}

void xevb_ctl_refused_json(const struct xevb_ctl_io *io, FILE *f)
{
	fputs("\"ctl_refused_by_reason\":{", f);
	for (int e = 1; e < XEVB_CTL_E__COUNT; e++)
		fprintf(f, "%s\"%s\":%llu", e > 1 ? "," : "", xevb_ctl_err_name(e),
			(unsigned long long)io->rx_bad[e]);
	fputs("},\"ctl_dropped\":{", f);
	for (int d = 0; d < XEVB_CTL_DROP__COUNT; d++)
		fprintf(f, "%s\"%s\":%llu", d ? "," : "", xevb_ctl_drop_name(d),
			(unsigned long long)io->rx_dropped[d]);
	fputc('}', f);
}

void xevb_ctl_admit_json(const struct xevb_ctl_io *io, FILE *f)
{
	fprintf(f, "{\"membership\":\"%s\"", io->members ? "configured" : "open");
	for (int a = 1; a < XEVB_ADMIT__COUNT; a++)
		fprintf(f, ",\"%s\":%llu", xevb_ctl_admit_name(a), (unsigned long long)io->rx_refused[a]);
	fputc('}', f);
}

/* Count a refused sender; name the first few, then one line per REFUSED_LOG_NS at most. */
static void refuse(struct xevb_ctl_io *io, enum xevb_ctl_admit why, const struct sockaddr_in *from,
		   const struct xevb_ctl_msg *m)
{
	uint64_t now;
	char a[INET_ADDRSTRLEN];

	io->rx_refused[why]++;
	io->rx_refused_total++;
	if (io->refused_logged >= REFUSED_LOG_FIRST) {
		now = xevb_now_ns();
		if (now - io->refused_log_ns < REFUSED_LOG_NS)
			return;
		io->refused_log_ns = now;
	}
	io->refused_logged++;
	inet_ntop(AF_INET, &from->sin_addr, a, sizeof(a));
	xevb_warn(
		"control message refused (%s): %s from %s:%u as %s id %u is not a peer of the run "
		"configuration (%llu refused so far; check the sender's address, port, role and id "
		"against the configuration)",
		xevb_ctl_admit_name(why), xevb_ctl_type_name(m->h.type), a, ntohs(from->sin_port),
		xevb_ctl_role_name(m->h.role), m->h.sender_id, (unsigned long long)io->rx_refused_total);
}

int xevb_ctl_parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	unsigned long port;
	char *end;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port == 0 || port > 65535)
		return -1;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

int xevb_ctl_init(struct xevb_ctl_io *io, uint8_t role, uint16_t id)
{
	memset(io, 0, sizeof(*io));
	io->fd = -1;
	io->role = role;
	io->id = id;
	io->epoch = xl_ctl_new_epoch();
	io->members = default_members;
	if (default_auth) {
		io->auth = malloc(sizeof(*io->auth));
		if (!io->auth) {
			xevb_err("control socket: out of memory for the key's replay table");
			return -1;
		}
		*io->auth = *default_auth;
		if (bind_auth(io->auth, role, id)) {
			free(io->auth);
			io->auth = NULL;
			return -1;
		}
	}
	return 0;
}

/*
 * Once per process, whichever endpoint opens first without a key: its
 * control messages are taken from whoever sends them (a run configuration
 * only checks the sender's address, which a host can forge).
 */
static void warn_unkeyed(const struct xevb_ctl_io *io)
{
	static bool warned;

	if (io->auth || warned)
		return;
	warned = true;
	xevb_warn(
		"control port %u: no key, control messages are not authenticated: %s (give every process of "
		"the run the same key: %s; make one with: (umask 077; head -c 32 /dev/urandom > run.key))",
		ntohs(io->port),
		default_members ? "a host that forges a configured peer's address passes as that peer" :
				  "any host that reaches this port passes as a peer",
		default_members ? "key_file = run.key in [run] of the run configuration" : "--key-file run.key");
}

/*
 * Test only (tests/integration/test_dfm_ctl_loss.sh): XEVB_TEST_CTL_DROP=N
 * drops every N-th control datagram this endpoint sends, as a lossy network
 * would: not BYE nor RECEIVED (the end of a run and its books, which a
 * lost datagram only delays).
 */
static void test_drop_init(struct xevb_ctl_io *io)
{
	const char *e = getenv("XEVB_TEST_CTL_DROP");
	char *end;
	unsigned long n;

	if (!e || !*e)
		return;
	n = strtoul(e, &end, 10);
	if (*end || n < 2 || n > 1000000) {
		xevb_warn("XEVB_TEST_CTL_DROP=%s ignored: give N in 2..1000000 (drop every N-th datagram)", e);
		return;
	}
	io->test_drop = (uint32_t)n;
	xevb_warn("XEVB_TEST_CTL_DROP=%lu: every %lu-th control datagram sent is dropped (test only)", n, n);
}

static bool test_dropped(struct xevb_ctl_io *io, uint8_t type)
{
	if (!io->test_drop || type == XEVB_CTL_BYE || type == XEVB_CTL_RECEIVED)
		return false;
	if (++io->test_seen % io->test_drop)
		return false;
	io->test_dropped++;
	return true;
}

int xevb_ctl_open(struct xevb_ctl_io *io, uint32_t addr, uint16_t port, uint8_t role, uint16_t id)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons(port) };
	int one = 1, buf = 4 << 20;

	if (xevb_ctl_init(io, role, id))
		return -1;
	test_drop_init(io);
	io->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (io->fd < 0) {
		xevb_err("control socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(io->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/*
	 * The DFM hears every peer (thousands beating every 100 ms, bursts of
	 * DONE): a queue that holds a stall of tens of milliseconds. Beyond
	 * net.core.rmem_max with CAP_NET_ADMIN only; else what it allows.
	 */
	if (role == XEVB_ROLE_DFM) {
		int big = 32 << 20;
		if (setsockopt(io->fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
			setsockopt(io->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	} else {
		setsockopt(io->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	}
	setsockopt(io->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (bind(io->fd, (struct sockaddr *)&me, sizeof(me))) {
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &me.sin_addr, a, sizeof(a));
		xevb_err(
			"cannot bind the control socket to %s:%u: %s (another process on that port? "
			"pick another with the --ctl-port option)",
			a, port, strerror(errno));
		close(io->fd);
		io->fd = -1;
		return -1;
	}
	/* Sealed messages name their destination: ours is the address each
	   datagram was sent to (IP_PKTINFO) and this port. */
	{
		socklen_t ml = sizeof(me);
		getsockname(io->fd, (struct sockaddr *)&me, &ml);
		io->port = me.sin_port;
		setsockopt(io->fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	}
	warn_unkeyed(io);
	return 0;
}

void xevb_ctl_close(struct xevb_ctl_io *io)
{
	xevb_ctl_flush(io);
	if (io->fd >= 0)
		close(io->fd);
	io->fd = -1;
	free(io->auth);
	io->auth = NULL;
}

int xevb_ctl_use_key(struct xevb_ctl_io *io, const char *path)
{
	struct xevb_ctl_auth *a = calloc(1, sizeof(*a));

	if (!a || xevb_ctl_auth_load(a, path) || bind_auth(a, io->role, io->id)) {
		free(a);
		return -1;
	}
	free(io->auth);
	io->auth = a;
	return 0;
}

/* Authentication refusals name their sender, once a second at most. */
static void auth_refused(struct xevb_ctl_io *io, enum xevb_ctl_err e, const struct sockaddr_in *from)
{
	uint64_t now = xevb_ctl_auth_now();
	char a[INET_ADDRSTRLEN];

	if (now - io->auth_warn_ns < 1000000000ull)
		return;
	io->auth_warn_ns = now;
	inet_ntop(AF_INET, &from->sin_addr, a, sizeof(a));
	xevb_warn("control message from %s:%u refused: %s (%llu refused so far; %s)", a, ntohs(from->sin_port),
		  xevb_ctl_err_name(e), (unsigned long long)io->rx_bad_total + 1,
		  e == XEVB_CTL_E_UNAUTH     ? "this run has a key: give the peer the same --key-file" :
		  e == XEVB_CTL_E_NO_KEY     ? "the peer authenticates: give us its --key-file" :
		  e == XEVB_CTL_E_STALE      ? "a replay, or clocks apart by more than 5 s: check NTP" :
		  e == XEVB_CTL_E_MAC        ? "forged, altered, another key, another run number, or a member "
					       "sealing as another" :
		  e == XEVB_CTL_E_SEQ_JUMP   ? "its sequence number jumps too far ahead: a member's forgery" :
		  e == XEVB_CTL_E_WRONG_ROLE ? "a role that does not talk to ours" :
					       "a replay");
}

/* Decode (and, with a key, check) one datagram sent to dst (network order). */
static enum xevb_ctl_err take(struct xevb_ctl_io *io, uint8_t *buf, size_t n, uint32_t dst, struct xevb_ctl_msg *m)
{
	if (io->auth && xl_ctl_sealed(buf, n))
		return xevb_ctl_auth_open(io->auth, buf, n, dst, io->port, xevb_ctl_auth_now(), m);
	return xl_ctl_unsealed(buf, n, io->auth != NULL, m);
}

static uint32_t learned_slot(uint32_t addr, uint16_t port)
{
	return (uint32_t)((((uint64_t)addr << 16) ^ port) * 0x9e3779b97f4a7c15ull >> 40) % XEVB_CTL_LEARNED;
}

/* Remember that (role, id) speaks from addr:port (network order). */
static void learn(struct xevb_ctl_io *io, uint32_t addr, uint16_t port, uint8_t role, uint16_t id)
{
	if (addr && port)
		io->learned[learned_slot(addr, port)] =
			(struct xevb_ctl_learned){ .addr = addr, .port = port, .role = role, .id = id };
}

/*
 * Who is at to: a configured member, an edge member heard from there (or
 * named in a SOURCES message), or nobody known (0: the core).
 */
void xevb_ctl_peer_of(const struct xevb_ctl_io *io, const struct sockaddr_in *to, uint8_t *role, uint16_t *id)
{
	const struct xevb_ctl_learned *l = &io->learned[learned_slot(to->sin_addr.s_addr, to->sin_port)];

	*role = 0;
	*id = 0;
	/* Heard from there (admitted by the configuration if there is one): no list to walk. */
	if (l->addr == to->sin_addr.s_addr && l->port == to->sin_port) {
		*role = l->role;
		*id = l->id;
		return;
	}
	for (uint32_t i = 0; io->members && i < io->members->n; i++)
		if (io->members->m[i].addr == to->sin_addr.s_addr &&
		    htons(io->members->m[i].port) == to->sin_port) {
			*role = io->members->m[i].role;
			*id = io->members->m[i].id;
			return;
		}
}

/* An ICMP error a datagram sent earlier met (IP_RECVERR) fails the next call once: not this one's. */
static bool stale_icmp(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH;
}

static bool send_one(struct xevb_ctl_io *io, const struct sockaddr_in *to, const uint8_t *buf, size_t len)
{
	for (int k = 0; k < 2; k++) {
		if (sendto(io->fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)) == (ssize_t)len)
			return true;
		if (!stale_icmp(errno))
			return false;
	}
	return false;
}

int xevb_ctl_send(struct xevb_ctl_io *io, const struct sockaddr_in *to, struct xevb_ctl_msg *m)
{
	uint8_t buf[XEVB_CTL_MAX_LEN], peer_role;
	uint16_t peer_id;
	size_t len;

	m->h.role = io->role;
	m->h.sender_id = io->id;
	m->h.epoch = io->epoch;
	m->h.seq = ++io->seq;
	len = xevb_ctl_encode(m, buf, sizeof(buf));
	if (len && io->auth) {
		xevb_ctl_peer_of(io, to, &peer_role, &peer_id);
		len = xevb_ctl_auth_seal_to(io->auth, buf, len, sizeof(buf), to->sin_addr.s_addr, to->sin_port,
					    xevb_ctl_auth_now(), peer_role, peer_id);
		io->tx_no_key += !len;
	}
	if (len && io->tx_hook)
		io->tx_hook(io->tx_ctx, to, buf, len);
	else if (len && test_dropped(io, m->h.type))
		; /* counted as sent: lost on the way */
	else if (len && io->txq)
		return xevb_ctl_txq_put(io, to, buf, len, m->h.type);
	else if (!len || !send_one(io, to, buf, len)) {
		io->tx_err++;
		return -1;
	}
	io->tx++;
	io->tx_type[m->h.type]++;
	return 0;
}

int xevb_ctl_recv(struct xevb_ctl_io *io, struct xevb_ctl_msg *m, struct sockaddr_in *from)
{
	uint8_t buf[XEVB_CTL_MAX_LEN + 1];
	int stale = 0;

	if (io->rxq)
		return xevb_ctl_rxq_recv(io, m, from);
	for (;;) {
		uint32_t dst;
		ssize_t n = xl_ctl_recvmsg(io->fd, buf, sizeof(buf), from, &dst);

		if (n < 0) {
			if (n == -EINTR || (stale_icmp((int)-n) && stale++ < 64))
				continue;
			return 0;
		}
		if (xevb_ctl_take(io, buf, (size_t)n, dst, from, m))
			return 1;
	}
}

int xevb_ctl_take(struct xevb_ctl_io *io, uint8_t *buf, size_t n, uint32_t dst, const struct sockaddr_in *from,
		  struct xevb_ctl_msg *m)
{
	enum xevb_ctl_err e;
	enum xevb_ctl_admit why;

	io->rx++;
	e = take(io, buf, n, dst, m);
	/* Edge members never talk to each other, nor anyone to its own role. */
	if (e == XEVB_CTL_OK && io->role &&
	    (m->h.role == io->role || (xevb_ctl_role_edge(m->h.role) && xevb_ctl_role_edge(io->role))))
		e = XEVB_CTL_E_WRONG_ROLE;
	if (e != XEVB_CTL_OK) {
		if (e >= XEVB_CTL_E_UNAUTH)
			auth_refused(io, e, from);
		io->rx_bad[e]++;
		io->rx_bad_total++;
		return 0;
	}
	why = xevb_ctl_admit(io->members, from, m);
	if (why != XEVB_ADMIT_OK) {
		refuse(io, why, from, m);
		return 0;
	}
	io->rx_type[m->h.type]++;
	learn(io, from->sin_addr.s_addr, from->sin_port, m->h.role, m->h.sender_id);
	if (m->h.type == XEVB_CTL_SOURCES)
		for (uint32_t i = 0; i < m->h.n_recs; i++)
			learn(io, m->u.src[i].addr, htons(m->u.src[i].port), XEVB_ROLE_SOURCE,
			      m->u.src[i].first_id);
	return 1;
}

int xevb_ctl_watch_unreachable(struct xevb_ctl_io *io)
{
	int one = 1;

	return setsockopt(io->fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
}

int xevb_ctl_unreachable(struct xevb_ctl_io *io, struct sockaddr_in *to)
{
	union {
		struct cmsghdr h;
		/* IP_PKTINFO comes too (the socket asks for it), then IP_RECVERR. */
		uint8_t b[CMSG_SPACE(sizeof(struct in_pktinfo)) +
			  CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in))];
	} ctl;

	for (int k = 0; k < 64; k++) {
		uint8_t buf[64];
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = { .msg_name = to,
				     .msg_namelen = sizeof(*to),
				     .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.b,
				     .msg_controllen = sizeof(ctl.b) };

		if (recvmsg(io->fd, &mh, MSG_ERRQUEUE) < 0)
			return 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			const struct sock_extended_err *e = (const void *)CMSG_DATA(c);
			/* Port unreachable: nothing listens there any more (the process is gone). */
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR &&
			    e->ee_origin == SO_EE_ORIGIN_ICMP && e->ee_type == 3 && e->ee_code == 3 &&
			    mh.msg_namelen >= sizeof(*to) && to->sin_family == AF_INET) {
				io->unreachable++;
				return 1;
			}
		}
	}
	return 0;
}

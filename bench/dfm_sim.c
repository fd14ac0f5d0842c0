// SPDX-License-Identifier: GPL-2.0-only
/*
 * dfm_sim: the peers of a run, played from one process against a real
 * `xevb dfm`, so that the DFM alone is the load (scripts/bench/
 * bench-dfm-scale.sh). B builders, S source processes and F farm nodes,
 * each with its own control socket on its own address (--base, +1 a peer;
 * give the namespace's lo the whole prefix: the DFM tells peers apart by
 * address and port, the farm nodes' RECEIVED names builders by address
 * alone, and every role listens on its fixed port), speaking the control protocol
 * through the project's codec (ctl_proto.c; with --key-file every message
 * sealed and checked by ctl_auth.c):
 *
 *   builders: STATUS every 10 ms unless a DONE left since, as `xevb build`
 *             does (the DFM's --dead-ms is a few of these); every ASSIGN answered at
 *             once with DONE complete, batched (a full datagram, or what
 *             one read of the socket brought);
 *   sources:  STATUS every 100 ms (one source id each); they take ROUTE
 *             and ASSIGN (push), CLEAR and BUILDERS and send nothing else;
 *   farm nodes: RECEIVED every 100 ms: the builders' DONE events split
 *             evenly among them, so the DFM closes its books there.
 *
 * Counts the datagrams by type in both directions (what the sim sends is
 * what the DFM receives), the DFM's CPU time (/proc/PID/schedstat, and
 * user/system from /proc/PID/stat) and ours, between the first ASSIGN and
 * the DFM's BYE. Ends when the DFM has exited (--dfm-pid) or --linger-ms
 * after its BYE, and prints one JSON object.
 *
 *   dfm_sim --dfm 198.18.0.1:23901 --builders 4 --sources 8 --farm 2 \
 *           [--credits 50] [--base 198.18.1.0] [--key-file F] [--dfm-pid PID]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "base/cli.h"
#include "ctl/ctl_proto.h"
#include "ctl/ctl_sock.h"

#define MAX_B      1024 /* the DFM's tables: XEVB_DFM_MAX_BUILDERS, DFM_MAX_SOURCES, XEVB_DFM_MAX_SINKS */
#define MAX_S      4096
#define MAX_F      4096
#define ROLE_SPAN  4096 /* addresses: builders base+k, sources base+4096+k, farm nodes base+8192+k */
#define B_RCVBUF   (32 << 20)
#define HB_NS      100000000ull
#define HB_B_NS    10000000ull /* builders: a DONE counts as one */
#define BATCH      32
#define N_TYPES    XEVB_CTL__TYPES
#define SNAP_START 0
#define SNAP_END   1

struct peer {
	struct xevb_ctl_io io;
	struct sockaddr_in me;
	uint8_t role;
	uint32_t k;              /* index within its role */
	struct xevb_ctl_msg out; /* builder: its DONEs waiting to leave */
	uint64_t events;         /* builder: events assigned (first ASSIGNs); source: events pushed */
	uint64_t blocks;         /* builder: ASSIGN records (blocks, first or again) */
	uint64_t retry_events;   /* builder: events assigned again (RETRY) */
	uint64_t cleared;        /* source: events cleared */
	uint32_t listed; /* builder: sources in SOURCES; source: builders in BUILDERS (distinct, every part) */
	uint64_t seen[ROLE_SPAN / 64]; /* which of them, by index in their role */
	uint32_t dfm_epoch;
	bool done_sent; /* builder: a DONE left since its last heartbeat */
};

struct opts {
	struct sockaddr_in dfm;
	uint32_t nb, ns, nf, credits, hold, linger_ms, timeout_s;
	uint32_t base; /* host order */
	const char *key_file;
	int dfm_pid;
};

struct dfm_cpu {
	uint64_t t, run_ns, wait_ns, utime, stime; /* schedstat: on a CPU, waiting for one; stat: ticks */
};

struct snap {
	uint64_t t, sim_cpu_ns;
	struct dfm_cpu dfm;
	uint64_t in[N_TYPES], out[XEVB_ROLE__COUNT][N_TYPES];
	uint64_t events, done_recs, retry_events, blocks;
};

static struct peer *peers;
static uint32_t n_peers;
static struct opts o = { .credits = 50, .hold = 65536, .linger_ms = 3000, .timeout_s = 120, .dfm_pid = -1 };
static struct snap snaps[2];
static bool have_snap[2];
static uint64_t not_from_dfm, send_errors;
static struct dfm_cpu dfm_last; /* the DFM's CPU when last read (it may be gone at the BYE) */
static volatile sig_atomic_t stop_sig;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: dfm_sim --dfm ADDR:PORT [--builders B] [--sources S] [--farm F] [--credits N]\n"
		"               [--hold N] [--base ADDR] [--key-file FILE] [--dfm-pid PID] [--linger-ms MS]\n"
		"               [--timeout S]\n"
		"  peers bind base+k (builders), base+4096+k (sources), base+8192+k (farm nodes):\n"
		"  give lo the prefix in a namespace of its own, e.g. ip addr add 198.18.0.1/15 dev lo\n");
}

static int parse_u32(const char *name, const char *s, uint32_t lo, uint32_t hi, uint32_t *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 10);

	if (!*s || *end || x < lo || x > hi) {
		fprintf(stderr, "dfm_sim: --%s %s: give a number from %u to %u\n", name, s, lo, hi);
		return -1;
	}
	*v = (uint32_t)x;
	return 0;
}

static int parse_opts(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dfm", 1, 0, 'd' },       { "builders", 1, 0, 'b' }, { "sources", 1, 0, 's' },
		{ "farm", 1, 0, 'f' },      { "credits", 1, 0, 'c' },  { "hold", 1, 0, 'H' },
		{ "base", 1, 0, 'a' },      { "key-file", 1, 0, 'k' }, { "dfm-pid", 1, 0, 'p' },
		{ "linger-ms", 1, 0, 'l' }, { "timeout", 1, 0, 't' },  { 0, 0, 0, 0 },
	};
	struct in_addr base = { htonl(0xc6120100u) }; /* 198.18.1.0 */
	uint32_t pid = 0;
	int c, bad = 0;

	o.nb = o.ns = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		bad |= c == 'd' && xevb_ctl_parse_addr(optarg, &o.dfm);
		bad |= c == 'b' && parse_u32("builders", optarg, 1, MAX_B, &o.nb);
		bad |= c == 's' && parse_u32("sources", optarg, 1, MAX_S, &o.ns);
		bad |= c == 'f' && parse_u32("farm", optarg, 0, MAX_F, &o.nf);
		bad |= c == 'c' && parse_u32("credits", optarg, 1, 1u << 30, &o.credits);
		bad |= c == 'H' && parse_u32("hold", optarg, 1, 1u << 30, &o.hold);
		bad |= c == 'a' && inet_pton(AF_INET, optarg, &base) != 1;
		bad |= c == 'l' && parse_u32("linger-ms", optarg, 0, 600000, &o.linger_ms);
		bad |= c == 't' && parse_u32("timeout", optarg, 1, 86400, &o.timeout_s);
		bad |= c == 'p' && parse_u32("dfm-pid", optarg, 1, 1u << 30, &pid);
		if (c == 'k')
			o.key_file = optarg;
		bad |= c == '?';
	}
	if (bad || optind != argc || !o.dfm.sin_port) {
		usage();
		return -1;
	}
	o.base = ntohl(base.s_addr);
	/* The plan: three roles of ROLE_SPAN addresses from --base, not wrapping, not the DFM's own. */
	if (o.base > UINT32_MAX - 3 * ROLE_SPAN || ntohl(o.dfm.sin_addr.s_addr) - o.base < 3 * ROLE_SPAN) {
		fprintf(stderr,
			"dfm_sim: --base %s: the peers take %u addresses from there on, the DFM's among "
			"them or past 255.255.255.255: give another --base\n",
			inet_ntoa(base), 3 * ROLE_SPAN);
		return -1;
	}
	o.dfm_pid = pid ? (int)pid : -1;
	return 0;
}

static int open_peer(struct peer *p, uint8_t role, uint32_t k)
{
	static const uint16_t port[XEVB_ROLE__COUNT] = { 0, 0, XEVB_CTL_BUILDER_PORT, XEVB_CTL_SOURCE_PORT,
							 XEVB_CTL_SINK_PORT };
	uint32_t off = (uint32_t)(role - XEVB_ROLE_BUILDER) * ROLE_SPAN + k;

	memset(p, 0, sizeof(*p));
	p->role = role;
	p->k = k;
	p->me = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(o.base + off),
				      .sin_port = htons(port[role]) };
	/* A source's sender_id is its first source id; builders and farm nodes their index. */
	if (xevb_ctl_open(&p->io, p->me.sin_addr.s_addr, port[role], role, (uint16_t)k)) {
		fprintf(stderr,
			"dfm_sim: cannot bind %s %u to %s:%u: is that prefix local here (ip addr add "
			"198.18.0.1/15 dev lo in the namespace)?\n",
			xevb_ctl_role_name(role), k, inet_ntoa(p->me.sin_addr), port[role]);
		return -1;
	}
	p->out.h.type = XEVB_CTL_DONE;
	/* An ASSIGN lost here would be a DONE the farm nodes never count: room for any stall of ours. */
	if (role == XEVB_ROLE_BUILDER) {
		int got = 0;
		socklen_t len = sizeof(got);

		setsockopt(p->io.fd, SOL_SOCKET, SO_RCVBUFFORCE, &(int){ B_RCVBUF }, sizeof(int));
		if (getsockopt(p->io.fd, SOL_SOCKET, SO_RCVBUF, &got, &len) || got < B_RCVBUF) {
			fprintf(stderr,
				"dfm_sim: builder %u's receive buffer is %d bytes, it needs %d (a stall of ours "
				"would lose ASSIGNs): run as root (SO_RCVBUFFORCE) or raise net.core.rmem_max\n",
				k, got, B_RCVBUF);
			return -1;
		}
	}
	return 0;
}

/* A descriptor per peer and a few more: raise the soft limit as far as needed, or say what to do. */
static int fd_room(uint32_t n)
{
	struct rlimit r;
	rlim_t need = (rlim_t)n + 32;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur >= need)
		return 0;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && (r.rlim_max == RLIM_INFINITY || r.rlim_max >= need)) {
		r.rlim_cur = need;
		if (setrlimit(RLIMIT_NOFILE, &r) == 0)
			return 0;
	}
	fprintf(stderr,
		"dfm_sim: %u peers need %llu open files, the limit is %llu (hard %llu): raise it (ulimit -Hn, "
		"as root) or run fewer peers\n",
		n, (unsigned long long)need, (unsigned long long)r.rlim_cur, (unsigned long long)r.rlim_max);
	return -1;
}

static int open_all(int ep)
{
	uint32_t n[XEVB_ROLE__COUNT] = { 0, 0, o.nb, o.ns, o.nf };

	if (o.key_file && xevb_ctl_set_key_file(o.key_file))
		return -1;
	if (fd_room(o.nb + o.ns + o.nf))
		return -1;
	peers = calloc(o.nb + o.ns + o.nf, sizeof(*peers));
	if (!peers) {
		fprintf(stderr, "dfm_sim: out of memory for %u peers\n", o.nb + o.ns + o.nf);
		return -1;
	}
	for (uint8_t r = XEVB_ROLE_BUILDER; r <= XEVB_ROLE_SINK; r++)
		for (uint32_t k = 0; k < n[r]; k++) {
			struct peer *p = &peers[n_peers];
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = n_peers };

			if (open_peer(p, r, k))
				return -1;
			n_peers++;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, p->io.fd, &ev)) {
				fprintf(stderr, "dfm_sim: epoll: %s\n", strerror(errno));
				return -1;
			}
		}
	return 0;
}

static void send_msg(struct peer *p, struct xevb_ctl_msg *m)
{
	if (xevb_ctl_send(&p->io, &o.dfm, m))
		send_errors++;
}

static void flush_done(struct peer *p)
{
	if (!p->out.h.n_recs)
		return;
	send_msg(p, &p->out);
	p->out.h.n_recs = 0;
	p->out.h.type = XEVB_CTL_DONE;
	p->done_sent = true;
}

/* Every event of the ASSIGN, DONE complete at once; a retry is answered again (its DONE was lost). */
static void builder_assign(struct peer *p, const struct xevb_ctl_msg *m)
{
	uint32_t max = xevb_ctl_max_recs(XEVB_CTL_DONE);

	for (uint32_t i = 0; i < m->h.n_recs; i++) {
		const struct xevb_ctl_assign *a = &m->u.assign[i];

		if (a->flags & XEVB_CTL_AS_RETRY)
			p->retry_events += a->count;
		else
			p->events += a->count;
		for (uint32_t e = 0; e < a->count; e++) {
			p->out.u.done[p->out.h.n_recs++] = (struct xevb_ctl_done){ .event_id = a->first_event + e,
										   .status = XEVB_DONE_COMPLETE };
			if (p->out.h.n_recs == max)
				flush_done(p);
		}
	}
}

static void source_msg(struct peer *p, const struct xevb_ctl_msg *m)
{
	if (m->h.type == XEVB_CTL_ASSIGN)
		for (uint32_t i = 0; i < m->h.n_recs; i++)
			p->events += m->u.assign[i].count;
	else if (m->h.type == XEVB_CTL_ROUTE)
		p->events += (uint64_t)m->h.n_recs * m->u.route.block;
	else if (m->h.type == XEVB_CTL_CLEAR)
		for (uint32_t i = 0; i < m->h.n_recs; i++)
			p->cleared += m->u.clear[i].count;
}

static void snapshot(int which);

/* A part of a list (SOURCES or BUILDERS: long lists come in several): the peers it names, once each. */
static void note_listed(struct peer *p, const struct xevb_ctl_msg *m)
{
	uint32_t span = m->h.type == XEVB_CTL_SOURCES ? ROLE_SPAN : 0;

	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		uint32_t addr = ntohl(m->h.type == XEVB_CTL_SOURCES ? m->u.src[r].addr : m->u.builders[r].addr);
		uint32_t k = addr - o.base - span;
		if (k >= ROLE_SPAN || (p->seen[k / 64] >> (k % 64)) & 1)
			continue;
		p->seen[k / 64] |= 1ull << (k % 64);
		p->listed++;
	}
}

static void take(struct peer *p, const struct xevb_ctl_msg *m, const struct sockaddr_in *from)
{
	if (from->sin_addr.s_addr != o.dfm.sin_addr.s_addr || from->sin_port != o.dfm.sin_port) {
		not_from_dfm++;
		return;
	}
	p->dfm_epoch = m->h.epoch;
	if (m->h.type == XEVB_CTL_ASSIGN && !have_snap[SNAP_START])
		snapshot(SNAP_START);
	if (m->h.type == XEVB_CTL_BYE && !have_snap[SNAP_END])
		snapshot(SNAP_END);
	if (m->h.type == XEVB_CTL_SOURCES || m->h.type == XEVB_CTL_BUILDERS)
		note_listed(p, m);
	if (p->role == XEVB_ROLE_BUILDER && m->h.type == XEVB_CTL_ASSIGN) {
		p->blocks += m->h.n_recs;
		builder_assign(p, m);
	} else if (p->role == XEVB_ROLE_SOURCE)
		source_msg(p, m);
}

/* What is waiting on p's socket (BATCH datagrams at a time, a bounded number of turns), through the codec. */
static int drain(struct peer *p)
{
	static uint8_t buf[BATCH][XEVB_CTL_MAX_LEN + 1];
	static struct sockaddr_in from[BATCH];
	static union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct in_pktinfo))];
	} ctl[BATCH];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct xevb_ctl_msg m;
	int got = 0;

	for (int turn = 0; turn < 8; turn++) {
		int n;

		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
			mm[i].msg_hdr = (struct msghdr){ .msg_name = &from[i],
							 .msg_namelen = sizeof(from[i]),
							 .msg_iov = &iov[i],
							 .msg_iovlen = 1,
							 .msg_control = ctl[i].b,
							 .msg_controllen = sizeof(ctl[i].b) };
		}
		n = recvmmsg(p->io.fd, mm, BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < n; i++) {
			uint32_t dst = 0;

			for (struct cmsghdr *c = CMSG_FIRSTHDR(&mm[i].msg_hdr); c;
			     c = CMSG_NXTHDR(&mm[i].msg_hdr, c))
				if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
					dst = ((const struct in_pktinfo *)CMSG_DATA(c))->ipi_addr.s_addr;
			if (xevb_ctl_take(&p->io, buf[i], mm[i].msg_len, dst, &from[i], &m))
				take(p, &m, &from[i]);
		}
		got += n > 0 ? n : 0;
		if (n < BATCH)
			break;
	}
	if (p->role == XEVB_ROLE_BUILDER)
		flush_done(p);
	return got;
}

/* Everything still queued on every socket (bounded): the DFM may have said BYE and gone before we read it. */
static void drain_all(void)
{
	for (int pass = 0; pass < 1000; pass++) {
		int got = 0;

		for (uint32_t i = 0; i < n_peers; i++)
			got += drain(&peers[i]);
		if (!got)
			return;
	}
}

static struct peer *role_peer(uint8_t role, uint32_t k)
{
	uint32_t first = role == XEVB_ROLE_BUILDER ? 0 : role == XEVB_ROLE_SOURCE ? o.nb : o.nb + o.ns;
	return &peers[first + k];
}

/* Farm node f's share of builder b's events: the split of every builder's events adds up exactly (in parts). */
static void farm_received(struct peer *p)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_RECEIVED };
	uint32_t max = xevb_ctl_max_recs(XEVB_CTL_RECEIVED);
	bool sent = false;

	for (uint32_t b = 0; b < o.nb; b++) {
		const struct peer *bp = role_peer(XEVB_ROLE_BUILDER, b);
		uint64_t share = (bp->events + o.nf - 1 - p->k) / o.nf;

		if (share)
			m.u.received[m.h.n_recs++] =
				(struct xevb_ctl_received){ .builder_addr = bp->me.sin_addr.s_addr,
							    .events = share };
		if (m.h.n_recs == max) {
			send_msg(p, &m);
			m.h.n_recs = 0;
			sent = true;
		}
	}
	if (m.h.n_recs || !sent)
		send_msg(p, &m);
}

static void heartbeat(struct peer *p)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	if (p->role == XEVB_ROLE_SINK) {
		farm_received(p);
		return;
	}
	if (p->role == XEVB_ROLE_BUILDER) {
		m.u.status = (struct xevb_ctl_status){ .credits = o.credits,
						       .done_total = p->events + p->retry_events,
						       .peer_epoch = p->dfm_epoch };
	} else {
		uint64_t held = p->events > p->cleared ? p->events - p->cleared : 0;
		m.u.status = (struct xevb_ctl_status){ .credits = o.hold,
						       .load = held > o.hold ? o.hold : (uint32_t)held,
						       .peer_epoch = p->dfm_epoch,
						       .first_id = (uint16_t)(p->k % 4096),
						       .n_ids = 1 };
	}
	send_msg(p, &m);
}

/*
 * The DFM's CPU time into dfm_last: /proc/PID/schedstat (ns on a CPU, ns
 * waiting for one), /proc/PID/stat (user and system ticks). False when it
 * is gone (dfm_last keeps the last reading).
 */
static bool dfm_cpu_read(void)
{
	char path[64], line[1024], *q;
	struct dfm_cpu c = { .t = clock_ns(CLOCK_MONOTONIC) };
	bool ok = false;
	FILE *f;

	if (o.dfm_pid < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", o.dfm_pid);
	if ((f = fopen(path, "r"))) {
		ok = fscanf(f, "%" SCNu64 " %" SCNu64, &c.run_ns, &c.wait_ns) == 2;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", o.dfm_pid);
	if (ok && (f = fopen(path, "r"))) {
		/* After the command name (in parentheses, which may hold anything): fields 3 on; 14, 15 the ticks. */
		ok = fgets(line, sizeof(line), f) && (q = strrchr(line, ')')) &&
		     sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %" SCNu64 " %" SCNu64, &c.utime,
			    &c.stime) == 2;
		fclose(f);
	}
	if (ok)
		dfm_last = c;
	return ok;
}

static void snapshot(int which)
{
	struct snap *s = &snaps[which];

	memset(s, 0, sizeof(*s));
	s->t = clock_ns(CLOCK_MONOTONIC);
	/* At the BYE the DFM may have exited already (nothing to wait for): then its last reading. */
	dfm_cpu_read();
	s->dfm = dfm_last;
	s->sim_cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (uint32_t i = 0; i < n_peers; i++) {
		const struct peer *p = &peers[i];

		for (int t = 1; t < N_TYPES; t++) {
			s->in[t] += p->io.tx_type[t];
			s->out[p->role][t] += p->io.rx_type[t];
		}
		if (p->role == XEVB_ROLE_BUILDER) {
			s->events += p->events;
			s->retry_events += p->retry_events;
			s->blocks += p->blocks;
		}
	}
	have_snap[which] = true;
}

/* The DFM process has exited (gone, or a zombie its parent has not reaped yet). */
static bool dfm_gone(void)
{
	char path[64], line[512], *q;
	FILE *f;
	bool gone = true;

	if (o.dfm_pid < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", o.dfm_pid);
	if ((f = fopen(path, "r"))) {
		gone = fgets(line, sizeof(line), f) && (q = strrchr(line, ')')) && (q[2] == 'Z' || q[2] == 'X');
		fclose(f);
	}
	return gone;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_sig = 1;
}

static void json_types(const char *name, const uint64_t *a, const uint64_t *b)
{
	bool first = true;

	printf(",\"%s\":{", name);
	for (int t = 1; t < N_TYPES; t++) {
		if (b[t] == a[t])
			continue;
		printf("%s\"%s\":%" PRIu64, first ? "" : ",", xevb_ctl_type_name((uint8_t)t), b[t] - a[t]);
		first = false;
	}
	putchar('}');
}

/* Totals over the run, by role, beyond the window's counts. */
static void json_totals(void)
{
	uint64_t assigned = 0, pushed = 0, cleared = 0, refused = 0, src_listed = UINT64_MAX,
		 bld_listed = UINT64_MAX;
	uint32_t fed = 0;

	for (uint32_t i = 0; i < n_peers; i++) {
		const struct peer *p = &peers[i];

		refused += p->io.rx_bad_total + p->io.rx_refused_total;
		/* What the peers the DFM admitted were told (the others hear nothing). */
		if (p->role == XEVB_ROLE_BUILDER) {
			assigned += p->events;
			fed += p->events > 0;
			if (p->events)
				src_listed = p->listed < src_listed ? p->listed : src_listed;
		} else if (p->role == XEVB_ROLE_SOURCE) {
			pushed += p->events;
			cleared += p->cleared;
			if (p->io.rx)
				bld_listed = p->listed < bld_listed ? p->listed : bld_listed;
		}
	}
	printf(",\"builders_fed\":%u,\"events_done\":%" PRIu64 ",\"source_events_pushed\":%" PRIu64
	       ",\"source_events_cleared\":%" PRIu64 ",\"sources_listed_min\":%" PRIu64
	       ",\"builders_listed_min\":%" PRIu64 ",\"refused\":%" PRIu64 ",\"not_from_dfm\":%" PRIu64
	       ",\"send_errors\":%" PRIu64,
	       fed, assigned, pushed, cleared, src_listed == UINT64_MAX ? 0 : src_listed,
	       bld_listed == UINT64_MAX ? 0 : bld_listed, refused, not_from_dfm, send_errors);
}

static void report(bool bye)
{
	const struct snap *a = &snaps[SNAP_START], *b = &snaps[SNAP_END];
	double tick = (double)sysconf(_SC_CLK_TCK);

	printf("{\"builders\":%u,\"sources\":%u,\"farm_nodes\":%u,\"credits\":%u,\"keyed\":%s,\"bye\":%s", o.nb,
	       o.ns, o.nf, o.credits, o.key_file ? "true" : "false", bye ? "true" : "false");
	if (have_snap[SNAP_START] && have_snap[SNAP_END]) {
		printf(",\"window_s\":%.6f,\"dfm_window_s\":%.6f,\"dfm_cpu_s\":%.6f,\"dfm_wait_s\":%.6f"
		       ",\"dfm_user_s\":%.2f,\"dfm_sys_s\":%.2f,\"sim_cpu_s\":%.6f,\"window_events\":%" PRIu64
		       ",\"window_retry_events\":%" PRIu64 ",\"window_blocks\":%" PRIu64,
		       (double)(b->t - a->t) / 1e9, (double)(b->dfm.t - a->dfm.t) / 1e9,
		       (double)(b->dfm.run_ns - a->dfm.run_ns) / 1e9,
		       (double)(b->dfm.wait_ns - a->dfm.wait_ns) / 1e9,
		       (double)(b->dfm.utime - a->dfm.utime) / tick, (double)(b->dfm.stime - a->dfm.stime) / tick,
		       (double)(b->sim_cpu_ns - a->sim_cpu_ns) / 1e9, b->events - a->events,
		       b->retry_events - a->retry_events, b->blocks - a->blocks);
		json_types("dfm_in", a->in, b->in);
		json_types("dfm_out_builders", a->out[XEVB_ROLE_BUILDER], b->out[XEVB_ROLE_BUILDER]);
		json_types("dfm_out_sources", a->out[XEVB_ROLE_SOURCE], b->out[XEVB_ROLE_SOURCE]);
		json_types("dfm_out_farm", a->out[XEVB_ROLE_SINK], b->out[XEVB_ROLE_SINK]);
	}
	json_totals();
	printf("}\n");
	fflush(stdout);
}

/* Heartbeats of every peer when due, and the farm nodes' last counts twice at the BYE. */
static void timers(uint64_t now, uint64_t *next_hb, bool *final_sent)
{
	if (have_snap[SNAP_END] && !*final_sent) {
		for (int k = 0; k < 2; k++)
			for (uint32_t i = 0; i < n_peers; i++)
				if (peers[i].role == XEVB_ROLE_SINK)
					heartbeat(&peers[i]);
		*final_sent = true;
	}
	static uint32_t beat;
	uint32_t phase;

	if (now < *next_hb)
		return;
	/*
	 * Sources and farm nodes beat every 100 ms in ten phases by index, as
	 * independent hosts would: thousands at once would be a burst no real
	 * run sends, and one the DFM's socket buffer need not hold.
	 */
	phase = beat++ % (HB_NS / HB_B_NS);
	for (uint32_t i = 0; i < n_peers; i++) {
		struct peer *p = &peers[i];
		bool due = p->role == XEVB_ROLE_BUILDER ? !p->done_sent : i % (HB_NS / HB_B_NS) == phase;
		/* After the BYE the builders and sources are gone, as theirs would be; farm nodes report on. */
		if (due && (!have_snap[SNAP_END] || p->role == XEVB_ROLE_SINK))
			heartbeat(p);
		p->done_sent = false;
	}
	*next_hb = now + HB_B_NS;
}

static int run(int ep)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), next_hb = t0, now = t0;
	bool final_sent = false;
	struct epoll_event ev[256];

	while (!stop_sig) {
		int n;

		now = clock_ns(CLOCK_MONOTONIC);
		timers(now, &next_hb, &final_sent);
		if (have_snap[SNAP_END] &&
		    (dfm_gone() || now - snaps[SNAP_END].t > (uint64_t)o.linger_ms * 1000000ull))
			return 0;
		if (now - t0 > (uint64_t)o.timeout_s * 1000000000ull) {
			fprintf(stderr,
				"dfm_sim: no BYE from the DFM within --timeout %u s: is it running at %s:%u?\n",
				o.timeout_s, inet_ntoa(o.dfm.sin_addr), ntohs(o.dfm.sin_port));
			return 1;
		}
		if (o.dfm_pid >= 0 && !have_snap[SNAP_END] && dfm_gone())
			drain_all();
		if (o.dfm_pid >= 0 && !have_snap[SNAP_END] && dfm_gone()) {
			fprintf(stderr, "dfm_sim: the DFM (pid %d) exited without a BYE: see its output\n",
				o.dfm_pid);
			return 1;
		}
		/* Read every 2 ms in the run: the last reading stands in if the DFM is gone at the BYE. */
		if (have_snap[SNAP_START] && !have_snap[SNAP_END] && now - dfm_last.t > 2000000ull)
			dfm_cpu_read();
		n = epoll_wait(ep, ev, 256, 10);
		for (int i = 0; i < n; i++)
			drain(&peers[ev[i].data.u32]);
	}
	fprintf(stderr, "dfm_sim: stopped by a signal\n");
	return 1;
}

int main(int argc, char **argv)
{
	int ep, rc;

	xevb_prog = "dfm_sim";
	if (parse_opts(argc, argv))
		return 2;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || open_all(ep))
		return 1;
	rc = run(ep);
	report(have_snap[SNAP_END]);
	for (uint32_t i = 0; i < n_peers; i++)
		xevb_ctl_close(&peers[i].io);
	free(peers);
	close(ep);
	return rc;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source --dfm ADDR:PORT`: sources under a data-flow manager.
 * Push: every ASSIGN the DFM broadcasts names a block of events and its
 * builder; we send our fragments of them there. Pull: a builder's REQUEST
 * names events; we answer with their fragments (RESEND on re-asks). Either
 * way each event is held from the moment we learn of it until the DFM
 * CLEARs it, in a bounded table: an event that finds its slot taken is an
 * overflow, counted, and not served (its data is gone, as on hardware).
 * Payloads are a function of (event, source) (emu_payload.h and a hash for
 * the length), so holding an event means holding the right to send it.
 * The data leaves through a kernel socket (sendto per MEP) or, with --mode
 * live, through live-frame calls that send many MEPs each (source_dfm_live.c).
 * Through the socket, a fragment whose record does not fit the MTU goes as
 * 1.1 segments (one sendmmsg per fragment); an answer to a re-ask sends
 * every segment again, flagged RESEND. Live frames cannot segment.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/cli.h"
#include "wire/crc32c.h"
#include "ctl/ctl_sock.h"
#include <xevb/emu_payload.h>
#include "wire/mep_write.h"
#include "emu/source.h"
#include "ctl/source_ctl.h"

#define HB_NS 100000000ull

struct sdfm {
	const struct src_cfg *c;
	struct xevb_ctl_io io;
	struct sockaddr_in dfm;
	struct src_ctl ctl;    /* the handlers, the hold table, their counters */
	int fd;                /* data socket */
	struct dfm_live *live; /* or the live-frames data path */
	uint32_t seq[XEVB_MAX_SOURCES];
	uint32_t per_mep; /* events per MEP that fit the MTU */
	uint8_t *buf;
	size_t buf_len;
	/* segments: fragments whose record is over seg_budget MEP bytes */
	bool segment;
	uint16_t seg_budget;
	uint32_t seg_max; /* segments of the largest fragment */
	size_t seg_slot;
	uint8_t *seg_buf; /* seg_max slots of seg_slot bytes */
	size_t *seg_lens;
	struct iovec *seg_iov;
	struct mmsghdr *seg_msgs;
	uint8_t *emu;     /* the emulator's payload, 65535 bytes */
	uint16_t crc_len; /* the CRC of the last length segmented */
	uint32_t crc;
	uint64_t rng;
	/* counters of the data path */
	uint64_t resend_meps;
	uint64_t packets, frags, bytes, send_errors, dropped_answers, dropped_frags;
	uint64_t dropped_resends; /* of dropped_answers: MEPs that were RESEND */
	uint64_t seg_frags, segments;
	struct dfm_live_stats lst; /* --mode live, at the end */
};

static uint64_t rnd(struct sdfm *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545F4914F6CDD1Dull;
}

static uint16_t frag_len(const struct src_cfg *c, uint32_t ev, uint16_t sid)
{
	uint64_t x;

	if (c->fmin == c->fmax)
		return c->fmin;
	x = ((uint64_t)ev << 16 | sid) * 0x9E3779B97F4A7C15ull;
	x ^= x >> 29;
	return (uint16_t)(c->fmin + x % ((uint64_t)c->fmax - c->fmin + 1));
}

/* --drop-answers: whether to leave this answer out, on purpose. */
static bool drop_answer(struct sdfm *s, bool may_drop)
{
	return may_drop && s->c->drop_answers > 0 &&
	       (double)(rnd(s) >> 11) / 9007199254740992.0 < s->c->drop_answers;
}

/* Live frames: one job a MEP's worth of events, every source's MEP of it
   (so --drop-answers leaves out every source's MEP of a job at once). */
static void queue_events(struct sdfm *s, uint32_t addr, const uint32_t *evs, uint32_t n, bool resend,
			 bool may_drop)
{
	for (uint32_t off = 0; off < n; off += s->per_mep) {
		uint32_t k = n - off < s->per_mep ? n - off : s->per_mep;
		if (drop_answer(s, may_drop)) {
			s->dropped_answers += (uint64_t)s->c->n_src;
			s->dropped_resends += resend ? (uint64_t)s->c->n_src : 0;
			s->dropped_frags += (uint64_t)k * (uint64_t)s->c->n_src;
			continue;
		}
		if (dfm_live_queue(s->live, addr, evs + off, k, resend) && resend)
			s->resend_meps += (uint64_t)s->c->n_src;
	}
}

/* sendto, once more after a full queue: false when the MEP did not leave. */
static bool send_packet(struct sdfm *s, const uint8_t *buf, size_t len, const struct sockaddr_in *to)
{
	if (sendto(s->fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)) == (ssize_t)len)
		return true;
	if (errno != ENOBUFS && errno != EAGAIN)
		return false;
	usleep(50);
	return sendto(s->fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)) == (ssize_t)len;
}

static uint32_t emu_crc(struct sdfm *s, uint16_t len)
{
	if (s->crc_len != len) {
		s->crc = xevb_crc32c(0, s->emu, len);
		s->crc_len = len;
	}
	return s->crc;
}

/*
 * p's one fragment as segments, all in one sendmmsg (retried on a full
 * queue): a fragment leaves whole or is counted a send error whole, so a
 * re-ask finds it missing, never half sent by us.
 */
static void send_segments(struct sdfm *s, struct xevb_mep_params *p, uint32_t *seq, const struct sockaddr_in *to)
{
	const uint8_t *pl[1] = { s->emu };
	uint16_t len = p->frag_len[0];
	ssize_t n;
	int sent = 0, tries = 0;

	p->flags |= XEVB_MEP_F_SEGMENT;
	p->frag_size = len;
	p->frag_len = NULL;
	p->payload = pl;
	p->seg_budget = s->seg_budget;
	p->seg_crc32c = emu_crc(s, len);
	n = xevb_write_segments(s->seg_buf, s->seg_slot, s->seg_max, s->seg_lens, p, xevb_write_mep);
	if (n < 0) {
		s->send_errors++;
		return;
	}
	*seq += (uint32_t)n - 1; /* the caller took the first */
	for (ssize_t i = 0; i < n; i++) {
		s->seg_iov[i] = (struct iovec){ s->seg_buf + (size_t)i * s->seg_slot, s->seg_lens[i] };
		s->seg_msgs[i].msg_hdr = (struct msghdr){ .msg_name = (void *)to,
							  .msg_namelen = sizeof(*to),
							  .msg_iov = &s->seg_iov[i],
							  .msg_iovlen = 1 };
	}
	while (sent < n && tries < 1000) {
		int r = sendmmsg(s->fd, &s->seg_msgs[sent], (unsigned)(n - sent), 0);
		if (r > 0) {
			sent += r;
		} else if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
			tries++;
			usleep(50);
		} else {
			break;
		}
	}
	if (sent < n) {
		s->send_errors++;
		return;
	}
	s->packets += (uint64_t)n;
	s->segments += (uint64_t)n;
	s->seg_frags++;
	s->frags++;
	for (ssize_t i = 0; i < n; i++)
		s->bytes += s->seg_lens[i];
	if (p->flags & XEVB_MEP_F_RESEND)
		s->resend_meps += (uint64_t)n;
}

/* One MEP per source id for the events in evs (held already), to addr. */
static void send_events(struct sdfm *s, uint32_t addr, const uint32_t *evs, uint32_t n, bool resend, bool may_drop)
{
	const struct src_cfg *c = s->c;
	static uint16_t lens[XEVB_MAX_FRAGS_PER_MEP];
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons(c->udp_port) };

	if (s->live) {
		queue_events(s, addr, evs, n, resend, may_drop);
		return;
	}
	for (uint32_t off = 0; off < n; off += s->per_mep) {
		uint32_t k = n - off < s->per_mep ? n - off : s->per_mep;
		for (int i = 0; i < c->n_src; i++) {
			struct xevb_mep_params p = { 0 };
			ssize_t len;

			if (drop_answer(s, may_drop)) {
				s->dropped_answers++;
				s->dropped_resends += resend;
				s->dropped_frags += k;
				continue;
			}
			for (uint32_t j = 0; j < k; j++)
				lens[j] = frag_len(c, evs[off + j], c->ids[i]);
			p.daddr = addr;
			p.saddr = c->saddr;
			p.ip_proto = c->proto;
			p.udp_dport = c->udp_port;
			p.source_id = c->ids[i];
			p.flags = resend ? XEVB_MEP_F_RESEND : 0;
			p.run_number = c->run;
			p.packet_seq = s->seq[i]++;
			p.n_frags = k;
			p.event_id = evs + off;
			p.frag_len = lens;
			if (s->segment && k == 1 && xevb_seg_needed(lens[0], s->seg_budget)) {
				send_segments(s, &p, &s->seq[i], &to);
				continue;
			}
			len = xevb_write_mep(s->buf, s->buf_len, &p);
			if (len < 0 || !send_packet(s, s->buf, (size_t)len, &to)) {
				s->send_errors++;
				continue;
			}
			s->packets++;
			s->frags += k;
			s->bytes += (uint64_t)len;
			if (resend)
				s->resend_meps++;
		}
	}
}

/* The handlers' answers and pushes: any of them may be left out (--drop-answers). */
static void send_answer(void *ctx, uint32_t addr, const uint32_t *evs, uint32_t n, bool resend)
{
	send_events(ctx, addr, evs, n, resend, true);
}

static void heartbeat(struct sdfm *s)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	m.u.status = (struct xevb_ctl_status){ .credits = s->ctl.mask + 1,
					       .load = s->ctl.n_held,
					       .done_total = s->ctl.answered_events + s->ctl.assigned_events,
					       .peer_epoch = s->ctl.dfm_epoch,
					       .first_id = s->c->ids[0],
					       .n_ids = (uint16_t)s->c->n_src };
	xevb_ctl_send(&s->io, &s->dfm, &m);
}

/* Segments of up to the MTU for fragments that do not fit one MEP. */
static int size_segments(struct sdfm *s, int mtu)
{
	uint32_t ip_hdrs = 20 + (s->c->udp_port ? 8 : 0);

	s->segment = true;
	s->seg_budget = (uint16_t)((uint32_t)mtu - ip_hdrs);
	s->seg_max = xevb_seg_count(s->c->fmax, s->seg_budget);
	s->seg_slot = ((size_t)s->seg_budget + 63) & ~(size_t)63;
	if (!s->seg_max) {
		xevb_err("the MTU %d is too small for segments", mtu);
		return -1;
	}
	s->seg_buf = malloc(s->seg_slot * s->seg_max);
	s->seg_lens = calloc(s->seg_max, sizeof(*s->seg_lens));
	s->seg_iov = calloc(s->seg_max, sizeof(*s->seg_iov));
	s->seg_msgs = calloc(s->seg_max, sizeof(*s->seg_msgs));
	s->emu = malloc(65536);
	if (!s->seg_buf || !s->seg_lens || !s->seg_iov || !s->seg_msgs || !s->emu) {
		xevb_err("cannot allocate %u segment buffers", s->seg_max);
		return -1;
	}
	xevb_emu_fill(s->emu, 65535);
	xevb_info("fragments over %u bytes go as segments, one packet each (MTU %d)",
		  xevb_seg_stride(s->seg_budget), mtu);
	return 0;
}

/* Events per MEP: as many as the MTU of --dev (default 1500) takes. */
static int size_meps(struct sdfm *s)
{
	const struct src_cfg *c = s->c;
	uint32_t stride = 12 + XEVB_PAD4((uint32_t)c->fmax), hdrs = 20 + (c->udp_port ? 8 : 0) + 16;
	struct ifreq ifr;
	int mtu = 1500;

	if (c->dev && src_if_ioctl(c->dev, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	s->per_mep = mtu > (int)hdrs ? ((uint32_t)mtu - hdrs) / stride : 0;
	if (s->per_mep < 1 && c->live) {
		xevb_err(
			"--mode live: --frag-size %u does not fit one fragment in the MTU %d (live frames "
			"cannot send segments: use --mode socket for fragments larger than a packet)",
			c->fmax, mtu);
		return -1;
	}
	if (s->per_mep < 1) {
		s->per_mep = 1;
		return size_segments(s, mtu);
	}
	if (s->per_mep > XEVB_MAX_FRAGS_PER_MEP)
		s->per_mep = XEVB_MAX_FRAGS_PER_MEP;
	/* A live frame is at most a page's worth: bigger MTUs pack fewer. */
	if (c->live && s->per_mep > (SRC_LIVE_MAX_FRAME - 14 - hdrs) / stride)
		s->per_mep = (SRC_LIVE_MAX_FRAME - 14 - hdrs) / stride;
	if (s->per_mep < 1) {
		xevb_err(
			"--mode live: --frag-size %u does not fit one fragment in a %d-byte live frame "
			"(live frames cannot send segments: use --mode socket for larger fragments)",
			c->fmax, SRC_LIVE_MAX_FRAME);
		return -1;
	}
	return 0;
}

static int open_data(struct sdfm *s)
{
	const struct src_cfg *c = s->c;
	int pmtu = IP_PMTUDISC_DO, sndbuf = 4 << 20;

	if (size_meps(s))
		return -1;
	if (c->live) {
		s->live = dfm_live_open(c, s->per_mep);
		return s->live ? 0 : -1;
	}
	s->fd = c->udp_port ? socket(AF_INET, SOCK_DGRAM, 0) : socket(AF_INET, SOCK_RAW, c->proto);
	if (s->fd < 0) {
		xevb_err("cannot open a %s socket: %s", c->udp_port ? "UDP" : "raw IPv4", strerror(errno));
		return -1;
	}
	setsockopt(s->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (c->udp_port) {
		struct sockaddr_in me = { .sin_family = AF_INET,
					  .sin_addr.s_addr = c->saddr,
					  .sin_port = htons(c->udp_port) };
		if (bind(s->fd, (struct sockaddr *)&me, sizeof(me)))
			xevb_dbg("UDP source port %u busy; sending from any port", c->udp_port);
	}
	s->buf_len = 65536;
	s->buf = malloc(s->buf_len);
	return s->buf ? 0 : -1;
}

static void free_segments(struct sdfm *s)
{
	free(s->seg_buf);
	free(s->seg_lens);
	free(s->seg_iov);
	free(s->seg_msgs);
	free(s->emu);
}

/* The live data path's counters become ours; its threads end. */
static void close_live(struct sdfm *s)
{
	if (!s->live)
		return;
	dfm_live_close(s->live, &s->lst);
	s->live = NULL;
	s->packets = s->lst.packets;
	s->frags = s->lst.frags;
	s->bytes = s->lst.bytes;
	s->send_errors = s->lst.send_errors;
}

static void summary(struct sdfm *s, double el)
{
	const struct src_cfg *c = s->c;

	fprintf(stderr,
		"%s: --dfm %s mode, %d sources, %.3f s: %llu packets, %llu fragments, %llu bytes; "
		"ASSIGNs %llu (%llu events), REQUESTs %llu (%llu events, %llu answered, %llu RESEND MEPs, "
		"%llu answers dropped on purpose); held now %u (max %u of %u), overflow %llu, not held %llu, "
		"cleared %llu, unknown clears %llu, released at DFM restart %llu (%llu restarts), re-asks served unheld %llu; "
		"send errors %llu; %llu fragments in %llu segments\n",
		xevb_prog, s->ctl.pull_seen ? "pull" : "push", c->n_src, el, (unsigned long long)s->packets,
		(unsigned long long)s->frags, (unsigned long long)s->bytes, (unsigned long long)s->ctl.assigns,
		(unsigned long long)s->ctl.assigned_events, (unsigned long long)s->ctl.requests,
		(unsigned long long)s->ctl.requested_events, (unsigned long long)s->ctl.answered_events,
		(unsigned long long)s->resend_meps, (unsigned long long)s->dropped_answers, s->ctl.n_held,
		s->ctl.max_held, s->ctl.mask + 1, (unsigned long long)s->ctl.hold_overflow,
		(unsigned long long)s->ctl.not_held, (unsigned long long)s->ctl.cleared,
		(unsigned long long)s->ctl.clear_unknown, (unsigned long long)s->ctl.released_restart,
		(unsigned long long)s->ctl.dfm_restarts, (unsigned long long)s->ctl.reask_unheld,
		(unsigned long long)s->send_errors, (unsigned long long)s->seg_frags,
		(unsigned long long)s->segments);
	if (c->live)
		fprintf(stderr,
			"%s: live frames: %llu calls (the ring's and %u helper thread(s)' one-offs), "
			"%llu idle repetitions, %llu waits for ring room, %llu for queue room, "
			"%llu jobs (a MEP of every source) not sent for want of a builder's MAC\n",
			xevb_prog, (unsigned long long)s->lst.calls, s->lst.senders,
			(unsigned long long)s->lst.idle_reps, (unsigned long long)s->lst.ring_waits,
			(unsigned long long)s->lst.queue_waits, (unsigned long long)s->lst.no_mac_jobs);
	if (!c->json)
		return;
	printf("{\"mode\":\"dfm\",\"scheme\":\"%s\",\"data_path\":\"%s\",\"sources\":%d,\"elapsed_s\":%.3f,\"packets\":%llu,"
	       "\"fragments\":%llu,\"bytes\":%llu,\"assigns\":%llu,\"assigned_events\":%llu,\"requests\":%llu,"
	       "\"requested_events\":%llu,\"answered_events\":%llu,\"resend_meps\":%llu,"
	       "\"dropped_answers\":%llu,\"dropped_resends\":%llu,\"dropped_fragments\":%llu,\"held_now\":%u,\"held_max\":%u,"
	       "\"hold_size\":%u,\"hold_overflow\":%llu,\"not_held\":%llu,\"cleared\":%llu,"
	       "\"clear_unknown\":%llu,\"released_at_dfm_restart\":%llu,\"dfm_restarts\":%llu,"
	       "\"reask_unheld\":%llu,\"send_errors\":%llu,\"ctl_refused\":%llu,\"ctl_unexpected\":%llu,"
	       "\"live_calls\":%llu,\"live_senders\":%u,\"live_queue_waits\":%llu,\"live_no_mac_jobs\":%llu,"
	       "\"live_idle_reps\":%llu,\"live_ring_waits\":%llu,\"segmented_fragments\":%llu,\"segments\":%llu,"
	       "\"ctl_not_admitted\":",
	       s->ctl.pull_seen ? "pull" : "push", c->live ? "live" : "socket", c->n_src, el,
	       (unsigned long long)s->packets, (unsigned long long)s->frags, (unsigned long long)s->bytes,
	       (unsigned long long)s->ctl.assigns, (unsigned long long)s->ctl.assigned_events,
	       (unsigned long long)s->ctl.requests, (unsigned long long)s->ctl.requested_events,
	       (unsigned long long)s->ctl.answered_events, (unsigned long long)s->resend_meps,
	       (unsigned long long)s->dropped_answers, (unsigned long long)s->dropped_resends,
	       (unsigned long long)s->dropped_frags, s->ctl.n_held, s->ctl.max_held, s->ctl.mask + 1,
	       (unsigned long long)s->ctl.hold_overflow, (unsigned long long)s->ctl.not_held,
	       (unsigned long long)s->ctl.cleared, (unsigned long long)s->ctl.clear_unknown,
	       (unsigned long long)s->ctl.released_restart, (unsigned long long)s->ctl.dfm_restarts,
	       (unsigned long long)s->ctl.reask_unheld, (unsigned long long)s->send_errors,
	       (unsigned long long)s->io.rx_bad_total, (unsigned long long)s->ctl.unexpected,
	       (unsigned long long)s->lst.calls, s->lst.senders, (unsigned long long)s->lst.queue_waits,
	       (unsigned long long)s->lst.no_mac_jobs, (unsigned long long)s->lst.idle_reps,
	       (unsigned long long)s->lst.ring_waits, (unsigned long long)s->seg_frags,
	       (unsigned long long)s->segments);
	xevb_ctl_admit_json(&s->io, stdout);
	putchar(',');
	xevb_ctl_refused_json(&s->io, stdout);
	printf(",\"requests_unknown_builder\":%llu,\"not_from_dfm\":%llu,\"reask_unheld_capped\":%llu,"
	       "\"builders_known\":%u,\"builders_not_remembered\":%llu,\"cleared_by_mark\":%llu,"
	       "\"assign_again\":%llu,\"routes\":%llu,\"route_unknown_builder\":%llu,\"route_ids_not_remembered\":%llu}\n",
	       (unsigned long long)s->ctl.rq_unknown, (unsigned long long)s->ctl.not_dfm,
	       (unsigned long long)s->ctl.reask_unheld_capped, src_ctl_builders_known(&s->ctl),
	       (unsigned long long)s->ctl.bld_full, (unsigned long long)s->ctl.cleared_mark,
	       (unsigned long long)s->ctl.assign_again, (unsigned long long)s->ctl.routes,
	       (unsigned long long)s->ctl.route_unknown, (unsigned long long)s->ctl.rid_full);
	fflush(stdout);
}

int source_run_dfm(const struct src_cfg *c)
{
	static struct sdfm s;
	uint64_t t0, now, next_hb = 0, deadline = 0;
	struct src_ctl_cfg cc = { .dfm_name = c->dfm, .hold = c->hold, .send = send_answer, .ctx = &s };

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.fd = -1;
	s.rng = c->seed * 0x9E3779B97F4A7C15ull + 7;
	if (xevb_ctl_parse_addr(c->dfm, &s.dfm)) {
		xevb_err("--dfm: '%s' is not ADDR:PORT such as 198.18.4.1:23901", c->dfm);
		return 2;
	}
	cc.dfm = s.dfm;
	if (src_ctl_init(&s.ctl, &cc) || open_data(&s) ||
	    xevb_ctl_open(&s.io, c->saddr, c->ctl_port, XEVB_ROLE_SOURCE, c->ids[0]))
		goto fail;
	xevb_info("source_ids %u-%u under the DFM at %s, control port %u, holding up to %u events", c->ids[0],
		  c->ids[c->n_src - 1], c->dfm, c->ctl_port, c->hold);
	t0 = xevb_now_ns();
	if (c->duration > 0)
		deadline = t0 + (uint64_t)(c->duration * 1e9);
	while (!src_stop && !s.ctl.bye) {
		struct xevb_ctl_msg m;
		struct sockaddr_in from;
		struct pollfd pfd = { .fd = s.io.fd, .events = POLLIN };
		int budget = 1024;

		while (budget-- > 0 && xevb_ctl_recv(&s.io, &m, &from))
			src_ctl_on_msg(&s.ctl, &m, &from);
		if (s.live)
			dfm_live_kick(s.live);
		now = xevb_now_ns();
		if (now >= next_hb) {
			heartbeat(&s);
			next_hb = now + HB_NS;
		}
		if (deadline && now >= deadline)
			break;
		poll(&pfd, 1, 10);
	}
	if (src_stop)
		xevb_info("stopping: a signal (SIGINT or SIGTERM) received");
	else if (!s.ctl.bye)
		xevb_info("stopping: --duration is over");
	/* What is queued leaves before we say goodbye. */
	close_live(&s);
	{
		struct xevb_ctl_msg m = { .h.type = XEVB_CTL_BYE };
		xevb_ctl_send(&s.io, &s.dfm, &m);
	}
	summary(&s, (double)(xevb_now_ns() - t0) / 1e9);
	xevb_ctl_close(&s.io);
	close(s.fd);
	free(s.buf);
	free_segments(&s);
	src_ctl_free(&s.ctl);
	return 0;
fail:
	close_live(&s);
	if (s.fd >= 0)
		close(s.fd);
	free(s.buf);
	free_segments(&s);
	src_ctl_free(&s.ctl);
	return 1;
}

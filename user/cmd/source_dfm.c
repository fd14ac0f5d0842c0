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
#include <xevb/cli.h>
#include <xevb/crc32c.h>
#include <xevb/ctl_sock.h>
#include <xevb/emu_payload.h>
#include <xevb/mep_write.h>
#include "source.h"

#define HB_NS 100000000ull

enum { H_EMPTY = 0, H_HELD, H_ANSWERED };

struct held {
	uint32_t event;
	uint8_t state;
};

#define MAX_KNOWN_BUILDERS 128
/* Re-asks for events we do not hold, answered per REQUEST at most: the
   answer to a forged REQUEST stays bounded (no amplification). */
#define MAX_UNHELD_PER_REQUEST 1024

struct sdfm {
	const struct src_cfg *c;
	struct xevb_ctl_io io;
	struct sockaddr_in dfm;
	uint32_t dfm_epoch;
	bool pull_seen;
	int fd;                        /* data socket */
	struct dfm_live *live;         /* or the live-frames data path */
	struct held *h;
	uint32_t mask, n_held, max_held;
	uint32_t seq[XEVB_MAX_SOURCES];
	uint32_t per_mep;              /* events per MEP that fit the MTU */
	uint8_t *buf;
	size_t buf_len;
	/* segments: fragments whose record is over seg_budget MEP bytes */
	bool segment;
	uint16_t seg_budget;
	uint32_t seg_max;              /* segments of the largest fragment */
	size_t seg_slot;
	uint8_t *seg_buf;              /* seg_max slots of seg_slot bytes */
	size_t *seg_lens;
	struct iovec *seg_iov;
	struct mmsghdr *seg_msgs;
	uint8_t *emu;                  /* the emulator's payload, 65535 bytes */
	uint16_t crc_len;              /* the CRC of the last length segmented */
	uint32_t crc;
	uint64_t rng;
	/* counters */
	uint64_t assigns, assigned_events, requests, requested_events, answered_events, resend_meps;
	uint64_t packets, frags, bytes, send_errors, dropped_answers, dropped_frags;
	uint64_t dropped_resends;     /* of dropped_answers: MEPs that were RESEND */
	uint64_t seg_frags, segments;
	uint64_t hold_overflow, not_held, cleared, clear_unknown, released_restart, dfm_restarts, reask_unheld;
	uint64_t unexpected;
	/* Whose REQUESTs we answer: the builders the DFM lists (BUILDERS) and
	   the addresses ASSIGNs send us to (port 0: any port there). */
	struct { uint32_t addr; uint16_t port; } bld[MAX_KNOWN_BUILDERS];
	uint32_t n_bld;
	uint64_t rq_unknown;           /* REQUESTs refused: not from a builder we know */
	uint64_t not_dfm;              /* messages as the DFM, not from its address and port */
	uint64_t reask_unheld_capped;  /* unheld re-asks over the per-REQUEST bound, not answered */
	uint64_t warn_ns;
	struct dfm_live_stats lst;     /* --mode live, at the end */
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

/* Take event ev into the table; false on overflow (its slot holds another). */
static bool hold(struct sdfm *s, uint32_t ev)
{
	struct held *h = &s->h[ev & s->mask];

	if (h->state != H_EMPTY && h->event == ev)
		return true;
	if (h->state != H_EMPTY) {
		s->hold_overflow++;
		return false;
	}
	h->event = ev;
	h->state = H_HELD;
	if (++s->n_held > s->max_held)
		s->max_held = s->n_held;
	return true;
}

static void release_all(struct sdfm *s)
{
	s->released_restart += s->n_held;
	memset(s->h, 0, (size_t)(s->mask + 1) * sizeof(*s->h));
	s->n_held = 0;
}

/* --drop-answers: whether to leave this answer out, on purpose. */
static bool drop_answer(struct sdfm *s, bool may_drop)
{
	return may_drop && s->c->drop_answers > 0 &&
	       (double)(rnd(s) >> 11) / 9007199254740992.0 < s->c->drop_answers;
}

/* Live frames: one job a MEP's worth of events, every source's MEP of it
   (so --drop-answers leaves out every source's MEP of a job at once). */
static void queue_events(struct sdfm *s, uint32_t addr, const uint32_t *evs, uint32_t n, bool resend, bool may_drop)
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
static void send_segments(struct sdfm *s, struct xevb_mep_params *p, uint32_t *seq,
			  const struct sockaddr_in *to)
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
	*seq += (uint32_t)n - 1;   /* the caller took the first */
	for (ssize_t i = 0; i < n; i++) {
		s->seg_iov[i] = (struct iovec){ s->seg_buf + (size_t)i * s->seg_slot, s->seg_lens[i] };
		s->seg_msgs[i].msg_hdr = (struct msghdr){ .msg_name = (void *)to, .msg_namelen = sizeof(*to),
							  .msg_iov = &s->seg_iov[i], .msg_iovlen = 1 };
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
			struct xevb_mep_params p = {0};
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

static bool known_builder(const struct sdfm *s, uint32_t addr, uint16_t port)
{
	for (uint32_t i = 0; i < s->n_bld; i++)
		if (s->bld[i].addr == addr && (!s->bld[i].port || s->bld[i].port == port))
			return true;
	return false;
}

static void learn_builder(struct sdfm *s, uint32_t addr, uint16_t port)
{
	if (known_builder(s, addr, port) || s->n_bld == MAX_KNOWN_BUILDERS)
		return;
	s->bld[s->n_bld].addr = addr;
	s->bld[s->n_bld++].port = port;
}

/* The DFM's list replaces what we knew; addresses from ASSIGNs come back with the next ones. */
static void on_builders(struct sdfm *s, const struct xevb_ctl_msg *m)
{
	s->n_bld = 0;
	for (uint32_t r = 0; r < m->h.n_recs; r++)
		learn_builder(s, m->u.builders[r].addr, htons(m->u.builders[r].port));
}

/* A refusal names its sender, once a second at most. */
static void refused(struct sdfm *s, const char *what, const struct sockaddr_in *from)
{
	uint64_t now = xevb_now_ns();

	if (now - s->warn_ns < 1000000000ull)
		return;
	s->warn_ns = now;
	xevb_warn("%s from %s:%u refused (REQUESTs not from a builder the DFM listed: %llu, messages as the DFM not "
		  "from %s: %llu)", what, inet_ntoa(from->sin_addr), ntohs(from->sin_port),
		  (unsigned long long)s->rq_unknown, s->c->dfm, (unsigned long long)s->not_dfm);
}

static void on_assign(struct sdfm *s, const struct xevb_ctl_msg *m)
{
	static uint32_t evs[1024];

	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		const struct xevb_ctl_assign *a = &m->u.assign[r];
		uint32_t n = 0;

		s->assigns++;
		s->assigned_events += a->count;
		learn_builder(s, a->builder_addr, 0);
		for (uint32_t j = 0; j < a->count; j++)
			if (hold(s, a->first_event + j))
				evs[n++] = a->first_event + j;
		if (n)
			send_events(s, a->builder_addr, evs, n, false, true);
	}
}

static void on_request(struct sdfm *s, const struct xevb_ctl_msg *m, const struct sockaddr_in *from)
{
	static uint32_t evs[1024];
	uint32_t unheld = 0;

	if (!known_builder(s, from->sin_addr.s_addr, from->sin_port)) {
		s->rq_unknown++;
		refused(s, "REQUEST", from);
		return;
	}

	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		const struct xevb_ctl_request *q = &m->u.request[r];
		bool again = q->flags & XEVB_CTL_RQ_REASK;
		uint32_t n = 0;

		s->requests++;
		s->requested_events += q->count;
		for (uint32_t j = 0; j < q->count; j++) {
			uint32_t ev = q->first_event + j;
			struct held *h = &s->h[ev & s->mask];
			/* A re-ask of an event we do not hold (its first REQUEST was lost,
			   or it was asked under a DFM that has since restarted, or asked
			   after its CLEAR) is answered but not held: no CLEAR may ever free
			   that slot, and a slot must not block the events of the run. */
			if ((q->flags & XEVB_CTL_RQ_REASK) && !(h->state != H_EMPTY && h->event == ev)) {
				if (unheld++ >= MAX_UNHELD_PER_REQUEST) {
					s->reask_unheld_capped++;
					continue;
				}
				s->reask_unheld++;
				evs[n++] = ev;
				continue;
			}
			/* Pull: a request is how the trigger reaches us first. */
			if (!hold(s, ev)) {
				s->not_held++;
				continue;
			}
			if (h->state == H_ANSWERED)
				again = true;
			h->state = H_ANSWERED;
			evs[n++] = ev;
		}
		s->answered_events += n;
		if (n)
			send_events(s, from->sin_addr.s_addr, evs, n, again, true);
	}
}

static void on_clear(struct sdfm *s, const struct xevb_ctl_msg *m)
{
	for (uint32_t r = 0; r < m->h.n_recs; r++)
		for (uint32_t j = 0; j < m->u.clear[r].count; j++) {
			uint32_t ev = m->u.clear[r].first_event + j;
			struct held *h = &s->h[ev & s->mask];
			if (h->state != H_EMPTY && h->event == ev) {
				h->state = H_EMPTY;
				s->n_held--;
				s->cleared++;
			} else {
				s->clear_unknown++;
			}
		}
}

static void heartbeat(struct sdfm *s)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	m.u.status = (struct xevb_ctl_status){ .credits = s->mask + 1, .load = s->n_held,
		.done_total = s->answered_events + s->assigned_events, .peer_epoch = s->dfm_epoch,
		.first_id = s->c->ids[0], .n_ids = (uint16_t)s->c->n_src };
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
		xevb_err("--mode live: --frag-size %u does not fit one fragment in the MTU %d (live frames "
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
		xevb_err("--mode live: --frag-size %u does not fit one fragment in a %d-byte live frame "
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
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = c->saddr,
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

	fprintf(stderr, "%s: --dfm %s mode, %d sources, %.3f s: %llu packets, %llu fragments, %llu bytes; "
		"ASSIGNs %llu (%llu events), REQUESTs %llu (%llu events, %llu answered, %llu RESEND MEPs, "
		"%llu answers dropped on purpose); held now %u (max %u of %u), overflow %llu, not held %llu, "
		"cleared %llu, unknown clears %llu, released at DFM restart %llu (%llu restarts), re-asks served unheld %llu; "
		"send errors %llu; %llu fragments in %llu segments\n",
		xevb_prog, s->pull_seen ? "pull" : "push", c->n_src, el, (unsigned long long)s->packets,
		(unsigned long long)s->frags, (unsigned long long)s->bytes, (unsigned long long)s->assigns,
		(unsigned long long)s->assigned_events, (unsigned long long)s->requests,
		(unsigned long long)s->requested_events, (unsigned long long)s->answered_events,
		(unsigned long long)s->resend_meps, (unsigned long long)s->dropped_answers, s->n_held,
		s->max_held, s->mask + 1, (unsigned long long)s->hold_overflow, (unsigned long long)s->not_held,
		(unsigned long long)s->cleared, (unsigned long long)s->clear_unknown,
		(unsigned long long)s->released_restart, (unsigned long long)s->dfm_restarts,
		(unsigned long long)s->reask_unheld, (unsigned long long)s->send_errors,
		(unsigned long long)s->seg_frags, (unsigned long long)s->segments);
	if (c->live)
		fprintf(stderr, "%s: live frames: %llu calls (the ring's and %u helper thread(s)' one-offs), "
			"%llu idle repetitions, %llu waits for ring room, %llu for queue room, "
			"%llu jobs (a MEP of every source) not sent for want of a builder's MAC\n", xevb_prog,
			(unsigned long long)s->lst.calls, s->lst.senders, (unsigned long long)s->lst.idle_reps,
			(unsigned long long)s->lst.ring_waits, (unsigned long long)s->lst.queue_waits,
			(unsigned long long)s->lst.no_mac_jobs);
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
	       s->pull_seen ? "pull" : "push", c->live ? "live" : "socket", c->n_src, el, (unsigned long long)s->packets,
	       (unsigned long long)s->frags, (unsigned long long)s->bytes, (unsigned long long)s->assigns,
	       (unsigned long long)s->assigned_events, (unsigned long long)s->requests,
	       (unsigned long long)s->requested_events, (unsigned long long)s->answered_events,
	       (unsigned long long)s->resend_meps, (unsigned long long)s->dropped_answers,
	       (unsigned long long)s->dropped_resends, (unsigned long long)s->dropped_frags, s->n_held, s->max_held, s->mask + 1,
	       (unsigned long long)s->hold_overflow, (unsigned long long)s->not_held,
	       (unsigned long long)s->cleared, (unsigned long long)s->clear_unknown,
	       (unsigned long long)s->released_restart, (unsigned long long)s->dfm_restarts,
	       (unsigned long long)s->reask_unheld, (unsigned long long)s->send_errors,
	       (unsigned long long)s->io.rx_bad_total,
	       (unsigned long long)s->unexpected, (unsigned long long)s->lst.calls, s->lst.senders,
	       (unsigned long long)s->lst.queue_waits, (unsigned long long)s->lst.no_mac_jobs,
	       (unsigned long long)s->lst.idle_reps, (unsigned long long)s->lst.ring_waits,
	       (unsigned long long)s->seg_frags, (unsigned long long)s->segments);
	xevb_ctl_admit_json(&s->io, stdout);
	printf(",\"requests_unknown_builder\":%llu,\"not_from_dfm\":%llu,\"reask_unheld_capped\":%llu,"
	       "\"builders_known\":%u}\n", (unsigned long long)s->rq_unknown, (unsigned long long)s->not_dfm,
	       (unsigned long long)s->reask_unheld_capped, s->n_bld);
	fflush(stdout);
}

int source_run_dfm(const struct src_cfg *c)
{
	static struct sdfm s;
	uint64_t t0, now, next_hb = 0, deadline = 0;
	bool bye = false;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.fd = -1;
	s.rng = c->seed * 0x9E3779B97F4A7C15ull + 7;
	s.mask = c->hold - 1;
	if (xevb_ctl_parse_addr(c->dfm, &s.dfm)) {
		xevb_err("--dfm: '%s' is not ADDR:PORT such as 198.18.4.1:23901", c->dfm);
		return 2;
	}
	s.h = calloc(c->hold, sizeof(*s.h));
	if (!s.h || open_data(&s) || xevb_ctl_open(&s.io, c->saddr, c->ctl_port, XEVB_ROLE_SOURCE, c->ids[0]))
		goto fail;
	xevb_info("source_ids %u-%u under the DFM at %s, control port %u, holding up to %u events",
		  c->ids[0], c->ids[c->n_src - 1], c->dfm, c->ctl_port, c->hold);
	t0 = xevb_now_ns();
	if (c->duration > 0)
		deadline = t0 + (uint64_t)(c->duration * 1e9);
	while (!src_stop && !bye) {
		struct xevb_ctl_msg m;
		struct sockaddr_in from;
		struct pollfd pfd = { .fd = s.io.fd, .events = POLLIN };
		int budget = 1024;

		while (budget-- > 0 && xevb_ctl_recv(&s.io, &m, &from)) {
			bool from_dfm = m.h.role == XEVB_ROLE_DFM;
			/* Only the DFM we were told speaks as the DFM: a forged ASSIGN, CLEAR
			   or BYE from elsewhere moves nothing. */
			if (from_dfm && (from.sin_addr.s_addr != s.dfm.sin_addr.s_addr ||
					 from.sin_port != s.dfm.sin_port)) {
				s.not_dfm++;
				refused(&s, xevb_ctl_type_name(m.h.type), &from);
				continue;
			}
			if (from_dfm && s.dfm_epoch != m.h.epoch) {
				/* A new DFM knows nothing of what the old one assigned. */
				if (s.dfm_epoch) {
					s.dfm_restarts++;
					release_all(&s);
					xevb_warn("the DFM restarted (epoch %08x -> %08x): released every held event",
						  s.dfm_epoch, m.h.epoch);
				}
				s.dfm_epoch = m.h.epoch;
			}
			switch (m.h.type) {
			case XEVB_CTL_STATUS:
				if (from_dfm && (m.u.status.flags & XEVB_CTL_ST_PULL))
					s.pull_seen = true;
				break;
			case XEVB_CTL_ASSIGN: on_assign(&s, &m); break;
			case XEVB_CTL_CLEAR: on_clear(&s, &m); break;
			case XEVB_CTL_REQUEST: on_request(&s, &m, &from); break;
			case XEVB_CTL_BUILDERS: if (from_dfm) on_builders(&s, &m); break;
			case XEVB_CTL_BYE: if (from_dfm) bye = true; break;
			default: s.unexpected++; break;
			}
		}
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
	free(s.h);
	return 0;
fail:
	close_live(&s);
	if (s.fd >= 0)
		close(s.fd);
	free(s.buf);
	free_segments(&s);
	free(s.h);
	return 1;
}

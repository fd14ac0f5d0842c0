// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source --mode socket`: MEPs through kernel sockets, batched with
 * sendmmsg, with fault injection. Raw IPv4 (the kernel writes the IP
 * header) or UDP; with --src-addr-base an IPPROTO_RAW socket, where we
 * write the IP header ourselves to give each source its own address.
 * A fragment whose record does not fit the MTU (--pack 1) goes as 1.1
 * segments, one packet each, faults applying per segment; --ip-frag sends
 * one oversize MEP with DF clear instead and lets the kernel fragment it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/mep_write.h"
#include "emu/source.h"

/* Set by the command's signal handler; every sender (sock, xsk, live, dfm) polls it. */
volatile sig_atomic_t src_stop;

#define BATCH  64
#define WINDOW 4 /* --reorder shuffles within this many packets */

struct slot {
	uint32_t len;
	uint32_t n_frags;
};

struct sender {
	const struct src_cfg *c;
	struct src_stats *st;
	int fd;
	bool hdrincl;
	size_t hdr; /* IP (and UDP) header bytes before the MEP */
	struct sockaddr_in to;
	/* segments: records over budget MEP bytes go as segments of it */
	bool segment;
	size_t budget;
	uint8_t *emu;                    /* the emulator's payload, 65535 bytes, copied from */
	uint16_t crc_len;                /* the CRC of the last length segmented, */
	uint32_t crc;                    /* as it depends on the length only */
	uint64_t nseg[XEVB_MAX_SOURCES]; /* segments per source, for --skip-segments */
	size_t slot_size;
	uint8_t *bufs;
	struct slot slots[BATCH];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	int n;
	uint64_t rng;
};

static uint64_t rnd(struct sender *s)
{
	/* xorshift64*: fast, and reproducible with --seed */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545F4914F6CDD1Dull;
}

static double rnd01(struct sender *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

static int dev_mtu(const struct src_cfg *c)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), mtu = 0;
	socklen_t l = sizeof(mtu);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = c->daddr, .sin_port = htons(9) };

	if (fd < 0)
		return 0;
	if (c->dev) {
		struct ifreq ifr = { 0 };
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", c->dev);
		if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
			mtu = ifr.ifr_mtu;
	} else if (connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0) {
		getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &l);
	}
	close(fd);
	return mtu;
}

static int open_socket(struct sender *s)
{
	const struct src_cfg *c = s->c;
	int one = 1, pmtu = IP_PMTUDISC_DO, sndbuf = 4 << 20;
	char dst[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &c->daddr, dst, sizeof(dst));
	s->to = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = c->daddr };
	s->hdrincl = c->saddr_base != 0;
	if (s->hdrincl)
		s->fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	else if (c->udp_port)
		s->fd = socket(AF_INET, SOCK_DGRAM, 0);
	else
		s->fd = socket(AF_INET, SOCK_RAW, c->proto);
	if (s->fd < 0) {
		xevb_err("cannot open a %s socket: %s%s",
			 s->hdrincl  ? "raw IP_HDRINCL" :
			 c->udp_port ? "UDP" :
				       "raw IPv4",
			 strerror(errno), errno == EPERM ? " (raw sockets need root or CAP_NET_RAW)" : "");
		return -1;
	}
	if (c->udp_port && !s->hdrincl)
		s->to.sin_port = htons(c->udp_port);
	/* DF on every packet, as the spec asks of sources, unless --ip-frag wants
	   the kernel to fragment our oversize MEPs. */
	if (c->ip_frag)
		pmtu = IP_PMTUDISC_DONT;
	if (!s->hdrincl && setsockopt(s->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		xevb_warn("cannot set %s (IP_MTU_DISCOVER): %s", c->ip_frag ? "DF clear" : "DF", strerror(errno));
	setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (c->dev && setsockopt(s->fd, SOL_SOCKET, SO_BINDTODEVICE, c->dev, (socklen_t)strlen(c->dev))) {
		xevb_err("cannot bind to --dev %s: %s (does it exist in this namespace?)", c->dev,
			 strerror(errno));
		return -1;
	}
	if (c->saddr) {
		struct sockaddr_in me = { .sin_family = AF_INET,
					  .sin_addr.s_addr = c->saddr,
					  .sin_port = htons(c->udp_port) };
		if (bind(s->fd, (struct sockaddr *)&me, sizeof(me))) {
			char a[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &c->saddr, a, sizeof(a));
			xevb_err(
				"cannot bind --src-addr %s: %s (is it an address of this host? "
				"For foreign addresses use --src-addr-base)",
				a, strerror(errno));
			return -1;
		}
	}
	(void)one;
	xevb_dbg("sending to %s over %s", dst, s->hdrincl ? "IPPROTO_RAW" : c->udp_port ? "UDP" : "raw IPv4");
	return 0;
}

/* Count positions a shuffle moved, so the summary says how much it did. */
static void shuffle(struct sender *s)
{
	for (int w = 0; w + 1 < s->n; w += WINDOW) {
		int len = s->n - w < WINDOW ? s->n - w : WINDOW;
		struct iovec orig[WINDOW];

		memcpy(orig, &s->iov[w], sizeof(orig[0]) * (size_t)len);
		for (int i = len - 1; i > 0; i--) {
			int j = (int)(rnd(s) % (uint64_t)(i + 1));
			struct iovec t = s->iov[w + i];
			struct slot ts = s->slots[w + i];
			s->iov[w + i] = s->iov[w + j];
			s->slots[w + i] = s->slots[w + j];
			s->iov[w + j] = t;
			s->slots[w + j] = ts;
		}
		for (int i = 0; i < len; i++)
			if (s->iov[w + i].iov_base != orig[i].iov_base)
				s->st->reordered_packets++;
	}
}

static int flush(struct sender *s)
{
	int sent = 0;

	if (s->c->reorder)
		shuffle(s);
	while (sent < s->n) {
		int r = sendmmsg(s->fd, &s->msgs[sent], (unsigned)(s->n - sent), 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS || errno == EAGAIN) {
				/* The qdisc or the device queue is full: wait for it. */
				s->st->send_retries++;
				usleep(50);
				continue;
			}
			xevb_err("sendmmsg: %s%s", strerror(errno),
				 errno == EMSGSIZE ? " (packet over the path MTU: lower --pack or --frag-size)" :
				 errno == ENETUNREACH ? " (no route to --dest: check the address and interface)" :
							"");
			return -1;
		}
		for (int i = sent; i < sent + r; i++) {
			s->st->packets++;
			s->st->bytes += s->slots[i].len;
			s->st->frags += s->slots[i].n_frags;
		}
		sent += r;
	}
	/* Buffers belong to slot positions again: reset the iovecs. */
	for (int i = 0; i < BATCH; i++)
		s->iov[i].iov_base = s->bufs + (size_t)i * s->slot_size;
	s->n = 0;
	return 0;
}

/* Break one header field, so that the builder must reject the packet whole. */
static void corrupt(struct sender *s, uint8_t *mep)
{
	switch (rnd(s) % 5) {
	case 0:
		xevb_st16(mep, XEVB_MEP_MAGIC + 1);
		break;
	case 1:
		mep[2] = XEVB_MEP_VERSION + 1;
		break;
	case 2:
		mep[3] |= 0x08;
		break; /* a reserved flag bit (bit 2 is SEGMENT) */
	case 3:
		xevb_st16(mep + 6, 0);
		break;
	default:
		xevb_st16(mep + 16 + 6, 1);
		break; /* reserved, or a segment's offset unaligned */
	}
}

static bool skipped(const struct src_cfg *c, int src_idx, uint64_t ev_index)
{
	for (int i = 0; i < c->n_skip; i++)
		if (c->skip[i].src_idx == src_idx && (ev_index + 1) % c->skip[i].every == 0)
			return true;
	return false;
}

/* --skip-segments: whether source src_idx leaves out its next segment. */
static bool segment_skipped(struct sender *s, int src_idx)
{
	const struct src_cfg *c = s->c;
	uint64_t k = ++s->nseg[src_idx];

	for (int i = 0; i < c->n_skip_seg; i++)
		if (c->skip_seg[i].src_idx == src_idx && k % c->skip_seg[i].every == 0)
			return true;
	return false;
}

enum queued { Q_ERROR = -1, Q_CORRUPT, Q_ONCE, Q_TWICE };

/*
 * Writes one packet into the next slot and applies the per-packet faults:
 * corrupt it, or send it twice. frags: records it counts as sent; dup_frags:
 * those its copy counts (a segment's copy is a duplicate segment, not a
 * fragment).
 */
static enum queued queue_packet(struct sender *s, const struct xevb_mep_params *p, uint32_t frags,
				uint32_t dup_frags)
{
	const struct src_cfg *c = s->c;
	uint8_t *buf = s->iov[s->n].iov_base;
	enum queued q = Q_ONCE;
	ssize_t len = s->hdrincl ? xevb_write_ip(buf, s->slot_size, p) : xevb_write_mep(buf, s->slot_size, p);

	if (len < 0) {
		xevb_err("cannot write a MEP: %s", strerror(errno));
		return Q_ERROR;
	}
	if (p->flags & XEVB_MEP_F_END_OF_RUN)
		s->st->eor_packets++;
	s->iov[s->n].iov_len = (size_t)len;
	s->slots[s->n++] = (struct slot){ (uint32_t)len, frags };
	if (c->corrupt > 0 && rnd01(s) < c->corrupt) {
		corrupt(s, buf + (s->hdrincl ? s->hdr : 0));
		s->st->corrupt_packets++;
		q = Q_CORRUPT;
	} else if (c->dup > 0 && rnd01(s) < c->dup) {
		memcpy(s->iov[s->n].iov_base, buf, (size_t)len);
		s->iov[s->n].iov_len = (size_t)len;
		s->slots[s->n++] = (struct slot){ (uint32_t)len, dup_frags };
		s->st->dup_packets++;
		q = Q_TWICE;
	}
	if (s->n >= BATCH - 1 && flush(s))
		return Q_ERROR;
	return q;
}

/* One MEP of n fragments. */
static int send_mep(struct sender *s, const struct xevb_mep_params *p, uint32_t n)
{
	switch (queue_packet(s, p, n, n)) {
	case Q_ERROR:
		return -1;
	case Q_CORRUPT:
		s->st->corrupt_frags += n;
		break;
	case Q_TWICE:
		s->st->dup_frags += n;
		/* fall through */
	case Q_ONCE:
		s->st->valid_frags += n;
		break;
	}
	return 0;
}

/* CRC-32C of the emulator's payload of len bytes, once per length in a row. */
static uint32_t emu_crc(struct sender *s, uint16_t len)
{
	if (s->crc_len != len) {
		s->crc = xevb_crc32c(0, s->emu, len);
		s->crc_len = len;
	}
	return s->crc;
}

/*
 * The one fragment of p (frag_len[0] bytes, event_id[0]) as segments, each
 * a packet with its own packet_seq from *seq. A skipped segment takes its
 * packet_seq with it, as a packet lost on the wire would.
 */
static int send_segments(struct sender *s, struct xevb_mep_params *p, int src_idx, uint32_t *seq)
{
	struct src_stats *st = s->st;
	const uint8_t *pl[1] = { s->emu };
	uint16_t len = p->frag_len[0];
	uint32_t nseg = xevb_seg_count(len, s->budget), stride = xevb_seg_stride(s->budget);
	bool whole = true, counted = false;

	p->flags |= XEVB_MEP_F_SEGMENT;
	p->frag_size = len;
	p->frag_len = NULL;
	p->payload = pl;
	p->seg_budget = (uint16_t)s->budget;
	p->seg_crc32c = emu_crc(s, len);
	st->seg_frags++;
	st->segments += nseg;
	for (uint32_t k = 0; k < nseg; k++) {
		p->seg_offset = (uint16_t)(k * stride);
		p->packet_seq = (*seq)++;
		p->ip_id = (uint16_t)p->packet_seq;
		if (s->c->n_skip_seg && segment_skipped(s, src_idx)) {
			st->skipped_segments++;
			whole = false;
			continue;
		}
		switch (queue_packet(s, p, counted ? 0 : 1, 0)) {
		case Q_ERROR:
			return -1;
		case Q_CORRUPT:
			st->corrupt_segments++;
			whole = false;
			break;
		case Q_TWICE:
			st->dup_segments++;
			/* fall through */
		case Q_ONCE:
			st->seg_valid++;
			break;
		}
		counted = true;
	}
	if (whole)
		st->valid_frags++;
	else
		st->partial_frags++;
	return 0;
}

/*
 * Bytes of MEP a packet may carry, and how records over it leave: in
 * segments (--pack 1), in IP fragments (--ip-frag), or not at all. Sets
 * the slot size; false with a message when the settings cannot be sent.
 */
static bool size_packets(struct sender *s)
{
	const struct src_cfg *c = s->c;
	size_t mep = 16 + (size_t)c->pack * (12 + XEVB_PAD4((uint32_t)c->fmax));
	size_t max_mep = XEVB_MAX_IP_PAYLOAD - XEVB_WR_IP_HLEN - XEVB_WR_UDP_HLEN;
	int mtu = dev_mtu(c);

	if (mtu <= (int)s->hdr + 32) {
		xevb_dbg("MTU towards --dest unknown (%d): assuming 1500", mtu);
		mtu = 1500;
	}
	s->budget = (size_t)mtu - s->hdr;
	if (mep <= s->budget) {
		s->slot_size = s->hdr + mep;
	} else if (c->ip_frag) {
		if (mep > max_mep) {
			xevb_err(
				"--ip-frag: --pack %u x --frag-size %u makes a %zu-byte MEP, over the %zu of one "
				"IPv4 datagram: lower --pack or --frag-size (at most %zu with --pack 1)",
				c->pack, c->fmax, mep, max_mep, (max_mep - 16 - 12) & ~(size_t)3);
			return false;
		}
		s->slot_size = s->hdr + mep;
	} else if (c->pack == 1) {
		s->segment = true;
		s->slot_size = (size_t)mtu;
	} else {
		xevb_err(
			"--pack %u x --frag-size %u makes packets of up to %zu bytes, over the MTU %d "
			"(sources set DF): lower --pack or --frag-size, raise the MTU, or send fragments "
			"larger than a packet with --pack 1 (as segments, or with --ip-frag in IP fragments)",
			c->pack, c->fmax, s->hdr + mep, mtu);
		return false;
	}
	s->slot_size = (s->slot_size + 63) & ~(size_t)63;
	if (s->segment) {
		s->emu = malloc(65536);
		if (!s->emu)
			return false;
		xevb_emu_fill(s->emu, 65535);
		xevb_info("fragments over %u bytes go as segments, one packet each (MTU %d)",
			  xevb_seg_stride(s->budget), mtu);
	}
	return true;
}

static void pace(const struct src_cfg *c, uint64_t t0, uint64_t events_done)
{
	uint64_t target = t0 + (uint64_t)((double)events_done / c->rate * 1e9);
	struct timespec ts = { .tv_sec = (time_t)(target / 1000000000ull),
			       .tv_nsec = (long)(target % 1000000000ull) };

	while (!src_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Per source, for the run (static: XEVB_MAX_SOURCES entries each): packet_seq, packets sent, stopped. */
static uint32_t src_seq[XEVB_MAX_SOURCES];
static uint64_t src_npkt[XEVB_MAX_SOURCES];
static bool src_stopped[XEVB_MAX_SOURCES];
/* The records of the MEP being written. */
static uint32_t mep_eids[XEVB_MAX_FRAGS_PER_MEP];
static uint16_t mep_lens[XEVB_MAX_FRAGS_PER_MEP];

static void sender_free(struct sender *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->bufs);
	free(s->emu);
	free(s);
}

/* The sender: packet sizes, the batch's buffers and messages, the socket; NULL (said why) on failure. */
static struct sender *sender_open(const struct src_cfg *c, struct src_stats *st)
{
	struct sender *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->c = c;
	s->st = st;
	s->fd = -1;
	s->rng = c->seed * 0x9E3779B97F4A7C15ull + 1;
	s->hdr = 20 + (c->udp_port ? 8 : 0);
	if (!size_packets(s))
		goto fail;
	s->bufs = malloc(s->slot_size * BATCH);
	if (!s->bufs || open_socket(s))
		goto fail;
	for (int i = 0; i < BATCH; i++) {
		s->iov[i] = (struct iovec){ s->bufs + (size_t)i * s->slot_size, 0 };
		s->msgs[i].msg_hdr = (struct msghdr){
			.msg_name = &s->to, .msg_namelen = sizeof(s->to), .msg_iov = &s->iov[i], .msg_iovlen = 1
		};
	}
	memset(src_seq, 0, sizeof(src_seq));
	memset(src_npkt, 0, sizeof(src_npkt));
	memset(src_stopped, 0, sizeof(src_stopped));
	return s;
fail:
	sender_free(s);
	return NULL;
}

/* Source i's records of block k (ne events) into mep_eids / mep_lens, --skip-events applied; how many. */
static inline uint32_t block_records(struct sender *s, uint64_t k, uint32_t ne, int i)
{
	const struct src_cfg *c = s->c;
	uint32_t n = 0;

	for (uint32_t j = 0; j < ne; j++) {
		uint64_t e = k * c->pack + j;
		if (c->n_skip && skipped(c, i, e)) {
			s->st->skipped_frags++;
			continue;
		}
		mep_eids[n] = c->first_event + (uint32_t)e;
		mep_lens[n++] = c->fmin == c->fmax ?
					c->fmin :
					(uint16_t)(c->fmin + rnd(s) % ((uint64_t)c->fmax - c->fmin + 1));
	}
	return n;
}

/* Source i's packet(s) of block k: one MEP, or a fragment's segments; -1 when sending failed. */
static inline int send_source_block(struct sender *s, uint64_t k, uint32_t ne, int i, bool last)
{
	const struct src_cfg *c = s->c;
	struct xevb_mep_params p = { 0 };
	uint32_t n, seq0;
	int r;

	if (!src_stopped[i] && c->stop_idx == i && src_npkt[i] >= c->stop_after) {
		src_stopped[i] = true;
		s->st->stopped_sources++;
	}
	if (src_stopped[i]) {
		s->st->stopped_frags += ne;
		return 0;
	}
	n = block_records(s, k, ne, i);
	if (!n)
		return 0;
	p.daddr = c->daddr;
	p.saddr = s->hdrincl ? htonl(c->saddr_base + (uint32_t)i) : c->saddr;
	p.ip_proto = c->proto;
	p.udp_dport = c->udp_port;
	p.ip_id = (uint16_t)src_seq[i];
	p.source_id = c->ids[i];
	p.flags = last && c->eor ? XEVB_MEP_F_END_OF_RUN : 0;
	p.run_number = c->run;
	p.n_frags = n;
	p.event_id = mep_eids;
	p.frag_len = mep_lens;
	seq0 = src_seq[i];
	if (s->segment && n == 1 && xevb_seg_needed(mep_lens[0], s->budget)) {
		r = send_segments(s, &p, i, &src_seq[i]);
	} else {
		p.packet_seq = src_seq[i]++;
		r = send_mep(s, &p, n);
	}
	src_npkt[i] += src_seq[i] - seq0;
	return r;
}

/* Block after block, every source once each, until --events, --duration or a signal; -1 on a send error. */
static int send_blocks(struct sender *s, uint64_t deadline)
{
	const struct src_cfg *c = s->c;
	struct src_stats *st = s->st;
	bool last = false;

	for (uint64_t k = 0; !last; k++) {
		uint32_t ne = src_block_events(c, k);

		if (!ne)
			break;
		if (c->events && (k + 1) * c->pack >= c->events)
			last = true;
		/* Time's up or Ctrl-C: this block closes the run, flagged END_OF_RUN. */
		if (src_stop || (deadline && xevb_now_ns() >= deadline))
			last = true;
		/* A source sends a block once its last event has been triggered. */
		if (c->rate > 0) {
			if (s->n && flush(s))
				return -1;
			pace(c, st->t_start, k * c->pack + ne);
		}
		for (int i = 0; i < c->n_src; i++)
			if (send_source_block(s, k, ne, i, last))
				return -1;
		st->blocks++;
		st->events += ne;
	}
	if (s->n && flush(s))
		return -1;
	return 0;
}

int source_run_socket(const struct src_cfg *c, struct src_stats *st)
{
	struct sender *s = sender_open(c, st);
	uint64_t deadline = 0;
	int rc;

	if (!s)
		return 1;
	st->t_start = xevb_now_ns();
	if (c->duration > 0)
		deadline = st->t_start + (uint64_t)(c->duration * 1e9);
	rc = send_blocks(s, deadline) ? 1 : 0;
	if (rc)
		st->aborted = true;
	st->t_end = xevb_now_ns();
	sender_free(s);
	return rc;
}

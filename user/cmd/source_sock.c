// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source --mode socket`: MEPs through kernel sockets, batched with
 * sendmmsg, with fault injection. Raw IPv4 (the kernel writes the IP
 * header) or UDP; with --src-addr-base an IPPROTO_RAW socket, where we
 * write the IP header ourselves to give each source its own address.
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
#include <xevb/cli.h>
#include <xevb/mep_write.h>
#include "source.h"

#define BATCH  64
#define WINDOW 4      /* --reorder shuffles within this many packets */

struct slot {
	uint32_t len;
	uint32_t n_frags;
};

struct sender {
	const struct src_cfg *c;
	struct src_stats *st;
	int fd;
	bool hdrincl;
	struct sockaddr_in to;
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
		struct ifreq ifr = {0};
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
		xevb_err("cannot open a %s socket: %s%s", s->hdrincl ? "raw IP_HDRINCL" :
			 c->udp_port ? "UDP" : "raw IPv4", strerror(errno),
			 errno == EPERM ? " (raw sockets need root or CAP_NET_RAW)" : "");
		return -1;
	}
	if (c->udp_port && !s->hdrincl)
		s->to.sin_port = htons(c->udp_port);
	/* DF on every packet: the spec says sources never rely on IP fragmentation. */
	if (!s->hdrincl && setsockopt(s->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		xevb_warn("cannot set DF (IP_MTU_DISCOVER): %s", strerror(errno));
	setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (c->dev && setsockopt(s->fd, SOL_SOCKET, SO_BINDTODEVICE, c->dev, (socklen_t)strlen(c->dev))) {
		xevb_err("cannot bind to --dev %s: %s (does it exist in this namespace?)", c->dev, strerror(errno));
		return -1;
	}
	if (c->saddr) {
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = c->saddr,
					  .sin_port = htons(c->udp_port) };
		if (bind(s->fd, (struct sockaddr *)&me, sizeof(me))) {
			char a[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &c->saddr, a, sizeof(a));
			xevb_err("cannot bind --src-addr %s: %s (is it an address of this host? "
				 "For foreign addresses use --src-addr-base)", a, strerror(errno));
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
				 errno == ENETUNREACH ? " (no route to --dest: check the address and interface)" : "");
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
	case 0: xevb_st16(mep, XEVB_MEP_MAGIC + 1); break;
	case 1: mep[2] = XEVB_MEP_VERSION + 1; break;
	case 2: mep[3] |= 0x04; break;
	case 3: xevb_st16(mep + 6, 0); break;
	default: xevb_st16(mep + 16 + 6, 1); break;   /* first record's reserved */
	}
}

static bool skipped(const struct src_cfg *c, int src_idx, uint64_t ev_index)
{
	for (int i = 0; i < c->n_skip; i++)
		if (c->skip[i].src_idx == src_idx && (ev_index + 1) % c->skip[i].every == 0)
			return true;
	return false;
}

static void pace(const struct src_cfg *c, uint64_t t0, uint64_t events_done)
{
	uint64_t target = t0 + (uint64_t)((double)events_done / c->rate * 1e9);
	struct timespec ts = { .tv_sec = (time_t)(target / 1000000000ull),
			       .tv_nsec = (long)(target % 1000000000ull) };

	while (!src_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int source_run_socket(const struct src_cfg *c, struct src_stats *st)
{
	static uint32_t eids[XEVB_MAX_FRAGS_PER_MEP];
	static uint16_t lens[XEVB_MAX_FRAGS_PER_MEP];
	static uint32_t seq[XEVB_MAX_SOURCES];
	static uint64_t npkt[XEVB_MAX_SOURCES];
	static bool stopped[XEVB_MAX_SOURCES];
	struct sender *s = calloc(1, sizeof(*s));
	size_t hdr, max_ip;
	uint64_t deadline = 0, k;
	int mtu, rc = 1;
	bool last = false;

	if (!s)
		return 1;
	s->c = c;
	s->st = st;
	s->fd = -1;
	s->rng = c->seed * 0x9E3779B97F4A7C15ull + 1;
	hdr = 20 + (c->udp_port ? 8 : 0);
	max_ip = hdr + 16 + (size_t)c->pack * (12 + XEVB_PAD4((uint32_t)c->fmax));
	if (max_ip > XEVB_MAX_IP_PAYLOAD) {
		xevb_err("--pack %u x --frag-size %u makes a %zu-byte packet, over the 65535 of IPv4",
			 c->pack, c->fmax, max_ip);
		goto out;
	}
	mtu = dev_mtu(c);
	if (mtu > 0 && max_ip > (size_t)mtu) {
		xevb_err("--pack %u x --frag-size %u makes packets of up to %zu bytes, over the MTU %d "
			 "(sources set DF): lower --pack or --frag-size, or raise the MTU",
			 c->pack, c->fmax, max_ip, mtu);
		goto out;
	}
	s->slot_size = (max_ip + 63) & ~(size_t)63;
	s->bufs = malloc(s->slot_size * BATCH);
	if (!s->bufs || open_socket(s))
		goto out;
	for (int i = 0; i < BATCH; i++) {
		s->iov[i] = (struct iovec){ s->bufs + (size_t)i * s->slot_size, 0 };
		s->msgs[i].msg_hdr = (struct msghdr){ .msg_name = &s->to, .msg_namelen = sizeof(s->to),
						      .msg_iov = &s->iov[i], .msg_iovlen = 1 };
	}
	memset(seq, 0, sizeof(seq));
	memset(npkt, 0, sizeof(npkt));
	memset(stopped, 0, sizeof(stopped));

	st->t_start = xevb_now_ns();
	if (c->duration > 0)
		deadline = st->t_start + (uint64_t)(c->duration * 1e9);
	for (k = 0; !last; k++) {
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
				goto out;
			pace(c, st->t_start, k * c->pack + ne);
		}
		for (int i = 0; i < c->n_src; i++) {
			struct xevb_mep_params p = {0};
			uint32_t n = 0;
			uint8_t *buf, *mep;
			ssize_t len;

			if (!stopped[i] && c->stop_idx == i && npkt[i] >= c->stop_after) {
				stopped[i] = true;
				st->stopped_sources++;
			}
			if (stopped[i]) {
				st->stopped_frags += ne;
				continue;
			}
			for (uint32_t j = 0; j < ne; j++) {
				uint64_t e = k * c->pack + j;
				if (c->n_skip && skipped(c, i, e)) {
					st->skipped_frags++;
					continue;
				}
				eids[n] = c->first_event + (uint32_t)e;
				lens[n++] = c->fmin == c->fmax ? c->fmin :
					(uint16_t)(c->fmin + rnd(s) % ((uint64_t)c->fmax - c->fmin + 1));
			}
			if (!n)
				continue;
			p.daddr = c->daddr;
			p.saddr = s->hdrincl ? htonl(c->saddr_base + (uint32_t)i) : c->saddr;
			p.ip_proto = c->proto;
			p.udp_dport = c->udp_port;
			p.ip_id = (uint16_t)seq[i];
			p.source_id = c->ids[i];
			p.flags = last && c->eor ? XEVB_MEP_F_END_OF_RUN : 0;
			p.run_number = c->run;
			p.packet_seq = seq[i]++;
			p.n_frags = n;
			p.event_id = eids;
			p.frag_len = lens;
			npkt[i]++;

			buf = s->iov[s->n].iov_base;
			len = s->hdrincl ? xevb_write_ip(buf, s->slot_size, &p) :
					   xevb_write_mep(buf, s->slot_size, &p);
			if (len < 0) {
				xevb_err("cannot write a MEP: %s", strerror(errno));
				goto out;
			}
			mep = buf + (s->hdrincl ? hdr : 0);
			if (p.flags)
				st->eor_packets++;
			s->iov[s->n].iov_len = (size_t)len;
			s->slots[s->n++] = (struct slot){ (uint32_t)len, n };
			if (c->corrupt > 0 && rnd01(s) < c->corrupt) {
				corrupt(s, mep);
				st->corrupt_packets++;
				st->corrupt_frags += n;
			} else {
				st->valid_frags += n;
				if (c->dup > 0 && rnd01(s) < c->dup) {
					memcpy(s->iov[s->n].iov_base, buf, (size_t)len);
					s->iov[s->n].iov_len = (size_t)len;
					s->slots[s->n++] = (struct slot){ (uint32_t)len, n };
					st->dup_packets++;
					st->dup_frags += n;
				}
			}
			if (s->n >= BATCH - 1 && flush(s))
				goto out;
		}
		st->blocks++;
		st->events += ne;
	}
	if (s->n && flush(s))
		goto out;
	rc = 0;
out:
	if (rc && st->t_start)
		st->aborted = true;
	if (st->t_start)
		st->t_end = xevb_now_ns();
	if (s->fd >= 0)
		close(s->fd);
	free(s->bufs);
	free(s);
	return rc;
}

// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <linux/filter.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include <xevb/mep_parse.h>
#include "rx/sock_rx.h"

/* Synthetic headers in front of the data: Ethernet, and IPv4 + UDP for UDP. */
#define RAW_ROOM 14
#define UDP_ROOM (14 + 20 + 8)

/* The synthetic headers, written once: the kernel fills the rest per datagram. */
static void init_headers(uint8_t *f, uint32_t hdr_room, bool udp, uint16_t udp_port)
{
	memset(f, 0, hdr_room);
	xevb_st16(f + 12, XEVB_ETH_P_IP);
	if (udp) {
		f[14] = 0x45;
		f[14 + 9] = XEVB_IPPROTO_UDP;
		xevb_st16(f + 14 + 20 + 2, udp_port);
	}
}

/*
 * The Ethernet source each bound address may send from, judged by the
 * kernel (a classic BPF socket filter, no privilege) since a socket hands
 * user space no frame. A datagram from an address bound with a MAC that
 * comes with none of its MACs is not dropped but cut to XEVB_SOCK_L2_CUT
 * bytes of payload (its MEP header but the last byte), a length no MEP
 * has, so user space sees and counts it (xevb_sock_src_refused). For UDP
 * the filter's data starts at the UDP header, for raw IPv4 at the IP
 * header (the cut keeps its options). Per (address, MAC) 7 instructions,
 * per address 2 more.
 */
#define L2_PAIR_INSNS 7
#define L2_MAX_PAIRS  256

static uint32_t l2_pair(struct sock_filter *f, uint32_t addr_be, const uint8_t mac[6])
{
	uint32_t hi = (uint32_t)mac[0] << 24 | (uint32_t)mac[1] << 16 | (uint32_t)mac[2] << 8 | mac[3];

	f[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)SKF_NET_OFF + 12);
	f[1] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ntohl(addr_be), 0, 5);
	f[2] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)SKF_LL_OFF + 6);
	f[3] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, hi, 0, 3);
	f[4] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (uint32_t)SKF_LL_OFF + 10);
	f[5] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)mac[4] << 8 | mac[5], 0, 1);
	f[6] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffffffffu);
	return L2_PAIR_INSNS;
}

/* The distinct (address, MAC) pairs bound with a MAC into p (addr, then the MAC's 6 bytes): how many. */
static int l2_pairs(const struct xevb_src_bind *bind, struct xevb_src_bind *p)
{
	int n = 0;

	for (uint32_t id = 0; bind && id < XEVB_MAX_SOURCES; id++) {
		const struct xevb_src_bind *b = &bind[id];
		bool dup = false;

		if (!b->addr || !(b->flags & XEVB_BIND_MAC))
			continue;
		for (int i = 0; i < n; i++)
			dup |= p[i].addr == b->addr && !memcmp(p[i].mac, b->mac, 6);
		if (dup)
			continue;
		if (n == L2_MAX_PAIRS)
			return -E2BIG;
		p[n++] = *b;
	}
	return n;
}

/* The filter for bind (by source_id), or 0 instructions when no address is bound with a MAC. */
static int l2_filter(const struct xevb_src_bind *bind, bool udp, struct sock_filter *f)
{
	static struct xevb_src_bind p[L2_MAX_PAIRS];
	int n = l2_pairs(bind, p);
	uint32_t k = 0, cut;

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++)
		k += l2_pair(f + k, p[i].addr, p[i].mac);
	/* None of its MACs: an address bound with one is cut, any other passes (user space judges it). */
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)SKF_NET_OFF + 12);
	cut = k + 2 * (uint32_t)n + 1;
	for (int i = 0; i < n; i++) {
		f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ntohl(p[i].addr), 0, 1);
		f[k + 1] = (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, cut - (k + 2));
		k += 2;
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffffffffu);
	if (udp) {
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 8 + XEVB_SOCK_L2_CUT);
		return (int)k;
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TXA, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, XEVB_SOCK_L2_CUT);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
	return (int)k;
}

static int l2_attach(struct xevb_sock *s, const struct xevb_src_bind *bind, bool udp)
{
	static struct sock_filter f[L2_MAX_PAIRS * (L2_PAIR_INSNS + 2) + 8];
	struct sock_fprog prog;
	int n = l2_filter(bind, udp, f);

	if (n < 0) {
		xevb_err(
			"more than %d (address, MAC) bindings: the socket's filter cannot hold them; bind "
			"fewer MACs or use --mode xdp",
			L2_MAX_PAIRS);
		return n;
	}
	if (!n)
		return 0;
	prog = (struct sock_fprog){ .len = (unsigned short)n, .filter = f };
	if (setsockopt(s->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog))) {
		int err = -errno;

		xevb_err("cannot attach the filter that checks each bound source's MAC: %s", strerror(errno));
		return err;
	}
	s->l2_filter = true;
	return 0;
}

bool xevb_sock_vlan_line(const char *line, const char *ifname, uint16_t *vid)
{
	char name[64];
	unsigned id;

	if (sscanf(line, "%63s | %u |", name, &id) != 2 || strcmp(name, ifname) || !id || id > XEVB_VLAN_ID_MAX)
		return false;
	*vid = (uint16_t)id;
	return true;
}

uint16_t xevb_sock_dev_vlan(const char *ifname)
{
	FILE *f = fopen("/proc/net/vlan/config", "r"); /* the 8021q module's: absent when no VLAN device exists */
	char line[256];
	uint16_t vid = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && !xevb_sock_vlan_line(line, ifname, &vid))
		;
	fclose(f);
	return vid;
}

static size_t big_area_bytes(uint32_t n_big)
{
	return (size_t)n_big * XEVB_SOCK_BIG_SIZE;
}

int xevb_sock_open(struct xevb_sock *s, const struct xevb_sock_cfg *cfg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	uint32_t n_idx = cfg->n_frames + cfg->n_big;
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->udp = cfg->udp;
	s->udp_port = cfg->udp_port;
	s->n_frames = cfg->n_frames;
	s->frame_size = cfg->frame_size;
	s->mtu = cfg->mtu;
	s->hdr_room = cfg->udp ? UDP_ROOM : RAW_ROOM;
	s->area = mmap(NULL, (size_t)cfg->n_frames * cfg->frame_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	s->frame_data = calloc(n_idx, sizeof(*s->frame_data));
	s->free_stack = calloc(cfg->n_frames, sizeof(*s->free_stack));
	if (s->area == MAP_FAILED || !s->frame_data || !s->free_stack) {
		if (s->area == MAP_FAILED)
			s->area = NULL;
		xevb_err("cannot allocate %u frames of %u bytes (lower --tune frames)", cfg->n_frames,
			 cfg->frame_size);
		xevb_sock_close(s);
		return -ENOMEM;
	}
	if (cfg->n_big) {
		s->big_area = mmap(NULL, big_area_bytes(cfg->n_big), PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		s->big_free = calloc(cfg->n_big, sizeof(*s->big_free));
		if (s->big_area == MAP_FAILED || !s->big_free) {
			if (s->big_area == MAP_FAILED)
				s->big_area = NULL;
			xevb_err("cannot allocate %u buffers of %u bytes for reassembled datagrams", cfg->n_big,
				 XEVB_SOCK_BIG_SIZE);
			xevb_sock_close(s);
			return -ENOMEM;
		}
		s->n_big = cfg->n_big;
	}
	for (uint32_t i = 0; i < cfg->n_frames; i++) {
		uint8_t *f = s->area + (size_t)i * cfg->frame_size;
		s->frame_data[i] = f;
		s->free_stack[s->n_free++] = cfg->n_frames - 1 - i;
		init_headers(f, s->hdr_room, cfg->udp, cfg->udp_port);
	}
	for (uint32_t i = 0; i < s->n_big; i++) {
		uint8_t *f = s->big_area + (size_t)i * XEVB_SOCK_BIG_SIZE;
		s->frame_data[cfg->n_frames + i] = f;
		s->big_free[s->n_big_free++] = cfg->n_frames + s->n_big - 1 - i;
		init_headers(f, s->hdr_room, cfg->udp, cfg->udp_port);
	}

	s->fd = socket(AF_INET, cfg->udp ? SOCK_DGRAM : SOCK_RAW, cfg->udp ? IPPROTO_UDP : cfg->ip_proto);
	if (s->fd < 0) {
		err = -errno;
		if (errno == EPERM)
			xevb_err("a raw IP socket needs root or CAP_NET_RAW");
		else
			xevb_err("cannot open the receive socket: %s", strerror(errno));
		xevb_sock_close(s);
		return err;
	}
	if (cfg->rcvbuf && setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &cfg->rcvbuf, sizeof(cfg->rcvbuf)) &&
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &cfg->rcvbuf, sizeof(cfg->rcvbuf)))
		xevb_warn("cannot set the socket buffer to %d bytes: %s", cfg->rcvbuf, strerror(errno));
	if (cfg->ifname &&
	    setsockopt(s->fd, SOL_SOCKET, SO_BINDTODEVICE, cfg->ifname, (socklen_t)strlen(cfg->ifname) + 1)) {
		err = -errno;
		xevb_err("cannot bind the receive socket to %s: %s", cfg->ifname, strerror(errno));
		xevb_sock_close(s);
		return err;
	}
	s->dev_vlan = cfg->ifname ? xevb_sock_dev_vlan(cfg->ifname) : -1;
	/* Before bind: no datagram may queue unjudged. */
	err = l2_attach(s, cfg->src_bind, cfg->udp);
	if (err) {
		xevb_sock_close(s);
		return err;
	}
	if (cfg->udp) {
		sa.sin_port = htons(cfg->udp_port);
		sa.sin_addr.s_addr = cfg->bind_addr;
		if (bind(s->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			err = -errno;
			xevb_err("cannot bind UDP port %u: %s", cfg->udp_port, strerror(errno));
			xevb_sock_close(s);
			return err;
		}
	}
	return 0;
}

void xevb_sock_close(struct xevb_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->area)
		munmap(s->area, (size_t)s->n_frames * s->frame_size);
	if (s->big_area)
		munmap(s->big_area, big_area_bytes(s->n_big));
	free(s->big_free);
	free(s->frame_data);
	free(s->free_stack);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

int xevb_sock_queue(const struct xevb_sock *s, struct xevb_sock_queue *q)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	if (getsockopt(s->fd, SOL_SOCKET, SO_MEMINFO, mi, &len))
		return -errno;
	if (len < sizeof(mi))
		return -EPROTO;
	q->queued = mi[SK_MEMINFO_RMEM_ALLOC];
	q->size = mi[SK_MEMINFO_RCVBUF];
	q->drops = mi[SK_MEMINFO_DROPS];
	return 0;
}

/*
 * A datagram longer than its frame went on into the big buffer big: its
 * head (the frame's bytes) goes in front, so the datagram is contiguous.
 */
static uint8_t *join_spilled(struct xevb_sock *s, const uint8_t *f, uint32_t big)
{
	uint8_t *b = (uint8_t *)s->frame_data[big];
	uint32_t head = s->frame_size - s->hdr_room;

	memcpy(b + s->hdr_room, f + s->hdr_room, head);
	s->big_copied += head;
	return b;
}

int xevb_sock_rx(struct xevb_sock *s, uint32_t *idx, const uint8_t **data, uint32_t *len)
{
	static __thread struct mmsghdr msgs[XEVB_SOCK_BATCH];
	static __thread struct iovec iov[XEVB_SOCK_BATCH][2];
	static __thread struct sockaddr_in from[XEVB_SOCK_BATCH];
	static __thread uint32_t back[XEVB_SOCK_BATCH], big_back[XEVB_SOCK_BATCH];
	uint32_t want = s->n_free < XEVB_SOCK_BATCH ? s->n_free : XEVB_SOCK_BATCH;
	uint32_t head = s->frame_size - s->hdr_room;
	uint32_t bigs = s->n_big_free < want ? s->n_big_free : want, n_back = 0, n_big_back = 0;
	int n;

	/*
	 * Where datagrams may outgrow a frame, read no more of them than there
	 * are big buffers to take their tails: a datagram read without one
	 * would be cut, while in the socket queue it waits whole.
	 */
	if (s->n_big && bigs < want)
		want = bigs;
	if (!want)
		return 0; /* every frame is held by open events: the socket queue absorbs */
	for (uint32_t i = 0; i < want; i++) {
		uint32_t fi = s->free_stack[s->n_free - 1 - i];
		iov[i][0].iov_base = (uint8_t *)s->frame_data[fi] + s->hdr_room;
		iov[i][0].iov_len = head;
		if (i < bigs) {
			/* What does not fit the frame lands where it would in a big buffer. */
			iov[i][1].iov_base =
				(uint8_t *)s->frame_data[s->big_free[s->n_big_free - 1 - i]] + s->hdr_room + head;
			iov[i][1].iov_len = XEVB_SOCK_BIG_SIZE - s->hdr_room - head;
		}
		/*
		 * No control data (the drops are read with SO_MEMINFO each tick),
		 * and a sender's address only where UDP took the header that held
		 * it: each costs the kernel a copy per datagram.
		 */
		msgs[i].msg_hdr = (struct msghdr){
			.msg_name = s->udp ? &from[i] : NULL,
			.msg_namelen = s->udp ? sizeof(from[i]) : 0,
			.msg_iov = iov[i],
			.msg_iovlen = i < bigs ? 2 : 1,
		};
	}
	n = recvmmsg(s->fd, msgs, want, MSG_DONTWAIT, NULL);
	if (n <= 0)
		return n < 0 && errno != EAGAIN && errno != EINTR ? -errno : 0;
	for (int i = 0; i < n; i++) {
		uint32_t fi = s->free_stack[s->n_free - 1 - i];
		uint8_t *f = (uint8_t *)s->frame_data[fi];
		uint32_t got = msgs[i].msg_len;
		struct msghdr *mh = &msgs[i].msg_hdr;
		uint32_t ip_len = s->udp ? got + 28 : got;

		if (mh->msg_flags & MSG_TRUNC)
			s->truncated++;
		if (ip_len > s->mtu) {
			s->ipfrag_datagrams++;
			s->ipfrag_bytes += got;
		}
		if (__builtin_expect(got > head, 0) && (uint32_t)i < bigs) {
			uint32_t bi = s->big_free[s->n_big_free - 1 - i];

			f = join_spilled(s, f, bi);
			back[n_back++] = fi; /* the frame held only the head: free again */
			fi = bi;
		} else if ((uint32_t)i < bigs) {
			big_back[n_big_back++] = s->big_free[s->n_big_free - 1 - i];
		}
		if (s->udp) {
			/* Rebuild the headers the kernel consumed. */
			xevb_st16(f + 14 + 2, (uint16_t)(got + 28));
			memcpy(f + 14 + 12, &from[i].sin_addr.s_addr, 4);
			xevb_st16(f + 14 + 20, ntohs(from[i].sin_port));
			xevb_st16(f + 14 + 20 + 4, (uint16_t)(got + 8));
		}
		idx[i] = fi;
		data[i] = f;
		len[i] = got + s->hdr_room;
	}
	/* Offered big buffers past the last message were not touched. */
	for (uint32_t i = (uint32_t)n; i < bigs; i++)
		big_back[n_big_back++] = s->big_free[s->n_big_free - 1 - i];
	s->n_free -= (uint32_t)n;
	s->n_big_free -= bigs;
	for (uint32_t i = 0; i < n_back; i++)
		s->free_stack[s->n_free++] = back[i];
	for (uint32_t i = 0; i < n_big_back; i++)
		s->big_free[s->n_big_free++] = big_back[i];
	return n;
}

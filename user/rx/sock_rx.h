/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel-socket receive (the baseline, and the path of the original
 * studies): a raw IPv4 socket for the DAQ protocol number, or a UDP socket,
 * read with recvmmsg in batches into a preallocated frame pool. Each frame
 * gets a synthetic Ethernet (and for UDP, IPv4 + UDP) header in front of
 * what the kernel delivers, so the one classifier judges both paths alike.
 */
#ifndef XEVB_SOCK_RX_H
#define XEVB_SOCK_RX_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <xevb/bytes.h>
#include <xevb/mep_parse.h>
#include <xevb/xdp_stats.h>

#define XEVB_SOCK_BATCH 64
/*
 * Big buffers: a datagram longer than a frame (an IPv4-fragmented MEP the
 * kernel reassembled, up to 65535 bytes) spills from its frame into one of
 * these, offered as each message's second iovec; no more datagrams are
 * read at once than there are free ones, so none is cut. Only such a
 * datagram costs a copy (of its first frame's bytes, to make it
 * contiguous). Frames stay the size of the device MTU's datagram.
 */
#define XEVB_SOCK_BIG_FRAMES 256
#define XEVB_SOCK_BIG_SIZE   (65536 + 64)
/*
 * The payload a datagram is cut to when its address is bound with a MAC
 * it did not come with (the socket's filter, sock_rx.c): one byte short
 * of a MEP header, so no MEP, and user space counts it src_mac_mismatch.
 */
#define XEVB_SOCK_L2_CUT 15

struct xevb_sock_cfg {
	bool udp;
	uint8_t ip_proto;
	uint16_t udp_port;
	uint32_t bind_addr; /* network order, 0 = any */
	const char *ifname; /* only what arrives on this device (SO_BINDTODEVICE); NULL: any */
	uint32_t n_frames;
	uint32_t frame_size; /* >= MTU + 64 */
	uint32_t n_big;      /* big buffers (XEVB_SOCK_BIG_SIZE) for longer datagrams; 0: none */
	uint32_t mtu;        /* IP datagrams longer than this were reassembled (ipfrag); 0: all count */
	int rcvbuf;          /* bytes */
	/*
	 * By source_id ([XEVB_MAX_SOURCES]) or NULL: the MACs of the bindings
	 * that name one are checked by a filter on the socket (see
	 * XEVB_SOCK_L2_CUT); VLANs by the device (ifname's VLAN id, see
	 * xevb_sock.dev_vlan: the socket's frames carry no tag).
	 */
	const struct xevb_src_bind *src_bind;
};

struct xevb_sock {
	int fd;
	bool udp;
	uint16_t udp_port;
	uint32_t n_frames, frame_size, hdr_room, mtu;
	uint8_t *area;
	const uint8_t **frame_data; /* [n_frames + n_big]: frames, then big buffers */
	uint32_t *free_stack;
	uint32_t n_free;
	/* Big buffers: frame indices n_frames.. (XEVB_SOCK_BIG_FRAMES above) */
	uint8_t *big_area;
	uint32_t n_big;
	uint32_t *big_free; /* stack of free big indices (global) */
	uint32_t n_big_free;
	uint64_t ipfrag_datagrams; /* IP datagrams longer than mtu: reassembled by the kernel */
	uint64_t ipfrag_bytes;
	uint64_t big_copied;   /* bytes copied to make spilled datagrams contiguous */
	uint64_t kernel_drops; /* SO_MEMINFO: dropped at the socket queue (the kernel's running total) */
	uint64_t truncated;    /* datagrams longer than a frame */
	/*
	 * Set by the caller: the one address each source_id may come from
	 * (--bind-src; [XEVB_MAX_SOURCES], addr 0: unbound), for datagrams no
	 * XDP program saw (every datagram of the socket path, IP-fragmented MEPs
	 * beside XDP); NULL: none. Judged by address here, by MAC in the
	 * kernel when cfg.src_bind named them (l2_filter: the datagrams it cut
	 * are counted here, as XDP counts src_mac_mismatch; frags as their
	 * MEP header says). What it refuses by address is counted here as XDP
	 * counts src_addr_mismatch. VLANs by the device: a socket bound to a
	 * VLAN device receives that VLAN only, one bound to any other device
	 * no tagged frame, so a source bound to another VLAN than dev_vlan
	 * has nothing to send here (src_vlan_mismatch).
	 */
	const struct xevb_src_bind *src_bind;
	bool l2_filter;
	int32_t dev_vlan; /* the VLAN id of the device the socket is bound to; 0: untagged; -1: any device (not judged) */
	uint64_t src_mismatch_packets, src_mismatch_bytes, src_mismatch_frags;
	uint64_t src_mac_packets, src_mac_bytes, src_mac_frags;
	uint64_t src_vlan_packets, src_vlan_bytes, src_vlan_frags;
	/*
	 * Set by the caller: the addresses MEPs may come from (--allow-src,
	 * network order), for the same datagrams; 0 addresses: any. What it
	 * refuses is counted here as XDP counts unknown_source.
	 */
	const uint32_t *src_allow;
	uint32_t n_src_allow;
	uint64_t src_unknown_packets, src_unknown_bytes, src_unknown_frags;
};

int xevb_sock_open(struct xevb_sock *s, const struct xevb_sock_cfg *cfg);
/*
 * A line of /proc/net/vlan/config ("eth0.100 | 100 | eth0"): true, with
 * the VLAN id in *vid, when it describes ifname.
 */
bool xevb_sock_vlan_line(const char *line, const char *ifname, uint16_t *vid);
/* ifname's VLAN id: 0 when it is no VLAN device (or no VLAN is configured at all). */
uint16_t xevb_sock_dev_vlan(const char *ifname);
void xevb_sock_close(struct xevb_sock *s);

/* Receive up to XEVB_SOCK_BATCH frames without blocking; same contract as xevb_xsk_rx. */
int xevb_sock_rx(struct xevb_sock *s, uint32_t *idx, const uint8_t **data, uint32_t *len);

/*
 * The socket's receive queue (SO_MEMINFO): bytes queued (rmem_alloc, the
 * kernel's truesize of the packets, not their length), the buffer's size
 * in the same unit, and the packets the kernel dropped at the queue (a
 * running total). One getsockopt. 0 or -errno.
 */
struct xevb_sock_queue {
	uint32_t queued;
	uint32_t size;
	uint32_t drops;
};
int xevb_sock_queue(const struct xevb_sock *s, struct xevb_sock_queue *q);

static inline bool xevb_sock_src_listed(const struct xevb_sock *s, uint32_t saddr)
{
	for (uint32_t i = 0; i < s->n_src_allow; i++)
		if (s->src_allow[i] == saddr)
			return true;
	return false;
}

/*
 * The frame data[0..len) is a datagram the socket's filter cut (from an
 * address bound with a MAC, without it): counted, true. Only a payload of
 * XEVB_SOCK_L2_CUT bytes is looked at, so the cost is one compare.
 */
static inline bool xevb_sock_l2_cut(struct xevb_sock *s, const uint8_t *data, uint32_t len)
{
	uint32_t ip_hl = s->udp ? 28 : (uint32_t)(data[14] & 0xf) * 4, saddr;
	bool bound = false;

	if (__builtin_expect(len != 14 + ip_hl + XEVB_SOCK_L2_CUT, 1))
		return false;
	memcpy(&saddr, data + 14 + 12, 4);
	for (uint32_t id = 0; id < XEVB_MAX_SOURCES && !bound; id++)
		bound = s->src_bind[id].addr == saddr && (s->src_bind[id].flags & XEVB_BIND_MAC);
	if (!bound)
		return false;
	s->src_mac_packets++;
	s->src_mac_bytes += len;
	if (xevb_ld16(data + 14 + ip_hl) == XEVB_MEP_MAGIC)
		s->src_mac_frags += xevb_ld16(data + 14 + ip_hl + 6);
	return true;
}

/*
 * The frame data[0..len) that xevb_classify judged res (pi) is a MEP or a
 * segment from an address not in --allow-src, or of a source_id bound to
 * another address than it came from: counted on s as the XDP program
 * counts unknown_source or src_addr_mismatch (a segment's frags: 1 at offset
 * 0), true. The caller releases the frame.
 */
static inline bool xevb_sock_src_refused(struct xevb_sock *s, int res, const struct xevb_pkt_info *pi,
					 const uint8_t *data, uint32_t len)
{
	uint32_t bound, frags;

	if (__builtin_expect(s->l2_filter, 0) && xevb_sock_l2_cut(s, data, len))
		return true;
	if ((!s->src_bind && !s->n_src_allow) || (res != XEVB_RES_MEP && res != XEVB_RES_SEGMENT))
		return false;
	frags = res == XEVB_RES_SEGMENT ? pi->seg_offset == 0 : pi->n_frags;
	if (s->n_src_allow && !xevb_sock_src_listed(s, pi->saddr)) {
		s->src_unknown_packets++;
		s->src_unknown_bytes += len;
		s->src_unknown_frags += frags;
		return true;
	}
	bound = s->src_bind ? s->src_bind[pi->source_id].addr : 0;
	if (!bound)
		return false;
	if (bound != pi->saddr) {
		s->src_mismatch_packets++;
		s->src_mismatch_bytes += len;
		s->src_mismatch_frags += frags;
		return true;
	}
	if (__builtin_expect(!(s->src_bind[pi->source_id].flags & XEVB_BIND_VLAN), 1) || s->dev_vlan < 0 ||
	    s->src_bind[pi->source_id].vlan == s->dev_vlan)
		return false;
	s->src_vlan_packets++;
	s->src_vlan_bytes += len;
	s->src_vlan_frags += frags;
	return true;
}

static inline void xevb_sock_release(struct xevb_sock *s, uint32_t frame_idx)
{
	if (__builtin_expect(frame_idx >= s->n_frames, 0)) {
		s->big_free[s->n_big_free++] = frame_idx;
		return;
	}
	s->free_stack[s->n_free++] = frame_idx;
}

#endif

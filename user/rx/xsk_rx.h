/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * AF_XDP receive: one socket per queue, each with its own UMEM. Frames are
 * numbered globally (queue q owns indices [q * frames_per_q, (q+1) * ...)),
 * so the builder core can hold them across sockets; released frames go
 * back to their own fill ring in batches.
 */
#ifndef XEVB_XSK_RX_H
#define XEVB_XSK_RX_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/if_xdp.h>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
/* Kernel 6.6 UAPI, newer than some distributions' headers. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

struct xsk_socket;
struct xsk_umem;

#define XEVB_XSK_MAX_QUEUES 16

struct xevb_xsk_cfg {
	const char *ifname;
	const uint32_t *queues;
	uint32_t n_queues;
	uint32_t frames_per_q; /* power of 2 */
	uint32_t frame_size;   /* 2048 or 4096 */
	uint32_t rx_size;      /* RX ring, power of 2 */
	int xsks_map_fd;       /* our XSKMAP: socket fd stored at its queue id */
	bool force_copy;
	uint32_t busy_budget; /* >0: preferred busy polling (SO_PREFER_BUSY_POLL), this budget */
	bool no_hugepages;    /* UMEM on normal pages even where huge pages exist */
};

struct xevb_xsk_q {
	struct xsk_socket *xsk;
	struct xsk_umem *umem;
	uint8_t *area;
	uint32_t queue_id;
	uint32_t first_idx;
	int fd;
	bool zerocopy;
	bool busy;
	bool hugepages; /* UMEM on huge pages */
	/* rings are embedded in the implementation; opaque here */
	void *rings;
	uint32_t *pending; /* frame offsets waiting for the fill ring */
	uint32_t n_pending;
	/*
	 * Multi-buffer (XDP_USE_SG): a frame longer than one chunk arrives in
	 * several descriptors, each chunk's data 256 bytes (XDP headroom) past
	 * its start, so never contiguous. It is gathered into a bounce buffer
	 * of this queue (global indices from first_bounce) and its chunks go
	 * straight back to the fill ring: one copy of jumbo frames only.
	 */
	uint8_t *bounce;
	uint32_t first_bounce;
	uint32_t *bounce_free; /* stack of free bounce indices (global) */
	uint32_t n_bounce_free;
	uint32_t rx_descs; /* descriptors the last xevb_xsk_rx took */
	uint64_t sg_packets, sg_descs, sg_stalls;
};

struct xevb_xsk {
	struct xevb_xsk_q q[XEVB_XSK_MAX_QUEUES];
	uint32_t n_queues;
	uint32_t frames_per_q;
	uint32_t frame_shift;
	const uint8_t **frame_data; /* frame index -> frame start (set on receive) */
	bool sg;                    /* XDP_USE_SG: jumbo frames in several descriptors */
	uint32_t n_umem;            /* n_queues * frames_per_q: bounce indices follow */
	uint32_t bounce_per_q, bounce_size;
	/*
	 * The XDP ring guard's count of frames released, indexed by queue id
	 * (shed.h; NULL: no guard): each release adds to it, so the program
	 * knows how many frames wait without asking us.
	 */
	uint64_t *guard_released;
	uint64_t *guard_released_ns; /* when, by queue id: guard_now at the release */
	uint64_t guard_now;          /* the receive loop's clock of this turn */
	uint32_t guard_queues;
};

struct xevb_xsk_stats {
	uint64_t rx_dropped;
	uint64_t rx_invalid_descs;
	uint64_t rx_ring_full;
	uint64_t rx_fill_ring_empty_descs;
};

int xevb_xsk_open(struct xevb_xsk *x, const struct xevb_xsk_cfg *cfg);

/*
 * Frame indices beyond the UMEM's that a builder must also accept: the
 * bounce buffers for jumbo frames when the device MTU does not fit one
 * frame_size chunk (0 otherwise). xevb_xsk_open uses the same rule.
 */
uint32_t xevb_xsk_extra_frames(const char *ifname, uint32_t frames_per_q, uint32_t frame_size, uint32_t n_queues);
void xevb_xsk_close(struct xevb_xsk *x);

/*
 * The UMEM chunk size for a device: 2048 when a frame of its MTU fits one
 * with the receive headroom (half the memory, fewer pages and cache sets
 * for the same number of frames), else 4096.
 */
uint32_t xevb_xsk_frame_size_for(const char *ifname);
/* The device's MTU (1500 if unknown). */
uint32_t xevb_dev_mtu(const char *ifname);
/* Socket mode's receive frames: a datagram of the device's MTU fits (>= 4096). */
uint32_t xevb_sock_frame_size_for(const char *ifname);
/* The same for a given MTU (xevb doctor decides on recorded facts). */
uint32_t xevb_xsk_frame_size_for_mtu(uint32_t mtu);

/*
 * Take up to max descriptors from queue qi's RX ring: idx[i] is the global
 * frame index, data[i] the frame start, len[i] its length. Returns the
 * count; the caller must call xevb_xsk_rx_done(x, qi, n) after use.
 */
uint32_t xevb_xsk_rx(struct xevb_xsk *x, uint32_t qi, uint32_t max, uint32_t *idx, const uint8_t **data,
		     uint32_t *len);
void xevb_xsk_rx_done(struct xevb_xsk *x, uint32_t qi, uint32_t n);

/*
 * Descriptors waiting in queue qi's RX ring (two loads, no syscall; from
 * any thread, as a sample); *ring_size gets the ring's entries.
 */
uint32_t xevb_xsk_rx_queued(const struct xevb_xsk *x, uint32_t qi, uint32_t *ring_size);

/* Give a frame back (batched); xevb_xsk_flush pushes to the fill rings. */
static inline void xevb_xsk_release(struct xevb_xsk *x, uint32_t frame_idx)
{
	struct xevb_xsk_q *q;

	if (__builtin_expect(frame_idx >= x->n_umem, 0)) {
		q = &x->q[(frame_idx - x->n_umem) / x->bounce_per_q];
		q->bounce_free[q->n_bounce_free++] = frame_idx;
		return;
	}
	q = &x->q[frame_idx / x->frames_per_q];

	q->pending[q->n_pending++] = (frame_idx - q->first_idx) << x->frame_shift;
}
void xevb_xsk_flush(struct xevb_xsk *x);
/* Queue qi's releases only (multi-worker: each worker flushes its queues). */
void xevb_xsk_flush_q(struct xevb_xsk *x, uint32_t qi);

/*
 * Busy polling: run the queue's NAPI in our context (a syscall that polls
 * up to busy_budget frames into the RX ring). No-op unless busy_budget was set.
 */
void xevb_xsk_kick(struct xevb_xsk *x, uint32_t qi);
/* The NAPI id the socket is bound to by the kernel, 0 if none (busy polling then does nothing). */
uint32_t xevb_xsk_napi_id(const struct xevb_xsk *x, uint32_t qi);

int xevb_xsk_stats(const struct xevb_xsk *x, uint32_t qi, struct xevb_xsk_stats *s);

#endif

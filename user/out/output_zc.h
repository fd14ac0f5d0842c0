/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * MSG_ZEROCOPY forwarding (xevb build --tune zerocopy=1): built events go to farm
 * nodes with sendmsg(MSG_ZEROCOPY), the kernel reading payloads from the
 * frames themselves after sendmsg returns. A frame the builder releases is
 * therefore held until every send issued up to then has completed (the
 * socket error queue says so); event headers come from a ring of slots,
 * each reused only after its send completed. Everything is bounded: when
 * completions lag (ring of ids or slots full after a short wait, or the
 * kernel refuses with ENOBUFS), that event goes out copied.
 *
 * Over veth and loopback the kernel copies anyway when the receiver is
 * local (completions carry SO_EE_CODE_ZEROCOPY_COPIED): counted.
 */
#ifndef XEVB_OUTPUT_ZC_H
#define XEVB_OUTPUT_ZC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct xevb_zc;

struct xevb_zc_stats {
	uint64_t sends;        /* sendmsg(MSG_ZEROCOPY) calls that sent */
	uint64_t completions;  /* ids completed */
	uint64_t copied;       /* of them, the kernel copied after all */
	uint64_t fallback;     /* events sent copied: no slot/id, ENOBUFS */
	uint64_t waits;        /* waits for completions (bounded) */
	uint64_t held;         /* frame releases deferred */
	uint64_t bytes;        /* sent with MSG_ZEROCOPY */
	uint64_t bytes_copied; /* of them in sends the kernel reported copied */
};

struct xevb_zc *xevb_zc_new(uint32_t n_sinks, size_t slot_len);
/* Frees; call xevb_zc_drain first. */
void xevb_zc_free(struct xevb_zc *z);

/* The socket option; 0 or -errno (kernels before 4.14: EOPNOTSUPP/ENOPROTOOPT). */
int xevb_zc_sockopt(int fd);

/* Where frames go once the kernel is done with them; max_frames bounds the queue. */
int xevb_zc_set_release(struct xevb_zc *z, void (*fn)(void *, uint32_t), void *ctx, uint32_t max_frames);

/* Header scratch for the next event, or NULL (send that one copied). */
uint8_t *xevb_zc_slot(struct xevb_zc *z);

/*
 * Send iov[0..n) on sink's fd; slot: the event's headers are in the slot
 * xevb_zc_slot returned. 0 or -errno (the connection is then broken).
 */
int xevb_zc_send(struct xevb_zc *z, uint32_t sink, int fd, struct iovec *iov, size_t n, bool slot);

/* A connection went away: what it had in flight is no longer waited for. */
void xevb_zc_sink_lost(struct xevb_zc *z, uint32_t sink);

/* true: the frame is held and released later through the release function. */
bool xevb_zc_hold(struct xevb_zc *z, uint32_t frame_idx);

/* Read completions without waiting; release what they free. */
void xevb_zc_reap(struct xevb_zc *z);

/* Wait (up to timeout_ms) for every completion, then release every held frame. */
void xevb_zc_drain(struct xevb_zc *z, int timeout_ms);

const struct xevb_zc_stats *xevb_zc_stats(const struct xevb_zc *z);

#endif

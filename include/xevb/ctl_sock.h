/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A control-protocol endpoint: one non-blocking UDP socket, our header
 * fields (role, id, epoch, sequence) and the counters of what came in:
 * refused messages by reason, unexpected ones, sequence gaps.
 */
#ifndef XEVB_CTL_SOCK_H
#define XEVB_CTL_SOCK_H

#include <netinet/in.h>
#include <stdint.h>
#include <xevb/ctl_proto.h>

struct xevb_ctl_auth;

struct xevb_ctl_io {
	int fd;
	uint8_t role;
	uint16_t id;
	uint32_t epoch;
	uint32_t seq;
	uint64_t tx, tx_err, rx, rx_bad[XEVB_CTL_E__COUNT], rx_bad_total, rx_unexpected;
	uint64_t tx_type[XEVB_CTL__TYPES], rx_type[XEVB_CTL__TYPES];
	struct xevb_ctl_auth *auth;   /* a key: every message sealed and checked (ctl_auth.h) */
	uint64_t auth_warn_ns;        /* last refusal logged (one a second at most) */
};

/* "198.18.4.1:23901" -> sa; -1 (no message) when it is not ADDR:PORT. */
int xevb_ctl_parse_addr(const char *s, struct sockaddr_in *sa);
/* Bind to addr:port (network order addr, host order port; 0: any). -1 + message. */
int xevb_ctl_open(struct xevb_ctl_io *io, uint32_t addr, uint16_t port, uint8_t role, uint16_t id);
void xevb_ctl_close(struct xevb_ctl_io *io);
/*
 * Authenticate every message from now on with the key in path (after
 * xevb_ctl_open). 0, or -1 after a message.
 */
int xevb_ctl_use_key(struct xevb_ctl_io *io, const char *path);
/* Fill m's header (role, id, epoch, seq) and send it. 0, or -1 (counted). */
int xevb_ctl_send(struct xevb_ctl_io *io, const struct sockaddr_in *to, struct xevb_ctl_msg *m);
/*
 * The next valid message, without blocking: 1 with m and from filled, 0
 * when nothing is left. Refused datagrams are counted and skipped.
 */
int xevb_ctl_recv(struct xevb_ctl_io *io, struct xevb_ctl_msg *m, struct sockaddr_in *from);

#endif

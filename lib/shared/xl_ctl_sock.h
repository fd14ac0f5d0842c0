/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Taking a control datagram off a socket (docs/control-protocol.md): the
 * address it was sent to, which a sealed message's MAC binds, and how its
 * version decides whether it is opened or decoded. One implementation
 * (lib/ctl_sock.c) for libxevb's farm node (lib/ctl.c) and the tools'
 * endpoints (user/ctl/ctl_sock.c). lib/shared/: see xl_trusted.h.
 */
#ifndef XEVB_LIB_CTL_SOCK_H
#define XEVB_LIB_CTL_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>
#include "xl_ctl_auth.h"
#include "xl_ctl_proto.h"

/*
 * A new incarnation's epoch (never 0): a restarted sender's messages are
 * told from its former self's, whatever their sequence numbers.
 */
uint32_t xl_ctl_new_epoch(void);

/*
 * One datagram from fd (IP_PKTINFO on) into buf[0..cap), without blocking
 * when fd does not: its length with the sender in from and the address it
 * was sent to in *dst (network order; 0 when not told), or -errno.
 */
ssize_t xl_ctl_recvmsg(int fd, uint8_t *buf, size_t cap, struct sockaddr_in *from, uint32_t *dst);

/* Is buf[0..n) sealed (version 3): for the receiver's key to open? */
static inline bool xl_ctl_sealed(const uint8_t *buf, size_t n)
{
	return n > 2 && buf[2] == XEVB_CTL_VERSION_AUTH;
}

/*
 * A datagram not opened: with a key (keyed) a plain (version-1) one is
 * refused as unauthenticated, without one a sealed one as no_key; anything
 * else is decoded into m. XEVB_CTL_OK, or why it was refused.
 */
enum xevb_ctl_err xl_ctl_unsealed(const uint8_t *buf, size_t n, bool keyed, struct xevb_ctl_msg *m);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Is a silent builder alive? Silence alone cannot tell a host that is gone
 * from a process that is not scheduled (a loaded host, a long page fault):
 * both say nothing. A TCP handshake can, because the peer's kernel answers
 * it without the process: the builder listens on its control port number
 * (TCP beside the UDP control socket, accepting and closing what comes),
 * and the DFM connects there to a builder silent past --dead-ms. A SYN-ACK
 * says the host and the process are there (the listening socket dies with
 * the process); a reset, that the process is gone; no answer, that the host
 * is. Two handshakes leave together so one lost SYN does not kill a builder.
 */
#ifndef XEVB_CTL_LIVENESS_H
#define XEVB_CTL_LIVENESS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* The builder's side: a listening socket on addr:port (network order address, 0: all, like the
   control socket); -1 with a warning if it cannot. */
int xevb_live_listen(uint32_t addr, uint16_t port);
/* Accept and close what waits (a bounded number), so the backlog never fills. */
void xevb_live_accept(int fd);

enum xevb_live {
	XEVB_LIVE_PENDING,   /* asked, no answer yet */
	XEVB_LIVE_UP,        /* its kernel answered: host and process are there */
	XEVB_LIVE_REFUSED,   /* reset: nothing listens any more (the process is gone) */
	XEVB_LIVE_NO_ANSWER, /* no answer in time, or the host unreachable */
};

#define XEVB_LIVE_TRIES 2

/* The DFM's side: one check of one peer. */
struct xevb_live_check {
	int fd[XEVB_LIVE_TRIES];
	uint64_t t0;  /* when asked, 0: idle */
	bool refused; /* at once, by a local kernel */
};

void xevb_live_check_init(struct xevb_live_check *c);
/* Start the handshakes (closing any earlier ones); false if no socket could be made. */
bool xevb_live_check_start(struct xevb_live_check *c, const struct sockaddr_in *to, uint64_t now);
/* The answer so far, without waiting; NO_ANSWER once timeout_ns passed with none. Ends the check unless PENDING. */
enum xevb_live xevb_live_check_poll(struct xevb_live_check *c, uint64_t now, uint64_t timeout_ns);
void xevb_live_check_end(struct xevb_live_check *c);
const char *xevb_live_name(enum xevb_live v);

#endif

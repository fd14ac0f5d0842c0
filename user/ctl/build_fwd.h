/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The builder's forwarding under farm-node credits: each farm node's
 * credits, Busy and liveness from its STATUS, a smooth weighted round robin
 * over those that may take an event, and a bounded backlog of encoded
 * events while none may. Until some farm node speaks the protocol, events
 * go straight to the output engine (its own round robin).
 */
#ifndef XEVB_BUILD_FWD_H
#define XEVB_BUILD_FWD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"
#include "ctl/ctl_sock.h"
#include "ctl/peer_map.h"
#include "out/output.h"

struct build_sinkc { /* what we know of one farm node (index as in the output engine) */
	struct sockaddr_in ctl;
	uint32_t epoch, credits;
	uint64_t sent, base, done, last_ns;
	bool heard, alive, busy;
	uint64_t deaths, rejoins, busy_on, sent_total;
	int fd; /* the connection the counts are about */
};

struct build_held_ev {
	uint8_t *buf;
	size_t len;
};

struct build_fwd {
	struct xevb_output *out;
	struct build_sinkc sink[XEVB_MAX_SINKS];
	int64_t wrr[XEVB_MAX_SINKS];
	struct peer_map by_addr; /* farm nodes by IPv4 address (the first at an address) */
	bool credit_mode;        /* some farm node speaks the protocol */
	struct build_held_ev *bl;
	uint32_t backlog, bl_head, bl_n;
	uint64_t fwd_events, fwd_backlogged, backlog_overflow, fwd_errors, backlog_max;
	uint64_t fwd_rr; /* build_fwd_encoded's round robin before any farm node speaks the protocol */
};

/* Farm nodes as the output engine has them, their control port; backlog events at most. 0, or -1. */
int build_fwd_init(struct build_fwd *f, struct xevb_output *out, uint32_t backlog, uint16_t sink_ctl_port);
void build_fwd_free(struct build_fwd *f);
/*
 * A farm node's STATUS, counted only when about our_epoch (this
 * incarnation of us). False when from names no farm node of ours.
 */
bool build_fwd_on_status(struct build_fwd *f, const struct xevb_ctl_msg *m, const struct sockaddr_in *from,
			 uint32_t our_epoch, uint64_t now);
/* A built event: to a farm node with credit, else into the backlog (or counted lost when it is full). */
void build_fwd_event(struct build_fwd *f, const struct xevb_event *ev);
/*
 * An event encoded earlier (buf from malloc, len bytes; taken): as
 * build_fwd_event would send it, held in the backlog while no farm node
 * has credit. False when the output takes no encoded event (a file, or
 * discarding): buf is freed, the event counted nowhere here.
 */
bool build_fwd_encoded(struct build_fwd *f, uint8_t *buf, size_t len);
/* Backlogged events to farm nodes with credit, oldest first. */
void build_fwd_drain(struct build_fwd *f);
/* The heartbeat: our STATUS to every farm node; one silent for dead_ns gets no more events. */
void build_fwd_heartbeat(struct build_fwd *f, struct xevb_ctl_io *io, uint64_t now, uint64_t dead_ns);
/* The backlog within its bound and each farm node's counts in order; false with what disagrees in msg. */
bool build_fwd_check(const struct build_fwd *f, char *msg, size_t cap);

#endif

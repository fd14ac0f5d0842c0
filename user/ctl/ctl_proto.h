/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Control protocol, version 1 (docs/control-protocol.md). The wire's types
 * and the codec are libxevb's (lib/shared/xl_ctl_proto.h, lib/ctl_proto.c),
 * linked into the tools: one decoder for the farm node and the tools.
 */
#ifndef XEVB_CTL_PROTO_H
#define XEVB_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "xl_ctl_proto.h"

/*
 * Records of type t a sender puts in one datagram at most (0 for BYE):
 * room is left for the authentication trailer, keyed or not.
 */
static inline uint32_t xevb_ctl_max_recs(uint8_t type)
{
	return xl_ctl_max_recs(type);
}

/* Decode and validate; XEVB_CTL_OK or the reason it was refused. */
static inline enum xevb_ctl_err xevb_ctl_decode(const uint8_t *buf, size_t len, struct xevb_ctl_msg *m)
{
	return xl_ctl_decode(buf, len, m);
}

/*
 * Encode m (h.n_recs records of h.type from m->u) into buf; returns the
 * length, or 0 when it would break a rule the decoder checks (so nothing
 * we send is refused by a peer) or does not fit cap.
 */
static inline size_t xevb_ctl_encode(const struct xevb_ctl_msg *m, uint8_t *buf, size_t cap)
{
	return xl_ctl_encode(m, buf, cap);
}

/* The tools count the membership refusal apart (ctl_sock.h): their reasons end before it. */
static inline const char *xevb_ctl_err_name(enum xevb_ctl_err e)
{
	return (unsigned)e < XEVB_CTL_E__COUNT ? xl_ctl_err_name(e) : "?";
}

static inline const char *xevb_ctl_type_name(uint8_t t)
{
	return xl_ctl_type_name(t);
}

static inline const char *xevb_ctl_role_name(uint8_t r)
{
	return xl_ctl_role_name(r);
}

/*
 * For the consistency checks of an event table of mask + 1 slots: slot i
 * holds event in a state up to last, in its own slot (event & mask == i).
 * If not, says so in msg and returns false.
 */
bool xevb_ctl_slot_ok(uint32_t i, uint32_t event, unsigned int state, unsigned int last, uint32_t mask, char *msg,
		      size_t cap);

#endif

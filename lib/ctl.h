/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The farm node's part of the control protocol (docs/control-protocol.md):
 * the header rules of every message, STATUS (in from builders, out to
 * them), RECEIVED (out to the DFM), authentication with the run's key, and
 * membership. The codec and the sealing are the ones the tools use too
 * (shared/xl_ctl_proto.h, shared/xl_ctl_auth.h); here what a farm node
 * sends and takes, and which key each of its links has.
 */
#ifndef XEVB_LIB_CTL_H
#define XEVB_LIB_CTL_H

#include <netinet/in.h>
#include "internal.h"
#include "shared/xl_ctl_auth.h"
#include "shared/xl_ctl_proto.h"
#include "shared/xl_ctl_sock.h"

/* RECEIVED records in one datagram, sealed or not: xl_ctl_max_recs(XEVB_CTL_RECEIVED) */
#define XL_CTL_RECV_MAX ((XEVB_CTL_MAX_LEN - XEVB_CTL_TRAILER_LEN - XEVB_CTL_HLEN) / XEVB_CTL_RECEIVED_RLEN)

/* A configured peer (run configuration): who may send to us. */
struct xl_member {
	uint32_t addr; /* network order */
	uint16_t port; /* host order */
	uint8_t role;
	uint16_t id;
};

/* The run key of our link with builder id (KDF(our member key, builder id), run), derived once. */
struct xl_link {
	bool used;
	uint16_t id;
	uint8_t k[XEVB_CTL_KEY_LEN];
};
#define XL_CTL_LINKS 64

struct xl_ctl {
	int fd;
	uint16_t id, port; /* port: ours, network order */
	uint32_t epoch, seq;
	bool keyed;
	uint8_t key[XEVB_CTL_KEY_LEN]; /* the run's master key, or (member_role) our member key */
	uint8_t member_role;           /* 0: key is the master */
	uint16_t member_id;
	uint32_t run;                   /* the run number the keys are bound to (0: 1) */
	uint8_t own[XEVB_CTL_KEY_LEN];  /* our run key: our link with the DFM */
	uint8_t core[XEVB_CTL_KEY_LEN]; /* with the master: the core's run key, also taken */
	uint8_t mine[XEVB_CTL_KEY_LEN]; /* our member key, whence our links with the builders */
	struct xl_link links[XL_CTL_LINKS];
	struct xevb_ctl_peer_seen peers[XEVB_CTL_AUTH_PEERS]; /* the replay window of each sender incarnation */
	const struct xl_member *members;                      /* NULL: open membership */
	uint32_t n_members;
	uint64_t tx, tx_err, refused, unexpected, auth_warn_ns;
	uint64_t refused_by[XEVB_CTL_REFUSED_SLOTS]; /* refused by reason (enum xevb_ctl_err = XEVB_CTL_REFUSED_*) */
	uint64_t wrong_role; /* of unexpected: a type the sender's role does not send us (not_from_dfm: the rest) */
	int64_t clock_off_ns; /* XEVB_TEST_CLOCK_OFFSET_MS (test only): our clock, as the control messages see it, off by this */
	struct xl_log *log;
};

/* Bind addr:port (network order addr, host order port; 0 any). 0, or -errno with err. */
int xl_ctl_open(struct xl_ctl *c, uint32_t addr, uint16_t port, uint16_t id, char *err, size_t errlen);
void xl_ctl_close(struct xl_ctl *c);
/*
 * The key file: the run's master key (exactly 32 random bytes, or exactly
 * 64 hex digits and an optional newline) or our member key
 * ("xevb-member-key sink ID HEX64", `xevb key derive`), checked first
 * (trusted.h). 0, or -errno with err.
 */
int xl_ctl_load_key(struct xl_ctl *c, const char *path, char *err, size_t errlen);
/*
 * Derive our run keys (after xl_ctl_open and xl_ctl_load_key): 0, or
 * -EINVAL with err when the key file is another member's.
 */
int xl_ctl_bind(struct xl_ctl *c, char *err, size_t errlen);
/* Send STATUS, or RECEIVED with n records, to to. 0 or -1 (counted). */
/* STATUS to builder (its id: the key of our link with it). */
int xl_ctl_send_status(struct xl_ctl *c, const struct sockaddr_in *to, uint16_t builder,
		       const struct xevb_ctl_status *s);
int xl_ctl_send_received(struct xl_ctl *c, const struct sockaddr_in *to, const struct xevb_ctl_received *r,
			 uint32_t n);
/*
 * The next message a farm node takes (a builder's STATUS, the DFM's BYE), without
 * blocking: 1 with h, s and from filled, 0 when none is left. Everything
 * else is counted (refused or unexpected) and skipped.
 */
int xl_ctl_recv(struct xl_ctl *c, struct xevb_ctl_hdr *h, struct xevb_ctl_status *s, struct sockaddr_in *from);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A control-protocol endpoint: one non-blocking UDP socket, our header
 * fields (role, id, epoch, sequence) and the counters of what came in:
 * refused messages by reason, unexpected ones, sequence gaps.
 */
#ifndef XEVB_CTL_SOCK_H
#define XEVB_CTL_SOCK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ctl/ctl_proto.h"

struct xevb_ctl_auth;
struct xevb_ctl_txq;
struct xevb_ctl_rxq;

/*
 * Membership (a run configuration, docs/control-protocol.md): a message is
 * admitted only when its sender's address and port are a configured
 * peer's, with that peer's role and id (and, in a source's STATUS, its
 * source-id range). Without a table every valid message is admitted.
 */
enum xevb_ctl_admit {
	XEVB_ADMIT_OK = 0,
	XEVB_ADMIT_NOT_MEMBER,    /* no configured peer at that address:port */
	XEVB_ADMIT_ROLE_MISMATCH, /* the peer there has another role */
	XEVB_ADMIT_ID_MISMATCH,   /* right role, another sender_id */
	XEVB_ADMIT_IDS_MISMATCH,  /* a source's STATUS names other source ids */
	XEVB_ADMIT__COUNT
};

struct xevb_ctl_member {
	uint32_t addr; /* network order */
	uint16_t port; /* host order */
	uint8_t role;
	uint16_t id;
	uint16_t first_id, n_ids; /* sources: their source-id range */
};

struct peer_map;
struct xevb_ctl_members {
	const struct xevb_ctl_member *m;
	uint32_t n;
	const struct peer_map *map; /* m's index by peer_key(addr, port), or NULL: scan m */
};

/* The verdict on message m from sender; members NULL admits everything. */
struct xevb_ctl_io;

enum xevb_ctl_admit xevb_ctl_admit(const struct xevb_ctl_members *members, const struct sockaddr_in *sender,
				   const struct xevb_ctl_msg *m);
const char *xevb_ctl_admit_name(enum xevb_ctl_admit a);
/* {"membership":"configured"|"open","not_member":N,...}: what io refused by membership. */
void xevb_ctl_admit_json(const struct xevb_ctl_io *io, FILE *f);
/* Every endpoint opened after this call admits only these members (the process's run configuration). */
void xevb_ctl_set_members(const struct xevb_ctl_members *members);

/*
 * Messages that passed the MAC and the membership but that the receiver's
 * rules drop, by reason (xevb_ctl_dropped; JSON "ctl_dropped").
 */
enum xevb_ctl_drop {
	XEVB_CTL_DROP_NOT_FROM_DFM, /* the DFM's role, not from the DFM's address and port */
	XEVB_CTL_DROP_WRONG_ROLE,   /* a role that does not send us that type */
	XEVB_CTL_DROP_WRONG_EPOCH, /* about or from another incarnation (a farm node's STATUS; a builder's DONE) */
	XEVB_CTL_DROP_UNKNOWN_PEER, /* from an address that is none of our peers (a DONE from no builder) */
	XEVB_CTL_DROP__COUNT
};

/* A peer heard at an address: whose run key seals what we send there (found before the configuration's list). */
struct xevb_ctl_learned {
	uint32_t addr; /* network order; 0: free */
	uint16_t port; /* network order */
	uint8_t role;
	uint16_t id;
};
#define XEVB_CTL_LEARNED 1024

struct xevb_ctl_io {
	int fd;
	uint8_t role;
	uint16_t id;
	uint32_t epoch;
	uint32_t seq;
	uint64_t tx, tx_err, rx, rx_bad[XEVB_CTL_E__COUNT], rx_bad_total, rx_unexpected;
	uint64_t tx_type[XEVB_CTL__TYPES], rx_type[XEVB_CTL__TYPES];
	struct xevb_ctl_auth *auth;             /* a key: every message sealed and checked (ctl_auth.h) */
	uint16_t port;                          /* ours, network order (what sealed messages to us name) */
	uint64_t auth_warn_ns;                  /* last refusal logged (one a second at most) */
	const struct xevb_ctl_members *members; /* NULL: open membership */
	uint64_t rx_refused[XEVB_ADMIT__COUNT], rx_refused_total;
	uint64_t refused_logged, refused_log_ns;
	uint64_t unreachable; /* ICMP port unreachable for what we sent (xevb_ctl_unreachable) */
	uint32_t test_drop;   /* XEVB_TEST_CTL_DROP (test only): drop every N-th datagram sent */
	uint64_t test_seen, test_dropped;
	/* Tests and fuzzers (no socket, fd -1): what would be sent goes here instead. */
	void (*tx_hook)(void *ctx, const struct sockaddr_in *to, const uint8_t *buf, size_t len);
	void *tx_ctx;
	struct xevb_ctl_learned learned[XEVB_CTL_LEARNED];
	uint64_t tx_no_key; /* not sent: a member key holds no key for that link */
	uint64_t rx_dropped[XEVB_CTL_DROP__COUNT];
	/* Batches (ctl_batch.h), or NULL: one system call per datagram. */
	struct xevb_ctl_txq *txq;
	struct xevb_ctl_rxq *rxq;
};

/*
 * Who is at to, as far as io knows: a peer heard from there (or named in a
 * SOURCES record), a configured member; role 0: not known.
 */
void xevb_ctl_peer_of(const struct xevb_ctl_io *io, const struct sockaddr_in *to, uint8_t *role, uint16_t *id);
/* Count a message dropped after it was taken (xevb_ctl_recv returned it). */
void xevb_ctl_dropped(struct xevb_ctl_io *io, enum xevb_ctl_drop why);
/* "unknown_peer", ...: a drop reason's name (JSON key, metric label). */
const char *xevb_ctl_drop_name(enum xevb_ctl_drop why);
/* "ctl_refused_by_reason":{...},"ctl_dropped":{...}: io's refusals and drops, every reason. */
void xevb_ctl_refused_json(const struct xevb_ctl_io *io, FILE *f);

/* "198.18.4.1:23901" -> sa; -1 (no message) when it is not ADDR:PORT. */
int xevb_ctl_parse_addr(const char *s, struct sockaddr_in *sa);
/* Bind to addr:port (network order addr, host order port; 0: any). -1 + message. */
int xevb_ctl_open(struct xevb_ctl_io *io, uint32_t addr, uint16_t port, uint8_t role, uint16_t id);
void xevb_ctl_close(struct xevb_ctl_io *io);
/*
 * An endpoint without a socket (tests, fuzzers): the header fields, the
 * membership and key of xevb_ctl_open; sends go to tx_hook (set it after).
 * 0, or -1 after a message.
 */
int xevb_ctl_init(struct xevb_ctl_io *io, uint8_t role, uint16_t id);
/*
 * Authenticate every message from now on with the key in path (after
 * xevb_ctl_open). 0, or -1 after a message.
 */
int xevb_ctl_use_key(struct xevb_ctl_io *io, const char *path);
/*
 * --key-file: every endpoint opened from now on authenticates (0, or -1
 * after a message). The file is the run's master key, or the member key
 * of this process (sources and farm nodes), or its key bundle (builders:
 * ctl_auth.h).
 */
int xevb_ctl_set_key_file(const char *path);
/* Is that key file (role, id)'s (checked at start, a usage error)? 0, or -1 after a message naming both. */
int xevb_ctl_key_for(uint8_t role, uint16_t id);
/* Is that key file the run's master (which seals as anyone)? */
bool xevb_ctl_key_is_master(void);
/* The run number every endpoint opened from now on binds its keys to (default 1). */
void xevb_ctl_set_run(uint32_t run);
/* Fill m's header (role, id, epoch, seq) and send it. 0, or -1 (counted). */
int xevb_ctl_send(struct xevb_ctl_io *io, const struct sockaddr_in *to, struct xevb_ctl_msg *m);
/*
 * The next valid message, without blocking: 1 with m and from filled, 0
 * when nothing is left. Refused datagrams are counted and skipped.
 */
int xevb_ctl_recv(struct xevb_ctl_io *io, struct xevb_ctl_msg *m, struct sockaddr_in *from);
/*
 * One datagram buf[0..n) from from, sent to dst (network order), as
 * xevb_ctl_recv judges it: decoded (and with a key opened), admitted by
 * membership, counted. 1 with m filled, 0 when refused.
 */
int xevb_ctl_take(struct xevb_ctl_io *io, uint8_t *buf, size_t n, uint32_t dst, const struct sockaddr_in *from,
		  struct xevb_ctl_msg *m);
/*
 * Ask the kernel for the ICMP errors our datagrams meet (IP_RECVERR): a
 * peer's process that is gone makes its host answer port unreachable.
 * 0, or -1 (errno).
 */
int xevb_ctl_watch_unreachable(struct xevb_ctl_io *io);
/*
 * The next port unreachable from the error queue, without blocking: 1 with
 * to = where the datagram that met it was sent, 0 when none is left.
 */
int xevb_ctl_unreachable(struct xevb_ctl_io *io, struct sockaddr_in *to);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Control protocol, version 1 (docs/control-protocol.md): event assignment,
 * credits, Busy / not-Busy, DONE, clears and data requests between the
 * data-flow manager, builders, sources and farm nodes. One message per UDP
 * datagram: a 20-byte header, then n_recs fixed-size records of the type
 * (ROUTE: a fixed prefix before its records).
 *
 * The decoder is strict: every header field and every record field is
 * checked, the datagram length must be exactly header + records, and a
 * message that breaks a rule is refused whole with a reason (counted by the
 * receivers). Nothing here allocates or keeps state.
 *
 * One codec (lib/ctl_proto.c) for libxevb's farm node and the xevb tools
 * (user/ctl/ctl_proto.h names it for them). lib/shared/: see xl_trusted.h.
 * The wire's types keep the names the tools and the protocol's document
 * give them; the functions are xl_ (hidden in libxevb.so).
 */
#ifndef XEVB_LIB_CTL_PROTO_H
#define XEVB_LIB_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XEVB_CTL_MAGIC   0x5843 /* "XC" */
#define XEVB_CTL_VERSION 1
#define XEVB_CTL_HLEN    20
#define XEVB_CTL_MAX_LEN 1472 /* one datagram in a 1500-byte MTU */

#define XEVB_CTL_DFM_PORT     23901
#define XEVB_CTL_BUILDER_PORT 23902
#define XEVB_CTL_SOURCE_PORT  23903
#define XEVB_CTL_SINK_PORT    23904

enum xevb_ctl_type {
	XEVB_CTL_STATUS = 1, /* heartbeat: credits, Busy, done count (any role) */
	XEVB_CTL_ASSIGN,     /* DFM -> builder (and sources in push mode) */
	XEVB_CTL_DONE,       /* builder -> DFM: events finished */
	XEVB_CTL_CLEAR,      /* DFM -> sources: event ranges they may release */
	XEVB_CTL_REQUEST,    /* builder -> source: send these events' fragments */
	XEVB_CTL_SOURCES,    /* DFM -> builder: the source processes it knows */
	XEVB_CTL_BYE,        /* the sender leaves cleanly (no records) */
	XEVB_CTL_RECEIVED,   /* farm node -> DFM: events received per builder */
	XEVB_CTL_BUILDERS,   /* DFM -> sources: the builders it knows (whose REQUESTs to answer) */
	XEVB_CTL_FORWARDED,  /* builder -> DFM: events it sent per farm node */
	XEVB_CTL_ROUTE,      /* DFM -> sources (push): consecutive blocks and their builders' ids */
	XEVB_CTL__TYPES
};

enum xevb_ctl_role { XEVB_ROLE_DFM = 1, XEVB_ROLE_BUILDER, XEVB_ROLE_SOURCE, XEVB_ROLE_SINK, XEVB_ROLE__COUNT };

/* STATUS flags */
#define XEVB_CTL_ST_BUSY 0x1
#define XEVB_CTL_ST_PULL 0x2 /* DFM: the run is in pull mode */
/* DFM -> source: done_total is a mark W (an event id): every event before W
   (serial order) is cleared, whether or not its CLEAR arrived. */
#define XEVB_CTL_ST_CLEARED 0x4
/* Builder -> DFM: its control port takes TCP connections too. The DFM
   checks a silent builder's host with a handshake its kernel answers
   even while the process is not scheduled: a starved builder is not taken
   for dead, a gone process (refused) or host (no answer) is. */
#define XEVB_CTL_ST_LISTEN 0x8
#define XEVB_CTL_ST_KNOWN  (XEVB_CTL_ST_BUSY | XEVB_CTL_ST_PULL | XEVB_CTL_ST_CLEARED | XEVB_CTL_ST_LISTEN)
/* ASSIGN flags */
#define XEVB_CTL_AS_PULL     0x1 /* the builder requests the fragments */
#define XEVB_CTL_AS_REASSIGN 0x2 /* the event's first builder died */
#define XEVB_CTL_AS_RETRY    0x4 /* the same assignment again (no DONE yet) */
#define XEVB_CTL_AS_KNOWN    0x7
/* REQUEST flags */
#define XEVB_CTL_RQ_REASK 0x1
#define XEVB_CTL_RQ_KNOWN 0x1

/* DONE status */
enum xevb_ctl_done_status {
	XEVB_DONE_COMPLETE = 0,
	XEVB_DONE_INCOMPLETE,
	XEVB_DONE_NO_DATA, /* no fragment arrived even after the re-asks */
	XEVB_DONE__COUNT
};

/* Why a datagram was refused. */
enum xevb_ctl_err {
	XEVB_CTL_OK = 0,
	XEVB_CTL_E_SHORT, /* shorter than the header */
	XEVB_CTL_E_MAGIC,
	XEVB_CTL_E_VERSION,
	XEVB_CTL_E_TYPE,     /* unknown type */
	XEVB_CTL_E_ROLE,     /* unknown role, or a role that may not send the type */
	XEVB_CTL_E_RESERVED, /* a reserved header field not zero */
	XEVB_CTL_E_EPOCH,    /* epoch 0 */
	XEVB_CTL_E_LENGTH,   /* length is not header + n_recs records */
	XEVB_CTL_E_COUNT,    /* n_recs out of range for the type */
	XEVB_CTL_E_FIELD,    /* a record field out of range, or reserved bits set */
	/* authentication (ctl_auth.h) */
	XEVB_CTL_E_UNAUTH,     /* version 1 (no MAC), and this run has a key */
	XEVB_CTL_E_NO_KEY,     /* sealed (a MAC), and we have no key */
	XEVB_CTL_E_MAC,        /* the MAC does not match: forged, altered or another key */
	XEVB_CTL_E_STALE,      /* stamped outside our clock window */
	XEVB_CTL_E_REPLAY,     /* already taken, or from an epoch before the sender's current one */
	XEVB_CTL_E_SEQ_JUMP,   /* the sequence number jumps too far ahead of the sender's newest */
	XEVB_CTL_E_WRONG_ROLE, /* a role that never sends to ours (an edge member to an edge member) */
	XEVB_CTL_E__COUNT,
	/* libxevb's farm node counts the membership refusal with the others (the tools count it apart) */
	XEVB_CTL_E_NOT_MEMBER = XEVB_CTL_E__COUNT
};

struct xevb_ctl_hdr {
	uint8_t type;
	uint8_t role;
	uint16_t sender_id;
	uint32_t epoch; /* sender's incarnation, never 0: a restart changes it */
	uint32_t seq;   /* per sender, +1 per message: gaps count lost messages */
	uint16_t n_recs;
};

struct xevb_ctl_status {
	uint32_t credits;    /* events the sender can take (builder: from the DFM;
				sink: from each builder; source: events it can hold) */
	uint32_t flags;      /* XEVB_CTL_ST_* */
	uint64_t done_total; /* builder: events finished; sink: events received
				from the addressee; source: events answered */
	uint32_t peer_epoch; /* the addressee's epoch as last heard, 0: none */
	uint32_t load;       /* events held now (what Busy is judged on) */
	uint16_t first_id;   /* source: its source_ids are first_id .. +n_ids-1 */
	uint16_t n_ids;      /* 0 for other roles */
};

struct xevb_ctl_assign {
	uint32_t first_event;
	uint16_t count;        /* 1..1024 consecutive event_ids */
	uint8_t flags;         /* XEVB_CTL_AS_* */
	uint32_t builder_addr; /* IPv4, network order: where fragments go */
	uint16_t builder_id;
	uint32_t run;
};

struct xevb_ctl_done {
	uint32_t event_id;
	uint16_t n_missing;
	uint8_t status; /* enum xevb_ctl_done_status */
};

struct xevb_ctl_range { /* CLEAR */
	uint32_t first_event;
	uint32_t count; /* 1..65536 */
};

struct xevb_ctl_request {
	uint32_t first_event;
	uint16_t count; /* 1..1024 */
	uint8_t flags;  /* XEVB_CTL_RQ_* */
};

/* RECEIVED: what a farm node got from one builder address since it started. */
struct xevb_ctl_received {
	uint32_t builder_addr; /* IPv4, network order, non-zero */
	uint64_t events;       /* cumulative: a lost or reordered report costs nothing */
};

/*
 * FORWARDED: what a builder sent to the farm nodes at one IPv4 address
 * since it started (written whole to their connections, less what it
 * knows was lost with a broken one). Same layout as RECEIVED.
 */
struct xevb_ctl_forwarded {
	uint32_t sink_addr; /* IPv4, network order, non-zero */
	uint64_t events;    /* cumulative */
};

/*
 * ROUTE (push): blocks of `block` events each, the first from first_event,
 * block k to the builder the BUILDERS list names by route index id[k]; a 12-byte
 * prefix, then n_recs ids of 2 bytes. One datagram carries 708 blocks
 * (sealed) where ASSIGN carried 72: the sources' copy of the assignments
 * no longer costs a datagram per source every few blocks.
 */
#define XEVB_CTL_ROUTE_PREFIX   12
#define XEVB_CTL_ROUTE_MAX_RECS ((XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN - XEVB_CTL_ROUTE_PREFIX) / 2)
struct xevb_ctl_route {
	uint32_t first_event;
	uint16_t block; /* events per block, 1..1024 */
	uint32_t run;
	uint16_t id[XEVB_CTL_ROUTE_MAX_RECS]; /* builders' route indexes, as BUILDERS gives them */
};

/* BUILDERS: one builder the DFM knows. */
struct xevb_ctl_bldinfo {
	uint32_t addr; /* IPv4, network order, non-zero */
	uint16_t port; /* its control port, non-zero */
	uint16_t id;   /* its route index: the DFM's number for it, which ROUTE names */
};

struct xevb_ctl_srcinfo {
	uint32_t addr; /* IPv4, network order */
	uint16_t port; /* its control port */
	uint16_t first_id;
	uint16_t n_ids; /* 1..4096, first_id + n_ids - 1 <= 4095 */
};

#define XEVB_CTL_STATUS_RLEN    28
#define XEVB_CTL_ASSIGN_RLEN    20
#define XEVB_CTL_DONE_RLEN      8
#define XEVB_CTL_CLEAR_RLEN     8
#define XEVB_CTL_REQUEST_RLEN   8
#define XEVB_CTL_SRC_RLEN       12
#define XEVB_CTL_RECEIVED_RLEN  16
#define XEVB_CTL_BLD_RLEN       8
#define XEVB_CTL_FORWARDED_RLEN 16
#define XEVB_CTL_ROUTE_RLEN     2 /* after the prefix */
/* The most records of the smallest kind one datagram holds. */
#define XEVB_CTL_MAX_RECS ((XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN) / 8)

struct xevb_ctl_msg {
	struct xevb_ctl_hdr h;
	union {
		struct xevb_ctl_status status;
		struct xevb_ctl_assign assign[(XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN) / XEVB_CTL_ASSIGN_RLEN];
		struct xevb_ctl_done done[XEVB_CTL_MAX_RECS];
		struct xevb_ctl_range clear[XEVB_CTL_MAX_RECS];
		struct xevb_ctl_request request[XEVB_CTL_MAX_RECS];
		struct xevb_ctl_srcinfo src[(XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN) / XEVB_CTL_SRC_RLEN];
		struct xevb_ctl_received received[(XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN) / XEVB_CTL_RECEIVED_RLEN];
		struct xevb_ctl_bldinfo builders[XEVB_CTL_MAX_RECS];
		struct xevb_ctl_forwarded forwarded[(XEVB_CTL_MAX_LEN - XEVB_CTL_HLEN) / XEVB_CTL_FORWARDED_RLEN];
		struct xevb_ctl_route route;
	} u;
};

/*
 * Records of type t a sender puts in one datagram at most (0 for BYE):
 * room is left for the authentication trailer, keyed or not.
 */
uint32_t xl_ctl_max_recs(uint8_t type);

/* Decode and validate; XEVB_CTL_OK or the reason it was refused. */
enum xevb_ctl_err xl_ctl_decode(const uint8_t *buf, size_t len, struct xevb_ctl_msg *m);

/*
 * Encode m (h.n_recs records of h.type from m->u) into buf; returns the
 * length, or 0 when it would break a rule the decoder checks (so nothing
 * we send is refused by a peer) or does not fit cap.
 */
size_t xl_ctl_encode(const struct xevb_ctl_msg *m, uint8_t *buf, size_t cap);

/* "bad_mac", ... for XEVB_CTL_OK .. XEVB_CTL_E_NOT_MEMBER; "?" beyond. */
const char *xl_ctl_err_name(enum xevb_ctl_err e);
const char *xl_ctl_type_name(uint8_t t);
const char *xl_ctl_role_name(uint8_t r);

#endif

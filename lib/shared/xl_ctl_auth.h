/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sealed control messages (docs/control-protocol.md, "Authentication" and
 * "Keys"): the key files' text, the key schedule, the MAC and the replay
 * window. One implementation (lib/ctl_auth.c) for libxevb's farm node
 * (lib/ctl.c) and the xevb tools (user/ctl/ctl_auth.c), which each choose
 * the key of a link their own way. lib/shared/: see xl_trusted.h.
 *
 * A sealed (version-3) message is the version-1 header and records, then a
 * 24-byte trailer: the sender's wall-clock time (ns, big-endian) and a
 * 16-byte keyed BLAKE2b MAC (libsodium's crypto_generichash) under the key
 * of the link and run over the datagram's destination (IPv4 address and
 * port) and everything before the MAC, so that a message captured on its
 * way to one peer does not open at another.
 */
#ifndef XEVB_LIB_CTL_AUTH_H
#define XEVB_LIB_CTL_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include "xl_ctl_proto.h"

#define XEVB_CTL_VERSION_AUTH 3 /* 2 was one key for every member and every run */
#define XEVB_CTL_KEY_LEN      32
#define XEVB_CTL_MAC_LEN      16
#define XEVB_CTL_TRAILER_LEN  (8 + XEVB_CTL_MAC_LEN)
#define XEVB_CTL_AUTH_PEERS   256 /* sender incarnations remembered for replay checks */
#define XEVB_CTL_AUTH_SKEW_NS (5ull * 1000000000ull)
/* How far a sender's sequence number may move ahead of the newest taken:
   this many, plus one per microsecond of stamp time since then. */
#define XEVB_CTL_SEQ_JUMP_MAX 65536u
#define XEVB_CTL_RUN_DEFAULT  1u /* the run number every command defaults to */

/* A member key file: "xevb-member-key ROLE ID HEX64" and a newline. */
#define XEVB_MEMBER_KEY_TAG "xevb-member-key"
/* A builder's key bundle starts so (user/ctl/ctl_auth.h). */
#define XEVB_BUNDLE_TAG "xevb-key-bundle"

struct xevb_ctl_peer_seen {
	uint8_t used, role;
	uint16_t id;
	uint32_t epoch;
	uint64_t last_ts; /* stamp of the newest message (eviction order) */
	uint32_t top_seq; /* highest sequence number taken */
	uint64_t seen;    /* bit i: top_seq - i taken */
};

/*
 * A master key file's bytes, one form per length so that no file reads two
 * ways: exactly 32 bytes are the key, unless all are text (a passphrase,
 * or 32 hex digits); exactly 64 hex digits, a newline after them allowed,
 * are the key in hex; nothing else is a key, nor one byte repeated (all
 * zero). 0, or -EINVAL with what is wrong in why.
 */
int xl_ctl_key_parse(const uint8_t *b, size_t n, uint8_t key[XEVB_CTL_KEY_LEN], char *why, size_t wl);
/*
 * "xevb-member-key source|sink ID HEX64" and an optional newline: the
 * member key of (role, id). 0, or -EINVAL (-EMSGSIZE: too long to be one)
 * with what is wrong in why.
 */
int xl_ctl_member_parse(const uint8_t *b, size_t n, uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *role, uint16_t *id,
			char *why, size_t wl);

/* The keys: S = KDF(M, role, id), what `xevb key derive` writes. */
void xl_ctl_member_key(const uint8_t master[XEVB_CTL_KEY_LEN], uint8_t role, uint16_t id,
		       uint8_t out[XEVB_CTL_KEY_LEN]);
/* The link key of edge member e (its member key S_e) with builder b: KDF(S_e, builder, b). */
void xl_ctl_link_key(const uint8_t edge_key[XEVB_CTL_KEY_LEN], uint16_t builder_id, uint8_t out[XEVB_CTL_KEY_LEN]);
/* A link's key in run: KDF(k, run). */
void xl_ctl_run_key(const uint8_t k[XEVB_CTL_KEY_LEN], uint32_t run, uint8_t out[XEVB_CTL_KEY_LEN]);
/* The core's key in run, which only holders of the master have: KDF(KDF(M, core), run). */
void xl_ctl_core_key(const uint8_t master[XEVB_CTL_KEY_LEN], uint32_t run, uint8_t out[XEVB_CTL_KEY_LEN]);

/*
 * Seal the version-1 message buf[0..len) in place under key for dst_addr:
 * dst_port (network order), stamped now_ns: the new length, or 0 when cap
 * has no room for the trailer.
 */
size_t xl_ctl_seal(const uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
		   uint16_t dst_port, uint64_t now_ns);
/*
 * The MAC of the sealed buf[0..len) (len >= header + trailer), received at
 * dst_addr:dst_port, under key or else alt (NULL: none): XEVB_CTL_OK or
 * XEVB_CTL_E_MAC.
 */
enum xevb_ctl_err xl_ctl_mac_check(const uint8_t key[XEVB_CTL_KEY_LEN], const uint8_t *alt, const uint8_t *buf,
				   size_t len, uint32_t dst_addr, uint16_t dst_port);
/*
 * After the MAC: the stamp within skew_ns of now_ns, the body (decoded
 * into m), then the sender incarnation's sequence number against peers
 * (a window of the last 64, and no jump further ahead than it could have
 * sent). XEVB_CTL_OK (taken), or why it was refused.
 */
enum xevb_ctl_err xl_ctl_unseal(struct xevb_ctl_peer_seen peers[XEVB_CTL_AUTH_PEERS], uint8_t *buf, size_t len,
				uint64_t now_ns, uint64_t skew_ns, struct xevb_ctl_msg *m);

#endif

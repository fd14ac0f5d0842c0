/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Authenticated control messages (docs/control-protocol.md, "Authentication").
 *
 * With a per-run key, every datagram is a version-2 message: the version-1
 * header and records, then a 24-byte trailer: the sender's wall-clock time
 * (ns, big-endian) and a 16-byte keyed BLAKE2b MAC (libsodium's
 * crypto_generichash) over the datagram's destination (IPv4 address and
 * port) and everything before the MAC, so a message captured on its way to
 * one peer does not open at another. The receiver refuses what fails the
 * MAC, what is stamped outside its clock window, and what it has taken
 * already: per sender incarnation (role, id, epoch) a window of the last 64
 * sequence numbers, wherever the copy comes from.
 *
 * Nothing here touches a socket; xevb_ctl_send / xevb_ctl_recv use it.
 */
#ifndef XEVB_CTL_AUTH_H
#define XEVB_CTL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"

#define XEVB_CTL_VERSION_AUTH 2
#define XEVB_CTL_KEY_LEN      32
#define XEVB_CTL_MAC_LEN      16
#define XEVB_CTL_TRAILER_LEN  (8 + XEVB_CTL_MAC_LEN)
#define XEVB_CTL_AUTH_PEERS   256 /* senders remembered for replay checks */
#define XEVB_CTL_AUTH_SKEW_NS (5ull * 1000000000ull)

struct xevb_ctl_peer_seen {
	uint8_t used, role;
	uint16_t id;
	uint32_t epoch;
	uint64_t last_ts; /* stamp of the newest message (eviction order) */
	uint32_t top_seq; /* highest sequence number taken */
	uint64_t seen;    /* bit i: top_seq - i taken */
};

struct xevb_ctl_auth {
	uint8_t key[XEVB_CTL_KEY_LEN];
	uint64_t skew_ns; /* accepted |now - stamp| */
	struct xevb_ctl_peer_seen peers[XEVB_CTL_AUTH_PEERS];
};

/*
 * Load a key file: exactly 32 random bytes, or exactly 64 hex digits and an
 * optional newline; nothing else (32 bytes of text, a repeated byte such as
 * all zero, other lengths are refused). The file itself is checked first
 * (trusted_file.h: a regular file, not a link, ours or root's, mode 600 or
 * stricter). 0, or -1 after a message that names the file, what is wrong
 * and how to make one.
 */
int xevb_ctl_auth_load(struct xevb_ctl_auth *a, const char *path);
/* The same without printing: the key's bytes, or -1 with that message in err. */
int xevb_ctl_key_read(const char *path, uint8_t key[XEVB_CTL_KEY_LEN], char *err, size_t len);
/* Use these key bytes (tests, benchmarks). */
void xevb_ctl_auth_init(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN]);

/*
 * Seal the version-1 message buf[0..len) in place as version 2 for the
 * destination dst_addr:dst_port (network order), stamped now_ns: returns
 * the new length, or 0 when cap has no room for the trailer.
 */
size_t xevb_ctl_auth_seal(const struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			  uint16_t dst_port, uint64_t now_ns);

/*
 * Check a version-2 datagram received at dst_addr:dst_port (network order:
 * the address it was sent to, our port): the MAC, the stamp, then the body
 * (decoded into m). XEVB_CTL_OK, or why it was refused. On OK the sender's
 * replay state has taken the message.
 */
enum xevb_ctl_err xevb_ctl_auth_open(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, uint32_t dst_addr,
				     uint16_t dst_port, uint64_t now_ns, struct xevb_ctl_msg *m);

/* Wall-clock ns (the stamps compare across hosts: keep them in NTP sync). */
uint64_t xevb_ctl_auth_now(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Authenticated control messages (docs/control-protocol.md, "Authentication").
 *
 * With a key, every datagram is a sealed (version-3) message (the trailer,
 * the MAC and the replay window: libxevb's lib/shared/xl_ctl_auth.h, one
 * implementation for the farm node and the tools). Here the tools' keys:
 * which key each link has, as the master, a member or a builder's bundle
 * holds it. The receiver refuses what fails the MAC, what is stamped
 * outside its clock window, and what it has taken already: per sender
 * incarnation (role, id, epoch) a window of the last 64 sequence numbers,
 * wherever the copy comes from, and a sequence number that jumps too far
 * ahead.
 *
 * Nothing here touches a socket; xevb_ctl_send / xevb_ctl_recv use it.
 */
#ifndef XEVB_CTL_AUTH_H
#define XEVB_CTL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ctl/ctl_proto.h"
#include "xl_ctl_auth.h"

#define XEVB_CTL_AUTH_KEYS 256 /* members' run keys kept derived */

/*
 * A builder's key bundle: "xevb-key-bundle builder ID HEX64" (its member
 * key), one "link source|sink ID HEX64" per edge member it talks to (the
 * link key KDF(that member's key, builder ID)), then "end N" (N links), each
 * line ending in a newline. `xevb key derive --role builder --config` writes it.
 */
#define XEVB_BUNDLE_MAX  8192 /* links: every source process and farm node of a run configuration */
#define XEVB_BUNDLE_LINE 160  /* the longest line of a bundle */

struct xevb_ctl_run_key {
	uint8_t used, role;
	uint16_t id;
	uint8_t k[XEVB_CTL_KEY_LEN];
};

/* A bundle's link key with the edge member (role, id), before the run. */
struct xevb_ctl_link {
	uint8_t role;
	uint16_t id;
	uint8_t k[XEVB_CTL_KEY_LEN];
};

/*
 * The keys (docs/control-protocol.md "Keys"): the run's master key M is
 * held by the DFM (the trust anchor); every other member may hold only its
 * member key S = KDF(M, role, id), a builder with the link keys of the
 * edge members it talks to (a bundle). Every link is a pair's own: the DFM
 * and member m share KDF(S_m, run); edge member e and builder b share
 * KDF(KDF(S_e, b), run); the core key KDF(KDF(M, core), run) only proves
 * the master. So a holder of anything but the master seals only as itself,
 * opens only what is sent to it, and nothing of one run opens in another.
 */
struct xevb_ctl_auth {
	uint8_t key[XEVB_CTL_KEY_LEN]; /* M, or (member) S */
	uint8_t member_role;           /* 0: key is the master; else the member key's role */
	uint16_t member_id;
	uint8_t self_role; /* who we are (0: not bound, the DFM) */
	uint16_t self_id;
	uint32_t run;
	uint8_t core[XEVB_CTL_KEY_LEN];    /* master only: the core's run key */
	uint8_t own[XEVB_CTL_KEY_LEN];     /* a member: its run key, the link with the DFM */
	uint8_t scratch[XEVB_CTL_KEY_LEN]; /* a link not of ours (a master sealing as another, tests) */
	uint64_t skew_ns;                  /* accepted |now - stamp| */
	/* A builder's bundle, sorted by role and id: shared by copies of this struct, kept for the process. */
	const struct xevb_ctl_link *links;
	uint32_t n_links;
	struct xevb_ctl_run_key keys[XEVB_CTL_AUTH_KEYS]; /* the run keys of our links, derived once */
	struct xevb_ctl_peer_seen peers[XEVB_CTL_AUTH_PEERS];
};

/* Sources and farm nodes: the members that may hold only their own key. */
static inline bool xevb_ctl_role_edge(uint8_t role)
{
	return role == XEVB_ROLE_SOURCE || role == XEVB_ROLE_SINK;
}

/*
 * Load a key file: the master (exactly 32 random bytes, or exactly 64 hex
 * digits and an optional newline; nothing else: 32 bytes of text, a
 * repeated byte such as all zero, other lengths are refused), a member
 * key (XEVB_MEMBER_KEY_TAG) or a builder's bundle (XEVB_BUNDLE_TAG), both
 * written by `xevb key derive`. The file itself is checked
 * first (trusted_file.h: a regular file, not a link, ours or root's, mode
 * 600 or stricter). 0, or -1 after a message that names the file, what is
 * wrong and how to make one.
 */
int xevb_ctl_auth_load(struct xevb_ctl_auth *a, const char *path);
/*
 * The same without printing: the key's bytes and, for a member key, its
 * role and id (*role 0: the master), or -1 with that message in err (a
 * bundle is refused: xevb_ctl_bundle_parse reads it).
 */
int xevb_ctl_key_file(const char *path, uint8_t key[XEVB_CTL_KEY_LEN], uint8_t *role, uint16_t *id, char *err,
		      size_t len);
/* The master only (a member key is refused). */
int xevb_ctl_key_read(const char *path, uint8_t key[XEVB_CTL_KEY_LEN], char *err, size_t len);
/* Use these master key bytes (tests, benchmarks), unbound, run XEVB_CTL_RUN_DEFAULT. */
void xevb_ctl_auth_init(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN]);
/* Use a member key of (role, id) instead. */
void xevb_ctl_auth_init_member(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN], uint8_t role,
			       uint16_t id);
/* Is the key for (role, id)? 0, or -1 with a message in err naming both and what to give. */
int xevb_ctl_auth_fits(const struct xevb_ctl_auth *a, uint8_t role, uint16_t id, char *err, size_t len);
/*
 * We are (role, id) in run: derive our keys. -1 with a message in err when
 * a member key is of another member, or a member key is given to the core.
 */
int xevb_ctl_auth_bind(struct xevb_ctl_auth *a, uint8_t role, uint16_t id, uint32_t run, char *err, size_t len);
/* S = KDF(M, role, id), what `xevb key derive` writes. */
static inline void xevb_ctl_member_key(const uint8_t master[XEVB_CTL_KEY_LEN], uint8_t role, uint16_t id,
				       uint8_t out[XEVB_CTL_KEY_LEN])
{
	xl_ctl_member_key(master, role, id, out);
}

/* The link key of edge member e (its member key S_e) with builder b: KDF(S_e, builder, b). */
static inline void xevb_ctl_link_key(const uint8_t edge_key[XEVB_CTL_KEY_LEN], uint16_t builder_id,
				     uint8_t out[XEVB_CTL_KEY_LEN])
{
	xl_ctl_link_key(edge_key, builder_id, out);
}
/*
 * Parse a bundle's text b[0..n): the builder's id and member key, and its
 * links (malloc'd, sorted by role and id: free with xevb_ctl_links_free).
 * 0, or -1 with what is wrong and on which line in err (a short or
 * truncated bundle, a role other than a builder's or a link other than a
 * source's or farm node's, a member twice, a repeated-byte key).
 */
int xevb_ctl_bundle_parse(const uint8_t *b, size_t n, uint16_t *id, uint8_t key[XEVB_CTL_KEY_LEN],
			  struct xevb_ctl_link **links, uint32_t *n_links, char *err, size_t len);
void xevb_ctl_links_free(struct xevb_ctl_link *links, uint32_t n);
/* Use a builder's bundle (the links are kept, not copied), unbound, run XEVB_CTL_RUN_DEFAULT. */
void xevb_ctl_auth_init_bundle(struct xevb_ctl_auth *a, const uint8_t key[XEVB_CTL_KEY_LEN], uint16_t id,
			       const struct xevb_ctl_link *links, uint32_t n_links);

/*
 * Seal the version-1 message buf[0..len) in place as a sealed one for the
 * destination dst_addr:dst_port (network order), stamped now_ns: returns
 * the new length, or 0 when cap has no room for the trailer or we hold no
 * key for that link. peer_role/peer_id: who the destination is, when known
 * (0: not known, taken for the core).
 */
size_t xevb_ctl_auth_seal_to(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			     uint16_t dst_port, uint64_t now_ns, uint8_t peer_role, uint16_t peer_id);
size_t xevb_ctl_auth_seal(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, size_t cap, uint32_t dst_addr,
			  uint16_t dst_port, uint64_t now_ns);

/*
 * Check a sealed datagram received at dst_addr:dst_port (network order:
 * the address it was sent to, our port): the MAC under the key of its
 * link, the stamp, the body (decoded into m), then its sequence number.
 * XEVB_CTL_OK, or why it was refused. On OK the sender's replay state has
 * taken the message.
 */
enum xevb_ctl_err xevb_ctl_auth_open(struct xevb_ctl_auth *a, uint8_t *buf, size_t len, uint32_t dst_addr,
				     uint16_t dst_port, uint64_t now_ns, struct xevb_ctl_msg *m);

/* Wall-clock ns (the stamps compare across hosts: keep them in NTP sync). */
uint64_t xevb_ctl_auth_now(void);

#endif

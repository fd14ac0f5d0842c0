/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb build --dfm ADDR:PORT`: the builder's control plane. Grants the
 * DFM credits and reports Busy / not-Busy, takes ASSIGNs, requests the
 * fragments in pull mode and re-asks only the missing sources, reports
 * DONE, and forwards each built event only to a farm node that has credit
 * and is not Busy (holding events in a bounded backlog while none has).
 */
#ifndef XEVB_BUILD_CTL_H
#define XEVB_BUILD_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include "evb/builder.h"
#include "ctl/ctl_sock.h"
#include "out/output.h"

struct build_ctl_cfg {
	const char *dfm;        /* ADDR:PORT */
	uint16_t ctl_port;      /* ours */
	uint16_t sink_ctl_port; /* farm nodes' control port */
	uint16_t id;
	uint32_t credits; /* events the DFM may have outstanding here */
	double busy_high, busy_low;
	uint64_t reask_ns;
	uint32_t max_reasks;
	uint64_t sink_dead_ns;
	uint32_t backlog; /* built events held while no farm node has credit */
	bool fixed_run;   /* --run or [run] number: else the ASSIGNs' run is the core's */
	/*
	 * More builder cores (--workers N): events owned by id block, core w
	 * holding those with xevb_owner(id, owner_shift, n_owners) == w. The
	 * tick steers and scans core 0 (the b it is given); every ASSIGN also
	 * goes to on_assign for the others, and each of them scans its own
	 * events (build_ctl_scan_owner).
	 */
	uint32_t n_owners, owner_shift;
	void (*on_assign)(void *ctx, uint32_t first, uint32_t count, uint32_t run, bool set_run);
	void *assign_ctx;
	/* Tests and fuzzers: no socket; every message we send goes to tx_hook. */
	void (*tx_hook)(void *ctx, const struct sockaddr_in *to, const uint8_t *buf, size_t len);
	void *tx_ctx;
};

struct build_ctl;

struct build_ctl *build_ctl_new(const struct build_ctl_cfg *cfg, struct xevb_output *out);
void build_ctl_free(struct build_ctl *bc);
int build_ctl_fd(const struct build_ctl *bc);
/* Messages in (ASSIGNs also to the core b: its window follows them), heartbeats,
   requests and re-asks, DONE out, backlog drained. */
void build_ctl_tick(struct build_ctl *bc, struct xevb_builder *b, uint64_t now);
/*
 * One message the control endpoint took (build_ctl_io: decoded, opened,
 * admitted), from from, as build_ctl_tick handles it. Not while a reset
 * is pending (build_ctl_take_reset).
 */
void build_ctl_on_msg(struct build_ctl *bc, struct xevb_builder *b, const struct xevb_ctl_msg *m,
		      const struct sockaddr_in *from, uint64_t now);
struct xevb_ctl_io *build_ctl_io(struct build_ctl *bc);
/*
 * The books (tests, fuzzers): the event table within its bounds and
 * consistent with the counts of held events, every assigned event of an
 * epoch finished, lost or open, the backlog within its bound. False with
 * what disagrees in msg.
 */
bool build_ctl_check(const struct build_ctl *bc, char *msg, size_t cap);
/*
 * More cores: the re-asks of the events core owner owns, from what its
 * builder b is missing, every scan period (the owner's thread; the caller
 * serialises it with the tick and the emits).
 */
void build_ctl_scan_owner(struct build_ctl *bc, const struct xevb_builder *b, uint32_t owner, uint64_t now);
/* From the builder's emit callback: DONE bookkeeping and forwarding. */
void build_ctl_emit(struct build_ctl *bc, const struct xevb_event *ev);
/* The DFM restarted: the caller starts a fresh builder core (event ids begin again). */
bool build_ctl_take_reset(struct build_ctl *bc);
/* The DFM ended the run and nothing assigned is left open. */
bool build_ctl_finished(const struct build_ctl *bc);
void build_ctl_summary(const struct build_ctl *bc, FILE *f);
/* Events this builder re-asked its sources for. */
uint64_t build_ctl_reasked(const struct build_ctl *bc);
void build_ctl_json(const struct build_ctl *bc, FILE *f);

#endif

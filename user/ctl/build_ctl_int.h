/* SPDX-License-Identifier: GPL-2.0-only */
/* The builder's control plane, inside: shared by build_ctl.c and build_ctl_report.c. */
#ifndef XEVB_BUILD_CTL_INT_H
#define XEVB_BUILD_CTL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "ctl/build_ctl.h"
#include "ctl/build_fwd.h"
#include "ctl/build_lease.h"
#include "ctl/build_req.h"
#include "ctl/ctl_sock.h"
#include "ctl/flowctl.h"
#include "rx/handoff.h"

#define PRE_HOLD_MAX 1024u

enum { E_FREE = 0, E_ASSIGNED, E_DONE, E_FENCED }; /* E_FENCED: given to another builder, dropped here */

struct ev_ent {
	uint32_t event;
	uint8_t state, reasks, status, early;
	uint8_t old; /* assigned by a DFM that has since restarted */
	uint16_t n_missing;
	uint64_t t_assign, t_ask;
};

struct pre_ev { /* an event built before the first ASSIGN (PRE_HOLD_NS) */
	uint8_t *buf;
	size_t len;
	uint64_t t;
	uint32_t event;
	uint16_t n_frags, n_missing;
	uint8_t status;
};

struct build_ctl {
	struct build_ctl_cfg cfg;
	struct xevb_ctl_io io;
	struct sockaddr_in dfm;
	uint32_t dfm_epoch;
	bool pull, bye, reset;
	/* A DFM restart: the old epoch's open events finish here (no DONE: nobody
	   knows them), unless the new DFM numbers events afresh, which needs a
	   fresh core; its first ASSIGN then waits in stash until the reset. */
	bool restart_pending, stash_valid, finalize;
	uint32_t hi_next; /* one past the highest event id assigned */
	struct xevb_ctl_msg stash;
	struct ev_ent *ev;
	uint32_t mask, n_assigned;
	struct build_req req; /* the requests and re-asks to the sources */
	struct build_fwd fwd; /* forwarding by farm-node credit, with the backlog */
	struct xevb_busy busy;
	struct xevb_ctl_msg done;
	struct build_lease lease;          /* DONEs wait here for the lease (build_lease.h) */
	uint64_t fwd_base[XEVB_MAX_SINKS]; /* FORWARDED counts from 0 in each incarnation */
	uint64_t base_fenced;
	uint64_t fence_ns; /* the last fence: what it held waits PRE_HOLD_NS from then */
	uint64_t next_hb, next_sink_hb, last_dfm_ns, last_st_ns;
	uint64_t next_scan[XEVB_HO_MAX_WORKERS]; /* per builder core */
	/* counters */
	uint64_t assigned_events, assign_dups, retry_redone, reask_events;
	uint64_t done_sent[XEVB_DONE__COUNT], unassigned_built, abandoned, dfm_restarts, core_resets;
	uint64_t unexpected, assign_overflow, built_early, table_grown;
	uint64_t built_after_no_data; /* given up as no_data, then built: DONE sent again with the outcome */
	uint64_t assigned_busy;       /* taken while Busy: in flight when it was declared */
	/* Before the first ASSIGN: held, then forwarded or dropped (events, their fragments). */
	bool assigned_once;
	struct pre_ev pre[PRE_HOLD_MAX];
	uint32_t n_pre;
	uint64_t pre_held, pre_forwarded, pre_dropped, pre_dropped_frags;
	/* Pull: built, never requested, dropped (events; their fragments by source: req). */
	uint64_t unsolicited;
	/* Epochs ended by a DFM restart: assigned = done + overflow + open; open =
	   built_complete + built_incomplete + lost_no_data + lost_slot. */
	uint64_t base_assigned, base_done, base_overflow, base_redone, base_after_no_data;
	uint64_t rs_assigned, rs_done, rs_overflow, rs_open, rs_complete, rs_incomplete, rs_no_data, rs_slot;
};

#endif

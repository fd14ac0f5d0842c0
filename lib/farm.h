/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The farm-node handle's insides (farm.c: the handle, the event queue and
 * done(); farm_conn.c: builder connections and their buffers; farm_ctl.c:
 * credits, Busy, STATUS and RECEIVED; runcfg.c: the run configuration).
 *
 * Buffers: each connection reads into a chunk (1 MiB, or one event's size
 * when larger). Whole events are cut out where they lie and handed out as
 * views into the chunk, which counts them; the part of an event at a
 * chunk's end moves to the next chunk, and a chunk is freed when its last
 * event is done and its connection has moved on. So no event is ever
 * copied or moved while the caller holds it, and memory follows what the
 * caller holds: past max_buffer a connection is not read (TCP's window
 * then holds the builder back) until done() frees a chunk.
 */
#ifndef XEVB_LIB_FARM_H
#define XEVB_LIB_FARM_H

#include <netinet/in.h>
#include "ctl.h"

#define XL_CHUNK   (1u << 20)
#define XL_SPARES  8            /* free 1 MiB chunks kept for reuse */
#define XL_HB_NS   100000000ull /* STATUS and RECEIVED beat */
#define XL_PUSH_NS 5000000ull   /* credits back early at most this often */

struct xl_chunk {
	uint32_t refs; /* events in it not done, + 1 while its connection reads into it */
	size_t cap;
	struct xl_chunk *next_spare; /* in farm.spares */
	uint8_t data[];
};

struct xl_conn {
	int fd;
	uint32_t ip; /* network order */
	uint16_t port;
	uint32_t builder, gen; /* its builder, and which of the builder's connections */
	struct xl_chunk *ch;
	size_t head, tail, want; /* unread bytes [head, tail); want: the partial event's length */
	bool paused;             /* not in the epoll set: max_buffer reached */
	uint32_t slot;           /* its place in farm.conns */
	uint64_t partial_since;  /* 0, or since when it holds part of an event */
	uint64_t events;
	char name[32];
};

struct xl_builder {
	uint32_t ip;
	struct sockaddr_in ctl; /* its control address, from its STATUS */
	uint16_t id;            /* its id, from its STATUS (the key of our link with it) */
	bool known;
	uint32_t epoch;
	uint32_t gen; /* its current connection */
	uint32_t conns_open, connections;
	bool ended; /* its last connection closed in order (the end of its stream) */
	uint64_t events, done, conn_done, reported;
};

struct xevb_farm {
	struct xevb_farm_opts o;
	struct xl_check chk; /* each payload's checks in the decoder: CRC, the caller's */
	struct xl_log log;
	int ep, lfd, tfd; /* epoll, listening socket, timer */
	uint16_t port;
	uint32_t addr;
	bool ctl_on;
	struct xl_ctl ctl;
	struct sockaddr_in dfm; /* port 0: no reports */
	struct xl_member *members;
	uint32_t n_members;
	struct xl_conn **conns;
	uint32_t n_conns;
	struct xl_builder *builders;
	uint32_t n_builders, cap_builders;
	struct xl_ev *ready_head, *ready_tail, *free_evs, *all_evs;
	uint64_t ready_n;
	int busy_mode;
	bool busy;
	uint32_t busy_high, busy_low;
	uint64_t next_hb, next_push, timer_ns, next_check;
	bool accept_paused; /* out of descriptors: the listening socket not watched until a connection closes */
	bool closing;       /* in xevb_farm_close: nothing is resumed */
	uint32_t n_paused;  /* connections not read for max_buffer */
	struct xl_chunk *spares; /* free chunks of XL_CHUNK bytes, counted against max_buffer, not in buffer_bytes */
	uint32_t n_spares;
	uint64_t fd_log_ns, max_log_ns; /* when the descriptor and max_conns limits were last said */
	uint64_t seq;
	uint64_t stream_logged, stream_log_ns;
	uint64_t rx_ns;   /* when a builder's connection last had something (after the DFM's end) */
	uint32_t run_end; /* XEVB_END_* */
	struct xevb_farm_stats st;
	char err[XL_ERR_LEN];
};

/* farm_conn.c */
void xl_farm_accept(struct xevb_farm *f);
/* Read what the connection has (a bounded number of reads); may close it. */
void xl_farm_read(struct xevb_farm *f, struct xl_conn *c);
/* Close c; kind (enum xevb_broken) 0: an orderly close, else a broken stream (counted, why logged). */
void xl_farm_conn_close(struct xevb_farm *f, struct xl_conn *c, int kind, const char *why);
/* A chunk's event is done: free the chunk when it was its last reference. */
void xl_chunk_put(struct xevb_farm *f, struct xl_chunk *ch);
/* Free the spare chunks (room is short, or the handle closes). */
void xl_farm_drop_spares(struct xevb_farm *f);
/* Read paused connections again while the buffers have room. */
void xl_farm_resume(struct xevb_farm *f);
/* Once a second: close connections stalled inside an event, accept again after running out of descriptors. */
void xl_farm_check(struct xevb_farm *f, uint64_t now);

/* farm_ctl.c */
/* The builder at ip (added when new); UINT32_MAX when the table cannot grow. */
uint32_t xl_farm_builder(struct xevb_farm *f, uint32_t ip);
void xl_farm_ctl_rx(struct xevb_farm *f);
/* Busy, STATUS and RECEIVED as due at now. */
void xl_farm_tick(struct xevb_farm *f, uint64_t now);
void xl_farm_received(struct xevb_farm *f);
void xl_farm_busy_init(struct xevb_farm *f);
/* The end of the run as it stands at now (xevb_farm_run_end). */
void xl_farm_run_end(struct xevb_farm *f, uint64_t now);

/* runcfg.c: fill what opts leaves open from the run configuration, and the membership. */
int xl_runcfg_apply(struct xevb_farm *f, struct xevb_farm_opts *o, char *listen, size_t listen_len, char *dfm,
		    size_t dfm_len, char *key, size_t key_len, char *err);

#endif

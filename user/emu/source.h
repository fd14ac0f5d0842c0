/* SPDX-License-Identifier: GPL-2.0-only */
/* `xevb source`: settings and counters shared by its two send modes. */
#ifndef XEVB_SOURCE_H
#define XEVB_SOURCE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/cli.h"
#include <xevb/wire.h>

#define SRC_MAX_SKIP 16
/* Live frames: a page minus headroom and skb_shared_info. */
#define SRC_LIVE_MAX_FRAME 3408

struct ifreq;
struct xevb_mep_params;

struct src_cfg {
	uint32_t daddr; /* network order */
	uint16_t ids[XEVB_MAX_SOURCES];
	int n_src;
	uint32_t saddr;      /* network order; 0: the route's */
	uint32_t saddr_base; /* host order; 0: one address for all */
	uint32_t pack;
	uint16_t fmin, fmax; /* fragment payload bytes, uniform */
	double rate;         /* events/s; 0: as fast as possible */
	uint64_t events;     /* per source; 0: unbounded */
	double duration;     /* seconds; 0: unbounded */
	uint32_t run, first_event;
	uint16_t udp_port; /* non-zero: UDP transport */
	uint8_t proto;
	const char *dev;
	bool live;
	bool xsk; /* --mode xsk: an AF_XDP socket's TX ring (source_xsk.c) */
	bool eor;
	bool json;
	uint8_t dst_mac[6];
	bool dst_mac_set;
	uint64_t seed;
	bool ip_frag; /* one oversize MEP, DF clear: the kernel fragments it */
	/* faults */
	struct {
		uint16_t src_idx;
		uint32_t every;
	} skip[SRC_MAX_SKIP];
	int n_skip;
	struct {
		uint16_t src_idx;
		uint32_t every;
	} skip_seg[SRC_MAX_SKIP];
	int n_skip_seg; /* --skip-segments: every EVERY-th segment of a source */
	double dup, corrupt;
	bool reorder;
	int stop_idx;        /* source index that stops, -1: none */
	uint64_t stop_after; /* packets it sends before stopping */
	/* --dfm: send where the data-flow manager says (source_dfm.c) */
	const char *dfm;
	uint16_t ctl_port;
	uint32_t hold;       /* held-event table entries (power of 2) */
	double drop_answers; /* pull: fraction of answers not sent */
};

/*
 * The command line (source_opts.c): the table fills src_cfg and what is
 * resolved once every option is read (the options that name a source
 * need --source-ids).
 */
enum src_mode { SRC_MODE_SOCKET, SRC_MODE_LIVE, SRC_MODE_XSK };

struct src_args {
	struct src_cfg c;
	struct xevb_common_opts co;
	uint32_t mode; /* enum src_mode */
	const char *skip_arg[SRC_MAX_SKIP], *skipseg_arg[SRC_MAX_SKIP], *stop_arg;
	uint32_t n_skip_arg, n_skipseg_arg;
	bool have_dest;
	uint64_t shape_bps; /* --shape: 0, or our output's rate to --dest */
};

extern const struct xevb_cfg_cmd source_cmd;
/* a filled and checked: -1 when the command should run, else its exit status (0 after --help). */
int source_opts_parse(int argc, char **argv, struct src_args *a);

/*
 * Every fragment the run generated ends up in exactly one of: valid (sent
 * in a well-formed packet, or as segments all sent well-formed), corrupt,
 * skipped, stopped, partial (segments, at least one of them skipped or
 * corrupt); duplicates are extra copies of valid packets. So events *
 * sources = valid + corrupt + skipped + stopped + partial, and a loss-free
 * builder sees valid + dup fragments.
 * Segments: the seg_frags fragments sent as segments have segments =
 * seg_valid + skipped_segments + corrupt_segments, each counted once;
 * dup_segments are extra copies.
 */
struct src_stats {
	uint64_t packets, frags, bytes, events, blocks;
	uint64_t valid_frags;
	uint64_t skipped_frags;
	uint64_t dup_packets, dup_frags;
	uint64_t reordered_packets;
	uint64_t corrupt_packets, corrupt_frags;
	uint64_t seg_frags, segments, seg_valid, partial_frags;
	uint64_t skipped_segments, corrupt_segments, dup_segments;
	uint64_t stopped_sources, stopped_frags;
	uint64_t eor_packets;
	uint64_t send_retries;
	uint64_t t_start, t_end; /* CLOCK_MONOTONIC ns */
	uint64_t cpu_ns;         /* live: CPU time of the BPF_PROG_RUN calls; xsk: of the sender */
	uint64_t tx_waits;       /* xsk: kicks the device refused for now (a full peer: back-pressure) */
	uint64_t tx_dropped;     /* xsk: frames the kernel dropped on the way out */
	bool aborted;
};

extern volatile sig_atomic_t src_stop;

int source_run_socket(const struct src_cfg *c, struct src_stats *st);
int source_run_live(const struct src_cfg *c, struct src_stats *st);
int source_run_xsk(const struct src_cfg *c, struct src_stats *st);
int source_run_dfm(const struct src_cfg *c);

/* source_live.c, for both live senders */
int src_if_ioctl(const char *dev, unsigned long req, struct ifreq *ifr);
bool src_resolve_mac(const char *dev, uint32_t addr, uint8_t *mac);
uint32_t src_live_batch(void);
int src_frame_params(const struct src_cfg *c, struct xevb_mep_params *p, int *mtu);
/* 0 or -errno; quiet_eintr: a signal ending the call is no error to print. */
int src_live_run(int prog_fd, int ifindex, const uint8_t *frame, size_t len, uint64_t reps, bool quiet_eintr);

/*
 * source_dfm_live.c: the data path of `--dfm --mode live`. The control
 * plane (source_dfm.c) queues jobs, each one MEP of every source for up to
 * per_mep held events, to one builder; a long-running BPF_PROG_RUN
 * live-frames call sends them as they come (bpf/xevb_gen.bpf.c, xevb_gen_dfm).
 */
struct dfm_live;

struct dfm_live_stats {
	uint64_t packets, frags, bytes; /* sent with XDP_TX */
	uint64_t calls, send_errors;    /* frames of failed calls, or with no MAC */
	uint64_t no_mac_jobs, queue_waits;
	uint64_t idle_reps, ring_waits; /* ring: repetitions with no job; waits for room */
	uint32_t senders;
};

struct dfm_live *dfm_live_open(const struct src_cfg *c, uint32_t per_mep);
bool dfm_live_queue(struct dfm_live *l, uint32_t daddr, const uint32_t *evs, uint32_t n, bool resend);
void dfm_live_kick(struct dfm_live *l);
/* Sends what is queued, stops the senders, frees; st may be NULL. */
void dfm_live_close(struct dfm_live *l, struct dfm_live_stats *st);

/* Events in block k (the last one may be short), 0 past the end. */
static inline uint32_t src_block_events(const struct src_cfg *c, uint64_t k)
{
	uint64_t first = k * c->pack;

	if (c->events && first >= c->events)
		return 0;
	if (c->events && c->events - first < c->pack)
		return (uint32_t)(c->events - first);
	return c->pack;
}

#endif

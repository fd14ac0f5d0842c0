/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb build`'s options as data (cli.h): the config struct its table
 * fills, the table, and the checks of the options together.
 */
#ifndef XEVB_BUILD_OPTS_H
#define XEVB_BUILD_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include "base/cli.h"
#include "out/output.h"
#include <xevb/wire.h>
#include <xevb/xdp_stats.h>
#include "rx/xsk_rx.h"
#include "ctl/build_ctl.h"
#include "rx/engine.h"

#define BUILD_RX_BATCH      XEVB_ENGINE_RX_BATCH
#define BUILD_RX_BATCH_MAX  XEVB_ENGINE_RX_BATCH_MAX
#define BUILD_MAX_ALLOW_SRC 64

enum build_mode { BUILD_MODE_XDP, BUILD_MODE_SOCKET };
enum build_xdp_mode { BUILD_XDP_NATIVE, BUILD_XDP_GENERIC, BUILD_XDP_SKB };
enum build_policy { BUILD_POLICY_EMIT, BUILD_POLICY_DISCARD };

struct build_cfg {
	struct xevb_common_opts co;
	/* Input */
	const char *dev;
	uint16_t sources[XEVB_MAX_SOURCES];
	uint32_t n_sources;
	uint32_t mode; /* enum build_mode */
	bool udp;
	uint16_t queues[XEVB_XSK_MAX_QUEUES];
	uint32_t n_queues;
	uint32_t n_workers;
	uint32_t run;
	bool have_run; /* --run given: else a DFM's ASSIGNs set it */
	/* Events */
	uint32_t window, timeout_ms;
	uint32_t policy; /* enum build_policy */
	bool exit_eor;
	/* Output */
	const char *sinks[XEVB_MAX_SINKS];
	uint32_t n_sinks;
	const char *output;
	bool nofwd;
	/* --output's run files (filled by the checks from the options below and the run) */
	struct xevb_out_file of;
	uint64_t out_max_bytes, out_max_events;
	const char *out_prefix;
	bool out_next_name, out_no_fsync;
	/* Data-flow manager */
	struct build_ctl_cfg cc;
	/* Security */
	bool xdp_filter, force, keep_privs;
	uint32_t allow_src[BUILD_MAX_ALLOW_SRC]; /* network order */
	uint32_t n_allow;
	struct xevb_src_bind bind_src[XEVB_MAX_SOURCES]; /* by source_id; addr 0: any */
	bool have_bind;
	const char *user;
	/* Tuning keys */
	uint32_t proto, udp_port;
	uint32_t xdp_mode; /* enum build_xdp_mode */
	uint32_t frames, frame_size, rx_ring, rx_batch;
	bool busy, no_huge, no_meta, copy;
	uint32_t busy_budget;
	uint32_t wait_us; /* after a turn that did work, nap this long before sleeping in poll() */
	bool have_wait;   /* else 200 with --workers > 1, 0 with one */
	uint32_t owner_block;
	uint16_t cpus[XEVB_ENGINE_MAX_CPUS];
	uint32_t n_cpus;
	int nice;
	bool set_nice;
	uint32_t fifo;
	bool zerocopy;
	uint64_t sink_pacing; /* bits/s; 0: none */
	bool no_shed, bare, selftest;
};

extern const struct xevb_cfg_cmd build_cmd;

/*
 * argv into cfg and the options checked together. -1: run; else the exit
 * status (0 after --help, 1 no such --dev, 2 a usage error: options that
 * contradict each other, a run file that exists; the message is printed).
 */
int build_opts_parse(int argc, char **argv, struct build_cfg *cfg);

#endif

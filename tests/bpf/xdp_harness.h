/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Runs frames through the XDP steering program with BPF_PROG_RUN and reads
 * what its counters did. Shared by the BPF_PROG_RUN test files.
 */
#ifndef XEVB_TEST_XDP_HARNESS_H
#define XEVB_TEST_XDP_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <xevb/xdp_stats.h>

struct xevb_steer;

struct xdp_env {
	struct xevb_steer *skel;
	int prog_fd;
	int ctr_fd;
	int ncpu;
	struct xevb_xdp_ctr *percpu; /* lookup buffer: ncpu values */
	int xsk_fd;                  /* the AF_XDP socket in the XSKMAP (xdp_env_add_xsk), or -1 */
};

/*
 * Opens and loads the program with the given load-time settings, as a
 * frags-capable program (so frames longer than a page can be fed). Fails
 * the calling test, naming what is missing, when not root, when the load
 * fails or when BPF_PROG_RUN does not work for XDP.
 */
void xdp_env_open(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port);
/* The same, with the XDP meta's cookie (cfg_meta_cookie, see xevb/xdp_meta.h; 0: off). */
void xdp_env_open_cfg(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port, uint32_t meta_cookie);
/* The same in pass mode (cfg_pass: the socket builder's program, sheds and passes). */
void xdp_env_open_pass(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port);
/* An AF_XDP socket in the XSKMAP at queue 0, so MEPs are redirected, not passed. */
void xdp_env_add_xsk(struct xdp_env *e);
/* Closes the program and its socket; a no-op on an env never opened, for a suite's .fini. */
void xdp_env_close(struct xdp_env *e);

/* All counter slots, summed over every CPU. */
void xdp_env_counters(struct xdp_env *e, struct xevb_xdp_ctr out[XEVB_XDP__SLOTS]);

struct xdp_outcome {
	int err;         /* 0, or -errno from bpf_prog_test_run_opts */
	uint32_t retval; /* XDP action */
	uint32_t linear; /* bytes the kernel put in the linear area */
	struct xevb_xdp_ctr delta[XEVB_XDP__SLOTS];
};

/* One frame through the program; fills the counter delta it caused. */
void xdp_env_run(struct xdp_env *e, const uint8_t *frame, size_t len, struct xdp_outcome *o);

/*
 * Checks an outcome without asserting: slots lists the counters that must
 * have moved (by one packet, len bytes, frags fragments each); every other
 * slot must be unchanged. Returns NULL or a description of the mismatch
 * (static buffer).
 */
const char *xdp_outcome_mismatch(const struct xdp_outcome *o, size_t len, uint32_t want_ret, const int *slots,
				 int nslots, uint64_t frags);

const char *xdp_action_name(uint32_t act);

#endif

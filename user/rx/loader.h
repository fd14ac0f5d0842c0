/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Loading and attaching the XDP steering program on one interface, with
 * libxdp. Owns the interface's lock file so that two builders never share
 * an interface, removes a stale xevb program left by a crashed builder, and
 * refuses to replace a program it did not load unless forced.
 */
#ifndef XEVB_LOADER_H
#define XEVB_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include <xevb/xdp_stats.h>

struct xevb_steer;
struct xevb_shed_gate;

enum xevb_xdp_mode { XEVB_XDP_NATIVE, XEVB_XDP_GENERIC };

struct xevb_loader_cfg {
	const char *ifname;
	enum xevb_xdp_mode mode;
	uint8_t ip_proto;           /* 0: raw transport off */
	uint16_t udp_port;          /* 0: UDP transport off */
	bool force;                 /* replace a program xevb did not load */
	const uint16_t *source_ids; /* filter: NULL/0 allows all */
	uint32_t n_source_ids;
	const uint32_t *src_addrs; /* filter, network order: NULL/0 allows all */
	uint32_t n_src_addrs;
	/*
	 * NULL, or [XEVB_MAX_SOURCES]: the address each source_id may come
	 * from (addr 0: any), and the MAC and VLAN where known. A MEP of a
	 * bound id from another address is dropped, counted src_addr_mismatch;
	 * from another MAC src_mac_mismatch, another VLAN src_vlan_mismatch.
	 */
	const struct xevb_src_bind *src_bind;
	/*
	 * Consecutive linear MEPs carry their parse result in the XDP metadata
	 * (xdp_meta.h).
	 */
	bool xdp_meta;
	/*
	 * Pass mode, for the socket builder: the program sheds (shed.h) and
	 * passes everything else to the kernel, malformed DAQ packets too; no
	 * AF_XDP socket or meta. Failures are logged as warnings.
	 */
	bool pass;
};

struct xevb_loader {
	struct xevb_steer *skel;
	struct xdp_program *prog;
	int ifindex;
	char ifname[32];
	enum xevb_xdp_mode mode;
	bool multiprog; /* attached through libxdp's dispatcher */
	bool frags;     /* program accepts multi-buffer frames */
	bool pass;      /* pass mode (xevb_loader_cfg.pass) */
	int lock_fd;
	char lock_path[256];
	int xsks_fd; /* XSKMAP */
	int counters_fd;
	unsigned int prog_id;
	uint32_t stale_id;    /* the program the lock file's last holder recorded (it died) */
	char run_dir_key[96]; /* "<netns inode>-<ifname>": names lock and stats files */
	uint32_t meta_cookie; /* non-zero: the program writes XDP meta with this cookie */
	/* The program's shedding gate (shed.h), mapped; NULL if the map could not be. */
	struct xevb_shed_gate *shed_gate;
	size_t shed_gate_len;
};

/* 0 or -errno, after logging what failed and what to do. */
int xevb_loader_attach(struct xevb_loader *l, const struct xevb_loader_cfg *cfg);
void xevb_loader_detach(struct xevb_loader *l);

/* 0 when libxdp's dispatcher (freplace) can load here, else the errno refusing it. */
int xevb_loader_probe_dispatcher(void);

/* Sum of the per-CPU counters, XEVB_XDP__SLOTS entries. */
int xevb_xdp_counters_read(int counters_fd, struct xevb_xdp_ctr *out);

/*
 * The builder's lock and statistics files: XEVB_RUN_DIR when it is an
 * absolute path, else /run/xevb (a unit's RuntimeDirectory=xevb). Every
 * command that reads them (xevb stats) looks there too.
 */
const char *xevb_run_dir(void);
/* "<run dir>/<netns-ino>-<ifname>.<suffix>" */
int xevb_run_path(const char *ifname, const char *suffix, char *buf, size_t len);

/*
 * Test only (tests/integration/test_hard_unpriv.sh): with XEVB_TEST_FAIL_STEP=N
 * in the environment, the N-th call (each a step of the builder's start after
 * its XDP attach, named STEP) says so and returns true: the caller fails
 * the start there, so that every failed start's clean-up is tested. Unset,
 * never true.
 */
bool xevb_loader_test_fail(const char *step);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Dropping privileges after set-up. The builder needs root, or the
 * capabilities of xevb_build_caps below, only to load, attach and bind; the
 * data path needs none. By default as root (user nobody, unless
 * --keep-privileges), or `xevb build --user NAME`, it forks once set-up is
 * done: the child becomes NAME with no capability at all (bounding set
 * emptied, no_new_privs) and runs the data path, after a small watcher
 * process was forked off, with the set-up's uid and only the capabilities
 * its clean-up needs (cmd_build.c): it waits for the builder to end, however
 * it ends (a pipe reaches EOF even on SIGKILL), then detaches XDP and
 * removes the /run/xevb files (an unprivileged process cannot detach a
 * netlink-attached XDP program, by design). The watcher is forked right
 * after the XDP attach and before the AF_XDP sockets exist: fork copies
 * pinned anonymous pages eagerly, so a UMEM must never be forked. (Socket
 * path: forked after the socket opens; nothing there is pinned.)
 *
 * Before the switch, the builder makes its BPF file descriptors harmless: map
 * fds are reopened read-only in place (dup2 over the same number, so the
 * loader's handles still read the counters), or without CAP_SYS_ADMIN their
 * maps frozen; program and link fds are replaced by /dev/null. A writable map fd keeps working without any
 * capability, so this step, not the uid change, is what stops map updates.
 */
#ifndef XEVB_PRIVDROP_H
#define XEVB_PRIVDROP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct xevb_privs {
	char user[64];
	uid_t uid;
	gid_t gid;
	bool keep_uid; /* no uid switch possible: stay uid 0, drop every capability */
	uint64_t cap_eff, cap_prm, cap_inh, cap_bnd, cap_amb; /* from /proc/self/status */
	int no_new_privs;
	unsigned maps_readonly, maps_frozen, progs_closed, links_closed;
};

/* Privilege probes after the drop: 0 = succeeded (bad), else the errno. */
enum xevb_probe {
	XEVB_PROBE_MAP_UPDATE_XSKMAP,
	XEVB_PROBE_MAP_UPDATE_COUNTERS,
	XEVB_PROBE_MAP_DELETE_XSKMAP,
	XEVB_PROBE_MAP_FD_BY_ID,
	XEVB_PROBE_PROG_FD_BY_ID,
	XEVB_PROBE_PROG_LOAD,
	XEVB_PROBE_XDP_ATTACH,
	XEVB_PROBE_XDP_DETACH,
	XEVB_PROBE_SETUID_ROOT,
	XEVB_PROBE__COUNT
};

struct xevb_probe_ctx {
	int ifindex;
	int xsks_fd, counters_fd;
	uint32_t prog_id, map_id;
};

/*
 * What `xevb build` needs (XDP mode), each found necessary on this kernel
 * by taking it away (tests/integration/test_hard_unpriv.sh, which runs the
 * builder as nobody with exactly these): CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN,
 * CAP_NET_RAW and CAP_IPC_LOCK (or an RLIMIT_MEMLOCK above the UMEM).
 * CAP_SYS_ADMIN is not among them: without it the program is attached alone
 * (libxdp's dispatcher, and so another XDP program beside it, needs it),
 * detached by its own fd, and the maps are frozen rather than reopened
 * read-only at the drop.
 */
struct xevb_cap_need {
	int cap;
	const char *name;
	const char *why;
};
#define XEVB_BUILD_N_CAPS 5
extern const struct xevb_cap_need xevb_build_caps[XEVB_BUILD_N_CAPS];

/*
 * Which of them the effective set eff lacks, but those in skip (bit per
 * capability): "CAP_A (why); CAP_B (why)" into buf, and their count.
 * CAP_SYS_ADMIN stands for CAP_BPF and CAP_PERFMON, as in the kernel.
 */
int xevb_build_caps_missing(uint64_t eff, uint64_t skip, char *buf, size_t len);
/* This process's effective capabilities (0 if they cannot be read). */
uint64_t xevb_privs_effective(void);
/* Keep only the capabilities in keep (bit per capability) of those held; 0 or -errno. */
int xevb_privs_keep_only(uint64_t keep);

/* Resolve NAME (error message on failure). */
int xevb_privs_lookup(const char *user, struct xevb_privs *p);
/* True when this process may switch user: CAP_SETUID and CAP_SETGID effective. */
bool xevb_privs_can_switch(void);
/* True when this process holds any effective capability. */
bool xevb_privs_held(void);
/*
 * Where no switch is possible (a service's bounded capability set, or a
 * non-root user given capabilities): the drop keeps the current uid and
 * clears every capability, no_new_privs set.
 */
void xevb_privs_keep_uid(struct xevb_privs *p);

/*
 * Neutralise BPF fds, then become p->uid/p->gid with no capability. 0 or
 * -errno (the caller must stop: half-dropped is unsafe). The bounding set
 * is emptied where CAP_SETPCAP allows it; without it, no_new_privs keeps
 * what is left in it from ever coming back (no exec can raise a set).
 */
int xevb_privs_drop(struct xevb_privs *p);

/* Try each privileged operation; res[i] = 0 or the errno it failed with. */
void xevb_privs_probe(const struct xevb_probe_ctx *c, int res[XEVB_PROBE__COUNT]);

/* One JSON line {"privileges":{...}} (res may be NULL: no probes run). */
void xevb_privs_json(FILE *f, const struct xevb_privs *p, const int *res);

/*
 * Fork the root watcher: it runs start(ctx) (close what it must not hold,
 * such as connections), ignores SIGINT/SIGTERM/SIGHUP, waits until every
 * copy of *wr_fd is closed, runs cleanup(ctx) and exits. Returns its pid
 * (the caller keeps *wr_fd open while it runs) or -errno.
 */
pid_t xevb_privs_spawn_watcher(int *wr_fd, void (*start)(void *ctx), void (*cleanup)(void *ctx), void *ctx);

/* Close wr_fd and wait (bounded, timeout_ms) for the watcher's clean-up. */
int xevb_privs_end_watcher(pid_t watcher, int wr_fd, int timeout_ms);

#endif

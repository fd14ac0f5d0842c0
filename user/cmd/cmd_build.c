// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb build: the gateway. Receives MEPs (AF_XDP behind the XDP steering
 * program, or a kernel socket), builds events, forwards them to farm nodes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "evb/builder.h"
#include "base/cli.h"
#include "rx/engine.h"
#include "ops/engine_stats.h"
#include "rx/loader.h"
#include "ops/metrics.h"
#include "base/notify.h"
#include "out/output.h"
#include "out/output_file.h"
#include "ops/privdrop.h"
#include "ops/shape_ctl.h"
#include "ops/report.h"
#include "ctl/runcfg.h"
#include "rx/sock_rx.h"
#include "rx/xsk_rx.h"
#include "ctl/build_ctl.h"
#include "cmd/build_opts.h"
#include "cmd/cmds.h"
#include <linux/capability.h>

static volatile sig_atomic_t stop, stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
	stop = 1;
}

struct build {
	const struct build_cfg *cfg;
	struct xevb_engine e;       /* the receive path, the core, the output, their counters */
	bool generic;               /* XDP attached in generic (skb) mode */
	struct xevb_snapshot *snap; /* mapped stats file */
	struct xevb_snapshot local;
	struct build_ctl *bctl; /* --dfm */
	char snap_path[256];
	bool unpriv; /* privileges dropped: the watcher cleans up */
	pid_t watcher;
	int watcher_fd;
	const char *dev;
	const char *why; /* why the run loop ended, when the duties ended it */
	uint32_t queues[XEVB_XSK_MAX_QUEUES];
	int cpus[XEVB_ENGINE_MAX_CPUS];
	struct xevb_privs privs; /* who the data path runs as; user[0] 0: stays as it is */
	struct xevb_metrics *mx;
	struct xevb_snapshot prev; /* at the last statistics line */
	uint32_t interval;         /* statistics line period, s; 0: none */
	uint64_t t_start, t_next;
};

#define IPFRAG_FRAMES XEVB_ENGINE_IPFRAG_FRAMES

static bool duties(void *ctx, uint64_t now);
static void dfm_emit(void *ctx, const struct xevb_event *ev);
static void dfm_assign(void *ctx, uint32_t first, uint32_t count, uint32_t run, bool set_run);
static void dfm_worker_tick(void *ctx, uint32_t w, const struct xevb_builder *b, uint64_t now);

/* In the watcher (the clean-up helper) as it starts: the builder's connections are not its own. */
static void watcher_start(void *ctx)
{
	struct build *bd = ctx;
	uint64_t keep = 0;
	struct stat st;
	int err;

	xevb_output_close_inherited(&bd->e.out);
	/* Nor its control port: once the builder is gone, the DFM's datagrams
	   there must meet port unreachable (found dead at once), not silence. */
	if (bd->bctl && build_ctl_fd(bd->bctl) >= 0)
		close(build_ctl_fd(bd->bctl));
	/*
	 * It lives as long as the builder: it keeps only what its clean-up
	 * needs. A lone program goes by its own fd (CAP_NET_ADMIN); libxdp's
	 * dispatcher needs what the attach did. The files go without any, in a
	 * directory of its own uid.
	 */
	if (bd->e.ld.prog)
		keep |= bd->e.ld.multiprog ? UINT64_MAX : 1ull << CAP_NET_ADMIN;
	if (stat(xevb_run_dir(), &st) || st.st_uid != geteuid())
		keep |= 1ull << CAP_DAC_OVERRIDE;
	if ((err = xevb_privs_keep_only(keep)))
		xevb_warn("the clean-up helper keeps its capabilities: capset: %s", strerror(-err));
}

/* In the watcher, once the builder is gone. */
static void watcher_cleanup(void *ctx)
{
	struct build *bd = ctx;
	char path[256];

	if (bd->e.c.xdp || bd->e.pass_xdp)
		xevb_loader_detach(&bd->e.ld);
	if (!xevb_run_path(bd->dev, "stats", path, sizeof(path)))
		unlink(path);
}

/*
 * Frames open events may hold: the rest must cover a full RX ring (AF_XDP:
 * the fill ring refills it) or a receive batch (socket), or the kernel
 * drops packets at random and every event is torn; the builder evicts its
 * oldest events instead (user/evb/builder.h, max_frames_held).
 */
static uint32_t frames_for_events(bool socket_mode, uint32_t frames, uint32_t rx_ring, uint32_t n_queues)
{
	if (socket_mode)
		return frames - frames / 4;
	return (frames > rx_ring * 2 ? frames - rx_ring : frames / 2) * n_queues;
}

/*
 * At stop: events evicted before their timeout mean the window or the
 * frame pool ran out first at the rate seen. Say how long each lasted, so
 * the operator can tell a lagging source (raise them) from loss.
 */
static void explain_evictions(const struct xevb_builder_stats *st, uint64_t elapsed_ns, uint32_t window,
			      uint32_t timeout_ms, uint32_t max_frames_held)
{
	double rate = elapsed_ns ? (double)st->events_opened * 1e9 / (double)elapsed_ns : 0;
	double done = (double)(st->events_complete + st->events_incomplete + st->events_discarded);

	if (!st->events_evicted || rate <= 0)
		return;
	xevb_warn(
		"%llu event(s) (%.2f%% of those built) left before their --timeout-ms %u: at %.0f events/s "
		"the window of %u ids lasts %.0f ms (and %u frames may be held by open events); if no "
		"packet was lost before the builder (seq_gaps, XDP and socket drops 0), a source lags the "
		"others by more than that: raise --window and --tune frames",
		(unsigned long long)st->events_evicted, done ? 100.0 * (double)st->events_evicted / done : 0,
		timeout_ms, rate, window, 1000.0 * window / rate, max_frames_held);
}

/*
 * At stop: no fragment was of this builder's run. It is never taken from
 * the data (docs/hardening.md), so a run other than the default needs saying.
 */
static void explain_wrong_run(const struct xevb_builder_stats *st)
{
	if (!st->drops[XEVB_DROP_WRONG_RUN] || st->frags_in_events)
		return;
	xevb_warn(
		"all %llu fragment(s) were of another run than %u: give --run N, the run the sources send "
		"(or [run] number in the run configuration); the builder never takes it from the data",
		(unsigned long long)st->drops[XEVB_DROP_WRONG_RUN], st->run_number);
}

/*
 * At stop, DFM mode: fragments came in behind the window while events were
 * re-asked. The answers to a re-ask come after --tune reask-ms and the sources'
 * own delay; when the window lasts less at the rate seen, they find their
 * event gone (late) and the DFM learns it as lost. Say which knob.
 */
static void explain_late_reasks(const struct xevb_builder_stats *st, uint64_t elapsed_ns, uint32_t window,
				uint64_t reask_ns, uint64_t reasked)
{
	double rate = elapsed_ns ? (double)st->events_opened * 1e9 / (double)elapsed_ns : 0;
	double lasts_ms = rate > 0 ? 1000.0 * window / rate : 0;

	if (!reasked || !st->drops[XEVB_DROP_LATE] || rate <= 0)
		return;
	xevb_warn(
		"%llu fragment(s) came after their event had left, and %llu event(s) were re-asked: at %.0f "
		"events/s the window of %u ids lasts %.0f ms; re-sent fragments that come later than that (after "
		"--tune reask-ms=%llu and the sources' answer time) find their event gone and it is lost to the DFM: "
		"keep both under %.0f ms, or raise --window",
		(unsigned long long)st->drops[XEVB_DROP_LATE], (unsigned long long)reasked, rate, window, lasts_ms,
		(unsigned long long)(reask_ns / 1000000), lasts_ms);
}

/* The AF_XDP sockets' drops: the builder did not keep up (XDP_STATISTICS, a getsockopt each). */

/*
 * Socket mode: the steering program in pass mode in front of the socket,
 * so that overload sheds whole events (the same controller as XDP mode)
 * instead of overflowing the socket's buffer at random. Where it cannot be
 * attached the builder runs on without it, and says what that costs.
 */
static void sock_shed_start(struct build *bd, const char *dev, bool generic, bool force, const uint16_t *sources,
			    int n_sources)
{
	struct xevb_loader_cfg lc = {
		.ifname = dev,
		.mode = generic ? XEVB_XDP_GENERIC : XEVB_XDP_NATIVE,
		.ip_proto = bd->e.pcfg.ip_proto,
		.udp_port = bd->e.pcfg.udp_port,
		.force = force,
		.pass = true,
	};

	if (xevb_loader_attach(&bd->e.ld, &lc) || !bd->e.ld.shed_gate) {
		if (bd->e.ld.prog)
			xevb_loader_detach(&bd->e.ld);
		xevb_warn(
			"socket mode without shedding: the XDP program could not be attached to %s (see "
			"above). Offered more than it can take, this builder loses frames at random in the "
			"socket's buffer, which tears events; --tune no-shed=1 runs so without this warning",
			dev);
		return;
	}
	bd->e.pass_xdp = true;
	xevb_engine_shed_start(&bd->e, sources, n_sources);
}

/*
 * XDP path: the kernel socket beside AF_XDP for IPv4-fragmented MEPs (the
 * program passes every fragment to the kernel; only reassembled datagrams
 * reach this socket, every whole MEP is redirected before it, but for
 * those the program passes on purpose: no socket on their queue, jumbo
 * frames). Bound to the device: another builder's traffic is not ours.
 * Frames of the device MTU's datagram, and big buffers for the rest.
 * Without it the builder runs on, the fragments only counted.
 */
static void open_ipfrag(struct build *bd, bool udp, uint32_t proto, uint32_t udp_port)
{
	struct xevb_sock_cfg sc = {
		.udp = udp,
		.ip_proto = (uint8_t)proto,
		.udp_port = (uint16_t)udp_port,
		.ifname = bd->dev,
		.n_frames = IPFRAG_FRAMES,
		.frame_size = xevb_sock_frame_size_for(bd->dev),
		.n_big = XEVB_SOCK_BIG_FRAMES,
		.mtu = xevb_dev_mtu(bd->dev),
		.rcvbuf = 16 << 20,
		.src_bind = bd->cfg->have_bind ? bd->cfg->bind_src : NULL,
	};

	if (xevb_sock_open(&bd->e.ipfrag, &sc)) {
		bd->e.ipfrag_on = false;
		xevb_warn(
			"no socket for IPv4-fragmented MEPs beside AF_XDP (above): they are only counted "
			"(XDP verdict ip_fragment); free the %s on %s to build them",
			udp ? "UDP port" : "protocol", bd->dev);
		return;
	}
	xevb_info(
		"IPv4-fragmented MEPs: reassembled by the kernel, received on a %s socket beside AF_XDP "
		"(%u buffers of %u bytes)",
		udp ? "UDP" : "raw IPv4", XEVB_SOCK_BIG_FRAMES, XEVB_SOCK_BIG_SIZE);
}

static void publish(struct build *bd)
{
	if (!bd->snap)
		return;
	__atomic_store_n(&bd->snap->seq, bd->local.seq + 1, __ATOMIC_RELEASE);
	uint64_t seq = bd->local.seq + 2;
	memcpy(bd->snap, &bd->local, sizeof(bd->local));
	__atomic_store_n(&bd->snap->seq, seq, __ATOMIC_RELEASE);
	bd->local.seq = seq;
}

static void open_snapshot_file(struct build *bd, const char *ifname)
{
	int fd;

	if (xevb_run_path(ifname, "stats", bd->snap_path, sizeof(bd->snap_path)))
		return;
	mkdir(xevb_run_dir(), 0700);
	fd = open(bd->snap_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct xevb_snapshot))) {
		xevb_warn("no live statistics for 'xevb stats': %s: %s", bd->snap_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		bd->snap_path[0] = 0;
		return;
	}
	bd->snap = mmap(NULL, sizeof(struct xevb_snapshot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (bd->snap == MAP_FAILED)
		bd->snap = NULL;
}

/*
 * With privileges and neither --user nor --keep-privileges: as root, the
 * data path runs as nobody with no capability, as --user nobody would.
 * Where root cannot switch user (a service's capability set without
 * CAP_SETUID and CAP_SETGID, or no user nobody), or a non-root user was given
 * capabilities, it keeps its uid and still gives up every capability.
 */
static int default_privs(struct xevb_privs *privs)
{
	bool nobody = getpwnam("nobody") != NULL;

	if (geteuid() == 0 && nobody && xevb_privs_can_switch())
		return xevb_privs_lookup("nobody", privs);
	if (geteuid() == 0)
		xevb_warn(
			"%s: after set-up the data path stays uid 0 with no capability (give it CAP_SETUID "
			"and CAP_SETGID%s to run as nobody, or --keep-privileges to keep every capability)",
			nobody ? "no CAP_SETUID/CAP_SETGID" : "no user 'nobody'",
			nobody ? "" : " and a user nobody");
	xevb_privs_keep_uid(privs);
	return 0;
}

/*
 * XDP mode without a capability it needs: say which and why before the
 * step that needs it fails (socket mode says what it misses as it goes).
 */
static void warn_missing_caps(const struct build_cfg *cfg)
{
	uint64_t umem = (uint64_t)cfg->frames * cfg->frame_size * cfg->n_queues, skip = 0;
	struct rlimit rl;
	char buf[768];

	if (cfg->mode != BUILD_MODE_XDP)
		return;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= umem))
		skip |= 1ull << CAP_IPC_LOCK;
	if (xevb_build_caps_missing(xevb_privs_effective(), skip, buf, sizeof(buf)))
		xevb_warn(
			"missing %s: run as root or give the builder these capabilities (docs/deploy-package.md)",
			buf);
}

/* Who the data path runs as after set-up: false (usage error) when --user names no one. */
static bool build_privileges(const struct build_cfg *cfg, struct xevb_privs *privs)
{
	if (cfg->user && xevb_privs_lookup(cfg->user, privs))
		return false;
	if (!cfg->user && !cfg->keep_privs && (geteuid() == 0 || xevb_privs_held()) && default_privs(privs))
		return false;
	warn_missing_caps(cfg);
	return true;
}

/*
 * --output DIR rotating: later files are created after set-up, by the
 * user the data path runs as. False (exit status 1) when that user
 * cannot create files there.
 */
static bool output_dir_ok(const struct build_cfg *cfg, const struct xevb_privs *p)
{
	const struct xevb_out_file *f = &cfg->of;

	if (!cfg->output || !f->dir || (!f->max_bytes && !f->max_events) || !p->user[0] ||
	    xevb_outfile_dir_writable(f->path, p->uid, p->gid, !p->keep_uid))
		return true;
	xevb_err(
		"--output %s: files are rotated after set-up, when the builder runs as %s (uid %u), who cannot "
		"create files there: give it the directory (chown %s %s), or --user NAME who can, or "
		"--keep-privileges",
		f->path, p->user, (unsigned)p->uid, p->user, f->path);
	return false;
}

/* The builder core's configuration: frame indices, bounds, callbacks. */
static struct xevb_builder_cfg core_cfg(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	bool socket_mode = !bd->e.c.xdp;
	uint32_t frames = cfg->frames, nq = cfg->n_queues;
	struct xevb_builder_cfg bc = {
		.sources = cfg->sources,
		.n_sources = cfg->n_sources,
		.window = cfg->window,
		.n_frames = socket_mode ?
				    frames + XEVB_SOCK_BIG_FRAMES :
				    frames * nq + xevb_xsk_extra_frames(cfg->dev, frames, cfg->frame_size, nq),
		.timeout_ns = (uint64_t)cfg->timeout_ms * 1000000ull,
		.timeout_policy = cfg->policy == BUILD_POLICY_DISCARD ? XEVB_TIMEOUT_DISCARD :
									XEVB_TIMEOUT_EMIT_INCOMPLETE,
		/* Never adopted from the data: one spoofed MEP would set it (hardening.md). */
		.run_number = cfg->run,
		.max_frames_held = frames_for_events(socket_mode, frames, cfg->rx_ring, nq),
		/* Under a DFM, its BYE ends the run, not a flag in the data. */
		.end_of_run_counted_only = cfg->cc.dfm != NULL,
		.await_first_assign = cfg->cc.dfm != NULL,
	};

	if (bd->e.ipfrag_on) {
		bd->e.ipfrag_base = bc.n_frames;
		bc.n_frames += IPFRAG_FRAMES + XEVB_SOCK_BIG_FRAMES;
		bc.max_frames_held += frames_for_events(true, IPFRAG_FRAMES + XEVB_SOCK_BIG_FRAMES, 0, 1);
	} else {
		bd->e.ipfrag_base = UINT32_MAX;
	}
	return bc;
}

/* The engine's options; its hooks are ours (duties), the DFM's (events, socket). */
static void engine_cfg(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;

	bd->e.c = (struct xevb_engine_cfg){
		.xdp = cfg->mode == BUILD_MODE_XDP,
		.bare = cfg->bare,
		.busy = cfg->busy,
		.exit_eor = cfg->exit_eor,
		.emit_runs = cfg->nofwd && !cfg->cc.dfm,
		.n_queues = cfg->n_queues,
		.rx_batch = cfg->rx_batch,
		.rx_ring = cfg->rx_ring,
		.timeout_ms = cfg->timeout_ms,
		.wait_us = cfg->wait_us,
		.n_workers = cfg->n_workers,
		.owner_shift = (uint32_t)__builtin_ctz(cfg->owner_block),
		.cpus = bd->cpus,
		.n_cpus = cfg->n_cpus,
		.sinks = cfg->sinks,
		.n_sinks = cfg->n_sinks,
		.file = cfg->output != NULL,
		.n_sources = cfg->n_sources,
	};
	bd->e.h = (struct xevb_engine_hooks){ .ctx = bd, .duties = duties, .fd = -1 };
}

/* The options into bd and the builder core: false (exit status 1) when the core cannot be made. */
static bool core_setup(struct build *bd, const struct build_cfg *cfg)
{
	bd->cfg = cfg;
	engine_cfg(bd);
	bd->dev = cfg->dev;
	bd->generic = cfg->xdp_mode != BUILD_XDP_NATIVE;
	bd->interval = xevb_common_interval(&cfg->co);
	for (uint32_t q = 0; q < cfg->n_queues; q++)
		bd->queues[q] = cfg->queues[q];
	for (uint32_t i = 0; i < cfg->n_cpus; i++)
		bd->cpus[i] = cfg->cpus[i];
	bd->e.ipfrag.fd = -1;
	bd->e.ipfrag_on = bd->e.c.xdp && !bd->e.c.bare;
	bd->e.pcfg.ip_proto = (uint8_t)cfg->proto;
	bd->e.pcfg.udp_port = (uint16_t)cfg->udp_port;
	if (!bd->e.c.xdp) {
		if (cfg->udp)
			bd->e.pcfg.ip_proto = 0;
		else
			bd->e.pcfg.udp_port = 0;
	}
	bd->e.bcfg = core_cfg(bd);
	if (bd->e.c.xdp && cfg->frames <= 2 * cfg->rx_ring)
		xevb_warn(
			"--tune frames=%u is not above twice --tune rx-ring=%u: open events may hold only %u "
			"frames a queue before the oldest are evicted; give frames at least "
			"2 x rx-ring plus what the window holds",
			cfg->frames, cfg->rx_ring, cfg->frames / 2);
	return true;
}

/* Farm nodes (or the file) and, with --dfm, the control endpoint in front of them. */
static bool output_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	struct build_ctl_cfg cc = cfg->cc;
	struct xevb_output_opts oo = {
		.sinks = cfg->sinks,
		.n_sinks = cfg->n_sinks,
		.file = cfg->output ? &cfg->of : NULL,
		.max_sources = cfg->n_sources,
		.connect_wait_ns = 5000000000ull,
		.pacing_Bps = cfg->sink_pacing / 8,
		.zerocopy = cfg->zerocopy,
	};

	if (xevb_output_open(&bd->e.out, &oo))
		return false;
	if (xevb_output_set_release(&bd->e.out, xevb_engine_release_held, &bd->e, bd->e.bcfg.n_frames))
		return false;
	if (!cc.dfm)
		return true;
	cc.fixed_run = cfg->have_run;
	if (cfg->n_workers > 1) {
		/* Every worker's core follows the ASSIGNs; each re-asks for the events it owns. */
		cc.n_owners = cfg->n_workers;
		cc.owner_shift = bd->e.c.owner_shift;
		cc.on_assign = dfm_assign;
		cc.assign_ctx = bd;
		bd->e.h.worker_tick = dfm_worker_tick;
	}
	if (cfg->timeout_ms && (uint64_t)cfg->timeout_ms * 1000000ull < cc.reask_ns * (cc.max_reasks + 1ull))
		xevb_warn("--timeout-ms %u ends events before their %u re-asks of %llu ms are spent",
			  cfg->timeout_ms, cc.max_reasks, (unsigned long long)(cc.reask_ns / 1000000));
	bd->bctl = build_ctl_new(&cc, &bd->e.out);
	if (!bd->bctl)
		return false;
	bd->e.h.emit = dfm_emit;
	bd->e.h.fd = build_ctl_fd(bd->bctl);
	bd->e.h.poll_max_ms = 5; /* re-asks and heartbeats keep time */
	return true;
}

/* Test only: the start fails at this step after an XDP attach (xevb_loader_test_fail). */
static bool fail_step(const struct build *bd, const char *step)
{
	return (bd->e.c.xdp || bd->e.pass_xdp) && xevb_loader_test_fail(step);
}

/* Some source_id is bound to a VLAN (--bind-src ...,vlan=N). */
static bool binds_vlan(const struct build_cfg *cfg)
{
	for (uint32_t id = 0; cfg->have_bind && id < XEVB_MAX_SOURCES; id++)
		if (cfg->bind_src[id].addr && (cfg->bind_src[id].flags & XEVB_BIND_VLAN))
			return true;
	return false;
}

/* The root process that detaches XDP and removes the stats file once we are gone. */
static bool spawn_watcher(struct build *bd)
{
	bd->watcher = xevb_privs_spawn_watcher(&bd->watcher_fd, watcher_start, watcher_cleanup, bd);
	if (bd->watcher < 0) {
		xevb_err("cannot fork the clean-up process: %s", strerror((int)-bd->watcher));
		bd->watcher = 0;
		return false;
	}
	return true;
}

static bool socket_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	struct xevb_sock_cfg sc = {
		.udp = cfg->udp,
		.ip_proto = (uint8_t)cfg->proto,
		.udp_port = (uint16_t)cfg->udp_port,
		.n_frames = cfg->frames,
		.frame_size = cfg->frame_size,
		.rcvbuf = 64 << 20,
		.n_big = XEVB_SOCK_BIG_FRAMES,
		.mtu = xevb_dev_mtu(cfg->dev),
		.src_bind = cfg->have_bind ? cfg->bind_src : NULL,
		/* A socket tells a VLAN by its device alone: with one bound, only what --dev passes. */
		.ifname = binds_vlan(cfg) ? cfg->dev : NULL,
	};

	if (xevb_sock_open(&bd->e.sock, &sc))
		return false;
	bd->e.sock.src_bind = cfg->have_bind ? cfg->bind_src : NULL;
	bd->e.sock.src_allow = cfg->allow_src;
	bd->e.sock.n_src_allow = cfg->n_allow;
	if (!xevb_engine_start(&bd->e))
		return false;
	/* Before the line saying the socket is open: scripts wait for it. */
	if (!cfg->no_shed && !bd->e.c.bare && !cfg->cc.dfm)
		sock_shed_start(bd, cfg->dev, bd->generic, cfg->force, cfg->sources, (int)cfg->n_sources);
	xevb_info("receiving %s on a kernel socket (recvmmsg, batches of %d)", cfg->udp ? "UDP" : "raw IPv4",
		  XEVB_SOCK_BATCH);
	return true;
}

static void xdp_loader_cfg(const struct build *bd, struct xevb_loader_cfg *lc)
{
	const struct build_cfg *cfg = bd->cfg;

	*lc = (struct xevb_loader_cfg){
		.ifname = cfg->dev,
		.mode = bd->generic ? XEVB_XDP_GENERIC : XEVB_XDP_NATIVE,
		.ip_proto = (uint8_t)cfg->proto,
		.udp_port = (uint16_t)cfg->udp_port,
		.force = cfg->force,
		.source_ids = cfg->xdp_filter ? cfg->sources : NULL,
		.n_source_ids = cfg->xdp_filter ? cfg->n_sources : 0,
		.src_addrs = cfg->n_allow ? cfg->allow_src : NULL,
		.n_src_addrs = cfg->n_allow,
		.src_bind = cfg->have_bind ? cfg->bind_src : NULL,
		/* Every worker reads it for the frames of its queues. */
		.xdp_meta = !cfg->no_meta,
	};
}

static bool xdp_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	struct xevb_loader_cfg lc;
	struct xevb_xsk_cfg xc = {
		.ifname = cfg->dev,
		.queues = bd->queues,
		.n_queues = cfg->n_queues,
		.frames_per_q = cfg->frames,
		.frame_size = cfg->frame_size,
		.rx_size = cfg->rx_ring,
		.force_copy = cfg->copy,
		.busy_budget = cfg->busy ? (cfg->busy_budget ? cfg->busy_budget : cfg->rx_batch) : 0,
		.no_hugepages = cfg->no_huge,
	};

	xdp_loader_cfg(bd, &lc);
	if (xevb_loader_attach(&bd->e.ld, &lc))
		return false;
	bd->e.meta_cookie = bd->e.ld.meta_cookie;
	/* Before the UMEM exists: fork must never copy pinned pages. */
	if ((bd->privs.user[0] && !spawn_watcher(bd)) || fail_step(bd, "helper"))
		return false;
	xc.xsks_map_fd = bd->e.ld.xsks_fd;
	if (xevb_xsk_open(&bd->e.xsk, &xc) || fail_step(bd, "af_xdp"))
		return false;
	if (bd->e.ipfrag_on) {
		open_ipfrag(bd, cfg->udp, cfg->proto, cfg->udp_port);
		bd->e.ipfrag.src_bind = cfg->have_bind ? cfg->bind_src : NULL;
		bd->e.ipfrag.src_allow = cfg->allow_src;
		bd->e.ipfrag.n_src_allow = cfg->n_allow;
	}
	if (!xevb_engine_start(&bd->e) || fail_step(bd, "engine"))
		return false;
	/* Under a DFM its credits and Busy flag pace the sources instead. */
	if (!cfg->no_shed && !bd->e.c.bare && !cfg->cc.dfm)
		xevb_engine_shed_start(&bd->e, cfg->sources, (int)cfg->n_sources);
	for (uint32_t q = 0; q < cfg->n_queues; q++)
		xevb_info("AF_XDP socket on %s queue %u: %s mode, %u frames of %u bytes%s, %s", cfg->dev,
			  bd->queues[q], bd->e.xsk.q[q].zerocopy ? "zero-copy" : "copy", cfg->frames,
			  cfg->frame_size, bd->e.xsk.q[q].hugepages ? " (huge pages)" : "",
			  cfg->busy ? "busy polling" : "poll()");
	return true;
}

/* Before any privilege drop: a negative nice or SCHED_FIFO needs CAP_SYS_NICE. */
static void sched_setup(const struct build_cfg *cfg)
{
	if (cfg->set_nice && setpriority(PRIO_PROCESS, 0, cfg->nice))
		xevb_warn("--tune nice=%d: %s (needs CAP_SYS_NICE below 0)", cfg->nice, strerror(errno));
	if (cfg->fifo) {
		struct sched_param sp = { .sched_priority = (int)cfg->fifo };
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			xevb_warn("--tune fifo=%u: %s (needs CAP_SYS_NICE)", cfg->fifo, strerror(errno));
	}
}

/* After set-up: the data path runs with no capability (and --tune selftest-privs=1 checks it). */
static bool drop_privileges(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	int probe[XEVB_PROBE__COUNT];
	struct xevb_probe_ctx pc = {
		.ifindex = bd->e.c.xdp ? bd->e.ld.ifindex : 0,
		.xsks_fd = bd->e.c.xdp ? bd->e.ld.xsks_fd : -1,
		.counters_fd = bd->e.c.xdp ? bd->e.ld.counters_fd : -1,
		.prog_id = bd->e.c.xdp ? bd->e.ld.prog_id : 0,
	};

	if (bd->e.c.xdp) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		if (!bpf_obj_get_info_by_fd(pc.counters_fd, &mi, &mlen))
			pc.map_id = mi.id;
	}
	/* Half-dropped is unsafe: stop; the watcher still cleans up. */
	bd->unpriv = true;
	if (xevb_privs_drop(&bd->privs))
		return false;
	xevb_info("running as %s (uid %u) with no capability; XDP is detached by helper pid %d at exit",
		  bd->privs.user, (unsigned)bd->privs.uid, (int)bd->watcher);
	if (cfg->selftest)
		xevb_privs_probe(&pc, probe);
	/* Asked for by name: the line scripts check; by default the log line says it. */
	if (cfg->user || cfg->selftest)
		xevb_privs_json(stdout, &bd->privs, cfg->selftest ? probe : NULL);
	return true;
}

/* The statistics file and page, the first snapshot, and READY for a service manager. */
static bool stats_start(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	const char *metrics = cfg->co.metrics;

	bd->local.magic = XEVB_SNAP_MAGIC;
	bd->local.version = XEVB_SNAP_VERSION;
	bd->local.pid = getpid();
	bd->local.xdp_mode = bd->e.c.xdp;
	snprintf(bd->local.ifname, sizeof(bd->local.ifname), "%s", cfg->dev);
	bd->local.n_queues = bd->e.c.xdp ? cfg->n_queues : 0;
	bd->local.n_sources = cfg->n_sources;
	bd->t_start = xevb_now_ns();
	bd->local.start_ns = bd->t_start;
	xevb_engine_snapshot(&bd->e, &bd->local);
	bd->prev = bd->local;
	publish(bd);
	if (metrics && (!bd->snap || !(bd->mx = xevb_metrics_start(metrics)) ||
			xevb_metrics_render(bd->mx, xevb_metrics_render_snapshot, bd->snap)))
		return false;
	if (bd->mx)
		xevb_engine_metrics(&bd->e, bd->mx); /* more workers: each one's counters */
	/* Attached, bound, statistics published: a service manager may start what depends on us. */
	xevb_notify_ready("building on %s (%s)", cfg->dev, bd->e.c.xdp ? "XDP + AF_XDP" : "kernel socket");
	bd->t_next = bd->t_start + 1000000000ull;
	return true;
}

/* Everything after the core: output, receive path, watcher, statistics. False: exit status 1. */
static bool build_setup(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;

	if (!output_setup(bd))
		return false;
	if (!(bd->e.c.xdp ? xdp_setup(bd) : socket_setup(bd)))
		return false;
	/* No UMEM on the socket path: forking here copies nothing pinned. */
	if (bd->privs.user[0] && !bd->e.c.xdp && (!spawn_watcher(bd) || fail_step(bd, "helper")))
		return false;
	sched_setup(cfg);
	open_snapshot_file(bd, cfg->dev);
	if (fail_step(bd, "stats_file"))
		return false;
	if (cfg->co.metrics && !bd->snap &&
	    (bd->snap = mmap(NULL, sizeof(*bd->snap), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
			     0)) == MAP_FAILED)
		bd->snap = NULL;
	if (bd->privs.user[0] && (!drop_privileges(bd) || fail_step(bd, "drop")))
		return false;
	if (fail_step(bd, "ready"))
		return false;
	return stats_start(bd);
}

/* Once a second: the statistics published, and every --interval a line. */
static void tick_second(struct build *bd, uint64_t now)
{
	xevb_engine_snapshot(&bd->e, &bd->local);
	publish(bd);
	if (bd->interval && (now - bd->t_start) / 1000000000ull % bd->interval == 0) {
		xevb_report_line(stderr, &bd->local, &bd->prev);
		bd->prev = bd->local;
	}
	bd->t_next += 1000000000ull;
	if (bd->t_next < now)
		bd->t_next = now + 1000000000ull;
}

static bool duration_over(const struct build *bd, uint64_t now)
{
	return bd->cfg->co.duration_ns && now - bd->t_start >= bd->cfg->co.duration_ns;
}

/* The DFM's messages and timers; true when the loop ends (run finished, or no core). */
static bool one_dfm(struct build *bd, uint64_t now)
{
	bool reset, finished;

	/* More workers emit into the control endpoint from their threads: its state is under the lock. */
	xevb_engine_lock(&bd->e);
	build_ctl_tick(bd->bctl, xevb_engine_core0(&bd->e), now);
	reset = build_ctl_take_reset(bd->bctl);
	finished = bd->cfg->exit_eor && build_ctl_finished(bd->bctl);
	xevb_engine_unlock(&bd->e);
	/* A restarted DFM numbers events afresh: so do fresh cores. */
	if (reset && !xevb_engine_core_reset(&bd->e)) {
		bd->why = "the builder cores could not start afresh for the restarted DFM";
		return true;
	}
	if (finished)
		bd->why = "the DFM ended the run (its BYE, above) and nothing assigned is open (--exit-on-eor)";
	return finished;
}

/* The engine's periodic duties, in this thread: the DFM, the second's statistics, --duration. */
static bool duties(void *ctx, uint64_t now)
{
	struct build *bd = ctx;

	if (bd->bctl && one_dfm(bd, now))
		return true;
	/* The output's connections are the workers' to maintain. */
	if (now >= bd->t_next)
		tick_second(bd, now);
	if (!duration_over(bd, now))
		return false;
	bd->why = "--duration is over";
	return true;
}

/* Why the run loop ended, in one line: a signal, the DFM, --duration, END_OF_RUN or an error. */
static void say_why(const struct build *bd)
{
	if (stop_sig)
		xevb_info("stopping: %s received", stop_sig == SIGINT ? "SIGINT" : "SIGTERM");
	else if (bd->why)
		xevb_info("stopping: %s", bd->why);
	else if (bd->cfg->exit_eor && !bd->bctl)
		xevb_info("stopping: every source sent END_OF_RUN (--exit-on-eor), or an error above");
	else
		xevb_warn("stopping: the receive engine stopped on an error (above)");
}

/* --dfm: built events through its control endpoint (credits, re-asks), then the output. */
static void dfm_emit(void *ctx, const struct xevb_event *ev)
{
	struct build *bd = ctx;

	build_ctl_emit(bd->bctl, ev);
}

/* More workers: an ASSIGN worker 0's core took in the DFM's tick, for the others' cores. */
static void dfm_assign(void *ctx, uint32_t first, uint32_t count, uint32_t run, bool set_run)
{
	struct build *bd = ctx;

	xevb_engine_assign(&bd->e, first, count, run, set_run);
}

/* More workers: worker w's re-asks, from what its core b is missing (the engine holds its lock). */
static void dfm_worker_tick(void *ctx, uint32_t w, const struct xevb_builder *b, uint64_t now)
{
	struct build *bd = ctx;

	build_ctl_scan_owner(bd->bctl, b, w, now);
}

static void report_busy_poll(struct build *bd)
{
	for (uint32_t q = 0; q < bd->cfg->n_queues; q++) {
		uint32_t id = xevb_xsk_napi_id(&bd->e.xsk, q);
		if (id)
			xevb_info("queue %u: busy polling drove NAPI %u", bd->queues[q], id);
		else
			xevb_warn(
				"queue %u: the socket has no NAPI id: busy polling could not drive the "
				"device's NAPI (veth before its XDP queues get ids?); it only spun",
				bd->queues[q]);
	}
}

/* After the loop: what is in the rings and still open leaves, counted; the output settles. */
static void build_stop(struct build *bd)
{
	if (bd->e.c.xdp && bd->cfg->busy)
		report_busy_poll(bd);
	xevb_engine_stop(&bd->e, bd->cfg->policy == BUILD_POLICY_DISCARD);
	xevb_engine_snapshot(&bd->e, &bd->local);
	publish(bd);
}

/* The summary, the warnings that explain it, JSON; the exit status: 3 when the books do not close. */
static int build_report(struct build *bd)
{
	const struct build_cfg *cfg = bd->cfg;
	char msg[256];
	bool ok = xevb_engine_check(&bd->e, msg, sizeof(msg));
	const struct xevb_builder *core = xevb_engine_core(&bd->e);

	xevb_report_summary(stderr, &bd->local);
	explain_wrong_run(&bd->local.core);
	if (core)
		explain_evictions(xevb_builder_stats(core), xevb_now_ns() - bd->t_start, cfg->window,
				  cfg->timeout_ms, bd->e.bcfg.max_frames_held);
	if (core && bd->bctl)
		explain_late_reasks(xevb_builder_stats(core), xevb_now_ns() - bd->t_start, cfg->window,
				    cfg->cc.reask_ns, build_ctl_reasked(bd->bctl));
	if (!ok)
		xevb_err("accounting check FAILED: %s", msg);
	else
		fprintf(stderr, "accounting: every fragment received is in an event or counted by reason\n");
	if (bd->bctl) {
		build_ctl_summary(bd->bctl, stderr);
		if (cfg->co.json) {
			printf("{\"dfm_ctl\":");
			build_ctl_json(bd->bctl, stdout);
			printf("}\n");
		}
	}
	if (cfg->co.json)
		xevb_engine_json(&bd->e, stdout);
	if (cfg->co.json)
		xevb_report_json(stdout, &bd->local);
	return ok ? 0 : 3;
}

static void end_watcher(struct build *bd)
{
	if (bd->watcher <= 0)
		return;
	if (bd->unpriv) {
		xevb_privs_end_watcher(bd->watcher, bd->watcher_fd, 5000);
	} else {
		/* Still root: we cleaned up above; the watcher must not again. */
		kill(bd->watcher, SIGKILL);
		waitpid(bd->watcher, NULL, 0);
		close(bd->watcher_fd);
	}
}

static void build_teardown(struct build *bd)
{
	xevb_metrics_stop(bd->mx);
	if (bd->e.c.xdp) {
		xevb_xsk_close(&bd->e.xsk);
		if (bd->e.ipfrag_on)
			xevb_sock_close(&bd->e.ipfrag);
		/* Unprivileged: detaching would fail; the root watcher does it. */
		if (!bd->unpriv)
			xevb_loader_detach(&bd->e.ld);
	} else {
		xevb_sock_close(&bd->e.sock);
		if (bd->e.pass_xdp && !bd->unpriv)
			xevb_loader_detach(&bd->e.ld);
	}
	build_ctl_free(bd->bctl);
	xevb_output_close(&bd->e.out);
	xevb_engine_free(&bd->e);
	if (bd->snap) {
		munmap(bd->snap, sizeof(*bd->snap));
		if (!bd->unpriv)
			unlink(bd->snap_path);
	}
	end_watcher(bd);
}

int cmd_build(int argc, char **argv)
{
	static struct build_cfg cfg;
	static struct build bd;
	int rc;

	if ((rc = xevb_runcfg_start_opts(&argc, &argv, XEVB_RC_BUILD, &build_cmd)) > 1)
		return rc;
	rc = build_opts_parse(argc, argv, &cfg);
	if (rc >= 0)
		return rc;
	if (!build_privileges(&cfg, &bd.privs))
		return 2;
	if (!output_dir_ok(&cfg, &bd.privs))
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (!core_setup(&bd, &cfg))
		return 1;
	rc = 1;
	if (build_setup(&bd)) {
		if (xevb_engine_run(&bd.e, &stop)) {
			rc = -1;
			say_why(&bd);
		}
	}
	if (rc < 0) {
		build_stop(&bd);
		rc = build_report(&bd);
	} else {
		/* The start failed: no empty run file left to refuse the next start. */
		xevb_output_remove_empty_file(&bd.e.out);
	}
	build_teardown(&bd);
	return rc;
}

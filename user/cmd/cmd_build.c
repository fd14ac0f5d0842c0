// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb build: the gateway. Receives MEPs (AF_XDP behind the XDP steering
 * program, or a kernel socket), builds events, forwards them to farm nodes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
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
#include <xevb/builder.h>
#include <xevb/cli.h>
#include <xevb/loader.h>
#include <xevb/mep_parse.h>
#include <xevb/metrics.h>
#include <xevb/notify.h>
#include <xevb/output.h>
#include <xevb/privdrop.h>
#include <xevb/probes.h>
#include <xevb/shape_ctl.h>
#include <xevb/report.h>
#include <xevb/runcfg.h>
#include <xevb/shed.h>
#include <xevb/stall_drain.h>
#include <xevb/sock_rx.h>
#include <xevb/xsk_meta.h>
#include <xevb/xsk_rx.h>
#include "build_ctl.h"
#include "build_workers.h"
#include "cmds.h"

#define RX_BATCH 64
#define RX_BATCH_MAX 256

enum {
	O_DEV = 'd', O_MODE = 'm', O_SOURCES = 's', O_QUEUES = 'q', O_OUTPUT = 'o',
	O_XDPMODE = 256, O_PROTO, O_UDPPORT, O_UDP, O_WINDOW, O_TIMEOUT,
	O_POLICY, O_RUN, O_FRAMES, O_FRAMESIZE, O_RXRING, O_SINK, O_NOFWD,
	O_SINK_PACING = 0x5e00,
	O_BUSY = 0x5e01, O_XDPFILTER, O_FORCE, O_EXIT_EOR, O_COPY, O_BARE,
	O_USER, O_DROP, O_SELFTEST, O_ALLOWSRC, O_BINDSRC, O_KEEPPRIVS,
	O_DFM, O_CTLPORT, O_CREDITS, O_BUSYHI, O_BUSYLO, O_REASK, O_MAXREASK, O_SINKCTL, O_SINKDEAD,
	O_BACKLOG, O_ID, O_CONFIG,
	O_RXBATCH = 0x7e00, O_BUSYBUDGET, O_NOHUGE, O_NICE, O_FIFO,
	O_NOXDPMETA = 0x6d00,
	O_ZEROCOPY = 0x7f00,
	O_WORKERS = 0x5f00, O_CPUS, O_OWNBLOCK, O_COALESCE,
	O_NAP = 0x6e00,
	O_NOSHED = 0x5d00,
};

static const struct xevb_opt opts[] = {
	{ "dev", O_DEV, "IFACE", "interface the sources send to (required)" },
	{ "mode", O_MODE, "xdp|socket", "receive path: AF_XDP behind XDP (default) or a kernel socket" },
	{ "sources", O_SOURCES, "LIST", "expected source_ids, e.g. 0-125 (required)" },
	{ "xdp-mode", O_XDPMODE, "native|generic", "XDP attach mode (default native; generic only if asked)" },
	{ "queues", O_QUEUES, "LIST", "receive queues to open AF_XDP sockets on (default 0)" },
	{ "workers", O_WORKERS, "N", "receive threads, queue i served by worker i % N; events owned by id block (default 1)" },
	{ "cpus", O_CPUS, "LIST", "--workers: pin worker w to the w-th CPU of LIST (default: CPU w)" },
	{ "owner-block", O_OWNBLOCK, "N", "--workers: consecutive event_ids per owner, power of 2 (default 1024)" },
	{ "coalesce-us", O_COALESCE, "US", "nap US after work before sleeping, so a wake-up takes a batch (default 200 with --workers > 1, else 0; with --workers 1 it selects the worker loop)" },
	{ "proto", O_PROTO, "N", "raw IPv4 protocol of the MEPs (default 253, 0 = off)" },
	{ "udp-port", O_UDPPORT, "N", "UDP port of the MEPs (default 23900, 0 = off)" },
	{ "udp", O_UDP, NULL, "socket mode: receive on the UDP port instead of raw IP; XDP mode: take IP-fragmented MEPs (reassembled by the kernel) on the UDP port instead of raw IP" },
	{ "window", O_WINDOW, "N", "open events at most (default 4096)" },
	{ "timeout-ms", O_TIMEOUT, "MS", "incomplete event timeout (default 1000, 0 = none)" },
	{ "timeout-policy", O_POLICY, "emit|discard", "what to do with a timed-out event (default emit)" },
	{ "run", O_RUN, "N", "run number to accept (default: the DFM's with --dfm, else 1, as xevb source and dfm)" },
	{ "frames", O_FRAMES, "N", "frames per queue (power of 2, default 16384)" },
	{ "frame-size", O_FRAMESIZE, "BYTES", "2048 or 4096 (default: 2048 where the device MTU fits, else 4096; socket mode: the MTU's datagram, at least 4096)" },
	{ "rx-ring", O_RXRING, "N", "AF_XDP RX ring entries (default 4096)" },
	{ "sink", O_SINK, "ADDR:PORT", "farm node to forward to (repeatable; round robin)" },
	{ "output", O_OUTPUT, "FILE", "write built events to FILE instead" },
	{ "no-forward", O_NOFWD, NULL, "build and release events without sending them (measurement)" },
	{ "zerocopy", O_ZEROCOPY, NULL, "send to farm nodes with MSG_ZEROCOPY (frames held until the kernel is done)" },
	{ "sink-pacing", O_SINK_PACING, "RATE", "pace each farm-node connection at RATE bits/s (SO_MAX_PACING_RATE)" },
	{ "bare", O_BARE, NULL, "receive and release frames, count them, build nothing (receive ceiling)" },
	XEVB_OPT_DURATION,
	{ "exit-on-eor", O_EXIT_EOR, NULL, "stop once every source has ended the run and all is flushed (with --dfm: at the DFM's BYE; END_OF_RUN flags in the data are only counted)" },
	XEVB_OPT_INTERVAL,
	{ "busy-poll", O_BUSY, NULL, "spin on the rings instead of sleeping in poll(); XDP: preferred busy polling (our loop runs the NAPI)" },
	{ "busy-budget", O_BUSYBUDGET, "N", "--busy-poll: frames the NAPI polls per call (SO_BUSY_POLL_BUDGET, default --rx-batch)" },
	{ "rx-batch", O_RXBATCH, "N", "frames taken from the RX ring per batch (default 64, at most 256)" },
	{ "nap-us", O_NAP, "US", "one worker (XDP, bare or socket): nap US when a turn after work finds nothing, poll() only after an empty nap (default 0: poll() at once)" },
	{ "no-hugepages", O_NOHUGE, NULL, "UMEM on normal pages even where huge pages are reserved" },
	{ "no-shed", O_NOSHED, NULL, "never shed whole events in XDP under overload (default: shed, the same event id blocks from every source, so frames are not lost at random and events torn; socket mode attaches the XDP program in pass mode for it)" },
	{ "no-xdp-meta", O_NOXDPMETA, NULL, "XDP mode, one worker: the XDP program does not hand its parse result over in XDP metadata; every frame is parsed again here" },
	{ "nice", O_NICE, "N", "run at nice N (-20..19): ahead of a NAPI thread sharing our core" },
	{ "fifo", O_FIFO, "PRIO", "run SCHED_FIFO at PRIO (1..99): a NAPI thread on our core runs only while we wait in poll()" },
	{ "xdp-filter", O_XDPFILTER, NULL, "drop unknown source_ids already in XDP" },
	{ "allow-src", O_ALLOWSRC, "ADDR", "XDP drops MEPs from IPv4 sources not given here (IP-fragmented ones: the builder, after reassembly; repeatable)" },
	{ "bind-src", O_BINDSRC, "IDS=ADDR", "XDP drops MEPs of source_ids IDS not from ADDR, counted src_addr_mismatch (IP-fragmented ones: the builder, after reassembly; repeatable; a run configuration gives one per source)" },
	{ "copy", O_COPY, NULL, "force AF_XDP copy mode" },
	{ "force", O_FORCE, NULL, "replace an XDP program that xevb did not load" },
	XEVB_OPT_JSON,
	{ "user", O_USER, "NAME", "after set-up, run as NAME with no capability, a root helper detaches at exit (default nobody)" },
	{ "drop-privileges", O_DROP, NULL, "same as --user nobody (the default as root)" },
	{ "keep-privileges", O_KEEPPRIVS, NULL, "stay root with every capability for the whole run (default: drop them after set-up)" },
	{ "selftest-privs", O_SELFTEST, NULL, "after dropping, try attach/detach/map updates and report (JSON)" },
	XEVB_OPT_QUIET,
	XEVB_OPT_KEY_FILE,
	XEVB_OPT_METRICS,
	XEVB_OPT_VERBOSE,
	{ "dfm", O_DFM, "ADDR:PORT", "take event assignments from this data-flow manager (docs/control-protocol.md)" },
	{ "ctl-port", O_CTLPORT, "N", "--dfm: our control port (default 23902)" },
	{ "credits", O_CREDITS, "N", "--dfm: events the DFM may have outstanding here (default 64)" },
	{ "busy-high", O_BUSYHI, "X", "--dfm: Busy above X x credits events held (default 1.2)" },
	{ "busy-low", O_BUSYLO, "X", "--dfm: not-Busy below X x credits (default 0.2)" },
	{ "reask-ms", O_REASK, "MS", "--dfm: re-ask the missing sources after MS (default 100)" },
	{ "max-reasks", O_MAXREASK, "N", "--dfm: re-asks per event before it goes incomplete (default 3)" },
	{ "sink-ctl-port", O_SINKCTL, "N", "--dfm: farm nodes' control port for credits (default 23904)" },
	{ "sink-dead-ms", O_SINKDEAD, "MS", "--dfm: a farm node silent this long gets nothing (default 500)" },
	{ "backlog", O_BACKLOG, "N", "--dfm: built events held while no farm node has credit (default 4096)" },
	{ "id", O_ID, "N", "--dfm: our id in control messages (default 0); with --config: run as its [builder N]" },
	{ "config", O_CONFIG, "FILE", "start from a run configuration (docs/run-config.md); explicit options override it" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "build",
	.summary = "Build events from the fragments that sources send to IFACE and forward them to farm nodes.",
	.usage = "--dev IFACE --sources LIST [options]",
	.examples =
		"  xevb build --dev eth0 --sources 0-7 --sink 198.18.3.1:5000 --sink 198.18.3.2:5000\n"
		"  xevb build --dev eth0 --sources 0-125 --no-forward --duration 10\n"
		"  xevb build --dev eth0 --mode socket --udp --sources 0-3 --output /tmp/events.bin\n"
		"  xevb build --dev eth0 --sources 0-125 --bare --duration 10    # receive ceiling\n"
		"  xevb build --dev eth0 --mode socket --udp --sources 0-7 --dfm 198.18.4.1:23901 --credits 32 \\\n"
		"      --sink 198.18.3.1:5000 --sink 198.18.3.2:5000 --exit-on-eor\n",
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct build {
	bool xdp;
	bool bare;
	/* Socket mode: the steering program in pass mode in front of the socket (it sheds). */
	bool pass_xdp;
	struct xevb_loader ld;
	struct xevb_xsk xsk;
	struct xevb_sock sock;
	/*
	 * XDP path: IPv4-fragmented MEPs go to the kernel (verdict
	 * ip_fragment); its reassembled datagrams come from this socket,
	 * their frames numbered from ipfrag_base in the builder's index space.
	 */
	bool ipfrag_on;
	uint32_t ipfrag_base;
	struct xevb_sock ipfrag;
	struct xevb_builder *b;
	struct xevb_output out;
	struct xevb_parse_cfg pcfg;
	struct xevb_snapshot *snap;  /* mapped stats file */
	struct xevb_snapshot local;
	struct build_ctl *bctl;      /* --dfm */
	struct bw *bw;               /* --workers > 1 */
	char snap_path[256];
	uint64_t rx_frames, rx_bytes, rx_not_mep, batches, polls;
	uint64_t rx_meta, rx_meta_fallback;
	uint32_t meta_cookie;        /* non-zero: the XDP program writes XDP meta (xdp_meta.h) */
	bool unpriv;                 /* privileges dropped: the watcher cleans up */
	pid_t watcher;
	int watcher_fd;
	const char *dev;
	/* Whole-event shedding (shed.h): the controller, fed every SHED_TICK_NS */
	bool shed_on;
	struct xevb_shed shed;
	uint64_t shed_next_ns;
	uint64_t shed_kdrops;        /* the receive sockets' drop counters at the last tick */
	uint64_t shed_rx;            /* rx_frames at the last tick (one worker) */
	uint64_t shed_out_bytes;     /* output bytes sent at the last tick */
	uint64_t shed_out_dropped;   /* events dropped for backlog at the last tick */
};

#define SHED_TICK_NS 2000000ull
#define SOCK_SHED_RING 8192u   /* frames: the socket queue as the controller sees it (shed_queue) */
/* XDP path: frames of the device MTU's datagram on the reassembled datagrams' socket (big buffers aside). */
#define IPFRAG_FRAMES 256

/* In the root watcher as it starts: the builder's connections are not its own. */
static void watcher_start(void *ctx)
{
	struct build *bd = ctx;

	xevb_output_close(&bd->out);
}

/* In the root watcher, once the builder is gone. */
static void watcher_cleanup(void *ctx)
{
	struct build *bd = ctx;
	char path[256];

	if (bd->xdp || bd->pass_xdp)
		xevb_loader_detach(&bd->ld);
	if (!xevb_run_path(bd->dev, "stats", path, sizeof(path)))
		unlink(path);
}

/*
 * Frames open events may hold: the rest must cover a full RX ring (AF_XDP:
 * the fill ring refills it) or a receive batch (socket), or the kernel
 * drops packets at random and every event is torn; the builder evicts its
 * oldest events instead (include/xevb/builder.h, max_frames_held).
 */
static uint32_t frames_for_events(bool socket_mode, uint32_t frames, uint32_t rx_ring,
				  uint32_t n_queues)
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
static void explain_evictions(const struct xevb_builder_stats *st, uint64_t elapsed_ns,
			      uint32_t window, uint32_t timeout_ms, uint32_t max_frames_held)
{
	double rate = elapsed_ns ? (double)st->events_opened * 1e9 / (double)elapsed_ns : 0;
	double done = (double)(st->events_complete + st->events_incomplete + st->events_discarded);

	if (!st->events_evicted || rate <= 0)
		return;
	xevb_warn("%llu event(s) (%.2f%% of those built) left before their --timeout-ms %u: at %.0f events/s "
		  "the window of %u ids lasts %.0f ms (and %u frames may be held by open events); if no "
		  "packet was lost before the builder (seq_gaps, XDP and socket drops 0), a source lags the "
		  "others by more than that: raise --window and --frames",
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
	xevb_warn("all %llu fragment(s) were of another run than %u: give --run N, the run the sources send "
		  "(or [run] number in the run configuration); the builder never takes it from the data",
		  (unsigned long long)st->drops[XEVB_DROP_WRONG_RUN], st->run_number);
}

/*
 * At stop, DFM mode: fragments came in behind the window while events were
 * re-asked. The answers to a re-ask come after --reask-ms and the sources'
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
	xevb_warn("%llu fragment(s) came after their event had left, and %llu event(s) were re-asked: at %.0f "
		  "events/s the window of %u ids lasts %.0f ms; re-sent fragments that come later than that (after "
		  "--reask-ms %llu and the sources' answer time) find their event gone and it is lost to the DFM: "
		  "keep both under %.0f ms, or raise --window",
		  (unsigned long long)st->drops[XEVB_DROP_LATE], (unsigned long long)reasked, rate, window, lasts_ms,
		  (unsigned long long)(reask_ns / 1000000), lasts_ms);
}

static void emit_cb(void *ctx, const struct xevb_event *ev)
{
	struct build *bd = ctx;
	if (bd->bctl)
		build_ctl_emit(bd->bctl, ev);
	else
		xevb_output_emit(&bd->out, ev);
}

/* --no-forward: runs of events are counted whole, never made one by one. */
static void emit_run_cb(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes)
{
	struct build *bd = ctx;

	xevb_output_emit_run(&bd->out, first, n, wire_bytes);
}

static void release_now(void *ctx, uint32_t idx)
{
	struct build *bd = ctx;
	if (!bd->xdp)
		xevb_sock_release(&bd->sock, idx);
	else if (__builtin_expect(idx >= bd->ipfrag_base, 0))
		xevb_sock_release(&bd->ipfrag, idx - bd->ipfrag_base);
	else
		xevb_xsk_release(&bd->xsk, idx);
}

static void release_cb(void *ctx, uint32_t idx)
{
	struct build *bd = ctx;
	/* --zerocopy: a send may still read the frame; it comes back later. */
	if (bd->out.zc && xevb_output_hold(&bd->out, idx))
		return;
	release_now(ctx, idx);
}

#define PREFETCH_AHEAD 2

static inline void prefetch_frame(const uint8_t *p, uint32_t len)
{
	for (uint32_t off = 0; off < len; off += 64)
		__builtin_prefetch(p + off, 0, 3);
}

/*
 * Meta prefetch: the meta sits in the line before the frame; the headers,
 * MEP header and first record in the frame's first one or two lines.
 */
#define META_AHEAD 4

static inline void prefetch_meta(const uint8_t *p)
{
	__builtin_prefetch(p - XEVB_XDP_META_LEN, 1, 3);
	__builtin_prefetch(p + 64, 0, 3);
}

/*
 * The full parser, then the builder; a frame that is no MEP goes back at
 * once (socket path: malformed packets land here; AF_XDP: only a bypassed
 * program lets one through, XDP judged every frame). A segment (wire
 * format 1.1) is the builder's to count (xevb_builder_add_segment).
 */
/* A frame xevb_classify judged res (pi, frags): into the core, or released and counted. */
static inline void add_parsed(struct build *bd, uint32_t idx, const uint8_t *data, int res,
			      const struct xevb_pkt_info *pi, const struct xevb_frag_ref *frags, uint64_t now)
{
	if (res == XEVB_RES_MEP) {
		xevb_builder_add_mep(bd->b, idx, data, pi, frags, now);
		return;
	}
	if (res == XEVB_RES_SEGMENT) {
		xevb_builder_add_segment(bd->b, idx, data, pi, frags, now);
		return;
	}
	bd->rx_not_mep++;
	release_cb(bd, idx);
}

static inline void parse_and_add(struct build *bd, uint32_t idx, const uint8_t *data,
				 uint32_t len, uint64_t now, struct xevb_frag_ref *frags)
{
	struct xevb_pkt_info pi;
	int res = xevb_classify(data, data + len, len, &bd->pcfg, &pi, frags);

	/* Socket mode: a datagram over the MTU was IP-fragmented, no XDP program saw it whole. */
	if (!bd->xdp && bd->sock.mtu && len > bd->sock.mtu && xevb_sock_src_refused(&bd->sock, res, &pi, len)) {
		release_cb(bd, idx);
		return;
	}
	add_parsed(bd, idx, data, res, &pi, frags, now);
}

/*
 * AF_XDP with XDP meta: the parse result the program left in front of a
 * consecutive MEP, booked without a walk over its records (frags NULL);
 * any other frame through the full parser.
 */
static void handle_batch_meta(struct build *bd, uint32_t n, const uint32_t *idx,
			      const uint8_t **data, const uint32_t *len, uint64_t now,
			      struct xevb_frag_ref *frags)
{
	for (uint32_t i = 0; i < n && i < META_AHEAD; i++)
		if (idx[i] < bd->xsk.n_umem)
			prefetch_meta(data[i]);
	for (uint32_t i = 0; i < n; i++) {
		struct xevb_pkt_info pi;
		int res = -1;

		if (i + META_AHEAD < n && idx[i + META_AHEAD] < bd->xsk.n_umem)
			prefetch_meta(data[i + META_AHEAD]);
		bd->rx_bytes += len[i];
		/* Bounce buffers (jumbo frames) have no headroom, and never a meta. */
		if (idx[i] < bd->xsk.n_umem) {
			res = xevb_xsk_meta_pi(data[i], len[i], bd->meta_cookie, &pi);
			/* The UMEM is ours, writable: the chunk goes back without it. */
			xevb_xsk_meta_clear((uint8_t *)(uintptr_t)data[i]);
		}
		if (res == XEVB_RES_MEP) {
			bd->rx_meta++;
			xevb_builder_add_mep(bd->b, idx[i], data[i], &pi, NULL, now);
			continue;
		}
		bd->rx_meta_fallback++;
		/* The parser reads every record: fetch the rest of the frame now. */
		prefetch_frame(data[i], len[i]);
		parse_and_add(bd, idx[i], data[i], len[i], now, frags);
	}
	bd->rx_frames += n;
	bd->batches++;
}

static void handle_batch(struct build *bd, uint32_t n, const uint32_t *idx,
			 const uint8_t **data, const uint32_t *len, uint64_t now)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];

	XEVB_PROBE(batch_received, n, now);
	if (bd->bare) {
		/* The receive ceiling: what the ring loop costs without the builder. */
		for (uint32_t i = 0; i < n; i++) {
			bd->rx_bytes += len[i];   /* socket path; AF_XDP: replaced in snapshot() */
			release_cb(bd, idx[i]);
		}
		bd->rx_frames += n;
		bd->batches++;
		return;
	}
	if (bd->meta_cookie) {
		handle_batch_meta(bd, n, idx, data, len, now, frags);
		return;
	}
	/*
	 * The kernel's copy into the UMEM leaves the frames in memory, not in
	 * our cache (and the RX ring holds thousands of frames): every record
	 * header the parser reads would be a stall. Fetch PREFETCH_AHEAD frames
	 * ahead so their lines arrive while earlier frames are built.
	 */
	for (uint32_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
		prefetch_frame(data[i], len[i]);
	for (uint32_t i = 0; i < n; i++) {
		if (i + PREFETCH_AHEAD < n)
			prefetch_frame(data[i + PREFETCH_AHEAD], len[i + PREFETCH_AHEAD]);
		bd->rx_bytes += len[i];
		parse_and_add(bd, idx[i], data[i], len[i], now, frags);
	}
	bd->rx_frames += n;
	bd->batches++;
}

/*
 * XDP path: datagrams the kernel reassembled from IPv4 fragments, through
 * the same parser and builder core as every frame (their frame indices
 * follow the AF_XDP ones).
 */
static uint32_t rx_ipfrag(struct build *bd, uint64_t now)
{
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];
	uint32_t idx[XEVB_SOCK_BATCH], len[XEVB_SOCK_BATCH];
	const uint8_t *data[XEVB_SOCK_BATCH];
	int n = xevb_sock_rx(&bd->ipfrag, idx, data, len);

	static bool warned;

	if (n <= 0) {
		if (n < 0 && !warned) {
			warned = true;
			xevb_warn("receiving reassembled IPv4 datagrams failed: %s; IP-fragmented MEPs may be lost "
				  "(the kernel counts them: nstat -a IpReasmOKs)", strerror(-n));
		}
		return 0;
	}
	for (int i = 0; i < n; i++) {
		uint32_t f = idx[i] + bd->ipfrag_base;
		struct xevb_pkt_info pi;
		int res = xevb_classify(data[i], data[i] + len[i], len[i], &bd->pcfg, &pi, frags);

		/* XDP never saw this MEP whole: --bind-src is judged here. */
		if (xevb_sock_src_refused(&bd->ipfrag, res, &pi, len[i])) {
			release_cb(bd, f);
			continue;
		}
		add_parsed(bd, f, data[i], res, &pi, frags, now);
	}
	return (uint32_t)n;
}

/* The AF_XDP sockets' drops: the builder did not keep up (XDP_STATISTICS, a getsockopt each). */
static uint64_t shed_xsk_drops(struct build *bd)
{
	struct xevb_xsk_stats st;
	uint64_t n = 0;

	for (uint32_t q = 0; q < bd->xsk.n_queues; q++)
		if (!xevb_xsk_stats(&bd->xsk, q, &st))
			n += st.rx_dropped + st.rx_ring_full + st.rx_fill_ring_empty_descs;
	return n;
}

/*
 * The kernel counts a socket's queue in truesize, not in frames: about a
 * power-of-two buffer for the frame and the skb's own overhead (a
 * 1164-byte frame takes 2304 bytes on veth). The controller compares the
 * queue's growth with the frames we took, so give it frames.
 */
static uint32_t sock_truesize(const struct build *bd)
{
	uint64_t avg = bd->rx_frames ? bd->rx_bytes / bd->rx_frames : 1514;
	uint64_t buf = 512;

	while (buf < avg + 384 && buf < (1u << 16))   /* + headroom and skb_shared_info */
		buf <<= 1;
	return (uint32_t)buf + 256;                   /* + struct sk_buff */
}

/*
 * The receive queue the controller watches, and the kernel's drop counter
 * (a running total) in front of it: the AF_XDP RX rings (two loads a
 * queue), or the kernel socket's buffer (SO_MEMINFO, one getsockopt).
 */
static uint64_t shed_queue(struct build *bd, struct xevb_shed_in *in)
{
	struct xevb_sock_queue sq;
	uint32_t ts;

	if (bd->xdp) {
		for (uint32_t q = 0; q < bd->xsk.n_queues; q++) {
			uint32_t size;

			in->ring_used += xevb_xsk_rx_queued(&bd->xsk, q, &size);
			in->ring_size += size;
		}
		return shed_xsk_drops(bd);
	}
	if (xevb_sock_queue(&bd->sock, &sq))
		return bd->shed_kdrops;   /* no reading: no pressure seen this tick */
	ts = sock_truesize(bd);
	in->ring_used = sq.queued / ts;
	in->ring_size = sq.size / ts;
	/*
	 * The controller reads half full as pressure and under 1/8 as calm:
	 * the socket's buffer holds ~55k frames, which let a backlog of tens
	 * of milliseconds build before a cut and the builder idle for as long
	 * after it (13-18% of its core at 1.5-10x offered). Judged as a ring
	 * of SOCK_SHED_RING frames, it is as quick as an AF_XDP ring.
	 */
	if (in->ring_size > SOCK_SHED_RING)
		in->ring_size = SOCK_SHED_RING;
	return sq.drops;
}

/*
 * The guard's count of frames waiting in each queue's RX ring made exact
 * again: frames the kernel dropped on the way never reached the ring, and
 * a release raced by a worker is a few frames off. Every shedding tick.
 */
static void guard_resync(struct build *bd, uint64_t now)
{
	struct xevb_shed_gate *g = bd->ld.shed_gate;

	for (uint32_t q = 0; q < bd->xsk.n_queues; q++) {
		uint32_t qid = bd->xsk.q[q].queue_id, size, queued;
		uint64_t steered, have;

		if (qid >= bd->xsk.guard_queues)
			continue;
		/* Steered first: a frame steered in between only makes the guard stricter. */
		steered = __atomic_load_n(&g->steered[qid], __ATOMIC_RELAXED);
		queued = xevb_xsk_rx_queued(&bd->xsk, q, &size);
		have = __atomic_load_n(&g->released[qid], __ATOMIC_RELAXED);
		__atomic_fetch_add(&g->released[qid], steered - queued - have, __ATOMIC_RELAXED);
		/* The one loop that ticks also reads the ring: it is running (workers tick elsewhere). */
		if (!bd->bw)
			__atomic_store_n(&g->released_ns[qid], now, __ATOMIC_RELAXED);
	}
}

/*
 * 3/4 of what a queue's ring can take: its RX ring, or the UMEM frames
 * the fill ring can still offer when open events hold the rest (zero
 * copy: a frame stays with its event), whichever is less. And the level
 * past which a new block would not fit even if the builder is running:
 * all of that room but one block's frames. Every tick.
 */
static void guard_set_limit(struct build *bd)
{
	const struct xevb_builder_stats *st = bd->bw ? NULL : xevb_builder_stats(bd->b);
	uint64_t held = st ? st->frames_held / bd->xsk.n_queues : 0;
	uint64_t room = bd->xsk.frames_per_q > held ? bd->xsk.frames_per_q - held : 0;
	uint64_t limit, full, block = 0;
	uint32_t ring;

	xevb_xsk_rx_queued(&bd->xsk, 0, &ring);
	if (room > ring)
		room = ring;
	/*
	 * Frames a block brings: its ids x sources / fragments a MEP, and at
	 * least a MEP per source (a MEP longer than a block decides for the
	 * blocks it spans). Room for two of them is enough for the blocks
	 * already admitted; where blocks are that small, refuse only that
	 * close to a full ring.
	 */
	if (st && st->frags_received) {
		block = ((uint64_t)bd->local.n_sources << XEVB_SHED_BLOCK_SHIFT) * st->packets / st->frags_received;
		if (block < bd->local.n_sources)
			block = bd->local.n_sources;
	}
	limit = room / 4 * 3;
	if (block && room > 2 * block && room - 2 * block > limit)
		limit = room - 2 * block;
	full = block && room > block ? room - block : 0;
	/* Never 0, which would turn the guard off. */
	bd->ld.shed_gate->guard_limit = limit ? (uint32_t)limit : 1;
	bd->ld.shed_gate->guard_full = full > limit ? (uint32_t)full : 0;
}

/*
 * XDP mode: the program refuses new blocks whole while more than 3/4 of a
 * queue's RX ring waits (shed.h, "ring guard"): the rest of the ring takes
 * the blocks already admitted. Not with multi-buffer frames, whose
 * descriptors and frames differ in number.
 */
static void guard_start(struct build *bd)
{
	if (!bd->xdp || bd->xsk.sg || !bd->xsk.n_queues)
		return;
	bd->xsk.guard_released = (uint64_t *)bd->ld.shed_gate->released;
	bd->xsk.guard_released_ns = (uint64_t *)bd->ld.shed_gate->released_ns;
	bd->xsk.guard_now = xevb_now_ns();
	bd->xsk.guard_queues = XEVB_GUARD_QUEUES;
	guard_resync(bd, bd->xsk.guard_now);
	guard_set_limit(bd);
}

/*
 * Unless --no-shed, --bare or --dfm: the lowest source counts the events
 * shed. XDP mode, or socket mode with the program in pass mode.
 */
static void shed_start(struct build *bd, const uint16_t *sources, int n_sources)
{
	struct xevb_shed_in in = { 0 };
	uint32_t ref = UINT32_MAX;

	if (!bd->ld.shed_gate)
		return;
	for (int i = 0; i < n_sources; i++)
		if (sources[i] < ref)
			ref = sources[i];
	bd->ld.shed_gate->ref_source = ref;
	/*
	 * Output that backs up past half the farm nodes' buffers is pressure
	 * too: shedding in XDP costs less than building events to drop them.
	 */
	struct xevb_shed_cfg sc = { .backlog_max = (uint64_t)bd->out.n_sinks * XEVB_OUT_SEND_BUF / 2 };

	xevb_shed_init(&bd->shed, &sc);
	bd->shed_kdrops = shed_queue(bd, &in);
	bd->shed_on = true;
	guard_start(bd);
}

/*
 * One step of the shedding controller, every SHED_TICK_NS: the receive
 * queue's fill and the kernel's drops since the last step.
 */
static void shed_tick(struct build *bd, uint64_t now)
{
	struct xevb_shed_in in = { 0 };
	uint32_t accept;
	uint64_t kd;

	if (!bd->shed_on || now < bd->shed_next_ns)
		return;
	bd->shed_next_ns = now + SHED_TICK_NS;
	if (bd->xsk.guard_released) {
		guard_resync(bd, now);
		guard_set_limit(bd);
	}
	kd = shed_queue(bd, &in);
	/* The socket's counter is 32 bits: the difference survives its wrap. */
	in.drops = bd->xdp ? kd - bd->shed_kdrops : (uint32_t)(kd - bd->shed_kdrops);
	bd->shed_kdrops = kd;
	/* What this loop served (with workers their frames are not counted here). */
	if (!bd->bw) {
		in.consumed = bd->rx_frames - bd->shed_rx;
		bd->shed_rx = bd->rx_frames;
	}
	in.backlog = xevb_output_backlog_bytes(&bd->out);
	in.out_sent = bd->out.st.bytes - bd->shed_out_bytes;
	bd->shed_out_bytes = bd->out.st.bytes;
	in.out_dropped = bd->out.st.dropped_backlog - bd->shed_out_dropped;
	bd->shed_out_dropped = bd->out.st.dropped_backlog;
	accept = xevb_shed_tick(&bd->shed, bd->ld.shed_gate, &in);
	if (XEVB_PROBE_ENABLED(shed_tick)) {
		unsigned cut = bd->shed.last_cut;

		/* In registers: the probe's operands cannot name a static plus an offset. */
		__asm__ volatile("" : "+r"(accept), "+r"(cut));
		XEVB_PROBE(shed_tick, accept, cut, in.ring_used, in.consumed, in.backlog, in.out_sent);
	}
}

/*
 * Socket mode: the steering program in pass mode in front of the socket,
 * so that overload sheds whole events (the same controller as XDP mode)
 * instead of overflowing the socket's buffer at random. Where it cannot be
 * attached the builder runs on without it, and says what that costs.
 */
static void sock_shed_start(struct build *bd, const char *dev, bool generic, bool force,
			    const uint16_t *sources, int n_sources)
{
	struct xevb_loader_cfg lc = {
		.ifname = dev, .mode = generic ? XEVB_XDP_GENERIC : XEVB_XDP_NATIVE,
		.ip_proto = bd->pcfg.ip_proto, .udp_port = bd->pcfg.udp_port, .force = force,
		.pass = true,
	};

	if (xevb_loader_attach(&bd->ld, &lc) || !bd->ld.shed_gate) {
		if (bd->ld.prog)
			xevb_loader_detach(&bd->ld);
		xevb_warn("socket mode without shedding: the XDP program could not be attached to %s (see "
			  "above). Offered more than it can take, this builder loses frames at random in the "
			  "socket's buffer, which tears events; --no-shed runs so without this warning", dev);
		return;
	}
	bd->pass_xdp = true;
	shed_start(bd, sources, n_sources);
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
		.udp = udp, .ip_proto = (uint8_t)proto, .udp_port = (uint16_t)udp_port, .ifname = bd->dev,
		.n_frames = IPFRAG_FRAMES, .frame_size = xevb_sock_frame_size_for(bd->dev),
		.n_big = XEVB_SOCK_BIG_FRAMES, .mtu = xevb_dev_mtu(bd->dev), .rcvbuf = 16 << 20,
	};

	if (xevb_sock_open(&bd->ipfrag, &sc)) {
		bd->ipfrag_on = false;
		xevb_warn("no socket for IPv4-fragmented MEPs beside AF_XDP (above): they are only counted "
			  "(XDP verdict ip_fragment); free the %s on %s to build them", udp ? "UDP port" : "protocol",
			  bd->dev);
		return;
	}
	xevb_info("IPv4-fragmented MEPs: reassembled by the kernel, received on a %s socket beside AF_XDP "
		  "(%u buffers of %u bytes)", udp ? "UDP" : "raw IPv4", XEVB_SOCK_BIG_FRAMES, XEVB_SOCK_BIG_SIZE);
}

static void snapshot(struct build *bd, struct xevb_snapshot *s)
{
	s->update_ns = xevb_now_ns();
	s->rx_frames = bd->rx_frames;
	s->rx_bytes = bd->rx_bytes;
	s->rx_not_mep = bd->rx_not_mep;
	s->batches = bd->batches;
	s->polls = bd->polls;
	s->rx_meta = bd->rx_meta;
	s->rx_meta_fallback = bd->rx_meta_fallback;
	{
		const struct xevb_sock *ks = bd->xdp ? &bd->ipfrag : &bd->sock;

		s->rx_ipfrag_datagrams = ks->ipfrag_datagrams;
		s->rx_ipfrag_bytes = ks->ipfrag_bytes;
		s->rx_ipfrag_copied = ks->big_copied;
	}
	s->out = bd->out.st;
	s->core = *xevb_builder_stats(bd->b);
	if (bd->bw)
		bw_snapshot(bd->bw, s);
	if (bd->xdp || bd->pass_xdp)
		xevb_xdp_counters_read(bd->ld.counters_fd, s->xdp);
	if (bd->ipfrag_on || !bd->xdp) {
		/* IP-fragmented MEPs refused by --bind-src / --allow-src in user space count where XDP counts the others. */
		const struct xevb_sock *ks = bd->xdp ? &bd->ipfrag : &bd->sock;

		s->xdp[XEVB_XDP_SRC_MISMATCH].packets += ks->src_mismatch_packets;
		s->xdp[XEVB_XDP_SRC_MISMATCH].bytes += ks->src_mismatch_bytes;
		s->xdp[XEVB_XDP_SRC_MISMATCH].frags += ks->src_mismatch_frags;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].packets += ks->src_unknown_packets;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].bytes += ks->src_unknown_bytes;
		s->xdp[XEVB_XDP_UNKNOWN_SRC].frags += ks->src_unknown_frags;
	}
	s->shed_on = bd->shed_on;
	s->shed_accept = bd->shed.accept;
	s->shed_min_accept = bd->shed.min_accept;
	s->shed_ref_source = bd->shed_on ? bd->ld.shed_gate->ref_source : 0;
	s->shed_cuts = bd->shed.cuts;
	s->shed_raises = bd->shed.raises;
	memcpy(s->shed_cuts_by, bd->shed.cuts_by, sizeof(s->shed_cuts_by));
	if (bd->shed_on && bd->ld.shed_gate->guard_limit) {
		s->shed_guard_limit = bd->ld.shed_gate->guard_limit;
		s->shed_guard_refused = bd->ld.shed_gate->guard_refused;
		s->shed_guard_admitted = bd->ld.shed_gate->guard_admitted;
		s->shed_guard_vouched = bd->ld.shed_gate->guard_vouched;
	}
	if (bd->xdp) {
		struct xevb_sock_queue iq;

		/* --bare never reads a frame: take the bytes per frame the program redirected. */
		if (bd->bare && s->xdp[XEVB_XDP_TO_XSK].packets)
			s->rx_bytes = (uint64_t)((double)s->xdp[XEVB_XDP_TO_XSK].bytes /
						 (double)s->xdp[XEVB_XDP_TO_XSK].packets * (double)s->rx_frames);
		for (uint32_t q = 0; q < bd->xsk.n_queues; q++)
			xevb_xsk_stats(&bd->xsk, q, &s->xsk[q]);
		/* The reassembled datagrams' socket: its queue is the only one there is. */
		if (bd->ipfrag_on && !xevb_sock_queue(&bd->ipfrag, &iq) && iq.drops > bd->ipfrag.kernel_drops)
			bd->ipfrag.kernel_drops = iq.drops;
		s->sock_kernel_drops = bd->ipfrag.kernel_drops;
		s->sock_truncated = bd->ipfrag.truncated;
	} else {
		struct xevb_sock_queue sq;

		/* The cmsg total moves only with a packet read; after the last one, ask. */
		if (!xevb_sock_queue(&bd->sock, &sq) && sq.drops > bd->sock.kernel_drops)
			bd->sock.kernel_drops = sq.drops;
		s->sock_kernel_drops = bd->sock.kernel_drops;
		s->sock_truncated = bd->sock.truncated;
	}
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
	mkdir("/run/xevb", 0700);
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
 * data path runs as nobody with no capability, as --drop-privileges would.
 * Where root cannot switch user (a service's capability set without
 * CAP_SETUID and CAP_SETGID, or no user nobody), or a non-root user was given
 * capabilities, it keeps its uid and still gives up every capability.
 */
/*
 * --bind-src IDS=ADDR into bind[source_id]: the one address those ids may
 * come from (a run configuration names each source process's).
 */
static bool parse_bind_src(const char *arg, uint32_t *bind)
{
	static uint16_t list[XEVB_MAX_SOURCES];
	const char *eq = strchr(arg, '=');
	char ids[256];
	struct in_addr a;
	int n;

	if (!eq || (size_t)(eq - arg) >= sizeof(ids) || inet_pton(AF_INET, eq + 1, &a) != 1 || !a.s_addr) {
		xevb_err("--bind-src: '%s' is not IDS=ADDR, such as 0-7=198.18.1.1", arg);
		return false;
	}
	memcpy(ids, arg, (size_t)(eq - arg));
	ids[eq - arg] = 0;
	n = xevb_parse_id_list("bind-src", ids, list, XEVB_MAX_SOURCES);
	if (n < 0)
		return false;
	for (int i = 0; i < n; i++) {
		if (list[i] > XEVB_MAX_SOURCE_ID || (bind[list[i]] && bind[list[i]] != a.s_addr)) {
			xevb_err("--bind-src %s: source_id %u is %s: each id has one address, up to id %d", arg,
				 list[i], list[i] > XEVB_MAX_SOURCE_ID ? "out of range" : "bound twice",
				 XEVB_MAX_SOURCE_ID);
			return false;
		}
		bind[list[i]] = a.s_addr;
	}
	return true;
}

static int default_privs(struct xevb_privs *privs)
{
	bool nobody = getpwnam("nobody") != NULL;

	if (geteuid() == 0 && nobody && xevb_privs_can_switch())
		return xevb_privs_lookup("nobody", privs);
	if (geteuid() == 0)
		xevb_warn("%s: after set-up the data path stays uid 0 with no capability (give it CAP_SETUID "
			  "and CAP_SETGID%s to run as nobody, or --keep-privileges to keep every capability)",
			  nobody ? "no CAP_SETUID/CAP_SETGID" : "no user 'nobody'", nobody ? "" : " and a user nobody");
	xevb_privs_keep_uid(privs);
	return 0;
}

int cmd_build(int argc, char **argv)
{
	static uint16_t sources[XEVB_MAX_SOURCES];
	static struct build bd;
	static const char *sinks[XEVB_MAX_SINKS];
	uint32_t queues[XEVB_XSK_MAX_QUEUES] = { 0 }, n_queues = 1, n_sinks = 0;
	uint32_t window = 4096, timeout_ms = 1000, run = 1, frames = 16384, frame_size = 0;
	uint32_t rx_ring = 4096, interval, proto = XEVB_DEFAULT_IP_PROTO;
	uint32_t udp_port = XEVB_DEFAULT_UDP_PORT;
	uint32_t rx_batch = RX_BATCH, busy_budget = 0;
	bool no_huge = false, no_meta = false, no_shed = false;
	int nice_val = 0, fifo_prio = 0;
	bool set_nice = false;
	bool socket_mode = false, udp = false, nofwd = false, busy = false, xdp_filter = false;
	bool force = false, json, exit_eor = false, copy = false;
	struct xevb_common_opts co = XEVB_COMMON_OPTS_INIT;
	uint64_t duration_ns;
	bool have_run = false, discard = false, generic = false;
	const char *dev = NULL, *output = NULL, *arg, *user = NULL;
	bool selftest = false, keep_privs = false;
	static uint32_t allow_src[64], bind_src[XEVB_MAX_SOURCES];
	uint32_t n_allow = 0;
	bool have_bind = false;
	static struct xevb_privs privs;
	const char *metrics; struct xevb_metrics *mx = NULL;
	int n_sources = 0, c, rc = 1;
	struct xevb_snapshot prev;
	uint32_t n_workers = 1, owner_block = 1024, n_cpus = 0, coalesce_us = UINT32_MAX;
	uint32_t nap_us = 0;
	int cpus[XEVB_HO_MAX_CPUS];
	uint64_t t_start, t_next, now;
	struct build_ctl_cfg cc = {
		.ctl_port = 23902, .sink_ctl_port = 23904, .credits = 64, .busy_high = 1.2, .busy_low = 0.2,
		.reask_ns = 100000000ull, .max_reasks = 3, .sink_dead_ns = 500000000ull, .backlog = 4096,
	};

	if ((c = xevb_runcfg_start(&argc, &argv, XEVB_RC_BUILD)) > 1)
		return c;
	while ((c = xevb_opt_next(argc, argv, opts, &help, &arg)) != -1) {
		int common = xevb_common_opt(c, arg, &co);
		if (common < 0)
			return 2;
		if (common)
			continue;
		switch (c) {
		case O_DEV: dev = arg; break;
		case O_MODE:
			if (!strcmp(arg, "socket")) socket_mode = true;
			else if (strcmp(arg, "xdp")) { xevb_err("--mode: xdp or socket, not '%s'", arg); return 2; }
			break;
		case O_SOURCES:
			n_sources = xevb_parse_id_list("sources", arg, sources, XEVB_MAX_SOURCES);
			if (n_sources < 0) return 2;
			if (sources[n_sources - 1] > XEVB_MAX_SOURCE_ID) {
				xevb_err("--sources: source_ids go up to %d", XEVB_MAX_SOURCE_ID);
				return 2;
			}
			break;
		case O_XDPMODE:
			if (!strcmp(arg, "generic") || !strcmp(arg, "skb")) generic = true;
			else if (strcmp(arg, "native")) { xevb_err("--xdp-mode: native or generic"); return 2; }
			break;
		case O_QUEUES: {
			uint16_t q[XEVB_XSK_MAX_QUEUES];
			int n = xevb_parse_id_list("queues", arg, q, XEVB_XSK_MAX_QUEUES);
			if (n < 0) return 2;
			for (int i = 0; i < n; i++) queues[i] = q[i];
			n_queues = (uint32_t)n;
			break;
		}
		case O_COALESCE: if (!xevb_parse_u32("coalesce-us", arg, 0, 100000, &coalesce_us)) return 2; break;
		case O_NAP: if (!xevb_parse_u32("nap-us", arg, 0, 100000, &nap_us)) return 2; break;
		case O_WORKERS: if (!xevb_parse_u32("workers", arg, 1, 16, &n_workers)) return 2; break;
		case O_OWNBLOCK:
			if (!xevb_parse_u32("owner-block", arg, 1, 1u << 20, &owner_block)) return 2;
			if (owner_block & (owner_block - 1)) { xevb_err("--owner-block: a power of 2 such as 1024"); return 2; }
			break;
		case O_CPUS: {
			uint16_t l[XEVB_HO_MAX_CPUS];
			int n = xevb_parse_id_list("cpus", arg, l, XEVB_HO_MAX_CPUS);
			if (n < 0) return 2;
			for (int i = 0; i < n; i++) cpus[i] = l[i];
			n_cpus = (uint32_t)n;
			break;
		}
		case O_PROTO: if (!xevb_parse_u32("proto", arg, 0, 255, &proto)) return 2; break;
		case O_UDPPORT: if (!xevb_parse_u32("udp-port", arg, 0, 65535, &udp_port)) return 2; break;
		case O_UDP: udp = true; break;
		case O_WINDOW: if (!xevb_parse_u32("window", arg, 1, 1u << 20, &window)) return 2; break;
		case O_TIMEOUT: if (!xevb_parse_u32("timeout-ms", arg, 0, 3600000, &timeout_ms)) return 2; break;
		case O_POLICY:
			if (!strcmp(arg, "discard")) discard = true;
			else if (strcmp(arg, "emit")) { xevb_err("--timeout-policy: emit or discard"); return 2; }
			break;
		case O_RUN: if (!xevb_parse_u32("run", arg, 0, UINT32_MAX, &run)) return 2; have_run = true; break;
		case O_FRAMES: if (!xevb_parse_u32("frames", arg, 64, 1u << 22, &frames)) return 2; break;
		case O_FRAMESIZE: if (!xevb_parse_u32("frame-size", arg, 2048, 65536, &frame_size)) return 2; break;
		case O_RXRING: if (!xevb_parse_u32("rx-ring", arg, 64, 1u << 16, &rx_ring)) return 2; break;
		case O_SINK:
			if (n_sinks == XEVB_MAX_SINKS) { xevb_err("at most %d --sink", XEVB_MAX_SINKS); return 2; }
			sinks[n_sinks++] = arg;
			break;
		case O_OUTPUT: output = arg; break;
		case O_NOFWD: nofwd = true; break;
		case O_SINK_PACING: {
			uint64_t bps;
			if (!xevb_shape_parse_rate("sink-pacing", arg, &bps)) return 2;
			xevb_output_set_pacing(bps / 8);
			break;
		}
		case O_BARE: bd.bare = true; break;
		case O_ZEROCOPY: xevb_output_set_zerocopy(true); break;
		case O_BUSY: busy = true; break;
		case O_BUSYBUDGET: if (!xevb_parse_u32("busy-budget", arg, 1, 1024, &busy_budget)) return 2; busy = true; break;
		case O_RXBATCH: if (!xevb_parse_u32("rx-batch", arg, 1, RX_BATCH_MAX, &rx_batch)) return 2; break;
		case O_NOHUGE: no_huge = true; break;
		case O_NOXDPMETA: no_meta = true; break;
		case O_NOSHED: no_shed = true; break;
		case O_NICE: {
			char *end;
			long v = strtol(arg, &end, 10);
			if (end == arg || *end || v < -20 || v > 19) { xevb_err("--nice: -20..19, not '%s'", arg); return 2; }
			nice_val = (int)v;
			set_nice = true;
			break;
		}
		case O_FIFO: { uint32_t u; if (!xevb_parse_u32("fifo", arg, 1, 99, &u)) return 2; fifo_prio = (int)u; break; }
		case O_XDPFILTER: xdp_filter = true; break;
		case O_COPY: copy = true; break;
		case O_FORCE: force = true; break;
		case O_USER: user = arg; break;
		case O_DROP: if (!user) user = "nobody"; break;
		case O_SELFTEST: selftest = true; break;
		case O_KEEPPRIVS: keep_privs = true; break;
		case O_ALLOWSRC: {
			struct in_addr a;
			if (inet_pton(AF_INET, arg, &a) != 1) {
				xevb_err("--allow-src: '%s' is not an IPv4 address such as 198.18.1.1", arg);
				return 2;
			}
			if (n_allow == 64) { xevb_err("at most 64 --allow-src"); return 2; }
			allow_src[n_allow++] = a.s_addr;
			break;
		}
		case O_BINDSRC: if (!parse_bind_src(arg, bind_src)) return 2; have_bind = true; break;
		case O_EXIT_EOR: exit_eor = true; break;
		case O_DFM: cc.dfm = arg; break;
		case O_CTLPORT: { uint32_t u; if (!xevb_parse_u32("ctl-port", arg, 1, 65535, &u)) return 2; cc.ctl_port = (uint16_t)u; break; }
		case O_SINKCTL: { uint32_t u; if (!xevb_parse_u32("sink-ctl-port", arg, 1, 65535, &u)) return 2; cc.sink_ctl_port = (uint16_t)u; break; }
		case O_CONFIG: if (!xevb_runcfg_was_read()) return 2; break;
		case O_ID: { uint32_t u; if (!xevb_parse_u32("id", arg, 0, 65535, &u)) return 2; cc.id = (uint16_t)u; break; }
		case O_CREDITS: if (!xevb_parse_u32("credits", arg, 1, 1u << 20, &cc.credits)) return 2; break;
		case O_BACKLOG: if (!xevb_parse_u32("backlog", arg, 1, 1u << 20, &cc.backlog)) return 2; break;
		case O_MAXREASK: if (!xevb_parse_u32("max-reasks", arg, 0, 255, &cc.max_reasks)) return 2; break;
		case O_REASK: { uint32_t u; if (!xevb_parse_u32("reask-ms", arg, 1, 600000, &u)) return 2; cc.reask_ns = u * 1000000ull; break; }
		case O_SINKDEAD: { uint32_t u; if (!xevb_parse_u32("sink-dead-ms", arg, 10, 600000, &u)) return 2; cc.sink_dead_ns = u * 1000000ull; break; }
		case O_BUSYHI: case O_BUSYLO: {
			char *end;
			double v = strtod(arg, &end);
			if (end == arg || *end || !(v >= 0 && v <= 100)) { xevb_err("--busy-high/--busy-low: a factor such as 1.2"); return 2; }
			if (c == O_BUSYHI) cc.busy_high = v; else cc.busy_low = v;
			break;
		}
		case 'h': xevb_opt_usage(opts, &help); return 0;
		default: return 2;
		}
	}
	if (optind < argc) {
		xevb_err("unexpected argument '%s' (try --help)", argv[optind]);
		return 2;
	}
	json = co.json;
	metrics = co.metrics;
	interval = xevb_common_interval(&co);
	duration_ns = co.duration_ns;
	if (!dev || !n_sources) {
		xevb_err("--dev and --sources are required (try --help)");
		return 2;
	}
	/* Everything local before anything remote: a typo here must not cost farm-node connections. */
	if (!if_nametoindex(dev)) {
		xevb_err("--dev: no interface '%s' here (ip link show lists them)", dev);
		return 1;
	}
	if (cc.dfm && cc.busy_low > cc.busy_high) {
		xevb_err("--busy-low must not exceed --busy-high");
		return 2;
	}
	if (!frame_size)
		frame_size = socket_mode ? xevb_sock_frame_size_for(dev) : xevb_xsk_frame_size_for(dev);
	if ((frames & (frames - 1)) || (!socket_mode && frame_size != 2048 && frame_size != 4096)) {
		xevb_err("--frames must be a power of 2 and --frame-size 2048 or 4096 in XDP mode");
		return 2;
	}
	if ((nofwd || bd.bare) && (n_sinks || output)) {
		xevb_err("--no-forward or --bare with --sink or --output makes no sense");
		return 2;
	}
	if (!nofwd && !bd.bare && !n_sinks && !output) {
		xevb_err("where should events go? give --sink ADDR:PORT, --output FILE or --no-forward");
		return 2;
	}
	if (coalesce_us == UINT32_MAX)
		coalesce_us = n_workers > 1 ? 200 : 0;
	if (nap_us && (n_workers > 1 || coalesce_us)) {
		xevb_err("--nap-us is the one-worker loop's nap: with --workers or --coalesce-us use --coalesce-us alone");
		return 2;
	}
	if ((n_workers > 1 || coalesce_us) && (socket_mode || cc.dfm || n_workers > n_queues)) {
		xevb_err("--workers N and --coalesce-us need the XDP path, no --dfm, and at least N --queues (one socket per queue)");
		return 2;
	}
	if (have_bind && socket_mode)
		xevb_info("--bind-src is enforced by the XDP program of the XDP path: in socket mode a source_id "
			  "is not checked against its address (run with --mode xdp to have it)");
	if (keep_privs && user) {
		xevb_err("--keep-privileges with --user or --drop-privileges: choose one");
		return 2;
	}
	if (selftest && keep_privs) {
		xevb_err("--selftest-privs checks a dropped builder: not with --keep-privileges");
		return 2;
	}
	if (user && xevb_privs_lookup(user, &privs))
		return 2;
	if (!user && !keep_privs && (geteuid() == 0 || xevb_privs_held()) && default_privs(&privs))
		return 2;
	if (fifo_prio && busy) {
		xevb_err("--fifo with --busy-poll would never let the NAPI thread or anything else on this core run");
		return 2;
	}
	if (geteuid() != 0)
		xevb_warn("not running as root: attaching XDP and raw sockets need CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	bd.xdp = !socket_mode;
	bd.dev = dev;
	bd.ipfrag.fd = -1;
	bd.ipfrag_on = bd.xdp && !bd.bare;
	bd.pcfg.ip_proto = (uint8_t)proto;
	bd.pcfg.udp_port = (uint16_t)udp_port;
	if (socket_mode) {
		if (udp) bd.pcfg.ip_proto = 0;
		else bd.pcfg.udp_port = 0;
	}

	struct xevb_builder_cfg bcfg;
	{
		struct xevb_builder_cfg bc = {
			.sources = sources, .n_sources = (uint32_t)n_sources, .window = window,
			.n_frames = socket_mode ? frames + XEVB_SOCK_BIG_FRAMES : frames * n_queues +
				    xevb_xsk_extra_frames(dev, frames, frame_size, n_queues),
			.timeout_ns = (uint64_t)timeout_ms * 1000000ull,
			.timeout_policy = discard ? XEVB_TIMEOUT_DISCARD : XEVB_TIMEOUT_EMIT_INCOMPLETE,
			/* Never adopted from the data: one spoofed MEP would set it (hardening.md). */
			.run_number = run,
			.emit = emit_cb, .frame_release = release_cb, .ctx = &bd,
			.emit_run = nofwd && !cc.dfm ? emit_run_cb : NULL,
			.max_frames_held = frames_for_events(socket_mode, frames, rx_ring, n_queues),
			/* Under a DFM, its BYE ends the run, not a flag in the data. */
			.end_of_run_counted_only = cc.dfm != NULL,
			.await_first_assign = cc.dfm != NULL,
		};
		if (bd.ipfrag_on) {
			bd.ipfrag_base = bc.n_frames;
			bc.n_frames += IPFRAG_FRAMES + XEVB_SOCK_BIG_FRAMES;
			bc.max_frames_held += frames_for_events(true, IPFRAG_FRAMES + XEVB_SOCK_BIG_FRAMES, 0, 1);
		} else {
			bd.ipfrag_base = UINT32_MAX;
		}
		bcfg = bc;
		if (!socket_mode && frames <= 2 * rx_ring)
			xevb_warn("--frames %u is not above twice --rx-ring %u: open events may hold only %u "
				  "frames a queue before the oldest are evicted; give --frames at least "
				  "2 x --rx-ring plus what the window holds", frames, rx_ring, frames / 2);
		bd.b = xevb_builder_new(&bc);
		if (!bd.b) {
			xevb_err("cannot create the builder: %s", strerror(errno));
			return 1;
		}
	}
	if (xevb_output_open(&bd.out, sinks, n_sinks, output, (uint32_t)n_sources, 5000000000ull))
		goto out;
	if (xevb_output_set_release(&bd.out, release_now, &bd, bcfg.n_frames))
		goto out;
	if (cc.dfm) {
		cc.fixed_run = have_run;
		if (timeout_ms && (uint64_t)timeout_ms * 1000000ull < cc.reask_ns * (cc.max_reasks + 1ull))
			xevb_warn("--timeout-ms %u ends events before their %u re-asks of %llu ms are spent",
				  timeout_ms, cc.max_reasks, (unsigned long long)(cc.reask_ns / 1000000));
		bd.bctl = build_ctl_new(&cc, &bd.out);
		if (!bd.bctl)
			goto out;
	}

	if (socket_mode) {
		struct xevb_sock_cfg sc = {
			.udp = udp, .ip_proto = (uint8_t)proto, .udp_port = (uint16_t)udp_port,
			.n_frames = frames, .frame_size = frame_size, .rcvbuf = 64 << 20,
			.n_big = XEVB_SOCK_BIG_FRAMES, .mtu = xevb_dev_mtu(dev),
		};
		if (xevb_sock_open(&bd.sock, &sc))
			goto out;
		bd.sock.src_bind = have_bind ? bind_src : NULL;
		bd.sock.src_allow = allow_src;
		bd.sock.n_src_allow = n_allow;
		/* Before the line saying the socket is open: scripts wait for it. */
		if (!no_shed && !bd.bare && !cc.dfm)
			sock_shed_start(&bd, dev, generic, force, sources, n_sources);
		xevb_info("receiving %s on a kernel socket (recvmmsg, batches of %d)",
			  udp ? "UDP" : "raw IPv4", XEVB_SOCK_BATCH);
	} else {
		struct xevb_loader_cfg lc = {
			.ifname = dev, .mode = generic ? XEVB_XDP_GENERIC : XEVB_XDP_NATIVE,
			.ip_proto = (uint8_t)proto, .udp_port = (uint16_t)udp_port, .force = force,
			.source_ids = xdp_filter ? sources : NULL, .n_source_ids = xdp_filter ? (uint32_t)n_sources : 0,
			.src_addrs = n_allow ? allow_src : NULL, .n_src_addrs = n_allow,
			.src_bind = have_bind ? bind_src : NULL,
			/* Only the one-worker loop reads it; workers parse (build_workers.c). */
			.xdp_meta = !no_meta && n_workers == 1 && !coalesce_us,
		};
		struct xevb_xsk_cfg xc = {
			.ifname = dev, .queues = queues, .n_queues = n_queues, .frames_per_q = frames,
			.frame_size = frame_size, .rx_size = rx_ring, .force_copy = copy,
			.busy_budget = busy ? (busy_budget ? busy_budget : rx_batch) : 0, .no_hugepages = no_huge,
		};
		if (xevb_loader_attach(&bd.ld, &lc))
			goto out;
		bd.meta_cookie = bd.ld.meta_cookie;
		if (privs.user[0]) {
			/* Before the UMEM exists: fork must never copy pinned pages. */
			bd.watcher = xevb_privs_spawn_watcher(&bd.watcher_fd, watcher_start, watcher_cleanup, &bd);
			if (bd.watcher < 0) {
				xevb_err("cannot fork the clean-up process: %s", strerror((int)-bd.watcher));
				bd.watcher = 0;
				goto out;
			}
		}
		xc.xsks_map_fd = bd.ld.xsks_fd;
		if (xevb_xsk_open(&bd.xsk, &xc))
			goto out;
		/* Under a DFM its credits and Busy flag pace the sources instead. */
		if (!no_shed && !bd.bare && !cc.dfm)
			shed_start(&bd, sources, n_sources);
		if (bd.ipfrag_on) {
			open_ipfrag(&bd, udp, proto, udp_port);
			bd.ipfrag.src_bind = have_bind ? bind_src : NULL;
			bd.ipfrag.src_allow = allow_src;
			bd.ipfrag.n_src_allow = n_allow;
		}
		for (uint32_t q = 0; q < n_queues; q++)
			xevb_info("AF_XDP socket on %s queue %u: %s mode, %u frames of %u bytes%s, %s", dev,
				  queues[q], bd.xsk.q[q].zerocopy ? "zero-copy" : "copy", frames, frame_size,
				  bd.xsk.q[q].hugepages ? " (huge pages)" : "",
				  busy ? "busy polling" : "poll()");
	}

	if (privs.user[0] && !bd.xdp) {
		/* No UMEM on the socket path: forking here copies nothing pinned. */
		bd.watcher = xevb_privs_spawn_watcher(&bd.watcher_fd, watcher_start, watcher_cleanup, &bd);
		if (bd.watcher < 0) {
			xevb_err("cannot fork the clean-up process: %s", strerror((int)-bd.watcher));
			bd.watcher = 0;
			goto out;
		}
	}
	/* Before any privilege drop: a negative nice or SCHED_FIFO needs CAP_SYS_NICE. */
	if (set_nice && setpriority(PRIO_PROCESS, 0, nice_val))
		xevb_warn("--nice %d: %s (needs CAP_SYS_NICE below 0)", nice_val, strerror(errno));
	if (fifo_prio) {
		struct sched_param sp = { .sched_priority = fifo_prio };
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			xevb_warn("--fifo %d: %s (needs CAP_SYS_NICE)", fifo_prio, strerror(errno));
	}
	open_snapshot_file(&bd, dev);
	if (metrics && !bd.snap && (bd.snap = mmap(NULL, sizeof(*bd.snap), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED) bd.snap = NULL;
	if (privs.user[0]) {
		int probe[XEVB_PROBE__COUNT];
		struct xevb_probe_ctx pc = {
			.ifindex = bd.xdp ? bd.ld.ifindex : 0,
			.xsks_fd = bd.xdp ? bd.ld.xsks_fd : -1,
			.counters_fd = bd.xdp ? bd.ld.counters_fd : -1,
			.prog_id = bd.xdp ? bd.ld.prog_id : 0,
		};

		if (bd.xdp) {
			struct bpf_map_info mi = {};
			__u32 mlen = sizeof(mi);
			if (!bpf_obj_get_info_by_fd(pc.counters_fd, &mi, &mlen))
				pc.map_id = mi.id;
		}
		if (xevb_privs_drop(&privs)) {
			/* Half-dropped is unsafe: stop; the watcher still cleans up. */
			bd.unpriv = true;
			goto out;
		}
		bd.unpriv = true;
		xevb_info("running as %s (uid %u) with no capability; XDP is detached by helper pid %d at exit",
			  privs.user, (unsigned)privs.uid, (int)bd.watcher);
		if (selftest)
			xevb_privs_probe(&pc, probe);
		/* Asked for by name: the line scripts check; by default the log line says it. */
		if (user || selftest)
			xevb_privs_json(stdout, &privs, selftest ? probe : NULL);
	}
	bd.local.magic = XEVB_SNAP_MAGIC;
	bd.local.version = XEVB_SNAP_VERSION;
	bd.local.pid = getpid();
	bd.local.xdp_mode = bd.xdp;
	snprintf(bd.local.ifname, sizeof(bd.local.ifname), "%s", dev);
	bd.local.n_queues = bd.xdp ? n_queues : 0;
	bd.local.n_sources = (uint32_t)n_sources;
	t_start = xevb_now_ns();
	bd.local.start_ns = t_start;
	snapshot(&bd, &bd.local);
	prev = bd.local;
	publish(&bd);
	if (metrics && (!bd.snap || !(mx = xevb_metrics_start(metrics)) || xevb_metrics_render(mx, xevb_metrics_render_snapshot, bd.snap))) goto out;
	/* Attached, bound, statistics published: a service manager may start what depends on us. */
	xevb_notify_ready("building on %s (%s)", dev, bd.xdp ? "XDP + AF_XDP" : "kernel socket");
	t_next = t_start + 1000000000ull;

	if (n_workers > 1 || coalesce_us) {
		struct bw_cfg wc = {
			.xsk = &bd.xsk, .n_workers = n_workers, .cpus = cpus, .n_cpus = n_cpus,
			.owner_shift = (uint32_t)__builtin_ctz(owner_block), .bcfg = bcfg, .pcfg = bd.pcfg,
			.busy = busy, .bare = bd.bare, .out = &bd.out, .sinks = sinks, .n_sinks = n_sinks,
			.file = output != NULL, .n_sources = (uint32_t)n_sources,
			.poll_ms = timeout_ms && timeout_ms < 200 ? (int)(timeout_ms / 2 + 1) : 100, .rx_ring = rx_ring,
			.coalesce_us = coalesce_us, .ipfrag = bd.ipfrag_on ? &bd.ipfrag : NULL,
		};
		if (bd.out.zc) {
			/* Held frames come back through the output, not yet through the workers' return rings. */
			xevb_err("--zerocopy does not work with --workers or --coalesce-us yet: drop one of them");
			goto out;
		}
		bd.bw = bw_start(&wc);
		if (!bd.bw)
			goto out;
		if (mx)
			bw_metrics(bd.bw, mx);
		/* The workers do the data path; this thread publishes and reports. */
		while (!stop) {
			now = xevb_now_ns();
			if (now >= t_next) {
				snapshot(&bd, &bd.local);
				publish(&bd);
				if (interval && (now - t_start) / 1000000000ull % interval == 0) {
					xevb_report_line(stderr, &bd.local, &prev);
					prev = bd.local;
				}
				t_next += 1000000000ull;
				if (t_next < now)
					t_next = now + 1000000000ull;
			}
			if (duration_ns && now - t_start >= duration_ns)
				break;
			if (exit_eor && bw_run_ended(bd.bw))
				break;
			shed_tick(&bd, now);
			usleep(bd.shed_on ? SHED_TICK_NS / 1000 : 5000);
		}
		bw_stop(bd.bw);
	} else {
		uint32_t idx[RX_BATCH_MAX], len[RX_BATCH_MAX];
		const uint8_t *data[RX_BATCH_MAX];
		struct pollfd pfd[XEVB_XSK_MAX_QUEUES + 1];
		uint32_t npfd = 0;
		int poll_ms = timeout_ms && timeout_ms < 200 ? (int)(timeout_ms / 2 + 1) : 100;
		bool worked = false;
		struct xevb_stall_drain sd = { .timeout_ns = (uint64_t)timeout_ms * 1000000ull };
		const uint32_t full_batch = bd.xdp ? rx_batch * n_queues : XEVB_SOCK_BATCH;
		uint32_t ipfrag_turn = 0;

		if (bd.xdp)
			for (uint32_t q = 0; q < n_queues; q++)
				pfd[npfd++] = (struct pollfd){ .fd = bd.xsk.q[q].fd, .events = POLLIN };
		if (bd.ipfrag_on)
			pfd[npfd++] = (struct pollfd){ .fd = bd.ipfrag.fd, .events = POLLIN };
		if (!bd.xdp)
			pfd[npfd++] = (struct pollfd){ .fd = bd.sock.fd, .events = POLLIN };
		if (bd.bctl) {
			pfd[npfd++] = (struct pollfd){ .fd = build_ctl_fd(bd.bctl), .events = POLLIN };
			if (poll_ms > 5)
				poll_ms = 5;   /* re-asks and heartbeats keep time */
		}

		while (!stop) {
			uint32_t got = 0;

			now = xevb_now_ns();
			bd.xsk.guard_now = now;
			xevb_stall_drain_begin(&sd, now);
			if (bd.xdp) {
				for (uint32_t q = 0; q < n_queues; q++) {
					uint32_t n;

					if (busy)
						xevb_xsk_kick(&bd.xsk, q);
					n = xevb_xsk_rx(&bd.xsk, q, rx_batch, idx, data, len);
					if (!n)
						continue;
					handle_batch(&bd, n, idx, data, len, now);
					xevb_xsk_rx_done(&bd.xsk, q, n);
					got += n;
				}
				/*
				 * IP-fragmented MEPs are rare: a recvmmsg per turn would cost
				 * every batch a system call. Every 8th turn, and the turn
				 * after a wake-up; they wait in the socket meanwhile.
				 */
				if (bd.ipfrag_on && (++ipfrag_turn & 7) == 0)
					got += rx_ipfrag(&bd, now);
			} else {
				int n = xevb_sock_rx(&bd.sock, idx, data, len);
				if (n < 0) {
					xevb_err("receive failed: %s", strerror(-n));
					break;
				}
				if (n > 0)
					handle_batch(&bd, (uint32_t)n, idx, data, len, now);
				got = (uint32_t)(n > 0 ? n : 0);
			}
			if (!xevb_stall_draining(&sd, got >= full_batch, now))
				xevb_builder_poll(bd.b, now);
			shed_tick(&bd, now);
			if (bd.bctl) {
				build_ctl_tick(bd.bctl, bd.b, now);
				if (build_ctl_take_reset(bd.bctl)) {
					/* A restarted DFM numbers events afresh: so does a fresh core. */
					char msg[256];
					xevb_builder_flush(bd.b);
					if (!xevb_builder_check(bd.b, msg, sizeof(msg)))
						xevb_err("accounting check of the core before the DFM restart FAILED: %s", msg);
					xevb_builder_free(bd.b);
					bd.b = xevb_builder_new(&bcfg);
					if (!bd.b) {
						xevb_err("cannot create the builder again: %s", strerror(errno));
						break;
					}
				}
				if (exit_eor && build_ctl_finished(bd.bctl))
					break;
			}
			/* What this batch built goes to the farm nodes now, not at 64 KiB. */
			xevb_output_flush(&bd.out);
			if (bd.xdp)
				xevb_xsk_flush(&bd.xsk);

			if (now >= t_next) {
				snapshot(&bd, &bd.local);
				publish(&bd);
				if (interval && (now - t_start) / 1000000000ull % interval == 0) {
					xevb_report_line(stderr, &bd.local, &prev);
					prev = bd.local;
				}
				xevb_output_maintain(&bd.out, now);
				t_next += 1000000000ull;
				if (t_next < now)
					t_next = now + 1000000000ull;
			}
			if (duration_ns && now - t_start >= duration_ns)
				break;
			if (exit_eor && xevb_builder_stats(bd.b)->run_ended)
				break;
			if (!got && !busy) {
				/*
				 * --nap-us: a poll() wake-up per NAPI run is a context switch
				 * each side (the NAPI thread may share our core) for a few
				 * frames; after work, nap instead and take a batch next turn.
				 */
				if (nap_us && worked) {
					struct timespec ts = { 0, (long)nap_us * 1000 };

					worked = false;
					nanosleep(&ts, NULL);
					continue;
				}
				bd.polls++;
				/* What a farm node's socket did not take yet goes out within 1 ms. */
				poll(pfd, npfd, xevb_output_backlog_bytes(&bd.out) ? 1 : poll_ms);
				ipfrag_turn = 7;
			}
			worked = got > 0;
		}
	}
	/*
	 * What already sits in the RX rings was counted by the XDP program:
	 * take it in before the stop flush, so that to_xsk = rx_frames + the
	 * kernel's drops holds exactly once the traffic has stopped.
	 */
	if (bd.xdp && !bd.bw) {
		uint32_t idx[RX_BATCH], len[RX_BATCH], n;
		const uint8_t *data[RX_BATCH];

		now = xevb_now_ns();
		for (uint32_t q = 0; q < n_queues; q++)
			for (uint32_t k = 0; k < rx_ring / RX_BATCH + 1; k++) {
				n = xevb_xsk_rx(&bd.xsk, q, RX_BATCH, idx, data, len);
				if (!n)
					break;
				handle_batch(&bd, n, idx, data, len, now);
				xevb_xsk_rx_done(&bd.xsk, q, n);
			}
		/* The reassembled datagrams the kernel queued for us, as many as the frames take. */
		for (uint32_t k = 0; bd.ipfrag_on && k < IPFRAG_FRAMES / XEVB_SOCK_BATCH + 1; k++)
			if (!rx_ipfrag(&bd, now))
				break;
	}
	if (bd.xdp && busy)
		for (uint32_t q = 0; q < n_queues; q++) {
			uint32_t id = xevb_xsk_napi_id(&bd.xsk, q);
			if (id)
				xevb_info("queue %u: busy polling drove NAPI %u", queues[q], id);
			else
				xevb_warn("queue %u: the socket has no NAPI id: busy polling could not drive the "
					  "device's NAPI (veth before its XDP queues get ids?); it only spun", queues[q]);
		}
	/*
	 * Whatever is still open leaves as a timeout would, by --timeout-policy:
	 * emitted INCOMPLETE or discarded and counted. Nothing is dropped
	 * silently at stop.
	 */
	if (!bd.bw) {
		const struct xevb_builder_stats *cs = xevb_builder_stats(bd.b);
		uint64_t open_at_stop = cs->open_events;
		xevb_builder_expire_all(bd.b);
		xevb_info("stop: %llu open event(s) %s (--timeout-policy %s)",
			  (unsigned long long)open_at_stop,
			  discard ? "discarded and counted" : "emitted INCOMPLETE", discard ? "discard" : "emit");
	}
	/* Frames still read by zerocopy sends come back before the final flush. */
	xevb_output_drain(&bd.out);
	if (bd.xdp)
		xevb_xsk_flush(&bd.xsk);
	/* What a farm node never acknowledged is counted, not taken as delivered. */
	xevb_output_settle(&bd.out, 2000000000ull);
	snapshot(&bd, &bd.local);
	publish(&bd);
	{
		char msg[256];
		bool ok = bd.bw ? bw_check(bd.bw, msg, sizeof(msg)) : xevb_builder_check(bd.b, msg, sizeof(msg));
		xevb_report_summary(stderr, &bd.local);
		explain_wrong_run(&bd.local.core);
		if (!bd.bw)
			explain_evictions(xevb_builder_stats(bd.b), xevb_now_ns() - t_start, window, timeout_ms,
					  bcfg.max_frames_held);
		if (!bd.bw && bd.bctl)
			explain_late_reasks(xevb_builder_stats(bd.b), xevb_now_ns() - t_start, window, cc.reask_ns,
					    build_ctl_reasked(bd.bctl));
		if (!ok)
			xevb_err("accounting check FAILED: %s", msg);
		else
			fprintf(stderr, "accounting: every fragment received is in an event or counted by reason\n");
		if (bd.bctl) {
			build_ctl_summary(bd.bctl, stderr);
			if (json) {
				printf("{\"dfm_ctl\":");
				build_ctl_json(bd.bctl, stdout);
				printf("}\n");
			}
		}
		if (json && bd.bw)
			bw_json(bd.bw, stdout);
		if (json)
			xevb_report_json(stdout, &bd.local);
		rc = ok ? 0 : 3;
	}
out:
	xevb_metrics_stop(mx);
	bw_free(bd.bw);
	if (bd.xdp) {
		xevb_xsk_close(&bd.xsk);
		if (bd.ipfrag_on)
			xevb_sock_close(&bd.ipfrag);
		/* Unprivileged: detaching would fail; the root watcher does it. */
		if (!bd.unpriv)
			xevb_loader_detach(&bd.ld);
	} else {
		xevb_sock_close(&bd.sock);
		if (bd.pass_xdp && !bd.unpriv)
			xevb_loader_detach(&bd.ld);
	}
	build_ctl_free(bd.bctl);
	xevb_output_close(&bd.out);
	if (bd.b)
		xevb_builder_free(bd.b);
	if (bd.snap) {
		munmap(bd.snap, sizeof(*bd.snap));
		if (!bd.unpriv)
			unlink(bd.snap_path);
	}
	if (bd.watcher > 0) {
		if (bd.unpriv) {
			xevb_privs_end_watcher(bd.watcher, bd.watcher_fd, 5000);
		} else {
			/* Still root: we cleaned up above; the watcher must not again. */
			kill(bd.watcher, SIGKILL);
			waitpid(bd.watcher, NULL, 0);
			close(bd.watcher_fd);
		}
	}
	return rc;
}

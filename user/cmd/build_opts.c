// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb build`'s option table (cli.h, options as data): what a gateway's
 * operator sets is an option, grouped by section in --help; experiments,
 * ring sizes and controller internals are --tune keys (--help-tune).
 */
#include <arpa/inet.h>
#include <limits.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "ctl/runcfg.h"
#include "ops/shape_ctl.h"
#include "rx/sock_rx.h"
#include "cmd/build_opts.h"
#include "ctl/ctl_sock.h"
#include "out/output_file.h"

#define STR_(x)  #x
#define STR(x)   STR_(x)
#define F(field) offsetof(struct build_cfg, field)

/* --config FILE was read before the options (xevb_runcfg_start); an abbreviation of it was not. */
static bool parse_config(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	(void)o, (void)cfg, (void)arg, (void)label;
	return xevb_runcfg_was_read();
}

static bool parse_allow_src(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct build_cfg *c = cfg;
	struct in_addr a;

	(void)o;
	if (inet_pton(AF_INET, arg, &a) != 1) {
		xevb_err("--%s: '%s' is not an IPv4 address such as 198.18.1.1", label, arg);
		return false;
	}
	if (c->n_allow == BUILD_MAX_ALLOW_SRC) {
		xevb_err("at most %d --%s", BUILD_MAX_ALLOW_SRC, label);
		return false;
	}
	c->allow_src[c->n_allow++] = a.s_addr;
	return true;
}

/*
 * The ",mac=MAC" and ",vlan=N" that may follow --bind-src's address (in
 * opts, cut in place) into b: what is not given is not checked.
 */
static bool parse_bind_l2(const char *label, const char *arg, char *opts, struct xevb_src_bind *b)
{
	char *save = NULL;
	uint32_t vlan;

	if (!*opts || strstr(opts, ",,") || opts[strlen(opts) - 1] == ',') {
		xevb_err("--%s: '%s' is not IDS=ADDR[,mac=MAC][,vlan=N]: an empty item", label, arg);
		return false;
	}
	for (char *kv = strtok_r(opts, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		if (!strncmp(kv, "mac=", 4) && !(b->flags & XEVB_BIND_MAC)) {
			if (!xevb_mac_parse(kv + 4, b->mac)) {
				xevb_err(
					"--%s %s: '%s' is not the source's Ethernet address: expected a unicast "
					"MAC such as mac=02:00:00:00:00:01",
					label, arg, kv);
				return false;
			}
			b->flags |= XEVB_BIND_MAC;
		} else if (!strncmp(kv, "vlan=", 5) && !(b->flags & XEVB_BIND_VLAN)) {
			if (!xevb_parse_u32(label, kv + 5, 1, XEVB_VLAN_ID_MAX, &vlan))
				return false;
			b->vlan = (uint16_t)vlan;
			b->flags |= XEVB_BIND_VLAN;
		} else {
			xevb_err("--%s %s: '%s': after the address come mac=MAC and vlan=N, each at most once",
				 label, arg, kv);
			return false;
		}
	}
	return true;
}

/*
 * --bind-src IDS=ADDR[,mac=MAC][,vlan=N] into bind[source_id]: the one
 * address those ids may come from (a run configuration names each source
 * process's), and where known the Ethernet address and VLAN id they
 * arrive with.
 */
static bool parse_bind_src(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	static uint16_t list[XEVB_MAX_SOURCES];
	struct xevb_src_bind *bind = ((struct build_cfg *)cfg)->bind_src, b = { 0 };
	const char *eq = strchr(arg, '=');
	char ids[256], val[128], *comma;
	struct in_addr a;
	int n;

	(void)o;
	if (!eq || (size_t)(eq - arg) >= sizeof(ids) || strlen(eq + 1) >= sizeof(val)) {
		xevb_err("--%s: '%s' is not IDS=ADDR[,mac=MAC][,vlan=N], such as 0-7=198.18.1.1", label, arg);
		return false;
	}
	strcpy(val, eq + 1);
	comma = strchr(val, ',');
	if (comma)
		*comma = 0;
	if (inet_pton(AF_INET, val, &a) != 1 || !a.s_addr) {
		xevb_err("--%s: '%s' is not IDS=ADDR[,mac=MAC][,vlan=N], such as 0-7=198.18.1.1", label, arg);
		return false;
	}
	b.addr = a.s_addr;
	if (comma && !parse_bind_l2(label, arg, comma + 1, &b))
		return false;
	memcpy(ids, arg, (size_t)(eq - arg));
	ids[eq - arg] = 0;
	n = xevb_parse_id_list(label, ids, list, XEVB_MAX_SOURCES);
	if (n < 0)
		return false;
	for (int i = 0; i < n; i++) {
		if (list[i] > XEVB_MAX_SOURCE_ID ||
		    (bind[list[i]].addr && memcmp(&bind[list[i]], &b, sizeof(b)))) {
			xevb_err("--%s %s: source_id %u is %s: each id has one binding, up to id %d", label, arg,
				 list[i], list[i] > XEVB_MAX_SOURCE_ID ? "out of range" : "bound twice",
				 XEVB_MAX_SOURCE_ID);
			return false;
		}
		bind[list[i]] = b;
	}
	return true;
}

static bool parse_rate(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	return xevb_shape_parse_rate(label, arg, (uint64_t *)((char *)cfg + o->off));
}

/* A run file's size limit: bytes, SI suffixes (2G = 2 x 10^9); 0: none. */
static bool parse_bytes(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	double v;

	if (!xevb_parse_si(label, arg, &v))
		return false;
	if (v != 0 && (v < 4000 || v > 1e15)) {
		xevb_err("--%s: '%s' is outside 4k..1000000G bytes (0: no limit)", label, arg);
		return false;
	}
	*(uint64_t *)((char *)cfg + o->off) = (uint64_t)v;
	return true;
}

#define S_IN  "Input"
#define S_EV  "Events"
#define S_OUT "Output"
#define S_DFM "Data-flow manager"
#define S_SEC "Security"
#define S_RUN "Running"
#define S_RX  "Receive path"
#define S_WK  "Workers"
#define S_MS  "Measurement"

static const char *const sections[] = { S_IN, S_EV, S_OUT, S_DFM, S_SEC, S_RUN, S_RX, S_WK, S_MS, NULL };

#define TUNE XEVB_F_TUNE

static const struct xevb_cfg_opt opts[] = {
	{ "dev", 'd', XEVB_T_STR, "IFACE", F(dev), .section = S_IN,
	  .help = "interface the sources send to (required)" },
	{ "sources", 's', XEVB_T_IDS, "LIST", F(sources), F(n_sources), XEVB_MAX_SOURCES, 0, XEVB_MAX_SOURCE_ID,
	  .section = S_IN, .help = "expected source_ids, e.g. 0-125 (required)" },
	{ "mode", 'm', XEVB_T_ENUM, "xdp|socket", F(mode), .words = "xdp|socket", .def = "xdp", .section = S_IN,
	  .help = "receive path: AF_XDP behind XDP or a kernel socket" },
	{ "udp", 0, XEVB_T_FLAG, NULL, F(udp), .section = S_IN,
	  .help = "socket mode: receive on the UDP port instead of raw IP; XDP mode: take IP-fragmented MEPs "
		  "(reassembled by the kernel) on the UDP port instead of raw IP" },
	{ "queues", 'q', XEVB_T_IDS, "LIST", F(queues), F(n_queues), XEVB_XSK_MAX_QUEUES, 0, 65535, .def = "0",
	  .section = S_IN, .help = "receive queues to open AF_XDP sockets on" },
	{ "workers", 0, XEVB_T_U32, "N", F(n_workers), 0, 0, 1, 16, .def = "1", .section = S_IN,
	  .help = "builder threads, events owned by id block; queue i received by worker i % N "
		  "(socket mode: worker 0 receives)" },
	{ "run", 0, XEVB_T_U32, "N", F(run), F(have_run), 0, 0, UINT32_MAX, .def = "1", .section = S_IN,
	  .flags = XEVB_F_GIVEN,
	  .help = "run number to accept, as xevb source and dfm; with --dfm the DFM's unless given" },
	{ "window", 0, XEVB_T_U32, "N", F(window), 0, 0, 1, 1u << 20, .def = "4096", .section = S_EV,
	  .help = "open events at most" },
	{ "timeout-ms", 0, XEVB_T_U32, "MS", F(timeout_ms), 0, 0, 0, 3600000, .def = "1000", .section = S_EV,
	  .help = "incomplete event timeout; 0: none" },
	{ "timeout-policy", 0, XEVB_T_ENUM, "emit|discard", F(policy), .words = "emit|discard", .def = "emit",
	  .section = S_EV, .help = "what to do with a timed-out event" },
	{ "exit-on-eor", 0, XEVB_T_FLAG, NULL, F(exit_eor), .section = S_EV,
	  .help = "stop once every source has ended the run and all is flushed (with --dfm: at the DFM's BYE; "
		  "END_OF_RUN flags in the data are only counted)" },
	{ "sink", 0, XEVB_T_STRS, "ADDR:PORT", F(sinks), F(n_sinks), XEVB_MAX_SINKS, .section = S_OUT,
	  .help = "farm node to forward to (repeatable; round robin)" },
	{ "output", 'o', XEVB_T_STR, "FILE|DIR/", F(output), .section = S_OUT,
	  .help = "write built events to run files instead (docs/wire-format.md section 4): FILE, or in a "
		  "directory DIR/PREFIX-runRRRRRRRR-SSSS.xevb, rotated by --tune output-max-bytes or "
		  "output-max-events; a name that exists is refused (--tune output-next-name=1 takes the next)" },
	{ "no-forward", 0, XEVB_T_FLAG, NULL, F(nofwd), .section = S_OUT,
	  .help = "build and release events without sending them (measurement)" },
	{ "dfm", 0, XEVB_T_STR, "ADDR:PORT", F(cc.dfm), .section = S_DFM,
	  .help = "take event assignments from this data-flow manager (docs/control-protocol.md)" },
	{ "credits", 0, XEVB_T_U32, "N", F(cc.credits), 0, 0, 1, 1u << 20, .def = "64", .section = S_DFM,
	  .help = "--dfm: events the DFM may have outstanding here" },
	{ "ctl-port", 0, XEVB_T_U16, "N", F(cc.ctl_port), 0, 0, 1, 65535, .def = "23902", .section = S_DFM,
	  .help = "--dfm: our control port" },
	{ "id", 0, XEVB_T_U16, "N", F(cc.id), 0, 0, 0, 65535, .def = "0", .section = S_DFM,
	  .help = "--dfm: our id in control messages; with --config: run as its [builder N]" },
	{ "config", 0, XEVB_T_FUNC, "FILE", .section = S_DFM, .parse = parse_config,
	  .help = "start from a run configuration (docs/run-config.md); explicit options override it" },
	{ "xdp-filter", 0, XEVB_T_FLAG, NULL, F(xdp_filter), .section = S_SEC,
	  .help = "drop unknown source_ids already in XDP" },
	{ "allow-src", 0, XEVB_T_FUNC, "ADDR", .section = S_SEC, .parse = parse_allow_src,
	  .help = "XDP drops MEPs from IPv4 sources not given here (IP-fragmented ones: the builder, after reassembly; "
		  "repeatable)" },
	{ "bind-src", 0, XEVB_T_FUNC, "IDS=ADDR[,mac=MAC][,vlan=N]", 0, F(have_bind), .section = S_SEC,
	  .parse = parse_bind_src, .flags = XEVB_F_GIVEN,
	  .help = "XDP drops MEPs of source_ids IDS not from ADDR, counted src_addr_mismatch; with mac= from "
		  "another Ethernet source, src_mac_mismatch; with vlan= in another VLAN or untagged, "
		  "src_vlan_mismatch (IP-fragmented ones: the builder, after reassembly, by ADDR alone; "
		  "repeatable; a run configuration gives one per source)" },
	{ "user", 0, XEVB_T_STR, "NAME", F(user), .section = S_SEC,
	  .help = "after set-up, run as NAME with no capability, a root helper detaches at exit (default nobody)" },
	{ "keep-privileges", 0, XEVB_T_FLAG, NULL, F(keep_privs), .section = S_SEC,
	  .help = "stay root with every capability for the whole run (default: drop them after set-up)" },
	{ "force", 0, XEVB_T_FLAG, NULL, F(force), .section = S_SEC,
	  .help = "replace an XDP program that xevb did not load" },
	XEVB_CFG_KEY_FILE(S_SEC, struct build_cfg, co),
	XEVB_CFG_DURATION(S_RUN, struct build_cfg, co),
	XEVB_CFG_INTERVAL(S_RUN, struct build_cfg, co),
	XEVB_CFG_QUIET(S_RUN, struct build_cfg, co),
	XEVB_CFG_JSON(S_RUN, struct build_cfg, co),
	XEVB_CFG_METRICS(S_RUN, struct build_cfg, co),
	XEVB_CFG_VERBOSE(S_RUN, struct build_cfg, co),

	/* --tune keys */
	{ "proto", 0, XEVB_T_U32, "N", F(proto), 0, 0, 0, 255, .def = STR(XEVB_DEFAULT_IP_PROTO), .section = S_IN,
	  .flags = TUNE, .help = "raw IPv4 protocol of the MEPs; 0: off" },
	{ "udp-port", 0, XEVB_T_U32, "N", F(udp_port), 0, 0, 0, 65535, .def = STR(XEVB_DEFAULT_UDP_PORT),
	  .section = S_IN, .flags = TUNE, .help = "UDP port of the MEPs; 0: off" },
	{ "xdp-mode", 0, XEVB_T_ENUM, "native|generic|skb", F(xdp_mode), .words = "native|generic|skb",
	  .def = "native", .section = S_RX, .flags = TUNE,
	  .help = "XDP attach mode; generic (also called skb) only if asked" },
	{ "frames", 0, XEVB_T_U32, "N", F(frames), 0, 0, 64, 1u << 22, .def = "16384", .section = S_RX,
	  .flags = TUNE, .help = "frames per queue, a power of 2" },
	{ "frame-size", 0, XEVB_T_U32, "BYTES", F(frame_size), 0, 0, 2048, 65536, .section = S_RX, .flags = TUNE,
	  .help = "2048 or 4096 (default: 2048 where the device MTU fits, else 4096; socket mode: the MTU's "
		  "datagram, at least 4096)" },
	{ "rx-ring", 0, XEVB_T_U32, "N", F(rx_ring), 0, 0, 64, 1u << 16, .def = "4096", .section = S_RX,
	  .flags = TUNE, .help = "AF_XDP RX ring entries" },
	{ "rx-batch", 0, XEVB_T_U32, "N", F(rx_batch), 0, 0, 1, BUILD_RX_BATCH_MAX, .def = STR(BUILD_RX_BATCH),
	  .section = S_RX, .flags = TUNE, .help = "frames taken from the RX ring per batch" },
	{ "busy-poll", 0, XEVB_T_FLAG, NULL, F(busy), .section = S_RX, .flags = TUNE,
	  .help = "spin on the rings instead of sleeping in poll(); XDP: preferred busy polling (our loop runs "
		  "the NAPI)" },
	{ "busy-budget", 0, XEVB_T_U32, "N", F(busy_budget), 0, 0, 1, 1024, .section = S_RX, .flags = TUNE,
	  .help = "busy polling (implied) with this many frames the NAPI polls per call (SO_BUSY_POLL_BUDGET, "
		  "default rx-batch)" },
	{ "wait-us", 0, XEVB_T_U32, "US", F(wait_us), F(have_wait), 0, 0, 100000, .section = S_RX,
	  .flags = TUNE | XEVB_F_GIVEN,
	  .help = "the wait policy, any worker count and path: after a turn that did work, nap US before "
		  "sleeping in poll(), so a wake-up takes a batch (default 200 with --workers > 1, else 0: "
		  "poll() at once)" },
	{ "no-hugepages", 0, XEVB_T_FLAG, NULL, F(no_huge), .section = S_RX, .flags = TUNE,
	  .help = "UMEM on normal pages even where huge pages are reserved" },
	{ "no-xdp-meta", 0, XEVB_T_FLAG, NULL, F(no_meta), .section = S_RX, .flags = TUNE,
	  .help = "XDP mode: the XDP program does not hand its parse result over in XDP metadata; "
		  "every frame is parsed again here" },
	{ "copy", 0, XEVB_T_FLAG, NULL, F(copy), .section = S_RX, .flags = TUNE,
	  .help = "force AF_XDP copy mode" },
	{ "no-shed", 0, XEVB_T_FLAG, NULL, F(no_shed), .section = S_RX, .flags = TUNE,
	  .help = "never shed whole events in XDP under overload (default: shed, the same event id blocks from "
		  "every source, so frames are not lost at random and events torn; socket mode attaches the XDP "
		  "program in pass mode for it)" },
	{ "nice", 0, XEVB_T_INT, "N", F(nice), F(set_nice), 0, -20, 19, .section = S_RX,
	  .flags = TUNE | XEVB_F_GIVEN, .help = "run at nice N: ahead of a NAPI thread sharing our core" },
	{ "fifo", 0, XEVB_T_U32, "PRIO", F(fifo), 0, 0, 1, 99, .section = S_RX, .flags = TUNE,
	  .help = "run SCHED_FIFO at PRIO: a NAPI thread on our core runs only while we wait in poll()" },
	{ "cpus", 0, XEVB_T_IDS, "LIST", F(cpus), F(n_cpus), XEVB_ENGINE_MAX_CPUS, 0, 65535, .section = S_WK,
	  .flags = TUNE,
	  .help = "pin worker w to the w-th CPU of LIST (default: CPU w with --workers above 1; one worker: not pinned)" },
	{ "owner-block", 0, XEVB_T_U32, "N", F(owner_block), 0, 0, 1, 1u << 20, .def = "1024", .section = S_WK,
	  .flags = TUNE | XEVB_F_POW2, .help = "--workers: consecutive event_ids per owner, a power of 2" },
	{ "coalesce-us", 0, XEVB_T_U32, "US", F(wait_us), F(have_wait), 0, 0, 100000, .section = S_WK,
	  .flags = TUNE | XEVB_F_GIVEN, .help = "old name of wait-us (scripts/bench/bench-mq.sh still gives it)" },
	{ "zerocopy", 0, XEVB_T_FLAG, NULL, F(zerocopy), .section = S_OUT, .flags = TUNE,
	  .help = "send to farm nodes with MSG_ZEROCOPY (frames held until the kernel is done)" },
	{ "sink-pacing", 0, XEVB_T_FUNC, "RATE", F(sink_pacing), .section = S_OUT, .flags = TUNE,
	  .parse = parse_rate, .help = "pace each farm-node connection at RATE bits/s (SO_MAX_PACING_RATE)" },
	{ "output-max-bytes", 0, XEVB_T_FUNC, "BYTES", F(out_max_bytes), .def = "0", .section = S_OUT,
	  .flags = TUNE, .parse = parse_bytes,
	  .help = "--output DIR: start the next file before one would pass BYTES (SI suffixes: 2G); 0: no limit" },
	{ "output-max-events", 0, XEVB_T_U64, "N", F(out_max_events), 0, 0, 0, 1ull << 40, .def = "0",
	  .section = S_OUT, .flags = TUNE,
	  .help = "--output DIR: start the next file after N events; 0: no limit" },
	{ "output-prefix", 0, XEVB_T_STR, "NAME", F(out_prefix), .section = S_OUT, .flags = TUNE,
	  .help = "--output DIR: the files' names start with NAME (default xevb; builders sharing a directory: "
		  "one each)" },
	{ "output-next-name", 0, XEVB_T_FLAG, NULL, F(out_next_name), .section = S_OUT, .flags = TUNE,
	  .help = "--output: where the name exists, write the next free one (FILE.1, FILE.2...; DIR: the next "
		  "file number) instead of refusing to start: a restarted service goes on there" },
	{ "output-no-fsync", 0, XEVB_T_FLAG, NULL, F(out_no_fsync), .section = S_OUT, .flags = TUNE,
	  .help = "--output: no fsync of a file and its directory when it is closed (scratch runs: a power "
		  "loss may then take closed files)" },
	{ "busy-high", 0, XEVB_T_DOUBLE, "X", F(cc.busy_high), 0, 0, 0, 100, .def = "1.2", .section = S_DFM,
	  .flags = TUNE, .help = "--dfm: Busy above X x credits events held" },
	{ "busy-low", 0, XEVB_T_DOUBLE, "X", F(cc.busy_low), 0, 0, 0, 100, .def = "0.2", .section = S_DFM,
	  .flags = TUNE, .help = "--dfm: not-Busy below X x credits" },
	{ "reask-ms", 0, XEVB_T_U64, "MS", F(cc.reask_ns), 0, 0, 1, 600000, 1000000, .def = "100",
	  .section = S_DFM, .flags = TUNE, .help = "--dfm: re-ask the missing sources after MS" },
	{ "max-reasks", 0, XEVB_T_U32, "N", F(cc.max_reasks), 0, 0, 0, 255, .def = "3", .section = S_DFM,
	  .flags = TUNE, .help = "--dfm: re-asks per event before it goes incomplete" },
	{ "sink-ctl-port", 0, XEVB_T_U16, "N", F(cc.sink_ctl_port), 0, 0, 1, 65535, .def = "23904",
	  .section = S_DFM, .flags = TUNE, .help = "--dfm: farm nodes' control port for credits" },
	{ "sink-dead-ms", 0, XEVB_T_U64, "MS", F(cc.sink_dead_ns), 0, 0, 10, 600000, 1000000, .def = "500",
	  .section = S_DFM, .flags = TUNE, .help = "--dfm: a farm node silent this long gets nothing" },
	{ "backlog", 0, XEVB_T_U32, "N", F(cc.backlog), 0, 0, 1, 1u << 20, .def = "4096", .section = S_DFM,
	  .flags = TUNE, .help = "--dfm: built events held while no farm node has credit" },
	{ "bare", 0, XEVB_T_FLAG, NULL, F(bare), .section = S_MS, .flags = TUNE,
	  .help = "receive and release frames, count them, build nothing (receive ceiling)" },
	{ "selftest-privs", 0, XEVB_T_FLAG, NULL, F(selftest), .section = S_MS, .flags = TUNE,
	  .help = "after dropping, try attach/detach/map updates and report (JSON)" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "build",
	.summary =
		"Build events from the fragments that sources send to IFACE and forward them to farm nodes. "
		"Needs root, or CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN, CAP_NET_RAW and CAP_IPC_LOCK (xevb doctor "
		"checks them), and gives them up after set-up; its interface lock and statistics are in "
		"/run/xevb, or XEVB_RUN_DIR.",
	.usage = "--dev IFACE --sources LIST [options]",
	.examples =
		"  xevb build --dev eth0 --sources 0-7 --sink 198.18.3.1:5000 --sink 198.18.3.2:5000\n"
		"  xevb build --dev eth0 --sources 0-125 --no-forward --duration 10\n"
		"  xevb build --dev eth0 --mode socket --udp --sources 0-3 --run 42 --output /data/run42/ \\\n"
		"      --tune output-max-bytes=2G\n"
		"  xevb build --dev eth0 --sources 0-125 --tune bare=1 --duration 10    # receive ceiling\n"
		"  xevb build --dev eth0 --mode socket --udp --sources 0-7 --dfm 198.18.4.1:23901 --credits 32 \\\n"
		"      --sink 198.18.3.1:5000 --sink 198.18.3.2:5000 --exit-on-eor\n",
};

const struct xevb_cfg_cmd build_cmd = { .help = &help, .opts = opts, .sections = sections };

/* The options that need each other or the device; in the order a user fixes them. */
static int check_required(const struct build_cfg *c)
{
	if (!c->dev || !c->n_sources) {
		xevb_err("--dev and --sources are required (try --help)");
		return 2;
	}
	/* Everything local before anything remote: a typo here must not cost farm-node connections. */
	if (!if_nametoindex(c->dev)) {
		xevb_err("--dev: no interface '%s' here (ip link show lists them)", c->dev);
		return 1;
	}
	if (c->cc.dfm && c->cc.busy_low > c->cc.busy_high) {
		xevb_err("--tune busy-low must not exceed --tune busy-high");
		return 2;
	}
	return 0;
}

static int check_receive(struct build_cfg *c)
{
	bool socket_mode = c->mode == BUILD_MODE_SOCKET;

	if (!c->frame_size)
		c->frame_size = socket_mode ? xevb_sock_frame_size_for(c->dev) : xevb_xsk_frame_size_for(c->dev);
	if ((c->frames & (c->frames - 1)) || (!socket_mode && c->frame_size != 2048 && c->frame_size != 4096)) {
		xevb_err("--tune frames must be a power of 2 and --tune frame-size 2048 or 4096 in XDP mode");
		return 2;
	}
	if (c->busy_budget)
		c->busy = true;
	return 0;
}

/* Built events go to one place: the first two options that disagree, named. */
static int check_destination(const struct build_cfg *c)
{
	const char *a = NULL, *b = NULL;

	if (c->output && c->n_sinks)
		a = "--output", b = "--sink";
	else if (c->output && c->nofwd)
		a = "--output", b = "--no-forward";
	else if (c->output && c->bare)
		a = "--output", b = "--tune bare=1";
	else if (c->n_sinks && c->nofwd)
		a = "--sink", b = "--no-forward";
	else if (c->n_sinks && c->bare)
		a = "--sink", b = "--tune bare=1";
	if (a) {
		xevb_err(
			"%s with %s: built events go to one place, farm nodes (--sink), run files (--output) or "
			"nowhere (--no-forward, --tune bare=1): give one of them",
			a, b);
		return 2;
	}
	if (!c->nofwd && !c->bare && !c->n_sinks && !c->output) {
		xevb_err("where should events go? give --sink ADDR:PORT, --output FILE|DIR/ or --no-forward");
		return 2;
	}
	return 0;
}

/* The first run-file key given, for a message; NULL: none. */
static const char *file_key_given(const struct build_cfg *c)
{
	if (c->out_max_bytes)
		return "output-max-bytes";
	if (c->out_max_events)
		return "output-max-events";
	if (c->out_prefix)
		return "output-prefix";
	if (c->out_next_name)
		return "output-next-name";
	return c->out_no_fsync ? "output-no-fsync" : NULL;
}

/* What goes with --output and what does not. */
static int check_output_with(const struct build_cfg *c)
{
	const char *key = file_key_given(c);

	if (!c->output && key) {
		xevb_err("--tune %s is for run files: give --output FILE|DIR/ too", key);
		return 2;
	}
	if (c->output && (c->zerocopy || c->sink_pacing)) {
		xevb_err("--tune %s is for farm-node connections (--sink): not with --output",
			 c->zerocopy ? "zerocopy=1" : "sink-pacing");
		return 2;
	}
	if (c->output && c->cc.dfm && !c->have_run) {
		xevb_err(
			"--output with --dfm needs --run N: a run file's header records the run when the file "
			"is created, before the DFM's first assignment says it");
		return 2;
	}
	return 0;
}

/*
 * --output into cfg->of: one file, or a directory of run-numbered files
 * (an existing directory, or a name ending in '/'); rotation only there.
 */
static int output_where(struct build_cfg *c)
{
	static char path[3584];
	size_t n = strlen(c->output);
	struct stat st;
	bool dir = n && c->output[n - 1] == '/';

	if (!n || n >= sizeof(path)) {
		xevb_err("--output: give a file or a directory of up to %zu bytes", sizeof(path) - 1);
		return 2;
	}
	memcpy(path, c->output, n + 1);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = 0;
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		dir = true;
	else if (dir) {
		xevb_err("--output %s: no such directory: create it first (mkdir -p %s)", c->output, path);
		return 1;
	}
	if (!dir && (c->out_max_bytes || c->out_max_events || c->out_prefix)) {
		xevb_err(
			"--tune %s makes run-numbered files in a directory: give --output a directory (DIR/), not "
			"the file %s",
			file_key_given(c), c->output);
		return 2;
	}
	if (c->out_prefix && (!*c->out_prefix || strchr(c->out_prefix, '/') || strlen(c->out_prefix) > 200)) {
		xevb_err("--tune output-prefix: '%s' is not a file name's start (1..200 bytes, no '/')",
			 c->out_prefix);
		return 2;
	}
	c->of.path = path;
	c->of.dir = dir;
	return 0;
}

/* The run files: where, their header, their limits; one that exists refused unless the next name is asked for. */
static int check_output(struct build_cfg *c)
{
	char name[PATH_MAX];
	int rc;

	if ((rc = check_output_with(c)) || (rc = check_destination(c)) || !c->output || (rc = output_where(c)))
		return rc;
	c->of.prefix = c->out_prefix;
	c->of.run_number = c->run;
	c->of.builder_id = c->cc.id;
	c->of.sources = c->sources;
	c->of.n_sources = c->n_sources;
	c->of.max_bytes = c->out_max_bytes;
	c->of.max_events = c->out_max_events;
	c->of.next_name = c->out_next_name;
	c->of.no_fsync = c->out_no_fsync;
	/*
	 * Before anything is attached or connected; in a directory, any file of
	 * the run (a rotation would come to it). The writer's O_EXCL still
	 * settles a race.
	 */
	if (!c->of.next_name && xevb_outfile_existing(&c->of, name, sizeof(name))) {
		xevb_err(
			"--output: %s exists, and a run file is never overwritten: move it away, or give --tune "
			"output-next-name=1 to write the next free name",
			name);
		return 2;
	}
	return 0;
}

static int check_workers(struct build_cfg *c)
{
	if (!c->have_wait)
		c->wait_us = c->n_workers > 1 ? 200 : 0;
	/* Socket mode: worker 0 receives from the one socket and hands the others their events. */
	if (c->n_workers > 1 && c->mode == BUILD_MODE_XDP && c->n_workers > c->n_queues) {
		xevb_err(
			"--workers %u needs at least %u --queues (one AF_XDP socket per queue): give --workers 1 "
			"or more --queues",
			c->n_workers, c->n_workers);
		return 2;
	}
	return 0;
}

/*
 * Socket mode sees VLANs through its device: a socket on a VLAN device
 * receives that VLAN alone, on any other device untagged frames alone. A
 * source bound to another VLAN can then send nothing that is built (its
 * address's MEPs are refused src_vlan_mismatch): say so once per VLAN.
 */
static void check_bind_vlans(const struct build_cfg *c)
{
	uint16_t dev_vlan = xevb_sock_dev_vlan(c->dev), said[16];
	uint32_t n = 0;

	for (uint32_t id = 0; id < XEVB_MAX_SOURCES; id++) {
		const struct xevb_src_bind *b = &c->bind_src[id];
		bool dup = false;

		if (!b->addr || !(b->flags & XEVB_BIND_VLAN) || b->vlan == dev_vlan)
			continue;
		for (uint32_t i = 0; i < n; i++)
			dup |= said[i] == b->vlan;
		if (dup || n == sizeof(said) / sizeof(said[0]))
			continue;
		said[n++] = b->vlan;
		if (dev_vlan)
			xevb_warn(
				"source_id %u is bound to VLAN %u, but %s is VLAN %u's device: in socket mode "
				"what comes from its address is refused src_vlan_mismatch",
				id, b->vlan, c->dev, dev_vlan);
		else
			xevb_warn(
				"source_id %u is bound to VLAN %u, but %s is no VLAN device: in socket mode "
				"what comes from its address is refused src_vlan_mismatch; run the builder on "
				"the VLAN's device (ip link add link %s name %s.%u type vlan id %u)",
				id, b->vlan, c->dev, c->dev, c->dev, b->vlan, b->vlan);
	}
}

/*
 * A binding without a MAC holds only against hosts that do not spoof the
 * address: say so once per address. VLANs in socket mode: check_bind_vlans.
 */
static void check_bind(const struct build_cfg *c)
{
	static uint32_t said[XEVB_MAX_SOURCES];
	uint32_t n = 0;
	bool vlan = false;

	for (uint32_t id = 0; c->have_bind && id < XEVB_MAX_SOURCES; id++) {
		const struct xevb_src_bind *b = &c->bind_src[id];
		char a[INET_ADDRSTRLEN];
		bool dup = false;

		vlan |= b->addr && (b->flags & XEVB_BIND_VLAN);
		if (!b->addr || (b->flags & XEVB_BIND_MAC))
			continue;
		for (uint32_t i = 0; i < n; i++)
			dup |= said[i] == b->addr;
		if (dup)
			continue;
		said[n++] = b->addr;
		inet_ntop(AF_INET, &b->addr, a, sizeof(a));
		xevb_warn(
			"source_id %u is bound to %s without a MAC: a host on its link that spoofs the address "
			"can send as it; give mac= in --bind-src (a run configuration: mac in its [source N])",
			id, a);
	}
	if (vlan && c->mode == BUILD_MODE_SOCKET)
		check_bind_vlans(c);
}

static int check_privileges(const struct build_cfg *c)
{
	check_bind(c);
	if (c->keep_privs && c->user) {
		xevb_err("--keep-privileges with --user: choose one");
		return 2;
	}
	if (c->selftest && c->keep_privs) {
		xevb_err("--tune selftest-privs=1 checks a dropped builder: not with --keep-privileges");
		return 2;
	}
	if (c->fifo && c->busy) {
		xevb_err(
			"--tune fifo with busy polling would never let the NAPI thread or anything else on this "
			"core run");
		return 2;
	}
	return 0;
}

int build_opts_parse(int argc, char **argv, struct build_cfg *cfg)
{
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->co = (struct xevb_common_opts)XEVB_COMMON_OPTS_INIT;
	rc = xevb_cfg_parse(&build_cmd, argc, argv, cfg);
	if (rc >= 0)
		return rc;
	/* Control keys are bound to the run: a message of another run does not open. */
	xevb_ctl_set_run(cfg->run);
	if (cfg->co.key_file &&
	    (xevb_ctl_set_key_file(cfg->co.key_file) || xevb_ctl_key_for(XEVB_ROLE_BUILDER, cfg->cc.id)))
		return 2;
	if (xevb_ctl_key_is_master() && xevb_runcfg_current())
		xevb_info(
			"%s is the run's master key, which seals as any member: give this builder its key bundle "
			"(xevb key derive --role builder --id %u --config FILE; key_file in [builder %u])",
			cfg->co.key_file, cfg->cc.id, cfg->cc.id);
	if ((rc = check_required(cfg)) || (rc = check_receive(cfg)) || (rc = check_output(cfg)) ||
	    (rc = check_workers(cfg)) || (rc = check_privileges(cfg)))
		return rc;
	return -1;
}

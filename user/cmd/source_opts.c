// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source`'s option table (cli.h, options as data): each row fills
 * struct src_args, checked as it is read; the options that name a source
 * and those that only make sense together are checked once all are read.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/runcfg.h"
#include "ops/shape_ctl.h"
#include "emu/source.h"
#include "ctl/ctl_sock.h"

#define STR_(x)  #x
#define STR(x)   STR_(x)
#define F(field) offsetof(struct src_args, field)

static void *field(void *cfg, const struct xevb_cfg_opt *o)
{
	return (char *)cfg + o->off;
}

/* An IPv4 address into the uint32_t at the row's field, network order. */
static bool parse_addr(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct in_addr a;

	if (inet_pton(AF_INET, arg, &a) != 1) {
		xevb_err("--%s: '%s' is not an IPv4 address such as 198.18.2.1", label, arg);
		return false;
	}
	*(uint32_t *)field(cfg, o) = a.s_addr;
	return true;
}

/* --src-addr-base: host order, so that source i adds i. */
static bool parse_addr_base(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	if (!parse_addr(o, cfg, arg, label))
		return false;
	*(uint32_t *)field(cfg, o) = ntohl(*(uint32_t *)field(cfg, o));
	return true;
}

static bool parse_ids(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct src_cfg *c = &((struct src_args *)cfg)->c;

	(void)o;
	if ((c->n_src = xevb_parse_id_list(label, arg, c->ids, XEVB_MAX_SOURCES)) < 0)
		return false;
	if (c->ids[c->n_src - 1] > XEVB_MAX_SOURCE_ID) {
		xevb_err("--%s: %u is over the largest source_id, %u", label, c->ids[c->n_src - 1],
			 XEVB_MAX_SOURCE_ID);
		return false;
	}
	return true;
}

/* "B" or "MIN-MAX": fragment payload bytes. */
static bool parse_frag(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct src_cfg *c = &((struct src_args *)cfg)->c;
	char buf[64], *dash;
	uint32_t a, b;

	(void)o;
	snprintf(buf, sizeof(buf), "%s", arg);
	dash = strchr(buf, '-');
	if (dash)
		*dash = 0;
	if (!xevb_parse_u32(label, buf, 0, 65535, &a))
		return false;
	b = a;
	if (dash && !xevb_parse_u32(label, dash + 1, a, 65535, &b))
		return false;
	c->fmin = (uint16_t)a;
	c->fmax = (uint16_t)b;
	return true;
}

/* --udp [PORT]: the port, when the next word is a number (XEVB_F_NEXT_NUM). */
static bool parse_udp(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	uint32_t u = XEVB_DEFAULT_UDP_PORT;

	if (arg && !xevb_parse_u32(label, arg, 1, 65535, &u))
		return false;
	*(uint16_t *)field(cfg, o) = (uint16_t)u;
	return true;
}

static bool parse_proto(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	uint32_t u;

	if (!xevb_parse_u32(label, arg, 1, 255, &u))
		return false;
	if (u == 17 || u == 6 || u == 1) {
		xevb_err("--%s %u is a standard protocol; use --udp for UDP, or 253/254", label, u);
		return false;
	}
	*(uint8_t *)field(cfg, o) = (uint8_t)u;
	return true;
}

/* --no-end-of-run: the flag --end-of-run sets, cleared; the later of the two wins. */
static bool parse_clear(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	(void)arg, (void)label;
	*(bool *)field(cfg, o) = false;
	return true;
}

static bool parse_mac(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	uint8_t *mac = field(cfg, o);
	unsigned v[6];

	if (sscanf(arg, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) {
		xevb_err("--%s: '%s' is not a MAC such as 02:00:00:00:00:02", label, arg);
		return false;
	}
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return true;
}

static bool parse_shape(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	return xevb_shape_parse_rate(label, arg, field(cfg, o));
}

/* Only a configuration gives a source process an id; alone it would be silently ignored. */
static bool parse_id(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	(void)o, (void)cfg, (void)arg, (void)label;
	if (!xevb_runcfg_current()) {
		xevb_err(
			"--id picks a [source N] of --config FILE; without a configuration the source "
			"ids are --source-ids");
		return false;
	}
	return true;
}

#define S_DST   "Destination"
#define S_EV    "Events"
#define S_FAULT "Fault injection (--mode socket)"
#define S_DFM   "Data-flow manager"
#define S_RUN   "Run"

static const char *const sections[] = { S_DST, S_EV, S_FAULT, S_DFM, S_RUN, NULL };

static const struct xevb_cfg_opt opts[] = {
	{ "dest", 0, XEVB_T_FUNC, "ADDR", F(c.daddr), F(have_dest), .section = S_DST, .parse = parse_addr,
	  .flags = XEVB_F_GIVEN, .help = "builder IPv4 address (required)" },
	{ "dev", 0, XEVB_T_STR, "IFACE", F(c.dev), .section = S_DST,
	  .help = "interface to send on (required for --mode live and xsk)" },
	{ "mode", 0, XEVB_T_ENUM, "socket|live|xsk", F(mode), .words = "socket|live|xsk", .def = "socket",
	  .section = S_DST,
	  .help = "kernel sockets + sendmmsg, XDP live frames (also with --dfm), or an AF_XDP socket's TX ring "
		  "(a qdisc on --dev makes a full receiver hold it: no loss on the way)" },
	{ "udp", 0, XEVB_T_FUNC, NULL, F(c.udp_port), .section = S_DST, .parse = parse_udp,
	  .flags = XEVB_F_NEXT_NUM,
	  .help = "send UDP, to port " STR(XEVB_DEFAULT_UDP_PORT) " or to the number after --udp" },
	{ "proto", 0, XEVB_T_FUNC, "N", F(c.proto), .def = STR(XEVB_DEFAULT_IP_PROTO), .section = S_DST,
	  .parse = parse_proto, .help = "raw IPv4 protocol number" },
	{ "src-addr", 0, XEVB_T_FUNC, "ADDR", F(c.saddr), .section = S_DST, .parse = parse_addr,
	  .help = "source IPv4 address of every packet (default: the route's)" },
	{ "src-addr-base", 0, XEVB_T_FUNC, "ADDR", F(c.saddr_base), .section = S_DST, .parse = parse_addr_base,
	  .help = "source i sends from ADDR + i (raw IP_HDRINCL socket, or live)" },
	{ "dst-mac", 0, XEVB_T_FUNC, "MAC", F(c.dst_mac), F(c.dst_mac_set), .section = S_DST, .parse = parse_mac,
	  .flags = XEVB_F_GIVEN,
	  .help = "live mode: next-hop MAC, for every builder with --dfm (default: neighbour table)" },
	{ "shape", 0, XEVB_T_FUNC, "RATE", F(shape_bps), .section = S_DST, .parse = parse_shape,
	  .help = "socket mode: shape our output to --dest at RATE on --dev (xevb shape)" },

	{ "source-ids", 0, XEVB_T_FUNC, "LIST", .def = "0", .section = S_EV, .parse = parse_ids,
	  .help = "source ids to emulate, e.g. 0-125" },
	{ "pack", 0, XEVB_T_U32, "N", F(c.pack), 0, 0, 1, XEVB_MAX_FRAGS_PER_MEP, .def = "25", .section = S_EV,
	  .help = "packing factor: events per packet" },
	{ "frag-size", 0, XEVB_T_FUNC, "B|MIN-MAX", .def = "32", .section = S_EV, .parse = parse_frag,
	  .help = "fragment payload bytes up to 65535, or uniform in MIN..MAX; "
		  "with --pack 1 a fragment over the MTU goes as segments" },
	{ "ip-frag", 0, XEVB_T_FLAG, NULL, F(c.ip_frag), .section = S_EV,
	  .help = "send a MEP over the MTU whole with DF clear: the kernel fragments it "
		  "(fragments up to 65476 bytes)" },
	/* Below 1e9, as it always was: the largest double under it. */
	{ "rate", 0, XEVB_T_DOUBLE, "HZ", F(c.rate), 0, 0, 0, 999999999.9999999, .def = "0", .section = S_EV,
	  .help = "trigger rate in events/s, 0 = as fast as possible" },
	{ "events", 0, XEVB_T_U64, "N", F(c.events), 0, 0, 1, (double)(UINT64_MAX / 2), .section = S_EV,
	  .help = "events to send per source (default: until --duration or Ctrl-C)" },
	{ "run", 0, XEVB_T_U32, "N", F(c.run), 0, 0, 0, UINT32_MAX, .def = "1", .section = S_EV,
	  .help = "run number" },
	{ "first-event", 0, XEVB_T_U32, "N", F(c.first_event), 0, 0, 0, UINT32_MAX, .def = "0", .section = S_EV,
	  .help = "first event_id" },
	{ "end-of-run", 0, XEVB_T_FLAG, NULL, F(c.eor), .def = "1", .section = S_EV,
	  .help = "flag each source's last packet END_OF_RUN (default)" },
	{ "no-end-of-run", 0, XEVB_T_FUNC, NULL, F(c.eor), .section = S_EV, .parse = parse_clear,
	  .help = "do not flag the last packets" },

	{ "skip-events", 0, XEVB_T_STRS, "SRC:EVERY", F(skip_arg), F(n_skip_arg), SRC_MAX_SKIP, .section = S_FAULT,
	  .help = "source SRC omits every EVERY-th event (repeatable)" },
	{ "skip-segments", 0, XEVB_T_STRS, "SRC:EVERY", F(skipseg_arg), F(n_skipseg_arg), SRC_MAX_SKIP,
	  .section = S_FAULT, .help = "source SRC leaves out every EVERY-th segment (repeatable)" },
	{ "duplicate", 0, XEVB_T_DOUBLE, "FRACTION", F(c.dup), 0, 0, 0, 1, .section = S_FAULT,
	  .help = "send this fraction of packets (segments too) twice" },
	{ "reorder", 0, XEVB_T_FLAG, NULL, F(c.reorder), .section = S_FAULT,
	  .help = "shuffle packet (and segment) order within windows of 4" },
	{ "corrupt", 0, XEVB_T_DOUBLE, "FRACTION", F(c.corrupt), 0, 0, 0, 1, .section = S_FAULT,
	  .help = "corrupt a header field in this fraction of packets (segments too)" },
	{ "stop-after", 0, XEVB_T_STR, "[SRC:]N", F(stop_arg), .section = S_FAULT,
	  .help = "source SRC (default the first) dies after N packets" },
	{ "seed", 0, XEVB_T_U64, "N", F(c.seed), 0, 0, 0, (double)UINT64_MAX, .def = "1", .section = S_FAULT,
	  .help = "seed of the fragment-size and fault draws" },

	{ "dfm", 0, XEVB_T_STR, "ADDR:PORT", F(c.dfm), .section = S_DFM,
	  .help = "send where this data-flow manager says (push) or when builders ask (pull)" },
	{ "ctl-port", 0, XEVB_T_U16, "N", F(c.ctl_port), 0, 0, 1, 65535, .def = "23903", .section = S_DFM,
	  .help = "--dfm: our control port" },
	{ "hold", 0, XEVB_T_U32, "N", F(c.hold), 0, 0, 16, 1u << 24, .def = "65536", .section = S_DFM,
	  .flags = XEVB_F_POW2, .help = "--dfm: events held until cleared, power of 2" },
	{ "drop-answers", 0, XEVB_T_DOUBLE, "FRACTION", F(c.drop_answers), 0, 0, 0, 1, .section = S_DFM,
	  .help = "--dfm: do not send this fraction of the MEPs an ASSIGN (push) or "
		  "REQUEST (pull) asks for (tests re-asks; --mode live drops every source's MEP of a block at once)" },
	XEVB_CFG_CONFIG(S_DFM),
	{ "id", 0, XEVB_T_FUNC, "N", .section = S_DFM, .parse = parse_id,
	  .help = "with --config: run as its [source N] (its DFM, source ids, control port)" },
	XEVB_CFG_KEY_FILE(S_DFM, struct src_args, co),

	XEVB_CFG_DURATION(S_RUN, struct src_args, co),
	XEVB_CFG_JSON(S_RUN, struct src_args, co),
	XEVB_CFG_QUIET(S_RUN, struct src_args, co),
	XEVB_CFG_VERBOSE(S_RUN, struct src_args, co),
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "source",
	.summary =
		"Emulate read-out sources: send MEPs (wire format 1) to a builder.\n"
		"Each source sends every event once, in blocks of --pack events; for each\n"
		"block every source sends one packet, packet_seq counting per source.\n"
		"Fragments larger than a packet (up to 65535 bytes, with --pack 1) go as\n"
		"segments (wire format 1.1, flag SEGMENT): one packet each, sized to the MTU\n"
		"of --dev or of the route, every one with its own packet_seq; --skip-segments,\n"
		"--duplicate, --reorder and --corrupt act on segments. --ip-frag sends each\n"
		"such MEP whole with DF clear instead, and the kernel sends IPv4 fragments.\n"
		"Live mode (benchmarks) stamps one template frame in an XDP program and\n"
		"sends it with XDP_TX from BPF_PROG_RUN: fixed --frag-size only, no fault\n"
		"injection, frames up to 3408 bytes (a page, whatever the MTU), no --ip-frag;\n"
		"with --pack 1 a larger fragment goes as segments of at most that frame,\n"
		"paced per packet; the receiving veth needs an XDP program.\n"
		"Xsk mode sends the same MEPs from an AF_XDP socket's TX ring, segments at\n"
		"the full MTU (multi-buffer frames); with a qdisc on --dev (tc qdisc replace\n"
		"dev IFACE root pfifo) a veth whose peer is full holds it instead of dropping.\n"
		"On Ctrl-C or at --duration one more block is sent, flagged END_OF_RUN.\n"
		"With --dfm, events and destinations come from the data-flow manager: push\n"
		"(ASSIGN blocks) or pull (builders' REQUESTs); --mode live then sends the\n"
		"same MEPs as live frames from one long BPF_PROG_RUN call (fixed --frag-size)\n"
		"that keeps running while the control thread feeds it (the builders' MACs\n"
		"from the neighbour table, or --dst-mac for all), far faster than a sendto\n"
		"per MEP; frames are paced to at most --rate events/s (default 1M frames/s).\n"
		"Under --dfm in socket mode, fragments over the MTU go as segments too, and a\n"
		"re-asked event's fragment is sent again whole: every segment, flagged RESEND.",
	.usage = "--dest ADDR [options]",
	.examples =
		"  xevb source --dest 198.18.2.1 --source-ids 0-3 --events 1000\n"
		"  xevb source --dest 198.18.2.1 --udp 23900 --frag-size 100-300 --rate 10000 --duration 5\n"
		"  xevb source --dest 198.18.2.1 --source-ids 0-9 --skip-events 3:100 --duplicate 0.01 --json\n"
		"  xevb source --dest 198.18.2.1 --pack 1 --frag-size 65535 --events 100      # 46 segments each at MTU 1500\n"
		"  xevb source --dest 198.18.2.1 --pack 1 --frag-size 16000 --skip-segments 0:12 --reorder\n"
		"  xevb source --dest 198.18.2.1 --udp --pack 1 --frag-size 16000 --ip-frag --events 100\n"
		"  xevb source --dest 198.18.2.1 --dev eth0 --mode live --pack 1 --frag-size 980 --duration 2\n"
		"  xevb source --dest 198.18.2.1 --dev eth1 --mode xsk --source-ids 0-125 --duration 2\n"
		"  xevb source --dfm 198.18.4.1:23901 --source-ids 0-3 --udp --frag-size 200 --drop-answers 0.01\n"
		"  xevb source --dfm 198.18.4.1:23901 --source-ids 0-125 --udp --dev eth0 --mode live\n",
};

const struct xevb_cfg_cmd source_cmd = { .help = &help, .opts = opts, .sections = sections };

/* "SRC:N" where SRC is a source id that must be emulated; returns its index. */
static int parse_src_colon(const char *opt, const char *s, const struct src_cfg *c, bool src_optional,
			   uint64_t min, uint64_t *n)
{
	char buf[64], *colon;
	uint32_t id;

	snprintf(buf, sizeof(buf), "%s", s);
	colon = strchr(buf, ':');
	if (!colon) {
		if (!src_optional) {
			xevb_err("--%s: '%s' is not SOURCE:N", opt, s);
			return -1;
		}
		return xevb_parse_u64(opt, buf, min, UINT32_MAX, n) ? 0 : -1;
	}
	*colon = 0;
	if (!xevb_parse_u32(opt, buf, 0, XEVB_MAX_SOURCE_ID, &id) ||
	    !xevb_parse_u64(opt, colon + 1, min, UINT32_MAX, n))
		return -1;
	for (int i = 0; i < c->n_src; i++)
		if (c->ids[i] == id)
			return i;
	xevb_err("--%s: source %u is not one of --source-ids", opt, id);
	return -1;
}

/* Options that name a source, resolved once --source-ids is known; false (said why) on a bad one. */
static bool resolve_src_args(struct src_args *a)
{
	struct src_cfg *c = &a->c;
	uint64_t n;
	int idx;

	c->n_skip = (int)a->n_skip_arg;
	c->n_skip_seg = (int)a->n_skipseg_arg;
	for (int i = 0; i < c->n_skip; i++) {
		if ((idx = parse_src_colon("skip-events", a->skip_arg[i], c, false, 1, &n)) < 0)
			return false;
		c->skip[i].src_idx = (uint16_t)idx;
		c->skip[i].every = (uint32_t)n;
	}
	for (int i = 0; i < c->n_skip_seg; i++) {
		if ((idx = parse_src_colon("skip-segments", a->skipseg_arg[i], c, false, 1, &n)) < 0)
			return false;
		c->skip_seg[i].src_idx = (uint16_t)idx;
		c->skip_seg[i].every = (uint32_t)n;
	}
	if (a->stop_arg) {
		if ((idx = parse_src_colon("stop-after", a->stop_arg, c, true, 0, &c->stop_after)) < 0)
			return false;
		c->stop_idx = idx;
	}
	return true;
}

static bool has_faults(const struct src_cfg *c)
{
	return c->n_skip || c->n_skip_seg || c->dup > 0 || c->corrupt > 0 || c->reorder || c->stop_idx >= 0;
}

/* Under --dfm: what the data-flow manager decides is not ours to give. */
static bool check_dfm(const struct src_cfg *c, bool have_dest)
{
	if (have_dest || has_faults(c) || c->events || (c->rate > 0 && !c->live)) {
		xevb_err(
			"--dfm decides destinations and events: no --dest, --events, "
			"--rate (but as --mode live's ceiling) or fault options with it");
		return false;
	}
	if (c->ids[c->n_src - 1] - c->ids[0] != c->n_src - 1) {
		xevb_err("--dfm: --source-ids must be one range such as 4-7");
		return false;
	}
	if (c->live && (!c->dev || c->fmin != c->fmax || c->saddr_base)) {
		xevb_err(
			"--dfm --mode live needs --dev IFACE and one fixed --frag-size; "
			"--src-addr-base needs --mode socket");
		return false;
	}
	if (c->xsk) {
		xevb_err("--dfm sends with --mode socket or live; --mode xsk runs without a DFM");
		return false;
	}
	return true;
}

/* Live mode and xsk mode (live's variant: what it sends, from an AF_XDP TX ring). */
static bool check_live(const struct src_cfg *c)
{
	const char *mode = c->xsk ? "xsk" : "live";

	if (!c->dev) {
		xevb_err("--mode %s needs --dev IFACE (the interface whose peer gets the frames)", mode);
		return false;
	}
	if (c->fmin != c->fmax) {
		xevb_err("--mode %s sends one fixed --frag-size; a MIN-MAX range needs --mode socket", mode);
		return false;
	}
	if (has_faults(c)) {
		xevb_err(
			"fault injection (--skip-events, --skip-segments, --duplicate, --reorder, --corrupt, "
			"--stop-after) needs --mode socket");
		return false;
	}
	if (c->events % c->pack) {
		xevb_err("--mode %s sends whole blocks: make --events a multiple of --pack (%u)", mode, c->pack);
		return false;
	}
	return true;
}

/* Cross-option checks that need the whole command line. */
static bool check(const struct src_cfg *c, bool have_dest)
{
	if (c->ip_frag && (c->live || c->saddr_base || c->dfm)) {
		xevb_err(
			"--ip-frag needs --mode socket without --src-addr-base (the kernel fragments "
			"only what it writes the IP header of) and without --dfm (which sends segments)");
		return false;
	}
	if (c->dfm)
		return check_dfm(c, have_dest);
	if (c->drop_answers > 0) {
		xevb_err("--drop-answers goes with --dfm");
		return false;
	}
	if (!have_dest) {
		xevb_err("--dest ADDR is required: the builder's IPv4 address");
		return false;
	}
	if (c->saddr && c->saddr_base) {
		xevb_err("give either --src-addr or --src-addr-base, not both");
		return false;
	}
	if (c->saddr_base && (uint64_t)c->saddr_base + (uint64_t)c->n_src - 1 > UINT32_MAX) {
		xevb_err("--src-addr-base: base + %d sources runs past 255.255.255.255", c->n_src);
		return false;
	}
	return !c->live || check_live(c);
}

int source_opts_parse(int argc, char **argv, struct src_args *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	a->co = (struct xevb_common_opts)XEVB_COMMON_OPTS_INIT;
	a->c.stop_idx = -1;
	rc = xevb_cfg_parse(&source_cmd, argc, argv, a);
	if (rc >= 0)
		return rc;
	/* Control keys are bound to the run: a message of another run does not open. */
	xevb_ctl_set_run(a->c.run);
	if (a->co.key_file && xevb_ctl_set_key_file(a->co.key_file))
		return 2;
	a->c.xsk = a->mode == SRC_MODE_XSK;
	a->c.live = a->mode == SRC_MODE_LIVE || a->c.xsk;
	a->c.json = a->co.json;
	a->c.duration = (double)a->co.duration_ns / 1e9;
	if (!resolve_src_args(a) || !check(&a->c, a->have_dest))
		return 2;
	/* Another member's key (or a builder's bundle) is a usage error, said before anything starts. */
	if (a->co.key_file && a->c.dfm && a->c.n_src && xevb_ctl_key_for(XEVB_ROLE_SOURCE, a->c.ids[0]))
		return 2;
	return -1;
}

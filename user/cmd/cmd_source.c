// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source`: the read-out emulator. Options and the summary live here;
 * the senders are source_sock.c (kernel sockets, faults) and source_live.c
 * (BPF_PROG_RUN live frames, for benchmarks); under a DFM, source_dfm.c
 * (control plane and socket sends) and source_dfm_live.c (live frames).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xevb/cli.h>
#include <xevb/shape_ctl.h>
#include <xevb/runcfg.h>
#include "cmds.h"
#include "source.h"

volatile sig_atomic_t src_stop;

enum {
	O_DEST = 256,
	O_IDS,
	O_SRC,
	O_SRC_BASE,
	O_PACK,
	O_FRAG,
	O_RATE,
	O_EVENTS,
	O_RUN,
	O_FIRST,
	O_UDP,
	O_PROTO,
	O_DEV,
	O_MODE,
	O_SKIP,
	O_DUP,
	O_REORDER,
	O_CORRUPT,
	O_STOP,
	O_EOR,
	O_NO_EOR,
	O_DMAC,
	O_SEED,
	O_DFM,
	O_CTLPORT,
	O_HOLD,
	O_DROPANS,
	O_SHAPE,
	O_IPFRAG,
	O_SKIPSEG,
	O_CONFIG,
	O_ID,
};

static const struct xevb_opt opts[] = {
	{ "dest", O_DEST, "ADDR", "builder IPv4 address (required)" },
	{ "source-ids", O_IDS, "LIST", "source ids to emulate, e.g. 0-125 (default 0)" },
	{ "src-addr", O_SRC, "ADDR", "source IPv4 address of every packet (default: the route's)" },
	{ "src-addr-base", O_SRC_BASE, "ADDR", "source i sends from ADDR + i (raw IP_HDRINCL socket, or live)" },
	{ "pack", O_PACK, "N", "packing factor: events per packet (default 25)" },
	{ "frag-size", O_FRAG, "B|MIN-MAX",
	  "fragment payload bytes up to 65535, or uniform in MIN..MAX (default 32); "
	  "with --pack 1 a fragment over the MTU goes as segments" },
	{ "ip-frag", O_IPFRAG, NULL,
	  "send a MEP over the MTU whole with DF clear: the kernel fragments it "
	  "(fragments up to 65476 bytes)" },
	{ "rate", O_RATE, "HZ", "trigger rate in events/s, 0 = as fast as possible (default 0)" },
	{ "events", O_EVENTS, "N", "events to send per source (default: until --duration or Ctrl-C)" },
	{ "run", O_RUN, "N", "run number (default 1)" },
	{ "first-event", O_FIRST, "N", "first event_id (default 0)" },
	{ "udp", O_UDP, NULL, "send UDP, to port 23900 or to the number after --udp" },
	{ "proto", O_PROTO, "N", "raw IPv4 protocol number (default 253)" },
	{ "dev", O_DEV, "IFACE", "interface to send on (required for --mode live)" },
	{ "mode", O_MODE, "socket|live",
	  "kernel sockets + sendmmsg (default), or XDP live frames (also with --dfm)" },
	XEVB_OPT_DURATION,
	{ "skip-events", O_SKIP, "SRC:EVERY", "source SRC omits every EVERY-th event (repeatable)" },
	{ "skip-segments", O_SKIPSEG, "SRC:EVERY", "source SRC leaves out every EVERY-th segment (repeatable)" },
	{ "duplicate", O_DUP, "FRACTION", "send this fraction of packets (segments too) twice" },
	{ "reorder", O_REORDER, NULL, "shuffle packet (and segment) order within windows of 4" },
	{ "corrupt", O_CORRUPT, "FRACTION", "corrupt a header field in this fraction of packets (segments too)" },
	{ "stop-after", O_STOP, "[SRC:]N", "source SRC (default the first) dies after N packets" },
	{ "end-of-run", O_EOR, NULL, "flag each source's last packet END_OF_RUN (default)" },
	{ "no-end-of-run", O_NO_EOR, NULL, "do not flag the last packets" },
	{ "dst-mac", O_DMAC, "MAC",
	  "live mode: next-hop MAC, for every builder with --dfm (default: neighbour table)" },
	{ "seed", O_SEED, "N", "seed of the fragment-size and fault draws (default 1)" },
	XEVB_OPT_JSON,
	XEVB_OPT_QUIET,
	XEVB_OPT_KEY_FILE,
	XEVB_OPT_VERBOSE,
	{ "dfm", O_DFM, "ADDR:PORT", "send where this data-flow manager says (push) or when builders ask (pull)" },
	{ "ctl-port", O_CTLPORT, "N", "--dfm: our control port (default 23903)" },
	{ "config", O_CONFIG, "FILE",
	  "start from a run configuration (docs/run-config.md); explicit options override it" },
	{ "id", O_ID, "N", "with --config: run as its [source N] (its DFM, source ids, control port)" },
	{ "hold", O_HOLD, "N", "--dfm: events held until cleared, power of 2 (default 65536)" },
	{ "drop-answers", O_DROPANS, "FRACTION",
	  "--dfm: do not send this fraction of the MEPs an ASSIGN (push) or "
	  "REQUEST (pull) asks for (tests re-asks; --mode live drops every source's MEP of a block at once)" },
	{ "shape", O_SHAPE, "RATE", "socket mode: shape our output to --dest at RATE on --dev (xevb shape)" },
	{ 0 }
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
		"  xevb source --dfm 198.18.4.1:23901 --source-ids 0-3 --udp --frag-size 200 --drop-answers 0.01\n"
		"  xevb source --dfm 198.18.4.1:23901 --source-ids 0-125 --udp --dev eth0 --mode live\n",
};

static bool parse_addr(const char *opt, const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		xevb_err("--%s: '%s' is not an IPv4 address such as 198.18.2.1", opt, s);
		return false;
	}
	*out = a.s_addr;
	return true;
}

static bool parse_fraction(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0 && v <= 1)) {
		xevb_err("--%s: '%s' is not a fraction in 0..1", opt, s);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_seconds(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0 && v < 1e9)) {
		xevb_err("--%s: '%s' is not a number of seconds (or events/s)", opt, s);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_frag(const char *s, struct src_cfg *c)
{
	char buf[64], *dash;
	uint32_t a, b;

	snprintf(buf, sizeof(buf), "%s", s);
	dash = strchr(buf, '-');
	if (dash)
		*dash = 0;
	if (!xevb_parse_u32("frag-size", buf, 0, 65535, &a))
		return false;
	b = a;
	if (dash && !xevb_parse_u32("frag-size", dash + 1, a, 65535, &b))
		return false;
	c->fmin = (uint16_t)a;
	c->fmax = (uint16_t)b;
	return true;
}

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

static bool parse_mac(const char *s, uint8_t *mac)
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) {
		xevb_err("--dst-mac: '%s' is not a MAC such as 02:00:00:00:00:02", s);
		return false;
	}
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return true;
}

static void on_signal(int sig)
{
	(void)sig;
	src_stop = 1;
}

static void print_summary(const struct src_cfg *c, const struct src_stats *st)
{
	double el = (double)(st->t_end - st->t_start) / 1e9;
	double pps = el > 0 ? (double)st->packets / el : 0;
	double eps = el > 0 ? (double)st->events / el : 0;
	double gbps = el > 0 ? (double)st->bytes * 8 / el / 1e9 : 0;
	char cpu[96] = "";

	if (st->cpu_ns)
		snprintf(cpu, sizeof(cpu), "\n  CPU %.3f s in BPF_PROG_RUN: %.0f packets per CPU-second",
			 (double)st->cpu_ns / 1e9, (double)st->packets / ((double)st->cpu_ns / 1e9));

	fprintf(stderr,
		"%s: %s%d sources, %llu events, %llu packets, %llu fragments, %llu bytes in %.3f s\n"
		"  %.0f packets/s, %.0f events/s, %.3f Gb/s (IP payload)\n"
		"  faults: skipped %llu frags, duplicated %llu packets (%llu frags), reordered %llu,"
		" corrupt %llu packets (%llu frags), stopped %llu sources (%llu frags unsent)\n"
		"  end-of-run packets %llu, send retries %llu%s\n"
		"  segments: %llu fragments in %llu segments (%llu sent whole, %llu partial);"
		" skipped %llu, corrupt %llu, duplicated %llu segments\n",
		xevb_prog, st->aborted ? "ABORTED: " : "", c->n_src, (unsigned long long)st->events,
		(unsigned long long)st->packets, (unsigned long long)st->frags, (unsigned long long)st->bytes, el,
		pps, eps, gbps, (unsigned long long)st->skipped_frags, (unsigned long long)st->dup_packets,
		(unsigned long long)st->dup_frags, (unsigned long long)st->reordered_packets,
		(unsigned long long)st->corrupt_packets, (unsigned long long)st->corrupt_frags,
		(unsigned long long)st->stopped_sources, (unsigned long long)st->stopped_frags,
		(unsigned long long)st->eor_packets, (unsigned long long)st->send_retries, cpu,
		(unsigned long long)st->seg_frags, (unsigned long long)st->segments,
		(unsigned long long)(st->seg_frags - st->partial_frags), (unsigned long long)st->partial_frags,
		(unsigned long long)st->skipped_segments, (unsigned long long)st->corrupt_segments,
		(unsigned long long)st->dup_segments);
	if (!c->json)
		return;
	/* Wall-clock time of the first event (paced sends: event e at + e/rate), for tests. */
	uint64_t start_realtime = xevb_realtime_ns() - (xevb_now_ns() - st->t_start);

	printf("{\"mode\":\"%s\",\"sources\":%d,\"pack\":%u,\"run\":%u,\"first_event\":%u,"
	       "\"events\":%llu,\"blocks\":%llu,\"packets\":%llu,\"fragments\":%llu,\"bytes\":%llu,"
	       "\"valid_fragments\":%llu,\"skipped_fragments\":%llu,"
	       "\"duplicate_packets\":%llu,\"duplicate_fragments\":%llu,\"reordered_packets\":%llu,"
	       "\"corrupt_packets\":%llu,\"corrupt_fragments\":%llu,"
	       "\"stopped_sources\":%llu,\"stopped_fragments\":%llu,\"end_of_run_packets\":%llu,"
	       "\"send_retries\":%llu,\"ip_frag\":%s,\"segmented_fragments\":%llu,\"segments\":%llu,"
	       "\"valid_segments\":%llu,\"partial_fragments\":%llu,\"skipped_segments\":%llu,"
	       "\"corrupt_segments\":%llu,\"duplicate_segments\":%llu,\"aborted\":%s,"
	       "\"elapsed_s\":%.6f,\"packets_per_s\":%.1f,\"events_per_s\":%.1f,\"gbps\":%.4f,"
	       "\"cpu_s\":%.6f,\"packets_per_cpu_s\":%.1f,\"start_realtime_ns\":%llu}\n",
	       c->live ? "live" : "socket", c->n_src, c->pack, c->run, c->first_event,
	       (unsigned long long)st->events, (unsigned long long)st->blocks, (unsigned long long)st->packets,
	       (unsigned long long)st->frags, (unsigned long long)st->bytes, (unsigned long long)st->valid_frags,
	       (unsigned long long)st->skipped_frags, (unsigned long long)st->dup_packets,
	       (unsigned long long)st->dup_frags, (unsigned long long)st->reordered_packets,
	       (unsigned long long)st->corrupt_packets, (unsigned long long)st->corrupt_frags,
	       (unsigned long long)st->stopped_sources, (unsigned long long)st->stopped_frags,
	       (unsigned long long)st->eor_packets, (unsigned long long)st->send_retries,
	       c->ip_frag ? "true" : "false", (unsigned long long)st->seg_frags, (unsigned long long)st->segments,
	       (unsigned long long)st->seg_valid, (unsigned long long)st->partial_frags,
	       (unsigned long long)st->skipped_segments, (unsigned long long)st->corrupt_segments,
	       (unsigned long long)st->dup_segments, st->aborted ? "true" : "false", el, pps, eps, gbps,
	       (double)st->cpu_ns / 1e9, st->cpu_ns ? (double)st->packets / ((double)st->cpu_ns / 1e9) : 0.0,
	       (unsigned long long)start_realtime);
	fflush(stdout);
}

/* Cross-option checks that need the whole command line. */
static bool check(struct src_cfg *c, bool have_dest)
{
	if (c->ip_frag && (c->live || c->saddr_base || c->dfm)) {
		xevb_err(
			"--ip-frag needs --mode socket without --src-addr-base (the kernel fragments "
			"only what it writes the IP header of) and without --dfm (which sends segments)");
		return false;
	}
	if (c->dfm) {
		if (have_dest || c->n_skip || c->n_skip_seg || c->dup > 0 || c->corrupt > 0 || c->reorder ||
		    c->stop_idx >= 0 || c->events || (c->rate > 0 && !c->live)) {
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
		return true;
	}
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
	if (c->live) {
		if (!c->dev) {
			xevb_err("--mode live needs --dev IFACE (the interface whose peer gets the frames)");
			return false;
		}
		if (c->fmin != c->fmax) {
			xevb_err("--mode live sends one fixed --frag-size; a MIN-MAX range needs --mode socket");
			return false;
		}
		if (c->n_skip || c->n_skip_seg || c->dup > 0 || c->corrupt > 0 || c->reorder || c->stop_idx >= 0) {
			xevb_err(
				"fault injection (--skip-events, --skip-segments, --duplicate, --reorder, --corrupt, "
				"--stop-after) needs --mode socket");
			return false;
		}
		if (c->events % c->pack) {
			xevb_err("--mode live sends whole blocks: make --events a multiple of --pack (%u)",
				 c->pack);
			return false;
		}
	}
	return true;
}

/* The command line beyond src_cfg: options resolved once all are read. */
struct src_opts {
	const char *skip_arg[SRC_MAX_SKIP], *skipseg_arg[SRC_MAX_SKIP], *stop_arg;
	bool have_dest;
	uint64_t shape_bps;
};

static bool parse_ids(const char *arg, struct src_cfg *c)
{
	if ((c->n_src = xevb_parse_id_list("source-ids", arg, c->ids, XEVB_MAX_SOURCES)) < 0)
		return false;
	if (c->ids[c->n_src - 1] > XEVB_MAX_SOURCE_ID) {
		xevb_err("--source-ids: %u is over the largest source_id, %u", c->ids[c->n_src - 1],
			 XEVB_MAX_SOURCE_ID);
		return false;
	}
	return true;
}

static bool parse_src_base(const char *arg, struct src_cfg *c)
{
	uint32_t u;

	if (!parse_addr("src-addr-base", arg, &u))
		return false;
	c->saddr_base = ntohl(u);
	return true;
}

/* --udp [PORT]: an optional argument, the next word if it is a number. */
static bool parse_udp(int argc, char **argv, struct src_cfg *c)
{
	uint32_t u;

	c->udp_port = XEVB_DEFAULT_UDP_PORT;
	if (optind < argc && isdigit((unsigned char)argv[optind][0])) {
		if (!xevb_parse_u32("udp", argv[optind], 1, 65535, &u))
			return false;
		c->udp_port = (uint16_t)u;
		optind++;
	}
	return true;
}

static bool parse_proto(const char *arg, struct src_cfg *c)
{
	uint32_t u;

	if (!xevb_parse_u32("proto", arg, 1, 255, &u))
		return false;
	if (u == 17 || u == 6 || u == 1) {
		xevb_err("--proto %u is a standard protocol; use --udp for UDP, or 253/254", u);
		return false;
	}
	c->proto = (uint8_t)u;
	return true;
}

static bool parse_mode(const char *arg, struct src_cfg *c)
{
	if (!strcmp(arg, "live"))
		c->live = true;
	else if (!strcmp(arg, "socket"))
		c->live = false;
	else {
		xevb_err("--mode: '%s' is neither 'socket' nor 'live'", arg);
		return false;
	}
	return true;
}

/* A repeatable SRC:EVERY option, kept until --source-ids is known. */
static bool keep_src_arg(const char *opt, const char *arg, const char **args, int *n)
{
	if (*n == SRC_MAX_SKIP) {
		xevb_err("--%s: at most %d of them", opt, SRC_MAX_SKIP);
		return false;
	}
	args[(*n)++] = arg;
	return true;
}

static bool parse_ctl_port(const char *arg, struct src_cfg *c)
{
	uint32_t u;

	if (!xevb_parse_u32("ctl-port", arg, 1, 65535, &u))
		return false;
	c->ctl_port = (uint16_t)u;
	return true;
}

static bool parse_hold(const char *arg, struct src_cfg *c)
{
	if (!xevb_parse_u32("hold", arg, 16, 1u << 24, &c->hold) || (c->hold & (c->hold - 1))) {
		xevb_err("--hold: a power of 2 from 16 to 16M");
		return false;
	}
	return true;
}

/* Only a configuration gives a source process an id; alone it would be silently ignored. */
static bool check_id(void)
{
	if (!xevb_runcfg_current()) {
		xevb_err(
			"--id picks a [source N] of --config FILE; without a configuration the source "
			"ids are --source-ids");
		return false;
	}
	return true;
}

/* One option of the command's own: -1 when taken, else the exit status. */
static int source_option(int key, const char *arg, int argc, char **argv, struct src_cfg *c, struct src_opts *o)
{
	bool ok = true;

	switch (key) {
	case 'h':
		xevb_opt_usage(opts, &help);
		return 0;
	case '?':
		return 2;
	case O_CONFIG:
		ok = xevb_runcfg_was_read();
		break;
	case O_ID:
		ok = check_id();
		break;
	case O_DEST:
		ok = o->have_dest = parse_addr("dest", arg, &c->daddr);
		break;
	case O_IDS:
		ok = parse_ids(arg, c);
		break;
	case O_SRC:
		ok = parse_addr("src-addr", arg, &c->saddr);
		break;
	case O_SRC_BASE:
		ok = parse_src_base(arg, c);
		break;
	case O_PACK:
		ok = xevb_parse_u32("pack", arg, 1, XEVB_MAX_FRAGS_PER_MEP, &c->pack);
		break;
	case O_FRAG:
		ok = parse_frag(arg, c);
		break;
	case O_RATE:
		ok = parse_seconds("rate", arg, &c->rate);
		break;
	case O_EVENTS:
		ok = xevb_parse_u64("events", arg, 1, UINT64_MAX / 2, &c->events);
		break;
	case O_RUN:
		ok = xevb_parse_u32("run", arg, 0, UINT32_MAX, &c->run);
		break;
	case O_FIRST:
		ok = xevb_parse_u32("first-event", arg, 0, UINT32_MAX, &c->first_event);
		break;
	case O_UDP:
		ok = parse_udp(argc, argv, c);
		break;
	case O_PROTO:
		ok = parse_proto(arg, c);
		break;
	case O_DEV:
		c->dev = arg;
		break;
	case O_MODE:
		ok = parse_mode(arg, c);
		break;
	case O_SKIP:
		ok = keep_src_arg("skip-events", arg, o->skip_arg, &c->n_skip);
		break;
	case O_SKIPSEG:
		ok = keep_src_arg("skip-segments", arg, o->skipseg_arg, &c->n_skip_seg);
		break;
	case O_IPFRAG:
		c->ip_frag = true;
		break;
	case O_DUP:
		ok = parse_fraction("duplicate", arg, &c->dup);
		break;
	case O_REORDER:
		c->reorder = true;
		break;
	case O_CORRUPT:
		ok = parse_fraction("corrupt", arg, &c->corrupt);
		break;
	case O_STOP:
		o->stop_arg = arg;
		break;
	case O_EOR:
		c->eor = true;
		break;
	case O_NO_EOR:
		c->eor = false;
		break;
	case O_DMAC:
		ok = c->dst_mac_set = parse_mac(arg, c->dst_mac);
		break;
	case O_SEED:
		ok = xevb_parse_u64("seed", arg, 0, UINT64_MAX, &c->seed);
		break;
	case O_SHAPE:
		ok = xevb_shape_parse_rate("shape", arg, &o->shape_bps);
		break;
	case O_DFM:
		c->dfm = arg;
		break;
	case O_CTLPORT:
		ok = parse_ctl_port(arg, c);
		break;
	case O_HOLD:
		ok = parse_hold(arg, c);
		break;
	case O_DROPANS:
		ok = parse_fraction("drop-answers", arg, &c->drop_answers);
		break;
	}
	return ok ? -1 : 2;
}

/* Options that name a source, resolved once --source-ids is known; false (said why) on a bad one. */
static bool resolve_src_args(struct src_cfg *c, const struct src_opts *o)
{
	uint64_t n;
	int idx;

	for (int i = 0; i < c->n_skip; i++) {
		if ((idx = parse_src_colon("skip-events", o->skip_arg[i], c, false, 1, &n)) < 0)
			return false;
		c->skip[i].src_idx = (uint16_t)idx;
		c->skip[i].every = (uint32_t)n;
	}
	for (int i = 0; i < c->n_skip_seg; i++) {
		if ((idx = parse_src_colon("skip-segments", o->skipseg_arg[i], c, false, 1, &n)) < 0)
			return false;
		c->skip_seg[i].src_idx = (uint16_t)idx;
		c->skip_seg[i].every = (uint32_t)n;
	}
	if (o->stop_arg) {
		if ((idx = parse_src_colon("stop-after", o->stop_arg, c, true, 0, &c->stop_after)) < 0)
			return false;
		c->stop_idx = idx;
	}
	return true;
}

/* -1: go on; else the exit status (bad options, --help). */
static int parse_options(int argc, char **argv, struct src_cfg *c, struct src_opts *o)
{
	struct xevb_common_opts co = XEVB_COMMON_OPTS_INIT;
	const char *arg;
	int key, r;

	while ((key = xevb_opt_next(argc, argv, opts, &help, &arg)) != -1) {
		int common = xevb_common_opt(key, arg, &co);
		if (common < 0)
			return 2;
		if (common)
			continue;
		if ((r = source_option(key, arg, argc, argv, c, o)) >= 0)
			return r;
	}
	if (optind < argc) {
		xevb_err("unexpected argument '%s' (try 'xevb source --help')", argv[optind]);
		return 2;
	}
	c->json = co.json;
	c->duration = (double)co.duration_ns / 1e9;
	if (!resolve_src_args(c, o) || !check(c, o->have_dest))
		return 2;
	return -1;
}

static void cfg_defaults(struct src_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->n_src = 1;
	c->pack = 25;
	c->fmin = c->fmax = 32;
	c->run = 1;
	c->proto = XEVB_DEFAULT_IP_PROTO;
	c->eor = true;
	c->seed = 1;
	c->stop_idx = -1;
	c->ctl_port = 23903;
	c->hold = 65536;
}

/* --shape: per-destination shaping of our own output for this run only; -1 when set, else the exit status. */
static int shape_start(const struct src_cfg *c, uint64_t bps, bool *was_up)
{
	struct xevb_shape_rule r = { .daddr = c->daddr, .rate_bps = bps };

	if (c->live || !c->dev) {
		xevb_err("--shape needs --mode socket and --dev IFACE (the interface towards --dest)");
		return 2;
	}
	*was_up = xevb_shape_active(c->dev);
	if (xevb_shape_set(c->dev, &r))
		return 1;
	return -1;
}

/* Let the shaped packets out, then remove our rule (or the shaper, if we brought it up); false on failure. */
static bool shape_stop(const struct src_cfg *c, bool was_up)
{
	struct xevb_shape_rule r = { .daddr = c->daddr };

	xevb_shape_wait_drained(c->dev, 5000);
	return !xevb_shape_clear(c->dev, was_up ? &r : NULL);
}

int cmd_source(int argc, char **argv)
{
	static struct src_cfg c;
	struct src_stats st = { 0 };
	struct src_opts o = { 0 };
	bool shaper_was_up = false;
	int rc;

	cfg_defaults(&c);
	if ((rc = xevb_runcfg_start(&argc, &argv, XEVB_RC_SOURCE)) > 1)
		return rc;
	if ((rc = parse_options(argc, argv, &c, &o)) >= 0)
		return rc;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (o.shape_bps && (rc = shape_start(&c, o.shape_bps, &shaper_was_up)) >= 0)
		return rc;
	if (c.dfm)
		rc = source_run_dfm(&c);
	else
		rc = c.live ? source_run_live(&c, &st) : source_run_socket(&c, &st);
	if (o.shape_bps && !shape_stop(&c, shaper_was_up) && !rc)
		rc = 1;
	if (st.t_start)
		print_summary(&c, &st);
	return rc;
}

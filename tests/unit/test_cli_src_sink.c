// SPDX-License-Identifier: GPL-2.0-only
/*
 * Options as data (cli.h) through `xevb source`'s and `xevb sink`'s
 * tables: the table's own rules (help, section, unique names), the
 * defaults, the values the options store, a bad value refused with exit
 * status 2 and a message naming the option, --help by section, and a run
 * configuration's source and sink settings arriving through the tables.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "wire/event_codec.h"
#include "ctl/runcfg.h"
#include "emu/sink.h"
#include "emu/source.h"
#include "../common/cli_rig.h"

TestSuite(cli_src_sink, .timeout = 10);

static struct src_args src;
static struct sink_cfg snk;
static char errbuf[4096];

enum which { SOURCE, SINK };

struct call {
	enum which w;
	int argc;
	char **argv;
};

static int call_parse(void *arg)
{
	struct call *c = arg;

	return c->w == SOURCE ? source_opts_parse(c->argc, c->argv, &src) :
				sink_opts_parse(c->argc, c->argv, &snk);
}

/* source_opts_parse or sink_opts_parse over "CMD" + args, its messages (stderr) kept in errbuf. */
static int parse(enum which w, const char *const *args)
{
	char *argv[128] = { w == SOURCE ? "source" : "sink" };
	struct call c = { .w = w, .argc = 1, .argv = argv };

	for (; args[c.argc - 1]; c.argc++)
		argv[c.argc] = (char *)args[c.argc - 1];
	return cli_capture(call_parse, &c, errbuf, sizeof(errbuf));
}

#define SRC(...)  parse(SOURCE, (const char *const[]){ __VA_ARGS__, NULL })
#define SINK(...) parse(SINK, (const char *const[]){ __VA_ARGS__, NULL })

static void refused(int rc, const char *says)
{
	cr_assert(eq(int, rc, 2), "accepted; stderr '%s'", errbuf);
	cr_assert(not(eq(ptr, strstr(errbuf, says), NULL)), "'%s' does not say '%s'", errbuf, says);
}

Test(cli_src_sink, every_row_has_help_a_section_and_a_unique_name)
{
	unsigned tune;

	/* No tuning keys: scripts give every one of these as an option. */
	cr_assert(eq(u32, cli_check_rows(&source_cmd, &tune), 37));
	cr_assert(eq(u32, tune, 0));
	cr_assert(eq(u32, cli_check_rows(&sink_cmd, &tune), 28));
	cr_assert(eq(u32, tune, 0));
	cr_assert(eq(u32, cli_check_rows(&sink_feed_cmd, &tune), 7));
	cr_assert(eq(u32, tune, 0));
	memset(&src, 0, sizeof(src));
	cr_assert(xevb_cfg_defaults(&source_cmd, &src), "a default of source is not valid");
	memset(&snk, 0, sizeof(snk));
	cr_assert(xevb_cfg_defaults(&sink_cmd, &snk), "a default of sink is not valid");
}

Test(cli_src_sink, source_defaults)
{
	cr_assert(eq(int, SRC("--dest", "198.18.2.1"), -1), "%s", errbuf);
	cr_assert(src.have_dest);
	cr_assert(eq(u32, src.c.daddr, htonl(0xc6120201)));
	cr_assert(eq(int, src.c.n_src, 1));
	cr_assert(eq(u16, src.c.ids[0], 0));
	cr_assert(eq(u32, src.c.pack, 25));
	cr_assert(eq(u16, src.c.fmin, 32));
	cr_assert(eq(u16, src.c.fmax, 32));
	cr_assert(eq(dbl, src.c.rate, 0));
	cr_assert(eq(u64, src.c.events, 0));
	cr_assert(eq(u32, src.c.run, 1));
	cr_assert(eq(u32, src.c.first_event, 0));
	cr_assert(eq(u16, src.c.udp_port, 0));
	cr_assert(eq(u8, src.c.proto, 253));
	cr_assert(not(src.c.live || src.c.ip_frag || src.c.reorder || src.c.dst_mac_set || src.c.json));
	cr_assert(src.c.eor);
	cr_assert(eq(u64, src.c.seed, 1));
	cr_assert(eq(int, src.c.stop_idx, -1));
	cr_assert(eq(int, src.c.n_skip, 0));
	cr_assert(eq(u16, src.c.ctl_port, 23903));
	cr_assert(eq(u32, src.c.hold, 65536));
	cr_assert(eq(dbl, src.c.duration, 0));
	cr_assert(eq(u64, src.shape_bps, 0));
}

Test(cli_src_sink, source_options_store_their_values)
{
	cr_assert(eq(int,
		     SRC("--dest", "198.18.2.1", "--source-ids", "0-3", "--udp", "--pack", "1", "--frag-size",
			 "100-300", "--rate", "2000.5", "--events", "10", "--run", "7", "--first-event", "9",
			 "--skip-events", "1:10", "--skip-events", "3:5", "--skip-segments", "2:4", "--duplicate",
			 "0.25", "--corrupt", "0.5", "--reorder", "--stop-after", "2:5", "--no-end-of-run",
			 "--seed", "18446744073709551615", "--src-addr-base", "198.18.1.0", "--json", "--duration",
			 "1.5"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(int, src.c.n_src, 4));
	cr_assert(eq(u16, src.c.udp_port, 23900));
	cr_assert(eq(u32, src.c.pack, 1));
	cr_assert(eq(u16, src.c.fmin, 100));
	cr_assert(eq(u16, src.c.fmax, 300));
	cr_assert(eq(dbl, src.c.rate, 2000.5));
	cr_assert(eq(u64, src.c.events, 10));
	cr_assert(eq(u32, src.c.run, 7));
	cr_assert(eq(u32, src.c.first_event, 9));
	cr_assert(eq(int, src.c.n_skip, 2));
	cr_assert(eq(u16, src.c.skip[1].src_idx, 3));
	cr_assert(eq(u32, src.c.skip[1].every, 5));
	cr_assert(eq(int, src.c.n_skip_seg, 1));
	cr_assert(eq(u16, src.c.skip_seg[0].src_idx, 2));
	cr_assert(eq(dbl, src.c.dup, 0.25));
	cr_assert(eq(dbl, src.c.corrupt, 0.5));
	cr_assert(src.c.reorder);
	cr_assert(eq(int, src.c.stop_idx, 2));
	cr_assert(eq(u64, src.c.stop_after, 5));
	cr_assert(not(src.c.eor));
	cr_assert(eq(u64, src.c.seed, UINT64_MAX));
	cr_assert(eq(u32, src.c.saddr_base, 0xc6120100));
	cr_assert(src.c.json);
	cr_assert(eq(dbl, src.c.duration, 1.5));
	/* --udp takes the next word when it is a number; the later of --end-of-run and --no-end-of-run wins. */
	cr_assert(eq(int, SRC("--dest", "198.18.2.1", "--udp", "5000", "--no-end-of-run", "--end-of-run"), -1),
		  "%s", errbuf);
	cr_assert(eq(u16, src.c.udp_port, 5000));
	cr_assert(src.c.eor);
	cr_assert(eq(int,
		     SRC("--dfm", "198.18.4.1:23901", "--source-ids", "4-7", "--mode", "live", "--dev", "eth0",
			 "--frag-size", "980", "--rate", "1000000", "--hold", "1024", "--ctl-port", "24000",
			 "--drop-answers", "0.01", "--dst-mac", "02:00:00:00:00:02"),
		     -1),
		  "%s", errbuf);
	cr_assert(src.c.live);
	cr_assert(eq(str, (char *)src.c.dfm, "198.18.4.1:23901"));
	cr_assert(eq(u32, src.c.hold, 1024));
	cr_assert(eq(u16, src.c.ctl_port, 24000));
	cr_assert(eq(dbl, src.c.drop_answers, 0.01));
	cr_assert(src.c.dst_mac_set);
	cr_assert(eq(u8, src.c.dst_mac[5], 2));
}

Test(cli_src_sink, source_refuses_bad_values_naming_the_option)
{
	refused(SRC("--dest", "nohost"), "--dest: 'nohost' is not an IPv4 address");
	refused(SRC("--dest", "198.18.2.1", "--pack", "0"), "--pack: '0' is not a number in 1..1024");
	refused(SRC("--dest", "198.18.2.1", "--frag-size", "300-100"), "--frag-size: '100' is not a number");
	refused(SRC("--dest", "198.18.2.1", "--mode", "raw"), "--mode: 'raw' is not one of socket|live");
	refused(SRC("--dest", "198.18.2.1", "--udp", "0"), "--udp: '0' is not a number in 1..65535");
	refused(SRC("--dest", "198.18.2.1", "--proto", "17"), "--proto 17 is a standard protocol");
	refused(SRC("--dest", "198.18.2.1", "--rate", "1e9"), "--rate: '1e9' is not a number");
	refused(SRC("--dest", "198.18.2.1", "--rate", "-1"), "--rate: '-1' is not a number");
	refused(SRC("--dest", "198.18.2.1", "--events", "0"), "--events: '0' is not a number");
	refused(SRC("--dest", "198.18.2.1", "--duplicate", "1.5"), "--duplicate: '1.5' is not a number in 0..1");
	refused(SRC("--dest", "198.18.2.1", "--seed", "-1"), "--seed: '-1' is not a number");
	refused(SRC("--dest", "198.18.2.1", "--source-ids", "4096"),
		"--source-ids: id 4096 in '4096' is out of range: ids go from 0 to 4095");
	refused(SRC("--dest", "198.18.2.1", "--skip-events", "9:3"), "--skip-events: source 9 is not one of");
	refused(SRC("--dest", "198.18.2.1", "--stop-after", "x"), "--stop-after: 'x' is not a number");
	refused(SRC("--dest", "198.18.2.1", "--dst-mac", "02:00"), "--dst-mac: '02:00' is not a MAC");
	refused(SRC("--dfm", "198.18.4.1:23901", "--hold", "100"), "--hold: 100 is not a power of 2");
	refused(SRC("--dfm", "198.18.4.1:23901", "--hold", "8"), "--hold: '8' is not a number in 16..16777216");
	refused(SRC("--dest", "198.18.2.1", "--id", "0"), "--id picks a [source N] of --config FILE");
	refused(SRC("--dest", "198.18.2.1", "--nosuch"), "unknown option '--nosuch'");
	refused(SRC("--dest", "198.18.2.1", "stray"), "unexpected argument 'stray'");
	/* Checked together, once all are read. */
	refused(SRC("--events", "10"), "--dest ADDR is required");
	refused(SRC("--dfm", "198.18.4.1:23901", "--dest", "198.18.2.1"), "--dfm decides destinations");
	refused(SRC("--dest", "198.18.2.1", "--mode", "live"), "--mode live needs --dev IFACE");
	refused(SRC("--dest", "198.18.2.1", "--drop-answers", "0.1"), "--drop-answers goes with --dfm");
}

Test(cli_src_sink, sink_defaults)
{
	cr_assert(eq(int, SINK("--input", "-"), -1), "%s", errbuf);
	cr_assert(eq(str, (char *)snk.input, "-"));
	cr_assert(eq(ptr, (void *)snk.listen, NULL));
	cr_assert(eq(u64, snk.expect_events, 0));
	cr_assert(eq(u32, snk.expect_sources, 0));
	cr_assert(not(snk.no_content));
	cr_assert(eq(u32, snk.dup_window, 1u << 20));
	cr_assert(eq(u32, snk.max_event, XEVB_EVT_MAX_LEN));
	cr_assert(eq(u64, snk.max_buffer_total, 256ull << 20));
	cr_assert(eq(u64, snk.partial_timeout_ns, 10000000000ull));
	cr_assert(eq(u32, snk.ctl_port, 0));
	cr_assert(eq(u32, snk.credits, 64));
	cr_assert(eq(u32, snk.id, 0));
	cr_assert(eq(dbl, snk.process_rate, 0));
	cr_assert(eq(dbl, snk.busy_high, 1.2));
	cr_assert(eq(dbl, snk.busy_low, 0.2));
	cr_assert(eq(u16, snk.dfm.sin_port, 0));
	cr_assert(eq(u32, xevb_common_interval(&snk.co), 1));
	cr_assert(not(snk.co.json));
}

Test(cli_src_sink, sink_options_store_their_values)
{
	cr_assert(eq(int,
		     SINK("--listen", "198.18.3.1:5000", "--expect-events", "18446744073709551615",
			  "--expect-sources", "8", "--no-content-check", "--dup-window", "64", "--max-event-size",
			  "4096", "--max-buffer-total", "1052672", "--partial-timeout-ms", "250", "--credits",
			  "32", "--process-rate", "2000", "--busy-high", "2", "--busy-low", "0.5", "--dfm",
			  "198.18.4.1:23901", "--id", "3", "--stats-interval", "5", "--ready-file", "/tmp/r",
			  "--progress-file", "/tmp/p", "--metrics", "9100", "--json"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(str, (char *)snk.listen, "198.18.3.1:5000"));
	cr_assert(eq(u64, snk.expect_events, UINT64_MAX));
	cr_assert(eq(u32, snk.expect_sources, 8));
	cr_assert(snk.no_content);
	cr_assert(eq(u32, snk.dup_window, 64));
	cr_assert(eq(u32, snk.max_event, 4096));
	/* One largest event and libxevb's 1 MiB receive buffer: the least it takes. */
	cr_assert(eq(u64, snk.max_buffer_total, 1052672));
	cr_assert(eq(u64, snk.partial_timeout_ns, 250000000ull));
	cr_assert(eq(u32, snk.credits, 32));
	cr_assert(eq(dbl, snk.process_rate, 2000));
	cr_assert(eq(dbl, snk.busy_high, 2));
	cr_assert(eq(dbl, snk.busy_low, 0.5));
	cr_assert(eq(u16, snk.dfm.sin_port, htons(23901)));
	/* --dfm: the farm node's control port unless given */
	cr_assert(eq(u32, snk.ctl_port, 23904));
	cr_assert(eq(u32, snk.id, 3));
	cr_assert(eq(u32, snk.co.interval_s, 5));
	cr_assert(eq(str, (char *)snk.ready_file, "/tmp/r"));
	cr_assert(eq(str, (char *)snk.progress, "/tmp/p"));
	cr_assert(eq(str, (char *)snk.co.metrics, "9100"));
	cr_assert(snk.co.json);
	cr_assert(eq(int, SINK("--input", "-", "--interval", "2", "--quiet"), -1), "%s", errbuf);
	cr_assert(eq(u32, snk.co.interval_s, 2));
	cr_assert(eq(u32, xevb_common_interval(&snk.co), 0));
}

Test(cli_src_sink, sink_refuses_bad_values_naming_the_option)
{
	refused(SINK("--input", "-", "--expect-events", "0"), "--expect-events: '0' is not a number");
	refused(SINK("--input", "-", "--expect-sources", "4097"), "--expect-sources: '4097' is not a number");
	refused(SINK("--input", "-", "--dup-window", "10"), "--dup-window: '10' is not a number in 64..");
	refused(SINK("--input", "-", "--max-event-size", "8"), "--max-event-size: '8' is not a number in 32..");
	refused(SINK("--input", "-", "--partial-timeout-ms", "x"), "--partial-timeout-ms: 'x' is not a number");
	refused(SINK("--listen", "127.0.0.1:0", "--ctl-port", "0"), "--ctl-port: '0' is not a number in 1..65535");
	refused(SINK("--listen", "127.0.0.1:0", "--busy-high", "x"), "--busy-high: 'x' is not a number");
	refused(SINK("--listen", "127.0.0.1:0", "--process-rate", "-1"), "--process-rate: '-1' is not a number");
	refused(SINK("--listen", "127.0.0.1:0", "--dfm", "nope"), "--dfm: 'nope' is not ADDR:PORT");
	refused(SINK("--input", "-", "--stats-interval", "5000"), "--stats-interval: '5000' is not a number");
	refused(SINK("--input", "-", "--interval", "5000"), "--interval: '5000' is not a number");
	refused(SINK("--input", "-", "--nosuch"), "unknown option '--nosuch'");
	/* Checked together, once all are read. */
	refused(SINK("--json"), "give exactly one of --listen and --input");
	refused(SINK("--input", "-", "--dfm", "198.18.4.1:23901"), "--dfm goes with --listen");
	refused(SINK("--input", "-", "--ready-file", "/tmp/r"), "--ready-file goes with --listen");
	refused(SINK("--input", "-", "--max-buffer-total", "1048576"),
		"cannot hold one event of --max-event-size");
	refused(SINK("--input", "-", "--max-event-size", "4096", "--max-buffer-total", "1052671"),
		"raise it to at least 1052672");
}

/* --help: every option once under its section's heading, then Help. */
static void check_help(const struct xevb_cfg_cmd *c, unsigned want_headings)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	unsigned lines = 0, headings = 0;
	bool examples = false;

	xevb_cfg_usage(f, c);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		examples |= !strcmp(line, "Examples:");
		if (examples)
			continue;
		lines += !strncmp(line, "  -", 3) || !strncmp(line, "      --", 8);
		headings += line[0] != ' ' && line[strlen(line) - 1] == ':' && strncmp(line, "Usage:", 6);
	}
	free(buf);
	cr_assert(eq(u32, lines, xevb_cfg_n_options(c)));
	cr_assert(eq(u32, headings, want_headings));
}

Test(cli_src_sink, help_by_section)
{
	check_help(&source_cmd, 6); /* Destination, Events, Fault injection, Data-flow manager, Run, Help */
	check_help(&sink_cmd, 6);   /* Input, Checks, Limits, Credits and the data-flow manager, Run, Help */
	cr_assert(eq(int, SRC("--help"), 0));
	cr_assert(eq(int, SINK("-h"), 0));
}

/* A run configuration's [source N] and [sink N] as the options it becomes, through the tables. */
/* The last one parsed: src's and snk's strings (--dfm, --listen) are its. */
static struct xevb_runcfg *held;

static int runcfg_parse(enum which w)
{
	static const char text[] =
		"[run]\nnumber = 7\n[dfm]\naddress = 198.18.4.1:23901\n"
		"[builder 0]\naddress = 198.18.2.1\n"
		"[source]\nfrag_size = 200\nhold = 1024\nudp = true\n"
		"[source 0]\naddress = 198.18.1.1\nsource_ids = 0-3\ndata_path = live\n"
		"interface = eth0\n"
		"[sink]\ncredits = 16\nprocess_rate = 500\nbusy_high = 2\n"
		"[sink 0]\naddress = 198.18.3.1\nport = 5001\n";
	const char *args[128];

	xevb_runcfg_free(held);
	held = cli_runcfg_args(text, w == SOURCE ? &source_cmd : &sink_cmd,
			       w == SOURCE ? XEVB_RC_SOURCE : XEVB_RC_SINK, 0, args, 128);
	return parse(w, args);
}

Test(cli_src_sink, run_configuration_through_the_tables)
{
	cr_assert(eq(int, runcfg_parse(SOURCE), -1), "%s", errbuf);
	cr_assert(eq(str, (char *)src.c.dfm, "198.18.4.1:23901"));
	cr_assert(eq(int, src.c.n_src, 4));
	cr_assert(eq(u16, src.c.ids[3], 3));
	cr_assert(eq(u16, src.c.udp_port, 23900));
	cr_assert(eq(u16, src.c.fmin, 200));
	cr_assert(eq(u16, src.c.fmax, 200));
	cr_assert(eq(u32, src.c.hold, 1024));
	cr_assert(eq(u32, src.c.run, 7));
	cr_assert(src.c.live);
	cr_assert(eq(str, (char *)src.c.dev, "eth0"));
	cr_assert(eq(int, runcfg_parse(SINK), -1), "%s", errbuf);
	cr_assert(eq(str, (char *)snk.listen, "198.18.3.1:5001"));
	cr_assert(eq(u16, snk.dfm.sin_port, htons(23901)));
	cr_assert(eq(u32, snk.credits, 16));
	cr_assert(eq(dbl, snk.process_rate, 500));
	cr_assert(eq(dbl, snk.busy_high, 2));
	cr_assert(eq(u32, snk.id, 0));
	cr_assert(not(eq(u32, snk.ctl_port, 0)));
	xevb_runcfg_free(held);
	held = NULL;
}

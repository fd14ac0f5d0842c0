// SPDX-License-Identifier: GPL-2.0-only
/*
 * Options as data (cli.h) through `xevb build`'s table: the defaults, the
 * values options and --tune keys store, every range and error naming the
 * option and what it allows, the table's own rules (help, section, unique
 * names), --help within 35 options, a run configuration's builder
 * settings arriving through the same table, and the outputs: those that
 * contradict each other refused naming both, --output's run files.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctl/runcfg.h"
#include "cmd/build_opts.h"
#include "../common/capture.h"
#include "../common/cli_rig.h"

TestSuite(cli_table, .timeout = 10);

static struct build_cfg cfg;
static char errbuf[4096];

static bool checked; /* parse through build_opts_parse: the table, then the checks across options */

struct call {
	int argc;
	char **argv;
};

static int call_parse(void *arg)
{
	struct call *c = arg;

	return checked ? build_opts_parse(c->argc, c->argv, &cfg) :
			 xevb_cfg_parse(&build_cmd, c->argc, c->argv, &cfg);
}

/* xevb_cfg_parse over "build" + args, its messages (stderr) kept in errbuf. */
static int parse(const char *const *args)
{
	char *argv[128] = { "build" };
	struct call c = { .argc = 1, .argv = argv };

	for (; args[c.argc - 1]; c.argc++)
		argv[c.argc] = (char *)args[c.argc - 1];
	memset(&cfg, 0, sizeof(cfg));
	cfg.co = (struct xevb_common_opts)XEVB_COMMON_OPTS_INIT;
	return cli_capture(call_parse, &c, errbuf, sizeof(errbuf));
}

#define PARSE(...) parse((const char *const[]){ __VA_ARGS__, NULL })

static void refused(int rc, const char *says)
{
	cr_assert(eq(int, rc, 2), "accepted; stderr '%s'", errbuf);
	cr_assert(not(eq(ptr, strstr(errbuf, says), NULL)), "'%s' does not say '%s'", errbuf, says);
}

/* The data-flow tuning of cc as given, and the farm nodes' control port the default. */
static void assert_dfm_tuning(const struct build_ctl_cfg *cc, double busy_high, double busy_low, uint64_t reask_ns,
			      uint32_t max_reasks, uint64_t sink_dead_ns, uint32_t backlog)
{
	cr_assert(eq(u16, cc->sink_ctl_port, 23904));
	cr_assert(eq(dbl, cc->busy_high, busy_high));
	cr_assert(eq(dbl, cc->busy_low, busy_low));
	cr_assert(eq(u64, cc->reask_ns, reask_ns));
	cr_assert(eq(u32, cc->max_reasks, max_reasks));
	cr_assert(eq(u64, cc->sink_dead_ns, sink_dead_ns));
	cr_assert(eq(u32, cc->backlog, backlog));
}

/*
 * One wait policy for any worker count (--tune wait-us; coalesce-us its
 * old name): 0 with one worker, 200 with more unless given. More workers
 * are refused, saying why, where one loop must serve (socket, DFM, fewer
 * queues than workers).
 */
Test(cli_table, wait_policy_and_workers)
{
#define BASE "--dev", "eth0", "--sources", "0-3", "--no-forward"
	checked = true;
	cr_assert(eq(int, PARSE(BASE), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.wait_us, 0));
	cr_assert(eq(int, PARSE(BASE, "--queues", "0-1", "--workers", "2"), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.wait_us, 200));
	cr_assert(eq(int, PARSE(BASE, "--queues", "0-1", "--workers", "2", "--tune", "wait-us=0"), -1), "%s",
		  errbuf);
	cr_assert(eq(u32, cfg.wait_us, 0));
	cr_assert(eq(int, PARSE(BASE, "--tune", "wait-us=150"), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.wait_us, 150));
	cr_assert(eq(u32, cfg.n_workers, 1));
	cr_assert(eq(int, PARSE(BASE, "--tune", "coalesce-us=50"), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.wait_us, 50));
	cr_assert(eq(u32, cfg.n_workers, 1));
	/* Socket mode: one socket, and workers that build what worker 0 hands them. */
	cr_assert(eq(int, PARSE(BASE, "--workers", "2", "--mode", "socket"), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.n_workers, 2));
	refused(PARSE(BASE, "--workers", "2"), "at least 2 --queues");
	cr_assert(eq(int, PARSE(BASE, "--queues", "0-1", "--workers", "2", "--dfm", "198.18.4.1:23901"), -1), "%s",
		  errbuf);
	cr_assert(eq(int,
		     PARSE(BASE, "--queues", "0-1", "--workers", "2", "--dfm", "198.18.4.1:23901", "--tune",
			   "zerocopy=1"),
		     -1),
		  "%s", errbuf);
	checked = false;
#undef BASE
}

Test(cli_table, defaults_fill_the_struct)
{
	cr_assert(eq(int, PARSE("--dev", "eth0"), -1), "%s", errbuf);
	cr_assert(eq(str, (char *)cfg.dev, "eth0"));
	cr_assert(eq(u32, cfg.mode, BUILD_MODE_XDP));
	cr_assert(eq(u32, cfg.n_queues, 1));
	cr_assert(eq(u16, cfg.queues[0], 0));
	cr_assert(eq(u32, cfg.n_workers, 1));
	cr_assert(eq(u32, cfg.run, 1));
	cr_assert(not(cfg.have_run));
	cr_assert(eq(u32, cfg.window, 4096));
	cr_assert(eq(u32, cfg.timeout_ms, 1000));
	cr_assert(eq(u32, cfg.policy, BUILD_POLICY_EMIT));
	cr_assert(eq(u32, cfg.cc.credits, 64));
	cr_assert(eq(u16, cfg.cc.ctl_port, 23902));
	assert_dfm_tuning(&cfg.cc, 1.2, 0.2, 100000000ull, 3, 500000000ull, 4096);
	cr_assert(eq(u32, cfg.proto, 253));
	cr_assert(eq(u32, cfg.udp_port, 23900));
	cr_assert(eq(u32, cfg.xdp_mode, BUILD_XDP_NATIVE));
	cr_assert(eq(u32, cfg.frames, 16384));
	cr_assert(eq(u32, cfg.frame_size, 0));
	cr_assert(eq(u32, cfg.rx_ring, 4096));
	cr_assert(eq(u32, cfg.rx_batch, 64));
	cr_assert(eq(u32, cfg.owner_block, 1024));
	cr_assert(eq(u32, cfg.wait_us, 0));
	cr_assert(not(cfg.have_wait || cfg.set_nice || cfg.no_shed || cfg.bare || cfg.busy));
	cr_assert(eq(u32, cfg.co.interval_s, 1));
}

Test(cli_table, options_store_their_values)
{
	cr_assert(eq(int,
		     PARSE("-d", "eth1", "-s", "0-3,7", "--mode", "socket", "--udp", "--window", "8",
			   "--timeout-policy", "discard", "--run", "5", "--sink", "198.18.3.1:5000", "--sink",
			   "198.18.3.2:5000", "--credits", "32", "--ctl-port", "24000", "--id", "3", "--bind-src",
			   "0-1=198.18.1.1", "--allow-src", "198.18.1.2", "--quiet", "--json", "--duration", "2.5",
			   "-v"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(u32, cfg.n_sources, 5));
	cr_assert(eq(u16, cfg.sources[4], 7));
	cr_assert(eq(u32, cfg.mode, BUILD_MODE_SOCKET));
	cr_assert(cfg.udp);
	cr_assert(eq(u32, cfg.window, 8));
	cr_assert(eq(u32, cfg.policy, BUILD_POLICY_DISCARD));
	cr_assert(eq(u32, cfg.run, 5));
	cr_assert(cfg.have_run);
	cr_assert(eq(u32, cfg.n_sinks, 2));
	cr_assert(eq(str, (char *)cfg.sinks[1], "198.18.3.2:5000"));
	cr_assert(eq(u32, cfg.cc.credits, 32));
	cr_assert(eq(u16, cfg.cc.ctl_port, 24000));
	cr_assert(eq(u16, cfg.cc.id, 3));
	cr_assert(cfg.have_bind);
	cr_assert(not(eq(u32, cfg.bind_src[1].addr, 0)));
	cr_assert(eq(u8, cfg.bind_src[1].flags, 0));
	cr_assert(eq(u32, cfg.bind_src[2].addr, 0));
	cr_assert(eq(u32, cfg.n_allow, 1));
	cr_assert(cfg.co.quiet && cfg.co.json);
	cr_assert(eq(u64, cfg.co.duration_ns, 2500000000ull));
	xevb_log_level = XEVB_LOG_INFO;
}

Test(cli_table, tune_keys_store_their_values)
{
	cr_assert(eq(int,
		     PARSE("--tune", "rx-ring=8192", "--tune", "no-shed=1", "--tune", "reask-ms=40", "--tune",
			   "xdp-mode=generic", "--tune", "nice=-20", "--tune", "cpus=2-3", "--tune", "wait-us=0",
			   "--tune", "sink-pacing=200m", "--tune", "busy-high=1.5", "--tune",
			   "sink-ctl-port=24004", "--tune", "frames=8192", "--tune", "frames=4096"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(u32, cfg.rx_ring, 8192));
	cr_assert(cfg.no_shed);
	cr_assert(eq(u64, cfg.cc.reask_ns, 40000000ull));
	cr_assert(eq(u32, cfg.xdp_mode, BUILD_XDP_GENERIC));
	cr_assert(eq(int, cfg.nice, -20));
	cr_assert(cfg.set_nice);
	cr_assert(eq(u32, cfg.n_cpus, 2));
	cr_assert(eq(u16, cfg.cpus[1], 3));
	cr_assert(eq(u32, cfg.wait_us, 0));
	cr_assert(cfg.have_wait);
	cr_assert(eq(u64, cfg.sink_pacing, 200000000ull));
	cr_assert(eq(dbl, cfg.cc.busy_high, 1.5));
	cr_assert(eq(u16, cfg.cc.sink_ctl_port, 24004));
	/* The last value wins, as with options. */
	cr_assert(eq(u32, cfg.frames, 4096));
	cr_assert(eq(int, PARSE("--tune", "no-shed=0"), -1), "%s", errbuf);
	cr_assert(not(cfg.no_shed));
}

Test(cli_table, ranges_refused_naming_the_option_and_range)
{
	refused(PARSE("--window", "0"), "--window: '0' is not a number in 1..1048576");
	refused(PARSE("--window", "1048577"), "--window: '1048577' is not a number in 1..1048576");
	refused(PARSE("--workers", "17"), "--workers: '17' is not a number in 1..16");
	refused(PARSE("--metrics", "99999"), "--metrics: '99999' is not a number in 1..65535");
	refused(PARSE("--metrics", "127.0.0.1:0"), "--metrics: '0' is not a number in 1..65535");
	refused(PARSE("--ctl-port", "0"), "--ctl-port: '0' is not a number in 1..65535");
	refused(PARSE("--mode", "dpdk"), "--mode: 'dpdk' is not one of xdp|socket");
	refused(PARSE("--sources", "4096"), "--sources: id 4096 in '4096' is out of range: ids go from 0 to 4095");
	refused(PARSE("--sources", "0-70000"),
		"--sources: id 70000 in '0-70000' is out of range: ids go from 0 to 4095");
	refused(PARSE("--sources", "7-0"), "--sources: range 7-0 runs backwards: give LOW-HIGH (0-7)");
	refused(PARSE("--sources", "3-"),
		"--sources: '3-' is not a list of ids such as 0-125 or 1,4,9-12 (ids 0 to 4095)");
	refused(PARSE("--sources", "x"), "--sources: 'x' is not a list of ids");
	refused(PARSE("--tune", "rx-ring=63"), "--tune rx-ring: '63' is not a number in 64..65536");
	refused(PARSE("--tune", "owner-block=1000"), "--tune owner-block: 1000 is not a power of 2");
	refused(PARSE("--tune", "busy-high=101"), "--tune busy-high: '101' is not a number in 0..100");
	refused(PARSE("--tune", "nice=-21"), "--tune nice: '-21' is not a whole number in -20..19");
	refused(PARSE("--tune", "reask-ms=0"), "--tune reask-ms: '0' is not a number in 1..600000");
	refused(PARSE("--tune", "no-shed=maybe"), "--tune no-shed: 'maybe' is not 1 or 0");
	refused(PARSE("--tune", "xdp-mode=fast"), "--tune xdp-mode: 'fast' is not one of native|generic|skb");
	refused(PARSE("--allow-src", "198.18.1"), "--allow-src: '198.18.1' is not an IPv4 address");
	refused(PARSE("--bind-src", "0-1"), "--bind-src: '0-1' is not IDS=ADDR");
}

/* --bind-src IDS=ADDR[,mac=MAC][,vlan=N]: what is given is bound, what is not stays unchecked. */
Test(cli_table, bind_src_takes_mac_and_vlan)
{
	const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0xab, 0x01 };

	cr_assert(eq(int,
		     PARSE("--bind-src", "0-1=198.18.1.1,mac=02:00:00:00:AB:01,vlan=100", "--bind-src",
			   "2=198.18.1.2,vlan=4094", "--bind-src", "3=198.18.1.3,mac=02:00:00:00:ab:01"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(u32, cfg.bind_src[1].addr, htonl(0xc6120101)));
	cr_assert(eq(u8, cfg.bind_src[1].flags, XEVB_BIND_MAC | XEVB_BIND_VLAN));
	cr_assert(eq(int, memcmp(cfg.bind_src[1].mac, mac, 6), 0));
	cr_assert(eq(u16, cfg.bind_src[1].vlan, 100));
	cr_assert(eq(u8, cfg.bind_src[2].flags, XEVB_BIND_VLAN));
	cr_assert(eq(u16, cfg.bind_src[2].vlan, 4094));
	cr_assert(eq(u8, cfg.bind_src[3].flags, XEVB_BIND_MAC));
	cr_assert(eq(u32, cfg.bind_src[4].addr, 0));
	/* The same binding twice is one binding; another for a bound id is a conflict. */
	cr_assert(eq(int, PARSE("--bind-src", "0=198.18.1.1,vlan=7", "--bind-src", "0=198.18.1.1,vlan=7"), -1),
		  "%s", errbuf);
	refused(PARSE("--bind-src", "0=198.18.1.1,vlan=7", "--bind-src", "0=198.18.1.1,vlan=8"),
		"source_id 0 is bound twice");
}

Test(cli_table, bind_src_refuses_bad_mac_and_vlan)
{
	refused(PARSE("--bind-src", "0=198.18.1.1,mac=02:00:00:00:00"),
		"'mac=02:00:00:00:00' is not the source's "
		"Ethernet address: expected a unicast MAC such as mac=02:00:00:00:00:01");
	refused(PARSE("--bind-src", "0=198.18.1.1,mac=01:00:5e:00:00:01"), "is not the source's Ethernet address");
	refused(PARSE("--bind-src", "0=198.18.1.1,mac=ff:ff:ff:ff:ff:ff"), "is not the source's Ethernet address");
	refused(PARSE("--bind-src", "0=198.18.1.1,mac=00:00:00:00:00:00"), "is not the source's Ethernet address");
	refused(PARSE("--bind-src", "0=198.18.1.1,mac= 2:00:00:00:00:01"), "is not the source's Ethernet address");
	refused(PARSE("--bind-src", "0=198.18.1.1,vlan=0"), "--bind-src: '0' is not a number in 1..4094");
	refused(PARSE("--bind-src", "0=198.18.1.1,vlan=4095"), "--bind-src: '4095' is not a number in 1..4094");
	refused(PARSE("--bind-src", "0=198.18.1.1,vlan=1,vlan=2"),
		"'vlan=2': after the address come mac=MAC "
		"and vlan=N, each at most once");
	refused(PARSE("--bind-src", "0=198.18.1.1,port=5"), "'port=5': after the address come");
	refused(PARSE("--bind-src", "0=198.18.1.1,"), "is not IDS=ADDR[,mac=MAC][,vlan=N]");
}

/*
 * A binding without a MAC holds only against hosts that do not spoof the
 * address: warned once per such address; a VLAN bound in socket mode is
 * not checked there: warned too. Bindings with a MAC: no warning.
 */
#define BASE "--dev", "eth0", "--sources", "0-3", "--no-forward"
Test(cli_table, bind_src_without_mac_warned)
{
	checked = true;
	cr_assert(eq(int,
		     PARSE(BASE, "--bind-src", "0-1=198.18.1.1", "--bind-src",
			   "2=198.18.1.2,mac=02:00:00:00:00:02", "--bind-src", "3=198.18.1.1"),
		     -1),
		  "%s", errbuf);
	cr_assert(not(eq(ptr, strstr(errbuf, "source_id 0 is bound to 198.18.1.1 without a MAC"), NULL)), "%s",
		  errbuf);
	cr_assert(eq(ptr, strstr(strstr(errbuf, "without a MAC") + 1, "without a MAC"), NULL), "twice: %s",
		  errbuf);
	cr_assert(eq(ptr, strstr(errbuf, "198.18.1.2 without"), NULL), "%s", errbuf);
	cr_assert(eq(int, PARSE(BASE, "--bind-src", "0-3=198.18.1.1,mac=02:00:00:00:00:01"), -1), "%s", errbuf);
	cr_assert(eq(ptr, strstr(errbuf, "warning"), NULL), "%s", errbuf);
	cr_assert(eq(int,
		     PARSE(BASE, "--mode", "socket", "--bind-src", "0-3=198.18.1.1,mac=02:00:00:00:00:01,vlan=5"),
		     -1),
		  "%s", errbuf);
	cr_assert(not(eq(ptr, strstr(errbuf, "source_id 0 is bound to VLAN 5, but eth0 is no VLAN device"), NULL)),
		  "%s", errbuf);
	checked = false;
}
#undef BASE

Test(cli_table, tune_refuses_what_is_no_key)
{
	refused(PARSE("--tune", "no-shed"), "--tune: 'no-shed' is not KEY=VALUE");
	refused(PARSE("--tune", "bogus=1"), "--tune: no key 'bogus' (xevb build --help-tune lists the keys)");
	/* An option is not a tune key, and a tune key is no option (no hidden aliases). */
	refused(PARSE("--tune", "window=8"), "--tune: no key 'window'");
	refused(PARSE("--no-shed"), "unknown option '--no-shed'");
	refused(PARSE("--drop-privileges"), "unknown option '--drop-privileges'");
	refused(PARSE("--window"), "option '--window' needs an argument");
	refused(PARSE("--dev", "eth0", "stray"), "unexpected argument 'stray'");
}

Test(cli_table, every_row_has_help_a_section_and_a_unique_name)
{
	unsigned tune = 0, rows = cli_check_rows(&build_cmd, &tune);

	cr_assert(eq(u32, rows, 67));
	cr_assert(eq(u32, tune, 35));
	memset(&cfg, 0, sizeof(cfg));
	cr_assert(xevb_cfg_defaults(&build_cmd, &cfg), "a default is not valid");
}

static void usage_fn(FILE *f, const void *cmd)
{
	xevb_cfg_usage(f, cmd);
}

/* --help: at most 35 options, grouped by section, tune keys only in --help-tune. */
Test(cli_table, help_lists_at_most_35_options_by_section)
{
	char *buf = capture_text(usage_fn, &build_cmd), *line, *save = NULL;
	unsigned lines = 0, headings = 0;
	bool examples = false;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		examples |= !strcmp(line, "Examples:");
		if (examples)
			continue;
		lines += !strncmp(line, "  -", 3) || !strncmp(line, "      --", 8);
		headings += line[0] != ' ' && line[strlen(line) - 1] == ':';
		cr_assert(eq(ptr, strstr(line, "--no-shed"), NULL), "%s", line);
	}
	free(buf);
	cr_assert(eq(u32, lines, xevb_cfg_n_options(&build_cmd)));
	cr_assert(le(u32, lines, 35), "--help lists %u options", lines);
	cr_assert(eq(u32, headings, 7), "Input, Events, Output, Data-flow manager, Security, Running, Help");
	cr_assert(eq(int, PARSE("--help"), 0));
	cr_assert(eq(int, PARSE("--help-tune"), 0));
}

/* A run configuration's builder settings, through the same table: tuning keys as --tune. */
Test(cli_table, run_configuration_through_the_table)
{
	static const char text[] =
		"[run]\nnumber = 7\n[dfm]\naddress = 198.18.4.1:23901\n"
		"[builder]\nbusy_high = 1.5\nbusy_low = 0.5\nreask_ms = 40\nmax_reasks = 6\nsink_dead_ms = 300\n"
		"backlog = 100\ntimeout_ms = 900\nwindow = 512\nexit_on_eor = true\ncredits = 16\nduration = 9\n"
		"[builder 1]\naddress = 198.18.2.1\ninterface = eth0\nreceive = socket\nudp = true\n"
		"[source 0]\naddress = 198.18.1.1\nsource_ids = 0-3\n"
		"[sink 0]\naddress = 198.18.3.1\nport = 5001\n";
	const char *args[128];
	struct xevb_runcfg *c = cli_runcfg_args(text, &build_cmd, XEVB_RC_BUILD, 1, args, 128);

	cr_assert(eq(int, parse(args), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.run, 7));
	cr_assert(eq(str, (char *)cfg.cc.dfm, "198.18.4.1:23901"));
	cr_assert(eq(u16, cfg.cc.id, 1));
	assert_dfm_tuning(&cfg.cc, 1.5, 0.5, 40000000ull, 6, 300000000ull, 100);
	cr_assert(eq(u32, cfg.cc.credits, 16));
	cr_assert(eq(u32, cfg.timeout_ms, 900));
	cr_assert(eq(u32, cfg.window, 512));
	cr_assert(cfg.exit_eor && cfg.udp && cfg.have_bind);
	cr_assert(eq(u32, cfg.mode, BUILD_MODE_SOCKET));
	cr_assert(eq(str, (char *)cfg.dev, "eth0"));
	cr_assert(eq(u32, cfg.n_sources, 4));
	cr_assert(eq(u32, cfg.n_sinks, 1));
	cr_assert(eq(u64, cfg.co.duration_ns, 9000000000ull));
	xevb_runcfg_free(c);
}

/* Built events go to one place: every pair that disagrees is refused, both named (exit status 2). */
Test(cli_table, outputs_that_contradict_each_other_refused)
{
#define B "--dev", "eth0", "--sources", "0-3"
	checked = true;
	refused(PARSE(B, "--output", "/tmp/x.xevb", "--sink", "198.18.3.1:5000"), "--output with --sink");
	refused(PARSE(B, "--output", "/tmp/x.xevb", "--no-forward"), "--output with --no-forward");
	refused(PARSE(B, "--output", "/tmp/x.xevb", "--tune", "bare=1"), "--output with --tune bare=1");
	refused(PARSE(B, "--sink", "198.18.3.1:5000", "--no-forward"), "--sink with --no-forward");
	refused(PARSE(B, "--sink", "198.18.3.1:5000", "--tune", "bare=1"), "--sink with --tune bare=1");
	refused(PARSE(B), "where should events go?");
	refused(PARSE(B, "--no-forward", "--tune", "output-max-events=5"),
		"--tune output-max-events is for run files: give --output");
	refused(PARSE(B, "--sink", "198.18.3.1:5000", "--tune", "output-next-name=1"),
		"--tune output-next-name is for run files");
	refused(PARSE(B, "--output", "/tmp/x.xevb", "--tune", "zerocopy=1"),
		"--tune zerocopy=1 is for farm-node connections (--sink): not with --output");
	refused(PARSE(B, "--output", "/tmp/x.xevb", "--tune", "sink-pacing=1gbit"), "--tune sink-pacing is for");
	refused(PARSE(B, "--output", "/tmp/x.xevb", "--dfm", "198.18.4.1:23901"),
		"--output with --dfm needs --run N");
	checked = false;
#undef B
}

/* --output: a file or a directory, the header's fields from the run, rotation only in a directory, no overwriting. */
Test(cli_table, output_run_files)
{
#define B "--dev", "eth0", "--sources", "0-3,7"
	char d[] = "/tmp/xevb-cli-out-XXXXXX", file[64], slash[64], first[96], later[96];
	FILE *fp;

	cr_assert(not(eq(ptr, mkdtemp(d), NULL)));
	snprintf(file, sizeof(file), "%s/run.xevb", d);
	snprintf(slash, sizeof(slash), "%s//", d);
	snprintf(first, sizeof(first), "%s/xevb-run00000007-0000.xevb", d);
	snprintf(later, sizeof(later), "%s/xevb-run00000007-0002.xevb", d);
	checked = true;
	cr_assert(eq(int, PARSE(B, "--output", file, "--run", "42", "--id", "3"), -1), "%s", errbuf);
	cr_assert(eq(str, (char *)cfg.of.path, file));
	cr_assert(not(cfg.of.dir));
	cr_assert(eq(u32, cfg.of.run_number, 42));
	cr_assert(eq(u16, cfg.of.builder_id, 3));
	cr_assert(eq(u32, cfg.of.n_sources, 5));
	cr_assert(eq(u16, cfg.of.sources[4], 7));
	cr_assert(not(cfg.of.next_name));
	cr_assert(not(cfg.of.no_fsync));
	cr_assert(eq(int,
		     PARSE(B, "--output", slash, "--run", "7", "--tune", "output-max-bytes=2G", "--tune",
			   "output-max-events=1000", "--tune", "output-prefix=b1", "--tune", "output-no-fsync=1"),
		     -1),
		  "%s", errbuf);
	cr_assert(cfg.of.dir);
	cr_assert(eq(str, (char *)cfg.of.path, d));
	cr_assert(eq(u64, cfg.of.max_bytes, 2000000000ull));
	cr_assert(eq(u64, cfg.of.max_events, 1000));
	cr_assert(eq(str, (char *)cfg.of.prefix, "b1"));
	cr_assert(cfg.of.no_fsync);
	/* An existing directory is one without the slash too. */
	cr_assert(eq(int, PARSE(B, "--output", d, "--tune", "output-max-events=10"), -1), "%s", errbuf);
	cr_assert(cfg.of.dir);
	cr_assert(eq(int, PARSE(B, "--output", file, "--run", "5", "--dfm", "198.18.4.1:23901"), -1), "%s",
		  errbuf);
	refused(PARSE(B, "--output", file, "--tune", "output-max-bytes=1M"),
		"give --output a directory (DIR/), not the file");
	refused(PARSE(B, "--output", d, "--tune", "output-max-bytes=1k"), "outside 4k");
	refused(PARSE(B, "--output", d, "--tune", "output-prefix=a/b"), "no '/'");
	cr_assert(eq(int, PARSE(B, "--output", "/nonexistent-xevb-dir/run/"), 1));
	cr_assert(not(eq(ptr, strstr(errbuf, "no such directory"), NULL)), "%s", errbuf);
	/* A name that exists: refused, naming it and the option that takes the next one. */
	fp = fopen(file, "w");
	cr_assert(not(eq(ptr, fp, NULL)));
	fclose(fp);
	refused(PARSE(B, "--output", file), file);
	cr_assert(not(eq(ptr, strstr(errbuf, "--tune output-next-name=1"), NULL)), "%s", errbuf);
	cr_assert(eq(int, PARSE(B, "--output", file, "--tune", "output-next-name=1"), -1), "%s", errbuf);
	cr_assert(cfg.of.next_name);
	fp = fopen(first, "w");
	cr_assert(not(eq(ptr, fp, NULL)));
	fclose(fp);
	refused(PARSE(B, "--output", d, "--run", "7"), first);
	cr_assert(eq(int, PARSE(B, "--output", d, "--run", "8"), -1), "%s", errbuf);
	/* Any file of the run: a rotation would come to it. */
	rename(first, later);
	refused(PARSE(B, "--output", d, "--run", "7"), later);
	cr_assert(eq(int, PARSE(B, "--output", d, "--run", "7", "--tune", "output-next-name=1"), -1), "%s",
		  errbuf);
	unlink(later);
	checked = false;
	unlink(first);
	unlink(file);
	cr_assert(eq(int, rmdir(d), 0));
#undef B
}

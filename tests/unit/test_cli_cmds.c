// SPDX-License-Identifier: GPL-2.0-only
/*
 * Options as data (cli.h) of `xevb dfm`, `xevb shape`, `xevb doctor` and
 * `xevb stats`: every row has help and a listed section, the defaults fill
 * the config struct with the values the commands have always had, options
 * store their values, a bad value or a missing required option is refused
 * with exit status 2 and a message naming the option, and a run
 * configuration's DFM settings arrive through dfm's table.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/runcfg.h"
#include "cmd/cmd_opts.h"
#include "../common/cli_rig.h"

TestSuite(cli_cmds, .timeout = 10);

static struct dfm_cfg dfm;
static struct shape_cfg shape;
static struct doctor_cfg doctor;
static struct stats_cfg stats;
static char errbuf[4096];

static int dfm_parse(int argc, char **argv, void *c)
{
	return dfm_opts_parse(argc, argv, c);
}

static int shape_parse(int argc, char **argv, void *c)
{
	return shape_opts_parse(argc, argv, c);
}

static int doctor_parse(int argc, char **argv, void *c)
{
	return doctor_opts_parse(argc, argv, c);
}

static int stats_parse(int argc, char **argv, void *c)
{
	return stats_opts_parse(argc, argv, c);
}

/* A command's parse over { name, args... }. */
struct call {
	int (*parse)(int argc, char **argv, void *cfg);
	int argc;
	char **argv;
	void *cfg;
};

static int call_parse(void *arg)
{
	struct call *c = arg;

	return c->parse(c->argc, c->argv, c->cfg);
}

/* parse over { name, args... } (args ends with NULL), its messages (stderr) kept in errbuf. */
static int run(int (*parse)(int, char **, void *), const char *name, const char *const *args, void *cfg)
{
	char *argv[128] = { (char *)name };
	struct call c = { .parse = parse, .argc = 1, .argv = argv, .cfg = cfg };

	for (; args[c.argc - 1] && c.argc < 127; c.argc++)
		argv[c.argc] = (char *)args[c.argc - 1];
	return cli_capture(call_parse, &c, errbuf, sizeof(errbuf));
}

#define DFM(...)    run(dfm_parse, "dfm", (const char *const[]){ __VA_ARGS__, NULL }, &dfm)
#define SHAPE(...)  run(shape_parse, "set", (const char *const[]){ __VA_ARGS__, NULL }, &shape)
#define DOCTOR(...) run(doctor_parse, "doctor", (const char *const[]){ __VA_ARGS__, NULL }, &doctor)
#define STATS(...)  run(stats_parse, "stats", (const char *const[]){ __VA_ARGS__, NULL }, &stats)

static void refused(int rc, const char *says)
{
	cr_assert(eq(int, rc, 2), "accepted; stderr '%s'", errbuf);
	cr_assert(not(eq(ptr, strstr(errbuf, says), NULL)), "'%s' does not say '%s'", errbuf, says);
}

/*
 * The rows' rules (cli_check_rows), no tuning keys, short options of their
 * own, valid defaults; --help lists every option and --help itself.
 */
static void check_table(const struct xevb_cfg_cmd *c, void *cfg, size_t size, unsigned want_rows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	unsigned tune, lines = 0;

	cr_assert(eq(u32, cli_check_rows(c, &tune), want_rows), "%s: the rows", c->help->name);
	cr_assert(eq(u32, tune, 0), "%s has no tuning keys", c->help->name);
	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++)
		for (const struct xevb_cfg_opt *p = o + 1; p->name; p++)
			cr_assert(o->key == 0 || o->key != p->key, "-%c twice", o->key);
	memset(cfg, 0, size);
	cr_assert(xevb_cfg_defaults(c, cfg), "%s: a default is not valid", c->help->name);

	f = open_memstream(&buf, &len);
	cr_assert(not(eq(ptr, f, NULL)));
	xevb_cfg_usage(f, c);
	fclose(f);
	for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		lines += !strncmp(line, "  -", 3) || !strncmp(line, "      --", 8);
	free(buf);
	cr_assert(eq(u32, lines, xevb_cfg_n_options(c)), "%s --help: %u option lines", c->help->name, lines);
	cr_assert(eq(u32, lines, want_rows + 1), "%s --help: every row and --help", c->help->name);
}

Test(cli_cmds, every_row_has_help_a_section_and_a_valid_default)
{
	check_table(&dfm_cmd, &dfm, sizeof(dfm), 32);
	check_table(&shape_cmd, &shape, sizeof(shape), 11);
	check_table(&doctor_cmd, &doctor, sizeof(doctor), 9);
	check_table(&stats_cmd, &stats, sizeof(stats), 5);
}

Test(cli_cmds, dfm_defaults)
{
	cr_assert(eq(int, DFM("--events", "5"), -1), "%s", errbuf);
	cr_assert(eq(u16, dfm.lsa.sin_family, AF_INET));
	cr_assert(eq(u32, dfm.lsa.sin_addr.s_addr, 0));
	cr_assert(eq(u16, ntohs(dfm.lsa.sin_port), 23901));
	cr_assert(not(dfm.dc.pull));
	cr_assert(eq(dbl, dfm.rate, 0));
	cr_assert(eq(u64, dfm.events, 5));
	cr_assert(eq(u32, dfm.dc.block, 10));
	cr_assert(eq(u32, dfm.dc.first_event, 0));
	cr_assert(eq(u32, dfm.dc.run, 1));
	cr_assert(eq(u32, dfm.dc.table, 65536));
	cr_assert(eq(u64, dfm.dc.dead_ns, 200000000ull));
	cr_assert(eq(u64, dfm.dc.hung_ns, 2000000000ull));
	cr_assert(eq(u64, dfm.dc.retry_ns, 1000000000ull));
	cr_assert(eq(u64, dfm.dc.retry_first_ns, 10000000ull));
	cr_assert(eq(u32, dfm.dc.max_retries, 5));
	cr_assert(eq(u32, dfm.dc.clear_group, 16384));
	cr_assert(eq(u64, dfm.push_ns, 2000000));
	cr_assert(eq(u64, dfm.dc.clear_flush_ns, 20000000ull));
	cr_assert(eq(u32, dfm.dc.max_per_addr, 8));
	cr_assert(eq(u32, dfm.drain_ms, 5000));
	cr_assert(eq(u32, dfm.books_ms, 2000));
	cr_assert(eq(u32, dfm.wait_b, 1));
	cr_assert(eq(u32, dfm.wait_s, 1));
	cr_assert(eq(u32, dfm.wait_ms, 10000));
	cr_assert(eq(ptr, (void *)dfm.state, NULL));
	cr_assert(eq(u32, dfm.co.interval_s, 1));
	cr_assert(not(dfm.co.json || dfm.co.quiet));
	cr_assert(eq(u64, dfm.co.duration_ns, 0));
}

Test(cli_cmds, dfm_options_store_their_values)
{
	cr_assert(eq(int,
		     DFM("--listen", "198.18.4.1:24001", "--mode", "pull", "--rate", "2500.5", "--duration", "1.5",
			 "--pack", "1", "--first-event", "4000000000", "--state", "/tmp/dfm.state", "--run", "9",
			 "--table", "1024", "--wait-builders", "64", "--wait-sources", "0", "--wait-ms", "100",
			 "--dead-ms", "10", "--hung-ms", "0", "--retry-ms", "1", "--max-retries", "0",
			 "--clear-group", "65536", "--drain-ms", "0", "--books-ms", "600000", "--max-per-address",
			 "256", "--interval", "0", "--json", "--quiet"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(u32, dfm.lsa.sin_addr.s_addr, htonl(0xc6120401)));
	cr_assert(eq(u16, ntohs(dfm.lsa.sin_port), 24001));
	cr_assert(dfm.dc.pull);
	cr_assert(eq(dbl, dfm.rate, 2500.5));
	cr_assert(eq(u64, dfm.co.duration_ns, 1500000000ull));
	cr_assert(eq(u32, dfm.dc.block, 1));
	cr_assert(eq(u32, dfm.dc.first_event, 4000000000u));
	cr_assert(eq(str, (char *)dfm.state, "/tmp/dfm.state"));
	cr_assert(eq(u32, dfm.dc.run, 9));
	cr_assert(eq(u32, dfm.dc.table, 1024));
	cr_assert(eq(u32, dfm.wait_b, 64));
	cr_assert(eq(u32, dfm.wait_s, 0));
	cr_assert(eq(u32, dfm.wait_ms, 100));
	cr_assert(eq(u64, dfm.dc.dead_ns, 10000000ull));
	cr_assert(eq(u64, dfm.dc.hung_ns, 0));
	cr_assert(eq(u64, dfm.dc.retry_ns, 1000000ull));
	cr_assert(eq(u32, dfm.dc.max_retries, 0));
	cr_assert(eq(u32, dfm.dc.clear_group, 65536));
	cr_assert(eq(u32, dfm.drain_ms, 0));
	cr_assert(eq(u32, dfm.books_ms, 600000));
	cr_assert(eq(u32, dfm.dc.max_per_addr, 256));
	cr_assert(dfm.co.json && dfm.co.quiet);
	cr_assert(eq(u32, xevb_common_interval(&dfm.co), 0));
	/* The last value wins: a run configuration's, then the explicit one. */
	cr_assert(eq(int, DFM("--mode", "pull", "--mode", "push", "--duration", "1"), -1), "%s", errbuf);
	cr_assert(not(dfm.dc.pull));
}

Test(cli_cmds, dfm_refuses_naming_the_option)
{
	refused(DFM("--mode", "sideways"), "--mode: push or pull, not 'sideways'");
	refused(DFM("--listen", "198.18.4.1"), "--listen: '198.18.4.1' is not ADDR:PORT");
	refused(DFM("--listen", "198.18.4.1:0"), "--listen: '198.18.4.1:0' is not ADDR:PORT");
	refused(DFM("--rate", "-1"), "--rate: '-1' is not a number in 0..1e+08");
	refused(DFM("--rate", "fast"), "--rate: 'fast' is not a number");
	refused(DFM("--events", "0"), "--events: '0' is not a number in 1..1099511627776");
	refused(DFM("--pack", "1025"), "--pack: '1025' is not a number in 1..1024");
	refused(DFM("--pack", "100", "--table", "64"), "--pack 100 must not exceed --table 64");
	refused(DFM("--table", "1000"), "--table: 1000 is not a power of 2");
	refused(DFM("--table", "32"), "--table: '32' is not a number in 64..16777216");
	refused(DFM("--dead-ms", "9"), "--dead-ms: '9' is not a number in 10..600000");
	refused(DFM("--retry-ms", "0"), "--retry-ms: '0' is not a number in 1..600000");
	refused(DFM("--max-retries", "256"), "--max-retries: '256' is not a number in 0..255");
	refused(DFM("--clear-group", "0"), "--clear-group: '0' is not a number in 1..65536");
	refused(DFM("--wait-builders", "1025"), "--wait-builders: '1025' is not a number in 1..1024");
	refused(DFM("--wait-sources", "4097"), "--wait-sources: '4097' is not a number in 0..4096");
	refused(DFM("--wait-ms", "99"), "--wait-ms: '99' is not a number in 100..600000");
	refused(DFM("--max-per-address", "0"), "--max-per-address: '0' is not a number in 1..4096");
	refused(DFM("--duration", "x"), "--duration: 'x' is not a number of seconds");
	refused(DFM("--interval", "3601"), "--interval: '3601' is not a number in 0..3600");
	refused(DFM("--conf", "run.ini"), "write --config FILE in full");
	refused(DFM("--tune", "x=1"), "unknown option '--tune'");
	refused(DFM("--events", "5", "stray"), "unexpected argument 'stray'");
	cr_assert(eq(int, DFM("--help"), 0));
}

Test(cli_cmds, shape_defaults_and_values)
{
	cr_assert(eq(int, SHAPE("--dev", "eth0"), -1), "%s", errbuf);
	cr_assert(eq(str, (char *)shape.dev, "eth0"));
	cr_assert(eq(int, shape.r.mode, XEVB_SHAPE_AUTO));
	cr_assert(eq(u64, shape.r.rate_bps + shape.r.burst + shape.r.limit + shape.r.overhead + shape.r.horizon_ns,
		     0));
	cr_assert(eq(u8, shape.r.proto, 0));
	cr_assert(eq(u16, shape.r.dport, 0));
	cr_assert(not(shape.have_dst || shape.have_rate || shape.json));
	cr_assert(eq(int,
		     SHAPE("-d", "eth1", "--dst", "198.18.2.1", "--rate", "200mbit", "--proto", "tcp", "--port",
			   "5000", "--burst", "1500", "--limit", "3000", "--overhead", "24", "--mode", "edt",
			   "--horizon", "50", "--json"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(u32, shape.r.daddr, htonl(0xc6120201)));
	cr_assert(shape.have_dst && shape.have_rate && shape.json);
	cr_assert(eq(u64, shape.r.rate_bps, 200000000ull));
	cr_assert(eq(u8, shape.r.proto, 6));
	cr_assert(eq(u16, shape.r.dport, 5000));
	cr_assert(eq(u32, shape.r.burst, 1500));
	cr_assert(eq(u32, shape.r.limit, 3000));
	cr_assert(eq(u32, shape.r.overhead, 24));
	cr_assert(eq(int, shape.r.mode, XEVB_SHAPE_FORCE_EDT));
	cr_assert(eq(u64, shape.r.horizon_ns, 50000000ull));
	cr_assert(eq(int, SHAPE("--dev", "eth0", "--proto", "udp", "--mode", "htb"), -1), "%s", errbuf);
	cr_assert(eq(u8, shape.r.proto, 17));
	cr_assert(eq(int, shape.r.mode, XEVB_SHAPE_FORCE_HTB));
	cr_assert(eq(int, SHAPE("--dev", "eth0", "--proto", "47"), -1), "%s", errbuf);
	cr_assert(eq(u8, shape.r.proto, 47));
}

Test(cli_cmds, shape_refuses_naming_the_option)
{
	refused(SHAPE("--dst", "198.18.2.1"), "--dev is required");
	refused(SHAPE("--dev", "eth0", "--dst", "198.18.2"), "--dst: '198.18.2' is not an IPv4 address");
	refused(SHAPE("--dev", "eth0", "--rate", "fast"), "--rate:");
	refused(SHAPE("--dev", "eth0", "--proto", "icmp"), "--proto: 'icmp' is not a number in 1..255");
	refused(SHAPE("--dev", "eth0", "--proto", "0"), "--proto: '0' is not a number in 1..255");
	refused(SHAPE("--dev", "eth0", "--port", "0"), "--port: '0' is not a number in 1..65535");
	refused(SHAPE("--dev", "eth0", "--port", "80"), "--port needs --proto udp or --proto tcp");
	refused(SHAPE("--dev", "eth0", "--burst", "1499"), "--burst: '1499' is not a number in 1500..1073741824");
	refused(SHAPE("--dev", "eth0", "--limit", "2999"), "--limit: '2999' is not a number in 3000..1073741824");
	refused(SHAPE("--dev", "eth0", "--overhead", "257"), "--overhead: '257' is not a number in 0..256");
	refused(SHAPE("--dev", "eth0", "--mode", "tbf"), "--mode: 'tbf' is not one of auto|htb|edt");
	refused(SHAPE("--dev", "eth0", "--horizon", "60001"), "--horizon: '60001' is not a number in 1..60000");
	refused(SHAPE("--dev", "eth0", "--json", "x"), "unexpected argument 'x'");
}

Test(cli_cmds, doctor_defaults_and_values)
{
	cr_assert(eq(int, DOCTOR("--dev", "eth0"), -1), "%s", errbuf);
	cr_assert(eq(int, doctor.plan.n_queues, 1));
	cr_assert(eq(u16, doctor.plan.queues[0], 0));
	cr_assert(eq(u32, xevb_cpuset_count(&doctor.plan.cpus), 0));
	cr_assert(eq(u8, doctor.plan.ip_proto, 253));
	cr_assert(eq(u16, doctor.plan.udp_port, 23900));
	cr_assert(eq(u32, doctor.plan.frames_per_q, 16384));
	cr_assert(not(doctor.plan.busy_poll || doctor.json));
	cr_assert(eq(int,
		     DOCTOR("-d", "ens1f0", "-q", "0-3,7", "-c", "2-5", "--ip-proto", "0", "--udp-port", "4789",
			    "--frames", "64", "--busy-poll", "-j"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(str, (char *)doctor.dev, "ens1f0"));
	cr_assert(eq(int, doctor.plan.n_queues, 5));
	cr_assert(eq(u16, doctor.plan.queues[4], 7));
	cr_assert(eq(u32, xevb_cpuset_count(&doctor.plan.cpus), 4));
	cr_assert(eq(u8, doctor.plan.ip_proto, 0));
	cr_assert(eq(u16, doctor.plan.udp_port, 4789));
	cr_assert(eq(u32, doctor.plan.frames_per_q, 64));
	cr_assert(doctor.plan.busy_poll && doctor.json);
}

Test(cli_cmds, doctor_refuses_naming_the_option)
{
	refused(DOCTOR("--json"), "--dev is required (try --help)");
	refused(DOCTOR("--dev", "eth0", "--bogus"), "unknown option '--bogus'");
	refused(DOCTOR("--dev", "eth0", "--queues", "3-1"),
		"--queues: range 3-1 runs backwards: give LOW-HIGH (1-3)");
	refused(DOCTOR("--dev", "eth0", "--cpus", "99999"), "--cpus: '99999' is not a CPU list");
	refused(DOCTOR("--dev", "eth0", "--ip-proto", "256"), "--ip-proto: '256' is not a number in 0..255");
	refused(DOCTOR("--dev", "eth0", "--udp-port", "65536"), "--udp-port: '65536' is not a number in 0..65535");
	refused(DOCTOR("--dev", "eth0", "--frames", "63"), "--frames: '63' is not a number in 64..1048576");
	refused(DOCTOR("--dev", "eth0", "--ip-proto", "0", "--udp-port", "0"),
		"the builder would receive nothing");
	cr_assert(eq(int, DOCTOR("-h"), 0));
}

Test(cli_cmds, stats_values_and_refusals)
{
	cr_assert(eq(int, STATS("-d", "eth0"), -1), "%s", errbuf);
	cr_assert(not(stats.json || stats.watch || stats.all));
	cr_assert(eq(u32, stats.count, 0));
	cr_assert(eq(int, STATS("--dev", "eth1", "-j", "-w", "-c", "3", "-a"), -1), "%s", errbuf);
	cr_assert(eq(str, (char *)stats.dev, "eth1"));
	cr_assert(stats.json && stats.watch && stats.all);
	cr_assert(eq(u32, stats.count, 3));
	refused(STATS("--watch"), "--dev is required (try --help)");
	refused(STATS("-d", "eth0", "--count", "0"), "--count: '0' is not a number in 1..1073741824");
	refused(STATS("-d", "eth0", "--count"), "option '--count' needs an argument");
	cr_assert(eq(int, STATS("--help"), 0));
}

/* A run configuration's [run] and [dfm] settings, through dfm's table. */
Test(cli_cmds, dfm_run_configuration_through_the_table)
{
	static const char text[] =
		"[run]\nnumber = 7\nmode = pull\nevents = 300\nrate = 5000\npack = 4\nfirst_event = 100\n"
		"[dfm]\naddress = 198.18.4.1:23911\ndead_ms = 300\nretry_ms = 50\nmax_retries = 2\n"
		"clear_group = 20\ndrain_ms = 700\nbooks_ms = 800\ntable = 1024\nwait_builders = 1\n"
		"wait_sources = 1\nwait_ms = 900\n"
		"[builder 1]\naddress = 198.18.2.1\ninterface = eth0\n"
		"[source 0]\naddress = 198.18.1.1\nsource_ids = 0-3\n"
		"[sink 0]\naddress = 198.18.3.1\nport = 5001\n";
	const char *args[128];
	struct xevb_runcfg *c = cli_runcfg_args(text, &dfm_cmd, XEVB_RC_DFM, 0, args, 128);

	cr_assert(eq(int, run(dfm_parse, "dfm", args, &dfm), -1), "%s", errbuf);
	cr_assert(eq(u32, dfm.dc.run, 7));
	cr_assert(dfm.dc.pull);
	cr_assert(eq(u64, dfm.events, 300));
	cr_assert(eq(dbl, dfm.rate, 5000));
	cr_assert(eq(u32, dfm.dc.block, 4));
	cr_assert(eq(u32, dfm.dc.first_event, 100));
	cr_assert(eq(u32, dfm.lsa.sin_addr.s_addr, htonl(0xc6120401)));
	cr_assert(eq(u16, ntohs(dfm.lsa.sin_port), 23911));
	cr_assert(eq(u64, dfm.dc.dead_ns, 300000000ull));
	cr_assert(eq(u64, dfm.dc.retry_ns, 50000000ull));
	cr_assert(eq(u32, dfm.dc.max_retries, 2));
	cr_assert(eq(u32, dfm.dc.clear_group, 20));
	cr_assert(eq(u32, dfm.drain_ms, 700));
	cr_assert(eq(u32, dfm.books_ms, 800));
	cr_assert(eq(u32, dfm.dc.table, 1024));
	cr_assert(eq(u32, dfm.wait_ms, 900));
	xevb_runcfg_free(c);
}

/* The run loops' stop (dfm, stats): each SIGINT or SIGTERM counts, up to the second. */
Test(cli_cmds, stop_counts_the_signals)
{
	xevb_stop = 0;
	xevb_stop_on_signals();
	cr_assert(eq(int, raise(SIGINT), 0));
	cr_assert(eq(int, xevb_stop, 1));
	cr_assert(eq(int, raise(SIGTERM), 0));
	cr_assert(eq(int, xevb_stop, 2));
	cr_assert(eq(int, raise(SIGINT), 0));
	cr_assert(eq(int, xevb_stop, 2));
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

// SPDX-License-Identifier: GPL-2.0-only
/* `xevb doctor`'s option table (cli.h, options as data): the builder doctor plans for. */
#include <stddef.h>
#include <string.h>
#include "cmd/cmd_opts.h"

#define F(field) offsetof(struct doctor_cfg, field)

static bool parse_cpus(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	struct xevb_cpuset *cpus = (struct xevb_cpuset *)((char *)cfg + o->off);

	if (!xevb_cpuset_parse(arg, cpus) || !xevb_cpuset_count(cpus)) {
		xevb_err("--%s: '%s' is not a CPU list such as 2-5 or 1,3 (below %d)", label, arg,
			 XEVB_DOCTOR_MAX_CPUS);
		return false;
	}
	return true;
}

#define S_DEV "Device"
#define S_BLD "Builder"
#define S_SRC "Sources"
#define S_OUT "Output"

static const char *const sections[] = { S_DEV, S_BLD, S_SRC, S_OUT, NULL };

static const struct xevb_cfg_opt opts[] = {
	{ "dev", 'd', XEVB_T_STR, "IFACE", F(dev), .flags = XEVB_F_REQUIRED, .section = S_DEV,
	  .help = "the builder's receiving interface (required)" },
	{ "queues", 'q', XEVB_T_IDS, "LIST", F(plan.queues), F(n_queues), XEVB_DOCTOR_MAX_Q, 0, 65535, .def = "0",
	  .section = S_DEV, .help = "the receive queues the builder will serve" },
	{ "cpus", 'c', XEVB_T_FUNC, "LIST", F(plan.cpus), .section = S_DEV, .parse = parse_cpus,
	  .help = "the CPUs the builder will run on, the i-th serving the i-th queue" },
	{ "ip-proto", 0, XEVB_T_U32, "N", F(ip_proto), 0, 0, 0, 255, .def = "253", .section = S_BLD,
	  .help = "IP protocol of the raw MEPs; 0: not used" },
	{ "udp-port", 0, XEVB_T_U16, "N", F(plan.udp_port), 0, 0, 0, 65535, .def = "23900", .section = S_BLD,
	  .help = "UDP port of the MEPs; 0: not used" },
	{ "frames", 0, XEVB_T_U32, "N", F(plan.frames_per_q), 0, 0, 64, 1u << 20, .def = "16384", .section = S_BLD,
	  .help = "the builder's frames per queue, for the UMEM size" },
	{ "busy-poll", 0, XEVB_T_FLAG, NULL, F(plan.busy_poll), .section = S_BLD,
	  .help = "the builder will run with --busy-poll: check the NAPI deferral" },
	{ "config", 0, XEVB_T_STR, "FILE", F(config), .section = S_SRC,
	  .help = "a run configuration: is each [source N] bound to a MAC, and is it the one the neighbour "
		  "table on the device has for its address" },
	{ "json", 'j', XEVB_T_FLAG, NULL, F(json), .section = S_OUT,
	  .help = "one JSON object: every check with name, verdict, detail, fix" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "doctor",
	.summary =
		"Check the device, driver and machine for the builder: XDP modes, queues, rings, "
		"flow steering, MTU, huge pages, IRQs, NUMA, CPU governor, busy polling, "
		"memlock, the capabilities build needs and its lock directory (/run/xevb, or "
		"XEVB_RUN_DIR), for the user doctor runs as. Each line: ok / warn / fail / skip, "
		"and the command that fixes it. Exit status 0: no fail; 1: a check failed; 2: usage.",
	.usage = "--dev IFACE [--queues LIST] [--cpus LIST] [--config FILE] [--json]",
	.examples =
		"  xevb doctor --dev eth0\n"
		"  xevb doctor --dev ens1f0 --queues 0-3 --cpus 2-5 --busy-poll\n"
		"  xevb doctor --dev ens1f0 --udp-port 0 --json\n"
		"  xevb doctor --dev ens1f0 --config run.ini\n",
};

const struct xevb_cfg_cmd doctor_cmd = { .help = &help, .opts = opts, .sections = sections };

int doctor_opts_parse(int argc, char **argv, struct doctor_cfg *cfg)
{
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	rc = xevb_cfg_parse(&doctor_cmd, argc, argv, cfg);
	if (rc >= 0)
		return rc;
	if (!cfg->ip_proto && !cfg->plan.udp_port) {
		xevb_err("--ip-proto 0 and --udp-port 0: the builder would receive nothing");
		return 2;
	}
	cfg->plan.n_queues = (int)cfg->n_queues;
	cfg->plan.ip_proto = (uint8_t)cfg->ip_proto;
	return -1;
}

// SPDX-License-Identifier: GPL-2.0-only
/* xevb doctor: will this machine and device give the builder what it needs? */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <xevb/cli.h>
#include <xevb/doctor.h>
#include "cmds.h"

enum { O_DEV = 'd', O_QUEUES = 'q', O_CPUS = 'c', O_JSON = 'j', O_PROTO = 256, O_UDPPORT, O_FRAMES, O_BUSY };

static const struct xevb_opt opts[] = {
	{ "dev", O_DEV, "IFACE", "the builder's receiving interface (required)" },
	{ "queues", O_QUEUES, "LIST", "the receive queues the builder will serve (default 0)" },
	{ "cpus", O_CPUS, "LIST", "the CPUs the builder will run on, the i-th serving the i-th queue" },
	{ "ip-proto", O_PROTO, "N", "IP protocol of the raw MEPs (default 253, 0 = not used)" },
	{ "udp-port", O_UDPPORT, "N", "UDP port of the MEPs (default 23900, 0 = not used)" },
	{ "frames", O_FRAMES, "N", "the builder's frames per queue, for the UMEM size (default 16384)" },
	{ "busy-poll", O_BUSY, NULL, "the builder will run with --busy-poll: check the NAPI deferral" },
	{ "json", O_JSON, NULL, "one JSON object: every check with name, verdict, detail, fix" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "doctor",
	.summary =
		"Check the device, driver and machine for the builder: XDP modes, queues, rings, "
		"flow steering, MTU, huge pages, IRQs, NUMA, CPU governor, busy polling, "
		"memlock and capabilities. Each line: ok / warn / fail / skip, and the command "
		"that fixes it. Exit status 0: no fail; 1: a check failed; 2: usage.",
	.usage = "--dev IFACE [--queues LIST] [--cpus LIST] [--json]",
	.examples =
		"  xevb doctor --dev eth0\n"
		"  xevb doctor --dev ens1f0 --queues 0-3 --cpus 2-5 --busy-poll\n"
		"  xevb doctor --dev ens1f0 --udp-port 0 --json\n",
};

/* Big: every CPU's governor and node, every queue interrupt. */
static struct xevb_doctor_facts facts;

int cmd_doctor(int argc, char **argv)
{
	struct xevb_doctor_plan plan = { .n_queues = 1, .ip_proto = 253, .udp_port = 23900, .frames_per_q = 16384 };
	struct xevb_doctor_check checks[XEVB_CHK__COUNT];
	const char *dev = NULL, *arg;
	bool json = false;
	uint32_t v;
	int c;

	while ((c = xevb_opt_next(argc, argv, opts, &help, &arg)) != -1) {
		switch (c) {
		case O_DEV:
			dev = arg;
			break;
		case O_QUEUES:
			plan.n_queues = xevb_parse_id_list("queues", arg, plan.queues, XEVB_DOCTOR_MAX_Q);
			if (plan.n_queues < 0)
				return 2;
			break;
		case O_CPUS:
			if (!xevb_cpuset_parse(arg, &plan.cpus) || !xevb_cpuset_count(&plan.cpus)) {
				xevb_err("--cpus: '%s' is not a CPU list such as 2-5 or 1,3 (below %d)", arg,
					 XEVB_DOCTOR_MAX_CPUS);
				return 2;
			}
			break;
		case O_PROTO:
			if (!xevb_parse_u32("ip-proto", arg, 0, 255, &v))
				return 2;
			plan.ip_proto = (uint8_t)v;
			break;
		case O_UDPPORT:
			if (!xevb_parse_u32("udp-port", arg, 0, 65535, &v))
				return 2;
			plan.udp_port = (uint16_t)v;
			break;
		case O_FRAMES:
			if (!xevb_parse_u32("frames", arg, 64, 1u << 20, &plan.frames_per_q))
				return 2;
			break;
		case O_BUSY:
			plan.busy_poll = true;
			break;
		case O_JSON:
			json = true;
			break;
		case 'h':
			xevb_opt_usage(opts, &help);
			return 0;
		default:
			return 2;
		}
	}
	if (!dev) {
		xevb_err("--dev is required (try --help)");
		return 2;
	}
	if (optind < argc) {
		xevb_err("unexpected argument '%s' (try --help)", argv[optind]);
		return 2;
	}
	if (!plan.ip_proto && !plan.udp_port) {
		xevb_err("--ip-proto 0 and --udp-port 0: the builder would receive nothing");
		return 2;
	}
	if (xevb_doctor_gather(dev, &facts))
		return 1;
	xevb_doctor_decide(&facts, &plan, checks);
	if (json)
		xevb_doctor_json(stdout, &facts, checks, XEVB_CHK__COUNT);
	else
		xevb_doctor_print(stdout, &facts, checks, XEVB_CHK__COUNT);
	for (int i = 0; i < XEVB_CHK__COUNT; i++)
		if (checks[i].verdict == XEVB_FAIL)
			return 1;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * What loading the steering program costs the builder's start (issue 38):
 * for every variant xevb build can load (meta or not, multi-buffer or not,
 * pass mode), the verifier's figures (instructions processed, states,
 * verification time: the kernel's statistics log, level 4, which costs
 * nothing beside the verification itself) and the wall time from opening
 * the embedded object to the program loaded (BTF, maps, verification,
 * JIT), wall and CPU (this thread's, the kernel's work in its bpf() calls
 * included), medians of --runs loads. On a shared host the wall time
 * includes waiting for a core; the CPU time is what the load costs.
 *
 * With --max-insns and/or --max-ms it is a budget: exit 1 when a variant
 * processes more instructions than --max-insns, or its loads take more
 * than --max-ms of CPU (median).
 *
 * usage: steer_load_cost [--runs N] [--json] [--max-insns N] [--max-ms MS]   (root)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xevb/wire.h>
#include <xevb/shed.h> /* before the skeleton: its .data.shed holds a struct xevb_shed_gate */
#include "xevb_steer.skel.h"

#ifndef BPF_F_XDP_HAS_FRAGS
#define BPF_F_XDP_HAS_FRAGS (1U << 5)
#endif

#define MAX_RUNS 64

struct variant {
	const char *name;
	int meta, frags, pass;
};

/* What the loader (user/lib/loader.c) can set: meta is the builder's default, frags its jumbo MTU. */
static const struct variant variants[] = {
	{ "meta", 1, 0, 0 },  { "meta+frags", 1, 1, 0 }, { "plain", 0, 0, 0 },
	{ "frags", 0, 1, 0 }, { "pass", 0, 0, 1 },       { "pass+frags", 0, 1, 1 },
};
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct figures {
	unsigned long insns, total_states, peak_states, verif_us;
	double ms[MAX_RUNS], cpu[MAX_RUNS];
	double median_ms, cpu_ms;
};

static char log_buf[1 << 16];

static double now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* "processed N insns (limit ...) max_states_per_insn M total_states T peak_states P ..." */
static void parse_log(struct figures *f)
{
	const char *p = strstr(log_buf, "processed ");
	const char *t = strstr(log_buf, "total_states ");
	const char *k = strstr(log_buf, "peak_states ");
	const char *v = strstr(log_buf, "verification time ");

	f->insns = p ? strtoul(p + strlen("processed "), NULL, 10) : 0;
	f->total_states = t ? strtoul(t + strlen("total_states "), NULL, 10) : 0;
	f->peak_states = k ? strtoul(k + strlen("peak_states "), NULL, 10) : 0;
	f->verif_us = v ? strtoul(v + strlen("verification time "), NULL, 10) : 0;
}

/* One load of variant v, timed from open to loaded; 0 or -1 (said why). */
static int load_once(const struct variant *v, double *ms, double *cpu, struct figures *f)
{
	struct xevb_steer *skel;
	struct bpf_program *prog;
	double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
	int err;

	skel = xevb_steer__open();
	if (!skel) {
		fprintf(stderr, "steer_load_cost: cannot open the BPF object: %s\n", strerror(errno));
		return -1;
	}
	prog = skel->progs.xevb_steer;
	skel->rodata->cfg_ip_proto = XEVB_DEFAULT_IP_PROTO;
	skel->rodata->cfg_udp_port = XEVB_DEFAULT_UDP_PORT;
	skel->rodata->cfg_has_buff_len = 1;
	skel->rodata->cfg_meta_cookie = v->meta ? 0x5eedf00du : 0;
	skel->rodata->cfg_pass = (__u8)v->pass;
	skel->rodata->cfg_frags = (__u8)v->frags;
	if (v->frags)
		bpf_program__set_flags(prog, bpf_program__flags(prog) | BPF_F_XDP_HAS_FRAGS);
	log_buf[0] = 0;
	bpf_program__set_log_buf(prog, log_buf, sizeof(log_buf));
	bpf_program__set_log_level(prog, 4); /* statistics only */
	err = xevb_steer__load(skel);
	*ms = now_ms(CLOCK_MONOTONIC) - t0;
	*cpu = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
	if (err) {
		fprintf(stderr, "steer_load_cost: loading variant %s failed: %s (root needed; %s)\n%s\n", v->name,
			strerror(-err), "scripts/verifier-stats.sh shows the verifier's figures", log_buf);
		xevb_steer__destroy(skel);
		return -1;
	}
	parse_log(f);
	xevb_steer__destroy(skel);
	return 0;
}

static int measure(const struct variant *v, unsigned runs, struct figures *f)
{
	for (unsigned r = 0; r < runs; r++)
		if (load_once(v, &f->ms[r], &f->cpu[r], f))
			return -1;
	qsort(f->ms, runs, sizeof(f->ms[0]), cmp_d);
	qsort(f->cpu, runs, sizeof(f->cpu[0]), cmp_d);
	f->median_ms = f->ms[runs / 2];
	f->cpu_ms = f->cpu[runs / 2];
	return 0;
}

static void print_json(const struct figures *f, unsigned runs)
{
	printf("{\"runs\":%u,\"variants\":{", runs);
	for (unsigned i = 0; i < N_VARIANTS; i++)
		printf("%s\"%s\":{\"insns_processed\":%lu,\"total_states\":%lu,\"peak_states\":%lu,"
		       "\"verification_us\":%lu,\"load_ms_median\":%.2f,\"load_cpu_ms_median\":%.2f}",
		       i ? "," : "", variants[i].name, f[i].insns, f[i].total_states, f[i].peak_states,
		       f[i].verif_us, f[i].median_ms, f[i].cpu_ms);
	printf("}}\n");
}

static void print_table(const struct figures *f, unsigned runs)
{
	printf("%-11s %9s %7s %6s %10s %10s %8s   (xevb_steer, %u loads each)\n", "variant", "insns", "states",
	       "peak", "verify_us", "load_ms", "cpu_ms", runs);
	for (unsigned i = 0; i < N_VARIANTS; i++)
		printf("%-11s %9lu %7lu %6lu %10lu %10.1f %8.1f\n", variants[i].name, f[i].insns,
		       f[i].total_states, f[i].peak_states, f[i].verif_us, f[i].median_ms, f[i].cpu_ms);
}

/* The variants over budget, each named; 0 when none. */
static int over_budget(const struct figures *f, unsigned long max_insns, double max_ms)
{
	int over = 0;

	for (unsigned i = 0; i < N_VARIANTS; i++) {
		if (max_insns && f[i].insns > max_insns) {
			fprintf(stderr,
				"steer_load_cost: variant %s: the verifier processed %lu instructions, budget %lu: "
				"find the paths that multiply with scripts/verifier-stats.sh and bpftool -d prog load\n",
				variants[i].name, f[i].insns, max_insns);
			over = 1;
		}
		if (max_ms > 0 && f[i].cpu_ms > max_ms) {
			fprintf(stderr,
				"steer_load_cost: variant %s: its load took %.1f ms of CPU (median), budget %.0f ms "
				"(verify_us says how much of it the verifier took)\n",
				variants[i].name, f[i].cpu_ms, max_ms);
			over = 1;
		}
	}
	return over;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "runs", required_argument, 0, 'r' },
		{ "json", no_argument, 0, 'j' },
		{ "max-insns", required_argument, 0, 'i' },
		{ "max-ms", required_argument, 0, 'm' },
		{ 0 },
	};
	static struct figures f[N_VARIANTS];
	unsigned long max_insns = 0;
	unsigned runs = 5;
	double max_ms = 0;
	int json = 0, c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			runs = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			json = 1;
			break;
		case 'i':
			max_insns = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			max_ms = strtod(optarg, NULL);
			break;
		default:
			fprintf(stderr, "usage: %s [--runs N (1..%d)] [--json] [--max-insns N] [--max-ms MS]\n",
				argv[0], MAX_RUNS);
			return 2;
		}
	}
	if (!runs || runs > MAX_RUNS) {
		fprintf(stderr, "steer_load_cost: --runs 1..%d\n", MAX_RUNS);
		return 2;
	}
	for (unsigned i = 0; i < N_VARIANTS; i++)
		if (measure(&variants[i], runs, &f[i]))
			return 1;
	if (json)
		print_json(f, runs);
	else
		print_table(f, runs);
	return over_budget(f, max_insns, max_ms);
}

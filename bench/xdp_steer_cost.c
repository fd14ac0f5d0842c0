// SPDX-License-Identifier: GPL-2.0-only
/*
 * Cost of the XDP steering program per frame, on one L1 frame (25 records
 * x 32 bytes, raw IPv4), through BPF_PROG_RUN in live-frames mode: each
 * repetition starts from the original frame (plain repeat mode would keep
 * the metadata of the previous run), and the program's own time comes
 * from the kernel's run-time statistics (BPF_ENABLE_STATS: run_time_ns /
 * run_cnt), so the redirect itself is not in the figure.
 * An unbound AF_XDP socket in the XSKMAP makes bpf_redirect_map succeed;
 * the kernel then drops the frame.
 *
 * --shed-armed: the shedding gate (shed.h) armed at full level, as after an
 * overload (the program records the newest block, sheds nothing); without
 * it the gate is idle, as it is until the first overload.
 * --guard: the ring guard on (shed.h), as xevb build runs it, with a limit
 * never reached: it judges each new block and counts steered frames.
 * The frame's block does not change, so this is the cost for every MEP
 * but a block's first (one compare-and-swap more, one MEP in hundreds).
 *
 * --paired: one program, its three states taken in turn within every
 * round (gate idle, guard on, gate armed; the order rotating), so that the
 * host's drift (up to 50% from one second to the next on this VM) hits
 * all three alike: the figures are the medians of the per-round
 * differences to the idle gate. --shed-armed and --guard then do nothing.
 *
 * usage: xdp_steer_cost [--meta] [--shed-armed] [--guard] [--paired] [--repeat N] [--rounds R]
 * Prints one JSON object: ns per run for each round and their median
 * (--paired: for each state, and the paired differences).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "wire/mep_write.h"
#include <xevb/wire.h>
#include <xevb/shed.h> /* before the skeleton: its .data.shed holds a struct xevb_shed_gate */
#include "xevb_steer.skel.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES (1U << 1)
#endif

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int prog_stats(int fd, __u64 *ns, __u64 *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return 0;
}

static double median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(v[0]), cmp_d);
	return v[n / 2];
}

/* One round of repeat runs on the frame: the program's ns a run, or < 0. */
static double run_round(int prog_fd, uint8_t *frame, ssize_t flen, uint32_t repeat)
{
	struct xdp_md ctx = { .data = 0, .data_end = (__u32)flen };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)flen, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = repeat, .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
	__u64 t0 = 0, c0 = 0, t1 = 0, c1 = 0;

	if (prog_stats(prog_fd, &t0, &c0) || bpf_prog_test_run_opts(prog_fd, &o) ||
	    prog_stats(prog_fd, &t1, &c1)) {
		fprintf(stderr, "BPF_PROG_RUN (live frames): %s\n", strerror(errno));
		return -1;
	}
	if (c1 - c0 != repeat)
		fprintf(stderr, "warning: %llu runs counted, %u asked\n", (unsigned long long)(c1 - c0), repeat);
	return c1 > c0 ? (double)(t1 - t0) / (double)(c1 - c0) : 0;
}

enum { ST_GATE, ST_GUARD, ST_ARMED, ST__N };
static const char *const st_name[ST__N] = { "gate", "guard", "armed" };

static void set_state(struct xevb_steer *skel, int st)
{
	skel->data_shed->shed_gate.word = st == ST_ARMED ? xevb_shed_word(XEVB_SHED_ONE, XEVB_SHED_ONE, 0, 1) : 0;
	skel->data_shed->shed_gate.guard_limit = st == ST_GATE ? 0 : UINT32_MAX >> 1;
}

/* --paired: the three states in turn within each round; JSON on stdout. */
static int paired(struct xevb_steer *skel, uint8_t *frame, ssize_t flen, uint32_t repeat, uint32_t rounds)
{
	static double ns[ST__N][1024], diff[ST__N][1024];
	int prog_fd = bpf_program__fd(skel->progs.xevb_steer);

	for (uint32_t r = 0; r < rounds; r++) {
		for (int k = 0; k < ST__N; k++) {
			int st = (int)((r + (uint32_t)k) % ST__N);

			set_state(skel, st);
			ns[st][r] = run_round(prog_fd, frame, flen, repeat);
			if (ns[st][r] < 0)
				return 1;
		}
		for (int st = 0; st < ST__N; st++)
			diff[st][r] = ns[st][r] - ns[ST_GATE][r];
	}
	printf("{\"paired\":1,\"frame_bytes\":%zd,\"records\":25,\"repeat\":%u,\"rounds\":%u,\"states\":{", flen,
	       repeat, rounds);
	for (int st = 0; st < ST__N; st++)
		printf("%s\"%s\":{\"median_ns\":%.2f,\"over_gate_median_ns\":%.2f}", st ? "," : "", st_name[st],
		       median(ns[st], rounds), median(diff[st], rounds));
	printf("}}\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "meta", no_argument, 0, 'm' },
		{ "shed-armed", no_argument, 0, 's' },
		{ "guard", no_argument, 0, 'g' },
		{ "repeat", required_argument, 0, 'r' },
		{ "rounds", required_argument, 0, 'n' },
		{ "paired", no_argument, 0, 'p' },
		{ 0 },
	};
	uint32_t repeat = 200000, rounds = 7;
	int meta = 0, shed_armed = 0, guard = 0, pair = 0, c, stats_fd, xsk_fd, prog_fd, rc = 0;
	uint8_t frame[2048];
	struct xevb_mep_params p = {
		.saddr = htonl(0xc6120101u),
		.daddr = htonl(0xc6120201u),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.source_id = 3,
		.run_number = 1,
		.packet_seq = 1,
		.first_event_id = 1000,
		.n_frags = 25,
		.frag_size = 32,
	};
	struct xevb_steer *skel;
	double ns[64];
	__u32 key = 0;
	ssize_t flen;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			meta = 1;
			break;
		case 's':
			shed_armed = 1;
			break;
		case 'g':
			guard = 1;
			break;
		case 'r':
			repeat = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			rounds = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			pair = 1;
			break;
		default:
			fprintf(stderr,
				"usage: %s [--meta] [--shed-armed] [--guard] [--paired] [--repeat N] "
				"[--rounds R (<= 64; --paired: <= 1024)]\n",
				argv[0]);
			return 2;
		}
	}
	if (!rounds || rounds > (pair ? 1024u : 64u) || !repeat) {
		fprintf(stderr, "--rounds 1..64 (--paired: 1..1024), --repeat > 0\n");
		return 2;
	}
	flen = xevb_write_frame(frame, sizeof(frame), &p);
	if (flen < 0) {
		perror("xevb_write_frame");
		return 1;
	}
	skel = xevb_steer__open();
	if (!skel) {
		fprintf(stderr, "xevb_steer__open: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->cfg_ip_proto = XEVB_DEFAULT_IP_PROTO;
	skel->rodata->cfg_udp_port = XEVB_DEFAULT_UDP_PORT;
	skel->rodata->cfg_has_buff_len = 1;
	skel->rodata->cfg_meta_cookie = meta ? 0x5eedf00du : 0;
	if (xevb_steer__load(skel)) {
		fprintf(stderr, "loading xevb_steer: %s (root needed)\n", strerror(errno));
		return 1;
	}
	if (shed_armed)
		skel->data_shed->shed_gate.word = xevb_shed_word(XEVB_SHED_ONE, XEVB_SHED_ONE, 0, 1);
	if (guard)
		skel->data_shed->shed_gate.guard_limit = UINT32_MAX >> 1;
	prog_fd = bpf_program__fd(skel->progs.xevb_steer);
	xsk_fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (xsk_fd < 0 || bpf_map_update_elem(bpf_map__fd(skel->maps.xsks), &key, &xsk_fd, 0)) {
		fprintf(stderr, "an AF_XDP socket in the XSKMAP: %s\n", strerror(errno));
		return 1;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 1;
	}
	if (pair) {
		rc = paired(skel, frame, flen, repeat, rounds);
		goto out;
	}
	for (uint32_t r = 0; r < rounds; r++) {
		ns[r] = run_round(prog_fd, frame, flen, repeat);
		if (ns[r] < 0)
			return 1;
	}
	printf("{\"meta\":%d,\"shed_armed\":%d,\"guard\":%d,\"frame_bytes\":%zd,\"records\":25,\"repeat\":%u,\"ns_per_run\":[",
	       meta, shed_armed, guard, flen, repeat);
	for (uint32_t r = 0; r < rounds; r++)
		printf("%s%.2f", r ? "," : "", ns[r]);
	qsort(ns, rounds, sizeof(ns[0]), cmp_d);
	{
		struct bpf_prog_info info = {};
		__u32 ilen = sizeof(info);

		bpf_obj_get_info_by_fd(prog_fd, &info, &ilen);
		printf("],\"median_ns\":%.2f,\"xlated_insns\":%u,\"verified_insns\":%u}\n", ns[rounds / 2],
		       info.xlated_prog_len / 8, info.verified_insns);
	}
out:
	close(stats_fd);
	close(xsk_fd);
	xevb_steer__destroy(skel);
	return rc;
}

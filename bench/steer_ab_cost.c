// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two builds of the steering program, per frame, against each other: the
 * same frame as xdp_steer_cost (one L1 MEP, 25 records x 32 bytes, raw
 * IPv4) through BPF_PROG_RUN in live-frames mode, the program's own time
 * from the kernel's run-time statistics. This host's speed drifts by up to
 * 50% from one second to the next, far more than a change to the program
 * moves it: the two objects take turns within every round (A B, then B A),
 * and the figure is the median over the rounds of the difference B - A in
 * the same round.
 *
 * --meta: the XDP meta on (the builder's default); --guard: the ring guard
 * on with a limit never reached (as xevb build runs it); --records N,
 * --frag-size S: another MEP (N records of S bytes); --frags: loaded
 * frags-capable (a jumbo MTU's program), the frame run in plain repeat
 * mode (live frames take no multi-buffer frame): with --records 40
 * --frag-size 200 its MEP runs into the frags.
 *
 * usage: steer_ab_cost OBJ_A OBJ_B [--meta] [--guard] [--frags] [--records N] [--frag-size S]
 *        [--rounds R] [--repeat N]   (root). Prints one JSON object.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "wire/mep_write.h"
#include <xevb/shed.h>
#include <xevb/wire.h>

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES (1U << 1)
#endif

#define MAX_ROUNDS 1024

struct side {
	struct bpf_object *obj;
	int prog_fd;
	double ns[MAX_ROUNDS];
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), cmp_d);
	return v[n / 2];
}

/* Where variable name sits in the object's data section sec; -1 if not there. */
static long var_offset(struct bpf_object *obj, const char *sec, const char *name)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_type *t;
	const struct btf_var_secinfo *v;
	int id;

	if (!btf || (id = btf__find_by_name_kind(btf, sec, BTF_KIND_DATASEC)) < 0)
		return -1;
	t = btf__type_by_id(btf, (__u32)id);
	v = btf_var_secinfos(t);
	for (int i = 0; i < btf_vlen(t); i++, v++)
		if (!strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, v->type)->name_off), name))
			return v->offset;
	return -1;
}

/*
 * Writes len bytes at byte at of variable name of data section sec: before
 * load (.rodata) or in the mapped section after; 0 or -1 (said why).
 */
static int set_var(struct bpf_object *obj, const char *sec, const char *name, size_t at, const void *val,
		   size_t len)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, sec);
	long off = var_offset(obj, sec, name);
	size_t size = 0;
	char *p;

	if (off < 0 || !m || !(p = (char *)(uintptr_t)bpf_map__initial_value(m, &size)) ||
	    (size_t)off + at + len > size) {
		fprintf(stderr, "steer_ab_cost: no %s in section %s of %s\n", name, sec, bpf_object__name(obj));
		return -1;
	}
	memcpy(p + off + at, val, len);
	return 0;
}

struct opts {
	int meta, guard, frags;
};

static int open_side(struct side *s, const char *path, const struct opts *o, int xsk_fd)
{
	__u8 proto = XEVB_DEFAULT_IP_PROTO, one = 1, frags = (__u8)o->frags;
	__u16 port = XEVB_DEFAULT_UDP_PORT;
	__u32 cookie = o->meta ? 0x5eedf00du : 0, limit = UINT32_MAX >> 1, key = 0;
	struct bpf_program *prog;

	s->obj = bpf_object__open_file(path, NULL);
	if (!s->obj) {
		fprintf(stderr, "steer_ab_cost: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (set_var(s->obj, ".rodata", "cfg_ip_proto", 0, &proto, 1) ||
	    set_var(s->obj, ".rodata", "cfg_udp_port", 0, &port, 2) ||
	    set_var(s->obj, ".rodata", "cfg_has_buff_len", 0, &one, 1) ||
	    set_var(s->obj, ".rodata", "cfg_meta_cookie", 0, &cookie, 4) ||
	    set_var(s->obj, ".rodata", "cfg_frags", 0, &frags, 1))
		return -1;
	prog = bpf_object__find_program_by_name(s->obj, "xevb_steer");
	if (prog && o->frags)
		bpf_program__set_flags(prog, bpf_program__flags(prog) | BPF_F_XDP_HAS_FRAGS);
	if (bpf_object__load(s->obj)) {
		fprintf(stderr, "steer_ab_cost: loading %s: %s (root needed)\n", path, strerror(errno));
		return -1;
	}
	prog = bpf_object__find_program_by_name(s->obj, "xevb_steer");
	if (!prog) {
		fprintf(stderr, "steer_ab_cost: %s has no program xevb_steer\n", path);
		return -1;
	}
	s->prog_fd = bpf_program__fd(prog);
	if (o->guard && set_var(s->obj, ".data.shed", "shed_gate", offsetof(struct xevb_shed_gate, guard_limit),
				&limit, sizeof(limit)))
		return -1;
	if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(s->obj, "xsks"), &key, &xsk_fd, 0)) {
		fprintf(stderr, "steer_ab_cost: an AF_XDP socket in the XSKMAP of %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* One round of repeat runs: the program's ns a run, or < 0. */
static double run_round(int prog_fd, uint8_t *frame, ssize_t flen, uint32_t repeat, int live)
{
	struct xdp_md ctx = { .data = 0, .data_end = (__u32)flen };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)flen, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = repeat, .flags = live ? BPF_F_TEST_XDP_LIVE_FRAMES : 0);
	struct bpf_prog_info i0 = {}, i1 = {};
	__u32 len = sizeof(i0);

	if (bpf_obj_get_info_by_fd(prog_fd, &i0, &len) || bpf_prog_test_run_opts(prog_fd, &o) ||
	    bpf_obj_get_info_by_fd(prog_fd, &i1, &len)) {
		fprintf(stderr, "steer_ab_cost: BPF_PROG_RUN (live frames): %s\n", strerror(errno));
		return -1;
	}
	return i1.run_cnt > i0.run_cnt ?
		       (double)(i1.run_time_ns - i0.run_time_ns) / (double)(i1.run_cnt - i0.run_cnt) :
		       0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "meta", no_argument, 0, 'm' },
		{ "guard", no_argument, 0, 'g' },
		{ "frags", no_argument, 0, 'f' },
		{ "rounds", required_argument, 0, 'n' },
		{ "repeat", required_argument, 0, 'r' },
		{ "records", required_argument, 0, 'R' },
		{ "frag-size", required_argument, 0, 'F' },
		{ 0 },
	};
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
	static struct side s[2];
	static double diff[MAX_ROUNDS];
	uint32_t rounds = 100, repeat = 50000;
	struct opts op = { 0 };
	int c, stats_fd, xsk_fd;
	static uint8_t frame[16384];
	ssize_t flen;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			op.meta = 1;
			break;
		case 'g':
			op.guard = 1;
			break;
		case 'f':
			op.frags = 1;
			break;
		case 'n':
			rounds = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			repeat = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'R':
			p.n_frags = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'F':
			p.frag_size = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2 || !rounds || rounds > MAX_ROUNDS || !repeat)
		goto usage;
	flen = xevb_write_frame(frame, sizeof(frame), &p);
	xsk_fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (flen < 0 || xsk_fd < 0) {
		fprintf(stderr, "steer_ab_cost: the frame or an AF_XDP socket: %s\n", strerror(errno));
		return 1;
	}
	if (open_side(&s[0], argv[optind], &op, xsk_fd) || open_side(&s[1], argv[optind + 1], &op, xsk_fd))
		return 1;
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "steer_ab_cost: BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 1;
	}
	for (uint32_t r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++) {
			struct side *x = &s[(r + (uint32_t)k) % 2];

			x->ns[r] = run_round(x->prog_fd, frame, flen, repeat, !op.frags);
			if (x->ns[r] < 0)
				return 1;
		}
		diff[r] = s[1].ns[r] - s[0].ns[r];
	}
	printf("{\"a\":\"%s\",\"b\":\"%s\",\"meta\":%d,\"guard\":%d,\"frags\":%d,\"records\":%u,\"frag_size\":%u,"
	       "\"rounds\":%u,\"repeat\":%u,"
	       "\"a_median_ns\":%.2f,\"b_median_ns\":%.2f,\"b_minus_a_median_ns\":%.2f}\n",
	       argv[optind], argv[optind + 1], op.meta, op.guard, op.frags, p.n_frags, p.frag_size, rounds, repeat,
	       median(s[0].ns, rounds), median(s[1].ns, rounds), median(diff, rounds));
	close(stats_fd);
	close(xsk_fd);
	bpf_object__close(s[0].obj);
	bpf_object__close(s[1].obj);
	return 0;
usage:
	fprintf(stderr,
		"usage: %s OBJ_A OBJ_B [--meta] [--guard] [--records N] [--frag-size S] [--rounds R (1..%d)] "
		"[--repeat N]\n",
		argv[0], MAX_ROUNDS);
	return 2;
}

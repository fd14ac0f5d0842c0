// SPDX-License-Identifier: GPL-2.0-only
/*
 * Times a builder's start (issue 38). Starts CMD (xevb build on --dev
 * IFNAME, in this network namespace) with its stderr in --log FILE, and
 * reports, counted from just before the fork (with --kill PID: from just
 * before PID's SIGKILL, a restart as soon as it and its children are dead
 * (a dropped builder's root helper detaches XDP, then exits): the
 * interface's lock is free then, and a supervisor that waits for the whole
 * service restarts it then too; dead_ms says when):
 *
 *   receiving_ms    the builder said "AF_XDP socket on" (its receive path
 *                   open)
 *   first_frame_ms  its XDP program (the xevb_steer on IFNAME, of an id
 *                   above --after-id: not the one a killed builder left)
 *                   has redirected a frame into its AF_XDP socket (the
 *                   program's to_xsk counter)
 *
 * It polls every 200 us: the figures are that much late at most. Prints
 * one JSON line and exits 0 once both are seen, the builder still running
 * (its pid in the line); 1 if --timeout-ms passes first or CMD ends.
 *
 * usage: startup_probe --dev IFNAME --log FILE [--kill PID] [--after-id N]
 *        [--timeout-ms MS] -- CMD [ARG...]   (root)
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xevb/xdp_stats.h>

#define SOCKET_LINE "AF_XDP socket on"

struct probe {
	int ifindex;
	__u32 after_id;
	__u32 prog_id;
	int ctr_fd; /* the program's counters map, once found */
	int ncpu;
	int log_fd;
	char tail[4096]; /* the log's last bytes read */
	size_t tail_len;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int quiet(enum libxdp_print_level level, const char *fmt, va_list args)
{
	(void)level, (void)fmt, (void)args;
	return 0;
}

/* The xevb_steer attached to the interface, of an id above after_id; 0 if none (yet). */
static __u32 steer_id(const struct probe *p)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(p->ifindex);
	struct xdp_program *prog = NULL;
	__u32 id = 0;

	if (!mp || libxdp_get_error(mp))
		return 0;
	if (xdp_multiprog__is_legacy(mp))
		prog = xdp_multiprog__main_prog(mp);
	else
		prog = xdp_multiprog__next_prog(NULL, mp);
	for (; prog && !id; prog = xdp_multiprog__is_legacy(mp) ? NULL : xdp_multiprog__next_prog(prog, mp))
		if (!strcmp(xdp_program__name(prog), "xevb_steer") && xdp_program__id(prog) > p->after_id)
			id = xdp_program__id(prog);
	xdp_multiprog__close(mp);
	return id;
}

/* The counters map of program id: its fd, or -1. */
static int counters_fd(__u32 id)
{
	__u32 maps[16], n = 16;
	struct bpf_prog_info pi = { .nr_map_ids = n, .map_ids = (__u64)(unsigned long)maps };
	__u32 len = sizeof(pi);
	int pfd = bpf_prog_get_fd_by_id(id), fd = -1;

	if (pfd < 0)
		return -1;
	if (!bpf_obj_get_info_by_fd(pfd, &pi, &len))
		for (__u32 i = 0; i < pi.nr_map_ids && i < n && fd < 0; i++) {
			struct bpf_map_info mi = {};
			__u32 mlen = sizeof(mi);
			int m = bpf_map_get_fd_by_id(maps[i]);

			if (m < 0)
				continue;
			if (!bpf_obj_get_info_by_fd(m, &mi, &mlen) && !strcmp(mi.name, "counters"))
				fd = m;
			else
				close(m);
		}
	close(pfd);
	return fd;
}

/* Frames the program redirected to a socket, summed over the CPUs. */
static __u64 to_xsk(const struct probe *p)
{
	struct xevb_xdp_ctr v[256];
	__u32 key = XEVB_XDP_TO_XSK;
	__u64 n = 0;

	if (p->ncpu > 256 || bpf_map_lookup_elem(p->ctr_fd, &key, v))
		return 0;
	for (int c = 0; c < p->ncpu; c++)
		n += v[c].packets;
	return n;
}

/* 1 once the log holds SOCKET_LINE (read on from where the last call stopped). */
static int log_says(struct probe *p)
{
	/* Reads land after the last bytes kept, so a line split across two reads is whole. */
	const size_t keep = sizeof(SOCKET_LINE);
	ssize_t n;

	while ((n = read(p->log_fd, p->tail + p->tail_len, sizeof(p->tail) - 1 - p->tail_len)) > 0) {
		p->tail_len += (size_t)n;
		p->tail[p->tail_len] = 0;
		if (strstr(p->tail, SOCKET_LINE))
			return 1;
		if (p->tail_len > keep) {
			memmove(p->tail, p->tail + p->tail_len - keep, keep);
			p->tail_len = keep;
		}
	}
	return 0;
}

/* Until pid is gone or a zombie (its files closed, its lock free); 0, or -1 after 10 s. */
static int wait_dead(pid_t pid)
{
	char path[64], buf[512];
	double t0 = now_ms();

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	while (now_ms() - t0 < 10000) {
		FILE *f = fopen(path, "r");
		char *st = NULL;

		if (!f)
			return 0;
		if (fgets(buf, sizeof(buf), f))
			st = strrchr(buf, ')');
		fclose(f);
		if (st && (st[2] == 'Z' || st[2] == 'X'))
			return 0;
		usleep(100);
	}
	fprintf(stderr, "startup_probe: pid %d still alive 10 s after SIGKILL\n", (int)pid);
	return -1;
}

/* pid's children, up to max (the builder forks its helper in its main thread); how many. */
static int children(pid_t pid, pid_t *out, int max)
{
	char path[96], buf[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		for (char *tok = strtok(buf, " \n"); tok && n < max; tok = strtok(NULL, " \n"))
			out[n++] = (pid_t)atoi(tok);
	fclose(f);
	return n;
}

/* CMD with its stderr (and stdout) in log; its pid, or -1. */
static pid_t start(char **cmd, const char *log)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	pid_t pid;

	if (fd < 0) {
		fprintf(stderr, "startup_probe: %s: %s\n", log, strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(cmd[0], cmd);
		fprintf(stderr, "startup_probe: exec %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(fd);
	return pid;
}

/* Polls until both are seen; 0, or -1 (said why). */
static int watch(struct probe *p, pid_t pid, double t0, double timeout_ms, double *rx_ms, double *frame_ms)
{
	int status;

	*rx_ms = *frame_ms = -1;
	while (now_ms() - t0 < timeout_ms) {
		if (*rx_ms < 0 && log_says(p))
			*rx_ms = now_ms() - t0;
		if (p->ctr_fd < 0 && (p->prog_id = steer_id(p)))
			p->ctr_fd = counters_fd(p->prog_id);
		if (*frame_ms < 0 && p->ctr_fd >= 0 && to_xsk(p) > 0)
			*frame_ms = now_ms() - t0;
		if (*rx_ms >= 0 && *frame_ms >= 0)
			return 0;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "startup_probe: the builder ended (status %d) before receiving\n", status);
			return -1;
		}
		usleep(200);
	}
	fprintf(stderr, "startup_probe: %s after %.0f ms (receiving %s, first frame %s)\n", "timed out",
		timeout_ms, *rx_ms < 0 ? "not seen" : "seen", *frame_ms < 0 ? "not seen" : "seen");
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", required_argument, 0, 'd' },        { "log", required_argument, 0, 'l' },
		{ "kill", required_argument, 0, 'k' },       { "after-id", required_argument, 0, 'a' },
		{ "timeout-ms", required_argument, 0, 't' }, { 0 },
	};
	struct probe p = { .ctr_fd = -1 };
	const char *dev = NULL, *log = NULL;
	double timeout_ms = 10000, t0, rx_ms, frame_ms, dead_ms = 0;
	pid_t victim = 0, pid;
	int c;

	while ((c = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'l':
			log = optarg;
			break;
		case 'k':
			victim = (pid_t)atoi(optarg);
			break;
		case 'a':
			p.after_id = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 't':
			timeout_ms = strtod(optarg, NULL);
			break;
		default:
			goto usage;
		}
	}
	if (!dev || !log || optind >= argc)
		goto usage;
	p.ifindex = (int)if_nametoindex(dev);
	p.ncpu = libbpf_num_possible_cpus();
	p.log_fd = -1;
	if (!p.ifindex || p.ncpu <= 0) {
		fprintf(stderr, "startup_probe: no interface %s here, or no CPU count\n", dev);
		return 2;
	}
	libxdp_set_print(quiet);
	t0 = now_ms();
	if (victim > 0) {
		pid_t kids[16];
		int nk = children(victim, kids, 16);

		t0 = now_ms();
		if (kill(victim, SIGKILL)) {
			fprintf(stderr, "startup_probe: kill -KILL %d: %s\n", (int)victim, strerror(errno));
			return 1;
		}
		if (wait_dead(victim))
			return 1;
		for (int k = 0; k < nk; k++)
			if (wait_dead(kids[k]))
				return 1;
		dead_ms = now_ms() - t0;
	}
	pid = start(argv + optind, log);
	if (pid < 0 || (p.log_fd = open(log, O_RDONLY | O_CLOEXEC)) < 0)
		return 1;
	if (watch(&p, pid, t0, timeout_ms, &rx_ms, &frame_ms))
		return 1;
	printf("{\"pid\":%d,\"prog_id\":%u,\"killed\":%d,\"dead_ms\":%.2f,\"receiving_ms\":%.2f,"
	       "\"first_frame_ms\":%.2f}\n",
	       (int)pid, p.prog_id, victim > 0 ? (int)victim : 0, dead_ms, rx_ms, frame_ms);
	return 0;
usage:
	fprintf(stderr,
		"usage: %s --dev IFNAME --log FILE [--kill PID] [--after-id N] [--timeout-ms MS] -- CMD [ARG...]\n",
		argv[0]);
	return 2;
}

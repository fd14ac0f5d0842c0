// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include "base/cli.h"
#include "base/json.h"
#include "ops/privdrop.h"
#include <xevb/xdp_stats.h>

static const char *const probe_names[XEVB_PROBE__COUNT] = {
	[XEVB_PROBE_MAP_UPDATE_XSKMAP] = "map_update_xskmap",
	[XEVB_PROBE_MAP_UPDATE_COUNTERS] = "map_update_counters",
	[XEVB_PROBE_MAP_DELETE_XSKMAP] = "map_delete_xskmap",
	[XEVB_PROBE_MAP_FD_BY_ID] = "map_fd_by_id",
	[XEVB_PROBE_PROG_FD_BY_ID] = "prog_fd_by_id",
	[XEVB_PROBE_PROG_LOAD] = "prog_load_xdp",
	[XEVB_PROBE_XDP_ATTACH] = "xdp_attach",
	[XEVB_PROBE_XDP_DETACH] = "xdp_detach",
	[XEVB_PROBE_SETUID_ROOT] = "setuid_root",
};

const struct xevb_cap_need xevb_build_caps[XEVB_BUILD_N_CAPS] = {
	{ CAP_BPF, "CAP_BPF", "load the XDP program and create its maps" },
	{ CAP_PERFMON, "CAP_PERFMON",
	  "without it the verifier refuses the program's pointer arithmetic, and libxdp's "
	  "dispatcher's pointer comparisons" },
	{ CAP_NET_ADMIN, "CAP_NET_ADMIN", "attach the program to the interface and detach it" },
	{ CAP_NET_RAW, "CAP_NET_RAW", "open the AF_XDP sockets, and the raw IPv4 socket beside them" },
	{ CAP_IPC_LOCK, "CAP_IPC_LOCK", "pin the UMEM; or an RLIMIT_MEMLOCK above its size" },
};

int xevb_build_caps_missing(uint64_t eff, uint64_t skip, char *buf, size_t len)
{
	bool admin = eff >> CAP_SYS_ADMIN & 1;
	size_t off = 0;
	int n = 0;

	buf[0] = 0;
	for (int i = 0; i < XEVB_BUILD_N_CAPS; i++) {
		int cap = xevb_build_caps[i].cap;

		if ((eff >> cap & 1) || (skip >> cap & 1) || (admin && (cap == CAP_BPF || cap == CAP_PERFMON)))
			continue;
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s (%s)", n ? "; " : "",
						xevb_build_caps[i].name, xevb_build_caps[i].why);
		n++;
	}
	return n;
}

int xevb_privs_lookup(const char *user, struct xevb_privs *p)
{
	struct passwd *pw;

	memset(p, 0, sizeof(*p));
	errno = 0;
	pw = getpwnam(user);
	if (!pw) {
		xevb_err("--user: no user '%s' on this system (getent passwd %s)", user, user);
		return -ENOENT;
	}
	if (pw->pw_uid == 0) {
		xevb_err("--user: '%s' is root: nothing would be dropped", user);
		return -EINVAL;
	}
	snprintf(p->user, sizeof(p->user), "%s", user);
	p->uid = pw->pw_uid;
	p->gid = pw->pw_gid;
	return 0;
}

void xevb_privs_keep_uid(struct xevb_privs *p)
{
	struct passwd *pw = getpwuid(geteuid());

	memset(p, 0, sizeof(*p));
	p->uid = geteuid();
	p->gid = getegid();
	if (pw)
		snprintf(p->user, sizeof(p->user), "%s", pw->pw_name);
	else
		snprintf(p->user, sizeof(p->user), "uid %u", (unsigned)p->uid);
	p->keep_uid = true;
}

/*
 * Turning a map id into a read-only fd needs CAP_SYS_ADMIN, which the
 * builder does without (docs/deploy-package.md): the map is frozen instead,
 * so no fd of it writes any more (the program still does). EPERM: no fd
 * of it writes already (.rodata, frozen when loaded); EBUSY: mapped
 * writable (the shedding gate, which the data path writes through its
 * mapping by design): both left as they are.
 */
static int freeze_map(struct xevb_privs *p, int fd, uint32_t id)
{
	int err = bpf_map_freeze(fd);

	if (!err) {
		p->maps_frozen++;
		return 0;
	}
	if (err == -EPERM || err == -EBUSY)
		return 0;
	xevb_err("cannot freeze map %u: %s", id, strerror(-err));
	return err;
}

/* Map fds become read-only in place (or their maps frozen); program and link fds go away. */
static int neutralise_bpf_fds(struct xevb_privs *p)
{
	DIR *d = opendir("/proc/self/fd");
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct dirent *de;
	int err = 0;

	if (!d || devnull < 0) {
		err = -errno;
		goto out;
	}
	while ((de = readdir(d))) {
		char path[64], target[64];
		int fd = atoi(de->d_name);
		ssize_t n;

		if (de->d_name[0] == '.' || fd == dirfd(d) || fd == devnull)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (!strcmp(target, "anon_inode:bpf-map")) {
			struct bpf_map_info info = {};
			__u32 len = sizeof(info);
			LIBBPF_OPTS(bpf_get_fd_by_id_opts, o, .open_flags = BPF_F_RDONLY);
			int ro;

			if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
				err = -errno;
				break;
			}
			ro = bpf_map_get_fd_by_id_opts(info.id, &o);
			if (ro == -EPERM) {
				err = freeze_map(p, fd, info.id);
				if (err)
					break;
				continue;
			}
			if (ro < 0) {
				err = ro;
				xevb_err("cannot reopen map %u read-only: %s", info.id, strerror(-ro));
				break;
			}
			/* fcntl flags (CLOEXEC) are not copied by dup2: fine, we never exec. */
			if (dup2(ro, fd) < 0)
				err = -errno;
			close(ro);
			if (err)
				break;
			p->maps_readonly++;
		} else if (!strcmp(target, "anon_inode:bpf-prog") || !strcmp(target, "anon_inode:bpf_link")) {
			if (dup2(devnull, fd) < 0) {
				err = -errno;
				break;
			}
			if (!strcmp(target, "anon_inode:bpf-prog"))
				p->progs_closed++;
			else
				p->links_closed++;
		}
	}
out:
	if (d)
		closedir(d);
	if (devnull >= 0)
		close(devnull);
	return err;
}

static uint64_t status_hex(const char *key)
{
	char line[256];
	uint64_t v = UINT64_MAX;
	size_t kl = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtoull(line + kl + 1, NULL, !strcmp(key, "NoNewPrivs") ? 10 : 16);
			break;
		}
	fclose(f);
	return v;
}

static bool cap_effective(int cap)
{
	uint64_t eff = status_hex("CapEff");

	return eff != UINT64_MAX && (eff >> cap & 1);
}

int xevb_privs_keep_only(uint64_t keep)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	for (int i = 0; i < 2; i++) {
		data[i].effective &= (uint32_t)(keep >> (32 * i));
		data[i].permitted &= (uint32_t)(keep >> (32 * i));
		data[i].inheritable = 0;
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

uint64_t xevb_privs_effective(void)
{
	uint64_t eff = status_hex("CapEff");

	return eff == UINT64_MAX ? 0 : eff;
}

bool xevb_privs_held(void)
{
	uint64_t eff = status_hex("CapEff");

	return eff && eff != UINT64_MAX;
}

bool xevb_privs_can_switch(void)
{
	return cap_effective(CAP_SETUID) && cap_effective(CAP_SETGID);
}

int xevb_privs_drop(struct xevb_privs *p)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2] = { 0 };
	bool can_empty_bounding = cap_effective(CAP_SETPCAP);
	int err;

	err = neutralise_bpf_fds(p);
	if (err) {
		xevb_err("cannot make the BPF file descriptors read-only: %s", strerror(-err));
		return err;
	}
	/* Gone from the bounding set, no later exec can bring a capability back. */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno == EINVAL)
			break;
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	if (!p->keep_uid &&
	    (setgroups(0, NULL) || setresgid(p->gid, p->gid, p->gid) || setresuid(p->uid, p->uid, p->uid))) {
		err = -errno;
		xevb_err("cannot switch to user %s (uid %u): %s", p->user, (unsigned)p->uid, strerror(errno));
		return err;
	}
	/* A uid change from 0 clears them already; say it explicitly anyway. */
	if (syscall(SYS_capset, &hdr, data)) {
		err = -errno;
		xevb_err("capset: %s", strerror(errno));
		return err;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		err = -errno;
		xevb_err("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
		return err;
	}
	p->cap_eff = status_hex("CapEff");
	p->cap_prm = status_hex("CapPrm");
	p->cap_inh = status_hex("CapInh");
	p->cap_bnd = status_hex("CapBnd");
	p->cap_amb = status_hex("CapAmb");
	p->no_new_privs = (int)status_hex("NoNewPrivs");
	if (p->cap_eff || p->cap_prm || p->cap_inh || p->cap_amb || (can_empty_bounding && p->cap_bnd) ||
	    p->no_new_privs != 1 || getuid() != p->uid || geteuid() != p->uid || getegid() != p->gid) {
		xevb_err("privileges still held after the drop (CapEff %llx CapBnd %llx uid %u)",
			 (unsigned long long)p->cap_eff, (unsigned long long)p->cap_bnd, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

static int neg(int r)
{
	return r < 0 ? -r : 0;
}

void xevb_privs_probe(const struct xevb_probe_ctx *c, int res[XEVB_PROBE__COUNT])
{
	static const struct bpf_insn ret_pass[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 2 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int ncpu = libbpf_num_possible_cpus();
	struct xevb_xdp_ctr vals[ncpu > 0 ? ncpu : 1];
	__u32 key = XEVB_XSKMAP_SIZE - 1; /* no socket there: harmless if it ever worked */
	int r;

	/* Value: any socket of ours; the write must be refused before it is looked at. */
	r = bpf_map_update_elem(c->xsks_fd, &key, &c->xsks_fd, 0);
	res[XEVB_PROBE_MAP_UPDATE_XSKMAP] = r ? errno : 0;
	key = 0;
	memset(vals, 0, sizeof(vals));
	bpf_map_lookup_elem(c->counters_fd, &key, vals);
	r = bpf_map_update_elem(c->counters_fd, &key, vals, 0);
	res[XEVB_PROBE_MAP_UPDATE_COUNTERS] = r ? errno : 0;
	key = XEVB_XSKMAP_SIZE - 1;
	r = bpf_map_delete_elem(c->xsks_fd, &key);
	res[XEVB_PROBE_MAP_DELETE_XSKMAP] = r ? errno : 0;
	r = bpf_map_get_fd_by_id(c->map_id);
	res[XEVB_PROBE_MAP_FD_BY_ID] = r < 0 ? errno : 0;
	if (r >= 0)
		close(r);
	r = bpf_prog_get_fd_by_id(c->prog_id);
	res[XEVB_PROBE_PROG_FD_BY_ID] = r < 0 ? errno : 0;
	if (r >= 0)
		close(r);
	r = bpf_prog_load(BPF_PROG_TYPE_XDP, "xevb_probe", "GPL", ret_pass, 2, NULL);
	res[XEVB_PROBE_PROG_LOAD] = r < 0 ? errno : 0;
	if (r >= 0)
		close(r);
	/* Netlink checks CAP_NET_ADMIN before it looks at the fd. */
	res[XEVB_PROBE_XDP_ATTACH] = neg(bpf_xdp_attach(c->ifindex, c->counters_fd, XDP_FLAGS_DRV_MODE, NULL));
	res[XEVB_PROBE_XDP_DETACH] = neg(bpf_xdp_detach(c->ifindex, XDP_FLAGS_DRV_MODE, NULL));
	res[XEVB_PROBE_SETUID_ROOT] = setuid(0) ? errno : 0;
}

void xevb_privs_json(FILE *f, const struct xevb_privs *p, const int *res)
{
	char q[XEVB_JSON_QLEN(sizeof(p->user))];

	fprintf(f,
		"{\"privileges\":{\"user\":%s,\"uid\":%u,\"gid\":%u,\"cap_eff\":\"%llx\","
		"\"cap_prm\":\"%llx\",\"cap_inh\":\"%llx\",\"cap_bnd\":\"%llx\",\"cap_amb\":\"%llx\","
		"\"no_new_privs\":%d,\"maps_readonly\":%u,\"maps_frozen\":%u,\"progs_closed\":%u,"
		"\"links_closed\":%u",
		xevb_json_qn(q, sizeof(q), p->user, sizeof(p->user)), (unsigned)p->uid, (unsigned)p->gid,
		(unsigned long long)p->cap_eff, (unsigned long long)p->cap_prm, (unsigned long long)p->cap_inh,
		(unsigned long long)p->cap_bnd, (unsigned long long)p->cap_amb, p->no_new_privs, p->maps_readonly,
		p->maps_frozen, p->progs_closed, p->links_closed);
	if (res) {
		fprintf(f, ",\"selftest\":{");
		for (int i = 0; i < XEVB_PROBE__COUNT; i++) {
			const char *name = res[i] == 0 ? "ALLOWED" : strerrorname_np(res[i]);
			fprintf(f, "%s\"%s\":\"%s\"", i ? "," : "", probe_names[i], name ? name : "?");
		}
		fprintf(f, "}");
	}
	fprintf(f, "}}\n");
	fflush(f);
}

pid_t xevb_privs_spawn_watcher(int *wr_fd, void (*start)(void *ctx), void (*cleanup)(void *ctx), void *ctx)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (pid == 0) {
		char c;

		int devnull = open("/dev/null", O_RDWR);

		close(fds[1]);
		/* Whoever reads our stdout must not wait for the watcher. */
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
			close(devnull);
		}
		if (start)
			start(ctx);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		for (;;) {
			ssize_t n = read(fds[0], &c, 1);
			if (n == 0 || (n < 0 && errno != EINTR))
				break;
		}
		cleanup(ctx);
		_exit(0);
	}
	close(fds[0]);
	*wr_fd = fds[1];
	return pid;
}

int xevb_privs_end_watcher(pid_t watcher, int wr_fd, int timeout_ms)
{
	int status;

	close(wr_fd);
	for (int t = 0; t < timeout_ms; t += 10) {
		pid_t r = waitpid(watcher, &status, WNOHANG);
		if (r == watcher)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		if (r < 0 && errno != EINTR)
			return -errno;
		usleep(10000);
	}
	xevb_warn("the clean-up process %d has not finished after %d ms", (int)watcher, timeout_ms);
	return -ETIMEDOUT;
}

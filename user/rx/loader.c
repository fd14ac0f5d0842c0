// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <xdp/libxdp.h>
#include "base/cli.h"
#include "rx/loader.h"
#include <xevb/wire.h>
#include <xevb/shed.h> /* before the skeleton: its .data.shed holds a struct xevb_shed_gate */
#include "xevb_steer.skel.h"

#define PROG_NAME "xevb_steer"
#define RUN_DIR   "/run/xevb"

/*
 * What keeps the program off the interface: an error in XDP mode; in pass
 * mode a warning, since the socket builder runs on without it (unshed).
 */
#define lfail(l, ...) xevb_log((l)->pass ? XEVB_LOG_WARN : XEVB_LOG_ERR, __VA_ARGS__)

const char *xevb_run_dir(void)
{
	const char *d = getenv("XEVB_RUN_DIR");

	return d && d[0] == '/' ? d : RUN_DIR;
}

int xevb_run_path(const char *ifname, const char *suffix, char *buf, size_t len)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	/* Interface names repeat across network namespaces: key by both. */
	if ((size_t)snprintf(buf, len, "%s/%lu-%s.%s", xevb_run_dir(), (unsigned long)st.st_ino, ifname, suffix) >=
	    len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * "PID PROG_ID\n": who holds the interface, and the program it attached;
 * until it attached, the one a builder that died left, still to be removed.
 */
static void write_lock(const struct xevb_loader *l, uint32_t prog_id)
{
	char buf[48];
	int n = snprintf(buf, sizeof(buf), "%d %u\n", (int)getpid(), prog_id);

	if (pwrite(l->lock_fd, buf, (size_t)n, 0) == n && ftruncate(l->lock_fd, n))
		xevb_dbg("cannot trim lock file %s: %s", l->lock_path, strerror(errno));
}

/*
 * What the last holder wrote: the program a builder that died left
 * attached. Its id alone identifies it where ids cannot be turned into
 * fds (no CAP_SYS_ADMIN), so the next start can remove it (check_existing).
 */
static uint32_t recorded_prog(int fd, char *pid, size_t len)
{
	char buf[48] = "";
	unsigned int id = 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = 0;
	snprintf(pid, len, "%.*s", (int)strcspn(buf, " \n"), buf[0] ? buf : "?");
	if (sscanf(buf, "%*d %u", &id) != 1)
		id = 0;
	return id;
}

static void lock_open_failed(const struct xevb_loader *l, const char *path, int err)
{
	const char *dir = xevb_run_dir();

	if (err != EACCES && err != ENOENT && err != EROFS) {
		lfail(l, "cannot create lock file %s: %s", path, strerror(err));
		return;
	}
	lfail(l,
	      "cannot create lock file %s: %s. The builder keeps its lock and statistics files in %s, "
	      "which uid %u must be able to write: in a unit RuntimeDirectory=xevb, else install -d -o "
	      "USER -m 0700 %s (or set XEVB_RUN_DIR to another directory, for every xevb command)",
	      path, strerror(err), dir, (unsigned)geteuid(), dir);
}

static int take_lock(struct xevb_loader *l)
{
	char path[256], pid[16];
	struct stat st_fd, st_path;
	int fd, err;

	if (getenv("XEVB_RUN_DIR") && getenv("XEVB_RUN_DIR")[0] != '/')
		xevb_warn("XEVB_RUN_DIR=%s is not an absolute path: using %s", getenv("XEVB_RUN_DIR"), RUN_DIR);
	mkdir(xevb_run_dir(), 0700);
	err = xevb_run_path(l->ifname, "lock", path, sizeof(path));
	if (err)
		return err;
	for (;;) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			err = -errno;
			lock_open_failed(l, path, errno);
			return err;
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			recorded_prog(fd, pid, sizeof(pid));
			lfail(l, "another xevb builder (pid %s) already runs on %s; stop it first", pid,
			      l->ifname);
			close(fd);
			return -EBUSY;
		}
		/* The holder unlinks the file on exit: make sure we locked the
		 * file the path names now, not one that was just removed. */
		if (!fstat(fd, &st_fd) && !stat(path, &st_path) && st_fd.st_ino == st_path.st_ino)
			break;
		close(fd);
	}
	l->stale_id = recorded_prog(fd, pid, sizeof(pid));
	l->lock_fd = fd;
	snprintf(l->lock_path, sizeof(l->lock_path), "%s", path);
	write_lock(l, l->stale_id);
	return 0;
}

bool xevb_loader_test_fail(const char *step)
{
	static int n;
	const char *e = getenv("XEVB_TEST_FAIL_STEP");

	if (!e || !*e || ++n != atoi(e))
		return false;
	xevb_err(
		"XEVB_TEST_FAIL_STEP=%d: the start fails here, at step '%s' after the XDP attach (a test's "
		"variable: unset it)",
		n, step);
	return true;
}

static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	/* libxdp explains its dispatcher fallback at length; we say it once ourselves. */
	if (level == LIBXDP_WARN && xevb_log_level >= XEVB_LOG_DEBUG)
		return vfprintf(stderr, fmt, ap);
	if (level == LIBXDP_DEBUG && xevb_log_level >= XEVB_LOG_DEBUG)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && xevb_log_level < XEVB_LOG_DEBUG)
		return 0;
	/* libxdp's own metadata section, harmless: only worth a word in debug */
	if (strstr(fmt, "skipping unrecognized data section") && xevb_log_level < XEVB_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/*
 * libxdp's dispatcher runs each program as an freplace (BPF_PROG_TYPE_EXT)
 * extension. Loading an EXT program without a target fails with EINVAL
 * where they are allowed, and with EPERM where a policy refuses them:
 * returns 0 (allowed) or the errno that rules the dispatcher out.
 */
int xevb_loader_probe_dispatcher(void)
{
	static const struct bpf_insn ret_pass[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 2 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_EXT, "xevb_probe", "GPL", ret_pass, 2, NULL);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno == EINVAL ? 0 : errno;
}

/* The id of the XDP program on the interface and its mode (netlink: no capability needed); 0: none. */
static uint32_t attached_prog(int ifindex, __u32 *mode_flags)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	*mode_flags = 0;
	if (bpf_xdp_query(ifindex, 0, &q))
		return 0;
	if (q.drv_prog_id)
		*mode_flags = XDP_FLAGS_DRV_MODE;
	else if (q.skb_prog_id)
		*mode_flags = XDP_FLAGS_SKB_MODE;
	else if (q.hw_prog_id)
		*mode_flags = XDP_FLAGS_HW_MODE;
	return q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id ? q.skb_prog_id : q.hw_prog_id;
}

/*
 * Where libxdp cannot look (it turns the attached program's id into an fd,
 * which needs CAP_SYS_ADMIN), only the id is known: the program a builder
 * that died left is the one its lock file names; anything else is not ours.
 */
static int check_existing_id(struct xevb_loader *l, bool force)
{
	__u32 flags;
	uint32_t id = attached_prog(l->ifindex, &flags);
	int err;

	if (!id)
		return 0;
	if (id == l->stale_id) {
		xevb_warn("removing a stale %s (id %u) left on %s by a builder that died", PROG_NAME, id,
			  l->ifname);
	} else if (force) {
		xevb_warn("--force: replacing XDP program id %u on %s", id, l->ifname);
	} else {
		lfail(l,
		      "%s already has XDP program id %u, not the one a builder recorded in %s: xevb does not "
		      "replace a program it did not load, and without CAP_SYS_ADMIN it can neither see its name "
		      "nor share the interface through libxdp's dispatcher: remove it (ip link set dev %s xdp off), "
		      "pass --force to replace it, or run the builder as root to share the interface",
		      l->ifname, id, l->lock_path, l->ifname);
		return -EEXIST;
	}
	err = bpf_xdp_detach(l->ifindex, flags, NULL);
	if (err) {
		lfail(l, "cannot detach XDP program id %u from %s: %s", id, l->ifname, strerror(-err));
		/* Its record lets the next start try again. */
		if (id == l->stale_id)
			l->lock_path[0] = 0;
	}
	return err;
}

/* Deal with whatever XDP program the interface has before we attach. */
static int check_existing(struct xevb_loader *l, bool force)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(l->ifindex);
	struct xdp_program *p;
	int err;

	if (!mp || libxdp_get_error(mp))
		return check_existing_id(l, force);
	if (!xdp_multiprog__is_legacy(mp)) {
		/* A dispatcher: ours is added beside the others, unless a stale
		 * xevb is among them. */
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
			if (!strcmp(xdp_program__name(p), PROG_NAME)) {
				xevb_warn("removing a stale %s (id %u) left on %s by a builder that died",
					  PROG_NAME, xdp_program__id(p), l->ifname);
				err = xdp_program__detach(p, l->ifindex, XDP_MODE_UNSPEC, 0);
				if (err)
					lfail(l, "cannot remove it: %s", strerror(-err));
			}
		xdp_multiprog__close(mp);
		return 0;
	}
	p = xdp_multiprog__main_prog(mp);
	if (!p) {
		xdp_multiprog__close(mp);
		return 0;
	}
	if (!strcmp(xdp_program__name(p), PROG_NAME)) {
		/* We hold the interface lock, so no live builder owns it. */
		xevb_warn("removing a stale %s (id %u) left on %s by a builder that died", PROG_NAME,
			  xdp_program__id(p), l->ifname);
	} else if (force) {
		xevb_warn("--force: replacing XDP program '%s' (id %u) on %s", xdp_program__name(p),
			  xdp_program__id(p), l->ifname);
	} else {
		int why = xevb_loader_probe_dispatcher();

		if (why)
			lfail(l,
			      "%s already has XDP program '%s' (id %u), not loaded by xevb. libxdp's "
			      "multi-program dispatcher cannot load on this kernel (freplace programs are "
			      "refused: %s), so xevb cannot run beside it, and it does not replace a program "
			      "it did not load: remove it (xdp-loader unload %s --all) or pass --force to "
			      "replace it",
			      l->ifname, xdp_program__name(p), xdp_program__id(p), strerror(why), l->ifname);
		else
			lfail(l,
			      "%s already has XDP program '%s' (id %u), not loaded by xevb and attached "
			      "without libxdp's dispatcher, so xevb cannot run beside it: reload it with "
			      "xdp-loader (or xdp-filter) to share the interface, or pass --force to replace it",
			      l->ifname, xdp_program__name(p), xdp_program__id(p));
		xdp_multiprog__close(mp);
		return -EEXIST;
	}
	err = xdp_multiprog__detach(mp);
	xdp_multiprog__close(mp);
	if (err) {
		lfail(l, "cannot detach the old program from %s: %s", l->ifname, strerror(-err));
		return err;
	}
	return 0;
}

static int fill_filters(struct xevb_loader *l, const struct xevb_loader_cfg *cfg)
{
	__u32 flags = 0, key = 0;
	__u8 one = 1;
	int bss_fd, ids_fd, ips_fd, bind_fd;

	bind_fd = bpf_map__fd(l->skel->maps.src_bind);
	ids_fd = bpf_map__fd(l->skel->maps.src_ids);
	ips_fd = bpf_map__fd(l->skel->maps.src_ips);
	bss_fd = bpf_map__fd(l->skel->maps.bss);
	for (uint32_t i = 0; i < cfg->n_source_ids; i++) {
		key = cfg->source_ids[i];
		if (bpf_map_update_elem(ids_fd, &key, &one, 0))
			return -errno;
		flags |= XEVB_FILTER_SRC_ID;
	}
	for (uint32_t i = 0; i < cfg->n_src_addrs; i++) {
		key = cfg->src_addrs[i];
		if (bpf_map_update_elem(ips_fd, &key, &one, 0))
			return -errno;
		flags |= XEVB_FILTER_SRC_IP;
	}
	for (key = 0; cfg->src_bind && key < XEVB_MAX_SOURCES; key++) {
		if (!cfg->src_bind[key].addr)
			continue;
		if (bpf_map_update_elem(bind_fd, &key, &cfg->src_bind[key], 0))
			return -errno;
		flags |= XEVB_FILTER_SRC_BIND;
	}
	/* .bss holds filter_flags alone: the skeleton mapping is not ours to
	 * use when libxdp loaded the object, so write the map. */
	key = 0;
	if (flags && bpf_map_update_elem(bss_fd, &key, &flags, 0))
		return -errno;
	return 0;
}

static bool binds_vlan(const struct xevb_loader_cfg *cfg)
{
	for (uint32_t id = 0; cfg->src_bind && id < XEVB_MAX_SOURCES; id++)
		if (cfg->src_bind[id].addr && (cfg->src_bind[id].flags & XEVB_BIND_VLAN))
			return true;
	return false;
}

/*
 * A NIC that strips the 802.1Q tag (rx-vlan-offload) hands XDP untagged
 * frames: every MEP of a source bound to a VLAN would be refused,
 * src_vlan_mismatch. A virtual device (veth) strips nothing before XDP,
 * whatever it reports, so only a device with a parent is warned about.
 */
static void warn_vlan_stripped(const struct xevb_loader *l, const struct xevb_loader_cfg *cfg)
{
	struct ethtool_value flags = { .cmd = ETHTOOL_GFLAGS };
	struct ifreq ifr = { 0 };
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/device", l->ifname);
	if (!binds_vlan(cfg) || access(path, F_OK))
		return;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	memcpy(ifr.ifr_name, l->ifname, strnlen(l->ifname, IFNAMSIZ - 1));
	ifr.ifr_data = (void *)&flags;
	if (!ioctl(fd, SIOCETHTOOL, &ifr) && (flags.data & ETH_FLAG_RXVLAN))
		xevb_warn(
			"%s strips 802.1Q tags before XDP (rx-vlan-offload on) and --bind-src binds a VLAN: "
			"every MEP of a source bound to a VLAN will be refused as src_vlan_mismatch. Turn it off "
			"(ethtool -K %s rxvlan off) or bind no VLAN",
			l->ifname, l->ifname);
	close(fd);
}

/*
 * The shedding gate lives in the program's .data.shed map. libxdp loaded
 * the object, so the skeleton's pointer is not the live map: map it here
 * (global data maps are created mmapable).
 */
static void map_shed_gate(struct xevb_loader *l)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (sizeof(struct xevb_shed_gate) + (size_t)page - 1) & ~((size_t)page - 1);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(l->skel->maps.data_shed), 0);

	if (p == MAP_FAILED) {
		xevb_warn(
			"cannot map the XDP program's shedding gate: %s; events will not be shed "
			"whole under overload",
			strerror(errno));
		return;
	}
	l->shed_gate = p;
	l->shed_gate_len = len;
}

static int dev_mtu(const char *ifname)
{
	char path[128], buf[32];
	FILE *f;
	int mtu = 1500;

	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ifname);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			mtu = atoi(buf);
		fclose(f);
	}
	return mtu;
}

/* A random cookie per load: meta a program of another load (or not ours) wrote never checks out. */
static int make_meta_cookie(struct xevb_loader *l)
{
	while (!l->meta_cookie)
		if (getrandom(&l->meta_cookie, sizeof(l->meta_cookie), 0) != sizeof(l->meta_cookie)) {
			int err = -errno;
			lfail(l, "getrandom for the XDP meta cookie: %s", strerror(errno));
			return err;
		}
	l->skel->rodata->cfg_meta_cookie = l->meta_cookie;
	return 0;
}

/* The BPF object opened, its constants set from cfg; 0 or -errno (said why). */
static int open_program(struct xevb_loader *l, const struct xevb_loader_cfg *cfg)
{
	int err;

	l->skel = xevb_steer__open();
	if (!l->skel) {
		err = -errno;
		lfail(l, "cannot open the BPF object: %s", strerror(errno));
		return err;
	}
	l->skel->rodata->cfg_ip_proto = cfg->ip_proto;
	l->skel->rodata->cfg_udp_port = cfg->udp_port;
	l->skel->rodata->cfg_pass = cfg->pass;
	if (cfg->xdp_meta && !cfg->pass && (err = make_meta_cookie(l)))
		return err;
	l->skel->rodata->cfg_has_buff_len =
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, BPF_FUNC_xdp_get_buff_len, NULL) == 1;
	return 0;
}

/* Frames above a page need a frags-aware program (kernel 5.18+); 0 or -EOPNOTSUPP (said why). */
static int enable_frags(struct xevb_loader *l, const struct xevb_loader_cfg *cfg)
{
	if (dev_mtu(cfg->ifname) <= 3498)
		return 0;
	if (!l->skel->rodata->cfg_has_buff_len) {
		lfail(l,
		      "%s has MTU %d, which needs multi-buffer XDP (kernel 5.18+); lower the MTU "
		      "to 3498%s",
		      cfg->ifname, dev_mtu(cfg->ifname), l->pass ? "" : " or use --mode socket");
		return -EOPNOTSUPP;
	}
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, BPF_FUNC_xdp_load_bytes, NULL) != 1) {
		lfail(l,
		      "%s has MTU %d: jumbo MEPs span XDP frags, which needs bpf_xdp_load_bytes "
		      "(kernel 5.18+); lower the MTU to 3498%s",
		      cfg->ifname, dev_mtu(cfg->ifname), l->pass ? "" : " or use --mode socket");
		return -EOPNOTSUPP;
	}
	/* What SEC("xdp.frags") would set, only where needed: a program
	 * without frags still shares libxdp's dispatcher with older ones. */
	bpf_program__set_flags(l->skel->progs.xevb_steer,
			       bpf_program__flags(l->skel->progs.xevb_steer) | BPF_F_XDP_HAS_FRAGS);
	l->skel->rodata->cfg_frags = 1;
	l->frags = true;
	return 0;
}

/* Load and attach through libxdp; 0 or -errno (said why, and what to try). */
static int attach_program(struct xevb_loader *l, const struct xevb_loader_cfg *cfg)
{
	enum xdp_attach_mode mode;
	int err;

	l->prog = xdp_program__from_bpf_obj(l->skel->obj, "xdp");
	err = libxdp_get_error(l->prog);
	if (err) {
		l->prog = NULL;
		lfail(l, "libxdp cannot take the BPF object: %s", strerror(-err));
		return err;
	}
	mode = cfg->mode == XEVB_XDP_GENERIC ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	err = xdp_program__attach(l->prog, l->ifindex, mode, 0);
	if (err) {
		if (err == -EOPNOTSUPP && mode == XDP_MODE_NATIVE)
			lfail(l, "%s has no native XDP support; use --tune xdp-mode=generic (slower)%s",
			      cfg->ifname, l->pass ? "" : " or --mode socket");
		else if (err == -EPERM)
			lfail(l,
			      "attaching XDP to %s: permission denied (run as root or with CAP_BPF, CAP_PERFMON and "
			      "CAP_NET_ADMIN)",
			      cfg->ifname);
		else if (err == -EACCES)
			lfail(l,
			      "attaching XDP to %s: the verifier refused the program (without CAP_PERFMON it checks "
			      "it as an unprivileged user's; rerun with -v for its log)",
			      cfg->ifname);
		else
			lfail(l, "attaching XDP to %s failed: %s (rerun with -v for the verifier log)",
			      cfg->ifname, strerror(-err));
		/* Never attached: nothing to detach. */
		xdp_program__close(l->prog);
		l->prog = NULL;
		return err;
	}
	l->mode = cfg->mode;
	return 0;
}

/* What the attached program is: behind the dispatcher or alone, its maps and id. */
static void note_attached(struct xevb_loader *l)
{
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	__u32 flags;

	l->xsks_fd = bpf_map__fd(l->skel->maps.xsks);
	l->counters_fd = bpf_map__fd(l->skel->maps.counters);
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(l->skel->progs.xevb_steer), &info, &info_len))
		l->prog_id = info.id;
	/* Behind the dispatcher, the program attached is the dispatcher, not ours. */
	l->multiprog = !l->prog_id || attached_prog(l->ifindex, &flags) != l->prog_id;
	write_lock(l, l->prog_id);
}

int xevb_loader_attach(struct xevb_loader *l, const struct xevb_loader_cfg *cfg)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->lock_fd = -1;
	l->pass = cfg->pass;
	snprintf(l->ifname, sizeof(l->ifname), "%s", cfg->ifname);
	l->ifindex = (int)if_nametoindex(cfg->ifname);
	if (!l->ifindex) {
		lfail(l, "no interface '%s' here (ip link show lists them)", cfg->ifname);
		return -ENODEV;
	}
	libxdp_set_print(libxdp_print);
	libbpf_set_print(libbpf_print);

	err = take_lock(l);
	if (err)
		return err;
	if ((err = check_existing(l, cfg->force)) || (err = open_program(l, cfg)) ||
	    (err = enable_frags(l, cfg)) || (err = attach_program(l, cfg)))
		goto fail;
	note_attached(l);
	if (xevb_loader_test_fail("attach")) {
		err = -ECANCELED;
		goto fail;
	}
	err = fill_filters(l, cfg);
	if (err) {
		lfail(l, "cannot configure the source filter: %s", strerror(-err));
		goto fail;
	}
	warn_vlan_stripped(l, cfg);
	map_shed_gate(l);
	xevb_info("XDP program %s (id %u)%s attached to %s in %s mode, %s%s", PROG_NAME, l->prog_id,
		  l->pass ? " in pass mode (sheds, passes the rest to the kernel)" : "", l->ifname,
		  cfg->mode == XEVB_XDP_GENERIC ? "generic (skb)" : "native",
		  l->multiprog ?
			  "through libxdp's dispatcher" :
			  "as the only program (libxdp's dispatcher is not available here: it needs a bpffs at "
			  "/sys/fs/bpf, CAP_SYS_ADMIN and a kernel that allows freplace programs)",
		  l->frags ? ", jumbo (multi-buffer) MEPs validated across frags" : "");
	return 0;
fail:
	xevb_loader_detach(l);
	return err;
}

/*
 * libxdp's detach looks the attached program up by id, which needs
 * CAP_SYS_ADMIN. Alone on the interface, ours goes by its own fd, with
 * only CAP_NET_ADMIN, and only if it is still the program attached.
 */
static int detach_program(struct xevb_loader *l)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = xdp_program__fd(l->prog));
	bool skb = l->mode == XEVB_XDP_GENERIC;

	if (l->multiprog || o.old_prog_fd < 0)
		return xdp_program__detach(l->prog, l->ifindex, skb ? XDP_MODE_SKB : XDP_MODE_NATIVE, 0);
	return bpf_xdp_detach(l->ifindex, skb ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE, &o);
}

void xevb_loader_detach(struct xevb_loader *l)
{
	if (l->shed_gate) {
		munmap(l->shed_gate, l->shed_gate_len);
		l->shed_gate = NULL;
	}
	if (l->prog) {
		int err = detach_program(l);
		if (err) {
			xevb_warn("detaching from %s: %s", l->ifname, strerror(-err));
			/* Its record lets the next start remove what is left. */
			l->lock_path[0] = 0;
		}
		xdp_program__close(l->prog);
		l->prog = NULL;
	}
	if (l->skel) {
		xevb_steer__destroy(l->skel);
		l->skel = NULL;
	}
	if (l->lock_fd >= 0) {
		if (l->lock_path[0])
			unlink(l->lock_path);
		close(l->lock_fd);
		l->lock_fd = -1;
	}
}

int xevb_xdp_counters_read(int counters_fd, struct xevb_xdp_ctr *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xevb_xdp_ctr vals[ncpu > 0 ? ncpu : 1];

	if (ncpu <= 0)
		return -EINVAL;
	for (__u32 k = 0; k < XEVB_XDP__SLOTS; k++) {
		memset(&out[k], 0, sizeof(out[k]));
		if (bpf_map_lookup_elem(counters_fd, &k, vals))
			return -errno;
		for (int c = 0; c < ncpu; c++) {
			out[k].packets += vals[c].packets;
			out[k].bytes += vals[c].bytes;
			out[k].frags += vals[c].frags;
		}
	}
	return 0;
}

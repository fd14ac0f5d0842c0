// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb doctor`, the gathering half: reads the system into struct
 * xevb_doctor_facts and decides nothing. Each source is the kernel's own
 * interface: the netdev generic-netlink family for the XDP feature flags
 * (what libbpf 1.2+ reads for bpf_xdp_query()'s feature_flags; the
 * distribution's libbpf 1.1 predates it), ethtool ioctls for channels,
 * rings, n-tuple rules and the RSS table, and /sys and /proc files. A fact
 * that cannot be read keeps the errno that stopped it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <linux/ethtool.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include "base/cli.h"
#include "ops/doctor.h"
#include "rx/loader.h"

/* uapi linux/netdev.h (6.3+), newer than some distributions' headers. */
#define NETDEV_FAMILY_NAME           "netdev"
#define NETDEV_CMD_DEV_GET           1
#define NETDEV_A_DEV_IFINDEX         1
#define NETDEV_A_DEV_XDP_FEATURES    3
#define NETDEV_A_DEV_XDP_ZC_MAX_SEGS 4

#define NL_BUF 4096

struct nl_req {
	struct nlmsghdr n;
	struct genlmsghdr g;
	char attrs[64];
};

static void nl_put(struct nl_req *r, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->n.nlmsg_len));

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
	r->n.nlmsg_len = NLMSG_ALIGN(r->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* One request, one answer into buf: its length, or -errno. */
static int nl_ask(int fd, struct nl_req *r, char *buf, size_t len)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h;
	ssize_t n;

	if (sendto(fd, r, r->n.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	n = recv(fd, buf, len, 0);
	if (n < 0)
		return -errno;
	h = (struct nlmsghdr *)buf;
	if (!NLMSG_OK(h, (size_t)n))
		return -EBADMSG;
	if (h->nlmsg_type == NLMSG_ERROR) {
		int err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		return err ? err : -ENODATA;
	}
	return (int)n;
}

static void req_init(struct nl_req *r, uint16_t family, uint8_t cmd)
{
	memset(r, 0, sizeof(*r));
	r->n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->n.nlmsg_type = family;
	r->n.nlmsg_flags = NLM_F_REQUEST;
	r->n.nlmsg_seq = 1;
	r->g.cmd = cmd;
	r->g.version = 1;
}

/* Walk the attributes of a generic-netlink answer: calls fn for each. */
static void nl_attrs(const char *buf, int len, void (*fn)(const struct nlattr *a, void *ctx), void *ctx)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	const char *p = (const char *)NLMSG_DATA(h) + GENL_HDRLEN,
		   *end = buf + (len < (int)h->nlmsg_len ? len : (int)h->nlmsg_len);

	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *a = (const struct nlattr *)p;

		if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
			break;
		fn(a, ctx);
		p += NLA_ALIGN(a->nla_len);
	}
}

static void family_attr(const struct nlattr *a, void *ctx)
{
	if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID && a->nla_len >= NLA_HDRLEN + 2)
		memcpy(ctx, (const char *)a + NLA_HDRLEN, 2);
}

static void dev_attr(const struct nlattr *a, void *ctx)
{
	struct xevb_doctor_facts *f = ctx;
	const char *d = (const char *)a + NLA_HDRLEN;

	if (a->nla_type == NETDEV_A_DEV_XDP_FEATURES && a->nla_len >= NLA_HDRLEN + 8)
		memcpy(&f->xdp_features, d, 8);
	else if (a->nla_type == NETDEV_A_DEV_XDP_ZC_MAX_SEGS && a->nla_len >= NLA_HDRLEN + 4)
		memcpy(&f->xdp_zc_max_segs, d, 4);
}

/* NETDEV_CMD_DEV_GET: 0 or -errno (-ENOENT: the kernel has no netdev family). */
static int gather_xdp_features(struct xevb_doctor_facts *f)
{
	static char buf[NL_BUF];
	struct nl_req r;
	uint16_t family = 0;
	uint32_t ifindex = (uint32_t)f->ifindex;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC), n;
	struct timeval tv = { .tv_sec = 2 };

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	req_init(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY);
	nl_put(&r, CTRL_ATTR_FAMILY_NAME, NETDEV_FAMILY_NAME, sizeof(NETDEV_FAMILY_NAME));
	n = nl_ask(fd, &r, buf, sizeof(buf));
	if (n >= 0)
		nl_attrs(buf, n, family_attr, &family);
	if (n >= 0 && !family)
		n = -ENOENT;
	if (n >= 0) {
		req_init(&r, family, NETDEV_CMD_DEV_GET);
		nl_put(&r, NETDEV_A_DEV_IFINDEX, &ifindex, sizeof(ifindex));
		n = nl_ask(fd, &r, buf, sizeof(buf));
		if (n >= 0)
			nl_attrs(buf, n, dev_attr, f);
	}
	close(fd);
	return n < 0 ? n : 0;
}

/* One ethtool ioctl on the device: 0 or -errno. */
static int ethtool(int fd, const char *ifname, void *cmd)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = cmd;
	return ioctl(fd, SIOCETHTOOL, &ifr) ? -errno : 0;
}

static void gather_channels_rings(int fd, struct xevb_doctor_facts *f)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ethtool_ringparam rp = { .cmd = ETHTOOL_GRINGPARAM };

	if (!ethtool(fd, f->ifname, &di))
		snprintf(f->driver, sizeof(f->driver), "%s", di.driver);
	f->channels_err = -ethtool(fd, f->ifname, &ch);
	f->ch_combined = ch.combined_count;
	f->ch_max_combined = ch.max_combined;
	f->ch_rx = ch.rx_count;
	f->ch_max_rx = ch.max_rx;
	f->rings_err = -ethtool(fd, f->ifname, &rp);
	f->ring_rx = rp.rx_pending;
	f->ring_rx_max = rp.rx_max_pending;
	f->ring_tx = rp.tx_pending;
	f->ring_tx_max = rp.tx_max_pending;
}

/* The kernel's flow spec, reduced to what decides whether it takes MEPs. */
static void reduce_rule(const struct ethtool_rx_flow_spec *fs, struct xevb_doctor_rule *r)
{
	uint32_t type = fs->flow_type & ~(uint32_t)(FLOW_EXT | FLOW_MAC_EXT | FLOW_RSS);

	memset(r, 0, sizeof(*r));
	r->loc = fs->location;
	r->rss_ctx = fs->flow_type & FLOW_RSS;
	r->queue = fs->ring_cookie == RX_CLS_FLOW_DISC ? XEVB_RULE_DROP :
							 (int32_t)ethtool_get_flow_spec_ring(fs->ring_cookie);
	if (type == IPV4_USER_FLOW) {
		r->kind = XEVB_RULE_IP4_PROTO;
		r->proto = fs->h_u.usr_ip4_spec.proto;
		r->proto_mask = fs->m_u.usr_ip4_spec.proto;
	} else if (type == UDP_V4_FLOW) {
		r->kind = XEVB_RULE_UDP4;
		r->dport = ntohs(fs->h_u.udp_ip4_spec.pdst);
		r->dport_mask = ntohs(fs->m_u.udp_ip4_spec.pdst);
	} else {
		r->kind = XEVB_RULE_OTHER;
	}
}

static void gather_rules(int fd, struct xevb_doctor_facts *f)
{
	struct ethtool_value flags = { .cmd = ETHTOOL_GFLAGS };
	struct ethtool_rxnfc cnt = { .cmd = ETHTOOL_GRXCLSRLCNT };
	struct ethtool_rxnfc *all;
	size_t sz;

	if (!ethtool(fd, f->ifname, &flags))
		f->ntuple_on = flags.data & ETH_FLAG_NTUPLE;
	f->ntuple_err = -ethtool(fd, f->ifname, &cnt);
	if (f->ntuple_err)
		return;
	sz = sizeof(*all) + XEVB_DOCTOR_MAX_RULES * sizeof(uint32_t);
	all = calloc(1, sz);
	if (!all) {
		f->ntuple_err = ENOMEM;
		return;
	}
	all->cmd = ETHTOOL_GRXCLSRLALL;
	all->rule_cnt = cnt.rule_cnt < XEVB_DOCTOR_MAX_RULES ? cnt.rule_cnt : XEVB_DOCTOR_MAX_RULES;
	f->ntuple_err = all->rule_cnt ? -ethtool(fd, f->ifname, all) : 0;
	for (uint32_t i = 0; !f->ntuple_err && i < all->rule_cnt; i++) {
		struct ethtool_rxnfc one = { .cmd = ETHTOOL_GRXCLSRULE, .fs.location = all->rule_locs[i] };

		if (!ethtool(fd, f->ifname, &one))
			reduce_rule(&one.fs, &f->rules[f->n_rules++]);
	}
	free(all);
}

static void gather_indir(int fd, struct xevb_doctor_facts *f)
{
	struct ethtool_rxfh_indir probe = { .cmd = ETHTOOL_GRXFHINDIR, .size = 0 };
	struct ethtool_rxfh_indir *t;

	f->indir_err = -ethtool(fd, f->ifname, &probe);
	if (f->indir_err)
		return;
	if (!probe.size || probe.size > XEVB_DOCTOR_MAX_INDIR) {
		f->indir_err = probe.size ? E2BIG : EOPNOTSUPP;
		return;
	}
	t = calloc(1, sizeof(*t) + probe.size * sizeof(uint32_t));
	if (!t) {
		f->indir_err = ENOMEM;
		return;
	}
	t->cmd = ETHTOOL_GRXFHINDIR;
	t->size = probe.size;
	f->indir_err = -ethtool(fd, f->ifname, t);
	if (!f->indir_err) {
		f->indir_size = t->size;
		memcpy(f->indir, t->ring_index, t->size * sizeof(uint32_t));
	}
	free(t);
}

/* The first line of a /sys or /proc file; false if unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *fp = fopen(path, "re");
	bool ok;

	if (!fp)
		return false;
	ok = fgets(buf, (int)len, fp) != NULL;
	fclose(fp);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

static long long read_num(const char *path, long long dflt)
{
	char buf[64];

	return read_line(path, buf, sizeof(buf)) ? strtoll(buf, NULL, 10) : dflt;
}

static uint32_t count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint32_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static void gather_sysfs_dev(struct xevb_doctor_facts *f)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", f->ifname);
	f->rx_queues = count_prefixed(path, "rx-");
	f->tx_queues = count_prefixed(path, "tx-");
	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", f->ifname);
	f->mtu = (uint32_t)read_num(path, 1500);
	snprintf(path, sizeof(path), "/sys/class/net/%s/device", f->ifname);
	f->virtual_dev = access(path, F_OK) != 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/device/numa_node", f->ifname);
	f->numa_node = (int)read_num(path, -1);
	snprintf(path, sizeof(path), "/sys/class/net/%s/napi_defer_hard_irqs", f->ifname);
	f->napi_defer_hard_irqs = (uint32_t)read_num(path, 0);
	snprintf(path, sizeof(path), "/sys/class/net/%s/gro_flush_timeout", f->ifname);
	f->busy_poll_err = access(path, R_OK) ? errno : 0;
	f->gro_flush_timeout_ns = (uint64_t)read_num(path, 0);
	f->busy_poll_us = (uint32_t)read_num("/proc/sys/net/core/busy_poll", 0);
	f->busy_read_us = (uint32_t)read_num("/proc/sys/net/core/busy_read", 0);
}

static void gather_hugepages(struct xevb_doctor_facts *f)
{
	FILE *fp = fopen("/proc/meminfo", "re");
	char line[128];
	unsigned long long v;

	if (!fp) {
		f->hugepages_err = errno;
		return;
	}
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "HugePages_Total: %llu", &v) == 1)
			f->hugepages_total = v;
		else if (sscanf(line, "HugePages_Free: %llu", &v) == 1)
			f->hugepages_free = v;
		else if (sscanf(line, "Hugepagesize: %llu kB", &v) == 1)
			f->hugepage_kb = v;
	}
	fclose(fp);
}

static void gather_irqbalance(struct xevb_doctor_facts *f)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[288], comm[32];

	if (!d)
		return;
	while (!f->irqbalance_pid && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if (read_line(path, comm, sizeof(comm)) && !strcmp(comm, "irqbalance"))
			f->irqbalance_pid = atoi(e->d_name);
	}
	closedir(d);
}

int xevb_doctor_irq_queue(const char *name)
{
	static const char *const marks[] = { "TxRx-", "txrx-", "rx-", "comp", "fp-", "input.", "queue" };
	char tail[48];
	const char *m, *p;

	snprintf(tail, sizeof(tail), "%s", name);
	tail[strcspn(tail, "@")] = 0;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		m = strstr(tail, marks[i]);
		if (!m)
			continue;
		p = m + strlen(marks[i]);
		if (*p >= '0' && *p <= '9' && p[strspn(p, "0123456789")] == 0)
			return atoi(p);
	}
	return -1;
}

bool xevb_doctor_irq_line_name(const char *line, unsigned irq, char *out, size_t len)
{
	const char *end, *last;
	char *stop;
	size_t n;

	if (strtoul(line, &stop, 10) != irq || *stop != ':' || stop == line)
		return false;
	end = stop + strcspn(stop, "\n");
	while (end > stop && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	for (last = end; last > stop && last[-1] != ' ' && last[-1] != '\t'; last--)
		;
	n = (size_t)(end - last);
	if (n >= len)
		n = len - 1;
	memcpy(out, last, n);
	out[n] = 0;
	return true;
}

/* The name /proc/interrupts gives an IRQ. */
static void irq_name(unsigned irq, char *out, size_t len)
{
	FILE *fp = fopen("/proc/interrupts", "re");
	char line[4096];

	out[0] = 0;
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp))
		if (xevb_doctor_irq_line_name(line + strspn(line, " "), irq, out, len))
			break;
	fclose(fp);
}

/* The device's MSI/MSI-X vectors, their queue and affinity. */
static void gather_irqs(struct xevb_doctor_facts *f)
{
	char path[288], buf[1024];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/net/%s/device/msi_irqs", f->ifname);
	d = opendir(path);
	if (!d) {
		/* A bus device in between (virtio): the vectors are its parent's. */
		snprintf(path, sizeof(path), "/sys/class/net/%s/device/../msi_irqs", f->ifname);
		d = opendir(path);
	}
	if (!d)
		return;
	while ((e = readdir(d)) && f->n_irqs < XEVB_DOCTOR_MAX_IRQS) {
		struct xevb_doctor_irq *irq = &f->irqs[f->n_irqs];

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		irq->irq = (unsigned)atoi(e->d_name);
		irq_name(irq->irq, irq->name, sizeof(irq->name));
		irq->queue = xevb_doctor_irq_queue(irq->name);
		snprintf(path, sizeof(path), "/proc/irq/%u/smp_affinity_list", irq->irq);
		if (!read_line(path, buf, sizeof(buf)) || !xevb_cpuset_parse(buf, &irq->affinity))
			memset(&irq->affinity, 0, sizeof(irq->affinity));
		f->n_irqs++;
	}
	closedir(d);
}

static void gather_cpus(struct xevb_doctor_facts *f)
{
	char path[128], buf[1024];
	struct xevb_cpuset s;

	memset(f->cpu_node, -1, sizeof(f->cpu_node));
	if (read_line("/sys/devices/system/cpu/online", buf, sizeof(buf)))
		xevb_cpuset_parse(buf, &f->online);
	for (int node = 0; node < XEVB_DOCTOR_MAX_CPUS; node++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
		if (!read_line(path, buf, sizeof(buf)))
			continue;
		f->n_nodes++;
		if (!xevb_cpuset_parse(buf, &s))
			continue;
		for (unsigned cpu = 0; cpu < XEVB_DOCTOR_MAX_CPUS; cpu++)
			if (xevb_cpuset_has(&s, cpu))
				f->cpu_node[cpu] = (int8_t)node;
	}
	for (unsigned cpu = 0; cpu < XEVB_DOCTOR_MAX_CPUS; cpu++) {
		if (!xevb_cpuset_has(&f->online, cpu))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_governor", cpu);
		read_line(path, f->governor[cpu], sizeof(f->governor[cpu]));
	}
}

static void gather_limits(struct xevb_doctor_facts *f)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	struct rlimit rl;

	f->memlock_bytes = getrlimit(RLIMIT_MEMLOCK, &rl) ? 0 :
			   rl.rlim_cur == RLIM_INFINITY   ? UINT64_MAX :
							    (uint64_t)rl.rlim_cur;
	if (!syscall(SYS_capget, &hdr, data))
		f->cap_eff = (uint64_t)data[1].effective << 32 | data[0].effective;
}

/* Can this uid (effective ids and capabilities, as the builder's) keep its files there? */
static void gather_run_dir(struct xevb_doctor_facts *f)
{
	char parent[sizeof(f->run_dir)];
	char *slash;

	snprintf(f->run_dir, sizeof(f->run_dir), "%s", xevb_run_dir());
	f->uid = (uint32_t)geteuid();
	if (!faccessat(AT_FDCWD, f->run_dir, W_OK | X_OK, AT_EACCESS))
		return;
	f->run_dir_err = errno;
	if (errno != ENOENT)
		return;
	f->run_dir_missing = true;
	snprintf(parent, sizeof(parent), "%s", f->run_dir);
	slash = strrchr(parent, '/');
	if (slash)
		*(slash == parent ? slash + 1 : slash) = 0;
	f->run_dir_err = faccessat(AT_FDCWD, parent, W_OK | X_OK, AT_EACCESS) ? errno : 0;
}

int xevb_doctor_gather(const char *ifname, struct xevb_doctor_facts *f)
{
	int fd;

	memset(f, 0, sizeof(*f));
	snprintf(f->ifname, sizeof(f->ifname), "%s", ifname);
	f->ifindex = (int)if_nametoindex(ifname);
	if (!f->ifindex) {
		xevb_err("no interface '%s' in this network namespace (ip link show lists them)", ifname);
		return -ENODEV;
	}
	f->xdp_feat_err = -gather_xdp_features(f);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		gather_channels_rings(fd, f);
		gather_rules(fd, f);
		gather_indir(fd, f);
		close(fd);
	} else {
		f->channels_err = f->rings_err = f->ntuple_err = f->indir_err = errno;
	}
	gather_sysfs_dev(f);
	gather_hugepages(f);
	gather_irqbalance(f);
	gather_irqs(f);
	gather_cpus(f);
	gather_limits(f);
	gather_run_dir(f);
	return 0;
}

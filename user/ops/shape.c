// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb shape`: per-destination rates on an interface. Set-up, in order:
 * root qdisc (HTB "eb:" or fq), clsact, the classifier as egress filter
 * eb/eb; each rule adds an HTB class eb:<slot> with a bfifo leaf and a map
 * entry. Teardown removes these and only these. The kernel holds all the
 * state: the filter leads to the program, the program to its maps.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/pkt_sched.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "base/cli.h"
#include "base/json.h"
#include "ops/shape_ctl.h"
#include "ops/shape_nl.h"
#include "xevb_shape.skel.h"

#define HTB_ROOT    (XEVB_SHAPE_MAJOR << 16)
#define CLASSID(s)  (HTB_ROOT | (s))
#define LEAF(s)     ((XEVB_SHAPE_LEAF_BASE + (s)) << 16)
#define MIN_LIMIT   (4u << 20)
#define MAX_LIMIT   (256u << 20)
#define DEF_HORIZON 2000000000ull

struct shaper {
	int ifindex;
	int prog_fd, dst_fd, cnt_fd, why_fd, cfg_fd;
	struct xevb_shape_cfg cfg;
};

static void shaper_close(struct shaper *s)
{
	int *fds[] = { &s->prog_fd, &s->dst_fd, &s->cnt_fd, &s->why_fd, &s->cfg_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

bool xevb_shape_parse_rate(const char *opt, const char *s, uint64_t *bps)
{
	size_t n = strlen(s);
	double v;

	/* tc's "bps" means bytes/s; refuse it rather than guess. */
	if ((n >= 3 && !strcasecmp(s + n - 3, "bps")) || (n && s[n - 1] == 'B')) {
		xevb_err("--%s: '%s': give bits per second, e.g. 200mbit or 1.5gbit", opt, s);
		return false;
	}
	if (!xevb_parse_si(opt, s, &v))
		return false;
	if (v < 100e3 || v > 400e9) {
		xevb_err("--%s: '%s' is outside 100kbit..400gbit", opt, s);
		return false;
	}
	*bps = (uint64_t)v;
	return true;
}

const char *xevb_shape_auto_mode(int *fq_present)
{
	int fq = shape_nl_probe_fq();

	if (fq_present)
		*fq_present = fq;
	return fq == 1 ? "edt" : "htb";
}

static const char *mode_name(uint32_t m)
{
	return m == XEVB_SHAPE_MODE_HTB ? "htb" : m == XEVB_SHAPE_MODE_EDT ? "edt" : "none";
}

static int dev_index(const char *dev)
{
	int i = (int)if_nametoindex(dev);

	if (!i)
		xevb_err("no interface '%s' in this network namespace (ip link shows the names)", dev);
	return i ? i : -ENODEV;
}

static uint32_t dev_mtu(const char *dev)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	uint32_t mtu = 1500;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (fd >= 0 && !ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = (uint32_t)ifr.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return mtu;
}

static int open_map(uint32_t id, const char *want, int *out)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);
	int fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || strcmp(info.name, want)) {
		close(fd);
		return 1;
	}
	*out = fd;
	return 0;
}

static bool has_clsact(int ifindex)
{
	static struct shape_qdisc_info q[256];
	int n = shape_nl_qdiscs(ifindex, q, 256);

	for (int i = 0; i < n; i++)
		if (q[i].parent == TC_H_CLSACT)
			return true;
	return n < 0; /* unsure: let the query find out */
}

/* Find our classifier on the device: 0, -ENOENT (none), or -errno. */
static int shaper_find(int ifindex, struct shaper *s)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, q, .handle = XEVB_SHAPE_TC_HANDLE, .priority = XEVB_SHAPE_TC_PRIO);
	struct bpf_prog_info info = { 0 };
	uint32_t ids[16], len = sizeof(info), zero = 0;
	int err;

	memset(s, 0, sizeof(*s));
	s->ifindex = ifindex;
	s->prog_fd = s->dst_fd = s->cnt_fd = s->why_fd = s->cfg_fd = -1;
	/* No clsact, no filter: asking libbpf then only prints a kernel complaint. */
	if (!has_clsact(ifindex))
		return -ENOENT;
	err = bpf_tc_query(&hook, &q);
	if (err)
		return err == -ENOENT || err == -EINVAL ? -ENOENT : err;
	s->prog_fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (s->prog_fd < 0) {
		err = -errno;
		xevb_err("tc filter found but its program %u cannot be opened: %s", q.prog_id, strerror(errno));
		return err;
	}
	info.nr_map_ids = 16;
	info.map_ids = (uint64_t)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(s->prog_fd, &info, &len)) {
		err = -errno;
		goto bad;
	}
	if (strcmp(info.name, "xevb_shape")) {
		xevb_err(
			"the egress tc filter with handle/priority 0x%x is '%s', not xevb's; "
			"remove it (tc filter del dev IFACE egress) first",
			XEVB_SHAPE_TC_HANDLE, info.name);
		err = -EEXIST;
		goto bad;
	}
	for (uint32_t i = 0; i < info.nr_map_ids && i < 16; i++) {
		if (!open_map(ids[i], "shape_dst", &s->dst_fd) || !open_map(ids[i], "shape_cnt", &s->cnt_fd) ||
		    !open_map(ids[i], "shape_why", &s->why_fd) || !open_map(ids[i], "shape_cfg", &s->cfg_fd))
			continue;
	}
	if (s->dst_fd < 0 || s->cnt_fd < 0 || s->why_fd < 0 || s->cfg_fd < 0) {
		xevb_err("the shaping program %u lacks its maps (xevb version mismatch?)", q.prog_id);
		err = -ENOENT;
		goto bad;
	}
	if (bpf_map_lookup_elem(s->cfg_fd, &zero, &s->cfg)) {
		err = -errno;
		goto bad;
	}
	return 0;
bad:
	shaper_close(s);
	return err == -ENOENT ? -EIO : err;
}

static int cfg_write(struct shaper *s)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(s->cfg_fd, &zero, &s->cfg, BPF_ANY)) {
		xevb_err("updating the shaper's configuration map: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Root qdisc, clsact, program: undoing each step if a later one fails. */
static int shaper_setup(const char *dev, int ifindex, const struct xevb_shape_rule *r, struct shaper *s)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, at, .handle = XEVB_SHAPE_TC_HANDLE, .priority = XEVB_SHAPE_TC_PRIO);
	struct shape_qdisc_info root;
	struct xevb_shape *sk = NULL;
	int fq = shape_nl_probe_fq(), err;
	uint32_t mode;
	bool made_clsact = false;

	if (r->mode == XEVB_SHAPE_FORCE_EDT && fq != 1) {
		xevb_err("--mode edt needs sch_fq, which this kernel %s; use --mode htb (or auto)",
			 fq == 0 ? "does not have" : "could not be probed for");
		return -EOPNOTSUPP;
	}
	mode = r->mode == XEVB_SHAPE_FORCE_HTB ? XEVB_SHAPE_MODE_HTB :
	       r->mode == XEVB_SHAPE_FORCE_EDT ? XEVB_SHAPE_MODE_EDT :
	       fq == 1                         ? XEVB_SHAPE_MODE_EDT :
						 XEVB_SHAPE_MODE_HTB;

	err = shape_nl_root_qdisc(ifindex, &root);
	if (err && err != -ENOENT)
		return err;
	if (!err && root.handle != 0) {
		xevb_err(
			"%s already has a root qdisc (%s %x:); xevb shape will not replace it. "
			"Remove it (tc qdisc del dev %s root) or shape another interface",
			dev, root.kind, root.handle >> 16, dev);
		return -EEXIST;
	}
	err = mode == XEVB_SHAPE_MODE_HTB ? shape_nl_add_htb_root(ifindex, XEVB_SHAPE_MAJOR) :
					    shape_nl_add_fq_root(ifindex, XEVB_SHAPE_MAJOR);
	if (err)
		return err;
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST) {
		xevb_err("creating the clsact qdisc on %s: %s", dev, strerror(-err));
		goto undo_root;
	}
	made_clsact = !err;
	sk = xevb_shape__open_and_load();
	if (!sk) {
		err = -errno;
		xevb_err("loading the shaping classifier: %s (the verifier log is above)", strerror(errno));
		goto undo_clsact;
	}
	at.prog_fd = bpf_program__fd(sk->progs.xevb_shape);
	err = bpf_tc_attach(&hook, &at);
	if (err) {
		xevb_err("attaching the classifier to %s egress: %s", dev, strerror(-err));
		goto undo_prog;
	}
	xevb_shape__destroy(sk); /* the tc filter keeps program and maps alive */
	sk = NULL;
	err = shaper_find(ifindex, s);
	if (err)
		goto undo_filter;
	s->cfg = (struct xevb_shape_cfg){
		.mode = mode,
		.default_classid = HTB_ROOT, /* the HTB handle itself: its direct queue */
		.ifindex = (uint32_t)ifindex,
		.horizon_ns = r->horizon_ns ? r->horizon_ns : DEF_HORIZON,
		.created_clsact = made_clsact,
		.created_root = 1,
		.prog_id = at.prog_id,
	};
	if ((err = cfg_write(s)))
		goto undo_filter;
	xevb_info("shaper set up on %s: mode %s (%s)", dev, mode_name(mode),
		  fq == 1 ? "sch_fq present" :
		  fq == 0 ? "no sch_fq in this kernel" :
			    "sch_fq probe failed");
	return 0;

undo_filter:
	shaper_close(s);
	at.prog_fd = at.prog_id = 0;
	at.flags = 0;
	bpf_tc_detach(&hook, &at);
undo_prog:
	xevb_shape__destroy(sk);
undo_clsact:
	if (made_clsact) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
undo_root:
	shape_nl_del_root(ifindex, HTB_ROOT);
	return err;
}

/*
 * A socket may hold 2 x wmem_max bytes (truesize, more than the frames'
 * length) in flight; room for two such senders per destination means
 * they block on their buffer before the leaf queue could drop.
 */
static uint32_t default_min_limit(void)
{
	FILE *f = fopen("/proc/sys/net/core/wmem_max", "r");
	unsigned long w = 0;
	uint64_t l;

	if (f) {
		if (fscanf(f, "%lu", &w) != 1)
			w = 0;
		fclose(f);
	}
	l = (uint64_t)w * 4;
	return l < MIN_LIMIT ? MIN_LIMIT : l > MAX_LIMIT ? MAX_LIMIT : (uint32_t)l;
}

static int alloc_slot(int dst_fd, uint32_t *slot)
{
	static uint8_t used[XEVB_SHAPE_MAX_DST];
	struct xevb_shape_key k, nk, *pk = NULL;
	struct xevb_shape_val v;

	memset(used, 0, sizeof(used));
	used[0] = 1;
	while (!bpf_map_get_next_key(dst_fd, pk, &nk)) {
		if (!bpf_map_lookup_elem(dst_fd, &nk, &v) && v.slot < XEVB_SHAPE_MAX_DST)
			used[v.slot] = 1;
		k = nk;
		pk = &k;
	}
	for (uint32_t i = 1; i < XEVB_SHAPE_MAX_DST; i++)
		if (!used[i]) {
			*slot = i;
			return 0;
		}
	xevb_err("all %d destination slots are in use; clear some first", XEVB_SHAPE_MAX_DST - 1);
	return -ENOSPC;
}

static int zero_counters(int cnt_fd, uint32_t slot)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xevb_shape_cnt *z = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(*z));
	int err = 0;

	if (!z)
		return -ENOMEM;
	if (bpf_map_update_elem(cnt_fd, &slot, z, BPF_ANY))
		err = -errno;
	free(z);
	return err;
}

static struct xevb_shape_key rule_key(const struct xevb_shape_rule *r)
{
	return (struct xevb_shape_key){ .daddr = r->daddr, .proto = r->proto, .dport = htons(r->dport) };
}

static void rule_name(const struct xevb_shape_key *k, char *buf, size_t n)
{
	char a[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &k->daddr, a, sizeof(a));
	if (k->proto && k->dport)
		snprintf(buf, n, "%s proto %u port %u", a, k->proto, ntohs(k->dport));
	else if (k->proto)
		snprintf(buf, n, "%s proto %u", a, k->proto);
	else
		snprintf(buf, n, "%s", a);
}

int xevb_shape_set(const char *dev, const struct xevb_shape_rule *r)
{
	struct xevb_shape_key k = rule_key(r);
	struct xevb_shape_val v = { 0 };
	struct shaper s;
	struct shape_htb_params hp;
	uint32_t mtu = dev_mtu(dev), frame, limit;
	int ifindex = dev_index(dev), err;
	bool exists;
	char name[64];

	if (ifindex < 0)
		return ifindex;
	err = shaper_find(ifindex, &s);
	if (err == -ENOENT)
		err = shaper_setup(dev, ifindex, r, &s);
	if (err)
		return err;
	rule_name(&k, name, sizeof(name));
	exists = !bpf_map_lookup_elem(s.dst_fd, &k, &v);
	frame = mtu + 14 + r->overhead;
	hp = (struct shape_htb_params){
		.rate_bps = r->rate_bps,
		.burst = r->burst ? r->burst : (uint32_t)(r->rate_bps / 8 / 500),
		.overhead = r->overhead,
		.mtu = mtu,
	};
	if (hp.burst < 4 * frame)
		hp.burst = 4 * frame;
	hp.quantum = (uint32_t)(r->rate_bps / 8 / 1000);
	if (hp.quantum < frame)
		hp.quantum = frame;
	if (hp.quantum > 200000)
		hp.quantum = 200000;
	limit = r->limit ? r->limit : (uint32_t)(r->rate_bps / 8 / 10);
	if (!r->limit && limit < default_min_limit())
		limit = default_min_limit();
	if (limit < 2 * frame)
		limit = 2 * frame;

	if (!exists) {
		if ((err = alloc_slot(s.dst_fd, &v.slot)))
			goto out;
		v.classid = CLASSID(v.slot);
	}
	if (s.cfg.mode == XEVB_SHAPE_MODE_HTB) {
		err = shape_nl_htb_class(ifindex, v.classid, &hp, !exists);
		if (err)
			goto out;
		/* The queue follows the rate: a faster class gets a deeper queue. */
		err = shape_nl_bfifo(ifindex, v.classid, LEAF(v.slot), limit, !exists);
		if (err) {
			if (!exists)
				shape_nl_del_class(ifindex, v.classid);
			goto out;
		}
	}
	if (!exists)
		zero_counters(s.cnt_fd, v.slot);
	v.rate_bps = r->rate_bps;
	v.overhead = r->overhead;
	if (bpf_map_update_elem(s.dst_fd, &k, &v, BPF_ANY)) {
		err = -errno;
		xevb_err("adding %s to the shaper's map: %s", name, strerror(errno));
		if (!exists && s.cfg.mode == XEVB_SHAPE_MODE_HTB)
			shape_nl_del_class(ifindex, v.classid);
		goto out;
	}
	if (!exists && (k.proto || k.dport)) {
		s.cfg.n_specific++;
		cfg_write(&s);
	}
	if (s.cfg.mode == XEVB_SHAPE_MODE_HTB)
		xevb_info("%s %s on %s: %.6g Mbit/s (htb class %x:%x, burst %u B, quantum %u B, bfifo %u B)",
			  exists ? "changed" : "shaping", name, dev, (double)r->rate_bps / 1e6, XEVB_SHAPE_MAJOR,
			  v.slot, hp.burst, hp.quantum, limit);
	else
		xevb_info("%s %s on %s: %.6g Mbit/s (edt, horizon %.3f s)", exists ? "changed" : "shaping", name,
			  dev, (double)r->rate_bps / 1e6, (double)s.cfg.horizon_ns / 1e9);
out:
	shaper_close(&s);
	return err;
}

static int teardown(const char *dev, struct shaper *s)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = s->ifindex, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, at, .handle = XEVB_SHAPE_TC_HANDLE, .priority = XEVB_SHAPE_TC_PRIO);
	struct shape_qdisc_info root;
	struct xevb_shape_cfg cfg = s->cfg;
	int err, rc = 0;

	shaper_close(s);
	err = bpf_tc_detach(&hook, &at);
	if (err) {
		xevb_err("removing the classifier from %s egress: %s", dev, strerror(-err));
		rc = err;
	}
	if (cfg.created_clsact) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		err = bpf_tc_hook_destroy(&hook);
		if (err && err != -ENOENT) {
			xevb_err("removing the clsact qdisc from %s: %s", dev, strerror(-err));
			rc = rc ? rc : err;
		}
	}
	if (cfg.created_root && !shape_nl_root_qdisc(s->ifindex, &root) && root.handle == HTB_ROOT) {
		err = shape_nl_del_root(s->ifindex, HTB_ROOT);
		rc = rc ? rc : err;
	}
	if (!rc)
		xevb_info("removed shaping from %s (classifier%s, root qdisc and its classes)", dev,
			  cfg.created_clsact ? ", clsact" : "");
	return rc;
}

int xevb_shape_clear(const char *dev, const struct xevb_shape_rule *r)
{
	struct xevb_shape_key k;
	struct xevb_shape_val v;
	struct shaper s;
	int ifindex = dev_index(dev), err;
	char name[64];

	if (ifindex < 0)
		return ifindex;
	err = shaper_find(ifindex, &s);
	if (err == -ENOENT) {
		xevb_info("no shaping on %s: nothing to clear", dev);
		return 0;
	}
	if (err)
		return err;
	if (!r)
		return teardown(dev, &s);
	k = rule_key(r);
	rule_name(&k, name, sizeof(name));
	if (bpf_map_lookup_elem(s.dst_fd, &k, &v)) {
		xevb_err("no rule for %s on %s ('xevb shape list --dev %s' shows them)", name, dev, dev);
		shaper_close(&s);
		return -ENOENT;
	}
	/* Map first: from here on packets take the unlimited default. */
	bpf_map_delete_elem(s.dst_fd, &k);
	if (s.cfg.mode == XEVB_SHAPE_MODE_HTB)
		err = shape_nl_del_class(ifindex, v.classid);
	if ((k.proto || k.dport) && s.cfg.n_specific) {
		s.cfg.n_specific--;
		cfg_write(&s);
	}
	if (!err)
		xevb_info("removed the rule for %s on %s", name, dev);
	shaper_close(&s);
	return err;
}

static void sum_cnt(int fd, uint32_t slot, struct xevb_shape_cnt *out)
{
	static struct xevb_shape_cnt per[1024];
	int ncpu = libbpf_num_possible_cpus();

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || ncpu > 1024 || bpf_map_lookup_elem(fd, &slot, per))
		return;
	for (int i = 0; i < ncpu; i++) {
		out->packets += per[i].packets;
		out->bytes += per[i].bytes;
		out->drop_horizon += per[i].drop_horizon;
	}
}

static uint64_t sum_why(int fd, uint32_t k)
{
	static uint64_t per[1024];
	int ncpu = libbpf_num_possible_cpus();
	uint64_t t = 0;

	if (ncpu <= 0 || ncpu > 1024 || bpf_map_lookup_elem(fd, &k, per))
		return 0;
	for (int i = 0; i < ncpu; i++)
		t += per[i];
	return t;
}

static const char *const why_names[XEVB_SHAPE_W__N] = {
	"matched", "unmatched", "not_ipv4", "truncated", "drop_horizon", "bad_slot", "no_cfg",
};

/* One rule's line (or JSON object, after the first with a comma): its counters and its HTB class's. */
static void print_rule(FILE *f, bool json, int n, const struct shaper *s, const struct xevb_shape_key *k,
		       const struct xevb_shape_val *v, const struct xevb_shape_cnt *c,
		       const struct shape_qdisc_info *q)
{
	char name[64];

	rule_name(k, name, sizeof(name));
	if (json) {
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &k->daddr, a, sizeof(a));
		fprintf(f,
			"%s{\"dst\":\"%s\",\"proto\":%u,\"port\":%u,\"rate_bps\":%llu,\"slot\":%u,"
			"\"packets\":%llu,\"bytes\":%llu,\"drop_horizon\":%llu,"
			"\"class_packets\":%llu,\"class_bytes\":%llu,\"class_drops\":%llu,"
			"\"class_overlimits\":%llu,\"backlog\":%llu}",
			n ? "," : "", a, k->proto, ntohs(k->dport), (unsigned long long)v->rate_bps, v->slot,
			(unsigned long long)c->packets, (unsigned long long)c->bytes,
			(unsigned long long)c->drop_horizon, (unsigned long long)q->packets,
			(unsigned long long)q->bytes, (unsigned long long)q->drops,
			(unsigned long long)q->overlimits, (unsigned long long)q->backlog);
	} else {
		char cl[16] = "-";
		if (s->cfg.mode == XEVB_SHAPE_MODE_HTB)
			snprintf(cl, sizeof(cl), "%x:%x", XEVB_SHAPE_MAJOR, v->slot);
		fprintf(f, "%-32s %12.3f %6s %12llu %14llu %10llu %10llu %10llu\n", name,
			(double)v->rate_bps / 1e6, cl, (unsigned long long)c->packets,
			(unsigned long long)c->bytes, (unsigned long long)q->drops, (unsigned long long)q->backlog,
			(unsigned long long)c->drop_horizon);
	}
}

/* What no rule matched, and the classifier's verdicts by reason. */
static void print_unmatched(FILE *f, bool json, const struct shaper *s)
{
	struct xevb_shape_cnt c;

	sum_cnt(s->cnt_fd, 0, &c);
	if (json) {
		fprintf(f, "],\"unmatched\":{\"packets\":%llu,\"bytes\":%llu},\"reasons\":{",
			(unsigned long long)c.packets, (unsigned long long)c.bytes);
		for (uint32_t i = 0; i < XEVB_SHAPE_W__N; i++)
			fprintf(f, "%s\"%s\":%llu", i ? "," : "", why_names[i],
				(unsigned long long)sum_why(s->why_fd, i));
		fprintf(f, "}}\n");
	} else {
		fprintf(f, "%-32s %12s %6s %12llu %14llu\nclassifier:", "(unmatched: unlimited)", "-", "direct",
			(unsigned long long)c.packets, (unsigned long long)c.bytes);
		for (uint32_t i = 0; i < XEVB_SHAPE_W__N; i++)
			fprintf(f, " %s %llu", why_names[i], (unsigned long long)sum_why(s->why_fd, i));
		fputc('\n', f);
	}
}

int xevb_shape_list(const char *dev, FILE *f, bool json)
{
	static struct shape_qdisc_info cls[XEVB_SHAPE_MAX_DST + 8];
	struct xevb_shape_key k, nk, *pk = NULL;
	struct xevb_shape_val v;
	struct xevb_shape_cnt c;
	struct shape_qdisc_info root = { 0 };
	struct shaper s;
	int ifindex = dev_index(dev), err, ncls, n = 0, fq;
	const char *automode;
	char qdev[XEVB_JSON_QLEN(IF_NAMESIZE)], qkind[XEVB_JSON_QLEN(sizeof(root.kind))];

	if (ifindex < 0)
		return ifindex;
	automode = xevb_shape_auto_mode(&fq);
	err = shaper_find(ifindex, &s);
	if (err && err != -ENOENT)
		return err;
	if (err == -ENOENT) {
		if (json)
			fprintf(f, "{\"dev\":%s,\"mode\":\"none\",\"auto_mode\":\"%s\",\"fq\":%s,\"rules\":[]}\n",
				xevb_json_q(qdev, sizeof(qdev), dev), automode, fq == 1 ? "true" : "false");
		else
			fprintf(f, "%s: no shaping (would use %s: %s)\n", dev, automode,
				fq == 1 ? "sch_fq present" : "no sch_fq in this kernel");
		return 0;
	}
	ncls = shape_nl_classes(ifindex, cls, XEVB_SHAPE_MAX_DST + 8);
	if (ncls < 0)
		ncls = 0;
	shape_nl_root_qdisc(ifindex, &root);
	if (json)
		fprintf(f,
			"{\"dev\":%s,\"mode\":\"%s\",\"auto_mode\":\"%s\",\"fq\":%s,\"prog_id\":%u,"
			"\"root\":{\"kind\":%s,\"packets\":%llu,\"bytes\":%llu,\"drops\":%llu},\"rules\":[",
			xevb_json_q(qdev, sizeof(qdev), dev), mode_name(s.cfg.mode), automode,
			fq == 1 ? "true" : "false", s.cfg.prog_id, xevb_json_q(qkind, sizeof(qkind), root.kind),
			(unsigned long long)root.packets, (unsigned long long)root.bytes,
			(unsigned long long)root.drops);
	else
		fprintf(f,
			"%s: mode %s (%s), classifier prog %u, root %s: %llu packets, %llu drops\n"
			"%-32s %12s %6s %12s %14s %10s %10s %10s\n",
			dev, mode_name(s.cfg.mode), fq == 1 ? "sch_fq present" : "no sch_fq in this kernel",
			s.cfg.prog_id, root.kind, (unsigned long long)root.packets, (unsigned long long)root.drops,
			"destination", "rate Mbit/s", "class", "packets", "bytes", "q_drops", "backlog",
			"hz_drops");
	while (!bpf_map_get_next_key(s.dst_fd, pk, &nk)) {
		struct shape_qdisc_info q = { 0 };

		k = nk;
		pk = &k;
		if (bpf_map_lookup_elem(s.dst_fd, &k, &v))
			continue;
		sum_cnt(s.cnt_fd, v.slot, &c);
		for (int i = 0; i < ncls; i++)
			if (cls[i].handle == v.classid && !strcmp(cls[i].kind, "htb"))
				q = cls[i];
		print_rule(f, json, n, &s, &k, &v, &c, &q);
		n++;
	}
	print_unmatched(f, json, &s);
	shaper_close(&s);
	return 0;
}

bool xevb_shape_active(const char *dev)
{
	struct shaper s;
	int ifindex = (int)if_nametoindex(dev);

	if (!ifindex || shaper_find(ifindex, &s))
		return false;
	shaper_close(&s);
	return true;
}

void xevb_shape_wait_drained(const char *dev, unsigned max_ms)
{
	static struct shape_qdisc_info cls[XEVB_SHAPE_MAX_DST + 8];
	int ifindex = (int)if_nametoindex(dev);

	for (unsigned t = 0; ifindex && t < max_ms; t += 10) {
		int n = shape_nl_classes(ifindex, cls, XEVB_SHAPE_MAX_DST + 8);
		uint64_t q = 0;
		for (int i = 0; i < n; i++)
			if ((cls[i].handle >> 16) == XEVB_SHAPE_MAJOR)
				q += cls[i].qlen + cls[i].backlog;
		if (n <= 0 || !q)
			return;
		usleep(10000);
	}
}

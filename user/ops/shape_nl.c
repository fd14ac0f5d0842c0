// SPDX-License-Identifier: GPL-2.0-only
/*
 * tc over raw rtnetlink: HTB root + classes, bfifo leaves, fq root, and
 * stats dumps. Kernel error messages (extack) are passed on to the user.
 * HTB classes are sent with linklayer ethernet, so no rate table is needed.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include "base/cli.h"
#include "ops/shape_nl.h"

#define NL_BUF 8192

struct req {
	struct nlmsghdr n;
	struct tcmsg t;
	char buf[1024];
};

static void addattr(struct nlmsghdr *n, int type, const void *data, int len)
{
	struct rtattr *rta = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	rta->rta_type = (unsigned short)type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static struct rtattr *nest_start(struct nlmsghdr *n, int type)
{
	struct rtattr *nest = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	addattr(n, type, NULL, 0);
	return nest;
}

static void nest_end(struct nlmsghdr *n, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)n + n->nlmsg_len - (char *)nest);
}

static int nl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), one = 1;

	if (fd < 0) {
		xevb_err("netlink socket: %s", strerror(errno));
		return -errno;
	}
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	return fd;
}

/* The kernel's own explanation, if it sent one. */
static const char *extack_msg(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	const char *p = (const char *)e;
	int off, len;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return NULL;
	off = (int)sizeof(*e);
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += (int)e->msg.nlmsg_len - (int)NLMSG_HDRLEN;
	len = (int)h->nlmsg_len - (int)NLMSG_HDRLEN - off;
	for (const struct rtattr *a = (const void *)(p + off); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == NLMSGERR_ATTR_MSG)
			return RTA_DATA(a);
	return NULL;
}

/* The next batch of replies, EINTR retried: its length, or -errno. */
static ssize_t nl_recv(int fd, char *buf, size_t size)
{
	for (;;) {
		ssize_t len = recv(fd, buf, size, 0);

		if (len >= 0 || errno != EINTR)
			return len < 0 ? -errno : len;
	}
}

/* Send one request and wait for its ack; what names the operation for errors. */
static int nl_talk(struct nlmsghdr *n, const char *what, bool quiet_enoent)
{
	static char buf[NL_BUF];
	int fd = nl_open(), err = 0;
	ssize_t len;

	if (fd < 0)
		return fd;
	n->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	n->nlmsg_seq = 1;
	if (send(fd, n, n->nlmsg_len, 0) < 0) {
		err = -errno;
		xevb_err("%s: netlink send: %s", what, strerror(errno));
		goto out;
	}
	for (;;) {
		len = nl_recv(fd, buf, sizeof(buf));
		if (len < 0) {
			err = (int)len;
			xevb_err("%s: netlink recv: %s", what, strerror(-err));
			goto out;
		}
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (unsigned)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (err && !(quiet_enoent && (err == -ENOENT || err == -EINVAL))) {
				const char *m = extack_msg(h);
				xevb_err("%s: %s%s%s", what, strerror(-err), m ? ": " : "", m ? m : "");
			}
			goto out;
		}
	}
out:
	close(fd);
	return err;
}

static void req_init(struct req *r, int type, int flags, int ifindex, uint32_t handle, uint32_t parent)
{
	memset(r, 0, sizeof(*r));
	r->n.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg));
	r->n.nlmsg_type = (unsigned short)type;
	r->n.nlmsg_flags = (unsigned short)flags;
	r->t.tcm_family = AF_UNSPEC;
	r->t.tcm_ifindex = ifindex;
	r->t.tcm_handle = handle;
	r->t.tcm_parent = parent;
}

int shape_nl_add_htb_root(int ifindex, uint32_t major)
{
	/* defcls 0: unclassified packets take HTB's direct queue, unlimited. */
	struct tc_htb_glob g = { .version = 3, .rate2quantum = 10, .defcls = 0 };
	uint32_t direct_qlen = 10000;
	struct req r;
	struct rtattr *o;

	req_init(&r, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, major << 16, TC_H_ROOT);
	addattr(&r.n, TCA_KIND, "htb", 4);
	o = nest_start(&r.n, TCA_OPTIONS);
	addattr(&r.n, TCA_HTB_INIT, &g, sizeof(g));
	addattr(&r.n, TCA_HTB_DIRECT_QLEN, &direct_qlen, sizeof(direct_qlen));
	nest_end(&r.n, o);
	return nl_talk(&r.n, "adding the HTB root qdisc", false);
}

int shape_nl_add_fq_root(int ifindex, uint32_t major)
{
	struct req r;

	req_init(&r, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, major << 16, TC_H_ROOT);
	addattr(&r.n, TCA_KIND, "fq", 3);
	return nl_talk(&r.n, "adding the fq root qdisc", false);
}

int shape_nl_del_root(int ifindex, uint32_t handle)
{
	struct req r;

	req_init(&r, RTM_DELQDISC, 0, ifindex, handle, TC_H_ROOT);
	return nl_talk(&r.n, "removing the root qdisc", true);
}

static void ratespec(struct tc_ratespec *rs, uint64_t bytes_s, const struct shape_htb_params *p)
{
	rs->rate = bytes_s >= ~0u ? ~0u : (uint32_t)bytes_s;
	rs->linklayer = TC_LINKLAYER_ETHERNET;
	rs->overhead = (unsigned short)p->overhead;
	rs->mpu = 0;
	rs->cell_log = 0;
	while ((p->mtu + 40u) >> rs->cell_log > 255)
		rs->cell_log++;
}

int shape_nl_htb_class(int ifindex, uint32_t classid, const struct shape_htb_params *p, bool create)
{
	uint64_t bytes_s = p->rate_bps / 8;
	/* HTB counts burst in 64 ns ticks of transmission time at the rate. */
	double ticks = (double)p->burst * 8e9 / (double)p->rate_bps / 64.0;
	struct tc_htb_opt o = { 0 };
	struct req r;
	struct rtattr *nest;

	ratespec(&o.rate, bytes_s, p);
	o.ceil = o.rate;
	o.buffer = o.cbuffer = ticks > 4e9 ? 4000000000u : (uint32_t)ticks + 1;
	o.quantum = p->quantum;
	req_init(&r, RTM_NEWTCLASS, create ? NLM_F_CREATE | NLM_F_EXCL : 0, ifindex, classid,
		 classid & 0xffff0000u);
	addattr(&r.n, TCA_KIND, "htb", 4);
	nest = nest_start(&r.n, TCA_OPTIONS);
	addattr(&r.n, TCA_HTB_PARMS, &o, sizeof(o));
	if (bytes_s >= ~0u) {
		addattr(&r.n, TCA_HTB_RATE64, &bytes_s, sizeof(bytes_s));
		addattr(&r.n, TCA_HTB_CEIL64, &bytes_s, sizeof(bytes_s));
	}
	nest_end(&r.n, nest);
	return nl_talk(&r.n, create ? "adding an HTB class" : "changing an HTB class", false);
}

int shape_nl_del_class(int ifindex, uint32_t classid)
{
	struct req r;

	req_init(&r, RTM_DELTCLASS, 0, ifindex, classid, classid & 0xffff0000u);
	return nl_talk(&r.n, "removing an HTB class", true);
}

int shape_nl_bfifo(int ifindex, uint32_t parent, uint32_t handle, uint32_t limit_bytes, bool create)
{
	struct tc_fifo_qopt q = { .limit = limit_bytes };
	struct req r;

	req_init(&r, RTM_NEWQDISC, create ? NLM_F_CREATE | NLM_F_EXCL : 0, ifindex, handle, parent);
	addattr(&r.n, TCA_KIND, "bfifo", 6);
	addattr(&r.n, TCA_OPTIONS, &q, sizeof(q));
	return nl_talk(&r.n, create ? "adding a bfifo leaf queue" : "resizing a bfifo leaf queue", false);
}

static void parse_stats(struct rtattr *st, struct shape_qdisc_info *q)
{
	int len = RTA_PAYLOAD(st);

	for (struct rtattr *a = RTA_DATA(st); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == TCA_STATS_BASIC && RTA_PAYLOAD(a) >= sizeof(struct gnet_stats_basic)) {
			struct gnet_stats_basic b;
			memcpy(&b, RTA_DATA(a), sizeof(b));
			q->bytes = b.bytes;
			q->packets = b.packets;
		} else if (a->rta_type == TCA_STATS_QUEUE && RTA_PAYLOAD(a) >= sizeof(struct gnet_stats_queue)) {
			struct gnet_stats_queue s;
			memcpy(&s, RTA_DATA(a), sizeof(s));
			q->drops = s.drops;
			q->overlimits = s.overlimits;
			q->backlog = s.backlog;
			q->qlen = s.qlen;
		}
	}
}

/* Dump qdiscs or classes of one device into out[]. */
static int dump(int type, int ifindex, struct shape_qdisc_info *out, int max)
{
	static char buf[32768];
	struct req r;
	int fd = nl_open(), n = 0, err = 0;
	ssize_t len;

	if (fd < 0)
		return fd;
	req_init(&r, type, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0, 0);
	r.n.nlmsg_seq = 2;
	if (send(fd, &r, r.n.nlmsg_len, 0) < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		len = nl_recv(fd, buf, sizeof(buf));
		if (len < 0) {
			err = (int)len;
			goto out;
		}
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (unsigned)len); h = NLMSG_NEXT(h, len)) {
			struct tcmsg *t = NLMSG_DATA(h);
			struct shape_qdisc_info q = { 0 };
			int alen;

			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
				goto out;
			}
			if (t->tcm_ifindex != ifindex || n >= max)
				continue;
			q.handle = t->tcm_handle;
			q.parent = t->tcm_parent;
			alen = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*t));
			for (struct rtattr *a = (void *)((char *)t + NLMSG_ALIGN(sizeof(*t))); RTA_OK(a, alen);
			     a = RTA_NEXT(a, alen)) {
				if (a->rta_type == TCA_KIND)
					snprintf(q.kind, sizeof(q.kind), "%.*s", (int)RTA_PAYLOAD(a),
						 (char *)RTA_DATA(a));
				else if (a->rta_type == TCA_STATS2)
					parse_stats(a, &q);
			}
			out[n++] = q;
		}
	}
out:
	close(fd);
	if (err)
		xevb_err("dumping tc %s: %s", type == RTM_GETQDISC ? "qdiscs" : "classes", strerror(-err));
	return err ? err : n;
}

int shape_nl_root_qdisc(int ifindex, struct shape_qdisc_info *out)
{
	static struct shape_qdisc_info q[256];
	int n = dump(RTM_GETQDISC, ifindex, q, 256);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		if (q[i].parent == TC_H_ROOT) {
			*out = q[i];
			return 0;
		}
	return -ENOENT;
}

int shape_nl_qdiscs(int ifindex, struct shape_qdisc_info *out, int max)
{
	return dump(RTM_GETQDISC, ifindex, out, max);
}

int shape_nl_classes(int ifindex, struct shape_qdisc_info *out, int max)
{
	return dump(RTM_GETTCLASS, ifindex, out, max);
}

/*
 * Ask the kernel itself: a child in a throw-away network namespace puts
 * fq on its loopback. Nothing outside that namespace is touched.
 */
int shape_nl_probe_fq(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct req r;
		int lo;
		if (unshare(CLONE_NEWNET))
			_exit(2);
		lo = (int)if_nametoindex("lo");
		if (!lo)
			_exit(2);
		xevb_log_level = -1;
		req_init(&r, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, lo, 0x10000, TC_H_ROOT);
		addattr(&r.n, TCA_KIND, "fq", 3);
		_exit(nl_talk(&r.n, "probe", true) == 0 ? 0 : 1);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 2)
		return -EPERM;
	return WEXITSTATUS(st) == 0;
}

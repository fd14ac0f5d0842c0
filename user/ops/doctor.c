// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb doctor`, the deciding half: pure functions from the gathered facts
 * (doctor_gather.c) and the planned builder to one verdict per check, with
 * the command that fixes it. Nothing here reads the system, so each rule
 * is tested on recorded facts of NICs this machine does not have
 * (tests/unit/test_doctor.c).
 *
 * Verdicts: fail means the builder will not run as planned or MEPs will
 * miss it; warn means it runs, slower or less safely than it could; skip
 * means the fact cannot be known here, and why.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "base/json.h"
#include "ops/doctor.h"
#include "rx/xsk_rx.h"
#include "ops/privdrop.h"

#define CAP_IPC_LOCK_BIT  14
#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT   38
#define CAP_BPF_BIT       39

/* The RX ring size worth having: deeper rings absorb longer bursts, beyond
 * this they mostly cost cache. */
#define RING_GOOD 4096

bool xevb_cpuset_parse(const char *s, struct xevb_cpuset *out)
{
	const char *p = s;

	memset(out, 0, sizeof(*out));
	while (*p && *p != '\n') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return false;
		p = end;
		if (*p == '-') {
			b = strtoul(p + 1, &end, 10);
			if (end == p + 1)
				return false;
			p = end;
		}
		if (a > b || b >= XEVB_DOCTOR_MAX_CPUS)
			return false;
		for (unsigned long c = a; c <= b; c++)
			xevb_cpuset_set(out, (unsigned)c);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return false;
	}
	return true;
}

unsigned xevb_cpuset_count(const struct xevb_cpuset *s)
{
	unsigned n = 0;

	for (size_t i = 0; i < sizeof(s->w) / sizeof(s->w[0]); i++)
		n += (unsigned)__builtin_popcountll(s->w[i]);
	return n;
}

static bool cpuset_subset(const struct xevb_cpuset *a, const struct xevb_cpuset *b)
{
	for (size_t i = 0; i < sizeof(a->w) / sizeof(a->w[0]); i++)
		if (a->w[i] & ~b->w[i])
			return false;
	return true;
}

/* The n-th CPU of a set (n from 0), or -1. */
static int cpuset_nth(const struct xevb_cpuset *s, unsigned n)
{
	for (unsigned c = 0; c < XEVB_DOCTOR_MAX_CPUS; c++)
		if (xevb_cpuset_has(s, c) && n-- == 0)
			return (int)c;
	return -1;
}

const char *xevb_cpuset_str(const struct xevb_cpuset *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (unsigned c = 0; c < XEVB_DOCTOR_MAX_CPUS && off < len; c++) {
		unsigned e = c;

		if (!xevb_cpuset_has(s, c))
			continue;
		while (e + 1 < XEVB_DOCTOR_MAX_CPUS && xevb_cpuset_has(s, e + 1))
			e++;
		off += (size_t)snprintf(buf + off, len - off, e > c ? "%s%u-%u" : "%s%u", off ? "," : "", c, e);
		c = e;
	}
	if (!buf[0])
		snprintf(buf, len, "-");
	return buf;
}

static const char *queue_list(const struct xevb_doctor_plan *p, char *buf, size_t len)
{
	struct xevb_cpuset s = { 0 };

	for (int i = 0; i < p->n_queues; i++)
		xevb_cpuset_set(&s, p->queues[i]);
	return xevb_cpuset_str(&s, buf, len);
}

static bool plan_has_queue(const struct xevb_doctor_plan *p, int64_t q)
{
	for (int i = 0; i < p->n_queues; i++)
		if (p->queues[i] == q)
			return true;
	return false;
}

static bool has_cap(const struct xevb_doctor_facts *f, int bit)
{
	return (f->cap_eff >> bit) & 1;
}

__attribute__((format(printf, 3, 4))) static void set(struct xevb_doctor_check *c, enum xevb_verdict v,
						      const char *fmt, ...)
{
	va_list ap;

	c->verdict = v;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) static void fix(struct xevb_doctor_check *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->fix, sizeof(c->fix), fmt, ap);
	va_end(ap);
}

static const char *drv(const struct xevb_doctor_facts *f)
{
	return f->driver[0] ? f->driver : "(unknown)";
}

static const char *errname(int err)
{
	return strerror(err);
}

uint64_t xevb_doctor_umem_bytes(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p)
{
	return (uint64_t)p->n_queues * p->frames_per_q * xevb_xsk_frame_size_for_mtu(f->mtu);
}

static void check_driver(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	set(c, XEVB_OK, "%s: driver %s%s, %u RX / %u TX queues, MTU %u", f->ifname, drv(f),
	    f->virtual_dev ? " (virtual device: no IRQs, rings or NUMA node of its own)" : "", f->rx_queues,
	    f->tx_queues, f->mtu);
}

static void check_xdp_native(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	const uint64_t need = XEVB_XDP_ACT_BASIC | XEVB_XDP_ACT_REDIRECT;

	if (f->xdp_feat_err) {
		set(c, XEVB_SKIP,
		    "the kernel gives no XDP feature flags for %s (netdev netlink family, "
		    "kernel 6.3+): %s; xevb build tries native mode and says so if it fails",
		    f->ifname, errname(f->xdp_feat_err));
		return;
	}
	if ((f->xdp_features & need) == need) {
		set(c, XEVB_OK, "native XDP with redirect into AF_XDP sockets (driver %s)", drv(f));
		return;
	}
	if (f->xdp_features & XEVB_XDP_ACT_BASIC)
		set(c, XEVB_FAIL,
		    "driver %s runs XDP programs natively but cannot redirect: no AF_XDP "
		    "socket receives in native mode",
		    drv(f));
	else
		set(c, XEVB_FAIL,
		    "driver %s has no native XDP: the XDP builder attaches only in generic "
		    "(skb) mode, after the kernel's copy into an skb",
		    drv(f));
	fix(c, "xevb build --dev %s --tune xdp-mode=generic (slower), or --mode socket", f->ifname);
}

static void check_xdp_zerocopy(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	if (f->xdp_feat_err) {
		set(c, XEVB_SKIP,
		    "no XDP feature flags (%s): xevb build reports zero-copy per queue when "
		    "it binds",
		    errname(f->xdp_feat_err));
		return;
	}
	if (f->xdp_features & XEVB_XDP_ACT_XSK_ZEROCOPY) {
		set(c, XEVB_OK,
		    "AF_XDP zero-copy: the NIC writes frames straight into the UMEM "
		    "(up to %u buffers per packet)",
		    f->xdp_zc_max_segs);
		return;
	}
	set(c, XEVB_WARN,
	    "AF_XDP in copy mode only: the kernel copies every frame into the UMEM "
	    "(one copy per frame the builder otherwise avoids)%s",
	    f->virtual_dev ? "; a virtual device never has zero-copy" : "");
	fix(c, "none on %s: a NIC whose driver reports xsk-zerocopy (ethtool -i %s names the driver)", f->ifname,
	    f->ifname);
}

static void check_mtu(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	bool sg = f->xdp_features & XEVB_XDP_ACT_RX_SG;

	if (f->mtu <= XEVB_DOCTOR_MTU_LINEAR) {
		set(c, XEVB_OK, "MTU %u: every frame fits one XDP buffer (multi-buffer not needed; %s)", f->mtu,
		    f->xdp_feat_err ? "driver support unknown" :
		    sg              ? "driver has it" :
				      "driver lacks it");
		return;
	}
	if (f->xdp_feat_err) {
		set(c, XEVB_WARN,
		    "MTU %u needs multi-buffer XDP (frames above %u bytes span frags); "
		    "whether the driver has it is unknown (%s)",
		    f->mtu, XEVB_DOCTOR_MTU_LINEAR, errname(f->xdp_feat_err));
		fix(c, "ip link set dev %s mtu %u", f->ifname, XEVB_DOCTOR_MTU_LINEAR);
		return;
	}
	if (!sg) {
		set(c, XEVB_FAIL,
		    "MTU %u needs multi-buffer XDP (frames above %u bytes span frags), which "
		    "driver %s lacks: jumbo MEPs never reach the builder",
		    f->mtu, XEVB_DOCTOR_MTU_LINEAR, drv(f));
		fix(c, "ip link set dev %s mtu %u (or xevb build --mode socket)", f->ifname,
		    XEVB_DOCTOR_MTU_LINEAR);
		return;
	}
	if ((f->xdp_features & XEVB_XDP_ACT_XSK_ZEROCOPY) && f->xdp_zc_max_segs <= 1) {
		set(c, XEVB_WARN,
		    "MTU %u: multi-buffer XDP yes, but zero-copy takes one buffer per packet "
		    "(xdp_zc_max_segs %u): the multi-buffer AF_XDP socket binds in copy mode",
		    f->mtu, f->xdp_zc_max_segs);
		fix(c, "ip link set dev %s mtu %u to keep zero-copy", f->ifname, XEVB_DOCTOR_MTU_LINEAR);
		return;
	}
	set(c, XEVB_OK, "MTU %u: multi-buffer XDP%s", f->mtu,
	    f->xdp_features & XEVB_XDP_ACT_XSK_ZEROCOPY ? ", zero-copy across buffers too" : "");
}

static void check_queues(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			 struct xevb_doctor_check *c)
{
	char ql[128], ch[96] = "";
	int top = -1;

	for (int i = 0; i < p->n_queues; i++)
		if (p->queues[i] >= f->rx_queues && p->queues[i] > top)
			top = p->queues[i];
	if (!f->channels_err)
		snprintf(ch, sizeof(ch), "; channels: %u combined (max %u), %u rx-only (max %u)", f->ch_combined,
			 f->ch_max_combined, f->ch_rx, f->ch_max_rx);
	queue_list(p, ql, sizeof(ql));
	if (top < 0) {
		set(c, XEVB_OK, "the builder's queues %s exist: %u RX / %u TX queues%s", ql, f->rx_queues,
		    f->tx_queues, ch);
		return;
	}
	set(c, XEVB_FAIL,
	    "%s has %u RX queues; the builder's queue %d does not exist: its AF_XDP "
	    "socket cannot bind%s",
	    f->ifname, f->rx_queues, top, ch);
	if (!f->channels_err && f->ch_max_combined > (uint32_t)top)
		fix(c, "ethtool -L %s combined %d", f->ifname, top + 1);
	else
		fix(c, "xevb build --queues %s (the queues %s has)",
		    f->rx_queues > 1 ? (snprintf(ql, sizeof(ql), "0-%u", f->rx_queues - 1), ql) : "0", f->ifname);
}

static void check_rings(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	uint32_t want;

	if (f->rings_err) {
		set(c, XEVB_SKIP, "%s reports no ring sizes (%s)%s", f->ifname, errname(f->rings_err),
		    f->virtual_dev ? ": a virtual device's queue is its peer's backlog" : "");
		return;
	}
	want = f->ring_rx_max < RING_GOOD ? f->ring_rx_max : RING_GOOD;
	if (f->ring_rx >= want) {
		set(c, XEVB_OK, "RX ring %u descriptors (max %u), TX %u (max %u)", f->ring_rx, f->ring_rx_max,
		    f->ring_tx, f->ring_tx_max);
		return;
	}
	set(c, XEVB_WARN,
	    "RX ring %u descriptors (max %u): a burst of more than %u frames between two "
	    "polls of a queue is dropped in the NIC",
	    f->ring_rx, f->ring_rx_max, f->ring_rx);
	fix(c, "ethtool -G %s rx %u", f->ifname, want);
}

/* Would the rule take a packet of this transport? Address fields are ignored:
 * a rule per source still steers DAQ traffic. */
static bool rule_takes(const struct xevb_doctor_rule *r, bool udp, uint8_t proto, uint16_t port)
{
	if (r->kind == XEVB_RULE_IP4_PROTO)
		return (r->proto & r->proto_mask) == ((udp ? 17 : proto) & r->proto_mask);
	if (r->kind == XEVB_RULE_UDP4)
		return udp && (r->dport & r->dport_mask) == (port & r->dport_mask);
	return false;
}

/* The rule the NIC applies first (lowest location) to the transport, or NULL. */
static const struct xevb_doctor_rule *first_rule(const struct xevb_doctor_facts *f, bool udp, uint8_t proto,
						 uint16_t port)
{
	const struct xevb_doctor_rule *best = NULL;

	for (int i = 0; i < f->n_rules; i++)
		if (rule_takes(&f->rules[i], udp, proto, port) && (!best || f->rules[i].loc < best->loc))
			best = &f->rules[i];
	return best;
}

/* The queues the RSS table spreads flows over that no builder socket serves. */
static void rss_unserved(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			 struct xevb_cpuset *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < f->indir_size && i < XEVB_DOCTOR_MAX_INDIR; i++)
		if (!plan_has_queue(p, f->indir[i]))
			xevb_cpuset_set(out, f->indir[i]);
}

static bool plan_is_prefix(const struct xevb_doctor_plan *p)
{
	for (int i = 0; i < p->n_queues; i++)
		if (p->queues[i] != i)
			return false;
	return true;
}

/* RSS over the served queues only, for devices without n-tuple rules. */
static void rss_weights_fix(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p, char *fx,
			    size_t fxlen)
{
	size_t off = (size_t)snprintf(fx, fxlen, "ethtool -X %s weight", f->ifname);
	int top = 0;

	for (int i = 0; i < p->n_queues; i++)
		if (p->queues[i] > top)
			top = p->queues[i];
	for (int q = 0; q <= top && off < fxlen; q++)
		off += (size_t)snprintf(fx + off, fxlen - off, " %d", plan_has_queue(p, q));
}

/* One transport's steering: verdict and text appended to c. */
static enum xevb_verdict steer_one(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p, bool udp,
				   char *txt, size_t len, char *fx, size_t fxlen)
{
	const struct xevb_doctor_rule *r = first_rule(f, udp, p->ip_proto, p->udp_port);
	char what[32], qs[128], ql[128];
	struct xevb_cpuset miss;

	if (udp)
		snprintf(what, sizeof(what), "UDP port %u", p->udp_port);
	else
		snprintf(what, sizeof(what), "IP protocol %u", p->ip_proto);
	queue_list(p, ql, sizeof(ql));
	if (r && r->rss_ctx) {
		snprintf(txt, len,
			 "%s: rule %u steers it into an RSS context (queue offset %d): check "
			 "that context's queues are %s",
			 what, r->loc, r->queue, ql);
		return XEVB_WARN;
	}
	if (r && r->queue != XEVB_RULE_DROP && plan_has_queue(p, r->queue)) {
		snprintf(txt, len, "%s: rule %u steers it to queue %d, served", what, r->loc, r->queue);
		return XEVB_OK;
	}
	if (r) {
		if (r->queue == XEVB_RULE_DROP)
			snprintf(txt, len, "%s: rule %u drops it: those MEPs never reach the builder", what,
				 r->loc);
		else
			snprintf(txt, len,
				 "%s: rule %u steers it to queue %d, which no builder socket "
				 "serves: those MEPs never reach the builder",
				 what, r->loc, r->queue);
		snprintf(fx, fxlen, "ethtool -N %s delete %u; ethtool -N %s flow-type %s %u action %u", f->ifname,
			 r->loc, f->ifname, udp ? "udp4 dst-port" : "ip4 l4proto", udp ? p->udp_port : p->ip_proto,
			 p->queues[0]);
		return XEVB_FAIL;
	}
	if (f->indir_err) {
		snprintf(txt, len,
			 "%s: no n-tuple rule%s%s%s, no RSS table to read (%s): which of the "
			 "%u queues its flows reach is unknown",
			 what, f->ntuple_err ? " (none to read: " : "",
			 f->ntuple_err ? errname(f->ntuple_err) : "", f->ntuple_err ? ")" : "",
			 errname(f->indir_err), f->rx_queues);
		return XEVB_SKIP;
	}
	rss_unserved(f, p, &miss);
	if (!xevb_cpuset_count(&miss)) {
		snprintf(txt, len, "%s: RSS spreads flows only over served queues", what);
		return XEVB_OK;
	}
	snprintf(txt, len,
		 "%s: no n-tuple rule steers it, and RSS spreads flows over queues %s that "
		 "no builder socket serves: MEPs hashed there never reach the builder",
		 what, xevb_cpuset_str(&miss, qs, sizeof(qs)));
	if (plan_is_prefix(p))
		snprintf(fx, fxlen, "ethtool -X %s equal %d", f->ifname, p->n_queues);
	else if (f->ntuple_err)
		rss_weights_fix(f, p, fx, fxlen);
	else if (udp)
		snprintf(fx, fxlen,
			 "ethtool -K %s ntuple on; ethtool -N %s flow-type udp4 dst-port %u "
			 "action %u",
			 f->ifname, f->ifname, p->udp_port, p->queues[0]);
	else
		snprintf(fx, fxlen,
			 "ethtool -K %s ntuple on; ethtool -N %s flow-type ip4 l4proto %u "
			 "action %u",
			 f->ifname, f->ifname, p->ip_proto, p->queues[0]);
	return XEVB_FAIL;
}

static enum xevb_verdict worse(enum xevb_verdict a, enum xevb_verdict b)
{
	static const int rank[] = { [XEVB_OK] = 0, [XEVB_SKIP] = 1, [XEVB_WARN] = 2, [XEVB_FAIL] = 3 };

	return rank[b] > rank[a] ? b : a;
}

static void check_steering(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			   struct xevb_doctor_check *c)
{
	char t[2][512] = { "", "" }, fx[2][320] = { "", "" }, ql[128];
	enum xevb_verdict v = XEVB_OK;
	bool all = true;

	for (uint32_t q = 0; q < f->rx_queues && q < XEVB_DOCTOR_MAX_Q; q++)
		all = all && plan_has_queue(p, q);
	if (all) {
		set(c, XEVB_OK,
		    "every RX queue of %s (%u) has a builder socket: MEPs reach the builder "
		    "whatever RSS or n-tuple rules do",
		    f->ifname, f->rx_queues);
		return;
	}
	if (p->ip_proto)
		v = worse(v, steer_one(f, p, false, t[0], sizeof(t[0]), fx[0], sizeof(fx[0])));
	if (p->udp_port)
		v = worse(v, steer_one(f, p, true, t[1], sizeof(t[1]), fx[1], sizeof(fx[1])));
	set(c, v, "builder queues %s of %u: %s%s%s", queue_list(p, ql, sizeof(ql)), f->rx_queues, t[0],
	    t[0][0] && t[1][0] ? "; " : "", t[1]);
	fix(c, "%s%s%s", fx[0], fx[0][0] && fx[1][0] ? "; " : "", fx[1]);
}

static void check_hugepages(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			    struct xevb_doctor_check *c)
{
	uint64_t page, per_q, need;

	if (f->hugepages_err || !f->hugepage_kb) {
		set(c, XEVB_SKIP, "no huge page figures in /proc/meminfo (%s)",
		    errname(f->hugepages_err ? f->hugepages_err : ENOENT));
		return;
	}
	page = f->hugepage_kb * 1024;
	per_q = ((uint64_t)p->frames_per_q * xevb_xsk_frame_size_for_mtu(f->mtu) + page - 1) / page;
	need = per_q * (uint64_t)p->n_queues;
	if (f->hugepages_free >= need) {
		set(c, XEVB_OK, "%llu of %llu huge pages (%llu kB) free; the UMEM of %d queue(s) takes %llu pages",
		    (unsigned long long)f->hugepages_free, (unsigned long long)f->hugepages_total,
		    (unsigned long long)f->hugepage_kb, p->n_queues, (unsigned long long)need);
		return;
	}
	set(c, XEVB_WARN,
	    "%llu huge pages (%llu kB) free, the UMEM of %d queue(s) takes %llu pages: it "
	    "falls back to normal pages (more TLB misses per frame)",
	    (unsigned long long)f->hugepages_free, (unsigned long long)f->hugepage_kb, p->n_queues,
	    (unsigned long long)need);
	fix(c, "sysctl -w vm.nr_hugepages=%llu",
	    (unsigned long long)(f->hugepages_total + need - f->hugepages_free));
}

static void check_irqbalance(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	if (!f->irqbalance_pid) {
		set(c, XEVB_OK, "irqbalance is not running: queue interrupts stay where they are pinned");
		return;
	}
	set(c, XEVB_WARN,
	    "irqbalance runs (pid %d): it moves the queues' interrupts every few "
	    "seconds, away from the builder's CPUs (a gateway measured steadier rates with it off "
	    "and the interrupts pinned)",
	    f->irqbalance_pid);
	fix(c, "systemctl disable --now irqbalance (or list the builder's CPUs in IRQBALANCE_BANNED_CPULIST)");
}

/* The interrupt of queue q, or NULL. */
static const struct xevb_doctor_irq *queue_irq(const struct xevb_doctor_facts *f, int q)
{
	for (int i = 0; i < f->n_irqs; i++)
		if (f->irqs[i].queue == q)
			return &f->irqs[i];
	return NULL;
}

static void check_irq_affinity(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			       struct xevb_doctor_check *c)
{
	bool cpus = xevb_cpuset_count(&p->cpus) > 0;
	size_t dl = 0, fl = 0;
	int bad = 0, unknown = 0;
	char a[128];

	if (!f->n_irqs) {
		set(c, XEVB_SKIP, "%s has no interrupts of its own%s", f->ifname,
		    f->virtual_dev ? " (virtual device: its frames arrive in the sender's context)" : "");
		return;
	}
	c->detail[0] = c->fix[0] = 0;
	for (int i = 0; i < p->n_queues; i++) {
		const struct xevb_doctor_irq *irq = queue_irq(f, p->queues[i]);
		int want = cpus ? cpuset_nth(&p->cpus, (unsigned)i) : -1;
		bool ok;

		if (!irq) {
			unknown++;
			continue;
		}
		xevb_cpuset_str(&irq->affinity, a, sizeof(a));
		ok = xevb_cpuset_count(&irq->affinity) == 1 && (!cpus || cpuset_subset(&irq->affinity, &p->cpus));
		if (dl < sizeof(c->detail))
			dl += (size_t)snprintf(c->detail + dl, sizeof(c->detail) - dl,
					       "%squeue %u: IRQ %u on CPU(s) %s%s", dl ? "; " : "", p->queues[i],
					       irq->irq, a,
					       ok   ? "" :
					       cpus ? " (not pinned to one of the builder's CPUs)" :
						      " (not pinned to one CPU)");
		if (ok)
			continue;
		bad++;
		if (want < 0)
			want = cpuset_nth(&irq->affinity, 0);
		if (fl < sizeof(c->fix))
			fl += (size_t)snprintf(c->fix + fl, sizeof(c->fix) - fl,
					       "%secho %d > /proc/irq/%u/smp_affinity_list", fl ? "; " : "", want,
					       irq->irq);
	}
	if (unknown == p->n_queues) {
		set(c, XEVB_SKIP,
		    "%d interrupts, none named after a queue (TxRx-N, rx-N, compN): which "
		    "serves the builder's queues is unknown",
		    f->n_irqs);
		return;
	}
	c->verdict = bad || unknown ? XEVB_WARN : XEVB_OK;
	if (unknown && dl < sizeof(c->detail))
		snprintf(c->detail + dl, sizeof(c->detail) - dl, "; %d queue(s) without a named interrupt",
			 unknown);
	if (!cpus && dl < sizeof(c->detail))
		snprintf(c->detail + strlen(c->detail), sizeof(c->detail) - strlen(c->detail),
			 " (give --cpus, the builder's, to compare)");
}

/* The CPUs of set whose node is not node. */
static void off_node(const struct xevb_doctor_facts *f, const struct xevb_cpuset *set_, int node,
		     struct xevb_cpuset *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned cpu = 0; cpu < XEVB_DOCTOR_MAX_CPUS; cpu++)
		if (xevb_cpuset_has(set_, cpu) && f->cpu_node[cpu] >= 0 && f->cpu_node[cpu] != node)
			xevb_cpuset_set(out, cpu);
}

static void check_numa(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
		       struct xevb_doctor_check *c)
{
	struct xevb_cpuset near = { 0 }, far, irqs = { 0 }, irq_far;
	char s1[128], s2[128], parts[320];

	if (f->numa_node < 0) {
		set(c, XEVB_SKIP, "%s reports no NUMA node (%s)", f->ifname,
		    f->virtual_dev ? "virtual device" : "single-node machine or firmware without one");
		return;
	}
	if (f->n_nodes <= 1) {
		set(c, XEVB_OK, "one NUMA node: every CPU is near %s", f->ifname);
		return;
	}
	for (unsigned cpu = 0; cpu < XEVB_DOCTOR_MAX_CPUS; cpu++)
		if (f->cpu_node[cpu] == f->numa_node)
			xevb_cpuset_set(&near, cpu);
	for (int i = 0; i < p->n_queues; i++) {
		const struct xevb_doctor_irq *irq = queue_irq(f, p->queues[i]);

		for (size_t w = 0; irq && w < sizeof(irqs.w) / sizeof(irqs.w[0]); w++)
			irqs.w[w] |= irq->affinity.w[w];
	}
	off_node(f, &p->cpus, f->numa_node, &far);
	off_node(f, &irqs, f->numa_node, &irq_far);
	xevb_cpuset_str(&near, s1, sizeof(s1));
	if (!xevb_cpuset_count(&far) && !xevb_cpuset_count(&irq_far)) {
		set(c, XEVB_OK, "%s on node %d (CPUs %s)%s", f->ifname, f->numa_node, s1,
		    xevb_cpuset_count(&p->cpus) ? "; the builder's CPUs and queue interrupts are there" :
						  "; queue interrupts there (give --cpus to check the builder's)");
		return;
	}
	parts[0] = 0;
	if (xevb_cpuset_count(&far))
		snprintf(parts, sizeof(parts), "the builder's CPUs %s are not",
			 xevb_cpuset_str(&far, s2, sizeof(s2)));
	if (xevb_cpuset_count(&irq_far))
		snprintf(parts + strlen(parts), sizeof(parts) - strlen(parts),
			 "%squeue interrupts on CPUs %s are not", parts[0] ? " and " : "",
			 xevb_cpuset_str(&irq_far, s2, sizeof(s2)));
	set(c, XEVB_WARN,
	    "%s is on node %d (CPUs %s), but %s: every frame crosses the interconnect "
	    "between nodes",
	    f->ifname, f->numa_node, s1, parts);
	fix(c,
	    "xevb build --tune cpus=<CPUs of node %d, from %s> and pin the queue IRQs there "
	    "(echo CPU > /proc/irq/N/smp_affinity_list)",
	    f->numa_node, s1);
}

static void check_governor(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			   struct xevb_doctor_check *c)
{
	const struct xevb_cpuset *cpus = xevb_cpuset_count(&p->cpus) ? &p->cpus : &f->online;
	struct xevb_cpuset slow = { 0 };
	const char *gov = NULL;
	char s[128];
	int known = 0;

	for (unsigned cpu = 0; cpu < XEVB_DOCTOR_MAX_CPUS; cpu++) {
		if (!xevb_cpuset_has(cpus, cpu) || !f->governor[cpu][0])
			continue;
		known++;
		if (strcmp(f->governor[cpu], "performance")) {
			xevb_cpuset_set(&slow, cpu);
			gov = f->governor[cpu];
		}
	}
	if (!known) {
		set(c, XEVB_SKIP,
		    "no cpufreq governor on CPUs %s (a virtual machine, or the firmware "
		    "sets the clock)",
		    xevb_cpuset_str(cpus, s, sizeof(s)));
		return;
	}
	if (!gov) {
		set(c, XEVB_OK, "governor 'performance' on the %d CPU(s) checked", known);
		return;
	}
	set(c, XEVB_WARN,
	    "CPUs %s run governor '%s': the clock drops between bursts and the first "
	    "frames of the next one wait for it",
	    xevb_cpuset_str(&slow, s, sizeof(s)), gov);
	fix(c, "cpupower -c %s frequency-set -g performance", s);
}

static void check_busy_poll(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			    struct xevb_doctor_check *c)
{
	bool set_up = f->napi_defer_hard_irqs && f->gro_flush_timeout_ns;

	if (f->busy_poll_err) {
		set(c, XEVB_SKIP, "cannot read %s's NAPI settings (%s)", f->ifname, errname(f->busy_poll_err));
		return;
	}
	set(c, set_up || !p->busy_poll ? XEVB_OK : XEVB_WARN,
	    "napi_defer_hard_irqs %u, gro_flush_timeout %llu ns, net.core.busy_poll %u us, busy_read %u us: %s",
	    f->napi_defer_hard_irqs, (unsigned long long)f->gro_flush_timeout_ns, f->busy_poll_us, f->busy_read_us,
	    set_up       ? "xevb build --tune busy-poll=1 keeps the queue interrupts off while it polls" :
	    p->busy_poll ? "xevb build --tune busy-poll=1 polls, but every frame still raises an interrupt" :
			   "only xevb build --tune busy-poll=1 needs them (doctor --busy-poll checks for it)");
	if (!set_up && p->busy_poll)
		fix(c,
		    "echo 2 > /sys/class/net/%s/napi_defer_hard_irqs; echo 200000 > "
		    "/sys/class/net/%s/gro_flush_timeout",
		    f->ifname, f->ifname);
}

static void check_memlock(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			  struct xevb_doctor_check *c)
{
	uint64_t need = xevb_doctor_umem_bytes(f, p);

	if (has_cap(f, CAP_IPC_LOCK_BIT)) {
		set(c, XEVB_OK, "CAP_IPC_LOCK: the UMEM (%llu MiB) is pinned without a limit",
		    (unsigned long long)(need >> 20));
		return;
	}
	if (f->memlock_bytes >= need) {
		set(c, XEVB_OK, "RLIMIT_MEMLOCK %s covers the UMEM (%llu MiB)",
		    f->memlock_bytes == UINT64_MAX ? "unlimited" : "", (unsigned long long)(need >> 20));
		return;
	}
	set(c, XEVB_FAIL,
	    "RLIMIT_MEMLOCK %llu KiB is below the UMEM's %llu KiB and there is no "
	    "CAP_IPC_LOCK: registering the UMEM fails",
	    (unsigned long long)(f->memlock_bytes >> 10), (unsigned long long)(need >> 10));
	fix(c,
	    "give it CAP_IPC_LOCK (as the capabilities check says), or ulimit -l unlimited (systemd: "
	    "LimitMEMLOCK=infinity), or run as root");
}

/* What `xevb build` needs (privdrop.h): CAP_IPC_LOCK has the memlock check. */
static void check_caps(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	char missing[640];

	if (!xevb_build_caps_missing(f->cap_eff, 1ull << CAP_IPC_LOCK_BIT, missing, sizeof(missing))) {
		set(c, XEVB_OK,
		    "CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN and CAP_NET_RAW%s: xevb build can load and attach "
		    "its program and open its sockets%s",
		    has_cap(f, CAP_BPF_BIT) && has_cap(f, CAP_PERFMON_BIT) ? "" :
									     " (CAP_SYS_ADMIN for the first two)",
		    has_cap(f, CAP_SYS_ADMIN_BIT) ?
			    "" :
			    "; without CAP_SYS_ADMIN it attaches alone: another XDP program on the device "
			    "cannot stay beside it (libxdp's dispatcher needs it)");
		return;
	}
	set(c, XEVB_FAIL, "this process lacks %s: xevb build cannot start", missing);
	fix(c,
	    "run as root, or: setcap cap_bpf,cap_perfmon,cap_net_admin,cap_net_raw,cap_ipc_lock+ep $(command -v xevb) "
	    "(a unit: AmbientCapabilities=, as xevb-build@.service)");
}

/* The interface lock the builder takes first: where this uid cannot write, nothing starts. */
static void check_run_dir(const struct xevb_doctor_facts *f, struct xevb_doctor_check *c)
{
	if (!f->run_dir_err) {
		set(c, XEVB_OK, "%s %s by uid %u: the builder's lock and statistics files", f->run_dir,
		    f->run_dir_missing ? "is missing; it can be created" : "is writable", f->uid);
		return;
	}
	set(c, XEVB_FAIL, "%s %s uid %u (%s): the builder cannot take its interface lock", f->run_dir,
	    f->run_dir_missing ? "is missing and cannot be created by" : "is not writable by", f->uid,
	    strerror(f->run_dir_err));
	fix(c,
	    "a unit: RuntimeDirectory=xevb, as xevb-build@.service; else install -d -o $(id -un) -m 0700 %s "
	    "(or XEVB_RUN_DIR=DIR for every xevb command)",
	    f->run_dir);
}

void xevb_doctor_decide(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			struct xevb_doctor_check out[XEVB_CHK__COUNT])
{
	static const char *const names[XEVB_CHK__COUNT] = {
		[XEVB_CHK_DRIVER] = "driver",
		[XEVB_CHK_XDP_NATIVE] = "xdp_native",
		[XEVB_CHK_XDP_ZEROCOPY] = "xdp_zerocopy",
		[XEVB_CHK_MTU] = "mtu",
		[XEVB_CHK_QUEUES] = "queues",
		[XEVB_CHK_RINGS] = "rings",
		[XEVB_CHK_STEERING] = "steering",
		[XEVB_CHK_HUGEPAGES] = "hugepages",
		[XEVB_CHK_IRQBALANCE] = "irqbalance",
		[XEVB_CHK_IRQ_AFFINITY] = "irq_affinity",
		[XEVB_CHK_NUMA] = "numa",
		[XEVB_CHK_GOVERNOR] = "cpu_governor",
		[XEVB_CHK_BUSY_POLL] = "busy_poll",
		[XEVB_CHK_MEMLOCK] = "memlock",
		[XEVB_CHK_CAPS] = "capabilities",
		[XEVB_CHK_RUN_DIR] = "run_dir",
	};

	memset(out, 0, sizeof(out[0]) * XEVB_CHK__COUNT);
	for (int i = 0; i < XEVB_CHK__COUNT; i++)
		out[i].name = names[i];
	check_driver(f, &out[XEVB_CHK_DRIVER]);
	check_xdp_native(f, &out[XEVB_CHK_XDP_NATIVE]);
	check_xdp_zerocopy(f, &out[XEVB_CHK_XDP_ZEROCOPY]);
	check_mtu(f, &out[XEVB_CHK_MTU]);
	check_queues(f, p, &out[XEVB_CHK_QUEUES]);
	check_rings(f, &out[XEVB_CHK_RINGS]);
	check_steering(f, p, &out[XEVB_CHK_STEERING]);
	check_hugepages(f, p, &out[XEVB_CHK_HUGEPAGES]);
	check_irqbalance(f, &out[XEVB_CHK_IRQBALANCE]);
	check_irq_affinity(f, p, &out[XEVB_CHK_IRQ_AFFINITY]);
	check_numa(f, p, &out[XEVB_CHK_NUMA]);
	check_governor(f, p, &out[XEVB_CHK_GOVERNOR]);
	check_busy_poll(f, p, &out[XEVB_CHK_BUSY_POLL]);
	check_memlock(f, p, &out[XEVB_CHK_MEMLOCK]);
	check_caps(f, &out[XEVB_CHK_CAPS]);
	check_run_dir(f, &out[XEVB_CHK_RUN_DIR]);
}

const char *xevb_verdict_name(enum xevb_verdict v)
{
	static const char *const n[] = { "ok", "warn", "fail", "skip" };

	return n[v];
}

void xevb_doctor_print(FILE *out, const struct xevb_doctor_facts *f, const struct xevb_doctor_check *c, int n)
{
	int count[4] = { 0 };

	fprintf(out, "xevb doctor: %s (driver %s)\n", f->ifname, f->driver[0] ? f->driver : "unknown");
	for (int i = 0; i < n; i++) {
		count[c[i].verdict]++;
		fprintf(out, "%-4s  %-13s %s%s%s\n", xevb_verdict_name(c[i].verdict), c[i].name, c[i].detail,
			c[i].fix[0] ? "; fix: " : "", c[i].fix);
	}
	fprintf(out, "summary: %d ok, %d warn, %d fail, %d skip\n", count[XEVB_OK], count[XEVB_WARN],
		count[XEVB_FAIL], count[XEVB_SKIP]);
}

void xevb_doctor_json(FILE *out, const struct xevb_doctor_facts *f, const struct xevb_doctor_check *c, int n)
{
	int count[4] = { 0 };

	fprintf(out, "{\"dev\":");
	xevb_json_str(out, f->ifname);
	fprintf(out, ",\"driver\":");
	xevb_json_str(out, f->driver);
	fprintf(out, ",\"xdp_features\":%llu,\"xdp_zc_max_segs\":%u,\"checks\":[",
		(unsigned long long)f->xdp_features, f->xdp_zc_max_segs);
	for (int i = 0; i < n; i++) {
		count[c[i].verdict]++;
		fprintf(out, "%s{\"name\":", i ? "," : "");
		xevb_json_str(out, c[i].name);
		fprintf(out, ",\"verdict\":\"%s\",\"detail\":", xevb_verdict_name(c[i].verdict));
		xevb_json_str(out, c[i].detail);
		fprintf(out, ",\"fix\":");
		xevb_json_str(out, c[i].fix);
		fputc('}', out);
	}
	fprintf(out, "],\"summary\":{\"ok\":%d,\"warn\":%d,\"fail\":%d,\"skip\":%d}}\n", count[XEVB_OK],
		count[XEVB_WARN], count[XEVB_FAIL], count[XEVB_SKIP]);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb doctor`: will this machine and this device give the builder what
 * it needs? Two halves that never mix: gathering reads the system (netlink,
 * ethtool ioctls, /sys, /proc) into one plain struct of facts; deciding
 * turns those facts into verdicts with pure functions, so that every
 * decision is unit-tested on recorded facts of NICs this machine lacks.
 */
#ifndef XEVB_DOCTOR_H
#define XEVB_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The kernel's XDP feature flags (uapi linux/netdev.h, 6.3+). */
#define XEVB_XDP_ACT_BASIC        (1u << 0)
#define XEVB_XDP_ACT_REDIRECT     (1u << 1)
#define XEVB_XDP_ACT_NDO_XMIT     (1u << 2)
#define XEVB_XDP_ACT_XSK_ZEROCOPY (1u << 3)
#define XEVB_XDP_ACT_HW_OFFLOAD   (1u << 4)
#define XEVB_XDP_ACT_RX_SG        (1u << 5)
#define XEVB_XDP_ACT_NDO_XMIT_SG  (1u << 6)

/* Above this MTU a frame spans XDP frags: the program needs multi-buffer XDP. */
#define XEVB_DOCTOR_MTU_LINEAR 3498

#define XEVB_DOCTOR_MAX_Q     256
#define XEVB_DOCTOR_MAX_CPUS  1024
#define XEVB_DOCTOR_MAX_RULES 64
#define XEVB_DOCTOR_MAX_IRQS  256
#define XEVB_DOCTOR_MAX_INDIR 512

/* A CPU set, one bit per CPU. */
struct xevb_cpuset {
	uint64_t w[XEVB_DOCTOR_MAX_CPUS / 64];
};

/* An ethtool n-tuple rule, reduced to what decides whether it takes MEPs. */
enum xevb_rule_kind { XEVB_RULE_OTHER, XEVB_RULE_IP4_PROTO, XEVB_RULE_UDP4 };
#define XEVB_RULE_DROP (-1) /* action: discard */
struct xevb_doctor_rule {
	uint32_t loc;
	enum xevb_rule_kind kind;
	uint8_t proto, proto_mask;  /* IP4_PROTO */
	uint16_t dport, dport_mask; /* UDP4, host order */
	int32_t queue;              /* or XEVB_RULE_DROP */
	bool rss_ctx;               /* the queue is an offset in an RSS context */
};

/* One queue interrupt: its queue (-1: not a queue's) and where it may run. */
struct xevb_doctor_irq {
	unsigned irq;
	int queue;
	char name[48];
	struct xevb_cpuset affinity;
};

/* What the user told doctor about the builder it plans to run. */
struct xevb_doctor_plan {
	uint16_t queues[XEVB_DOCTOR_MAX_Q];
	int n_queues;
	struct xevb_cpuset cpus; /* empty: not given */
	uint8_t ip_proto;        /* 0: raw transport not used */
	uint16_t udp_port;       /* 0: UDP transport not used */
	uint32_t frames_per_q;
	bool busy_poll; /* the builder will run with --busy-poll */
};

/*
 * Everything gathered. An *_err field is 0 when the fact was read, else
 * the errno that kept it (EOPNOTSUPP: the driver or kernel has no such
 * interface), and its check says so instead of guessing.
 */
struct xevb_doctor_facts {
	char ifname[32];
	int ifindex;
	char driver[32];
	bool virtual_dev; /* no parent device (veth, bridge, ...) */

	int xdp_feat_err;
	uint64_t xdp_features; /* XEVB_XDP_ACT_* */
	uint32_t xdp_zc_max_segs;

	uint32_t rx_queues, tx_queues; /* real queue counts (sysfs queues/) */
	int channels_err;
	uint32_t ch_combined, ch_rx, ch_max_combined, ch_max_rx;
	int rings_err;
	uint32_t ring_rx, ring_rx_max, ring_tx, ring_tx_max;

	uint32_t mtu;

	int ntuple_err; /* reading the rules */
	bool ntuple_on; /* the ntuple feature is enabled */
	int n_rules;
	struct xevb_doctor_rule rules[XEVB_DOCTOR_MAX_RULES];
	int indir_err; /* the RSS indirection table */
	uint32_t indir_size;
	uint32_t indir[XEVB_DOCTOR_MAX_INDIR];

	int hugepages_err;
	uint64_t hugepages_total, hugepages_free, hugepage_kb;

	int irqbalance_pid; /* 0: not running */

	int n_irqs; /* the device's interrupts (0: none, as veth) */
	struct xevb_doctor_irq irqs[XEVB_DOCTOR_MAX_IRQS];

	int numa_node; /* of the device; -1: none reported */
	int n_nodes;
	int8_t cpu_node[XEVB_DOCTOR_MAX_CPUS]; /* -1: unknown */
	struct xevb_cpuset online;

	char governor[XEVB_DOCTOR_MAX_CPUS][16]; /* "": no cpufreq for that CPU */

	int busy_poll_err;
	uint32_t busy_poll_us, busy_read_us; /* net.core.busy_poll / busy_read */
	uint32_t napi_defer_hard_irqs;
	uint64_t gro_flush_timeout_ns;

	uint64_t memlock_bytes; /* RLIMIT_MEMLOCK, UINT64_MAX: unlimited */
	uint64_t cap_eff;       /* effective capabilities */

	/* The builder's lock and statistics directory (xevb_run_dir), for this uid. */
	char run_dir[192];
	uint32_t uid;
	bool run_dir_missing; /* not there: the builder creates it (in its parent) */
	int run_dir_err;      /* 0: writable (or creatable), else why not */
};

enum xevb_verdict { XEVB_OK, XEVB_WARN, XEVB_FAIL, XEVB_SKIP };

struct xevb_doctor_check {
	const char *name;
	enum xevb_verdict verdict;
	char detail[512];
	char fix[320]; /* "": nothing to do */
};

/* One check per decision, in report order. */
enum {
	XEVB_CHK_DRIVER,
	XEVB_CHK_XDP_NATIVE,
	XEVB_CHK_XDP_ZEROCOPY,
	XEVB_CHK_MTU,
	XEVB_CHK_QUEUES,
	XEVB_CHK_RINGS,
	XEVB_CHK_STEERING,
	XEVB_CHK_HUGEPAGES,
	XEVB_CHK_IRQBALANCE,
	XEVB_CHK_IRQ_AFFINITY,
	XEVB_CHK_NUMA,
	XEVB_CHK_GOVERNOR,
	XEVB_CHK_BUSY_POLL,
	XEVB_CHK_MEMLOCK,
	XEVB_CHK_CAPS,
	XEVB_CHK_RUN_DIR,
	XEVB_CHK__COUNT
};

static inline void xevb_cpuset_set(struct xevb_cpuset *s, unsigned cpu)
{
	if (cpu < XEVB_DOCTOR_MAX_CPUS)
		s->w[cpu / 64] |= 1ull << (cpu % 64);
}

static inline bool xevb_cpuset_has(const struct xevb_cpuset *s, unsigned cpu)
{
	return cpu < XEVB_DOCTOR_MAX_CPUS && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}

/* "0-3,8": false on junk. */
bool xevb_cpuset_parse(const char *s, struct xevb_cpuset *out);
unsigned xevb_cpuset_count(const struct xevb_cpuset *s);
/* "0-3,8" into buf ("-" when empty). */
const char *xevb_cpuset_str(const struct xevb_cpuset *s, char *buf, size_t len);

/* Gathering: reads the system; fails (-errno, message) only if IF is missing. */
int xevb_doctor_gather(const char *ifname, struct xevb_doctor_facts *f);

/*
 * The queue a vector's name gives: drivers name per-queue vectors with the
 * queue number last ("ice-eth0-TxRx-3", "eth0-rx-3", "mlx5_comp3@pci:...",
 * "virtio0-input.3"); -1 for the others (misc, async, tx-only, config).
 */
int xevb_doctor_irq_queue(const char *name);
/* A /proc/interrupts line (leading blanks skipped): its last column if it is IRQ irq's. */
bool xevb_doctor_irq_line_name(const char *line, unsigned irq, char *out, size_t len);

/* Deciding: pure. Fills out[XEVB_CHK__COUNT]. */
void xevb_doctor_decide(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p,
			struct xevb_doctor_check out[XEVB_CHK__COUNT]);
/* The UMEM bytes the builder maps for the plan (huge pages, memlock). */
uint64_t xevb_doctor_umem_bytes(const struct xevb_doctor_facts *f, const struct xevb_doctor_plan *p);

const char *xevb_verdict_name(enum xevb_verdict v);
void xevb_doctor_print(FILE *out, const struct xevb_doctor_facts *f, const struct xevb_doctor_check *c, int n);
void xevb_doctor_json(FILE *out, const struct xevb_doctor_facts *f, const struct xevb_doctor_check *c, int n);

#endif

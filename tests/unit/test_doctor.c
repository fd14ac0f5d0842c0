// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb doctor`'s decisions (user/ops/doctor.c) on recorded facts: a
 * zero-copy NIC set up for the builder (ice-like: every check ok), the same
 * NIC with one thing wrong at a time (no multi-buffer at MTU 9000, RSS not
 * steering, a rule to the wrong queue, IRQs on the wrong NUMA node, ...), a
 * mlx5-like NIC whose zero-copy takes one buffer per packet, and veth as
 * the testbed reports it.
 */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <arpa/inet.h>
#include "ops/doctor.h"
#include "ops/doctor_src.h"

TestSuite(doctor, .timeout = 10);

static struct xevb_doctor_facts F;
static struct xevb_doctor_plan P;
static struct xevb_doctor_check C[XEVB_CHK__COUNT];

#define ZC_NIC_FEATURES \
	(XEVB_XDP_ACT_BASIC | XEVB_XDP_ACT_REDIRECT | XEVB_XDP_ACT_NDO_XMIT | XEVB_XDP_ACT_XSK_ZEROCOPY | \
	 XEVB_XDP_ACT_RX_SG | XEVB_XDP_ACT_NDO_XMIT_SG)
#define CAPS_ROOT ((1ull << 12) | (1ull << 13) | (1ull << 14) | (1ull << 21) | (1ull << 38) | (1ull << 39))
/* What `xevb build` needs as a non-root user: CAP_NET_ADMIN, NET_RAW, IPC_LOCK, PERFMON, BPF. */
#define CAPS_BUILD ((1ull << 12) | (1ull << 13) | (1ull << 14) | (1ull << 38) | (1ull << 39))

static void cpus(struct xevb_cpuset *s, const char *list)
{
	cr_assert(xevb_cpuset_parse(list, s), "cpu list %s", list);
}

/* Two nodes of 8 CPUs each; the governor on every CPU. */
static void two_nodes(const char *governor)
{
	F.n_nodes = 2;
	memset(F.cpu_node, -1, sizeof(F.cpu_node));
	for (unsigned c = 0; c < 16; c++) {
		F.cpu_node[c] = (int8_t)(c / 8);
		snprintf(F.governor[c], sizeof(F.governor[c]), "%s", governor);
	}
	cpus(&F.online, "0-15");
}

/*
 * An ice-like E810 port as a gateway should have it: 8 combined channels,
 * zero-copy with multi-buffer, RX ring 4096, one n-tuple rule for IP
 * protocol 253 and one for UDP 23900 to queue 0, its queue interrupts
 * pinned one per CPU on node 0, huge pages reserved, NAPI deferral set.
 */
static void ice_good(void)
{
	memset(&F, 0, sizeof(F));
	snprintf(F.ifname, sizeof(F.ifname), "ens1f0");
	snprintf(F.driver, sizeof(F.driver), "ice");
	F.ifindex = 4;
	F.xdp_features = ZC_NIC_FEATURES;
	F.xdp_zc_max_segs = 8;
	F.rx_queues = F.tx_queues = 8;
	F.ch_combined = 8;
	F.ch_max_combined = 64;
	F.ring_rx = F.ring_tx = 4096;
	F.ring_rx_max = F.ring_tx_max = 8192;
	F.mtu = 1500;
	F.ntuple_on = true;
	F.n_rules = 2;
	F.rules[0] = (struct xevb_doctor_rule){
		.loc = 1, .kind = XEVB_RULE_IP4_PROTO, .proto = 253, .proto_mask = 0xff, .queue = 0
	};
	F.rules[1] = (struct xevb_doctor_rule){
		.loc = 2, .kind = XEVB_RULE_UDP4, .dport = 23900, .dport_mask = 0xffff, .queue = 0
	};
	F.indir_size = 128;
	for (uint32_t i = 0; i < F.indir_size; i++)
		F.indir[i] = i % 8;
	F.hugepages_total = F.hugepages_free = 1024;
	F.hugepage_kb = 2048;
	F.n_irqs = 9;
	F.irqs[0] = (struct xevb_doctor_irq){ .irq = 120, .queue = -1 };
	snprintf(F.irqs[0].name, sizeof(F.irqs[0].name), "ice-0000:3b:00.0:misc");
	cpus(&F.irqs[0].affinity, "0-15");
	for (int q = 0; q < 8; q++) {
		struct xevb_doctor_irq *irq = &F.irqs[q + 1];

		irq->irq = 121 + (unsigned)q;
		irq->queue = q;
		snprintf(irq->name, sizeof(irq->name), "ice-ens1f0-TxRx-%d", q);
		xevb_cpuset_set(&irq->affinity, 2 + (unsigned)q);
	}
	F.numa_node = 0;
	two_nodes("performance");
	snprintf(F.run_dir, sizeof(F.run_dir), "/run/xevb");
	F.napi_defer_hard_irqs = 2;
	F.gro_flush_timeout_ns = 200000;
	F.memlock_bytes = 8 << 20;
	F.cap_eff = CAPS_ROOT;

	memset(&P, 0, sizeof(P));
	P.n_queues = 1;
	P.queues[0] = 0;
	cpus(&P.cpus, "2");
	P.ip_proto = 253;
	P.udp_port = 23900;
	P.frames_per_q = 16384;
}

static void decide(void)
{
	xevb_doctor_decide(&F, &P, C);
}

static void expect(int chk, enum xevb_verdict v)
{
	cr_assert(eq(str, (char *)xevb_verdict_name(C[chk].verdict), (char *)xevb_verdict_name(v)), "%s: %s (%s)",
		  C[chk].name, C[chk].detail, C[chk].fix);
}

static void expect_fix(int chk, const char *part)
{
	cr_assert(strstr(C[chk].fix, part) != NULL, "%s fix '%s' lacks '%s'", C[chk].name, C[chk].fix, part);
}

static void expect_detail(int chk, const char *part)
{
	cr_assert(strstr(C[chk].detail, part) != NULL, "%s detail '%s' lacks '%s'", C[chk].name, C[chk].detail,
		  part);
}

static int count(enum xevb_verdict v)
{
	int n = 0;

	for (int i = 0; i < XEVB_CHK__COUNT; i++)
		n += C[i].verdict == v;
	return n;
}

Test(doctor, zero_copy_nic_set_up_right_is_all_ok)
{
	ice_good();
	decide();
	for (int i = 0; i < XEVB_CHK__COUNT; i++) {
		expect(i, XEVB_OK);
		cr_assert(eq(str, C[i].fix, ""), "%s: %s", C[i].name, C[i].fix);
		cr_assert(C[i].name && C[i].detail[0]);
	}
	expect_detail(XEVB_CHK_XDP_ZEROCOPY, "zero-copy");
	expect_detail(XEVB_CHK_STEERING, "IP protocol 253: rule 1 steers it to queue 0, served");
	expect_detail(XEVB_CHK_STEERING, "UDP port 23900: rule 2 steers it to queue 0, served");
	expect_detail(XEVB_CHK_IRQ_AFFINITY, "queue 0: IRQ 121 on CPU(s) 2");
}

Test(doctor, check_names_are_unique_and_stable)
{
	static const char *const want[] = { "driver",     "xdp_native",   "xdp_zerocopy", "mtu",
					    "queues",     "rings",        "steering",     "hugepages",
					    "irqbalance", "irq_affinity", "numa",         "cpu_governor",
					    "busy_poll",  "memlock",      "capabilities", "run_dir" };

	ice_good();
	decide();
	cr_assert(eq(int, XEVB_CHK__COUNT, (int)(sizeof(want) / sizeof(want[0]))));
	for (int i = 0; i < XEVB_CHK__COUNT; i++)
		cr_assert(eq(str, (char *)C[i].name, (char *)want[i]));
}

Test(doctor, jumbo_mtu_without_multibuffer_fails)
{
	ice_good();
	F.mtu = 9000;
	F.xdp_features &= ~(uint64_t)(XEVB_XDP_ACT_RX_SG | XEVB_XDP_ACT_NDO_XMIT_SG);
	decide();
	expect(XEVB_CHK_MTU, XEVB_FAIL);
	expect_fix(XEVB_CHK_MTU, "ip link set dev ens1f0 mtu 3498");
	cr_assert(eq(int, count(XEVB_FAIL), 1));
	/* At the largest linear MTU the same driver is fine. */
	F.mtu = XEVB_DOCTOR_MTU_LINEAR;
	decide();
	expect(XEVB_CHK_MTU, XEVB_OK);
	expect_detail(XEVB_CHK_MTU, "driver lacks it");
}

Test(doctor, mlx5_like_zero_copy_one_buffer_at_jumbo_mtu_warns)
{
	ice_good();
	snprintf(F.driver, sizeof(F.driver), "mlx5_core");
	F.mtu = 9000;
	F.xdp_zc_max_segs = 1;
	decide();
	expect(XEVB_CHK_MTU, XEVB_WARN);
	expect_detail(XEVB_CHK_MTU, "xdp_zc_max_segs 1");
	expect_fix(XEVB_CHK_MTU, "mtu 3498");
	F.xdp_zc_max_segs = 8;
	decide();
	expect(XEVB_CHK_MTU, XEVB_OK);
	expect_detail(XEVB_CHK_MTU, "zero-copy across buffers");
}

Test(doctor, rss_not_steering_fails_with_an_equal_table_fix)
{
	ice_good();
	F.n_rules = 0;
	P.n_queues = 2;
	P.queues[1] = 1;
	cpus(&P.cpus, "2-3");
	decide();
	expect(XEVB_CHK_STEERING, XEVB_FAIL);
	expect_detail(XEVB_CHK_STEERING, "RSS spreads flows over queues 2-7");
	expect_fix(XEVB_CHK_STEERING, "ethtool -X ens1f0 equal 2");
	/* An RSS table over the served queues only is enough. */
	for (uint32_t i = 0; i < F.indir_size; i++)
		F.indir[i] = i % 2;
	decide();
	expect(XEVB_CHK_STEERING, XEVB_OK);
}

Test(doctor, rss_not_steering_to_other_queues_gets_ntuple_rules)
{
	ice_good();
	F.n_rules = 0;
	P.queues[0] = 4;
	decide();
	expect(XEVB_CHK_STEERING, XEVB_FAIL);
	expect_fix(XEVB_CHK_STEERING, "ethtool -N ens1f0 flow-type ip4 l4proto 253 action 4");
	expect_fix(XEVB_CHK_STEERING, "ethtool -N ens1f0 flow-type udp4 dst-port 23900 action 4");
	/* UDP not used: only the raw rule is asked for. */
	P.udp_port = 0;
	decide();
	cr_assert(strstr(C[XEVB_CHK_STEERING].fix, "udp4") == NULL, "%s", C[XEVB_CHK_STEERING].fix);
}

Test(doctor, rule_to_an_unserved_queue_or_drop_fails)
{
	ice_good();
	F.rules[0].queue = 5;
	decide();
	expect(XEVB_CHK_STEERING, XEVB_FAIL);
	expect_detail(XEVB_CHK_STEERING, "rule 1 steers it to queue 5, which no builder socket serves");
	expect_fix(XEVB_CHK_STEERING,
		   "ethtool -N ens1f0 delete 1; ethtool -N ens1f0 flow-type ip4 l4proto 253 action 0");
	F.rules[0].queue = XEVB_RULE_DROP;
	decide();
	expect(XEVB_CHK_STEERING, XEVB_FAIL);
	expect_detail(XEVB_CHK_STEERING, "rule 1 drops it");
	/* A rule at a lower location that takes all UDP wins over rule 2. */
	ice_good();
	F.rules[2] = (struct xevb_doctor_rule){ .loc = 0, .kind = XEVB_RULE_UDP4, .dport_mask = 0, .queue = 3 };
	F.n_rules = 3;
	decide();
	expect(XEVB_CHK_STEERING, XEVB_FAIL);
	expect_detail(XEVB_CHK_STEERING, "UDP port 23900: rule 0 steers it to queue 3");
}

Test(doctor, steering_unknown_when_neither_rules_nor_rss_readable)
{
	ice_good();
	F.n_rules = 0;
	F.ntuple_err = EOPNOTSUPP;
	F.indir_err = EOPNOTSUPP;
	P.udp_port = 0;
	decide();
	expect(XEVB_CHK_STEERING, XEVB_SKIP);
	expect_detail(XEVB_CHK_STEERING,
		      "no n-tuple rule (none to read: Operation not supported), no RSS table to read");
}

Test(doctor, irqs_on_the_wrong_numa_node_warn)
{
	ice_good();
	/* queue 0's interrupt on CPU 9, node 1; the device on node 0 */
	memset(&F.irqs[1].affinity, 0, sizeof(F.irqs[1].affinity));
	xevb_cpuset_set(&F.irqs[1].affinity, 9);
	decide();
	expect(XEVB_CHK_IRQ_AFFINITY, XEVB_WARN);
	expect_fix(XEVB_CHK_IRQ_AFFINITY, "echo 2 > /proc/irq/121/smp_affinity_list");
	expect(XEVB_CHK_NUMA, XEVB_WARN);
	expect_detail(XEVB_CHK_NUMA, "queue interrupts on CPUs 9 are not");
	expect_fix(XEVB_CHK_NUMA, "node 0, from 0-7");
	cr_assert(eq(int, count(XEVB_FAIL), 0));
	/* The builder's CPUs on the far node too. */
	cpus(&P.cpus, "8");
	decide();
	expect_detail(XEVB_CHK_NUMA, "the builder's CPUs 8 are not and queue interrupts on CPUs 9 are not");
}

Test(doctor, unpinned_irq_warns_even_without_cpus)
{
	ice_good();
	memset(&P.cpus, 0, sizeof(P.cpus));
	cpus(&F.irqs[1].affinity, "0-15");
	decide();
	expect(XEVB_CHK_IRQ_AFFINITY, XEVB_WARN);
	expect_fix(XEVB_CHK_IRQ_AFFINITY, "echo 0 > /proc/irq/121/smp_affinity_list");
	expect_detail(XEVB_CHK_IRQ_AFFINITY, "give --cpus");
	expect(XEVB_CHK_NUMA, XEVB_WARN); /* 0-15 reaches node 1 */
}

Test(doctor, irqs_without_queue_names_skip)
{
	ice_good();
	for (int i = 0; i < F.n_irqs; i++)
		F.irqs[i].queue = -1;
	decide();
	expect(XEVB_CHK_IRQ_AFFINITY, XEVB_SKIP);
}

Test(doctor, veth_as_the_testbed_reports_it)
{
	memset(&F, 0, sizeof(F));
	snprintf(F.ifname, sizeof(F.ifname), "eth0");
	snprintf(F.driver, sizeof(F.driver), "veth");
	F.virtual_dev = true;
	F.xdp_features = XEVB_XDP_ACT_BASIC | XEVB_XDP_ACT_REDIRECT | XEVB_XDP_ACT_RX_SG;
	F.rx_queues = F.tx_queues = 1;
	F.ch_combined = 1;
	F.ch_max_combined = 1;
	F.rings_err = EOPNOTSUPP;
	F.ntuple_err = EOPNOTSUPP;
	F.indir_err = EOPNOTSUPP;
	F.mtu = 1500;
	F.numa_node = -1;
	F.n_nodes = 1;
	memset(F.cpu_node, 0, sizeof(F.cpu_node));
	cpus(&F.online, "0-1");
	F.hugepage_kb = 2048;
	F.memlock_bytes = 8 << 20;
	F.cap_eff = CAPS_ROOT;
	memset(&P, 0, sizeof(P));
	P.n_queues = 1;
	P.ip_proto = 253;
	P.udp_port = 23900;
	P.frames_per_q = 16384;
	decide();
	expect(XEVB_CHK_XDP_NATIVE, XEVB_OK);
	expect(XEVB_CHK_XDP_ZEROCOPY, XEVB_WARN);
	expect_detail(XEVB_CHK_XDP_ZEROCOPY, "virtual device");
	expect(XEVB_CHK_MTU, XEVB_OK);
	expect(XEVB_CHK_QUEUES, XEVB_OK);
	expect(XEVB_CHK_RINGS, XEVB_SKIP);
	expect(XEVB_CHK_STEERING, XEVB_OK);
	expect(XEVB_CHK_HUGEPAGES, XEVB_WARN);
	expect_fix(XEVB_CHK_HUGEPAGES, "sysctl -w vm.nr_hugepages=16");
	expect(XEVB_CHK_IRQ_AFFINITY, XEVB_SKIP);
	expect(XEVB_CHK_NUMA, XEVB_SKIP);
	expect(XEVB_CHK_GOVERNOR, XEVB_SKIP);
	expect(XEVB_CHK_BUSY_POLL, XEVB_OK);
	cr_assert(eq(int, count(XEVB_FAIL), 0));
	/* A second builder queue does not exist on a one-queue veth. */
	P.n_queues = 2;
	P.queues[1] = 1;
	decide();
	expect(XEVB_CHK_QUEUES, XEVB_FAIL);
	expect_fix(XEVB_CHK_QUEUES, "xevb build --queues 0 ");
}

Test(doctor, missing_queue_gets_a_channels_fix)
{
	ice_good();
	P.n_queues = 1;
	P.queues[0] = 11;
	decide();
	expect(XEVB_CHK_QUEUES, XEVB_FAIL);
	expect_fix(XEVB_CHK_QUEUES, "ethtool -L ens1f0 combined 12");
}

Test(doctor, no_native_xdp_and_unknown_features)
{
	ice_good();
	F.xdp_features = 0;
	decide();
	expect(XEVB_CHK_XDP_NATIVE, XEVB_FAIL);
	expect_fix(XEVB_CHK_XDP_NATIVE, "--tune xdp-mode=generic");
	expect(XEVB_CHK_XDP_ZEROCOPY, XEVB_WARN);
	F.xdp_features = XEVB_XDP_ACT_BASIC;
	decide();
	expect(XEVB_CHK_XDP_NATIVE, XEVB_FAIL);
	expect_detail(XEVB_CHK_XDP_NATIVE, "cannot redirect");
	F.xdp_feat_err = ENOENT;
	decide();
	expect(XEVB_CHK_XDP_NATIVE, XEVB_SKIP);
	expect(XEVB_CHK_XDP_ZEROCOPY, XEVB_SKIP);
}

Test(doctor, small_rx_ring_warns)
{
	ice_good();
	F.ring_rx = 512;
	decide();
	expect(XEVB_CHK_RINGS, XEVB_WARN);
	expect_fix(XEVB_CHK_RINGS, "ethtool -G ens1f0 rx 4096");
	F.ring_rx_max = F.ring_rx = 1024; /* as deep as it goes */
	decide();
	expect(XEVB_CHK_RINGS, XEVB_OK);
}

Test(doctor, hugepages_counted_per_queue)
{
	ice_good();
	P.n_queues = 4;
	for (int i = 0; i < 4; i++)
		P.queues[i] = (uint16_t)i;
	F.hugepages_total = 100;
	F.hugepages_free = 63; /* 4 queues x 16384 x 2048 B = 64 pages of 2 MiB */
	decide();
	expect(XEVB_CHK_HUGEPAGES, XEVB_WARN);
	expect_fix(XEVB_CHK_HUGEPAGES, "sysctl -w vm.nr_hugepages=101");
	F.hugepages_free = 64;
	decide();
	expect(XEVB_CHK_HUGEPAGES, XEVB_OK);
	/* MTU 3000: 4096-byte frames, twice the pages. */
	F.mtu = 3000;
	decide();
	expect(XEVB_CHK_HUGEPAGES, XEVB_WARN);
	cr_assert(eq(u64, xevb_doctor_umem_bytes(&F, &P), 4ull * 16384 * 4096));
}

Test(doctor, irqbalance_governor_busy_poll_warn)
{
	ice_good();
	F.irqbalance_pid = 812;
	snprintf(F.governor[2], sizeof(F.governor[2]), "powersave");
	F.napi_defer_hard_irqs = 0;
	P.busy_poll = true;
	decide();
	expect(XEVB_CHK_IRQBALANCE, XEVB_WARN);
	expect_detail(XEVB_CHK_IRQBALANCE, "pid 812");
	expect_fix(XEVB_CHK_IRQBALANCE, "systemctl disable --now irqbalance");
	expect(XEVB_CHK_GOVERNOR, XEVB_WARN);
	expect_fix(XEVB_CHK_GOVERNOR, "cpupower -c 2 frequency-set -g performance");
	expect(XEVB_CHK_BUSY_POLL, XEVB_WARN);
	expect_fix(XEVB_CHK_BUSY_POLL, "echo 2 > /sys/class/net/ens1f0/napi_defer_hard_irqs");
	cr_assert(eq(int, count(XEVB_WARN), 3));
	/* Without --busy-poll planned, unset deferral is fine. */
	P.busy_poll = false;
	decide();
	expect(XEVB_CHK_BUSY_POLL, XEVB_OK);
}

Test(doctor, memlock_and_capabilities_fail_unprivileged)
{
	ice_good();
	F.cap_eff = 0;
	decide();
	expect(XEVB_CHK_MEMLOCK, XEVB_FAIL); /* 8 MiB < 32 MiB of UMEM */
	expect_fix(XEVB_CHK_MEMLOCK, "LimitMEMLOCK=infinity");
	expect(XEVB_CHK_CAPS, XEVB_FAIL);
	expect_detail(XEVB_CHK_CAPS, "lacks CAP_BPF (");
	expect_detail(XEVB_CHK_CAPS, "; CAP_PERFMON (");
	expect_detail(XEVB_CHK_CAPS, "; CAP_NET_ADMIN (");
	expect_detail(XEVB_CHK_CAPS, "; CAP_NET_RAW (");
	expect_fix(XEVB_CHK_CAPS, "setcap cap_bpf,cap_perfmon,cap_net_admin,cap_net_raw,cap_ipc_lock+ep");
	F.memlock_bytes = UINT64_MAX;
	F.cap_eff = (1ull << 12) | (1ull << 13) | (1ull << 21); /* CAP_SYS_ADMIN stands for CAP_BPF, CAP_PERFMON */
	decide();
	expect(XEVB_CHK_MEMLOCK, XEVB_OK);
	expect(XEVB_CHK_CAPS, XEVB_OK);
}

/* What README named before: the builder's verifier refusal, which doctor now sees. */
Test(doctor, capabilities_without_perfmon_fail)
{
	ice_good();
	F.cap_eff = (1ull << 12) | (1ull << 13) | (1ull << 14) | (1ull << 39);
	decide();
	expect(XEVB_CHK_MEMLOCK, XEVB_OK);
	expect(XEVB_CHK_CAPS, XEVB_FAIL);
	expect_detail(XEVB_CHK_CAPS, "lacks CAP_PERFMON (without it the verifier refuses");
	cr_assert(strstr(C[XEVB_CHK_CAPS].detail, "CAP_BPF") == NULL, "%s", C[XEVB_CHK_CAPS].detail);
}

/* Exactly the builder's set: ok, and it says what CAP_SYS_ADMIN would add. */
Test(doctor, capabilities_the_build_set_is_enough)
{
	ice_good();
	F.cap_eff = CAPS_BUILD;
	decide();
	expect(XEVB_CHK_MEMLOCK, XEVB_OK);
	expect(XEVB_CHK_CAPS, XEVB_OK);
	expect_detail(XEVB_CHK_CAPS, "without CAP_SYS_ADMIN it attaches alone");
	for (int cap = 0; cap < 64; cap++) {
		if (!(CAPS_BUILD >> cap & 1) || cap == 14)
			continue;
		F.cap_eff = CAPS_BUILD & ~(1ull << cap);
		decide();
		expect(XEVB_CHK_CAPS, XEVB_FAIL);
	}
	F.cap_eff = CAPS_BUILD & ~(1ull << 14); /* no CAP_IPC_LOCK: the memlock check's */
	decide();
	expect(XEVB_CHK_CAPS, XEVB_OK);
	expect(XEVB_CHK_MEMLOCK, XEVB_FAIL);
}

Test(doctor, run_dir_must_be_writable)
{
	ice_good();
	F.uid = 65534;
	decide();
	expect(XEVB_CHK_RUN_DIR, XEVB_OK);
	expect_detail(XEVB_CHK_RUN_DIR, "/run/xevb is writable by uid 65534");
	F.run_dir_missing = true;
	decide();
	expect(XEVB_CHK_RUN_DIR, XEVB_OK);
	expect_detail(XEVB_CHK_RUN_DIR, "it can be created");
	F.run_dir_err = EACCES;
	decide();
	expect(XEVB_CHK_RUN_DIR, XEVB_FAIL);
	expect_detail(XEVB_CHK_RUN_DIR, "cannot be created by uid 65534");
	F.run_dir_missing = false;
	decide();
	expect(XEVB_CHK_RUN_DIR, XEVB_FAIL);
	expect_detail(XEVB_CHK_RUN_DIR, "/run/xevb is not writable by uid 65534 (Permission denied)");
	expect_fix(XEVB_CHK_RUN_DIR, "RuntimeDirectory=xevb");
	expect_fix(XEVB_CHK_RUN_DIR, "install -d -o $(id -un) -m 0700 /run/xevb");
}

Test(doctor, cpuset_lists_round_trip)
{
	struct xevb_cpuset s;
	char buf[64];

	cr_assert(xevb_cpuset_parse("0-3,8,10-11\n", &s));
	cr_assert(eq(u32, xevb_cpuset_count(&s), 7));
	cr_assert(eq(str, (char *)xevb_cpuset_str(&s, buf, sizeof(buf)), "0-3,8,10-11"));
	cr_assert(xevb_cpuset_parse("3-1", &s) == false);
	cr_assert(xevb_cpuset_parse("1,x", &s) == false);
	cr_assert(xevb_cpuset_parse("1024", &s) == false);
	cr_assert(xevb_cpuset_parse("", &s));
	cr_assert(eq(str, (char *)xevb_cpuset_str(&s, buf, sizeof(buf)), "-"));
}

Test(doctor, rss_weights_when_the_driver_has_no_ntuple_rules)
{
	ice_good();
	F.n_rules = 0;
	F.ntuple_err = EOPNOTSUPP;
	P.n_queues = 2;
	P.queues[0] = 1;
	P.queues[1] = 3;
	cpus(&P.cpus, "2-3");
	decide();
	expect(XEVB_CHK_STEERING, XEVB_FAIL);
	expect_fix(XEVB_CHK_STEERING, "ethtool -X ens1f0 weight 0 1 0 1");
}

/* Names as the drivers register them (recorded from /proc/interrupts). */
Test(doctor, queue_of_an_interrupt_name)
{
	static const struct {
		const char *name;
		int queue;
	} rec[] = {
		{ "ice-ens1f0-TxRx-0", 0 },
		{ "ice-ens1f0-TxRx-17", 17 },
		{ "ice-0000:3b:00.0:misc", -1 },
		{ "i40e-eth2-TxRx-5", 5 },
		{ "eth3-TxRx-2", 2 },
		{ "eth3-rx-4", 4 },
		{ "eth3-tx-4", -1 },
		{ "mlx5_comp3@pci:0000:5e:00.0", 3 },
		{ "mlx5_async0@pci:0000:5e:00.0", -1 },
		{ "virtio0-input.1", 1 },
		{ "virtio0-output.1", -1 },
		{ "virtio0-config", -1 },
		{ "ens1f0", -1 },
		{ "", -1 },
	};

	for (size_t i = 0; i < sizeof(rec) / sizeof(rec[0]); i++)
		cr_assert(eq(int, xevb_doctor_irq_queue(rec[i].name), rec[i].queue), "%s", rec[i].name);
}

Test(doctor, name_column_of_proc_interrupts)
{
	char name[48];

	cr_assert(xevb_doctor_irq_line_name(
		"121:    1234     0   IR-PCI-MSIX-0000:3b:00.0    1-edge      ice-ens1f0-TxRx-0\n", 121, name,
		sizeof(name)));
	cr_assert(eq(str, name, "ice-ens1f0-TxRx-0"));
	cr_assert(xevb_doctor_irq_line_name("38:  5  7  PCI-MSIX-0000:00:04.0   1-edge      virtio0-input.0  \n",
					    38, name, sizeof(name)));
	cr_assert(eq(str, name, "virtio0-input.0"));
	cr_assert(xevb_doctor_irq_line_name("12:  5  7  PCI-MSIX  1-edge  x\n", 121, name, sizeof(name)) == false);
	cr_assert(xevb_doctor_irq_line_name("NMI:  0  0  Non-maskable interrupts\n", 0, name, sizeof(name)) ==
		  false);
}

/* `--config`: a run configuration's sources against the neighbour table (ops/doctor_src.c). */
static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0x0a }, MAC_B[6] = { 0x02, 0, 0, 0, 0, 0x0b };

Test(doctor, neigh_line_takes_complete_entries_of_the_device_only)
{
	struct xevb_doctor_neigh n;

	cr_assert(xevb_doctor_neigh_line(
		"198.18.1.3       0x1         0x2         02:00:00:00:00:0a     *        eth0\n", "eth0", &n));
	cr_assert(eq(u32, n.addr, htonl(0xc6120103)));
	cr_assert(eq(int, memcmp(n.mac, MAC_A, 6), 0));
	cr_assert(not(xevb_doctor_neigh_line(
		"IP address       HW type     Flags       HW address            Mask     Device\n", "eth0", &n)));
	cr_assert(not(xevb_doctor_neigh_line("198.18.1.3 0x1 0x2 02:00:00:00:00:0a * eth1\n", "eth0", &n)));
	cr_assert(not(xevb_doctor_neigh_line("198.18.1.4 0x1 0x0 00:00:00:00:00:00 * eth0\n", "eth0", &n)),
		  "an incomplete entry has no MAC");
	cr_assert(not(xevb_doctor_neigh_line("198.18.1.4 0x1 0x2 zz:00 * eth0\n", "eth0", &n)));
	cr_assert(not(xevb_doctor_neigh_line("junk\n", "eth0", &n)));
}

Test(doctor, source_mac_verdicts)
{
	struct xevb_doctor_neigh nb = { .addr = htonl(0xc6120103) };
	struct xevb_doctor_src s = { .id = 7, .addr = nb.addr, .has_mac = true };
	struct xevb_doctor_check c;

	memcpy(nb.mac, MAC_A, 6);
	memcpy(s.mac, MAC_A, 6);
	xevb_doctor_src_decide("eth0", &s, &nb, &c);
	cr_assert(eq(int, c.verdict, XEVB_OK));
	cr_assert(eq(str, (char *)c.name, "source_mac"));
	cr_assert(eq(str, c.fix, ""));

	memcpy(s.mac, MAC_B, 6);
	xevb_doctor_src_decide("eth0", &s, &nb, &c);
	cr_assert(eq(int, c.verdict, XEVB_FAIL), "the builder would drop the source's data");
	cr_assert(strstr(c.detail,
			 "02:00:00:00:00:0b in the run configuration, but eth0's neighbour entry says "
			 "02:00:00:00:00:0a") != NULL,
		  "%s", c.detail);
	cr_assert(strstr(c.fix, "[source 7]") != NULL, "%s", c.fix);

	xevb_doctor_src_decide("eth0", &s, NULL, &c);
	cr_assert(eq(int, c.verdict, XEVB_OK), "nothing to compare with");

	s.has_mac = false;
	xevb_doctor_src_decide("eth0", &s, &nb, &c);
	cr_assert(eq(int, c.verdict, XEVB_WARN));
	cr_assert(eq(str, c.fix, "add \"mac = 02:00:00:00:00:0a\" to [source 7] (once sure it is the source's)"));
	xevb_doctor_src_decide("eth0", &s, NULL, &c);
	cr_assert(eq(int, c.verdict, XEVB_WARN));
	cr_assert(strstr(c.fix, "ping -c 1 -I eth0 198.18.1.3") != NULL, "%s", c.fix);
}

Test(doctor, neigh_find)
{
	struct xevb_doctor_neigh n[2] = { { .addr = 1 }, { .addr = 2 } };

	cr_assert(eq(ptr, (void *)xevb_doctor_neigh_find(n, 2, 2), &n[1]));
	cr_assert(eq(ptr, (void *)xevb_doctor_neigh_find(n, 2, 3), NULL));
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shaping classifier (bpf/xevb_shape.bpf.c) through BPF_PROG_RUN: a
 * fixture table of frames and the class (skb->priority) each must get,
 * the per-destination counters and reasons they leave, and the EDT path:
 * departure times from the virtual clock and drops past the horizon.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/shape.h>
#include "xevb_shape.skel.h"

TestSuite(shape, .timeout = 20);

#define A           0xc6120201u /* 198.18.2.1: any traffic */
#define B           0xc6120202u /* 198.18.2.2: udp port 5000, and udp any port */
#define C           0xc6120203u /* 198.18.2.3: tcp port 80 only */
#define U           0xc6120909u /* no rule */
#define CLS(s)      ((XEVB_SHAPE_MAJOR << 16) | (s))
#define DEFAULT_CLS (XEVB_SHAPE_MAJOR << 16)
#define IN_PRIO     7

/* Ethernet + IPv4 (+ UDP/TCP header) + payload. frag_off in 8-byte units. */
static size_t frame(uint8_t *f, uint16_t ethertype, uint32_t daddr, uint8_t proto, uint16_t dport,
		    uint16_t frag_off, size_t payload)
{
	size_t l4 = proto == 6 ? 20 : proto == 17 ? 8 : 0, ip_len = 20 + l4 + payload;

	memset(f, 0, 14 + ip_len);
	f[0] = 2;
	f[6] = 2;
	f[11] = 1;
	f[12] = (uint8_t)(ethertype >> 8);
	f[13] = (uint8_t)ethertype;
	f[14] = 0x45;
	f[16] = (uint8_t)(ip_len >> 8);
	f[17] = (uint8_t)ip_len;
	f[20] = (uint8_t)(frag_off >> 8);
	f[21] = (uint8_t)frag_off;
	f[22] = 64;
	f[23] = proto;
	*(uint32_t *)(f + 26) = htonl(0xc6120101u);
	*(uint32_t *)(f + 30) = htonl(daddr);
	if (l4) {
		*(uint16_t *)(f + 34) = htons(40000);
		*(uint16_t *)(f + 36) = htons(dport);
	}
	return 14 + ip_len;
}

struct run {
	int retval;
	uint32_t priority;
	uint64_t tstamp;
};

static struct run run1(int fd, const uint8_t *f, size_t len)
{
	struct __sk_buff in = { .priority = IN_PRIO }, out = { 0 };
	uint8_t data_out[2048];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f, .data_size_in = (uint32_t)len, .data_out = data_out,
		    .data_size_out = sizeof(data_out), .ctx_in = &in, .ctx_size_in = sizeof(in), .ctx_out = &out,
		    .ctx_size_out = sizeof(out), .repeat = 1);
	int r = bpf_prog_test_run_opts(fd, &o);

	cr_assert(eq(int, r, 0), "BPF_PROG_RUN failed: %s", strerror(-r));
	return (struct run){ (int)o.retval, out.priority, out.tstamp };
}

static void add_rule(struct xevb_shape *sk, uint32_t daddr, uint8_t proto, uint16_t port, uint32_t slot,
		     uint64_t rate)
{
	struct xevb_shape_key k = { .daddr = htonl(daddr), .proto = proto, .dport = htons(port) };
	struct xevb_shape_val v = { .slot = slot, .classid = CLS(slot), .rate_bps = rate };

	cr_assert(eq(int, bpf_map__update_elem(sk->maps.shape_dst, &k, sizeof(k), &v, sizeof(v), BPF_ANY), 0));
}

static void set_cfg(struct xevb_shape *sk, uint32_t mode, uint32_t n_specific, uint64_t horizon)
{
	struct xevb_shape_cfg c = {
		.mode = mode, .default_classid = DEFAULT_CLS, .n_specific = n_specific, .horizon_ns = horizon
	};
	uint32_t zero = 0;

	cr_assert(eq(int, bpf_map__update_elem(sk->maps.shape_cfg, &zero, 4, &c, sizeof(c), BPF_ANY), 0));
}

static struct xevb_shape_cnt cnt(struct xevb_shape *sk, uint32_t slot)
{
	static struct xevb_shape_cnt per[512];
	int n = libbpf_num_possible_cpus();
	struct xevb_shape_cnt t = { 0 };

	cr_assert(eq(int, bpf_map__lookup_elem(sk->maps.shape_cnt, &slot, 4, per, sizeof(per[0]) * n, 0), 0));
	for (int i = 0; i < n; i++) {
		t.packets += per[i].packets;
		t.bytes += per[i].bytes;
		t.drop_horizon += per[i].drop_horizon;
	}
	return t;
}

static uint64_t why(struct xevb_shape *sk, uint32_t k)
{
	static uint64_t per[512];
	int n = libbpf_num_possible_cpus();
	uint64_t t = 0;

	cr_assert(eq(int, bpf_map__lookup_elem(sk->maps.shape_why, &k, 4, per, 8 * n, 0), 0));
	for (int i = 0; i < n; i++)
		t += per[i];
	return t;
}

static const struct fixture {
	const char *name;
	uint16_t ethertype;
	uint32_t daddr;
	uint8_t proto;
	uint16_t dport, frag_off;
	size_t payload;
	uint32_t want_prio;
	uint32_t slot; /* counted in; 0: unmatched; ~0: not counted */
	enum xevb_shape_why why;
} table[] = {
	{ "A udp", 0x0800, A, 17, 23900, 0, 1000, CLS(1), 1, XEVB_SHAPE_W_MATCHED },
	{ "A raw proto 253", 0x0800, A, 253, 0, 0, 500, CLS(1), 1, XEVB_SHAPE_W_MATCHED },
	{ "A tcp", 0x0800, A, 6, 80, 0, 100, CLS(1), 1, XEVB_SHAPE_W_MATCHED },
	{ "B udp 5000", 0x0800, B, 17, 5000, 0, 200, CLS(2), 2, XEVB_SHAPE_W_MATCHED },
	{ "B udp 5001: udp any", 0x0800, B, 17, 5001, 0, 300, CLS(3), 3, XEVB_SHAPE_W_MATCHED },
	{ "B later fragment", 0x0800, B, 17, 5000, 185, 64, CLS(3), 3, XEVB_SHAPE_W_MATCHED },
	{ "B tcp: no rule", 0x0800, B, 6, 5000, 0, 10, DEFAULT_CLS, 0, XEVB_SHAPE_W_UNMATCHED },
	{ "C tcp 80", 0x0800, C, 6, 80, 0, 1400, CLS(4), 4, XEVB_SHAPE_W_MATCHED },
	{ "C tcp 81: no rule", 0x0800, C, 6, 81, 0, 10, DEFAULT_CLS, 0, XEVB_SHAPE_W_UNMATCHED },
	{ "C udp 80: no rule", 0x0800, C, 17, 80, 0, 10, DEFAULT_CLS, 0, XEVB_SHAPE_W_UNMATCHED },
	{ "unknown dst", 0x0800, U, 17, 23900, 0, 100, DEFAULT_CLS, 0, XEVB_SHAPE_W_UNMATCHED },
	{ "ARP: untouched", 0x0806, A, 0, 0, 0, 28, IN_PRIO, ~0u, XEVB_SHAPE_W_NOT_IPV4 },
	{ "IPv6: untouched", 0x86dd, A, 0, 0, 0, 60, IN_PRIO, ~0u, XEVB_SHAPE_W_NOT_IPV4 },
};

Test(shape, htb_fixture_table)
{
	struct xevb_shape *sk = xevb_shape__open_and_load();
	struct xevb_shape_cnt want[5] = { 0 };
	uint64_t want_why[XEVB_SHAPE_W__N] = { 0 };
	uint8_t f[2048];
	int fd;

	cr_assert(not(eq(ptr, sk, NULL)));
	fd = bpf_program__fd(sk->progs.xevb_shape);
	add_rule(sk, A, 0, 0, 1, 100000000);
	add_rule(sk, B, 17, 5000, 2, 100000000);
	add_rule(sk, B, 17, 0, 3, 100000000);
	add_rule(sk, C, 6, 80, 4, 100000000);
	set_cfg(sk, XEVB_SHAPE_MODE_HTB, 3, 0);

	for (int rep = 0; rep < 3; rep++)
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
			const struct fixture *t = &table[i];
			size_t len = frame(f, t->ethertype, t->daddr, t->proto, t->dport, t->frag_off, t->payload);
			struct run r = run1(fd, f, len);

			cr_assert(eq(int, r.retval, TC_ACT_OK), "%s: verdict", t->name);
			cr_assert(eq(u32, r.priority, t->want_prio), "%s: priority %x, want %x", t->name,
				  r.priority, t->want_prio);
			cr_assert(eq(u64, r.tstamp, 0), "%s: HTB mode must not stamp", t->name);
			if (t->slot != ~0u) {
				want[t->slot].packets++;
				want[t->slot].bytes += len;
			}
			want_why[t->why]++;
		}
	for (uint32_t s = 0; s < 5; s++) {
		struct xevb_shape_cnt c = cnt(sk, s);
		cr_assert(eq(u64, c.packets, want[s].packets), "slot %u packets", s);
		cr_assert(eq(u64, c.bytes, want[s].bytes), "slot %u bytes", s);
		cr_assert(eq(u64, c.drop_horizon, 0));
	}
	for (uint32_t w = 0; w < XEVB_SHAPE_W__N; w++)
		cr_assert(eq(u64, why(sk, w), want_why[w]), "reason %u", w);
	xevb_shape__destroy(sk);
}

/* Without specific rules the classifier looks up the address only. */
Test(shape, address_only_lookup_and_truncated)
{
	struct xevb_shape *sk = xevb_shape__open_and_load();
	uint8_t f[2048];
	size_t len;
	int fd;

	cr_assert(not(eq(ptr, sk, NULL)));
	fd = bpf_program__fd(sk->progs.xevb_shape);
	/* Not configured yet: pass untouched. */
	len = frame(f, 0x0800, A, 17, 1, 0, 10);
	cr_assert(eq(u32, run1(fd, f, len).priority, IN_PRIO));
	cr_assert(eq(u64, why(sk, XEVB_SHAPE_W_NO_CFG), 1));

	add_rule(sk, A, 17, 5000, 2, 1000000); /* ignored while n_specific == 0 */
	add_rule(sk, A, 0, 0, 1, 1000000);
	set_cfg(sk, XEVB_SHAPE_MODE_HTB, 0, 0);
	len = frame(f, 0x0800, A, 17, 5000, 0, 10);
	cr_assert(eq(u32, run1(fd, f, len).priority, CLS(1)));
	/*
	 * (A truncated IPv4 header cannot be fed in: BPF_PROG_RUN refuses
	 * such frames with EINVAL before the program runs.)
	 */
	cr_assert(
		eq(int,
		   bpf_prog_test_run_opts(fd, &(struct bpf_test_run_opts){ .sz = sizeof(struct bpf_test_run_opts),
									   .data_in = f,
									   .data_size_in = 14 + 12,
									   .repeat = 1 }),
		   -EINVAL));
	/* A corrupt slot in the map is refused, not used as an index. */
	add_rule(sk, B, 0, 0, XEVB_SHAPE_MAX_DST, 1000000);
	len = frame(f, 0x0800, B, 17, 1, 0, 10);
	cr_assert(eq(u32, run1(fd, f, len).priority, IN_PRIO));
	cr_assert(eq(u64, why(sk, XEVB_SHAPE_W_BAD_SLOT), 1));
	xevb_shape__destroy(sk);
}

/*
 * EDT: at 8 Mbit/s a 1000-byte frame (+ 24 overhead) is 1.024 ms on the
 * wire. Frames sent back to back leave 1.024 ms apart; the first leaves
 * now (no stamp); with a 5 ms horizon the sixth onwards are dropped.
 */
Test(shape, edt_virtual_clock_and_horizon)
{
	struct xevb_shape *sk = xevb_shape__open_and_load();
	struct xevb_shape_key k = { .daddr = htonl(A) };
	struct xevb_shape_val v = { .slot = 1, .rate_bps = 8000000, .overhead = 24 };
	uint64_t delay = 1024000, prev = 0;
	uint8_t f[2048];
	size_t len = frame(f, 0x0800, A, 17, 23900, 0, 1000 - 14 - 28);
	int fd, sent = 0, dropped = 0;

	cr_assert(not(eq(ptr, sk, NULL)));
	cr_assert(eq(sz, len, 1000));
	fd = bpf_program__fd(sk->progs.xevb_shape);
	cr_assert(eq(int, bpf_map__update_elem(sk->maps.shape_dst, &k, sizeof(k), &v, sizeof(v), BPF_ANY), 0));
	set_cfg(sk, XEVB_SHAPE_MODE_EDT, 0, 5000000);

	for (int i = 0; i < 10; i++) {
		struct run r = run1(fd, f, len);
		struct xevb_shape_val now;

		cr_assert(
			eq(int, bpf_map__lookup_elem(sk->maps.shape_dst, &k, sizeof(k), &now, sizeof(now), 0), 0));
		cr_assert(eq(u32, r.priority, IN_PRIO), "EDT mode leaves the priority");
		if (r.retval == TC_ACT_SHOT) {
			dropped++;
			cr_assert(eq(u64, now.vclock_ns, prev), "a dropped frame must not move the clock");
			continue;
		}
		cr_assert(eq(int, r.retval, TC_ACT_OK));
		if (sent == 0) {
			cr_assert(eq(u64, r.tstamp, 0), "first frame leaves now");
		} else {
			cr_assert(eq(u64, r.tstamp, prev), "frame %d departs when the clock said", i);
		}
		if (sent > 0)
			cr_assert(eq(u64, now.vclock_ns, prev + delay));
		prev = now.vclock_ns;
		sent++;
	}
	/* 10 runs take far less than 1 ms here; allow one extra frame if slow. */
	cr_assert(sent >= 5 && sent <= 7, "sent %d", sent);
	cr_assert(eq(int, sent + dropped, 10));
	cr_assert(eq(u64, cnt(sk, 1).packets, (uint64_t)sent));
	cr_assert(eq(u64, cnt(sk, 1).drop_horizon, (uint64_t)dropped));
	cr_assert(eq(u64, why(sk, XEVB_SHAPE_W_HORIZON), (uint64_t)dropped));
	xevb_shape__destroy(sk);
}

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Receive-side counter for generator benchmarks and tests: counts every
 * frame, and the valid MEPs among them, then drops it. Attached to the
 * receiving veth it also lets XDP_TX / redirected frames in at all (veth
 * accepts them only when its peer has an XDP program).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "progs.h"
#include <xevb/mep_parse.h>

const volatile __u8 cfg_ip_proto = XEVB_DEFAULT_IP_PROTO;
const volatile __u16 cfg_udp_port = XEVB_DEFAULT_UDP_PORT;
/* 0: count every frame only (cheapest); 1: also parse and count valid MEPs */
const volatile __u8 cfg_parse = 1;

enum { CNT_FRAMES, CNT_BYTES, CNT_MEPS, CNT_FRAGS, CNT_BAD, CNT__N };

XEVB_PERCPU_COUNTERS(xevb_cnt, CNT__N);

static __always_inline void add(__u32 k, __u64 v)
{
	xevb_percpu_add(&xevb_cnt, k, v);
}

SEC("xdp")
int xevb_count(struct xdp_md *ctx)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *data_end = (const __u8 *)(long)ctx->data_end;
	struct xevb_parse_cfg cfg = { .udp_port = cfg_udp_port, .ip_proto = cfg_ip_proto };
	struct xevb_pkt_info pi = {};
	int res;

	add(CNT_FRAMES, 1);
	add(CNT_BYTES, data_end - data);
	if (!cfg_parse)
		return XDP_DROP;
	res = xevb_xdp_classify(ctx, (__u32)(data_end - data), &cfg, &pi, 0);
	if (res == XEVB_RES_MEP) {
		add(CNT_MEPS, 1);
		add(CNT_FRAGS, pi.n_frags);
	} else if (res != XEVB_RES_OTHER) {
		add(CNT_BAD, 1);
	}
	/* Everything else (ARP, ICMP) goes on to the kernel. */
	return res == XEVB_RES_OTHER ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

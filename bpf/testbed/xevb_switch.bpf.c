// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * XDP switch for the namespace testbed (scripts/lib/testbed.sh, --switch
 * xdp). One instance runs on every switch-side veth port: a unicast frame
 * whose destination MAC is a known host goes straight to that host's port
 * through the DEVMAP, as an xdp_frame into the host's veth, with no skb and
 * no bridge on the way (as a NIC hands XDP its DMA buffers). Broadcast,
 * multicast (ARP), unknown MACs and frames back out of their own port go
 * on to the bridge untouched. Only the Ethernet header is read, so the
 * program is frags-aware and attaches at any MTU.
 *
 * The receiving veth must have NAPI (an XDP program or GRO on) or the
 * kernel drops the redirected frame after we counted it, and the sender's
 * checksums must be complete (an xdp_frame has no "checksum to do" mark):
 * the testbed turns GRO on and TX checksum offload off at every host's end.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include "progs.h"

enum xevb_switch_ctr {
	XEVB_SW_REDIRECTED,   /* handed to the destination port's DEVMAP slot */
	XEVB_SW_PASSED,       /* broadcast, multicast, unknown, hairpin: to the bridge */
	XEVB_SW_REDIRECT_ERR, /* known MAC but no DEVMAP slot: to the bridge instead */
	XEVB_SW_RUNT,         /* shorter than an Ethernet header: to the bridge (it drops) */
	XEVB_SW__N
};

/* Key: the destination MAC in the first 6 bytes, the last 2 zero. */
struct xevb_switch_mac {
	__u8 addr[ETH_ALEN];
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct xevb_switch_mac);
	__type(value, __u32); /* ifindex of the host's switch port */
} switch_macs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);   /* ifindex of a switch port */
	__type(value, __u32); /* the same ifindex */
} switch_ports SEC(".maps");

XEVB_PERCPU_COUNTERS(switch_cnt, XEVB_SW__N);

static __always_inline int count(__u32 k, int action)
{
	xevb_percpu_add(&switch_cnt, k, 1);
	return action;
}

SEC("xdp.frags")
int xevb_switch(struct xdp_md *ctx)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *data_end = (const __u8 *)(long)ctx->data_end;
	struct xevb_switch_mac key = {};
	__u32 *port;

	if (data + ETH_HLEN > data_end)
		return count(XEVB_SW_RUNT, XDP_PASS);
	/* Group bit: broadcast and multicast are the bridge's to flood. */
	if (data[0] & 1)
		return count(XEVB_SW_PASSED, XDP_PASS);
	__builtin_memcpy(key.addr, data, ETH_ALEN);
	port = bpf_map_lookup_elem(&switch_macs, &key);
	if (!port || *port == ctx->ingress_ifindex)
		return count(XEVB_SW_PASSED, XDP_PASS);
	/* On a missing slot the helper returns the fallback: the bridge delivers. */
	if (bpf_redirect_map(&switch_ports, *port, XDP_PASS) != XDP_REDIRECT)
		return count(XEVB_SW_REDIRECT_ERR, XDP_PASS);
	return count(XEVB_SW_REDIRECTED, XDP_REDIRECT);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Per-destination shaping, tc egress (clsact, direct action). The
 * destination IPv4 address (optionally protocol and port) selects a rule;
 * in HTB mode the rule's class goes into skb->priority, which HTB honours
 * before its own filters, so no tc_classid is needed; in EDT mode the
 * packet gets a departure time from the rule's virtual clock and sch_fq
 * holds it until then. Nothing here ever drops except the EDT horizon.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "progs.h"
#include <bpf/bpf_endian.h>
#include <xevb/shape.h>

#define ETH_HLEN    14
#define ETH_P_IP    0x0800
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XEVB_SHAPE_MAX_DST);
	__type(key, struct xevb_shape_key);
	__type(value, struct xevb_shape_val);
} shape_dst SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XEVB_SHAPE_MAX_DST);
	__type(key, __u32);
	__type(value, struct xevb_shape_cnt);
} shape_cnt SEC(".maps");

XEVB_PERCPU_COUNTERS(shape_why, XEVB_SHAPE_W__N);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xevb_shape_cfg);
} shape_cfg SEC(".maps");

static __always_inline void why(__u32 k)
{
	xevb_percpu_add(&shape_why, k, 1);
}

static __always_inline void count(__u32 slot, __u32 len, int dropped)
{
	struct xevb_shape_cnt *c = bpf_map_lookup_elem(&shape_cnt, &slot);

	if (!c)
		return;
	if (dropped) {
		c->drop_horizon++;
		return;
	}
	c->packets++;
	c->bytes += len;
}

/*
 * Departure time: max(now, clock), and the clock moves on by this packet's
 * wire time. Several CPUs may send to one destination, so the clock moves
 * by compare-and-swap; under heavy contention a fetch-add keeps the rate
 * exact at the cost of a departure time a little early.
 */
static __always_inline int edt(struct __sk_buff *skb, struct xevb_shape_val *v, const struct xevb_shape_cfg *cfg,
			       __u32 wire_len)
{
	__u64 now = bpf_ktime_get_ns(), rate = v->rate_bps, delay, old, base;

	if (!rate)
		return TC_ACT_OK;
	delay = (__u64)wire_len * 8 * 1000000000ull / rate;
	for (int i = 0; i < 4; i++) {
		old = v->vclock_ns;
		base = old > now ? old : now;
		if (base - now > cfg->horizon_ns)
			return TC_ACT_SHOT;
		if (__sync_val_compare_and_swap(&v->vclock_ns, old, base + delay) == old)
			goto stamp;
	}
	base = __sync_fetch_and_add(&v->vclock_ns, delay);
	if (base < now)
		base = now;
stamp:
	if (base > now)
		bpf_skb_set_tstamp(skb, base, BPF_SKB_TSTAMP_DELIVERY_MONO);
	return TC_ACT_OK;
}

SEC("tc")
int xevb_shape(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 zero = 0, ihl, slot;
	struct xevb_shape_cfg *cfg = bpf_map_lookup_elem(&shape_cfg, &zero);
	struct xevb_shape_key k = {};
	struct xevb_shape_val *v = NULL;
	__u8 *ip = data + ETH_HLEN;
	int act;

	if (!cfg || cfg->mode == XEVB_SHAPE_MODE_NONE) {
		why(XEVB_SHAPE_W_NO_CFG);
		return TC_ACT_OK;
	}
	if (skb->protocol != bpf_htons(ETH_P_IP)) {
		why(XEVB_SHAPE_W_NOT_IPV4);
		return TC_ACT_OK;
	}
	if ((void *)(ip + 20) > data_end) {
		why(XEVB_SHAPE_W_TRUNCATED);
		return TC_ACT_OK;
	}
	k.daddr = *(__u32 *)(ip + 16);
	if (cfg->n_specific) {
		k.proto = ip[9];
		ihl = (ip[0] & 15) * 4u;
		/* Ports only in a first fragment that holds them. */
		if ((k.proto == IPPROTO_UDP || k.proto == IPPROTO_TCP) && ihl >= 20 &&
		    !(*(__u16 *)(ip + 6) & bpf_htons(0x1fff))) {
			__u8 *l4 = ip + ihl;
			if ((void *)(l4 + 4) <= data_end)
				k.dport = *(__u16 *)(l4 + 2);
		}
		if (k.dport)
			v = bpf_map_lookup_elem(&shape_dst, &k);
		if (!v) {
			k.dport = 0;
			v = bpf_map_lookup_elem(&shape_dst, &k);
		}
		k.proto = 0;
		k.dport = 0;
	}
	if (!v)
		v = bpf_map_lookup_elem(&shape_dst, &k);
	if (!v) {
		why(XEVB_SHAPE_W_UNMATCHED);
		count(0, skb->len, 0);
		if (cfg->mode == XEVB_SHAPE_MODE_HTB)
			skb->priority = cfg->default_classid;
		return TC_ACT_OK;
	}
	slot = v->slot;
	if (slot == 0 || slot >= XEVB_SHAPE_MAX_DST) {
		why(XEVB_SHAPE_W_BAD_SLOT);
		return TC_ACT_OK;
	}
	if (cfg->mode == XEVB_SHAPE_MODE_HTB) {
		skb->priority = v->classid;
		act = TC_ACT_OK;
	} else {
		act = edt(skb, v, cfg, skb->len + v->overhead);
	}
	if (act == TC_ACT_SHOT) {
		why(XEVB_SHAPE_W_HORIZON);
		count(slot, 0, 1);
		return act;
	}
	why(XEVB_SHAPE_W_MATCHED);
	count(slot, skb->len, 0);
	return act;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

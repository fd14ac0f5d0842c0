// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * XDP steering: valid MEPs go to the AF_XDP socket of their receive queue
 * (jumbo MEPs spanning multi-buffer frags too, when loaded frags-capable),
 * malformed DAQ packets are dropped and counted by reason, IPv4 fragments
 * and everything that is not DAQ traffic go to the kernel untouched.
 * No path returns XDP_ABORTED.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xevb/mep_parse_ld.h>
#include <xevb/xdp_stats.h>

/* Set by the loader before load. */
const volatile __u8 cfg_ip_proto = XEVB_DEFAULT_IP_PROTO;
const volatile __u16 cfg_udp_port = XEVB_DEFAULT_UDP_PORT;
const volatile __u8 cfg_has_buff_len = 1;  /* bpf_xdp_get_buff_len (5.18+) */
/* Loaded with BPF_F_XDP_HAS_FRAGS (jumbo MTU): walk MEPs that span frags. */
const volatile __u8 cfg_frags = 0;

/* Mutable at run time through the skeleton's .bss mapping. */
__u32 filter_flags;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XEVB_XSKMAP_SIZE);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XEVB_XDP__SLOTS);
	__type(key, __u32);
	__type(value, struct xevb_xdp_ctr);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);    /* IPv4 source address, network order */
	__type(value, __u8);
} src_ips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XEVB_MAX_SOURCES);
	__type(key, __u32);
	__type(value, __u8);   /* non-zero: source_id expected */
} src_ids SEC(".maps");

static __always_inline void count(__u32 slot, __u32 bytes, __u32 frags)
{
	struct xevb_xdp_ctr *c = bpf_map_lookup_elem(&counters, &slot);

	if (c) {
		c->packets++;
		c->bytes += bytes;
		c->frags += frags;
	}
}

static __always_inline int source_known(const struct xevb_pkt_info *pi)
{
	__u32 flags = filter_flags;
	__u32 key;
	__u8 *v;

	if (flags & XEVB_FILTER_SRC_IP) {
		key = pi->saddr;
		if (!bpf_map_lookup_elem(&src_ips, &key))
			return 0;
	}
	if (flags & XEVB_FILTER_SRC_ID) {
		key = pi->source_id;
		v = bpf_map_lookup_elem(&src_ids, &key);
		if (!v || !*v)
			return 0;
	}
	return 1;
}

/*
 * Each record's offset depends on the previous record's length, so the
 * parser's reads form a chain of cache misses when the frame is cold (as it
 * is when another core wrote it). Loading one byte of every line first,
 * loads that depend on nothing, lets the CPU fetch the lines in parallel.
 */
#define TOUCH_MAX_LINES 64

static __always_inline void touch_lines(const __u8 *data, const __u8 *data_end)
{
	__u8 acc = 0;

	for (__u32 i = 1; i < TOUCH_MAX_LINES; i++) {
		const __u8 *p = data + i * 64;

		if (p + 1 > data_end)
			break;
		acc ^= *p;
	}
	xevb_opaque(acc);
}

SEC("xdp")
int xevb_steer(struct xdp_md *ctx)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *data_end = (const __u8 *)(long)ctx->data_end;
	struct xevb_parse_cfg cfg = {
		.udp_port = cfg_udp_port,
		.ip_proto = cfg_ip_proto,
	};
	struct xevb_pkt_info pi = {};
	__u32 len, qid;
	int res;

	if (cfg_has_buff_len)
		len = bpf_xdp_get_buff_len(ctx);
	else
		len = ctx->data_end - ctx->data;

	touch_lines(data, data_end);
	res = xevb_classify(data, data_end, len, &cfg, &pi, NULL);
	/*
	 * A jumbo MEP runs past the linear part: every record is still
	 * validated, its header copied out of the frags. The socket takes the
	 * whole frame (XDP_USE_SG, or a chunk large enough).
	 */
	if (res == XEVB_RES_MULTIBUF && cfg_frags)
		res = xevb_mep_parse_ld(ctx, pi.mep_off, pi.mep_len, &pi);
	if (res != XEVB_RES_MEP) {
		count(res, len, 0);
		return xevb_res_is_malformed(res) ? XDP_DROP : XDP_PASS;
	}
	count(XEVB_RES_MEP, len, pi.n_frags);

	if (!source_known(&pi)) {
		count(XEVB_XDP_UNKNOWN_SRC, len, pi.n_frags);
		return XDP_DROP;
	}
	qid = ctx->rx_queue_index;
	if (!bpf_map_lookup_elem(&xsks, &qid)) {
		/* No builder socket here: the kernel's socket path may take it. */
		count(XEVB_XDP_NO_XSK, len, pi.n_frags);
		return XDP_PASS;
	}
	count(XEVB_XDP_TO_XSK, len, pi.n_frags);
	return bpf_redirect_map(&xsks, qid, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

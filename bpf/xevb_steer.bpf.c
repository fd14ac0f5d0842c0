// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * XDP steering: valid MEPs and SEGMENT packets go to the AF_XDP socket of
 * their receive queue (jumbo MEPs spanning multi-buffer frags too, when
 * loaded frags-capable),
 * malformed DAQ packets are dropped and counted by reason, IPv4 fragments
 * and everything that is not DAQ traffic go to the kernel untouched.
 * Loaded in pass mode (cfg_pass, the socket builder's), it steers nothing:
 * it only sheds, and everything else goes to the kernel as without it.
 * No path returns XDP_ABORTED.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xevb/mep_parse_ld.h>
#include <xevb/xdp_meta.h>
#include <xevb/xdp_stats.h>
#include <xevb/shed.h>

/* Set by the loader before load. */
const volatile __u8 cfg_ip_proto = XEVB_DEFAULT_IP_PROTO;
const volatile __u16 cfg_udp_port = XEVB_DEFAULT_UDP_PORT;
const volatile __u8 cfg_has_buff_len = 1; /* bpf_xdp_get_buff_len (5.18+) */
/* Loaded with BPF_F_XDP_HAS_FRAGS (jumbo MTU): walk MEPs that span frags. */
const volatile __u8 cfg_frags = 0;
/*
 * Non-zero: consecutive linear MEPs redirected to a socket carry their
 * parse result in the XDP metadata (xevb/xdp_meta.h), tied to this load by
 * this random cookie. 0: no metadata.
 */
const volatile __u32 cfg_meta_cookie = 0;
/*
 * Non-zero: pass mode, in front of the socket builder (xevb build --mode
 * socket). Valid MEPs the gate does not shed go to the kernel, counted
 * no_xsk_to_kernel; malformed DAQ packets go there too, for the builder to
 * judge and count as without this program. No socket or meta.
 */
const volatile __u8 cfg_pass = 0;

/* Mutable at run time through the skeleton's .bss mapping. */
__u32 filter_flags;

/*
 * Whole-event shedding (xevb/shed.h), in a section of its own: user space
 * maps it and writes the gate word; the program records the newest event
 * id block there while armed.
 */
struct xevb_shed_gate shed_gate SEC(".data.shed") = {
	.word = 0,
	.newest_block = XEVB_SHED_BLOCK_UNKNOWN,
	.ref_source = 0xffffffffu,
	.chain_last = XEVB_SHED_BLOCK_UNKNOWN,
};

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
	__type(key, __u32); /* IPv4 source address, network order */
	__type(value, __u8);
} src_ips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XEVB_MAX_SOURCES);
	__type(key, __u32);
	__type(value, __u8); /* non-zero: source_id expected */
} src_ids SEC(".maps");

/*
 * From a run configuration: the one address each source_id may come from
 * (its source process's), and where known the Ethernet address and VLAN
 * it arrives with. A spoofer that knows an allowed address and a
 * configured id still cannot send another process's ids from it, nor,
 * with the MAC bound, take its address from another port of the network.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XEVB_MAX_SOURCES);
	__type(key, __u32);
	__type(value, struct xevb_src_bind);
} src_bind SEC(".maps");

static __always_inline void count(__u32 slot, __u32 bytes, __u32 frags)
{
	struct xevb_xdp_ctr *c = bpf_map_lookup_elem(&counters, &slot);

	if (c) {
		c->packets++;
		c->bytes += bytes;
		c->frags += frags;
	}
}

/*
 * The frame's Ethernet source and 802.1Q VLAN id against those bound to
 * its source_id (b), read only when the binding knows them. A bound VLAN
 * refuses an untagged frame: the tag is what puts the source in it.
 */
static __always_inline __u32 l2_refused(const struct xevb_src_bind *b, struct xdp_md *ctx)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *data_end = (const __u8 *)(long)ctx->data_end;
	__u64 frame_mac = 0, mac = 0;

	/* A MEP's frame holds Ethernet and IPv4 headers: this only informs the verifier. */
	if (data + XEVB_ETH_HLEN + XEVB_VLAN_HLEN > data_end)
		return XEVB_XDP_SRC_MAC_MISMATCH;
	if (b->flags & XEVB_BIND_MAC) {
		__builtin_memcpy(&frame_mac, data + 6, 6);
		__builtin_memcpy(&mac, b->mac, 6);
		if (frame_mac != mac)
			return XEVB_XDP_SRC_MAC_MISMATCH;
	}
	if ((b->flags & XEVB_BIND_VLAN) &&
	    (xevb_ld16(data + 12) != XEVB_ETH_P_8021Q || (xevb_ld16(data + 14) & 0x0fff) != b->vlan))
		return XEVB_XDP_SRC_VLAN_MISMATCH;
	return 0;
}

/*
 * 0: the filters let the MEP (its saddr, source_id) through; else the slot
 * that counts its drop. A global function, verified once on its own: its
 * branches, inlined, would multiply the verifier's states of steer() after
 * the parse (scripts/verifier-budget.sh keeps those few). Called only when
 * a filter is set.
 */
__noinline __u32 xevb_source_refused(struct xdp_md *ctx, __u32 saddr, __u32 source_id)
{
	__u32 flags = filter_flags;
	struct xevb_src_bind *b;
	__u32 key;
	__u8 *v;

	if (flags & XEVB_FILTER_SRC_IP) {
		key = saddr;
		if (!bpf_map_lookup_elem(&src_ips, &key))
			return XEVB_XDP_UNKNOWN_SRC;
	}
	if (flags & XEVB_FILTER_SRC_ID) {
		key = source_id;
		v = bpf_map_lookup_elem(&src_ids, &key);
		if (!v || !*v)
			return XEVB_XDP_UNKNOWN_SRC;
	}
	if (flags & XEVB_FILTER_SRC_BIND) {
		key = source_id;
		b = bpf_map_lookup_elem(&src_bind, &key);
		if (!b || !b->addr)
			return 0;
		if (b->addr != saddr)
			return XEVB_XDP_SRC_MISMATCH;
		if (b->flags)
			return l2_refused(b, ctx);
	}
	return 0;
}

/*
 * The chain of blocks the program decided, in their order (xevb/shed.h,
 * XEVB_GUARD_V_VOUCHED): older blocks and repeats change nothing. A block
 * that starts at most one block after the last decided MEP's last event
 * follows it (blocks smaller than a MEP hold no MEP start of their own);
 * any other step breaks the chain.
 */
static __always_inline int chain_stale(__u32 block)
{
	__u32 last = shed_gate.chain_last;

	return last != XEVB_SHED_BLOCK_UNKNOWN && (block == last || xevb_shed_before(block, last));
}

static __always_inline void chain_step(__u32 block, __u32 end)
{
	__u32 last = shed_gate.chain_last;

	if (last == XEVB_SHED_BLOCK_UNKNOWN ||
	    xevb_shed_before((shed_gate.chain_last_end + 1) & XEVB_SHED_BLOCK_MASK, block))
		shed_gate.chain_anchored = 0;
	shed_gate.chain_last = block;
	shed_gate.chain_last_end = end;
}

static __always_inline void chain_shed(__u32 block, __u32 end)
{
	if (!chain_stale(block))
		chain_step(block, end);
}

/*
 * A block admitted: the verdict's vouched bits if a run of shed blocks
 * ends right before it, that run starting right after an admitted MEP.
 */
static __always_inline __u32 chain_admit(__u32 block, __u32 end)
{
	__u32 run, v = 0;

	if (chain_stale(block))
		return 0;
	chain_step(block, end);
	/* The blocks between the anchor's last event and this block: shed, all of them. */
	run = (block - shed_gate.chain_anchor_end - 1) & XEVB_SHED_BLOCK_MASK;
	if (shed_gate.chain_anchored && run && run <= XEVB_GUARD_RUN_MAX) {
		v = XEVB_GUARD_V_VOUCHED | ((run + XEVB_GUARD_RUN_UNIT - 1) / XEVB_GUARD_RUN_UNIT)
						   << XEVB_GUARD_V_RUN_SHIFT;
		__sync_fetch_and_add(&shed_gate.guard_vouched, 1);
	}
	shed_gate.chain_anchored = 1;
	shed_gate.chain_anchor_end = end;
	return v;
}

/* The block of a MEP's last event: a MEP of n fragments spans n event ids, a segment one. */
static __always_inline __u32 mep_end_block(__u32 first_event_id, __u32 n_frags)
{
	return ((first_event_id + (n_frags ? n_frags - 1 : 0)) >> XEVB_SHED_BLOCK_SHIFT) & XEVB_SHED_BLOCK_MASK;
}

/*
 * Shed (drop) a valid MEP whose event id block the gate rejects, counted;
 * one source's shed MEPs count the events shed. Called only when the
 * gate word w is non-zero: a call, so the two copies of steer() share it.
 */
static __noinline int shed_mep(__u64 w, __u32 first_event_id, __u32 source_id, __u32 n_frags, __u32 len)
{
	__u32 block = first_event_id >> XEVB_SHED_BLOCK_SHIFT;

	if (w & XEVB_SHED_W_ARMED) {
		__u32 newest = shed_gate.newest_block;

		/* Racing CPUs may set an older block: the controller only needs a recent one. */
		if (newest == XEVB_SHED_BLOCK_UNKNOWN || xevb_shed_before(newest, block))
			shed_gate.newest_block = block;
	}
	if (!xevb_shed_drops(w, block))
		return 0;
	chain_shed(block & XEVB_SHED_BLOCK_MASK, mep_end_block(first_event_id, n_frags));
	count(XEVB_XDP_SHED, len, n_frags);
	if (source_id == shed_gate.ref_source)
		count(XEVB_XDP_SHED_REF, len, n_frags);
	return 1;
}

/*
 * The ring guard (xevb/shed.h): the first MEP of a block decides for every
 * source's MEPs of it, refusing the block while more than guard_limit
 * frames wait in this queue's RX ring and the builder has released none
 * for XEVB_GUARD_STALL_NS, or while more than guard_full wait. Returns the block's verdict
 * (XEVB_GUARD_V_*). A call, shared by both copies of steer(); only when
 * user space set a limit.
 */
static __noinline __u32 guard_verdict(__u32 qid, __u32 first_event_id, __u32 source_id, __u32 n_frags, __u32 len)
{
	__u32 block = (first_event_id >> XEVB_SHED_BLOCK_SHIFT) & XEVB_SHED_BLOCK_MASK;
	__u64 *slot, v, want, was;
	__s64 waiting;
	__u32 verdict;

	if (qid >= XEVB_GUARD_QUEUES)
		return 0;
	slot = &shed_gate.verdicts[block & (XEVB_GUARD_SLOTS - 1)];
	v = *slot;
	if (xevb_guard_slot_block1(v) == block + 1) {
		verdict = (__u32)v & XEVB_GUARD_V_MASK;
	} else {
		/* The slot holds a later block: this MEP is very late, the builder counts it so. */
		if (v && xevb_shed_before(block, xevb_guard_slot_block1(v) - 1))
			return 0;
		waiting = (__s64)(shed_gate.steered[qid] - shed_gate.released[qid]);
		/*
		 * Once a block, not a packet: the clock only when the ring is that
		 * full; past guard_full the block would not fit, running or not.
		 */
		if (waiting > (__s64)shed_gate.guard_limit &&
		    ((shed_gate.guard_full && waiting > (__s64)shed_gate.guard_full) ||
		     (__s64)(bpf_ktime_get_ns() - shed_gate.released_ns[qid]) > (__s64)XEVB_GUARD_STALL_NS)) {
			verdict = XEVB_GUARD_V_REFUSED;
			chain_shed(block, mep_end_block(first_event_id, n_frags));
		} else {
			verdict = chain_admit(block, mep_end_block(first_event_id, n_frags));
		}
		want = xevb_guard_slot(block, verdict);
		was = __sync_val_compare_and_swap(slot, v, want);
		if (was != v) {
			/* Another queue decided this block first: follow it. */
			if (xevb_guard_slot_block1(was) != block + 1)
				return 0;
			verdict = (__u32)was & XEVB_GUARD_V_MASK;
		} else if (verdict & XEVB_GUARD_V_REFUSED) {
			__sync_fetch_and_add(&shed_gate.guard_refused, 1);
		} else {
			__sync_fetch_and_add(&shed_gate.guard_admitted, 1);
		}
	}
	if (verdict & XEVB_GUARD_V_REFUSED) {
		count(XEVB_XDP_SHED, len, n_frags);
		if (source_id == shed_gate.ref_source)
			count(XEVB_XDP_SHED_REF, len, n_frags);
	}
	return verdict;
}

/* guard_admitted's: the slot does not say; guard_verdict decides. */
#define GUARD_ASK 0xffffffffu

/*
 * A block's MEPs after its first find its verdict in its slot: an admitted
 * one is taken here, without the call. GUARD_ASK sends the MEP to
 * guard_verdict, which reads the slot again and decides a new block, or
 * counts a refused one shed.
 */
static __always_inline __u32 guard_admitted(__u32 qid, __u32 first_event_id)
{
	__u32 block = (first_event_id >> XEVB_SHED_BLOCK_SHIFT) & XEVB_SHED_BLOCK_MASK;
	__u64 v = shed_gate.verdicts[block & (XEVB_GUARD_SLOTS - 1)];

	if (qid >= XEVB_GUARD_QUEUES || xevb_guard_slot_block1(v) != block + 1 || (v & XEVB_GUARD_V_REFUSED))
		return GUARD_ASK;
	return (__u32)v & XEVB_GUARD_V_MASK;
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

/*
 * The parse result in front of the frame, for the builder to book the MEP
 * without walking its records. Without room for it the frame still goes
 * to the socket, counted: user space then finds no meta that checks out
 * (xsk_meta.h) and parses the frame itself.
 */
static __always_inline void meta_write(struct xdp_md *ctx, const struct xevb_pkt_info *pi, __u32 len,
				       __u32 verdict)
{
	struct xevb_xdp_meta *m;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		goto fail;
	m = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(m + 1) > data)
		goto fail;
	m->check = cfg_meta_cookie ^ pi->packet_seq;
	m->first_event_id = pi->first_event_id;
	m->mep_off = pi->mep_off;
	m->mep_len = pi->mep_len;
	m->n_frags = pi->n_frags;
	m->flags = XEVB_XDP_META_F_CONSEC | (pi->is_udp ? XEVB_XDP_META_F_UDP : 0) |
		   (verdict & XEVB_GUARD_V_VOUCHED ? XEVB_XDP_META_F_VOUCHED : 0);
	/* The shed run a vouched MEP ends, in units of XEVB_GUARD_RUN_UNIT blocks; else 0. */
	m->reserved = verdict & XEVB_GUARD_V_VOUCHED ? (__u8)(verdict >> XEVB_GUARD_V_RUN_SHIFT) : 0;
	return;
fail:
	count(XEVB_XDP_META_FAIL, len, pi->n_frags);
}

/*
 * The program, specialised by the compiler for meta (a constant): the copy
 * without meta never computes pi.consec (its record walk is the _nc one),
 * and the verifier sees only the copy cfg_meta_cookie selects at load.
 */
static __always_inline int steer(struct xdp_md *ctx, const int meta)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *data_end = (const __u8 *)(long)ctx->data_end;
	struct xevb_parse_cfg cfg = {
		.udp_port = cfg_udp_port,
		.ip_proto = cfg_ip_proto,
	};
	struct xevb_pkt_info pi = {};
	__u32 len, qid, nfr, refused;
	__u64 shed_w;
	__u32 verdict = 0;
	int res, act;

	/*
	 * A program loaded without frags never sees a multi-buffer frame (the
	 * kernel neither attaches it to a device whose MTU needs them nor
	 * hands it one): its frame is all linear, and the helper call would
	 * only say so.
	 */
	if (cfg_has_buff_len && cfg_frags)
		len = bpf_xdp_get_buff_len(ctx);
	else
		len = ctx->data_end - ctx->data;

	touch_lines(data, data_end);
	res = xevb_xdp_classify(ctx, len, &cfg, &pi, meta);
	/*
	 * A jumbo MEP runs past the linear part: every record is still
	 * validated, its header copied out of the frags. The socket takes the
	 * whole frame (XDP_USE_SG, or a chunk large enough).
	 */
	if (res == XEVB_RES_MULTIBUF && cfg_frags)
		res = xevb_xdp_parse_ld(ctx, &pi);
	if (res != XEVB_RES_MEP && res != XEVB_RES_SEGMENT) {
		count(res, len, 0);
		return xevb_res_is_malformed(res) && !cfg_pass ? XDP_DROP : XDP_PASS;
	}
	/*
	 * A segment (wire format 1.1) goes where a MEP goes, counted in its
	 * own verdict slot. Its frags column counts the segments at offset 0,
	 * one per fragment sent: the shed counters then still count events.
	 */
	nfr = res == XEVB_RES_SEGMENT ? pi.seg_offset == 0 : pi.n_frags;
	count(res, len, nfr);

	refused = filter_flags ? xevb_source_refused(ctx, pi.saddr, pi.source_id) : 0;
	if (refused) {
		count(refused, len, nfr);
		return XDP_DROP;
	}
	/* Idle (not shedding): this load and branch are the whole cost. */
	shed_w = shed_gate.word;
	if (shed_w && shed_mep(shed_w, pi.first_event_id, pi.source_id, nfr, len))
		return XDP_DROP;
	if (cfg_pass) {
		count(XEVB_XDP_NO_XSK, len, nfr);
		return XDP_PASS;
	}
	qid = ctx->rx_queue_index;
	if (shed_gate.guard_limit) {
		verdict = guard_admitted(qid, pi.first_event_id);
		if (verdict == GUARD_ASK)
			verdict = guard_verdict(qid, pi.first_event_id, pi.source_id, nfr, len);
		if (verdict & XEVB_GUARD_V_REFUSED)
			return XDP_DROP;
	}
	act = bpf_redirect_map(&xsks, qid, XDP_PASS);
	if (act != XDP_REDIRECT) {
		/* No builder socket here: the kernel's socket path may take it. */
		count(XEVB_XDP_NO_XSK, len, nfr);
		return act;
	}
	count(XEVB_XDP_TO_XSK, len, nfr);
	if (qid < XEVB_GUARD_QUEUES)
		shed_gate.steered[qid]++;
	if (meta) {
		/*
		 * consec is 1 only for a linear MEP the parser accepted (the
		 * multi-buffer walker leaves it 0). A segment gets no meta
		 * either: the meta saves walking many records, a segment has
		 * one, whose header sits on the line the meta check reads
		 * anyway; parsing it costs no more than checking a meta would.
		 * Hidden from clang, which otherwise duplicates the classifier
		 * per verdict to know it.
		 */
		__u32 consec = pi.consec;

		xevb_opaque(consec);
		if (consec)
			meta_write(ctx, &pi, len, verdict);
	}
	return XDP_REDIRECT;
}

SEC("xdp")
int xevb_steer(struct xdp_md *ctx)
{
	if (cfg_meta_cookie)
		return steer(ctx, 1);
	return steer(ctx, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

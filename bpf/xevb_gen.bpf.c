// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Live-frames MEP generator, run by BPF_PROG_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES: each repetition stamps the template frame for
 * the next (source, block) and sends it with XDP_TX. Sources take turns:
 * for block k every source sends its packet before block k + 1 starts,
 * which is the order the socket sender uses too.
 *
 * The page pool recycles frames without restoring the template, so every
 * field that varies is written on every run. Payloads and their CRCs are
 * left alone: the emulator payload depends only on the fragment length,
 * and live mode uses one fixed length.
 *
 * xevb_gen_dfm serves `xevb source --dfm --mode live`: instead of a free
 * running sequence it sends the jobs user space queues in a ring (one MEP
 * of every source per job, to the job's builder), each source's
 * packet_seq counting in a map that every sender's instance shares.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xevb/bytes.h>
#include <xevb/gen.h>
#include <xevb/wire.h>

#define GEN_MAX_SOURCES XEVB_GEN_MAX_SOURCES
/* A live frame is at most 3408 bytes: at most 279 records of 12 bytes. */
#define GEN_MAX_RECS 288
#define GEN_MAX_OFF  4096

/* Set by the loader before load. */
const volatile __u32 cfg_n_src = 1;
const volatile __u32 cfg_pack = 1;
const volatile __u32 cfg_rec_stride = 12; /* 12 + padded fragment length */
const volatile __u32 cfg_ip_off = 14;
const volatile __u32 cfg_mep_off = 34;
const volatile __u32 cfg_first_event;
const volatile __u32 cfg_seq0;
const volatile __u8 cfg_flags;
const volatile __u8 cfg_per_src_addr;
const volatile struct xevb_gen_src srcs[GEN_MAX_SOURCES];

/* Run state and counters: written by one CPU only, the test-run caller. */
__u32 cur_src;
__u64 cur_block;
/* Block that gets END_OF_RUN; never reached by default. */
__u64 eor_block = ~0ull;
/* Stop line: repetitions at or past it are dropped, not sent. */
__u64 max_block = ~0ull;
/*
 * Pacing: at most one frame per pace_ns (0: as fast as possible). A call
 * of BPF_PROG_RUN cannot sleep, and calls are costly, so the program waits
 * on the clock itself. Falling behind (the gap between calls, or the
 * receiver's softirq running on this core between two frames) is caught up
 * in bursts of at most PACE_CATCHUP frames, half the receiver's 256-frame
 * veth ring: a debt beyond that is forgiven, not the whole debt, or every
 * such gap would lower the rate for good (paced runs then reached half
 * their target on this VM).
 */
__u64 pace_ns;
__u64 next_ns;
__u64 pace_spins;

#define PACE_CATCHUP   128
#define PACE_MAX_SPINS 4096 /* ~100 us: slower rates pace per call instead */

static __always_inline void pace(void)
{
	__u64 p = pace_ns, now = bpf_ktime_get_ns(), next = next_ns;

	if (now > next + PACE_CATCHUP * p)
		next = now - PACE_CATCHUP * p;
	for (__u32 i = 0; i < PACE_MAX_SPINS && now < next; i++) {
		now = bpf_ktime_get_ns();
		pace_spins++;
	}
	next_ns = next + p;
}

__u64 tx_packets;
__u64 tx_bytes;
__u64 over_limit;
__u64 short_frame;

/* A frame too short, or a configuration out of bounds: counted, dropped. */
static __always_inline int short_drop(void)
{
	short_frame++;
	return XDP_DROP;
}

/*
 * The event ids of a MEP's first n records: first + r, or, with evs, a
 * job's ids from evs[base...] (the DFM ring). Payloads and lengths are the
 * template's.
 */
static __always_inline void stamp_ids(__u8 *mep, __u8 *data_end, __u32 n, __u32 first, const __u32 *evs,
				      __u32 base)
{
	__u32 off = 16, r;
	__u8 *rec;

	for (r = 0; r < GEN_MAX_RECS; r++) {
		if (r >= n)
			break;
		if (off > GEN_MAX_OFF)
			break;
		rec = mep + off;
		if (rec + 4 > data_end)
			break;
		xevb_st32(rec, evs ? evs[(base + r) & (XEVB_GEN_MAX_JOB_EVS - 1)] : first + r);
		off += cfg_rec_stride;
	}
}

SEC("xdp")
int xevb_gen(struct xdp_md *ctx)
{
	__u8 *data = (__u8 *)(long)ctx->data;
	__u8 *data_end = (__u8 *)(long)ctx->data_end;
	__u32 s = cur_src, mep_off = cfg_mep_off, ip_off = cfg_ip_off;
	__u64 blk = cur_block;
	__u8 *mep, *ip;
	__u8 flags = cfg_flags;

	if (blk > max_block) {
		over_limit++;
		return XDP_DROP;
	}
	if (pace_ns)
		pace();
	if (mep_off > 256 || ip_off > 256)
		return short_drop();
	mep = data + mep_off;
	if (mep + 16 > data_end)
		return short_drop();
	s &= GEN_MAX_SOURCES - 1;
	if (blk == eor_block)
		flags |= XEVB_MEP_F_END_OF_RUN;
	mep[3] = flags;
	xevb_st16(mep + 4, srcs[s].source_id);
	xevb_st32(mep + 12, cfg_seq0 + (__u32)blk);

	if (cfg_per_src_addr) {
		ip = data + ip_off;
		if (ip + 20 > data_end)
			return short_drop();
		*(__u32 *)(ip + 12) = srcs[s].saddr;
		xevb_st16(ip + 10, srcs[s].ip_csum);
	}

	stamp_ids(mep, data_end, cfg_pack, cfg_first_event + (__u32)blk * cfg_pack, NULL, 0);

	if (++s >= cfg_n_src) {
		s = 0;
		cur_block = blk + 1;
	}
	cur_src = s;
	tx_packets++;
	tx_bytes += data_end - data;
	return XDP_TX;
}

/*
 * Segments (wire format 1.1): with --pack 1 and a fragment whose record
 * does not fit a live frame, xevb_gen_seg sends each fragment as
 * cfg_seg_count packets, a source's segments in a row, then the next
 * source's, as the socket sender does: repetition r is segment cur_seg of
 * source cur_src's fragment of block cur_block, with packet_seq
 * cfg_seq0 + block x segments + segment and the IPv4 id its low 16 bits.
 * The template is the first segment; the last one is shorter and trimmed.
 *
 * A segment's bytes depend on its offset only (one fixed length), and the
 * record's seg_offset field says which segment a recycled page holds: the
 * payload is copied only when it holds another one.
 */
const volatile __u32 cfg_seg_count;  /* segments per fragment; 0: not used */
const volatile __u32 cfg_seg_stride; /* payload bytes of every segment but the last */
const volatile __u32 cfg_seg_last;   /* the last segment's bytes, padded to 4 */
const volatile __u8 seg_payload[XEVB_GEN_SEG_PAYLOAD];

__u32 cur_seg;
__u64 seg_copies; /* repetitions whose frame held another segment's bytes */

/* The IPv4 header checksum, recomputed: length, id and address all vary. */
static __always_inline void put_ip_csum(__u8 *ip)
{
	__u32 sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (__u32)ip[i] << 8 | ip[i + 1];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	xevb_st16(ip + 10, (__u16)~sum);
}

/* The next repetition: the next segment, source, or block. */
static __always_inline void seg_step(__u32 k, __u32 s, __u64 blk)
{
	if (++k >= cfg_seg_count) {
		k = 0;
		if (++s >= cfg_n_src) {
			s = 0;
			blk++;
		}
	}
	cur_seg = k;
	cur_src = s;
	cur_block = blk;
}

SEC("xdp")
int xevb_gen_seg(struct xdp_md *ctx)
{
	__u8 *data = (__u8 *)(long)ctx->data;
	__u8 *data_end = (__u8 *)(long)ctx->data_end;
	__u32 s = cur_src, k = cur_seg, mep_off = cfg_mep_off;
	__u32 off, take, len, seq;
	__u64 blk = cur_block;
	__u8 *ip, *mep, *rec;
	__u8 flags = cfg_flags | XEVB_MEP_F_SEGMENT;
	int cut;

	if (blk > max_block) {
		over_limit++;
		return XDP_DROP;
	}
	if (pace_ns)
		pace();
	if (mep_off > 256 || k >= cfg_seg_count)
		return short_drop();
	off = k * cfg_seg_stride;
	take = k + 1 < cfg_seg_count ? cfg_seg_stride : cfg_seg_last;
	if (!take || take >= XEVB_GEN_SEG_MAX_TAKE || off > 65535)
		return short_drop();
	ip = data + 14;
	mep = data + mep_off;
	rec = mep + 16;
	if (ip + 28 > data_end || rec + 12 > data_end)
		return short_drop();
	len = mep_off + 16 + 12 + take;
	cut = (int)(data_end - data) - (int)len;
	if (cut < 0)
		return short_drop();
	s &= GEN_MAX_SOURCES - 1;
	seq = cfg_seq0 + (__u32)blk * cfg_seg_count + k;
	if (blk == eor_block)
		flags |= XEVB_MEP_F_END_OF_RUN;
	mep[3] = flags;
	xevb_st16(mep + 4, srcs[s].source_id);
	xevb_st32(mep + 12, seq);
	xevb_st32(rec, cfg_first_event + (__u32)blk);

	xevb_st16(ip + 2, (__u16)(len - 14));
	xevb_st16(ip + 4, (__u16)seq);
	if (cfg_per_src_addr)
		*(__u32 *)(ip + 12) = srcs[s].saddr;
	put_ip_csum(ip);
	if (mep_off >= 14 + 20 + 8)
		xevb_st16(ip + 24, (__u16)(len - 14 - 20));

	if (xevb_ld16(rec + 6) != off) {
		if (bpf_xdp_store_bytes(ctx, mep_off + 16 + 12, (void *)&seg_payload[off], take))
			return short_drop();
		/* Packet pointers are checked again after a helper wrote the packet. */
		data = (__u8 *)(long)ctx->data;
		data_end = (__u8 *)(long)ctx->data_end;
		rec = data + mep_off + 16;
		if (mep_off > 256 || rec + 12 > data_end)
			return short_drop();
		xevb_st16(rec + 6, (__u16)off);
		seg_copies++;
	}
	/* Last: the packet pointers are invalid after it. */
	if (cut && bpf_xdp_adjust_tail(ctx, -cut))
		return short_drop();

	seg_step(k, s, blk);
	tx_packets++;
	tx_bytes += len;
	return XDP_TX;
}

/*
 * --dfm: a ring of jobs user space fills (job_tail) while a call runs, the
 * program sends them (job_head). A repetition that finds the ring empty
 * polls it a while, then drops its frame: the call keeps going until user
 * space ends it with a signal. A one-off call is the same ring, filled
 * before the call, with exactly its frames' repetitions.
 *
 * The template holds job_recs records; a job of fewer (a short block, the
 * answer to a re-ask) gets its lengths and n_frags written and the frame
 * trimmed to its records, which are the template's first ones (payloads
 * depend on the fixed fragment length only): the frame xevb_write_frame
 * makes for that job. So every answer goes out in the running call, at
 * once, instead of in a call of its own (~25 ms of RCU waits in the kernel).
 */
struct xevb_gen_job jobs[XEVB_GEN_MAX_JOBS];
__u32 job_evs[XEVB_GEN_MAX_JOB_EVS];
__u32 job_recs;  /* records of the template; slots are this far apart */
__u32 ring_mask; /* ring slots - 1; slots x job_recs <= XEVB_GEN_MAX_JOB_EVS */
__u32 job_head;  /* next job to send: written here only */
__u32 job_tail;  /* jobs queued so far: written by user space only */
__u32 job_src;   /* the next repetition's source index */
__u64 idle_reps; /* repetitions that found no job */
__u64 tx_frags;  /* records of the frames sent */
__u64 bad_jobs;  /* repetitions of a job with 0 or > job_recs records: dropped */

#define RING_IDLE_POLLS 512

/* Next packet_seq of each source index: shared by every sender's instance. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GEN_MAX_SOURCES);
	__type(key, __u32);
	__type(value, __u32);
} gen_seq SEC(".maps");

static __always_inline int ring_empty(__u32 head)
{
	return head == *(volatile __u32 *)&job_tail;
}

/* The job's next repetition is done: the next source, or the next job. */
static __always_inline void job_step(__u32 head, __u32 s)
{
	if (++s >= cfg_n_src) {
		s = 0;
		job_head = head + 1;
	}
	job_src = s;
}

SEC("xdp")
int xevb_gen_dfm(struct xdp_md *ctx)
{
	__u8 *data = (__u8 *)(long)ctx->data;
	__u8 *data_end = (__u8 *)(long)ctx->data_end;
	__u32 head = job_head, s = job_src, mep_off = cfg_mep_off;
	__u32 slot, base, r, key, recs, len, *seq;
	const struct xevb_gen_job *jb;
	__u8 *mep, *ip;
	int cut;

	for (r = 0; r < RING_IDLE_POLLS && ring_empty(head); r++)
		;
	if (ring_empty(head)) {
		idle_reps++;
		return XDP_DROP;
	}
	if (pace_ns)
		pace();
	if (mep_off > 256 || s >= GEN_MAX_SOURCES)
		return short_drop();
	ip = data + 14;
	mep = data + mep_off;
	if (ip + 28 > data_end || mep + 16 > data_end)
		return short_drop();
	slot = head & ring_mask & (XEVB_GEN_MAX_JOBS - 1);
	jb = &jobs[slot];
	recs = jb->recs;
	if (!recs || recs > job_recs || recs > GEN_MAX_RECS) {
		/* Every source's repetition of it drops: the job is spent. */
		bad_jobs++;
		job_step(head, s);
		return XDP_DROP;
	}
	len = mep_off + 16 + recs * cfg_rec_stride;
	cut = (int)(data_end - data) - (int)len;
	if (cut < 0)
		return short_drop();
	key = s;
	seq = bpf_map_lookup_elem(&gen_seq, &key);
	if (!seq)
		return short_drop();
	__builtin_memcpy(data, jb->dst_mac, 6);
	/* Every field that depends on the record count: recycled pages keep
	   what the last job left there. */
	xevb_st16(ip + 2, (__u16)(len - 14));
	*(__u32 *)(ip + 16) = jb->daddr;
	xevb_st16(ip + 10, jb->ip_csum);
	if (mep_off >= 14 + 20 + 8)
		xevb_st16(ip + 24, (__u16)(len - 14 - 20));
	mep[3] = jb->flags;
	xevb_st16(mep + 4, srcs[s & (GEN_MAX_SOURCES - 1)].source_id);
	xevb_st16(mep + 6, (__u16)recs);
	xevb_st32(mep + 12, __sync_fetch_and_add(seq, 1));

	base = slot * job_recs;
	stamp_ids(mep, data_end, recs, 0, job_evs, base);
	/* Last: the packet pointers are invalid after it. */
	if (cut && bpf_xdp_adjust_tail(ctx, -cut))
		return short_drop();

	job_step(head, s);
	tx_packets++;
	tx_frags += recs;
	tx_bytes += len;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

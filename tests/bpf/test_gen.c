// SPDX-License-Identifier: GPL-2.0-only
/*
 * The live-frames generator (bpf/xevb_gen.bpf.c) through plain BPF_PROG_RUN,
 * which hands back the stamped frame: every repetition must be a valid MEP
 * of the right source, packet_seq and event_ids, with a good IPv4 checksum,
 * END_OF_RUN on the last block only, and nothing sent past the stop line.
 * Each run is fed the previous output, as live mode's recycled pages are.
 */
#include <arpa/inet.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include <xevb/gen.h>
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"
#include "evb/names.h"
#include "xevb_gen.skel.h"

TestSuite(xdp_gen, .timeout = 20);

static const struct xevb_parse_cfg cfg = {
	.udp_port = XEVB_DEFAULT_UDP_PORT,
	.ip_proto = XEVB_DEFAULT_IP_PROTO,
};

#define NSRC       3
#define PACK       4
#define FRAG       101
#define FIRST      0xfffffff9u /* event_ids wrap inside the run */
#define SADDR_BASE 0xc612010au

static const uint16_t ids[NSRC] = { 5, 9, 4095 };

static int run_once(int fd, uint8_t *frame, uint32_t len, uint32_t *retval)
{
	uint8_t out[4096];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1, );
	int r = bpf_prog_test_run_opts(fd, &o);

	if (r)
		return r;
	cr_assert(eq(u32, o.data_size_out, len));
	memcpy(frame, out, len);
	*retval = o.retval;
	return 0;
}

/* The template MEP the generator stamps: source ids[0], PACK fragments of FRAG bytes from event FIRST. */
static struct xevb_mep_params template_params(bool udp)
{
	struct xevb_mep_params p = {
		.dst_mac = { 2, 0x18, 2, 0, 0, 0 },
		.src_mac = { 2, 0x18, 1, 0, 0, 0 },
		.saddr = htonl(SADDR_BASE),
		.daddr = htonl(0xc6120201),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.udp_dport = udp ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = ids[0],
		.run_number = 77,
		.first_event_id = FIRST,
		.n_frags = PACK,
		.frag_size = FRAG,
	};

	return p;
}

static void stamps(bool udp, bool per_src)
{
	struct xevb_mep_params p = template_params(udp);
	static struct xevb_frag_ref frags[XEVB_MAX_FRAGS_PER_MEP];
	uint8_t frame[4096];
	ssize_t len = xevb_write_frame(frame, sizeof(frame), &p);
	struct xevb_gen *sk = xevb_gen__open();
	uint32_t retval, blocks = 3;

	cr_assert(gt(sz, (size_t)len, 0));
	cr_assert(not(eq(ptr, sk, NULL)));
	sk->rodata->cfg_n_src = NSRC;
	sk->rodata->cfg_pack = PACK;
	sk->rodata->cfg_rec_stride = 12 + XEVB_PAD4(FRAG);
	sk->rodata->cfg_ip_off = 14;
	sk->rodata->cfg_mep_off = 14 + 20 + (udp ? 8 : 0);
	sk->rodata->cfg_first_event = FIRST;
	sk->rodata->cfg_per_src_addr = per_src;
	for (int i = 0; i < NSRC; i++) {
		uint8_t ip[20];
		uint32_t sa = per_src ? htonl(SADDR_BASE + (uint32_t)i) : p.saddr;
		memcpy(ip, frame + 14, 20);
		memcpy(ip + 12, &sa, 4);
		ip[10] = ip[11] = 0;
		sk->rodata->srcs[i].saddr = sa;
		sk->rodata->srcs[i].source_id = ids[i];
		sk->rodata->srcs[i].ip_csum = xevb_ip_csum(ip, 20);
	}
	cr_assert(eq(int, xevb_gen__load(sk), 0), "load the generator");
	sk->data->max_block = blocks - 1;
	sk->data->eor_block = blocks - 1;
	int fd = bpf_program__fd(sk->progs.xevb_gen);

	for (uint32_t rep = 0; rep < blocks * NSRC; rep++) {
		uint32_t s = rep % NSRC, blk = rep / NSRC;
		struct xevb_pkt_info pi = { 0 };

		cr_assert(eq(int, run_once(fd, frame, (uint32_t)len, &retval), 0));
		cr_assert(eq(u32, retval, XDP_TX), "rep %u", rep);
		int res = xevb_classify(frame, frame + len, (uint32_t)len, &cfg, &pi, frags);
		cr_assert(eq(int, res, XEVB_RES_MEP), "rep %u: %s", rep, xevb_slot_name(res));
		cr_assert(eq(u16, pi.source_id, ids[s]), "rep %u source", rep);
		cr_assert(eq(u32, pi.packet_seq, blk), "rep %u packet_seq", rep);
		cr_assert(eq(u32, pi.run_number, 77));
		cr_assert(eq(u8, pi.flags, blk == blocks - 1 ? XEVB_MEP_F_END_OF_RUN : 0), "rep %u flags", rep);
		cr_assert(eq(u32, ntohl(pi.saddr), per_src ? SADDR_BASE + s : SADDR_BASE), "rep %u saddr", rep);
		cr_assert(eq(u16, xevb_ip_csum(frame + 14, 20), 0), "rep %u IPv4 checksum", rep);
		for (uint32_t j = 0; j < PACK; j++) {
			cr_assert(eq(u32, frags[j].event_id, FIRST + blk * PACK + j), "rep %u record %u", rep, j);
			cr_assert(eq(u32, frags[j].crc32c, xevb_crc32c(0, frame + frags[j].payload_off, FRAG)));
			cr_assert(eq(sz, xevb_emu_check(frame + frags[j].payload_off, FRAG), (size_t)FRAG));
		}
	}
	/* Past the stop line: dropped and counted, never sent. */
	cr_assert(eq(int, run_once(fd, frame, (uint32_t)len, &retval), 0));
	cr_assert(eq(u32, retval, XDP_DROP));
	cr_assert(eq(u64, sk->bss->over_limit, 1));
	cr_assert(eq(u64, sk->bss->tx_packets, (uint64_t)blocks * NSRC));
	cr_assert(eq(u64, sk->bss->tx_bytes, (uint64_t)blocks * NSRC * (uint64_t)len));
	xevb_gen__destroy(sk);
}

Test(xdp_gen, raw_one_address)
{
	stamps(false, false);
}
Test(xdp_gen, raw_per_source_address)
{
	stamps(false, true);
}
Test(xdp_gen, udp_per_source_address)
{
	stamps(true, true);
}

/*
 * Pacing: with pace_ns set, REPS repetitions in one call take at least
 * (REPS - 1 - PACE_CATCHUP) * pace_ns, however fast the machine; without it
 * the program never waits. Wall time: BPF_PROG_RUN's own duration
 * leaves out the time the call was preempted, the pacing clock does not.
 */
Test(xdp_gen, paces_frames)
{
	struct xevb_mep_params p = {
		.saddr = htonl(SADDR_BASE),
		.daddr = htonl(0xc6120201),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.source_id = 1,
		.run_number = 1,
		.n_frags = 1,
		.frag_size = 32,
	};
	const uint32_t reps = 2000;
	const uint64_t pace = 20000; /* 20 us a frame: 40 ms for the call */
	uint8_t frame[256];
	ssize_t len = xevb_write_frame(frame, sizeof(frame), &p);
	struct xevb_gen *sk = xevb_gen__open();

	cr_assert(gt(sz, (size_t)len, 0));
	cr_assert(not(eq(ptr, sk, NULL)));
	sk->rodata->cfg_mep_off = 34;
	cr_assert(eq(int, xevb_gen__load(sk), 0), "load the generator");
	for (int paced = 0; paced < 2; paced++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)len, .repeat = reps);
		sk->bss->pace_ns = paced ? pace : 0;
		sk->bss->next_ns = 0;
		uint64_t t0 = xevb_now_ns();
		cr_assert(eq(int, bpf_prog_test_run_opts(bpf_program__fd(sk->progs.xevb_gen), &o), 0));
		uint64_t total = xevb_now_ns() - t0;
		if (paced) {
			cr_assert(ge(u64, total, (reps - 1 - 32) * pace), "paced call took %llu ns",
				  (unsigned long long)total);
			cr_assert(gt(u64, sk->bss->pace_spins, 0));
		} else {
			/* A call's own fixed cost (synchronize_rcu) drowns any
			 * wall-time bound here: the program just never waits. */
			cr_assert(eq(u64, sk->bss->pace_spins, 0));
		}
	}
	xevb_gen__destroy(sk);
}

/* One plain BPF_PROG_RUN of frame (len bytes): what it sent back, and its length. */
static uint32_t run_out(int fd, uint8_t *frame, uint32_t len, uint8_t *out, uint32_t cap, uint32_t *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .data_out = out,
		    .data_size_out = cap, .repeat = 1, );

	cr_assert(eq(int, bpf_prog_test_run_opts(fd, &o), 0));
	*retval = o.retval;
	return o.data_size_out;
}

/*
 * --dfm --mode live (xevb_gen_dfm): each repetition sends the next job of
 * the ring for the next source, and the frame is byte for byte the one
 * xevb_write_frame makes for that (builder, source, packet_seq, events,
 * flags): the MEP the socket path sends. A job of fewer records than the
 * template (a short block; a RESEND answer to a re-ask) is trimmed to
 * them, and the next full job's frame is whole again although it starts
 * from the trimmed one's bytes (live mode's recycled pages). A job of no
 * records or more than the template's is dropped, every source's
 * repetition of it, and counted. A ring with no job left drops.
 */
Test(xdp_gen, dfm_jobs_byte_identical)
{
	enum { K = 3, NJ = 6 };
	static const uint32_t evs[NJ][K] = {
		{ 100, 101, 102 }, { 7, 9, 200 },    { 0xfffffffeu, 0xffffffffu, 0 }, { 55 },
		{ 300, 302 },      { 400, 401, 402 }
	};
	static const uint32_t dst[NJ] = { 0xc6120201, 0xc6120202, 0xc6120201, 0xc6120202, 0xc6120201, 0xc6120201 };
	static const uint16_t recs[NJ] = { K, K, K, 1, 2, K };
	static const uint8_t flags[NJ] = { 0, XEVB_MEP_F_RESEND, 0, 0, XEVB_MEP_F_RESEND, 0 };
	struct xevb_mep_params p = {
		.src_mac = { 2, 0x18, 1, 0, 0, 0 },
		.saddr = htonl(SADDR_BASE),
		.udp_dport = XEVB_DEFAULT_UDP_PORT,
		.source_id = ids[0],
		.run_number = 77,
		.n_frags = K,
		.frag_size = FRAG,
	};
	uint8_t frame[4096], out[4096], want[4096];
	ssize_t len = xevb_write_frame(frame, sizeof(frame), &p);
	struct xevb_gen *sk = xevb_gen__open();
	uint32_t retval, seq[NSRC] = { 0 };
	uint64_t frags = 0, bytes = 0;

	cr_assert(gt(sz, (size_t)len, 0));
	cr_assert(not(eq(ptr, sk, NULL)));
	sk->rodata->cfg_n_src = NSRC;
	sk->rodata->cfg_rec_stride = 12 + XEVB_PAD4(FRAG);
	sk->rodata->cfg_ip_off = 14;
	sk->rodata->cfg_mep_off = 14 + 20 + 8;
	for (int i = 0; i < NSRC; i++)
		sk->rodata->srcs[i].source_id = ids[i];
	cr_assert(eq(int, xevb_gen__load(sk), 0), "load the generator");
	sk->bss->job_recs = K;
	sk->bss->ring_mask = XEVB_GEN_MAX_JOBS - 1;
	for (uint32_t j = 0; j < NJ; j++) {
		struct xevb_gen_job *jb = &sk->bss->jobs[j];
		struct xevb_mep_params q = p;
		jb->daddr = htonl(dst[j]);
		jb->dst_mac[0] = 2;
		jb->dst_mac[5] = (uint8_t)(dst[j] & 0xff);
		jb->flags = flags[j];
		jb->recs = recs[j];
		/* The checksum user space gives the job: its header, lengths and all. */
		q.daddr = jb->daddr;
		q.n_frags = recs[j];
		cr_assert(gt(sz, (size_t)xevb_write_frame(want, sizeof(want), &q), 0));
		jb->ip_csum = xevb_ld16(want + 14 + 10);
		memcpy(sk->bss->job_evs + j * K, evs[j], sizeof(evs[j]));
	}
	sk->bss->job_tail = NJ;
	int fd = bpf_program__fd(sk->progs.xevb_gen_dfm);

	for (uint32_t rep = 0; rep < NJ * NSRC; rep++) {
		uint32_t j = rep / NSRC, s = rep % NSRC, got;
		struct xevb_mep_params q = p;
		ssize_t wlen;

		got = run_out(fd, frame, (uint32_t)len, out, sizeof(out), &retval);
		cr_assert(eq(u32, retval, XDP_TX), "rep %u", rep);
		q.dst_mac[0] = 2;
		q.dst_mac[5] = (uint8_t)(dst[j] & 0xff);
		q.daddr = htonl(dst[j]);
		q.source_id = ids[s];
		q.packet_seq = seq[s]++;
		q.event_id = evs[j];
		q.n_frags = recs[j];
		q.flags = flags[j];
		wlen = xevb_write_frame(want, sizeof(want), &q);
		cr_assert(eq(u32, got, (uint32_t)wlen), "rep %u: job %u source %u: %u bytes", rep, j, s, got);
		cr_assert(eq(int, memcmp(out, want, (size_t)wlen), 0), "rep %u: job %u source %u differs", rep, j,
			  s);
		/* The next repetition starts from these bytes, as a recycled page does. */
		memcpy(frame, out, got);
		frags += recs[j];
		bytes += got;
	}
	cr_assert(eq(u32, sk->bss->job_head, NJ));
	cr_assert(eq(u64, sk->bss->tx_packets, (uint64_t)NJ * NSRC));
	cr_assert(eq(u64, sk->bss->tx_frags, frags));
	cr_assert(eq(u64, sk->bss->tx_bytes, bytes));
	cr_assert(eq(u64, sk->bss->bad_jobs, 0));

	/* No records, and more than the template holds: dropped, the ring moves on. */
	sk->bss->jobs[NJ] = sk->bss->jobs[0];
	sk->bss->jobs[NJ].recs = 0;
	sk->bss->jobs[NJ + 1] = sk->bss->jobs[0];
	sk->bss->jobs[NJ + 1].recs = K + 1;
	sk->bss->job_tail = NJ + 2;
	for (uint32_t rep = 0; rep < 2 * NSRC; rep++) {
		run_out(fd, frame, (uint32_t)len, out, sizeof(out), &retval);
		cr_assert(eq(u32, retval, XDP_DROP), "bad job rep %u", rep);
	}
	cr_assert(eq(u64, sk->bss->bad_jobs, 2 * NSRC));
	cr_assert(eq(u32, sk->bss->job_head, NJ + 2));
	/* ... without spending a packet_seq: the builder sees no gap. */
	for (uint32_t i = 0; i < NSRC; i++) {
		uint32_t v = 0;
		cr_assert(eq(int, bpf_map_lookup_elem(bpf_map__fd(sk->maps.gen_seq), &i, &v), 0));
		cr_assert(eq(u32, v, seq[i]), "source %u packet_seq", i);
	}

	/* The ring is empty: the repetition polls, then drops. */
	run_out(fd, frame, (uint32_t)len, out, sizeof(out), &retval);
	cr_assert(eq(u32, retval, XDP_DROP));
	cr_assert(eq(u64, sk->bss->idle_reps, 1));
	cr_assert(eq(u64, sk->bss->tx_packets, (uint64_t)NJ * NSRC));
	xevb_gen__destroy(sk);
}

/*
 * Segments (xevb_gen_seg): a fragment larger than a packet leaves as
 * segments, every repetition byte for byte the frame xevb_write_frame makes
 * for that segment with the parameters the socket sender uses (its
 * send_segments: packet_seq per segment, IPv4 id its low 16 bits, the
 * whole fragment's length and CRC-32C in each), a source's segments in a
 * row, END_OF_RUN on every segment of the last block. Frames come from a
 * pool of pages, each first holding the template and then what its last
 * repetition left, as live mode's page pool: a page that still holds the
 * segment's bytes is not copied again (seg_copies, exact).
 */
static void segments(bool udp, uint16_t frag, uint32_t pool)
{
	enum { BLOCKS = 3, MAX_POOL = 8 };
	const size_t budget = 1500 - 20 - (udp ? 8 : 0);
	uint32_t nseg = xevb_seg_count(frag, budget), stride = xevb_seg_stride(budget);
	static uint8_t payload[65536];
	struct xevb_mep_params p = template_params(udp);
	static uint8_t pages[MAX_POOL][4096];
	uint8_t out[4096], want[4096];
	struct xevb_gen *sk = xevb_gen__open();
	uint32_t retval, reps = BLOCKS * NSRC * nseg;
	uint64_t bytes = 0;
	ssize_t len;

	cr_assert(gt(u32, nseg, 1), "a %u-byte fragment needs segments", frag);
	cr_assert(le(u32, pool, MAX_POOL));
	p.flags = XEVB_MEP_F_SEGMENT;
	p.n_frags = 1;
	p.frag_size = frag;
	p.seg_budget = (uint16_t)budget;
	xevb_emu_fill(payload, frag);
	p.seg_crc32c = xevb_crc32c(0, payload, frag);
	len = xevb_write_frame(pages[0], sizeof(pages[0]), &p);
	cr_assert(gt(sz, (size_t)len, 0));
	for (uint32_t i = 1; i < pool; i++)
		memcpy(pages[i], pages[0], (size_t)len);
	cr_assert(not(eq(ptr, sk, NULL)));
	sk->rodata->cfg_n_src = NSRC;
	sk->rodata->cfg_pack = 1;
	sk->rodata->cfg_ip_off = 14;
	sk->rodata->cfg_mep_off = 14 + 20 + (udp ? 8 : 0);
	sk->rodata->cfg_first_event = FIRST;
	sk->rodata->cfg_per_src_addr = 1;
	sk->rodata->cfg_seg_count = nseg;
	sk->rodata->cfg_seg_stride = stride;
	sk->rodata->cfg_seg_last = XEVB_PAD4(frag - (nseg - 1) * stride);
	memcpy((uint8_t *)(uintptr_t)sk->rodata->seg_payload, payload, frag);
	for (int i = 0; i < NSRC; i++) {
		sk->rodata->srcs[i].saddr = htonl(SADDR_BASE + (uint32_t)i);
		sk->rodata->srcs[i].source_id = ids[i];
	}
	cr_assert(eq(int, xevb_gen__load(sk), 0), "load the generator");
	sk->data->max_block = BLOCKS - 1;
	sk->data->eor_block = BLOCKS - 1;
	int fd = bpf_program__fd(sk->progs.xevb_gen_seg);

	for (uint32_t rep = 0; rep < reps; rep++) {
		uint32_t k = rep % nseg, s = rep / nseg % NSRC, blk = rep / nseg / NSRC, got;
		uint8_t *page = pages[rep % pool];
		struct xevb_mep_params q = p;
		ssize_t wlen;

		got = run_out(fd, page, (uint32_t)len, out, sizeof(out), &retval);
		cr_assert(eq(u32, retval, XDP_TX), "rep %u", rep);
		q.saddr = htonl(SADDR_BASE + s);
		q.source_id = ids[s];
		q.flags |= blk == BLOCKS - 1 ? XEVB_MEP_F_END_OF_RUN : 0;
		q.packet_seq = blk * nseg + k;
		q.ip_id = (uint16_t)q.packet_seq;
		q.first_event_id = FIRST + blk;
		q.seg_offset = (uint16_t)(k * stride);
		q.payload = (const uint8_t *const[]){ payload };
		wlen = xevb_write_frame(want, sizeof(want), &q);
		cr_assert(eq(u32, got, (uint32_t)wlen), "rep %u: segment %u of source %u: %u bytes", rep, k, s,
			  got);
		cr_assert(eq(int, memcmp(out, want, (size_t)wlen), 0), "rep %u: segment %u of source %u differs",
			  rep, k, s);
		/* The page keeps these bytes; its length is the template's again. */
		memcpy(page, out, got);
		bytes += got;
	}
	/* A pool of one changes segment every time but the first; a pool of
	   nseg pages keeps one segment per page after their first use. */
	cr_assert(eq(u64, sk->bss->seg_copies, pool == 1 ? reps - 1 : nseg - 1));
	cr_assert(eq(u64, sk->bss->tx_packets, reps));
	cr_assert(eq(u64, sk->bss->tx_bytes, bytes));
	cr_assert(eq(u64, sk->bss->short_frame, 0));

	/* Past the stop line: dropped and counted, never sent. */
	run_out(fd, pages[0], (uint32_t)len, out, sizeof(out), &retval);
	cr_assert(eq(u32, retval, XDP_DROP));
	cr_assert(eq(u64, sk->bss->over_limit, 1));
	xevb_gen__destroy(sk);
}

/* 4 segments, the last of 644 bytes; 5001 bytes: the last needs padding. */
Test(xdp_gen, segments_raw_recycled_page)
{
	segments(false, 5000, 1);
}
Test(xdp_gen, segments_raw_page_per_seg)
{
	segments(false, 5001, 4);
}
Test(xdp_gen, segments_udp_64k)
{
	segments(true, 65535, 1);
}

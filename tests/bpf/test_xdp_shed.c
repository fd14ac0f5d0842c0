// SPDX-License-Identifier: GPL-2.0-only
/*
 * Whole-event shedding in the XDP program (xevb/shed.h), through
 * BPF_PROG_RUN: idle (gate word 0) sheds nothing and writes nothing; with
 * a level, exactly the MEPs whose first event id block the gate rejects
 * are dropped, the same for every source, counted in shed (MEPs,
 * fragments) and, for the reference source, shed_ref_source (its
 * fragments: the events); the switch block splits old and new levels;
 * non-MEP, malformed, IP-fragment and unknown-source traffic is never
 * shed; the program records the newest block only while armed.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/bytes.h>
#include "wire/mep_write.h"
#include <xevb/shed.h>
#include <xevb/wire.h>
#include "xevb_steer.skel.h"
#include "xdp_harness.h"

#define REF_SOURCE 2
#define N_FRAGS    10
#define BLK        (1u << XEVB_SHED_BLOCK_SHIFT) /* event ids a block */

/* Fragments (events) in the MEPs the tests send; N_FRAGS unless a test says. */
static uint32_t n_frags = N_FRAGS;

static struct xdp_env env;

static void open_env(void)
{
	xdp_env_open(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	xdp_env_add_xsk(&env);
	env.skel->data_shed->shed_gate.ref_source = REF_SOURCE;
}

static void teardown(void)
{
	xdp_env_close(&env);
}

TestSuite(xdp_shed, .init = open_env, .fini = teardown, .timeout = 60);

static struct xevb_shed_gate *gate(void)
{
	return &env.skel->data_shed->shed_gate;
}

static size_t mep_frame(uint8_t *buf, size_t cap, uint16_t source_id, uint32_t first_event_id, bool udp)
{
	struct xevb_mep_params p = {
		.saddr = htonl(0xc6120101u + source_id),
		.daddr = htonl(0xc6120201u),
		.ip_proto = XEVB_DEFAULT_IP_PROTO,
		.udp_dport = udp ? XEVB_DEFAULT_UDP_PORT : 0,
		.source_id = source_id,
		.run_number = 7,
		.packet_seq = first_event_id / n_frags,
		.first_event_id = first_event_id,
		.n_frags = n_frags,
		.frag_size = 40,
	};
	ssize_t n = xevb_write_frame(buf, cap, &p);

	cr_assert(gt(i64, (int64_t)n, 0), "xevb_write_frame: %s", strerror(errno));
	return (size_t)n;
}

static const int slots_pass[] = { XEVB_RES_MEP, XEVB_XDP_TO_XSK };
static const int slots_shed[] = { XEVB_RES_MEP, XEVB_XDP_SHED };
static const int slots_shed_ref[] = { XEVB_RES_MEP, XEVB_XDP_SHED, XEVB_XDP_SHED_REF };

/*
 * One MEP through the program: shed (counted) or passed on, as want_shed
 * says; passed means to the socket (XDP mode) or to the kernel (pass mode).
 */
static void expect_mep_as(uint16_t source_id, uint32_t first_event_id, bool want_shed, bool udp, bool pass_mode)
{
	uint8_t frame[2048];
	size_t len = mep_frame(frame, sizeof(frame), source_id, first_event_id, udp);
	static const int slots_to_kernel[] = { XEVB_RES_MEP, XEVB_XDP_NO_XSK };
	struct xdp_outcome o;
	const char *bad;

	xdp_env_run(&env, frame, len, &o);
	if (!want_shed)
		bad = pass_mode ? xdp_outcome_mismatch(&o, len, XDP_PASS, slots_to_kernel, 2, n_frags) :
				  xdp_outcome_mismatch(&o, len, XDP_REDIRECT, slots_pass, 2, n_frags);
	else if (source_id == REF_SOURCE)
		bad = xdp_outcome_mismatch(&o, len, XDP_DROP, slots_shed_ref, 3, n_frags);
	else
		bad = xdp_outcome_mismatch(&o, len, XDP_DROP, slots_shed, 2, n_frags);
	cr_assert(bad == NULL, "%ssource %u, first event %u (block %u), want %s: %s",
		  pass_mode ? "pass mode: " : "", source_id, first_event_id,
		  first_event_id >> XEVB_SHED_BLOCK_SHIFT, want_shed ? "shed" : "passed", bad);
}

static void expect_mep(uint16_t source_id, uint32_t first_event_id, bool want_shed, bool udp)
{
	expect_mep_as(source_id, first_event_id, want_shed, udp, false);
}

/* Gate off: MEPs of the first blocks from 4 sources, none shed, no block recorded. */
static void expect_idle_passes_all(uint32_t blocks, bool pass_mode)
{
	gate()->word = 0;
	for (uint32_t e = 0; e < blocks * BLK; e += 10 * BLK)
		for (uint16_t s = 0; s < 4; s++)
			expect_mep_as(s, e, false, s & 1, pass_mode);
	cr_assert(eq(u32, gate()->newest_block, XEVB_SHED_BLOCK_UNKNOWN));
}

Test(xdp_shed, idle_sheds_nothing_and_writes_nothing)
{
	expect_idle_passes_all(200, false);
}

Test(xdp_shed, armed_full_level_records_newest_block)
{
	gate()->word = xevb_shed_word(XEVB_SHED_ONE, XEVB_SHED_ONE, 0, 1);
	expect_mep(0, 5 * BLK + 3, false, false);
	cr_assert(eq(u32, gate()->newest_block, 5));
	expect_mep(1, 9 * BLK, false, false);
	cr_assert(eq(u32, gate()->newest_block, 9));
	/* An older block does not move it back. */
	expect_mep(2, 4 * BLK, false, false);
	cr_assert(eq(u32, gate()->newest_block, 9));
	/* Across the wrap of event ids: block 2 is after the last block. */
	gate()->newest_block = XEVB_SHED_BLOCK_MASK;
	expect_mep(0, 2 * BLK, false, false);
	cr_assert(eq(u32, gate()->newest_block, 2));
	/* Not armed: nothing recorded even while shedding. */
	gate()->word = xevb_shed_word(0, 0, 0, 0);
	expect_mep(0, 40 * BLK, true, false);
	cr_assert(eq(u32, gate()->newest_block, 2));
}

Test(xdp_shed, same_blocks_shed_from_every_source_and_counted)
{
	const uint32_t accept = 26214; /* 40% */
	struct xevb_xdp_ctr before[XEVB_XDP__SLOTS], after[XEVB_XDP__SLOTS];
	uint64_t want_meps = 0, want_ref = 0, kept_blocks = 0;
	const uint32_t n_blocks = 300;

	gate()->word = xevb_shed_word(accept, accept, 0, 1);
	xdp_env_counters(&env, before);
	for (uint32_t blk = 1000; blk < 1000 + n_blocks; blk++) {
		bool shed = xevb_shed_drops(gate()->word, blk);

		kept_blocks += !shed;
		/* Several MEPs of the block, each source, raw and UDP: one verdict. */
		for (uint32_t e = blk * BLK; e < (blk + 1) * BLK; e += 5)
			for (uint16_t s = 0; s < 4; s++) {
				expect_mep(s, e, shed, (e / N_FRAGS + s) & 1);
				want_meps += shed;
				want_ref += shed && s == REF_SOURCE;
			}
	}
	xdp_env_counters(&env, after);
	cr_assert(eq(u64, after[XEVB_XDP_SHED].packets - before[XEVB_XDP_SHED].packets, want_meps));
	cr_assert(eq(u64, after[XEVB_XDP_SHED].frags - before[XEVB_XDP_SHED].frags, want_meps * N_FRAGS));
	cr_assert(eq(u64, after[XEVB_XDP_SHED_REF].packets - before[XEVB_XDP_SHED_REF].packets, want_ref));
	cr_assert(eq(u64, after[XEVB_XDP_SHED_REF].frags - before[XEVB_XDP_SHED_REF].frags, want_ref * N_FRAGS));
	/* The level is the fraction of blocks let through (3-gap spread: within 2 blocks here). */
	cr_assert(ge(u64, kept_blocks, n_blocks * 4 / 10 - 2), "kept %llu of %u", (unsigned long long)kept_blocks,
		  n_blocks);
	cr_assert(le(u64, kept_blocks, n_blocks * 4 / 10 + 2), "kept %llu of %u", (unsigned long long)kept_blocks,
		  n_blocks);
	cr_assert(gt(u64, want_ref, 0));
}

Test(xdp_shed, switch_block_splits_old_and_new_level)
{
	/* Old level: everything; from block 500 on: nothing. */
	gate()->word = xevb_shed_word(0, XEVB_SHED_ONE, 500, 1);
	for (uint32_t blk = 490; blk < 510; blk++)
		for (uint16_t s = 0; s < 3; s++)
			expect_mep(s, blk * BLK + 7, blk >= 500, false);
	/* Turned around: everything before 500 shed, nothing after. */
	gate()->word = xevb_shed_word(XEVB_SHED_ONE, 0, 500, 1);
	for (uint32_t blk = 490; blk < 510; blk++)
		expect_mep(REF_SOURCE, blk * BLK, blk < 500, false);
	/* A MEP is judged by its first event id's block, even when it runs into the next. */
	expect_mep(1, 499 * BLK + BLK - 1, true, false);
	expect_mep(1, 500 * BLK, false, false);
}

/* Queue 0's frames waiting as the ring guard sees them: steered - released. */
static void set_waiting(uint64_t waiting)
{
	gate()->released[0] = gate()->steered[0] - waiting;
}

Test(xdp_shed, guard_off_counts_steered_and_decides_nothing)
{
	gate()->guard_limit = 0;
	set_waiting(1000000);
	for (uint32_t blk = 10; blk < 20; blk++)
		for (uint16_t s = 0; s < 4; s++)
			expect_mep(s, blk * BLK, false, s & 1);
	cr_assert(eq(u64, gate()->steered[0] - gate()->released[0], 1000000 + 40));
	for (int i = 0; i < XEVB_GUARD_SLOTS; i++)
		cr_assert(eq(u64, gate()->verdicts[i], 0), "slot %d written with the guard off", i);
	cr_assert(eq(u64, gate()->guard_refused + gate()->guard_admitted, 0));
}

/*
 * The first MEP of a block decides for every source's MEPs of it: a block
 * admitted while few frames wait is never cut, one refused while many wait
 * stays refused when the ring has drained, and the next block is judged
 * afresh. Refused MEPs count as shed, the reference source's as events.
 */
Test(xdp_shed, guard_refuses_whole_blocks_over_its_limit)
{
	struct xevb_xdp_ctr before[XEVB_XDP__SLOTS], after[XEVB_XDP__SLOTS];

	gate()->guard_limit = 10;
	set_waiting(0);
	xdp_env_counters(&env, before);
	expect_mep(0, BLK, false, false); /* block 1 admitted */
	set_waiting(11);
	for (uint16_t s = 1; s < 4; s++)
		expect_mep(s, BLK, false, s & 1); /* ... and not cut */
	expect_mep(0, 2 * BLK + 5, true, false);  /* block 2 refused */
	set_waiting(0);
	for (uint16_t s = 1; s < 4; s++)
		expect_mep(s, 2 * BLK + 5, true, s & 1);
	expect_mep(3, 3 * BLK, false, false); /* block 3 judged afresh */
	set_waiting(50);
	for (uint16_t s = 0; s < 3; s++)
		expect_mep(s, 3 * BLK, false, false);
	xdp_env_counters(&env, after);
	cr_assert(eq(u64, gate()->guard_refused, 1));
	cr_assert(eq(u64, gate()->guard_admitted, 2));
	cr_assert(eq(u64, after[XEVB_XDP_SHED].packets - before[XEVB_XDP_SHED].packets, 4));
	cr_assert(eq(u64, after[XEVB_XDP_SHED].frags - before[XEVB_XDP_SHED].frags, 4 * N_FRAGS));
	cr_assert(eq(u64, after[XEVB_XDP_SHED_REF].frags - before[XEVB_XDP_SHED_REF].frags, N_FRAGS));
	cr_assert(eq(u64, after[XEVB_XDP_TO_XSK].packets - before[XEVB_XDP_TO_XSK].packets, 8));
}

/* A full ring while the builder is releasing frames (it drains a burst) refuses nothing. */
Test(xdp_shed, guard_refuses_nothing_while_the_builder_releases)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	gate()->guard_limit = 10;
	set_waiting(1000);
	/* Released "just now" (a minute ahead, so that no scheduling delay makes it stale). */
	gate()->released_ns[0] = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 60000000000ull;
	for (uint32_t blk = 40; blk < 50; blk++)
		expect_mep(0, blk * BLK, false, false);
	cr_assert(eq(u64, gate()->guard_refused, 0));
	/* Nothing released for over a millisecond: the next block is refused. */
	gate()->released_ns[0] = 0;
	expect_mep(0, 50 * BLK, true, false);
	cr_assert(eq(u64, gate()->guard_refused, 1));
}

/*
 * The guard remembers XEVB_GUARD_SLOTS blocks: a MEP of a block whose slot
 * a later block took is very late and goes to the builder (which counts it
 * late), whatever waits; and the gate's own shedding comes first.
 */
Test(xdp_shed, guard_forgets_old_blocks_and_follows_the_gate)
{
	const uint32_t old_blk = 100, new_blk = 100 + XEVB_GUARD_SLOTS;

	gate()->guard_limit = 10;
	set_waiting(20);
	expect_mep(0, old_blk * BLK, true, false);
	set_waiting(0);
	expect_mep(0, new_blk * BLK, false, false);
	set_waiting(20);
	expect_mep(1, old_blk * BLK, false, false);
	cr_assert(eq(u64, gate()->verdicts[new_blk % XEVB_GUARD_SLOTS], xevb_guard_slot(new_blk, 0)));

	/* Everything shed by the gate: the guard never sees those blocks. */
	gate()->word = xevb_shed_word(0, 0, 0, 0);
	expect_mep(0, (new_blk + 1) * BLK, true, false);
	cr_assert(eq(u64, gate()->verdicts[(new_blk + 1) % XEVB_GUARD_SLOTS], 0));
	gate()->word = 0;
}

/*
 * A block admitted right after a run of blocks the program shed, the run
 * starting right after a block it admitted, is vouched for (the builder
 * then jumps over the gap without a quorum); the run's length goes with
 * it in units of 16 blocks. A gap the program did not make breaks the chain.
 */
Test(xdp_shed, guard_vouches_for_the_block_after_a_run_it_shed)
{
	gate()->guard_limit = 10;
	set_waiting(0);
	expect_mep(0, 10 * BLK, false, false); /* anchors the chain */
	set_waiting(20);
	for (uint32_t blk = 11; blk <= 15; blk++)
		expect_mep(0, blk * BLK, true, false); /* a run of 5 refused */
	/* The gate's own shedding extends the run too. */
	gate()->word = xevb_shed_word(0, 0, 0, 0);
	expect_mep(0, 16 * BLK, true, false);
	gate()->word = 0;
	set_waiting(0);
	expect_mep(0, 17 * BLK, false, false);
	expect_mep(3, 17 * BLK + 7, false, false); /* every source's MEPs of it alike */
	cr_assert(eq(u64, gate()->guard_vouched, 1));
	cr_assert(eq(u64, gate()->verdicts[17],
		     xevb_guard_slot(17, XEVB_GUARD_V_VOUCHED | 1 << XEVB_GUARD_V_RUN_SHIFT)),
		  "6 blocks shed: 1 unit of 16");

	/* Block 19 refused after 17 (18 never seen): not ours, no vouching for 20. */
	set_waiting(20);
	expect_mep(0, 19 * BLK, true, false);
	set_waiting(0);
	expect_mep(0, 20 * BLK, false, false);
	cr_assert(eq(u64, gate()->guard_vouched, 1));
	cr_assert(eq(u64, gate()->verdicts[20], xevb_guard_slot(20, 0)));

	/* A MEP far ahead (a stray) admitted, then the traffic's run: the chain stays with the stray. */
	expect_mep(1, 5000 * BLK, false, false);
	set_waiting(20);
	expect_mep(0, 21 * BLK, true, false);
	set_waiting(0);
	expect_mep(0, 22 * BLK, false, false);
	cr_assert(eq(u64, gate()->guard_vouched, 1));
}

/*
 * MEPs of more events than a block (L1 packs 25 to a MEP, blocks are 16
 * ids): blocks that hold no MEP's start do not break the chain, and the
 * run counts the blocks between the anchor's last event and the vouched
 * MEP's first.
 */
Test(xdp_shed, guard_chain_follows_meps_longer_than_a_block)
{
	n_frags = 25;
	gate()->guard_limit = 10;
	set_waiting(0);
	expect_mep(0, 0, false, false);  /* blocks 0-1 */
	expect_mep(0, 25, false, false); /* blocks 1-3: the anchor */
	set_waiting(20);
	expect_mep(0, 50, true, false); /* blocks 3-4, refused */
	expect_mep(0, 75, true, false); /* blocks 4-6, refused */
	set_waiting(0);
	expect_mep(0, 100, false, false); /* block 6: vouched */
	cr_assert(eq(u64, gate()->guard_vouched, 1));
	cr_assert(eq(u64, gate()->verdicts[100 / BLK],
		     xevb_guard_slot(100 / BLK, XEVB_GUARD_V_VOUCHED | 1 << XEVB_GUARD_V_RUN_SHIFT)));
	/* A step past the last MEP's end breaks it: 200 starts 5 blocks after 100's last event. */
	set_waiting(20);
	expect_mep(0, 200, true, false);
	set_waiting(0);
	expect_mep(0, 225, false, false);
	cr_assert(eq(u64, gate()->guard_vouched, 1));
}

/*
 * Past guard_full a block would not fit in the ring: refused even while
 * the builder releases frames; below it, a running builder is trusted.
 */
Test(xdp_shed, guard_refuses_past_full_even_while_the_builder_releases)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	gate()->guard_limit = 10;
	gate()->guard_full = 100;
	gate()->released_ns[0] = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 60000000000ull;
	set_waiting(100);
	expect_mep(0, 40 * BLK, false, false);
	cr_assert(eq(u64, gate()->guard_refused, 0));
	set_waiting(101);
	expect_mep(0, 41 * BLK, true, false);
	cr_assert(eq(u64, gate()->guard_refused, 1));
	/* Off (0): only a stalled builder has blocks refused. */
	gate()->guard_full = 0;
	set_waiting(100000);
	expect_mep(0, 42 * BLK, false, false);
	cr_assert(eq(u64, gate()->guard_refused, 1));
}

/* One frame through the program: it must end in action, counted in slot alone. */
static void expect_one_slot(const uint8_t *frame, size_t len, uint32_t action, int slot, const char *what)
{
	struct xdp_outcome o;
	const char *bad;

	xdp_env_run(&env, frame, len, &o);
	bad = xdp_outcome_mismatch(&o, len, action, &slot, 1, 0);
	cr_assert(bad == NULL, "%s: %s", what, bad);
}

/* A valid MEP of source 0 (raw or UDP) with one field changed, and the one slot and action it must get. */
struct frame_edit {
	bool udp;
	uint16_t off;
	enum { EDIT_SET16, EDIT_XOR8, EDIT_OR8 } op;
	uint16_t v;
	uint32_t action;
	int slot;
	const char *what;
};

static void expect_edits(const struct frame_edit *e, size_t n)
{
	uint8_t frame[2048];

	for (; n--; e++) {
		size_t len = mep_frame(frame, sizeof(frame), 0, 64, e->udp);

		if (e->op == EDIT_SET16)
			xevb_st16(frame + e->off, e->v);
		else if (e->op == EDIT_XOR8)
			frame[e->off] ^= (uint8_t)e->v;
		else
			frame[e->off] |= (uint8_t)e->v;
		expect_one_slot(frame, len, e->action, e->slot, e->what);
	}
}

#define EXPECT_EDITS(edits) expect_edits(edits, sizeof(edits) / sizeof((edits)[0]))

#define MAGIC_AT    (XEVB_WR_ETH_HLEN + XEVB_WR_IP_HLEN)
#define IP_FLAGS_AT (XEVB_WR_ETH_HLEN + 6)

static const struct frame_edit not_meps_shed_mode[] = {
	/* Not IPv4: the kernel's. */
	{ false, 12, EDIT_SET16, 0x86dd, XDP_PASS, XEVB_RES_OTHER, "IPv6 ethertype" },
	/* Malformed (bad magic): dropped as malformed, not as shed. */
	{ false, MAGIC_AT, EDIT_XOR8, 0xff, XDP_DROP, XEVB_RES_BAD_MAGIC, "bad magic" },
	/* An IPv4 fragment (MF): the kernel reassembles it. */
	{ false, IP_FLAGS_AT, EDIT_OR8, 0x20, XDP_PASS, XEVB_RES_IP_FRAGMENT, "IP fragment" },
};

/* Everything that is not a valid MEP of a known source goes its usual way, at level 0. */
Test(xdp_shed, other_traffic_is_never_shed)
{
	uint8_t frame[2048];
	struct xdp_outcome o;
	const char *bad;
	size_t len;
	__u32 one_key = 0;
	__u8 one = 1;

	gate()->word = xevb_shed_word(0, 0, 0, 1);
	EXPECT_EDITS(not_meps_shed_mode);

	/* UDP to another port: not ours. */
	{
		struct xevb_mep_params p = {
			.saddr = htonl(0xc6120101u),
			.daddr = htonl(0xc6120201u),
			.udp_dport = 53,
			.source_id = 0,
			.run_number = 7,
			.first_event_id = 64,
			.n_frags = 2,
			.frag_size = 8,
		};
		ssize_t n = xevb_write_frame(frame, sizeof(frame), &p);
		cr_assert(gt(i64, (int64_t)n, 0));
		expect_one_slot(frame, (size_t)n, XDP_PASS, XEVB_RES_OTHER, "UDP port 53");
	}

	/* An unconfigured source under --xdp-filter: unknown_source, not shed. */
	cr_assert(eq(int, bpf_map_update_elem(bpf_map__fd(env.skel->maps.src_ids), &one_key, &one, 0), 0));
	env.skel->bss->filter_flags = XEVB_FILTER_SRC_ID;
	len = mep_frame(frame, sizeof(frame), 3, 64, false);
	xdp_env_run(&env, frame, len, &o);
	bad = xdp_outcome_mismatch(&o, len, XDP_DROP, (const int[]){ XEVB_RES_MEP, XEVB_XDP_UNKNOWN_SRC }, 2,
				   N_FRAGS);
	cr_assert(bad == NULL, "unknown source: %s", bad);
	/* The configured one is shed at level 0. */
	expect_mep(0, BLK, true, false);
}

/*
 * Pass mode (the socket builder's program, cfg_pass): the same gate; a MEP
 * it does not shed goes to the kernel (counted no_xsk_to_kernel), and
 * everything that is not a valid MEP passes too, malformed included, for
 * the socket builder to judge as it would without the program.
 */
static void open_pass_env(void)
{
	xdp_env_open_pass(&env, XEVB_DEFAULT_IP_PROTO, XEVB_DEFAULT_UDP_PORT);
	env.skel->data_shed->shed_gate.ref_source = REF_SOURCE;
}

TestSuite(xdp_shed_pass, .init = open_pass_env, .fini = teardown, .timeout = 60);

static void expect_mep_pass(uint16_t source_id, uint32_t first_event_id, bool want_shed, bool udp)
{
	expect_mep_as(source_id, first_event_id, want_shed, udp, true);
}

Test(xdp_shed_pass, idle_passes_every_mep_to_the_kernel)
{
	expect_idle_passes_all(100, true);
}

Test(xdp_shed_pass, shed_blocks_dropped_the_rest_passed_and_counted)
{
	const uint32_t accept = 26214; /* 40% */
	struct xevb_xdp_ctr before[XEVB_XDP__SLOTS], after[XEVB_XDP__SLOTS];
	uint64_t shed_meps = 0, passed_meps = 0, ref_meps = 0;

	gate()->word = xevb_shed_word(accept, accept, 0, 1);
	xdp_env_counters(&env, before);
	for (uint32_t blk = 2000; blk < 2200; blk++) {
		bool shed = xevb_shed_drops(gate()->word, blk);

		for (uint32_t e = blk * BLK; e < (blk + 1) * BLK; e += 5)
			for (uint16_t s = 0; s < 4; s++) {
				expect_mep_pass(s, e, shed, (e / N_FRAGS + s) & 1);
				shed_meps += shed;
				passed_meps += !shed;
				ref_meps += shed && s == REF_SOURCE;
			}
	}
	cr_assert(eq(u32, gate()->newest_block, 2199));
	xdp_env_counters(&env, after);
	cr_assert(eq(u64, after[XEVB_XDP_SHED].packets - before[XEVB_XDP_SHED].packets, shed_meps));
	cr_assert(eq(u64, after[XEVB_XDP_SHED_REF].frags - before[XEVB_XDP_SHED_REF].frags, ref_meps * N_FRAGS));
	cr_assert(eq(u64, after[XEVB_XDP_NO_XSK].packets - before[XEVB_XDP_NO_XSK].packets, passed_meps));
	cr_assert(eq(u64, after[XEVB_XDP_TO_XSK].packets - before[XEVB_XDP_TO_XSK].packets, 0));
	cr_assert(eq(u64, after[XEVB_RES_MEP].packets - before[XEVB_RES_MEP].packets, shed_meps + passed_meps));
	cr_assert(gt(u64, shed_meps, 0));
	cr_assert(gt(u64, passed_meps, 0));
}

/* Pass mode has no socket ring to guard: a limit changes nothing. */
Test(xdp_shed_pass, guard_ignored_in_pass_mode)
{
	gate()->word = 0;
	gate()->guard_limit = 1;
	gate()->released[0] = gate()->steered[0] - 100;
	for (uint32_t blk = 30; blk < 40; blk++)
		expect_mep_pass(0, blk * BLK, false, false);
	for (int i = 0; i < XEVB_GUARD_SLOTS; i++)
		cr_assert(eq(u64, gate()->verdicts[i], 0), "slot %d written in pass mode", i);
}

static const struct frame_edit not_meps_pass_mode[] = {
	{ false, 12, EDIT_SET16, 0x86dd, XDP_PASS, XEVB_RES_OTHER, "IPv6 ethertype" },
	/* Malformed (bad magic): counted by the program, judged again by the socket builder. */
	{ true, MAGIC_AT + XEVB_WR_UDP_HLEN, EDIT_XOR8, 0xff, XDP_PASS, XEVB_RES_BAD_MAGIC, "bad magic (UDP)" },
	{ false, MAGIC_AT, EDIT_XOR8, 0xff, XDP_PASS, XEVB_RES_BAD_MAGIC, "bad magic (raw)" },
	{ false, IP_FLAGS_AT, EDIT_OR8, 0x20, XDP_PASS, XEVB_RES_IP_FRAGMENT, "IP fragment" },
};

/* Not a valid MEP: to the kernel untouched, even malformed and at level 0. */
Test(xdp_shed_pass, other_traffic_and_malformed_pass)
{
	gate()->word = xevb_shed_word(0, 0, 0, 1);
	EXPECT_EDITS(not_meps_pass_mode);

	/* A valid MEP at level 0 is still shed. */
	expect_mep_pass(1, 64, true, false);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shedding controller (user/evb/shed.c) and the gate's verdict
 * (xevb/shed.h), step by step: idle stays idle and costs the program
 * nothing (word 0); pressure arms, then cuts (1/8 for a filling ring, 1/2
 * for kernel drops) once per block;
 * calm raises back to 65536 and, later, idles (at once where the ring runs
 * dry, but not after cuts for the backlog); a level change keeps the
 * old level for the blocks before its switch block.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/shed.h>

TestSuite(shed, .timeout = 10);

#define RING 4096

static const struct xevb_shed_in calm_in = { .ring_used = 0, .ring_size = RING };
/* Under 1/8 but not dry (1/32): the builder still has frames to take. */
static const struct xevb_shed_in low_in = { .ring_used = RING / 16, .ring_size = RING };
static const struct xevb_shed_in full_in = { .ring_used = RING * 3 / 4, .ring_size = RING };
static const struct xevb_shed_in drop_in = { .ring_used = 10, .ring_size = RING, .drops = 3 };

static struct xevb_shed_gate fresh_gate(void)
{
	return (struct xevb_shed_gate){ .word = 0, .newest_block = XEVB_SHED_BLOCK_UNKNOWN };
}

/* The tests' lead: 4 blocks, which keeps their block numbers short. */
static const struct xevb_shed_cfg lead4 = { .lead_blocks = 4 };

/* Armed and told by the "program" that block newest was seen. */
static void armed_at(struct xevb_shed *s, struct xevb_shed_gate *g, uint32_t newest)
{
	xevb_shed_init(s, &lead4);
	*g = fresh_gate();
	g->newest_block = 7; /* stale: arming must forget it */
	cr_assert(eq(u32, xevb_shed_tick(s, g, &drop_in), XEVB_SHED_ONE));
	cr_assert(s->armed);
	cr_assert(eq(u64, g->word, XEVB_SHED_W_ARMED));
	cr_assert(eq(u32, g->newest_block, XEVB_SHED_BLOCK_UNKNOWN));
	g->newest_block = newest;
}

Test(shed, no_pressure_stays_idle)
{
	struct xevb_shed s;
	struct xevb_shed_gate g = fresh_gate();
	/* Up to half the ring, filling, no drop: not pressure. */
	struct xevb_shed_in half = { .ring_used = RING / 2, .ring_size = RING };

	xevb_shed_init(&s, NULL);
	for (int i = 0; i < 1000; i++) {
		cr_assert(eq(u32, xevb_shed_tick(&s, &g, i & 1 ? &half : &calm_in), XEVB_SHED_ONE));
		cr_assert(eq(u64, g.word, 0));
	}
	cr_assert(not(s.armed));
	cr_assert(eq(u64, s.cuts, 0));
	cr_assert(eq(u64, s.arms, 0));
}

/* By default a new level starts 256 event ids ahead of the newest block seen. */
Test(shed, default_lead_is_256_ids)
{
	struct xevb_shed s;

	xevb_shed_init(&s, NULL);
	cr_assert(eq(u32, s.cfg.lead_blocks << XEVB_SHED_BLOCK_SHIFT, 256));
}

Test(shed, pressure_arms_then_cuts)
{
	struct xevb_shed s;
	struct xevb_shed_gate g;

	armed_at(&s, &g, XEVB_SHED_BLOCK_UNKNOWN);
	/* No block seen since arming: no level yet. */
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &full_in), XEVB_SHED_ONE));
	cr_assert(eq(u64, g.word, XEVB_SHED_W_ARMED));

	g.newest_block = 100;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &full_in), 57344));
	cr_assert(eq(u32, s.prev, XEVB_SHED_ONE));
	cr_assert(eq(u32, s.switch_block, 104)); /* lead: 4 blocks */
	cr_assert(eq(u64, g.word, xevb_shed_word(57344, XEVB_SHED_ONE, 104, 1)));

	/* Until a block under the new level has come, no second cut. */
	for (uint32_t nb = 100; nb <= 104; nb++) {
		g.newest_block = nb;
		cr_assert(eq(u32, xevb_shed_tick(&s, &g, &drop_in), 57344), "newest %u", nb);
	}
	/* Kernel drops: half. */
	g.newest_block = 105;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &drop_in), 28672));
	cr_assert(eq(u32, s.prev, 57344));
	cr_assert(eq(u32, s.switch_block, 109));
	cr_assert(eq(u64, g.word, xevb_shed_word(28672, 57344, 109, 1)));
	cr_assert(eq(u64, s.cuts, 2));
	cr_assert(eq(u32, s.min_accept, 28672));
	/* A filling ring, no drop: an eighth. */
	g.newest_block = 110;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &full_in), 25088));
	cr_assert(eq(u32, s.prev, 28672));
	cr_assert(eq(u32, s.switch_block, 114));
}

Test(shed, draining_ring_is_not_pressure)
{
	struct xevb_shed s;
	struct xevb_shed_gate g;
	struct xevb_shed_in in = { .ring_size = RING };

	armed_at(&s, &g, 50);
	/* Over half full but falling every tick: the last cut is working. */
	for (uint32_t used = RING - 1; used > RING / 2; used -= 64) {
		in.ring_used = used;
		g.newest_block += 2;
		xevb_shed_tick(&s, &g, &in);
	}
	cr_assert(eq(u64, s.cuts, 1), "only the first tick (filling from 0) cuts: %llu",
		  (unsigned long long)s.cuts);
	cr_assert(eq(u32, s.accept, 57344));
}

Test(shed, never_below_the_floor)
{
	struct xevb_shed s;
	struct xevb_shed_gate g;

	armed_at(&s, &g, 0);
	for (uint32_t nb = 0; nb < 2000; nb++) {
		g.newest_block = nb;
		xevb_shed_tick(&s, &g, &drop_in);
	}
	cr_assert(eq(u32, s.accept, 1024));
	cr_assert(eq(u32, s.min_accept, 1024));
	/* Halved each block: 65536 -> 1024 in 6 cuts. */
	cr_assert(eq(u64, s.cuts, 6));
}

/*
 * Armed at block 1000 with cfg, then cut twice by a 3/4-full ring (1/8,
 * then 1/8 again once the first cut's blocks came): 50176. Returns the
 * newest block, 1005.
 */
static uint32_t cut_twice(struct xevb_shed *s, struct xevb_shed_gate *g, const struct xevb_shed_cfg *cfg)
{
	armed_at(s, g, 1000);
	s->cfg = (struct xevb_shed_cfg){ 0 };
	xevb_shed_init(s, cfg);
	s->armed = true;
	xevb_shed_tick(s, g, &full_in);
	g->newest_block = 1005;
	xevb_shed_tick(s, g, &full_in);
	cr_assert(eq(u32, s->accept, 50176));
	cr_assert(eq(u64, s->cuts, 2));
	return 1005;
}

Test(shed, recovery_raises_then_idles)
{
	struct xevb_shed_cfg cfg = { .calm_ticks = 4, .idle_ticks = 50, .lead_blocks = 4 };
	struct xevb_shed s;
	struct xevb_shed_gate g;
	uint32_t nb = cut_twice(&s, &g, &cfg), ticks = 0, last;

	/* Three calm ticks, the ring not dry: held; the fourth raises by a quarter of the way back to 65536. */
	for (int i = 0; i < 3; i++)
		cr_assert(eq(u32, xevb_shed_tick(&s, &g, &low_in), 50176));
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &low_in), 50176 + (65536 - 50176) / 4));
	/* A ring between 1/8 and 1/2 holds the level and restarts the count. */
	struct xevb_shed_in mid = { .ring_used = RING / 4, .ring_size = RING };
	last = s.accept;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &mid), last));
	for (int i = 0; i < 3; i++)
		cr_assert(eq(u32, xevb_shed_tick(&s, &g, &low_in), last));
	/* Then up every tick, to 65536, never past it. */
	while (s.accept < XEVB_SHED_ONE && ticks++ < 100) {
		last = s.accept;
		g.newest_block = ++nb;
		cr_assert(gt(u32, xevb_shed_tick(&s, &g, &low_in), last));
	}
	cr_assert(eq(u32, s.accept, XEVB_SHED_ONE));
	cr_assert(lt(u32, ticks, 20), "a quarter of the gap a tick: %u ticks from 82%%", ticks);
	cr_assert(s.armed);
	/* Calm for idle_ticks at full level (old blocks settled): idle again, word 0. */
	for (int i = 0; i < 60 && s.armed; i++) {
		g.newest_block = ++nb;
		xevb_shed_tick(&s, &g, &calm_in);
	}
	cr_assert(not(s.armed));
	cr_assert(eq(u64, g.word, 0));
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &calm_in), XEVB_SHED_ONE));
	cr_assert(eq(u64, g.word, 0));
}

/*
 * A dry ring (under 1/32): the builder is about to wait, its cuts
 * overshot. Back at once to the level where the pressure began, then ~3%
 * a tick while it stays dry; a ring not dry takes the calm path.
 */
Test(shed, dry_ring_raises_at_once)
{
	struct xevb_shed_cfg cfg = { .calm_ticks = 4, .lead_blocks = 4 };
	struct xevb_shed s;
	struct xevb_shed_gate g;
	uint32_t nb = cut_twice(&s, &g, &cfg);

	/* One dry tick: straight back to 65536, where the cuts began. */
	g.newest_block = ++nb;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &calm_in), XEVB_SHED_ONE));
	cr_assert(eq(u64, s.raises, 1));
	/* Pressure again at a lower level, then dry: back to that level, then 1/32 more a tick. */
	s.accept = s.prev = 40000;
	g.newest_block = nb += 10;
	xevb_shed_tick(&s, &g, &full_in);
	cr_assert(lt(u32, s.accept, 40000));
	cr_assert(eq(u32, s.ceiling, 40000));
	g.newest_block = ++nb;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &calm_in), 40000));
	g.newest_block = ++nb;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &calm_in), 40000 + 40000 / 32));
	/* At 1/32 of the ring it is not dry: held until calm_ticks. */
	struct xevb_shed_in edge = { .ring_used = RING / 32, .ring_size = RING };
	uint32_t held = s.accept;

	g.newest_block = ++nb;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &edge), held));
}

/* After a cut for the output's backlog a dry ring says nothing: the calm path. */
Test(shed, dry_ring_after_backlog_cut_waits)
{
	struct xevb_shed_cfg cfg = { .backlog_max = 1000, .calm_ticks = 4, .lead_blocks = 4 };
	struct xevb_shed s;
	struct xevb_shed_gate g = fresh_gate();
	struct xevb_shed_in in = { .ring_size = RING, .out_dropped = 1 };
	uint32_t cut;

	xevb_shed_init(&s, &cfg);
	xevb_shed_tick(&s, &g, &drop_in); /* arms */
	g.newest_block = 100;
	cut = xevb_shed_tick(&s, &g, &in);
	cr_assert(eq(u64, s.cuts_by[XEVB_SHED_CUT_BACKLOG], 1));
	cr_assert(lt(u32, cut, XEVB_SHED_ONE));
	for (int t = 1; t <= 3; t++) {
		g.newest_block = 100 + t;
		cr_assert(eq(u32, xevb_shed_tick(&s, &g, &calm_in), cut), "tick %d", t);
	}
	g.newest_block = 104;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &calm_in), cut + (XEVB_SHED_ONE - cut) / 4));
}

Test(shed, change_before_the_switch_is_reached_stays_pending)
{
	struct xevb_shed_cfg cfg = { .calm_ticks = 1, .lead_blocks = 4 };
	struct xevb_shed s;
	struct xevb_shed_gate g;

	armed_at(&s, &g, 200);
	s.cfg = (struct xevb_shed_cfg){ 0 };
	xevb_shed_init(&s, &cfg);
	s.armed = true;
	xevb_shed_tick(&s, &g, &full_in);
	cr_assert(eq(u32, s.switch_block, 204));
	/* Newest 202: blocks from 204 on are not on the wire yet: the raise rewrites their level. */
	g.newest_block = 202;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &low_in), 57344 + 2048));
	cr_assert(eq(u32, s.switch_block, 204));
	cr_assert(eq(u32, s.prev, XEVB_SHED_ONE));
	cr_assert(eq(u64, g.word, xevb_shed_word(57344 + 2048, XEVB_SHED_ONE, 204, 1)));
	/* Newest 204: now a change needs a new switch; the old new level becomes the previous. */
	g.newest_block = 204;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &low_in), 59392 + 1536));
	cr_assert(eq(u32, s.switch_block, 208));
	cr_assert(eq(u32, s.prev, 59392));
	/* Lead blocks past the switch, the blocks before it take the current level. */
	g.newest_block = 212;
	xevb_shed_tick(&s, &g, &full_in); /* a cut: new switch 216 */
	cr_assert(eq(u32, s.switch_block, 216));
	cr_assert(eq(u32, s.prev, 60928));
}

Test(shed, verdict_by_block_and_switch)
{
	/* accept 0 from block 10 on, everything before it. */
	uint64_t w = xevb_shed_word(0, XEVB_SHED_ONE, 10, 1);

	for (uint32_t b = 0; b < 10; b++)
		cr_assert(not(xevb_shed_drops(w, b)), "block %u", b);
	for (uint32_t b = 10; b < 1000; b++)
		cr_assert(xevb_shed_drops(w, b), "block %u", b);
	/* The reverse, and across the wrap of the block numbers (serial order). */
	w = xevb_shed_word(XEVB_SHED_ONE, 0, 2, 0);
	cr_assert(xevb_shed_drops(w, XEVB_SHED_BLOCK_MASK)); /* block -1: before 2 */
	cr_assert(xevb_shed_drops(w, XEVB_SHED_BLOCK_MASK - 500));
	cr_assert(xevb_shed_drops(w, 1));
	cr_assert(not(xevb_shed_drops(w, 2)));
	cr_assert(not(xevb_shed_drops(w, 3000)));
	/* Idle (word 0) and full levels shed nothing; level 0 everything. */
	for (uint32_t b = 0; b < 70000; b += 7) {
		cr_assert(not(xevb_shed_drops(0, b)));
		cr_assert(not(xevb_shed_drops(xevb_shed_word(XEVB_SHED_ONE, XEVB_SHED_ONE, 5, 1), b)));
		cr_assert(xevb_shed_drops(xevb_shed_word(0, 0, 5, 1), b));
	}
	/* A block's verdict is the first event id's: every id of block 10 alike. */
	cr_assert(eq(u32, (10u << XEVB_SHED_BLOCK_SHIFT) >> XEVB_SHED_BLOCK_SHIFT, 10));
}

Test(shed, blocks_shed_evenly_with_short_gaps)
{
	static const uint32_t levels[] = { 1024, 6554, 32768, 58982 };

	for (unsigned k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
		uint64_t w = xevb_shed_word(levels[k], levels[k], 0, 1);
		uint32_t kept = 0, gap = 0, max_gap = 0, n = 100000;

		for (uint32_t b = 0; b < n; b++) {
			if (xevb_shed_drops(w, b)) {
				gap++;
				continue;
			}
			kept++;
			if (gap > max_gap)
				max_gap = gap;
			gap = 0;
		}
		double want = (double)levels[k] / XEVB_SHED_ONE, got = (double)kept / n;
		cr_assert(got > want * 0.99 && got < want * 1.01, "level %u: kept %.4f, want %.4f", levels[k], got,
			  want);
		/* Three-gap theorem: gaps near 1/accept blocks, none much longer. */
		cr_assert(le(u32, max_gap, (uint32_t)(2.0 / want)), "level %u: a gap of %u blocks", levels[k],
			  max_gap);
	}
}

/*
 * Output backlog: the cut goes to the rate the farm nodes drained, smoothed,
 * so that one tick in which they drained nothing does not cut to the floor.
 */
Test(shed, backlog_cut_goes_to_the_drained_rate)
{
	struct xevb_shed_cfg cfg = { .backlog_max = 4000, .lead_blocks = 4 };
	struct xevb_shed s;
	struct xevb_shed_gate g = fresh_gate();
	struct xevb_shed_in in = { .ring_size = RING };

	xevb_shed_init(&s, &cfg);
	xevb_shed_tick(&s, &g, &drop_in); /* arms */
	g.newest_block = 100;
	/* 1000 bytes produced a tick, 750 drained: +250 a tick of backlog. */
	for (int t = 1; t <= 16; t++) {
		in.out_sent = 750;
		in.backlog = 250u * t;
		cr_assert(eq(u32, xevb_shed_tick(&s, &g, &in), XEVB_SHED_ONE), "tick %d", t);
	}
	/* A tick in which the farm node drained nothing, the backlog past its bound. */
	in.out_sent = 0;
	in.backlog = 5000;
	uint32_t level = xevb_shed_tick(&s, &g, &in);

	cr_assert(eq(u64, s.cuts, 1));
	cr_assert(eq(u64, s.cuts_by[XEVB_SHED_CUT_BACKLOG], 1));
	cr_assert(eq(u64, s.cuts_by[XEVB_SHED_CUT_RING] + s.cuts_by[XEVB_SHED_CUT_DROPS], 0));
	/* Smoothed: 0.75 drained for 16 ticks, then a tick of 0 over 1000: ~0.65. */
	cr_assert(gt(u32, level, XEVB_SHED_ONE / 2), "level %u", level);
	cr_assert(lt(u32, level, XEVB_SHED_ONE * 3 / 4), "level %u", level);
	cr_assert(eq(str, (char *)xevb_shed_cause_name(XEVB_SHED_CUT_BACKLOG), "backlog"));
}

/* A backlog over its bound that drains is no pressure, once cut for. */
Test(shed, draining_backlog_is_not_pressure)
{
	struct xevb_shed_cfg cfg = { .backlog_max = 1000, .lead_blocks = 4 };
	struct xevb_shed s;
	struct xevb_shed_gate g = fresh_gate();
	struct xevb_shed_in in = { .ring_size = RING, .out_sent = 0, .backlog = 4000 };

	xevb_shed_init(&s, &cfg);
	xevb_shed_tick(&s, &g, &drop_in); /* arms */
	g.newest_block = 100;
	/* A farm node paused: 4000 bytes wait at once. */
	xevb_shed_tick(&s, &g, &in);
	cr_assert(eq(u64, s.cuts_by[XEVB_SHED_CUT_BACKLOG], 1));
	/* Back: 1000 produced and 1500 drained a tick, long after the cut took effect. */
	for (int t = 1; t <= 6; t++) {
		g.newest_block = 110 + t;
		in.out_sent = 1500;
		in.backlog = 4000 - 500u * t;
		xevb_shed_tick(&s, &g, &in);
	}
	cr_assert(eq(u64, s.cuts, 1));
	/* Events dropped for a full buffer are pressure whatever the rates. */
	in.out_dropped = 1;
	uint32_t before = s.accept;

	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &in), before - before / 8));
	cr_assert(eq(u64, s.cuts_by[XEVB_SHED_CUT_BACKLOG], 2));
}

/*
 * The ring: a tick in which the builder took under half its usual frames
 * (it did not run) makes no cut, whatever the ring and the kernel say; a
 * tick in which it ran and the ring still grew cuts to what it took over
 * what arrived, smoothed over the ticks before.
 */
Test(shed, ring_cut_goes_to_the_smoothed_served_rate)
{
	struct xevb_shed s;
	struct xevb_shed_gate g = fresh_gate();
	struct xevb_shed_in in = { .ring_size = RING };

	xevb_shed_init(&s, NULL);
	xevb_shed_tick(&s, &g, &drop_in); /* arms */
	g.newest_block = 100;
	/* 1100 frames arrive a tick, 1000 taken: the ring grows under half full. */
	for (int t = 1; t <= 16; t++) {
		in.consumed = 1000;
		in.ring_used = 100u * t;
		cr_assert(eq(u32, xevb_shed_tick(&s, &g, &in), XEVB_SHED_ONE), "tick %d", t);
	}
	/* A stall: the builder took 100, the ring passed half full, the kernel dropped 50. */
	in.consumed = 100;
	in.ring_used += 1000;
	in.drops = 50;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &in), XEVB_SHED_ONE));
	cr_assert(eq(u64, s.cuts, 0));
	/* Running again, and the ring still grows: a cut, to ~1000/1100 less 1/32, pulled down by the stall. */
	in.consumed = 1000;
	in.ring_used += 100;
	in.drops = 0;
	uint32_t level = xevb_shed_tick(&s, &g, &in);

	cr_assert(eq(u64, s.cuts_by[XEVB_SHED_CUT_RING], 1));
	cr_assert(gt(u32, level, XEVB_SHED_ONE * 74 / 100), "level %u", level);
	cr_assert(lt(u32, level, XEVB_SHED_ONE * 82 / 100), "level %u", level);
}

/* However bad the measure, one cut at most halves the level (kernel drops aside). */
Test(shed, a_measured_cut_at_most_halves)
{
	struct xevb_shed s;
	struct xevb_shed_gate g = fresh_gate();
	struct xevb_shed_in in = { .ring_size = RING, .consumed = 1, .ring_used = RING - 1 };

	xevb_shed_init(&s, NULL);
	xevb_shed_tick(&s, &g, &drop_in); /* arms */
	g.newest_block = 100;
	cr_assert(eq(u32, xevb_shed_tick(&s, &g, &in), XEVB_SHED_ONE / 2));
	cr_assert(eq(u64, s.cuts_by[XEVB_SHED_CUT_RING], 1));
}

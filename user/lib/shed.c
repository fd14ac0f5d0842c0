// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shedding controller (xevb/shed.h): pure logic on the mapped gate,
 * no syscall, so the receive loop can run it every few milliseconds.
 */
#include <string.h>
#include <xevb/shed.h>

#define DEF_LEAD_BLOCKS 4
#define DEF_FLOOR       1024
#define DEF_CALM_TICKS  4
#define DEF_IDLE_TICKS  500
/* Additive floor of a raise: from 0 the level must still climb. */
#define RAISE_MIN       256

void xevb_shed_init(struct xevb_shed *s, const struct xevb_shed_cfg *cfg)
{
	memset(s, 0, sizeof(*s));
	if (cfg)
		s->cfg = *cfg;
	if (!s->cfg.lead_blocks)
		s->cfg.lead_blocks = DEF_LEAD_BLOCKS;
	if (!s->cfg.calm_ticks)
		s->cfg.calm_ticks = DEF_CALM_TICKS;
	if (!s->cfg.floor)
		s->cfg.floor = DEF_FLOOR;
	if (s->cfg.floor > XEVB_SHED_ONE)
		s->cfg.floor = XEVB_SHED_ONE;
	if (!s->cfg.idle_ticks)
		s->cfg.idle_ticks = DEF_IDLE_TICKS;
	s->accept = s->prev = s->min_accept = XEVB_SHED_ONE;
}

static void gate_store(const struct xevb_shed *s, struct xevb_shed_gate *g)
{
	uint64_t w = s->armed ? xevb_shed_word(s->accept, s->prev, s->switch_block, 1) : 0;

	/* One store: the program reads the word with one load. */
	__atomic_store_n(&g->word, w, __ATOMIC_RELEASE);
}

static uint32_t newest_block(const struct xevb_shed_gate *g)
{
	return __atomic_load_n(&g->newest_block, __ATOMIC_ACQUIRE);
}

/*
 * The program records the newest block only while armed (so the idle path
 * stays one load): forget what it wrote before, then arm.
 */
static void arm(struct xevb_shed *s, struct xevb_shed_gate *g)
{
	__atomic_store_n(&g->newest_block, XEVB_SHED_BLOCK_UNKNOWN, __ATOMIC_RELAXED);
	s->armed = true;
	s->arms++;
	gate_store(s, g);
}

/*
 * A switch block ahead of the newest block: no MEP of it has reached XDP
 * yet, so its level may still change (the pending case). Once the newest
 * block has passed it, a new level needs a new switch; what was the level
 * of the blocks after the old switch becomes that of those before the new.
 */
static void set_level(struct xevb_shed *s, uint32_t level, uint32_t newest)
{
	if (level == s->accept)
		return;
	if (s->accept != s->prev && xevb_shed_before(newest, s->switch_block)) {
		s->accept = level;
		return;
	}
	s->prev = s->accept;
	s->switch_block = (newest + s->cfg.lead_blocks) & XEVB_SHED_BLOCK_MASK;
	s->accept = level;
}

/*
 * Blocks before the switch are old once the newest block is lead_blocks
 * past it: give them the current level, so a switch never ages into the
 * other half of the serial-number circle and flips its meaning.
 */
static void settle(struct xevb_shed *s, uint32_t newest)
{
	if (s->accept != s->prev &&
	    !xevb_shed_before(newest, (s->switch_block + s->cfg.lead_blocks) & XEVB_SHED_BLOCK_MASK))
		s->prev = s->accept;
}

static bool under_pressure(const struct xevb_shed *s, const struct xevb_shed_in *in)
{
	/* A ring over half full that is draining needs no further cut. */
	bool filling = (uint64_t)in->ring_used * 2 > in->ring_size && in->ring_used >= s->last_used;

	return in->drops > 0 || filling || (s->cfg.backlog_max && in->backlog > s->cfg.backlog_max);
}

/*
 * Frames the kernel dropped tear events (and torn events hold the
 * builder's window until they time out): halve then, so that the level
 * reaches the builder's share of a large overload in a few ticks; a ring
 * filling up without loss yet takes 1/8.
 */
static uint32_t served_level(const struct xevb_shed *s, const struct xevb_shed_in *in,
			     uint32_t prev_used)
{
	int64_t growth = (int64_t)in->ring_used - (int64_t)prev_used;
	uint64_t arrived = in->consumed + in->drops + (growth > 0 ? (uint64_t)growth : 0);

	if (!in->consumed || arrived <= in->consumed)
		return 0;
	return (uint32_t)((uint64_t)s->accept * in->consumed / arrived * 31 / 32);
}

static void cut(struct xevb_shed *s, uint32_t newest, const struct xevb_shed_in *in,
		uint32_t prev_used)
{
	bool lost = in->drops > 0;
	uint32_t step = lost ? s->accept / 2 : s->accept / 8;
	uint32_t level = served_level(s, in, prev_used);

	if (!level || level >= s->accept)
		level = s->accept - (step ? step : 1);

	if (s->cut_wait && xevb_shed_before(newest, s->cut_block))
		return;   /* the last cut has not reached the wire's newest blocks yet */
	if (s->accept <= s->cfg.floor)
		return;
	set_level(s, level > s->cfg.floor ? level : s->cfg.floor, newest);
	s->cut_wait = true;
	/* In effect once a whole block under the new level has come. */
	s->cut_block = (s->switch_block + 1) & XEVB_SHED_BLOCK_MASK;
	s->cuts++;
	if (s->accept < s->min_accept)
		s->min_accept = s->accept;
}

static void raise_level(struct xevb_shed *s, uint32_t newest)
{
	uint32_t step = s->accept / 64;
	uint32_t level = s->accept + (step > RAISE_MIN ? step : RAISE_MIN);

	set_level(s, level < XEVB_SHED_ONE ? level : XEVB_SHED_ONE, newest);
	s->raises++;
}

uint32_t xevb_shed_tick(struct xevb_shed *s, struct xevb_shed_gate *g, const struct xevb_shed_in *in)
{
	bool pressure = under_pressure(s, in);
	uint32_t newest, prev_used = s->last_used;

	s->last_used = in->ring_used;
	s->ticks++;
	if (!s->armed) {
		if (pressure)
			arm(s, g);   /* levels follow once the program has seen a block */
		return s->accept;
	}
	newest = newest_block(g);
	if (newest == XEVB_SHED_BLOCK_UNKNOWN)
		return s->accept;
	newest &= XEVB_SHED_BLOCK_MASK;
	settle(s, newest);
	if (pressure) {
		s->calm = 0;
		cut(s, newest, in, prev_used);
	} else if ((uint64_t)in->ring_used * 8 < in->ring_size) {
		s->calm++;
		if (s->calm >= s->cfg.calm_ticks && s->accept < XEVB_SHED_ONE)
			raise_level(s, newest);
	} else {
		s->calm = 0;
	}
	if (s->accept == XEVB_SHED_ONE && s->prev == XEVB_SHED_ONE && s->calm >= s->cfg.idle_ticks) {
		s->armed = false;
		s->cut_wait = false;
		s->calm = 0;
	}
	gate_store(s, g);
	return s->accept;
}

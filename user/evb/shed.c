// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shedding controller (xevb/shed.h): pure logic on the mapped gate,
 * no syscall, so the receive loop can run it every few milliseconds.
 */
#include <string.h>
#include <xevb/shed.h>

#define DEF_LEAD_BLOCKS 16 /* 256 event ids */
#define DEF_FLOOR       1024
#define DEF_CALM_TICKS  4
#define DEF_IDLE_TICKS  500
/* Additive floor of a raise: from 0 the level must still climb. */
#define RAISE_MIN 256

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
	s->last_cut = s->cut_cause = XEVB_SHED_CUT__N;
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

static const char *const cause_names[XEVB_SHED_CUT__N] = {
	[XEVB_SHED_CUT_DROPS] = "kernel_drops",
	[XEVB_SHED_CUT_RING] = "ring",
	[XEVB_SHED_CUT_BACKLOG] = "backlog",
};

const char *xevb_shed_cause_name(enum xevb_shed_cause c)
{
	return c < XEVB_SHED_CUT__N ? cause_names[c] : "?";
}

/*
 * The builder took less than half its usual frames in this tick: it did not
 * run (descheduled, its core busy with softirq work). A ring that filled
 * meanwhile says nothing of its capacity, and shedding more would not
 * bring back what the ring lost; the smoothed rates carry such moments
 * into the next cut, if they are frequent enough to lower the capacity.
 */
static bool stalled(const struct xevb_shed *s, const struct xevb_shed_in *in)
{
	return s->ew_consumed > 0 && (double)in->consumed * 2 < s->ew_consumed;
}

/* The pressure this tick, by cause; XEVB_SHED_CUT__N: none. */
static enum xevb_shed_cause pressure_cause(const struct xevb_shed *s, const struct xevb_shed_in *in,
					   bool builder_stalled)
{
	/* A ring over half full that is draining needs no further cut. */
	bool filling = (uint64_t)in->ring_used * 2 > in->ring_size && in->ring_used >= s->last_used;

	if (in->drops > 0 && !builder_stalled)
		return XEVB_SHED_CUT_DROPS;
	if (filling && !builder_stalled)
		return XEVB_SHED_CUT_RING;
	/*
	 * Over its bound and growing, now and on average: a farm node that was
	 * descheduled for a moment leaves a backlog it then drains.
	 */
	if (in->out_dropped || (s->cfg.backlog_max && in->backlog > s->cfg.backlog_max &&
				in->backlog > s->prev_backlog && s->ew_produced > s->ew_sent))
		return XEVB_SHED_CUT_BACKLOG;
	return XEVB_SHED_CUT__N;
}

/* One step of an average over about eight ticks. */
static void smooth(double *avg, double sample)
{
	*avg += (sample - *avg) / 8;
}

/*
 * The level at which what comes in matches what was served: the level
 * times served / offered, less 1/32 to drain what waits (0: no measure,
 * or nothing to cut).
 */
static uint32_t served_level(uint32_t accept, double served, double offered)
{
	if (served <= 0 || offered <= served)
		return 0;
	return (uint32_t)((double)accept * served / offered * 31 / 32);
}

/*
 * What the builder took against what arrived (taken, ring growth, kernel
 * drops), smoothed over about eight ticks (16 ms): in one tick the builder
 * may have been descheduled or busy sending, and a cut to what it took in
 * that tick alone would shed far more than its capacity calls for.
 */
static void track_ring(struct xevb_shed *s, const struct xevb_shed_in *in)
{
	int64_t growth = (int64_t)in->ring_used - (int64_t)s->last_used;
	double arrived = (double)in->consumed + (double)in->drops + (growth > 0 ? (double)growth : 0);

	smooth(&s->ew_consumed, (double)in->consumed);
	smooth(&s->ew_arrived, arrived);
}

/*
 * The farm nodes drain what they can: a backlog that grows means the
 * builder produces more than that. The rates are smoothed over about eight
 * ticks (16 ms), as a farm node that was not scheduled for one tick drained
 * nothing in it and would otherwise cut the level to the floor.
 */
static void track_output(struct xevb_shed *s, const struct xevb_shed_in *in)
{
	int64_t growth = (int64_t)in->backlog - (int64_t)s->last_backlog;
	double produced = (double)in->out_sent + (double)growth;

	s->prev_backlog = s->last_backlog;
	s->last_backlog = in->backlog;
	if (produced < 0)
		produced = 0;
	smooth(&s->ew_sent, (double)in->out_sent);
	smooth(&s->ew_produced, produced);
}

/*
 * Without a measure of what was served: 1/8, or 1/2 when the kernel
 * dropped frames (they tear events: reach a large overload's level in a
 * few ticks). With one: straight to it, but never below half at once, as
 * a measure can still be one bad moment.
 */
static void cut(struct xevb_shed *s, uint32_t newest, enum xevb_shed_cause cause)
{
	uint32_t step = cause == XEVB_SHED_CUT_DROPS ? s->accept / 2 : s->accept / 8;
	uint32_t level = cause == XEVB_SHED_CUT_BACKLOG ? served_level(s->accept, s->ew_sent, s->ew_produced) :
							  served_level(s->accept, s->ew_consumed, s->ew_arrived);

	if (!level || level >= s->accept)
		level = s->accept - (step ? step : 1);
	else if (level < s->accept / 2)
		level = s->accept / 2;

	if (s->cut_wait && xevb_shed_before(newest, s->cut_block))
		return; /* the last cut has not reached the wire's newest blocks yet */
	if (s->accept <= s->cfg.floor)
		return;
	if (!s->cutting) {
		s->ceiling = s->accept; /* where the pressure appeared */
		s->cutting = true;
	}
	set_level(s, level > s->cfg.floor ? level : s->cfg.floor, newest);
	s->cut_wait = true;
	/* In effect once a whole block under the new level has come. */
	s->cut_block = (s->switch_block + 1) & XEVB_SHED_BLOCK_MASK;
	s->cuts++;
	s->cuts_by[cause]++;
	s->last_cut = s->cut_cause = cause;
	if (s->accept < s->min_accept)
		s->min_accept = s->accept;
}

/* A raise ends a run of cuts: the next cut starts a new one from here. */
static void raise_to(struct xevb_shed *s, uint32_t level, uint32_t newest)
{
	set_level(s, level < XEVB_SHED_ONE ? level : XEVB_SHED_ONE, newest);
	s->cutting = false;
	s->raises++;
}

/*
 * Back to the level where the last pressure appeared in a few ticks (a
 * quarter of the gap a tick: a stall or a burst that forced a cut costs
 * tens of milliseconds, not seconds), then past it by ~1.5% a tick, to
 * find out whether the builder can take more now.
 */
static void raise_level(struct xevb_shed *s, uint32_t newest)
{
	uint32_t step = s->accept < s->ceiling ? (s->ceiling - s->accept) / 4 : s->accept / 64;
	uint32_t level = s->accept + (step > RAISE_MIN ? step : RAISE_MIN);

	if (s->accept < s->ceiling && level > s->ceiling)
		level = s->ceiling;
	raise_to(s, level, newest);
}

/*
 * The ring nearly dry: the builder is about to wait for frames, its
 * capacity unused. Cuts overshoot (each one is made while the frames
 * admitted before it still fill the ring), and the calm raise above took
 * tens of milliseconds to undo them: the socket builder idled ~10% of its
 * time at 1.5-2x offered. Back at once to where the pressure began, then
 * ~3% a tick while the ring stays dry. Not after cuts for the output's
 * backlog: a dry ring says nothing of what the farm nodes drain.
 */
static void raise_dry(struct xevb_shed *s, uint32_t newest)
{
	uint32_t level = s->accept < s->ceiling ? s->ceiling : s->accept + s->accept / 32;

	if (level < s->accept + RAISE_MIN)
		level = s->accept + RAISE_MIN;
	raise_to(s, level, newest);
}

uint32_t xevb_shed_tick(struct xevb_shed *s, struct xevb_shed_gate *g, const struct xevb_shed_in *in)
{
	enum xevb_shed_cause cause;
	bool pressure, builder_stalled;
	uint32_t newest;

	s->last_cut = XEVB_SHED_CUT__N;
	builder_stalled = stalled(s, in);
	track_ring(s, in);
	track_output(s, in);
	cause = pressure_cause(s, in, builder_stalled);
	pressure = cause != XEVB_SHED_CUT__N;
	s->last_used = in->ring_used;
	s->ticks++;
	if (!s->armed) {
		if (pressure)
			arm(s, g); /* levels follow once the program has seen a block */
		return s->accept;
	}
	newest = newest_block(g);
	if (newest == XEVB_SHED_BLOCK_UNKNOWN)
		return s->accept;
	newest &= XEVB_SHED_BLOCK_MASK;
	settle(s, newest);
	if (pressure) {
		s->calm = 0;
		cut(s, newest, cause);
	} else if ((uint64_t)in->ring_used * 8 < in->ring_size) {
		s->calm++;
		if (s->accept < XEVB_SHED_ONE && (uint64_t)in->ring_used * 32 < in->ring_size &&
		    s->cut_cause != XEVB_SHED_CUT_BACKLOG)
			raise_dry(s, newest);
		else if (s->calm >= s->cfg.calm_ticks && s->accept < XEVB_SHED_ONE)
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

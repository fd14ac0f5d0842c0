// SPDX-License-Identifier: GPL-2.0-only
/*
 * The builder against a reference model, over thousands of random runs:
 * random sources, window, timeout and policy; MEPs from sources that skip,
 * resend, jump ahead (alone, or all together), change run, send from
 * unknown source_ids and end the run; time advancing in random steps.
 * Jumps of more than a window go through the quorum/idle rule with a
 * random jump_quorum. A third of the seeds run under a DFM that assigns
 * ids near the sources' cursors, now and then a step ahead
 * (xevb_builder_assigned): their fragments beyond the margin past its
 * newest assignment are UNASSIGNED. The model is
 * the rule text of
 * user/evb/builder.c written the obvious way (one record per event_id, a
 * plain list of open events); after every step the accounting invariant
 * must hold and every counter must equal the model's, and the emitted
 * events (id, flags, exact set of sources, order) must be the model's.
 *
 * Half the seeds pack like real sources: every source sends MEPs of the
 * same P consecutive ids, P-aligned, with the faults above mixed in, so the
 * builder books most MEPs as runs (and splits runs when a MEP does not
 * fit); the model knows nothing of runs. The rig hands some MEPs over
 * without their parsed refs, as the XDP path does.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include "evb/builder.h"
#include "../common/builder_rig.h"

TestSuite(builder_model, .timeout = 60);

#define RANGE   8192 /* event offsets from the run's first id */
#define MAX_SRC 6
#define SEEDS   2500

enum { M_NONE = 0, M_OPEN, M_DONE };

struct mev {
	uint8_t state;
	uint8_t present; /* bit per expected-source index */
	uint64_t open_ns;
	uint64_t order;
};

struct memit {
	uint32_t event_id;
	uint8_t flags;
	uint8_t present;
};

struct model {
	uint32_t start, W, n_src, base;
	bool have_base, adopt, run_known, run_ended;
	uint32_t run;
	uint64_t timeout;
	bool discard;
	uint16_t src[MAX_SRC];
	bool eor[MAX_SRC];
	struct mev ev[RANGE];
	uint32_t open[64];
	uint32_t n_open;
	uint64_t next_order;
	struct memit out[RANGE];
	size_t n_out;
	/* per expected-source index, plus [MAX_SRC] for the unknown one */
	uint64_t rx[MAX_SRC + 1], in[MAX_SRC + 1], drops[MAX_SRC + 1][XEVB_DROP__COUNT];
	uint64_t opened, complete, incomplete, discarded, eor_flushed, evicted, unassigned_ev;
	/* far jumps: claims per expected-source index, idle reference */
	uint32_t quorum;
	uint64_t last_ns;
	struct {
		uint32_t id;
		bool set;
		uint64_t ns;
	} claim[MAX_SRC];
	uint64_t jumps_quorum, jumps_idle;
	/* a DFM: one past the newest id it assigned */
	bool dfm, assigned_known;
	uint32_t assigned_next, assigned_margin;
};

static struct model M;
static struct rig R;
/* What the runs exercised, over all seeds: each case must occur. */
static uint64_t seen_drops[XEVB_DROP__COUNT], seen_complete, seen_incomplete, seen_discarded, seen_eor,
	seen_evicted, seen_wrap, seen_jumps_quorum, seen_jumps_idle, seen_grouped, seen_split, seen_unassigned_ev;

static uint32_t rnd_state;
static uint32_t rnd(void)
{
	/* xorshift32: reproducible per seed, no libc state */
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

static uint32_t below(uint32_t n)
{
	return rnd() % n;
}

static struct mev *mev_of(uint32_t e)
{
	uint32_t off = e - M.start;

	cr_assert(lt(u32, off, RANGE), "model id out of range");
	return &M.ev[off];
}

static void m_finish(uint32_t e, int kind /* 0 complete, 1 timeout, 2 flush, 3 eor, 4 evict, 5 unassigned */)
{
	struct mev *v = mev_of(e);
	uint32_t i;

	for (i = 0; i < M.n_open && M.open[i] != e; i++)
		;
	cr_assert(lt(u32, i, M.n_open));
	M.open[i] = M.open[--M.n_open];
	v->state = M_DONE;
	if (kind == 4)
		M.evicted++;
	if (kind == 5 || ((kind == 1 || kind == 4) && M.discard)) {
		M.discarded++;
		M.unassigned_ev += kind == 5;
		return;
	}
	if (kind == 0)
		M.complete++;
	else
		M.incomplete++;
	if (kind == 3)
		M.eor_flushed++;
	M.out[M.n_out++] = (struct memit){ e, kind ? XEVB_EVT_F_INCOMPLETE : 0, v->present };
}

static void m_flush(int kind)
{
	while (M.n_open) {
		uint32_t best = 0;
		for (uint32_t i = 1; i < M.n_open; i++)
			if (M.open[i] - M.base < M.open[best] - M.base)
				best = i;
		m_finish(M.open[best], kind);
	}
}

/* The window moves to nb: what is open below it leaves, oldest id first. */
static void m_evict_below(uint32_t nb)
{
	for (;;) {
		uint32_t best = UINT32_MAX;
		for (uint32_t i = 0; i < M.n_open; i++)
			if ((int32_t)(M.open[i] - nb) < 0 &&
			    (best == UINT32_MAX || M.open[i] - M.base < M.open[best] - M.base))
				best = i;
		if (best == UINT32_MAX)
			return;
		m_finish(M.open[best], 4);
	}
}

static void m_poll(uint64_t now)
{
	if (!M.timeout)
		return;
	while (M.n_open) {
		uint32_t best = 0;
		for (uint32_t i = 1; i < M.n_open; i++)
			if (mev_of(M.open[i])->order < mev_of(M.open[best])->order)
				best = i;
		struct mev *v = mev_of(M.open[best]);
		if (now - v->open_ns < M.timeout)
			break;
		m_finish(M.open[best], 1);
	}
}

static bool m_unassigned(uint32_t e)
{
	return M.assigned_known && (int32_t)(e - M.assigned_next) >= (int32_t)M.assigned_margin;
}

/*
 * The rule text: the margin is W plus the widest forward step between
 * assignments. At the first, a window out of its reach (its top more than
 * a window before first, or its base at or past the margin beyond the
 * assignment's end) goes: its open events discarded, every id forgotten.
 */
static void m_assigned(uint32_t first, uint32_t n)
{
	if (!M.assigned_known) {
		M.assigned_margin = M.W;
		if (M.have_base && ((int32_t)(M.base + M.W - 1 - (first - M.W)) < 0 ||
				    (int32_t)(M.base - (first + n)) >= (int32_t)M.W)) {
			m_flush(5);
			for (uint32_t i = 0; i < RANGE; i++)
				M.ev[i].state = M_NONE;
			M.have_base = false;
			memset(M.claim, 0, sizeof(M.claim));
		}
	} else if ((int32_t)(first - M.assigned_next) > 0 && first - M.assigned_next + M.W > M.assigned_margin)
		M.assigned_margin = first - M.assigned_next + M.W;
	if (!M.assigned_known || (int32_t)(first + n - M.assigned_next) > 0)
		M.assigned_next = first + n;
	M.assigned_known = true;
}

static int m_frag(uint32_t si, uint32_t e, uint64_t now)
{
	struct mev *v = mev_of(e);

	if (!M.have_base && m_unassigned(e))
		return XEVB_DROP_UNASSIGNED;
	if (!M.have_base) {
		M.base = e - (M.W - 1);
		M.have_base = true;
		M.last_ns = now;
	}
	if ((int32_t)(e - M.base) < 0)
		return XEVB_DROP_LATE;
	if (v->state == M_DONE)
		return v->present >> si & 1 ? XEVB_DROP_DUPLICATE : XEVB_DROP_LATE;
	if (v->state == M_OPEN) {
		if (v->present >> si & 1)
			return XEVB_DROP_DUPLICATE;
	} else {
		if (e - M.base >= M.W) {
			uint32_t nb = e - (M.W - 1);
			int far = 0; /* 1 idle, 2 quorum */
			if (m_unassigned(e))
				return XEVB_DROP_UNASSIGNED;
			if (e - M.base >= 2 * M.W) {
				M.claim[si].id = e;
				M.claim[si].set = true;
				M.claim[si].ns = now;
				if (M.timeout && now - M.last_ns >= M.timeout) {
					m_poll(now);
					far = 1;
				} else {
					uint32_t n = 0;
					for (uint32_t i = 0; i < M.n_src; i++) {
						int64_t dist = (int32_t)(M.claim[i].id - e);
						n += M.claim[i].set && dist > -(int64_t)M.W &&
						     dist < (int64_t)M.W &&
						     (!M.timeout || now - M.claim[i].ns < M.timeout);
					}
					if (n < M.quorum)
						return XEVB_DROP_FUTURE;
					far = 2;
				}
			}
			m_evict_below(nb);
			M.base = nb;
			if (far) {
				memset(M.claim, 0, sizeof(M.claim));
				if (far == 1)
					M.jumps_idle++;
				else
					M.jumps_quorum++;
			}
		}
		v->state = M_OPEN;
		v->present = 0;
		v->open_ns = now;
		v->order = M.next_order++;
		M.open[M.n_open++] = e;
		M.opened++;
	}
	v->present |= 1u << si;
	if (v->present == (1u << M.n_src) - 1)
		m_finish(e, 0);
	return -1;
}

static void m_mep(int si /* -1 unknown */, uint8_t flags, uint32_t run, const uint32_t *ids, uint32_t n,
		  uint64_t now)
{
	uint32_t k = si < 0 ? MAX_SRC : (uint32_t)si;

	M.rx[k] += n;
	if (si < 0) {
		M.drops[k][XEVB_DROP_UNKNOWN_SOURCE] += n;
		return;
	}
	if (!M.run_known) {
		M.run = run;
		M.run_known = true;
	}
	if (run != M.run) {
		M.drops[k][XEVB_DROP_WRONG_RUN] += n;
		return;
	}
	for (uint32_t j = 0; j < n; j++) {
		int r = m_frag(k, ids[j], now);
		if (r < 0)
			M.in[k]++;
		else
			M.drops[k][r]++;
	}
	M.last_ns = now;
	if (flags & XEVB_MEP_F_END_OF_RUN) {
		M.eor[k] = true;
		bool all = true;
		for (uint32_t i = 0; i < M.n_src; i++)
			all &= M.eor[i];
		if (all) {
			m_flush(3);
			M.run_ended = true;
		}
	}
}

static void compare(uint32_t seed, uint32_t step, uint16_t unknown)
{
	const struct xevb_builder_stats *st = xevb_builder_stats(R.b);
	char msg[256];

	cr_assert(xevb_builder_check(R.b, msg, sizeof(msg)), "seed %u step %u: %s", seed, step, msg);
	cr_assert(eq(u64, st->frames_held, rig_frames_held(&R)), "seed %u step %u", seed, step);
	for (uint32_t k = 0; k <= M.n_src; k++) {
		uint32_t m = k < M.n_src ? k : MAX_SRC;
		const struct xevb_source_stats *s = &st->src[k < M.n_src ? M.src[k] : unknown];
		cr_assert(eq(u64, s->frags_received, M.rx[m]), "seed %u step %u src %u rx", seed, step, k);
		cr_assert(eq(u64, s->frags_in_events, M.in[m]), "seed %u step %u src %u in", seed, step, k);
		for (int r = 0; r < XEVB_DROP__COUNT; r++)
			cr_assert(eq(u64, s->drops[r], M.drops[m][r]), "seed %u step %u src %u drop %d", seed,
				  step, k, r);
	}
	cr_assert(eq(u64, st->events_opened, M.opened), "seed %u step %u opened", seed, step);
	cr_assert(eq(u64, st->events_complete, M.complete), "seed %u step %u complete", seed, step);
	cr_assert(eq(u64, st->events_incomplete, M.incomplete), "seed %u step %u incomplete", seed, step);
	cr_assert(eq(u64, st->events_discarded, M.discarded), "seed %u step %u discarded", seed, step);
	cr_assert(eq(u64, st->events_unassigned, M.unassigned_ev), "seed %u step %u unassigned", seed, step);
	cr_assert(eq(u64, st->events_flushed_eor, M.eor_flushed), "seed %u step %u eor", seed, step);
	cr_assert(eq(u64, st->events_evicted, M.evicted), "seed %u step %u evicted", seed, step);
	cr_assert(eq(u64, st->open_events, M.n_open), "seed %u step %u open", seed, step);
	cr_assert(eq(int, st->run_ended, M.run_ended), "seed %u step %u run_ended", seed, step);
	cr_assert(eq(u64, st->jumps_quorum, M.jumps_quorum), "seed %u step %u jumps_quorum", seed, step);
	cr_assert(eq(u64, st->jumps_idle, M.jumps_idle), "seed %u step %u jumps_idle", seed, step);
	cr_assert(eq(sz, R.n_ev, M.n_out), "seed %u step %u emitted", seed, step);
	for (size_t i = 0; i < R.n_ev; i++) {
		const struct rig_event *e = &R.ev[i];
		const struct memit *w = &M.out[i];
		cr_assert(eq(u32, e->event_id, w->event_id), "seed %u step %u event %zu id", seed, step, i);
		cr_assert(eq(u8, e->flags, w->flags), "seed %u event %u flags", seed, e->event_id);
		for (uint32_t k = 0; k < M.n_src; k++)
			cr_assert(eq(int, rig_has(e, M.src[k]), w->present >> k & 1), "seed %u event %u source %u",
				  seed, e->event_id, M.src[k]);
	}
}

static void run_seed(uint32_t seed)
{
	struct xevb_builder_cfg x = { 0 };
	uint32_t cursor[MAX_SRC + 1], steps;
	uint16_t unknown;

	rnd_state = seed * 2654435761u + 1;
	memset(&M, 0, sizeof(M));
	M.n_src = 1 + below(MAX_SRC);
	for (uint32_t i = 0; i < M.n_src; i++) {
		uint16_t s;
		bool dup;
		do {
			s = (uint16_t)below(XEVB_MAX_SOURCES);
			dup = false;
			for (uint32_t j = 0; j < i; j++)
				dup |= M.src[j] == s;
		} while (dup);
		M.src[i] = s;
	}
	do {
		unknown = (uint16_t)below(XEVB_MAX_SOURCES);
		for (uint32_t j = 0; j < M.n_src; j++)
			if (M.src[j] == unknown)
				unknown = XEVB_MAX_SOURCES;
	} while (unknown == XEVB_MAX_SOURCES);
	/* near the wrap one run in four */
	M.start = below(4) ? rnd() : 0xffffffffu - below(300);
	uint32_t wcfg = 1 + below(16);
	M.W = 1;
	while (M.W < wcfg)
		M.W <<= 1;
	M.timeout = below(3) ? 20 + below(400) : 0;
	M.discard = below(2);
	M.adopt = below(2);
	x.window = wcfg;
	x.timeout_ns = M.timeout;
	x.timeout_policy = M.discard ? XEVB_TIMEOUT_DISCARD : XEVB_TIMEOUT_EMIT_INCOMPLETE;
	x.adopt_run = M.adopt;
	x.run_number = 7;
	x.jump_quorum = below(3) ? 0 : below(M.n_src + 2);
	M.quorum = x.jump_quorum ? x.jump_quorum : M.n_src / 2 + 1;
	if (M.quorum > M.n_src)
		M.quorum = M.n_src;
	if (!M.adopt) {
		M.run = 7;
		M.run_known = true;
	}
	/* The builder holds at most W * n_src frames, plus the one being added. */
	rig_init(&R, M.src, M.n_src, wcfg, M.W * M.n_src + 2, &x);
	for (uint32_t i = 0; i <= MAX_SRC; i++)
		cursor[i] = below(4);

	uint32_t pack = below(2) ? 2 + below(5) : 0; /* aligned packing P, or free */
	R.refless_every = below(2) ? 1 + below(3) : 0;

	steps = 50 + below(250);
	M.dfm = below(3) == 0;
	for (uint32_t step = 0; step < steps; step++) {
		uint32_t a = below(100);

		if (M.dfm && below(4) == 0) {
			/* The DFM assigns a few ids around the most advanced source. */
			uint32_t hi = 0, first, n = 1 + below(8);
			for (uint32_t i = 0; i < M.n_src; i++)
				hi = cursor[i] > hi ? cursor[i] : hi;
			first = M.start + hi - below(4) + (below(8) == 0 ? below(2 * M.W) : 0);
			m_assigned(first, n);
			xevb_builder_assigned(R.b, first, n);
		}

		if (a < 70) {
			int si = below(20) ? (int)below(M.n_src) : -1;
			uint32_t k = si < 0 ? MAX_SRC : (uint32_t)si;
			uint16_t sid = si < 0 ? unknown : M.src[si];
			uint32_t ids[8], n = 1 + below(5), off;
			uint8_t flags = 0;
			uint32_t run = below(25) ? 7 : 8;

			if (below(10) == 0) { /* resend or a lagging source */
				off = cursor[k] > 12 ? cursor[k] - below(12) : 0;
				flags |= XEVB_MEP_F_RESEND;
			} else {
				if (below(30) == 0)
					cursor[k] += 10 + below(40); /* jump ahead */
				off = cursor[k];
			}
			if (pack && below(8)) {
				/* a whole packed MEP: P ids from a P-aligned offset */
				off = off / pack * pack;
				n = pack;
				for (uint32_t j = 0; j < n; j++)
					ids[j] = M.start + off++;
			} else {
				for (uint32_t j = 0; j < n; j++) {
					ids[j] = M.start + off;
					off += 1 + (below(4) == 0 ? below(3) : 0);
				}
			}
			if (!(flags & XEVB_MEP_F_RESEND) && off > cursor[k])
				cursor[k] = off;
			if (below(40) == 0)
				flags |= XEVB_MEP_F_END_OF_RUN;
			cr_assert(lt(u32, off, RANGE));
			m_mep(si, flags, run, ids, n, R.now);
			rig_send(&R, sid, flags, run, ids, n);
		} else if (a < 95) {
			R.now += below(60);
			m_poll(R.now);
			xevb_builder_poll(R.b, R.now);
		} else {
			/* all sources catch up with the most advanced one */
			uint32_t hi = 0;
			for (uint32_t i = 0; i < M.n_src; i++)
				hi = cursor[i] > hi ? cursor[i] : hi;
			for (uint32_t i = 0; i < M.n_src; i++)
				cursor[i] = hi;
		}
		compare(seed, step, unknown);
	}
	m_flush(2);
	xevb_builder_flush(R.b);
	compare(seed, steps, unknown);
	for (uint32_t k = 0; k <= MAX_SRC; k++)
		for (int r = 0; r < XEVB_DROP__COUNT; r++)
			seen_drops[r] += M.drops[k][r];
	seen_complete += M.complete;
	seen_incomplete += M.incomplete;
	seen_discarded += M.discarded;
	seen_unassigned_ev += M.unassigned_ev;
	seen_eor += M.eor_flushed;
	seen_evicted += M.evicted;
	seen_jumps_quorum += M.jumps_quorum;
	seen_jumps_idle += M.jumps_idle;
	seen_grouped += xevb_builder_stats(R.b)->meps_grouped;
	seen_split += xevb_builder_stats(R.b)->groups_split;
	for (size_t i = 0; i < M.n_out; i++)
		seen_wrap += M.out[i].event_id < M.start;
	rig_fini(&R);
}

Test(builder_model, random_runs_match_the_model)
{
	for (uint32_t seed = 1; seed <= SEEDS; seed++)
		run_seed(seed);
	/* PARTIAL needs segments: test_builder_segments has their model. */
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		if (r != XEVB_DROP_OVERFLOW && r != XEVB_DROP_PARTIAL)
			cr_assert(gt(u64, seen_drops[r], 100), "drop reason %d hardly exercised", r);
	cr_assert(eq(u64, seen_drops[XEVB_DROP_PARTIAL], 0));
	/* Window pressure evicts: no fragment waits for, or drops behind, an older event. */
	cr_assert(eq(u64, seen_drops[XEVB_DROP_OVERFLOW], 0));
	cr_assert(gt(u64, seen_evicted, 1000), "eviction hardly exercised");
	cr_assert(gt(u64, seen_complete, 10000));
	cr_assert(gt(u64, seen_incomplete, 1000));
	cr_assert(gt(u64, seen_discarded, 1000));
	cr_assert(gt(u64, seen_unassigned_ev, 0), "no window reset at a first ASSIGN");
	cr_assert(gt(u64, seen_eor, 100));
	cr_assert(gt(u64, seen_wrap, 1000), "events built past the 2^32 wrap");
	cr_assert(gt(u64, seen_jumps_quorum, 100), "far jumps by quorum hardly exercised");
	cr_assert(gt(u64, seen_jumps_idle, 100), "far jumps after idle hardly exercised");
	cr_assert(gt(u64, seen_grouped, 10000), "MEPs booked as runs hardly exercised");
	cr_assert(gt(u64, seen_split, 1000), "runs split by a MEP that did not fit hardly exercised");
	cr_log_info("MEPs booked as runs %llu, runs split %llu", (unsigned long long)seen_grouped,
		    (unsigned long long)seen_split);
	cr_log_info(
		"drops dup %llu late %llu unknown %llu run %llu overflow %llu future %llu unassigned %llu; "
		"events complete %llu "
		"incomplete %llu discarded %llu eor %llu evicted %llu wrapped %llu; far jumps quorum %llu idle %llu",
		(unsigned long long)seen_drops[0], (unsigned long long)seen_drops[1],
		(unsigned long long)seen_drops[2], (unsigned long long)seen_drops[3],
		(unsigned long long)seen_drops[4], (unsigned long long)seen_drops[5],
		(unsigned long long)seen_drops[XEVB_DROP_UNASSIGNED], (unsigned long long)seen_complete,
		(unsigned long long)seen_incomplete, (unsigned long long)seen_discarded,
		(unsigned long long)seen_eor, (unsigned long long)seen_evicted, (unsigned long long)seen_wrap,
		(unsigned long long)seen_jumps_quorum, (unsigned long long)seen_jumps_idle);
}

/*
 * Bursts of loss and reordering, no timeout at all: 6 sources pack the same
 * 4 ids a MEP; in bursts, MEPs are lost at random; a MEP is sometimes
 * delivered one round late. Every event whose fragments all arrived must
 * be built complete, and only those: an event torn by a loss leaves when
 * the window needs its room, it never holds newer events back (before
 * eviction, the first loss blocked the window for good without a timeout,
 * and every later event was torn).
 */
#define LB_SRC    6
#define LB_PACK   4
#define LB_ROUNDS 3000

Test(builder_model, loss_bursts_leave_later_events_complete)
{
	static const uint16_t src[LB_SRC] = { 3, 9, 14, 200, 201, 4095 };
	static uint8_t got[LB_ROUNDS * LB_PACK];
	struct {
		uint32_t si, round;
	} late[LB_SRC];
	uint32_t n_late = 0, lossy_rounds = 0;
	struct xevb_builder_cfg x = { .timeout_ns = 0 };

	rnd_state = 12345;
	memset(got, 0, sizeof(got));
	rig_init(&R, src, LB_SRC, 16, 16 * LB_SRC * 2 + 8, &x);
	R.refless_every = 2;
	for (uint32_t r = 0; r < LB_ROUNDS; r++) {
		bool burst = (r / 50) % 3 == 1; /* 50 lossy rounds in every 150 */
		uint32_t order[LB_SRC], ids[LB_PACK], held = n_late;

		for (uint32_t i = 0; i < LB_SRC; i++)
			order[i] = i;
		for (uint32_t i = LB_SRC - 1; i > 0; i--) {
			uint32_t j = below(i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		lossy_rounds += burst;
		for (uint32_t k = 0; k < LB_SRC; k++) {
			uint32_t si = order[k];

			if (burst && below(4) == 0)
				continue;     /* lost */
			if (below(10) == 0) { /* one round late */
				late[n_late].si = si;
				late[n_late++].round = r;
				continue;
			}
			for (uint32_t j = 0; j < LB_PACK; j++)
				ids[j] = r * LB_PACK + j;
			rig_send(&R, src[si], 0, 1, ids, LB_PACK);
			for (uint32_t j = 0; j < LB_PACK; j++)
				got[r * LB_PACK + j]++;
		}
		/* last round's late MEPs, after this round's */
		for (uint32_t k = 0; k < held; k++) {
			for (uint32_t j = 0; j < LB_PACK; j++)
				ids[j] = late[k].round * LB_PACK + j;
			rig_send(&R, src[late[k].si], 0, 1, ids, LB_PACK);
			for (uint32_t j = 0; j < LB_PACK; j++)
				got[late[k].round * LB_PACK + j]++;
		}
		memmove(late, late + held, sizeof(late[0]) * (n_late - held));
		n_late -= held;
	}
	xevb_builder_flush(R.b);
	const struct xevb_builder_stats *st = xevb_builder_stats(R.b);
	uint64_t whole = 0, torn = 0, seen = 0;

	for (uint32_t e = 0; e < LB_ROUNDS * LB_PACK; e++) {
		whole += got[e] == LB_SRC;
		torn += got[e] && got[e] < LB_SRC;
	}
	for (size_t i = 0; i < R.n_ev; i++) {
		const struct rig_event *ev = &R.ev[i];

		cr_assert(eq(int, !ev->flags, got[ev->event_id] == LB_SRC), "event %u: %u of %u sources sent",
			  ev->event_id, got[ev->event_id], LB_SRC);
		cr_assert(eq(u16, ev->n_frags, got[ev->event_id]), "event %u", ev->event_id);
		seen++;
	}
	cr_assert(eq(u64, seen, whole + torn));
	cr_assert(eq(u64, st->events_complete, whole));
	cr_assert(eq(u64, st->events_incomplete, torn));
	cr_assert(gt(u64, torn, 1000), "bursts hardly tore events");
	cr_assert(gt(u64, st->events_evicted, 1000));
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		cr_assert(eq(u64, st->drops[r], 0), "drop reason %d", r);
	cr_log_info("%u lossy rounds: %llu events complete, %llu torn (%llu evicted)", lossy_rounds,
		    (unsigned long long)whole, (unsigned long long)torn, (unsigned long long)st->events_evicted);
	rig_fini(&R);
}

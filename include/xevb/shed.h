/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Whole-event load shedding. When the builder is offered more than it can
 * take, frames lost at random in front of it (RX ring full, fill ring
 * empty) tear every event. Instead the XDP program drops whole blocks of
 * event ids, the same blocks from every source, before the copy into the
 * UMEM; a controller in user space (shed.c) sets the fraction let through.
 *
 * The decision: event id block = first_event_id >> XEVB_SHED_BLOCK_SHIFT,
 * bucket = a 16-bit hash of the block, a MEP is shed when bucket >= accept
 * (0..65536; 65536 sheds nothing). A level change applies from a switch
 * block on, placed a little ahead of the newest block the program has seen:
 * blocks before it keep the previous level. So sources that send the same
 * event ids in the same MEPs get the same verdict for every MEP, whatever
 * the moment the change lands between their packets.
 *
 * The gate is one 64-bit word (levels and switch block), written by user
 * space with one store and read by the program with one load, so the
 * program never sees half of a change. Zero means idle: the program's
 * whole cost is then that load and a branch.
 */
#ifndef XEVB_SHED_H
#define XEVB_SHED_H

#include <linux/types.h>
#include "bytes.h"

/*
 * Blocks of 16 event ids, small against the builder's window (4096 by
 * default): shedding leaves gaps in the ids of the events that arrive, and
 * a gap of more than the window makes the builder drop fragments as
 * OVERFLOW (older events still open) or FUTURE (a jump of two windows
 * wants a quorum of sources first), tearing the events after it. The
 * hash keeps the gaps near 16/accept ids. And small against the RX ring:
 * a block of HLT's 323 sources at 10 events a MEP is 517 frames (64 ids
 * were 2067, half the ring, too coarse for the ring guard below). A MEP
 * of more events than a block decides for the blocks it spans.
 */
#define XEVB_SHED_BLOCK_SHIFT   4
#define XEVB_SHED_BLOCK_MASK    ((1u << (32 - XEVB_SHED_BLOCK_SHIFT)) - 1)
#define XEVB_SHED_ONE           65536u      /* accept everything */
#define XEVB_SHED_BLOCK_UNKNOWN 0xffffffffu /* no block seen since arming */

/* The gate word: rejected fractions (65536 - accept), so that idle is 0. */
#define XEVB_SHED_W_REJ_BITS   17
#define XEVB_SHED_W_REJ_MASK   ((1ull << XEVB_SHED_W_REJ_BITS) - 1)
#define XEVB_SHED_W_PREV_SHIFT 17
#define XEVB_SHED_W_SW_SHIFT   34
#define XEVB_SHED_W_ARMED      (1ull << 63) /* the program records newest_block */

/*
 * The ring guard: the last line, in the program itself. The controller
 * above acts every 2 ms from the builder's loop; when that loop does not
 * run (the receive work starves it on its own core, a burst fills the ring
 * within a tick) the RX ring overflows at random and every event is torn,
 * while the kernel still copies each frame it is about to lose. So the
 * program keeps, per receive queue, the frames it steered to the socket,
 * against the frames user space released from its RX ring (and those the
 * kernel dropped, added at each tick): when the difference, the frames
 * waiting, is over guard_limit, the first MEP of a new block refuses the
 * whole block if the builder has also released nothing for a millisecond
 * (it is not running), and every source's MEPs of that block follow its verdict
 * (a table of the last XEVB_GUARD_SLOTS blocks). A block once admitted
 * is never cut, so only whole events are lost, and the builder gets its
 * core back as the program drops before the copy.
 */
#define XEVB_GUARD_QUEUES 16
/*
 * A full ring is not enough: a builder that is running drains a burst, and
 * its controller cuts for an overload within a tick. The guard refuses a
 * block only when, besides, the builder has released nothing from that
 * queue for this long: it is not running.
 */
#define XEVB_GUARD_STALL_NS 1000000ull
#define XEVB_GUARD_SLOTS    256 /* blocks remembered: 4096 event ids, the default window */

/*
 * Shedding leaves gaps in the event ids the builder sees; a gap of more
 * than two windows makes it wait for a quorum of sources before it moves
 * its window (a stray MEP far ahead must not make every later fragment
 * late), dropping the first sources' MEPs of the jump as FUTURE and
 * tearing those events. A gap the program made itself needs no quorum:
 * it tracks the blocks it decides, in order, and when a block is admitted
 * right after a run of blocks it shed or refused, that run starting right
 * after a block it admitted, the block is vouched for: its MEPs carry
 * XEVB_XDP_META_F_VOUCHED in their meta. A MEP far ahead of the traffic
 * breaks the chain and is never vouched for. The meta's reserved byte then
 * carries the run's length in units of 16 blocks (rounded up; up to 4080
 * blocks, 65280 ids, about 3 s at L1's 20 kHz), and the builder takes the jump only
 * if its distance fits that run (builder.h): a few stray MEPs cannot make
 * it jump further than the blocks the program really shed.
 */
#define XEVB_GUARD_V_REFUSED   1u
#define XEVB_GUARD_V_VOUCHED   2u
#define XEVB_GUARD_V_RUN_SHIFT 2 /* with VOUCHED: the run's length in units of 16 blocks, 1..255 */
#define XEVB_GUARD_V_MASK      0x3ffu
#define XEVB_GUARD_RUN_UNIT    16u
#define XEVB_GUARD_RUN_MAX     (255u * XEVB_GUARD_RUN_UNIT) /* blocks: a longer run vouches for nothing */

/* A verdict slot: (block + 1) << 10 | verdict (run << 2 | vouched | refused); 0: empty. */
static __always_inline __u64 xevb_guard_slot(__u32 block, __u32 verdict)
{
	return ((__u64)(block & XEVB_SHED_BLOCK_MASK) + 1) << 10 | (verdict & XEVB_GUARD_V_MASK);
}

static __always_inline __u32 xevb_guard_slot_block1(__u64 slot)
{
	return (__u32)(slot >> 10); /* block + 1, 0: empty */
}

/* In the XDP program's global data (section .data.shed). */
struct xevb_shed_gate {
	__u64 word;         /* user space writes; 0: idle */
	__u32 newest_block; /* the program writes while armed */
	__u32 ref_source;   /* source_id whose shed MEPs count events (shed_ref slot) */
	__u32 guard_limit;  /* user space: frames waiting past which new blocks are refused; 0: off */
	__u32 guard_full; /* user space: past this, even while the builder runs (a block would not fit); 0: never */
	__u64 guard_refused;  /* the program: blocks refused (racing CPUs may miss one) */
	__u64 guard_admitted; /* the program: blocks admitted */
	/* the program: the chain of decided blocks (see XEVB_GUARD_V_VOUCHED) */
	__u32 chain_last;       /* the newest block decided; XEVB_SHED_BLOCK_UNKNOWN: none */
	__u32 chain_last_end;   /* the block of the last event of the MEP that decided it */
	__u32 chain_anchored;   /* 1: the chain is unbroken since an admitted block */
	__u32 chain_anchor_end; /* the block of that admitted MEP's last event */
	__u64 guard_vouched;    /* the program: blocks admitted after a run it shed */
	/* user space: frames released from queue q's RX ring, plus the kernel's drops there */
	__u64 released[XEVB_GUARD_QUEUES];
	/* user space: when it last released frames of queue q, or ticked (CLOCK_MONOTONIC ns) */
	__u64 released_ns[XEVB_GUARD_QUEUES];
	/* the program: frames redirected to queue q's socket (one writer: the queue's NAPI) */
	__u64 steered[XEVB_GUARD_QUEUES];
	__u64 verdicts[XEVB_GUARD_SLOTS];
};

static __always_inline __u64 xevb_shed_word(__u32 accept, __u32 prev, __u32 switch_block, int armed)
{
	return (__u64)(XEVB_SHED_ONE - accept) | ((__u64)(XEVB_SHED_ONE - prev) << XEVB_SHED_W_PREV_SHIFT) |
	       ((__u64)(switch_block & XEVB_SHED_BLOCK_MASK) << XEVB_SHED_W_SW_SHIFT) |
	       (armed ? XEVB_SHED_W_ARMED : 0);
}

/* Block a before block b, in serial-number order (event ids wrap). */
static __always_inline int xevb_shed_before(__u32 a, __u32 b)
{
	return (__s32)((a - b) << XEVB_SHED_BLOCK_SHIFT) < 0;
}

/* A multiplicative hash: consecutive blocks spread evenly over 0..65535. */
static __always_inline __u32 xevb_shed_bucket(__u32 block)
{
	return (block * 0x9E3779B1u) >> 16;
}

/* 1: a MEP whose first event id falls in block is shed under this gate word. */
static __always_inline int xevb_shed_drops(__u64 word, __u32 block)
{
	__u32 sw = (__u32)(word >> XEVB_SHED_W_SW_SHIFT) & XEVB_SHED_BLOCK_MASK;
	__u32 rej = xevb_shed_before(block, sw) ? (__u32)(word >> XEVB_SHED_W_PREV_SHIFT) : (__u32)word;

	rej &= XEVB_SHED_W_REJ_MASK;
	return xevb_shed_bucket(block) + rej >= XEVB_SHED_ONE;
}

#ifndef __bpf__
#include <stdbool.h>
#include <stdint.h>

struct xevb_shed_cfg {
	uint32_t lead_blocks; /* a new level starts this many blocks after the newest seen (default 16) */
	uint32_t floor;       /* lowest level (default 1024, 1.6%: gaps stay within two builder windows) */
	uint32_t calm_ticks;  /* ticks with the ring under 1/8 before the level grows (default 4) */
	uint32_t idle_ticks;  /* calm ticks at full level before the program is idle again (default 500) */
	uint64_t backlog_max; /* output backlog in bytes that counts as pressure (0: not a signal) */
};

/* What the caller saw since the last tick. */
struct xevb_shed_in {
	uint32_t ring_used; /* RX ring entries waiting, summed over queues */
	uint32_t ring_size; /* RX ring entries, summed over queues */
	uint64_t drops;     /* rx_dropped + rx_ring_full + fill_ring_empty increase */
	uint64_t backlog;   /* output backlog, bytes */
	/*
	 * Frames the builder took from the RX rings (0: not measured). With
	 * it, a cut goes straight to the rate the builder served: the level
	 * times consumed / arrived (arrived = consumed + ring growth + drops).
	 */
	uint64_t consumed;
	/*
	 * Output bytes the kernel took from the send buffers (0: not
	 * measured). With it, a cut for backlog goes to the rate the farm
	 * nodes drained: the level times sent / (sent + backlog growth).
	 */
	uint64_t out_sent;
	uint64_t out_dropped; /* events dropped because every send buffer was full */
};

/* Why a cut was made (the first that holds, in this order). */
enum xevb_shed_cause {
	XEVB_SHED_CUT_DROPS,   /* the kernel dropped frames */
	XEVB_SHED_CUT_RING,    /* the RX ring over half full and filling */
	XEVB_SHED_CUT_BACKLOG, /* the output backlog over its bound */
	XEVB_SHED_CUT__N,
};

struct xevb_shed {
	struct xevb_shed_cfg cfg;
	uint32_t accept; /* level for blocks at and after switch_block */
	uint32_t prev;   /* level for blocks before it */
	uint32_t switch_block;
	bool armed;
	uint32_t calm; /* consecutive ticks without pressure, ring under 1/8 */
	uint32_t last_used;
	bool cut_wait; /* a cut is not in effect until the newest block passes cut_block */
	uint32_t cut_block;
	uint64_t last_backlog, prev_backlog; /* this tick's and the one before */
	double ew_sent, ew_produced;         /* output bytes a tick, smoothed */
	double ew_consumed, ew_arrived;      /* frames a tick, smoothed */
	uint32_t ceiling;                    /* the level in force when the last run of cuts began */
	bool cutting;                        /* cuts since the last raise */
	enum xevb_shed_cause cut_cause;      /* of the last cut (XEVB_SHED_CUT__N: none yet) */
	/* for the statistics */
	uint32_t min_accept;
	uint64_t ticks, cuts, raises, arms;
	uint64_t cuts_by[XEVB_SHED_CUT__N];
	enum xevb_shed_cause last_cut; /* of the last tick: XEVB_SHED_CUT__N if it made none */
};

/* "kernel_drops", "ring", "backlog": the cause's name in the statistics. */
const char *xevb_shed_cause_name(enum xevb_shed_cause c);

/* cfg NULL or zero fields: the defaults. */
void xevb_shed_init(struct xevb_shed *s, const struct xevb_shed_cfg *cfg);

/*
 * One control step: reads the gate's newest_block, decides, writes the
 * gate word (plain memory: the gate is mapped). Returns the level now in
 * force for new blocks. AIMD on the accepted fraction: pressure (ring over
 * half full and not draining, backlog over its bound) cuts it to what the
 * builder served (in->consumed over the frames that arrived) or what the
 * farm nodes drained (in->out_sent over the bytes produced), both smoothed
 * over ~8 ticks, less 1/32 to drain, at most by half a cut; without those
 * measures by 1/8 (a kernel drop: 1/2), at most once until the last cut's
 * blocks arrive; a tick in which the builder took under half its usual
 * frames (it did not run) makes no cut for the ring. A ring under 1/8 for
 * calm_ticks raises it: a quarter of the way a tick back to where the last
 * cuts began, then ~1.5% a tick up to 65536. A ring under 1/32 (the
 * builder about to wait for frames) raises it at once, unless the last cut
 * was for the backlog: back to where the cuts began, then ~3% a tick.
 */
uint32_t xevb_shed_tick(struct xevb_shed *s, struct xevb_shed_gate *g, const struct xevb_shed_in *in);

#endif /* !__bpf__ */
#endif /* XEVB_SHED_H */

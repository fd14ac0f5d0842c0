/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * USDT probes of xevb (provider "xevb"), for bpftrace, perf, systemtap.
 * List them with `bpftrace -l 'usdt:build/xevb:*'`; scripts/trace/ uses them.
 *
 * Cost when nobody traces: each probe site is one `nop` plus a test of its
 * semaphore (a global the kernel raises while a uprobe is attached), and
 * the arguments are only computed behind that test. So a probe may take
 * arguments that cost something (a clock read, a source_id worked out from
 * a pointer) without taxing the packet path when it is not traced.
 *
 * Every probe is declared here and its semaphore defined once in
 * user/base/probes.c. A new probe: add its XEVB_SEMA line to both lists.
 *
 *   probe (arguments)                                   where
 *   frag_accepted (event_id, source_id, length, open_ns) builder: fragment stored in its event
 *   frag_dropped  (reason, event_id, source_id, count)  builder: enum xevb_drop_reason
 *   event_complete (event_id, latency_ns, n_frags)      builder: first fragment -> complete
 *   event_timeout (event_id, missing, discarded)        builder: timed out (emitted or discarded)
 *   frame_released (frame_idx)                          builder: frame's last fragment is gone
 *   frames_recycled (queue, count)                      AF_XDP: frames back on the fill ring
 *   batch_received (count, now_ns)                      build: one receive batch
 *   shed_tick     (accept, cause, ring_used, consumed, backlog, out_sent)
 *                                                       build: one step of the shedding controller
 *                 (accept of 65536 now; cause: enum xevb_shed_cause of the cut made, 3 none)
 *   sink_event    (event_id, n_frags, bytes, flags)     sink: an event decoded
 *   dfm_assign    (first_event, builder, count)         DFM: events assigned to a builder
 *   dfm_credit    (builder, credits)                    DFM: a builder's status with its credits
 *   dfm_busy      (builder)                             DFM: a builder turned Busy
 *   dfm_not_busy  (builder)                             DFM: a builder is not Busy any more
 *   (builder: the DFM's index of the builder, as in its statistics)
 *
 * open_ns, now_ns and latency_ns are CLOCK_MONOTONIC, bpftrace's `nsecs`.
 */
#ifndef XEVB_PROBES_H
#define XEVB_PROBES_H

#ifndef XEVB_NO_PROBES
#if defined(__has_include)
#if __has_include(<sys/sdt.h>)
#define XEVB_HAVE_SDT 1
#endif
#endif
#endif

#ifdef XEVB_HAVE_SDT
#define _SDT_HAS_SEMAPHORES 1
#define SDT_USE_VARIADIC    1
#include <sys/sdt.h>
#include <time.h>

/* Every probe with a semaphore: declared here, defined in user/base/probes.c. */
/* clang-format off: one entry a line (its line packing does not settle) */
#define XEVB_PROBE_LIST(X) \
	X(frag_accepted) \
	X(frag_dropped) \
	X(event_complete) \
	X(event_timeout) \
	X(frame_released) \
	X(frames_recycled) \
	X(batch_received) \
	X(shed_tick) \
	X(sink_event) \
	X(dfm_assign) \
	X(dfm_credit) \
	X(dfm_busy) \
	X(dfm_not_busy)
/* clang-format on */

#define XEVB_SEMA_DECL(name) extern volatile unsigned short xevb_##name##_semaphore;
XEVB_PROBE_LIST(XEVB_SEMA_DECL)
#undef XEVB_SEMA_DECL

/* True while some tracer is attached to the probe. */
#define XEVB_PROBE_ENABLED(name) __builtin_expect(xevb_##name##_semaphore != 0, 0)

/* XEVB_PROBE(name, args...): 0 to 6 arguments, evaluated only when traced. */
#define XEVB_PROBE(name, ...) \
	do { \
		if (XEVB_PROBE_ENABLED(name)) \
			STAP_PROBEV(xevb, name, ##__VA_ARGS__); \
	} while (0)

/* Fires only when cond holds; cond is evaluated only when traced. */
#define XEVB_PROBE_IF(name, cond, ...) \
	do { \
		if (XEVB_PROBE_ENABLED(name) && (cond)) \
			STAP_PROBEV(xevb, name, ##__VA_ARGS__); \
	} while (0)

static inline unsigned long long xevb_probe_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

#else /* no sys/sdt.h: probes compile to nothing */
#define XEVB_PROBE_ENABLED(name) 0
#define XEVB_PROBE(name, ...) \
	do { \
	} while (0)
#define XEVB_PROBE_IF(name, cond, ...) \
	do { \
	} while (0)
static inline unsigned long long xevb_probe_now_ns(void)
{
	return 0;
}
#endif

#endif /* XEVB_PROBES_H */

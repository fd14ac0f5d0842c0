// SPDX-License-Identifier: GPL-2.0-only
/*
 * The semaphores of the USDT probes in include/xevb/probes.h. They live in
 * the ".probes" section, where tracers look for them: attaching a uprobe
 * to a probe raises its semaphore (the kernel's ref_ctr_offset), and the
 * probe site computes its arguments only then.
 */
#include <xevb/probes.h>

#ifdef XEVB_HAVE_SDT
#define XEVB_SEMA(name) \
	volatile unsigned short xevb_##name##_semaphore __attribute__((section(".probes"), used))
XEVB_SEMA(frag_accepted);
XEVB_SEMA(frag_dropped);
XEVB_SEMA(event_complete);
XEVB_SEMA(event_timeout);
XEVB_SEMA(frame_released);
XEVB_SEMA(frames_recycled);
XEVB_SEMA(batch_received);
XEVB_SEMA(sink_event);
XEVB_SEMA(dfm_assign);
XEVB_SEMA(dfm_credit);
XEVB_SEMA(dfm_busy);
XEVB_SEMA(dfm_not_busy);
#endif

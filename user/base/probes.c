// SPDX-License-Identifier: GPL-2.0-only
/*
 * The semaphores of the USDT probes in user/base/probes.h. They live in
 * the ".probes" section, where tracers look for them: attaching a uprobe
 * to a probe raises its semaphore (the kernel's ref_ctr_offset), and the
 * probe site computes its arguments only then.
 */
#include "base/probes.h"

#ifdef XEVB_HAVE_SDT
#define XEVB_SEMA_DEF(name) \
	volatile unsigned short xevb_##name##_semaphore __attribute__((section(".probes"), used));
XEVB_PROBE_LIST(XEVB_SEMA_DEF)
#endif

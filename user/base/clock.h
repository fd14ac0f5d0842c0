/* SPDX-License-Identifier: GPL-2.0-only */
/* The clocks, in nanoseconds. */
#ifndef XEVB_CLOCK_H
#define XEVB_CLOCK_H

#include <stdint.h>

uint64_t xevb_now_ns(void);
uint64_t xevb_realtime_ns(void);

#endif

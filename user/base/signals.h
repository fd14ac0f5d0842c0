/* SPDX-License-Identifier: GPL-2.0-only */
/* How a run loop learns it should stop. */
#ifndef XEVB_SIGNALS_H
#define XEVB_SIGNALS_H

#include <signal.h>

/*
 * A run loop's stop: after xevb_stop_on_signals, SIGINT and SIGTERM count
 * in xevb_stop, so a loop that drains after the first can end at the second.
 */
extern volatile sig_atomic_t xevb_stop;
void xevb_stop_on_signals(void);

#endif

// SPDX-License-Identifier: GPL-2.0-only
/* SIGINT and SIGTERM count in xevb_stop (signals.h). */
#include <signal.h>
#include "base/signals.h"

volatile sig_atomic_t xevb_stop;

static void stop_on_signal(int sig)
{
	(void)sig;
	if (xevb_stop < 2)
		xevb_stop++;
}

void xevb_stop_on_signals(void)
{
	signal(SIGINT, stop_on_signal);
	signal(SIGTERM, stop_on_signal);
}

// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include "base/cli.h"
#include "base/notify.h"

void xevb_notify_ready(const char *fmt, ...)
{
	const char *sock = getenv("NOTIFY_SOCKET");
	char status[256];
	va_list ap;
	int err;

	if (!sock || !*sock)
		return;
	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	err = sd_notifyf(0, "READY=1\nSTATUS=%s", status);
	if (err < 0)
		xevb_warn(
			"cannot tell the service manager we are ready (NOTIFY_SOCKET=%s): %s; "
			"it will time the start out: check the unit's NotifyAccess and the socket",
			sock, strerror(-err));
	else if (err == 0)
		xevb_warn("NOTIFY_SOCKET=%s is set but sd_notify sent nothing", sock);
}

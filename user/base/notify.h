/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Readiness for a service manager (systemd Type=notify, sd_notify(3)).
 * A long-running command says READY=1 once it can do its job: the builder
 * once its XDP program is attached and its sockets are bound, the sink and
 * the DFM once they listen. Outside a service (NOTIFY_SOCKET unset) this
 * costs one getenv and sends nothing.
 */
#ifndef XEVB_NOTIFY_H
#define XEVB_NOTIFY_H

/* READY=1 and STATUS=<status> to $NOTIFY_SOCKET; a failure is a warning. */
void xevb_notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

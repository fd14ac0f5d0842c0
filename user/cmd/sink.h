/* SPDX-License-Identifier: GPL-2.0-only */
/* Pieces shared by `xevb sink` and its hidden test feeder. */
#ifndef XEVB_CMD_SINK_H
#define XEVB_CMD_SINK_H

#include <sys/socket.h>

/* "ADDR:PORT", "[v6addr]:PORT" or "host:PORT" (numeric port). 0 or -1 with a message. */
int sink_resolve(const char *opt, const char *hostport, struct sockaddr_storage *ss, socklen_t *len);

/* xevb sink --selftest-send DEST N [options]: argv[0] is "--selftest-send". */
int sink_selftest_send(int argc, char **argv);

#endif

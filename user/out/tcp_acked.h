/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef XEVB_TCP_ACKED_H
#define XEVB_TCP_ACKED_H

#include <stdint.h>

/*
 * Bytes of ours the peer's TCP has acknowledged on socket fd (TCP_INFO
 * tcpi_bytes_acked; still readable after a reset). 0, or -errno.
 * Apart from output.c because glibc's <netinet/tcp.h> lacks the field and
 * clashes with <linux/tcp.h>.
 */
int xevb_tcp_bytes_acked(int fd, uint64_t *acked);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb sink --ctl-port N`: the farm node's side of the control protocol.
 * Grants each builder --credits events in flight (it counts what arrived
 * from that builder on its current connection and reports the count), and
 * emulates a processing queue drained at --process-rate, Busy above
 * busy-high x credits and not-Busy below busy-low x credits. With --dfm
 * it reports to the DFM what it received from each builder (RECEIVED, every
 * 100 ms and at the end), so the DFM can close its books at the farm nodes.
 */
#ifndef XEVB_SINK_CTL_H
#define XEVB_SINK_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

struct sink_ctl;

struct sink_ctl *sink_ctl_new(uint32_t bind_addr, uint16_t port, uint16_t id, uint32_t credits,
			      double process_rate, double busy_high, double busy_low);
void sink_ctl_free(struct sink_ctl *sc);
int sink_ctl_fd(const struct sink_ctl *sc);
void sink_ctl_conn(struct sink_ctl *sc, uint32_t ip); /* a builder connected from ip */
void sink_ctl_events(struct sink_ctl *sc, uint32_t ip, uint64_t n);
void sink_ctl_rx(struct sink_ctl *sc, uint64_t now);
void sink_ctl_tick(struct sink_ctl *sc, uint64_t now);
/* Report RECEIVED to the DFM at dfm every 100 ms from now on. */
void sink_ctl_report_to(struct sink_ctl *sc, const struct sockaddr_in *dfm);
/* The last report, at exit. */
void sink_ctl_final(struct sink_ctl *sc);
void sink_ctl_summary(const struct sink_ctl *sc, FILE *f, bool json);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb doctor --config`: does each source process of the run have the
 * Ethernet address the builder binds its ids to, and is it the one this
 * host sees for the source's IPv4 address? A source bound by address
 * alone can be spoofed by any host on its link; one bound to a wrong MAC
 * has its data dropped. Gathering (the neighbour table) and deciding
 * (pure, unit-tested) stay apart, as in doctor.h.
 */
#ifndef XEVB_DOCTOR_SRC_H
#define XEVB_DOCTOR_SRC_H

#include <stdbool.h>
#include <stdint.h>
#include "ops/doctor.h"

/* A complete IPv4 neighbour entry of one interface. */
struct xevb_doctor_neigh {
	uint32_t addr; /* network order */
	uint8_t mac[6];
};

/* A source process as the run configuration describes it. */
struct xevb_doctor_src {
	uint16_t id;   /* its [source N] */
	uint32_t addr; /* network order */
	bool has_mac;
	uint8_t mac[6];
};

/*
 * One line of /proc/net/arp: true, with *n, when it is a complete entry
 * (flag ATF_COM) on dev; false for the header, other devices, incomplete
 * entries and junk.
 */
bool xevb_doctor_neigh_line(const char *line, const char *dev, struct xevb_doctor_neigh *n);
/* dev's complete entries into out[0..max): how many, or -errno (the table could not be read). */
int xevb_doctor_neigh_read(const char *dev, struct xevb_doctor_neigh *out, int max);
/* The entry for addr among n[0..count), or NULL. */
const struct xevb_doctor_neigh *xevb_doctor_neigh_find(const struct xevb_doctor_neigh *n, int count,
						       uint32_t addr);
/*
 * The verdict for one source: ok (its MAC is the neighbour's, or nothing
 * to compare with), warn (no MAC configured: what to add), fail (the
 * neighbour says another MAC: the builder would drop its data).
 */
void xevb_doctor_src_decide(const char *dev, const struct xevb_doctor_src *s, const struct xevb_doctor_neigh *nb,
			    struct xevb_doctor_check *out);

#endif

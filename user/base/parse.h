/* SPDX-License-Identifier: GPL-2.0-only */
/* Strict parsing of option values: numbers, id lists, MAC addresses, SI sizes, durations. */
#ifndef XEVB_PARSE_H
#define XEVB_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Strict number parsing: false (and a message naming the option) on junk. */
bool xevb_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out);
bool xevb_parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* "0-125", "3,7,9-12": fills ids (ascending, unique); returns the count or -1. */
int xevb_parse_id_list(const char *opt, const char *s, uint16_t *ids, int max);
/* The same with ids up to max_id (xevb_parse_id_list: up to max - 1, they index arrays of max). */
int xevb_parse_id_list_max(const char *opt, const char *s, uint16_t *ids, int max, unsigned max_id);
/*
 * "02:00:00:00:00:01" (six hex pairs, ':' between): a source's Ethernet
 * address, so unicast and not all zero; false on anything else (the
 * caller names the option).
 */
bool xevb_mac_parse(const char *s, uint8_t mac[6]);
/* mac as "02:00:00:00:00:01", in buf (at least 18 bytes). */
const char *xevb_mac_str(const uint8_t mac[6], char *buf);
/*
 * A line of /proc/net/arp: true, with the address (network order) and MAC,
 * when it is a complete entry (flag ATF_COM) on dev; false for the header,
 * other devices, incomplete entries and junk.
 */
bool xevb_neigh_line(const char *line, const char *dev, uint32_t *addr, uint8_t mac[6]);
/* "1.5G", "200m", "64k": bits or bytes with SI suffixes. */
bool xevb_parse_si(const char *opt, const char *s, double *out);

/* "1.5", "0.25": seconds with fractions, to nanoseconds. */
bool xevb_parse_duration(const char *s, uint64_t *ns);

#endif

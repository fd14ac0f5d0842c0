/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-destination shaping on an interface: the control side of
 * bpf/xevb_shape.bpf.c. State lives in the kernel only: the classifier is
 * found again through its tc filter (egress, handle/priority 0xeb), its maps
 * through the program. No pins, so it works the same under `ip netns exec`.
 */
#ifndef XEVB_SHAPE_CTL_H
#define XEVB_SHAPE_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <xevb/shape.h>

enum xevb_shape_mode_req { XEVB_SHAPE_AUTO, XEVB_SHAPE_FORCE_HTB, XEVB_SHAPE_FORCE_EDT };

struct xevb_shape_rule {
	uint32_t daddr; /* network order */
	uint8_t proto;  /* 0: any */
	uint16_t dport; /* host order; 0: any */
	uint64_t rate_bps;
	uint32_t burst;    /* bytes; 0: automatic (1 ms at the rate, at least 4 frames) */
	uint32_t limit;    /* leaf queue bytes; 0: automatic (the larger of 4 x net.core.wmem_max and 100 ms) */
	uint32_t overhead; /* bytes per frame on top of skb->len */
	enum xevb_shape_mode_req mode; /* only when the shaper is first set up */
	uint64_t horizon_ns;           /* EDT; 0: 2 s */
};

/* Add or change one rule (rate changes apply at once, no reload). 0 or -errno. */
int xevb_shape_set(const char *dev, const struct xevb_shape_rule *r);
/* Remove one rule (r non-NULL: daddr/proto/dport), or everything we added (NULL). */
int xevb_shape_clear(const char *dev, const struct xevb_shape_rule *r);
/* Rules, counters, the mode and qdisc stats; json: one object. */
int xevb_shape_list(const char *dev, FILE *out, bool json);
/* Is our classifier attached to dev? */
bool xevb_shape_active(const char *dev);
/* Wait (bounded) until our classes on dev hold no packets: before a clear. */
void xevb_shape_wait_drained(const char *dev, unsigned max_ms);
/* "htb" or "edt": what auto would choose here; and whether fq exists. */
const char *xevb_shape_auto_mode(int *fq_present);
/* "200mbit", "1.5gbit", "2G", "50m" -> bits/s (tc units; plain numbers are bits/s). */
bool xevb_shape_parse_rate(const char *opt, const char *s, uint64_t *bps);

#endif

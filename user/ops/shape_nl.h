/* SPDX-License-Identifier: GPL-2.0-only */
/* Raw rtnetlink for the few tc objects `xevb shape` manages (no libnl). */
#ifndef XEVB_SHAPE_NL_H
#define XEVB_SHAPE_NL_H

#include <stdbool.h>
#include <stdint.h>

struct shape_qdisc_info {
	char kind[16];
	uint32_t handle, parent;
	uint64_t bytes, packets, drops, overlimits, backlog, qlen;
};

struct shape_htb_params {
	uint64_t rate_bps; /* bits/s */
	uint32_t burst;    /* bytes */
	uint32_t quantum;  /* bytes */
	uint32_t overhead; /* bytes added per packet */
	uint32_t mtu;      /* the device's; sets the rate table cell size */
};

/* Each returns 0 or -errno, having printed what failed (with the kernel's message). */
int shape_nl_root_qdisc(int ifindex, struct shape_qdisc_info *out); /* -ENOENT: none */
int shape_nl_add_htb_root(int ifindex, uint32_t major);
int shape_nl_add_fq_root(int ifindex, uint32_t major);
int shape_nl_del_root(int ifindex, uint32_t handle);
int shape_nl_htb_class(int ifindex, uint32_t classid, const struct shape_htb_params *p, bool create);
int shape_nl_del_class(int ifindex, uint32_t classid);
int shape_nl_bfifo(int ifindex, uint32_t parent, uint32_t handle, uint32_t limit_bytes, bool create);
int shape_nl_qdiscs(int ifindex, struct shape_qdisc_info *out, int max);
/* Stats of classes (kind "htb") of the device; up to max; returns the count or -errno. */
int shape_nl_classes(int ifindex, struct shape_qdisc_info *out, int max);
/* 1 if the kernel has sch_fq, 0 if not, -errno if the probe itself failed. */
int shape_nl_probe_fq(void);

#endif

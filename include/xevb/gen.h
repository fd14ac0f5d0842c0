/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Shared by the live-frames generator (bpf/xevb_gen.bpf.c) and its loader. */
#ifndef XEVB_GEN_H
#define XEVB_GEN_H

#include <linux/types.h>

#define XEVB_GEN_MAX_SOURCES 4096

/* One emulated source, as the generator stamps it into the template. */
struct xevb_gen_src {
	__u32 saddr;     /* network order */
	__u16 source_id;
	__u16 ip_csum;   /* whole IPv4 header checksum with this saddr, host order */
};

#endif

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What several of the small XDP/tc programs here share: a per-CPU array of
 * __u64 counters, and programs that return one fixed verdict.
 */
#ifndef XEVB_BPF_PROGS_H
#define XEVB_BPF_PROGS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* A per-CPU array map of n __u64 counters, indexed by a __u32 slot. */
#define XEVB_PERCPU_COUNTERS(name, n) \
	struct { \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); \
		__uint(max_entries, n); \
		__type(key, __u32); \
		__type(value, __u64); \
	} name SEC(".maps")

/* Adds v to counter k of such a map; a k out of range counts nowhere. */
static __always_inline void xevb_percpu_add(void *map, __u32 k, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(map, &k);

	if (c)
		*c += v;
}

/*
 * Programs name (section xdp) and name_frags (section xdp.frags, for a
 * device whose MTU exceeds a page) that return verdict for every frame.
 */
#define XEVB_FIXED_VERDICT(name, verdict) \
	SEC("xdp") \
	int name(struct xdp_md *ctx) \
	{ \
		(void)ctx; \
		return verdict; \
	} \
	SEC("xdp.frags") \
	int name##_frags(struct xdp_md *ctx) \
	{ \
		(void)ctx; \
		return verdict; \
	}

#endif /* XEVB_BPF_PROGS_H */

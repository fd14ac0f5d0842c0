// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "base/counters.h"
#include "base/json.h"
#include "evb/names.h"
#include "ops/stats_view.h"

int stats_percpu_read(const char *dev, struct stats_percpu *pc, char *why, size_t whylen)
{
	struct bpf_prog_info pinfo;
	__u32 prog_id = 0, map_ids[16], len = sizeof(pinfo);
	int ifindex = (int)if_nametoindex(dev), pfd, mfd = -1, ncpu;

	pc->ncpu = 0;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0 || ncpu > STATS_MAX_CPUS) {
		snprintf(why, whylen, "%d possible CPUs (at most %d here)", ncpu, STATS_MAX_CPUS);
		return -1;
	}
	if (!ifindex || bpf_xdp_query_id(ifindex, 0, &prog_id) || !prog_id) {
		snprintf(why, whylen, "no XDP program on %s in this namespace", dev);
		return -1;
	}
	pfd = bpf_prog_get_fd_by_id(prog_id);
	if (pfd < 0) {
		snprintf(why, whylen, "XDP program %u: %s (root needed)", prog_id, strerror(errno));
		return -1;
	}
	memset(&pinfo, 0, sizeof(pinfo));
	pinfo.nr_map_ids = 16;
	pinfo.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(pfd, &pinfo, &len)) {
		snprintf(why, whylen, "XDP program %u: no info: %s", prog_id, strerror(errno));
		close(pfd);
		return -1;
	}
	close(pfd);
	for (__u32 i = 0; i < pinfo.nr_map_ids && i < 16 && mfd < 0; i++) {
		struct bpf_map_info minfo;
		__u32 ml = sizeof(minfo);
		int fd = bpf_map_get_fd_by_id(map_ids[i]);

		if (fd < 0)
			continue;
		memset(&minfo, 0, sizeof(minfo));
		if (!bpf_obj_get_info_by_fd(fd, &minfo, &ml) && !strcmp(minfo.name, "counters") &&
		    minfo.type == BPF_MAP_TYPE_PERCPU_ARRAY && minfo.value_size == sizeof(struct xevb_xdp_ctr) &&
		    minfo.max_entries >= XEVB_XDP__SLOTS)
			mfd = fd;
		else
			close(fd);
	}
	if (mfd < 0) {
		snprintf(why, whylen, "XDP program %u (%s) has no xevb counters map", prog_id, pinfo.name);
		return -1;
	}
	for (__u32 k = 0; k < XEVB_XDP__SLOTS; k++)
		if (bpf_map_lookup_elem(mfd, &k, pc->v[k])) {
			snprintf(why, whylen, "reading the counters: %s", strerror(errno));
			close(mfd);
			return -1;
		}
	close(mfd);
	pc->ncpu = ncpu;
	return 0;
}

#define ADD(val, ...) \
	do { \
		if (n < max) { \
			snprintf(out[n].name, sizeof(out[n].name), __VA_ARGS__); \
			out[n].v = (val); \
		} \
		n++; \
	} while (0)

/* Every row of the counter table of this scope; prefix before each name ("" or "source.<id>."). */
static size_t add_table(const struct xevb_snapshot *s, enum xevb_counter_scope scope, uint32_t id,
			const char *prefix, struct stats_kv *out, size_t n, size_t max)
{
	char elem[64];

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		if (c->scope != scope)
			continue;
		for (uint32_t k = 0; k < c->n; k++)
			ADD(xevb_counter_value(c, s, id, k), "%s%s", prefix,
			    xevb_counter_name(c, k, false, elem, sizeof(elem)));
	}
	return n;
}

size_t stats_flatten(const struct xevb_snapshot *s, const struct stats_percpu *pc, struct stats_kv *out,
		     size_t max)
{
	char prefix[32];
	size_t n = 0;

	n = add_table(s, XEVB_SCOPE_TOTAL, 0, "", out, n, max);
	/* shed_on on the socket path: the steering program runs in pass mode in front of it. */
	if (s->xdp_mode || s->shed_on)
		for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++) {
			ADD(s->xdp[k].packets, "xdp.%s.packets", xevb_slot_name(k));
			ADD(s->xdp[k].bytes, "xdp.%s.bytes", xevb_slot_name(k));
			ADD(s->xdp[k].frags, "xdp.%s.frags", xevb_slot_name(k));
		}
	if (s->xdp_mode) {
		for (int cpu = 0; pc && cpu < pc->ncpu; cpu++)
			for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++) {
				ADD(pc->v[k][cpu].packets, "xdp.%s.cpu%d.packets", xevb_slot_name(k), cpu);
				ADD(pc->v[k][cpu].bytes, "xdp.%s.cpu%d.bytes", xevb_slot_name(k), cpu);
				ADD(pc->v[k][cpu].frags, "xdp.%s.cpu%d.frags", xevb_slot_name(k), cpu);
			}
		for (uint32_t q = 0; q < s->n_queues && q < XEVB_XSK_MAX_QUEUES; q++) {
			ADD(s->xsk[q].rx_dropped, "xsk.q%u.rx_dropped", q);
			ADD(s->xsk[q].rx_invalid_descs, "xsk.q%u.rx_invalid_descs", q);
			ADD(s->xsk[q].rx_ring_full, "xsk.q%u.rx_ring_full", q);
			ADD(s->xsk[q].rx_fill_ring_empty_descs, "xsk.q%u.fill_ring_empty", q);
		}
	}
	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++) {
		if (!s->core.src[id].seen)
			continue;
		snprintf(prefix, sizeof(prefix), "source.%u.", id);
		n = add_table(s, XEVB_SCOPE_SOURCE, id, prefix, out, n, max);
	}
	return n < max ? n : max;
}

void stats_print_detail(FILE *f, const struct xevb_snapshot *s, const struct stats_percpu *pc)
{
	if (!s->xdp_mode)
		return;
	fprintf(f, "AF_XDP sockets (XDP_STATISTICS) per queue:\n");
	for (uint32_t q = 0; q < s->n_queues && q < XEVB_XSK_MAX_QUEUES; q++)
		fprintf(f,
			"  queue %2u: rx_dropped %" PRIu64 " rx_invalid_descs %" PRIu64 " rx_ring_full %" PRIu64
			" fill_ring_empty %" PRIu64 "\n",
			q, s->xsk[q].rx_dropped, s->xsk[q].rx_invalid_descs, s->xsk[q].rx_ring_full,
			s->xsk[q].rx_fill_ring_empty_descs);
	if (!pc || !pc->ncpu)
		return;
	fprintf(f, "XDP program, packets per CPU (non-zero verdicts):\n  %-24s", "verdict");
	for (int cpu = 0; cpu < pc->ncpu; cpu++)
		fprintf(f, " %12s%d", "cpu", cpu);
	fputc('\n', f);
	for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++) {
		uint64_t t = 0;
		for (int cpu = 0; cpu < pc->ncpu; cpu++)
			t += pc->v[k][cpu].packets;
		if (!t)
			continue;
		fprintf(f, "  %-24s", xevb_slot_name(k));
		for (int cpu = 0; cpu < pc->ncpu; cpu++)
			fprintf(f, " %13" PRIu64, (uint64_t)pc->v[k][cpu].packets);
		fputc('\n', f);
	}
}

static const struct stats_kv *find(const struct stats_kv *kv, size_t n, const char *name, size_t hint)
{
	if (hint < n && !strcmp(kv[hint].name, name))
		return &kv[hint];
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i].name, name))
			return &kv[i];
	return NULL;
}

void stats_print_all(FILE *f, struct stats_list cur, struct stats_list prev, double dt, bool json)
{
	if (json)
		fputc('{', f);
	for (size_t i = 0, k = 0; i < cur.n; i++) {
		const struct stats_kv *c = &cur.kv[i];
		const struct stats_kv *p = prev.kv ? find(prev.kv, prev.n, c->name, i) : NULL;
		double rate = p && dt > 0 ? (double)(int64_t)(c->v - p->v) / dt : 0;

		if (json) {
			fputs(k++ ? "," : "", f);
			xevb_json_strn(f, c->name, sizeof(c->name));
			fprintf(f, ":{\"value\":%" PRIu64 ",\"per_s\":%.1f}", c->v, rate);
		} else if (c->v || rate != 0) {
			fprintf(f, "%-40s %16" PRIu64 " %14.1f/s\n", c->name, c->v, rate);
		}
	}
	fputs(json ? "}\n" : "\n", f);
	fflush(f);
}

// SPDX-License-Identifier: GPL-2.0-only
/* xevb stats: read a running builder's published snapshot. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "base/cli.h"
#include "rx/loader.h"
#include "ops/metrics.h"
#include "ops/report.h"
#include "cmd/cmd_opts.h"
#include "cmd/cmds.h"
#include "ops/stats_view.h"

/* Large, so static: the snapshots, the per-CPU counters and two flattened copies of them (--all). */
static struct xevb_snapshot cur, prev;
static struct stats_percpu pc;
static struct stats_kv kv[2][65536];

/* The builder's published snapshot for dev, mapped, with a first copy in cur; NULL (said why) if none. */
static struct xevb_snapshot *map_snapshot(const char *dev)
{
	struct xevb_snapshot *m;
	char path[256];
	int fd;

	if (xevb_run_path(dev, "stats", path, sizeof(path)))
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		xevb_err(
			"no builder publishes statistics for %s in this network namespace (%s: %s); "
			"is 'xevb build --dev %s' running here?",
			dev, path, strerror(errno), dev);
		return NULL;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED || xevb_snapshot_copy(m, &cur) || cur.magic != XEVB_SNAP_MAGIC ||
	    cur.version != XEVB_SNAP_VERSION) {
		xevb_err("%s is not a statistics file of this xevb version", path);
		return NULL;
	}
	if (kill(cur.pid, 0) && errno == ESRCH)
		xevb_warn("builder pid %d is gone; these are its last figures", cur.pid);
	return m;
}

/* --all: every counter, then every second the same with rates. */
static void show_all(const struct xevb_snapshot *m, const struct stats_cfg *o)
{
	size_t nkv[2] = { 0, 0 };
	char why[160];

	xevb_stop_on_signals();
	if (cur.xdp_mode && stats_percpu_read(o->dev, &pc, why, sizeof(why)))
		xevb_warn("no per-CPU XDP counters: %s", why);
	nkv[0] = stats_flatten(&cur, &pc, kv[0], 65536);
	for (uint32_t n = 0, i = 0; !xevb_stop && (!o->count || n < o->count); n++, i ^= 1) {
		if (n) {
			prev = cur;
			sleep(1);
			if (xevb_snapshot_copy(m, &cur))
				continue;
			if (cur.xdp_mode)
				stats_percpu_read(o->dev, &pc, why, sizeof(why));
			nkv[i] = stats_flatten(&cur, &pc, kv[i], 65536);
		}
		if (!o->json)
			printf("== %s: %u counters%s\n", cur.ifname, (unsigned)nkv[i],
			       n ? " (value, rate over the last second)" : "");
		stats_print_all(stdout, (struct stats_list){ kv[i], nkv[i] },
				(struct stats_list){ n ? kv[i ^ 1] : NULL, nkv[i ^ 1] },
				(double)(cur.update_ns - prev.update_ns) / 1e9, o->json);
	}
}

/* The counters once: the report, or the summary and the detail. */
static void show_once(const struct stats_cfg *o)
{
	char why[160];

	if (o->json) {
		xevb_report_json(stdout, &cur);
		return;
	}
	xevb_report_summary(stdout, &cur);
	if (cur.xdp_mode && stats_percpu_read(o->dev, &pc, why, sizeof(why)))
		printf("(no per-CPU XDP counters: %s)\n", why);
	stats_print_detail(stdout, &cur, &pc);
}

/* --watch: a line of rates (or a report) for every new snapshot, once a second. */
static void show_watch(const struct xevb_snapshot *m, const struct stats_cfg *o)
{
	xevb_stop_on_signals();
	for (uint32_t n = 0; !xevb_stop && (!o->count || n < o->count);) {
		prev = cur;
		sleep(1);
		if (xevb_snapshot_copy(m, &cur))
			continue;
		if (cur.update_ns == prev.update_ns)
			continue;
		if (o->json)
			xevb_report_json(stdout, &cur);
		else
			xevb_report_line(stdout, &cur, &prev);
		n++;
	}
}

int cmd_stats(int argc, char **argv)
{
	struct stats_cfg o = { 0 };
	struct xevb_snapshot *m;
	int c;

	if ((c = stats_opts_parse(argc, argv, &o)) >= 0)
		return c;
	m = map_snapshot(o.dev);
	if (!m)
		return 1;
	if (o.all)
		show_all(m, &o);
	else if (!o.watch)
		show_once(&o);
	else
		show_watch(m, &o);
	munmap(m, sizeof(*m));
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source`: the read-out emulator. The summary lives here;
 * the senders are source_sock.c (kernel sockets, faults) and source_live.c
 * (BPF_PROG_RUN live frames, for benchmarks), source_xsk.c (an AF_XDP TX
 * ring, benchmarks on a NIC's model); under a DFM, source_dfm.c
 * (control plane and socket sends) and source_dfm_live.c (live frames);
 * the option table is source_opts.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "ops/shape_ctl.h"
#include "ctl/runcfg.h"
#include "cmd/cmds.h"
#include "emu/source.h"

static void on_signal(int sig)
{
	(void)sig;
	src_stop = 1;
}

static void print_summary(const struct src_cfg *c, const struct src_stats *st)
{
	double el = (double)(st->t_end - st->t_start) / 1e9;
	double pps = el > 0 ? (double)st->packets / el : 0;
	double eps = el > 0 ? (double)st->events / el : 0;
	double gbps = el > 0 ? (double)st->bytes * 8 / el / 1e9 : 0;
	char cpu[96] = "";

	if (st->cpu_ns)
		snprintf(cpu, sizeof(cpu), "\n  CPU %.3f s in %s: %.0f packets per CPU-second",
			 (double)st->cpu_ns / 1e9, c->xsk ? "the sender" : "BPF_PROG_RUN",
			 (double)st->packets / ((double)st->cpu_ns / 1e9));
	if (c->xsk)
		fprintf(stderr, "%s: AF_XDP TX: %llu turns waited for room (back-pressure), %llu frames dropped\n",
			xevb_prog, (unsigned long long)st->tx_waits, (unsigned long long)st->tx_dropped);

	fprintf(stderr,
		"%s: %s%d sources, %llu events, %llu packets, %llu fragments, %llu bytes in %.3f s\n"
		"  %.0f packets/s, %.0f events/s, %.3f Gb/s (IP payload)\n"
		"  faults: skipped %llu frags, duplicated %llu packets (%llu frags), reordered %llu,"
		" corrupt %llu packets (%llu frags), stopped %llu sources (%llu frags unsent)\n"
		"  end-of-run packets %llu, send retries %llu%s\n"
		"  segments: %llu fragments in %llu segments (%llu sent whole, %llu partial);"
		" skipped %llu, corrupt %llu, duplicated %llu segments\n",
		xevb_prog, st->aborted ? "ABORTED: " : "", c->n_src, (unsigned long long)st->events,
		(unsigned long long)st->packets, (unsigned long long)st->frags, (unsigned long long)st->bytes, el,
		pps, eps, gbps, (unsigned long long)st->skipped_frags, (unsigned long long)st->dup_packets,
		(unsigned long long)st->dup_frags, (unsigned long long)st->reordered_packets,
		(unsigned long long)st->corrupt_packets, (unsigned long long)st->corrupt_frags,
		(unsigned long long)st->stopped_sources, (unsigned long long)st->stopped_frags,
		(unsigned long long)st->eor_packets, (unsigned long long)st->send_retries, cpu,
		(unsigned long long)st->seg_frags, (unsigned long long)st->segments,
		(unsigned long long)(st->seg_frags - st->partial_frags), (unsigned long long)st->partial_frags,
		(unsigned long long)st->skipped_segments, (unsigned long long)st->corrupt_segments,
		(unsigned long long)st->dup_segments);
	if (!c->json)
		return;
	/* Wall-clock time of the first event (paced sends: event e at + e/rate), for tests. */
	uint64_t start_realtime = xevb_realtime_ns() - (xevb_now_ns() - st->t_start);

	printf("{\"mode\":\"%s\",\"sources\":%d,\"pack\":%u,\"run\":%u,\"first_event\":%u,"
	       "\"events\":%llu,\"blocks\":%llu,\"packets\":%llu,\"fragments\":%llu,\"bytes\":%llu,"
	       "\"valid_fragments\":%llu,\"skipped_fragments\":%llu,"
	       "\"duplicate_packets\":%llu,\"duplicate_fragments\":%llu,\"reordered_packets\":%llu,"
	       "\"corrupt_packets\":%llu,\"corrupt_fragments\":%llu,"
	       "\"stopped_sources\":%llu,\"stopped_fragments\":%llu,\"end_of_run_packets\":%llu,"
	       "\"send_retries\":%llu,\"ip_frag\":%s,\"segmented_fragments\":%llu,\"segments\":%llu,"
	       "\"valid_segments\":%llu,\"partial_fragments\":%llu,\"skipped_segments\":%llu,"
	       "\"corrupt_segments\":%llu,\"duplicate_segments\":%llu,\"aborted\":%s,"
	       "\"elapsed_s\":%.6f,\"packets_per_s\":%.1f,\"events_per_s\":%.1f,\"gbps\":%.4f,"
	       "\"cpu_s\":%.6f,\"packets_per_cpu_s\":%.1f,\"tx_waits\":%llu,\"tx_dropped\":%llu,"
	       "\"start_realtime_ns\":%llu}\n",
	       c->xsk  ? "xsk" :
	       c->live ? "live" :
			 "socket",
	       c->n_src, c->pack, c->run, c->first_event, (unsigned long long)st->events,
	       (unsigned long long)st->blocks, (unsigned long long)st->packets, (unsigned long long)st->frags,
	       (unsigned long long)st->bytes, (unsigned long long)st->valid_frags,
	       (unsigned long long)st->skipped_frags, (unsigned long long)st->dup_packets,
	       (unsigned long long)st->dup_frags, (unsigned long long)st->reordered_packets,
	       (unsigned long long)st->corrupt_packets, (unsigned long long)st->corrupt_frags,
	       (unsigned long long)st->stopped_sources, (unsigned long long)st->stopped_frags,
	       (unsigned long long)st->eor_packets, (unsigned long long)st->send_retries,
	       c->ip_frag ? "true" : "false", (unsigned long long)st->seg_frags, (unsigned long long)st->segments,
	       (unsigned long long)st->seg_valid, (unsigned long long)st->partial_frags,
	       (unsigned long long)st->skipped_segments, (unsigned long long)st->corrupt_segments,
	       (unsigned long long)st->dup_segments, st->aborted ? "true" : "false", el, pps, eps, gbps,
	       (double)st->cpu_ns / 1e9, st->cpu_ns ? (double)st->packets / ((double)st->cpu_ns / 1e9) : 0.0,
	       (unsigned long long)st->tx_waits, (unsigned long long)st->tx_dropped,
	       (unsigned long long)start_realtime);
	fflush(stdout);
}

/* --shape: per-destination shaping of our own output for this run only; -1 when set, else the exit status. */
static int shape_start(const struct src_cfg *c, uint64_t bps, bool *was_up)
{
	struct xevb_shape_rule r = { .daddr = c->daddr, .rate_bps = bps };

	if (c->live || !c->dev) {
		xevb_err("--shape needs --mode socket and --dev IFACE (the interface towards --dest)");
		return 2;
	}
	*was_up = xevb_shape_active(c->dev);
	if (xevb_shape_set(c->dev, &r))
		return 1;
	return -1;
}

/* Let the shaped packets out, then remove our rule (or the shaper, if we brought it up); false on failure. */
static bool shape_stop(const struct src_cfg *c, bool was_up)
{
	struct xevb_shape_rule r = { .daddr = c->daddr };

	xevb_shape_wait_drained(c->dev, 5000);
	return !xevb_shape_clear(c->dev, was_up ? &r : NULL);
}

int cmd_source(int argc, char **argv)
{
	static struct src_args a; /* the source_ids and the faults: kilobytes */
	const struct src_cfg *c = &a.c;
	struct src_stats st = { 0 };
	bool shaper_was_up = false;
	int rc;

	if ((rc = xevb_runcfg_start_opts(&argc, &argv, XEVB_RC_SOURCE, &source_cmd)) > 1)
		return rc;
	if ((rc = source_opts_parse(argc, argv, &a)) >= 0)
		return rc;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (a.shape_bps && (rc = shape_start(c, a.shape_bps, &shaper_was_up)) >= 0)
		return rc;
	if (c->dfm)
		rc = source_run_dfm(c);
	else
		rc = c->xsk  ? source_run_xsk(c, &st) :
		     c->live ? source_run_live(c, &st) :
			       source_run_socket(c, &st);
	if (a.shape_bps && !shape_stop(c, shaper_was_up) && !rc)
		rc = 1;
	if (st.t_start)
		print_summary(c, &st);
	return rc;
}

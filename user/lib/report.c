// SPDX-License-Identifier: GPL-2.0-only
#include <inttypes.h>
#include <xevb/names.h>
#include <xevb/report.h>
#include <xevb/shed.h>

static const char *const drop_names[XEVB_DROP__COUNT] = {
	[XEVB_DROP_DUPLICATE] = "duplicate",
	[XEVB_DROP_LATE] = "late",
	[XEVB_DROP_UNKNOWN_SOURCE] = "unknown_source",
	[XEVB_DROP_WRONG_RUN] = "wrong_run",
	[XEVB_DROP_OVERFLOW] = "overflow",
	[XEVB_DROP_FUTURE] = "future",
	[XEVB_DROP_PARTIAL] = "partial",
	[XEVB_DROP_UNASSIGNED] = "unassigned",
};

static uint64_t xdp_malformed(const struct xevb_snapshot *s)
{
	uint64_t n = 0;
	for (unsigned r = XEVB_RES_FIRST_MALFORMED; r < XEVB_RES__COUNT; r++)
		n += s->xdp[r].packets;
	return n;
}

static uint64_t xsk_sum(const struct xevb_snapshot *s, int which)
{
	uint64_t n = 0;
	for (uint32_t q = 0; q < s->n_queues && q < XEVB_XSK_MAX_QUEUES; q++)
		n += which == 0 ? s->xsk[q].rx_dropped : which == 1 ? s->xsk[q].rx_ring_full
							 : s->xsk[q].rx_fill_ring_empty_descs;
	return n;
}

void xevb_report_line(FILE *f, const struct xevb_snapshot *n, const struct xevb_snapshot *p)
{
	double dt = (double)(n->update_ns - p->update_ns) / 1e9;
	uint64_t drops = 0;

	if (dt <= 0)
		return;
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		drops += n->core.drops[r] - p->core.drops[r];
#define RATE(field) ((double)(n->field - p->field) / dt)
	fprintf(f, "%s: %8.0f pkt/s %9.0f frag/s %8.0f ev/s  in %6.3f Gb/s  out %6.3f Gb/s  "
		   "incompl %.0f/s  drops %.0f/s  malformed %.0f/s  xsk_drop %.0f/s  open %" PRIu64 "\n",
		n->ifname, RATE(rx_frames), RATE(core.frags_received),
		RATE(core.events_complete) + RATE(core.events_incomplete),
		RATE(rx_bytes) * 8 / 1e9, RATE(out.bytes) * 8 / 1e9, RATE(core.events_incomplete),
		(double)drops / dt, (double)(xdp_malformed(n) - xdp_malformed(p)) / dt,
		(double)(xsk_sum(n, 0) - xsk_sum(p, 0) + n->sock_kernel_drops - p->sock_kernel_drops) / dt,
		n->core.open_events);
	if (n->shed_on && (n->shed_accept < XEVB_SHED_ONE || n->xdp[XEVB_XDP_SHED].packets != p->xdp[XEVB_XDP_SHED].packets))
		fprintf(f, "%s: shedding: accept %5.1f%%  shed %.0f MEP/s %.0f ev/s\n", n->ifname,
			100.0 * n->shed_accept / XEVB_SHED_ONE, RATE(xdp[XEVB_XDP_SHED].packets),
			RATE(xdp[XEVB_XDP_SHED_REF].frags));
#undef RATE
	fflush(f);
}

/* What user space copied to write the events: 0 when they left from where they were received. */
static void summary_copies(FILE *f, const struct xevb_output_stats *o)
{
	fprintf(f, "  copied by user space %" PRIu64 " bytes (%.3f per byte written)\n", o->bytes_copied,
		o->bytes ? (double)o->bytes_copied / (double)o->bytes : 0.0);
}

static void summary_xdp_program(FILE *f, const struct xevb_snapshot *s)
{
	fprintf(f, "XDP program%s:", s->xdp_mode ? "" : " (pass mode, in front of the socket)");
	for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++)
		if (s->xdp[k].packets)
			fprintf(f, " %s=%" PRIu64, xevb_slot_name(k), (uint64_t)s->xdp[k].packets);
	fputc('\n', f);
}

static void summary_shedding(FILE *f, const struct xevb_snapshot *s)
{
	fprintf(f, "XDP shedding: %" PRIu64 " MEPs, %" PRIu64 " fragments, %" PRIu64
		   " events (source %u) shed whole; accept now %.1f%%, lowest %.1f%%; %" PRIu64
		   " cuts (%" PRIu64 " ring, %" PRIu64 " kernel drops, %" PRIu64 " output backlog), %" PRIu64
		   " raises\n",
		(uint64_t)s->xdp[XEVB_XDP_SHED].packets, (uint64_t)s->xdp[XEVB_XDP_SHED].frags,
		(uint64_t)s->xdp[XEVB_XDP_SHED_REF].frags, s->shed_ref_source,
		100.0 * s->shed_accept / XEVB_SHED_ONE, 100.0 * s->shed_min_accept / XEVB_SHED_ONE,
		s->shed_cuts, s->shed_cuts_by[XEVB_SHED_CUT_RING], s->shed_cuts_by[XEVB_SHED_CUT_DROPS],
		s->shed_cuts_by[XEVB_SHED_CUT_BACKLOG], s->shed_raises);
	if (s->shed_guard_limit)
		fprintf(f, "XDP ring guard: %" PRIu64 " blocks refused whole, %" PRIu64
			   " admitted (refused while over %u frames waited in a queue's ring)\n",
			s->shed_guard_refused, s->shed_guard_admitted, s->shed_guard_limit);
}

void xevb_report_summary(FILE *f, const struct xevb_snapshot *s)
{
	const struct xevb_builder_stats *c = &s->core;
	uint64_t drops = 0;

	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		drops += c->drops[r];
	fprintf(f, "== xevb build summary (%s, %s path, %u sources)\n", s->ifname,
		s->xdp_mode ? "AF_XDP" : "socket", s->n_sources);
	fprintf(f, "frames received     %" PRIu64 " (%" PRIu64 " bytes), not MEP %" PRIu64 "\n",
		s->rx_frames, s->rx_bytes, s->rx_not_mep);
	fprintf(f, "fragments received  %" PRIu64 "\n", c->frags_received);
	fprintf(f, "  in events         %" PRIu64 "\n", c->frags_in_events);
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		fprintf(f, "  %-17s %" PRIu64 "\n", drop_names[r], c->drops[r]);
	fprintf(f, "  (in open events   %" PRIu64 ", of segmented ones not whole yet %" PRIu64 ")\n",
		c->frags_received - c->frags_in_events - drops, c->frags_pending);
	/* Wire format 1.1: the segment invariant's terms (builder.h). */
	fprintf(f, "segments received   %" PRIu64 ": in fragments %" PRIu64, c->segs_received, c->segs_in_frags);
	for (int r = 0; r < XEVB_SEG__COUNT; r++)
		fprintf(f, ", %s %" PRIu64, xevb_seg_reason_name((unsigned)r), c->segs_drops[r]);
	fprintf(f, ", pending %" PRIu64 "; segmented fragments whole %" PRIu64 "\n", c->segs_pending,
		c->seg_frags_whole);
	fprintf(f, "events opened       %" PRIu64 ": complete %" PRIu64 ", incomplete %" PRIu64
		   " (end-of-run flush %" PRIu64 "), discarded %" PRIu64 ", open %" PRIu64
		   "; evicted %" PRIu64 " (of incomplete + discarded: window or frame pressure)\n",
		c->events_opened, c->events_complete, c->events_incomplete, c->events_flushed_eor,
		c->events_discarded, c->open_events, c->events_evicted);
	fprintf(f, "output              %" PRIu64 " events, %" PRIu64 " bytes; no farm node %" PRIu64
		   ", write errors %" PRIu64 ", farm nodes' buffers full %" PRIu64 "\n",
		s->out.events, s->out.bytes, s->out.dropped_no_sink, s->out.dropped_error, s->out.dropped_backlog);
	summary_copies(f, &s->out);
	if (s->out.lost_in_flight || s->out.reconnects || s->out.ack_untracked)
		fprintf(f, "  of them lost in flight to a failed farm node %" PRIu64 " (untracked %" PRIu64
			   "); reconnects %" PRIu64 ", reset by a farm node %" PRIu64 "\n",
			s->out.lost_in_flight, s->out.ack_untracked, s->out.reconnects, s->out.peer_resets);
	if (s->xdp_mode) {
		summary_xdp_program(f, s);
		fprintf(f, "AF_XDP sockets: rx_dropped %" PRIu64 ", rx_ring_full %" PRIu64
			   ", fill_ring_empty %" PRIu64 "\n", xsk_sum(s, 0), xsk_sum(s, 1), xsk_sum(s, 2));
		if (s->shed_on)
			summary_shedding(f, s);
		if (s->rx_meta || s->rx_meta_fallback)
			fprintf(f, "XDP meta: %" PRIu64 " frames taken from it, %" PRIu64 " parsed\n",
				s->rx_meta, s->rx_meta_fallback);
		if (s->rx_ipfrag_datagrams || s->sock_kernel_drops || s->sock_truncated)
			fprintf(f, "IPv4-fragmented MEPs: %" PRIu64 " reassembled datagrams, %" PRIu64 " bytes (%" PRIu64
				   " copied) from the kernel's socket; its queue: dropped %" PRIu64 ", truncated %" PRIu64 "\n",
				s->rx_ipfrag_datagrams, s->rx_ipfrag_bytes, s->rx_ipfrag_copied, s->sock_kernel_drops,
				s->sock_truncated);
	} else {
		fprintf(f, "socket: dropped at the socket queue %" PRIu64 ", truncated %" PRIu64 "\n",
			s->sock_kernel_drops, s->sock_truncated);
		if (s->rx_ipfrag_datagrams)
			fprintf(f, "IPv4-fragmented MEPs: %" PRIu64 " reassembled datagrams over the MTU, %" PRIu64
				   " bytes (%" PRIu64 " copied)\n", s->rx_ipfrag_datagrams, s->rx_ipfrag_bytes,
				s->rx_ipfrag_copied);
		/* shed_on: the steering program sheds in pass mode in front of the socket */
		if (s->shed_on) {
			summary_xdp_program(f, s);
			summary_shedding(f, s);
		}
	}
	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++) {
		const struct xevb_source_stats *ss = &c->src[id];
		if (!ss->seen)
			continue;
		if (ss->seq_gaps || ss->drops[XEVB_DROP_DUPLICATE] || ss->drops[XEVB_DROP_LATE] ||
		    ss->drops[XEVB_DROP_WRONG_RUN] || ss->drops[XEVB_DROP_OVERFLOW] ||
		    ss->drops[XEVB_DROP_UNKNOWN_SOURCE] || ss->drops[XEVB_DROP_FUTURE] ||
		    ss->drops[XEVB_DROP_PARTIAL] || ss->drops[XEVB_DROP_UNASSIGNED] || ss->seq_resets)
			fprintf(f, "  source %4u: packets %" PRIu64 " seq_gaps %" PRIu64 " frags %" PRIu64
				   " in_events %" PRIu64 " dup %" PRIu64 " late %" PRIu64 " unknown %" PRIu64
				   " wrong_run %" PRIu64 " overflow %" PRIu64 " future %" PRIu64
				   " partial %" PRIu64 " unassigned %" PRIu64 " seq_resets %" PRIu64 "%s\n",
				id, ss->packets, ss->seq_gaps, ss->frags_received, ss->frags_in_events,
				ss->drops[0], ss->drops[1], ss->drops[2], ss->drops[3], ss->drops[4],
				ss->drops[XEVB_DROP_FUTURE], ss->drops[XEVB_DROP_PARTIAL],
				ss->drops[XEVB_DROP_UNASSIGNED], ss->seq_resets,
				ss->end_of_run ? " eor" : "");
	}
}

void xevb_report_json(FILE *f, const struct xevb_snapshot *s)
{
	const struct xevb_builder_stats *c = &s->core;

	fprintf(f, "{\"ifname\":\"%s\",\"path\":\"%s\",\"sources\":%u,\"rx_frames\":%" PRIu64
		   ",\"rx_bytes\":%" PRIu64 ",\"rx_not_mep\":%" PRIu64 ",\"frags_received\":%" PRIu64
		   ",\"frags_in_events\":%" PRIu64,
		s->ifname, s->xdp_mode ? "xdp" : "socket", s->n_sources, s->rx_frames, s->rx_bytes,
		s->rx_not_mep, c->frags_received, c->frags_in_events);
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		fprintf(f, ",\"drop_%s\":%" PRIu64, drop_names[r], c->drops[r]);
	fprintf(f, ",\"events_opened\":%" PRIu64 ",\"events_complete\":%" PRIu64
		   ",\"events_incomplete\":%" PRIu64 ",\"events_flushed_eor\":%" PRIu64
		   ",\"events_evicted\":%" PRIu64
		   ",\"events_discarded\":%" PRIu64 ",\"open_events\":%" PRIu64 ",\"run_number\":%u"
		   ",\"run_ended\":%s,\"out_events\":%" PRIu64 ",\"out_bytes\":%" PRIu64
		   ",\"out_dropped_no_sink\":%" PRIu64 ",\"out_dropped_error\":%" PRIu64
		   ",\"out_dropped_backlog\":%" PRIu64 ",\"out_lost_in_flight\":%" PRIu64 ",\"out_ack_untracked\":%" PRIu64 ",\"out_reconnects\":%" PRIu64
		   ",\"out_peer_resets\":%" PRIu64 ",\"out_bytes_copied\":%" PRIu64
		   ",\"sock_kernel_drops\":%" PRIu64 ",\"xsk_rx_dropped\":%" PRIu64
		   ",\"xsk_rx_ring_full\":%" PRIu64 ",\"xsk_fill_ring_empty\":%" PRIu64
		   ",\"batches\":%" PRIu64 ",\"polls\":%" PRIu64,
		c->events_opened, c->events_complete, c->events_incomplete, c->events_flushed_eor,
		c->events_evicted, c->events_discarded, c->open_events, c->run_number, c->run_ended ? "true" : "false",
		s->out.events, s->out.bytes, s->out.dropped_no_sink, s->out.dropped_error, s->out.dropped_backlog,
		s->out.lost_in_flight, s->out.ack_untracked, s->out.reconnects, s->out.peer_resets, s->out.bytes_copied, s->sock_kernel_drops, xsk_sum(s, 0), xsk_sum(s, 1), xsk_sum(s, 2), s->batches, s->polls);
	fprintf(f, ",\"rx_meta\":%" PRIu64 ",\"rx_meta_fallback\":%" PRIu64, s->rx_meta,
		s->rx_meta_fallback);
	fprintf(f, ",\"rx_ipfrag_datagrams\":%" PRIu64 ",\"rx_ipfrag_bytes\":%" PRIu64
		   ",\"rx_ipfrag_copied\":%" PRIu64 ",\"sock_truncated\":%" PRIu64, s->rx_ipfrag_datagrams,
		s->rx_ipfrag_bytes, s->rx_ipfrag_copied, s->sock_truncated);
	fprintf(f, ",\"shed_on\":%s,\"shed_meps\":%" PRIu64 ",\"shed_frags\":%" PRIu64
		   ",\"shed_events\":%" PRIu64 ",\"shed_accept\":%u,\"shed_min_accept\":%u"
		   ",\"shed_cuts\":%" PRIu64 ",\"shed_raises\":%" PRIu64,
		s->shed_on ? "true" : "false", (uint64_t)s->xdp[XEVB_XDP_SHED].packets,
		(uint64_t)s->xdp[XEVB_XDP_SHED].frags, (uint64_t)s->xdp[XEVB_XDP_SHED_REF].frags,
		s->shed_accept, s->shed_min_accept, s->shed_cuts, s->shed_raises);
	fprintf(f, ",\"shed_cuts_by\":{");
	for (unsigned k = 0; k < XEVB_SHED_CUT__N; k++)
		fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", xevb_shed_cause_name(k), s->shed_cuts_by[k]);
	fprintf(f, "}");
	fprintf(f, ",\"shed_guard_limit\":%u,\"shed_guard_refused\":%" PRIu64 ",\"shed_guard_admitted\":%" PRIu64,
		s->shed_guard_limit, s->shed_guard_refused, s->shed_guard_admitted);
	fprintf(f, ",\"xdp\":{");
	for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++)
		fprintf(f, "%s\"%s\":{\"packets\":%" PRIu64 ",\"frags\":%" PRIu64 "}", k ? "," : "",
			xevb_slot_name(k), (uint64_t)s->xdp[k].packets, (uint64_t)s->xdp[k].frags);
	fprintf(f, "},\"seq_resets\":%" PRIu64 ",\"jumps_quorum\":%" PRIu64 ",\"jumps_idle\":%" PRIu64,
		c->seq_resets, c->jumps_quorum, c->jumps_idle);
	fprintf(f, ",\"meps_grouped\":%" PRIu64 ",\"groups_split\":%" PRIu64, c->meps_grouped,
		c->groups_split);
	fprintf(f, ",\"segs_received\":%" PRIu64 ",\"segs_in_frags\":%" PRIu64 ",\"segs_pending\":%" PRIu64
		   ",\"frags_pending\":%" PRIu64 ",\"seg_frags_whole\":%" PRIu64,
		c->segs_received, c->segs_in_frags, c->segs_pending, c->frags_pending, c->seg_frags_whole);
	for (int r = 0; r < XEVB_SEG__COUNT; r++)
		fprintf(f, ",\"segs_%s\":%" PRIu64, xevb_seg_reason_name((unsigned)r), c->segs_drops[r]);
	fprintf(f, ",\"seq_gaps\":%" PRIu64 "}\n", ({
		uint64_t g = 0;
		for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++)
			g += c->src[id].seq_gaps;
		g;
	}));
	fflush(f);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * A builder's metrics page, from the snapshot it publishes once a second
 * (include/xevb/report.h): the scrape copies it under its sequence count,
 * so the receive loop never waits for, or even notices, a scrape.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xevb/metrics.h>
#include <xevb/names.h>
#include <xevb/report.h>

static const char *const drop_reason[XEVB_DROP__COUNT] = {
	[XEVB_DROP_DUPLICATE] = "duplicate",
	[XEVB_DROP_LATE] = "late",
	[XEVB_DROP_UNKNOWN_SOURCE] = "unknown_source",
	[XEVB_DROP_WRONG_RUN] = "wrong_run",
	[XEVB_DROP_OVERFLOW] = "overflow",
	[XEVB_DROP_FUTURE] = "future",
	[XEVB_DROP_PARTIAL] = "partial",
	[XEVB_DROP_UNASSIGNED] = "unassigned",
};

int xevb_snapshot_copy(const struct xevb_snapshot *m, struct xevb_snapshot *out)
{
	for (int tries = 0; tries < 100; tries++) {
		uint64_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			usleep(1000);
			continue;
		}
		memcpy(out, m, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&m->seq, __ATOMIC_ACQUIRE) == s1)
			return 0;
	}
	return -1;
}

#define C(name, help, v) xevb_metric_one(b, name, "counter", help, v)
#define G(name, help, v) xevb_metric_one(b, name, "gauge", help, v)

static void per_source(struct xevb_mbuf *b, const struct xevb_builder_stats *c, const char *name,
		       const char *help, size_t off)
{
	char l[32];

	xevb_metric_family(b, name, "counter", help);
	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++) {
		if (!c->src[id].seen)
			continue;
		snprintf(l, sizeof(l), "source=\"%u\"", id);
		xevb_metric_u64(b, name, l, *(const uint64_t *)((const char *)&c->src[id] + off));
	}
}

void xevb_metrics_render_snapshot(struct xevb_mbuf *b, void *arg)
{
	struct xevb_snapshot *s = malloc(sizeof(*s));
	const struct xevb_builder_stats *c;
	char l[96];

	if (!s) {
		b->oom = true;
		return;
	}
	if (xevb_snapshot_copy(arg, s) || s->magic != XEVB_SNAP_MAGIC) {
		/* Being rewritten for 100 ms: say so rather than invent numbers. */
		G("xevb_build_snapshot_valid", "1 if the builder's statistics could be read.", 0);
		free(s);
		return;
	}
	c = &s->core;
	G("xevb_build_snapshot_valid", "1 if the builder's statistics could be read.", 1);
	xevb_metric_family(b, "xevb_build_info", "gauge", "The builder: interface and receive path.");
	snprintf(l, sizeof(l), "ifname=\"%.31s\",path=\"%s\"", s->ifname, s->xdp_mode ? "xdp" : "socket");
	xevb_metric_u64(b, "xevb_build_info", l, 1);
	xevb_metric_family(b, "xevb_build_uptime_seconds", "gauge", "Seconds since the builder started.");
	xevb_metric_f64(b, "xevb_build_uptime_seconds", NULL, (double)(s->update_ns - s->start_ns) / 1e9);
	G("xevb_build_sources", "Source ids the builder expects.", s->n_sources);

	C("xevb_rx_frames_total", "Frames taken from the receive sockets.", s->rx_frames);
	C("xevb_rx_bytes_total", "Bytes of the frames taken from the receive sockets.", s->rx_bytes);
	C("xevb_rx_not_mep_frames_total", "Frames in the receive sockets that were not valid MEPs.", s->rx_not_mep);
	C("xevb_rx_batches_total", "Receive batches handled.", s->batches);
	C("xevb_polls_total", "Times the builder slept in poll() (wake-ups).", s->polls);

	/* shed_on on the socket path: the steering program runs in pass mode in front of it. */
	if (s->xdp_mode || s->shed_on) {
		static const char *const h[3] = {
			"Packets by verdict of the XDP steering program (summed over CPUs).",
			"Bytes by verdict of the XDP steering program (summed over CPUs).",
			"Fragment records carried by valid MEPs, by verdict of the XDP program.",
		};
		static const char *const n[3] = {
			"xevb_xdp_packets_total", "xevb_xdp_bytes_total", "xevb_xdp_fragments_total",
		};
		for (int k = 0; k < 3; k++) {
			xevb_metric_family(b, n[k], "counter", h[k]);
			for (unsigned v = 0; v < XEVB_XDP__SLOTS; v++) {
				const struct xevb_xdp_ctr *x = &s->xdp[v];
				snprintf(l, sizeof(l), "verdict=\"%s\"", xevb_slot_name(v));
				xevb_metric_u64(b, n[k], l, k == 0 ? x->packets : k == 1 ? x->bytes : x->frags);
			}
		}
		if (s->shed_on) {
			G("xevb_shed_accept", "Whole-event shedding: fraction of event id blocks let through, of 65536.",
			  s->shed_accept);
			C("xevb_shed_meps_total", "MEPs shed whole by the XDP program.", s->xdp[XEVB_XDP_SHED].packets);
			C("xevb_shed_fragments_total", "Fragments in the MEPs shed by the XDP program.",
			  s->xdp[XEVB_XDP_SHED].frags);
			C("xevb_shed_events_total", "Events shed (the reference source's shed fragments).",
			  s->xdp[XEVB_XDP_SHED_REF].frags);
			xevb_metric_family(b, "xevb_shed_cuts_total", "counter",
					   "Times the shedding controller lowered the level, by cause.");
			for (unsigned k = 0; k < XEVB_SHED_CUT__N; k++) {
				char l[32];

				snprintf(l, sizeof(l), "cause=\"%s\"", xevb_shed_cause_name(k));
				xevb_metric_u64(b, "xevb_shed_cuts_total", l, s->shed_cuts_by[k]);
			}
		}
	}
	if (s->xdp_mode) {
		static const struct { const char *name, *help; size_t off; } xs[] = {
			{ "xevb_xsk_rx_dropped_total", "AF_XDP: frames dropped for lack of room (XDP_STATISTICS rx_dropped).",
			  offsetof(struct xevb_xsk_stats, rx_dropped) },
			{ "xevb_xsk_rx_invalid_descs_total", "AF_XDP: invalid RX descriptors (XDP_STATISTICS).",
			  offsetof(struct xevb_xsk_stats, rx_invalid_descs) },
			{ "xevb_xsk_rx_ring_full_total", "AF_XDP: times the RX ring was full (XDP_STATISTICS).",
			  offsetof(struct xevb_xsk_stats, rx_ring_full) },
			{ "xevb_xsk_fill_ring_empty_total", "AF_XDP: times the fill ring was empty (XDP_STATISTICS).",
			  offsetof(struct xevb_xsk_stats, rx_fill_ring_empty_descs) },
		};
		for (size_t k = 0; k < sizeof(xs) / sizeof(xs[0]); k++) {
			xevb_metric_family(b, xs[k].name, "counter", xs[k].help);
			for (uint32_t q = 0; q < s->n_queues && q < XEVB_XSK_MAX_QUEUES; q++) {
				snprintf(l, sizeof(l), "queue=\"%u\"", q);
				xevb_metric_u64(b, xs[k].name, l,
						*(const uint64_t *)((const char *)&s->xsk[q] + xs[k].off));
			}
		}
	} else {
		C("xevb_socket_kernel_drops_total", "Socket path: packets dropped at the socket queue.", s->sock_kernel_drops);
		C("xevb_socket_truncated_total", "Socket path: packets truncated to the frame size.", s->sock_truncated);
	}
	C("xevb_ipfrag_datagrams_total", "IPv4-fragmented MEPs: datagrams longer than the MTU (reassembled by the kernel) "
	  "received (XDP path: on the socket beside AF_XDP).", s->rx_ipfrag_datagrams);
	C("xevb_ipfrag_bytes_total", "IPv4-fragmented MEPs: bytes of the reassembled datagrams received.",
	  s->rx_ipfrag_bytes);
	C("xevb_ipfrag_copied_bytes_total", "Bytes copied to make a datagram longer than a receive frame contiguous.",
	  s->rx_ipfrag_copied);
	if (s->xdp_mode) {
		C("xevb_ipfrag_socket_drops_total", "XDP path: reassembled datagrams dropped at their socket's queue.",
		  s->sock_kernel_drops);
		C("xevb_ipfrag_truncated_total", "XDP path: reassembled datagrams truncated to the buffer size.",
		  s->sock_truncated);
	}

	C("xevb_mep_packets_total", "Valid MEPs and SEGMENT packets handed to the builder.", c->packets);
	C("xevb_segments_received_total", "SEGMENT packets (wire format 1.1) handed to the builder.", c->segs_received);
	C("xevb_segments_in_fragments_total", "Segments in fragments accepted into events.", c->segs_in_frags);
	xevb_metric_family(b, "xevb_segments_dropped_total", "counter", "Segments not in a built fragment, by reason.");
	for (int r = 0; r < XEVB_SEG__COUNT; r++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", xevb_seg_reason_name((unsigned)r));
		xevb_metric_u64(b, "xevb_segments_dropped_total", l, c->segs_drops[r]);
	}
	G("xevb_segments_pending", "Segments held by fragments not whole yet.", c->segs_pending);
	G("xevb_segmented_fragments_pending", "Segmented fragments received, not whole yet.", c->frags_pending);
	C("xevb_segmented_fragments_whole_total", "Segmented fragments accepted into events.", c->seg_frags_whole);
	C("xevb_fragments_received_total", "Fragments received by the builder.", c->frags_received);
	C("xevb_fragments_in_events_total", "Fragments accepted into an event.", c->frags_in_events);
	C("xevb_fragments_discarded_total", "Fragments of events discarded at timeout.", c->frags_discarded);
	xevb_metric_family(b, "xevb_fragments_dropped_total", "counter", "Fragments dropped by the builder, by reason.");
	for (int r = 0; r < XEVB_DROP__COUNT; r++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", drop_reason[r]);
		xevb_metric_u64(b, "xevb_fragments_dropped_total", l, c->drops[r]);
	}
	C("xevb_events_opened_total", "Events opened (first fragment seen).", c->events_opened);
	C("xevb_events_complete_total", "Events emitted complete.", c->events_complete);
	C("xevb_events_incomplete_total", "Events emitted incomplete (timeout or end of run).", c->events_incomplete);
	C("xevb_events_flushed_eor_total", "Incomplete events flushed at END_OF_RUN.", c->events_flushed_eor);
	C("xevb_events_evicted_total", "Events that left incomplete (or discarded) because a newer event id needed their window slot (window pressure).", c->events_evicted);
	C("xevb_events_discarded_total", "Events discarded at timeout (discard policy).", c->events_discarded);
	G("xevb_events_open", "Events open now.", c->open_events);
	G("xevb_frames_held", "Receive frames held by open events now.", c->frames_held);
	G("xevb_run_number", "Run number being built.", c->run_number);
	G("xevb_run_ended", "1 once every source has ended the run.", c->run_ended);
	C("xevb_builder_bad_calls_total", "Frames refused by the builder core (bad index, impossible header).", c->bad_calls);
	C("xevb_meps_grouped_total", "MEPs booked whole in a run of consecutive events.", c->meps_grouped);
	C("xevb_groups_split_total", "Runs split back into single events by a MEP that did not fit.", c->groups_split);
	xevb_metric_family(b, "xevb_window_jumps_total", "counter",
			   "Window jumps of more than one window ahead, by what corroborated them.");
	xevb_metric_u64(b, "xevb_window_jumps_total", "cause=\"quorum\"", c->jumps_quorum);
	xevb_metric_u64(b, "xevb_window_jumps_total", "cause=\"idle\"", c->jumps_idle);
	xevb_metric_u64(b, "xevb_window_jumps_total", "cause=\"shed\"", c->jumps_shed);

	C("xevb_output_events_total", "Built events written whole to farm nodes or the file.", s->out.events);
	C("xevb_output_bytes_total", "Bytes of built events written.", s->out.bytes);
	xevb_metric_family(b, "xevb_output_dropped_events_total", "counter", "Built events not delivered, by reason.");
	xevb_metric_u64(b, "xevb_output_dropped_events_total", "reason=\"no_sink\"", s->out.dropped_no_sink);
	xevb_metric_u64(b, "xevb_output_dropped_events_total", "reason=\"write_error\"", s->out.dropped_error);
	xevb_metric_u64(b, "xevb_output_dropped_events_total", "reason=\"backlog\"", s->out.dropped_backlog);
	xevb_metric_u64(b, "xevb_output_dropped_events_total", "reason=\"encode_error\"", s->out.encode_errors);
	xevb_metric_u64(b, "xevb_output_dropped_events_total", "reason=\"in_flight\"", s->out.lost_in_flight);
	C("xevb_output_reconnects_total", "Farm node connections made again after a failure.", s->out.reconnects);
	C("xevb_output_peer_resets_total", "Farm node connections reset by the peer (it died with unread data).",
	  s->out.peer_resets);

	per_source(b, c, "xevb_source_packets_total", "Valid MEPs per source_id.",
		   offsetof(struct xevb_source_stats, packets));
	per_source(b, c, "xevb_source_seq_gaps_total", "Packets missing by packet_seq, per source_id.",
		   offsetof(struct xevb_source_stats, seq_gaps));
	per_source(b, c, "xevb_source_seq_resets_total", "Restarts of packet_seq (source restarted), per source_id.",
		   offsetof(struct xevb_source_stats, seq_resets));
	per_source(b, c, "xevb_source_fragments_received_total", "Fragments received per source_id.",
		   offsetof(struct xevb_source_stats, frags_received));
	per_source(b, c, "xevb_source_fragments_in_events_total", "Fragments accepted into events per source_id.",
		   offsetof(struct xevb_source_stats, frags_in_events));
	xevb_metric_family(b, "xevb_source_fragments_dropped_total", "counter",
			   "Fragments dropped per source_id and reason.");
	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++) {
		if (!c->src[id].seen)
			continue;
		for (int r = 0; r < XEVB_DROP__COUNT; r++) {
			snprintf(l, sizeof(l), "source=\"%u\",reason=\"%s\"", id, drop_reason[r]);
			xevb_metric_u64(b, "xevb_source_fragments_dropped_total", l, c->src[id].drops[r]);
		}
	}
	xevb_metric_family(b, "xevb_source_end_of_run", "gauge", "1 once the source sent END_OF_RUN.");
	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++) {
		if (!c->src[id].seen)
			continue;
		snprintf(l, sizeof(l), "source=\"%u\"", id);
		xevb_metric_u64(b, "xevb_source_end_of_run", l, c->src[id].end_of_run);
	}
	free(s);
}

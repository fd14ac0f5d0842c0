/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every counter of a builder, declared once. The structs declare their
 * fields from these lists (xevb_builder_stats and xevb_source_stats in
 * builder.h, xevb_output_stats in output.h, xevb_snapshot in report.h);
 * the worker merge and the accounting check's per-source sums are made
 * from them; the JSON report (and each worker's), the Prometheus page,
 * `xevb stats --all` and the end-of-run summary walk the descriptor table
 * made from them (user/ops/counters.c). A counter added here is in every
 * output; tests/unit/test_counters.c holds that to account.
 *
 * A row of a total (the whole builder):
 *   X(field, unit, kind, json, stats, prom, label, help)
 *   XA(field, n, elem, unit, kind, json, stats, prom, label, help)
 * field: the uint64_t member (XA: an array of n, element k named elem(k))
 * unit:  what one count is (Prometheus names carry it: _bytes, _frames)
 * kind:  COUNTER (only grows) or GAUGE (a level now)
 * json:  its key in the JSON report (XA: the prefix of json_<elem>)
 * stats: its name in `xevb stats --all` (XA: the prefix of stats.<elem>)
 * prom:  its Prometheus metric; rows of one family follow each other, with
 *        label the sample's labels ("cause=\"idle\""; XA: the label's key,
 *        valued elem(k)) and help only on the family's first row (NULL on
 *        the others)
 *
 * A per-source row (struct xevb_source_stats) has total instead of json and
 * stats: 1 when the builder's total of the same name is the sum over the
 * sources (the accounting check holds it), 0 when there is no total; its
 * name is the same in the JSON ("source":{"<id>":{"name":...}}) and
 * `xevb stats` (source.<id>.name); on the Prometheus page it is labelled
 * source="<id>". The summary's lines name rows by their JSON keys.
 *   SX(field, total, unit, kind, name, prom, label, help)
 *   SXA(field, total, n, elem, unit, kind, name, prom, label, help)
 *
 * Not here, because they are not counters of one value: the run's number
 * and state, the XDP program's slots (xdp_stats.h, with their names in
 * names.c), the AF_XDP sockets' XDP_STATISTICS per queue, the shedding
 * controller (shed.h), and the JSON's derived sums (seq_gaps, xsk_*).
 */
#ifndef XEVB_COUNTERS_H
#define XEVB_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The receive loop's, in struct xevb_snapshot. On the XDP path the socket
 * counters are those of the socket beside AF_XDP that takes the reassembled
 * datagrams, and their Prometheus names say so (XEVB_RX_XDP_NAMES).
 */
#define XEVB_RX_COUNTERS(X) \
	X(rx_frames, "frames", COUNTER, "rx_frames", "rx_frames", "xevb_rx_frames_total", NULL, \
	  "Frames taken from the receive sockets.") \
	X(rx_bytes, "bytes", COUNTER, "rx_bytes", "rx_bytes", "xevb_rx_bytes_total", NULL, \
	  "Bytes of the frames taken from the receive sockets.") \
	X(rx_not_mep, "frames", COUNTER, "rx_not_mep", "rx_not_mep", "xevb_rx_not_mep_frames_total", NULL, \
	  "Frames in the receive sockets that were not valid MEPs.") \
	X(batches, "batches", COUNTER, "batches", "batches", "xevb_rx_batches_total", NULL, \
	  "Receive batches handled.") \
	X(polls, "wake-ups", COUNTER, "polls", "polls", "xevb_polls_total", NULL, \
	  "Times the builder slept in poll() (wake-ups).") \
	X(sock_kernel_drops, "packets", COUNTER, "sock_kernel_drops", "sock_kernel_drops", \
	  "xevb_socket_kernel_drops_total", NULL, "Socket path: packets dropped at the socket queue.") \
	X(sock_truncated, "packets", COUNTER, "sock_truncated", "sock_truncated", "xevb_socket_truncated_total", \
	  NULL, "Socket path: packets truncated to the frame size.") \
	/* IPv4-fragmented MEPs, reassembled by the kernel (wire format 1.1) */ \
	X(rx_ipfrag_datagrams, "datagrams", COUNTER, "rx_ipfrag_datagrams", "rx_ipfrag_datagrams", \
	  "xevb_ipfrag_datagrams_total", NULL, \
	  "IPv4-fragmented MEPs: datagrams longer than the MTU (reassembled by the kernel) received " \
	  "(XDP path: on the socket beside AF_XDP).") \
	X(rx_ipfrag_bytes, "bytes", COUNTER, "rx_ipfrag_bytes", "rx_ipfrag_bytes", "xevb_ipfrag_bytes_total", \
	  NULL, "IPv4-fragmented MEPs: bytes of the reassembled datagrams received.") \
	X(rx_ipfrag_copied, "bytes", COUNTER, "rx_ipfrag_copied", "rx_ipfrag_copied", \
	  "xevb_ipfrag_copied_bytes_total", NULL, \
	  "Bytes copied to make a datagram longer than a receive frame contiguous.") \
	/* XDP meta (xsk_meta.h) */ \
	X(rx_meta, "frames", COUNTER, "rx_meta", "rx_meta", "xevb_rx_meta_frames_total", NULL, \
	  "AF_XDP frames taken from their XDP meta, not parsed again.") \
	X(rx_meta_fallback, "frames", COUNTER, "rx_meta_fallback", "rx_meta_fallback", \
	  "xevb_rx_meta_fallback_frames_total", NULL, \
	  "AF_XDP frames parsed: XDP meta on, but none that checked out.")

/* The Prometheus names of these rows on the XDP path: Y(field, prom, help). */
#define XEVB_RX_XDP_NAMES(Y) \
	Y(sock_kernel_drops, "xevb_ipfrag_socket_drops_total", \
	  "XDP path: reassembled datagrams dropped at their socket's queue.") \
	Y(sock_truncated, "xevb_ipfrag_truncated_total", \
	  "XDP path: reassembled datagrams truncated to the buffer size.")

/*
 * The builder core's totals, in struct xevb_builder_stats. Fragments:
 * frags_received = frags_in_events + drops[*] + frags_pending + those in
 * open events; segments (wire format 1.1): segs_received = segs_in_frags +
 * segs_drops[*] + segs_pending. Events: events_opened = events_complete +
 * events_incomplete + events_discarded + open_events.
 */
#define XEVB_CORE_COUNTERS(X, XA) \
	X(packets, "packets", COUNTER, "mep_packets", "mep_packets", "xevb_mep_packets_total", NULL, \
	  "Valid MEPs and SEGMENT packets handed to the builder.") \
	X(frags_received, "fragments", COUNTER, "frags_received", "frags_received", \
	  "xevb_fragments_received_total", NULL, "Fragments received by the builder.") \
	X(frags_in_events, "fragments", COUNTER, "frags_in_events", "frags_in_events", \
	  "xevb_fragments_in_events_total", NULL, "Fragments accepted into an event.") \
	/* of frags_in_events: in events discarded at timeout */ \
	X(frags_discarded, "fragments", COUNTER, "frags_discarded", "frags_discarded", \
	  "xevb_fragments_discarded_total", NULL, "Fragments of events discarded at timeout.") \
	XA(drops, XEVB_DROP__COUNT, xevb_drop_reason_name, "fragments", COUNTER, "drop", "drop", \
	   "xevb_fragments_dropped_total", "reason", "Fragments dropped by the builder, by reason.") \
	X(events_opened, "events", COUNTER, "events_opened", "events_opened", "xevb_events_opened_total", NULL, \
	  "Events opened (first fragment seen).") \
	X(events_complete, "events", COUNTER, "events_complete", "events_complete", "xevb_events_complete_total", \
	  NULL, "Events emitted complete.") \
	X(events_incomplete, "events", COUNTER, "events_incomplete", "events_incomplete", \
	  "xevb_events_incomplete_total", NULL, "Events emitted incomplete (timeout or end of run).") \
	/* of the incomplete: flushed at END_OF_RUN */ \
	X(events_flushed_eor, "events", COUNTER, "events_flushed_eor", "events_flushed_eor", \
	  "xevb_events_flushed_eor_total", NULL, "Incomplete events flushed at END_OF_RUN.") \
	/* \
	 * of the incomplete + discarded: left before their timeout because a \
	 * newer id needed their window slot, or the frame pool needed their \
	 * frames (max_frames_held) \
	 */ \
	X(events_evicted, "events", COUNTER, "events_evicted", "events_evicted", "xevb_events_evicted_total", \
	  NULL, \
	  "Events that left incomplete (or discarded) because a newer event id needed their window " \
	  "slot (window pressure).") \
	X(events_discarded, "events", COUNTER, "events_discarded", "events_discarded", \
	  "xevb_events_discarded_total", NULL, "Events discarded at timeout (discard policy).") \
	/* of the discarded: opened by data before a DFM's first ASSIGN, out of its reach */ \
	X(events_unassigned, "events", COUNTER, "events_unassigned", "events_unassigned", \
	  "xevb_events_unassigned_total", NULL, \
	  "Events opened before the DFM's first assignment, out of its reach, discarded then.") \
	X(open_events, "events", GAUGE, "open_events", "open_events", "xevb_events_open", NULL, \
	  "Events open now.") \
	X(frames_held, "frames", GAUGE, "frames_held", "frames_held", "xevb_frames_held", NULL, \
	  "Receive frames held by open events now.") \
	/* add_mep with a frame index out of range or still held, or an impossible pi: ignored */ \
	X(bad_calls, "calls", COUNTER, "bad_calls", "bad_calls", "xevb_builder_bad_calls_total", NULL, \
	  "Frames refused by the builder core (bad index, impossible header).") \
	/* the window moved more than one window ahead: a quorum agreed, or it was idle for the timeout */ \
	X(jumps_quorum, "jumps", COUNTER, "jumps_quorum", "jumps_quorum", "xevb_window_jumps_total", \
	  "cause=\"quorum\"", "Window jumps of more than one window ahead, by what corroborated them.") \
	X(jumps_idle, "jumps", COUNTER, "jumps_idle", "jumps_idle", "xevb_window_jumps_total", "cause=\"idle\"", \
	  NULL) \
	/* ... over blocks our XDP program shed and vouched for (pi->shed_run, shed.h) */ \
	X(jumps_shed, "jumps", COUNTER, "jumps_shed", "jumps_shed", "xevb_window_jumps_total", "cause=\"shed\"", \
	  NULL) \
	X(seq_resets, "restarts", COUNTER, "seq_resets", "seq_resets", "xevb_seq_resets_total", NULL, \
	  "Restarts of packet_seq (a source restarted), all sources.") \
	/* MEPs booked as a whole (builder.h, add_mep) */ \
	X(meps_grouped, "MEPs", COUNTER, "meps_grouped", "meps_grouped", "xevb_meps_grouped_total", NULL, \
	  "MEPs booked whole in a run of consecutive events.") \
	/* runs turned back into single events by a MEP that did not fit them */ \
	X(groups_split, "runs", COUNTER, "groups_split", "groups_split", "xevb_groups_split_total", NULL, \
	  "Runs split back into single events by a MEP that did not fit.") \
	/* \
	 * A segmented fragment counts once in frags_received, when its first \
	 * segment arrives; one dropped before any of it is held (unknown \
	 * source, wrong run, late, future, duplicate) counts with its segment \
	 * at offset 0, so once as long as that one arrives. \
	 */ \
	X(segs_received, "segments", COUNTER, "segs_received", "segs_received", "xevb_segments_received_total", \
	  NULL, "SEGMENT packets (wire format 1.1) handed to the builder.") \
	X(segs_in_frags, "segments", COUNTER, "segs_in_frags", "segs_in_frags", \
	  "xevb_segments_in_fragments_total", NULL, "Segments in fragments accepted into events.") \
	XA(segs_drops, XEVB_SEG__COUNT, xevb_seg_reason_name, "segments", COUNTER, "segs", "segs", \
	   "xevb_segments_dropped_total", "reason", "Segments not in a built fragment, by reason.") \
	X(segs_pending, "segments", GAUGE, "segs_pending", "segs_pending", "xevb_segments_pending", NULL, \
	  "Segments held by fragments not whole yet.") \
	X(frags_pending, "fragments", GAUGE, "frags_pending", "frags_pending", \
	  "xevb_segmented_fragments_pending", NULL, "Segmented fragments received, not whole yet.") \
	X(seg_frags_whole, "fragments", COUNTER, "seg_frags_whole", "seg_frags_whole", \
	  "xevb_segmented_fragments_whole_total", NULL, "Segmented fragments accepted into events.") \
	X(seg_frags_live, "fragments", GAUGE, "seg_frags_live", "seg_frags_live", \
	  "xevb_segmented_fragments_live", NULL, \
	  "Segmented fragments being put together, or whole in open events, now.")

/* Per source_id (0..4095), configured or not, in struct xevb_source_stats. */
#define XEVB_SOURCE_COUNTERS(SX, SXA) \
	SX(packets, 1, "packets", COUNTER, "packets", "xevb_source_packets_total", NULL, \
	   "Valid MEPs per source_id.") \
	/* packets missing by packet_seq */ \
	SX(seq_gaps, 0, "packets", COUNTER, "seq_gaps", "xevb_source_seq_gaps_total", NULL, \
	   "Packets missing by packet_seq, per source_id.") \
	/* packet_seq restarted (far behind the newest seen) */ \
	SX(seq_resets, 1, "restarts", COUNTER, "seq_resets", "xevb_source_seq_resets_total", NULL, \
	   "Restarts of packet_seq (source restarted), per source_id.") \
	SX(frags_received, 1, "fragments", COUNTER, "frags_received", "xevb_source_fragments_received_total", \
	   NULL, "Fragments received per source_id.") \
	SX(frags_in_events, 1, "fragments", COUNTER, "frags_in_events", "xevb_source_fragments_in_events_total", \
	   NULL, "Fragments accepted into events per source_id.") \
	/* of frags_in_events: in events timed out under DISCARD */ \
	SX(frags_discarded, 1, "fragments", COUNTER, "frags_discarded", "xevb_source_fragments_discarded_total", \
	   NULL, "Fragments of events discarded at timeout, per source_id.") \
	SXA(drops, 1, XEVB_DROP__COUNT, xevb_drop_reason_name, "fragments", COUNTER, "drop", \
	    "xevb_source_fragments_dropped_total", "reason", "Fragments dropped per source_id and reason.") \
	SX(segs_received, 1, "segments", COUNTER, "segs_received", "xevb_source_segments_received_total", NULL, \
	   "SEGMENT packets (wire format 1.1) per source_id.") \
	SX(segs_in_frags, 1, "segments", COUNTER, "segs_in_frags", "xevb_source_segments_in_fragments_total", \
	   NULL, "Segments in fragments accepted into events, per source_id.") \
	SXA(segs_drops, 1, XEVB_SEG__COUNT, xevb_seg_reason_name, "segments", COUNTER, "segs", \
	    "xevb_source_segments_dropped_total", "reason", \
	    "Segments not in a built fragment per source_id and reason.") \
	SX(segs_pending, 1, "segments", GAUGE, "segs_pending", "xevb_source_segments_pending", NULL, \
	   "Segments held by fragments not whole yet, per source_id.") \
	SX(frags_pending, 1, "fragments", GAUGE, "frags_pending", "xevb_source_segmented_fragments_pending", \
	   NULL, "Segmented fragments received, not whole yet, per source_id.")

/* The output stage's, in struct xevb_output_stats. */
#define XEVB_OUTPUT_COUNTERS(X) \
	X(events, "events", COUNTER, "out_events", "out.events", "xevb_output_events_total", NULL, \
	  "Built events written whole to farm nodes or the file.") \
	X(bytes, "bytes", COUNTER, "out_bytes", "out.bytes", "xevb_output_bytes_total", NULL, \
	  "Bytes of built events written.") \
	/* of bytes: those user space copied into a send buffer (payloads from where they were received; \
	   events written with writev or MSG_ZEROCOPY are not copied here) */ \
	X(bytes_copied, "bytes", COUNTER, "out_bytes_copied", "out.bytes_copied", \
	  "xevb_output_bytes_copied_total", NULL, \
	  "Of the bytes written, those user space copied into a send buffer.") \
	/* zerocopy (--tune): bytes the kernel took by reference from the frames (and header slots) */ \
	X(bytes_zerocopy, "bytes", COUNTER, "out_bytes_zerocopy", "out.bytes_zerocopy", \
	  "xevb_output_bytes_zerocopy_total", NULL, "Bytes sent with MSG_ZEROCOPY, not copied by user space.") \
	/* of bytes_zerocopy: in sends whose completion said the kernel copied them after all \
	   (SO_EE_CODE_ZEROCOPY_COPIED: a local receiver, as over veth or loopback; no NIC that can) */ \
	X(bytes_kernel_copied, "bytes", COUNTER, "out_bytes_kernel_copied", "out.bytes_kernel_copied", \
	  "xevb_output_bytes_kernel_copied_total", NULL, \
	  "Of the bytes sent with MSG_ZEROCOPY, those the kernel copied after all (local receiver).") \
	/* no farm node connected: counted, not sent */ \
	X(dropped_no_sink, "events", COUNTER, "out_dropped_no_sink", "out.dropped_no_sink", \
	  "xevb_output_dropped_events_total", "reason=\"no_sink\"", "Built events not delivered, by reason.") \
	/* the connection failed before the event was written whole (a write failed mid-event, or it still \
	   waited in the buffer) */ \
	X(dropped_error, "events", COUNTER, "out_dropped_error", "out.dropped_error", \
	  "xevb_output_dropped_events_total", "reason=\"write_error\"", NULL) \
	/* every connected farm node's send buffer full (slow or hung) */ \
	X(dropped_backlog, "events", COUNTER, "out_dropped_backlog", "out.dropped_backlog", \
	  "xevb_output_dropped_events_total", "reason=\"backlog\"", NULL) \
	X(encode_errors, "events", COUNTER, "out_encode_errors", "out.encode_errors", \
	  "xevb_output_dropped_events_total", "reason=\"encode_error\"", NULL) \
	/* under a DFM, built from data it never assigned: before its first ASSIGN, and none named it in time \
	   (held at most 250 ms, user/ctl/build_ctl.c), or more of them than are held */ \
	X(dropped_unassigned, "events", COUNTER, "out_dropped_unassigned", "out.dropped_unassigned", \
	  "xevb_output_dropped_events_total", "reason=\"unassigned\"", NULL) \
	/* pull mode: built from data the builder never requested (by source process: the dfm_ctl JSON) */ \
	X(dropped_unsolicited, "events", COUNTER, "out_dropped_unsolicited", "out.dropped_unsolicited", \
	  "xevb_output_dropped_events_total", "reason=\"unsolicited\"", NULL) \
	/* of events: written, not acknowledged by the farm node's TCP when its connection failed (or at stop) */ \
	X(lost_in_flight, "events", COUNTER, "out_lost_in_flight", "out.lost_in_flight", \
	  "xevb_output_dropped_events_total", "reason=\"in_flight\"", NULL) \
	X(ack_untracked, "events", COUNTER, "out_ack_untracked", "out.ack_untracked", \
	  "xevb_output_ack_untracked_total", NULL, \
	  "Of the events written: more in flight than tracked, assumed acknowledged.") \
	X(reconnects, "connections", COUNTER, "out_reconnects", "out.reconnects", "xevb_output_reconnects_total", \
	  NULL, "Farm node connections made again after a failure.") \
	/* \
	 * Failures where the farm node reset the connection (ECONNRESET): it \
	 * died with data its TCP had acknowledged but it had not read. Those \
	 * events are lost at the farm node; only it can count them. A plain \
	 * close (FIN) means it had read everything acknowledged. \
	 */ \
	X(peer_resets, "connections", COUNTER, "out_peer_resets", "out.peer_resets", \
	  "xevb_output_peer_resets_total", NULL, \
	  "Farm node connections reset by the peer (it died with unread data).")

/* Struct members from the rows. */
#define XEVB_CTR_FIELD(field, ...)            uint64_t field;
#define XEVB_CTR_ARRAY(field, n, ...)         uint64_t field[n];
#define XEVB_SCTR_ARRAY(field, total, n, ...) uint64_t field[n];

enum xevb_counter_kind { XEVB_COUNTER, XEVB_GAUGE };

/* What a row counts for. */
enum xevb_counter_scope {
	XEVB_SCOPE_TOTAL,  /* the builder (all its workers) */
	XEVB_SCOPE_SOURCE, /* each source seen */
};

/* The struct a row's field is in (its offset is into it). */
enum xevb_counter_part {
	XEVB_PART_RX,     /* struct xevb_snapshot */
	XEVB_PART_CORE,   /* struct xevb_builder_stats */
	XEVB_PART_OUTPUT, /* struct xevb_output_stats */
	XEVB_PART_SOURCE, /* struct xevb_source_stats */
};

struct xevb_counter {
	const char *json, *stats; /* per source: the same name */
	const char *prom, *label, *help;
	const char *unit;
	enum xevb_counter_kind kind;
	enum xevb_counter_scope scope;
	enum xevb_counter_part part;
	uint32_t n; /* elements: 1, or an array by elem(k) */
	const char *(*elem)(unsigned int k);
	size_t off;
};

#define XEVB_CTR_ROW_COUNT(...) +1
/* Rows in the table (an array row counts once). */
enum {
	XEVB_N_COUNTERS = 0 XEVB_RX_COUNTERS(XEVB_CTR_ROW_COUNT)
		XEVB_CORE_COUNTERS(XEVB_CTR_ROW_COUNT, XEVB_CTR_ROW_COUNT) XEVB_OUTPUT_COUNTERS(XEVB_CTR_ROW_COUNT)
			XEVB_SOURCE_COUNTERS(XEVB_CTR_ROW_COUNT, XEVB_CTR_ROW_COUNT)
};

/* Every row above, in the order of the lists: receive loop, core, output, source. */
extern const struct xevb_counter xevb_counters[XEVB_N_COUNTERS];
extern const size_t xevb_n_counters;

struct xevb_snapshot;
struct xevb_builder_stats;
struct xevb_source_stats;
struct xevb_output_stats;

/* Element k of c in the struct of its part (a worker's builder stats, say). */
uint64_t xevb_counter_at(const struct xevb_counter *c, const void *part, uint32_t k);
/* Element k of c in s; of source source_id when c is per source. */
uint64_t xevb_counter_value(const struct xevb_counter *c, const struct xevb_snapshot *s, uint32_t source_id,
			    uint32_t k);
/* Its JSON key (json) or `xevb stats` name; element k of an array is written to buf. */
const char *xevb_counter_name(const struct xevb_counter *c, uint32_t k, bool json, char *buf, size_t len);
/* Its Prometheus name and help: on the XDP path, some rows are named for what they count there. */
const char *xevb_counter_prom(const struct xevb_counter *c, bool xdp_path, const char **help);
/* Its Prometheus labels (source="id", then the row's own), "" for none. */
void xevb_counter_labels(const struct xevb_counter *c, uint32_t source_id, uint32_t k, char *buf, size_t len);

/* m += s, every counter of the rows (and seen, per source); the rest is the caller's. */
void xevb_builder_counters_add(struct xevb_builder_stats *m, const struct xevb_builder_stats *s);
void xevb_source_stats_add(struct xevb_source_stats *m, const struct xevb_source_stats *s);
void xevb_output_stats_add(struct xevb_output_stats *m, const struct xevb_output_stats *s);
/*
 * The accounting check: sum holds the per-source counters added over the
 * sources; the name of the first one that is not its total, or NULL.
 */
const char *xevb_source_sums_differ(const struct xevb_builder_stats *st, const struct xevb_source_stats *sum);

#endif

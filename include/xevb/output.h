/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The builder's output stage: built events go to farm nodes over TCP (one
 * connection each, round robin), to a file, or nowhere (build-only, for
 * measuring the builder alone). Payloads leave straight from the frames
 * with writev: no user-space copy.
 */
#ifndef XEVB_OUTPUT_H
#define XEVB_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <xevb/builder.h>

#define XEVB_MAX_SINKS 64

struct xevb_zc;

struct xevb_sink_conn {
	struct sockaddr_in addr;
	char name[32];
	int fd;
	uint64_t events;
	uint64_t bytes;
	uint64_t next_retry_ns;
	uint64_t failures;
	/*
	 * In flight on the current connection: the end offsets (bytes written
	 * on it, from ack_base) of the events its TCP has not acknowledged yet,
	 * oldest first. When the connection fails they are lost with it, and
	 * counted (lost_in_flight), not silently taken as delivered.
	 */
	uint64_t *ends;
	uint32_t ends_head, ends_n;
	uint64_t conn_bytes, ack_base;
	uint64_t lost_in_flight;
	uint64_t reconnects;
};

struct xevb_output_stats {
	uint64_t events;          /* written whole */
	uint64_t bytes;
	uint64_t dropped_no_sink; /* no farm node connected: counted, not sent */
	uint64_t dropped_error;   /* a write failed mid-event */
	uint64_t encode_errors;
	uint64_t lost_in_flight;  /* of events: written, not acknowledged by the farm
				     node's TCP when its connection failed (or at stop) */
	uint64_t ack_untracked;   /* of events: more in flight than tracked; assumed acknowledged */
	uint64_t reconnects;      /* farm node connections made again after a failure */
	/*
	 * Failures where the farm node reset the connection (ECONNRESET): it
	 * died with data its TCP had acknowledged but it had not read. Those
	 * events are lost at the farm node; only it can count them. A plain
	 * close (FIN) means it had read everything acknowledged.
	 */
	uint64_t peer_resets;
};

struct xevb_output {
	struct xevb_sink_conn sinks[XEVB_MAX_SINKS];
	uint32_t n_sinks;
	uint32_t rr;
	int file_fd;
	bool discard;             /* build-only */
	uint8_t *scratch;
	size_t scratch_len;
	struct iovec *iov;
	size_t iov_max;
	struct xevb_output_stats st;
	struct xevb_zc *zc;       /* --zerocopy: MSG_ZEROCOPY sends (output_zc.h) */
};

/* sinks: "ADDR:PORT" strings. file: path or NULL. Neither: build-only. */
int xevb_output_open(struct xevb_output *o, const char *const *sinks, uint32_t n_sinks,
		     const char *file, uint32_t max_sources, uint64_t connect_wait_ns);
void xevb_output_close(struct xevb_output *o);
void xevb_output_emit(struct xevb_output *o, const struct xevb_event *ev);
/*
 * Build-only (o->discard): count n_events built together (the builder's
 * emit_run) without seeing them one by one.
 */
void xevb_output_emit_run(struct xevb_output *o, const struct xevb_event *first,
			  uint32_t n_events, uint64_t wire_bytes);
/*
 * Once a second: notice farm nodes that went away (connection closed or
 * reset by the peer, even with nothing to send), count what was in flight
 * to them, and reconnect those that are gone.
 */
void xevb_output_maintain(struct xevb_output *o, uint64_t now_ns);
/*
 * At stop, before the final statistics: wait up to wait_ns for the farm
 * nodes' TCP to acknowledge what was written; count the rest lost_in_flight.
 */
void xevb_output_settle(struct xevb_output *o, uint64_t wait_ns);
uint32_t xevb_output_connected(const struct xevb_output *o);
/*
 * Per-connection pacing (SO_MAX_PACING_RATE, bytes/s; 0: off) for the
 * connections opened from now on. One connection per farm node makes it
 * a per-destination rate; TCP paces by itself when there is no sch_fq.
 */
void xevb_output_set_pacing(uint64_t bytes_per_s);

/*
 * MSG_ZEROCOPY to farm nodes for outputs opened from now on. The frames
 * of a sent event are then still read by the kernel after emit returns:
 * the caller passes every frame release through xevb_output_hold (true:
 * held, released later through fn) and calls xevb_output_drain before it
 * frees the frames.
 */
void xevb_output_set_zerocopy(bool on);
int xevb_output_set_release(struct xevb_output *o, void (*fn)(void *, uint32_t), void *ctx,
			    uint32_t max_frames);
bool xevb_output_hold(struct xevb_output *o, uint32_t frame_idx);
void xevb_output_drain(struct xevb_output *o);

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The builder's output stage: built events go to farm nodes over TCP (one
 * connection each, round robin), to a file, or nowhere (build-only, for
 * measuring the builder alone).
 *
 * Batching: each farm node has a bounded send buffer (256 KiB, allocated
 * at open). An event is encoded straight into it (payloads copied: a few
 * hundred small fragments cost far less copied than as iovecs in the
 * kernel) and the buffer goes to the kernel, never waiting (MSG_DONTWAIT),
 * once it holds 64 KiB and at the end of every receive batch: the receive
 * loops call xevb_output_flush. What the socket does not take waits in the
 * buffer; a farm node whose buffer is full is skipped (the next one with
 * room takes the event), and with none left the event is dropped and
 * counted dropped_backlog: a slow or hung farm node never blocks the
 * builder. An event counts as written (events, bytes) when its last byte
 * went to the kernel; when a connection fails, its written events not yet
 * acknowledged are counted lost_in_flight and those still in the buffer
 * dropped_error. Events over 256 KiB and MSG_ZEROCOPY (--tune
 * zerocopy=1) are written at once with writev/sendmsg, blocking, as before.
 *
 * The file (--output) is a run file (docs/wire-format.md section 4) made
 * by libxevb's writer: a header, the events, a trailer at close; created,
 * never overwritten; rotated by size or events when it is a directory of
 * run-numbered files. The writer gathers events in a 1 MiB buffer that it
 * writes whole, and is flushed at least every 100 ms an event is written
 * and at every maintain: a SIGKILL loses at most that, and leaves a file
 * the reader calls cut and reads to its last whole event.
 */
#ifndef XEVB_OUTPUT_H
#define XEVB_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include "evb/builder.h"

#define XEVB_MAX_SINKS 4096
/* Each farm node's send buffer (batched output). */
#define XEVB_OUT_SEND_BUF (256u << 10)

struct xevb_zc;
struct xevb_file_writer;

/* --output: where and what the run files record (their header). */
struct xevb_out_file {
	const char *path;   /* the one file; with dir, the directory of run-numbered files */
	bool dir;           /* DIR/PREFIX-runRRRRRRRR-SSSS.xevb, rotated by the limits */
	const char *prefix; /* dir: the names' prefix; NULL: "xevb" */
	uint32_t run_number;
	uint16_t builder_id;
	const char *builder_name; /* NULL: the host name */
	const uint16_t *sources;  /* the configured source ids, ascending */
	uint32_t n_sources;
	uint64_t max_bytes, max_events; /* dir: rotation limits; 0: none */
	bool next_name;                 /* a name that exists: take the next free one (else refuse) */
	bool no_fsync;                  /* no fsync at rotation and close (scratch runs) */
};

/*
 * How an output opens (xevb_output_open), by name: zero is the default of
 * every member. Neither sinks nor file: build-only.
 */
struct xevb_output_opts {
	const char *const *sinks;         /* [n_sinks] farm nodes, "ADDR:PORT" */
	uint32_t n_sinks;                 /* <= XEVB_MAX_SINKS */
	const struct xevb_out_file *file; /* the run files (read at open only), or NULL */
	uint32_t max_sources;             /* sources an event may hold: sizes the encoder's scratch */
	uint64_t connect_wait_ns;         /* at open, how long to wait for each farm node */
	/*
	 * Per-connection pacing (SO_MAX_PACING_RATE, bytes/s; 0: off). One
	 * connection per farm node makes it a per-destination rate; TCP paces
	 * by itself when there is no sch_fq.
	 */
	uint64_t pacing_Bps;
	/*
	 * MSG_ZEROCOPY to farm nodes. The frames of a sent event are then
	 * still read by the kernel after emit returns: the caller passes every
	 * frame release through xevb_output_hold (true: held, released later
	 * through the xevb_output_set_release fn) and calls xevb_output_drain
	 * before it frees the frames.
	 */
	bool zerocopy;
};

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
	/*
	 * The send buffer: bytes [buf_head, buf_len) not yet taken by the
	 * kernel; they are the events at the end of ends (ends_unsent of them,
	 * the oldest perhaps taken in part). conn_bytes counts what the kernel
	 * took, written_end is where the last event written whole ends.
	 */
	uint8_t *buf;
	uint32_t buf_head, buf_len, ends_unsent;
	uint64_t written_end;
	bool blocked; /* the socket took no more in this batch */
};

/* Counted by the output stage: the rows in include/xevb/counters.h. */
struct xevb_output_stats {
	XEVB_OUTPUT_COUNTERS(XEVB_CTR_FIELD)
};

struct xevb_output {
	struct xevb_sink_conn sinks[XEVB_MAX_SINKS];
	uint32_t n_sinks;
	uint32_t rr;
	struct xevb_file_writer *fw; /* --output */
	uint64_t fw_flush_ns;        /* CLOCK_REALTIME of its last flush */
	uint64_t fw_files;           /* files it had created at its last flush */
	bool fw_failed;              /* its failure was logged */
	bool discard;                /* build-only */
	uint8_t *scratch;
	size_t scratch_len;
	struct iovec *iov;
	size_t iov_max;
	struct xevb_output_stats st;
	struct xevb_zc *zc;           /* --tune zerocopy=1: MSG_ZEROCOPY sends (output_zc.h) */
	struct xevb_output_opts opts; /* as opened: reconnects use them too */
};

/*
 * 0, or a negative errno after a message. -EEXIST: the file exists (and
 * file->next_name is not set), said with the file's name.
 */
int xevb_output_open(struct xevb_output *o, const struct xevb_output_opts *opts);
/* Everything closed; the run file finished with its trailer (and fsync), said in a line. */
void xevb_output_close(struct xevb_output *o);
/*
 * In a process forked after open (the clean-up helper): close the
 * connections, but leave the run file alone: the builder finishes it.
 */
void xevb_output_close_inherited(struct xevb_output *o);
/* The start failed before any event: close the run file and remove it when it holds none. */
void xevb_output_remove_empty_file(struct xevb_output *o);
void xevb_output_emit(struct xevb_output *o, const struct xevb_event *ev);
/*
 * Send what the buffers hold, never waiting: call at the end of every
 * receive batch (and idle turn), so that no event waits for the next one.
 */
void xevb_output_flush(struct xevb_output *o);
/* Bytes, and events, waiting in the send buffers of all farm nodes. */
uint64_t xevb_output_backlog_bytes(const struct xevb_output *o);
uint64_t xevb_output_backlog_events(const struct xevb_output *o);
/*
 * For a caller choosing the farm node itself (the DFM credit mode): can
 * farm node k take an event of bytes now (connected, room in its buffer)?
 * Emit ev to it, or an event already encoded. 0, or a negative errno with
 * the event counted by reason (-ENOTCONN dropped_no_sink, -ENOBUFS
 * dropped_backlog, otherwise encode_errors or dropped_error).
 */
bool xevb_output_has_room(struct xevb_output *o, uint32_t k, size_t bytes);
int xevb_output_emit_to(struct xevb_output *o, uint32_t k, const struct xevb_event *ev);
int xevb_output_write_to(struct xevb_output *o, uint32_t k, const uint8_t *event, size_t len);
/*
 * Build-only (o->discard): count n_events built together (the builder's
 * emit_run) without seeing them one by one.
 */
void xevb_output_emit_run(struct xevb_output *o, const struct xevb_event *first, uint32_t n_events,
			  uint64_t wire_bytes);
/*
 * Once a second: notice farm nodes that went away (connection closed or
 * reset by the peer, even with nothing to send), count what was in flight
 * to them, and reconnect those that are gone.
 */
void xevb_output_maintain(struct xevb_output *o, uint64_t now_ns);
/*
 * At stop, before the final statistics: send what the buffers hold and
 * wait for the farm nodes' TCP to acknowledge it, as long as each keeps
 * taking it (wait_ns without progress ends the wait, 15 x wait_ns in all);
 * count the rest lost_in_flight (written) or dropped_error (still buffered).
 */
void xevb_output_settle(struct xevb_output *o, uint64_t wait_ns);
uint32_t xevb_output_connected(const struct xevb_output *o);
/* Zero copy (opts.zerocopy): where held frames go back, and whether one is held. */
int xevb_output_set_release(struct xevb_output *o, void (*fn)(void *, uint32_t), void *ctx, uint32_t max_frames);
bool xevb_output_hold(struct xevb_output *o, uint32_t frame_idx);
void xevb_output_drain(struct xevb_output *o);

#endif

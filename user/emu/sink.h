/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pieces shared by `xevb sink`, its option table and its hidden test
 * feeder. `xevb sink` is a farm node on libxevb (user/cmd/cmd_sink.c: the
 * library receives, decodes and gives credits); what makes it an emulator
 * is here: the check of every byte of each event (sink_check.c) and the
 * emulated processing rate (sink_hold.c).
 */
#ifndef XEVB_CMD_SINK_H
#define XEVB_CMD_SINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "base/cli.h"
#include "base/lat_hist.h"
#include "evb/evid_window.h"
#include "wire/event_codec.h"

/* What the command line asks (sink_opts.c fills it from the table). */
struct sink_cfg {
	struct xevb_common_opts co;
	const char *listen;
	const char *input;
	const char *ready_file;
	const char *progress; /* --progress-file */
	uint64_t expect_events;
	uint32_t expect_sources;
	bool no_content; /* CRCs only */
	uint32_t dup_window;
	uint32_t max_event;
	uint64_t max_buffer_total;   /* all connections' buffers together, bytes */
	uint64_t partial_timeout_ns; /* 0: a partial event may be held for ever */
	/* --ctl-port: credits and Busy for builders (libxevb's control protocol) */
	uint32_t ctl_port, credits, id;
	double process_rate, busy_high, busy_low;
	struct sockaddr_in dfm; /* --dfm: report RECEIVED there (port 0: no) */
	uint32_t run_end;       /* --run-end: enum sink_run_end */
};

/* --run-end: when a farm node ends by itself. */
enum sink_run_end {
	SINK_END_AUTO,    /* at the DFM's end of run when reporting to one, else when told */
	SINK_END_STREAMS, /* that, and without a DFM once every builder closed its stream */
	SINK_END_NONE,    /* when told (a signal), --duration or --expect-events only */
};

/* libxevb's receive buffer: --max-buffer-total holds one largest event and one of these. */
#define SINK_LIB_CHUNK (1u << 20)

extern const struct xevb_cfg_cmd sink_cmd;
/* c filled and checked: -1 when the command should run, else its exit status (0 after --help). */
int sink_opts_parse(int argc, char **argv, struct sink_cfg *c);

/* "ADDR:PORT", "[v6addr]:PORT" or "host:PORT" (numeric port). 0 or -1 with a message. */
int sink_resolve(const char *opt, const char *hostport, struct sockaddr_storage *ss, socklen_t *len);

/* xevb sink --selftest-send DEST N [options]: argv[0] is "--selftest-send". */
int sink_selftest_send(int argc, char **argv);
extern const struct xevb_cfg_cmd sink_feed_cmd; /* its options */

/* ---- sink_check.c: what the emulator checks beyond the wire format ---- */

/* The faults it finds in events whose structure is sound (the library ends a stream that breaks one). */
enum sink_fault {
	SF_CRC,     /* "crc_mismatch": a payload's CRC-32C */
	SF_CONTENT, /* "content_mismatch": not the source emulator's pattern */
	SF_DUP,     /* "duplicate_event": an event id delivered twice in the run */
	SF_SOURCES, /* "wrong_n_expected": n_expected differs from --expect-sources */
	SF__COUNT
};
const char *sink_fault_name(int f);

struct sink_check {
	unsigned verify;         /* XEVB_VERIFY_CRC, XEVB_VERIFY_CONTENT */
	uint32_t expect_sources; /* 0: any */
	uint64_t fault[SF__COUNT];
	uint64_t too_old; /* older than the duplicate window: not checked for duplicates */
	uint64_t lat_n;
	double lat_sum_ns;
	int64_t lat_max_ns;
	struct xevb_lat_hist lat; /* from the builder's build_ns, for percentiles */
	struct xevb_evid_window win;
};

/* Where an event came from, for messages: a builder's address and port, or a file (name). */
struct sink_where {
	const char *name; /* NULL: addr:port */
	uint32_t addr;    /* network order */
	uint16_t port;
};

/* 0, or -1 out of memory (said). */
int sink_check_init(struct sink_check *k, uint32_t dup_window, bool content, uint32_t expect_sources);
void sink_check_free(struct sink_check *k);
/*
 * Each sound event's payloads, checked while the library decodes it (its
 * event_check), in a walk over its records: non-zero when one is wrong
 * (no sentence, no count).
 */
int sink_payloads_bad(const struct sink_check *k, const struct xevb_decoded_event *d);
/*
 * Then each event as it is taken, with that verdict (payload_bad):
 * which check failed and where, sources, id and latency; faults counted
 * and (the first ones) said.
 */
void sink_check_event(struct sink_check *k, const struct xevb_decoded_event *d, bool payload_bad,
		      const struct sink_where *w);
uint64_t sink_check_faults(const struct sink_check *k);
/* Errors said so far: the first SINK_LOGGED, then a count only (shared by every kind). */
#define SINK_LOGGED 20
void sink_note(const struct sink_where *w, const char *kind, const char *msg);

/* ---- sink_hold.c: the emulated processing rate ---- */

/*
 * Events held as if being processed, released (the caller calls done on
 * them, which returns their credits) at rate per second in arrival order;
 * idle time is not saved up. Rate 0: not used (done at once).
 */
struct sink_hold {
	const void **q; /* a ring of cap entries, n from head */
	size_t cap, head, n;
	double rate;
	uint64_t t_proc; /* when the next event's processing started (CLOCK_MONOTONIC ns) */
};

void sink_hold_init(struct sink_hold *h, double rate);
void sink_hold_free(struct sink_hold *h);
/* Hold p: true, or false out of memory (then release it at once). */
bool sink_hold_push(struct sink_hold *h, const void *p, uint64_t now);
/* The next one due at now, or NULL. */
const void *sink_hold_pop(struct sink_hold *h, uint64_t now);
/* ns until the next one is due; UINT64_MAX when none is held. */
uint64_t sink_hold_wait_ns(const struct sink_hold *h, uint64_t now);

#endif

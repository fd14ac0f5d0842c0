/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libxevb: the farm node's side of xevb, as a library. Receive built events
 * from any number of event builders (`xevb build --sink ADDR:PORT`) over
 * TCP, hand them out as zero-copy views, give each builder its credits and
 * Busy / not-Busy over the control protocol, report RECEIVED to the
 * data-flow manager, and read and write run files. docs/consumer.md has a
 * tour and an example; docs/wire-format.md the formats.
 *
 * Style: one handle per object (like libpcap's pcap_t); options come in
 * structs whose first field is their size (like libbpf's opts): declare
 * them with XEVB_OPTS(type, name, .field = value, ...). A library built
 * for a larger struct reads the fields it has and takes defaults for the
 * rest; one built for a smaller struct refuses fields it does not know
 * unless they are zero. Fields are only ever added at the end.
 *
 * Errors: functions that can fail return 0 (or a count) on success and a
 * negative errno value on failure; the handle's *_error() function then
 * holds a sentence that says what failed and what to do. A constructor
 * that fails returns NULL with the sentence in errbuf (XEVB_ERRBUF_SIZE
 * bytes, may be NULL) and errno set.
 *
 * Threads: a handle is not thread-safe. Use each handle from one thread
 * at a time (the caller serialises every call on it, done() included).
 * Different handles are independent. The bytes an event view points to
 * are never written by the library while the view is valid, so any
 * thread may read them, given the handle's owner hands the view over
 * with the usual synchronisation and calls done() itself afterwards.
 *
 * Lifetimes: see each function. In short: a farm-node event view and
 * every pointer in it stay valid until xevb_farm_done() on it (or
 * xevb_farm_close()); a file reader's view until the next
 * xevb_file_reader_next() and its bytes until xevb_file_reader_close().
 */
#ifndef XEVB_XEVB_H
#define XEVB_XEVB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XEVB_API __attribute__((visibility("default")))

#define XEVB_LIB_MAJOR 1
#define XEVB_LIB_MINOR 0
#define XEVB_LIB_PATCH 0

/* "1.0.0": the library's version (the one running, not the header's). */
XEVB_API const char *xevb_lib_version(void);

#define XEVB_ERRBUF_SIZE 256

/*
 * Declare and fill an options struct: its size first, every other field
 * zero (the default) unless named. Zeroed with memset first so that
 * padding is zero too (a newer library checks the bytes it knows).
 */
#define XEVB_OPTS(TYPE, NAME, ...) \
	struct TYPE NAME = ({ \
		memset(&NAME, 0, sizeof(struct TYPE)); \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ }; \
	})

enum xevb_lib_log_level { XEVB_LIB_LOG_ERROR = 0, XEVB_LIB_LOG_WARN, XEVB_LIB_LOG_INFO, XEVB_LIB_LOG_DEBUG };
/*
 * Where a handle's messages go (a builder connected, a stream broke, a
 * control message refused): msg is one line without a newline. Called
 * from within the handle's functions, on the caller's thread. NULL in
 * the options: errors and warnings to stderr, prefixed "libxevb: ".
 */
typedef void (*xevb_log_fn)(void *ctx, enum xevb_lib_log_level level, const char *msg);

/* ------------------------------------------------------------------ */
/* Event views (wire-format.md section 2)                             */
/* ------------------------------------------------------------------ */

/* Flags of struct xevb_ev. The low 8 bits are the event header's. */
#define XEVB_EV_INCOMPLETE 0x01u  /* built at timeout: some sources missing */
#define XEVB_EV_CRC_BAD    0x100u /* CRC checks asked for, and a payload's CRC-32C is wrong */
#define XEVB_EV_CHECK_BAD  0x200u /* the caller's event_check said no (added after 1.0.0) */

/*
 * The caller's own check of each event (the opts' event_check, added
 * after 1.0.0), run by the decoder as soon as the event is found sound,
 * its bytes just read and in cache, before anything else is read: a
 * consumer that looks at every payload pays no second trip to memory
 * when it takes the event later. 0: right; else the event gets
 * XEVB_EV_CHECK_BAD (and is handed out as usual). ev is whole but for
 * seq: xevb_ev_offsets and the other accessors work. Called inside the
 * handle's functions, on the caller's thread; it must not call the handle.
 */
struct xevb_ev;
typedef int (*xevb_event_check_fn)(void *ctx, const struct xevb_ev *ev);

/*
 * One built event, as decoded and checked against every rule of the wire
 * format. Owned by the library: never allocate one, never write to it.
 * Fields may be added at the end in later versions of the library.
 */
struct xevb_ev {
	uint32_t run_number;
	uint32_t event_id;
	uint64_t build_ns;     /* CLOCK_REALTIME ns when the builder completed it */
	uint32_t flags;        /* XEVB_EV_* */
	uint16_t n_frags;      /* fragments present */
	uint16_t n_expected;   /* sources configured for the event */
	uint32_t n_missing;    /* n_expected - n_frags */
	uint32_t length;       /* bytes of the encoded event (total_length) */
	const uint8_t *data;   /* the encoded event itself: length bytes */
	uint32_t builder_addr; /* IPv4 of the builder it came from, network order; 0 from a file */
	uint16_t builder_port; /* that connection's TCP port, host order; 0 from a file */
	uint16_t reserved;
	uint64_t seq; /* 0, 1, 2...: its place among the events the handle handed out */
};

/* One fragment of an event: a view into the event's bytes. */
struct xevb_ev_frag {
	uint16_t source_id;
	uint16_t index; /* its place in the event, 0..n_frags-1 (ascending source_id) */
	uint32_t length;
	uint32_t crc32c; /* as the source computed it (CRC-32C of the payload) */
	uint32_t reserved;
	const uint8_t *payload; /* length bytes */
};

/*
 * The fragment index of ev (added after 1.0.0): n_frags offsets from
 * ev->data, ascending, each of a fragment record (wire-format.md section
 * 2: source_id and reserved, 2 bytes each, length and crc32c, 4 bytes
 * each, big-endian; the payload after it). For a consumer that looks at
 * every fragment of every event: a loop over it, no call per fragment and
 * no walk from record to record. Valid as long as ev. A farm node's view
 * writes its index on the first call of this, xevb_ev_frag or
 * xevb_ev_find (one walk over its records): a consumer that never asks
 * does not pay for it.
 */
XEVB_API const uint32_t *xevb_ev_offsets(const struct xevb_ev *ev);
/* Fragment i (0..n_frags-1) of ev in *f: 0, or -ERANGE. O(1). */
XEVB_API int xevb_ev_frag(const struct xevb_ev *ev, uint32_t i, struct xevb_ev_frag *f);
/* The fragment of source_id in *f: 0, or -ENOENT (missing, or not a source of the event). */
XEVB_API int xevb_ev_find(const struct xevb_ev *ev, uint16_t source_id, struct xevb_ev_frag *f);
/* Missing source i (0..n_missing-1), ascending: the source_id, or -ERANGE. */
XEVB_API int xevb_ev_missing(const struct xevb_ev *ev, uint32_t i);
/*
 * Check every payload against its CRC-32C: 0, or -EBADMSG with the first
 * bad fragment's source_id in *bad_source (may be NULL).
 */
XEVB_API int xevb_ev_verify(const struct xevb_ev *ev, int *bad_source);
/* CRC-32C (Castagnoli) of buf, continuing crc (0 to start); as in every fragment record. */
XEVB_API uint32_t xevb_ev_crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * Decode one encoded event buf[0..len) (exactly one event, every rule of
 * the wire format checked) into a view that points into buf: buf must
 * stay unchanged until xevb_ev_free(). NULL on error, with what is wrong
 * in errbuf and errno EBADMSG (or ENOMEM).
 */
XEVB_API struct xevb_ev *xevb_ev_parse(const void *buf, size_t len, char *errbuf);
/* Free a view from xevb_ev_parse (NULL: nothing). Not for views of a handle. */
XEVB_API void xevb_ev_free(struct xevb_ev *ev);

/* ------------------------------------------------------------------ */
/* Farm node: receive events from builders                            */
/* ------------------------------------------------------------------ */

/*
 * Why a builder's connection was closed as broken (xevb_farm_stats.broken)
 * or a file read as corrupt (xevb_file_info.broken): the rule of the wire
 * format an event broke (wire-format.md section 2), or what went wrong
 * with the stream. The values and their names never change; kinds are
 * only added, below XEVB_BROKEN_SLOTS.
 */
enum xevb_broken {
	XEVB_BROKEN_NONE = 0,
	XEVB_BROKEN_SHORT,           /* "short": fewer bytes than an event header */
	XEVB_BROKEN_MAGIC,           /* "bad_magic": no "EVNT" where an event starts (out of step, garbage) */
	XEVB_BROKEN_VERSION,         /* "bad_version" */
	XEVB_BROKEN_FLAGS,           /* "unknown_flags" */
	XEVB_BROKEN_RESERVED,        /* "reserved_nonzero": the event header's */
	XEVB_BROKEN_TOTAL_LEN,       /* "bad_total_length": under 32, or disagrees with the event */
	XEVB_BROKEN_N_EXPECTED,      /* "bad_n_expected": 0 or over 4096 */
	XEVB_BROKEN_N_FRAGS,         /* "too_many_frags": n_frags > n_expected */
	XEVB_BROKEN_INCOMPLETE_FLAG, /* "bad_incomplete_flag" */
	XEVB_BROKEN_REC_TRUNC,       /* "record_overrun": a record runs past the event's end */
	XEVB_BROKEN_REC_RESERVED,    /* "record_reserved_nonzero" */
	XEVB_BROKEN_SOURCE_ID,       /* "bad_source_id": over 4095 */
	XEVB_BROKEN_REC_ORDER,       /* "record_order": source ids not strictly rising */
	XEVB_BROKEN_PADDING,         /* "padding_nonzero": after a payload */
	XEVB_BROKEN_MISSING_TRUNC,   /* "missing_list_short" */
	XEVB_BROKEN_MISSING_ORDER,   /* "missing_list_order" */
	XEVB_BROKEN_MISSING_PRESENT, /* "missing_but_present" */
	XEVB_BROKEN_MISSING_PAD,     /* "missing_pad_nonzero" */
	XEVB_BROKEN_TRAILING,        /* "trailing_bytes": after the records and the missing list */
	XEVB_BROKEN_TOO_BIG,         /* "too_big": total_length over max_event */
	XEVB_BROKEN_TRUNCATED,       /* "truncated_stream": closed inside an event */
	XEVB_BROKEN_STALLED,         /* "partial_timeout": part of an event held past partial_timeout_ms */
	XEVB_BROKEN_BUFFER,          /* "buffer_limit": an event max_buffer cannot hold with no event held */
	XEVB_BROKEN_READ,            /* "read_error": the connection failed (reset, ...) */
	XEVB_BROKEN_NOMEM,           /* "out_of_memory" */
	XEVB_BROKEN_FILE,            /* "file_damaged": a run file's header or trailer is wrong (file reader) */
	XEVB_BROKEN__COUNT
};
#define XEVB_BROKEN_SLOTS 32 /* entries of xevb_farm_stats.broken: room for kinds added later */
/* The name of kind ("bad_magic", ...: stable, fit for a label), or NULL for one this library does not know. */
XEVB_API const char *xevb_broken_name(int kind);

struct xevb_farm;

/* xevb_farm_opts.flags */
#define XEVB_FARM_NO_CTL       0x1u /* no control protocol: no credits, no Busy; builders then forward round robin */
#define XEVB_FARM_VERIFY_CRC   0x2u /* check every payload's CRC-32C; a bad one sets XEVB_EV_CRC_BAD, counted */
#define XEVB_FARM_CTL_ANY_PORT 0x4u /* control port: any free one (xevb_farm_ctl_port() says which) */

struct xevb_farm_opts {
	size_t sz; /* sizeof(struct xevb_farm_opts) */
	/*
	 * "ADDR:PORT" (IPv4) where builders connect (their --sink); port 0:
	 * any free one (xevb_farm_port() says which). NULL with run_config:
	 * the [sink id] section's address and port.
	 */
	const char *listen;
	uint32_t flags;   /* XEVB_FARM_* */
	uint32_t credits; /* events in flight per builder; 0: 64 */
	/*
	 * UDP port for the control protocol (STATUS to and from builders,
	 * RECEIVED to the DFM), bound on the listening address; 0: 23904 (what
	 * `xevb build` sends to unless given --tune sink-ctl-port).
	 */
	uint16_t ctl_port;
	uint16_t id;          /* our sender_id in control messages; with run_config, our [sink id] */
	const char *dfm;      /* "ADDR:PORT" of the DFM: RECEIVED every 100 ms; NULL: none (or run_config's) */
	const char *key_file; /* the master key or our member key: messages sealed; NULL: none (or run_config's) */
	/*
	 * A run configuration (docs/run-config.md) and our id in it: address,
	 * port, control port, credits and Busy factors from [sink id] (and
	 * [sink]), the DFM from [dfm], the key from [run] key_file; its
	 * builders become the only peers whose control messages are admitted.
	 * Fields set here override the file's.
	 */
	const char *run_config;
	double busy_high;   /* Busy once held events > busy_high x credits; 0: 1.2 */
	double busy_low;    /* not-Busy again once held < busy_low x credits; 0: 0.2 */
	uint32_t max_event; /* bytes: a longer event ends its connection (too_big); 0: 64 MiB */
	uint32_t max_conns; /* builder connections at once; 0: 1024 */
	/*
	 * Bytes of all receive buffers, held events included; 0: 256 MiB. A
	 * connection that needs more is not read until done() frees some (TCP
	 * then holds its builder back); when no event is held, so that only
	 * other connections' partial events fill the buffers and waiting
	 * could last for ever, it is closed instead (XEVB_BROKEN_BUFFER).
	 */
	uint64_t max_buffer;
	xevb_log_fn log_fn;
	void *log_ctx;
	/*
	 * ms a connection may hold part of an event, no event completing
	 * meanwhile, before it is closed (a stalled peer); 0: 10000
	 */
	uint32_t partial_timeout_ms;
	/* Added after 1.0.0: each sound event through this check as it is decoded (XEVB_EV_CHECK_BAD); NULL: none. */
	xevb_event_check_fn event_check;
	void *check_ctx;
	/*
	 * Added after 1.0.0: after the DFM's end of run, ms with no byte from
	 * any builder after which the run counts as over although connections
	 * are still open (builders that do not close at the end); 0: 5000.
	 */
	uint32_t end_wait_ms;
	/*
	 * Added after 1.0.0: the run number the control keys are bound to (a
	 * sealed message of another run does not open); 0: run_config's [run]
	 * number, else 1, what the tools default to.
	 */
	uint32_t run;
};

/*
 * Listen for builders (and bind the control port). NULL on error: errbuf
 * says what failed (a busy port, a bad address, an unreadable key file,
 * a run configuration that does not name us) and what to do.
 */
XEVB_API struct xevb_farm *xevb_farm_open(const struct xevb_farm_opts *opts, char *errbuf);
/*
 * Send the final RECEIVED (twice), close every socket and free the handle,
 * every event view included (NULL: nothing).
 */
XEVB_API void xevb_farm_close(struct xevb_farm *f);

/*
 * A descriptor for the caller's own poll/epoll loop: readable when there
 * is work (a builder connects or sends, a control message, a STATUS due),
 * then call xevb_farm_process() or xevb_farm_next(). It is an epoll
 * descriptor owned by the handle: do not read, close or change it.
 */
XEVB_API int xevb_farm_fd(const struct xevb_farm *f);
/*
 * Do what is due without blocking: accept builders, read their streams,
 * take control messages, send STATUS and RECEIVED. Returns the events
 * ready for xevb_farm_next() (>= 0) or a negative errno (the handle
 * itself failed: see xevb_farm_error()). A broken builder stream is not
 * an error here: that connection is closed, counted and logged.
 */
XEVB_API int xevb_farm_process(struct xevb_farm *f);
/* Wait up to timeout_ms (-1: for ever, 0: not at all) for work, then process it: as xevb_farm_process(). */
XEVB_API int xevb_farm_poll(struct xevb_farm *f, int timeout_ms);
/*
 * The next event, in arrival order per connection: 1 with *ev set, 0
 * when none is ready (it processes once without blocking first), or a
 * negative errno. The view and every pointer in it stay valid, and its
 * bytes unchanged, until xevb_farm_done() on it.
 */
XEVB_API int xevb_farm_next(struct xevb_farm *f, const struct xevb_ev **ev);
/*
 * The caller is finished with ev: its credit goes back to its builder
 * (the next STATUS says so; promptly once a quarter of the credits are
 * back) and its buffer may be reused. Events may be done in any order.
 * ev must come from this handle's xevb_farm_next(), done once.
 */
XEVB_API void xevb_farm_done(struct xevb_farm *f, const struct xevb_ev *ev);

/* xevb_farm_set_busy() modes */
#define XEVB_BUSY_AUTO 0 /* Busy by the held events and the factors (the default) */
#define XEVB_BUSY_ON   1 /* Busy now, whatever is held (the caller's own back-pressure) */
#define XEVB_BUSY_OFF  2 /* never Busy */
/* Busy / not-Busy by mode: 0, or -EINVAL. A change goes to every builder at once. */
XEVB_API int xevb_farm_set_busy(struct xevb_farm *f, int mode);

/* The TCP port builders connect to (useful after port 0), host order. */
XEVB_API uint16_t xevb_farm_port(const struct xevb_farm *f);
/* The control protocol's UDP port, host order; 0 with XEVB_FARM_NO_CTL. */
XEVB_API uint16_t xevb_farm_ctl_port(const struct xevb_farm *f);

/*
 * Why a farm node refused a control datagram (xevb_farm_stats.ctl_refused_by):
 * malformed, not authenticated right, or not from a member of the run
 * configuration (docs/control-protocol.md). The values and their names
 * never change; reasons are only added, below XEVB_CTL_REFUSED_SLOTS.
 */
enum xevb_ctl_refused {
	XEVB_CTL_REFUSED_NONE = 0,
	XEVB_CTL_REFUSED_SHORT,      /* "short" */
	XEVB_CTL_REFUSED_MAGIC,      /* "bad_magic" */
	XEVB_CTL_REFUSED_VERSION,    /* "bad_version" */
	XEVB_CTL_REFUSED_TYPE,       /* "bad_type" */
	XEVB_CTL_REFUSED_ROLE,       /* "bad_role": unknown, or may not send that type */
	XEVB_CTL_REFUSED_RESERVED,   /* "reserved_nonzero" */
	XEVB_CTL_REFUSED_EPOCH,      /* "zero_epoch" */
	XEVB_CTL_REFUSED_LENGTH,     /* "bad_length" */
	XEVB_CTL_REFUSED_COUNT,      /* "bad_count" */
	XEVB_CTL_REFUSED_FIELD,      /* "bad_field" */
	XEVB_CTL_REFUSED_UNAUTH,     /* "unauthenticated": no MAC, and we have a key */
	XEVB_CTL_REFUSED_NO_KEY,     /* "no_key": sealed, and we have no key */
	XEVB_CTL_REFUSED_MAC,        /* "bad_mac": forged, altered, or another key */
	XEVB_CTL_REFUSED_STALE,      /* "stale": stamped more than 5 s from our clock */
	XEVB_CTL_REFUSED_REPLAY,     /* "replay" */
	XEVB_CTL_REFUSED_SEQ_JUMP,   /* "seq_jump": a sequence number too far ahead */
	XEVB_CTL_REFUSED_WRONG_ROLE, /* "wrong_role": a role that never talks to a farm node (a source) */
	XEVB_CTL_REFUSED_NOT_MEMBER, /* "not_member": not that member of the run configuration */
	XEVB_CTL_REFUSED__COUNT
};
#define XEVB_CTL_REFUSED_SLOTS 32 /* entries of xevb_farm_stats.ctl_refused_by */
/* The name of reason ("bad_mac", ...: stable, fit for a label), or NULL for one this library does not know. */
XEVB_API const char *xevb_ctl_refused_name(int reason);

struct xevb_farm_stats {
	size_t sz;       /* sizeof(struct xevb_farm_stats), set by the caller */
	uint64_t events; /* handed out by xevb_farm_next (whole and valid) */
	uint64_t complete, incomplete;
	uint64_t bytes; /* of those events */
	uint64_t frags, missing_frags;
	uint64_t done;    /* xevb_farm_done calls */
	uint64_t held;    /* received, not yet done (queued in the handle or held by the caller) */
	uint64_t crc_bad; /* events with XEVB_EV_CRC_BAD */
	uint64_t conns_total, conns_open;
	uint64_t conns_broken;  /* ended by a stream that broke a rule (bad event, too big, truncated, stalled) */
	uint64_t conns_refused; /* over max_conns, or out of descriptors */
	uint64_t truncated;     /* connections closed inside an event */
	uint64_t buffer_bytes;  /* receive buffers allocated now */
	uint64_t read_pauses;   /* times a connection stopped being read for max_buffer */
	uint64_t status_sent, received_sent;
	uint64_t ctl_refused;    /* control datagrams refused: malformed, unauthenticated, not a member */
	uint64_t ctl_unexpected; /* valid, but nothing a farm node takes */
	uint64_t busy_on, busy_off;
	uint32_t busy;       /* 1: Busy now */
	uint32_t n_builders; /* builder addresses seen (xevb_farm_builder) */
	/* Added after 1.0.0 (a caller built against 1.0.0 passes a smaller sz and gets the fields above): */
	uint64_t conns_refused_max;         /* of conns_refused: closed at once, max_conns open */
	uint64_t accept_fd_limit;           /* of conns_refused: accept() found no free descriptor (paused) */
	uint64_t buffer_bytes_max;          /* buffer_bytes at its highest */
	uint32_t busy_mark_high;            /* Busy once held > this (ceil(busy_high x credits)) */
	uint32_t busy_mark_low;             /* not-Busy once held < this (floor(busy_low x credits)) */
	uint64_t broken[XEVB_BROKEN_SLOTS]; /* conns_broken by reason: broken[XEVB_BROKEN_*] */
	/* Added after 1.0.0, later (a caller with a smaller sz gets the fields above): */
	uint64_t conns_ended; /* connections its builder closed in order, at an event boundary */
	uint32_t run_end;     /* xevb_farm_run_end() */
	uint32_t reserved2;
	/* Added after 1.0.0, later still (a caller with a smaller sz gets the fields above): */
	uint64_t ctl_refused_by[XEVB_CTL_REFUSED_SLOTS]; /* ctl_refused by reason: [XEVB_CTL_REFUSED_*] */
	/* Taken (sealed right, from a member), then dropped by the farm node's rules: */
	uint64_t ctl_not_from_dfm;  /* of ctl_unexpected: a BYE from another address or port than the DFM's */
	uint64_t ctl_wrong_role;    /* of ctl_unexpected: a type that role does not send a farm node */
	uint64_t ctl_builders_full; /* a builder's STATUS, no room for another builder address (1024) */
};
/*
 * The end of the run (added after 1.0.0), as flags. The handle only says
 * so: it goes on receiving (a builder may connect again) until closed.
 *
 * XEVB_END_STREAMS: every builder that connected has closed its stream in
 * order (at an event boundary: not broken, not cut), none is connected,
 * and every event received was handed out by xevb_farm_next(). Cleared
 * again when a builder connects.
 * XEVB_END_DFM: the DFM (the dfm option, or the run configuration's) said
 * the run is over (its BYE, from its address; sealed when there is a key).
 * Stays set.
 * XEVB_END_RUN: the run is over, nothing left to take: with a DFM, its end
 * of run and then no builder connected (or none sent a byte for
 * end_wait_ms) and nothing left for xevb_farm_next(); without a DFM,
 * XEVB_END_STREAMS. A farm-node application ends here: every event of the
 * run has been handed out; done() the ones it holds, then close (its last
 * RECEIVED goes to the DFM). conns_open in the stats says whether it ended
 * with builders still connected (end_wait_ms), broken[] whether a stream
 * broke.
 */
#define XEVB_END_STREAMS 0x1u
#define XEVB_END_DFM     0x2u
#define XEVB_END_RUN     0x4u
XEVB_API uint32_t xevb_farm_run_end(const struct xevb_farm *f);

/* Fill st (up to st->sz bytes): 0, or -EINVAL when st->sz is 0. */
XEVB_API int xevb_farm_stats(const struct xevb_farm *f, struct xevb_farm_stats *st);

struct xevb_farm_builder {
	size_t sz;            /* sizeof(struct xevb_farm_builder), set by the caller */
	uint32_t addr;        /* IPv4, network order: builders are known by the address they connect from */
	uint16_t ctl_port;    /* its control port as heard from its STATUS, host order; 0: not heard */
	uint16_t conns_open;  /* its connections open now */
	uint32_t epoch;       /* its incarnation (control protocol), 0: not heard */
	uint32_t connections; /* connections it opened */
	uint64_t events;      /* events received from it, all connections */
	uint64_t done;        /* of them, done */
	uint64_t conn_done;   /* done on its current connection: the count its STATUS carries */
};
/* Builder i (0..n_builders-1) in *b: 0, -ENOENT past the end, -EINVAL when b->sz is 0. */
XEVB_API int xevb_farm_builder(const struct xevb_farm *f, uint32_t i, struct xevb_farm_builder *b);

/* The last failure of the handle, as a sentence ("" when none). Valid until the next call on it. */
XEVB_API const char *xevb_farm_error(const struct xevb_farm *f);

/* ------------------------------------------------------------------ */
/* Run files (wire-format.md section 4)                               */
/* ------------------------------------------------------------------ */

struct xevb_file_writer;
struct xevb_file_reader;

/* xevb_file_writer_opts.flags */
#define XEVB_FW_NEXT_NAME \
	0x1u /* a file of that name exists: take the next sequence number (else refuse, -EEXIST) */
#define XEVB_FW_NO_FSYNC 0x2u /* no fsync at rotation and close (tests, scratch runs) */
#define XEVB_FW_VERIFY   0x4u /* check every event against the wire format before writing it */

struct xevb_file_writer_opts {
	size_t sz; /* sizeof(struct xevb_file_writer_opts) */
	/*
	 * Where: dir (NULL: ".") and prefix (NULL: "xevb") make run-numbered
	 * names, DIR/PREFIX-run<run, 8 digits>-<seq, 4 digits>.xevb; or path
	 * names the one file exactly (then no rotation).
	 */
	const char *dir;
	const char *prefix;
	const char *path;
	uint32_t run_number;
	uint32_t first_seq; /* the first file's sequence number */
	uint16_t builder_id;
	uint16_t n_sources;       /* configured sources, recorded in the header */
	const uint16_t *sources;  /* n_sources source ids */
	const char *builder_name; /* up to 31 bytes (the rest cut); NULL: the host name */
	uint64_t max_bytes;       /* rotate before an event would take the file past this; 0: no limit */
	uint64_t max_events;      /* rotate after this many events; 0: no limit */
	uint32_t flags;           /* XEVB_FW_* */
};

/*
 * Create the first file (never over an existing one) and write its
 * header. NULL on error, with the file and what failed in errbuf.
 */
XEVB_API struct xevb_file_writer *xevb_file_writer_open(const struct xevb_file_writer_opts *opts, char *errbuf);
/*
 * Append one encoded event (wire-format section 2, as the builder sends
 * it): 0, or a negative errno: -EINVAL not an event (bad magic, length
 * disagrees, or XEVB_FW_VERIFY failed: nothing written), -EIO etc. when
 * the write failed (the writer is then broken: later calls fail, close
 * leaves the file cut). Rotates first when a limit says so.
 */
XEVB_API int xevb_file_writer_write(struct xevb_file_writer *w, const void *event, size_t len);
/* The same, the event in iovcnt pieces (as the builder's zero-copy encoder makes it). */
XEVB_API int xevb_file_writer_writev(struct xevb_file_writer *w, const struct iovec *iov, int iovcnt);
/* Close the current file (trailer, fsync) and start the next: 0 or a negative errno. */
XEVB_API int xevb_file_writer_rotate(struct xevb_file_writer *w);
/* Hand what is buffered to the kernel (not fsync): 0 or a negative errno. */
XEVB_API int xevb_file_writer_flush(struct xevb_file_writer *w);
/*
 * Write the trailer, fsync, close and free (NULL: 0). 0, or a negative
 * errno when the file could not be finished (it then reads as cut).
 * The handle is freed either way.
 */
XEVB_API int xevb_file_writer_close(struct xevb_file_writer *w);
/* The file being written now. Valid until the next call on the writer. */
XEVB_API const char *xevb_file_writer_path(const struct xevb_file_writer *w);
/* The last failure, as a sentence ("" when none). */
XEVB_API const char *xevb_file_writer_error(const struct xevb_file_writer *w);

struct xevb_file_writer_stats {
	size_t sz;                        /* set by the caller */
	uint64_t files;                   /* files created */
	uint64_t events, bytes;           /* all files: events and their bytes */
	uint64_t file_events, file_bytes; /* the current file */
	uint32_t seq;                     /* the current file's sequence number */
	uint32_t broken;                  /* 1 after a failed write */
};
XEVB_API int xevb_file_writer_stats(const struct xevb_file_writer *w, struct xevb_file_writer_stats *st);

/* What a reader knows of its file. */
enum xevb_file_state {
	XEVB_FILE_READING = 0, /* the end not reached yet */
	XEVB_FILE_CLOSED,      /* trailer found; counts and checksum agree: the writer finished it */
	XEVB_FILE_CUT,         /* no trailer: the writer stopped (crash, full disk); every whole event was read */
	XEVB_FILE_CORRUPT,     /* a broken event, checksum or counts differ from the trailer, bytes after it */
	XEVB_FILE_RAW, /* no file header: a plain event stream (older `xevb build --output`) read to its end */
};

/* xevb_file_info.trailer_flags */
#define XEVB_FILE_T_CLEAN     0x1u /* written by close or rotate */
#define XEVB_FILE_T_CONTINUED 0x2u /* rotated: the run goes on in the file with the next sequence number */

/* Library-owned, valid until the reader is closed; fields only ever added at the end. */
struct xevb_file_info {
	uint32_t format_version; /* 1; 0 for XEVB_FILE_RAW */
	uint32_t run_number;
	uint32_t seq;
	uint16_t builder_id;
	uint16_t n_sources;
	uint64_t start_ns; /* CLOCK_REALTIME when the file was created */
	const char *builder_name;
	const uint16_t *sources; /* n_sources configured source ids */
	enum xevb_file_state state;
	/* From the trailer (state CLOSED, or CORRUPT when a trailer was read): */
	uint32_t trailer_flags;
	uint64_t trailer_events, trailer_bytes, end_ns;
	uint32_t trailer_checksum;
	/* What the reader found so far: */
	uint32_t checksum; /* CRC-32C of the event bytes read */
	uint64_t events, bytes;
	uint64_t cut_bytes; /* bytes after the last whole event (CUT), not an event */
	/* Added after 1.0.0: */
	uint32_t broken; /* state CORRUPT: why (enum xevb_broken); else 0 */
};

/* xevb_file_reader_opts.flags */
#define XEVB_FR_VERIFY_CRC 0x1u /* check every payload's CRC-32C (XEVB_EV_CRC_BAD) */

struct xevb_file_reader_opts {
	size_t sz;
	uint32_t flags;     /* XEVB_FR_* */
	uint32_t max_event; /* bytes: a longer total_length is corruption; 0: 64 MiB */
	/* Added after 1.0.0: as xevb_farm_opts.event_check. */
	xevb_event_check_fn event_check;
	void *check_ctx;
};

/*
 * Open a run file (or a plain event stream) and read its header (opts
 * may be NULL). NULL on error: errbuf says which file and what is wrong.
 */
XEVB_API struct xevb_file_reader *xevb_file_reader_open(const char *path, const struct xevb_file_reader_opts *opts,
							char *errbuf);
/*
 * The next event: 1 with *ev set, 0 at the end (info->state then says
 * CLOSED, CUT, CORRUPT or RAW), or -EBADMSG when the file breaks a rule
 * (state CORRUPT, the sentence in xevb_file_reader_error()). The view is
 * valid until the next call; the bytes it points to until close.
 */
XEVB_API int xevb_file_reader_next(struct xevb_file_reader *r, const struct xevb_ev **ev);
XEVB_API const struct xevb_file_info *xevb_file_reader_info(const struct xevb_file_reader *r);
/* The last failure, or how the file ended, as a sentence ("" when nothing to say). */
XEVB_API const char *xevb_file_reader_error(const struct xevb_file_reader *r);
XEVB_API void xevb_file_reader_close(struct xevb_file_reader *r);
/* "closed", "cut", ... (never NULL). */
XEVB_API const char *xevb_file_state_name(enum xevb_file_state s);

#ifdef __cplusplus
}
#endif

#endif /* XEVB_XEVB_H */

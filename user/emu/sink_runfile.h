/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb sink --input` on run files (`xevb build --output`, wire-format.md
 * section 4), until the sink reads files with libxevb's reader itself:
 * the library checks and skips the header and trailer, and every event
 * goes to the sink's own checks as if it had come on a stream.
 */
#ifndef XEVB_SINK_RUNFILE_H
#define XEVB_SINK_RUNFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sink;
/* The sink's: check one event (nonzero: stop reading); count an error of kind at where. */
typedef int (*xevb_sink_event_fn)(struct sink *s, const uint8_t *ev, size_t len, const char *where);
typedef void (*xevb_sink_err_fn)(struct sink *s, int kind, const char *where, const char *msg);

/*
 * path a run file: every event to event, until it says stop; how the file
 * ended to err: corrupt as read_kind, cut inside an event as
 * XEVB_EVT_E_EOF (what a plain stream cut there counts); cut between
 * events (no trailer) said on stderr. True. Not a run file (a plain event
 * stream, a pipe, a file that does not open): false, nothing read.
 */
bool xevb_sink_runfile(struct sink *s, const char *path, uint32_t max_event, xevb_sink_event_fn event,
		       xevb_sink_err_fn err, int read_kind);

#endif

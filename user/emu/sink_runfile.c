// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <xevb/xevb.h>
#include "base/log.h"
#include "wire/event_codec.h"
#include "emu/sink_runfile.h"

bool xevb_sink_runfile(struct sink *s, const char *path, uint32_t max_event, xevb_sink_event_fn event,
		       xevb_sink_err_fn err, int read_kind)
{
	XEVB_OPTS(xevb_file_reader_opts, ro, .max_event = max_event);
	struct xevb_file_reader *r = xevb_file_reader_open(path, &ro, NULL);
	const struct xevb_file_info *fi = r ? xevb_file_reader_info(r) : NULL;
	const struct xevb_ev *ev;
	char msg[320];

	/* A plain stream (version 0) is read as one by the caller, with its own messages. */
	if (!fi || !fi->format_version) {
		xevb_file_reader_close(r);
		return false;
	}
	while (xevb_file_reader_next(r, &ev) == 1)
		if (event(s, ev->data, ev->length, path))
			break;
	snprintf(msg, sizeof(msg), "run file %s: %s", xevb_file_state_name(fi->state), xevb_file_reader_error(r));
	if (fi->state == XEVB_FILE_CORRUPT)
		err(s, read_kind, path, msg);
	else if (fi->state == XEVB_FILE_CUT && fi->cut_bytes)
		err(s, XEVB_EVT_E_EOF, path, msg);
	else if (fi->state == XEVB_FILE_CUT)
		xevb_warn("%s: %s", path, msg);
	xevb_file_reader_close(r);
	return true;
}

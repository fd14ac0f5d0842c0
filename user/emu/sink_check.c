// SPDX-License-Identifier: GPL-2.0-only
/*
 * The farm-node emulator's own checks of each event (sink.h). libxevb
 * holds the event to every rule of the wire format and, while its bytes
 * are in cache, hands it to sink_payloads_bad (its payloads' CRC-32C and
 * the source emulator's pattern: a payload equal to the pattern passes
 * against the pattern's CRC, without computing it). Here an event with a
 * wrong payload is looked at again to say which and where, the sources
 * are checked against --expect-sources, the event id against the ids
 * already delivered, and the time since the builder built it is recorded.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include "base/clock.h"
#include "emu/sink.h"

static uint64_t noted;

const char *sink_fault_name(int f)
{
	static const char *const n[SF__COUNT] = {
		[SF_CRC] = "crc_mismatch",
		[SF_CONTENT] = "content_mismatch",
		[SF_DUP] = "duplicate_event",
		[SF_SOURCES] = "wrong_n_expected",
	};

	return f >= 0 && f < SF__COUNT ? n[f] : "unknown";
}

void sink_note(const struct sink_where *w, const char *kind, const char *msg)
{
	char where[64];

	if (++noted > SINK_LOGGED)
		return;
	if (w->name) {
		snprintf(where, sizeof(where), "%s", w->name);
	} else {
		char a[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &w->addr, a, sizeof(a));
		snprintf(where, sizeof(where), "%s:%u", a, w->port);
	}
	xevb_err("%s: %s: %s", where, kind, msg);
	if (noted == SINK_LOGGED)
		xevb_err("further errors are counted, not logged");
}

int sink_check_init(struct sink_check *k, uint32_t dup_window, bool content, uint32_t expect_sources)
{
	k->verify = content ? XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT : XEVB_VERIFY_CRC;
	k->expect_sources = expect_sources;
	if (xevb_evid_window_init(&k->win, dup_window)) {
		xevb_err("out of memory for the duplicate window (--dup-window %u)", dup_window);
		return -1;
	}
	return 0;
}

void sink_check_free(struct sink_check *k)
{
	xevb_evid_window_free(&k->win);
}

static void fault(struct sink_check *k, int f, const struct sink_where *w, const char *msg)
{
	k->fault[f]++;
	sink_note(w, sink_fault_name(f), msg);
}

void sink_check_event(struct sink_check *k, const struct xevb_decoded_event *d, bool payload_bad,
		      const struct sink_where *w)
{
	char msg[192];
	int rc;

	if (k->expect_sources && d->n_expected != k->expect_sources) {
		snprintf(msg, sizeof(msg), "event %u: n_expected %u, expected %u", d->event_id, d->n_expected,
			 k->expect_sources);
		fault(k, SF_SOURCES, w, msg);
	}
	/* Only an event the library found a wrong payload in is looked at again: which check failed, and where. */
	if (payload_bad && (rc = xevb_event_verify(d, k->verify, msg, sizeof(msg))))
		fault(k, rc == -XEVB_EVT_E_CRC ? SF_CRC : SF_CONTENT, w, msg);
	switch (xevb_evid_window_add(&k->win, d->run_number, d->event_id)) {
	case XEVB_EVID_DUP:
		snprintf(msg, sizeof(msg), "event %u of run %u delivered again", d->event_id, d->run_number);
		fault(k, SF_DUP, w, msg);
		break;
	case XEVB_EVID_TOO_OLD:
		k->too_old++;
		break;
	default:
		break;
	}
	if (d->build_ns) {
		int64_t lat = (int64_t)(xevb_realtime_ns() - d->build_ns);
		k->lat_n++;
		k->lat_sum_ns += (double)lat;
		if (lat > k->lat_max_ns)
			k->lat_max_ns = lat;
		xevb_lat_add(&k->lat, lat);
	}
}

/*
 * A walk, not libxevb's fragment index: a farm node's view writes its
 * index only when asked for, and writing it cost misses in L1 (flat out,
 * with about 190 views out) that the walk's chain of loads, overlapped
 * with each payload's check, does not.
 */
int sink_payloads_bad(const struct sink_check *k, const struct xevb_decoded_event *d)
{
	return xevb_event_payloads_bad(d, k->verify);
}

uint64_t sink_check_faults(const struct sink_check *k)
{
	uint64_t n = 0;

	for (int f = 0; f < SF__COUNT; f++)
		n += k->fault[f];
	return n;
}

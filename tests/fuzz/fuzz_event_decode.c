// SPDX-License-Identifier: GPL-2.0-only
/*
 * The built-event decoder and stream reader on arbitrary bytes: no crash,
 * no read outside the input, and whatever the decoder accepts re-encodes
 * (through the builder-side encoder) to exactly the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "wire/event_codec.h"

static uint16_t sids[XEVB_MAX_SOURCES];
static struct xevb_frag_slot slots[XEVB_MAX_SOURCES];
static const uint8_t *frames[XEVB_MAX_SOURCES];
static uint8_t scratch[XEVB_EVT_SCRATCH_MAX(XEVB_MAX_SOURCES)];
static struct iovec iov[XEVB_EVT_IOV_MAX(XEVB_MAX_SOURCES)];

static void roundtrip(const uint8_t *buf, size_t len, const struct xevb_decoded_event *d)
{
	struct xevb_decoded_frag f;
	const uint8_t *pos = NULL;
	uint32_t n = 0, nmiss = d->n_expected - d->n_frags, m = 0, nframes = 0;
	size_t total = 0, off = 0;
	int niov;

	/* Merge records and missing ids back into the builder's slot order. */
	while (xevb_event_next_frag(d, &pos, &f)) {
		if (f.payload < buf || f.payload + f.length > buf + len)
			abort();
		if (f.length > 65535)
			return; /* valid on the wire, but no MEP fragment is that long */
		while (m < nmiss && xevb_event_missing(d, m) < f.source_id) {
			sids[n] = xevb_event_missing(d, m++);
			slots[n++] = (struct xevb_frag_slot){ .frame_idx = UINT32_MAX };
		}
		frames[nframes] = f.payload - XEVB_EVT_REC_HLEN; /* CRC sits right before */
		sids[n] = f.source_id;
		slots[n++] = (struct xevb_frag_slot){
			.frame_idx = nframes++,
			.payload_off = XEVB_EVT_REC_HLEN,
			.length = (uint16_t)f.length,
		};
	}
	while (m < nmiss) {
		sids[n] = xevb_event_missing(d, m++);
		slots[n++] = (struct xevb_frag_slot){ .frame_idx = UINT32_MAX };
	}
	if (n != d->n_expected)
		abort();
	struct xevb_event ev = {
		.event_id = d->event_id,
		.run_number = d->run_number,
		.flags = d->flags,
		.n_expected = d->n_expected,
		.n_frags = d->n_frags,
		.source_ids = sids,
		.frags = slots,
		.frame_data = frames,
	};
	niov = xevb_event_encode(&ev, d->build_ns, scratch, sizeof(scratch), iov,
				 XEVB_EVT_IOV_MAX(XEVB_MAX_SOURCES), &total);
	if (niov < 0 || total != len)
		abort();
	for (int i = 0; i < niov; i++) {
		if (memcmp(buf + off, iov[i].iov_base, iov[i].iov_len))
			abort();
		off += iov[i].iov_len;
	}
	if (off != len)
		abort();
}

static void one(const uint8_t *buf, size_t len)
{
	const unsigned all = XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT;
	struct xevb_decoded_event d, d1;
	char err[160], err1[160];
	int rc, rc1;

	/* The one-walk check must give decode-then-verify's verdict, always. */
	rc1 = xevb_event_decode_verify(buf, len, all, &d1, err1, sizeof(err1));
	rc = xevb_event_decode(buf, len, &d, err, sizeof(err));
	if (rc) {
		if (rc1 != rc)
			abort();
		return;
	}
	rc = xevb_event_verify(&d, all, err, sizeof(err));
	if (rc1 != rc || d1.total_length != d.total_length || d1.missing != d.missing)
		abort();
	roundtrip(buf, len, &d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xevb_evt_reader r;
	size_t fed = 0, chunk;

	/* The whole input as one event: an exact copy, so overreads are caught. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	one(copy, size);
	free(copy);

	/* And as a stream, cut in chunks of a size the input picks. */
	if (xevb_evt_reader_init(&r, 1 << 20))
		return 0;
	chunk = size ? (size_t)data[0] % 97 + 1 : 1;
	while (fed < size) {
		size_t avail, c = size - fed < chunk ? size - fed : chunk;
		uint8_t *p = xevb_evt_reader_space(&r, c, &avail);
		const uint8_t *ev;
		size_t elen;
		int rc;

		if (!p)
			break;
		memcpy(p, data + fed, c);
		xevb_evt_reader_commit(&r, c);
		fed += c;
		while ((rc = xevb_evt_reader_next(&r, &ev, &elen)) == 1)
			one(ev, elen);
		if (rc < 0)
			break;
	}
	xevb_evt_reader_free(&r);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/* libxevb: the event view (struct xevb_ev) over events from the tools' encoder; options' ABI. */
#include <errno.h>
#include "test_lib.h"

TestSuite(lib_event, .timeout = 20);

Test(lib_event, fields_and_zero_copy_fragments)
{
	static const uint16_t sids[] = { 0, 2, 17, 300, 4095 };
	static const uint16_t lens[] = { 0, 1, 5, 64, 1000 };
	char err[XEVB_ERRBUF_SIZE] = "";
	struct xevb_ev_frag f;
	struct xevb_ev *ev;
	size_t len;
	/* Sources 2 and 300 missing. */
	uint8_t *b = tl_encode(7, 0xfffffffe, 5, sids, lens, 0xa, &len);

	ev = xevb_ev_parse(b, len, err);
	cr_assert(ev != NULL, "%s", err);
	cr_assert(eq(u32, ev->run_number, 7));
	cr_assert(eq(u32, ev->event_id, 0xfffffffe));
	cr_assert(eq(u64, ev->build_ns, 1700000000000000000ull + 0xfffffffe));
	cr_assert(eq(u32, ev->flags, XEVB_EV_INCOMPLETE));
	cr_assert(eq(u16, ev->n_frags, 3));
	cr_assert(eq(u16, ev->n_expected, 5));
	cr_assert(eq(u32, ev->n_missing, 2));
	cr_assert(eq(u32, ev->length, len));
	cr_assert(eq(ptr, (void *)ev->data, b), "a view, not a copy");
	cr_assert(eq(int, xevb_ev_missing(ev, 0), 2));
	cr_assert(eq(int, xevb_ev_missing(ev, 1), 300));
	cr_assert(eq(int, xevb_ev_missing(ev, 2), -ERANGE));
	static const uint16_t want[] = { 0, 17, 4095 }, wlen[] = { 0, 5, 1000 };
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert(eq(int, xevb_ev_frag(ev, i, &f), 0));
		cr_assert(eq(u16, f.source_id, want[i]));
		cr_assert(eq(u16, f.index, i));
		cr_assert(eq(u32, f.length, wlen[i]));
		/* The payload points into the event's own bytes. */
		cr_assert(ge(ptr, (void *)f.payload, b + 32));
		cr_assert(le(ptr, (void *)(f.payload + f.length), b + len));
		cr_assert(eq(u32, f.crc32c, xevb_ev_crc32c(0, f.payload, f.length)));
	}
	cr_assert(eq(int, xevb_ev_frag(ev, 3, &f), -ERANGE));
	/* The index: each record's offset, its header then the payload. */
	const uint32_t *offs = xevb_ev_offsets(ev);
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert(eq(int, xevb_ev_frag(ev, i, &f), 0));
		cr_assert(eq(ptr, (void *)(ev->data + offs[i] + 12), (void *)f.payload));
		cr_assert(eq(u32, xevb_ld16(ev->data + offs[i]), want[i]));
		cr_assert(eq(u32, xevb_ld32(ev->data + offs[i] + 4), wlen[i]));
	}
	cr_assert(eq(u32, offs[0], 32), "the first record right after the event header");
	cr_assert(eq(int, xevb_ev_find(ev, 17, &f), 0));
	cr_assert(eq(u16, f.index, 1));
	cr_assert(eq(int, xevb_ev_find(ev, 2, &f), -ENOENT));
	cr_assert(eq(int, xevb_ev_find(ev, 5, &f), -ENOENT));
	tl_check_payloads(ev);
	cr_assert(eq(int, xevb_ev_verify(ev, NULL), 0));
	xevb_ev_free(ev);

	/* A payload byte changed: verify names its source. */
	b[len - 4 - 8] ^= 1; /* inside source 4095's payload (the missing list's 4 bytes follow) */
	ev = xevb_ev_parse(b, len, err);
	cr_assert(ev != NULL, "%s", err);
	int bad = -1;
	cr_assert(eq(int, xevb_ev_verify(ev, &bad), -EBADMSG));
	cr_assert(eq(int, bad, 4095));
	xevb_ev_free(ev);
	free(b);
}

Test(lib_event, malformed_events_are_refused_with_the_reason)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	size_t len;
	uint8_t *b = tl_encode(1, 5, 3, NULL, NULL, 0, &len);

	cr_assert(eq(ptr, xevb_ev_parse(b, len - 4, err), NULL));
	cr_assert(eq(int, errno, EBADMSG));
	cr_assert(tl_has(err, "total_length"), "%s", err);
	b[0] = 'X';
	cr_assert(eq(ptr, xevb_ev_parse(b, len, err), NULL));
	cr_assert(tl_has(err, "magic"), "%s", err);
	b[0] = 'E';
	b[5] = XEVB_EV_INCOMPLETE; /* with every source present */
	cr_assert(eq(ptr, xevb_ev_parse(b, len, err), NULL));
	cr_assert(tl_has(err, "INCOMPLETE"), "%s", err);
	free(b);
}

Test(lib_event, broken_kinds_have_stable_names)
{
	/* The values are ABI and the names labels in dashboards: neither may change. */
	cr_assert(eq(int, XEVB_BROKEN_MAGIC, 2));
	cr_assert(eq(int, XEVB_BROKEN_REC_RESERVED, 11));
	cr_assert(eq(int, XEVB_BROKEN_TRAILING, 19));
	cr_assert(eq(int, XEVB_BROKEN_TRUNCATED, 21));
	cr_assert(eq(int, XEVB_BROKEN_FILE, 26));
	cr_assert(eq(str, (char *)xevb_broken_name(XEVB_BROKEN_MAGIC), "bad_magic"));
	cr_assert(eq(str, (char *)xevb_broken_name(XEVB_BROKEN_REC_RESERVED), "record_reserved_nonzero"));
	cr_assert(eq(str, (char *)xevb_broken_name(XEVB_BROKEN_TOO_BIG), "too_big"));
	cr_assert(eq(str, (char *)xevb_broken_name(XEVB_BROKEN_TRUNCATED), "truncated_stream"));
	cr_assert(eq(str, (char *)xevb_broken_name(XEVB_BROKEN_STALLED), "partial_timeout"));
	cr_assert(eq(str, (char *)xevb_broken_name(XEVB_BROKEN_BUFFER), "buffer_limit"));
	cr_assert(eq(str, (char *)xevb_broken_name(XEVB_BROKEN_READ), "read_error"));
	cr_assert(eq(ptr, (void *)xevb_broken_name(XEVB_BROKEN__COUNT), NULL));
	cr_assert(eq(ptr, (void *)xevb_broken_name(-1), NULL));
	cr_assert(le(int, XEVB_BROKEN__COUNT, XEVB_BROKEN_SLOTS));
	for (int i = 0; i < XEVB_BROKEN__COUNT; i++) {
		cr_assert(xevb_broken_name(i) != NULL, "kind %d has no name", i);
		for (int j = 0; j < i; j++)
			cr_assert(strcmp(xevb_broken_name(i), xevb_broken_name(j)) != 0,
				  "kinds %d and %d share a name", j, i);
	}
}

/* A caller built against a newer header, with one more field. */
struct newer_opts {
	struct xevb_file_reader_opts o;
	uint64_t future;
};

Test(lib_event, options_of_other_sizes)
{
	char err[XEVB_ERRBUF_SIZE] = "", dir[256], path[600];
	struct newer_opts n = { .o.sz = sizeof(n) };
	struct xevb_file_reader *r;
	size_t sz = sizeof(size_t);
	size_t len;
	uint8_t *b = tl_encode(1, 5, 3, NULL, NULL, 0, &len);
	FILE *f;

	tl_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/e", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	cr_assert(eq(sz, fwrite(b, 1, len, f), len));
	fclose(f);
	free(b);
	/* Unknown fields left zero: fine. */
	r = xevb_file_reader_open(path, &n.o, err);
	cr_assert(r != NULL, "%s", err);
	xevb_file_reader_close(r);
	/* Set: refused, saying why. */
	n.future = 1;
	cr_assert(eq(ptr, xevb_file_reader_open(path, &n.o, err), NULL));
	cr_assert(eq(int, errno, EINVAL));
	cr_assert(tl_has(err, "does not know"), "%s", err);
	/* An older caller's struct (only sz): defaults. */
	r = xevb_file_reader_open(path, (const struct xevb_file_reader_opts *)&sz, err);
	cr_assert(r != NULL, "%s", err);
	xevb_file_reader_close(r);
	/* sz 0: not declared with XEVB_OPTS. */
	sz = 0;
	cr_assert(eq(ptr, xevb_file_reader_open(path, (const struct xevb_file_reader_opts *)&sz, err), NULL));
	cr_assert(tl_has(err, "XEVB_OPTS"), "%s", err);
	cr_assert(eq(str, (char *)xevb_lib_version(), "1.0.0"));
	tl_rmdir(dir);
}

/* CRC-32C a bit at a time: the definition the fast paths must agree with. */
static uint32_t crc_bits(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

Test(lib_event, crc32c_agrees_with_its_definition_at_every_length_and_split)
{
	static uint8_t buf[8192];
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	cr_assert(eq(u32, xevb_ev_crc32c(0, "123456789", 9), 0xE3069283u), "the check value");
	/* Every length across the three-stream blocks (768 bytes), at odd offsets, and continued. */
	for (size_t len = 0; len <= 2400; len += (len < 800 ? 1 : 7)) {
		size_t off = len % 13;
		uint32_t want = crc_bits(0, buf + off, len);
		cr_assert(eq(u32, xevb_ev_crc32c(0, buf + off, len), want), "length %zu", len);
		cr_assert(eq(u32,
			     xevb_ev_crc32c(xevb_ev_crc32c(0, buf + off, len / 3), buf + off + len / 3,
					    len - len / 3),
			     want),
			  "length %zu in two calls", len);
	}
	cr_assert(eq(u32, xevb_ev_crc32c(7, buf, sizeof(buf)), crc_bits(7, buf, sizeof(buf))));
}

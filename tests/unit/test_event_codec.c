// SPDX-License-Identifier: GPL-2.0-only
/* Built-event encoder, strict decoder, stream reader and writev helper. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/event_codec.h"

TestSuite(event_codec, .timeout = 20);

#define MAXS      64
#define FRAME_HDR 22 /* payload_off: odd-ish offset, CRC in the 4 bytes before */

/* An event over fake frames, one frame per source, as the builder hands it out. */
struct fake {
	uint8_t frames[MAXS][FRAME_HDR + 512];
	const uint8_t *frame_data[MAXS];
	uint16_t sids[MAXS];
	struct xevb_frag_slot slots[MAXS];
	struct xevb_event ev;
};

/* present[i] false: source i missing. emu: payloads follow the emulator pattern. */
static void fake_init(struct fake *f, uint32_t n, const uint16_t *sids, const uint16_t *lens, const bool *present,
		      bool emu, uint32_t seed)
{
	uint16_t got = 0;

	memset(f, 0, sizeof(*f));
	srand(seed);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *fr = f->frames[i];
		for (size_t b = 0; b < sizeof(f->frames[i]); b++)
			fr[b] = (uint8_t)rand(); /* junk around the payload must not leak */
		if (emu)
			xevb_emu_fill(fr + FRAME_HDR, lens[i]);
		xevb_st32(fr + FRAME_HDR - 4, xevb_crc32c(0, fr + FRAME_HDR, lens[i]));
		/* Frames in reverse order, to make frame_idx differ from i. */
		f->frame_data[n - 1 - i] = fr;
		f->sids[i] = sids[i];
		f->slots[i].frame_idx = present[i] ? n - 1 - i : UINT32_MAX;
		f->slots[i].payload_off = FRAME_HDR;
		f->slots[i].length = lens[i];
		got += present[i];
	}
	f->ev = (struct xevb_event){
		.event_id = 0xfffffff0u + seed,
		.run_number = 0x01020304,
		.flags = got < n ? XEVB_EVT_F_INCOMPLETE : 0,
		.n_expected = (uint16_t)n,
		.n_frags = got,
		.source_ids = f->sids,
		.frags = f->slots,
		.frame_data = f->frame_data,
	};
}

static uint8_t scratch[XEVB_EVT_SCRATCH_MAX(MAXS)];
static struct iovec iov[XEVB_EVT_IOV_MAX(MAXS)];

/* Encode and flatten into a malloc'ed buffer; checks the iovec shape. */
static uint8_t *encode_flat(const struct fake *f, uint64_t build_ns, size_t *len)
{
	size_t total = 0, off = 0;
	int n = xevb_event_encode(&f->ev, build_ns, scratch, sizeof(scratch), iov, XEVB_EVT_IOV_MAX(MAXS), &total);
	uint8_t *buf;

	cr_assert(gt(int, n, 0), "encode: %d", n);
	cr_assert(le(int, n, 1 + 2 * f->ev.n_frags));
	buf = malloc(total + 64);
	cr_assert(not(eq(ptr, buf, NULL)));
	for (int i = 0; i < n; i++) {
		const uint8_t *b = iov[i].iov_base;
		bool in_scratch = b >= scratch && b + iov[i].iov_len <= scratch + sizeof(scratch);
		/* Non-empty payloads are referenced in place, never copied. */
		if (!in_scratch) {
			bool in_frame = false;
			for (uint32_t s = 0; s < f->ev.n_expected; s++)
				if (b == f->frames[s] + FRAME_HDR)
					in_frame = true;
			cr_assert(in_frame, "iov %d points neither to scratch nor a payload", i);
		}
		cr_assert(gt(sz, iov[i].iov_len, 0));
		memcpy(buf + off, b, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	cr_assert(eq(sz, off, total));
	*len = total;
	return buf;
}

/* Decode and compare every field and byte with the event that was encoded. */
static void check_roundtrip(const struct fake *f, uint64_t build_ns)
{
	size_t len;
	uint8_t *buf = encode_flat(f, build_ns, &len);
	struct xevb_decoded_event d;
	struct xevb_decoded_frag fr;
	const uint8_t *pos = NULL;
	char err[160] = "";
	uint32_t nrec = 0, nmiss = 0;
	size_t expect_len = XEVB_EVT_HLEN;

	int rc = xevb_event_decode(buf, len, &d, err, sizeof(err));
	cr_assert(eq(int, rc, 0), "decode: %s", err);
	cr_assert(eq(u32, d.event_id, f->ev.event_id));
	cr_assert(eq(u32, d.run_number, f->ev.run_number));
	cr_assert(eq(u8, d.flags, f->ev.flags));
	cr_assert(eq(u16, d.n_frags, f->ev.n_frags));
	cr_assert(eq(u16, d.n_expected, f->ev.n_expected));
	cr_assert(eq(u64, d.build_ns, build_ns));
	cr_assert(eq(u32, d.total_length, (uint32_t)len));
	for (uint32_t i = 0; i < f->ev.n_expected; i++) {
		const struct xevb_frag_slot *s = &f->slots[i];
		if (s->frame_idx == UINT32_MAX) {
			cr_assert(lt(u32, nmiss, (uint32_t)(d.n_expected - d.n_frags)));
			cr_assert(eq(u16, xevb_event_missing(&d, nmiss), f->sids[i]));
			nmiss++;
			continue;
		}
		cr_assert(xevb_event_next_frag(&d, &pos, &fr), "record %u missing", nrec);
		cr_assert(eq(u16, fr.source_id, f->sids[i]));
		cr_assert(eq(u32, fr.length, s->length));
		cr_assert(eq(u32, fr.crc32c, xevb_ld32(f->frames[i] + FRAME_HDR - 4)));
		cr_assert(eq(int, memcmp(fr.payload, f->frames[i] + FRAME_HDR, s->length), 0));
		for (uint32_t p = s->length; p < XEVB_PAD4((uint32_t)s->length); p++)
			cr_assert(eq(u8, fr.payload[p], 0));
		expect_len += XEVB_EVT_REC_HLEN + XEVB_PAD4((uint32_t)s->length);
		nrec++;
	}
	cr_assert(not(xevb_event_next_frag(&d, &pos, &fr)));
	cr_assert(eq(u32, nrec, f->ev.n_frags));
	cr_assert(eq(u32, nmiss, (uint32_t)(f->ev.n_expected - f->ev.n_frags)));
	expect_len += XEVB_PAD4(2 * nmiss);
	cr_assert(eq(sz, len, expect_len));
	/* The header, byte by byte. */
	cr_assert(eq(u32, xevb_ld32(buf), 0x45564E54));
	cr_assert(eq(u8, buf[4], 1));
	cr_assert(eq(u16, xevb_ld16(buf + 22), 0));
	/* Missing-list padding is zero. */
	if (nmiss & 1)
		cr_assert(eq(u16, xevb_ld16(buf + len - 2), 0));
	cr_assert(eq(int, xevb_event_verify(&d, XEVB_VERIFY_CRC, err, sizeof(err)), 0), "%s", err);
	free(buf);
}

Test(event_codec, one_source_lengths_0_to_7)
{
	struct fake *f = malloc(sizeof(*f));
	for (uint16_t l = 0; l < 8; l++) {
		uint16_t sid = 4095, len = l;
		bool p = true;
		fake_init(f, 1, &sid, &len, &p, false, l);
		check_roundtrip(f, 0x1122334455667788ull + l);
	}
	free(f);
}

Test(event_codec, one_source_missing)
{
	struct fake *f = malloc(sizeof(*f));
	uint16_t sid = 7, len = 5;
	bool p = false;
	size_t n;
	uint8_t *buf;

	fake_init(f, 1, &sid, &len, &p, false, 1);
	buf = encode_flat(f, 1, &n);
	cr_assert(eq(sz, n, 36));
	cr_assert(eq(u16, xevb_ld16(buf + 32), 7));
	free(buf);
	check_roundtrip(f, 1);
	free(f);
}

Test(event_codec, many_sources_complete_and_incomplete)
{
	struct fake *f = malloc(sizeof(*f));
	uint16_t sids[MAXS], lens[MAXS];
	bool present[MAXS];

	/* Missing patterns: none, every 3rd, first, last, all but one, only one, all. */
	for (int pat = 0; pat < 7; pat++)
		for (uint32_t n = 1; n <= MAXS; n += (n < 10 ? 1 : 9)) {
			for (uint32_t i = 0; i < n; i++) {
				sids[i] = (uint16_t)(i * 61 + pat);
				lens[i] = (uint16_t)((i * 5 + pat + n) % 8 + (i % 4 == 3 ? 300 : 0));
				switch (pat) {
				case 0:
					present[i] = true;
					break;
				case 1:
					present[i] = i % 3 != 1;
					break;
				case 2:
					present[i] = i != 0;
					break;
				case 3:
					present[i] = i != n - 1;
					break;
				case 4:
					present[i] = i == n / 2;
					break;
				case 5:
					present[i] = i != n / 2;
					break;
				default:
					present[i] = false;
					break;
				}
			}
			fake_init(f, n, sids, lens, present, pat == 1, pat * 100 + n);
			check_roundtrip(f, pat * 1000 + n);
		}
	free(f);
}

/* Empty payloads add no iovec: their headers join the scratch run. */
Test(event_codec, empty_fragments_coalesce)
{
	struct fake *f = malloc(sizeof(*f));
	uint16_t sids[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, lens[8] = { 0 };
	bool present[8] = { 1, 1, 1, 1, 1, 1, 1, 0 };
	size_t total;

	fake_init(f, 8, sids, lens, present, false, 3);
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 64, &total), 1));
	cr_assert(eq(sz, total, 32 + 7 * 12 + 4));
	lens[3] = 9;
	fake_init(f, 8, sids, lens, present, false, 3);
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 64, &total), 3));
	check_roundtrip(f, 5);
	free(f);
}

Test(event_codec, encoder_rejects_inconsistent_events)
{
	struct fake *f = malloc(sizeof(*f));
	uint16_t sids[4] = { 1, 2, 3, 4 }, lens[4] = { 4, 5, 6, 7 };
	bool present[4] = { 1, 0, 1, 1 };
	size_t total;

	fake_init(f, 4, sids, lens, present, false, 3);
	f->ev.n_frags = 4;
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 64, &total), -EINVAL));
	f->ev.n_frags = 3;
	f->ev.flags = 0;
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 64, &total), -EINVAL));
	f->ev.flags = XEVB_EVT_F_INCOMPLETE | 0x4;
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 64, &total), -EINVAL));
	f->ev.flags = XEVB_EVT_F_INCOMPLETE;
	f->sids[2] = 2;
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 64, &total), -EINVAL));
	f->sids[2] = 3;
	f->sids[3] = 4096;
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 64, &total), -EINVAL));
	f->sids[3] = 4;
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, 40, iov, 64, &total), -ENOSPC));
	cr_assert(eq(int, xevb_event_encode(&f->ev, 0, scratch, sizeof(scratch), iov, 3, &total), -ENOSPC));
	cr_assert(eq(int,
		     xevb_event_encode(&f->ev, 0, scratch, XEVB_EVT_SCRATCH_MAX(4), iov, XEVB_EVT_IOV_MAX(4),
				       &total),
		     7));
	free(f);
}

/* ---- Decoder rejections: one corruption per rule, each its own verdict. ---- */

/* Sources 10..19; 11, 14, 17 missing (odd count: 2 bytes of list padding). */
static uint8_t *good_incomplete(size_t *len, size_t *rec_off)
{
	static struct fake f;
	uint16_t sids[10], lens[10];
	bool present[10];
	for (int i = 0; i < 10; i++) {
		sids[i] = (uint16_t)(10 + i);
		lens[i] = (uint16_t)(i + 1);
		present[i] = i != 1 && i != 4 && i != 7;
	}
	fake_init(&f, 10, sids, lens, present, true, 9);
	if (rec_off)
		*rec_off = XEVB_EVT_HLEN;
	return encode_flat(&f, 42, len);
}

static uint8_t *good_complete(size_t *len)
{
	static struct fake f;
	uint16_t sids[3] = { 0, 1, 2 }, lens[3] = { 3, 0, 8 };
	bool present[3] = { 1, 1, 1 };
	fake_init(&f, 3, sids, lens, present, true, 11);
	return encode_flat(&f, 43, len);
}

static void expect_err(const uint8_t *buf, size_t len, int code)
{
	struct xevb_decoded_event d;
	char err[160] = "";
	int rc = xevb_event_decode(buf, len, &d, err, sizeof(err));
	cr_assert(eq(int, rc, -code), "want %s, got %s (%s)", xevb_evt_err_name(code), xevb_evt_err_name(rc), err);
	cr_assert(gt(sz, strlen(err), 0));
}

static void set_total(uint8_t *b, size_t len)
{
	xevb_st32(b + 16, (uint32_t)len);
}

Test(event_codec, good_vectors_pass)
{
	size_t len;
	uint8_t *b = good_incomplete(&len, NULL);
	struct xevb_decoded_event d;
	char err[160];
	cr_assert(eq(int, xevb_event_decode(b, len, &d, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(int, xevb_event_verify(&d, XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT, err, sizeof(err)), 0));
	cr_assert(eq(u16, d.n_frags, 7));
	free(b);
	b = good_complete(&len);
	cr_assert(eq(int, xevb_event_decode(b, len, &d, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(int, xevb_event_verify(&d, XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT, err, sizeof(err)), 0));
	free(b);
}

/* One field of a good event changed, and the error that must name it. */
enum edit_op { SET8, XOR8, OR8, SET16, SET32 };
struct header_edit {
	int off;
	enum edit_op op;
	uint32_t v;
	int err;
};

static const struct header_edit incomplete_edits[] = {
	{ 0, XOR8, 1, XEVB_EVT_E_MAGIC },           { 4, SET8, 2, XEVB_EVT_E_VERSION },
	{ 4, SET8, 0, XEVB_EVT_E_VERSION },         { 5, OR8, 0x80, XEVB_EVT_E_FLAGS },
	{ 5, SET8, 0x02, XEVB_EVT_E_FLAGS },        { 23, SET8, 1, XEVB_EVT_E_RESERVED },
	{ 22, SET8, 0x80, XEVB_EVT_E_RESERVED },    { 20, SET16, 0, XEVB_EVT_E_N_EXPECTED },
	{ 20, SET16, 4097, XEVB_EVT_E_N_EXPECTED }, { 6, SET16, 11, XEVB_EVT_E_N_FRAGS },
	{ 5, SET8, 0, XEVB_EVT_E_INCOMPLETE_FLAG },
};

static const struct header_edit complete_edits[] = {
	{ 5, SET8, XEVB_EVT_F_INCOMPLETE, XEVB_EVT_E_INCOMPLETE_FLAG },
	{ 6, SET16, 4, XEVB_EVT_E_N_FRAGS },
};

/* good_incomplete's records: 10 (len 1) at R0, 12 (len 3) at R1, 13 (len 4) at R2 ... */
enum { R0 = 32, R1 = 48, R2 = 64 };
static const struct header_edit record_edits[] = {
	{ R1 + 4, SET32, 1000, XEVB_EVT_E_REC_TRUNC },
	{ R1 + 4, SET32, 0xffffffff, XEVB_EVT_E_REC_TRUNC },
	{ R2 + 3, SET8, 1, XEVB_EVT_E_REC_RESERVED },
	{ R0, SET16, 4096, XEVB_EVT_E_SOURCE_ID },
	{ R2, SET16, 12, XEVB_EVT_E_REC_ORDER },
	{ R2, SET16, 11, XEVB_EVT_E_REC_ORDER },
	/* Record 10 has 1 byte of payload then 3 of padding; record 12, 3 + 1. */
	{ R0 + 12 + 3, SET8, 0xff, XEVB_EVT_E_PADDING },
	{ R1 + 12 + 3, SET8, 0x01, XEVB_EVT_E_PADDING },
};

/* good_incomplete's missing list (11, 14, 17, pad): its last 8 bytes. */
enum { M = -8 };
static const struct header_edit missing_edits[] = {
	{ 20, SET16, 12, XEVB_EVT_E_MISSING_TRUNC },
	{ M, SET16, 14, XEVB_EVT_E_MISSING_ORDER },
	{ M + 2, SET16, 9, XEVB_EVT_E_MISSING_ORDER },
	{ M + 4, SET16, 4096, XEVB_EVT_E_MISSING_ORDER },
	{ M, SET16, 10, XEVB_EVT_E_MISSING_PRESENT },
	{ M + 4, SET16, 19, XEVB_EVT_E_MISSING_PRESENT },
	{ M + 7, SET8, 1, XEVB_EVT_E_MISSING_PAD },
	/* n_frags one less: records run into the missing list. */
	{ 6, SET16, 6, XEVB_EVT_E_MISSING_ORDER },
};

/*
 * Each edit on a fresh copy of the good event (len bytes; an offset below 0
 * counts from its end): decoding fails with the edit's error.
 */
static void expect_edits_err(const uint8_t *good, size_t len, const struct header_edit *e, size_t n)
{
	uint8_t *b = malloc(len);

	cr_assert(not(eq(ptr, b, NULL)));
	for (; n--; e++) {
		uint8_t *at = b + (e->off < 0 ? (ptrdiff_t)len : 0) + e->off;

		memcpy(b, good, len);
		if (e->op == SET32)
			xevb_st32(at, e->v);
		else if (e->op == SET16)
			xevb_st16(at, (uint16_t)e->v);
		else if (e->op == XOR8)
			*at ^= (uint8_t)e->v;
		else if (e->op == OR8)
			*at |= (uint8_t)e->v;
		else
			*at = (uint8_t)e->v;
		expect_err(b, len, e->err);
	}
	free(b);
}

#define EXPECT_EDITS_ERR(good, len, edits) expect_edits_err(good, len, edits, sizeof(edits) / sizeof((edits)[0]))

/* The good event (len bytes) with four zero bytes after it, counted in total_length. */
static void expect_trailing_err(const uint8_t *good, size_t len)
{
	uint8_t *b = calloc(1, len + 4);

	cr_assert(not(eq(ptr, b, NULL)));
	memcpy(b, good, len);
	set_total(b, len + 4);
	expect_err(b, len + 4, XEVB_EVT_E_TRAILING);
	free(b);
}

Test(event_codec, reject_header_rules)
{
	size_t len;
	uint8_t *g = good_incomplete(&len, NULL), *b = malloc(len);

	memcpy(b, g, len);
	expect_err(b, 31, XEVB_EVT_E_SHORT);
	expect_err(b, 0, XEVB_EVT_E_SHORT);
	expect_err(b, len - 4, XEVB_EVT_E_TOTAL_LEN);
	set_total(b, len + 4);
	expect_err(b, len, XEVB_EVT_E_TOTAL_LEN);
	set_total(b, 0);
	expect_err(b, len, XEVB_EVT_E_TOTAL_LEN);
	free(b);
	EXPECT_EDITS_ERR(g, len, incomplete_edits);
	free(g);
	g = good_complete(&len);
	EXPECT_EDITS_ERR(g, len, complete_edits);
	free(g);
}

Test(event_codec, reject_record_rules)
{
	size_t len;
	uint8_t *g = good_incomplete(&len, NULL);

	cr_assert(eq(u16, xevb_ld16(g + R1), 12));
	cr_assert(eq(u16, xevb_ld16(g + R2), 13));
	EXPECT_EDITS_ERR(g, len, record_edits);
	/* All 7 records present but no room for the last header. */
	xevb_st32(g + R0 + 4, (uint32_t)(len - R0 - 12 - 8));
	expect_err(g, len, XEVB_EVT_E_REC_TRUNC);
	free(g);
}

Test(event_codec, reject_missing_list_rules)
{
	size_t len;
	uint8_t *g = good_incomplete(&len, NULL);

	cr_assert(eq(u16, xevb_ld16(g + len + M), 11));
	cr_assert(eq(u16, xevb_ld16(g + len + M + 4), 17));
	EXPECT_EDITS_ERR(g, len, missing_edits);
	expect_trailing_err(g, len);
	free(g);
	g = good_complete(&len);
	expect_trailing_err(g, len);
	free(g);
}

/* Every verdict the decoder can give is reachable and has its own name. */
Test(event_codec, error_names_distinct)
{
	for (int i = 0; i < XEVB_EVT_E__COUNT; i++)
		for (int j = i + 1; j < XEVB_EVT_E__COUNT; j++)
			cr_assert(ne(str, (char *)xevb_evt_err_name(i), (char *)xevb_evt_err_name(j)));
	cr_assert(eq(str, (char *)xevb_evt_err_name(-XEVB_EVT_E_MAGIC), "bad_magic"));
}

Test(event_codec, verify_crc_and_content)
{
	size_t len;
	uint8_t *b = good_complete(&len);
	struct xevb_decoded_event d;
	char err[160] = "";
	/* Record 0: source 0, 3 bytes at 44. */
	b[44 + 1] ^= 0x10;
	cr_assert(eq(int, xevb_event_decode(b, len, &d, err, sizeof(err)), 0));
	cr_assert(eq(int, xevb_event_verify(&d, XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT, err, sizeof(err)),
		     -XEVB_EVT_E_CRC));
	cr_assert(eq(int, xevb_event_verify(&d, XEVB_VERIFY_CONTENT, err, sizeof(err)), -XEVB_EVT_E_CONTENT));
	cr_assert(not(eq(ptr, strstr(err, "offset 1"), NULL)), "%s", err);
	/* Right CRC over wrong content: only the content check sees it. */
	xevb_st32(b + 40, xevb_crc32c(0, b + 44, 3));
	cr_assert(eq(int, xevb_event_verify(&d, XEVB_VERIFY_CRC, err, sizeof(err)), 0));
	cr_assert(eq(int, xevb_event_verify(&d, XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT, err, sizeof(err)),
		     -XEVB_EVT_E_CONTENT));
	free(b);
}

/* ---- One walk: xevb_event_decode_verify against decode, then verify ---- */

/* Sources 0..5, one missing, payload lengths 32, 100, 0, 300 (memcmp path), 7, 1. */
static uint8_t *good_mixed(size_t *len)
{
	static struct fake f;
	uint16_t sids[6] = { 0, 1, 2, 3, 4, 5 }, lens[6] = { 32, 100, 0, 300, 7, 1 };
	bool present[6] = { 1, 1, 1, 1, 0, 1 };
	fake_init(&f, 6, sids, lens, present, true, 21);
	return encode_flat(&f, 44, len);
}

/* The verdict, the message and the decoded fields of both ways must agree. */
static void same_verdict(const uint8_t *b, size_t len, unsigned what, size_t flipped)
{
	struct xevb_decoded_event d1, d2;
	char e1[160] = "", e2[160] = "";
	int r1 = xevb_event_decode(b, len, &d1, e1, sizeof(e1));
	int r2 = xevb_event_decode_verify(b, len, what, &d2, e2, sizeof(e2));

	if (!r1)
		r1 = xevb_event_verify(&d1, what, e1, sizeof(e1));
	cr_assert(eq(int, r2, r1), "byte %zu, what %u: one walk %s, two %s", flipped, what, xevb_evt_err_name(r2),
		  xevb_evt_err_name(r1));
	if (r1)
		cr_assert(eq(str, e2, e1), "byte %zu, what %u", flipped, what);
	if (r1 == 0 || r1 == -XEVB_EVT_E_CRC || r1 == -XEVB_EVT_E_CONTENT) {
		cr_assert(eq(u32, d2.event_id, d1.event_id));
		cr_assert(eq(u16, d2.n_frags, d1.n_frags));
		cr_assert(eq(u16, d2.n_expected, d1.n_expected));
		cr_assert(eq(u32, d2.total_length, d1.total_length));
		cr_assert(eq(ptr, (void *)d2.missing, (void *)d1.missing));
	}
}

/* Every single-bit flip of every byte of three events, under each check. */
Test(event_codec, decode_verify_matches_decode_then_verify)
{
	static const unsigned whats[] = { XEVB_VERIFY_CRC, XEVB_VERIFY_CONTENT,
					  XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT };
	uint8_t *(*makers[3])(size_t *) = { good_mixed, good_complete, NULL };
	size_t n_checked = 0;

	for (int m = 0; m < 3; m++) {
		size_t len;
		uint8_t *b = makers[m] ? makers[m](&len) : good_incomplete(&len, NULL);

		for (unsigned w = 0; w < 3; w++)
			same_verdict(b, len, whats[w], SIZE_MAX);
		for (size_t i = 0; i < len; i++)
			for (int bit = 0; bit < 8; bit += 7) {
				b[i] ^= (uint8_t)(1u << bit);
				for (unsigned w = 0; w < 3; w++)
					same_verdict(b, len, whats[w], i);
				b[i] ^= (uint8_t)(1u << bit);
				n_checked++;
			}
		free(b);
	}
	cr_assert(gt(sz, n_checked, 1000));
}

/* Each byte of each payload and of each CRC field, flipped: caught, and named. */
Test(event_codec, decode_verify_catches_every_payload_and_crc_byte)
{
	size_t len;
	uint8_t *b = good_mixed(&len);
	struct xevb_decoded_event d;
	struct xevb_decoded_frag fr;
	const uint8_t *pos = NULL;
	const unsigned all = XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT;
	char err[160];
	uint32_t payload_bytes = 0, crc_bytes = 0;

	cr_assert(eq(int, xevb_event_decode_verify(b, len, all, &d, err, sizeof(err)), 0), "%s", err);
	while (xevb_event_next_frag(&d, &pos, &fr)) {
		uint8_t *p = (uint8_t *)fr.payload;
		for (uint32_t i = 0; i < fr.length; i++, payload_bytes++) {
			p[i] ^= 0x20;
			cr_assert(eq(int, xevb_event_decode_verify(b, len, all, &d, err, sizeof(err)),
				     -XEVB_EVT_E_CRC),
				  "source %u payload byte %u", fr.source_id, i);
			cr_assert(eq(int,
				     xevb_event_decode_verify(b, len, XEVB_VERIFY_CONTENT, &d, err, sizeof(err)),
				     -XEVB_EVT_E_CONTENT));
			p[i] ^= 0x20;
		}
		for (uint32_t i = 0; i < 4; i++, crc_bytes++) {
			p[(int)i - 4] ^= 0x01;
			cr_assert(eq(int, xevb_event_decode_verify(b, len, all, &d, err, sizeof(err)),
				     -XEVB_EVT_E_CRC),
				  "source %u crc byte %u", fr.source_id, i);
			cr_assert(not(eq(ptr, strstr(err, "crc32c"), NULL)), "%s", err);
			/* Without the CRC check, a wrong CRC over right bytes passes. */
			cr_assert(eq(int,
				     xevb_event_decode_verify(b, len, XEVB_VERIFY_CONTENT, &d, err, sizeof(err)),
				     0));
			p[(int)i - 4] ^= 0x01;
		}
	}
	cr_assert(eq(u32, payload_bytes, 32 + 100 + 300 + 1));
	cr_assert(eq(u32, crc_bytes, 5 * 4));
	/* A right CRC over wrong bytes: the content check names the offset. */
	b[XEVB_EVT_HLEN + 12 + 5] ^= 0x04;
	xevb_st32(b + XEVB_EVT_HLEN + 8, xevb_crc32c(0, b + XEVB_EVT_HLEN + 12, 32));
	cr_assert(eq(int, xevb_event_decode_verify(b, len, all, &d, err, sizeof(err)), -XEVB_EVT_E_CONTENT));
	cr_assert(not(eq(ptr, strstr(err, "offset 5"), NULL)), "%s", err);
	cr_assert(eq(int, xevb_event_decode_verify(b, len, XEVB_VERIFY_CRC, &d, err, sizeof(err)), 0));
	free(b);
}

/* ---- Stream reader ---- */

Test(event_codec, reader_cuts_stream_at_any_chunking)
{
	size_t l1, l2, l3;
	uint8_t *e1 = good_incomplete(&l1, NULL), *e2 = good_complete(&l2);
	static uint8_t big[300000];
	uint8_t *e3;
	struct fake *f = malloc(sizeof(*f));
	uint16_t sids[MAXS], lens[MAXS];
	bool present[MAXS];

	for (int i = 0; i < MAXS; i++) {
		sids[i] = (uint16_t)i;
		lens[i] = 500;
		present[i] = true;
	}
	fake_init(f, MAXS, sids, lens, present, false, 4);
	e3 = encode_flat(f, 7, &l3); /* ~33 KB */

	/* Stream: e1 e2 e3 repeated, big enough to force growth and compaction. */
	size_t n = 0, count = 0;
	const uint8_t *evs[3] = { e1, e2, e3 };
	size_t lens3[3] = { l1, l2, l3 };
	while (n + l3 < sizeof(big)) {
		memcpy(big + n, evs[count % 3], lens3[count % 3]);
		n += lens3[count % 3];
		count++;
	}
	for (int chunk_mode = 0; chunk_mode < 3; chunk_mode++) {
		struct xevb_evt_reader r;
		size_t fed = 0, got = 0;
		cr_assert(eq(int, xevb_evt_reader_init(&r, 0), 0));
		srand(chunk_mode);
		while (fed < n) {
			size_t avail, c;
			uint8_t *sp = xevb_evt_reader_space(&r, 1024, &avail);
			cr_assert(not(eq(ptr, sp, NULL)));
			cr_assert(ge(sz, avail, 1024));
			c = chunk_mode == 0 ? 1 : chunk_mode == 1 ? (size_t)rand() % 70000 + 1 : avail;
			if (c > avail)
				c = avail;
			if (c > n - fed)
				c = n - fed;
			memcpy(sp, big + fed, c);
			xevb_evt_reader_commit(&r, c);
			fed += c;
			const uint8_t *ev;
			size_t len;
			int rc;
			while ((rc = xevb_evt_reader_next(&r, &ev, &len)) == 1) {
				cr_assert(eq(sz, len, lens3[got % 3]));
				cr_assert(eq(int, memcmp(ev, evs[got % 3], len), 0));
				got++;
			}
			cr_assert(eq(int, rc, 0));
		}
		cr_assert(eq(sz, got, count));
		cr_assert(eq(sz, xevb_evt_reader_pending(&r), 0));
		xevb_evt_reader_free(&r);
	}
	free(e1);
	free(e2);
	free(e3);
	free(f);
}

static int feed(struct xevb_evt_reader *r, const uint8_t *p, size_t n, const uint8_t **ev, size_t *len)
{
	size_t avail;
	uint8_t *sp = xevb_evt_reader_space(r, n, &avail);
	memcpy(sp, p, n);
	xevb_evt_reader_commit(r, n);
	return xevb_evt_reader_next(r, ev, len);
}

Test(event_codec, reader_rejects_garbage)
{
	struct xevb_evt_reader r;
	const uint8_t *ev;
	size_t len, l;
	uint8_t *g = good_complete(&l);

	cr_assert(eq(int, xevb_evt_reader_init(&r, 4096), 0));
	cr_assert(eq(int, feed(&r, (const uint8_t *)"EV", 2, &ev, &len), 0));
	cr_assert(eq(int, feed(&r, (const uint8_t *)"X", 1, &ev, &len), -XEVB_EVT_E_MAGIC));
	xevb_evt_reader_free(&r);

	cr_assert(eq(int, xevb_evt_reader_init(&r, 4096), 0));
	set_total(g, 4097);
	cr_assert(eq(int, feed(&r, g, 20, &ev, &len), -XEVB_EVT_E_TOO_BIG));
	xevb_evt_reader_free(&r);

	cr_assert(eq(int, xevb_evt_reader_init(&r, 4096), 0));
	set_total(g, 31);
	cr_assert(eq(int, feed(&r, g, 20, &ev, &len), -XEVB_EVT_E_TOTAL_LEN));
	xevb_evt_reader_free(&r);

	/* A partial event stays pending: the caller reports truncation at EOF. */
	cr_assert(eq(int, xevb_evt_reader_init(&r, 0), 0));
	set_total(g, (uint32_t)l);
	cr_assert(eq(int, feed(&r, g, l - 1, &ev, &len), 0));
	cr_assert(eq(sz, xevb_evt_reader_pending(&r), l - 1));
	cr_assert(eq(int, feed(&r, g + l - 1, 1, &ev, &len), 1));
	cr_assert(eq(sz, len, l));
	xevb_evt_reader_free(&r);
	free(g);
}

/*
 * The farm node's budget: a reader never grows past cap_max (ENOBUFS, the
 * buffer untouched), reads stop at the end of the partial event, and the
 * buffer grown for a large event goes back to its first size once empty.
 */
Test(event_codec, reader_budget_read_size_and_shrink)
{
	enum { BIG = 3u << 20 };
	struct xevb_evt_reader r;
	const uint8_t *ev;
	size_t len, avail, l;
	uint8_t *g = good_complete(&l), *sp;

	cr_assert(eq(int, xevb_evt_reader_init(&r, 8u << 20), 0));
	cr_assert(eq(sz, r.cap, XEVB_EVT_READER_CAP0));
	set_total(g, BIG);
	cr_assert(eq(int, feed(&r, g, 20, &ev, &len), 0));
	cr_assert(eq(sz, r.want, BIG));
	/* 20 bytes held: a read asks for what is left of the event, no more. */
	cr_assert(eq(sz, xevb_evt_reader_read_size(&r, 256 * 1024), 256 * 1024));
	r.cap_max = BIG - 1;
	errno = 0;
	cr_assert_null(xevb_evt_reader_space(&r, 256 * 1024, &avail));
	cr_assert(eq(int, errno, ENOBUFS));
	cr_assert(eq(sz, avail, 0));
	cr_assert(eq(sz, r.cap, XEVB_EVT_READER_CAP0));
	cr_assert(eq(sz, xevb_evt_reader_pending(&r), 20));
	/* At the budget: exactly what the event needs, not the doubling. */
	r.cap_max = BIG + 100;
	sp = xevb_evt_reader_space(&r, 256 * 1024, &avail);
	cr_assert_not_null(sp);
	cr_assert(eq(sz, r.cap, BIG));
	memset(sp, 0, BIG - 20 - 10);
	xevb_evt_reader_commit(&r, BIG - 20 - 10);
	cr_assert(eq(int, xevb_evt_reader_next(&r, &ev, &len), 0));
	cr_assert(eq(sz, xevb_evt_reader_read_size(&r, 256 * 1024), 10));
	sp = xevb_evt_reader_space(&r, xevb_evt_reader_read_size(&r, 256 * 1024), &avail);
	cr_assert_not_null(sp);
	cr_assert(eq(sz, r.cap, BIG));
	memset(sp, 0, 10);
	xevb_evt_reader_commit(&r, 10);
	cr_assert(eq(int, xevb_evt_reader_next(&r, &ev, &len), 1));
	cr_assert(eq(sz, len, BIG));
	/* Nothing held: back to the first size, once it is above min_cap. */
	xevb_evt_reader_shrink(&r, 4u << 20);
	cr_assert(eq(sz, r.cap, BIG));
	xevb_evt_reader_shrink(&r, 1u << 20);
	cr_assert(eq(sz, r.cap, XEVB_EVT_READER_CAP0));
	cr_assert(eq(sz, xevb_evt_reader_pending(&r), 0));
	/* Holding a partial event: no shrink. */
	set_total(g, (uint32_t)l);
	cr_assert(eq(int, feed(&r, g, l - 1, &ev, &len), 0));
	r.cap_max = 0;
	sp = xevb_evt_reader_space(&r, 2u << 20, &avail);
	cr_assert_not_null(sp);
	xevb_evt_reader_shrink(&r, 1u << 20);
	cr_assert(gt(sz, r.cap, 2u << 20));
	xevb_evt_reader_free(&r);
	free(g);
}

/* ---- writev_all ---- */

struct drain {
	int fd;
	uint8_t *buf;
	size_t want;
};

static void *drain_thread(void *arg)
{
	struct drain *d = arg;
	size_t got = 0;
	while (got < d->want) {
		ssize_t r = read(d->fd, d->buf + got, d->want - got > 777 ? 777 : d->want - got);
		if (r <= 0)
			break;
		got += r;
		if (got % 7 == 0)
			usleep(100); /* let the writer see a full socket */
	}
	d->want = got;
	return NULL;
}

Test(event_codec, writev_all_chunks_and_partial_writes)
{
	enum { N = 5000 };
	static struct iovec v[N];
	static uint8_t src[N * 64], dst[N * 64];
	size_t total = 0;
	int sv[2], bufsz = 4096;
	pthread_t th;
	struct drain d;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + (i >> 9));
	for (int i = 0; i < N; i++) {
		size_t l = (size_t)(i * 13) % 64; /* includes zero-length entries */
		v[i] = (struct iovec){ src + total, l };
		total += l;
	}
	cr_assert(eq(int, socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0));
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	d = (struct drain){ sv[1], dst, total };
	pthread_create(&th, NULL, drain_thread, &d);
	cr_assert(eq(int, xevb_writev_all(sv[0], v, N), 0));
	pthread_join(th, NULL);
	cr_assert(eq(sz, d.want, total));
	cr_assert(eq(int, memcmp(src, dst, total), 0));
	close(sv[1]);
	signal(SIGPIPE, SIG_IGN);
	v[0] = (struct iovec){ src, 10 };
	cr_assert(eq(int, xevb_writev_all(sv[0], v, 1), -EPIPE));
	close(sv[0]);
}

/* An event of one source carrying p[0..n), its record's CRC crc. */
static struct xevb_decoded_event one_payload(uint8_t *buf, const uint8_t *p, uint32_t n, uint32_t crc)
{
	uint32_t padded = (n + 3) & ~3u;

	memset(buf, 0, XEVB_EVT_REC_HLEN + padded);
	xevb_st32(buf + 4, n);
	xevb_st32(buf + 8, crc);
	memcpy(buf + XEVB_EVT_REC_HLEN, p, n);
	return (struct xevb_decoded_event){
		.n_frags = 1, .n_expected = 1, .records = buf, .missing = buf + XEVB_EVT_REC_HLEN + padded
	};
}

/* xevb_event_payloads_bad and xevb_payloads_bad_at (`xevb sink`'s check in libxevb's decoder): the verdict of xevb_event_verify. */
Test(event_codec, payloads_bad_agrees_with_verify)
{
	static uint8_t p[70000], ev[70100];
	unsigned both = XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT, crc_only = XEVB_VERIFY_CRC;
	const uint32_t zero = 0; /* the one record's offset from ev */
	static const uint32_t lens[] = { 0,  1,  2,  3,  4,   5,   7,   8,    9,     15,   16,
					 17, 31, 32, 33, 100, 256, 257, 4000, 65536, 70000 };
	struct xevb_decoded_event d;

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t n = lens[i], crc;
		xevb_emu_fill(p, n);
		crc = xevb_crc32c(0, p, n);
		d = one_payload(ev, p, n, crc);
		cr_assert(eq(int, xevb_event_payloads_bad(&d, both), 0), "pattern of %u bytes", n);
		cr_assert(eq(int, xevb_payloads_bad_at(ev, &zero, 1, 7, both), 0), "by the index, %u bytes", n);
		cr_assert(eq(int, xevb_event_payloads_bad(&d, crc_only), 0));
		d = one_payload(ev, p, n, crc ^ 1);
		cr_assert(eq(int, xevb_event_payloads_bad(&d, both), 1), "wrong CRC, %u bytes", n);
		cr_assert(eq(int, xevb_payloads_bad_at(ev, &zero, 1, 7, both), 1));
		cr_assert(eq(int, xevb_event_payloads_bad(&d, crc_only), 1));
		if (!n)
			continue;
		/* A wrong byte under a right CRC: only the content check sees it. */
		p[n / 2] ^= 0x01;
		d = one_payload(ev, p, n, xevb_crc32c(0, p, n));
		cr_assert(eq(int, xevb_event_payloads_bad(&d, both), 1), "wrong byte, %u bytes", n);
		cr_assert(eq(int, xevb_event_payloads_bad(&d, crc_only), 0));
		cr_assert(eq(int, xevb_payloads_bad_at(ev, &zero, 1, 7, both), 1));
		cr_assert(eq(int, xevb_payloads_bad_at(ev, &zero, 1, 7, crc_only), 0));
	}
}

/* Every single wrong byte of a short pattern payload is found, wherever it sits (the overlapping loads). */
Test(event_codec, payloads_bad_finds_every_wrong_byte)
{
	uint8_t p[80], ev[100];
	unsigned both = XEVB_VERIFY_CRC | XEVB_VERIFY_CONTENT;
	struct xevb_decoded_event d;

	for (uint32_t n = 1; n <= sizeof(p); n++)
		for (uint32_t at = 0; at < n; at++) {
			xevb_emu_fill(p, n);
			p[at] ^= 0x80;
			d = one_payload(ev, p, n, xevb_crc32c(0, p, n));
			cr_assert(eq(int, xevb_event_payloads_bad(&d, both), 1), "byte %u of %u", at, n);
		}
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The run-file reader (wire-format.md section 4). The file is mapped:
 * every event view points into the mapping, so the bytes stay valid until
 * the reader is closed. Each event is checked by the strict decoder; the
 * end says how the file was left: closed cleanly (trailer, counts and
 * checksum agree), cut (no trailer: read up to the last whole event), or
 * corrupt.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

struct xevb_file_reader {
	struct xevb_file_reader_opts o;
	const uint8_t *map;
	size_t size, pos;
	struct xevb_file_info info;
	char name[XL_FILE_NAME_LEN + 1];
	uint16_t *sources;
	struct xl_ev ev;
	struct xl_check chk; /* each payload's checks in the decoder: CRC, the caller's */
	char path[512];
	char err[XL_ERR_LEN];
};

XEVB_API const char *xevb_file_state_name(enum xevb_file_state s)
{
	static const char *const n[] = { "reading", "closed", "cut", "corrupt", "raw" };

	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* The header at the start of the mapping: 0, or -EBADMSG with the reason in err. */
static int read_header(struct xevb_file_reader *r, char *err)
{
	const uint8_t *h = r->map;
	uint8_t copy[XL_FILE_HDR_MAX];
	uint32_t hlen, n;

	if (r->size >= 4 && xl_ld32(h) == XL_EVT_MAGIC) {
		/* A plain stream of events: what `xevb build --output` wrote before run files. */
		r->info.state = XEVB_FILE_READING;
		r->info.format_version = 0;
		r->info.builder_name = r->name;
		return 0;
	}
	if (r->size < XL_FILE_HLEN || xl_ld32(h) != XL_FILE_MAGIC) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "%s: not a run file (%s)", r->path,
		       r->size < 4 || xl_ld32(h) != XL_FILE_MAGIC ? "no \"XEVF\" or \"EVNT\" at its start" :
								    "cut inside its header");
		return -EBADMSG;
	}
	if (xl_ld16(h + 4) != XL_FILE_VERSION) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "%s: run-file format version %u; this libxevb %s reads version 1",
		       r->path, xl_ld16(h + 4), xevb_lib_version());
		return -EBADMSG;
	}
	hlen = xl_ld16(h + 6);
	n = xl_ld16(h + 26);
	if (n > XL_MAX_SOURCES || hlen != xl_file_hlen(n) || hlen > r->size) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "%s: header length %u for %u sources (%s)", r->path, hlen, n,
		       hlen > r->size ? "the file is cut inside its header" : "should be 64 + 2 x sources, to 8");
		return -EBADMSG;
	}
	memcpy(copy, h, hlen);
	memset(copy + 60, 0, 4);
	if (xl_crc32c(0, copy, hlen) != xl_ld32(h + 60)) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "%s: the header's checksum is wrong: the file is damaged", r->path);
		return -EBADMSG;
	}
	r->info.format_version = XL_FILE_VERSION;
	r->info.run_number = xl_ld32(h + 8);
	r->info.seq = xl_ld32(h + 12);
	r->info.start_ns = xl_ld64(h + 16);
	r->info.builder_id = xl_ld16(h + 24);
	r->info.n_sources = (uint16_t)n;
	memcpy(r->name, h + 28, XL_FILE_NAME_LEN);
	r->name[XL_FILE_NAME_LEN] = 0;
	r->info.builder_name = r->name;
	r->sources = calloc(n ? n : 1, sizeof(*r->sources));
	if (!r->sources) {
		xl_fmt(err, XEVB_ERRBUF_SIZE, "%s: out of memory", r->path);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		r->sources[i] = xl_ld16(h + XL_FILE_HLEN + 2 * i);
	r->info.sources = r->sources;
	r->pos = hlen;
	return 0;
}

XEVB_API struct xevb_file_reader *xevb_file_reader_open(const char *path, const struct xevb_file_reader_opts *opts,
							char *errbuf)
{
	struct xevb_file_reader *r = calloc(1, sizeof(*r));
	struct stat st;
	int fd = -1, rc = -ENOMEM;

	if (!r) {
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "file reader: out of memory");
		goto fail;
	}
	if ((rc = xl_opts_copy(&r->o, sizeof(r->o), opts, errbuf, XEVB_ERRBUF_SIZE)))
		goto fail;
	if (!r->o.max_event)
		r->o.max_event = XL_EVT_MAX_LEN;
	r->chk = (struct xl_check){ .verify = (r->o.flags & XEVB_FR_VERIFY_CRC) ? XL_VERIFY_CRC : 0,
				    .fn = r->o.event_check,
				    .ctx = r->o.check_ctx };
	snprintf(r->path, sizeof(r->path), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		rc = -errno;
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "opening %s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		rc = S_ISREG(st.st_mode) ? -EBADMSG : -EINVAL;
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "%s: %s", path,
		       S_ISREG(st.st_mode) ? "empty: the writer stopped before its header" :
					     "not a regular file (pipes and devices cannot be mapped)");
		goto fail;
	}
	r->size = (size_t)st.st_size;
	r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (r->map == MAP_FAILED) {
		rc = -errno;
		r->map = NULL;
		xl_fmt(errbuf, XEVB_ERRBUF_SIZE, "mapping %s: %s", path, strerror(errno));
		goto fail;
	}
	close(fd);
	fd = -1;
	madvise((void *)r->map, r->size, MADV_SEQUENTIAL);
	if ((rc = read_header(r, errbuf)))
		goto fail;
	return r;
fail:
	if (fd >= 0)
		close(fd);
	xevb_file_reader_close(r);
	errno = -rc;
	return NULL;
}

static int end_as(struct xevb_file_reader *r, enum xevb_file_state s)
{
	r->info.state = s;
	if (s == XEVB_FILE_CORRUPT && !r->info.broken)
		r->info.broken = XEVB_BROKEN_FILE; /* the header's, the trailer's or the counts' fault */
	return s == XEVB_FILE_CORRUPT ? -EBADMSG : 0;
}

/* Corrupt by a rule an event broke (enum xevb_broken). */
static int broken_event(struct xevb_file_reader *r, int kind)
{
	r->info.broken = (uint32_t)kind;
	return end_as(r, XEVB_FILE_CORRUPT);
}

/* Checks the trailer at r->pos against what was read. */
static int take_trailer(struct xevb_file_reader *r)
{
	const uint8_t *t = r->map + r->pos;
	size_t left = r->size - r->pos;
	struct xevb_file_info *i = &r->info;

	if (left < XL_TRAILER_LEN) {
		xl_fmt(r->err, sizeof(r->err),
		       "%s: cut inside its trailer after %llu events: every event was read", r->path,
		       (unsigned long long)i->events);
		i->cut_bytes = left;
		return end_as(r, XEVB_FILE_CUT);
	}
	if (xl_crc32c(0, t, 44) != xl_ld32(t + 44)) {
		xl_fmt(r->err, sizeof(r->err), "%s: the trailer's checksum is wrong: the file is damaged",
		       r->path);
		return end_as(r, XEVB_FILE_CORRUPT);
	}
	i->trailer_flags = xl_ld32(t + 4);
	i->trailer_events = xl_ld64(t + 8);
	i->trailer_bytes = xl_ld64(t + 16);
	i->end_ns = xl_ld64(t + 24);
	i->trailer_checksum = xl_ld32(t + 40);
	if (left > XL_TRAILER_LEN)
		xl_fmt(r->err, sizeof(r->err), "%s: %zu bytes after the trailer", r->path, left - XL_TRAILER_LEN);
	else if (i->trailer_events != i->events || i->trailer_bytes != i->bytes)
		xl_fmt(r->err, sizeof(r->err),
		       "%s: the trailer counts %llu events, %llu bytes; the file has %llu, %llu", r->path,
		       (unsigned long long)i->trailer_events, (unsigned long long)i->trailer_bytes,
		       (unsigned long long)i->events, (unsigned long long)i->bytes);
	else if (i->trailer_checksum != i->checksum)
		xl_fmt(r->err, sizeof(r->err),
		       "%s: checksum mismatch: the trailer says 0x%08x, the events read give 0x%08x: the file "
		       "is damaged",
		       r->path, i->trailer_checksum, i->checksum);
	else if (xl_ld32(t + 32) != i->run_number || xl_ld32(t + 36) != i->seq)
		xl_fmt(r->err, sizeof(r->err), "%s: the trailer names run %u file %u, the header run %u file %u",
		       r->path, xl_ld32(t + 32), xl_ld32(t + 36), i->run_number, i->seq);
	else
		return end_as(r, XEVB_FILE_CLOSED);
	return end_as(r, XEVB_FILE_CORRUPT);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* No whole event at r->pos: the end of a file without trailer, or a broken one. */
static int take_end(struct xevb_file_reader *r)
{
	const uint8_t *p = r->map + r->pos;
	size_t left = r->size - r->pos;
	bool raw = r->info.format_version == 0;
	static const uint8_t evnt[4] = { 0x45, 0x56, 0x4E, 0x54 };

	if (!left) {
		if (raw)
			return end_as(r, XEVB_FILE_RAW);
		xl_fmt(r->err, sizeof(r->err), "%s: no trailer: cut after %llu whole events (the writer stopped)",
		       r->path, (unsigned long long)r->info.events);
		return end_as(r, XEVB_FILE_CUT);
	}
	/* The start of an event that did not make it whole, or a tail a crash left zero-filled. */
	if (!memcmp(p, evnt, left < 4 ? left : 4) || all_zero(p, left)) {
		r->info.cut_bytes = left;
		xl_fmt(r->err, sizeof(r->err),
		       "%s: cut after %llu whole events: %zu bytes of a partial event at the end", r->path,
		       (unsigned long long)r->info.events, left);
		return end_as(r, raw ? XEVB_FILE_RAW : XEVB_FILE_CUT);
	}
	xl_fmt(r->err, sizeof(r->err),
	       "%s: at byte %zu, after %llu events: neither an event nor the trailer (0x%02x...)", r->path, r->pos,
	       (unsigned long long)r->info.events, p[0]);
	return broken_event(r, XEVB_BROKEN_MAGIC);
}

XEVB_API int xevb_file_reader_next(struct xevb_file_reader *r, const struct xevb_ev **ev)
{
	const uint8_t *p = r->map + r->pos;
	size_t left = r->size - r->pos;
	char msg[XL_ERR_LEN];
	uint32_t tl;
	int rc;

	if (r->info.state != XEVB_FILE_READING)
		return r->info.state == XEVB_FILE_CORRUPT ? -EBADMSG : 0;
	if (left >= 4 && xl_ld32(p) == XL_TRAILER_MAGIC && r->info.format_version)
		return take_trailer(r);
	if (left < 20 || xl_ld32(p) != XL_EVT_MAGIC)
		return take_end(r);
	tl = xl_ld32(p + 16);
	if (tl < XL_EVT_HLEN || tl > r->o.max_event) {
		xl_fmt(r->err, sizeof(r->err), "%s: at byte %zu, after %llu events: total_length %u (32..%u)",
		       r->path, r->pos, (unsigned long long)r->info.events, tl, r->o.max_event);
		return broken_event(r, tl < XL_EVT_HLEN ? XEVB_BROKEN_TOTAL_LEN : XEVB_BROKEN_TOO_BIG);
	}
	if (tl > left)
		return take_end(r);
	rc = xl_ev_decode(&r->ev, p, tl, r->chk.verify || r->chk.fn ? &r->chk : NULL, msg, sizeof(msg));
	if (rc) {
		xl_fmt(r->err, sizeof(r->err), "%s: event at byte %zu (after %llu events): %s", r->path, r->pos,
		       (unsigned long long)r->info.events, msg);
		return rc == -EBADMSG ? broken_event(r, r->ev.broken) : rc;
	}
	r->ev.pub.seq = r->info.events;
	r->info.checksum = xl_crc32c(r->info.checksum, p, tl);
	r->info.events++;
	r->info.bytes += tl;
	r->pos += tl;
	*ev = &r->ev.pub;
	return 1;
}

XEVB_API const struct xevb_file_info *xevb_file_reader_info(const struct xevb_file_reader *r)
{
	return &r->info;
}

XEVB_API const char *xevb_file_reader_error(const struct xevb_file_reader *r)
{
	return r->err;
}

XEVB_API void xevb_file_reader_close(struct xevb_file_reader *r)
{
	if (!r)
		return;
	if (r->map)
		munmap((void *)r->map, r->size);
	xl_ev_release(&r->ev);
	free(r->sources);
	free(r);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb dump`'s filters and output: an event as one line, as tcpdump
 * shows a packet, or as one JSON object per line (JSON Lines); its
 * fragments after it with their payloads in hex (tcpdump -X's layout).
 *
 * JSON: every value printed here is a number, true/false/null, an ISO
 * time or a dotted IPv4 address, never text from the input, so nothing
 * needs escaping. A field that carries text (the file header's
 * builder_name, say) must go through a JSON string escaper first.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include "cmd/dump_opts.h"

static bool in_map(const uint8_t *map, uint32_t id)
{
	return id < XEVB_MAX_SOURCES && (map[id / 8] >> (id % 8)) & 1;
}

bool dump_match(const struct dump_filter *f, const struct xevb_ev *ev)
{
	bool hit;

	if (ev->event_id < f->ev_lo || ev->event_id > f->ev_hi)
		return false;
	if (f->incomplete_only && !(ev->flags & XEVB_EV_INCOMPLETE))
		return false;
	if (f->have_src) {
		struct xevb_ev_frag fr;

		hit = false;
		for (uint32_t i = 0; i < ev->n_frags && !hit; i++)
			hit = !xevb_ev_frag(ev, i, &fr) && in_map(f->src, fr.source_id);
		if (!hit)
			return false;
	}
	if (f->have_miss) {
		hit = false;
		for (uint32_t i = 0; i < ev->n_missing && !hit; i++) {
			int id = xevb_ev_missing(ev, i);
			hit = id >= 0 && in_map(f->miss, (uint32_t)id);
		}
		if (!hit)
			return false;
	}
	return true;
}

void dump_verify(const struct dump_fmt *fmt, const struct xevb_ev *ev, struct dump_check *chk)
{
	int bad = -1;

	chk->verified = fmt->verify;
	chk->bad_source = -1;
	if (fmt->verify && xevb_ev_verify(ev, &bad) == -EBADMSG)
		chk->bad_source = bad;
}

void dump_time(char *buf, size_t len, uint32_t how, uint64_t ns)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	size_t n;

	if (how == DUMP_TIME_NS || !gmtime_r(&s, &tm)) {
		snprintf(buf, len, "%" PRIu64, ns);
		return;
	}
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%09uZ", (unsigned)(ns % 1000000000u));
}

/* "127.0.0.1:45678", or NULL for an event from a file (no builder address). */
static const char *builder_str(const struct xevb_ev *ev, char *buf, size_t len)
{
	struct in_addr a = { .s_addr = ev->builder_addr };
	char ip[INET_ADDRSTRLEN];

	if (!ev->builder_addr && !ev->builder_port)
		return NULL;
	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ev->builder_port);
	return buf;
}

static void print_missing(FILE *out, const struct xevb_ev *ev, const char *sep)
{
	for (uint32_t i = 0; i < ev->n_missing; i++)
		fprintf(out, "%s%d", i ? sep : "", xevb_ev_missing(ev, i));
}

static void line_text(FILE *out, const struct dump_fmt *fmt, const struct xevb_ev *ev,
		      const struct dump_check *chk)
{
	char t[48], b[32];
	const char *bs = builder_str(ev, b, sizeof(b));

	dump_time(t, sizeof(t), fmt->time, ev->build_ns);
	fprintf(out, "%s run %u event %u %s %u/%u bytes %u builder %s", t, ev->run_number, ev->event_id,
		ev->flags & XEVB_EV_INCOMPLETE ? "INCOMPLETE" : "complete", ev->n_frags, ev->n_expected,
		ev->length, bs ? bs : "-");
	if (chk->verified && chk->bad_source >= 0)
		fprintf(out, " CRC-BAD source %d", chk->bad_source);
	else if (chk->verified)
		fputs(" crc ok", out);
	if (ev->n_missing) {
		fputs(" missing ", out);
		print_missing(out, ev, ",");
	}
}

static void line_json(FILE *out, const struct xevb_ev *ev, const struct dump_check *chk)
{
	char t[48], b[32];
	const char *bs = builder_str(ev, b, sizeof(b));

	dump_time(t, sizeof(t), DUMP_TIME_ISO, ev->build_ns);
	fprintf(out,
		"{\"time\":\"%s\",\"build_ns\":%" PRIu64 ",\"run\":%u,\"event_id\":%u,\"seq\":%" PRIu64
		",\"flags\":%u,\"complete\":%s,\"frags\":%u,\"expected\":%u,\"bytes\":%u,\"builder\":",
		t, ev->build_ns, ev->run_number, ev->event_id, ev->seq, ev->flags,
		ev->flags & XEVB_EV_INCOMPLETE ? "false" : "true", ev->n_frags, ev->n_expected, ev->length);
	if (bs)
		fprintf(out, "\"%s\"", bs);
	else
		fputs("null", out);
	fputs(",\"missing\":[", out);
	print_missing(out, ev, ",");
	fputc(']', out);
	if (chk->verified) {
		fprintf(out, ",\"crc_ok\":%s,\"bad_source\":", chk->bad_source >= 0 ? "false" : "true");
		if (chk->bad_source >= 0)
			fprintf(out, "%d", chk->bad_source);
		else
			fputs("null", out);
	}
}

/* tcpdump -X: offset, 16 bytes in groups of 2, the printable ones as text. */
static void hex_lines(FILE *out, const uint8_t *p, uint32_t n)
{
	static const char hx[] = "0123456789abcdef";

	for (uint32_t off = 0; off < n; off += 16) {
		char hexs[41], asc[17];
		uint32_t k = n - off < 16 ? n - off : 16, h = 0;

		memset(hexs, ' ', sizeof(hexs));
		for (uint32_t j = 0; j < k; j++) {
			uint8_t c = p[off + j];
			hexs[h++] = hx[c >> 4];
			hexs[h++] = hx[c & 15];
			h += j & 1;
			asc[j] = c >= 0x20 && c < 0x7f ? (char)c : '.';
		}
		hexs[39] = 0;
		asc[k] = 0;
		fprintf(out, "\t0x%04x:  %s  %s\n", off, hexs, asc);
	}
}

static void hex_string(FILE *out, const uint8_t *p, uint32_t n)
{
	static const char hx[] = "0123456789abcdef";

	for (uint32_t i = 0; i < n; i++) {
		fputc(hx[p[i] >> 4], out);
		fputc(hx[p[i] & 15], out);
	}
}

/* Fragment f: a line and its payload, or a JSON object. first: the first one printed. */
static void frag_out(FILE *out, const struct dump_fmt *fmt, const struct xevb_ev_frag *f, bool first)
{
	uint32_t shown = fmt->snap && fmt->snap < f->length ? fmt->snap : f->length;
	uint32_t crc = fmt->verify ? xevb_ev_crc32c(0, f->payload, f->length) : 0;

	if (fmt->json) {
		fprintf(out, "%s{\"source_id\":%u,\"length\":%u,\"crc32c\":%u", first ? "" : ",", f->source_id,
			f->length, f->crc32c);
		if (fmt->verify)
			fprintf(out, ",\"crc_ok\":%s", crc == f->crc32c ? "true" : "false");
		fputs(",\"payload\":\"", out);
		hex_string(out, f->payload, shown);
		fprintf(out, "\",\"payload_more\":%u}", f->length - shown);
		return;
	}
	fprintf(out, "  source %u length %u crc32c 0x%08x", f->source_id, f->length, f->crc32c);
	if (fmt->verify && crc == f->crc32c)
		fputs(" ok", out);
	else if (fmt->verify)
		fprintf(out, " BAD (the payload gives 0x%08x)", crc);
	fputc('\n', out);
	hex_lines(out, f->payload, shown);
	if (shown < f->length)
		fprintf(out, "\t(%u more bytes; --snap 0 shows all)\n", f->length - shown);
}

static void frags_out(FILE *out, const struct dump_fmt *fmt, const struct xevb_ev *ev)
{
	const struct dump_filter *flt = fmt->flt;
	struct xevb_ev_frag f;
	bool first = true;

	for (uint32_t i = 0; i < ev->n_frags; i++) {
		if (xevb_ev_frag(ev, i, &f))
			break;
		if (flt && flt->have_src && !in_map(flt->src, f.source_id))
			continue;
		frag_out(out, fmt, &f, first);
		first = false;
	}
}

void dump_event(FILE *out, const struct dump_fmt *fmt, const struct xevb_ev *ev, const struct dump_check *chk)
{
	if (!fmt->json) {
		line_text(out, fmt, ev, chk);
		fputc('\n', out);
		if (fmt->fragments)
			frags_out(out, fmt, ev);
		return;
	}
	line_json(out, ev, chk);
	if (fmt->fragments) {
		fputs(",\"fragments\":[", out);
		frags_out(out, fmt, ev);
		fputc(']', out);
	}
	fputs("}\n", out);
}

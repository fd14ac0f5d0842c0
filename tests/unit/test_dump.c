// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb dump`: its option table (ranges, the options that go together,
 * exit status 2 with a reason), its filters and its output (the line, the
 * JSON object, the fragments in hex, --verify) on events made by the
 * tools' own encoder and viewed through libxevb.
 */
#include <errno.h>
#include "test_lib.h"
#include "cmd/dump_opts.h"
#include "../common/capture.h"
#include "../common/cli_rig.h"

TestSuite(dump, .timeout = 10);

/* Criterion's cr_assert takes no expression that starts with '!'. */
static bool no(bool x)
{
	return !x;
}

static struct dump_cfg cfg;
static char errbuf[4096];
static const uint16_t sources[] = { 3, 5, 7, 9, 11, 13 };
static const uint16_t lens[] = { 0, 1, 2, 3, 20, 100 };

struct call {
	int argc;
	char **argv;
};

static int call_parse(void *arg)
{
	struct call *c = arg;

	return dump_opts_parse(c->argc, c->argv, &cfg);
}

static int run(const char *const *args)
{
	char *argv[64] = { "dump" };
	struct call c = { .argc = 1, .argv = argv };

	for (; args[c.argc - 1] && c.argc < 63; c.argc++)
		argv[c.argc] = (char *)args[c.argc - 1];
	return cli_capture(call_parse, &c, errbuf, sizeof(errbuf));
}
#define DUMP(...) run((const char *const[]){ __VA_ARGS__, NULL })

static void refused(int rc, const char *says)
{
	cr_assert(eq(int, rc, 2), "accepted; stderr '%s'", errbuf);
	cr_assert(tl_has(errbuf, says), "'%s' does not say '%s'", errbuf, says);
}

Test(dump, table_rows_and_defaults)
{
	unsigned tune;

	cr_assert(eq(u32, cli_check_rows(&dump_cmd, &tune), 24));
	cr_assert(eq(u32, tune, 0));
	cr_assert(eq(int, DUMP("--input", "a.xevb"), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.n_inputs, 1));
	cr_assert(eq(u32, cfg.fmt.snap, 64));
	cr_assert(eq(u32, cfg.credits, 64));
	cr_assert(eq(u32, cfg.flt.ev_lo, 0));
	cr_assert(eq(u32, cfg.flt.ev_hi, UINT32_MAX));
	cr_assert(eq(u32, cfg.fmt.time, DUMP_TIME_ISO));
	cr_assert(no(cfg.flt.have_src || cfg.flt.have_miss || cfg.flt.incomplete_only));
	cr_assert(eq(ptr, (void *)cfg.fmt.flt, &cfg.flt));
}

Test(dump, options_taken)
{
	cr_assert(eq(int,
		     DUMP("-r", "a", "-r", "b", "--events", "10-20", "-s", "0-2,9", "--missing", "7", "-f",
			  "--snap", "0", "--verify", "-t", "ns", "-j", "-c", "5"),
		     -1),
		  "%s", errbuf);
	cr_assert(eq(u32, cfg.n_inputs, 2));
	cr_assert(eq(str, (char *)cfg.inputs[1], "b"));
	cr_assert(eq(u32, cfg.flt.ev_lo, 10));
	cr_assert(eq(u32, cfg.flt.ev_hi, 20));
	cr_assert(cfg.flt.have_src && cfg.flt.have_miss);
	cr_assert(eq(u8, cfg.flt.src[0], 0x07));
	cr_assert(eq(u8, cfg.flt.src[1], 0x02));
	cr_assert(eq(u8, cfg.flt.miss[0], 0x80));
	cr_assert(cfg.fmt.fragments && cfg.fmt.verify && cfg.fmt.json);
	cr_assert(eq(u32, cfg.fmt.snap, 0));
	cr_assert(eq(u32, cfg.fmt.time, DUMP_TIME_NS));
	cr_assert(eq(u64, cfg.count, 5));
	cr_assert(eq(int, DUMP("-r", "a", "--events", "7"), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.flt.ev_lo, 7));
	cr_assert(eq(u32, cfg.flt.ev_hi, 7));
	cr_assert(eq(int, DUMP("-r", "a", "--events", "4294967295-"), -1), "%s", errbuf);
	cr_assert(eq(u32, cfg.flt.ev_lo, UINT32_MAX));
	cr_assert(eq(u32, cfg.flt.ev_hi, UINT32_MAX));
	cr_assert(eq(int, DUMP("--listen", "127.0.0.1:0", "--ctl-port", "0", "--credits", "8", "--until-close"),
		     -1),
		  "%s", errbuf);
	cr_assert(cfg.ctl_port_given && cfg.until_close);
	cr_assert(eq(u32, cfg.ctl_port, 0));
	cr_assert(eq(int, DUMP("--config", "run.ini", "--id", "2"), -1), "%s", errbuf);
}

Test(dump, usage_errors_say_why)
{
	refused(DUMP("--json"), "give --input FILE");
	refused(DUMP("-r", "a", "--listen", "127.0.0.1:5000"), "not both");
	refused(DUMP("-r", "a", "--events", "9-3"), "starts after it ends");
	refused(DUMP("-r", "a", "--events", "x"), "ids 0..4294967295");
	refused(DUMP("-r", "a", "--events", "4294967296"), "not an event id range");
	refused(DUMP("-r", "a", "--events", "1-2-3"), "not an event id range");
	refused(DUMP("-r", "a", "--credits", "8"), "go with --listen");
	refused(DUMP("-r", "a", "--until-close"), "go with --listen");
	refused(DUMP("-r", "a", "--duration", "3"), "go with --listen");
	refused(DUMP("-r", "a", "--snap", "8"), "give --fragments too");
	refused(DUMP("-r", "a", "--source-id", "4096"), "4095");
	refused(DUMP("-r", "a", "--time", "local"), "iso|ns");
	refused(DUMP("-r", "a", "--count", "0"), "--count");
	refused(DUMP("--listen", "localhost:5000"), "IPv4-ADDR:PORT");
	refused(DUMP("--listen", "127.0.0.1:65536"), "0..65535");
	refused(DUMP("--listen", "127.0.0.1:1", "--dfm", "127.0.0.1:0"), "1..65535");
	refused(DUMP("--listen", "127.0.0.1:1", "--no-ctl", "--dfm", "127.0.0.1:9"), "--no-ctl");
	refused(DUMP("--listen", "127.0.0.1:1", "--id", "3"), "goes with --config");
	refused(DUMP("-r", "a", "extra"), "extra");
}

/* Event ev_id of run 42 over sources 3..13, absent the sources of bit mask absent; a view of it. */
static struct xevb_ev *event(uint32_t ev_id, uint64_t absent, uint8_t **buf)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	size_t len;
	struct xevb_ev *ev;

	*buf = tl_encode(42, ev_id, 6, sources, lens, absent, &len);
	ev = xevb_ev_parse(*buf, len, err);
	cr_assert(not(eq(ptr, ev, NULL)), "%s", err);
	return ev;
}

static void set_ids(uint8_t *map, const uint16_t *ids, uint32_t n)
{
	memset(map, 0, XEVB_MAX_SOURCES / 8);
	for (uint32_t i = 0; i < n; i++)
		map[ids[i] / 8] |= (uint8_t)(1u << (ids[i] % 8));
}

Test(dump, filters)
{
	struct dump_filter f = { .ev_lo = 0, .ev_hi = UINT32_MAX };
	uint8_t *b1, *b2;
	struct xevb_ev *whole = event(1000, 0, &b1), *inc = event(1001, 0x12, &b2); /* 5 and 11 missing */

	cr_assert(dump_match(&f, whole) && dump_match(&f, inc));
	f.ev_lo = f.ev_hi = 1001;
	cr_assert(no(dump_match(&f, whole)) && dump_match(&f, inc));
	f.ev_lo = 0;
	f.ev_hi = UINT32_MAX;
	f.incomplete_only = true;
	cr_assert(no(dump_match(&f, whole)) && dump_match(&f, inc));
	f.incomplete_only = false;
	f.have_src = true;
	set_ids(f.src, (const uint16_t[]){ 5 }, 1);
	cr_assert(dump_match(&f, whole) && no(dump_match(&f, inc)), "a source missing is not a fragment of it");
	set_ids(f.src, (const uint16_t[]){ 4, 7 }, 2);
	cr_assert(dump_match(&f, whole) && dump_match(&f, inc));
	set_ids(f.src, (const uint16_t[]){ 4000 }, 1);
	cr_assert(no(dump_match(&f, whole)) && no(dump_match(&f, inc)));
	f.have_src = false;
	f.have_miss = true;
	set_ids(f.miss, (const uint16_t[]){ 11 }, 1);
	cr_assert(no(dump_match(&f, whole)) && dump_match(&f, inc));
	set_ids(f.miss, (const uint16_t[]){ 7 }, 1);
	cr_assert(no(dump_match(&f, inc)));
	xevb_ev_free(whole);
	xevb_ev_free(inc);
	free(b1);
	free(b2);
}

struct print {
	const struct dump_fmt *fmt;
	const struct xevb_ev *ev;
	const struct dump_check *chk;
};

static void print_fn(FILE *f, const void *arg)
{
	const struct print *p = arg;

	dump_event(f, p->fmt, p->ev, p->chk);
}

static char *printed(const struct dump_fmt *fmt, const struct xevb_ev *ev)
{
	struct dump_check chk;
	struct print p = { fmt, ev, &chk };

	dump_verify(fmt, ev, &chk);
	return capture_text(print_fn, &p);
}

Test(dump, one_line_per_event)
{
	struct dump_fmt fmt = { .snap = 64 };
	uint8_t *b1, *b2;
	struct xevb_ev *whole = event(1000, 0, &b1), *inc = event(1001, 0x12, &b2);
	char want[256], *s;

	/* tl_encode builds event N at 1700000000 s + N ns */
	snprintf(want, sizeof(want),
		 "2023-11-14T22:13:20.000001000Z run 42 event 1000 complete 6/6 bytes %u builder -\n",
		 whole->length);
	s = printed(&fmt, whole);
	cr_assert(eq(str, s, want));
	free(s);
	fmt.time = DUMP_TIME_NS;
	fmt.verify = true;
	snprintf(want, sizeof(want),
		 "1700000000000001001 run 42 event 1001 INCOMPLETE 4/6 bytes %u builder - crc ok missing 5,11\n",
		 inc->length);
	s = printed(&fmt, inc);
	cr_assert(eq(str, s, want));
	free(s);
	xevb_ev_free(whole);
	xevb_ev_free(inc);
	free(b1);
	free(b2);
}

/* Fragment of source sid as --json --snap 2 --verify shows it. */
static int frag_json(char *buf, size_t len, const struct xevb_ev *ev, uint16_t sid)
{
	struct xevb_ev_frag f;
	uint32_t shown;
	int n;

	cr_assert(eq(int, xevb_ev_find(ev, sid, &f), 0));
	shown = f.length < 2 ? f.length : 2;
	n = snprintf(buf, len, "{\"source_id\":%u,\"length\":%u,\"crc32c\":%u,\"crc_ok\":true,\"payload\":\"", sid,
		     f.length, f.crc32c);
	for (uint32_t i = 0; i < shown; i++)
		n += snprintf(buf + n, len - (size_t)n, "%02x", tl_byte(ev->event_id, sid, i));
	return n + snprintf(buf + n, len - (size_t)n, "\",\"payload_more\":%u}", f.length - shown);
}

Test(dump, json_lines)
{
	struct dump_fmt fmt = { .json = true, .verify = true, .fragments = true, .snap = 2 };
	uint8_t *b;
	struct xevb_ev *inc = event(1001, 0x12, &b);
	char want[2048], *s;
	int n;

	n = snprintf(want, sizeof(want),
		     "{\"time\":\"2023-11-14T22:13:20.000001001Z\",\"build_ns\":1700000000000001001,\"run\":42,"
		     "\"event_id\":1001,\"seq\":0,\"flags\":1,\"complete\":false,\"frags\":4,\"expected\":6,"
		     "\"bytes\":%u,\"builder\":null,\"missing\":[5,11],\"crc_ok\":true,\"bad_source\":null,"
		     "\"fragments\":[",
		     inc->length);
	for (int i = 0; i < 6; i++) {
		if (sources[i] == 5 || sources[i] == 11)
			continue;
		if (sources[i] != 3)
			want[n++] = ',';
		n += frag_json(want + n, sizeof(want) - (size_t)n, inc, sources[i]);
	}
	snprintf(want + n, sizeof(want) - (size_t)n, "]}\n");
	s = printed(&fmt, inc);
	cr_assert(eq(str, s, want));
	free(s);
	xevb_ev_free(inc);
	free(b);
}

Test(dump, fragments_in_hex_and_verify)
{
	struct dump_fmt fmt = { .fragments = true, .verify = true, .snap = 18 };
	struct dump_filter flt = { .ev_hi = UINT32_MAX, .have_src = true };
	uint8_t *b;
	struct xevb_ev *ev = event(1000, 0, &b);
	struct xevb_ev_frag f;
	struct dump_check chk;
	char line[128], *s;

	set_ids(flt.src, (const uint16_t[]){ 13 }, 1);
	fmt.flt = &flt;
	s = printed(&fmt, ev);
	cr_assert(eq(int, xevb_ev_find(ev, 13, &f), 0));
	snprintf(line, sizeof(line), "\n  source 13 length 100 crc32c 0x%08x ok\n\t0x0000:  %02x%02x ", f.crc32c,
		 tl_byte(1000, 13, 0), tl_byte(1000, 13, 1));
	cr_assert(tl_has(s, line), "%s lacks %s", s, line);
	cr_assert(tl_has(s, "\n\t0x0010:  "), "%s", s);
	cr_assert(tl_has(s, "\t(82 more bytes; --snap 0 shows all)\n"), "%s", s);
	cr_assert(no(tl_has(s, "source 3 ")), "only the sources of --source-id: %s", s);
	free(s);

	/* a damaged payload byte: the event names its source, the fragment its CRC */
	((uint8_t *)f.payload)[5] ^= 0xff;
	dump_verify(&fmt, ev, &chk);
	cr_assert(chk.verified);
	cr_assert(eq(int, chk.bad_source, 13));
	s = printed(&fmt, ev);
	cr_assert(tl_has(s, " CRC-BAD source 13\n"), "%s", s);
	cr_assert(tl_has(s, " BAD (the payload gives 0x"), "%s", s);
	free(s);
	fmt.verify = false;
	dump_verify(&fmt, ev, &chk);
	cr_assert(no(chk.verified));
	cr_assert(eq(int, chk.bad_source, -1));
	xevb_ev_free(ev);
	free(b);
}

Test(dump, hex_layout)
{
	struct dump_fmt fmt = { .fragments = true, .snap = 0 };
	uint8_t *b;
	struct xevb_ev *ev = event(1000, 0, &b);
	char *s = printed(&fmt, ev), want[128];

	/* source 9: 3 bytes, padded so that the text column stays where a full line has it */
	snprintf(want, sizeof(want), "\n\t0x0000:  %02x%02x %02x%34s...\n", tl_byte(1000, 9, 0),
		 tl_byte(1000, 9, 1), tl_byte(1000, 9, 2), "");
	cr_assert(tl_has(s, want), "%s lacks '%s'", s, want);
	cr_assert(tl_has(s, "\t0x0060:  "), "100 bytes, 7 lines: %s", s);
	cr_assert(no(tl_has(s, "more bytes")), "%s", s);
	free(s);
	xevb_ev_free(ev);
	free(b);
}

Test(dump, time)
{
	char t[48];

	dump_time(t, sizeof(t), DUMP_TIME_ISO, 0);
	cr_assert(eq(str, t, "1970-01-01T00:00:00.000000000Z"));
	dump_time(t, sizeof(t), DUMP_TIME_ISO, 1700000000123456789ull);
	cr_assert(eq(str, t, "2023-11-14T22:13:20.123456789Z"));
	dump_time(t, sizeof(t), DUMP_TIME_NS, 42);
	cr_assert(eq(str, t, "42"));
}

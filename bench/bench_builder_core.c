// SPDX-License-Identifier: GPL-2.0-only
/*
 * Builder-core micro-benchmark: the core alone, on one core, on synthetic
 * MEPs pre-generated in a ring of frames (2 KiB apart, like UMEM chunks).
 * Each lap feeds every frame of the ring once, sources interleaved, and the
 * builder hands every frame back through frame_release before the next lap
 * reuses it. Between laps (untimed) the event_ids in the ring are moved on,
 * as a NIC writing fresh packets into the same frames would.
 *
 * Two modes per case: "add" (xevb_builder_add_mep on MEPs parsed once up
 * front) and "parse" (xevb_classify + xevb_builder_add_mep per frame), so
 * the parse cost shows separately. Output: one JSON object per case on
 * stdout. run_lap() holds exactly the measured work: callgrind's
 * --toggle-collect=run_lap counts its instructions (bench-builder-core.sh).
 *
 * --drop PCT: the live overload regime. The veth drops PCT % of the MEPs
 * before XDP (random, per frame), so nearly every event times out
 * incomplete; window 65536, 20 ms timeout on a simulated clock that
 * advances --frame-ns per offered frame (default 312: 3.2 Mfr/s offered, as
 * the generator does), frame indices from a pool of 65536 (like the UMEM:
 * a frame is reused only once the builder released it; none free = dropped
 * as the RX ring would). Reports ns per received fragment and per received
 * frame. The figures that matter here are cache misses: see
 * bench-builder-core.sh (callgrind --cache-sim=yes).
 *
 * --forward: every event is made one by one and encoded into a 256 KiB
 * buffer as the output stage does for a farm node (xevb_event_encode_into,
 * stamped with the real-time clock, payloads copied); the buffer starts
 * over once it holds 64 KiB, where the output would send it. So run_lap
 * holds the builder's whole per-event work but the send itself.
 *
 * usage: bench_builder_core [--case l1|hlt|all] [--mode add|parse|both]
 *                           [--frags N]  (fragments per case and mode)
 *                           [--drop PCT] [--frame-ns NS] [--forward]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "evb/builder.h"
#include <xevb/bytes.h>
#include "base/cli.h"
#include "wire/event_codec.h"
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"

#define CHUNK 2048

struct bcase {
	const char *name;
	uint32_t n_src, pack, payload, groups;
};

static const struct bcase cases[] = {
	{ "l1", 126, 25, 32, 8 },   /* L1-like: 126 sources, 25 x 32 B per MEP */
	{ "hlt", 323, 10, 100, 4 }, /* HLT-like: 323 sources, 10 x 100 B */
};

struct ring {
	const struct bcase *c;
	uint32_t n;   /* frames */
	uint8_t *mem; /* n * CHUNK */
	uint32_t *len;
	struct xevb_pkt_info *pi;   /* parsed once, for "add" mode */
	struct xevb_frag_ref *refs; /* n * pack */
	uint32_t step;              /* event_ids per lap */
};

static struct xevb_parse_cfg pcfg = { .udp_port = XEVB_DEFAULT_UDP_PORT, .ip_proto = XEVB_DEFAULT_IP_PROTO };
static uint64_t n_emitted, frags_emitted, n_released;

/* --drop mode: the live regime (see the top). */
#define LIVE_FRAMES     65536u
#define LIVE_WINDOW     65536u
#define LIVE_TIMEOUT_NS 20000000ull
static uint32_t drop_pct, frame_ns = 312;
static uint32_t pool[LIVE_FRAMES], n_pool; /* free frame indices */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t fed_frames, fed_frags, pool_empty;

static inline uint32_t rnd100(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % 100);
}

static uint64_t bytes_emitted;

static void die(const char *m)
{
	fprintf(stderr, "bench_builder_core: %s\n", m);
	exit(1);
}

/* Sizes the event, as `xevb build --no-forward` does. */
static void on_emit(void *ctx, const struct xevb_event *ev)
{
	(void)ctx;
	n_emitted++;
	frags_emitted += ev->n_frags;
	bytes_emitted += xevb_event_wire_size_fast(ev);
}

/* A run of events booked together, counted whole, as --no-forward does. */
static void on_emit_run(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes)
{
	(void)ctx;
	n_emitted += n;
	frags_emitted += (uint64_t)first->n_frags * n;
	bytes_emitted += wire_bytes;
}

/* --forward: the output's send buffer (output.c: SEND_BUF, FLUSH_AT). */
#define FWD_BUF      (256u << 10)
#define FWD_FLUSH_AT (64u << 10)
static bool forward;
static uint8_t *fwd_buf;
static size_t fwd_len;

/* Encodes the event into the send buffer, as emit_buffered does. */
static void on_emit_fwd(void *ctx, const struct xevb_event *ev)
{
	size_t total;

	(void)ctx;
	if (xevb_event_encode_into(ev, xevb_realtime_ns(), fwd_buf + fwd_len, FWD_BUF - fwd_len, &total))
		die("encode failed");
	n_emitted++;
	frags_emitted += ev->n_frags;
	bytes_emitted += total;
	fwd_len += total;
	if (fwd_len >= FWD_FLUSH_AT)
		fwd_len = 0;
}

static void on_release(void *ctx, uint32_t f)
{
	(void)ctx;
	n_released++;
	if (drop_pct)
		pool[n_pool++] = f;
}

static void ring_init(struct ring *r, const struct bcase *c)
{
	r->c = c;
	r->n = c->n_src * c->groups;
	r->step = c->pack * c->groups;
	r->mem = aligned_alloc(4096, (size_t)r->n * CHUNK);
	r->len = calloc(r->n, sizeof(*r->len));
	r->pi = calloc(r->n, sizeof(*r->pi));
	r->refs = calloc((size_t)r->n * c->pack, sizeof(*r->refs));
	if (!r->mem || !r->len || !r->pi || !r->refs)
		die("out of memory");
	for (uint32_t g = 0; g < c->groups; g++) {
		for (uint32_t s = 0; s < c->n_src; s++) {
			uint32_t f = g * c->n_src + s;
			struct xevb_mep_params p = {
				.saddr = 0x0a000001,
				.daddr = 0x0a000002,
				.ip_proto = XEVB_DEFAULT_IP_PROTO,
				.source_id = (uint16_t)(s * 3), /* spread over the id space */
				.run_number = 1,
				.packet_seq = g,
				.first_event_id = g * c->pack,
				.n_frags = c->pack,
				.frag_size = (uint16_t)c->payload,
			};
			ssize_t len = xevb_write_frame(r->mem + (size_t)f * CHUNK, CHUNK, &p);

			if (len <= 0)
				die("MEP does not fit a chunk");
			r->len[f] = (uint32_t)len;
			if (xevb_classify(r->mem + (size_t)f * CHUNK, r->mem + (size_t)f * CHUNK + len,
					  (uint32_t)len, &pcfg, &r->pi[f],
					  &r->refs[(size_t)f * c->pack]) != XEVB_RES_MEP)
				die("generated MEP does not parse");
		}
	}
}

/* The next lap's event_ids, in the frames and in the pre-parsed refs. */
static void __attribute__((noinline)) ring_advance(struct ring *r)
{
	for (uint32_t f = 0; f < r->n; f++) {
		struct xevb_frag_ref *fr = &r->refs[(size_t)f * r->c->pack];
		uint8_t *fm = r->mem + (size_t)f * CHUNK;

		for (uint32_t j = 0; j < r->c->pack; j++) {
			fr[j].event_id += r->step;
			xevb_st32(fm + fr[j].payload_off - 12, fr[j].event_id);
		}
		r->pi[f].first_event_id += r->step;
	}
}

/* add_frame: ring frame F to the builder as frame IDX, parsed here (parse)
 * or pre-parsed. Inlined: the measured loop stays one loop. */
static inline __attribute__((always_inline)) void add_frame(struct xevb_builder *b, struct ring *r, uint32_t f,
							    uint32_t idx, int parse, uint64_t now)
{
	static struct xevb_frag_ref refs[XEVB_MAX_FRAGS_PER_MEP];
	const uint8_t *fm = r->mem + (size_t)f * CHUNK;
	uint32_t pack = r->c->pack;

	if (parse) {
		struct xevb_pkt_info pi;

		if (xevb_classify(fm, fm + r->len[f], r->len[f], &pcfg, &pi, refs) != XEVB_RES_MEP)
			die("parse failed");
		xevb_builder_add_mep(b, idx, fm, &pi, refs, now);
	} else {
		xevb_builder_add_mep(b, idx, fm, &r->pi[f], &r->refs[(size_t)f * pack], now);
	}
}

static inline void lap(struct xevb_builder *b, struct ring *r, int parse, uint64_t *now)
{
	uint32_t pack = r->c->pack, rx = 0;

	for (uint32_t f = 0; f < r->n; f++) {
		if (drop_pct) {
			uint32_t idx;

			*now += frame_ns;
			if (rnd100() < drop_pct)
				continue;
			if (!n_pool) {
				pool_empty++;
				continue;
			}
			idx = pool[--n_pool];
			fed_frames++;
			fed_frags += pack;
			add_frame(b, r, f, idx, parse, *now);
			if ((++rx & 63) == 0)
				xevb_builder_poll(b, *now);
			continue;
		}
		add_frame(b, r, f, f, parse, *now);
		/* one batch = 64 frames: one clock read and one poll, as a receive loop would */
		if ((f & 63) == 63) {
			*now += 1000;
			xevb_builder_poll(b, *now);
		}
	}
}

static void __attribute__((noinline)) run_lap(struct xevb_builder *b, struct ring *r, int parse, uint64_t *now)
{
	lap(b, r, parse, now);
}

/* --drop mode's warm-up: not run_lap, so callgrind counts only measured laps. */
static void __attribute__((noinline)) warm_lap(struct xevb_builder *b, struct ring *r, int parse, uint64_t *now)
{
	lap(b, r, parse, now);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct result {
	double frags_per_s, events_per_s, ns_per_frag, ns_per_frame;
	uint64_t frags, events, frames, incomplete, pool_empty;
	uint64_t fed; /* through run_lap, warm-up lap included: callgrind's divisor */
};

static struct result run_case(const struct bcase *c, int parse, uint64_t want_frags)
{
	uint16_t *src = malloc(sizeof(*src) * c->n_src);
	struct ring r;
	struct result res = { 0 };
	uint64_t now = 1, frags_per_lap, laps;
	double t = 0;

	ring_init(&r, c);
	fed_frames = fed_frags = pool_empty = 0;
	rng = 0x9e3779b97f4a7c15ull;
	for (uint32_t s = 0; s < c->n_src; s++)
		src[s] = (uint16_t)(s * 3);
	struct xevb_builder_cfg cfg = {
		.sources = src,
		.n_sources = c->n_src,
		.window = 1024,
		.n_frames = r.n,
		.timeout_ns = 1000000000ull,
		.run_number = 1,
		.emit = on_emit,
		.emit_run = on_emit_run,
		.frame_release = on_release,
	};
	if (forward) {
		cfg.emit = on_emit_fwd;
		cfg.emit_run = NULL;
	}
	if (drop_pct) {
		cfg.window = LIVE_WINDOW;
		cfg.n_frames = LIVE_FRAMES;
		cfg.timeout_ns = LIVE_TIMEOUT_NS;
		for (n_pool = 0; n_pool < LIVE_FRAMES; n_pool++)
			pool[n_pool] = LIVE_FRAMES - 1 - n_pool;
	}
	struct xevb_builder *b = xevb_builder_new(&cfg);

	if (!b)
		die("xevb_builder_new");
	frags_per_lap = (uint64_t)r.n * c->pack;
	if (drop_pct) /* received fragments per lap */
		frags_per_lap = frags_per_lap * (100 - drop_pct) / 100;
	laps = (want_frags + frags_per_lap - 1) / frags_per_lap;
	n_emitted = frags_emitted = n_released = 0;
	/*
	 * Warm-up, not counted: one lap, or in --drop mode enough laps that the
	 * window has wrapped (every slot's row was used once: cold, as live).
	 */
	uint64_t warm = drop_pct ? LIVE_WINDOW / r.step + 1 : 1;
	for (uint64_t l = 0; l < warm; l++) {
		(drop_pct ? warm_lap : run_lap)(b, &r, parse, &now);
		ring_advance(&r);
	}
	uint64_t ev0 = n_emitted, fr0 = fed_frames, fg0 = fed_frags;
	for (uint64_t l = 0; l < laps; l++) {
		double t0 = now_s();

		run_lap(b, &r, parse, &now);
		t += now_s() - t0;
		ring_advance(&r);
	}

	const struct xevb_builder_stats *st = xevb_builder_stats(b);
	char msg[256];

	if (!xevb_builder_check(b, msg, sizeof(msg)))
		die(msg);
	if (drop_pct) {
		xevb_builder_flush(b);
		if (!xevb_builder_check(b, msg, sizeof(msg)))
			die(msg);
		if (st->open_events || st->frames_held || n_pool != LIVE_FRAMES ||
		    st->frags_in_events != st->frags_received || st->frags_received != fed_frags)
			die("--drop: fragments lost, or frames not released");
		res.frags = fed_frags - fg0;
		res.frames = fed_frames - fr0;
		res.fed = res.frags;
		res.events = n_emitted - ev0;
		res.incomplete = st->events_incomplete;
		res.pool_empty = pool_empty;
		goto done;
	}
	if (st->events_complete != (laps + 1) * r.step || st->open_events || st->frames_held ||
	    n_released != (laps + 1) * r.n || st->frags_in_events != st->frags_received)
		die("not every event built, or frames not released");
	res.frags = laps * frags_per_lap;
	res.frames = laps * r.n;
	res.fed = (laps + 1) * frags_per_lap;
	res.events = n_emitted - ev0;
done:
	res.frags_per_s = res.frags / t;
	res.events_per_s = res.events / t;
	res.ns_per_frag = t * 1e9 / res.frags;
	res.ns_per_frame = t * 1e9 / res.frames;
	xevb_builder_free(b);
	free(r.mem);
	free(r.len);
	free(r.pi);
	free(r.refs);
	free(src);
	return res;
}

int main(int argc, char **argv)
{
	const char *which = "all", *mode = "both";
	uint64_t frags = 50000000;
	static const struct option opts[] = { { "case", required_argument, NULL, 'c' },
					      { "mode", required_argument, NULL, 'm' },
					      { "frags", required_argument, NULL, 'n' },
					      { "drop", required_argument, NULL, 'd' },
					      { "frame-ns", required_argument, NULL, 't' },
					      { "forward", no_argument, NULL, 'F' },
					      { 0 } };
	int o;

	while ((o = getopt_long(argc, argv, "c:m:n:d:t:F", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			which = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'n':
			frags = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			drop_pct = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 't':
			frame_ns = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'F':
			forward = true;
			break;
		default:
			fprintf(stderr,
				"usage: %s [--case l1|hlt|all] [--mode add|parse|both] [--frags N] [--drop PCT] [--frame-ns NS] [--forward]\n",
				argv[0]);
			return 2;
		}
	}
	if (forward && !(fwd_buf = malloc(FWD_BUF)))
		die("out of memory");
	if (drop_pct >= 100) {
		fprintf(stderr, "bench_builder_core: --drop must be below 100\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bcase *c = &cases[i];
		int do_add = strcmp(mode, "parse") != 0, do_parse = strcmp(mode, "add") != 0;
		struct result a = { 0 }, p = { 0 };

		if (strcmp(which, "all") && strcmp(which, c->name))
			continue;
		if (do_add)
			a = run_case(c, 0, frags);
		if (do_parse)
			p = run_case(c, 1, frags);
		printf("{\"case\": \"%s\", \"sources\": %u, \"frags_per_mep\": %u, \"payload_bytes\": %u, "
		       "\"drop_pct\": %u, \"forward\": %s",
		       c->name, c->n_src, c->pack, c->payload, drop_pct, forward ? "true" : "false");
		if (drop_pct && do_add)
			printf(", \"ns_per_frame\": %.3f, \"frames\": %llu, \"events_incomplete\": %llu, "
			       "\"pool_empty\": %llu",
			       a.ns_per_frame, (unsigned long long)a.frames, (unsigned long long)a.incomplete,
			       (unsigned long long)a.pool_empty);
		if (drop_pct && do_parse)
			printf(", \"parse_ns_per_frame\": %.3f", p.ns_per_frame);
		if (do_add)
			printf(", \"fragments\": %llu, \"fragments_per_s\": %.0f, \"events_per_s\": %.0f, "
			       "\"ns_per_fragment\": %.3f, \"fed_fragments\": %llu",
			       (unsigned long long)a.frags, a.frags_per_s, a.events_per_s, a.ns_per_frag,
			       (unsigned long long)a.fed);
		if (do_parse)
			printf(", \"parse_fragments\": %llu, \"parse_fragments_per_s\": %.0f, "
			       "\"parse_events_per_s\": %.0f, \"parse_ns_per_fragment\": %.3f, "
			       "\"parse_fed_fragments\": %llu",
			       (unsigned long long)p.frags, p.frags_per_s, p.events_per_s, p.ns_per_frag,
			       (unsigned long long)p.fed);
		printf("}\n");
		fflush(stdout);
	}
	return 0;
}

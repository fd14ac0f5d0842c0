// SPDX-License-Identifier: GPL-2.0-only
/*
 * The builder's per-frame cost with and without the XDP meta, user space
 * alone: L1 frames (126 sources, 25 x 32 B records) in 4 kB UMEM-like
 * chunks (data 256 bytes in, the meta in the 16 bytes before it, as the
 * XDP program leaves it), a ring much larger than the last-level cache so
 * every frame arrives cold, as after the kernel's copy on another core.
 * Two modes, the loops of cmd_build.c's handle_batch:
 *   parse  prefetch the frame 2 ahead, xevb_classify, add_mep with refs
 *   meta   prefetch the meta line 4 ahead, xevb_xsk_meta_pi + clear,
 *          add_mep without refs (frags NULL)
 * Between laps (untimed) the event_ids move on and the meta is rewritten,
 * as a NIC and the XDP program would. Prints one JSON object per mode.
 *
 * usage: xsk_meta_cost [--groups G (ring = 126 x G frames, default 64)] [--laps N]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "evb/builder.h"
#include <xevb/bytes.h>
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"
#include "rx/xsk_meta.h"

#define CHUNK    4096
#define HEADROOM 256
#define N_SRC    126
#define PACK     25
#define COOKIE   0x51ed2701u

static const struct xevb_parse_cfg pcfg = { .udp_port = XEVB_DEFAULT_UDP_PORT, .ip_proto = XEVB_DEFAULT_IP_PROTO };
static uint64_t n_emitted, n_released;

static void on_emit(void *ctx, const struct xevb_event *ev)
{
	(void)ctx;
	(void)ev;
	n_emitted++;
}

static void on_emit_run(void *ctx, const struct xevb_event *first, uint32_t n, uint64_t wire_bytes)
{
	(void)ctx;
	(void)first;
	(void)wire_bytes;
	n_emitted += n;
}

static void on_release(void *ctx, uint32_t f)
{
	(void)ctx;
	(void)f;
	n_released++;
}

static void die(const char *m)
{
	fprintf(stderr, "xsk_meta_cost: %s\n", m);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint8_t *mem;
static uint32_t n_frames, flen, step;

static inline uint8_t *frame(uint32_t f)
{
	return mem + (size_t)f * CHUNK + HEADROOM;
}

/* What the XDP program writes in front of frame f. */
static void write_meta(uint32_t f)
{
	struct xevb_pkt_info pi;
	struct xevb_xdp_meta m = { 0 };

	if (xevb_classify(frame(f), frame(f) + flen, flen, &pcfg, &pi, NULL) != XEVB_RES_MEP || !pi.consec)
		die("generated MEP does not parse as consecutive");
	m.check = COOKIE ^ pi.packet_seq;
	m.first_event_id = pi.first_event_id;
	m.mep_off = pi.mep_off;
	m.mep_len = pi.mep_len;
	m.n_frags = pi.n_frags;
	m.flags = XEVB_XDP_META_F_CONSEC;
	memcpy(frame(f) - XEVB_XDP_META_LEN, &m, sizeof(m));
}

static void advance(void)
{
	for (uint32_t f = 0; f < n_frames; f++) {
		uint8_t *p = frame(f) + 14 + 20 + XEVB_MEP_HLEN;

		for (uint32_t j = 0; j < PACK; j++, p += XEVB_REC_HLEN + 32)
			xevb_st32(p, xevb_ld32(p) + step);
		xevb_st32(frame(f) + 14 + 20 + 12, xevb_ld32(frame(f) + 14 + 20 + 12) + 1); /* packet_seq */
		write_meta(f);
	}
}

/* write_frames: every frame's MEP (group g: event g * PACK on, one frame
 * a source) and its metadata, as the first lap sees them. */
static void write_frames(uint32_t groups)
{
	for (uint32_t g = 0; g < groups; g++)
		for (uint32_t s = 0; s < N_SRC; s++) {
			uint32_t f = g * N_SRC + s;
			struct xevb_mep_params p = {
				.saddr = 0x0a000001,
				.daddr = 0x0a000002,
				.ip_proto = XEVB_DEFAULT_IP_PROTO,
				.source_id = (uint16_t)s,
				.run_number = 1,
				.packet_seq = g,
				.first_event_id = g * PACK,
				.n_frags = PACK,
				.frag_size = 32,
			};
			ssize_t len = xevb_write_frame(frame(f), CHUNK - HEADROOM, &p);

			if (len <= 0)
				die("xevb_write_frame");
			flen = (uint32_t)len;
			write_meta(f);
		}
}

static void __attribute__((noinline)) lap(struct xevb_builder *b, int meta, uint64_t *now)
{
	static struct xevb_frag_ref refs[XEVB_MAX_FRAGS_PER_MEP];

	for (uint32_t f = 0; f < n_frames; f++) {
		struct xevb_pkt_info pi;
		const uint8_t *d = frame(f);

		if (meta) {
			if (f + 4 < n_frames) {
				__builtin_prefetch(frame(f + 4) - XEVB_XDP_META_LEN, 1, 3);
				__builtin_prefetch(frame(f + 4) + 64, 0, 3);
			}
			if (xevb_xsk_meta_pi(d, flen, COOKIE, &pi) != XEVB_RES_MEP)
				die("meta refused");
			xevb_xsk_meta_clear((uint8_t *)(uintptr_t)d);
			xevb_builder_add_mep(b, f, d, &pi, NULL, *now);
		} else {
			if (f + 2 < n_frames)
				for (uint32_t off = 0; off < flen; off += 64)
					__builtin_prefetch(frame(f + 2) + off, 0, 3);
			if (xevb_classify(d, d + flen, flen, &pcfg, &pi, refs) != XEVB_RES_MEP)
				die("parse failed");
			xevb_builder_add_mep(b, f, d, &pi, refs, *now);
		}
		if ((f & 63) == 63) {
			*now += 1000;
			xevb_builder_poll(b, *now);
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "groups", required_argument, 0, 'g' },
		{ "laps", required_argument, 0, 'l' },
		{ 0 },
	};
	uint32_t groups = 64, laps = 10;
	uint16_t src[N_SRC];
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'g')
			groups = (uint32_t)strtoul(optarg, NULL, 0);
		else if (c == 'l')
			laps = (uint32_t)strtoul(optarg, NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--groups G] [--laps N]\n", argv[0]);
			return 2;
		}
	}
	if (!groups || groups > 160 || !laps)
		die("--groups 1..160, --laps > 0");
	n_frames = N_SRC * groups;
	step = PACK * groups;
	mem = aligned_alloc(4096, (size_t)n_frames * CHUNK);
	if (!mem)
		die("out of memory");
	memset(mem, 0, (size_t)n_frames * CHUNK);
	write_frames(groups);
	for (uint32_t s = 0; s < N_SRC; s++)
		src[s] = (uint16_t)s;
	for (int round = 0; round < 2; round++)
		for (int meta = 0; meta < 2; meta++) {
			struct xevb_builder_cfg cfg = {
				.sources = src,
				.n_sources = N_SRC,
				.window = 8192,
				.n_frames = n_frames,
				.timeout_ns = 1000000000ull,
				.run_number = 1,
				.emit = on_emit,
				.emit_run = on_emit_run,
				.frame_release = on_release,
			};
			struct xevb_builder *b = xevb_builder_new(&cfg);
			const struct xevb_builder_stats *st;
			uint64_t now = 1, ev0;
			double t = 0;

			if (!b)
				die("xevb_builder_new");
			lap(b, meta, &now); /* warm-up */
			advance();
			ev0 = n_emitted;
			for (uint32_t l = 0; l < laps; l++) {
				double t0 = now_s();

				lap(b, meta, &now);
				t += now_s() - t0;
				advance();
			}
			st = xevb_builder_stats(b);
			if (st->open_events || st->frames_held || st->bad_calls ||
			    n_emitted - ev0 != (uint64_t)laps * step)
				die("not every event built, or a bad call");
			printf("{\"mode\":\"%s\",\"round\":%d,\"frames\":%llu,\"ns_per_frame\":%.1f,\"meps_grouped\":%llu}\n",
			       meta ? "meta" : "parse", round, (unsigned long long)laps * n_frames,
			       t * 1e9 / ((double)laps * n_frames), (unsigned long long)st->meps_grouped);
			xevb_builder_free(b);
			/* The next builder starts at event 0 again: frames as at first. */
			write_frames(groups);
		}
	free(mem);
	return 0;
}

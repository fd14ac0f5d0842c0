/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `xevb dump`: its config (dump_opts.c fills it from the option table),
 * the event filters and the output formats (dump_fmt.c), apart from the
 * command's loops (cmd_dump.c) so that the unit tests reach them.
 */
#ifndef XEVB_DUMP_OPTS_H
#define XEVB_DUMP_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <xevb/wire.h>
#include <xevb/xevb.h>
#include "base/cli.h"

#define DUMP_MAX_INPUTS 1024

enum dump_time { DUMP_TIME_ISO, DUMP_TIME_NS };

/*
 * Which events are shown. An event passes when it passes every filter
 * given: its id in [ev_lo, ev_hi]; INCOMPLETE (incomplete_only); a
 * fragment from at least one source of --source-id; at least one source
 * of --missing missing.
 */
struct dump_filter {
	uint32_t ev_lo, ev_hi;
	bool incomplete_only;
	bool have_src, have_miss;
	uint8_t src[XEVB_MAX_SOURCES / 8];  /* bitmap of --source-id */
	uint8_t miss[XEVB_MAX_SOURCES / 8]; /* bitmap of --missing */
};

/* How an event is printed. */
struct dump_fmt {
	bool json, fragments, verify;
	uint32_t snap; /* payload bytes shown per fragment; 0: all */
	uint32_t time; /* enum dump_time */
	const struct dump_filter *flt;
};

struct dump_cfg {
	struct xevb_common_opts co; /* duration, key file */
	const char *inputs[DUMP_MAX_INPUTS];
	uint32_t n_inputs;
	const char *listen, *ready_file, *dfm, *config;
	uint32_t credits, ctl_port, id;
	bool credits_given, ctl_port_given, id_given, snap_given, no_ctl, until_close, quiet;
	uint64_t count; /* 0: no limit */
	struct dump_fmt fmt;
	struct dump_filter flt;
	/* --source-id and --missing as parsed; the bitmaps are made from them */
	uint16_t src_ids[XEVB_MAX_SOURCES], miss_ids[XEVB_MAX_SOURCES];
	uint32_t n_src_ids, n_miss_ids;
};

extern const struct xevb_cfg_cmd dump_cmd;

/* argv into cfg, the options checked together: -1 to run, else the exit status (0 --help, 2 usage). */
int dump_opts_parse(int argc, char **argv, struct dump_cfg *cfg);

/* Whether ev passes every filter of f. */
bool dump_match(const struct dump_filter *f, const struct xevb_ev *ev);

/*
 * What --verify found in an event: bad_source is the first fragment whose
 * payload does not match its CRC-32C, -1 when all do (or not checked).
 */
struct dump_check {
	bool verified;
	int bad_source;
};
void dump_verify(const struct dump_fmt *fmt, const struct xevb_ev *ev, struct dump_check *chk);

/* One event as a line (or a JSON Lines object), its fragments after it with --fragments. */
void dump_event(FILE *out, const struct dump_fmt *fmt, const struct xevb_ev *ev, const struct dump_check *chk);

/* build_ns as "2023-11-14T22:13:20.000001000Z" (UTC) into buf (at least 32 bytes), or as its number. */
void dump_time(char *buf, size_t len, uint32_t how, uint64_t ns);

#endif

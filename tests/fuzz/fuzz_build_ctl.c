// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness for the builder's control handlers (user/ctl/build_ctl.c):
 * ASSIGN, STATUS, SOURCES and BYE as the DFM sends them, farm nodes' STATUS
 * (credits, Busy), the same messages forged (the DFM's address on another
 * port, another host, another role) and arbitrary datagrams, all through
 * the endpoint's own checks (decoded, and with a key sealed and opened);
 * between them fragments into a real builder core, whose events go to
 * build_ctl_emit, and ticks on a fake clock. No socket: what the handlers
 * send is decoded and checked where it goes.
 *
 * After every step: build_ctl_check (the event table within its bounds,
 * every assigned event finished, lost or open, the backlog bounded); every
 * counter of the JSON only grows; a message not from the DFM (nor a farm
 * node's STATUS) changes nothing but ctl_unexpected, sends nothing, ends
 * nothing; REQUESTs go only to source processes the DFM listed, DONE and
 * STATUS to the DFM or a farm node. The core's books balance throughout.
 *
 *   byte 0: bit 0 key; bits 1-2 farm nodes 0..3; bit 3 fixed run;
 *           bits 4-5 backlog 0, 1, 4, 16; bits 6-7 max re-asks 0..3
 *   byte 1: credits 1 + b (the table then 4096, or bigger)
 *   then steps, op byte and 3 bytes a, b, c:
 *     op % 11: 0 ASSIGN (1 + a % 3 records, from the cursor + (int8)b,
 *                 1 + c % 64 events each, pull a bit 7, run 1 + (c >> 7))
 *              1 STATUS from the DFM (pull a bit 0, peer epoch ours or not)
 *              2 SOURCES (1 + a % 3 processes, ids from b)
 *              3 BYE from the DFM
 *              4 the DFM restarts (new epoch; cursor back by a when b bit 0)
 *              5 a farm node's STATUS (node a, credits b, Busy c bit 0,
 *                our epoch or not c bit 1, done_total c >> 2)
 *              6 forged: op b % 4 as above, from a % 3: the DFM's address
 *                on another port, another host, a farm node as the DFM;
 *                with a bit 2, a message no builder takes (a builder's,
 *                a source's, a farm node's RECEIVED or BYE) instead
 *              7 a MEP of source a % 4: 1 + b % 4 events from an assigned
 *                one (c) or anything (c bit 7)
 *              8 tick: clock += a * 2^b % 24 us; poll the core; tick
 *              9 a datagram of a bytes from the input, from the DFM (b
 *                bit 0) or elsewhere
 *             10 the core times out everything (xevb_builder_expire_all);
 *                with a bit 0, the DFM's BUILDERS or CLEAR (b bit 0), for
 *                sources: counted, nothing else moves (unless its epoch
 *                is new: a restart)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evb/builder.h"
#include <xevb/mep_parse.h>
#include "wire/mep_write.h"
#include "out/output.h"
#include "ctl/build_ctl.h"
#include "base/cli.h"
#include "ctl_fuzz.h"

#define N_FRAMES   256
#define FRAME_SIZE 512
#define DFM_HOST   0xc6120401u /* 198.18.4.1 */
#define ME_HOST    0xc6120201u /* 198.18.2.1 */
#define DFM_PORT   23901
#define RECENT     1024

static uint8_t frames[N_FRAMES][FRAME_SIZE];
static bool held[N_FRAMES];
static uint32_t free_list[N_FRAMES], n_free;
static struct build_ctl *bc;
static struct xevb_builder *core;
static struct xevb_builder_cfg bcfg;
static struct cf_log txlog;
static struct xevb_output out;
static uint32_t recent[RECENT], n_recent, cursor;
static struct cf_peer dfm, sinks[3];
/* The source processes the DFM listed, as sockets see them. */
#define LISTED_MAX 1024 /* the builder keeps 256 */
static struct sockaddr_in listed[LISTED_MAX];
static uint32_t n_listed, credits;
/* Now-values, not counters: still open, a farm node's credits and count, built and not (yet) assigned. */
static const char *const may_fall[] = { "still_open", "credits", "acked", "unassigned_built", NULL };

static void on_release(void *ctx, uint32_t f)
{
	(void)ctx;
	if (f >= N_FRAMES || !held[f])
		CF_FAIL("frame %u released twice or never given", f);
	held[f] = false;
	free_list[n_free++] = f;
}

static void on_emit(void *ctx, const struct xevb_event *ev)
{
	(void)ctx;
	build_ctl_emit(bc, ev);
}

static void check_core(void)
{
	char msg[256];

	if (!xevb_builder_check(core, msg, sizeof(msg)))
		CF_FAIL("the core's books: %s", msg);
}

static void new_core(void)
{
	core = xevb_builder_new(&bcfg);
	if (!core)
		CF_FAIL("xevb_builder_new");
}

static void snapshot(struct cf_nums *n)
{
	static char buf[16384];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	if (!f)
		CF_FAIL("fmemopen");
	build_ctl_json(bc, f);
	fputc(0, f);
	fclose(f);
	buf[sizeof(buf) - 1] = 0;
	/* One number per source process the DFM listed so far: not of a fixed shape, left out. */
	{
		char *u = strstr(buf, "\"unsolicited_frags\":{"), *e = u ? strchr(u, '}') : NULL;

		if (e)
			memmove(u, e + 1, strlen(e + 1) + 1);
	}
	cf_nums_parse(buf, n);
}

static bool is_listed(const struct sockaddr_in *to)
{
	for (uint32_t i = 0; i < n_listed; i++)
		if (listed[i].sin_addr.s_addr == to->sin_addr.s_addr && listed[i].sin_port == to->sin_port)
			return true;
	return false;
}

/* Whatever the handlers sent since the last step went where it may. */
static void check_sent(void)
{
	for (uint32_t i = 0; i < txlog.n_kept; i++) {
		const struct cf_sent *s = &txlog.sent[i];
		bool to_dfm = s->to.sin_addr.s_addr == dfm.sa.sin_addr.s_addr && s->to.sin_port == dfm.sa.sin_port;
		bool to_sink = false;

		for (uint32_t k = 0; k < out.n_sinks; k++)
			to_sink |= s->to.sin_addr.s_addr == out.sinks[k].addr.sin_addr.s_addr &&
				   ntohs(s->to.sin_port) == XEVB_CTL_SINK_PORT;
		switch (s->m.h.type) {
		case XEVB_CTL_REQUEST:
			if (!is_listed(&s->to))
				CF_FAIL("a REQUEST to %s:%u, which the DFM never listed",
					inet_ntoa(s->to.sin_addr), ntohs(s->to.sin_port));
			break;
		case XEVB_CTL_DONE:
		case XEVB_CTL_BYE:
			if (!to_dfm)
				CF_FAIL("a %s not to the DFM", xevb_ctl_type_name(s->m.h.type));
			break;
		case XEVB_CTL_STATUS:
			if (!to_dfm && !to_sink)
				CF_FAIL("a STATUS to %s, neither the DFM nor a farm node",
					inet_ntoa(s->to.sin_addr));
			if (to_dfm && s->m.u.status.credits != credits)
				CF_FAIL("credits %u to the DFM, configured %u", s->m.u.status.credits, credits);
			break;
		default:
			CF_FAIL("the builder sent a %s", xevb_ctl_type_name(s->m.h.type));
		}
	}
	txlog.n_kept = 0;
}

static void remember(uint32_t first, uint32_t count)
{
	for (uint32_t k = 0; k < count; k++)
		recent[n_recent++ % RECENT] = first + k;
}

/* Message op (0..5) from the input's bytes, into m; the sender it is from. */
static struct cf_peer *make(uint8_t op, uint8_t a, uint8_t b, uint8_t c, struct xevb_ctl_msg *m)
{
	memset(&m->h, 0, sizeof(m->h));
	switch (op) {
	case 0:
		m->h.type = XEVB_CTL_ASSIGN;
		m->h.n_recs = 1 + a % 3;
		cursor += (uint32_t)(int32_t)(int8_t)b;
		for (uint32_t r = 0; r < m->h.n_recs; r++) {
			uint16_t n = (uint16_t)(1 + c % 64);
			m->u.assign[r] = (struct xevb_ctl_assign){ .first_event = cursor,
								   .count = n,
								   .flags = (a & 0x80) ? XEVB_CTL_AS_PULL : 0,
								   .builder_addr = htonl(ME_HOST),
								   .builder_id = 0,
								   .run = 1u + (c >> 7) };
			cursor += n + (a >> 4 & 7);
		}
		return &dfm;
	case 1:
		m->h.type = XEVB_CTL_STATUS;
		m->h.n_recs = 1;
		m->u.status = (struct xevb_ctl_status){ .credits = 1,
							.flags = (a & 1) ? XEVB_CTL_ST_PULL : 0,
							.peer_epoch = (a & 2) ? build_ctl_io(bc)->epoch : a >> 2 };
		return &dfm;
	case 2:
		m->h.type = XEVB_CTL_SOURCES;
		m->h.n_recs = 1 + a % 3;
		for (uint32_t r = 0; r < m->h.n_recs; r++)
			m->u.src[r] =
				(struct xevb_ctl_srcinfo){ .addr = htonl(0xc6120100u + 1 + (b + r) % 8),
							   .port = (uint16_t)(XEVB_CTL_SOURCE_PORT + (c & 1)),
							   .first_id = (uint16_t)((b + r) % 4),
							   .n_ids = (uint16_t)(1 + (c >> 1) % 4) };
		return &dfm;
	case 3:
		m->h.type = XEVB_CTL_BYE;
		return &dfm;
	default: {
		struct cf_peer *s = &sinks[a % 3];
		m->h.type = XEVB_CTL_STATUS;
		m->h.n_recs = 1;
		m->u.status = (struct xevb_ctl_status){ .credits = b,
							.flags = (c & 1) ? XEVB_CTL_ST_BUSY : 0,
							.done_total = c >> 2,
							.peer_epoch = (c & 2) ? build_ctl_io(bc)->epoch : 7 };
		return s;
	}
	}
}

/* The DFM's SOURCES, as the builder will address them. */
static void note_sources(const struct xevb_ctl_msg *m)
{
	for (uint32_t r = 0; r < m->h.n_recs; r++) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_addr.s_addr = m->u.src[r].addr,
					  .sin_port = htons(m->u.src[r].port) };
		if (is_listed(&sa))
			continue;
		if (n_listed == LISTED_MAX)
			CF_FAIL("more than %u source processes listed", LISTED_MAX);
		listed[n_listed++] = sa;
	}
}

static void deliver(struct cf_peer *p, struct xevb_ctl_msg *m, uint64_t now)
{
	if (!cf_deliver(build_ctl_io(bc), htonl(ME_HOST), p, m))
		return;
	if (p == &dfm && m->h.type == XEVB_CTL_SOURCES)
		note_sources(m);
	build_ctl_on_msg(bc, core, m, &p->sa, now);
}

/*
 * A message no builder takes, from a builder, a source or a farm node at
 * their usual addresses: a builder's STATUS, DONE, REQUEST or BYE, a
 * source's STATUS or BYE, a farm node's RECEIVED or BYE.
 */
static void not_for_us(uint8_t op, uint8_t a, uint8_t b, struct xevb_ctl_msg *m, struct cf_peer *p)
{
	static const uint8_t role[3] = { XEVB_ROLE_BUILDER, XEVB_ROLE_SOURCE, XEVB_ROLE_SINK };
	static const uint8_t type[3][4] = {
		{ XEVB_CTL_STATUS, XEVB_CTL_DONE, XEVB_CTL_REQUEST, XEVB_CTL_BYE },
		{ XEVB_CTL_STATUS, XEVB_CTL_BYE, XEVB_CTL_STATUS, XEVB_CTL_BYE },
		{ XEVB_CTL_RECEIVED, XEVB_CTL_BYE, XEVB_CTL_RECEIVED, XEVB_CTL_BYE },
	};
	uint8_t r = b % 3;

	*p = (struct cf_peer){ .sa = cf_addr((r == 2 ? 0xc6120301u : 0xc6120200u + r * 0x100 + 2) + (a & 1),
					     XEVB_CTL_BUILDER_PORT + r),
			       .role = role[r],
			       .id = a,
			       .epoch = 9 };
	memset(&m->h, 0, sizeof(m->h));
	m->h.type = type[r][op % 4];
	m->h.n_recs = m->h.type == XEVB_CTL_BYE ? 0 : 1;
	switch (m->h.type) {
	case XEVB_CTL_STATUS:
		m->u.status = (struct xevb_ctl_status){ .credits = a,
							.first_id = r == 1 ? a % 4 : 0,
							.n_ids = r == 1 ? 1 : 0 };
		break;
	case XEVB_CTL_DONE:
		m->u.done[0] =
			(struct xevb_ctl_done){ .event_id = n_recent ? recent[(n_recent - 1) % RECENT] : a };
		break;
	case XEVB_CTL_REQUEST:
		m->u.request[0] = (struct xevb_ctl_request){ .first_event = cursor - a, .count = 1 };
		break;
	case XEVB_CTL_RECEIVED:
		m->u.received[0] = (struct xevb_ctl_received){ .builder_addr = htonl(ME_HOST), .events = a };
		break;
	}
}

/* A message as from the DFM but not from it, or one no builder takes: nothing but ctl_unexpected moves. */
static void forged(uint8_t who, uint8_t op, uint8_t a, uint8_t b, uint8_t c, uint64_t now)
{
	static struct xevb_ctl_msg m;
	struct cf_nums before, after;
	struct cf_peer p;
	uint32_t saved_cursor = cursor;
	uint64_t sent = txlog.n;
	bool fin = build_ctl_finished(bc);

	if (who & 4) {
		not_for_us(op, a, b, &m, &p);
	} else {
		p = *make(op % 4, a, b, c, &m);
		cursor = saved_cursor;
	}
	if (who & 4) {
		/* as not_for_us made it */
	} else if (who % 3 == 0) {
		p.sa.sin_port = htons(DFM_PORT + 98); /* the DFM's host, another port */
	} else if (who % 3 == 1) {
		p.sa = cf_addr(0xc6120102u, DFM_PORT); /* another host, the DFM's port */
	} else {
		p.sa = sinks[0].sa; /* a farm node's address */
	}
	snapshot(&before);
	if (!cf_deliver(build_ctl_io(bc), htonl(ME_HOST), &p, &m))
		return;
	build_ctl_on_msg(bc, core, &m, &p.sa, now);
	snapshot(&after);
	cf_nums_only(&before, &after, "ctl_unexpected", 1);
	if (txlog.n != sent || build_ctl_finished(bc) != fin || build_ctl_take_reset(bc))
		CF_FAIL("a forged %s acted (sent %llu, finished %d -> %d)", xevb_ctl_type_name(m.h.type),
			(unsigned long long)(txlog.n - sent), fin, build_ctl_finished(bc));
}

/* The DFM's messages for sources, sent to us: counted unexpected, nothing else moves. */
static void dfm_not_for_us(uint8_t b, uint8_t c, uint64_t now)
{
	static struct xevb_ctl_msg m;
	struct cf_nums before, after;
	uint64_t sent = txlog.n;
	bool restart = false;

	memset(&m.h, 0, sizeof(m.h));
	m.h.n_recs = 1;
	if (b & 1) {
		m.h.type = XEVB_CTL_CLEAR;
		m.u.clear[0] = (struct xevb_ctl_range){ .first_event = cursor - c, .count = 1u + c };
	} else {
		m.h.type = XEVB_CTL_BUILDERS;
		m.u.builders[0] =
			(struct xevb_ctl_bldinfo){ .addr = htonl(ME_HOST), .port = XEVB_CTL_BUILDER_PORT };
	}
	snapshot(&before);
	if (!cf_deliver(build_ctl_io(bc), htonl(ME_HOST), &dfm, &m))
		return;
	build_ctl_on_msg(bc, core, &m, &dfm.sa, now);
	snapshot(&after);
	for (uint32_t i = 0; i < before.n; i++)
		restart |= !strcmp(before.key[i], "dfm_restarts") && after.v[i] != before.v[i];
	if (restart)
		return; /* a new epoch: the restart's own books, checked after the step */
	cf_nums_only(&before, &after, "ctl_unexpected", 1);
	if (txlog.n != sent)
		CF_FAIL("the DFM's %s made us send", xevb_ctl_type_name(m.h.type));
}

static void mep(uint8_t a, uint8_t b, uint8_t c, uint64_t now)
{
	static uint32_t ids[8], seq[4];
	static uint16_t lens[8];
	static const uint8_t *pays[8];
	static const uint8_t pay[16] = "0123456789abcdef";
	static struct xevb_frag_ref refs[XEVB_MAX_FRAGS_PER_MEP];
	const struct xevb_parse_cfg pcfg = { .udp_port = XEVB_DEFAULT_UDP_PORT,
					     .ip_proto = XEVB_DEFAULT_IP_PROTO };
	uint32_t n = 1 + b % 4, e = (c & 0x80) || !n_recent ? 0xfffff000u + (uint32_t)c * 37 + b :
							      recent[(n_recent - 1 - c) % RECENT];
	struct xevb_mep_params p = { .ip_proto = XEVB_DEFAULT_IP_PROTO,
				     .source_id = a % 4,
				     .run_number = 1,
				     .event_id = ids,
				     .n_frags = n,
				     .frag_len = lens,
				     .payload = pays };
	struct xevb_pkt_info pi;
	ssize_t len;
	uint32_t f;

	if (!n_free)
		return;
	p.packet_seq = seq[a % 4]++;
	for (uint32_t j = 0; j < n; j++) {
		ids[j] = e + j;
		lens[j] = (uint16_t)(4 + j);
		pays[j] = pay;
	}
	f = free_list[--n_free];
	len = xevb_write_frame(frames[f], FRAME_SIZE, &p);
	if (len <= 0 || xevb_classify(frames[f], frames[f] + len, (uint32_t)len, &pcfg, &pi, refs) != XEVB_RES_MEP)
		CF_FAIL("a synthetic MEP misparsed");
	held[f] = true;
	xevb_builder_add_mep(core, f, frames[f], &pi, refs, now);
}

static void reset_if_asked(uint64_t now)
{
	if (!build_ctl_take_reset(bc))
		return;
	/* As xevb build does: a restarted DFM numbers afresh, so does a fresh
	   core; its next tick takes the ASSIGN that asked for it. */
	xevb_builder_flush(core);
	check_core();
	xevb_builder_free(core);
	new_core();
	build_ctl_tick(bc, core, now);
}

static void step(const uint8_t *s, const uint8_t *rest, size_t n_rest, size_t *used, uint64_t *now)
{
	static struct xevb_ctl_msg m;
	uint8_t op = s[0] % 11, a = s[1], b = s[2], c = s[3];

	switch (op) {
	case 0:
	case 1:
	case 2:
	case 3:
	case 5: {
		struct cf_peer *p = make(op == 5 ? 4 : op, a, b, c, &m);
		deliver(p, &m, *now);
		if (op == 0 && m.h.type == XEVB_CTL_ASSIGN)
			for (uint32_t r = 0; r < m.h.n_recs; r++)
				remember(m.u.assign[r].first_event, m.u.assign[r].count);
		break;
	}
	case 4:
		dfm.epoch++;
		dfm.seq = 0;
		if (b & 1)
			cursor -= a;
		break;
	case 6:
		forged(a, b, c, (uint8_t)(c * 7), (uint8_t)(a ^ b), *now);
		break;
	case 7:
		mep(a, b, c, *now);
		break;
	case 8:
		*now += ((uint64_t)a << (b % 24)) * 1000ull;
		xevb_builder_poll(core, *now);
		build_ctl_tick(bc, core, *now);
		break;
	case 9: {
		size_t n = a < n_rest ? a : n_rest;
		struct cf_peer p = (b & 1) ? dfm : sinks[0];
		if (cf_deliver_raw(build_ctl_io(bc), htonl(ME_HOST), &p, rest, n, &m)) {
			if ((b & 1) && m.h.role == XEVB_ROLE_DFM && m.h.type == XEVB_CTL_SOURCES)
				note_sources(&m);
			build_ctl_on_msg(bc, core, &m, &p.sa, *now);
		}
		*used = n;
		break;
	}
	case 10:
		if (a & 1)
			dfm_not_for_us(b, c, *now);
		else
			xevb_builder_expire_all(core);
		break;
	}
	reset_if_asked(*now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t sources[] = { 0, 1, 2, 3 };
	static const uint32_t backlogs[] = { 0, 1, 4, 16 };
	struct build_ctl_cfg cc = { .dfm = "198.18.4.1:23901",
				    .ctl_port = XEVB_CTL_BUILDER_PORT,
				    .sink_ctl_port = XEVB_CTL_SINK_PORT,
				    .busy_high = 0.8,
				    .busy_low = 0.5,
				    .reask_ns = 20000000ull,
				    .sink_dead_ns = 500000000ull,
				    .tx_hook = cf_log_tx,
				    .tx_ctx = &txlog };
	struct cf_nums prev, cur;
	uint64_t now = 1000000000ull;
	size_t off = 2;
	char msg[256];

	if (size < 2)
		return 0;
	xevb_log_level = XEVB_LOG_ERR; /* the handlers' warnings are the command's, not findings */
	cf_log_init(&txlog, data[0] & 1);
	memset(&out, 0, sizeof(out));
	out.n_sinks = (data[0] >> 1) & 3;
	out.discard = !out.n_sinks;
	for (uint32_t k = 0; k < 3; k++) {
		out.sinks[k].addr = cf_addr(0xc6120301u + k, 5000);
		out.sinks[k].fd = -1;
		snprintf(out.sinks[k].name, sizeof(out.sinks[k].name), "198.18.3.%u:5000", k + 1);
		sinks[k] = (struct cf_peer){ .sa = cf_addr(0xc6120301u + k, XEVB_CTL_SINK_PORT),
					     .role = XEVB_ROLE_SINK,
					     .id = (uint16_t)k,
					     .epoch = 100 + k };
	}
	dfm = (struct cf_peer){ .sa = cf_addr(DFM_HOST, DFM_PORT), .role = XEVB_ROLE_DFM, .epoch = 1 };
	cc.fixed_run = data[0] & 8;
	cc.backlog = backlogs[(data[0] >> 4) & 3];
	cc.max_reasks = data[0] >> 6;
	cc.credits = credits = 1u + data[1];
	n_recent = n_listed = 0;
	cursor = 0xfffff000u;

	bcfg = (struct xevb_builder_cfg){ .sources = sources,
					  .n_sources = 4,
					  .window = 64,
					  .n_frames = N_FRAMES,
					  .timeout_ns = 50000000ull,
					  .run_number = 1,
					  .max_frames_held = N_FRAMES / 2,
					  .end_of_run_counted_only = true,
					  .emit = on_emit,
					  .frame_release = on_release };
	n_free = N_FRAMES;
	for (uint32_t i = 0; i < N_FRAMES; i++) {
		free_list[i] = i;
		held[i] = false;
	}
	new_core();
	bc = build_ctl_new(&cc, &out);
	if (!bc)
		CF_FAIL("build_ctl_new");
	if (txlog.keyed) {
		struct xevb_ctl_io *io = build_ctl_io(bc);
		io->auth = malloc(sizeof(*io->auth));
		if (!io->auth)
			CF_FAIL("out of memory");
		xevb_ctl_auth_init(io->auth, cf_key);
	}
	snapshot(&prev);
	while (off + 4 <= size) {
		size_t used = 0;

		step(data + off, data + off + 4, size - off - 4, &used, &now);
		off += 4 + used;
		if (!build_ctl_check(bc, msg, sizeof(msg)))
			CF_FAIL("the control books: %s", msg);
		check_core();
		check_sent();
		snapshot(&cur);
		cf_nums_grow(&prev, &cur, may_fall);
		prev = cur;
	}
	/* The stop, as xevb build does it: the core's open events leave, then the control plane. */
	xevb_builder_flush(core);
	check_core();
	build_ctl_tick(bc, core, now);
	if (!build_ctl_check(bc, msg, sizeof(msg)))
		CF_FAIL("the control books at the stop: %s", msg);
	check_sent();
	build_ctl_free(bc);
	txlog.n_kept = 0;
	xevb_builder_free(core);
	for (uint32_t i = 0; i < N_FRAMES; i++)
		if (held[i])
			CF_FAIL("frame %u still held after the core was freed", i);
	return 0;
}

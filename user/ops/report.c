// SPDX-License-Identifier: GPL-2.0-only
#include <inttypes.h>
#include <string.h>
#include "base/counters.h"
#include "base/json.h"
#include "evb/names.h"
#include "ops/report.h"
#include <xevb/shed.h>

static uint64_t xdp_malformed(const struct xevb_snapshot *s)
{
	uint64_t n = 0;
	for (unsigned r = XEVB_RES_FIRST_MALFORMED; r < XEVB_RES__COUNT; r++)
		n += s->xdp[r].packets;
	return n;
}

static uint64_t xsk_sum(const struct xevb_snapshot *s, int which)
{
	uint64_t n = 0;
	for (uint32_t q = 0; q < s->n_queues && q < XEVB_XSK_MAX_QUEUES; q++)
		n += which == 0 ? s->xsk[q].rx_dropped :
		     which == 1 ? s->xsk[q].rx_ring_full :
				  s->xsk[q].rx_fill_ring_empty_descs;
	return n;
}

void xevb_report_line(FILE *f, const struct xevb_snapshot *n, const struct xevb_snapshot *p)
{
	double dt = (double)(n->update_ns - p->update_ns) / 1e9;
	uint64_t drops = 0;

	if (dt <= 0)
		return;
	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		drops += n->core.drops[r] - p->core.drops[r];
#define RATE(field) ((double)(n->field - p->field) / dt)
	fprintf(f,
		"%s: %8.0f pkt/s %9.0f frag/s %8.0f ev/s  in %6.3f Gb/s  out %6.3f Gb/s  "
		"incompl %.0f/s  drops %.0f/s  malformed %.0f/s  xsk_drop %.0f/s  open %" PRIu64 "\n",
		n->ifname, RATE(rx_frames), RATE(core.frags_received),
		RATE(core.events_complete) + RATE(core.events_incomplete), RATE(rx_bytes) * 8 / 1e9,
		RATE(out.bytes) * 8 / 1e9, RATE(core.events_incomplete), (double)drops / dt,
		(double)(xdp_malformed(n) - xdp_malformed(p)) / dt,
		(double)(xsk_sum(n, 0) - xsk_sum(p, 0) + n->sock_kernel_drops - p->sock_kernel_drops) / dt,
		n->core.open_events);
	if (n->shed_on &&
	    (n->shed_accept < XEVB_SHED_ONE || n->xdp[XEVB_XDP_SHED].packets != p->xdp[XEVB_XDP_SHED].packets))
		fprintf(f, "%s: shedding: accept %5.1f%%  shed %.0f MEP/s %.0f ev/s\n", n->ifname,
			100.0 * n->shed_accept / XEVB_SHED_ONE, RATE(xdp[XEVB_XDP_SHED].packets),
			RATE(xdp[XEVB_XDP_SHED_REF].frags));
#undef RATE
	fflush(f);
}

static void summary_xdp_program(FILE *f, const struct xevb_snapshot *s)
{
	fprintf(f, "XDP program%s:", s->xdp_mode ? "" : " (pass mode, in front of the socket)");
	for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++)
		if (s->xdp[k].packets)
			fprintf(f, " %s=%" PRIu64, xevb_slot_name(k), (uint64_t)s->xdp[k].packets);
	fputc('\n', f);
}

static void summary_shedding(FILE *f, const struct xevb_snapshot *s)
{
	if (!s->shed_on)
		return;
	fprintf(f,
		"XDP shedding: %" PRIu64 " MEPs, %" PRIu64 " fragments, %" PRIu64
		" events (source %u) shed whole; accept now %.1f%%, lowest %.1f%%; %" PRIu64 " cuts (%" PRIu64
		" ring, %" PRIu64 " kernel drops, %" PRIu64 " output backlog), %" PRIu64 " raises\n",
		(uint64_t)s->xdp[XEVB_XDP_SHED].packets, (uint64_t)s->xdp[XEVB_XDP_SHED].frags,
		(uint64_t)s->xdp[XEVB_XDP_SHED_REF].frags, s->shed_ref_source,
		100.0 * s->shed_accept / XEVB_SHED_ONE, 100.0 * s->shed_min_accept / XEVB_SHED_ONE, s->shed_cuts,
		s->shed_cuts_by[XEVB_SHED_CUT_RING], s->shed_cuts_by[XEVB_SHED_CUT_DROPS],
		s->shed_cuts_by[XEVB_SHED_CUT_BACKLOG], s->shed_raises);
	if (s->shed_guard_limit)
		fprintf(f,
			"XDP ring guard: %" PRIu64 " blocks refused whole, %" PRIu64
			" admitted (refused while over %u frames waited in a queue's ring); %" PRIu64
			" admitted right after blocks shed, the builder's window jumped %" PRIu64
			" times over them\n",
			s->shed_guard_refused, s->shed_guard_admitted, s->shed_guard_limit, s->shed_guard_vouched,
			s->core.jumps_shed);
}

/* Socket path: the steering program sheds in pass mode in front of the socket. */
static void summary_pass_mode(FILE *f, const struct xevb_snapshot *s)
{
	if (!s->shed_on)
		return;
	summary_xdp_program(f, s);
	summary_shedding(f, s);
}

/*
 * The summary's counter lines, as text with the counters in braces, named
 * by their JSON keys (user/base/counters.h): {events_complete};
 * {drop_*|fmt} is every element of an array, each written by fmt, where
 * %n is its name and %v its value (%-17n: in 17 columns); {@name} is a
 * value worked out from several (summary_derived). A counter of the table
 * that no line printed shows, when not 0, on the "other counters" line:
 * none is ever left out.
 */
enum summary_path { ANY_PATH, XDP_PATH, SOCKET_PATH };

struct summary_line {
	enum summary_path path;
	bool if_any;      /* printed only when one of its counters is not 0 */
	const char *text; /* NULL: print writes the line (not counters of the table) */
	void (*print)(FILE *f, const struct xevb_snapshot *s);
};

static const struct summary_line summary_lines[] = {
	{ ANY_PATH, false, "frames received     {rx_frames} ({rx_bytes} bytes), not MEP {rx_not_mep}\n", NULL },
	{ ANY_PATH, false,
	  "fragments received  {frags_received}\n"
	  "  in events         {frags_in_events}\n"
	  "{drop_*|  %-17n %v\n}"
	  "  (in open events   {@frags_in_open_events}, of segmented ones not whole yet {frags_pending})\n",
	  NULL },
	/* Wire format 1.1: the segment invariant's terms (builder.h). */
	{ ANY_PATH, false,
	  "segments received   {segs_received}: in fragments {segs_in_frags}{segs_*|, %n %v}, "
	  "pending {segs_pending}; segmented fragments whole {seg_frags_whole}\n",
	  NULL },
	{ ANY_PATH, false,
	  "events opened       {events_opened}: complete {events_complete}, incomplete "
	  "{events_incomplete} (end-of-run flush {events_flushed_eor}), discarded {events_discarded}, "
	  "open {open_events}; evicted {events_evicted} (of incomplete + discarded: window or frame "
	  "pressure)\n",
	  NULL },
	{ ANY_PATH, false,
	  "output              {out_events} events, {out_bytes} bytes; no farm node "
	  "{out_dropped_no_sink}, write errors {out_dropped_error}, farm nodes' buffers full "
	  "{out_dropped_backlog}\n",
	  NULL },
	{ ANY_PATH, true,
	  "  of them lost in flight to a failed farm node {out_lost_in_flight} (untracked "
	  "{out_ack_untracked}); reconnects {out_reconnects}, reset by a farm node {out_peer_resets}\n",
	  NULL },
	/* What user space copied to write the events: 0 when they left from where they were received. */
	{ ANY_PATH, true, "  copied by user space {out_bytes_copied} bytes\n", NULL },
	/* zerocopy (--tune): none copied by user space; the kernel says where it copied anyway. */
	{ ANY_PATH, true,
	  "  sent with MSG_ZEROCOPY {out_bytes_zerocopy} bytes, of them copied by the kernel "
	  "after all {out_bytes_kernel_copied} (a local receiver)\n",
	  NULL },
	{ XDP_PATH, false, NULL, summary_xdp_program },
	{ XDP_PATH, false,
	  "AF_XDP sockets: rx_dropped {@xsk_rx_dropped}, rx_ring_full {@xsk_rx_ring_full}, "
	  "fill_ring_empty {@xsk_fill_ring_empty}\n",
	  NULL },
	{ XDP_PATH, false, NULL, summary_shedding },
	{ XDP_PATH, true, "XDP meta: {rx_meta} frames taken from it, {rx_meta_fallback} parsed\n", NULL },
	{ XDP_PATH, true,
	  "IPv4-fragmented MEPs: {rx_ipfrag_datagrams} reassembled datagrams, {rx_ipfrag_bytes} "
	  "bytes ({rx_ipfrag_copied} copied) from the kernel's socket; its queue: dropped "
	  "{sock_kernel_drops}, truncated {sock_truncated}\n",
	  NULL },
	{ SOCKET_PATH, false,
	  "socket: dropped at the socket queue {sock_kernel_drops}, truncated {sock_truncated}\n", NULL },
	{ SOCKET_PATH, true,
	  "IPv4-fragmented MEPs: {rx_ipfrag_datagrams} reassembled datagrams over the MTU, "
	  "{rx_ipfrag_bytes} bytes ({rx_ipfrag_copied} copied)\n",
	  NULL },
	{ SOCKET_PATH, false, NULL, summary_pass_mode },
};

/* A source's line, after "  source %4u:", when it lost or repeated something. */
static const char summary_source_line[] =
	" packets {packets} seq_gaps {seq_gaps} frags {frags_received} in_events {frags_in_events} dup "
	"{drop_duplicate} late {drop_late} unknown {drop_unknown_source} wrong_run {drop_wrong_run} overflow "
	"{drop_overflow} future {drop_future} partial {drop_partial} unassigned {drop_unassigned} seq_resets "
	"{seq_resets}";

/* One summary walk: a snapshot, a scope (and source), and the rows it printed. */
struct summary_ctx {
	FILE *f; /* NULL: only look whether a counter is not 0 */
	const struct xevb_snapshot *s;
	enum xevb_counter_scope scope;
	uint32_t id;
	bool *shown; /* [XEVB_N_COUNTERS] */
	bool any;
};

static uint64_t frags_in_open_events(const struct xevb_snapshot *s)
{
	uint64_t v = s->core.frags_received - s->core.frags_in_events;

	for (int r = 0; r < XEVB_DROP__COUNT; r++)
		v -= s->core.drops[r];
	return v;
}

static uint64_t xsk_rx_dropped(const struct xevb_snapshot *s)
{
	return xsk_sum(s, 0);
}
static uint64_t xsk_rx_ring_full(const struct xevb_snapshot *s)
{
	return xsk_sum(s, 1);
}
static uint64_t xsk_fill_ring_empty(const struct xevb_snapshot *s)
{
	return xsk_sum(s, 2);
}

/* The values a line shows that are not one counter: {@name}. */
static const struct {
	const char *name;
	uint64_t (*value)(const struct xevb_snapshot *s);
} summary_derived[] = {
	{ "frags_in_open_events", frags_in_open_events },
	{ "xsk_rx_dropped", xsk_rx_dropped },
	{ "xsk_rx_ring_full", xsk_rx_ring_full },
	{ "xsk_fill_ring_empty", xsk_fill_ring_empty },
};

/* The row of key (a JSON key, or an array's "prefix_*"), and its element (c->n: the whole array). */
static const struct xevb_counter *summary_row(const struct summary_ctx *x, const char *key, size_t len,
					      uint32_t *elem)
{
	char name[64];

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		if (c->scope != x->scope)
			continue;
		for (uint32_t k = 0; k < c->n; k++) {
			const char *n = xevb_counter_name(c, k, true, name, sizeof(name));

			if (strlen(n) == len && !memcmp(n, key, len)) {
				*elem = k;
				return c;
			}
		}
		if (c->n > 1 && len == strlen(c->json) + 2 && !memcmp(key, c->json, len - 2) &&
		    !memcmp(key + len - 2, "_*", 2)) {
			*elem = c->n;
			return c;
		}
	}
	return NULL;
}

static void summary_value(struct summary_ctx *x, uint64_t v)
{
	x->any |= v != 0;
	if (x->f)
		fprintf(x->f, "%" PRIu64, v);
}

/* Each element of an array by fmt: %n its name, %v its value; %-17n pads the name. */
static void summary_elements(struct summary_ctx *x, const struct xevb_counter *c, const char *fmt, size_t len)
{
	for (uint32_t k = 0; k < c->n; k++) {
		for (size_t i = 0; i < len; i++) {
			int width = 0;
			size_t j = i + 1;

			if (fmt[i] != '%') {
				if (x->f)
					fputc(fmt[i], x->f);
				continue;
			}
			if (j < len && fmt[j] == '-')
				j++;
			while (j < len && fmt[j] >= '0' && fmt[j] <= '9')
				width = width * 10 + (fmt[j++] - '0');
			if (j < len && fmt[j] == 'n' && x->f)
				fprintf(x->f, "%-*s", width, c->elem(k));
			else if (j < len && fmt[j] == 'v')
				summary_value(x, xevb_counter_value(c, x->s, x->id, k));
			i = j;
		}
	}
}

/* One brace: a counter, an array by its format, or a derived value. */
static void summary_brace(struct summary_ctx *x, const char *body, size_t len)
{
	const char *bar = memchr(body, '|', len);
	size_t keylen = bar ? (size_t)(bar - body) : len;
	const struct xevb_counter *c;
	uint32_t k;

	if (body[0] == '@') {
		for (size_t i = 0; i < sizeof(summary_derived) / sizeof(summary_derived[0]); i++)
			if (strlen(summary_derived[i].name) == len - 1 &&
			    !memcmp(summary_derived[i].name, body + 1, len - 1)) {
				summary_value(x, summary_derived[i].value(x->s));
				return;
			}
	}
	c = body[0] == '@' ? NULL : summary_row(x, body, keylen, &k);
	if (!c) {
		/* A name not in the table: shows in the text (and fails test_counters). */
		if (x->f)
			fprintf(x->f, "{%.*s?}", (int)len, body);
		return;
	}
	x->shown[c - xevb_counters] = true;
	if (k < c->n)
		summary_value(x, xevb_counter_value(c, x->s, x->id, k));
	else
		summary_elements(x, c, bar ? bar + 1 : "", bar ? len - keylen - 1 : 0);
}

static void summary_text(struct summary_ctx *x, const char *t)
{
	while (*t) {
		const char *open = strchr(t, '{'), *close = open ? strchr(open, '}') : NULL;

		if (!close) {
			if (x->f)
				fputs(t, x->f);
			return;
		}
		if (x->f)
			fwrite(t, 1, (size_t)(open - t), x->f);
		summary_brace(x, open + 1, (size_t)(close - open - 1));
		t = close + 1;
	}
}

/* The counters of this scope no line showed, those not 0: "name value", lead before the first. */
static uint32_t summary_others(struct summary_ctx *x, const char *lead, const char *sep)
{
	uint32_t n = 0;
	char name[64];

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		if (c->scope != x->scope || x->shown[i])
			continue;
		for (uint32_t k = 0; k < c->n; k++) {
			uint64_t v = xevb_counter_value(c, x->s, x->id, k);

			if (v)
				fprintf(x->f, "%s%s %" PRIu64, n++ ? sep : lead,
					xevb_counter_name(c, k, true, name, sizeof(name)), v);
		}
	}
	return n;
}

static void summary_sources(FILE *f, const struct xevb_snapshot *s, bool *shown)
{
	const struct xevb_builder_stats *c = &s->core;

	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++) {
		const struct xevb_source_stats *ss = &c->src[id];
		struct summary_ctx x = { f, s, XEVB_SCOPE_SOURCE, id, shown, false };
		bool lost = ss->seq_gaps || ss->seq_resets;

		for (int r = 0; r < XEVB_DROP__COUNT; r++)
			lost |= ss->drops[r] != 0;
		if (!ss->seen || !lost)
			continue;
		memset(shown, 0, sizeof(*shown) * XEVB_N_COUNTERS);
		fprintf(f, "  source %4u:", id);
		summary_text(&x, summary_source_line);
		summary_others(&x, " ", " ");
		fprintf(f, "%s\n", ss->end_of_run ? " eor" : "");
	}
}

void xevb_report_summary(FILE *f, const struct xevb_snapshot *s)
{
	bool shown[XEVB_N_COUNTERS] = { false };
	struct summary_ctx x = { f, s, XEVB_SCOPE_TOTAL, 0, shown, false };
	enum summary_path path = s->xdp_mode ? XDP_PATH : SOCKET_PATH;

	fprintf(f, "== xevb build summary (%s, %s path, %u sources)\n", s->ifname,
		s->xdp_mode ? "AF_XDP" : "socket", s->n_sources);
	for (size_t i = 0; i < sizeof(summary_lines) / sizeof(summary_lines[0]); i++) {
		const struct summary_line *l = &summary_lines[i];
		struct summary_ctx probe = { NULL, s, XEVB_SCOPE_TOTAL, 0, shown, false };

		if (l->path != ANY_PATH && l->path != path)
			continue;
		if (!l->text) {
			l->print(f, s);
			continue;
		}
		if (l->if_any) {
			summary_text(&probe, l->text);
			if (!probe.any)
				continue;
		}
		summary_text(&x, l->text);
	}
	if (summary_others(&x, "other counters      ", ", "))
		fputc('\n', f);
	summary_sources(f, s, shown);
}

/* Every row of the counter table of this scope, as JSON members. */
static void json_counters(FILE *f, const struct xevb_snapshot *s, enum xevb_counter_scope scope, uint32_t id)
{
	char name[64];
	bool first = scope == XEVB_SCOPE_SOURCE;

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		if (c->scope != scope)
			continue;
		for (uint32_t k = 0; k < c->n; k++) {
			fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",",
				xevb_counter_name(c, k, true, name, sizeof(name)),
				xevb_counter_value(c, s, id, k));
			first = false;
		}
	}
}

/* The sources seen, each an object of its counters: "source":{"12":{...},...}. */
static void json_sources(FILE *f, const struct xevb_snapshot *s)
{
	bool first = true;

	fprintf(f, ",\"source\":{");
	for (uint32_t id = 0; id < XEVB_MAX_SOURCES; id++) {
		if (!s->core.src[id].seen)
			continue;
		fprintf(f, "%s\"%u\":{", first ? "" : ",", id);
		json_counters(f, s, XEVB_SCOPE_SOURCE, id);
		fputc('}', f);
		first = false;
	}
	fputc('}', f);
}

void xevb_report_json(FILE *f, const struct xevb_snapshot *s)
{
	const struct xevb_builder_stats *c = &s->core;
	uint64_t seq_gaps = 0;

	/* The name comes from the snapshot, maybe a file that another process wrote: bounded, escaped. */
	fputs("{\"ifname\":", f);
	xevb_json_strn(f, s->ifname, sizeof(s->ifname));
	fprintf(f, ",\"path\":\"%s\",\"sources\":%u,\"run_number\":%u,\"run_ended\":%s",
		s->xdp_mode ? "xdp" : "socket", s->n_sources, c->run_number, c->run_ended ? "true" : "false");
	json_counters(f, s, XEVB_SCOPE_TOTAL, 0);
	fprintf(f,
		",\"xsk_rx_dropped\":%" PRIu64 ",\"xsk_rx_ring_full\":%" PRIu64
		",\"xsk_fill_ring_empty\":%" PRIu64,
		xsk_sum(s, 0), xsk_sum(s, 1), xsk_sum(s, 2));
	fprintf(f,
		",\"shed_on\":%s,\"shed_meps\":%" PRIu64 ",\"shed_frags\":%" PRIu64 ",\"shed_events\":%" PRIu64
		",\"shed_accept\":%u,\"shed_min_accept\":%u"
		",\"shed_cuts\":%" PRIu64 ",\"shed_raises\":%" PRIu64,
		s->shed_on ? "true" : "false", (uint64_t)s->xdp[XEVB_XDP_SHED].packets,
		(uint64_t)s->xdp[XEVB_XDP_SHED].frags, (uint64_t)s->xdp[XEVB_XDP_SHED_REF].frags, s->shed_accept,
		s->shed_min_accept, s->shed_cuts, s->shed_raises);
	fprintf(f, ",\"shed_cuts_by\":{");
	for (unsigned k = 0; k < XEVB_SHED_CUT__N; k++)
		fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", xevb_shed_cause_name(k), s->shed_cuts_by[k]);
	fprintf(f, "}");
	fprintf(f,
		",\"shed_guard_limit\":%u,\"shed_guard_refused\":%" PRIu64 ",\"shed_guard_admitted\":%" PRIu64
		",\"shed_guard_vouched\":%" PRIu64,
		s->shed_guard_limit, s->shed_guard_refused, s->shed_guard_admitted, s->shed_guard_vouched);
	fprintf(f, ",\"xdp\":{");
	for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++)
		fprintf(f, "%s\"%s\":{\"packets\":%" PRIu64 ",\"frags\":%" PRIu64 "}", k ? "," : "",
			xevb_slot_name(k), (uint64_t)s->xdp[k].packets, (uint64_t)s->xdp[k].frags);
	fputc('}', f);
	for (unsigned id = 0; id < XEVB_MAX_SOURCES; id++)
		seq_gaps += c->src[id].seq_gaps;
	fprintf(f, ",\"seq_gaps\":%" PRIu64, seq_gaps);
	json_sources(f, s);
	fputs("}\n", f);
	fflush(f);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The outputs with a hostile interface name in their snapshot: the JSON
 * report must carry it as one valid JSON string and be otherwise the same
 * as with a plain name, and every line of the Prometheus page must parse;
 * a name that fills its array without a NUL is read to its bound. The
 * names the outputs write unescaped (the counter table's, the verdicts',
 * the reasons') must be plain identifiers, which keeps that safe.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include "base/counters.h"
#include "ctl/ctl_sock.h"
#include "ctl/dfm.h"
#include "evb/names.h"
#include "ops/metrics.h"
#include "ops/report.h"
#include "../common/capture.h"
#include "../common/escape_check.h"
#include <xevb/shed.h>
#include <xevb/xevb.h>

TestSuite(json_outputs, .timeout = 60);

static const char *const names[] = { "q\"x", "a\\b", "n\nl", "\xff\xfe", "x\"}\n# HELP", "\xc3\xa9t\xc3\xa9" };
#define N_NAMES (sizeof(names) / sizeof(names[0]))

static struct xevb_snapshot *snapshot(const char *ifname, size_t n, uint32_t xdp_mode)
{
	struct xevb_snapshot *s = calloc(1, sizeof(*s));

	cr_assert(not(eq(ptr, s, NULL)));
	s->magic = XEVB_SNAP_MAGIC;
	s->version = XEVB_SNAP_VERSION;
	s->xdp_mode = xdp_mode;
	s->n_queues = 1;
	s->core.src[7].seen = true;
	memcpy(s->ifname, ifname, n);
	return s;
}

static void report_json(FILE *f, const void *s)
{
	xevb_report_json(f, s);
}

/* The JSON string at p: past its closing quote (escapes skipped). */
static const char *string_end(const char *p)
{
	cr_assert(eq(chr, *p, '"'));
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	cr_assert(eq(chr, *p, '"'), "unterminated string");
	return p + 1;
}

/* The report with the name as a valid string, and the rest as with a plain name. */
static void check_report(const char *ifname, size_t n)
{
	struct xevb_snapshot *s = snapshot(ifname, n, 1), *plain = snapshot("eth0", 4, 1);
	char *json = capture_text(report_json, s), *ref = capture_text(report_json, plain), *got, *want, *dec;
	static const char head[] = "{\"ifname\":";
	const char *end;

	cr_assert(eq(int, strncmp(json, head, sizeof(head) - 1), 0), "%s", json);
	end = string_end(json + sizeof(head) - 1);
	got = strndup(json + sizeof(head) - 1, (size_t)(end - json) - (sizeof(head) - 1));
	want = replace_invalid(ifname, n);
	dec = json_decode(got);
	cr_assert(not(eq(ptr, dec, NULL)), "not a JSON string: %s", got);
	cr_assert(eq(str, dec, want), "ifname %s", got);
	cr_assert(eq(str, (char *)end, strstr(ref, "\"eth0\"") + 6), "the rest of the report differs");
	free(got);
	free(dec);
	free(want);
	free(json);
	free(ref);
	free(s);
	free(plain);
}

Test(json_outputs, the_report_carries_a_hostile_name_as_json)
{
	char full[sizeof(((struct xevb_snapshot *)0)->ifname)];

	for (size_t i = 0; i < N_NAMES; i++)
		check_report(names[i], strlen(names[i]));
	memset(full, 'A', sizeof(full)); /* no NUL: a snapshot file written by someone else */
	check_report(full, sizeof(full));
}

/* One sample line: name, labels (each value as the format says), a number, nothing more. */
static void check_sample(const char *line)
{
	const char *p = line, *brace = strchr(line, '{'), *sp = strchr(line, ' ');
	char name[128], *end;

	if (brace && (!sp || brace < sp)) {
		snprintf(name, sizeof(name), "%.*s", (int)(brace - line), line);
		for (p = brace + 1; *p && *p != '}';) {
			p = strchr(p, '=');
			cr_assert(not(eq(ptr, (void *)p, NULL)), "no '=' in %s", line);
			p = string_end(p + 1);
			if (*p == ',')
				p++;
		}
		cr_assert(eq(chr, *p, '}'), "labels not closed: %s", line);
		char *labels = strndup(brace + 1, (size_t)(p - brace - 1));
		cr_assert(xevb_metric_labels_ok(labels), "labels: %s", labels);
		free(labels);
		p++;
	} else {
		cr_assert(not(eq(ptr, (void *)sp, NULL)), "no value: %s", line);
		snprintf(name, sizeof(name), "%.*s", (int)(sp - line), line);
		p = sp;
	}
	cr_assert(xevb_metric_name_ok(name), "name %s in %s", name, line);
	cr_assert(eq(chr, *p, ' '), "%s", line);
	strtod(p + 1, &end);
	cr_assert(eq(chr, *end, 0), "value: %s", line);
}

static bool is_meta(const char *line)
{
	return !strncmp(line, "# HELP xevb_", 12) || !strncmp(line, "# TYPE xevb_", 12);
}

static void check_page(const char *ifname, size_t n, uint32_t xdp_mode)
{
	struct xevb_snapshot *s = snapshot(ifname, n, xdp_mode);
	struct xevb_mbuf b = { 0 };
	char q[XEVB_PROM_QLEN(64)], want[256];
	int lines = 0;

	xevb_metrics_render_snapshot(&b, s);
	xevb_mbuf_printf(&b, "%s", "");
	cr_assert(not(b.oom));
	snprintf(want, sizeof(want), "xevb_build_info{ifname=%s,path=\"%s\"} 1\n",
		 xevb_prom_qn(q, sizeof(q), ifname, n), xdp_mode ? "xdp" : "socket");
	cr_assert(not(eq(ptr, strstr(b.p, want), NULL)), "no %s", want);
	for (char *line = strtok(b.p, "\n"); line; line = strtok(NULL, "\n"), lines++)
		if (line[0] == '#')
			cr_assert(is_meta(line), "%s", line);
		else
			check_sample(line);
	cr_assert(gt(int, lines, 50));
	free(b.p);
	free(s);
}

Test(json_outputs, the_metrics_page_parses_with_a_hostile_name)
{
	char full[sizeof(((struct xevb_snapshot *)0)->ifname)];

	for (size_t i = 0; i < N_NAMES; i++) {
		check_page(names[i], strlen(names[i]), 0);
		check_page(names[i], strlen(names[i]), 1);
	}
	memset(full, 'A', sizeof(full));
	check_page(full, sizeof(full), 1);
}

static bool plain(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return false;
	return true;
}

/* Table names go out as they are (JSON keys and values, label values): they must need no escaping. */
Test(json_outputs, the_names_written_unescaped_are_plain)
{
	char name[64], labels[256];

	for (size_t i = 0; i < xevb_n_counters; i++) {
		const struct xevb_counter *c = &xevb_counters[i];

		for (uint32_t k = 0; k < c->n; k++) {
			cr_assert(plain(xevb_counter_name(c, k, true, name, sizeof(name))), "%s", name);
			xevb_counter_labels(c, 4095, k, labels, sizeof(labels));
			cr_assert(xevb_metric_labels_ok(labels), "%s: %s", c->prom, labels);
		}
	}
	for (unsigned k = 0; k < XEVB_XDP__SLOTS; k++)
		cr_assert(plain(xevb_slot_name(k)), "slot %u: %s", k, xevb_slot_name(k));
	for (unsigned k = 0; k < XEVB_SHED_CUT__N; k++)
		cr_assert(plain(xevb_shed_cause_name(k)), "%s", xevb_shed_cause_name(k));
	for (unsigned k = 0; k < XEVB_LOST__COUNT; k++)
		cr_assert(plain(xevb_dfm_lost_name(k)), "%s", xevb_dfm_lost_name(k));
	for (unsigned k = 1; k < XEVB_CTL_E__COUNT; k++)
		cr_assert(plain(xevb_ctl_err_name(k)), "%s", xevb_ctl_err_name(k));
	for (unsigned k = 0; k < XEVB_ADMIT__COUNT; k++)
		cr_assert(plain(xevb_ctl_admit_name(k)), "%s", xevb_ctl_admit_name(k));
	for (unsigned k = 0; k < XEVB_CTL_DROP__COUNT; k++)
		cr_assert(plain(xevb_ctl_drop_name(k)), "%s", xevb_ctl_drop_name(k));
	for (int k = 1; k < XEVB_CTL_REFUSED__COUNT; k++)
		cr_assert(plain(xevb_ctl_refused_name(k)), "%s", xevb_ctl_refused_name(k));
}

static void drops_json(FILE *f, const void *arg)
{
	xevb_ctl_refused_json(arg, f);
}

/* Every drop reason in its JSON, each under its own name, the count where it was counted. */
Test(json_outputs, the_drops_after_the_mac_by_reason)
{
	struct xevb_ctl_io io = { .fd = -1 };
	char *t;

	xevb_ctl_dropped(&io, XEVB_CTL_DROP_UNKNOWN_PEER);
	xevb_ctl_dropped(&io, XEVB_CTL_DROP_UNKNOWN_PEER);
	xevb_ctl_dropped(&io, XEVB_CTL_DROP_WRONG_EPOCH);
	xevb_ctl_dropped(&io, XEVB_CTL_DROP__COUNT); /* out of range: counted nowhere */
	t = capture_text(drops_json, &io);
	cr_assert(not(eq(ptr,
			 strstr(t,
				"\"ctl_dropped\":{\"not_from_dfm\":0,\"wrong_role\":0,\"wrong_epoch\":1,"
				"\"unknown_peer\":2}"),
			 NULL)),
		  "%s", t);
	free(t);
}

// SPDX-License-Identifier: GPL-2.0-only
/* The builder's control plane: its summary and JSON (build_ctl.h). */
#include <arpa/inet.h>
#include <stdio.h>
#include "base/json.h"
#include "ctl/build_ctl_int.h"

/*
 * The figures the summary and the JSON both begin with, in that order: mode,
 * assigned, dups, overflow, table size and growths, DONE complete, incomplete
 * and no_data, re-sent, built early, never assigned, open at DFM restart,
 * restarts.
 */
#define CTL_HEAD_ARGS(bc) \
	(bc)->pull ? "pull" : "push", (unsigned long long)(bc)->assigned_events, \
		(unsigned long long)(bc)->assign_dups, (unsigned long long)(bc)->assign_overflow, (bc)->mask + 1, \
		(unsigned long long)(bc)->table_grown, (unsigned long long)(bc)->done_sent[0], \
		(unsigned long long)(bc)->done_sent[1], (unsigned long long)(bc)->done_sent[2], \
		(unsigned long long)(bc)->retry_redone, (unsigned long long)(bc)->built_early, \
		(unsigned long long)((bc)->unassigned_built - (bc)->built_early), \
		(unsigned long long)(bc)->abandoned, (unsigned long long)(bc)->dfm_restarts

/* Pull: the unsolicited fragments by the source process (address) their ids belong to. */
static void unsolicited_lines(const struct build_ctl *bc, FILE *f)
{
	char a[INET_ADDRSTRLEN];

	for (uint32_t i = 0; i < bc->req.n_srcp; i++) {
		const struct build_srcp *p = &bc->req.src[i];

		if (!p->unsolicited)
			continue;
		inet_ntop(AF_INET, &p->sa.sin_addr, a, sizeof(a));
		fprintf(f, "  unsolicited fragments of source %s:%u (ids %u-%u): %llu\n", a, ntohs(p->sa.sin_port),
			p->first_id, p->first_id + p->n_ids - 1, (unsigned long long)p->unsolicited);
	}
	if (bc->req.unsolicited_other)
		fprintf(f, "  unsolicited fragments of ids no source announced: %llu\n",
			(unsigned long long)bc->req.unsolicited_other);
}

/* The JSON of the events built before the first ASSIGN and of those nobody requested. */
static void unsolicited_json(const struct build_ctl *bc, FILE *f)
{
	char a[INET_ADDRSTRLEN];

	fprintf(f,
		",\"pre_held\":%llu,\"pre_forwarded\":%llu,\"pre_dropped\":%llu,\"pre_dropped_frags\":%llu,"
		"\"unsolicited\":%llu,\"unsolicited_other_frags\":%llu,\"unsolicited_frags\":{",
		(unsigned long long)bc->pre_held, (unsigned long long)bc->pre_forwarded,
		(unsigned long long)bc->pre_dropped, (unsigned long long)bc->pre_dropped_frags,
		(unsigned long long)bc->unsolicited, (unsigned long long)bc->req.unsolicited_other);
	for (uint32_t i = 0, n = 0; i < bc->req.n_srcp; i++) {
		const struct build_srcp *p = &bc->req.src[i];

		if (!p->unsolicited)
			continue; /* thousands of processes: name only those that sent any */
		inet_ntop(AF_INET, &p->sa.sin_addr, a, sizeof(a));
		fprintf(f, "%s\"%s:%u\":%llu", n++ ? "," : "", a, ntohs(p->sa.sin_port),
			(unsigned long long)p->unsolicited);
	}
	fprintf(f, "}");
}

void build_ctl_summary(const struct build_ctl *bc, FILE *f)
{
	fprintf(f,
		"dfm control: %s mode; assigned %llu events (dup %llu, overflow %llu; table %u, grown %llu "
		"times), DONE complete %llu "
		"incomplete %llu no_data %llu (re-sent %llu), built before the ASSIGN %llu, never assigned %llu, open at DFM "
		"restart %llu (%llu restarts: then built complete %llu, incomplete %llu, lost no_data %llu, "
		"lost slot %llu)\n  requests %llu messages, re-asks %llu events; forwarded %llu, "
		"backlogged %llu (max %llu, overflow %llu), errors %llu; Busy %llu times; control refused %llu, "
		"unexpected %llu; built after no_data %llu\n",
		CTL_HEAD_ARGS(bc), (unsigned long long)bc->rs_complete, (unsigned long long)bc->rs_incomplete,
		(unsigned long long)bc->rs_no_data, (unsigned long long)bc->rs_slot,
		(unsigned long long)bc->req.requests_sent, (unsigned long long)bc->reask_events,
		(unsigned long long)bc->fwd.fwd_events, (unsigned long long)bc->fwd.fwd_backlogged,
		(unsigned long long)bc->fwd.backlog_max, (unsigned long long)bc->fwd.backlog_overflow,
		(unsigned long long)bc->fwd.fwd_errors, (unsigned long long)bc->busy.n_busy,
		(unsigned long long)bc->io.rx_bad_total, (unsigned long long)bc->unexpected,
		(unsigned long long)bc->built_after_no_data);
	fprintf(f,
		"  before the first ASSIGN: held %llu events, forwarded %llu, dropped %llu (%llu fragments); "
		"unsolicited (pull, never requested) %llu events\n",
		(unsigned long long)bc->pre_held, (unsigned long long)bc->pre_forwarded,
		(unsigned long long)bc->pre_dropped, (unsigned long long)bc->pre_dropped_frags,
		(unsigned long long)bc->unsolicited);
	unsolicited_lines(bc, f);
	for (uint32_t i = 0; i < bc->fwd.out->n_sinks; i++)
		fprintf(f,
			"  farm node %s: credits %u, sent %llu, acknowledged %llu, deaths %llu, rejoins %llu, "
			"Busy %llu times%s\n",
			bc->fwd.out->sinks[i].name, bc->fwd.sink[i].credits,
			(unsigned long long)bc->fwd.sink[i].sent_total, (unsigned long long)bc->fwd.sink[i].done,
			(unsigned long long)bc->fwd.sink[i].deaths, (unsigned long long)bc->fwd.sink[i].rejoins,
			(unsigned long long)bc->fwd.sink[i].busy_on,
			bc->fwd.sink[i].heard ? "" : " (never answered)");
}

void build_ctl_json(const struct build_ctl *bc, FILE *f)
{
	char q[XEVB_JSON_QLEN(sizeof(bc->fwd.out->sinks[0].name))];

	fprintf(f,
		"{\"mode\":\"%s\",\"assigned\":%llu,\"assign_dups\":%llu,\"assign_overflow\":%llu,"
		"\"table_size\":%u,\"table_grown\":%llu,\"done_complete\":%llu,"
		"\"done_incomplete\":%llu,\"done_no_data\":%llu,\"done_resent\":%llu,\"built_early\":%llu,"
		"\"unassigned_built\":%llu,"
		"\"abandoned\":%llu,\"dfm_restarts\":%llu,\"core_resets\":%llu,\"requests\":%llu,"
		"\"reask_events\":%llu,\"forwarded\":%llu,\"backlogged\":%llu,\"backlog_max\":%llu,"
		"\"backlog_overflow\":%llu,\"forward_errors\":%llu,\"busy_on\":%llu,\"busy_off\":%llu,"
		"\"busy_high\":%u,\"busy_low\":%u,\"assigned_busy\":%llu,\"ctl_refused\":%llu,"
		"\"ctl_unexpected\":%llu,\"built_after_no_data\":%llu,"
		"\"restart\":{\"assigned\":%llu,\"done\":%llu,\"overflow\":%llu,\"open\":%llu,"
		"\"built_complete\":%llu,\"built_incomplete\":%llu,\"lost_no_data\":%llu,\"lost_slot\":%llu,"
		"\"still_open\":%llu},\"sinks\":[",
		CTL_HEAD_ARGS(bc), (unsigned long long)bc->core_resets, (unsigned long long)bc->req.requests_sent,
		(unsigned long long)bc->reask_events, (unsigned long long)bc->fwd.fwd_events,
		(unsigned long long)bc->fwd.fwd_backlogged, (unsigned long long)bc->fwd.backlog_max,
		(unsigned long long)bc->fwd.backlog_overflow, (unsigned long long)bc->fwd.fwd_errors,
		(unsigned long long)bc->busy.n_busy, (unsigned long long)bc->busy.n_clear, bc->busy.high,
		bc->busy.low, (unsigned long long)bc->assigned_busy, (unsigned long long)bc->io.rx_bad_total,
		(unsigned long long)bc->unexpected, (unsigned long long)bc->built_after_no_data,
		(unsigned long long)bc->rs_assigned, (unsigned long long)bc->rs_done,
		(unsigned long long)bc->rs_overflow, (unsigned long long)bc->rs_open,
		(unsigned long long)bc->rs_complete, (unsigned long long)bc->rs_incomplete,
		(unsigned long long)bc->rs_no_data, (unsigned long long)bc->rs_slot,
		(unsigned long long)(bc->rs_open - bc->rs_complete - bc->rs_incomplete - bc->rs_no_data -
				     bc->rs_slot));
	/* A farm node's name is the text of its --sink option: escaped. */
	for (uint32_t i = 0; i < bc->fwd.out->n_sinks; i++)
		fprintf(f,
			"%s{\"name\":%s,\"credits\":%u,\"sent\":%llu,\"acked\":%llu,\"deaths\":%llu,"
			"\"rejoins\":%llu,\"busy_on\":%llu}",
			i ? "," : "",
			xevb_json_qn(q, sizeof(q), bc->fwd.out->sinks[i].name, sizeof(bc->fwd.out->sinks[i].name)),
			bc->fwd.sink[i].credits, (unsigned long long)bc->fwd.sink[i].sent_total,
			(unsigned long long)bc->fwd.sink[i].done, (unsigned long long)bc->fwd.sink[i].deaths,
			(unsigned long long)bc->fwd.sink[i].rejoins, (unsigned long long)bc->fwd.sink[i].busy_on);
	fprintf(f, "],\"source_processes\":%u,\"no_source_for\":%llu", bc->req.n_srcp,
		(unsigned long long)bc->req.no_source_for);
	unsolicited_json(bc, f);
	fprintf(f,
		",\"fenced\":%llu,\"fence\":{\"fences\":%llu,\"open\":%llu,\"built\":%llu,\"built_later\":%llu,"
		"\"lease_expired\":%llu,\"hold_failed\":%llu,\"regained\":%llu}",
		(unsigned long long)(bc->lease.fenced_open + bc->lease.fenced_built),
		(unsigned long long)bc->lease.fences, (unsigned long long)bc->lease.fenced_open,
		(unsigned long long)bc->lease.fenced_built, (unsigned long long)bc->lease.fenced_late,
		(unsigned long long)bc->lease.expired, (unsigned long long)bc->lease.hold_failed,
		(unsigned long long)bc->lease.regained);
	fprintf(f, ",\"ctl_not_admitted\":");
	xevb_ctl_admit_json(&bc->io, f);
	fputc(',', f);
	xevb_ctl_refused_json(&bc->io, f);
	fprintf(f, "}");
}
